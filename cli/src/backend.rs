//! The two ways to evaluate a policy: the reference interpreter and the
//! compiled Wasm module in the sandboxed runtime.

use crate::source::{load_program, read, CliError};
use mesa_compiler::{wasm, Input, Outcome, Program, Selector};
use mesa_runtime::{PolicyInstance, Runtime};

/// Which engine `mesa run` uses.
#[derive(Clone, Copy, clap::ValueEnum, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// Compile to WebAssembly and run it in the wasmtime sandbox.
    #[default]
    Wasm,
    /// The reference interpreter (needs the `.mesa` source).
    Interp,
}

/// A loaded policy, ready to select.
pub enum Backend {
    /// The interpreter, with its program.
    Interp(Selector),
    /// A Wasm instance; the program when it was compiled from source here.
    Wasm(Box<PolicyInstance>, Option<Program>),
}

/// Whether a path names a compiled module rather than a `.mesa` source.
pub fn is_module(path: &str) -> bool {
    path.ends_with(".wasm") || path.ends_with(".cwasm")
}

impl Backend {
    /// Loads `path` (a `.mesa`, `.wasm` or `.cwasm`) for `engine`.
    pub fn load(path: &str, engine: EngineKind) -> Result<Backend, CliError> {
        if is_module(path) {
            if engine == EngineKind::Interp {
                return Err(CliError::Message(format!(
                    "the interpreter needs the policy's `.mesa` source, not `{path}`; use --engine wasm"
                )));
            }
            let bytes = read(path)?;
            let runtime = runtime()?;
            let policy = if path.ends_with(".cwasm") {
                runtime.load_precompiled(&bytes)
            } else {
                runtime.load(&bytes)
            }
            .map_err(|e| CliError::Message(format!("`{path}`: {e}")))?;
            let instance = policy
                .instantiate()
                .map_err(|e| CliError::Message(e.to_string()))?;
            return Ok(Backend::Wasm(Box::new(instance), None));
        }
        let (program, source) = load_program(path)?;
        match engine {
            EngineKind::Interp => Ok(Backend::Interp(
                Selector::new(program).map_err(|e| CliError::Message(e.to_string()))?,
            )),
            EngineKind::Wasm => {
                let bytes = compile(&program, &source, path)?;
                let policy = runtime()?
                    .load(&bytes)
                    .map_err(|e| CliError::Message(e.to_string()))?;
                let instance = policy
                    .instantiate()
                    .map_err(|e| CliError::Message(e.to_string()))?;
                Ok(Backend::Wasm(Box::new(instance), Some(program)))
            }
        }
    }

    /// Selects for one input.
    pub fn select(&mut self, input: &Input) -> Result<Outcome, CliError> {
        match self {
            Backend::Interp(s) => Ok(s.select(input)),
            Backend::Wasm(i, _) => i
                .select(input)
                .map_err(|e| CliError::Message(e.to_string())),
        }
    }

    /// The name of rule `i`.
    pub fn rule_name(&self, i: usize) -> String {
        match self {
            Backend::Interp(s) => s.program().rules.get(i).map(|r| r.name.clone()),
            Backend::Wasm(inst, _) => inst.metadata().rules.get(i).cloned(),
        }
        .unwrap_or_else(|| format!("#{i}"))
    }

    /// The source line of rule `i`, when the source is known.
    pub fn rule_line(&self, i: usize) -> Option<usize> {
        let program = match self {
            Backend::Interp(s) => Some(s.program()),
            Backend::Wasm(_, p) => p.as_ref(),
        };
        program.and_then(|p| p.rules.get(i)).map(|r| r.line)
    }
}

/// The process-wide runtime.
pub fn runtime() -> Result<Runtime, CliError> {
    Runtime::new().map_err(|e| CliError::Message(e.to_string()))
}

/// Compiles a checked program, turning limits into a printed diagnostic.
pub fn compile(program: &Program, source: &str, path: &str) -> Result<Vec<u8>, CliError> {
    wasm::compile(program, source).map_err(|e| {
        crate::source::print_human(path, source, &[e.to_diagnostic()]);
        CliError::Message(format!("`{path}` cannot be compiled to WebAssembly"))
    })
}
