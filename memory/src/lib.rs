//! MESA's memory side: trajectories and datasets, the five memory
//! structures over an episode, previews, composition, token counting and the
//! on-disk store.
//!
//! ```text
//! dataset::load ──► Episode ──► EpisodeMemory::build ──► Store (on disk)
//!                                 S T G V R                 │ Store::open
//! question ──► Retrieval::new(memory, q) ──previews──► policy ──mask──► compose ──► text
//! ```
//!
//! Everything runs offline and deterministically by default: the built-in
//! summarizer, relation extractor and embedder need no model. Model-backed
//! ones plug in through [`Summarizer`], [`TripleExtractor`] and [`Embedder`].

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod compose;
pub mod config;
pub mod coverage;
pub mod dataset;
mod durable;
mod le;
pub mod live;
pub mod plugins;
pub mod preview;
pub mod store;
pub mod structures;
mod term_index;
pub mod text;
pub mod tokens;

pub use compose::{compose, composed_tokens, Composition};
pub use config::Config;
pub use coverage::Coverage;
pub use dataset::{
    load, DatasetError, Episode, EpisodeReader, LoadOptions, LoadReport, Question, Step,
};
pub use live::{
    Appended, EpisodeInfo, EpisodeUpdate, Exported, Forget, ForgottenBefore, LiveError,
    LiveErrorKind, LiveMemory, NamedBuilders, NewEpisode, NewStep, Resident, Tenant,
};
pub use plugins::{
    BuilderKind, BuilderKinds, EmbedderKind, Embedders, Extractors, PluginOptions, SetupError,
    Summarizers,
};
pub use preview::{feature_value, Retrieval};
pub use store::{BuildOptions, Progress, Source, Store, StoreError};
pub use structures::{
    BuildError, Embedder, EpisodeMemory, Evidence, EvidenceItem, MemoryStructure, PluginError,
    Plugins, Query, RetrieveError, StepParts, Summarizer, TripleExtractor,
};
pub use tokens::count_tokens;

#[cfg(test)]
pub(crate) mod testing {
    use std::path::PathBuf;

    /// The AMA-Bench file, if present (`MESA_AMA_BENCH` overrides).
    pub fn ama_path() -> Option<PathBuf> {
        let p = std::env::var_os("MESA_AMA_BENCH")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../../shared/data/ama-bench/open_end_qa_set.jsonl")
            });
        p.exists().then_some(p)
    }

    /// All of AMA-Bench, loaded with the default options; `None` (and a
    /// line saying the test is skipped) when the file is not there.
    pub fn ama() -> Option<crate::dataset::Loaded> {
        let Some(path) = ama_path() else {
            eprintln!("SKIPPED: AMA-Bench not found");
            return None;
        };
        Some(crate::load(&path, &Default::default()).expect("AMA-Bench loads"))
    }
}
