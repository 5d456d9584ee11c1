//! The MESA optimizer: sweeps, splits, evaluation, baselines, the
//! prior-guided UCB search over selector policies, the offline and LLM
//! proposers, the run archive and reports.
//!
//! - [`sweep`]: the sweep file format (reader, writer, synthetic generator).
//! - [`split`]: episode-level 2:2:6 train/val/test splits per seed.
//! - [`eval`]: J, C and the objective of a policy run as compiled Wasm in
//!   the sandbox; `mesa eval`.
//! - [`baselines`]: single structures, all five, random, best fixed on val,
//!   per-domain on train, the oracle.
//! - [`ucb`], [`directions`]: the bandit over prior directions.
//! - [`propose`]: the offline proposer (rules fitted on train, written
//!   through the syntax tree and the formatter) and the LLM proposer.
//! - [`archive`], [`search`], [`report`], [`svg`]: `mesa optimize`.
//!
//! The flat re-exports below are the surface a front end uses; the modules
//! hold the parts for tests and tools.
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

pub mod archive;
pub mod baselines;
pub mod directions;
pub mod eval;
pub mod measure;
pub mod propose;
pub mod report;
pub mod rng;
pub mod search;
pub mod split;
pub mod svg;
pub mod sweep;
pub mod ucb;

pub use eval::{evaluate_policy, EvalError, EvalOptions, EvalReport, PolicyFile};
pub use measure::judge::{Judge, JudgeError};
pub use measure::{measure, MeasureError, MeasureOptions, MeasureReport};
pub use propose::LlmOptions;
pub use report::{eval_markdown, OptimizeReport};
pub use search::{optimize, OptimizeError, OptimizeOptions, ProposerConfig, RunSummary};
pub use split::Split;
pub use sweep::{
    Sweep, SweepError, SweepHeader, SweepReader, SweepRecord, SweepWriter, UtilityKind,
};
