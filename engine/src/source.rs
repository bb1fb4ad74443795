//! Where object bytes come from, and the byte counting and decompression between the object
//! and the CSV reader.
//!
//! An [`ObjectSource`] opens the object at an offset, which is all a ScanRange needs: a local
//! file seeks, the gateway's upstream backend issues a ranged GET. Sources that can only be
//! read once from the start (a request body, a pipe) implement it for offset 0.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::request::Compression;

/// An object the engine can read, from any offset.
pub trait ObjectSource: Sync {
    /// The object's size, when known. A ScanRange with only an End needs it.
    fn size(&self) -> Option<u64>;

    /// A reader of the object's bytes from `offset` to its end.
    fn open(&self, offset: u64) -> io::Result<Box<dyn Read + Send + '_>>;
}

/// A file on a local disk.
#[derive(Debug, Clone)]
pub struct FileSource {
    path: PathBuf,
    size: u64,
}

impl FileSource {
    pub fn new(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let size = std::fs::metadata(&path)?.len();
        Ok(FileSource { path, size })
    }
}

impl ObjectSource for FileSource {
    fn size(&self) -> Option<u64> {
        Some(self.size)
    }

    fn open(&self, offset: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        let mut f = File::open(&self.path)?;
        if offset > 0 {
            f.seek(SeekFrom::Start(offset))?;
        }
        Ok(Box::new(f))
    }
}

/// An object held in memory.
#[derive(Debug, Clone, Copy)]
pub struct SliceSource<'a>(pub &'a [u8]);

impl ObjectSource for SliceSource<'_> {
    fn size(&self) -> Option<u64> {
        Some(self.0.len() as u64)
    }

    fn open(&self, offset: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.0.len());
        Ok(Box::new(&self.0[start..]))
    }
}

/// A stream that can be read once, from its start (stdin, a request body).
pub struct StreamSource<R> {
    reader: Mutex<Option<R>>,
    size: Option<u64>,
}

impl<R: Read + Send> StreamSource<R> {
    pub fn new(reader: R, size: Option<u64>) -> Self {
        StreamSource {
            reader: Mutex::new(Some(reader)),
            size,
        }
    }
}

impl<R: Read + Send> ObjectSource for StreamSource<R> {
    fn size(&self) -> Option<u64> {
        self.size
    }

    fn open(&self, offset: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        let taken = self
            .reader
            .lock()
            .map_err(|_| io::Error::other("stream source lock poisoned"))?
            .take();
        let mut r = taken.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "this stream can be read only once",
            )
        })?;
        // Forward-only: skip to the offset.
        io::copy(&mut (&mut r).take(offset), &mut io::sink())?;
        Ok(Box::new(r))
    }
}

/// Counts the bytes that pass through a reader into a shared counter, so that progress can
/// be reported while other threads read.
pub struct Counting<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Self {
        Counting { inner, count }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Wraps `reader` in the decoder for `compression`. GZIP and BZIP2 read concatenated members
/// as one stream, as `gzip -d` and `bzip2 -d` do.
pub fn decompress<'a>(
    reader: Box<dyn Read + Send + 'a>,
    compression: Compression,
) -> Box<dyn Read + Send + 'a> {
    match compression {
        Compression::None => reader,
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(reader)),
        Compression::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(reader)),
    }
}
