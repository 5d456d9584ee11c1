//! `mesa eval POLICY --sweep FILE` and `mesa optimize --sweep FILE --out RUN/`:
//! clap arguments over the optimizer's options, whose defaults they show.

use crate::error::CliError;
use mesa_optimizer::{
    eval_markdown, evaluate_policy, optimize, EvalOptions, LlmOptions, OptimizeOptions, PolicyFile,
    ProposerConfig, RunSummary, Split,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// Report formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    /// Markdown tables.
    #[default]
    Md,
    /// One JSON document.
    Json,
}

/// Split names on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SplitArg {
    /// The train split (20% of episodes).
    Train,
    /// The validation split (20%): the default, so that development reads train and val and
    /// the test split is read once, at the end.
    #[default]
    Val,
    /// The test split (60%).
    Test,
}

impl From<SplitArg> for Split {
    fn from(s: SplitArg) -> Split {
        match s {
            SplitArg::Train => Split::Train,
            SplitArg::Val => Split::Val,
            SplitArg::Test => Split::Test,
        }
    }
}

/// Proposers on the command line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProposerArg {
    /// Fit rules on train; no network.
    #[default]
    Offline,
    /// An OpenAI-compatible endpoint (MESA_LLM_BASE_URL, MESA_LLM_API_KEY, MESA_LLM_CHAT_MODEL, ...).
    Llm,
}

/// `mesa eval POLICY --sweep FILE ...`
#[derive(Debug, Clone, clap::Args)]
pub struct EvalArgs {
    /// The policy: `.mesa` source or a compiled `.wasm` module.
    pub policy: PathBuf,
    /// The sweep file (JSONL, format mesa-sweep version 1).
    #[arg(long)]
    pub sweep: PathBuf,
    /// The split to score (val by default: read test once, at the end).
    #[arg(long, value_enum, default_value_t)]
    pub split: SplitArg,
    /// How many split seeds (0, 1, ...); mean and std are reported.
    #[arg(long, default_value_t = EvalOptions::new("").seeds)]
    pub seeds: usize,
    /// The first seed.
    #[arg(long, default_value_t = EvalOptions::new("").first_seed)]
    pub first_seed: u64,
    /// The token price in the objective J - lambda * C.
    #[arg(long, default_value_t = EvalOptions::new("").lambda)]
    pub lambda: f64,
    /// Hide the question type from the policy (a deployed agent has no gold type).
    #[arg(long)]
    pub no_qtype: bool,
    /// Draws averaged for the random baseline.
    #[arg(long, default_value_t = EvalOptions::new("").draws)]
    pub draws: usize,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: ReportFormat,
    /// Write the report here instead of standard output.
    #[arg(long, short = 'o')]
    pub output: Option<PathBuf>,
}

/// `mesa optimize --sweep FILE --out RUN/ ...`
#[derive(Debug, Clone, clap::Args)]
pub struct OptimizeArgs {
    /// The sweep file.
    #[arg(long)]
    pub sweep: PathBuf,
    /// Where candidates come from.
    #[arg(long, value_enum, default_value_t)]
    pub proposer: ProposerArg,
    /// Iterations; each proposes an exploitation, an exploration and a repair candidate.
    #[arg(long, default_value_t = OptimizeOptions::defaults().iterations)]
    pub iterations: usize,
    /// The token price in the objective J - lambda * C.
    #[arg(long, default_value_t = OptimizeOptions::defaults().lambda)]
    pub lambda: f64,
    /// UCB exploration weight.
    #[arg(long, default_value_t = OptimizeOptions::defaults().beta)]
    pub beta: f64,
    /// Split seed and seed of every random choice.
    #[arg(long, default_value_t = OptimizeOptions::defaults().seed)]
    pub seed: u64,
    /// The run directory (archive.jsonl, run.json, report.md, report.json, best.mesa, best.wasm, pareto.svg).
    #[arg(long)]
    pub out: PathBuf,
    /// Continue the run in --out (a cut-off last archive line is dropped and reported).
    #[arg(long)]
    pub resume: bool,
    /// Hide the question type from policies.
    #[arg(long)]
    pub no_qtype: bool,
    /// The chat model (default: MESA_LLM_CHAT_MODEL or the client's default).
    #[arg(long)]
    pub model: Option<String>,
    /// Sampling temperature of the LLM proposer.
    #[arg(long, default_value_t = LlmOptions::DEFAULT_TEMPERATURE)]
    pub temperature: f32,
    /// Stop after this many endpoint failures in a row (resume later).
    #[arg(long, default_value_t = OptimizeOptions::defaults().max_endpoint_failures)]
    pub max_endpoint_failures: usize,
    /// How the tested candidate is chosen: the best val objective, or the policy with the
    /// fewest rules within one standard error of it.
    #[arg(long, value_enum, default_value_t)]
    pub choose: ChoiceArg,
    /// Compare candidates on this half of val only; `search` leaves the choice half for
    /// `mesa frontier --val-half choice` to choose among runs (one per token price).
    #[arg(long, value_enum)]
    pub val_half: Option<super::frontier::ValHalfArg>,
    /// What rules are fitted on: `train` (candidates compared on val), or `train+val` (fitted
    /// and compared on both, or on train and the --val-half given; judge such runs on what they
    /// left out, as `mesa frontier --cross-fit` does).
    #[arg(long, value_enum, default_value_t)]
    pub fit: FitArg,
    /// The prices the offline proposer's `trade` direction tries (comma-separated, each above
    /// 0) [default: 0.05 to 1 in steps of 0.05].
    #[arg(long, value_delimiter = ',')]
    pub trade_price: Vec<f64>,
    /// No progress lines on standard error.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// `--choose`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum ChoiceArg {
    /// The best val objective.
    #[default]
    BestVal,
    /// The fewest rules within one standard error of the best val objective.
    OneSe,
}

impl From<ChoiceArg> for mesa_optimizer::choice::Choice {
    fn from(c: ChoiceArg) -> Self {
        match c {
            ChoiceArg::BestVal => mesa_optimizer::choice::Choice::BestVal,
            ChoiceArg::OneSe => mesa_optimizer::choice::Choice::OneSe,
        }
    }
}

pub fn check_number(flag: &str, value: f64) -> Result<(), CliError> {
    if !value.is_finite() || value < 0.0 {
        return Err(CliError::Usage(format!(
            "{flag} must be a finite number >= 0, got {value}"
        )));
    }
    Ok(())
}

/// `--lambda`: a token price from 0 to the highest the evaluation takes,
/// checked before any file is read (a usage error, with the evaluation's
/// own message).
pub fn check_lambda(value: f64) -> Result<(), CliError> {
    if !(0.0..=mesa_optimizer::Problem::MAX_LAMBDA).contains(&value) {
        let e = mesa_optimizer::EvalError::Lambda(value);
        return Err(CliError::Usage(e.to_string()));
    }
    Ok(())
}

/// `--first-seed` and `--seeds`: at least one seed, all of them below
/// 2^64.
pub fn check_seeds(first: u64, seeds: u64) -> Result<(), CliError> {
    if seeds == 0 {
        return Err(CliError::Usage("--seeds must be at least 1".into()));
    }
    if first.checked_add(seeds).is_none() {
        return Err(CliError::Usage(format!(
            "--first-seed {first} with --seeds {seeds} runs past the largest seed ({}); use a smaller --first-seed",
            u64::MAX
        )));
    }
    Ok(())
}

/// `mesa eval`.
pub fn eval(args: EvalArgs) -> Result<ExitCode, CliError> {
    check_lambda(args.lambda)?;
    check_seeds(args.first_seed, args.seeds as u64)?;
    let policy = PolicyFile::read(&args.policy)?;
    let opts = EvalOptions {
        split: args.split.into(),
        seeds: args.seeds,
        first_seed: args.first_seed,
        lambda: args.lambda,
        hide_qtype: args.no_qtype,
        draws: args.draws.max(1),
        ..EvalOptions::new(&args.sweep)
    };
    let report = evaluate_policy(&policy, &opts)?;
    let text = match args.format {
        ReportFormat::Md => eval_markdown(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report)? + "\n",
    };
    match &args.output {
        Some(path) => std::fs::write(path, text).map_err(CliError::io("write", path.display()))?,
        None => out!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The options `args` give.
pub fn options(args: &OptimizeArgs) -> Result<OptimizeOptions, CliError> {
    check_lambda(args.lambda)?;
    check_number("--beta", args.beta)?;
    let proposer = match args.proposer {
        ProposerArg::Offline => ProposerConfig::Offline,
        ProposerArg::Llm => {
            let mut config = mesa_llm::Config::from_env()?;
            if let Some(m) = &args.model {
                config = config.with_chat_model(m.clone());
            }
            config.validate()?;
            let mut o = LlmOptions::new(config);
            o.temperature = args.temperature;
            ProposerConfig::Llm(Box::new(o))
        }
    };
    let defaults = OptimizeOptions::new(&args.sweep, &args.out);
    let trade_prices = if args.trade_price.is_empty() {
        defaults.trade_prices.clone()
    } else {
        args.trade_price.clone()
    };
    Ok(OptimizeOptions {
        proposer,
        trade_prices,
        iterations: args.iterations,
        lambda: args.lambda,
        beta: args.beta,
        seed: args.seed,
        resume: args.resume,
        hide_qtype: args.no_qtype,
        progress: !args.quiet,
        max_endpoint_failures: args.max_endpoint_failures.max(1),
        choice: args.choose.into(),
        val_half: args.val_half.map(Into::into),
        fit: args.fit.into(),
        ..defaults
    })
}

/// `mesa optimize`.
pub fn run(args: OptimizeArgs) -> Result<ExitCode, CliError> {
    let summary = optimize(&options(&args)?)?;
    if !args.quiet {
        print_summary(&summary);
    }
    Ok(ExitCode::SUCCESS)
}

/// The one-line result of a run, on standard error.
pub fn print_summary(summary: &RunSummary) {
    let r = &summary.report;
    eprintln!(
        "best #{} ({} {}): val objective {:.4}, test objective {:.4} (J {:.4}, C {:.0}); report in {}",
        r.best.id,
        r.best.mode,
        r.best.direction,
        r.best.val.map_or(f64::NAN, |m| m.objective),
        r.best.test.objective,
        r.best.test.j,
        r.best.test.c,
        summary.out.join("report.md").display()
    );
}

/// `--fit`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum FitArg {
    /// Rules fitted on train, candidates compared on val.
    #[default]
    Train,
    /// Rules fitted and candidates compared on train and val together.
    #[value(name = "train+val")]
    TrainVal,
}

impl From<FitArg> for mesa_optimizer::FitOn {
    fn from(f: FitArg) -> Self {
        match f {
            FitArg::Train => mesa_optimizer::FitOn::Train,
            FitArg::TrainVal => mesa_optimizer::FitOn::TrainVal,
        }
    }
}
