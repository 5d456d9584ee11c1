//! Policies from Python: check, format, compile, load, select, explain,
//! through the same staged path as `mesa check`, `mesa compile` and
//! `mesa run` ([`mesa_runtime::Staged`]).

use crate::answer::py_opt;
use crate::errors::{self, invalid, raise};
use mesa_compiler::{explain as explain_text, Input};
use mesa_core::{apply_preview_assignment, apply_shown, Engine, Mask};
use mesa_query::{Asker, Chooser, SharedChooser};
use mesa_runtime::{EngineKind, PolicyFormat, Runtime, RuntimeConfig, Staged};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// One finding of the checker.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// The stable code (`E0101`, ...; docs/ERRORS.md).
    pub code: String,
    /// `"error"` or `"warning"`.
    pub severity: String,
    /// What is wrong.
    pub message: String,
    /// What to do, if the checker knows.
    pub help: Option<String>,
    /// 1-based line and column (in characters) of the start.
    pub line: usize,
    /// See `line`.
    pub column: usize,
    /// 1-based line and column of the end.
    pub end_line: usize,
    /// See `end_line`.
    pub end_column: usize,
    /// The file the diagnostic is about (`<source>` for text).
    pub file: String,
}

impl Diagnostic {
    /// The Python form of one diagnostic on `source`.
    pub fn of(file: &str, source: &str, d: &mesa_grammar::Diagnostic) -> Diagnostic {
        let j = d.to_json(file, source);
        Diagnostic {
            code: j.code.as_str().to_string(),
            severity: if d.is_error() { "error" } else { "warning" }.into(),
            message: j.message,
            help: j.help,
            line: j.line,
            column: j.column,
            end_line: j.end_line,
            end_column: j.end_column,
            file: j.file,
        }
    }
}

#[pymethods]
impl Diagnostic {
    fn __repr__(&self) -> String {
        format!(
            "<Diagnostic {} {} at {}:{}:{}: {}>",
            self.severity, self.code, self.file, self.line, self.column, self.message
        )
    }
}

/// What a policy chose for one question.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct Selection {
    /// The structures, as letters in the order S, T, G, V, R.
    pub structures: Vec<String>,
    /// The mask as `mesa run` prints it (`{S, T}`).
    pub mask: String,
    /// The mask's bits (S = 1, T = 2, G = 4, V = 8, R = 16).
    pub bits: u8,
    /// The deciding rule's name, or None when no rule changed the default.
    pub rule: Option<String>,
}

#[pymethods]
impl Selection {
    fn __repr__(&self) -> String {
        format!("<Selection {} rule={}>", self.mask, py_opt(&self.rule))
    }
}

impl Selection {
    fn of(mask: Mask, rule: Option<String>) -> Selection {
        Selection {
            structures: mask.letters(),
            mask: mask.to_string(),
            bits: mask.bits(),
            rule,
        }
    }
}

/// A selector policy, loaded into the WebAssembly sandbox (or the
/// reference interpreter). Load one with `Policy.load(path)`,
/// `Policy.from_source(text)` or `Policy.from_module(bytes)`.
#[pyclass(frozen, module = "mesa_memory")]
pub struct Policy {
    name: String,
    staged: Mutex<Staged>,
    /// The asker, shared with the queries that use this policy.
    asker: Arc<Mutex<Asker>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn engine_kind(engine: &str) -> PyResult<EngineKind> {
    match engine {
        "wasm" => Ok(EngineKind::Wasm),
        "interp" => Ok(EngineKind::Interp),
        other => Err(invalid(
            "bad-engine",
            format!("engine `{other}` is not known; give \"wasm\" or \"interp\""),
        )),
    }
}

impl Policy {
    fn stage(
        py: Python<'_>,
        name: &str,
        bytes: &[u8],
        format: PolicyFormat,
        engine: &str,
    ) -> PyResult<Policy> {
        let kind = engine_kind(engine)?;
        let (staged, engine) = py
            .detach(|| {
                let mut staged = Staged::from_bytes(bytes, format)?;
                let config = RuntimeConfig::for_workload(format, u64::MAX);
                let runtime =
                    Runtime::with_config(config).map_err(mesa_runtime::PolicyError::Load)?;
                let engine = staged.engine(&runtime, kind)?;
                Ok((staged, engine))
            })
            .map_err(|e| errors::policy(name, e))?;
        Ok(Policy {
            name: name.to_string(),
            staged: Mutex::new(staged),
            asker: Arc::new(Mutex::new(Asker::new(Chooser::Policy(Box::new(engine))))),
        })
    }

    /// The asker that answers questions with this policy.
    fn asker(&self) -> MutexGuard<'_, Asker> {
        lock(&self.asker)
    }

    /// This policy as the chooser of a query.
    pub fn chooser(&self) -> SharedChooser {
        SharedChooser::Policy(self.asker.clone())
    }
}

/// The input a policy reads, from Python arguments.
fn input(
    question: String,
    domain: Option<String>,
    task: Option<String>,
    qtype: Option<String>,
    previews: Option<BTreeMap<String, f64>>,
    shown: Option<BTreeMap<String, Vec<f64>>>,
) -> PyResult<Input> {
    let mut input = Input {
        query: question,
        task,
        domain,
        qtype,
        ..Input::default()
    };
    for (k, v) in previews.unwrap_or_default() {
        apply_preview_assignment(&mut input.previews, &format!("{k}={v}"))
            .map_err(|e| invalid("bad-preview", format!("previews[{k:?}]: {e}")))?;
    }
    for (unit, counts) in shown.unwrap_or_default() {
        apply_shown(&mut input.previews, &unit, counts)
            .map_err(|e| invalid("bad-shown", format!("shown[{unit:?}]: {e}")))?;
    }
    Ok(input)
}

#[pymethods]
impl Policy {
    /// Loads a `.mesa` source, or a compiled `.wasm` / `.cwasm` module.
    /// `engine` is `"wasm"` (the sandbox, the default) or `"interp"` (the
    /// reference interpreter; needs the source).
    #[staticmethod]
    #[pyo3(signature = (path, *, engine = "wasm"))]
    fn load(py: Python<'_>, path: std::path::PathBuf, engine: &str) -> PyResult<Policy> {
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).map_err(|e| {
            raise::<errors::NotFoundError>(
                "io",
                format!("{name}: {e}"),
                Some("give the path of a .mesa, .wasm or .cwasm file"),
            )
        })?;
        Policy::stage(py, &name, &bytes, PolicyFormat::of_name(&name), engine)
    }

    /// A policy from its source text.
    #[staticmethod]
    #[pyo3(signature = (source, *, name = "<source>", engine = "wasm"))]
    fn from_source(py: Python<'_>, source: &str, name: &str, engine: &str) -> PyResult<Policy> {
        Policy::stage(py, name, source.as_bytes(), PolicyFormat::Source, engine)
    }

    /// A policy from compiled module bytes (what `compile` returns, or a
    /// `.wasm` file's contents). Runs in the sandbox.
    #[staticmethod]
    #[pyo3(signature = (module, *, name = "<module>"))]
    fn from_module(py: Python<'_>, module: &[u8], name: &str) -> PyResult<Policy> {
        Policy::stage(py, name, module, PolicyFormat::Module, "wasm")
    }

    /// The file or name it was loaded from.
    #[getter]
    fn name(&self) -> String {
        self.name.clone()
    }

    /// The source text, when it was loaded from one.
    #[getter]
    fn source(&self) -> Option<String> {
        lock(&self.staged).source().map(str::to_string)
    }

    /// The compiled module's bytes (compiled on first use).
    fn module<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let mut staged = lock(&self.staged);
        let bytes = staged.module().map_err(|e| errors::policy(&self.name, e))?;
        Ok(PyBytes::new(py, bytes))
    }

    /// The structures this policy selects for a question, as `mesa run`
    /// answers. `previews` maps `"R.tokens"`-style keys to values; `shown`
    /// maps `"words"` or `"steps"` to what each of the 31 non-empty subsets
    /// shows (mask order), which a trading policy reads.
    #[pyo3(signature = (question, *, domain = None, task = None, qtype = None, previews = None, shown = None))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn select(
        &self,
        py: Python<'_>,
        question: String,
        domain: Option<String>,
        task: Option<String>,
        qtype: Option<String>,
        previews: Option<BTreeMap<String, f64>>,
        shown: Option<BTreeMap<String, Vec<f64>>>,
    ) -> PyResult<Selection> {
        let input = input(question, domain, task, qtype, previews, shown)?;
        let name = &self.name;
        py.detach(|| {
            let mut asker = self.asker();
            let engine = asker
                .engine_mut()
                .ok_or_else(|| invalid("no-policy", "no policy engine".into()))?;
            let selection = engine.select(&input).map_err(|e| {
                raise::<errors::PolicyError>("select", format!("{name}: {e}"), None)
            })?;
            let rule = selection.rule.map(|i| engine.rule_name(i));
            Ok(Selection::of(selection.mask, rule))
        })
    }

    /// Why the policy selects what it does for a question: every rule in
    /// order, with what it tested, as `mesa explain` prints. Needs the
    /// source.
    #[pyo3(signature = (question, *, domain = None, task = None, qtype = None, previews = None, shown = None))]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn explain(
        &self,
        py: Python<'_>,
        question: String,
        domain: Option<String>,
        task: Option<String>,
        qtype: Option<String>,
        previews: Option<BTreeMap<String, f64>>,
        shown: Option<BTreeMap<String, Vec<f64>>>,
    ) -> PyResult<String> {
        let input = input(question, domain, task, qtype, previews, shown)?;
        let selector = lock(&self.staged)
            .selector()
            .map_err(|e| errors::policy(&self.name, e))?;
        Ok(py.detach(|| {
            let outcome = selector.select(&input);
            explain_text(&selector, &input, &outcome)
        }))
    }

    fn __repr__(&self) -> String {
        format!("<Policy {}>", self.name)
    }
}

/// Checks a policy's source: every error and warning, as objects (an empty
/// list when it is clean). Never raises for a bad policy.
#[pyfunction]
#[pyo3(signature = (source, *, name = "<source>"))]
pub fn check(py: Python<'_>, source: &str, name: &str) -> Vec<Diagnostic> {
    py.detach(|| match Staged::check(source) {
        Ok(staged) => staged
            .warnings()
            .iter()
            .map(|d| Diagnostic::of(name, source, d))
            .collect(),
        Err(mesa_runtime::PolicyError::Check { diagnostics, text }) => diagnostics
            .iter()
            .map(|d| Diagnostic::of(name, &text, d))
            .collect(),
        Err(_) => Vec::new(),
    })
}

/// The source in the canonical layout (`mesa fmt`); raises PolicyError if
/// it does not parse.
#[pyfunction]
#[pyo3(signature = (source, *, name = "<source>"))]
pub fn format(source: &str, name: &str) -> PyResult<String> {
    mesa_grammar::format_source(source).map_err(|diagnostics| {
        errors::policy(
            name,
            mesa_runtime::PolicyError::Check {
                diagnostics,
                text: source.into(),
            },
        )
    })
}

/// Compiles a source to a self-contained WebAssembly module (`mesa
/// compile`); raises PolicyError if it does not check.
#[pyfunction]
#[pyo3(signature = (source, *, name = "<source>"))]
pub fn compile<'py>(py: Python<'py>, source: &str, name: &str) -> PyResult<Bound<'py, PyBytes>> {
    let bytes = py
        .detach(|| {
            let mut staged = Staged::check(source)?;
            staged.module().map(<[u8]>::to_vec)
        })
        .map_err(|e| errors::policy(name, e))?;
    Ok(PyBytes::new(py, &bytes))
}
