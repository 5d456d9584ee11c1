//! V's saved HNSW graph in the live store: saved by the writer, loaded by
//! the next handle instead of built, removed by a forget, cleaned by a
//! compaction.

use super::*;
use crate::structures::AnnSource;
use crate::Retrieval;
use mesa_core::{Mask, Structure};
use std::time::{Duration, Instant};

fn config() -> Config {
    Config {
        vector_hnsw_threshold: 100,
        ..Config::default()
    }
}

fn dense() -> Plugins {
    Plugins {
        embedder: Arc::new(crate::structures::fixtures::Dense),
        ..Plugins::default()
    }
}

/// `n` steps through a maze of 150 rooms.
fn maze(n: usize) -> Vec<NewStep> {
    (0..n)
        .map(|i| NewStep {
            index: None,
            action: format!("go {}", ["north", "south", "east", "west"][i % 4]),
            observation: format!("room {i} has a door to room {}", (i * 7) % 150),
            timestamp: None,
        })
        .collect()
}

fn writer(m: &LiveMemory) -> Tenant {
    m.tenant_with("t", config(), dense()).expect("tenant")
}

/// The episode's graph, once the background thread has made it.
fn ready(t: &Tenant) -> AnnSource {
    let start = Instant::now();
    loop {
        if let Some(s) = t.memory("long").expect("memory").vector.ann_source() {
            return s;
        }
        assert!(start.elapsed() < Duration::from_secs(120), "never ready");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn files(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    n.sort();
    n
}

/// A whole save: the dump's two files and the manifest, written last.
fn saved(dir: &Path) -> bool {
    let f = files(dir);
    f.len() == 3 && f.iter().any(|n| n.ends_with(".json"))
}

fn wait_for(what: &str, ok: impl Fn() -> bool) {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < Duration::from_secs(60), "never {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_long_episodes_graph_is_saved_loaded_and_removed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mem = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let ann = dir.path().join("mem/tenants/t/ann");
    let t = writer(&mem);
    t.create_episode(&NewEpisode {
        id: "long".into(),
        task: "walk the maze".into(),
        domain: "GAME".into(),
        ..NewEpisode::default()
    })
    .expect("create");
    t.append_batch("long", maze(150)).expect("append");
    assert_eq!(ready(&t), AnnSource::Built);
    wait_for("saved", || saved(&ann));
    let question = "which room has a door to room 42";
    let before = Retrieval::new(&t.memory("long").expect("memory"), question)
        .compose(Mask::ALL)
        .expect("retrieves");
    drop(t);

    // A new handle loads the graph; an append after it is inserted.
    let t = writer(&mem);
    assert_eq!(ready(&t), AnnSource::Loaded);
    let after = Retrieval::new(&t.memory("long").expect("memory"), question)
        .compose(Mask::ALL)
        .expect("retrieves");
    assert_eq!(before, after);
    let exit = NewStep {
        index: None,
        action: "go north".into(),
        observation: "room 150 is the exit".into(),
        timestamp: None,
    };
    t.append("long", exit).expect("append");
    let m = t.memory("long").expect("memory");
    // The new row is in the graph: asked with its own text, V answers it
    // first, as the exact scan over the same steps does.
    let stored = t.episode("long").expect("episode");
    let text = crate::structures::render_step(
        stored.steps.last().expect("a step"),
        Config::default().evidence_text_bytes,
    );
    let exact =
        EpisodeMemory::build(Arc::new(stored), &Config::default(), &dense()).expect("builds");
    let v = |m: &EpisodeMemory| {
        Retrieval::new(m, &text)
            .compose(Mask::single(Structure::Vector))
            .expect("retrieves")
    };
    let found = v(&m);
    assert_eq!(found, v(&exact));
    assert_eq!(found.sections[0].items[0].steps, [150], "{found:?}");
    drop(m);
    // Closing the writer saves the grown graph.
    drop(t);
    let t = writer(&mem);
    assert_eq!(ready(&t), AnnSource::Loaded);
    assert!(
        files(&ann).iter().any(|f| f.contains("-151.")),
        "{:?}",
        files(&ann)
    );

    // A forget removes it; the next opening builds over what is left.
    t.forget("long", Forget::Step(3)).expect("forget");
    assert!(files(&ann).is_empty(), "{:?}", files(&ann));
    assert_eq!(ready(&t), AnnSource::Built);
    wait_for("saved again", || saved(&ann));
    // A forgotten episode's graph goes with a compaction, and what a
    // crashed save left too.
    std::fs::write(ann.join("e0-7.hnsw.graph"), b"left by a crash").expect("write");
    t.forget("long", Forget::Episode).expect("forget");
    t.compact().expect("compact");
    assert!(files(&ann).is_empty(), "{:?}", files(&ann));
}

/// An episode dropped for the memory budget while its graph is still being
/// built, then forgotten in part: the build that ends after the forget
/// saves nothing, so no file holds the forgotten rows.
#[test]
fn a_graph_dropped_while_building_is_not_saved_after_a_forget() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mem = LiveMemory::open(&dir.path().join("mem"))
        .expect("opens")
        .keeping_steps(0);
    let ann = dir.path().join("mem/tenants/t/ann");
    let t = writer(&mem);
    for (id, n) in [("long", 3000), ("short", 3)] {
        t.create_episode(&NewEpisode {
            id: id.into(),
            task: "walk the maze".into(),
            ..NewEpisode::default()
        })
        .expect("create");
        t.append_batch(id, maze(n)).expect("append");
    }
    // Built, its graph started on another thread; then dropped at once.
    t.memory("long").expect("memory");
    t.memory("short").expect("memory");
    let holds = t
        .snapshots
        .read()
        .unwrap()
        .dropped_anns
        .get("long")
        .cloned();
    let holds = holds.expect("the dropped snapshot's graph is held");
    t.forget("long", Forget::Step(3)).expect("forget");
    assert!(!t
        .snapshots
        .read()
        .unwrap()
        .dropped_anns
        .contains_key("long"));
    wait_for("the build ended", || holds.iter().all(|h| !h.is_alive()));
    assert!(files(&ann).is_empty(), "{:?}", files(&ann));
}
