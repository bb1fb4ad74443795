//! Cutting a byte stream into chunks of whole records.
//!
//! Every chunk starts where a record starts and ends where one ends, so that chunks can be
//! scanned on any thread in any order and their outputs simply concatenated. The chunker reads
//! straight into the chunk's buffer and carries only the unfinished last record over to the
//! next buffer, so the input is copied once, by `read`.
//!
//! It also applies a ScanRange: the stream is opened a delimiter's length before `Start`, the
//! bytes before the first record that starts at or after `Start` are dropped, and the stream
//! is cut after the record that contains byte `End`.

use std::io::{ErrorKind, Read};

use crate::csv::format::{CsvFormat, MAX_RECORD_BYTES};
use crate::csv::record::{parse_record, Parsed, Record};
use crate::err;
use crate::error::{ErrorCode, Result, SelectError};

/// A reusable buffer whose bytes are all initialised, so that reads need no zeroing.
#[derive(Debug, Default)]
pub struct ChunkBuf {
    data: Vec<u8>,
    len: usize,
}

impl ChunkBuf {
    pub fn with_capacity(cap: usize) -> Self {
        ChunkBuf {
            data: vec![0; cap],
            len: 0,
        }
    }

    /// Bytes this buffer can hold without growing.
    pub fn capacity(&self) -> usize {
        self.data.len()
    }

    pub fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }

    fn clear(&mut self) {
        self.len = 0;
    }

    fn reserve(&mut self, extra: usize) {
        if self.data.len() < self.len + extra {
            self.data.resize(self.len + extra, 0);
        }
    }

    fn extend(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.data[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }
}

/// Turns a read error into the S3 error a client should see.
pub fn read_error(e: std::io::Error) -> SelectError {
    // Decoders and sources wrap their own SelectError (e.g. TruncatedInput) in io::Error.
    if let Some(inner) = e.get_ref().and_then(|i| i.downcast_ref::<SelectError>()) {
        return inner.clone();
    }
    match e.kind() {
        ErrorKind::InvalidData | ErrorKind::InvalidInput | ErrorKind::UnexpectedEof => {
            SelectError::new(
                ErrorCode::TruncatedInput,
                format!(
                    "object decompression failed ({e}); check that the object is compressed \
                     with the format the request names"
                ),
            )
        }
        _ => SelectError::new(
            ErrorCode::InternalError,
            format!("reading the object failed: {e}"),
        ),
    }
}

/// A chunk of whole records: in a buffer the chunker read into, or borrowed straight from an
/// object that is already in memory.
#[derive(Debug)]
pub enum Chunk<'a> {
    Owned(ChunkBuf),
    Borrowed(&'a [u8]),
}

impl Chunk<'_> {
    pub fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Owned(b) => b.bytes(),
            Chunk::Borrowed(s) => s,
        }
    }

    /// The buffer, for reuse.
    pub fn into_buf(self) -> Option<ChunkBuf> {
        match self {
            Chunk::Owned(b) => Some(b),
            Chunk::Borrowed(_) => None,
        }
    }
}

/// The bytes the chunker is looking at: a growable window onto the rest of the object.
pub trait Window<'a> {
    /// The window's bytes (the next unread bytes of the object).
    fn bytes(&self) -> &[u8];
    /// Whether the window reaches the end of the object.
    fn at_eof(&self) -> bool;
    /// Grows the window to at least `want` bytes, unless the object ends first.
    fn fill(&mut self, want: usize) -> Result<()>;
    /// Forgets the first `n` bytes of the window.
    fn drop_front(&mut self, n: usize);
    /// Hands out the first `cut` bytes as a chunk; `spare` is a buffer that may be reused.
    fn take(&mut self, cut: usize, spare: Option<ChunkBuf>) -> Chunk<'a>;
}

/// A window over a stream, read into a buffer. Only the unfinished last record is copied
/// when a chunk is handed out.
pub struct ReadWindow<R> {
    reader: R,
    pending: ChunkBuf,
    eof: bool,
    capacity: usize,
}

impl<R: Read> ReadWindow<R> {
    pub fn new(reader: R, capacity: usize) -> Self {
        ReadWindow {
            reader,
            pending: ChunkBuf::with_capacity(capacity),
            eof: false,
            capacity,
        }
    }
}

impl<R: Read> Window<'static> for ReadWindow<R> {
    fn bytes(&self) -> &[u8] {
        self.pending.bytes()
    }

    fn at_eof(&self) -> bool {
        self.eof
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        self.pending.reserve(want.saturating_sub(self.pending.len));
        while !self.eof && self.pending.len < want {
            let end = self.pending.data.len();
            match self
                .reader
                .read(&mut self.pending.data[self.pending.len..end])
            {
                Ok(0) => self.eof = true,
                Ok(n) => self.pending.len += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(read_error(e)),
            }
        }
        Ok(())
    }

    fn drop_front(&mut self, n: usize) {
        self.pending.data.copy_within(n..self.pending.len, 0);
        self.pending.len -= n;
    }

    fn take(&mut self, cut: usize, spare: Option<ChunkBuf>) -> Chunk<'static> {
        let mut next = spare.unwrap_or_else(|| ChunkBuf::with_capacity(self.capacity));
        next.clear();
        next.extend(&self.pending.data[cut..self.pending.len]);
        let mut chunk = std::mem::replace(&mut self.pending, next);
        chunk.len = cut;
        Chunk::Owned(chunk)
    }
}

/// A window over an object held in memory: chunks are borrowed, nothing is copied.
pub struct SliceWindow<'a> {
    data: &'a [u8],
    start: usize,
    end: usize,
}

impl<'a> SliceWindow<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        SliceWindow {
            data,
            start: 0,
            end: 0,
        }
    }
}

impl<'a> Window<'a> for SliceWindow<'a> {
    fn bytes(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    fn at_eof(&self) -> bool {
        self.end == self.data.len()
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        self.end = self
            .end
            .max(self.start.saturating_add(want).min(self.data.len()));
        Ok(())
    }

    fn drop_front(&mut self, n: usize) {
        self.start += n;
    }

    fn take(&mut self, cut: usize, _spare: Option<ChunkBuf>) -> Chunk<'a> {
        let chunk = &self.data[self.start..self.start + cut];
        self.start += cut;
        Chunk::Borrowed(chunk)
    }
}

/// Splits an object into record-aligned chunks.
pub struct Chunker<W> {
    window: W,
    fmt: CsvFormat,
    target: usize,
    /// Object offset of the window's first byte.
    offset: u64,
    /// Cut after the record containing this object offset (ScanRange End).
    last_start: Option<u64>,
    /// Drop bytes up to the first record delimiter before the first chunk (ScanRange Start).
    skip_partial: bool,
    done: bool,
    /// Bytes handed to callers, i.e. what the engine processed.
    consumed: u64,
    /// Cut between top-level JSON values (JSON DOCUMENT) instead of after record delimiters.
    json_values: bool,
}

impl<'a, W: Window<'a>> Chunker<W> {
    /// `offset` is the object offset of the window's first byte; `skip_partial` drops the
    /// bytes up to the first record delimiter; `last_start` is ScanRange's End.
    pub fn new(
        window: W,
        fmt: CsvFormat,
        target: usize,
        offset: u64,
        skip_partial: bool,
        last_start: Option<u64>,
    ) -> Self {
        Chunker {
            window,
            fmt,
            target,
            offset,
            last_start,
            skip_partial,
            done: false,
            consumed: 0,
            json_values: false,
        }
    }

    /// Cuts chunks between top-level JSON values rather than after record delimiters (JSON
    /// DOCUMENT input, where a value may span lines). A value is then a record: over 1 MiB
    /// is OverMaxRecordSize.
    pub fn split_json_values(mut self) -> Self {
        self.json_values = true;
        self
    }

    /// Bytes of the stream given out in chunks or skipped so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    fn fill(&mut self, want: usize) -> Result<()> {
        self.window.fill(want)
    }

    /// Drops `n` bytes from the front of the window.
    fn drop_front(&mut self, n: usize) {
        self.window.drop_front(n);
        self.offset += n as u64;
        self.consumed += n as u64;
    }

    /// Takes the first record of the stream (the header line), skipping comments and blank
    /// lines before it. `None` if the stream has no record.
    pub fn take_first_record(&mut self) -> Result<Option<Vec<String>>> {
        loop {
            self.fill(self.target.min(MAX_RECORD_BYTES + 1))?;
            if self.window.bytes().is_empty() {
                return Ok(None);
            }
            let fmt = self.fmt.clone();
            let bytes = self.window.bytes();
            let mut rec = Record::new(bytes, &[]);
            let parsed = match parse_record(&fmt, bytes, 0, &mut rec) {
                Ok(p) => p,
                Err(e) if e.code == ErrorCode::CSVParsingError && !self.window.at_eof() => {
                    self.grow_or_fail()?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let next = match parsed {
                Parsed::Record { next } | Parsed::Skip { next } => next,
            };
            if next == bytes.len() && !self.window.at_eof() && !bytes.ends_with(&fmt.record) {
                self.grow_or_fail()?;
                continue;
            }
            let names = match parsed {
                Parsed::Record { .. } => {
                    let mut v = Vec::with_capacity(rec.len());
                    for i in 0..rec.len() {
                        let f = rec.field(i).unwrap_or_default();
                        let s = std::str::from_utf8(f).map_err(|_| {
                            err!(InvalidTextEncoding, "the header line is not valid UTF-8")
                        })?;
                        v.push(s.to_owned());
                    }
                    Some(v)
                }
                Parsed::Skip { .. } => None,
            };
            self.drop_front(next);
            if let Some(v) = names {
                return Ok(Some(v));
            }
        }
    }

    /// Asks for a larger read when a record does not fit in `pending`, up to the record limit.
    fn grow_or_fail(&mut self) -> Result<()> {
        if self.window.bytes().len() > MAX_RECORD_BYTES {
            return Err(err!(
                OverMaxRecordSize,
                "a record is longer than the 1 MiB limit (at object offset {})",
                self.offset
            ));
        }
        let want = (self.window.bytes().len() * 2).max(self.target);
        self.fill(want.min(MAX_RECORD_BYTES + 2))?;
        Ok(())
    }

    /// The next chunk of whole records, or `None` at the end of the (ranged) object. `spare`
    /// is a buffer to reuse.
    pub fn next_chunk(&mut self, spare: Option<ChunkBuf>) -> Result<Option<Chunk<'a>>> {
        if self.done {
            return Ok(None);
        }
        if self.skip_partial {
            loop {
                self.fill(self.target)?;
                let rd = &self.fmt.record;
                if let Some(i) = memchr::memmem::find(self.window.bytes(), rd) {
                    let n = i + rd.len();
                    self.drop_front(n);
                    self.skip_partial = false;
                    break;
                }
                if self.window.at_eof() {
                    let n = self.window.bytes().len();
                    self.drop_front(n);
                    self.done = true;
                    return Ok(None);
                }
                // Keep only enough bytes to recognise a delimiter split across reads.
                let keep = self.fmt.record.len() - 1;
                let n = self.window.bytes().len().saturating_sub(keep);
                self.drop_front(n);
            }
        }
        self.fill(self.target)?;
        let cut = loop {
            let past_range = self.last_start.is_some_and(|last| self.offset > last);
            if self.window.bytes().is_empty() || past_range {
                self.done = true;
                return Ok(None);
            }
            if let Some(cut) = self.range_cut() {
                self.done = true;
                break cut;
            }
            if self.window.at_eof() {
                self.done = true;
                break self.window.bytes().len();
            }
            match self.last_boundary()? {
                Some(cut) => break cut,
                None => self.grow_or_fail()?,
            }
        };
        let chunk = self.window.take(cut, spare);
        self.offset += cut as u64;
        self.consumed += cut as u64;
        Ok(Some(chunk))
    }

    /// With a ScanRange End inside `pending`: the cut after the record that contains it.
    fn range_cut(&self) -> Option<usize> {
        let last = self.last_start?;
        let rd = &self.fmt.record;
        let bytes = self.window.bytes();
        // A delimiter whose last byte is at object offset >= End ends the final record.
        let first_ok = (last + 1).saturating_sub(rd.len() as u64);
        let from = first_ok.saturating_sub(self.offset);
        if from >= bytes.len() as u64 {
            return None;
        }
        let from = from as usize;
        match memchr::memmem::find(&bytes[from..], rd) {
            Some(i) => Some(from + i + rd.len()),
            None if self.window.at_eof() => Some(bytes.len()),
            None => None,
        }
    }

    /// The end of the last complete record in `pending`, if there is one.
    fn last_boundary(&self) -> Result<Option<usize>> {
        let bytes = self.window.bytes();
        if self.json_values {
            return Ok(crate::json::split::last_value_end(bytes));
        }
        let rd = &self.fmt.record;
        let quotes_matter = self.fmt.allow_quoted_record_delimiter
            && self
                .fmt
                .special_bytes()
                .iter()
                .any(|&b| memchr::memchr(b, bytes).is_some());
        if !quotes_matter {
            return Ok(memchr::memmem::rfind(bytes, rd).map(|i| i + rd.len()));
        }
        // Quoted record delimiters: only reading the records tells where one ends.
        let mut rec = Record::new(bytes, &[]);
        let mut pos = 0;
        let mut last = None;
        while pos < bytes.len() {
            let next = match parse_record(&self.fmt, bytes, pos, &mut rec) {
                Ok(Parsed::Record { next }) | Ok(Parsed::Skip { next }) => next,
                Err(e) if e.code == ErrorCode::CSVParsingError => break,
                Err(e) => return Err(e),
            };
            if !bytes[..next].ends_with(rd) {
                break;
            }
            last = Some(next);
            pos = next;
        }
        Ok(last)
    }
}
