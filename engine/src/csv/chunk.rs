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

/// Splits a stream into record-aligned chunks.
pub struct Chunker<R> {
    reader: R,
    fmt: CsvFormat,
    /// Bytes read and not yet handed out; begins at a record start (once `skip_to_start` ran).
    pending: ChunkBuf,
    target: usize,
    eof: bool,
    /// Object offset of `pending`'s first byte.
    offset: u64,
    /// Cut after the record containing this object offset (ScanRange End).
    last_start: Option<u64>,
    /// Drop bytes up to the first record delimiter before the first chunk (ScanRange Start).
    skip_partial: bool,
    done: bool,
    /// Bytes handed to callers, i.e. what the engine processed.
    consumed: u64,
}

impl<R: Read> Chunker<R> {
    /// `offset` is the object offset of the reader's first byte; `skip_partial` drops the
    /// bytes up to the first record delimiter; `last_start` is ScanRange's End.
    pub fn new(
        reader: R,
        fmt: CsvFormat,
        target: usize,
        offset: u64,
        skip_partial: bool,
        last_start: Option<u64>,
    ) -> Self {
        Chunker {
            reader,
            fmt,
            pending: ChunkBuf::with_capacity(target + 64 * 1024),
            target,
            eof: false,
            offset,
            last_start,
            skip_partial,
            done: false,
            consumed: 0,
        }
    }

    /// Bytes of the stream given out in chunks or skipped so far.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Reads until `pending` holds `want` bytes or the stream ends.
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

    /// Drops `n` bytes from the front of `pending`.
    fn drop_front(&mut self, n: usize) {
        self.pending.data.copy_within(n..self.pending.len, 0);
        self.pending.len -= n;
        self.offset += n as u64;
        self.consumed += n as u64;
    }

    /// Takes the first record of the stream (the header line), skipping comments and blank
    /// lines before it. `None` if the stream has no record.
    pub fn take_first_record(&mut self) -> Result<Option<Vec<String>>> {
        loop {
            self.fill(self.target.min(MAX_RECORD_BYTES + 1))?;
            if self.pending.len == 0 {
                return Ok(None);
            }
            let fmt = self.fmt.clone();
            let bytes = self.pending.bytes();
            let mut rec = Record::new(bytes, &[]);
            let parsed = match parse_record(&fmt, bytes, 0, &mut rec) {
                Ok(p) => p,
                Err(e) if e.code == ErrorCode::CSVParsingError && !self.eof => {
                    self.grow_or_fail()?;
                    continue;
                }
                Err(e) => return Err(e),
            };
            let next = match parsed {
                Parsed::Record { next } | Parsed::Skip { next } => next,
            };
            if next == self.pending.len && !self.eof && !bytes.ends_with(&fmt.record) {
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
        if self.pending.len > MAX_RECORD_BYTES {
            return Err(err!(
                OverMaxRecordSize,
                "a record is longer than the 1 MiB limit (at object offset {})",
                self.offset
            ));
        }
        let want = (self.pending.len * 2).max(self.target);
        self.fill(want.min(MAX_RECORD_BYTES + 2))?;
        Ok(())
    }

    /// Fills `into` (a recycled buffer) with the next chunk of whole records, or returns it
    /// back with `None` at the end of the (ranged) stream.
    pub fn next_chunk(&mut self, mut into: ChunkBuf) -> Result<Result<ChunkBuf, ChunkBuf>> {
        if self.done {
            return Ok(Err(into));
        }
        if self.skip_partial {
            loop {
                self.fill(self.target)?;
                let rd = &self.fmt.record;
                if let Some(i) = memchr::memmem::find(self.pending.bytes(), rd) {
                    let n = i + rd.len();
                    self.drop_front(n);
                    self.skip_partial = false;
                    break;
                }
                if self.eof {
                    let n = self.pending.len;
                    self.drop_front(n);
                    self.done = true;
                    return Ok(Err(into));
                }
                // Keep only enough bytes to recognise a delimiter split across reads.
                let keep = self.fmt.record.len() - 1;
                let n = self.pending.len.saturating_sub(keep);
                self.drop_front(n);
            }
        }
        self.fill(self.target)?;
        let cut = loop {
            let past_range = self.last_start.is_some_and(|last| self.offset > last);
            if self.pending.len == 0 || past_range {
                self.done = true;
                return Ok(Err(into));
            }
            if let Some(cut) = self.range_cut() {
                self.done = true;
                break cut;
            }
            if self.eof {
                self.done = true;
                break self.pending.len;
            }
            match self.last_boundary()? {
                Some(cut) => break cut,
                None => self.grow_or_fail()?,
            }
        };
        into.clear();
        let chunk = std::mem::replace(&mut self.pending, into);
        self.pending.extend(&chunk.data[cut..chunk.len]);
        let mut chunk = chunk;
        chunk.len = cut;
        self.offset += cut as u64;
        self.consumed += cut as u64;
        Ok(Ok(chunk))
    }

    /// With a ScanRange End inside `pending`: the cut after the record that contains it.
    fn range_cut(&self) -> Option<usize> {
        let last = self.last_start?;
        let rd = &self.fmt.record;
        let bytes = self.pending.bytes();
        // A delimiter whose last byte is at object offset >= End ends the final record.
        let first_ok = (last + 1).saturating_sub(rd.len() as u64);
        let from = first_ok.saturating_sub(self.offset);
        if from >= bytes.len() as u64 {
            return None;
        }
        let from = from as usize;
        match memchr::memmem::find(&bytes[from..], rd) {
            Some(i) => Some(from + i + rd.len()),
            None if self.eof => Some(bytes.len()),
            None => None,
        }
    }

    /// The end of the last complete record in `pending`, if there is one.
    fn last_boundary(&self) -> Result<Option<usize>> {
        let bytes = self.pending.bytes();
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
