//! How well V's approximate index (hnsw_rs, M = 16, ef_construction =
//! 200, as `structures/ann.rs` makes it) finds the exact top 5, on
//! AMA-Bench step texts embedded by the built-in hashed embedder or by
//! MiniLM, against a full exact scan. Also its build, dump and load times,
//! and how the rows look (nonzero values, a question's cosines).
//!
//! ```text
//! cargo run --release -p mesa-memory --example ann_bench -- DATA ROWS
//! MESA_BENCH_EMBEDDER=minilm ...   (MiniLM from models/all-MiniLM-L6-v2 or MESA_MINILM_DIR)
//! ```
//!
//! Rows are the dataset's steps in order, numbered 0.. and rendered as V
//! embeds them; past its 15,244 steps each text is used again with
//! " copy K" added, so every row differs. Queries are the dataset's first
//! 200 questions. Recall: of the exact top 5's scores, how many the
//! approximate top 5 reaches (ties count as found).

use hnsw_rs::prelude::{AnnT, DistCosine, Hnsw, HnswIo};
use mesa_memory::dataset::{LoadOptions, Step};
use mesa_memory::structures::vector::{dot, normalize};
use mesa_memory::structures::{render_step, Embedder, HashEmbedder};
use mesa_memory::Config;
use std::time::Instant;

fn normalized(mut v: Vec<f32>) -> Vec<f32> {
    normalize(&mut v);
    v
}

fn embed(e: &dyn Embedder, texts: &[String]) -> Outcome<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(32) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        out.extend(e.embed(&refs)?.into_iter().map(normalized));
    }
    Ok(out)
}

type Outcome<T> = Result<T, Box<dyn std::error::Error>>;

/// The first `n` rows' texts: the dataset's steps in order, as V embeds them.
fn row_texts(loaded: &mesa_memory::dataset::Loaded, n: usize) -> Vec<String> {
    // As V embeds them: each step rendered as evidence shows it.
    let all: Vec<&Step> = loaded.episodes.iter().flat_map(|e| &e.steps).collect();
    let bytes = Config::default().evidence_text_bytes;
    (0..n)
        .map(|i| {
            let step = Step {
                index: i,
                ..all[i % all.len()].clone()
            };
            let t = render_step(&step, bytes);
            match i / all.len() {
                0 => t,
                k => format!("{t} copy {k}"),
            }
        })
        .collect()
}

/// How the rows look: the share of nonzero values of the rows and of the
/// questions, and the median and the 99th percentile of a question's
/// cosines with the rows.
fn describe(rows: &[Vec<f32>], queries: &[Vec<f32>]) {
    let share = |vs: &[Vec<f32>]| {
        let nonzero = vs.iter().flatten().filter(|x| **x != 0.0).count();
        100.0 * nonzero as f64 / (vs.len() * vs[0].len()) as f64
    };
    let mut cos: Vec<f32> = queries
        .iter()
        .take(20)
        .flat_map(|q| rows.iter().map(move |r| dot(r, q)))
        .collect();
    cos.sort_by(f32::total_cmp);
    println!(
        "nonzero values: rows {:.1}%, questions {:.1}%; cosine of a question with a row: median {:.3}, p99 {:.3}",
        share(rows),
        share(queries),
        cos[cos.len() / 2],
        cos[cos.len() * 99 / 100]
    );
}

/// The exact scan's time, and the index's time and recall of the exact top
/// 5 at three search widths.
fn search(graph: &Hnsw<f32, DistCosine>, rows: &[Vec<f32>], queries: &[Vec<f32>]) {
    let mut exact_ms = Vec::new();
    let kth: Vec<f32> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let mut s: Vec<f32> = rows.iter().map(|r| dot(r, q)).collect();
            s.sort_by(|a, b| b.total_cmp(a));
            exact_ms.push(t.elapsed().as_secs_f64() * 1e3);
            s[4.min(s.len() - 1)]
        })
        .collect();
    exact_ms.sort_by(f64::total_cmp);
    println!(
        "exact scan (f32, sorted): p50 {:.2} ms",
        exact_ms[exact_ms.len() / 2]
    );
    for ef in [64usize, 200, 800] {
        let (mut ms, mut found) = (Vec::new(), 0usize);
        for (q, k) in queries.iter().zip(&kth) {
            let t = Instant::now();
            let got = graph.search(q, 20, ef);
            ms.push(t.elapsed().as_secs_f64() * 1e3);
            let mut s: Vec<f32> = got.iter().map(|nb| dot(&rows[nb.d_id], q)).collect();
            s.sort_by(|a, b| b.total_cmp(a));
            found += s.iter().take(5).filter(|x| **x >= *k).count();
        }
        ms.sort_by(f64::total_cmp);
        println!(
            "ef {ef}: search p50 {:.2} ms, p99 {:.2} ms; recall of the exact top 5: {:.1}%",
            ms[ms.len() / 2],
            ms[ms.len() * 99 / 100],
            100.0 * found as f64 / (5 * queries.len()) as f64
        );
    }
}

/// The index's dump and load times and size.
fn dump_and_load(graph: &Hnsw<f32, DistCosine>) -> Outcome<()> {
    let dir = tempfile::tempdir()?;
    let t = Instant::now();
    let name = graph.file_dump(dir.path(), "v")?;
    let dumped = t.elapsed().as_secs_f64();
    let bytes: u64 = std::fs::read_dir(dir.path())?
        .map(|e| e.and_then(|e| e.metadata()).map(|m| m.len()).unwrap_or(0))
        .sum();
    let t = Instant::now();
    let io = Box::leak(Box::new(HnswIo::new(dir.path(), &name)));
    let back: Hnsw<f32, DistCosine> = io.load_hnsw()?;
    println!(
        "dump: {dumped:.2} s, {:.0} MB; load: {:.2} s ({} points)",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64(),
        back.get_nb_point()
    );
    Ok(())
}

fn main() -> Outcome<()> {
    let args: Vec<String> = std::env::args().collect();
    let data = args.get(1).ok_or("usage: ann_bench DATA ROWS")?;
    let n: usize = args.get(2).ok_or("usage: ann_bench DATA ROWS")?.parse()?;
    let loaded = mesa_memory::load(std::path::Path::new(data), &LoadOptions::default())?;
    let texts = row_texts(&loaded, n);
    let questions: Vec<String> = loaded
        .episodes
        .iter()
        .flat_map(|e| e.questions.iter().map(|q| q.question.clone()))
        .take(200)
        .collect();
    let embedder: Box<dyn Embedder> = match std::env::var("MESA_BENCH_EMBEDDER").as_deref() {
        Ok("minilm") => Box::new(mesa_memory::plugins::MiniLmEmbedder::load(None)?),
        _ => Box::new(HashEmbedder::default()),
    };
    let t = Instant::now();
    let rows = embed(embedder.as_ref(), &texts)?;
    let queries = embed(embedder.as_ref(), &questions)?;
    println!(
        "{} rows, {} queries, embedder {}: embedded in {:.1} s",
        rows.len(),
        queries.len(),
        embedder.name(),
        t.elapsed().as_secs_f64()
    );
    describe(&rows, &queries);
    let t = Instant::now();
    let graph: Hnsw<f32, DistCosine> = Hnsw::new(16, n, 16, 200, DistCosine);
    for (p, r) in rows.iter().enumerate() {
        graph.insert((r.as_slice(), p));
    }
    println!("build: {:.1} s", t.elapsed().as_secs_f64());
    search(&graph, &rows, &queries);
    dump_and_load(&graph)
}
