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
