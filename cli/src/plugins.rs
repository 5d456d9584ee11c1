//! Which memory builders a command uses, from its flags.

use crate::cmd::build::EmbedderKind;
use crate::source::CliError;
use mesa_memory::Plugins;

/// The builders for `mesa build`.
pub fn for_build(embedder: EmbedderKind) -> Result<Plugins, CliError> {
    match embedder {
        EmbedderKind::Builtin => Ok(Plugins::default()),
        EmbedderKind::Minilm | EmbedderKind::Openai => Err(CliError::Usage(format!(
            "--embedder {embedder:?} is not available in this build yet; use --embedder builtin"
        ))),
    }
}
