//! `mesa query STORE --episode ID --policy P "question"`: select, retrieve
//! and compose evidence for a question; or for a whole question file.

use crate::backend::{load, EngineKind};
use crate::error::CliError;
use crate::source::read;
use mesa_core::Mask;
use mesa_memory::dataset::Question as StoredQuestion;
use mesa_memory::{Episode, PluginOptions, Store};
use mesa_query::{Answer, Asker, Chooser, QueryEngine, Question, SharedChooser, Timings};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::Format;

#[derive(clap::Args)]
pub struct Args {
    /// The store (from `mesa build`).
    store: PathBuf,
    /// The question (with --episode; with --tenant alone, asked of every
    /// episode).
    question: Option<String>,
    /// The episode the question is about.
    #[arg(long, short)]
    episode: Option<String>,
    /// With --tenant and no --episode: how many episodes to show (1 to
    /// 100), best first (by the fusion of two ranks: BM25 of the question
    /// over their evidence, and the word index's best step).
    #[arg(long, default_value_t = mesa_query::DEFAULT_LIMIT as u64, value_parser = clap::value_parser!(u64).range(1..=mesa_query::MAX_LIMIT as u64))]
    limit: u64,
    /// With --tenant and no --episode: how many episodes to ask at most,
    /// those whose steps share the most words with the question (0: every
    /// one).
    #[arg(long, default_value_t = mesa_query::DEFAULT_CANDIDATES)]
    candidates: usize,
    /// The policy: a `.mesa`, `.wasm` or `.cwasm`.
    #[arg(long, short, conflicts_with = "structures")]
    policy: Option<String>,
    /// Read these structures instead of asking a policy, e.g. `S,T` or `all`.
    #[arg(long, short)]
    structures: Option<String>,
    /// The question type, if the policy may see it.
    #[arg(long)]
    qtype: Option<String>,
    /// Answer every question of a JSONL file: `{"episode": "12", "question": "...", "qtype": "A"}`
    /// per line (`id` optional); one JSON result per line out.
    #[arg(long, conflicts_with_all = ["question", "all"])]
    questions: Option<String>,
    /// Answer every question stored with the store's episodes (with
    /// --tenant: kept with the tenant's episodes, as `mesa build --into`
    /// keeps a dataset's; with --episode too, that episode's only).
    #[arg(long, conflicts_with = "question")]
    all: bool,
    /// With --all: let the policy see each question's stored type.
    #[arg(long)]
    with_qtype: bool,
    /// List the store's episodes and stop.
    #[arg(long)]
    list: bool,
    /// Output format for one question (question files always give JSON lines).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// The policy engine.
    #[arg(long, value_enum, default_value_t)]
    engine: EngineKind,
    /// The MiniLM directory, for a store built with `--embedder minilm`
    /// (default: MESA_MINILM_DIR, else models/all-MiniLM-L6-v2).
    #[arg(long)]
    minilm_dir: Option<PathBuf>,
    /// STORE is a live memory directory (`mesa append`); ask this tenant.
    #[arg(long)]
    tenant: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.tenant.is_some() {
        return run_live(&args);
    }
    let options = PluginOptions::with_minilm_dir(args.minilm_dir.clone());
    let store = Store::open_recorded(&args.store, &options)?;
    if args.list {
        for e in &store.manifest().episodes {
            outln!("{}\t{} steps\t{} questions", e.id, e.steps, e.questions);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let many = args.questions.is_some() || args.all;
    let mut engine = QueryEngine::new(&store, chooser(&args, many)?);
    if many {
        let (items, bad) = match &args.questions {
            Some(path) => from_file(path)?,
            None => {
                let episodes = store.episodes().iter().map(|m| &*m.episode);
                (
                    stored(&args, episodes.map(|e| (e.id.clone(), e.questions.clone()))),
                    0,
                )
            }
        };
        return run_many(items, bad, &mut |q| Ok(engine.answer(q)?));
    }
    let (episode, question) = single(&args)?;
    let q = Question {
        episode,
        text: question,
        qtype: args.qtype.as_deref(),
    };
    let answer = engine.answer(&q)?;
    print(
        &args,
        store.episode(q.episode).map(|m| &*m.episode),
        &q,
        &answer,
    );
    Ok(ExitCode::SUCCESS)
}

/// `mesa query ROOT --tenant T --episode ID "question"`: a live memory.
fn run_live(args: &Args) -> Result<ExitCode, CliError> {
    let target = crate::cmd::live::Target {
        root: args.store.clone(),
        tenant: args.tenant.clone().unwrap_or_default(),
        wait: std::time::Duration::ZERO,
    };
    if args.list {
        return Err(CliError::Usage(
            "with --tenant, `mesa episodes ROOT --tenant T` lists the episodes".into(),
        ));
    }
    let tenant = target.open_reader()?;
    if let (None, Some(question), false, None) =
        (&args.episode, &args.question, args.all, &args.questions)
    {
        return run_across(args, &tenant, question);
    }
    let many = args.questions.is_some() || args.all;
    let mut asker = Asker::new(chooser(args, many)?);
    if many {
        let (items, bad) = match &args.questions {
            Some(path) => from_file(path)?,
            None => {
                // Every episode's kept questions, or one episode's.
                let ids = match &args.episode {
                    Some(e) => vec![e.clone()],
                    None => tenant.episodes()?.into_iter().map(|e| e.id).collect(),
                };
                let mut kept = Vec::with_capacity(ids.len());
                for id in ids {
                    let questions = tenant.questions(&id)?;
                    kept.push((id, questions));
                }
                (stored(args, kept.into_iter()), 0)
            }
        };
        return run_many(items, bad, &mut |q| {
            let memory = tenant.memory(q.episode)?;
            Ok(asker.ask(&memory, q.text, q.qtype)?)
        });
    }
    let (episode, question) = single(args)?;
    let q = Question {
        episode,
        text: question,
        qtype: args.qtype.as_deref(),
    };
    let memory = tenant.memory(episode)?;
    let answer = asker.ask(&memory, question, q.qtype)?;
    print(args, Some(&memory.episode), &q, &answer);
    Ok(ExitCode::SUCCESS)
}

/// `mesa query ROOT --tenant T "question"`: its candidates asked, the best
/// `--limit` printed first ([`mesa_query::ask_across`]).
fn run_across(
    args: &Args,
    tenant: &mesa_memory::Tenant,
    question: &str,
) -> Result<ExitCode, CliError> {
    let chooser = SharedChooser::policy(Asker::new(chooser(args, true)?));
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let qtype = args.qtype.as_deref();
    let options = mesa_query::AcrossOptions::default()
        .limit(limit)
        .asking_at_most(args.candidates)
        .qtype(qtype);
    let across = mesa_query::ask_across(tenant, &chooser, question, &options)?;
    if let Format::Json = args.format {
        outln!("{}", across.to_json(question, qtype, true));
        return Ok(ExitCode::SUCCESS);
    }
    outln!(
        "{} of {} episode(s) asked; the best {} by relevance (BM25 over their evidence and the word index, fused)",
        across.searched,
        across.considered,
        across.found.len()
    );
    for (episode, why) in &across.skipped {
        eprintln!("warning: episode `{episode}` left out: {why}");
    }
    for f in &across.found {
        outln!();
        outln!("episode {}: relevance {:.2}", f.episode, f.relevance);
        let q = Question {
            episode: &f.episode,
            text: question,
            qtype,
        };
        print_human(None, &q, &f.answer);
    }
    Ok(ExitCode::SUCCESS)
}

fn single(args: &Args) -> Result<(&str, &str), CliError> {
    match (&args.episode, &args.question) {
        (Some(e), Some(q)) => Ok((e, q)),
        _ => Err(CliError::Usage(
            "give --episode ID and the question, or a question file with --questions, or --all"
                .into(),
        )),
    }
}

fn print(args: &Args, episode: Option<&Episode>, q: &Question<'_>, answer: &Answer) {
    match args.format {
        Format::Json => outln!("{}", answer.to_json(q, true)),
        Format::Human => print_human(episode, q, answer),
    }
}

/// The policy or the fixed structures the flags name.
fn chooser(args: &Args, many: bool) -> Result<Chooser, CliError> {
    Ok(match (&args.policy, &args.structures) {
        (Some(p), _) => {
            let queries = if many { u64::MAX } else { 1 };
            Chooser::Policy(Box::new(load(p, args.engine, queries)?))
        }
        (None, Some(s)) => Chooser::Fixed(
            s.parse::<Mask>()
                .map_err(|e| CliError::Usage(format!("--structures: {e}")))?,
        ),
        (None, None) => return Err(CliError::Usage(
            "give a policy with --policy P.mesa, or the structures to read with --structures S,T"
                .into(),
        )),
    })
}

fn print_human(episode: Option<&Episode>, q: &Question<'_>, a: &Answer) {
    if let Some(e) = episode {
        outln!("episode {} ({}, {} steps)", e.id, e.domain, e.steps.len());
    }
    outln!("question: {}", q.text);
    let decided = match &a.rule_name {
        Some(r) => format!("decided by rule {r}"),
        None => "no rule changed the default".into(),
    };
    outln!("mask: {}  ({decided})", a.selection.mask);
    if !a.previews.is_empty() {
        let p: Vec<String> = a.previews.iter().map(|(k, v)| format!("{k}={v}")).collect();
        outln!("previews: {}", p.join(" "));
    }
    let per: Vec<String> = a
        .composition
        .sections
        .iter()
        .map(|e| format!("{} {}", e.structure.letter(), e.tokens()))
        .collect();
    outln!(
        "evidence: {} tokens ({}), {:.2} ms",
        a.composition.tokens,
        per.join(", "),
        a.timings.total().as_secs_f64() * 1e3
    );
    for section in &a.composition.sections {
        outln!();
        outln!("{}", section.header());
        if section.items.is_empty() {
            outln!("  (nothing retrieved)");
        }
        for item in &section.items {
            let times: Vec<&str> = a.times_of(&item.steps).into_iter().flatten().collect();
            let when = match (times.first(), times.last()) {
                (Some(f), Some(l)) if f == l => format!(" · {f}"),
                (Some(f), Some(l)) => format!(" · {f} to {l}"),
                _ => String::new(),
            };
            outln!(
                "[{}] steps {}{when} · score {:.3} · {} tokens",
                item.structure.letter(),
                step_list(&item.steps),
                item.score,
                item.tokens
            );
            for line in item.text.lines() {
                outln!("    {line}");
            }
        }
    }
}

/// `3-5, 9` for steps 3, 4, 5, 9.
fn step_list(steps: &[usize]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < steps.len() {
        let mut j = i;
        while j + 1 < steps.len() && steps[j + 1] == steps[j] + 1 {
            j += 1;
        }
        parts.push(if j > i {
            format!("{}-{}", steps[i], steps[j])
        } else {
            steps[i].to_string()
        });
        i = j + 1;
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

#[derive(serde::Deserialize)]
struct Line {
    #[serde(default)]
    id: Option<serde_json::Value>,
    episode: serde_json::Value,
    question: String,
    #[serde(default)]
    qtype: Option<String>,
}

/// One question of a batch: its id, episode, text and type.
type Item = (serde_json::Value, String, String, Option<String>);

/// The questions of a JSONL file, and how many of its lines did not read
/// (each reported on standard error).
fn from_file(path: &str) -> Result<(Vec<Item>, usize), CliError> {
    let (mut items, mut bad) = (Vec::new(), 0usize);
    let bytes = read(path)?;
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_start_matches('\u{feff}');
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(text) {
            Ok(l) => {
                let episode = match l.episode {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                items.push((l.id.unwrap_or(json!(n + 1)), episode, l.question, l.qtype));
            }
            Err(e) => {
                bad += 1;
                eprintln!("error: {path}:{}: {e} (expected {{\"episode\": \"ID\", \"question\": \"...\"}})", n + 1);
            }
        }
    }
    Ok((items, bad))
}

/// The questions stored with episodes (`--all`), with their types only
/// under `--with-qtype`.
fn stored(args: &Args, episodes: impl Iterator<Item = (String, Vec<StoredQuestion>)>) -> Vec<Item> {
    let mut items = Vec::new();
    for (episode, questions) in episodes {
        for q in questions {
            let qtype = if args.with_qtype { q.qtype } else { None };
            items.push((json!(q.id), episode.clone(), q.question, qtype));
        }
    }
    items
}

/// Answers every item with `answer`, one JSON line each, and reports the
/// totals; `bad` lines failed already.
fn run_many(
    items: Vec<Item>,
    mut bad: usize,
    answer: &mut dyn FnMut(&Question<'_>) -> Result<Answer, CliError>,
) -> Result<ExitCode, CliError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut totals: Vec<Timings> = Vec::with_capacity(items.len());
    let (mut tokens, mut structures) = (0usize, 0usize);
    for (id, episode, text, qtype) in &items {
        let q = Question {
            episode,
            text,
            qtype: qtype.as_deref(),
        };
        let line = match answer(&q) {
            Ok(a) => {
                totals.push(a.timings);
                tokens += a.composition.tokens;
                structures += a.selection.mask.len() as usize;
                let mut v = a.to_json(&q, false);
                v["id"] = id.clone();
                v
            }
            Err(e) => {
                bad += 1;
                json!({"id": id, "episode": episode, "error": e.to_string()})
            }
        };
        writeln!(out, "{line}").map_err(CliError::Stdout)?;
    }
    out.flush().map_err(CliError::Stdout)?;
    report(&totals, tokens, structures);
    if bad > 0 {
        eprintln!("{bad} question(s) could not be answered; their lines carry an \"error\"");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Summary on standard error: means and latency percentiles.
fn report(totals: &[Timings], tokens: usize, structures: usize) {
    let n = totals.len();
    if n == 0 {
        return;
    }
    let pct = |f: &dyn Fn(&Timings) -> std::time::Duration, p: f64| {
        let mut v: Vec<f64> = totals.iter().map(|t| f(t).as_secs_f64() * 1e3).collect();
        v.sort_by(f64::total_cmp);
        v[((n - 1) as f64 * p).round() as usize]
    };
    eprintln!(
        "{n} question(s): {:.2} structures and {:.0} evidence tokens on average",
        structures as f64 / n as f64,
        tokens as f64 / n as f64
    );
    type Stage = (&'static str, fn(&Timings) -> std::time::Duration);
    let stages: [Stage; 6] = [
        ("prepare", |t| t.prepare),
        ("previews", |t| t.previews),
        ("select", |t| t.select),
        ("retrieve", |t| t.retrieve),
        ("compose", |t| t.compose),
        ("total", |t| t.total()),
    ];
    for (name, f) in stages {
        eprintln!(
            "  {name:<9} p50 {:.3} ms  p99 {:.3} ms",
            pct(&f, 0.5),
            pct(&f, 0.99)
        );
    }
}
