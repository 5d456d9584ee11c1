//! Which memory builders a command uses, from its flags, and opening a
//! store with the embedder that built it.

use crate::cmd::build::{EmbedderKind, LlmKind};
use crate::source::CliError;
use mesa_memory::plugins::{Embedders, PluginOptions};
use mesa_memory::{Plugins, Store, StoreError};
use std::path::{Path, PathBuf};

/// The builders for `mesa build`.
pub fn for_build(
    embedder: EmbedderKind,
    summarizer: LlmKind,
    extractor: LlmKind,
    minilm_dir: Option<PathBuf>,
) -> Result<Plugins, CliError> {
    let options = PluginOptions::new(minilm_dir, None);
    let e = match embedder {
        EmbedderKind::Builtin => "builtin",
        EmbedderKind::Minilm => "minilm",
        EmbedderKind::Openai => "openai",
    };
    let name = |k: LlmKind| match k {
        LlmKind::Builtin => "builtin",
        LlmKind::Llm => "llm",
    };
    options
        .plugins(e, name(summarizer), name(extractor))
        .map_err(|err| CliError::Message(err.to_string()))
}

/// Opens a store; a store built with another embedder than the built-in
/// one is opened with that embedder (questions must be embedded the same
/// way as the steps were).
pub fn open_store(dir: &Path) -> Result<Store, CliError> {
    match Store::open(dir) {
        Err(StoreError::EmbedderMismatch { stored, .. }) => {
            let embedder = Embedders::from_recorded(&stored, &PluginOptions::default())
                .map_err(|e| CliError::Message(format!("`{}`: {e}", dir.display())))?;
            let plugins = Plugins {
                embedder,
                ..Plugins::default()
            };
            Store::open_with(dir, plugins).map_err(|e| CliError::Message(e.to_string()))
        }
        other => other.map_err(|e| CliError::Message(e.to_string())),
    }
}
