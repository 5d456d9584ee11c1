//! The one way from a policy to an engine, in stages the caller keeps:
//!
//! ```text
//! source ──check──► Program ──wasm::compile──► module bytes ──Runtime::load──► Policy ──instantiate──► AnyEngine (Wasm)
//!                      └──────────────────────── Selector::new ─────────────────────────────────────► AnyEngine (Interp)
//! ```
//!
//! A [`Staged`] starts at any stage (a source, a checked program, a `.wasm`
//! or a `.cwasm`) and keeps each later stage the first time it is reached,
//! so a policy is checked, compiled and loaded at most once however many
//! engines are made from it: the optimizer validates a candidate and then
//! scores it with the same compiled module, and a server instantiates one
//! loaded policy per worker.

use crate::engine::AnyEngine;
use crate::error::LoadError;
use crate::host::{Policy, Runtime};
use crate::EngineKind;
use mesa_compiler::interp::SelectorError;
use mesa_compiler::wasm::{self, CompileError};
use mesa_compiler::{check, Checked, Program, Selector};
use mesa_core::Features;
use mesa_grammar::Diagnostic;
use std::sync::Arc;

/// Why a policy could not be made into an engine, by stage.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// The source has errors (the diagnostics include any warnings).
    #[error("{}", check_summary(.diagnostics, .text))]
    Check {
        /// Every diagnostic, errors and warnings, sorted by position.
        diagnostics: Vec<Diagnostic>,
        /// The text they are about (for lines and rendering).
        text: Arc<str>,
    },
    /// The checked program could not be compiled to WebAssembly.
    #[error("the policy cannot be compiled to WebAssembly: {0}")]
    Compile(#[from] CompileError),
    /// The module was refused or could not be instantiated.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The interpreter could not be prepared.
    #[error("the interpreter cannot run the policy: {0}")]
    Interp(#[from] SelectorError),
    /// The interpreter was asked for but only a compiled module was given.
    #[error("the interpreter needs the policy's `.mesa` source, not a compiled module; use the Wasm engine")]
    InterpNeedsSource,
}

fn check_summary(diagnostics: &[Diagnostic], source: &str) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    match diagnostics.iter().find(|d| d.is_error()) {
        Some(d) => {
            let j = d.to_json("policy.mesa", source);
            format!(
                "the policy has {errors} error(s); the first: [{}] {} (line {})",
                j.code.as_str(),
                j.message,
                j.line
            )
        }
        None => format!("the policy has {errors} error(s)"),
    }
}

/// What kind of file a policy is in, from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyFormat {
    /// A `.mesa` source (any name not ending in `.wasm` or `.cwasm`).
    Source,
    /// A compiled `.wasm` module.
    Module,
    /// A `.cwasm` module precompiled for this host.
    Precompiled,
}

impl PolicyFormat {
    /// The format a file name says.
    pub fn of_name(name: &str) -> PolicyFormat {
        if name.ends_with(".cwasm") {
            PolicyFormat::Precompiled
        } else if name.ends_with(".wasm") {
            PolicyFormat::Module
        } else {
            PolicyFormat::Source
        }
    }
}

/// A policy on its way to an engine, keeping every stage it has reached.
#[derive(Clone)]
pub struct Staged {
    origin: Origin,
    loaded: Option<Policy>,
}

#[derive(Clone)]
enum Origin {
    /// From source: the checked program, its warnings, and the module once
    /// compiled.
    Source {
        source: Arc<str>,
        program: Arc<Program>,
        warnings: Vec<Diagnostic>,
        module: Option<Arc<[u8]>>,
    },
    /// A compiled module, `.wasm` or (`precompiled`) `.cwasm`.
    Module { bytes: Arc<[u8]>, precompiled: bool },
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged")
            .field("name", &self.name())
            .field("from_source", &self.program().is_some())
            .field("loaded", &self.loaded.is_some())
            .finish_non_exhaustive()
    }
}

impl Staged {
    /// Parses and checks a source.
    pub fn check(source: &str) -> Result<Staged, PolicyError> {
        Staged::from_checked(source.into(), check(source))
    }

    /// A source whose check result the caller already has (e.g. from
    /// [`mesa_compiler::check_bytes`], whose diagnostics it printed).
    pub fn from_checked(source: Arc<str>, checked: Checked) -> Result<Staged, PolicyError> {
        match checked.program {
            Some(program) => Ok(Staged {
                origin: Origin::Source {
                    source,
                    program: Arc::new(program),
                    warnings: checked.diagnostics,
                    module: None,
                },
                loaded: None,
            }),
            None => Err(PolicyError::Check {
                diagnostics: checked.diagnostics,
                text: source,
            }),
        }
    }

    /// A checked program and the source it was checked from.
    pub fn from_program(program: Program, source: Arc<str>) -> Staged {
        Staged {
            origin: Origin::Source {
                source,
                program: Arc::new(program),
                warnings: Vec::new(),
                module: None,
            },
            loaded: None,
        }
    }

    /// A compiled `.wasm` module (validated when it is loaded).
    pub fn from_module(bytes: impl Into<Arc<[u8]>>) -> Staged {
        Staged {
            origin: Origin::Module {
                bytes: bytes.into(),
                precompiled: false,
            },
            loaded: None,
        }
    }

    /// A `.cwasm` made by `mesa compile --aot` (or
    /// [`Runtime::precompile`]) on a compatible host. Only load files you
    /// produced: see [`Runtime::load_precompiled`].
    pub fn from_precompiled(bytes: impl Into<Arc<[u8]>>) -> Staged {
        Staged {
            origin: Origin::Module {
                bytes: bytes.into(),
                precompiled: true,
            },
            loaded: None,
        }
    }

    /// The file's bytes in its format: a source is decoded and checked.
    pub fn from_bytes(bytes: &[u8], format: PolicyFormat) -> Result<Staged, PolicyError> {
        match format {
            PolicyFormat::Module => Ok(Staged::from_module(bytes)),
            PolicyFormat::Precompiled => Ok(Staged::from_precompiled(bytes)),
            PolicyFormat::Source => {
                let checked = mesa_compiler::check_bytes(bytes);
                Staged::from_checked(String::from_utf8_lossy(bytes).into(), checked)
            }
        }
    }

    /// The source, when the policy came from one.
    pub fn source(&self) -> Option<&str> {
        match &self.origin {
            Origin::Source { source, .. } => Some(source),
            Origin::Module { .. } => None,
        }
    }

    /// The checked program, when the policy came from source.
    pub fn program(&self) -> Option<&Program> {
        match &self.origin {
            Origin::Source { program, .. } => Some(program),
            Origin::Module { .. } => None,
        }
    }

    /// The checker's warnings (none for a module).
    pub fn warnings(&self) -> &[Diagnostic] {
        match &self.origin {
            Origin::Source { warnings, .. } => warnings,
            Origin::Module { .. } => &[],
        }
    }

    /// The loaded module, once [`Staged::load`] has run.
    pub fn loaded(&self) -> Option<&Policy> {
        self.loaded.as_ref()
    }

    /// The policy's name, from the program or, once loaded, the metadata.
    pub fn name(&self) -> Option<&str> {
        match (self.program(), &self.loaded) {
            (Some(p), _) => Some(&p.name),
            (None, Some(l)) => Some(&l.metadata().name),
            (None, None) => None,
        }
    }

    /// What the policy reads, from the program or, once loaded, the metadata.
    pub fn features(&self) -> Option<&Features> {
        match (self.program(), &self.loaded) {
            (Some(p), _) => Some(&p.features),
            (None, Some(l)) => Some(&l.metadata().features),
            (None, None) => None,
        }
    }

    /// The module's bytes (a `.cwasm` for a precompiled one), compiled from
    /// the program the first time.
    pub fn module(&mut self) -> Result<&[u8], PolicyError> {
        match &mut self.origin {
            Origin::Module { bytes, .. } => Ok(bytes),
            Origin::Source {
                source,
                program,
                module,
                ..
            } => {
                let bytes = match module.take() {
                    Some(m) => m,
                    None => wasm::compile(program, source)?.into(),
                };
                Ok(module.insert(bytes))
            }
        }
    }

    /// The module compiled by `runtime` and validated, the first time;
    /// later calls return the same [`Policy`] whatever runtime they pass.
    pub fn load(&mut self, runtime: &Runtime) -> Result<&Policy, PolicyError> {
        let policy = match self.loaded.take() {
            Some(p) => p,
            None => {
                let precompiled = matches!(
                    self.origin,
                    Origin::Module {
                        precompiled: true,
                        ..
                    }
                );
                let bytes = self.module()?;
                if precompiled {
                    runtime.load_precompiled(bytes)?
                } else {
                    runtime.load(bytes)?
                }
            }
        };
        Ok(self.loaded.insert(policy))
    }

    /// The reference interpreter's selector over the checked program (for
    /// `explain`); a compiled module cannot be interpreted.
    pub fn selector(&self) -> Result<Selector, PolicyError> {
        let program = self.program().ok_or(PolicyError::InterpNeedsSource)?;
        Ok(Selector::new(program.clone())?)
    }

    /// The reference interpreter as an engine (no runtime is needed).
    pub fn interpreter(&self) -> Result<AnyEngine, PolicyError> {
        let selector = self.selector()?;
        let Origin::Source { program, .. } = &self.origin else {
            return Err(PolicyError::InterpNeedsSource);
        };
        Ok(AnyEngine::interp(selector, Arc::clone(program)))
    }

    /// An engine of `kind`, made from the furthest stage reached: the one
    /// function that builds every engine. The interpreter needs the source;
    /// the Wasm engine is a fresh instance of the loaded module.
    pub fn engine(
        &mut self,
        runtime: &Runtime,
        kind: EngineKind,
    ) -> Result<AnyEngine, PolicyError> {
        match kind {
            EngineKind::Interp => self.interpreter(),
            EngineKind::Wasm => {
                let program = match &self.origin {
                    Origin::Source { program, .. } => Some(Arc::clone(program)),
                    Origin::Module { .. } => None,
                };
                let instance = self.load(runtime)?.instantiate()?;
                Ok(AnyEngine::wasm(instance, program))
            }
        }
    }
}
