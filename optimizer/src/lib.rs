//! The MESA optimizer: sweeps, splits, evaluation, baselines, the
//! prior-guided UCB search over selector policies, the offline and LLM
//! proposers, the run archive and reports.
//!
//! Inside (private modules; the flat re-exports below are the surface):
//!
//! - `sweep`: the sweep file format (reader, writer, synthetic generator);
//!   `measure`: producing a sweep from a store (evidence recall, answer
//!   coverage, the LLM judge with its cache).
//! - `split`: episode-level 2:2:6 train/val/test splits per seed.
//! - `eval`: J, C and the objective of a policy run as compiled Wasm in
//!   the sandbox; `mesa eval`.
//! - `baselines`: single structures, all five, random, best fixed on val,
//!   per-domain on train, the oracle.
//! - `ucb`, `directions`: the bandit over prior directions.
//! - `propose`: the offline proposer (rules fitted on train, written
//!   through the syntax tree and the formatter) and the LLM proposer.
//! - `archive`, `search`, `report`, `svg`: `mesa optimize`.
//! - `strata`: `mesa stratify`, one fixed subset per stratum (domain, which
//!   steps the question names and T shows), its strata and token price
//!   chosen by cross-validation over train and val.
//!
//! ```text
//! sweep.jsonl ──Sweep::read──► Problem ──splits──► train / val / test
//!                                  │
//!        proposer ──source──► compile_policy (Staged: check, module, instance) ──select──► Metrics ──► archive
//!                                  └── UCB over directions picks the next; the best val objective is tested once
//! ```
//!
//! ```no_run
//! use mesa_optimizer::{optimize, OptimizeOptions};
//!
//! let mut opts = OptimizeOptions::new("sweep.jsonl", "runs/offline-1");
//! opts.iterations = 30;
//! let summary = optimize(&opts)?;
//! println!("test objective {:.4}", summary.report.best.test.objective);
//! # Ok::<(), mesa_optimizer::OptimizeError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod archive;
mod baselines;
pub mod choice;
mod directions;
mod eval;
pub mod frontier;
mod frontier_svg;
mod measure;
mod propose;
mod report;
mod rng;
pub mod rules;
mod search;
mod split;
pub mod strata;
mod svg;
mod sweep;
mod ucb;

pub use archive::{read_entries, ArchiveEntry, ArchiveError, ARCHIVE_FILE};
pub use eval::engine::{CandidateFailure, Diag, Stage, StageTimings};
pub use eval::run::selections;
pub use eval::{evaluate_policy, EvalError, EvalOptions, EvalReport, PolicyFile, Problem};
pub use measure::judge::{Judge, JudgeError};
pub use measure::{measure, MeasureError, MeasureOptions, MeasureReport};
pub use propose::LlmOptions;
pub use report::{eval_markdown, OptimizeReport};
pub use search::{optimize, OptimizeError, OptimizeOptions, ProposerConfig, RunSummary};
pub use split::{FitOn, Split, ValHalf};
pub use sweep::{
    synthetic, write_sweep, Sweep, SweepError, SweepHeader, SweepReader, SweepRecord, SweepWriter,
    UtilityKind,
};

/// What the integration tests check beyond the facade: the search's
/// simulator of a policy spec over a sweep.
#[doc(hidden)]
pub mod testing {
    pub use crate::propose::spec::{total_objective, FeatTable, Simulator};
}
