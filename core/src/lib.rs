//! Types shared by every MESA crate: the five memory structures, masks over
//! them, preview features and the input a selector reads.
//!
//! This crate has no heavy dependencies, so the memory side can use it
//! without pulling in the parser, the Wasm encoder or wasmtime.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod engine;
pub mod feature;
pub mod input;
pub mod mask;
pub mod shown;

pub use engine::{Engine, Selection};
pub use feature::{Feature, Features, PreviewKey};
pub use input::{
    apply_preview_assignment, apply_shown, parse_json_line, Input, InputError, Previews,
};
pub use mask::{Mask, MaskError, Structure};
pub use shown::Shown;
