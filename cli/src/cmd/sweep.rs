//! `mesa sweep STORE DATA --utility U -o sweep.jsonl`: every question's
//! previews, and the utility and tokens of each of the 31 subsets.

use crate::error::CliError;
use mesa_memory::dataset::LoadOptions;
use mesa_memory::{PluginOptions, Store};
use mesa_optimizer::{measure, Judge, MeasureOptions, MeasureReport, UtilityKind};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Utilities on the command line.
#[derive(Clone, Copy, clap::ValueEnum, Default, PartialEq, Eq, Debug)]
pub enum UtilityArg {
    /// Share of the labelled evidence steps the evidence shows (offline).
    #[default]
    EvidenceRecall,
    /// Evidence recall over the labels the question does not name itself (offline).
    AnswerOnlyRecall,
    /// Share of the reference answer's content words the evidence contains (offline).
    AnswerCoverage,
    /// An answer model and an LLM judge (MESA_LLM_BASE_URL, MESA_LLM_API_KEY, ...).
    Judge,
}

impl From<UtilityArg> for UtilityKind {
    fn from(u: UtilityArg) -> Self {
        match u {
            UtilityArg::EvidenceRecall => UtilityKind::EvidenceRecall,
            UtilityArg::AnswerOnlyRecall => UtilityKind::AnswerOnlyRecall,
            UtilityArg::AnswerCoverage => UtilityKind::AnswerCoverage,
            UtilityArg::Judge => UtilityKind::Judge,
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The store (from `mesa build`).
    pub store: PathBuf,
    /// The dataset whose questions to measure (the one the store was built from).
    pub data: PathBuf,
    /// How a subset's evidence is scored.
    #[arg(long, value_enum, default_value_t)]
    pub utility: UtilityArg,
    /// Where to write the sweep (JSONL).
    #[arg(long, short)]
    pub output: PathBuf,
    /// With --utility judge: the request cache (default: OUTPUT with `.judge-cache.jsonl`).
    #[arg(long)]
    pub judge_cache: Option<PathBuf>,
    /// With --utility judge: the answer model (default: MESA_LLM_CHAT_MODEL).
    #[arg(long)]
    pub answer_model: Option<String>,
    /// With --utility judge: the judge model (default: MESA_LLM_CHAT_MODEL).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Also write each question's evidence item by item to this JSONL file
    /// (tokens, steps and content words per item, and the labels or answer
    /// words): what a study of choices finer than whole structures reads.
    #[arg(long)]
    pub items: Option<PathBuf>,
    /// Skip the dataset's lines that cannot be read, as `mesa build
    /// --skip-bad` did (each is reported) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// The MiniLM directory, for a store built with `--embedder minilm`
    /// (default: MESA_MINILM_DIR, else models/all-MiniLM-L6-v2).
    #[arg(long)]
    pub minilm_dir: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let report = sweep(&args)?;
    eprintln!(
        "wrote `{}`: {} questions, {} labelled ({} by the dataset's evidence, {} by step numbers named in the question or answer)",
        args.output.display(),
        report.questions,
        report.labelled,
        report.labels_from_dataset,
        report.labels_from_named_steps,
    );
    Ok(ExitCode::SUCCESS)
}

/// Measures the sweep; shared with `mesa pipeline`.
pub fn sweep(args: &Args) -> Result<MeasureReport, CliError> {
    let options = PluginOptions::with_minilm_dir(args.minilm_dir.clone());
    let store = Store::open_recorded(&args.store, &options)?;
    let options = LoadOptions {
        skip_bad: args.skip_bad,
        ..LoadOptions::default()
    };
    let loaded = mesa_memory::load(&args.data, &options)?;
    super::build::report_skipped(
        args.data.display(),
        loaded.report.skipped.iter().map(|s| (s.line, &s.reason)),
    );
    let utility: UtilityKind = args.utility.into();
    let judge = if utility == UtilityKind::Judge {
        let client = mesa_llm::Client::from_env()?;
        let c = client.config();
        eprintln!(
            "judging at {} (MESA_LLM_BASE_URL sets another endpoint); a request waits up to {} s for its answer and is tried again up to {} time(s)",
            c.base_url,
            c.timeout.as_secs_f64(),
            c.max_retries
        );
        let cache = args
            .judge_cache
            .clone()
            .unwrap_or_else(|| args.output.with_extension("judge-cache.jsonl"));
        let judge = Judge::new(
            client,
            args.answer_model.clone(),
            args.judge_model.clone(),
            &cache,
        )?;
        eprintln!(
            "judge cache `{}`: {} cached request(s){}",
            cache.display(),
            judge.cached(),
            if judge.torn_cache_lines > 0 {
                format!(
                    ", {} torn line(s) from a killed run ignored",
                    judge.torn_cache_lines
                )
            } else {
                String::new()
            }
        );
        Some(judge)
    } else {
        None
    };
    let bar = crate::progress::bar(args.quiet, "sweep {pos}/{len} questions");
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let report = measure(
        &store,
        &loaded.episodes,
        &display(&args.data),
        &display(&args.store),
        &MeasureOptions {
            utility,
            judge: judge.as_ref(),
            progress: Some(&progress),
            items: args.items.as_deref(),
        },
        &args.output,
    )?;
    bar.finish_and_clear();
    Ok(report)
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
