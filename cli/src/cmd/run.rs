//! `mesa run` and `mesa explain`.

use super::Format;
use crate::backend::{failed, load, stage, EngineKind};
use crate::error::CliError;
use crate::source::read;
use mesa_compiler::interp::{apply_preview_assignment, apply_shown, parse_json_line};
use mesa_compiler::{explain as explain_text, Input, Outcome};
use mesa_runtime::AnyEngine;
use mesa_runtime::PolicyError;
use serde_json::json;
use std::io::Write;
use std::process::ExitCode;

/// The question and its metadata, shared by `run` and `explain`.
#[derive(clap::Args)]
pub struct QueryArgs {
    /// The question to select for.
    #[arg(long, short)]
    query: Option<String>,
    /// The episode's domain (e.g. text2sql).
    #[arg(long)]
    domain: Option<String>,
    /// The episode's task description.
    #[arg(long)]
    task: Option<String>,
    /// The question type (optional metadata).
    #[arg(long)]
    qtype: Option<String>,
    /// A preview value, `K.feature=VALUE` (e.g. R.tokens=4000); repeatable.
    #[arg(long = "preview", value_name = "K.FEATURE=VALUE")]
    previews: Vec<String>,
    /// What each of the 31 non-empty subsets shows, for a trading policy:
    /// `words=C1,...,C31` or `steps=C1,...,C31` in mask order; repeatable.
    #[arg(long = "shown", value_name = "UNIT=COUNTS")]
    shown: Vec<String>,
}

impl QueryArgs {
    /// The input these flags describe, with `query` as the question.
    fn input(&self, query: String) -> Result<Input, CliError> {
        let mut input = Input {
            query,
            task: self.task.clone(),
            domain: self.domain.clone(),
            qtype: self.qtype.clone(),
            ..Input::default()
        };
        for p in &self.previews {
            apply_preview_assignment(&mut input.previews, p)
                .map_err(|e| CliError::Usage(format!("--preview: {e}")))?;
        }
        for a in &self.shown {
            let usage = |why: String| CliError::Usage(format!("--shown `{a}`: {why}"));
            let (unit, counts) = a
                .split_once('=')
                .ok_or_else(|| usage("write UNIT=C1,...,C31 (e.g. words=3,0,...)".into()))?;
            let counts = counts
                .split(',')
                .map(|c| c.trim().parse::<f64>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| usage(format!("a count is not a number ({e})")))?;
            apply_shown(&mut input.previews, unit, counts).map_err(|e| usage(e.to_string()))?;
        }
        Ok(input)
    }

    /// Fills what a JSONL line left out from the flags.
    fn defaults_into(&self, input: &mut Input) {
        if input.domain.is_none() {
            input.domain.clone_from(&self.domain);
        }
        if input.task.is_none() {
            input.task.clone_from(&self.task);
        }
        if input.qtype.is_none() {
            input.qtype.clone_from(&self.qtype);
        }
    }
}

#[derive(clap::Args)]
pub struct Args {
    /// The policy: a `.mesa` source, or a compiled `.wasm` / `.cwasm`.
    file: String,
    #[command(flatten)]
    query: QueryArgs,
    /// Read questions from a JSONL file (`-` for standard input) and write one
    /// result per line.
    #[arg(long, conflicts_with = "query")]
    input: Option<String>,
    /// Output format for a single query (JSONL input always gives JSON).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Include the evaluation trace in JSON output.
    #[arg(long)]
    trace: bool,
    /// The engine: the compiled WebAssembly module in the sandbox, or the
    /// reference interpreter.
    #[arg(long, value_enum, default_value_t)]
    engine: EngineKind,
}

#[derive(clap::Args)]
pub struct ExplainArgs {
    /// The policy (`.mesa`).
    file: String,
    #[command(flatten)]
    query: QueryArgs,
}

fn result_json(backend: &AnyEngine, outcome: &Outcome, trace: bool) -> serde_json::Value {
    let rule = outcome.rule.map(|i| backend.rule_name(i));
    let mut v = json!({
        "mask": outcome.mask,
        "bits": outcome.mask.bits(),
        "rule": rule,
    });
    if trace {
        v["trace"] = serde_json::to_value(&outcome.trace).unwrap_or(serde_json::Value::Null);
    }
    v
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if let Some(path) = &args.input {
        let bytes = read(path)?;
        let lines = bytes.split(|&b| b == b'\n').count() as u64;
        let mut backend = load(&args.file, args.engine, lines)?;
        return run_lines(&mut backend, path, &bytes, &args);
    }
    let mut backend = load(&args.file, args.engine, 1)?;
    let Some(query) = args.query.query.clone() else {
        return Err(CliError::Usage(
            "give a question with --query, or a JSONL file with --input".into(),
        ));
    };
    let outcome = backend.select_traced(&args.query.input(query)?)?;
    match args.format {
        Format::Human => {
            let decided = match outcome.rule {
                Some(i) => match backend.rule_line(i) {
                    Some(line) => format!("decided by rule {} (line {line})", backend.rule_name(i)),
                    None => format!("decided by rule {}", backend.rule_name(i)),
                },
                None => "no rule changed the default".into(),
            };
            outln!("{}  ({decided})", outcome.mask);
        }
        Format::Json => outln!("{}", result_json(&backend, &outcome, args.trace)),
    }
    Ok(ExitCode::SUCCESS)
}

fn run_lines(
    backend: &mut AnyEngine,
    path: &str,
    bytes: &[u8],
    args: &Args,
) -> Result<ExitCode, CliError> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut bad = 0usize;
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let line_no = n + 1;
        let text = String::from_utf8_lossy(line);
        if text.trim().is_empty() {
            continue;
        }
        let answer =
            parse_json_line(&text)
                .map_err(|e| e.to_string())
                .and_then(|(id, mut input)| {
                    args.query.defaults_into(&mut input);
                    let outcome = backend.select_traced(&input).map_err(|e| e.to_string())?;
                    let mut v = result_json(backend, &outcome, args.trace);
                    if let Some(id) = id {
                        v["id"] = id;
                    }
                    Ok(v)
                });
        let result = answer.unwrap_or_else(|e| {
            bad += 1;
            eprintln!("error: {path}:{line_no}: {e}");
            json!({ "line": line_no, "error": e })
        });
        writeln!(out, "{result}").map_err(CliError::Stdout)?;
    }
    out.flush().map_err(CliError::Stdout)?;
    if bad > 0 {
        eprintln!(
            "{bad} line(s) of `{path}` could not be answered; their results carry an \"error\""
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn explain(args: ExplainArgs) -> Result<ExitCode, CliError> {
    let selector = match stage(&args.file)?.selector() {
        Ok(selector) => selector,
        Err(PolicyError::InterpNeedsSource) => {
            return Err(CliError::Usage(format!(
                "`{}`: explain needs the policy's `.mesa` source, not a compiled module",
                args.file
            )))
        }
        Err(e) => return Err(failed(&args.file, e)),
    };
    let Some(query) = args.query.query.clone() else {
        return Err(CliError::Usage("give a question with --query".into()));
    };
    let input = args.query.input(query)?;
    let outcome = selector.select(&input);
    out!("{}", explain_text(&selector, &input, &outcome));
    Ok(ExitCode::SUCCESS)
}
