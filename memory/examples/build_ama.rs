//! Builds a store from a dataset, opens it, and times every question end to
//! end (all five structures retrieved, then composed).
//!
//! ```text
//! cargo run --release -p mesa-memory --example build_ama -- \
//!     ../shared/data/ama-bench/open_end_qa_set.jsonl /tmp/ama-store
//! ```
//!
//! Pass `--open-only` to skip the build and time an existing store, and
//! `--evidence-bytes N` to change `Config::evidence_text_bytes`.

use mesa_core::{Mask, PreviewKey, Structure};
use mesa_memory::{BuildOptions, Config, Progress, Retrieval, Store};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The command line: the dataset, the store's folder and the options.
struct Args {
    data: PathBuf,
    out: PathBuf,
    open_only: bool,
    show: Option<String>,
    config: Config,
}

/// Prints an error and exits with status 1.
fn fail(message: impl std::fmt::Display) -> ! {
    eprintln!("error: {message}");
    std::process::exit(1);
}

fn parse_args() -> Args {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let open_only = args.iter().any(|a| a == "--open-only");
    let mut config = Config::default();
    let mut paths: Vec<&String> = Vec::new();
    let mut show: Option<String> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--show" {
            show = it.next().cloned();
        } else if a == "--evidence-bytes" {
            config.evidence_text_bytes = it.next().and_then(|v| v.parse().ok()).unwrap_or(2000);
        } else if !a.starts_with("--") {
            paths.push(a);
        }
    }
    let (data, out) = match paths.as_slice() {
        [d, o] => (PathBuf::from(d), PathBuf::from(o)),
        _ => {
            eprintln!("usage: build_ama DATA.jsonl OUT_DIR [--open-only] [--evidence-bytes N]");
            std::process::exit(2);
        }
    };
    Args {
        data,
        out,
        open_only,
        show,
        config,
    }
}

fn build(data: &Path, out: &Path, config: &Config) {
    let t = Instant::now();
    let progress = |p: &Progress| {
        if p.done.is_multiple_of(26) || p.done == p.total {
            eprintln!(
                "built {}/{} episodes ({:.1}s)",
                p.done,
                p.total,
                t.elapsed().as_secs_f64()
            );
        }
    };
    let options = BuildOptions {
        progress: Some(&progress),
        ..BuildOptions::default()
    };
    let store = Store::build(data, config, out, options).unwrap_or_else(|e| fail(e));
    let c = &store.manifest().counts;
    println!(
        "build: {:.2}s (episodes {}, steps {}, questions {}, windows {}, relations {}, summary tokens {})",
        t.elapsed().as_secs_f64(),
        c.episodes,
        c.steps,
        c.questions,
        c.windows,
        c.relations,
        c.summary_tokens
    );
}

/// Prints one question's evidence from each structure and the start of the
/// composed text.
fn show(store: &Store, id: &str) {
    let (episode, _) = id.split_once(':').unwrap_or((id, ""));
    let m = store
        .episode(episode)
        .unwrap_or_else(|| fail(format!("no episode {episode}")));
    let q = m
        .episode
        .questions
        .iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| fail(format!("no question {id}")));
    println!(
        "Q: {}\nA: {}",
        q.question,
        q.answer.as_deref().unwrap_or("")
    );
    let r = Retrieval::new(m, &q.question);
    for s in Structure::ALL {
        match r.evidence(s) {
            Ok(e) => println!(
                "{}: tokens {} top {:.3} hits {} steps {:?}",
                s.letter(),
                e.tokens(),
                e.top(),
                e.hits,
                e.items.iter().map(|i| i.steps.clone()).collect::<Vec<_>>()
            ),
            Err(e) => println!("{}: error {e}", s.letter()),
        }
    }
    if let Ok(c) = r.compose(Mask::ALL) {
        let text = c.render();
        let (head, _) = text.split_at(text.char_indices().nth(6000).map_or(text.len(), |(i, _)| i));
        println!("--- composed ({} tokens) ---\n{head}", c.tokens);
    }
}

/// What timing every question measured.
#[derive(Default)]
struct Timings {
    /// Milliseconds per question: five retrievals, compose and render.
    query: Vec<f64>,
    /// Milliseconds per structure's retrieval.
    structures: [Vec<f64>; 5],
    /// Microseconds for the basic previews and for all of them.
    previews: [Vec<f64>; 2],
    /// How many previews each of the two sets holds.
    preview_counts: [usize; 2],
    /// Evidence tokens per structure, summed over the questions.
    tokens: [usize; 5],
    all_tokens: usize,
    /// Questions whose named steps T returned.
    named: usize,
    questions: usize,
}

fn time_questions(store: &Store) -> Timings {
    let mut out = Timings::default();
    // The previews on top of the five retrievals (evidence cached): the
    // first version's 15, and all of them.
    let basic: Vec<PreviewKey> = PreviewKey::basic().collect();
    let all: Vec<PreviewKey> = PreviewKey::all().collect();
    out.preview_counts = [basic.len(), all.len()];
    for memory in store.episodes() {
        for q in &memory.episode.questions {
            let t = Instant::now();
            let r = Retrieval::new(memory, &q.question);
            for s in Structure::ALL {
                let ts = Instant::now();
                if let Err(e) = r.evidence(s) {
                    fail(format!("{}: {e}", q.id));
                }
                out.structures[s.index()].push(ts.elapsed().as_secs_f64() * 1e3);
            }
            for (keys, times) in [&basic, &all].into_iter().zip(out.previews.iter_mut()) {
                let tp = Instant::now();
                std::hint::black_box(r.previews(keys).ok());
                times.push(tp.elapsed().as_secs_f64() * 1e6);
            }
            let composed = r
                .compose(Mask::ALL)
                .unwrap_or_else(|e| fail(format!("{}: {e}", q.id)));
            std::hint::black_box(composed.render());
            out.query.push(t.elapsed().as_secs_f64() * 1e3);
            for s in Structure::ALL {
                out.tokens[s.index()] += composed.section(s).map_or(0, |e| e.tokens());
            }
            out.all_tokens += composed.tokens;
            if composed
                .section(Structure::Temporal)
                .is_some_and(|e| e.top() >= 1.0)
            {
                out.named += 1;
            }
            out.questions += 1;
        }
    }
    out
}

/// Sorts `times` and reads its value at the share `p` (0 when empty).
fn percentile(times: &mut [f64], p: f64) -> f64 {
    times.sort_by(f64::total_cmp);
    if times.is_empty() {
        return 0.0;
    }
    times[((times.len() as f64 - 1.0) * p).round() as usize]
}

fn report(mut t: Timings) {
    let mean = t.query.iter().sum::<f64>() / t.query.len().max(1) as f64;
    println!(
        "query (5 retrieves + compose + render), {} questions: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {mean:.3} ms",
        t.query.len(),
        percentile(&mut t.query, 0.5),
        percentile(&mut t.query, 0.9),
        percentile(&mut t.query, 0.99),
        percentile(&mut t.query, 1.0),
    );
    for s in Structure::ALL {
        let times = &mut t.structures[s.index()];
        println!(
            "  {}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            s.letter(),
            percentile(times, 0.5),
            percentile(times, 0.99),
            percentile(times, 1.0)
        );
    }
    let [basic, all] = t.preview_counts;
    let names = [format!("{basic} basic"), format!("all {all}")];
    for (name, times) in names.iter().zip(t.previews.iter_mut()) {
        println!(
            "previews ({name}) over the retrieved evidence: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            percentile(times, 0.5),
            percentile(times, 0.99),
            percentile(times, 1.0)
        );
    }
    println!(
        "questions whose named steps T returned: {} of {}",
        t.named, t.questions
    );
    let n = t.questions.max(1) as f64;
    println!(
        "mean evidence tokens per question: all five {:.0}; S {:.0}, T {:.0}, G {:.0}, V {:.0}, R {:.0}",
        t.all_tokens as f64 / n,
        t.tokens[0] as f64 / n,
        t.tokens[1] as f64 / n,
        t.tokens[2] as f64 / n,
        t.tokens[3] as f64 / n,
        t.tokens[4] as f64 / n
    );
}

fn main() {
    let args = parse_args();
    if !args.open_only {
        build(&args.data, &args.out, &args.config);
    }
    let t = Instant::now();
    let store = Store::open(&args.out).unwrap_or_else(|e| fail(e));
    println!("open: {:.3}s", t.elapsed().as_secs_f64());
    match &args.show {
        Some(id) => show(&store, id),
        None => report(time_questions(&store)),
    }
}
