//! From policy source to a warm sandboxed instance: check, compile to
//! Wasm, instantiate, and select a whole split in one batch, with the time
//! each stage took and, on failure, the stage and the diagnostics.

use super::problem::Problem;
use mesa_core::{Engine, Input, PreviewKey, Selection, Shown};
use mesa_runtime::{AnyEngine, EngineKind, PolicyError, Runtime, Staged};
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// A step of a candidate's way from proposal to score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// The proposer gave no policy (no code block, an endpoint failure).
    Propose,
    /// The policy has errors.
    Check,
    /// The policy reads something the sweep does not provide.
    Inputs,
    /// The Wasm code generator refused it.
    Compile,
    /// The sandbox refused the module.
    Instantiate,
    /// Selecting failed in the sandbox (fuel, input limits).
    Evaluate,
}

impl Stage {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Stage::Propose => "propose",
            Stage::Check => "check",
            Stage::Inputs => "inputs",
            Stage::Compile => "compile",
            Stage::Instantiate => "instantiate",
            Stage::Evaluate => "evaluate",
        }
    }
}

/// A diagnostic as archived and as sent to the LLM: the JSON form of
/// `mesa check --format json`, readable back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diag {
    /// The stable code, e.g. `E0200`.
    pub code: String,
    /// `error` or `warning`.
    pub severity: String,
    /// What is wrong.
    pub message: String,
    /// What to do.
    #[serde(default)]
    pub help: Option<String>,
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// A machine-applicable fix, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<DiagSuggestion>,
}

/// A machine-applicable fix: replace bytes `byte_start..byte_end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiagSuggestion {
    /// Start byte.
    pub byte_start: usize,
    /// End byte.
    pub byte_end: usize,
    /// The replacement text.
    pub replacement: String,
}

impl Diag {
    /// The archived form of a checker diagnostic about `source`.
    pub fn from_diagnostic(d: &mesa_grammar::Diagnostic, source: &str) -> Diag {
        let j = d.to_json("policy.mesa", source);
        Diag {
            code: j.code.as_str().to_string(),
            severity: if d.is_error() { "error" } else { "warning" }.to_string(),
            message: j.message,
            help: j.help,
            line: j.line,
            column: j.column,
            suggestion: j.suggestion.map(|s| DiagSuggestion {
                byte_start: s.byte_start,
                byte_end: s.byte_end,
                replacement: s.replacement,
            }),
        }
    }

    /// Whether it is an error.
    pub fn is_error(&self) -> bool {
        self.severity == "error"
    }
}

/// Why a candidate failed, at which stage, with its diagnostics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, thiserror::Error)]
#[error("{} failed: {message}", stage.name())]
pub struct CandidateFailure {
    /// Where it failed.
    pub stage: Stage,
    /// One line saying why.
    pub message: String,
    /// The checker's diagnostics, when checking failed.
    #[serde(default)]
    pub diagnostics: Vec<Diag>,
}

impl CandidateFailure {
    /// A failure without diagnostics.
    pub fn new(stage: Stage, message: impl Into<String>) -> CandidateFailure {
        CandidateFailure {
            stage,
            message: message.into(),
            diagnostics: Vec::new(),
        }
    }
}

/// Milliseconds spent per stage of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct StageTimings {
    /// Parse and check.
    pub check_ms: f64,
    /// Wasm code generation.
    pub compile_ms: f64,
    /// wasmtime compilation and instantiation.
    pub instantiate_ms: f64,
    /// Selecting every val question in the sandbox.
    pub eval_val_ms: f64,
    /// Selecting every train question in the sandbox.
    pub eval_train_ms: f64,
}

impl StageTimings {
    /// The candidate compile time as reported: check + compile +
    /// instantiate + evaluate on val.
    pub fn turnaround_ms(&self) -> f64 {
        self.check_ms + self.compile_ms + self.instantiate_ms + self.eval_val_ms
    }
}

/// A checked policy, compiled and instantiated in the sandbox: every stage
/// kept, so validating a candidate and then scoring it compiles it once.
pub struct CompiledPolicy {
    /// The policy's stages: program, module bytes, loaded module.
    pub staged: Staged,
    /// The warm instance.
    pub engine: AnyEngine,
    /// The checker's warnings.
    pub warnings: Vec<Diag>,
    /// Time per stage so far.
    pub timings: StageTimings,
}

impl std::fmt::Debug for CompiledPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledPolicy")
            .field("name", &self.engine.name())
            .finish_non_exhaustive()
    }
}

impl CompiledPolicy {
    /// The module's bytes (compiled when the policy was).
    pub fn wasm(&mut self) -> &[u8] {
        self.staged.module().unwrap_or_default()
    }
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1e3
}

/// The previews a policy reads that the problem's sweep lacks, as an
/// [`Stage::Inputs`] failure.
pub fn check_previews(
    reads: &[PreviewKey],
    shown: Option<Shown>,
    problem: &Problem,
) -> Result<(), CandidateFailure> {
    if let Some(unit) = shown.filter(|_| !problem.shown_available) {
        return Err(CandidateFailure::new(
            Stage::Inputs,
            format!(
                "the policy trades {unit}, which needs what each subset shows, and the sweep {} \
                 does not record it; regenerate the sweep with `mesa sweep` (it records both units)",
                problem.source
            ),
        ));
    }
    let missing: Vec<String> = reads
        .iter()
        .filter(|k| !problem.available[k.structure.index()])
        .map(|k| format!("preview.{k}"))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let have = problem.inputs_seen().previews;
    Err(CandidateFailure::new(
        Stage::Inputs,
        format!(
            "the policy reads {}, which the sweep {} does not have (its records carry previews of {}); \
             regenerate the sweep with those previews or drop the rules that read them",
            missing.join(", "),
            problem.source,
            if have.is_empty() { "no structure".to_string() } else { have.join(", ") }
        ),
    ))
}

/// Checks, compiles and instantiates `source` in `runtime`. With
/// `reject_hidden_qtype`, a policy that reads `qtype` while the problem
/// hides it is refused (the optimizer's rule: a candidate may not depend
/// on an input the deployed agent lacks).
pub fn compile_policy(
    runtime: &Runtime,
    source: &str,
    problem: &Problem,
    reject_hidden_qtype: bool,
) -> Result<CompiledPolicy, CandidateFailure> {
    let mut timings = StageTimings::default();
    let t = Instant::now();
    let checked = Staged::check(source);
    timings.check_ms = ms(t);
    let mut staged = checked.map_err(|e| failure(e, source))?;
    let warnings: Vec<Diag> = staged
        .warnings()
        .iter()
        .map(|d| Diag::from_diagnostic(d, source))
        .collect();
    let features = staged.features().cloned().unwrap_or_default();
    check_previews(&features.previews, features.shown, problem)?;
    if reject_hidden_qtype && problem.hide_qtype && features.qtype {
        return Err(CandidateFailure::new(
            Stage::Inputs,
            "the policy reads `qtype`, which is hidden (--no-qtype): a deployed agent has no \
             gold question type; infer the type from the query instead",
        ));
    }
    let t = Instant::now();
    staged.module().map_err(|e| failure(e, source))?;
    timings.compile_ms = ms(t);
    let t = Instant::now();
    let engine = staged
        .engine(runtime, EngineKind::Wasm)
        .map_err(|e| failure(e, source))?;
    timings.instantiate_ms = ms(t);
    Ok(CompiledPolicy {
        staged,
        engine,
        warnings,
        timings,
    })
}

/// A staged policy's failure as the candidate failure of its stage.
pub fn failure(e: PolicyError, source: &str) -> CandidateFailure {
    match e {
        PolicyError::Check { diagnostics, .. } => {
            let diags: Vec<Diag> = diagnostics
                .iter()
                .map(|d| Diag::from_diagnostic(d, source))
                .collect();
            let errors = diags.iter().filter(|d| d.is_error()).count();
            let first = diags
                .iter()
                .find(|d| d.is_error())
                .map(|d| format!(": [{}] {} (line {})", d.code, d.message, d.line))
                .unwrap_or_default();
            CandidateFailure {
                stage: Stage::Check,
                message: format!("{errors} error(s){first}"),
                diagnostics: diags,
            }
        }
        PolicyError::Compile(e) => CandidateFailure::new(Stage::Compile, e.to_string()),
        other => CandidateFailure::new(Stage::Instantiate, other.to_string()),
    }
}

impl CompiledPolicy {
    /// Selects for every input with the warm instance, returning the time taken.
    pub fn select_all(
        &mut self,
        inputs: &[Input],
        out: &mut Vec<Selection>,
    ) -> Result<f64, CandidateFailure> {
        select_all(&mut self.engine, inputs, out)
    }
}

/// Selects for every input with `engine` in one batch; returns milliseconds.
pub fn select_all(
    engine: &mut AnyEngine,
    inputs: &[Input],
    out: &mut Vec<Selection>,
) -> Result<f64, CandidateFailure> {
    let t = Instant::now();
    engine
        .select_batch(inputs, out)
        .map_err(|e| CandidateFailure::new(Stage::Evaluate, e.to_string()))?;
    Ok(ms(t))
}
