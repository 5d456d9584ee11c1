//! Both engines behind [`mesa_core::Engine`]: the reference interpreter and
//! a compiled module in the sandbox. An [`AnyEngine`] is made only by
//! [`crate::Staged::engine`] (or its interpreter arm,
//! [`crate::Staged::interpreter`]), from whatever stage the caller holds; the CLI,
//! the query path and the optimizer all select through it.

use crate::error::SelectError;
use crate::PolicyInstance;
use mesa_compiler::{Outcome, Program, Selector};
use mesa_core::{Engine, Input, PreviewKey, Selection, Shown};
use std::sync::Arc;

/// Which engine evaluates a policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineKind {
    /// The policy compiled to WebAssembly, run in the wasmtime sandbox.
    #[default]
    Wasm,
    /// The reference interpreter (needs the policy's source).
    Interp,
}

/// A policy ready to select, in either engine.
pub struct AnyEngine {
    inner: Inner,
    /// The checked program, when the policy came from source (rule lines
    /// for messages; the interpreter holds its own).
    program: Option<Arc<Program>>,
}

enum Inner {
    Interp(Box<Selector>),
    Wasm(Box<PolicyInstance>),
}

impl std::fmt::Debug for AnyEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Interp(_) => f.write_str("AnyEngine::Interp"),
            Inner::Wasm(i) => write!(f, "AnyEngine::Wasm({i:?})"),
        }
    }
}

impl AnyEngine {
    pub(crate) fn interp(selector: Selector, program: Arc<Program>) -> AnyEngine {
        AnyEngine {
            inner: Inner::Interp(Box::new(selector)),
            program: Some(program),
        }
    }

    pub(crate) fn wasm(instance: PolicyInstance, program: Option<Arc<Program>>) -> AnyEngine {
        AnyEngine {
            inner: Inner::Wasm(Box::new(instance)),
            program,
        }
    }

    /// Which engine this is.
    pub fn kind(&self) -> EngineKind {
        match self.inner {
            Inner::Interp(_) => EngineKind::Interp,
            Inner::Wasm(_) => EngineKind::Wasm,
        }
    }

    /// Selects for one input with the full trace.
    pub fn select_traced(&mut self, input: &Input) -> Result<Outcome, SelectError> {
        match &mut self.inner {
            Inner::Interp(s) => Ok(s.select(input)),
            Inner::Wasm(i) => i.select(input),
        }
    }

    /// The checked program, when the policy came from source.
    pub fn program(&self) -> Option<&Program> {
        self.program.as_deref()
    }

    /// The policy's name (from the program or the module's metadata).
    pub fn name(&self) -> &str {
        match (&self.inner, &self.program) {
            (_, Some(p)) => &p.name,
            (Inner::Wasm(i), None) => &i.metadata().name,
            (Inner::Interp(s), None) => &s.program().name,
        }
    }

    /// Whether the policy reads the question type.
    pub fn reads_qtype(&self) -> bool {
        match &self.inner {
            Inner::Interp(s) => s.program().features.qtype,
            Inner::Wasm(i) => i.metadata().features.qtype,
        }
    }

    /// The name of rule `i` (`#i` when the module does not name it).
    pub fn rule_name(&self, i: usize) -> String {
        match &self.inner {
            Inner::Interp(s) => s.program().rules.get(i).map(|r| r.name.clone()),
            Inner::Wasm(inst) => inst.metadata().rules.get(i).cloned(),
        }
        .unwrap_or_else(|| format!("#{i}"))
    }

    /// The source line of rule `i`, when the source is known.
    pub fn rule_line(&self, i: usize) -> Option<usize> {
        self.program().and_then(|p| p.rules.get(i)).map(|r| r.line)
    }
}

impl Engine for PolicyInstance {
    type Error = SelectError;

    fn select(&mut self, input: &Input) -> Result<Selection, SelectError> {
        let (mask, rule) = self.select_mask(input)?;
        Ok(Selection { mask, rule })
    }

    fn rule_names(&self) -> Vec<String> {
        self.metadata().rules.clone()
    }

    fn previews(&self) -> Vec<PreviewKey> {
        self.metadata().features.previews.clone()
    }

    fn shown(&self) -> Option<Shown> {
        self.metadata().features.shown
    }
}

impl Engine for AnyEngine {
    type Error = SelectError;

    fn select(&mut self, input: &Input) -> Result<Selection, SelectError> {
        match &mut self.inner {
            Inner::Interp(s) => {
                Ok(Engine::select(s.as_mut(), input).unwrap_or_else(|e| match e {}))
            }
            Inner::Wasm(i) => Engine::select(i.as_mut(), input),
        }
    }

    fn rule_names(&self) -> Vec<String> {
        match &self.inner {
            Inner::Interp(s) => s.rule_names(),
            Inner::Wasm(i) => i.rule_names(),
        }
    }

    fn previews(&self) -> Vec<PreviewKey> {
        match &self.inner {
            Inner::Interp(s) => s.previews(),
            Inner::Wasm(i) => i.previews(),
        }
    }

    fn shown(&self) -> Option<Shown> {
        match &self.inner {
            Inner::Interp(s) => s.shown(),
            Inner::Wasm(i) => i.shown(),
        }
    }
}
