//! `mesa frontier`: the fixed subsets' frontier, the oracle and policies
//! on a split of a sweep.

use super::optimize::ReportFormat;
use crate::error::CliError;
use mesa_optimizer::frontier::{frontier, FrontierOptions, ValChoice};
use mesa_optimizer::{Split, ValHalf};
use std::path::PathBuf;
use std::process::ExitCode;

/// `mesa frontier --sweep FILE [--policy P]...`
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// The sweep file.
    #[arg(long)]
    pub sweep: PathBuf,
    /// Policies to place against the frontier (`.mesa` or `.wasm`; repeatable). `{seed}` in
    /// a path is replaced by each seed, so each seed reads its own run's policy.
    #[arg(long)]
    pub policy: Vec<String>,
    /// The split to score (the fixed subsets are scored on it in hindsight); `all` scores
    /// every labelled question (a sweep the policies were not searched on).
    #[arg(long, value_enum, default_value_t)]
    pub split: FrontierSplit,
    /// How many split seeds (0, 1, ...).
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub first_seed: u64,
    /// The token price of the oracle's objective.
    #[arg(long, default_value_t = 1e-6)]
    pub lambda: f64,
    /// Hide the question type from the policies.
    #[arg(long)]
    pub no_qtype: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Also draw the first seed's frontier here (SVG).
    #[arg(long)]
    pub svg: Option<PathBuf>,
    /// Choose among the policies on this half of val only: `choice` for runs made with
    /// `mesa optimize --val-half search`, whose searches never saw it.
    #[arg(long, value_enum, conflicts_with = "cross_fit")]
    pub val_half: Option<ValHalfArg>,
    /// Choose among the policies cross-fitted: after each --policy, in the same order, the
    /// policies of the two searches at its setting made with `mesa optimize --val-half search`
    /// and `--val-half choice`; each val question is selected by the one that did not see it.
    #[arg(long, num_args = 2, value_names = ["ON_SEARCH_HALF", "ON_CHOICE_HALF"])]
    pub cross_fit: Vec<String>,
}

/// `--val-half` of `mesa frontier` and `mesa optimize`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ValHalfArg {
    /// Val's first half (in the split's key order).
    Search,
    /// Its second half.
    Choice,
}

impl From<ValHalfArg> for ValHalf {
    fn from(h: ValHalfArg) -> Self {
        match h {
            ValHalfArg::Search => ValHalf::Search,
            ValHalfArg::Choice => ValHalf::Choice,
        }
    }
}

/// `--split`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum FrontierSplit {
    /// The train split.
    Train,
    /// The validation split.
    Val,
    /// The test split.
    #[default]
    Test,
    /// Every labelled question.
    All,
}

impl FrontierSplit {
    fn split(self) -> Option<Split> {
        match self {
            FrontierSplit::Train => Some(Split::Train),
            FrontierSplit::Val => Some(Split::Val),
            FrontierSplit::Test => Some(Split::Test),
            FrontierSplit::All => None,
        }
    }
}

/// Runs `mesa frontier`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    super::optimize::check_seeds(args.first_seed, args.seeds)?;
    super::optimize::check_lambda(args.lambda)?;
    let val = match (args.val_half, args.cross_fit.as_slice()) {
        (Some(h), _) => ValChoice::Half(h.into()),
        (None, []) => ValChoice::All,
        (None, paths) => ValChoice::CrossFit(
            paths
                .chunks(2)
                .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
                .collect(),
        ),
    };
    let report = frontier(&FrontierOptions {
        split: args.split.split(),
        seeds: args.first_seed..args.first_seed + args.seeds,
        lambda: args.lambda,
        hide_qtype: args.no_qtype,
        val,
        ..FrontierOptions::new(&args.sweep, args.policy.clone())
    })?;
    if let Some(path) = &args.svg {
        std::fs::write(path, report.to_svg()).map_err(CliError::io("write", path.display()))?;
    }
    match args.format {
        ReportFormat::Md => out!("{}", report.to_markdown()),
        ReportFormat::Json => outln!("{}", serde_json::to_string_pretty(&report)?),
    }
    Ok(ExitCode::SUCCESS)
}
