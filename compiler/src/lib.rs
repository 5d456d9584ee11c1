//! Checking, the decision program and the reference interpreter for MESA
//! selector policies.
//!
//! ```
//! use mesa_compiler::{check, Input, Selector};
//!
//! let source = r#"
//! policy "demo"
//! use std
//! rule why when query has std.causal -> select {S, T, R}
//! default {S, V}
//! "#;
//! let checked = check(source);
//! assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
//! let selector = Selector::new(checked.program.unwrap()).unwrap();
//! let outcome = selector.select(&Input::query("Why did the query fail?"));
//! assert_eq!(outcome.mask.to_string(), "{S, T, R}");
//! assert_eq!(outcome.rule, Some(0));
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod check;
pub mod cues;
mod features;
pub mod interp;
pub mod ir;
mod stdlib;
#[doc(hidden)]
pub mod synthetic;
pub mod wasm;

pub use check::{check, check_bytes, check_file, Checked};
pub use interp::{explain, Input, Outcome, Selector, Step, Trace};
pub use ir::Program;
/// The shared types, re-exported.
pub use mesa_core as core;
pub use mesa_core::{Feature, Mask, Structure};
pub use stdlib::names as std_names;
