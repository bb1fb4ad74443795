//! CSV input: the request's format, record-aligned chunking of the stream, and the scanners
//! that find records and fields in a chunk.

pub mod chunk;
pub mod format;
pub mod record;
pub mod scan;
pub(crate) mod select;

pub use chunk::{ChunkBuf, Chunker};
pub use format::{CsvFormat, Quoting, MAX_RECORD_BYTES};
pub use record::Record;
pub use scan::{Flow, Scanner};
