//! A built memory's state, kept so that opening an episode does not
//! rebuild it: S, T, G and R as they are after the last persisted step,
//! serialized with `postcard`.
//!
//! ```text
//! EpisodeMemory ──state()──► bytes (S, T's keys, G, R's windows and BM25 index)
//! bytes + the episode's steps and StepParts (tokens, vectors) ──reopen()──► EpisodeMemory
//! ```
//!
//! The step texts, their renderings and V's vectors are not in the state:
//! they are the stored steps and parts, read anyway. V's HNSW graph is not
//! in it either (it is rebuilt in the background). A reopened memory
//! answers exactly like [`EpisodeMemory::from_parts`] over the same steps;
//! the live store's tests check it, and [`state_fingerprint`] keeps a state from
//! being opened under other parameters or builders.

use super::vector::Vector;
use super::{BuildError, EpisodeMemory, Graph, PluginError, Plugins, Raw, StepParts, StepTexts};
use super::{Summary, Temporal};
use crate::config::Config;
use crate::dataset::Episode;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Bumped when a persisted state's layout changes; an older state is then
/// ignored (and the memory rebuilt from its steps).
const STATE_VERSION: u32 = 1;

/// What a persisted state was built under: it is opened only under the
/// same.
pub fn state_fingerprint(config: &Config, plugins: &Plugins) -> String {
    let config = serde_json::to_string(config).unwrap_or_default();
    // The crate version too: a change to tokenizing, term hashing or
    // scoring that keeps the builders' names must not reopen old states.
    format!(
        "state-v{STATE_VERSION} mesa-memory-{} {} {} {} {config}",
        env!("CARGO_PKG_VERSION"),
        plugins.summarizer.name(),
        plugins.extractor.name(),
        plugins.embedder.name()
    )
}

/// The serialized part of a memory.
#[derive(Serialize)]
struct StateRef<'a> {
    summary: &'a Summary,
    temporal: &'a Temporal,
    graph: &'a Graph,
    raw: &'a Raw,
}

#[derive(Deserialize)]
struct State {
    summary: Summary,
    temporal: Temporal,
    graph: Graph,
    raw: Raw,
}

impl EpisodeMemory {
    /// The memory's persisted state (see [`EpisodeMemory::reopen`]).
    pub fn state(&self) -> Vec<u8> {
        let state = StateRef {
            summary: &self.summary,
            temporal: &self.temporal,
            graph: &self.graph,
            raw: &self.raw,
        };
        // Serializing plain data into a Vec cannot fail.
        postcard::to_stdvec(&state).unwrap_or_default()
    }

    /// A memory from its persisted `state` and the steps it covers, with
    /// their parts (one per step; only the tokens and vectors are read).
    /// An error if the state is damaged or not the state of these steps.
    pub fn reopen(
        episode: Arc<Episode>,
        parts: &[StepParts],
        state: &[u8],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let bad = |message: String| BuildError::Plugin {
            episode: episode.id.clone(),
            source: PluginError::BadOutput {
                plugin: "persisted state".into(),
                message,
            },
        };
        // Decoding the state and rendering the steps (with V's rows) are
        // independent: side by side.
        let (state, texts) = rayon::join(
            || postcard::from_bytes::<State>(state),
            || -> Result<(Arc<StepTexts>, Vector), String> {
                let tokens = parts.iter().map(|p| p.tokens).collect();
                let steps =
                    StepTexts::with_tokens(&episode.steps, config.evidence_text_bytes, tokens)
                        .map(Arc::new)
                        .ok_or_else(|| {
                            format!("{} parts for {} steps", parts.len(), episode.steps.len())
                        })?;
                let vector = EpisodeMemory::stored_vectors(&steps, parts, config, plugins)?;
                Ok((steps, vector))
            },
        );
        let state = state.map_err(|e| bad(format!("it does not decode: {e}")))?;
        let (steps, vector) = texts.map_err(bad)?;
        let temporal = state
            .temporal
            .reopen(&episode, steps.clone())
            .ok_or_else(|| bad("T indexes another number of steps".into()))?;
        let mut raw = state.raw;
        if raw.windows().last().map_or(0, |w| w.end) != steps.len() {
            return Err(bad("R's windows do not end at the last step".into()));
        }
        raw.steps = steps.clone();
        if !state.graph.covers(&episode) {
            return Err(bad("G does not end at the last step".into()));
        }
        Ok(EpisodeMemory {
            episode,
            summary: state.summary,
            temporal,
            graph: state.graph,
            vector,
            raw,
        })
    }
}
