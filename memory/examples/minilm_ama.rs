//! Embeds every step of a dataset with the MiniLM embedder, the way the V
//! structure does (each step's evidence text, 64 texts per call), and
//! reports the time, the throughput and the process's peak memory.
//!
//! ```text
//! bash scripts/fetch-minilm.sh
//! cargo run --release -p mesa-memory --example minilm_ama -- \
//!     ../shared/data/ama-bench/open_end_qa_set.jsonl [--limit STEPS] [--batch N]
//! ```
//!
//! `--compare FULL.json` instead embeds the sentences of a reference file
//! written by `memory/src/plugins/testdata/make_reference.py --full` and
//! prints the largest difference from sentence-transformers' vectors.

use mesa_memory::plugins::MiniLmEmbedder;
use mesa_memory::structures::render_step;
use mesa_memory::{load, Config, Embedder, LoadOptions};
use std::path::Path;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut data = None;
    let (mut limit, mut batch, mut compare_with) = (usize::MAX, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--limit" => limit = args.next().and_then(|n| n.parse().ok()).unwrap_or(limit),
            "--batch" => batch = args.next().and_then(|n| n.parse().ok()),
            "--compare" => compare_with = args.next(),
            _ => data = Some(a),
        }
    }
    let t = Instant::now();
    let mut embedder = MiniLmEmbedder::load(None)?;
    if let Some(n) = batch {
        embedder = embedder.with_batch_size(n);
    }
    println!(
        "load: {:.2}s from {}",
        t.elapsed().as_secs_f64(),
        embedder.dir().display()
    );
    if let Some(path) = compare_with {
        return compare(&embedder, Path::new(&path));
    }
    let Some(data) = data else {
        return Err(
            "usage: minilm_ama DATA.jsonl [--limit STEPS] [--batch N] | --compare FULL.json".into(),
        );
    };
    let episodes = load(Path::new(&data), &LoadOptions::default())?.episodes;
    let config = Config::default();
    let mut steps = 0usize;
    let mut checksum = 0f64;
    let t = Instant::now();
    'episodes: for e in &episodes {
        let texts: Vec<String> = e
            .steps
            .iter()
            .map(|s| render_step(s, config.evidence_text_bytes))
            .collect();
        // As Vector::build: 64 texts per call.
        for chunk in texts.chunks(64) {
            let take = chunk.len().min(limit - steps);
            let refs: Vec<&str> = chunk[..take].iter().map(String::as_str).collect();
            let vs = embedder.embed(&refs)?;
            checksum += vs.iter().map(|v| f64::from(v[0])).sum::<f64>();
            steps += take;
            if steps >= limit {
                break 'episodes;
            }
        }
        if steps % 1000 < e.steps.len() {
            eprintln!(
                "{steps} steps, {:.1}s, {:.1} steps/s",
                t.elapsed().as_secs_f64(),
                steps as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "embedded {steps} steps in {secs:.1}s ({:.1} steps/s, {:.2} ms/step); checksum {checksum:.4}",
        steps as f64 / secs,
        secs * 1e3 / steps.max(1) as f64
    );
    println!("peak RSS (VmHWM): {}", peak_rss());
    Ok(())
}

/// The largest absolute difference from a full reference file.
fn compare(embedder: &MiniLmEmbedder, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let reference: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let sentences = reference["sentences"]
        .as_array()
        .ok_or("no `sentences` array")?;
    let texts: Vec<&str> = sentences
        .iter()
        .map(|s| s["text"].as_str().unwrap_or_default())
        .collect();
    let got = embedder.embed(&texts)?;
    let mut worst = 0f64;
    for (i, (s, v)) in sentences.iter().zip(&got).enumerate() {
        let want: Vec<f64> = s["vector"]
            .as_array()
            .ok_or("no `vector`")?
            .iter()
            .filter_map(serde_json::Value::as_f64)
            .collect();
        if want.len() != v.len() {
            return Err(format!("sentence {i}: {} dims vs {}", v.len(), want.len()).into());
        }
        let d = want
            .iter()
            .zip(v)
            .map(|(a, b)| (a - f64::from(*b)).abs())
            .fold(0.0, f64::max);
        println!("sentence {i}: max abs difference {d:.3e}");
        worst = worst.max(d);
    }
    println!(
        "{} sentences x {} dims: max abs difference {worst:.3e}",
        got.len(),
        embedder.dim()
    );
    Ok(())
}

fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
