//! The SQL front end: text → [`ast::Query`].
//!
//! [`parse`] is the entry point; [`lexer`] and [`parser`] do the work and [`print`] turns a
//! query back into SQL (used by tests to check that parsing loses nothing, and handy in logs).

pub mod ast;
pub mod lexer;
pub mod parser;
pub mod print;

pub use parser::{parse, MAX_SQL_BYTES};

/// Which server's SQL to accept.
///
/// The dialects differ only in small, explicit places, all in the parser:
/// - `FROM stdin` is accepted only in [`Dialect::Ceph`] (Ceph RGW's s3select accepts it);
/// - `==` means equality in Ceph and is an unknown operator in AWS;
/// - `"…"` is a string literal in Ceph expressions and a quoted identifier in AWS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// Amazon S3 Select, the reference behaviour.
    #[default]
    Aws,
    /// Ceph RGW's s3select.
    Ceph,
}

#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;
