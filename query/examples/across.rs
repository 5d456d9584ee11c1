//! A question over many episodes (`ask_across`) on AMA-Bench: every
//! episode imported into one tenant, then a seeded sample of the questions
//! asked of all of them at once (all five structures). Each AMA-Bench
//! question belongs to one episode, so that episode's rank among the
//! answers measures how well the search finds the right one; the time per
//! question measures its cost once every episode was built (the first
//! search, which builds them, is timed apart). docs/BENCHMARKS.md, "A
//! question over many episodes". RESIDENT is the tenant's budget of built
//! steps (`LiveMemory::keeping_steps`; the library's default if left out):
//! below the dataset's steps, each search builds again the episodes the
//! budget dropped. The process's resident memory (Linux's VmRSS) is read
//! before and after the first search, for the memory the built episodes
//! take ("Memory kept by built episodes"). CANDIDATES is how many episodes
//! each search asks at most (`AcrossOptions::candidates`; `all` asks every
//! one; the library's default if left out). `word_index_top1` and the
//! like rank by the word index alone (`Tenant::word_matches`), before any
//! episode is asked.
//!
//! ```text
//! cargo run --release -p mesa-query --example across -- ../shared/data/ama-bench/open_end_qa_set.jsonl [N] [SEED] [RESIDENT] [CANDIDATES]
//! ```

use mesa_core::Mask;
use mesa_memory::dataset::LoadOptions;
use mesa_memory::LiveMemory;
use mesa_query::{ask_across, AcrossOptions, SharedChooser};
use std::time::Instant;

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((q * v.len() as f64) as usize).min(v.len() - 1)]
}

/// The process's resident memory, in bytes (Linux only).
fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "../shared/data/ama-bench/open_end_qa_set.jsonl".into());
    let n: usize = args.next().map_or(Ok(200), |a| a.parse())?;
    let seed: u64 = args.next().map_or(Ok(0), |a| a.parse())?;
    let budget: usize = args
        .next()
        .map_or(Ok(mesa_memory::live::DEFAULT_RESIDENT_STEPS), |a| a.parse())?;
    let candidates: Option<usize> = match args.next().as_deref() {
        None => Some(mesa_query::DEFAULT_CANDIDATES),
        Some("all") => None,
        Some(n) => Some(n.parse()?),
    };
    let search = AcrossOptions::default().candidates(candidates);
    let options = LoadOptions {
        into_tenant: true,
        max_text_bytes: mesa_memory::live::MAX_TEXT_BYTES,
        ..LoadOptions::default()
    };
    let loaded = mesa_memory::load(std::path::Path::new(&path), &options)?;
    let dir = tempfile::tempdir()?;
    let t = LiveMemory::open(&dir.path().join("m"))?
        .keeping_steps(budget)
        .tenant("ama")?;
    let start = Instant::now();
    let done = t.import(&loaded.episodes, |_| {})?;
    let import_s = start.elapsed().as_secs_f64();
    // A seeded order of the questions: by a hash of (seed, episode, id).
    let mut asked: Vec<(u64, String, String)> = loaded
        .episodes
        .iter()
        .flat_map(|e| {
            e.questions.iter().map(move |q| {
                let key = mesa_memory::text::hash(format!("{seed}/{}/{}", e.id, q.id).as_bytes());
                (key, e.id.clone(), q.question.clone())
            })
        })
        .collect();
    asked.sort();
    asked.truncate(n);
    if asked.is_empty() {
        return Err(
            "no questions to ask: give N of 1 or more, and a dataset with questions".into(),
        );
    }
    let all = SharedChooser::Fixed(Mask::ALL);
    let before = rss_bytes();
    let start = Instant::now();
    ask_across(&t, &all, &asked[0].2, &search)?;
    let first_s = start.elapsed().as_secs_f64();
    let built = t.resident();
    let grew = rss_bytes().zip(before).map(|(a, b)| a.saturating_sub(b));
    let (mut ranks, mut times) = (Vec::new(), Vec::new());
    let (mut words, mut word_ranks) = (Vec::new(), Vec::new());
    for (_, episode, question) in &asked {
        // The word index's part of a search (`ask_across` asks it again),
        // and where its rank alone puts the episode.
        let start = Instant::now();
        let matches = t.word_matches(question)?;
        words.push(start.elapsed().as_secs_f64() * 1e3);
        word_ranks.push(matches.iter().take(5).position(|(id, _)| id == episode));
        let start = Instant::now();
        let found = ask_across(&t, &all, question, &search)?;
        times.push(start.elapsed().as_secs_f64() * 1e3);
        ranks.push(found.found.iter().position(|f| &f.episode == episode));
    }
    let k = ranks.len() as f64;
    let share = |ranks: &[Option<usize>], f: &dyn Fn(&Option<usize>) -> bool| {
        ranks.iter().filter(|r| f(r)).count() as f64 / k
    };
    let mrr = |ranks: &[Option<usize>]| {
        let m = ranks
            .iter()
            .flatten()
            .map(|r| 1.0 / (r + 1) as f64)
            .sum::<f64>()
            / k;
        (m * 1000.0).round() / 1000.0
    };
    println!(
        "{}",
        serde_json::json!({
            "episodes": done.episodes,
            "steps": done.steps,
            "questions": ranks.len(),
            "seed": seed,
            "import_s": (import_s * 10.0).round() / 10.0,
            "first_search_s": (first_s * 100.0).round() / 100.0,
            "top1": share(&ranks, &|r| *r == Some(0)),
            "top5": share(&ranks, &|r| r.is_some()),
            "mrr5": mrr(&ranks),
            "word_index_top1": share(&word_ranks, &|r| *r == Some(0)),
            "word_index_top5": share(&word_ranks, &|r| r.is_some()),
            "word_index_mrr5": mrr(&word_ranks),
            "p50_ms": quantile(&mut times, 0.5),
            "p95_ms": quantile(&mut times, 0.95),
            "word_index_p50_ms": quantile(&mut words, 0.5),
            "budget_steps": budget,
            "candidates": candidates,
            "kept_episodes": built.episodes,
            "kept_steps": built.steps,
            "rss_grew_mib": grew.map(|g| (g as f64 / (1 << 20) as f64).round()),
            "rss_grew_bytes_per_kept_step": grew.map(|g| g / built.steps.max(1) as u64),
        })
    );
    Ok(())
}
