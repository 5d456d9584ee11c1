//! The parameters of the five structures. Stored in a store's manifest, so a
//! store is always queried with the parameters it was built with.

use serde::{Deserialize, Serialize};

/// Every parameter of the structures, with the paper's values as defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// In evidence text, each action and each observation is cut to this
    /// many bytes (at a character boundary, with a visible `[…N more bytes
    /// cut]` marker). Default 4,000 (about 1,000 tokens).
    pub evidence_text_bytes: usize,
    /// S: the summary's token budget (cl100k_base). Default 1,500.
    pub summary_budget_tokens: usize,
    /// T: how many steps `before/after/until step X` reaches on its side of
    /// X (X itself is included too). Default 5.
    pub temporal_window: usize,
    /// T: at most this many steps are returned for named steps; longer
    /// ranges are sampled evenly, keeping explicitly named steps. Default 20.
    pub temporal_max_steps: usize,
    /// T: how many turn keys the lexical fallback returns. Default 5.
    pub temporal_top_k: usize,
    /// G: focal relations returned. Default 8.
    pub graph_focal: usize,
    /// G: neighbour relations per focal relation. Default 4.
    pub graph_neighbours: usize,
    /// G: hops of expansion around a focal relation (1 or 2). Default 2.
    pub graph_hops: usize,
    /// G: the step proximity bonus `proximity / (1 + |step - r|)`. Default 1.25.
    pub graph_proximity: f64,
    /// G: at most this many relations are extracted per step. Default 24.
    pub graph_edges_per_step: usize,
    /// V: steps returned. Default 5.
    pub vector_top_k: usize,
    /// V: episodes with more steps than this are searched with HNSW
    /// (hnsw_rs) instead of exactly, if the embedder's vectors are dense
    /// (MiniLM's and an endpoint's; the built-in embedder's are hashed,
    /// `Embedder::hashed`, and always scanned exactly).
    /// Default 100,000: below it the exact scan over 8-bit codes costs a
    /// few milliseconds and needs no index build.
    pub vector_hnsw_threshold: usize,
    /// R: windows returned when several score above 0. Default 3.
    pub raw_top_k: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            evidence_text_bytes: 4000,
            summary_budget_tokens: 1500,
            temporal_window: 5,
            temporal_max_steps: 20,
            temporal_top_k: 5,
            graph_focal: 8,
            graph_neighbours: 4,
            graph_hops: 2,
            graph_proximity: 1.25,
            graph_edges_per_step: 24,
            vector_top_k: 5,
            vector_hnsw_threshold: 100_000,
            raw_top_k: 3,
        }
    }
}
