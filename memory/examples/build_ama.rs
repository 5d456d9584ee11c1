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

use mesa_core::{Mask, Structure};
use mesa_memory::{BuildOptions, Config, Progress, Retrieval, Store};
use std::path::PathBuf;
use std::time::Instant;

fn main() {
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
    if !open_only {
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
        match Store::build(data.as_path(), &config, &out, options) {
            Ok(store) => {
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
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    }
    let t = Instant::now();
    let store = match Store::open(&out) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    println!("open: {:.3}s", t.elapsed().as_secs_f64());

    if let Some(id) = show {
        let (episode, _) = id.split_once(':').unwrap_or((&id, ""));
        let Some(m) = store.episode(episode) else {
            eprintln!("no episode {episode}");
            std::process::exit(1);
        };
        let Some(q) = m.episode.questions.iter().find(|q| q.id == id) else {
            eprintln!("no question {id}");
            std::process::exit(1);
        };
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
            let (head, _) =
                text.split_at(text.char_indices().nth(6000).map_or(text.len(), |(i, _)| i));
            println!("--- composed ({} tokens) ---\n{head}", c.tokens);
        }
        return;
    }
    let mut times = Vec::new();
    let mut structure_times: [Vec<f64>; 5] = Default::default();
    let mut per_structure = [0usize; 5];
    let mut all_tokens = 0usize;
    let mut named = 0usize;
    let mut questions = 0usize;
    // The previews on top of the five retrievals (evidence cached): the
    // first version's 15, and all 45.
    let basic: Vec<mesa_core::PreviewKey> = mesa_core::PreviewKey::basic().collect();
    let all: Vec<mesa_core::PreviewKey> = mesa_core::PreviewKey::all().collect();
    let mut preview_times: [Vec<f64>; 2] = Default::default();
    for memory in store.episodes() {
        for q in &memory.episode.questions {
            let t = Instant::now();
            let r = Retrieval::new(memory, &q.question);
            for s in Structure::ALL {
                let ts = Instant::now();
                if let Err(e) = r.evidence(s) {
                    eprintln!("error: {}: {e}", q.id);
                    std::process::exit(1);
                }
                structure_times[s.index()].push(ts.elapsed().as_secs_f64() * 1e3);
            }
            for (keys, out) in [&basic, &all].into_iter().zip(preview_times.iter_mut()) {
                let tp = Instant::now();
                std::hint::black_box(r.previews(keys).ok());
                out.push(tp.elapsed().as_secs_f64() * 1e6);
            }
            let composed = match r.compose(Mask::ALL) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("error: {}: {e}", q.id);
                    std::process::exit(1);
                }
            };
            let text = composed.render();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            std::hint::black_box(text);
            for s in Structure::ALL {
                per_structure[s.index()] += composed.section(s).map_or(0, |e| e.tokens());
            }
            all_tokens += composed.tokens;
            if composed
                .section(Structure::Temporal)
                .is_some_and(|e| e.top() >= 1.0)
            {
                named += 1;
            }
            questions += 1;
        }
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "query (5 retrieves + compose + render), {} questions: p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms",
        times.len(),
        pct(0.5),
        pct(0.9),
        pct(0.99),
        times.last().copied().unwrap_or(0.0),
        times.iter().sum::<f64>() / times.len().max(1) as f64
    );
    for s in Structure::ALL {
        let t = &mut structure_times[s.index()];
        t.sort_by(f64::total_cmp);
        let at = |p: f64| t[((t.len() as f64 - 1.0) * p).round() as usize];
        println!(
            "  {}: p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            s.letter(),
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
    for (name, t) in ["15 basic", "all 45"].iter().zip(preview_times.iter_mut()) {
        t.sort_by(f64::total_cmp);
        let at = |p: f64| t[((t.len() as f64 - 1.0) * p).round() as usize];
        println!(
            "previews ({name}) over the retrieved evidence: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            at(0.5),
            at(0.99),
            at(1.0)
        );
    }
    println!("questions whose named steps T returned: {named} of {questions}");
    let n = questions.max(1) as f64;
    println!(
        "mean evidence tokens per question: all five {:.0}; S {:.0}, T {:.0}, G {:.0}, V {:.0}, R {:.0}",
        all_tokens as f64 / n,
        per_structure[0] as f64 / n,
        per_structure[1] as f64 / n,
        per_structure[2] as f64 / n,
        per_structure[3] as f64 / n,
        per_structure[4] as f64 / n
    );
}
