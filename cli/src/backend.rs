//! Loading a policy file into either engine through the staged path
//! ([`mesa_runtime::Staged`]): the CLI's part is reading the file, choosing
//! the compiler for the command's workload, and printing diagnostics.

use crate::error::CliError;
use crate::source::{print_human, read};
use mesa_runtime::{AnyEngine, PolicyError, PolicyFormat, Runtime, RuntimeConfig, Staged};

/// Which engine `mesa run` uses.
#[derive(Clone, Copy, clap::ValueEnum, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// Compile to WebAssembly and run it in the wasmtime sandbox.
    #[default]
    Wasm,
    /// The reference interpreter (needs the `.mesa` source).
    Interp,
}

impl From<EngineKind> for mesa_runtime::EngineKind {
    fn from(k: EngineKind) -> Self {
        match k {
            EngineKind::Wasm => mesa_runtime::EngineKind::Wasm,
            EngineKind::Interp => mesa_runtime::EngineKind::Interp,
        }
    }
}

/// Reads `path` (a `.mesa`, `.wasm` or `.cwasm`) and checks a source,
/// printing its diagnostics (warnings included).
pub fn stage(path: &str) -> Result<Staged, CliError> {
    let bytes = read(path)?;
    match Staged::from_bytes(&bytes, PolicyFormat::of_name(path)) {
        Ok(staged) => {
            if let Some(source) = staged.source() {
                print_human(path, source, staged.warnings());
            }
            Ok(staged)
        }
        Err(e) => Err(failed(path, e)),
    }
}

/// A staged policy's error as the command's: diagnostics and a compile
/// limit are printed as diagnostics.
pub fn failed(path: &str, e: PolicyError) -> CliError {
    match e {
        PolicyError::Check { diagnostics, text } => {
            print_human(path, &text, &diagnostics);
            CliError::Diagnosed {
                path: path.to_string(),
                errors: diagnostics.iter().filter(|d| d.is_error()).count(),
            }
        }
        source => CliError::Policy {
            path: path.to_string(),
            source,
        },
    }
}

/// Loads `path` into `engine`, with the compiler that answers about
/// `queries` questions soonest.
pub fn load(path: &str, engine: EngineKind, queries: u64) -> Result<AnyEngine, CliError> {
    let mut staged = stage(path)?;
    let format = PolicyFormat::of_name(path);
    let runtime = Runtime::with_config(RuntimeConfig::for_workload(format, queries))?;
    staged
        .engine(&runtime, engine.into())
        .map_err(|e| compile_failed(path, &staged, e))
}

/// Prints a compile limit as a diagnostic on the source; any other error
/// as it is.
pub fn compile_failed(path: &str, staged: &Staged, e: PolicyError) -> CliError {
    if let (PolicyError::Compile(c), Some(source)) = (&e, staged.source()) {
        print_human(path, source, &[c.to_diagnostic()]);
    }
    failed(path, e)
}
