//! The SQL front end: text → [`ast::Query`].

pub mod ast;
