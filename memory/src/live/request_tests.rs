//! Request ids: an append sent again with its id appends nothing and gets
//! the first one's indices, across a reopen too; the id with other steps is
//! refused; a forget or a correction clears the episode's ids.

use super::*;

fn step(action: &str) -> NewStep {
    NewStep {
        index: None,
        action: action.into(),
        observation: "ok".into(),
        timestamp: Some("2026-03-01T10:00:00Z".into()),
    }
}

fn opened() -> (tempfile::TempDir, LiveMemory) {
    let dir = tempfile::tempdir().expect("temp dir");
    let m = LiveMemory::open(&dir.path().join("mem")).expect("opens");
    (dir, m)
}

fn episode(t: &Tenant, id: &str) {
    t.create_episode(&NewEpisode {
        id: id.into(),
        task: "count the orders".into(),
        ..NewEpisode::default()
    })
    .unwrap();
}

#[test]
fn an_append_sent_again_with_its_id_appends_nothing() {
    let (dir, m) = opened();
    let t = m.tenant("a").unwrap();
    episode(&t, "e");
    let batch = || vec![step("open the db"), step("list tables")];
    let first = t.append_once("e", batch(), Some("req-1")).unwrap();
    assert_eq!((first.indices.clone(), first.replayed), (vec![0, 1], false));
    let again = t.append_once("e", batch(), Some("req-1")).unwrap();
    assert_eq!((again.indices, again.replayed), (vec![0, 1], true));
    assert_eq!(t.steps("e").unwrap().len(), 2);
    // Another id appends; no id always appends.
    let other = t.append_once("e", batch(), Some("req-2")).unwrap();
    assert_eq!(other.indices, [2, 3]);
    t.append_batch("e", batch()).unwrap();
    assert_eq!(t.steps("e").unwrap().len(), 6);
    // The same id with other steps is refused, and writes nothing.
    let err = t
        .append_once("e", vec![step("something else")], Some("req-1"))
        .unwrap_err();
    assert_eq!(err.code(), "request-id-reused", "{err}");
    assert_eq!(err.kind(), LiveErrorKind::Conflict);
    assert_eq!(t.steps("e").unwrap().len(), 6);
    // The same id in another episode is another request.
    episode(&t, "f");
    let f = t.append_once("f", batch(), Some("req-1")).unwrap();
    assert_eq!((f.indices, f.replayed), (vec![0, 1], false));
    // An acknowledged id outlives the handle.
    drop(t);
    drop(m);
    let m = LiveMemory::open(&dir.path().join("mem")).unwrap();
    let t = m.tenant("a").unwrap();
    let again = t.append_once("e", batch(), Some("req-2")).unwrap();
    assert_eq!((again.indices, again.replayed), (vec![2, 3], true));
    assert_eq!(t.steps("e").unwrap().len(), 6);
}

#[test]
fn bad_ids_are_refused_and_forgets_clear_ids() {
    let (_dir, m) = opened();
    let t = m.tenant("a").unwrap();
    episode(&t, "e");
    let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
    for id in ["", "a\nb", long.as_str()] {
        let err = t.append_once("e", vec![step("a")], Some(id)).unwrap_err();
        assert_eq!(err.code(), "bad-request-id", "{err}");
    }
    assert!(t.steps("e").unwrap().is_empty());
    t.append_once("e", vec![step("a")], Some("r")).unwrap();
    t.append_once("e", vec![step("b")], Some("s")).unwrap();
    // A correction clears the episode's ids (their digests hold the old
    // text): the retry appends anew.
    t.correct("e", 0, step("a, corrected")).unwrap();
    let r = t.append_once("e", vec![step("a")], Some("r")).unwrap();
    assert_eq!((r.indices, r.replayed), (vec![2], false));
    // So does a forget; and forgetting the episode leaves no id row.
    t.forget("e", Forget::Step(1)).unwrap();
    let s = t.append_once("e", vec![step("b")], Some("s")).unwrap();
    assert!(!s.replayed);
    t.forget("e", Forget::Episode).unwrap();
    let rows: i64 = t
        .conn()
        .query_row("SELECT count(*) FROM requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
}

#[test]
fn a_creation_sent_again_with_its_id_is_replayed() {
    let (_dir, m) = opened();
    let t = m.tenant("a").unwrap();
    let e = NewEpisode {
        id: "e".into(),
        task: "count the orders".into(),
        ..NewEpisode::default()
    };
    assert!(!t.create_episode_once(&e, Some("c1")).unwrap());
    assert!(t.create_episode_once(&e, Some("c1")).unwrap());
    assert_eq!(t.episodes().unwrap().len(), 1);
    // Without the id, or with another, it exists.
    let err = t.create_episode_once(&e, Some("c2")).unwrap_err();
    assert_eq!(err.code(), "episode-exists", "{err}");
    assert_eq!(t.create_episode(&e).unwrap_err().code(), "episode-exists");
    // The id with other fields is another request.
    let other = NewEpisode {
        task: "count the returns".into(),
        ..e.clone()
    };
    let err = t.create_episode_once(&other, Some("c1")).unwrap_err();
    assert_eq!(err.code(), "request-id-reused", "{err}");
    assert_eq!(t.episode("e").unwrap().task, "count the orders");
    // An id of one kind of write is not another kind's.
    let err = t.append_once("e", vec![step("a")], Some("c1")).unwrap_err();
    assert_eq!(err.code(), "request-id-reused", "{err}");
    assert!(t.steps("e").unwrap().is_empty());
}

#[test]
fn a_correction_sent_again_with_its_id_writes_nothing() {
    let (dir, m) = opened();
    let t = m.tenant("a").unwrap();
    episode(&t, "e");
    t.append_batch("e", vec![step("a"), step("b")]).unwrap();
    assert!(!t
        .correct_once("e", 0, step("a, fixed"), Some("k1"))
        .unwrap());
    // Replayed across a reopen: the step keeps what it has now.
    drop(t);
    drop(m);
    let m = LiveMemory::open(&dir.path().join("mem")).unwrap();
    let t = m.tenant("a").unwrap();
    assert!(t
        .correct_once("e", 0, step("a, fixed"), Some("k1"))
        .unwrap());
    assert_eq!(t.steps("e").unwrap()[0].action, "a, fixed");
    // The id with another text, or another step, is refused.
    for (index, text) in [(0, "a, fixed again"), (1, "a, fixed")] {
        let err = t
            .correct_once("e", index, step(text), Some("k1"))
            .unwrap_err();
        assert_eq!(err.code(), "request-id-reused", "{err}");
    }
    assert_eq!(t.steps("e").unwrap()[1].action, "b");
    // A later correction clears the ids: the retry then corrects again.
    t.correct("e", 0, step("a, third")).unwrap();
    assert!(!t
        .correct_once("e", 0, step("a, fixed"), Some("k1"))
        .unwrap());
    assert_eq!(t.steps("e").unwrap()[0].action, "a, fixed");
}

#[test]
fn a_forget_sent_again_with_its_id_is_answered_as_the_first() {
    let (_dir, m) = opened();
    let t = m.tenant("a").unwrap();
    episode(&t, "e");
    t.append_batch("e", vec![step("a"), step("b"), step("c"), step("d")])
        .unwrap();
    let first = t.forget_once("e", Forget::Range(1, 2), Some("f1")).unwrap();
    assert_eq!((first.steps, first.replayed), (2, false));
    // The steps are gone; the retry answers as the first did.
    let again = t.forget_once("e", Forget::Range(1, 2), Some("f1")).unwrap();
    assert_eq!((again.steps, again.replayed), (2, true));
    let left: Vec<usize> = t.steps("e").unwrap().iter().map(|s| s.index).collect();
    assert_eq!(left, [0, 3]);
    // Without the id the steps are unknown; with it and other steps, refused.
    assert_eq!(
        t.forget("e", Forget::Range(1, 2)).unwrap_err().code(),
        "unknown-step"
    );
    let err = t.forget_once("e", Forget::Step(3), Some("f1")).unwrap_err();
    assert_eq!(err.code(), "request-id-reused", "{err}");
    assert_eq!(t.steps("e").unwrap().len(), 2);
    // The whole episode: the retry finds it gone and says what went.
    let gone = t.forget_once("e", Forget::Episode, Some("f2")).unwrap();
    assert_eq!((gone.steps, gone.replayed), (2, false));
    let again = t.forget_once("e", Forget::Episode, Some("f2")).unwrap();
    assert_eq!((again.steps, again.replayed), (2, true));
    assert_eq!(
        t.forget("e", Forget::Episode).unwrap_err().code(),
        "unknown-episode"
    );
    // What the forget's row keeps: the ids and step numbers, no text.
    let conn = t.conn();
    let rows: i64 = conn
        .query_row("SELECT count(*) FROM requests", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    let kept: (String, String, i64) = conn
        .query_row("SELECT episode, id, steps FROM forgotten", [], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .unwrap();
    assert_eq!(kept, ("e".into(), "f2".into(), 2));
    drop(conn);
    // The episode made anew: the old forget's id still answers as it did,
    // and deletes nothing.
    episode(&t, "e");
    t.append("e", step("new")).unwrap();
    let again = t.forget_once("e", Forget::Episode, Some("f2")).unwrap();
    assert_eq!((again.steps, again.replayed), (2, true));
    assert_eq!(t.steps("e").unwrap().len(), 1);
}

/// One write of the property below.
#[derive(Debug, Clone)]
enum Write {
    Create(String),
    Append(String, Vec<String>),
    Correct(String, usize, String),
    Forget(String, Forget),
}

fn write_strategy() -> impl proptest::strategy::Strategy<Value = Write> {
    use proptest::prelude::*;
    let episode = prop_oneof![Just("e".to_string()), Just("f".to_string())];
    let text = "[a-c]{1,3}";
    prop_oneof![
        episode.clone().prop_map(Write::Create),
        (episode.clone(), proptest::collection::vec(text, 1..3))
            .prop_map(|(e, t)| Write::Append(e, t)),
        (episode.clone(), 0..6usize, text).prop_map(|(e, i, t)| Write::Correct(e, i, t)),
        (episode.clone(), 0..6usize).prop_map(|(e, i)| Write::Forget(e, Forget::Step(i))),
        (episode.clone(), 0..4usize, 0..3usize)
            .prop_map(|(e, i, n)| Write::Forget(e, Forget::Range(i, i + n))),
        episode.prop_map(|e| Write::Forget(e, Forget::Episode)),
    ]
}

/// What a write answered: its value and whether it was a replay, or its
/// error's code.
fn apply(t: &Tenant, w: &Write, id: &str) -> Result<(String, bool), String> {
    let done = match w {
        Write::Create(e) => {
            let new = NewEpisode {
                id: e.clone(),
                task: "file the claims".into(),
                ..NewEpisode::default()
            };
            t.create_episode_once(&new, Some(id))
                .map(|r| ("created".to_string(), r))
        }
        Write::Append(e, texts) => {
            let steps = texts.iter().map(|x| step(x)).collect();
            t.append_once(e, steps, Some(id))
                .map(|a| (format!("{:?}", a.indices), a.replayed))
        }
        Write::Correct(e, i, x) => t
            .correct_once(e, *i, step(x), Some(id))
            .map(|r| ("corrected".to_string(), r)),
        Write::Forget(e, what) => t
            .forget_once(e, *what, Some(id))
            .map(|f| (f.steps.to_string(), f.replayed)),
    };
    done.map_err(|e| e.code().to_string())
}

/// Every episode's steps as (index, action).
fn contents(t: &Tenant) -> Vec<(String, Vec<(usize, String)>)> {
    t.episodes()
        .unwrap()
        .into_iter()
        .map(|e| {
            let steps = t.steps(&e.id).unwrap();
            (
                e.id,
                steps.into_iter().map(|s| (s.index, s.action)).collect(),
            )
        })
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Any sequence of writes, each sent twice with its id (a retry right
    /// after the first), answers and stores exactly what the sequence sent
    /// once does; every retry of a write that succeeded is a replay.
    #[test]
    fn every_write_sent_twice_with_its_id_is_the_write_sent_once(
        writes in proptest::collection::vec(write_strategy(), 1..14)
    ) {
        let (_a, once) = opened();
        let (_b, twice) = opened();
        let (once, twice) = (once.tenant("t").unwrap(), twice.tenant("t").unwrap());
        for (k, w) in writes.iter().enumerate() {
            let id = format!("w{k}");
            let first = apply(&once, w, &id);
            proptest::prop_assert_eq!(&apply(&twice, w, &id), &first, "{:?}", w);
            let again = apply(&twice, w, &id);
            // A write that succeeded is replayed: the same answer, marked
            // so; one that failed fails again the same way.
            match &first {
                Ok((answer, replayed)) => {
                    proptest::prop_assert!(!replayed);
                    proptest::prop_assert_eq!(again, Ok((answer.clone(), true)), "the retry of {:?}", w);
                }
                Err(_) => proptest::prop_assert_eq!(&again, &first, "the retry of {:?}", w),
            }
            proptest::prop_assert_eq!(contents(&once), contents(&twice));
        }
    }
}
