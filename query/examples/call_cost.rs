//! The Rust side of `python/bench/call_cost.py`: the same workload through
//! the library (docs/BENCHMARKS.md, "Python"). AMA-Bench's steps in file
//! order, 1,000 appended as one batch, then 200 single appends and 400
//! questions (all five) on the grown episode, and 2,000 questions on a
//! one-step episode.
//!
//! ```text
//! cargo run --release -p mesa-query --example call_cost -- ../shared/data/ama-bench/open_end_qa_set.jsonl
//! ```

use mesa_core::Mask;
use mesa_memory::{LiveMemory, NewEpisode, NewStep};
use mesa_query::{Asker, Chooser};
use std::io::BufRead;
use std::time::Instant;

fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn step(a: &str, o: &str) -> NewStep {
    NewStep {
        index: None,
        action: a.into(),
        observation: o.into(),
        timestamp: None,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/data/ama-bench/open_end_qa_set.jsonl".into());
    let (mut steps, mut questions) = (Vec::new(), Vec::new());
    for line in std::io::BufReader::new(std::fs::File::open(&path)?).lines() {
        let r: serde_json::Value = serde_json::from_str(&line?)?;
        for t in r["trajectory"].as_array().into_iter().flatten() {
            let text = |k: &str| t[k].as_str().unwrap_or_default().to_string();
            steps.push((text("action"), text("observation")));
        }
        for q in r["qa_pairs"].as_array().into_iter().flatten() {
            questions.push(q["question"].as_str().unwrap_or_default().to_string());
        }
    }
    let dir = tempfile::tempdir()?;
    let m = LiveMemory::open(&dir.path().join("m"))?.tenant("bench")?;
    let episode = |id: &str, task: &str| NewEpisode {
        id: id.into(),
        task: task.into(),
        domain: "MIXED".into(),
        ..NewEpisode::default()
    };
    m.create_episode(&episode("long", "AMA-Bench steps"))?;
    m.append_batch(
        "long",
        steps[..1000].iter().map(|(a, o)| step(a, o)).collect(),
    )?;
    let mut appends = Vec::new();
    for (a, o) in &steps[1000..1200] {
        let t0 = Instant::now();
        m.append("long", step(a, o))?;
        appends.push(t0.elapsed().as_secs_f64());
    }
    let mut all = Asker::new(Chooser::Fixed(Mask::ALL));
    all.ask(&*m.memory("long")?, &questions[0], None)?;
    let (mut queries, mut inner) = (Vec::new(), Vec::new());
    for q in &questions[..400] {
        let t0 = Instant::now();
        let a = all.ask(&*m.memory("long")?, q, None)?;
        let wall = t0.elapsed().as_secs_f64();
        queries.push(wall);
        inner.push(wall - a.timings.total().as_secs_f64());
    }
    m.create_episode(&episode("tiny", "one step"))?;
    m.append("tiny", step(&steps[0].0, &steps[0].1))?;
    let mut s = Asker::new(Chooser::Fixed("S".parse()?));
    s.ask(&*m.memory("tiny")?, &questions[0], None)?;
    let mut tiny = Vec::new();
    for q in questions.iter().cycle().take(2000) {
        let t0 = Instant::now();
        s.ask(&*m.memory("tiny")?, q, None)?;
        tiny.push(t0.elapsed().as_secs_f64());
    }
    println!(
        "rust: append p50 {:.1} us; query (all five, 1,200 steps) p50 {:.1} us (outside the answer's stages: {:.1} us); query (S, one step) p50 {:.1} us",
        p50(appends) * 1e6,
        p50(queries) * 1e6,
        p50(inner) * 1e6,
        p50(tiny) * 1e6
    );
    Ok(())
}
