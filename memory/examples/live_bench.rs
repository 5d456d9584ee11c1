//! Measures the live memory on AMA-Bench (docs/BENCHMARKS.md, "Live
//! memory"): append latency into a long episode, append to queryable,
//! a batch import of every episode against `Store::build`, query latency
//! while a writer appends, and a forget plus compaction.
//!
//! ```text
//! cargo run --release -p mesa-memory --example live_bench -- ../shared/data/ama-bench/open_end_qa_set.jsonl
//! ```
//!
//! With `MESA_MINILM_DIR` set to a directory holding all-MiniLM-L6-v2's
//! `config.json`, `tokenizer.json` and `model.safetensors`, it also
//! measures appends with MiniLM. With `MESA_BENCH_LENGTHS` set (for
//! example `15000` or `1000,15000`), it measures only the query latency
//! against those episode lengths, with each snapshot build by part.

use mesa_core::Mask;
use mesa_memory::dataset::{LoadOptions, Loaded};
use mesa_memory::{
    BuildOptions, Config, Forget, LiveMemory, NewEpisode, NewStep, Retrieval, Source, Store, Tenant,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Where a snapshot build's time goes, structure by structure, for one
/// episode (each built as `EpisodeMemory::from_parts` builds it).
fn breakdown(
    episode: &mesa_memory::dataset::Episode,
    tokens: Vec<u32>,
) -> Result<(), Box<dyn std::error::Error>> {
    use mesa_memory::structures::{Graph, Raw, StepTexts, Summary, Temporal};
    let config = Config::default();
    let plugins = mesa_memory::Plugins::default();
    let triples = episode
        .steps
        .iter()
        .map(|s| plugins.extractor.extract(episode, s))
        .collect::<Result<Vec<_>, _>>()?;
    let t0 = Instant::now();
    let steps = Arc::new(
        StepTexts::with_tokens(&episode.steps, config.evidence_text_bytes, tokens)
            .ok_or("token counts")?,
    );
    let render = t0.elapsed();
    let t0 = Instant::now();
    Summary::build(episode, plugins.summarizer.as_ref(), &config)?;
    let s = t0.elapsed();
    let t0 = Instant::now();
    Temporal::new(episode, steps.clone(), &config);
    let t = t0.elapsed();
    let t0 = Instant::now();
    Graph::from_triples(episode, triples.iter().map(Vec::as_slice), &config);
    let g = t0.elapsed();
    let t0 = Instant::now();
    Raw::build(steps, &config);
    let r = t0.elapsed();
    println!(
        "  snapshot build by part at {} steps: render {:.1} ms, S {:.1} ms, T {:.1} ms, G {:.1} ms, R {:.1} ms",
        episode.steps.len(),
        ms(render),
        ms(s),
        ms(t),
        ms(g),
        ms(r)
    );
    Ok(())
}

/// Query latency against the episode's length, opening included: a fresh
/// reader (as after a restart) opens the episode from its persisted state
/// on its first question, which is counted among the 50 (and, before, the
/// opening without a state).
fn by_length(
    mem: &LiveMemory,
    t: &Tenant,
    batch: Batch<'_>,
    lengths: &[usize],
) -> Result<(), Box<dyn std::error::Error>> {
    for &n in lengths {
        let id = format!("len{n}");
        t.create_episode(&NewEpisode {
            id: id.clone(),
            task: "a generic long episode of AMA-Bench steps".into(),
            domain: "MIXED".into(),
            ..NewEpisode::default()
        })?;
        for from in (0..n).step_by(5_000) {
            t.append_batch(&id, batch(from, 5_000.min(n - from)))?;
        }
        // Without a persisted state a fresh reader rebuilds the episode.
        let t0 = Instant::now();
        mem.reader("bench")?.memory(&id)?;
        let rebuilt = ms(t0.elapsed());
        // The writer's first question builds it and persists its state.
        let t0 = Instant::now();
        t.memory(&id)?;
        let persisted = ms(t0.elapsed());
        println!(
            "{n} steps: opening without a persisted state {rebuilt:.0} ms; the writer's first question (builds and persists the state) {persisted:.0} ms"
        );
        let reader = mem.reader("bench")?;
        let (mut q, mut first, mut first_open) = (Vec::new(), 0.0, 0.0);
        let mut by_part = [(); 5].map(|_| Vec::new());
        for k in 0..50 {
            let t0 = Instant::now();
            let m = reader.memory(&id)?;
            if k == 0 {
                first_open = ms(t0.elapsed());
            }
            let question = match k % 3 {
                0 => format!("What did the agent do at step {}?", (k * 997) % n),
                1 => "Why did the SQL query fail with an invalid identifier?".to_string(),
                _ => "Which file did the agent open after the error?".to_string(),
            };
            let r = Retrieval::new(&m, &question);
            let _ = r.compose(Mask::ALL)?;
            let took = ms(t0.elapsed());
            if k == 0 {
                first = took;
            }
            q.push(took);
            for s in mesa_core::Structure::ALL {
                let t0 = Instant::now();
                let _ = m.retrieve(s, &mesa_memory::Query::new(&question))?;
                by_part[s.index()].push(ms(t0.elapsed()));
            }
        }
        println!(
            "{n} steps, 50 questions from a fresh reader: first (opening) {first:.0} ms (the opening {first_open:.0} ms); all five p50 {:.1} ms, p99 {:.1} ms",
            pct(&mut q, 0.5),
            pct(&mut q, 0.99)
        );
        let parts: Vec<String> = mesa_core::Structure::ALL
            .iter()
            .map(|s| format!("{} {:.2}", s.letter(), pct(&mut by_part[s.index()], 0.5)))
            .collect();
        println!("  p50 by structure (ms): {}", parts.join(", "));
        // The opening alone, from ten more fresh readers.
        let mut openings = Vec::new();
        for _ in 0..10 {
            let fresh = mem.reader("bench")?;
            let t0 = Instant::now();
            fresh.memory(&id)?;
            openings.push(ms(t0.elapsed()));
        }
        println!(
            "  opening from the persisted state, 10 fresh readers: p50 {:.0} ms, max {:.0} ms",
            pct(&mut openings, 0.5),
            pct(&mut openings, 1.0)
        );
        // The episode as stored: a memory opened from a state holds the
        // covered steps without their texts.
        let tokens = reader.memory(&id)?.temporal.steps().tokens.clone();
        breakdown(&reader.episode(&id)?, tokens)?;
    }
    Ok(())
}

type Outcome = Result<(), Box<dyn std::error::Error>>;

/// Makes `n` new steps from AMA-Bench's steps, starting at `from`.
type Batch<'a> = &'a dyn Fn(usize, usize) -> Vec<NewStep>;

/// One step into a 1,000-step episode: append, then append + query.
fn append_latency(t: &Tenant, batch: Batch<'_>) -> Outcome {
    t.create_episode(&NewEpisode {
        id: "long".into(),
        task: "a generic long episode of AMA-Bench steps".into(),
        domain: "MIXED".into(),
        ..NewEpisode::default()
    })?;
    t.append_batch("long", batch(0, 1000))?;
    let (mut append, mut queryable, mut answered) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..100 {
        let s = batch(1000 + i, 1).remove(0);
        let t0 = Instant::now();
        t.append("long", s)?;
        append.push(ms(t0.elapsed()));
        let m = t.memory("long")?;
        queryable.push(ms(t0.elapsed()));
        let _ = Retrieval::new(&m, "What did the agent do at step 12?").compose(Mask::ALL)?;
        answered.push(ms(t0.elapsed()));
    }
    println!(
        "append one step into a 1,000-step episode: p50 {:.3} ms, p99 {:.3} ms",
        pct(&mut append, 0.5),
        pct(&mut append, 0.99)
    );
    println!(
        "append until queryable (the snapshot extended): p50 {:.2} ms, p99 {:.2} ms; with the first question (all five) answered: p50 {:.1} ms, p99 {:.1} ms",
        pct(&mut queryable, 0.5),
        pct(&mut queryable, 0.99),
        pct(&mut answered, 0.5),
        pct(&mut answered, 0.99)
    );

    Ok(())
}

/// Query latency while a writer appends (snapshot rebuilt per version).
fn during_writes(t: &Arc<Tenant>, batch: Batch<'_>) -> Outcome {
    let writer = {
        let t = Arc::clone(t);
        let steps = batch(2000, 200);
        std::thread::spawn(move || -> Result<(), mesa_memory::LiveError> {
            for s in steps {
                t.append("long", s)?;
                std::thread::sleep(Duration::from_millis(5));
            }
            Ok(())
        })
    };
    let mut during = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        let t0 = Instant::now();
        let m = t.memory("long")?;
        let _ = Retrieval::new(&m, "Why did the query fail after step 40?").compose(Mask::ALL)?;
        during.push(ms(t0.elapsed()));
    }
    writer.join().map_err(|_| "writer panicked")??;
    println!(
        "query (all five) while a writer appends every 5 ms: {} queries, p50 {:.1} ms, p99 {:.1} ms",
        during.len(),
        pct(&mut during, 0.5),
        pct(&mut during, 0.99)
    );

    Ok(())
}

/// Forget plus compaction.
fn forget_and_compact(t: &Tenant) -> Outcome {
    let t0 = Instant::now();
    t.forget("long", Forget::Range(100, 199))?;
    let forget = t0.elapsed();
    let t0 = Instant::now();
    t.compact()?;
    println!(
        "forget 100 steps: {:.1} ms; compact the tenant ({} steps left): {:.1} ms",
        ms(forget),
        t.steps("long")?.len(),
        ms(t0.elapsed())
    );

    Ok(())
}

/// With MiniLM (when MESA_MINILM_DIR names its files): an append against
/// one embedding alone.
fn minilm(mem: &LiveMemory, batch: Batch<'_>) -> Outcome {
    if let Some(dir) = std::env::var_os("MESA_MINILM_DIR") {
        let embedder = Arc::new(mesa_memory::plugins::MiniLmEmbedder::load(Some(
            std::path::Path::new(&dir),
        ))?);
        let plugins = mesa_memory::Plugins {
            embedder: embedder.clone(),
            ..mesa_memory::Plugins::default()
        };
        let mt = mem.tenant_with("minilm", Config::default(), plugins)?;
        mt.create_episode(&NewEpisode {
            id: "m".into(),
            task: "MiniLM appends".into(),
            domain: "MIXED".into(),
            ..NewEpisode::default()
        })?;
        mt.append_batch("m", batch(0, 100))?;
        let (mut append, mut embed) = (Vec::new(), Vec::new());
        for i in 0..20 {
            let s = batch(100 + i, 1).remove(0);
            let text = format!(
                "[step {}] action: {}\nobservation: {}",
                100 + i,
                s.action,
                s.observation
            );
            let t0 = Instant::now();
            mesa_memory::Embedder::embed(embedder.as_ref(), &[text.as_str()])?;
            embed.push(ms(t0.elapsed()));
            let t0 = Instant::now();
            mt.append("m", s)?;
            append.push(ms(t0.elapsed()));
        }
        println!(
            "MiniLM: append one step p50 {:.1} ms, p99 {:.1} ms; one embedding alone p50 {:.1} ms",
            pct(&mut append, 0.5),
            pct(&mut append, 0.99),
            pct(&mut embed, 0.5)
        );
    }

    Ok(())
}

/// Batch import of all of AMA-Bench against `Store::build`.
fn batch_import(mem: &LiveMemory, loaded: &Loaded, data: &str, dir: &Path) -> Outcome {
    let imp = Arc::new(mem.tenant("import")?);
    let t0 = Instant::now();
    for e in &loaded.episodes {
        imp.create_episode(&NewEpisode {
            id: e.id.clone(),
            task: e.task.clone(),
            domain: e.domain.clone(),
            ..NewEpisode::default()
        })?;
        let steps = e
            .steps
            .iter()
            .map(|s| NewStep {
                index: Some(s.index),
                action: s.action.clone(),
                observation: s.observation.clone(),
                timestamp: s.timestamp.clone(),
            })
            .collect();
        imp.append_batch(&e.id, steps)?;
    }
    let import = t0.elapsed();
    let t0 = Instant::now();
    let _store = Store::build(
        Source::Path(data.into(), LoadOptions::default()),
        &Config::default(),
        &dir.join("store"),
        BuildOptions::default(),
    )?;
    let build = t0.elapsed();
    println!(
        "batch append of all {} episodes ({} steps): {:.1} s; Store::build of the same file: {:.1} s",
        loaded.episodes.len(),
        loaded.episodes.iter().map(|e| e.steps.len()).sum::<usize>(),
        import.as_secs_f64(),
        build.as_secs_f64()
    );
    Ok(())
}

fn main() -> Outcome {
    let data = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/data/ama-bench/open_end_qa_set.jsonl".into());
    let loaded = mesa_memory::load(std::path::Path::new(&data), &LoadOptions::default())?;
    let all_steps: Vec<(String, String)> = loaded
        .episodes
        .iter()
        .flat_map(|e| {
            e.steps
                .iter()
                .map(|s| (s.action.clone(), s.observation.clone()))
        })
        .collect();
    let dir = tempfile::tempdir()?;
    let mem = LiveMemory::open(&dir.path().join("live"))?;
    let t = Arc::new(mem.tenant("bench")?);
    let batch = |from: usize, n: usize| -> Vec<NewStep> {
        (from..from + n)
            .map(|i| {
                let (a, o) = &all_steps[i % all_steps.len()];
                NewStep {
                    index: None,
                    action: a.clone(),
                    observation: o.clone(),
                    timestamp: None,
                }
            })
            .collect()
    };
    // MESA_BENCH_LENGTHS=15000,...: only the latency against length.
    if let Ok(list) = std::env::var("MESA_BENCH_LENGTHS") {
        let lengths: Vec<usize> = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
        return by_length(&mem, &t, &batch, &lengths);
    }

    append_latency(&t, &batch)?;
    during_writes(&t, &batch)?;
    forget_and_compact(&t)?;
    by_length(&mem, &t, &batch, &[1_000, 15_000, 100_000])?;
    minilm(&mem, &batch)?;
    batch_import(&mem, &loaded, &data, dir.path())
}
