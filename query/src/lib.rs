//! The path of one question at query time, joining the sandbox host
//! (`mesa-runtime`) and the memory (`mesa-memory`): the store gives the
//! episode's five structures, the policy's metadata says which previews to
//! compute, the engine selects, and the selected structures' evidence is
//! composed.
//!
//! ```text
//! question ─► Retrieval ─previews the policy reads─► Input ─► Engine ─► mask
//!                 │                                                      │
//!                 └──────────── evidence (each structure once) ◄─────────┘ ─► Composition ─► Answer
//! ```
//!
//! Every front end (the `mesa` command, and the Python package and the
//! servers next) asks questions through [`QueryEngine`] and prints or
//! sends an [`Answer`] through [`Answer::to_json`], so all of them answer
//! alike. [`ask_across`] asks one question of many episodes of a tenant
//! and ranks them (across.rs).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod across;
mod answer;

pub use across::{
    ask_across, Across, AcrossError, AcrossOptions, Found, Skip, DEFAULT_CANDIDATES, DEFAULT_LIMIT,
    MAX_LIMIT,
};

pub use answer::{
    Answer, Asker, Chooser, QueryEngine, QueryError, Question, SharedChooser, Timings,
};
