//! The live memory's writes: `mesa append`, `mesa forget`, `mesa correct`,
//! `mesa compact`, and `mesa episodes`. Each names its memory directory and
//! tenant; the library ([`mesa_memory::LiveMemory`]) does the work.

use crate::error::CliError;
use mesa_memory::{Forget, LiveError, LiveMemory, NewEpisode, NewStep, Tenant};
use serde_json::json;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;

/// The memory directory and tenant every live command names.
#[derive(clap::Args, Clone)]
pub struct Target {
    /// The live memory directory (`append` creates it if new; the other
    /// commands need it to exist).
    pub root: PathBuf,
    /// The tenant: 1 to 64 letters, digits, `-` or `_`.
    #[arg(long, short)]
    pub tenant: String,
    /// A command that writes waits this many seconds at most for the
    /// tenant's other writer (another `mesa append`, say) to close; 0
    /// refuses at once.
    #[arg(long, value_name = "SECONDS", value_parser = seconds, default_value = "0")]
    pub wait: std::time::Duration,
}

/// `--wait`'s seconds.
pub(crate) fn seconds(s: &str) -> Result<std::time::Duration, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .and_then(|x| std::time::Duration::try_from_secs_f64(x).ok())
        .ok_or_else(|| format!("`{s}` is not a number of seconds from 0 up"))
}

impl Target {
    /// Opens an existing tenant for writing, creating nothing.
    pub fn open_existing(&self) -> Result<Tenant, CliError> {
        let memory = LiveMemory::open_existing(&self.root)?.waiting_for_writer(self.wait);
        Ok(memory.existing_tenant(&self.tenant)?)
    }

    /// Opens an existing tenant to list and export it, beside any writer,
    /// creating nothing and making none of its builders.
    pub fn open_lister(&self) -> Result<Tenant, CliError> {
        Ok(LiveMemory::open_existing(&self.root)?.lister(&self.tenant)?)
    }

    /// Opens an existing tenant for reading, beside any writer, creating
    /// nothing.
    pub fn open_reader(&self) -> Result<Tenant, CliError> {
        Ok(LiveMemory::open_existing(&self.root)?.reader(&self.tenant)?)
    }
}

/// `mesa append ROOT --tenant T --episode ID`: steps as JSONL on stdin.
#[derive(clap::Args)]
pub struct AppendArgs {
    #[command(flatten)]
    target: Target,
    /// The episode to append to.
    #[arg(long, short)]
    episode: String,
    /// Create the episode first if it does not exist, with this task.
    #[arg(long)]
    task: Option<String>,
    /// The new episode's domain (with --task).
    #[arg(long, default_value = "")]
    domain: String,
    #[command(flatten)]
    builders: super::builders::BuilderArgs,
}

/// `mesa append`: one `{"action", "observation", "timestamp"?, "index"?,
/// "request_id"?}` per line in, one acknowledgement line per step out,
/// written once the step is on disk (with `"replayed": true` when a line's
/// request id was appended before: nothing is appended again).
pub fn append(args: AppendArgs) -> Result<ExitCode, CliError> {
    let options = args.builders.options();
    let new = args.builders.kinds().plugins(&options)?;
    let memory = LiveMemory::open(&args.target.root)?.waiting_for_writer(args.target.wait);
    let tenant = memory.tenant_builders(&args.target.tenant, new, &options)?;
    if let Some(task) = &args.task {
        let created = tenant.create_episode(&NewEpisode {
            id: args.episode.clone(),
            task: task.clone(),
            domain: args.domain.clone(),
            ..NewEpisode::default()
        });
        match created {
            Ok(()) | Err(LiveError::EpisodeExists { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut bad = 0usize;
    let mut input = stdin.lock();
    let mut buf = Vec::new();
    for n in 0.. {
        buf.clear();
        let read = input
            .read_until(b'\n', &mut buf)
            .map_err(CliError::io("read", "standard input"))?;
        if read == 0 {
            break;
        }
        let parsed = std::str::from_utf8(&buf)
            .map_err(|e| format!("the line is not UTF-8: {e}"))
            .and_then(|line| {
                if line.trim().is_empty() {
                    Ok(None)
                } else {
                    parse_step(line).map(Some)
                }
            });
        let ack = match parsed {
            Ok(None) => continue,
            Ok(Some((step, id))) => {
                match tenant.append_once(&args.episode, vec![step], id.as_deref()) {
                    Ok(done) => {
                        let mut ack = json!({"episode": args.episode, "index": done.indices[0]});
                        if done.replayed {
                            ack["replayed"] = json!(true);
                        }
                        ack
                    }
                    Err(e) => {
                        bad += 1;
                        json!({"line": n + 1, "error": e.to_string()})
                    }
                }
            }
            Err(message) => {
                bad += 1;
                json!({"line": n + 1, "error": message})
            }
        };
        writeln!(out, "{ack}")
            .and_then(|()| out.flush())
            .map_err(CliError::Stdout)?;
    }
    if bad > 0 {
        eprintln!("{bad} line(s) were not appended; their acknowledgements carry an \"error\"");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct StepLine {
    #[serde(default)]
    index: Option<usize>,
    action: String,
    #[serde(default)]
    observation: String,
    #[serde(default)]
    timestamp: Option<String>,
    /// A retry of a line with the same id appends nothing.
    #[serde(default)]
    request_id: Option<String>,
}

/// A line's step and its request id.
fn parse_step(line: &str) -> Result<(NewStep, Option<String>), String> {
    let s: StepLine = serde_json::from_str(line.trim_start_matches('\u{feff}')).map_err(|e| {
        format!("{e} (expected {{\"action\": \"...\", \"observation\": \"...\", \"timestamp\": \"RFC 3339\"?, \"request_id\"?}})")
    })?;
    let step = NewStep {
        index: s.index,
        action: s.action,
        observation: s.observation,
        timestamp: s.timestamp,
    };
    Ok((step, s.request_id))
}

/// `mesa forget ROOT --tenant T --episode ID (--step N | --steps A-B | --all)`
#[derive(clap::Args)]
pub struct ForgetArgs {
    #[command(flatten)]
    target: Target,
    /// The episode (every episode with --before).
    #[arg(long, short, required_unless_present = "before")]
    episode: Option<String>,
    /// Forget, in every episode, the steps whose timestamp is before this
    /// time (RFC 3339, such as 2026-03-01T00:00:00Z): a retention limit.
    #[arg(long, conflicts_with_all = ["episode", "step", "steps", "all", "request_id"])]
    before: Option<String>,
    /// One step.
    #[arg(long, conflicts_with_all = ["steps", "all"])]
    step: Option<usize>,
    /// A range of steps, `A-B` (both included).
    #[arg(long, conflicts_with = "all")]
    steps: Option<String>,
    /// The whole episode.
    #[arg(long)]
    all: bool,
    /// Compact afterwards, so no file holds a byte of what was forgotten.
    #[arg(long)]
    compact: bool,
    /// A request id (a UUID, say): run again with the same id and
    /// arguments (after a crash, say), the command changes nothing and
    /// reports what the first run did.
    #[arg(long)]
    request_id: Option<String>,
}

pub fn forget(args: ForgetArgs) -> Result<ExitCode, CliError> {
    let (Some(episode), None) = (&args.episode, &args.before) else {
        return forget_before(&args);
    };
    let what = match (args.step, &args.steps, args.all) {
        (Some(i), _, _) => Forget::Step(i),
        (None, Some(r), _) => {
            let (a, b) = r
                .split_once('-')
                .and_then(|(a, b)| Some((a.trim().parse().ok()?, b.trim().parse().ok()?)))
                .filter(|(a, b): &(usize, usize)| a <= b)
                .ok_or_else(|| {
                    CliError::Usage(format!("--steps: `{r}` is not a range like 3-7"))
                })?;
            Forget::Range(a, b)
        }
        (None, None, true) => Forget::Episode,
        (None, None, false) => {
            return Err(CliError::Usage(
                "say what to forget: --step N, --steps A-B or --all".into(),
            ))
        }
    };
    let tenant = args.target.open_existing()?;
    let done = tenant.forget_once(episode, what, args.request_id.as_deref())?;
    if args.compact {
        tenant.compact()?;
    }
    eprintln!(
        "{} {} step(s) of `{}`{}",
        if done.replayed {
            "already done by an earlier run with this request id: forgot"
        } else {
            "forgot"
        },
        done.steps,
        episode,
        compacted(args.compact)
    );
    Ok(ExitCode::SUCCESS)
}

/// `mesa forget ROOT --tenant T --before TIME`.
fn forget_before(args: &ForgetArgs) -> Result<ExitCode, CliError> {
    let before = args.before.as_deref().unwrap_or_default();
    let tenant = args.target.open_existing()?;
    let done = tenant.forget_before(before)?;
    if args.compact {
        tenant.compact()?;
    }
    eprintln!(
        "forgot {} step(s) from before {before} in {} episode(s){}",
        done.steps,
        done.episodes,
        compacted(args.compact)
    );
    Ok(ExitCode::SUCCESS)
}

/// How a forget's report ends.
fn compacted(done: bool) -> &'static str {
    if done {
        "; compacted"
    } else {
        "; `mesa compact` removes them from the files"
    }
}

/// `mesa correct ROOT --tenant T --episode ID --step N --action A --observation O`
#[derive(clap::Args)]
pub struct CorrectArgs {
    #[command(flatten)]
    target: Target,
    /// The episode.
    #[arg(long, short)]
    episode: String,
    /// The step to replace.
    #[arg(long)]
    step: usize,
    /// The new action.
    #[arg(long)]
    action: String,
    /// The new observation.
    #[arg(long, default_value = "")]
    observation: String,
    /// The new timestamp (RFC 3339); the old one is kept otherwise.
    #[arg(long)]
    timestamp: Option<String>,
    /// A request id (a UUID, say): run again with the same id and
    /// arguments (after a crash, say), the command changes nothing and
    /// reports what the first run did.
    #[arg(long)]
    request_id: Option<String>,
}

pub fn correct(args: CorrectArgs) -> Result<ExitCode, CliError> {
    let tenant = args.target.open_existing()?;
    let step = NewStep {
        index: None,
        action: args.action,
        observation: args.observation,
        timestamp: args.timestamp,
    };
    let id = args.request_id.as_deref();
    let replayed = tenant.correct_once(&args.episode, args.step, step, id)?;
    eprintln!(
        "{}corrected step {} of `{}`",
        if replayed {
            "already done by an earlier run with this request id: "
        } else {
            ""
        },
        args.step,
        args.episode
    );
    Ok(ExitCode::SUCCESS)
}

/// `mesa update ROOT --tenant T --episode ID [--task T] [--outcome O] [--domain D] [--meta K=V]...`
#[derive(clap::Args)]
pub struct UpdateArgs {
    #[command(flatten)]
    target: Target,
    /// The episode.
    #[arg(long, short)]
    episode: String,
    /// Its task, restated (S's `Task:` line follows; with the LLM
    /// extractor, every step's relations are extracted again under it).
    #[arg(long)]
    task: Option<String>,
    /// How it ended (`success`, `failure`, or your own word).
    #[arg(long)]
    outcome: Option<String>,
    /// Remove the outcome recorded (the episode's end is not known after
    /// all).
    #[arg(long, conflicts_with = "outcome")]
    remove_outcome: bool,
    /// Its domain.
    #[arg(long)]
    domain: Option<String>,
    /// A metadata pair `KEY=VALUE` (repeat it); given, the pairs replace
    /// the episode's whole metadata.
    #[arg(long, value_parser = meta_pair)]
    meta: Vec<(String, String)>,
    /// Empty the episode's metadata.
    #[arg(long, conflicts_with = "meta")]
    clear_meta: bool,
}

fn meta_pair(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

/// Changes an episode's task, outcome, domain or metadata; run again, it
/// changes nothing and says so.
pub fn update(args: UpdateArgs) -> Result<ExitCode, CliError> {
    let tenant = args.target.open_existing()?;
    let mut update = mesa_memory::EpisodeUpdate::default();
    update.outcome = match args.remove_outcome {
        true => Some(None),
        false => args.outcome.map(Some),
    };
    update.task = args.task;
    update.domain = args.domain;
    if !args.meta.is_empty() || args.clear_meta {
        update.meta = Some(args.meta.into_iter().collect());
    }
    if update.is_empty() {
        return Err(CliError::Usage(
            "give --task, --outcome, --remove-outcome, --domain, --meta or --clear-meta: what to change"
                .into(),
        ));
    }
    let changed = tenant.update_episode(&args.episode, &update)?;
    let what = if changed { "updated" } else { "already so:" };
    eprintln!("{what} episode `{}`", args.episode);
    Ok(ExitCode::SUCCESS)
}

/// `mesa compact ROOT --tenant T`
#[derive(clap::Args)]
pub struct CompactArgs {
    #[command(flatten)]
    target: Target,
}

pub fn compact(args: CompactArgs) -> Result<ExitCode, CliError> {
    args.target.open_existing()?.compact()?;
    eprintln!("compacted tenant `{}`", args.target.tenant);
    Ok(ExitCode::SUCCESS)
}

/// `mesa episodes ROOT --tenant T`
#[derive(clap::Args)]
pub struct EpisodesArgs {
    #[command(flatten)]
    target: Target,
    /// One JSON object per episode (with its outcome and metadata), as
    /// `GET /v1/episodes` lists them.
    #[arg(long)]
    json: bool,
}

pub fn episodes(args: EpisodesArgs) -> Result<ExitCode, CliError> {
    for e in args.target.open_lister()?.episodes()? {
        if args.json {
            outln!("{}", serde_json::to_string(&e).unwrap_or_default());
            continue;
        }
        let outcome = e.outcome.as_deref().unwrap_or("");
        outln!(
            "{}\t{} steps\t{}\t{}\t{outcome}",
            e.id,
            e.steps,
            e.domain,
            e.created
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `mesa export ROOT --tenant T [-o FILE]`
#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    target: Target,
    /// Write here (replaced whole, once the export is complete) instead of
    /// standard output.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Writes every episode of the tenant, its steps and kept questions, one
/// line each in the generic layout (docs/DATA.md), which `mesa build DATA
/// --into ROOT --tenant U` imports; reads beside a writer.
pub fn export(args: ExportArgs) -> Result<ExitCode, CliError> {
    let tenant = args.target.open_lister()?;
    let done = match &args.output {
        None => {
            let stdout = std::io::stdout();
            let mut out = std::io::BufWriter::new(stdout.lock());
            tenant.export(&mut out, "standard output")?
        }
        Some(path) => tenant.export_to(path)?,
    };
    eprintln!(
        "exported {} episodes, {} steps and {} questions of tenant `{}`",
        done.episodes, done.steps, done.questions, args.target.tenant
    );
    if done.empty > 0 {
        eprintln!("of them, {} episode(s) without steps", done.empty);
    }
    if done.dropped_evidence > 0 {
        eprintln!(
            "left out {} evidence label(s) of kept questions whose steps were forgotten",
            done.dropped_evidence
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `mesa tenants ROOT`
#[derive(clap::Args)]
pub struct TenantsArgs {
    /// The live memory directory.
    root: PathBuf,
}

/// One line per tenant: its name, episodes, steps and the builders it
/// recorded; each opened to list only, so no builder is made.
pub fn tenants(args: TenantsArgs) -> Result<ExitCode, CliError> {
    let memory = LiveMemory::open_existing(&args.root)?;
    for name in memory.tenants()? {
        let t = memory.lister(&name)?;
        let episodes = t.episodes()?;
        let steps: usize = episodes.iter().map(|e| e.steps).sum();
        let builders = t
            .recorded_builders()?
            .map(|b| b.unwrap_or_else(|| "-".into()));
        outln!(
            "{name}\t{} episodes\t{steps} steps\t{}",
            episodes.len(),
            builders.join(" ")
        );
    }
    Ok(ExitCode::SUCCESS)
}
