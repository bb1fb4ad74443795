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

    /// Reads `len` bytes from `offset` (Parquet column chunks). Sources that fetch over a
    /// network override it to ask for exactly those bytes.
    fn open_range(&self, offset: u64, len: u64) -> io::Result<Box<dyn Read + Send + '_>> {
        Ok(Box::new(self.open(offset)?.take(len)))
    }

    /// The whole object, when it is already in memory (or mapped): the engine then cuts
    /// chunks out of it without copying.
    fn bytes(&self) -> Option<&[u8]> {
        None
    }

    /// Says that a run is about to read [`bytes`](Self::bytes) from `from` up to about `to`
    /// (the last offset a record may start at; the object's end when `None`). A hint: a
    /// mapped file brings those pages in at once rather than faulting them in one by one.
    fn will_read(&self, _from: u64, _to: Option<u64>) {}
}

/// The most of a mapped file brought in at once for one run.
const POPULATE_LIMIT: u64 = 1 << 30;

/// Bytes past a ScanRange's last record start that are brought in with the range: its last
/// record ends there (a record of TPC-DS is under 1 KiB); a longer one faults in as read.
const RECORD_TAIL: u64 = 1 << 20;

/// A file on a local disk, read with `read(2)`, or mapped into memory so that the engine
/// scans it in place (no copy; about a fifth less CPU per byte on a page-cached file).
///
/// A mapping is made lazily and its pages are brought in only for the bytes a run reads
/// ([`ObjectSource::will_read`]): faulting pages in one by one costs more than the copy
/// the mapping saves, but populating a whole file for a ScanRange of a quarter of it (a
/// client splitting a part into ranges) costs the page tables of four files, and a
/// Parquet run, which reads its column chunks with `read(2)`, needs no pages at all.
#[derive(Debug)]
pub struct FileSource {
    path: PathBuf,
    size: u64,
    map: Option<memmap2::Mmap>,
}

impl FileSource {
    pub fn new(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let size = std::fs::metadata(&path)?.len();
        Ok(FileSource {
            path,
            size,
            map: None,
        })
    }

    /// Maps the file into memory.
    ///
    /// # Safety
    ///
    /// The file must not be truncated or written while the source is alive: the mapping
    /// would change under the engine (or fault, if truncated). Sift's own store never
    /// writes an object in place — it writes a new file and renames it over the old one,
    /// which leaves the mapped file untouched.
    pub unsafe fn mapped(path: impl AsRef<Path>) -> io::Result<Self> {
        let mut source = FileSource::new(path)?;
        if source.size > 0 {
            let file = File::open(&source.path)?;
            // SAFETY: the caller promises the file is not modified while mapped.
            let map = unsafe { memmap2::MmapOptions::new().map(&file)? };
            // Advice only; scanning works the same if the kernel ignores it.
            let _ = map.advise(memmap2::Advice::Sequential);
            source.map = Some(map);
        }
        Ok(source)
    }
}

impl ObjectSource for FileSource {
    fn size(&self) -> Option<u64> {
        Some(self.size)
    }

    fn bytes(&self) -> Option<&[u8]> {
        self.map.as_deref()
    }

    fn will_read(&self, from: u64, to: Option<u64>) {
        let Some(map) = &self.map else { return };
        let end = to.map_or(self.size, |t| t.saturating_add(RECORD_TAIL).min(self.size));
        let from = from.min(end);
        let len = (end - from).min(POPULATE_LIMIT);
        let (Ok(from), Ok(len)) = (usize::try_from(from), usize::try_from(len)) else {
            return;
        };
        // Advice only (MADV_POPULATE_READ is Linux 5.14+): without it the pages fault in.
        #[cfg(target_os = "linux")]
        let _ = map.advise_range(memmap2::Advice::PopulateRead, from, len);
        #[cfg(not(target_os = "linux"))]
        let _ = (map, from, len);
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

    fn bytes(&self) -> Option<&[u8]> {
        Some(self.0)
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Resident KiB of the mapping that starts at `addr` (its page-table entries), from
    /// /proc/self/smaps.
    fn resident_kib(addr: usize) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("smaps");
        let head = format!("{addr:x}-");
        smaps
            .lines()
            .skip_while(|l| !l.starts_with(&head))
            .find_map(|l| l.strip_prefix("Rss:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("the mapping's Rss line")
    }

    #[test]
    fn a_scan_range_brings_in_only_its_own_pages() {
        let path = std::env::temp_dir().join(format!("sift-source-{}", std::process::id()));
        std::fs::write(&path, vec![b'x'; 64 << 20]).unwrap();
        // SAFETY: the test's own file, unlinked (not written) while mapped.
        let source = unsafe { FileSource::mapped(&path) }.unwrap();
        std::fs::remove_file(&path).unwrap();
        let addr = source.bytes().unwrap().as_ptr() as usize;
        assert_eq!(resident_kib(addr), 0, "mapped lazily");

        // A range of 2 MiB: its pages and the tail its last record may run into (3 MiB),
        // mapped a page-cache folio at a time (up to 2 MiB each on either side).
        source.will_read(32 << 20, Some(34 << 20));
        let kib = resident_kib(addr);
        assert!((3 << 10..=7 << 10).contains(&kib), "{kib} KiB resident");
        // The whole object.
        source.will_read(0, None);
        assert_eq!(resident_kib(addr), 64 << 10);
    }
}
