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
//! - [`cli`]: clap arguments and thin `run_*` functions for the `mesa` binary.
//!
//! ```no_run
//! use mesa_optimizer::search::{optimize, OptimizeOptions};
//!
//! let mut opts = OptimizeOptions::new("sweep.jsonl", "runs/offline-1");
//! opts.iterations = 30;
//! let summary = optimize(&opts)?;
//! println!("test objective {:.4}", summary.report.best.test.objective);
//! # Ok::<(), mesa_optimizer::search::OptimizeError>(())
//! ```

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod archive;
pub mod baselines;
pub mod cli;
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

pub use search::{optimize, OptimizeError, OptimizeOptions, ProposerConfig, RunSummary};
pub use sweep::{Sweep, SweepError, SweepHeader, SweepReader, SweepRecord, SweepWriter};
