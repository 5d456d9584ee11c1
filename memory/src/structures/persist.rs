//! A built memory's state, kept so that opening an episode does not
//! rebuild it: S, T, G and R as they are after the last persisted step,
//! each serialized with `postcard` on its own, V's rows with their 8-bit
//! codes as little-endian bytes, and the covered steps' renderings with
//! their indices, timestamps and token counts.
//!
//! ```text
//! EpisodeMemory ──state()──► bytes: S, T's keys, G, R's windows and BM25 index, V's rows and codes,
//!                            the steps' renderings
//! bytes ──DecodedState::decode──► G ║ R ║ (V from its bytes, S, T, the renderings)   (threads)
//! both ──reopen_decoded (checks that every part ends at the last step)──► EpisodeMemory
//! ```
//!
//! The renderings are in the state so that an opening reads neither the
//! covered steps' texts nor renders them again: the live store, with a
//! summarizer that extends its summary step by step, does not read those
//! steps at all, and its memory's episode then holds them with their
//! index and timestamp only ([`DecodedState::take_steps`]). V's rows are
//! in it so that opening reads them as one blob instead of one per step,
//! and does not quantize them again. V's HNSW graph is not in it (past
//! `vector_hnsw_threshold`, the live store keeps it as hnsw_rs's own
//! files, see [`super::ann`]). A reopened memory answers exactly like
//! [`EpisodeMemory::from_parts`] over the same steps; the live store's
//! tests check it, and [`state_fingerprint`] keeps a state from being
//! opened under other parameters or builders.

use super::quant::{Codes, Layout};
use super::texts::StoredSteps;
use super::vector::{StoredRows, Vector};
use super::{raw, BuildError, EpisodeMemory, Graph, Plugins, Raw, StepTexts};
use super::{Embedder, Summary, Temporal};
use crate::config::Config;
use crate::dataset::{Episode, Step};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Bumped when a persisted state's layout changes; an older state is then
/// ignored (and the memory rebuilt from its steps). 5: the steps'
/// renderings in the state (4: V's codes in the layout of the embedder's
/// vectors; 3 kept every embedder's by dimension).
const STATE_VERSION: u32 = 5;

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

/// The serialized part of a memory: S, T, G and R each encoded on its own
/// (so that opening decodes them side by side), V's rows and codes as
/// raw bytes (read back without a value-by-value decode), and the steps
/// (their renderings' text is stored beside these parts, not in them).
#[derive(Serialize, Deserialize)]
struct State<'a> {
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    summary: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    temporal: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    graph: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    raw: &'a [u8],
    #[serde(borrow)]
    vector: StoredRows<'a>,
    steps: StoredSteps,
}

/// One part of a state, decoded.
fn decode<'a, T: Deserialize<'a>>(what: &str, bytes: &'a [u8]) -> Result<T, String> {
    postcard::from_bytes(bytes).map_err(|e| format!("{what} does not decode: {e}"))
}

impl EpisodeMemory {
    /// The memory's persisted state (see [`EpisodeMemory::reopen`]): its
    /// parts, and the text of the steps' renderings, which a store keeps
    /// beside them (it is most of the bytes, and is read into its own
    /// buffer).
    pub fn state(&self) -> (Vec<u8>, &str) {
        // Serializing plain data into a Vec cannot fail.
        let (s, t) = (
            postcard::to_stdvec(&self.summary).unwrap_or_default(),
            postcard::to_stdvec(&self.temporal).unwrap_or_default(),
        );
        let (g, r) = (
            postcard::to_stdvec(&self.graph).unwrap_or_default(),
            postcard::to_stdvec(&self.raw).unwrap_or_default(),
        );
        let [vectors, codes, scales] = self.vector.to_bytes();
        let times = self.episode.steps.iter();
        let times = times.map(|s| s.timestamp.clone()).collect();
        let (steps, text) = self.temporal.steps.stored(times);
        let state = State {
            summary: &s,
            temporal: &t,
            graph: &g,
            raw: &r,
            vector: StoredRows {
                vectors: &vectors,
                codes: &codes,
                scales: &scales,
            },
            steps,
        };
        (postcard::to_stdvec(&state).unwrap_or_default(), text)
    }

    /// A memory from its persisted state (its `parts` and `text`, as
    /// [`EpisodeMemory::state`] gave them) and the steps it covers. An
    /// error if the state is damaged or not the state of these steps.
    pub fn reopen(
        episode: Arc<Episode>,
        (parts, text): (&[u8], &str),
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let decoded = DecodedState::decode(parts, plugins.embedder.as_ref());
        let mut decoded = decoded.map_err(|m| bad_state(&episode, m))?;
        let opened = decoded.open_text(text.as_bytes().to_vec());
        opened.map_err(|m| bad_state(&episode, m))?;
        EpisodeMemory::reopen_decoded(episode, decoded, config, plugins)
    }

    /// [`EpisodeMemory::reopen`] from a state already decoded, its text
    /// opened (the live store decodes it while it reads the text and the
    /// steps): checks that the state renders these steps and that every
    /// part ends at the last one.
    pub fn reopen_decoded(
        episode: Arc<Episode>,
        state: DecodedState,
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let bad = |message: &str| bad_state(&episode, message.to_string());
        if state.pending.is_some() {
            return Err(bad("the renderings' text was not read"));
        }
        let indices = episode.steps.iter().map(|s| s.index);
        if !indices.eq(state.texts.indices.iter().copied()) {
            return Err(bad("the renderings are not of these steps"));
        }
        let steps = Arc::new(state.texts);
        let (data, codes) = state.vector;
        let embedder = plugins.embedder.clone();
        let vector = Vector::from_decoded(steps.clone(), data, codes, embedder, config)
            .ok_or_else(|| bad("V's rows do not fit the steps"))?;
        let temporal = state
            .temporal
            .reopen(&episode, steps.clone())
            .ok_or_else(|| bad("T indexes another number of steps"))?;
        let mut raw = state.raw;
        if !raw::tiles(raw.windows(), steps.len()) {
            return Err(bad("R's windows do not tile the steps"));
        }
        raw.steps = steps;
        if !state.graph.covers(&episode) {
            return Err(bad("G does not end at the last step"));
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

/// What a state that does not open is called in its error.
const STATE: &str = "persisted state";

/// The error for a state that does not open.
fn bad_state(episode: &Episode, message: String) -> BuildError {
    BuildError::bad_output(episode, STATE, message)
}

/// A persisted state decoded, before it meets the steps it covers
/// ([`EpisodeMemory::reopen_decoded`]).
pub struct DecodedState {
    summary: Summary,
    temporal: Temporal,
    graph: Graph,
    raw: Raw,
    vector: (Vec<f32>, Codes),
    /// The steps until [`DecodedState::open_text`] reads their text.
    pending: Option<StoredSteps>,
    texts: StepTexts,
    steps: Vec<Step>,
}

impl DecodedState {
    /// Opens the steps' renderings over their `text` (stored beside the
    /// parts); a message if it is not theirs.
    pub fn open_text(&mut self, text: Vec<u8>) -> Result<(), String> {
        let pending = self.pending.take().ok_or("the renderings were opened")?;
        (self.texts, self.steps) = pending.open(text)?;
        Ok(())
    }

    /// The steps the state covers, with their index and timestamp but
    /// neither action nor observation (their renderings are in the state);
    /// empty until [`DecodedState::open_text`], and once taken.
    pub fn take_steps(&mut self) -> Vec<Step> {
        std::mem::take(&mut self.steps)
    }

    /// Decodes S, T, G and R side by side (G and R on threads of their
    /// own), V's rows and codes (of `embedder`'s dimension, its codes in
    /// the layout of its vectors) and the steps (whose renderings'
    /// text [`DecodedState::open_text`] reads); a message if any part is
    /// damaged.
    pub fn decode(state: &[u8], embedder: &dyn Embedder) -> Result<DecodedState, String> {
        let (dim, layout) = (embedder.dim(), Layout::of(embedder));
        let state: State<'_> = decode("the state", state)?;
        let vector = || -> Result<(Vec<f32>, Codes), String> {
            let rows = &state.vector;
            let data = crate::le::f32s_from_le(rows.vectors);
            let codes = Codes::from_bytes(dim, layout, rows.codes, rows.scales);
            data.zip(codes)
                .ok_or_else(|| "V's rows are not whole".into())
        };
        // Plain threads, not rayon's pool: the caller may be a pool thread
        // that waits for this while holding a lock another one needs.
        std::thread::scope(|scope| {
            let graph = beside(scope, || decode::<Graph>("G", state.graph));
            let raw = beside(scope, || decode::<Raw>("R", state.raw));
            let vector = vector();
            let summary = decode::<Summary>("S", state.summary);
            let temporal = decode::<Temporal>("T", state.temporal);
            Ok(DecodedState {
                summary: summary?,
                temporal: temporal?,
                graph: graph()?,
                raw: raw()?,
                vector: vector?,
                pending: Some(state.steps),
                texts: StepTexts::default(),
                steps: Vec::new(),
            })
        })
    }
}

/// Starts `f` on a thread of `scope` (or, if no thread can be started,
/// runs it when waited for); the returned closure waits for its result.
fn beside<'s, 'e: 's, T: Send + 's>(
    scope: &'s std::thread::Scope<'s, 'e>,
    f: impl FnOnce() -> Result<T, String> + Send + Copy + 's,
) -> impl FnOnce() -> Result<T, String> + 's {
    let handle = std::thread::Builder::new().spawn_scoped(scope, f).ok();
    move || match handle {
        Some(h) => h
            .join()
            .unwrap_or_else(|_| Err("decoding a part panicked".into())),
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::fixtures::game_episode;
    use crate::Retrieval;
    use mesa_core::Mask;

    /// A state re-encoded with V's bytes changed by `change`.
    fn with_vector(bytes: &[u8], change: impl Fn(&mut [Vec<u8>; 3])) -> Vec<u8> {
        let s: State<'_> = decode("the state", bytes).unwrap();
        let mut v = [s.vector.vectors, s.vector.codes, s.vector.scales].map(<[u8]>::to_vec);
        change(&mut v);
        let vector = StoredRows {
            vectors: &v[0],
            codes: &v[1],
            scales: &v[2],
        };
        postcard::to_stdvec(&State { vector, ..s }).unwrap()
    }

    /// A state opens to the memory it was taken from; one whose V part is
    /// ragged, short or not sane is refused with an error, not a panic.
    #[test]
    fn a_state_opens_whole_and_a_damaged_v_is_refused() {
        let (config, plugins) = (Config::default(), Plugins::default());
        let episode = Arc::new(game_episode(300));
        let m = EpisodeMemory::build(episode.clone(), &config, &plugins).unwrap();
        let (state, text) = m.state();
        let back = EpisodeMemory::reopen(episode.clone(), (&state, text), &config, &plugins);
        let back = back.expect("the state opens");
        assert_eq!(back.vector.data(), m.vector.data());
        for q in [
            "Where is the key?",
            "What happened at step 20?",
            "Why was the door locked?",
        ] {
            let (a, b) = (Retrieval::new(&back, q), Retrieval::new(&m, q));
            assert_eq!(
                a.compose(Mask::ALL).unwrap(),
                b.compose(Mask::ALL).unwrap(),
                "{q}"
            );
        }
        let damaged: [fn(&mut [Vec<u8>; 3]); 5] = [
            |v| v[0].truncate(v[0].len() - 1),
            |v| v[0].truncate(v[0].len() - 4),
            |v| v[1].truncate(v[1].len() - 1),
            |v| v[2].truncate(v[2].len() - 8),
            |v| v[2][..4].copy_from_slice(&f32::NAN.to_le_bytes()),
        ];
        for (k, change) in damaged.iter().enumerate() {
            let bad = with_vector(&state, change);
            let got = EpisodeMemory::reopen(episode.clone(), (&bad, text), &config, &plugins);
            assert!(got.is_err(), "damage {k} was not refused");
        }
        // An episode with a step fewer than the state covers.
        let mut fewer = (*episode).clone();
        fewer.steps.pop();
        let short = EpisodeMemory::reopen(Arc::new(fewer), (&state, text), &config, &plugins);
        assert!(short.is_err());
        // A text that is not the renderings'.
        let cut = &text[..text.len() - 1];
        let other = EpisodeMemory::reopen(episode, (&state, cut), &config, &plugins);
        assert!(other.is_err());
    }
}
