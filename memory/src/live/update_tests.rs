//! An episode whose fields are changed after its steps answers exactly as
//! one created with those fields and the same steps, from the writer and
//! from a fresh reader; the persisted state goes only when the outcome
//! changes.

use super::*;
use crate::structures::fixtures::game_episode;
use crate::Retrieval;
use mesa_core::{Mask, Structure};
use std::collections::BTreeMap;

fn steps(e: &Episode) -> Vec<NewStep> {
    let at = |i: usize| format!("2026-03-01T10:{:02}:{:02}Z", i / 60, i % 60);
    e.steps
        .iter()
        .map(|s| NewStep {
            timestamp: Some(at(s.index)),
            ..NewStep::of(s)
        })
        .collect()
}

fn answers(t: &Tenant) -> Vec<String> {
    let m = t.memory("e").expect("memory");
    let masks = Structure::ALL.map(Mask::single);
    let mut out = Vec::new();
    for q in [
        "Where is the key?",
        "Why was the door locked?",
        "What happened at step 20?",
    ] {
        for mask in masks.iter().copied().chain([Mask::ALL]) {
            let r = Retrieval::new(&m, q).compose(mask).expect("compose");
            out.push(r.render());
        }
    }
    out
}

#[test]
fn an_updated_episode_answers_as_one_created_with_its_fields() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let e = game_episode(300);
    let meta = BTreeMap::from([("agent".to_string(), "v3".to_string())]);
    let a = m.tenant("a").expect("tenant");
    a.create_episode(&NewEpisode {
        id: "e".into(),
        task: e.task.clone(),
        domain: "GAME".into(),
        outcome: Some("success".into()),
        meta: meta.clone(),
        created: None,
    })
    .expect("create");
    a.append_batch("e", steps(&e)).expect("append");
    let b = m.tenant("b").expect("tenant");
    b.create_episode(&NewEpisode {
        id: "e".into(),
        task: e.task.clone(),
        ..NewEpisode::default()
    })
    .expect("create");
    b.append_batch("e", steps(&e)).expect("append");
    let before = answers(&b);
    assert_ne!(before, answers(&a), "S shows the outcome");
    let state = |t: &Tenant| db::read_state(&t.conn(), "e").expect("read").is_some();
    assert!(state(&b), "the question persisted the state");

    // The domain and the metadata keep the state; the outcome does not.
    let mut update = EpisodeUpdate {
        domain: Some("GAME".into()),
        meta: Some(meta.clone()),
        ..EpisodeUpdate::default()
    };
    assert!(b.update_episode("e", &update).expect("update"));
    assert!(state(&b), "kept");
    assert_eq!(answers(&b), before, "no structure reads them");
    update.outcome = Some("success".into());
    assert!(b.update_episode("e", &update).expect("update"));
    assert!(!state(&b), "S's outcome line changed");
    assert!(!b.update_episode("e", &update).expect("again"), "a retry");

    let fields = |t: &Tenant| {
        let e = t.episode("e").expect("episode");
        (e.task, e.domain, e.outcome, e.meta)
    };
    assert_eq!(fields(&b), fields(&a));
    assert_eq!(answers(&b), answers(&a));
    let reader = m.reader("b").expect("reader");
    assert_eq!(
        answers(&reader),
        answers(&a),
        "reopened from the rebuilt state"
    );

    // Nothing is written for an unknown episode or a field past the limit.
    let err = b.update_episode("nope", &update).expect_err("unknown");
    assert_eq!(err.code(), "unknown-episode");
    let big = EpisodeUpdate {
        outcome: Some("x".repeat(MAX_TEXT_BYTES + 1)),
        ..EpisodeUpdate::default()
    };
    let err = b.update_episode("e", &big).expect_err("too large");
    assert_eq!(err.code(), "too-large");
    assert_eq!(fields(&b), fields(&a));
    let err = reader.update_episode("e", &update).expect_err("a reader");
    assert_eq!(err.code(), "read-only");
}
