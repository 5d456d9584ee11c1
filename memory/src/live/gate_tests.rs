//! One build per episode at a time: questions that arrive together while
//! an episode's snapshot is missing or behind share the one build (they
//! get the same snapshot), where each used to build its own.

use super::*;
use std::sync::Barrier;

fn step(action: &str) -> NewStep {
    NewStep {
        index: None,
        action: action.into(),
        observation: "ok".into(),
        timestamp: None,
    }
}

/// `n` threads ask for the episode at once; the snapshots they got.
fn together(t: &Arc<Tenant>, n: usize) -> Vec<Arc<EpisodeMemory>> {
    let start = Arc::new(Barrier::new(n));
    let handles: Vec<_> = (0..n)
        .map(|_| {
            let (t, start) = (t.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                t.memory("e").expect("builds")
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| h.join().expect("no panic"))
        .collect()
}

#[test]
fn questions_arriving_together_share_one_build() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let t = Arc::new(m.tenant("a").unwrap());
    t.create_episode(&NewEpisode {
        id: "e".into(),
        task: "sort the invoices".into(),
        ..NewEpisode::default()
    })
    .unwrap();
    let steps: Vec<NewStep> = (0..200)
        .map(|i| step(&format!("open invoice {i}")))
        .collect();
    t.append_batch("e", steps).unwrap();
    for round in 0..5 {
        // Cold (round 0), then behind by one append.
        let got = together(&t, 8);
        let first = &got[0];
        assert!(
            got.iter().all(|m| Arc::ptr_eq(m, first)),
            "round {round}: the questions built {} snapshots",
            got.iter()
                .map(|m| Arc::as_ptr(m) as usize)
                .collect::<std::collections::BTreeSet<_>>()
                .len()
        );
        assert_eq!(first.episode.steps.len(), 200 + round);
        drop(got);
        t.append("e", step(&format!("file invoice {round}")))
            .unwrap();
    }
    // The gates are gone once no question waits.
    assert!(t.gates.lock().unwrap().is_empty());
}

#[test]
fn catching_up_extends_a_built_snapshot_and_builds_nothing_new() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let t = m.tenant("a").unwrap();
    for id in ["e", "f"] {
        t.create_episode(&NewEpisode {
            id: id.into(),
            ..NewEpisode::default()
        })
        .unwrap();
        t.append(id, step("open the ledger")).unwrap();
    }
    // No snapshot of `f`: nothing is built for it.
    assert!(!t.catch_up("f").unwrap());
    assert!(!t.snapshots.read().unwrap().built.contains_key("f"));
    // `e`'s snapshot, then an append: behind until it catches up.
    t.memory("e").unwrap();
    assert!(!t.catch_up("e").unwrap(), "up to date");
    t.append("e", step("add the refund")).unwrap();
    assert!(t.ready("e").is_none());
    assert!(t.catch_up("e").unwrap());
    let ready = t.ready("e").expect("ready after catching up");
    assert_eq!(ready.episode.steps.len(), 2);
    assert!(Arc::ptr_eq(&ready, &t.memory("e").unwrap()));
    assert_eq!(t.catch_up("nope").ok(), Some(false));
}

#[test]
fn catching_up_builds_again_what_a_correction_or_a_forget_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let t = m.tenant("a").unwrap();
    t.create_episode(&NewEpisode {
        id: "e".into(),
        ..NewEpisode::default()
    })
    .unwrap();
    t.append_batch("e", vec![step("open the ledger"), step("add the refund")])
        .unwrap();
    t.memory("e").unwrap();
    t.correct("e", 1, step("add the credit note")).unwrap();
    assert!(t.ready("e").is_none(), "the correction dropped it");
    assert!(t.catch_up("e").unwrap());
    let ready = t.ready("e").expect("built again");
    assert_eq!(ready.episode.steps[1].action, "add the credit note");
    assert!(!t.catch_up("e").unwrap(), "up to date");
    t.forget("e", Forget::Step(0)).unwrap();
    assert!(t.catch_up("e").unwrap());
    assert_eq!(t.ready("e").expect("built again").episode.steps.len(), 1);
    // Forgotten whole: nothing to build, and no error.
    t.forget("e", Forget::Episode).unwrap();
    assert!(!t.catch_up("e").unwrap());
    assert!(t.snapshots.read().unwrap().dropped.is_empty());
}
