//! The search's options, its errors and what a finished run returns.

use crate::archive::ArchiveError;
use crate::baselines::DEFAULT_DRAWS;
use crate::choice::Choice;
use crate::eval::EvalError;
use crate::propose::LlmOptions;
use crate::report::OptimizeReport;
use crate::split::{FitOn, ValHalf};
use crate::strata::DEFAULT_TRADE_PRICES;
use std::path::PathBuf;

/// Where candidates come from.
#[derive(Debug, Clone)]
pub enum ProposerConfig {
    /// Rules fitted on train, no network.
    Offline,
    /// An OpenAI-compatible endpoint.
    Llm(Box<LlmOptions>),
}

impl ProposerConfig {
    /// `offline` or `llm`.
    pub fn name(&self) -> &'static str {
        match self {
            ProposerConfig::Offline => "offline",
            ProposerConfig::Llm(_) => "llm",
        }
    }
}

/// The settings of a run.
#[derive(Debug, Clone)]
pub struct OptimizeOptions {
    /// The sweep file.
    pub sweep: PathBuf,
    /// The run directory.
    pub out: PathBuf,
    /// The proposer.
    pub proposer: ProposerConfig,
    /// Iterations (three candidates each). Default 30.
    pub iterations: usize,
    /// The token price in the objective `J - lambda * C`. Default 1e-6.
    pub lambda: f64,
    /// The UCB exploration weight. Default 0.08.
    pub beta: f64,
    /// The split seed (and the seed of every random choice). Default 0.
    pub seed: u64,
    /// Continue the run in `out`.
    pub resume: bool,
    /// Hide the question type from policies.
    pub hide_qtype: bool,
    /// Print a line per candidate on stderr.
    pub progress: bool,
    /// Stop after this many endpoint failures in a row. Default 3.
    pub max_endpoint_failures: usize,
    /// Draws of the random baseline. Default [`DEFAULT_DRAWS`] (32).
    pub draws: usize,
    /// How the tested candidate is chosen. Default [`Choice::BestVal`].
    pub choice: Choice,
    /// Compare candidates on this half of val only (leaving the other to
    /// choose among runs). Default `None`: all of val.
    pub val_half: Option<ValHalf>,
    /// What rules are fitted and candidates compared on. Default
    /// [`FitOn::Train`]: fitted on train, compared on val.
    pub fit: FitOn,
    /// The prices the offline proposer's `trade` direction tries, each
    /// finite and above 0. Default [`DEFAULT_TRADE_PRICES`] (0.05 to 1 in
    /// steps of 0.05, as `mesa stratify`).
    pub trade_prices: Vec<f64>,
}

impl OptimizeOptions {
    /// The defaults each field names, with the offline proposer, for a
    /// run over `sweep` into `out`.
    pub fn new(sweep: impl Into<PathBuf>, out: impl Into<PathBuf>) -> OptimizeOptions {
        OptimizeOptions {
            sweep: sweep.into(),
            out: out.into(),
            proposer: ProposerConfig::Offline,
            iterations: 30,
            lambda: 1e-6,
            beta: 0.08,
            seed: 0,
            resume: false,
            hide_qtype: false,
            progress: false,
            max_endpoint_failures: 3,
            draws: DEFAULT_DRAWS,
            choice: Choice::BestVal,
            val_half: None,
            fit: FitOn::Train,
            trade_prices: DEFAULT_TRADE_PRICES.to_vec(),
        }
    }

    /// The defaults alone (empty paths), for a front end to show them.
    pub fn defaults() -> OptimizeOptions {
        OptimizeOptions::new("", "")
    }
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptimizeError {
    /// The sweep or the splits.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The archive.
    #[error(transparent)]
    Archive(#[from] ArchiveError),
    /// The Wasm runtime could not start.
    #[error("cannot start the Wasm runtime: {0}")]
    Runtime(#[from] mesa_runtime::LoadError),
    /// The LLM client could not be configured.
    #[error("LLM proposer: {0}")]
    Llm(#[from] mesa_llm::Error),
    /// The endpoint failed too many times in a row.
    #[error("the LLM endpoint failed {count} times in a row (last: {last}); the archive keeps every candidate so far ({archived}); fix the endpoint and rerun with --resume")]
    EndpointDown {
        /// Failures in a row.
        count: usize,
        /// The last error.
        last: String,
        /// Entries in the archive.
        archived: usize,
    },
    /// No candidate is valid (not even the seed).
    #[error("no valid candidate in the archive")]
    NoValidCandidate,
    /// A trade price is not a finite number above 0, or none is given.
    #[error("trade prices must be finite numbers above 0, and at least one is needed; got {0:?}")]
    TradePrices(Vec<f64>),
    /// A report file could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// What a finished run produced.
#[derive(Debug, Clone)]
pub struct RunSummary {
    /// The report (also in RUN/report.json).
    pub report: OptimizeReport,
    /// The run directory.
    pub out: PathBuf,
}
