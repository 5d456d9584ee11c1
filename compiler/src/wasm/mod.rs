//! Compiling checked programs to self-contained WebAssembly.
//!
//! [`compile`] turns a [`Program`](crate::Program) into module bytes that
//! follow the ABI in [`abi`] (docs/ABI.md). Keywords become a hash table
//! probed where each word of the text ends ([`wordhash`]), plus an
//! Aho-Corasick automaton ([`keywords`]) for the few it cannot take, such as
//! keywords that begin or end with a non-word byte ([`kwscan`] splits them
//! and lays out the scan); patterns become DFAs ([`patterns`]), each scanned
//! by a loop of its own that passes over the bytes that cannot start a
//! match. All are tables in the data segment.

pub mod abi;
mod asm;
mod codegen;
pub mod keywords;
pub mod kwscan;
mod pattern_scan;
pub mod patterns;
pub mod wordhash;

pub use codegen::{compile, compile_with, CompileError, CompileOptions};

impl CompileError {
    /// The error as a diagnostic (code E0504 for DFA limits, E0507 for the
    /// pattern count), for the same output paths as checker diagnostics.
    pub fn to_diagnostic(&self) -> mesa_grammar::Diagnostic {
        use mesa_grammar::{Code, Diagnostic, Span};
        let (code, help) = match self {
            CompileError::DfaTooBig { .. } => (
                Code::E0504,
                "large counted repetitions of wide classes blow up DFAs; simplify the pattern",
            ),
            CompileError::TooManyPatterns { .. } => (Code::E0507, "merge patterns with `|`"),
            _ => (Code::E0506, "split the policy"),
        };
        Diagnostic::new(code, Span::new(0, 0), self.to_string()).with_help(help)
    }
}
