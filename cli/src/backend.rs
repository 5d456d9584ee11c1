//! Loading a policy file into either engine ([`mesa_runtime::AnyEngine`]):
//! the CLI's part is reading the file and printing diagnostics.

use crate::source::{load_program, read, CliError};
use mesa_compiler::Program;
use mesa_runtime::{AnyEngine, Runtime};

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

/// Whether a path names a compiled module rather than a `.mesa` source.
pub fn is_module(path: &str) -> bool {
    path.ends_with(".wasm") || path.ends_with(".cwasm")
}

/// Loads `path` (a `.mesa`, `.wasm` or `.cwasm`) into `engine`. A source's
/// diagnostics are printed; a compile limit is printed as a diagnostic.
pub fn load(path: &str, engine: EngineKind) -> Result<AnyEngine, CliError> {
    let runtime = runtime()?;
    if is_module(path) {
        let bytes = read(path)?;
        return AnyEngine::from_module(&runtime, &bytes, path.ends_with(".cwasm"), engine.into())
            .map_err(|e| CliError::Message(format!("`{path}`: {e}")));
    }
    let (program, source) = load_program(path)?;
    if engine == EngineKind::Interp {
        return AnyEngine::from_program(&runtime, program, &source, engine.into())
            .map_err(|e| CliError::Message(format!("`{path}`: {e}")));
    }
    let bytes = compile(&program, &source, path)?;
    let instance = runtime
        .load(&bytes)
        .and_then(|p| p.instantiate())
        .map_err(|e| CliError::Message(format!("`{path}`: {e}")))?;
    Ok(AnyEngine::Wasm(Box::new(instance), Some(Box::new(program))))
}

/// The process-wide runtime.
pub fn runtime() -> Result<Runtime, CliError> {
    Runtime::new().map_err(|e| CliError::Message(e.to_string()))
}

/// Compiles a checked program, turning limits into a printed diagnostic.
pub fn compile(program: &Program, source: &str, path: &str) -> Result<Vec<u8>, CliError> {
    mesa_compiler::wasm::compile(program, source).map_err(|e| {
        crate::source::print_human(path, source, &[e.to_diagnostic()]);
        CliError::Message(format!("`{path}` cannot be compiled to WebAssembly"))
    })
}
