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
    // A reader that answered before the update (as another process would).
    let early = m.reader("b").expect("reader");
    assert_eq!(answers(&early), before);
    // What a policy reads: the snapshot's episode fields.
    let seen = |t: &Tenant| {
        let m = t.memory("e").expect("memory");
        (
            m.episode.domain.clone(),
            m.episode.outcome.clone(),
            m.episode.meta.clone(),
        )
    };

    // The domain and the metadata keep the state; the outcome does not.
    let mut update = EpisodeUpdate {
        domain: Some("GAME".into()),
        meta: Some(meta.clone()),
        ..EpisodeUpdate::default()
    };
    assert!(b.update_episode("e", &update).expect("update"));
    assert!(state(&b), "kept");
    assert_eq!(answers(&b), before, "no structure reads them");
    assert_eq!(seen(&b), ("GAME".to_string(), None, meta.clone()));
    assert_eq!(seen(&early), seen(&b), "the reader sees the commit");
    update.outcome = Some(Some("success".into()));
    assert!(b.update_episode("e", &update).expect("update"));
    assert!(!state(&b), "S's outcome line changed");
    assert!(!b.update_episode("e", &update).expect("again"), "a retry");

    let fields = |t: &Tenant| {
        let e = t.episode("e").expect("episode");
        (e.task, e.domain, e.outcome, e.meta)
    };
    assert_eq!(fields(&b), fields(&a));
    assert_eq!(answers(&b), answers(&a));
    assert_eq!(seen(&b), seen(&a));
    assert_eq!(answers(&early), answers(&a), "the earlier reader follows");
    assert!(
        state(&b),
        "the writer's question persisted the rebuilt state"
    );
    let reader = m.reader("b").expect("reader");
    assert_eq!(
        answers(&reader),
        answers(&a),
        "reopened from the rebuilt state"
    );
    assert_eq!(seen(&reader), seen(&a));

    // Removed again, the outcome leaves the episode as it was before.
    let removed = EpisodeUpdate {
        outcome: Some(None),
        ..EpisodeUpdate::default()
    };
    assert!(b.update_episode("e", &removed).expect("remove"));
    assert!(!state(&b), "S's outcome line went");
    assert_eq!(b.episode("e").expect("episode").outcome, None);
    assert_eq!(answers(&b), before);
    assert_eq!(answers(&early), before, "the earlier reader follows");
    assert!(!b.update_episode("e", &removed).expect("again"), "a retry");
    assert!(b.update_episode("e", &update).expect("set again"));

    // Nothing is written for an unknown episode or a field past the limit.
    let err = b.update_episode("nope", &update).expect_err("unknown");
    assert_eq!(err.code(), "unknown-episode");
    let big = EpisodeUpdate {
        outcome: Some(Some("x".repeat(MAX_TEXT_BYTES + 1))),
        ..EpisodeUpdate::default()
    };
    let err = b.update_episode("e", &big).expect_err("too large");
    assert_eq!(err.code(), "too-large");
    assert_eq!(fields(&b), fields(&a));
    let err = reader.update_episode("e", &update).expect_err("a reader");
    assert_eq!(err.code(), "read-only");
}

/// An import run again after an update finds the episode changed: it is
/// not counted as imported again, and nothing is written over it.
#[test]
fn an_import_again_after_an_update_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let mut e = game_episode(5);
    e.steps
        .iter_mut()
        .for_each(|s| s.timestamp = Some("2026-03-01T10:00:00Z".into()));
    let t = m.tenant("t").expect("tenant");
    t.import_episode(&e).expect("import");
    assert!(t.import_episode(&e).expect("again").again);
    let update = EpisodeUpdate {
        outcome: Some(Some("success".into())),
        ..EpisodeUpdate::default()
    };
    assert!(t.update_episode(&e.id, &update).expect("update"));
    let err = t.import_episode(&e).map(|_| ()).expect_err("changed since");
    assert_eq!(err.code(), "episode-exists");
    assert_eq!(
        t.episode(&e.id).expect("episode").outcome.as_deref(),
        Some("success")
    );
}

/// Relations that name the task (as an LLM extractor's may): the rules'
/// relations of the step, and one from the task's first word to the step.
/// A task holding `refuse` fails its extraction.
struct TaskReader;

impl crate::structures::TripleExtractor for TaskReader {
    fn name(&self) -> String {
        "task-reader-v1".into()
    }

    fn extract(
        &self,
        episode: &Episode,
        step: &crate::dataset::Step,
    ) -> Result<Vec<crate::structures::Triple>, crate::structures::PluginError> {
        if episode.task.contains("refuse") {
            return Err(crate::structures::PluginError::Failed {
                plugin: self.name(),
                message: "refused".into(),
            });
        }
        let mut out = crate::structures::RuleExtractor.extract(episode, step)?;
        out.push(crate::structures::Triple {
            subject: episode.task.split(' ').next().unwrap_or("").into(),
            relation: "drives".into(),
            object: format!("step {}", step.index),
        });
        Ok(out)
    }
}

/// A restated task answers as an episode created with it: with the rules'
/// extractor (which does not read it) and with one that does (whose
/// relations are extracted again); a failed extraction changes nothing.
#[test]
fn a_restated_task_answers_as_one_created_with_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let e = game_episode(300);
    let old = "lantern quest: find the brass key".to_string();
    let new = "vault quest: open the iron door".to_string();
    let plugins = |reads: bool| {
        let mut p = Plugins::default();
        if reads {
            p.extractor = Arc::new(TaskReader);
        }
        p
    };
    for reads in [false, true] {
        let made = |name: &str, task: &str| {
            let t = m
                .tenant_with(name, Config::default(), plugins(reads))
                .expect("tenant");
            t.create_episode(&NewEpisode {
                id: "e".into(),
                task: task.into(),
                ..NewEpisode::default()
            })
            .expect("create");
            t.append_batch("e", steps(&e)).expect("append");
            t
        };
        let want = made(&format!("want-{reads}"), &new);
        let t = made(&format!("got-{reads}"), &old);
        let before = answers(&t);
        assert_ne!(before, answers(&want), "S shows the task");
        assert!(db::read_state(&t.conn(), "e").expect("read").is_some());
        let restate = |task: &str| EpisodeUpdate {
            task: Some(task.into()),
            ..EpisodeUpdate::default()
        };
        if reads {
            let err = t
                .update_episode("e", &restate("refuse this"))
                .expect_err("the extractor fails");
            assert_eq!(err.code(), "builder");
            assert_eq!(t.episode("e").expect("episode").task, old);
            assert_eq!(answers(&t), before, "nothing written");
        }
        assert!(t.update_episode("e", &restate(&new)).expect("update"));
        assert!(!t.update_episode("e", &restate(&new)).expect("again"));
        assert_eq!(t.episode("e").expect("episode").task, new);
        assert_eq!(answers(&t), answers(&want), "extractor reads task: {reads}");
        let reader = m
            .reader_with(&format!("got-{reads}"), Config::default(), plugins(reads))
            .expect("reader");
        assert_eq!(answers(&reader), answers(&want), "from the rebuilt state");
    }
}
