//! Both engines behind [`mesa_core::Engine`]: the reference interpreter and
//! a compiled module in the sandbox, loaded from a policy's source or from a
//! compiled module. The CLI, the query path and the optimizer all select
//! through [`AnyEngine`].

use crate::{PolicyInstance, Runtime, RuntimeError};
use mesa_compiler::wasm::{self, CompileError};
use mesa_compiler::{Program, Selector};
use mesa_core::{Engine, Feature, Input, Selection, Structure};

/// Which engine evaluates a policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// The policy compiled to WebAssembly, run in the wasmtime sandbox.
    #[default]
    Wasm,
    /// The reference interpreter (needs the policy's source).
    Interp,
}

/// Why a policy could not be made into an engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The checked program could not be compiled to WebAssembly.
    #[error("the policy cannot be compiled to WebAssembly: {0}")]
    Compile(#[from] CompileError),
    /// The interpreter could not be prepared.
    #[error("the interpreter cannot run the policy: {0}")]
    Interp(String),
    /// The module was refused or could not be instantiated.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The interpreter was asked for but only a compiled module was given.
    #[error("the interpreter needs the policy's `.mesa` source, not a compiled module; use the Wasm engine")]
    InterpNeedsSource,
}

/// A policy ready to select, in either engine.
pub enum AnyEngine {
    /// The reference interpreter.
    Interp(Box<Selector>),
    /// A warm instance of the compiled module; the program too when it was
    /// compiled here from source (for rule lines in messages).
    Wasm(Box<PolicyInstance>, Option<Box<Program>>),
}

impl std::fmt::Debug for AnyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnyEngine::Interp(_) => f.write_str("AnyEngine::Interp"),
            AnyEngine::Wasm(i, _) => write!(f, "AnyEngine::Wasm({i:?})"),
        }
    }
}

impl AnyEngine {
    /// An engine for a checked program: compiled and instantiated in the
    /// sandbox, or interpreted.
    pub fn from_program(
        runtime: &Runtime,
        program: Program,
        source: &str,
        kind: EngineKind,
    ) -> Result<AnyEngine, LoadError> {
        match kind {
            EngineKind::Interp => Ok(AnyEngine::Interp(Box::new(
                Selector::new(program).map_err(|e| LoadError::Interp(e.to_string()))?,
            ))),
            EngineKind::Wasm => {
                let bytes = wasm::compile(&program, source)?;
                let instance = runtime.load(&bytes)?.instantiate()?;
                Ok(AnyEngine::Wasm(Box::new(instance), Some(Box::new(program))))
            }
        }
    }

    /// An engine for a compiled module (`.wasm`, or `.cwasm` when
    /// `precompiled`), validated before it runs.
    pub fn from_module(
        runtime: &Runtime,
        bytes: &[u8],
        precompiled: bool,
        kind: EngineKind,
    ) -> Result<AnyEngine, LoadError> {
        if kind == EngineKind::Interp {
            return Err(LoadError::InterpNeedsSource);
        }
        let policy = if precompiled {
            runtime.load_precompiled(bytes)?
        } else {
            runtime.load(bytes)?
        };
        Ok(AnyEngine::Wasm(Box::new(policy.instantiate()?), None))
    }

    /// Selects for one input with the full trace.
    pub fn select_traced(&mut self, input: &Input) -> Result<mesa_compiler::Outcome, RuntimeError> {
        match self {
            AnyEngine::Interp(s) => Ok(s.select(input)),
            AnyEngine::Wasm(i, _) => i.select(input),
        }
    }

    /// The checked program, when the policy came from source.
    pub fn program(&self) -> Option<&Program> {
        match self {
            AnyEngine::Interp(s) => Some(s.program()),
            AnyEngine::Wasm(_, p) => p.as_deref(),
        }
    }

    /// The name of rule `i` (`#i` when the module does not name it).
    pub fn rule_name(&self, i: usize) -> String {
        match self {
            AnyEngine::Interp(s) => s.program().rules.get(i).map(|r| r.name.clone()),
            AnyEngine::Wasm(inst, _) => inst.metadata().rules.get(i).cloned(),
        }
        .unwrap_or_else(|| format!("#{i}"))
    }

    /// The source line of rule `i`, when the source is known.
    pub fn rule_line(&self, i: usize) -> Option<usize> {
        self.program().and_then(|p| p.rules.get(i)).map(|r| r.line)
    }
}

impl Engine for PolicyInstance {
    type Error = RuntimeError;

    fn select(&mut self, input: &Input) -> Result<Selection, RuntimeError> {
        let (mask, rule) = self.select_mask(input)?;
        Ok(Selection { mask, rule })
    }

    fn rule_names(&self) -> Vec<String> {
        self.metadata().rules.clone()
    }

    fn previews(&self) -> Vec<(Structure, Feature)> {
        self.metadata()
            .features
            .preview_slots()
            .into_iter()
            .flatten()
            .collect()
    }
}

impl Engine for AnyEngine {
    type Error = RuntimeError;

    fn select(&mut self, input: &Input) -> Result<Selection, RuntimeError> {
        match self {
            AnyEngine::Interp(s) => {
                Ok(Engine::select(s.as_mut(), input).unwrap_or_else(|e| match e {}))
            }
            AnyEngine::Wasm(i, _) => Engine::select(i.as_mut(), input),
        }
    }

    fn rule_names(&self) -> Vec<String> {
        match self {
            AnyEngine::Interp(s) => s.rule_names(),
            AnyEngine::Wasm(i, _) => i.rule_names(),
        }
    }

    fn previews(&self) -> Vec<(Structure, Feature)> {
        match self {
            AnyEngine::Interp(s) => s.previews(),
            AnyEngine::Wasm(i, _) => i.previews(),
        }
    }
}
