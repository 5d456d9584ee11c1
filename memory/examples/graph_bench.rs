//! One structure's per-question cost on one long episode, without the live
//! store: the episode is made of AMA-Bench steps in order (as in
//! `live_bench`), built once, then asked the same 50 questions as
//! `live_bench`'s length rows, each `MESA_BENCH_REPEAT` times (default 5).
//! The structure is G unless `MESA_BENCH_STRUCTURE` names another (a
//! letter: S, T, G, V or R). For profiling one structure alone. With
//! `MESA_BENCH_DENSE=1` V's vectors are dense: the built-in hashed
//! embedding, normalized, plus a fixed pattern in every dimension (so every
//! dimension of a question's codes is used).
//!
//! ```text
//! cargo run --release -p mesa-memory --example graph_bench -- DATA [STEPS]
//! ```

use mesa_core::Structure;
use mesa_memory::dataset::{Episode, LoadOptions, Step};
use mesa_memory::structures::{Embedder, HashEmbedder, PluginError, Plugins};
use mesa_memory::{Config, EpisodeMemory, Query};
use std::sync::Arc;
use std::time::Instant;

/// The hashed embedding made dense (see the module docs).
struct Dense;

impl Embedder for Dense {
    fn name(&self) -> String {
        "hash-v1-384-dense".into()
    }
    fn dim(&self) -> usize {
        384
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError> {
        let mut vs = HashEmbedder::default().embed(texts)?;
        for v in &mut vs {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
            for (i, x) in v.iter_mut().enumerate() {
                *x = *x / norm + 0.05 * (((i * 7919) % 13) as f32 / 13.0 - 0.5);
            }
        }
        Ok(vs)
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let data = args.get(1).ok_or("usage: graph_bench DATA [STEPS]")?;
    let n: usize = args.get(2).map_or(Ok(15_000), |s| s.parse())?;
    let repeat: usize = std::env::var("MESA_BENCH_REPEAT").map_or(Ok(5), |s| s.parse())?;
    let letter = std::env::var("MESA_BENCH_STRUCTURE").unwrap_or_else(|_| "G".into());
    let structure = Structure::ALL
        .into_iter()
        .find(|s| s.letter().to_string() == letter)
        .ok_or("MESA_BENCH_STRUCTURE is one of S, T, G, V, R")?;
    let loaded = mesa_memory::load(std::path::Path::new(data), &LoadOptions::default())?;
    let all: Vec<&Step> = loaded.episodes.iter().flat_map(|e| &e.steps).collect();
    let episode = Episode {
        id: "long".into(),
        task: "a generic long episode of AMA-Bench steps".into(),
        domain: "MIXED".into(),
        outcome: None,
        meta: Default::default(),
        created: None,
        steps: (0..n)
            .map(|i| Step {
                index: i,
                ..all[i % all.len()].clone()
            })
            .collect(),
        questions: Vec::new(),
        notes: Vec::new(),
    };
    let t0 = Instant::now();
    let mut plugins = Plugins::default();
    if std::env::var("MESA_BENCH_DENSE").is_ok_and(|v| v == "1") {
        plugins.embedder = Arc::new(Dense);
    }
    let m = EpisodeMemory::build(Arc::new(episode), &Config::default(), &plugins)?;
    eprintln!(
        "built {n} steps in {:.0} ms",
        t0.elapsed().as_secs_f64() * 1e3
    );
    let mut times = Vec::new();
    for k in 0..50 {
        let question = match k % 3 {
            0 => format!("What did the agent do at step {}?", (k * 997) % n),
            1 => "Why did the SQL query fail with an invalid identifier?".to_string(),
            _ => "Which file did the agent open after the error?".to_string(),
        };
        for _ in 0..repeat {
            let q = Query::new(&question);
            let t0 = Instant::now();
            let _ = m.retrieve(structure, &q)?;
            times.push(t0.elapsed().as_secs_f64() * 1e3);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    println!(
        "{letter} over {n} steps, {} questions: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms",
        times.len(),
        at(0.5),
        at(0.9),
        at(0.99)
    );
    Ok(())
}
