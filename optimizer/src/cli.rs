//! The command-line glue for `mesa eval` and `mesa optimize`: clap argument
//! structs and thin functions over the library. The `mesa` binary adds two
//! subcommands:
//!
//! ```ignore
//! /// Score a policy and the baselines on a sweep.
//! Eval(mesa_optimizer::cli::EvalArgs),
//! /// Search for a policy (UCB over directions; offline or LLM proposer).
//! Optimize(mesa_optimizer::cli::OptimizeArgs),
//! // ...
//! Command::Eval(a) => return mesa_optimizer::cli::eval_main(a),
//! Command::Optimize(a) => return mesa_optimizer::cli::optimize_main(a),
//! ```
//!
//! Exit codes: 0 success, 1 a failure (bad sweep, bad policy, endpoint
//! down, I/O), 2 a usage error (clap's own, or an invalid value).

use crate::eval::{evaluate_policy, EvalError, EvalOptions, PolicyFile};
use crate::report::eval_markdown;
use crate::search::{optimize, OptimizeError, OptimizeOptions, ProposerConfig};
use crate::split::Split;
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
    /// The validation split (20%).
    Val,
    /// The test split (60%).
    #[default]
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
    /// The split to score.
    #[arg(long, value_enum, default_value_t)]
    pub split: SplitArg,
    /// How many split seeds (0, 1, ...); mean and std are reported.
    #[arg(long, default_value_t = 5)]
    pub seeds: usize,
    /// The first seed.
    #[arg(long, default_value_t = 0)]
    pub first_seed: u64,
    /// The token price in the objective J - lambda * C.
    #[arg(long, default_value_t = 1e-6)]
    pub lambda: f64,
    /// Hide the question type from the policy (a deployed agent has no gold type).
    #[arg(long)]
    pub no_qtype: bool,
    /// Draws averaged for the random baseline.
    #[arg(long, default_value_t = crate::baselines::DEFAULT_DRAWS)]
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
    #[arg(long, default_value_t = 30)]
    pub iterations: usize,
    /// The token price in the objective J - lambda * C.
    #[arg(long, default_value_t = 1e-6)]
    pub lambda: f64,
    /// UCB exploration weight.
    #[arg(long, default_value_t = 0.08)]
    pub beta: f64,
    /// Split seed and seed of every random choice.
    #[arg(long, default_value_t = 0)]
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
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f32,
    /// Stop after this many endpoint failures in a row (resume later).
    #[arg(long, default_value_t = 3)]
    pub max_endpoint_failures: usize,
    /// No progress lines on standard error.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// Evaluation failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The search failed.
    #[error(transparent)]
    Optimize(#[from] OptimizeError),
    /// A value on the command line is invalid.
    #[error("{0}")]
    Usage(String),
    /// The report could not be written.
    #[error("{path}: {source}")]
    Write {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

impl CliError {
    /// 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}

fn check_numbers(lambda: f64, beta: Option<f64>) -> Result<(), CliError> {
    if !lambda.is_finite() || lambda < 0.0 {
        return Err(CliError::Usage(format!(
            "--lambda must be a finite number >= 0, got {lambda}"
        )));
    }
    if let Some(b) = beta {
        if !b.is_finite() || b < 0.0 {
            return Err(CliError::Usage(format!(
                "--beta must be a finite number >= 0, got {b}"
            )));
        }
    }
    Ok(())
}

/// `mesa eval`.
pub fn run_eval(args: EvalArgs) -> Result<ExitCode, CliError> {
    check_numbers(args.lambda, None)?;
    if args.seeds == 0 {
        return Err(CliError::Usage("--seeds must be at least 1".into()));
    }
    let policy = PolicyFile::read(&args.policy)?;
    let opts = EvalOptions {
        sweep: args.sweep.clone(),
        split: args.split.into(),
        seeds: args.seeds,
        first_seed: args.first_seed,
        lambda: args.lambda,
        hide_qtype: args.no_qtype,
        draws: args.draws.max(1),
        engine: mesa_runtime::EngineKind::Wasm,
    };
    let report = evaluate_policy(&policy, &opts)?;
    let text = match args.format {
        ReportFormat::Md => eval_markdown(&report),
        ReportFormat::Json => {
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Usage(e.to_string()))?
                + "\n"
        }
    };
    match &args.output {
        Some(path) => std::fs::write(path, text).map_err(|source| CliError::Write {
            path: path.display().to_string(),
            source,
        })?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// `mesa optimize`.
pub fn run_optimize(args: OptimizeArgs) -> Result<ExitCode, CliError> {
    check_numbers(args.lambda, Some(args.beta))?;
    let proposer = match args.proposer {
        ProposerArg::Offline => ProposerConfig::Offline,
        ProposerArg::Llm => {
            let mut config = mesa_llm::Config::from_env().map_err(OptimizeError::from)?;
            if let Some(m) = &args.model {
                config = config.with_chat_model(m.clone());
            }
            config.validate().map_err(OptimizeError::from)?;
            let mut o = crate::propose::LlmOptions::new(config);
            o.temperature = args.temperature;
            ProposerConfig::Llm(Box::new(o))
        }
    };
    let mut opts = OptimizeOptions::new(&args.sweep, &args.out);
    opts.proposer = proposer;
    opts.iterations = args.iterations;
    opts.lambda = args.lambda;
    opts.beta = args.beta;
    opts.seed = args.seed;
    opts.resume = args.resume;
    opts.hide_qtype = args.no_qtype;
    opts.progress = !args.quiet;
    opts.max_endpoint_failures = args.max_endpoint_failures.max(1);
    let summary = optimize(&opts)?;
    let r = &summary.report;
    if !args.quiet {
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
    Ok(ExitCode::SUCCESS)
}

fn finish(result: Result<ExitCode, CliError>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// `mesa eval`, printing any error on stderr.
pub fn eval_main(args: EvalArgs) -> ExitCode {
    finish(run_eval(args))
}

/// `mesa optimize`, printing any error on stderr.
pub fn optimize_main(args: OptimizeArgs) -> ExitCode {
    finish(run_optimize(args))
}
