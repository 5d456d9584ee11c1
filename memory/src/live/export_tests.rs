//! A tenant written step by step, corrected and forgotten in places,
//! exported and imported into another tenant answers every kept question
//! exactly as the first one does: the export keeps what the memory holds.

use super::*;
use crate::dataset::{load_str, LoadOptions, Question};
use crate::Retrieval;
use mesa_core::Mask;
use std::collections::BTreeMap;

fn step(action: &str, minute: usize) -> NewStep {
    NewStep {
        index: None,
        action: action.into(),
        observation: format!("{action}: done \"quoted\" é"),
        timestamp: Some(format!("2026-03-01T10:{minute:02}:00Z")),
    }
}

#[test]
fn an_exported_tenant_imported_elsewhere_answers_the_same() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let a = m.tenant("a").expect("tenant");
    a.create_episode(&NewEpisode {
        id: "run-1".into(),
        task: "fix the date parser".into(),
        domain: "software".into(),
        outcome: Some("success".into()),
        meta: BTreeMap::from([("agent".to_string(), "v3".to_string())]),
        created: Some("2026-02-27T08:00:00Z".into()),
    })
    .expect("create");
    let late = NewEpisode {
        id: "late".into(),
        created: Some("last spring".into()),
        ..NewEpisode::default()
    };
    let refused = a.create_episode(&late).map_err(|e| e.code());
    assert_eq!(refused, Err("bad-timestamp"));
    let actions = [
        "run pytest",
        "open dates.py",
        "edit parse()",
        "run pytest again",
        "commit",
    ];
    for (i, act) in actions.iter().enumerate() {
        a.append("run-1", step(act, i)).expect("append");
    }
    a.correct("run-1", 2, step("edit parse() to accept month 12", 2))
        .expect("correct");
    a.forget("run-1", Forget::Step(3)).expect("forget");
    let questions = [
        ("q1", "What was edited at step 2?", vec![2, 3]),
        ("q2", "What happened after the edit?", vec![]),
    ]
    .map(|(id, q, evidence)| Question {
        id: id.into(),
        question: q.into(),
        answer: Some("parse()".into()),
        qtype: Some("recall".into()),
        evidence,
    });
    a.add_questions("run-1", &questions).expect("questions");
    a.create_episode(&NewEpisode {
        id: "empty".into(),
        task: "nothing yet".into(),
        ..NewEpisode::default()
    })
    .expect("create");

    let mut out = Vec::new();
    let done = a.export(&mut out, "the buffer").expect("export");
    assert_eq!((done.episodes, done.steps, done.questions), (2, 4, 2));
    assert_eq!(done.empty, 1, "the episode without steps is written");
    assert_eq!(done.dropped_evidence, 1, "step 3 was forgotten");

    let text = String::from_utf8(out).expect("utf-8");
    let err = load_str(&text, "export.jsonl", &LoadOptions::default()).expect_err("no steps");
    assert!(
        err.to_string().contains("no steps"),
        "a store needs steps: {err}"
    );
    let options = LoadOptions {
        into_tenant: true,
        ..LoadOptions::default()
    };
    let loaded = load_str(&text, "export.jsonl", &options).expect("reads back");
    let b = m.tenant("b").expect("tenant");
    for e in &loaded.episodes {
        let (steps, questions) = if e.id == "run-1" { (4, 2) } else { (0, 0) };
        let done = b.import_episode(e).expect("import");
        assert_eq!(
            (done.steps, done.questions, done.again),
            (steps, questions, false)
        );
        // Again (after an interruption, say): nothing is added.
        let again = b.import_episode(e).expect("import again");
        assert_eq!((again.steps, again.again), (steps, true));
        // Fields, creation time and steps as the first tenant has them.
        assert_eq!(b.episode(&e.id).expect("b"), a.episode(&e.id).expect("a"));
    }
    let created = |t: &Tenant| {
        let list = t.episodes().expect("episodes").into_iter();
        list.map(|e| (e.id, e.created)).collect::<Vec<_>>()
    };
    assert_eq!(created(&b), created(&a));
    assert!(created(&b).contains(&("run-1".into(), "2026-02-27T08:00:00Z".into())));
    let kept = a.questions("run-1").expect("questions");
    assert_eq!(kept[0].evidence, [2, 3], "a keeps what it was given");
    assert_eq!(b.questions("run-1").expect("questions")[0].evidence, [2]);
    let (ma, mb) = (a.memory("run-1").expect("a"), b.memory("run-1").expect("b"));
    for q in kept {
        let compose = |m| {
            Retrieval::new(m, &q.question)
                .compose(Mask::ALL)
                .expect("compose")
        };
        assert_eq!(compose(&mb), compose(&ma), "{}", q.question);
    }
    drop((ma, mb));
    // An import interrupted after the creation completes when run again.
    let c = m.tenant("c").expect("tenant");
    let e = loaded
        .episodes
        .iter()
        .find(|e| e.id == "run-1")
        .expect("run-1");
    c.create_episode_once(&NewEpisode::of(e), Some(IMPORT_CREATE))
        .expect("create");
    let done = c.import_episode(e).expect("completes");
    assert_eq!((done.steps, done.again), (4, false));
    assert_eq!(
        c.episode("run-1").expect("c"),
        a.episode("run-1").expect("a")
    );
    // An episode made otherwise but holding the same steps counts as
    // imported (as one whose request ids have gone); one that differs is
    // not imported over.
    assert!(a.import_episode(e).expect("the same").again);
    a.correct("run-1", 2, step("edit parse() again", 2))
        .expect("correct");
    let err = a.import_episode(e).map(|_| ()).expect_err("a differs now");
    assert_eq!(err.code(), "episode-exists");
}

/// An episode whose steps were all forgotten after an import is exported
/// without steps; imported again over the first import, it is refused (the
/// tenant still holds those steps), where one that differs nowhere counts
/// as imported again; and a creation time that differs is refused too.
#[test]
fn an_import_again_counts_only_what_the_tenant_holds_as_given() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let a = m.tenant("a").expect("tenant");
    let new = |id: &str| NewEpisode {
        id: id.into(),
        task: "keep a diary".into(),
        created: Some("2026-02-27T08:00:00Z".into()),
        ..NewEpisode::default()
    };
    a.create_episode(&new("x")).expect("create");
    a.create_episode(&new("none")).expect("create");
    a.append_batch("x", vec![step("wake up", 0), step("write", 1)])
        .expect("append");
    let into = LoadOptions {
        into_tenant: true,
        ..LoadOptions::default()
    };
    let export = |t: &Tenant| {
        let mut out = Vec::new();
        t.export(&mut out, "the buffer").expect("export");
        let text = String::from_utf8(out).expect("utf-8");
        load_str(&text, "export.jsonl", &into)
            .expect("reads")
            .episodes
    };
    let first = export(&a);
    let b = m.tenant("b").expect("tenant");
    b.import(&first, |_| {}).expect("import");
    assert_eq!(b.import(&first, |_| {}).expect("again").again, 2);
    a.forget("x", Forget::Range(0, 1)).expect("forget");
    let second = export(&a);
    assert!(second.iter().all(|e| e.steps.is_empty()));
    let none = second.iter().find(|e| e.id == "none").expect("none");
    assert!(b.import_episode(none).expect("the same").again);
    let x = second.iter().find(|e| e.id == "x").expect("x");
    let err = b
        .import_episode(x)
        .map(|_| ())
        .expect_err("b holds x's steps");
    assert_eq!(err.code(), "episode-exists");
    assert_eq!(b.steps("x").expect("steps").len(), 2, "nothing changed");
    // The same episode with another creation time is not the same.
    let mut moved = none.clone();
    moved.created = Some("2026-03-01T00:00:00Z".into());
    let err = b
        .import_episode(&moved)
        .map(|_| ())
        .expect_err("another time");
    assert_eq!(err.code(), "request-id-reused");
}

/// A tenant whose embedder cannot be made here still lists and exports
/// through [`LiveMemory::lister`], which asks nothing.
#[test]
fn a_lister_exports_a_tenant_whose_builders_cannot_be_made() {
    let dense = Arc::new(crate::structures::fixtures::Dense);
    let (_dir, m) = super::embedder_tests::written_with(dense);
    assert_eq!(
        m.reader("t").err().map(|e| e.code()),
        Some("embedder-unavailable")
    );
    let l = m.lister("t").expect("lists");
    assert_eq!(l.episodes().expect("episodes").len(), 1);
    let mut out = Vec::new();
    assert_eq!(l.export(&mut out, "the buffer").expect("export").steps, 3);
    assert_eq!(
        l.memory("e").map(|_| ()).map_err(|e| e.code()),
        Err("unbuilt")
    );
    let append = l
        .append("e", step("more", 2))
        .map(|_| ())
        .map_err(|e| e.code());
    assert_eq!(append, Err("read-only"));
}

/// Exports to one path at once each write a file of their own and rename
/// it: the file is one whole export, and no part file is left.
#[test]
fn exports_to_one_path_at_once_leave_one_whole_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    let t = m.tenant("t").expect("tenant");
    for id in ["a", "b", "c"] {
        t.create_episode(&NewEpisode {
            id: id.into(),
            task: "t".into(),
            ..NewEpisode::default()
        })
        .expect("create");
        let steps = (0..50)
            .map(|i| step(&format!("step {i} of {id}"), i % 60))
            .collect();
        t.append_batch(id, steps).expect("append");
    }
    let mut want = Vec::new();
    t.export(&mut want, "the buffer").expect("export");
    let path = dir.path().join("out.jsonl");
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| t.export_to(&path).expect("export"));
        }
    });
    assert_eq!(std::fs::read(&path).expect("read"), want);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".part-")), "{names:?}");
    // A path whose directory does not exist: an error, nothing written.
    let nowhere = dir.path().join("no/such/dir/out.jsonl");
    assert_eq!(
        t.export_to(&nowhere).map(|_| ()).map_err(|e| e.code()),
        Err("io")
    );
}
