//! The JSON row loop: every value of a chunk parsed, through the FROM path, and each row it
//! makes through the bound query.

use crate::csv::Flow;
use crate::err;
use crate::error::{ErrorCode, Result, SelectError};
use crate::exec::emit::ChunkOut;
use crate::exec::row::{take_value, RowCtx, RowScratch};
use crate::json::{JsonError, Node, Parser};
use crate::request::JsonType;

/// Filters and projects every row of one chunk of JSON input: each line (LINES) or each
/// top-level value (DOCUMENT) is parsed, and the FROM path makes its rows.
pub(crate) fn rows(
    ctx: &RowCtx<'_>,
    json: JsonType,
    chunk: &[u8],
    out: &mut ChunkOut,
) -> Result<()> {
    let plan = ctx.plan;
    let row_cap = out.row_cap(plan);
    let mut scratch = RowScratch::default();
    let mut value =
        |node: &Node<'_>| -> Result<Flow> { take_value(ctx, node, out, &mut scratch, row_cap) };
    match json {
        JsonType::Lines => {
            let mut rest = chunk;
            while !rest.is_empty() {
                let window = rest;
                let (line, next) = match memchr::memchr(b'\n', rest) {
                    Some(i) => (&rest[..i], &rest[i + 1..]),
                    None => (rest, &rest[rest.len()..]),
                };
                rest = next;
                if line.iter().all(|b| b.is_ascii_whitespace()) {
                    continue;
                }
                check_record_size(line.len())?;
                // One UTF-8 check for the line instead of one per string; invalid text is
                // parsed as bytes, which finds and reports the bad string.
                let mut parser = match std::str::from_utf8(line) {
                    Ok(text) => Parser::for_text(text),
                    Err(_) => Parser::new(line),
                }
                .with_window(window);
                let node = parser
                    .value_keeping(plan.top_keys.as_ref())
                    .and_then(|node| match parser.at_end() {
                        true => Ok(node),
                        false => Err(JsonError {
                            offset: parser.position(),
                            what: "unexpected text after the JSON value",
                        }),
                    })
                    .map_err(|e| parse_error(&e, line))?;
                if let Flow::Stop = value(&node)? {
                    break;
                }
            }
        }
        JsonType::Document => {
            let mut parser = match std::str::from_utf8(chunk) {
                Ok(text) => Parser::for_text(text),
                Err(_) => Parser::new(chunk),
            };
            while !parser.at_end() {
                let start = parser.position();
                let node = parser
                    .value_keeping(plan.top_keys.as_ref())
                    .map_err(|e| parse_error(&e, &chunk[start..]))?;
                check_record_size(parser.position() - start)?;
                if let Flow::Stop = value(&node)? {
                    break;
                }
            }
        }
    }
    Ok(())
}

/// A JSON record (a line, or a top-level value) is capped at 1 MiB as a CSV record is. The
/// chunker finds most over-long records; this catches those inside one chunk.
fn check_record_size(len: usize) -> Result<()> {
    if len > crate::csv::MAX_RECORD_BYTES {
        return Err(err!(
            OverMaxRecordSize,
            "a JSON record is {len} bytes long, over the 1 MiB limit"
        ));
    }
    Ok(())
}

/// JSONParsingError naming the problem and showing where the record starts.
fn parse_error(e: &JsonError, record: &[u8]) -> SelectError {
    let head = &record[..record.len().min(40)];
    let ellipsis = if record.len() > head.len() { "…" } else { "" };
    SelectError::new(
        ErrorCode::JSONParsingError,
        format!(
            "malformed JSON: {} at byte {} of the record starting {:?}{ellipsis}",
            e.what,
            e.offset,
            String::from_utf8_lossy(head)
        ),
    )
}
