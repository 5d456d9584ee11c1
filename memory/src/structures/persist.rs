//! A built memory's state, kept so that opening an episode does not
//! rebuild it: S, T, G and R as they are after the last persisted step,
//! each serialized with `postcard` on its own, V's 8-bit codes (and its
//! `f32` rows, for an embedder other than the built-in one) as
//! little-endian bytes, and the covered steps' renderings with their
//! indices, timestamps and token counts.
//!
//! ```text
//! EpisodeMemory ──state()──► StateBytes, three sections:
//!     graph: G (flat arrays: names in one buffer, its indexes as sorted arrays)
//!     rest:  S, T's keys, R's windows and frozen BM25 index, V's rows and codes, the steps
//!     text:  the steps' renderings, one after another
//! graph ──decode_graph──► G  ║  rest ──decode_rest──► R ║ (V, S, T)   (threads, each from
//!                                                        when its section is read)
//! both + text ──DecodedState::new──► DecodedState
//!     ──reopen_decoded (checks that every part ends at the last step)──► EpisodeMemory
//! ```
//!
//! The renderings are in the state so that an opening reads neither the
//! covered steps' texts nor renders them again: the live store, with a
//! summarizer that extends its summary step by step, does not read those
//! steps at all, and its memory's episode then holds them with their
//! index and timestamp only ([`DecodedState::take_steps`]). V's codes
//! are in it so that opening reads them as one blob instead of one vector
//! per step, and does not quantize again; the built-in embedder's `f32`
//! rows are not (V makes a row again from its step's text when a question
//! rescores it), which halves the state. V's HNSW graph is not in it (past
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
/// ignored (and the memory rebuilt from its steps). 7: no `f32` rows for
/// a hashed embedder (V makes them again from the steps' text); 6: G as flat arrays
/// (names in one buffer, its indexes as term indexes; 5 kept petgraph's
/// graph and hash maps); 5: the steps' renderings in the state (4: V's
/// codes in the layout of the embedder's vectors; 3 kept every
/// embedder's by dimension).
const STATE_VERSION: u32 = 7;

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

/// A memory's persisted state, in the sections a store keeps and reads in
/// this order: G (the longest to decode, so it is read first and decoded
/// while the others are read), the other parts, and the text of the steps'
/// renderings (most of the bytes, read into a buffer of its own).
#[derive(Debug, Clone, Copy)]
pub struct StateBytes<'a> {
    /// G.
    pub graph: &'a [u8],
    /// S, T and R, V's rows and codes, and the steps.
    pub rest: &'a [u8],
    /// The renderings' text.
    pub text: &'a [u8],
}

/// [`StateBytes`] as a memory gives them.
#[derive(Debug, Clone)]
pub struct OwnedState<'a> {
    graph: Vec<u8>,
    rest: Vec<u8>,
    text: &'a str,
}

impl OwnedState<'_> {
    /// The sections.
    pub fn bytes(&self) -> StateBytes<'_> {
        StateBytes {
            graph: &self.graph,
            rest: &self.rest,
            text: self.text.as_bytes(),
        }
    }
}

/// The state's parts but G and the text: S, T and R each encoded on its
/// own (so that opening decodes them side by side), V's rows and codes as
/// raw bytes (read back without a value-by-value decode), and the steps.
#[derive(Serialize, Deserialize)]
struct State<'a> {
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    summary: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    temporal: &'a [u8],
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
    /// The memory's persisted state (see [`EpisodeMemory::reopen`]).
    pub fn state(&self) -> OwnedState<'_> {
        // Serializing into a Vec fails only past a part's limits (G's
        // names over 4 GiB, over 2^32 entities or relations): an empty part
        // then does not decode, and the memory is rebuilt from its steps.
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
            raw: &r,
            vector: StoredRows {
                vectors: &vectors,
                codes: &codes,
                scales: &scales,
            },
            steps,
        };
        OwnedState {
            graph: g,
            rest: postcard::to_stdvec(&state).unwrap_or_default(),
            text,
        }
    }

    /// A memory from its persisted state (as [`EpisodeMemory::state`]
    /// gave it) and the steps it covers. An error if the state is damaged
    /// or not the state of these steps.
    pub fn reopen(
        episode: Arc<Episode>,
        state: StateBytes<'_>,
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let decoded = DecodedState::decode(state, plugins.embedder.as_ref());
        let decoded = decoded.map_err(|m| bad_state(&episode, m))?;
        EpisodeMemory::reopen_decoded(episode, decoded, config, plugins)
    }

    /// [`EpisodeMemory::reopen`] from a state already decoded (the live
    /// store decodes it while it reads the rest and the steps): checks that the state renders these steps and that every
    /// part ends at the last one.
    pub fn reopen_decoded(
        episode: Arc<Episode>,
        state: DecodedState,
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let bad = |message: &str| bad_state(&episode, message.to_string());
        let indices = episode.steps.iter().map(|s| s.index);
        if !indices.eq(state.texts.indices.iter().copied()) {
            return Err(bad("the renderings are not of these steps"));
        }
        let steps = Arc::new(state.texts);
        let (graph, rest) = (state.graph, state.rest);
        let (data, codes) = rest.vector;
        let embedder = plugins.embedder.clone();
        let vector = Vector::from_decoded(steps.clone(), data, codes, embedder, config)
            .ok_or_else(|| bad("V's rows do not fit the steps"))?;
        let temporal = rest
            .temporal
            .reopen(&episode, steps.clone())
            .ok_or_else(|| bad("T indexes another number of steps"))?;
        let mut raw = rest.raw;
        if !raw::tiles(raw.windows(), steps.len()) {
            return Err(bad("R's windows do not tile the steps"));
        }
        raw.steps = steps;
        if !graph.covers(&episode) {
            return Err(bad("G does not end at the last step"));
        }
        Ok(EpisodeMemory {
            episode,
            summary: rest.summary,
            temporal,
            graph,
            vector,
            raw,
            elided: 0,
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
    graph: Graph,
    rest: DecodedRest,
    texts: StepTexts,
    steps: Vec<Step>,
}

/// [`StateBytes::rest`] decoded: S, T, R, V's rows and codes, and the
/// steps before their renderings' text is read.
pub struct DecodedRest {
    summary: Summary,
    temporal: Temporal,
    raw: Raw,
    vector: (Vec<f32>, Codes),
    steps: StoredSteps,
}

impl DecodedState {
    /// Decodes G's section.
    pub fn decode_graph(bytes: &[u8]) -> Result<Graph, String> {
        decode("G", bytes)
    }

    /// Decodes the section after G's: S, T and R side by side (R on a
    /// thread of its own), V's rows and codes (of `embedder`'s dimension,
    /// its codes in the layout of its vectors), and the steps.
    pub fn decode_rest(bytes: &[u8], embedder: &dyn Embedder) -> Result<DecodedRest, String> {
        let (dim, layout) = (embedder.dim(), Layout::of(embedder));
        let state: State<'_> = decode("the state", bytes)?;
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
            let raw = beside(scope, || decode::<Raw>("R", state.raw));
            let vector = vector();
            let summary = decode::<Summary>("S", state.summary);
            let temporal = decode::<Temporal>("T", state.temporal);
            Ok(DecodedRest {
                summary: summary?,
                temporal: temporal?,
                raw: raw()?,
                vector: vector?,
                steps: state.steps,
            })
        })
    }

    /// The state from its decoded sections and the renderings' `text`; a
    /// message if the text is not theirs.
    pub fn new(graph: Graph, mut rest: DecodedRest, text: Vec<u8>) -> Result<DecodedState, String> {
        let (texts, steps) = std::mem::take(&mut rest.steps).open(text)?;
        Ok(DecodedState {
            graph,
            rest,
            texts,
            steps,
        })
    }

    /// Decodes a whole state, G beside the rest; a message if any part is
    /// damaged.
    pub fn decode(state: StateBytes<'_>, embedder: &dyn Embedder) -> Result<DecodedState, String> {
        let (graph, rest) = std::thread::scope(|scope| {
            let graph = beside(scope, || DecodedState::decode_graph(state.graph));
            let rest = DecodedState::decode_rest(state.rest, embedder);
            (graph(), rest)
        });
        DecodedState::new(graph?, rest?, state.text.to_vec())
    }

    /// The steps the state covers, with their index and timestamp but
    /// neither action nor observation (their renderings are in the state);
    /// empty once taken.
    pub fn take_steps(&mut self) -> Vec<Step> {
        std::mem::take(&mut self.steps)
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

    /// What damages V's rows: for the built-in embedder, whose state keeps
    /// none, any bytes there; for another, rows cut short.
    type Damage = fn(&mut [Vec<u8>; 3]);
    const STRAY_ROWS: [Damage; 2] = [
        |v| v[0].extend_from_slice(&1.0f32.to_le_bytes()),
        |v| v[0].push(0),
    ];
    const CUT_ROWS: [Damage; 2] = [
        |v| v[0].truncate(v[0].len() - 1),
        |v| v[0].truncate(v[0].len() - 4),
    ];

    /// A state opens to the memory it was taken from; one whose V part is
    /// ragged, short or not sane is refused with an error, not a panic, and
    /// so are its sections swapped, a text that is not the renderings' and
    /// an episode that is not the state's.
    #[test]
    fn a_state_opens_whole_and_a_damaged_v_is_refused() {
        opens_whole_and_refuses_damage(Plugins::default(), STRAY_ROWS);
    }

    /// The same with an embedder whose rows the state keeps.
    #[test]
    fn a_state_with_kept_rows_opens_whole_and_refuses_damage() {
        let plugins = Plugins {
            embedder: Arc::new(crate::structures::fixtures::Dense),
            ..Plugins::default()
        };
        opens_whole_and_refuses_damage(plugins, CUT_ROWS);
    }

    fn opens_whole_and_refuses_damage(plugins: Plugins, rows: [Damage; 2]) {
        let config = Config::default();
        let episode = Arc::new(game_episode(300));
        let m = EpisodeMemory::build(episode.clone(), &config, &plugins).unwrap();
        let owned = m.state();
        let state = owned.bytes();
        let back = EpisodeMemory::reopen(episode.clone(), state, &config, &plugins);
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
        let reopen = |state: StateBytes<'_>, episode: &Arc<Episode>| {
            EpisodeMemory::reopen(episode.clone(), state, &config, &plugins)
        };
        let damaged: [Damage; 5] = [
            rows[0],
            rows[1],
            |v| v[1].truncate(v[1].len() - 1),
            |v| v[2].truncate(v[2].len() - 8),
            |v| v[2][..4].copy_from_slice(&f32::NAN.to_le_bytes()),
        ];
        for (k, change) in damaged.iter().enumerate() {
            let bad = with_vector(state.rest, change);
            let got = reopen(
                StateBytes {
                    rest: &bad,
                    ..state
                },
                &episode,
            );
            assert!(got.is_err(), "damage {k} was not refused");
        }
        let swapped = StateBytes {
            graph: state.rest,
            rest: state.graph,
            ..state
        };
        assert!(reopen(swapped, &episode).is_err());
        // An episode with a step fewer than the state covers.
        let mut fewer = (*episode).clone();
        fewer.steps.pop();
        assert!(reopen(state, &Arc::new(fewer)).is_err());
        // A text that is not the renderings'.
        let cut = &state.text[..state.text.len() - 1];
        assert!(reopen(StateBytes { text: cut, ..state }, &episode).is_err());
    }
}
