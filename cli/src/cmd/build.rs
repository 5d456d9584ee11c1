//! `mesa build DATA -o STORE`: every structure for every episode, on disk.

use crate::error::CliError;
use mesa_memory::{
    dataset::LoadOptions, BuildOptions, Config, EmbedderKind, Progress, Source, Store,
};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The dataset: AMA-Bench's JSONL or MESA's trajectory JSONL (docs/DATA.md).
    data: PathBuf,
    /// The store directory to write (replaced atomically if it exists).
    #[arg(long, short, required_unless_present = "into", conflicts_with = "into")]
    output: Option<PathBuf>,
    /// Instead of a store, add the dataset's episodes to this live memory
    /// directory (with --tenant); its questions are kept with their episodes
    /// (`mesa query ROOT --tenant T --all` asks them).
    #[arg(long, requires = "tenant")]
    into: Option<PathBuf>,
    /// The live memory's tenant (with --into).
    #[arg(long)]
    tenant: Option<String>,
    /// With --into: wait this many seconds at most for the tenant's other
    /// writer to close; 0 refuses at once.
    #[arg(long, value_name = "SECONDS", value_parser = super::live::seconds, default_value = "0", requires = "into")]
    wait: std::time::Duration,
    #[command(flatten)]
    builders: super::builders::BuilderArgs,
    /// Cut longer actions and observations to this many bytes (default
    /// 32768 for a store, and 1048576, the most a live step holds, with
    /// --into, so that an export imports whole).
    #[arg(long)]
    max_text_bytes: Option<usize>,
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
            output: Some(output),
            into: None,
            tenant: None,
            wait: std::time::Duration::ZERO,
            builders: super::builders::BuilderArgs {
                embedder,
                ..Default::default()
            },
            max_text_bytes: None,
            skip_bad: false,
            quiet: false,
        }
    }
}

/// Reports on stderr the dataset lines a load skipped (`--skip-bad`), each
/// with why.
pub fn report_skipped<W: std::fmt::Display>(
    file: impl std::fmt::Display,
    skipped: impl ExactSizeIterator<Item = (usize, W)>,
) {
    if skipped.len() == 0 {
        return;
    }
    eprintln!("skipped {} line(s) of `{file}`:", skipped.len());
    for (line, why) in skipped {
        eprintln!("  line {line}: {why}");
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = Config::default();
    let load = LoadOptions {
        skip_bad: args.skip_bad,
        max_text_bytes: args.max_text_bytes.unwrap_or(match args.into {
            Some(_) => mesa_memory::live::MAX_TEXT_BYTES,
            None => LoadOptions::default().max_text_bytes,
        }),
        // A tenant holds episodes without steps (an export writes them); a
        // store needs steps.
        into_tenant: args.into.is_some(),
        ..LoadOptions::default()
    };
    let plugins = args.builders.kinds().plugins(&args.builders.options())?;
    if let (Some(root), Some(tenant)) = (&args.into, &args.tenant) {
        return import(&args, root, tenant, load, plugins);
    }
    let Some(output) = args.output.clone() else {
        return Err(CliError::Usage(
            "give the store to write with -o STORE".into(),
        ));
    };
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
        &output,
        BuildOptions {
            plugins,
            progress: Some(&progress),
            ..BuildOptions::default()
        },
    )?;
    bar.finish_and_clear();
    let m = store.manifest();
    let c = &m.counts;
    eprintln!(
        "built `{}` in {:.1} s: {} episodes, {} steps, {} questions, {} windows, {} relations (embedder {})",
        output.display(),
        started.elapsed().as_secs_f64(),
        c.episodes,
        c.steps,
        c.questions,
        c.windows,
        c.relations,
        m.plugins.embedder
    );
    if let Some(load) = &m.load {
        report_skipped(&load.file, load.skipped.iter().map(|(l, why)| (*l, why)));
        report_cuts(load.cut_observations, load.cut_actions, load.max_text_bytes);
    }
    Ok(ExitCode::SUCCESS)
}

/// Reports on stderr the texts a load cut.
fn report_cuts(observations: usize, actions: usize, max_text_bytes: usize) {
    if observations + actions > 0 {
        eprintln!(
            "cut {observations} observation(s) and {actions} action(s) at {max_text_bytes} bytes (--max-text-bytes)"
        );
    }
}

/// `mesa build DATA --into ROOT --tenant T`: every episode created in the
/// tenant, its steps appended in one batch (indices and timestamps kept;
/// a step without a timestamp gets the time of the import) and its
/// questions kept with it ([`mesa_memory::Tenant::import`]; run
/// again, it adds nothing to the episodes it imported).
fn import(
    args: &Args,
    root: &std::path::Path,
    tenant: &str,
    load: LoadOptions,
    plugins: mesa_memory::Plugins,
) -> Result<ExitCode, CliError> {
    let memory = mesa_memory::LiveMemory::open(root)?.waiting_for_writer(args.wait);
    let tenant = memory.tenant_with(tenant, Config::default(), plugins)?;
    let loaded = mesa_memory::load(&args.data, &load)?;
    let bar = crate::progress::bar(args.quiet, "importing {pos}/{len} episodes");
    bar.set_length(loaded.episodes.len() as u64);
    let started = std::time::Instant::now();
    let done = tenant.import(&loaded.episodes, |_| bar.inc(1))?;
    bar.finish_and_clear();
    let (steps, questions, again) = (done.steps, done.questions, done.again);
    eprintln!(
        "imported {} episodes, {steps} steps and {questions} questions into tenant `{}` of `{}` in {:.1} s",
        loaded.episodes.len(),
        tenant.name(),
        root.display(),
        started.elapsed().as_secs_f64()
    );
    if again > 0 {
        eprintln!("{again} of the episodes had been imported before with these steps: nothing was added to them");
    }
    let report = &loaded.report;
    let skipped = report.skipped.iter().map(|s| (s.line, &s.reason));
    report_skipped(args.data.display(), skipped);
    report_cuts(
        report.cut_observations,
        report.cut_actions,
        load.max_text_bytes,
    );
    Ok(ExitCode::SUCCESS)
}
