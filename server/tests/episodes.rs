//! `PATCH /v1/episodes/{id}`: an episode's domain, outcome and metadata
//! change after its steps, the summary follows the outcome, and another
//! tenant's episode of the same id is untouched.

mod common;

use common::{fill, fixture, fixture_config};
use serde_json::json;
use std::time::Duration;

#[test]
fn an_episode_records_how_it_ended() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    fill(&f, &f.bob, "run-1");
    let summary = |token: &str| {
        let q = json!({"question": "How did counting the orders end?", "structures": "S"});
        f.ok("POST", "/v1/episodes/run-1/query", token, Some(q))["evidence"].to_string()
    };
    assert!(!summary(&f.alice).contains("Outcome:"), "none yet");
    let update = json!({"outcome": "success", "domain": "sql", "meta": {"agent": "v3"}});
    let v = f.ok(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(update.clone()),
    );
    assert_eq!(v, json!({"id": "run-1", "updated": true}));
    assert!(
        summary(&f.alice).contains("Outcome: success"),
        "{}",
        summary(&f.alice)
    );
    let listed = f.ok("GET", "/v1/episodes", &f.alice, None)["episodes"][0].clone();
    let one = f.ok("GET", "/v1/episodes/run-1", &f.alice, None);
    assert_eq!(one, listed, "one episode as the list gives it");
    assert_eq!(
        (
            &listed["task"],
            &listed["domain"],
            &listed["outcome"],
            &listed["meta"]
        ),
        (
            &json!("count the orders"),
            &json!("sql"),
            &json!("success"),
            &json!({"agent": "v3"})
        )
    );
    // Sent again: nothing changes.
    let v = f.ok("PATCH", "/v1/episodes/run-1", &f.alice, Some(update));
    assert_eq!(v["updated"], false);
    // Bob's episode of the same id keeps its fields.
    let bobs = f.ok("GET", "/v1/episodes", &f.bob, None)["episodes"][0].clone();
    assert_eq!(
        (&bobs["domain"], &bobs["outcome"]),
        (&json!("text2sql"), &json!(null))
    );
    assert!(!summary(&f.bob).contains("Outcome:"));
    // A restated task: S's `Task:` line follows; it cannot be null; an
    // unknown episode is 404.
    let v = f.ok(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(json!({"task": "count the refunds"})),
    );
    assert_eq!(v["updated"], true, "{v}");
    assert!(summary(&f.alice).contains("Task: count the refunds"));
    let (status, code) = f.err(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(json!({"task": null})),
    );
    assert_eq!((status, code.as_str()), (400, "bad-json"));
    let (status, code) = f.err(
        "PATCH",
        "/v1/episodes/nope",
        &f.alice,
        Some(json!({"outcome": "x"})),
    );
    assert_eq!((status, code.as_str()), (404, "unknown-episode"));
    let (status, code) = f.err("GET", "/v1/episodes/nope", &f.alice, None);
    assert_eq!((status, code.as_str()), (404, "unknown-episode"));
    // `{}` empties the metadata.
    f.ok(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(json!({"meta": {}})),
    );
    assert_eq!(
        f.ok("GET", "/v1/episodes/run-1", &f.alice, None)["meta"],
        json!({})
    );
    // `null` removes a field: the outcome goes, and with it S's line; an
    // absent field stays.
    let v = f.ok(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(json!({"outcome": null, "meta": {"agent": "v4"}})),
    );
    assert_eq!(v["updated"], true);
    let one = f.ok("GET", "/v1/episodes/run-1", &f.alice, None);
    assert_eq!(
        (&one["outcome"], &one["domain"]),
        (&json!(null), &json!("sql"))
    );
    assert!(!summary(&f.alice).contains("Outcome:"), "removed");
    let v = f.ok(
        "PATCH",
        "/v1/episodes/run-1",
        &f.alice,
        Some(json!({"outcome": null, "domain": null, "meta": null})),
    );
    assert_eq!(v["updated"], true, "the domain went");
    let one = f.ok("GET", "/v1/episodes/run-1", &f.alice, None);
    assert_eq!(
        (&one["outcome"], &one["domain"], &one["meta"]),
        (&json!(null), &json!(""), &json!({}))
    );
}

/// A tenant another writer holds (a `mesa append`, an import) is 409
/// `locked` on the request that would first open it, with what to do; the
/// first request after that writer closes opens it.
#[test]
fn a_tenant_another_writer_holds_is_409_until_it_closes() {
    let f = fixture();
    let other = mesa_memory::LiveMemory::open(&f.root)
        .expect("memory")
        .tenant("alice")
        .expect("the other writer");
    let r = f.send("GET", "/v1/episodes", &f.alice, None);
    assert_eq!(r.status().as_u16(), 409);
    assert_eq!(r.headers()["retry-after"], "1");
    let v: serde_json::Value = r.json().expect("JSON");
    assert_eq!(v["error"]["code"], "locked");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("retry once that writer"), "{message}");
    drop(other);
    let listed = f.ok("GET", "/v1/episodes", &f.alice, None);
    assert_eq!(listed["episodes"], json!([]));
}

/// A server started with a writer wait (`mesa serve --wait`) holds the
/// request that first opens a tenant another writer holds until that writer
/// closes, then answers it; meanwhile another tenant's requests are
/// answered (they do not queue behind the waiting opening).
#[test]
fn a_waiting_server_answers_once_the_other_writer_closes() {
    let f = fixture_config(|c| c.writer_wait = Duration::from_secs(300));
    let other = mesa_memory::LiveMemory::open(&f.root)
        .expect("memory")
        .tenant("alice")
        .expect("the other writer");
    std::thread::scope(|s| {
        let waiting = s.spawn(|| f.ok("GET", "/v1/episodes", &f.alice, None));
        // Let alice's request reach its wait first (the test's point holds
        // either way; this makes it the order that used to block bob).
        std::thread::sleep(Duration::from_millis(300));
        fill(&f, &f.bob, "run-1");
        let listed = f.ok("GET", "/v1/episodes", &f.bob, None);
        assert_eq!(listed["episodes"][0]["id"], "run-1", "{listed}");
        assert!(
            !waiting.is_finished(),
            "alice's request waits for the writer"
        );
        drop(other);
        let listed = waiting.join().expect("alice's request");
        assert_eq!(listed["episodes"], json!([]));
    });
}

/// A wait that runs out is 409 `locked`, as without one.
#[test]
fn a_writer_wait_that_runs_out_is_409() {
    let f = fixture_config(|c| c.writer_wait = Duration::from_millis(200));
    let _other = mesa_memory::LiveMemory::open(&f.root)
        .expect("memory")
        .tenant("alice")
        .expect("the other writer");
    assert_eq!(
        f.err("GET", "/v1/episodes", &f.alice, None),
        (409, "locked".to_string())
    );
}

/// Requests that queue behind a waiting opening share its outcome: when
/// the wait runs out, the one queued behind it gets the same 409 at once
/// instead of starting a wait of its own (which, the holder being gone by
/// then, would have opened the tenant); the next request opens it.
#[test]
fn requests_queued_behind_a_waiting_opening_share_its_outcome() {
    let f = fixture_config(|c| c.writer_wait = Duration::from_secs(5));
    let other = mesa_memory::LiveMemory::open(&f.root)
        .expect("memory")
        .tenant("alice")
        .expect("the other writer");
    let (first, queued) = std::thread::scope(|s| {
        let first = s.spawn(|| f.err("GET", "/v1/episodes", &f.alice, None));
        std::thread::sleep(Duration::from_millis(300));
        let queued = s.spawn(|| f.err("GET", "/v1/episodes", &f.alice, None));
        let first = first.join().expect("the first request");
        // The holder goes as soon as the first wait has run out.
        drop(other);
        (first, queued.join().expect("the queued request"))
    });
    assert_eq!(first, (409, "locked".to_string()));
    assert_eq!(queued, (409, "locked".to_string()));
    let listed = f.ok("GET", "/v1/episodes", &f.alice, None);
    assert_eq!(listed["episodes"], json!([]));
}
