//! `mesa build DATA -o STORE`: every structure for every episode, on disk.

use crate::source::CliError;
use mesa_memory::{dataset::LoadOptions, BuildOptions, Config, Progress, Source, Store};
use std::path::PathBuf;
use std::process::ExitCode;

/// The embedders `--embedder` accepts.
#[derive(Clone, Copy, clap::ValueEnum, Default, PartialEq, Eq, Debug)]
pub enum EmbedderKind {
    /// The built-in deterministic embedder (no weights).
    #[default]
    Builtin,
    /// all-MiniLM-L6-v2 run in Rust with candle (files from `scripts/fetch-minilm.sh`).
    Minilm,
    /// An OpenAI-compatible embeddings endpoint (MESA_LLM_BASE_URL, MESA_LLM_API_KEY).
    Openai,
}

/// Built-in or LLM-backed, for `--summarizer` and `--extractor`.
#[derive(Clone, Copy, clap::ValueEnum, Default, PartialEq, Eq, Debug)]
pub enum LlmKind {
    /// The built-in offline builder.
    #[default]
    Builtin,
    /// An OpenAI-compatible chat endpoint (MESA_LLM_BASE_URL, MESA_LLM_API_KEY, ...).
    Llm,
}

#[derive(clap::Args)]
pub struct Args {
    /// The dataset: AMA-Bench's JSONL or MESA's trajectory JSONL (docs/DATA.md).
    data: PathBuf,
    /// The store directory to write (replaced atomically if it exists).
    #[arg(long, short)]
    output: PathBuf,
    /// How the vector index embeds steps.
    #[arg(long, value_enum, default_value_t)]
    embedder: EmbedderKind,
    /// The MiniLM model directory (default: MESA_MINILM_DIR, else models/all-MiniLM-L6-v2).
    #[arg(long)]
    minilm_dir: Option<PathBuf>,
    /// How the summary (S) is written.
    #[arg(long, value_enum, default_value_t)]
    summarizer: LlmKind,
    /// How the graph's relations (G) are extracted.
    #[arg(long, value_enum, default_value_t)]
    extractor: LlmKind,
    /// Skip lines that cannot be read (each is counted and reported) instead
    /// of stopping at the first.
    #[arg(long)]
    skip_bad: bool,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

impl Args {
    /// The arguments `mesa build DATA -o OUTPUT --embedder E` would give.
    pub fn new(data: PathBuf, output: PathBuf, embedder: EmbedderKind) -> Args {
        Args {
            data,
            output,
            embedder,
            minilm_dir: None,
            summarizer: LlmKind::Builtin,
            extractor: LlmKind::Builtin,
            skip_bad: false,
            quiet: false,
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = Config::default();
    let load = LoadOptions {
        skip_bad: args.skip_bad,
        ..LoadOptions::default()
    };
    let plugins = crate::plugins::for_build(
        args.embedder,
        args.summarizer,
        args.extractor,
        args.minilm_dir.clone(),
    )?;
    let bar = crate::progress::bar(args.quiet, "building {pos}/{len} episodes");
    let progress = |p: &Progress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(format!("episode {} ({} steps)", p.episode, p.steps));
    };
    let started = std::time::Instant::now();
    let store = Store::build(
        Source::Path(args.data.clone(), load),
        &config,
        &args.output,
        BuildOptions {
            plugins,
            progress: Some(&progress),
            ..BuildOptions::default()
        },
    )
    .map_err(|e| CliError::Message(e.to_string()))?;
    bar.finish_and_clear();
    let m = store.manifest();
    let c = &m.counts;
    eprintln!(
        "built `{}` in {:.1} s: {} episodes, {} steps, {} questions, {} windows, {} relations (embedder {})",
        args.output.display(),
        started.elapsed().as_secs_f64(),
        c.episodes,
        c.steps,
        c.questions,
        c.windows,
        c.relations,
        m.plugins.embedder
    );
    if let Some(load) = &m.load {
        if !load.skipped.is_empty() {
            eprintln!("skipped {} line(s) of `{}`:", load.skipped.len(), load.file);
            for (line, why) in &load.skipped {
                eprintln!("  line {line}: {why}");
            }
        }
        if load.cut_observations + load.cut_actions > 0 {
            eprintln!(
                "cut {} observation(s) and {} action(s) at {} bytes",
                load.cut_observations, load.cut_actions, load.max_text_bytes
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
