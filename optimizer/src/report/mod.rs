//! Reports: `mesa eval`'s Markdown and JSON, and the optimizer's RUN/
//! files (report.md, report.json, best.mesa, best.wasm, pareto.svg).

use crate::archive::{Archive, ArchiveEntry, Recovery, RunSettings};
use crate::baselines::BaselineResult;
use crate::eval::{Breakdown, EvalReport, InputsSeen, Metrics, MetricsAgg, Problem, Stat};
use crate::propose::DirectionStat;
use crate::search::OptimizeOptions;
use crate::svg::{pareto_svg, Point, PointKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

mod markdown;

fn pm(s: &Stat, digits: usize) -> String {
    if s.values.len() > 1 {
        format!("{:.d$} ± {:.d$}", s.mean, s.std, d = digits)
    } else {
        format!("{:.d$}", s.mean, d = digits)
    }
}

fn agg_row(name: &str, detail: &str, m: &MetricsAgg) -> String {
    format!(
        "| {name} | {} | {} | {} | {} | {} |",
        pm(&m.objective, 4),
        pm(&m.j, 4),
        pm(&m.c, 0),
        pm(&m.structures, 2),
        detail.replace('|', "\\|")
    )
}

fn metrics_row(name: &str, detail: &str, m: &Metrics) -> String {
    format!(
        "| {name} | {:.4} | {:.4} | {:.0} | {:.2} | {} |",
        m.objective,
        m.j,
        m.c,
        m.structures,
        detail.replace('|', "\\|")
    )
}

fn breakdown_md(s: &mut String, title: &str, b: &Breakdown) {
    for (what, groups) in [("domain", &b.domain), ("question type", &b.qtype)] {
        let _ = writeln!(s, "\n**{title} by {what}**\n\n| {what} | n | objective | J | C | structures |\n| --- | --- | --- | --- | --- | --- |");
        for (k, m) in groups {
            let _ = writeln!(
                s,
                "| {k} | {} | {:.4} | {:.4} | {:.0} | {:.2} |",
                m.n, m.objective, m.j, m.c, m.structures
            );
        }
    }
}

/// `mesa eval`'s Markdown.
pub fn eval_markdown(r: &EvalReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Evaluation of `{}` (policy \"{}\")\n",
        r.policy.path, r.policy.name
    );
    let _ = writeln!(
        s,
        "- sweep: `{}` ({}, utility {}, {} labelled of {} questions)",
        r.sweep,
        r.header.dataset,
        r.header.utility.name(),
        r.labelled,
        r.header.questions
    );
    let _ = writeln!(
        s,
        "- split: {} (episode-level 2:2:6), seeds {:?}; mean ± sample std over seeds",
        r.split, r.seeds
    );
    let _ = writeln!(s, "- objective: J - lambda * C with lambda = {}", r.lambda);
    let _ = writeln!(s, "- inputs the policy saw: {}", r.inputs.describe());
    let _ = writeln!(
        s,
        "- engine: compiled Wasm in the sandbox; {:.1} ms to select all {} labelled questions",
        r.policy.select_ms, r.labelled
    );
    for n in &r.notes {
        let _ = writeln!(s, "- note: {n}");
    }
    let _ = writeln!(s, "\n| policy | objective | J | C (tokens) | structures | detail |\n| --- | --- | --- | --- | --- | --- |");
    let _ = writeln!(
        s,
        "{}",
        agg_row(&format!("**{}**", r.policy.name), "", &r.policy.metrics)
    );
    for b in &r.baselines {
        let _ = writeln!(s, "{}", agg_row(&b.name, &b.detail, &b.metrics));
    }
    breakdown_md(&mut s, "Policy", &r.policy.breakdown);
    s
}

/// Distribution of a timing, in milliseconds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Dist {
    /// Samples.
    pub n: usize,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub median: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Largest.
    pub max: f64,
}

impl Dist {
    /// The distribution of `v`.
    pub fn of(mut v: Vec<f64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let at = |q: f64| v[(((n - 1) as f64) * q).round() as usize];
        Dist {
            n,
            mean: v.iter().sum::<f64>() / n as f64,
            median: at(0.5),
            p95: at(0.95),
            max: v[n - 1],
        }
    }
}

/// Candidate timings of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Timings {
    /// Check + compile + instantiate + evaluate on val (the candidate
    /// compile time), per evaluated candidate.
    pub turnaround_ms: Dist,
    /// Parse and check.
    pub check_ms: Dist,
    /// Wasm code generation.
    pub compile_ms: Dist,
    /// wasmtime compile + instantiate.
    pub instantiate_ms: Dist,
    /// Selecting the val split.
    pub eval_val_ms: Dist,
    /// Selecting the train split.
    pub eval_train_ms: Dist,
    /// Proposing (fitting, or waiting for the LLM).
    pub propose_ms: Dist,
    /// The whole run, in seconds (this process; a resumed run counts from the resume).
    pub run_seconds: f64,
}

/// Candidate counts of a run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Counts {
    /// Archive entries.
    pub total: usize,
    /// Valid ones (duplicates included).
    pub valid: usize,
    /// Valid and new.
    pub evaluated: usize,
    /// The same source as an earlier candidate.
    pub duplicates: usize,
    /// Endpoint failures.
    pub endpoint_failures: usize,
    /// Failures by stage.
    pub failed_by_stage: BTreeMap<String, usize>,
}

/// How often LLM candidates were valid.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LlmValidity {
    /// LLM candidates with a reply (endpoint failures excluded).
    pub candidates: usize,
    /// Valid as first written.
    pub first_try: usize,
    /// Valid after the diagnostics' suggestions were applied.
    pub autofixed: usize,
    /// Valid after the repair round.
    pub repaired: usize,
    /// Share valid at the first try.
    pub share_first_try: f64,
    /// Share valid after suggestions and the repair round.
    pub share_after_repair: f64,
}

/// A row of the archive's leaderboard.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopRow {
    /// Archive id.
    pub id: usize,
    /// Iteration.
    pub iteration: usize,
    /// Kind.
    pub mode: String,
    /// Direction.
    pub direction: String,
    /// Train metrics.
    pub train: Option<Metrics>,
    /// Val metrics.
    pub val: Option<Metrics>,
}

/// The frozen best candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Best {
    /// Archive id.
    pub id: usize,
    /// Iteration.
    pub iteration: usize,
    /// Direction.
    pub direction: String,
    /// Kind.
    pub mode: String,
    /// Train metrics.
    pub train: Option<Metrics>,
    /// Val metrics.
    pub val: Option<Metrics>,
    /// Test metrics (measured once, at the end).
    pub test: Metrics,
    /// Test breakdown.
    pub breakdown: Breakdown,
    /// The policy.
    pub source: String,
    /// The choice rule that picked it (`best-val`, `one-se`).
    #[serde(default)]
    pub chosen_by: String,
    /// Each rule's support and gain on train and val.
    #[serde(default)]
    pub rules: Vec<crate::rules::RuleStat>,
}

/// The optimizer's report (RUN/report.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptimizeReport {
    /// The run's settings.
    pub settings: RunSettings,
    /// Iterations asked for.
    pub iterations: usize,
    /// What policies saw.
    pub inputs: InputsSeen,
    /// Labelled questions per split (train, val, test).
    pub split_questions: [usize; 3],
    /// Episodes per split.
    pub split_episodes: [usize; 3],
    /// Candidate counts.
    pub counts: Counts,
    /// LLM validity, for the LLM proposer.
    pub llm: Option<LlmValidity>,
    /// Timings.
    pub timings: Timings,
    /// UCB statistics at the end.
    pub directions: Vec<DirectionStat>,
    /// The frozen best.
    pub best: Best,
    /// Baselines on test.
    pub baselines_test: Vec<BaselineResult>,
    /// Baselines on val (for the plot, comparable with the archive).
    pub baselines_val: Vec<BaselineResult>,
    /// The ten best candidates by val objective.
    pub top: Vec<TopRow>,
    /// A cut-off archive line dropped on resume.
    pub recovered: Option<Recovery>,
    /// How the candidates' val objectives relate to their test objectives.
    #[serde(default)]
    pub val_test: Option<crate::choice::ValTest>,
}

impl OptimizeReport {
    /// Gathers the report.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        settings: &RunSettings,
        opts: &OptimizeOptions,
        problem: &Problem,
        splits: &crate::split::Splits,
        split_questions: [usize; 3],
        archive: &Archive,
        best: &ArchiveEntry,
        test: Metrics,
        breakdown: Breakdown,
        baselines_test: Vec<BaselineResult>,
        baselines_val: Vec<BaselineResult>,
        directions: Vec<DirectionStat>,
        run_seconds: f64,
    ) -> OptimizeReport {
        let entries = &archive.entries;
        let evaluated: Vec<&ArchiveEntry> = entries
            .iter()
            .filter(|e| e.valid && e.duplicate_of.is_none())
            .collect();
        let counts = Counts::of(entries);
        let llm = (opts.proposer.name() == "llm").then(|| LlmValidity::of(entries));
        let timings = Timings::of(entries, &evaluated, run_seconds);
        let top = top_rows(evaluated);
        OptimizeReport {
            settings: settings.clone(),
            iterations: opts.iterations,
            inputs: problem.inputs_seen(),
            split_questions,
            split_episodes: splits.episode_counts(),
            counts,
            llm,
            timings,
            directions,
            best: Best {
                id: best.id,
                iteration: best.iteration,
                direction: best.direction.clone().unwrap_or_else(|| "-".into()),
                mode: best.mode.name().into(),
                train: best.train,
                val: best.val,
                test,
                breakdown,
                source: best.source.clone().unwrap_or_default(),
                chosen_by: opts.choice.name().to_string(),
                rules: Vec::new(),
            },
            baselines_test,
            baselines_val,
            top,
            recovered: archive.recovered.clone(),
            val_test: None,
        }
    }

    /// The Pareto plot's points: the archive's valid candidates and the
    /// baselines on val, and the best.
    pub fn plot_points(&self, archive: &Archive) -> Vec<Point> {
        let mut pts: Vec<Point> = archive
            .entries
            .iter()
            .filter(|e| e.valid && e.duplicate_of.is_none() && e.id != self.best.id)
            .filter_map(|e| e.val)
            .map(|m| Point {
                x: m.c,
                y: m.j,
                label: None,
                kind: PointKind::Candidate,
            })
            .collect();
        for b in &self.baselines_val {
            pts.push(Point {
                x: b.metrics.c,
                y: b.metrics.j,
                label: Some(b.name.clone()),
                kind: PointKind::Baseline,
            });
        }
        if let Some(v) = self.best.val {
            pts.push(Point {
                x: v.c,
                y: v.j,
                label: Some(format!("best #{}", self.best.id)),
                kind: PointKind::Best,
            });
        }
        pts
    }
}

impl Counts {
    /// The archive's candidates by outcome.
    fn of(entries: &[ArchiveEntry]) -> Counts {
        let mut counts = Counts {
            total: entries.len(),
            ..Counts::default()
        };
        for e in entries {
            if e.valid {
                counts.valid += 1;
            }
            if e.duplicate_of.is_some() {
                counts.duplicates += 1;
            } else if e.valid {
                counts.evaluated += 1;
            }
            if e.endpoint_failed() {
                counts.endpoint_failures += 1;
            } else if let Some(f) = &e.failure {
                *counts
                    .failed_by_stage
                    .entry(f.stage.name().to_string())
                    .or_default() += 1;
            }
        }
        counts
    }
}

impl LlmValidity {
    /// How often the LLM's candidates were valid, at the first try and after
    /// repair (endpoint failures left out).
    fn of(entries: &[ArchiveEntry]) -> LlmValidity {
        let entries: Vec<&ArchiveEntry> = entries
            .iter()
            .filter(|e| e.llm.is_some() && !e.endpoint_failed())
            .collect();
        let n = entries.len();
        let count = |f: fn(&crate::propose::LlmTrace) -> bool| {
            entries
                .iter()
                .filter(|e| e.llm.as_ref().is_some_and(f))
                .count()
        };
        let first_try = count(|l| l.first_try_valid);
        let valid = count(|l| l.valid);
        LlmValidity {
            candidates: n,
            first_try,
            autofixed: count(|l| l.autofixed),
            repaired: count(|l| l.repaired),
            share_first_try: first_try as f64 / n.max(1) as f64,
            share_after_repair: valid as f64 / n.max(1) as f64,
        }
    }
}

impl Timings {
    /// Each stage's times over the evaluated candidates (proposing over every
    /// candidate after the seeds).
    fn of(entries: &[ArchiveEntry], evaluated: &[&ArchiveEntry], run_seconds: f64) -> Timings {
        let col = |f: fn(&ArchiveEntry) -> f64| Dist::of(evaluated.iter().map(|e| f(e)).collect());
        Timings {
            turnaround_ms: col(|e| e.timings.turnaround_ms()),
            check_ms: col(|e| e.timings.check_ms),
            compile_ms: col(|e| e.timings.compile_ms),
            instantiate_ms: col(|e| e.timings.instantiate_ms),
            eval_val_ms: col(|e| e.timings.eval_val_ms),
            eval_train_ms: col(|e| e.timings.eval_train_ms),
            propose_ms: Dist::of(
                entries
                    .iter()
                    .filter(|e| e.iteration > 0)
                    .map(|e| e.propose_ms)
                    .collect(),
            ),
            run_seconds,
        }
    }
}

/// The ten best evaluated candidates by val objective (ties to the older).
fn top_rows(mut ranked: Vec<&ArchiveEntry>) -> Vec<TopRow> {
    ranked.sort_by(|a, b| {
        b.val_objective()
            .unwrap_or(f64::MIN)
            .total_cmp(&a.val_objective().unwrap_or(f64::MIN))
            .then(a.id.cmp(&b.id))
    });
    ranked
        .iter()
        .take(10)
        .map(|e| TopRow {
            id: e.id,
            iteration: e.iteration,
            mode: e.mode.name().into(),
            direction: e.direction.clone().unwrap_or_else(|| "-".into()),
            train: e.train,
            val: e.val,
        })
        .collect()
}

/// Writes RUN/report.json, report.md, best.mesa, best.wasm and pareto.svg.
pub fn write_run_report(
    out: &Path,
    report: &OptimizeReport,
    archive: &Archive,
    best_source: &str,
    best_wasm: &[u8],
) -> Result<(), (String, std::io::Error)> {
    let write = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|e| (path.display().to_string(), e))
    };
    let json = serde_json::to_string_pretty(report)
        .map_err(|e| ("report.json".to_string(), std::io::Error::other(e)))?;
    write("report.json", (json + "\n").as_bytes())?;
    write("report.md", report.to_markdown().as_bytes())?;
    write("best.mesa", best_source.as_bytes())?;
    write("best.wasm", best_wasm)?;
    let title = format!(
        "Tokens against utility on val (lambda {}, {} candidates)",
        report.settings.lambda, report.counts.evaluated
    );
    write(
        "pareto.svg",
        pareto_svg(&title, &report.plot_points(archive)).as_bytes(),
    )?;
    Ok(())
}
