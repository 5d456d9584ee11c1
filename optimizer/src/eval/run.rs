//! `mesa eval`: a policy and the baselines on a split of a sweep, over
//! several seeds.

use super::engine::{check_previews, failure, select_all, CandidateFailure, Stage};
use super::{Breakdown, EvalError, InputsSeen, Metrics, MetricsAgg, Problem};
use crate::baselines::{baselines, DEFAULT_DRAWS};
use crate::split::Split;
use crate::sweep::{Sweep, SweepHeader};
use mesa_core::{Engine, Mask, Selection};
use mesa_runtime::{AnyEngine, EngineKind, Runtime, RuntimeConfig, Staged};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What to evaluate and how.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// The sweep file.
    pub sweep: PathBuf,
    /// The split scored (val by default: development reads train and val; test is read once, at the end).
    pub split: Split,
    /// How many seeds: `first_seed`, `first_seed + 1`, ...
    pub seeds: usize,
    /// The first seed.
    pub first_seed: u64,
    /// The token price.
    pub lambda: f64,
    /// Hide the question type from the policy.
    pub hide_qtype: bool,
    /// Draws of the random baseline.
    pub draws: usize,
    /// The engine (the Wasm sandbox unless cross-checking).
    pub engine: EngineKind,
}

impl EvalOptions {
    /// Defaults for `sweep`: val split, 5 seeds from 0, lambda 1e-6.
    pub fn new(sweep: impl Into<PathBuf>) -> EvalOptions {
        EvalOptions {
            sweep: sweep.into(),
            split: Split::Val,
            seeds: crate::split::DEFAULT_SEEDS,
            first_seed: 0,
            lambda: 1e-6,
            hide_qtype: false,
            draws: DEFAULT_DRAWS,
            engine: EngineKind::Wasm,
        }
    }
}

/// A policy to evaluate: `.mesa` source or a compiled `.wasm` module.
#[derive(Debug, Clone)]
pub enum PolicyFile {
    /// Source text.
    Source {
        /// Its path, for messages.
        path: String,
        /// The text.
        text: String,
    },
    /// A compiled module.
    Module {
        /// Its path.
        path: String,
        /// The bytes.
        bytes: Vec<u8>,
    },
}

impl PolicyFile {
    /// Reads a file: `.wasm` as a module, anything else as source.
    pub fn read(path: &std::path::Path) -> Result<PolicyFile, EvalError> {
        let name = path.display().to_string();
        let io = |source| EvalError::Io {
            path: name.clone(),
            source,
        };
        if path.extension().is_some_and(|e| e == "wasm") {
            Ok(PolicyFile::Module {
                bytes: std::fs::read(path).map_err(io)?,
                path: name,
            })
        } else {
            Ok(PolicyFile::Source {
                text: std::fs::read_to_string(path).map_err(io)?,
                path: name,
            })
        }
    }

    /// Its path.
    pub fn path(&self) -> &str {
        match self {
            PolicyFile::Source { path, .. } | PolicyFile::Module { path, .. } => path,
        }
    }
}

/// The policy's results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyEval {
    /// The policy file.
    pub path: String,
    /// The policy's name.
    pub name: String,
    /// Over seeds.
    pub metrics: MetricsAgg,
    /// Per seed.
    pub per_seed: Vec<Metrics>,
    /// By domain and question type, mean over seeds.
    pub breakdown: Breakdown,
    /// Milliseconds to select every labelled question once in the sandbox.
    pub select_ms: f64,
    /// Whether the policy reads the question type.
    pub reads_qtype: bool,
}

/// A baseline over seeds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineAgg {
    /// Its name.
    pub name: String,
    /// What it chose (on the first seed).
    pub detail: String,
    /// Over seeds.
    pub metrics: MetricsAgg,
    /// By group, mean over seeds (none for random).
    pub breakdown: Option<Breakdown>,
}

/// Everything `mesa eval` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    /// The sweep file.
    pub sweep: String,
    /// Its header.
    pub header: SweepHeader,
    /// The split scored.
    pub split: Split,
    /// The seeds.
    pub seeds: Vec<u64>,
    /// The token price.
    pub lambda: f64,
    /// What policies saw.
    pub inputs: InputsSeen,
    /// Labelled questions (all splits).
    pub labelled: usize,
    /// The policy.
    pub policy: PolicyEval,
    /// The baselines.
    pub baselines: Vec<BaselineAgg>,
    /// Anything the reader should know (e.g. a policy reading a hidden qtype).
    pub notes: Vec<String>,
}

/// Builds the engine for a policy file and checks that the sweep has what
/// it reads. Returns the engine, the policy's name and whether it reads the
/// question type.
pub fn load_engine(
    runtime: &Runtime,
    policy: &PolicyFile,
    problem: &Problem,
    kind: EngineKind,
) -> Result<(AnyEngine, String, bool), CandidateFailure> {
    let (staged, source) = match policy {
        PolicyFile::Source { text, .. } => (Staged::check(text), text.as_str()),
        PolicyFile::Module { bytes, .. } => (Ok(Staged::from_module(bytes.as_slice())), ""),
    };
    let engine = staged
        .and_then(|mut s| s.engine(runtime, kind))
        .map_err(|e| failure(e, source))?;
    check_previews(&engine.previews(), engine.shown(), problem)?;
    let name = engine.name().to_string();
    let qtype = engine.reads_qtype();
    Ok((engine, name, qtype))
}

/// Evaluates `policy` and the baselines.
pub fn evaluate_policy(policy: &PolicyFile, opts: &EvalOptions) -> Result<EvalReport, EvalError> {
    let sweep = Sweep::read(&opts.sweep)?;
    let problem = Problem::new(&sweep, opts.lambda, opts.hide_qtype)?;
    let queries = problem.questions.len() as u64;
    let runtime = Runtime::with_config(RuntimeConfig::for_queries(queries))?;
    let (mut engine, name, reads_qtype) = load_engine(&runtime, policy, &problem, opts.engine)
        .map_err(|failure| EvalError::Policy {
            path: policy.path().to_string(),
            failure,
        })?;
    // One warm instance selects every labelled question once; each seed's
    // split is then a subset of these answers.
    let inputs: Vec<_> = problem.questions.iter().map(|q| q.input.clone()).collect();
    let mut out: Vec<Selection> = Vec::new();
    let select_ms =
        select_all(&mut engine, &inputs, &mut out).map_err(|failure| EvalError::Policy {
            path: policy.path().to_string(),
            failure,
        })?;
    let masks: Vec<Mask> = out.iter().map(|s| s.mask).collect();
    let seeds: Vec<u64> = (0..opts.seeds.max(1) as u64)
        .map(|s| opts.first_seed + s)
        .collect();
    let mut per_seed = Vec::new();
    let mut breakdowns = Vec::new();
    let mut base_runs: Vec<Vec<crate::baselines::BaselineResult>> = Vec::new();
    for &seed in &seeds {
        let splits = problem.splits(seed)?;
        let train = problem.indices(&splits, Split::Train);
        let val = problem.indices(&splits, Split::Val);
        let eval = problem.indices(&splits, opts.split);
        for (split, idx) in [
            (Split::Train, &train),
            (Split::Val, &val),
            (opts.split, &eval),
        ] {
            if idx.is_empty() {
                return Err(EvalError::EmptySplit {
                    split,
                    seed,
                    half: None,
                });
            }
        }
        per_seed.push(Metrics::of(&problem, &eval, |i| masks[i]));
        breakdowns.push(Breakdown::of(&problem, &eval, |i| masks[i]));
        base_runs.push(baselines(&problem, &train, &val, &eval, seed, opts.draws));
    }
    let baselines = (0..base_runs.first().map_or(0, Vec::len))
        .map(|b| {
            let runs: Vec<Metrics> = base_runs.iter().map(|r| r[b].metrics).collect();
            let bds: Vec<Breakdown> = base_runs
                .iter()
                .filter_map(|r| r[b].breakdown.clone())
                .collect();
            BaselineAgg {
                name: base_runs[0][b].name.clone(),
                detail: base_runs[0][b].detail.clone(),
                metrics: MetricsAgg::of(&runs),
                breakdown: (!bds.is_empty()).then(|| Breakdown::mean(&bds, problem.lambda)),
            }
        })
        .collect();
    let mut notes = Vec::new();
    if reads_qtype && problem.hide_qtype {
        notes.push(
            "the policy reads `qtype`, which --no-qtype hides: every `qtype is ...` test was false"
                .to_string(),
        );
    }
    if opts.split != Split::Test {
        notes.push(format!(
            "scored on the {} split; the best fixed subset is chosen on val and the per-domain lookup fitted on train",
            opts.split
        ));
    }
    Ok(EvalReport {
        sweep: opts.sweep.display().to_string(),
        header: sweep.header.clone(),
        split: opts.split,
        seeds,
        lambda: opts.lambda,
        inputs: problem.inputs_seen(),
        labelled: problem.questions.len(),
        policy: PolicyEval {
            path: policy.path().to_string(),
            name,
            metrics: MetricsAgg::of(&per_seed),
            per_seed,
            breakdown: Breakdown::mean(&breakdowns, problem.lambda),
            select_ms,
            reads_qtype,
        },
        baselines,
        notes,
    })
}

/// The masks a policy selects for every labelled question of `problem`
/// with the given engine (for cross-checking the engines).
pub fn selections(
    policy: &PolicyFile,
    problem: &Problem,
    kind: EngineKind,
) -> Result<Vec<Selection>, CandidateFailure> {
    let queries = problem.questions.len() as u64;
    let runtime = Runtime::with_config(RuntimeConfig::for_queries(queries))
        .map_err(|e| CandidateFailure::new(Stage::Instantiate, e.to_string()))?;
    let (mut engine, _, _) = load_engine(&runtime, policy, problem, kind)?;
    let inputs: Vec<_> = problem.questions.iter().map(|q| q.input.clone()).collect();
    let mut out = Vec::new();
    select_all(&mut engine, &inputs, &mut out)?;
    Ok(out)
}
