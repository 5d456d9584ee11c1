//! The MESA policy language: grammar, syntax tree, diagnostics and formatter.
//!
//! A policy is parsed with [`parse`] (or [`parse_bytes`] for raw file
//! contents) into a [`File`] whose every node carries a byte [`Span`]. Name
//! resolution, type checking and evaluation live in `mesa-compiler`.
//!
//! ```
//! let file = mesa_grammar::parse("policy \"p\"\ndefault {S, T}\n").unwrap();
//! assert_eq!(file.statements.len(), 2);
//! let pretty = mesa_grammar::format_source("policy  \"p\"   default {S,T}").unwrap();
//! assert_eq!(pretty, "policy \"p\"\ndefault {S, T}\n");
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod ast;
pub mod diagnostic;
mod format;
mod lex;
mod mistakes;
mod parser;
pub mod span;

pub use ast::File;
pub use diagnostic::{did_you_mean, Code, Diagnostic, Severity, Suggestion};
pub use format::{format_file, format_source, identifier_from, is_identifier, RESERVED};
pub use parser::{
    parse, parse_bytes, MAX_EXPR_DEPTH, MAX_NESTING, MAX_SOURCE_BYTES, MAX_SYNTAX_ERRORS,
};
pub use span::Span;
