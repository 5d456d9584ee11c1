//! The query path over a real store: previews computed from evidence, both
//! engines agreeing on them, and evidence composed with provenance.

use mesa_core::{Engine, Mask, Structure};
use mesa_memory::{BuildOptions, Config, Source, Store};
use mesa_query::{Asker, Chooser, QueryEngine, QueryError, Question};
use mesa_runtime::{AnyEngine, EngineKind, Runtime, Staged};
use std::path::PathBuf;

const ACTIONS: [&str; 4] = ["left", "right", "up", "down"];

/// Three small episodes in the generic layout, written here.
fn dataset() -> String {
    let sql = serde_json::json!({
        "id": "sql", "task": "Answer with SQL: which customers ordered most?", "domain": "TEXT2SQL",
        "steps": (0..14).map(|i| serde_json::json!({
            "action": if i % 3 == 0 { format!("execute_sql: SELECT name FROM customers JOIN orders ON orders.customer_id = customers.id LIMIT {i}") } else { format!("inspect_table: orders column_{i}") },
            "observation": if i == 6 { "Error: no such column orders.total_amount".to_string() } else { format!("{i} rows returned; customers.name, orders.amount") },
        })).collect::<Vec<_>>(),
        "questions": [
            {"question": "What error did the agent get at step 6?", "answer": "no such column", "type": "A"},
            {"question": "Why did the query fail?", "type": "B"},
        ],
    });
    let game = serde_json::json!({
        "id": "game", "task": "Reach the door", "domain": "GAME",
        "steps": (0..30).map(|i| serde_json::json!({
            "action": ACTIONS[i % 4],
            "observation": format!("ball {} step to the left; door {} steps up; key held: {}", i % 5, 30 - i, i > 20),
        })).collect::<Vec<_>>(),
        "questions": [{"question": "What did the agent hold in the last 3 steps?", "type": "C"}],
    });
    let web = serde_json::json!({
        "id": "web", "task": "Buy a red kettle under $30", "domain": "WEB",
        "steps": (0..8).map(|i| serde_json::json!({
            "action": format!("click [item-{i}]"),
            "observation": format!("Page: kettle listing {i}, price ${}", 20 + i * 3),
        })).collect::<Vec<_>>(),
    });
    format!("{sql}\n{game}\n{web}\n")
}

/// A store in a directory of its own for the test `name` (tests run in
/// parallel in one process).
fn store(name: &str) -> (Store, PathBuf) {
    let dir = std::env::temp_dir().join(format!("mesa-query-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let data = dir.join("data.jsonl");
    std::fs::write(&data, dataset()).expect("write data");
    let out = dir.join("store");
    let store = Store::build(
        Source::from(data.as_path()),
        &Config::default(),
        &out,
        BuildOptions::default(),
    )
    .expect("build");
    (store, dir)
}

const POLICY: &str = r#"policy "previews"
use std
rule raw_big when preview.R.tokens > 400 and preview.T.hits < 3 -> remove {R}
rule t_sure when preview.T.top >= 1 -> add {T}
rule g_good when preview.G.top > 0.5 or preview.G.hits >= 4 -> add {G}
rule v_weak when preview.V.top < 0.2 -> remove {V}
rule causal when query has std.causal -> add {S, R}
default {S, V, R}
"#;

fn engine(kind: EngineKind) -> AnyEngine {
    Staged::check(POLICY)
        .expect("policy checks")
        .engine(&Runtime::new().expect("runtime"), kind)
        .expect("engine")
}

#[test]
fn both_engines_agree_on_previews_from_a_real_store() {
    let (store, dir) = store("agree");
    let mut wasm = QueryEngine::new(&store, Chooser::Policy(Box::new(engine(EngineKind::Wasm))));
    let mut interp = QueryEngine::new(
        &store,
        Chooser::Policy(Box::new(engine(EngineKind::Interp))),
    );
    assert_eq!(wasm.wanted_previews(), interp.wanted_previews());
    assert_eq!(
        wasm.wanted_previews().len(),
        6,
        "only the previews the policy reads"
    );
    let questions = [
        ("sql", "What error did the agent get at step 6?"),
        ("sql", "Why did the query fail?"),
        (
            "sql",
            "Which columns of orders did the agent inspect between step 1 and step 5?",
        ),
        ("game", "What did the agent hold in the last 3 steps?"),
        ("game", "Where was the door at step 10?"),
        ("web", "How much did kettle listing 5 cost?"),
        ("web", "What happened?"),
    ];
    let mut masks = std::collections::HashSet::new();
    for (episode, text) in questions {
        let q = Question {
            episode,
            text,
            qtype: None,
        };
        let a = wasm.answer(&q).expect("wasm answer");
        let b = interp.answer(&q).expect("interp answer");
        assert_eq!(a.selection, b.selection, "{episode}: {text}");
        assert_eq!(a.previews, b.previews);
        // The composition holds exactly the selected structures, in order.
        let got: Vec<Structure> = a.composition.sections.iter().map(|s| s.structure).collect();
        assert_eq!(got, a.selection.mask.iter().collect::<Vec<_>>());
        assert!(a
            .composition
            .items()
            .all(|i| a.selection.mask.contains(i.structure)));
        masks.insert(a.selection.mask);
    }
    assert!(masks.len() >= 2, "the previews change decisions: {masks:?}");
    // A step named in the question comes back from T with its provenance.
    let q = Question {
        episode: "sql",
        text: "What error did the agent get at step 6?",
        qtype: None,
    };
    let fixed = QueryEngine::new(&store, Chooser::Fixed(Mask::single(Structure::Temporal)))
        .answer(&q)
        .expect("answer");
    let t = fixed.composition.section(Structure::Temporal).expect("T");
    assert!(t
        .items
        .iter()
        .any(|i| i.steps == vec![6] && i.text.contains("no such column")));
    assert!(fixed.composition.tokens > 0);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_policy_reading_no_previews_retrieves_only_what_it_selects() {
    let (store, dir) = store("no-previews");
    let src = "policy \"p\"\nrule r when query has words [\"error\"] -> select {T}\ndefault {S}\n";
    let engine = Staged::check(src)
        .expect("checks")
        .engine(&Runtime::new().expect("rt"), EngineKind::Wasm)
        .expect("engine");
    assert!(engine.previews().is_empty());
    let mut q = QueryEngine::new(&store, Chooser::Policy(Box::new(engine)));
    let a = q
        .answer(&Question {
            episode: "sql",
            text: "What error happened?",
            qtype: None,
        })
        .expect("answer");
    assert_eq!(a.selection.mask, Mask::single(Structure::Temporal));
    assert!(a.previews.is_empty());
    drop(q);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_unknown_episode_is_named_with_a_suggestion() {
    let (store, dir) = store("unknown");
    let mut q = QueryEngine::new(&store, Chooser::Fixed(Mask::ALL));
    match q.answer(&Question {
        episode: "gamee",
        text: "x",
        qtype: None,
    }) {
        Err(e @ QueryError::UnknownEpisode { .. }) => {
            let m = e.to_string();
            assert!(m.contains("`gamee`") && m.contains("`game`"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    drop(q);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn an_empty_question_is_refused() {
    let (store, dir) = store("empty");
    let mut q = QueryEngine::new(&store, Chooser::Fixed(Mask::ALL));
    for text in ["", " \t\n"] {
        let e = q
            .answer(&Question {
                episode: "game",
                text,
                qtype: None,
            })
            .unwrap_err();
        assert!(matches!(e, QueryError::EmptyQuestion), "{e}");
    }
    drop(q);
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}

/// A summarizer that only rewrites whole episodes (as the LLM one does).
struct WholeEpisode;

impl mesa_memory::Summarizer for WholeEpisode {
    fn name(&self) -> String {
        "whole-episode-test".into()
    }
    fn summarize(
        &self,
        episode: &mesa_memory::Episode,
        _budget: usize,
    ) -> Result<Vec<mesa_memory::structures::SummaryLine>, mesa_memory::PluginError> {
        Ok(vec![mesa_memory::structures::SummaryLine {
            step: None,
            text: format!("{} steps so far", episode.steps.len()),
        }])
    }
}

#[test]
fn an_answer_says_when_a_summary_lags_behind_appends() {
    use mesa_memory::{EpisodeMemory, Plugins, StepParts};
    let loaded = mesa_memory::dataset::load_str(&dataset(), "data.jsonl", &Default::default())
        .expect("parses");
    let mut episode = loaded.episodes[0].clone();
    let later: Vec<_> = episode.steps.split_off(10);
    let plugins = Plugins {
        summarizer: std::sync::Arc::new(WholeEpisode),
        ..Plugins::default()
    };
    let config = Config::default();
    let mut memory =
        EpisodeMemory::build(std::sync::Arc::new(episode.clone()), &config, &plugins).unwrap();
    let mut asker = Asker::new(Chooser::Fixed("S,T".parse().unwrap()));
    let fresh = asker.ask(&memory, "What happened?", None).unwrap();
    let q = Question {
        episode: &episode.id,
        text: "What happened?",
        qtype: None,
    };
    assert!(fresh.stale().is_empty());
    assert!(fresh.to_json(&q, false).get("stale").is_none());
    let parts = StepParts::derive(&episode, &later, &config, &plugins).unwrap();
    memory.extend(&later, &parts, &config).unwrap();
    let lagging = asker.ask(&memory, "What happened?", None).unwrap();
    assert_eq!(
        lagging.to_json(&q, false)["stale"],
        serde_json::json!({"S": later.len()})
    );
}

#[test]
fn a_trading_policy_keeps_the_subset_worth_its_tokens() {
    let (store, dir) = store("trade");
    let src = "policy \"p\"\ndefault all\ntrade words at 0.5\n";
    let staged = || Staged::check(src).expect("checks");
    let rt = Runtime::new().expect("rt");
    let mut wasm = QueryEngine::new(
        &store,
        Chooser::Policy(Box::new(
            staged().engine(&rt, EngineKind::Wasm).expect("wasm"),
        )),
    );
    let mut interp = QueryEngine::new(
        &store,
        Chooser::Policy(Box::new(
            staged().engine(&rt, EngineKind::Interp).expect("interp"),
        )),
    );
    let mut all = QueryEngine::new(&store, Chooser::Fixed(Mask::ALL));
    let mut kept = std::collections::HashSet::new();
    for (episode, text) in [
        ("sql", "What error did the agent get at step 6?"),
        ("sql", "Why did the query fail?"),
        ("game", "What did the agent hold in the last 3 steps?"),
        ("web", "How much did kettle listing 5 cost?"),
    ] {
        let q = Question {
            episode,
            text,
            qtype: None,
        };
        let a = wasm.answer(&q).expect("wasm answer");
        assert_eq!(a.selection, interp.answer(&q).expect("interp").selection);
        let (unit, counts) = a.shown.expect("a trading policy's answer keeps the counts");
        assert_eq!(unit, mesa_core::Shown::Words);
        assert_eq!(
            a.to_json(&q, false)["shown"]["words"]
                .as_array()
                .map(Vec::len),
            Some(31)
        );
        // The trade, recomputed here from all five's sections.
        let full = all.answer(&q).expect("all five");
        let tokens = |m: Mask| -> f64 {
            full.composition
                .sections
                .iter()
                .filter(|s| m.contains(s.structure))
                .map(|s| s.tokens() as f64)
                .sum()
        };
        let total = counts[Mask::ALL.subset_index().unwrap()];
        let value = |m: Mask| {
            counts[m.subset_index().unwrap()] / total - 0.5 * tokens(m) / tokens(Mask::ALL)
        };
        if total > 0.0 {
            let best = Mask::subsets().map(value).fold(f64::NEG_INFINITY, f64::max);
            assert_eq!(value(a.selection.mask), best, "{episode}: {text}");
        }
        // What it reads is what it shows: the composition holds the mask.
        let got: Vec<Structure> = a.composition.sections.iter().map(|s| s.structure).collect();
        assert_eq!(got, a.selection.mask.iter().collect::<Vec<_>>());
        kept.insert(a.selection.mask);
    }
    assert!(
        kept.iter().any(|m| *m != Mask::ALL),
        "the trade dropped something: {kept:?}"
    );
    drop((wasm, interp, all));
    drop(store);
    let _ = std::fs::remove_dir_all(dir);
}
