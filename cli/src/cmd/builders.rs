//! The builders a command makes structures with, named on its command
//! line: `mesa build`, and the live front ends (`mesa append`, `mesa
//! serve`, `mesa mcp`), where they name a new tenant's builders and a
//! tenant that exists keeps the ones it recorded.

use mesa_memory::{BuilderKind, BuilderKinds, EmbedderKind, PluginOptions};
use std::path::PathBuf;

/// `--embedder`, `--minilm-dir`, `--summarizer`, `--extractor`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct BuilderArgs {
    /// How the vector index (V) embeds steps: `builtin` (deterministic, no
    /// weights), `minilm` (all-MiniLM-L6-v2 in candle; files from
    /// scripts/fetch-minilm.sh) or `openai` (an OpenAI-compatible embeddings
    /// endpoint: MESA_LLM_BASE_URL, MESA_LLM_API_KEY,
    /// MESA_LLM_EMBEDDING_MODEL). For a live memory these name a new
    /// tenant's builders, which it records: `mesa build --into` refuses a
    /// tenant that recorded others, and `mesa append`, `serve` and `mcp`
    /// use the ones it recorded.
    #[arg(long, default_value = "builtin")]
    pub embedder: EmbedderKind,
    /// The MiniLM model directory (default: MESA_MINILM_DIR, else models/all-MiniLM-L6-v2).
    #[arg(long)]
    pub minilm_dir: Option<PathBuf>,
    /// How the summary (S) is written: `builtin` or `llm` (an
    /// OpenAI-compatible chat endpoint: MESA_LLM_BASE_URL, ...).
    #[arg(long, default_value = "builtin")]
    pub summarizer: BuilderKind,
    /// How the graph's relations (G) are extracted: `builtin` or `llm`.
    #[arg(long, default_value = "builtin")]
    pub extractor: BuilderKind,
}

impl BuilderArgs {
    /// The builders named.
    pub fn kinds(&self) -> BuilderKinds {
        BuilderKinds {
            embedder: self.embedder,
            summarizer: self.summarizer,
            extractor: self.extractor,
        }
    }

    /// The options the builders are made from (the MiniLM directory given,
    /// the rest from the environment).
    pub fn options(&self) -> PluginOptions {
        PluginOptions::with_minilm_dir(self.minilm_dir.clone())
    }
}
