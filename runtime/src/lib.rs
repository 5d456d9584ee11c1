//! The MESA wasmtime host: runs compiled selector policies sandboxed and
//! deterministically.
//!
//! ```no_run
//! use mesa_runtime::{EngineKind, Runtime, Staged};
//! use mesa_compiler::Input;
//!
//! let source = "policy \"p\"\nuse std\nrule why when query has std.causal -> select {S, T, R}\ndefault {S, V}\n";
//! let runtime = Runtime::new()?;
//! let mut policy = Staged::check(source)?;         // source -> checked program
//! let bytes = policy.module()?.to_vec();            // -> module bytes (kept)
//! let mut engine = policy.engine(&runtime, EngineKind::Wasm)?; // -> loaded -> instance
//! let outcome = engine.select_traced(&Input::query("Why did it fail?"))?;
//! assert_eq!(outcome.mask.to_string(), "{S, T, R}");
//! # let _ = bytes;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Concepts
//!
//! | type | is | made by |
//! | --- | --- | --- |
//! | [`Runtime`] | one wasmtime engine (compiler, fuel, NaN canonicalization) and its instance pool | [`Runtime::with_config`] from a [`RuntimeConfig`] |
//! | [`Staged`] | a policy at any stage (source, checked program, module bytes, loaded), keeping each stage it reaches | [`Staged::check`], [`Staged::from_module`], ... |
//! | [`Policy`] | a validated, compiled module, ready to instantiate (cheap to clone) | [`Runtime::load`], [`Staged::load`] |
//! | [`PolicyInstance`] | a warm instance: write an input, call `select`, read the result | [`Policy::instantiate`] |
//! | [`AnyEngine`] | either engine behind [`mesa_core::Engine`] | [`Staged::engine`] only (or [`Staged::interpreter`], which it calls) |
//!
//! Errors come in three kinds: [`PolicyError`] (by stage: check, compile,
//! load), [`LoadError`] (the host refused or could not prepare a module)
//! and [`SelectError`] (a ready module failed on one input).
//!
//! The engine uses Cranelift (or Winch, see [`Compiler`] and
//! [`Compiler::for_queries`]) with NaN canonicalization, meters fuel (a
//! call that runs out is an error, never a hang), and allocates instances
//! from a pooling allocator through an `InstancePre`, so instantiating
//! costs little and a warm [`PolicyInstance`] is reused across calls.
//! Modules from outside are validated before anything in them runs:
//! imports, exports and their types, memory size, the ABI version and the
//! metadata.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod config;
mod engine;
mod error;
mod host;
mod staged;
mod validate;

pub use config::{Compiler, RuntimeConfig};
pub use engine::{AnyEngine, EngineKind};
pub use error::{BoxError, LoadError, SelectError};
pub use host::{Policy, PolicyInstance, Runtime};
pub use staged::{PolicyError, PolicyFormat, Staged};
pub use validate::{limits, MAX_MEMORY_PAGES};
