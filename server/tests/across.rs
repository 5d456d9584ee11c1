//! `POST /v1/query`: one question over the token's tenant's episodes, the
//! episode holding the answer first; another tenant's episodes are never
//! searched; bad bodies get errors that say what to do.

mod common;

use common::{fill, fixture, POLICY};
use serde_json::json;

#[test]
fn a_question_over_every_episode_finds_the_one_that_holds_it() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    common::fill_garden(&f, &f.alice);

    let q = json!({"question": "Which table was missing from sales.db?", "structures": "all"});
    let v = f.ok("POST", "/v1/query", &f.alice, Some(q.clone()));
    assert_eq!(v["searched"], 2, "{v}");
    assert_eq!(v["episodes"][0]["episode"], "run-1", "{v}");
    assert!(
        v["episodes"][0]["relevance"].as_f64().unwrap_or(0.0) > 0.0,
        "{v}"
    );
    assert!(
        v["episodes"][0]["evidence"]
            .to_string()
            .contains("no such table"),
        "{v}"
    );
    // Its entry is the answer the episode alone gives.
    let alone = f.ok(
        "POST",
        "/v1/episodes/run-1/query",
        &f.alice,
        Some(q.clone()),
    );
    assert_eq!(v["episodes"][0]["evidence"], alone["evidence"]);

    // Bob's tenant has an episode of the same id and other steps: his
    // question never reaches alice's.
    f.ok(
        "POST",
        "/v1/episodes",
        &f.bob,
        Some(json!({"id": "run-1", "task": "bake bread"})),
    );
    let steps = json!({"steps": [{"action": "knead", "observation": "dough is smooth"}]});
    f.ok("POST", "/v1/episodes/run-1/steps", &f.bob, Some(steps));
    let v = f.ok("POST", "/v1/query", &f.bob, Some(q));
    assert_eq!(v["searched"], 1, "{v}");
    assert!(!v.to_string().contains("no such table"), "{v}");

    // The active policy chooses when the body names no structures.
    common::activate(&f, &f.alice);
    let q = json!({"question": "Why did the query fail with an error?", "episodes": ["run-1"], "limit": 1});
    let v = f.ok("POST", "/v1/query", &f.alice, Some(q));
    assert_eq!(
        (v["searched"].as_u64(), v["policy"].as_str()),
        (Some(1), Some("p")),
        "{v}"
    );
    assert_eq!(v["episodes"][0]["rule"], "errors", "{v}");
}

#[test]
fn bad_questions_over_episodes_say_what_to_do() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    for (body, status, code) in [
        (
            json!({"question": "orders", "structures": "all", "limit": 0}),
            400,
            "bad-limit",
        ),
        (
            json!({"question": "orders", "structures": "all", "episodes": ["nope"]}),
            404,
            "unknown-episode",
        ),
        (json!({"question": "orders"}), 400, "no-policy"),
        (
            json!({"question": "   ", "structures": "all"}),
            422,
            "empty-question",
        ),
        (
            json!({"question": "orders", "structures": "all", "trace": true}),
            400,
            "bad-json",
        ),
    ] {
        let (s, c) = f.err("POST", "/v1/query", &f.alice, Some(body.clone()));
        assert_eq!((s, c.as_str()), (status, code), "{body}");
    }
    // One episode's route takes neither `episodes` nor `limit`.
    let body = json!({"question": "orders", "structures": "all", "limit": 2});
    let r = f.send("POST", "/v1/episodes/run-1/query", &f.alice, Some(body));
    assert_eq!(r.status().as_u16(), 400);
    let v: serde_json::Value = r.json().expect("JSON");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("POST /v1/query"),
        "{v}"
    );
}

/// An episode whose question fails (its task overflows a compiled policy's
/// input) is skipped and named, and the others are still answered.
#[test]
fn an_episode_whose_question_fails_is_skipped_and_named() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    let task = "fix the bug ".repeat(20_000);
    f.ok(
        "POST",
        "/v1/episodes",
        &f.alice,
        Some(json!({"id": "long", "task": task})),
    );
    let step = json!({"action": "run the tests"});
    f.ok("POST", "/v1/episodes/long/steps", &f.alice, Some(step));
    f.ok(
        "PUT",
        "/v1/policies/p",
        &f.alice,
        Some(json!({"source": POLICY})),
    );
    let q = json!({"question": "Why did the SELECT fail?", "policy": "p"});
    let v = f.ok("POST", "/v1/query", &f.alice, Some(q));
    assert_eq!(v["searched"], 2, "{v}");
    assert_eq!(v["episodes"][0]["episode"], "run-1", "{v}");
    assert_eq!(v["episodes"].as_array().map(Vec::len), Some(1), "{v}");
    assert_eq!(v["skipped"][0]["episode"], "long", "{v}");
    assert_eq!(v["skipped"][0]["code"], "query", "{v}");
}

/// With `--resident-steps` below the tenant's steps, a search builds the
/// episodes the budget dropped again, and answers as before; `/metrics`
/// shows what the tenants keep, naming none; the budget is one for every
/// tenant the server holds.
#[test]
fn a_small_budget_of_built_steps_changes_no_answer() {
    let f = common::fixture_config(|c| c.resident_steps = 3);
    for id in ["run-1", "run-2", "run-3"] {
        fill(&f, &f.alice, id);
    }
    let q = json!({"question": "Which table was missing from sales.db?", "structures": "all"});
    let first = f.ok("POST", "/v1/query", &f.alice, Some(q.clone()));
    assert_eq!(first["searched"], 3, "{first}");
    let again = f.ok("POST", "/v1/query", &f.alice, Some(q.clone()));
    // Everything but the timings.
    let plain = |v: &serde_json::Value| {
        let mut v = v["episodes"].clone();
        for e in v.as_array_mut().unwrap() {
            e.as_object_mut().unwrap().remove("micros");
        }
        v
    };
    assert!(plain(&first) == plain(&again), "{first}\n{again}");
    for entry in first["episodes"].as_array().unwrap() {
        let id = entry["episode"].as_str().unwrap();
        let alone = f.ok(
            "POST",
            &format!("/v1/episodes/{id}/query"),
            &f.alice,
            Some(q.clone()),
        );
        assert_eq!(entry["evidence"], alone["evidence"], "{id}");
    }
    let metrics = f.metrics();
    for line in [
        "mesa_open_tenants 1\n",
        "mesa_resident_episodes 1\n",
        "mesa_resident_steps 3\n",
        "mesa_resident_budget_steps 3\n",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    assert!(!metrics.contains("alice"), "{metrics}");
    // The budget is the server's: bob's question drops alice's episode.
    fill(&f, &f.bob, "run-1");
    let bobs = f.ok("POST", "/v1/query", &f.bob, Some(q));
    assert_eq!(bobs["searched"], 1, "{bobs}");
    let dropped = |m: &str| {
        m.lines()
            .find_map(|l| l.strip_prefix("mesa_resident_dropped_total "))
            .and_then(|v| v.parse::<u64>().ok())
            .expect("the counter")
    };
    let before = dropped(&metrics);
    assert!(
        before >= 2,
        "three episodes through a budget of one: {metrics}"
    );
    let metrics = f.metrics();
    for line in [
        "mesa_open_tenants 2\n",
        "mesa_resident_episodes 1\n",
        "mesa_resident_steps 3\n",
    ] {
        assert!(metrics.contains(line), "{line} in\n{metrics}");
    }
    assert_eq!(
        dropped(&metrics),
        before + 1,
        "bob's question dropped alice's"
    );
}

/// `candidates` bounds the episodes asked; the one-episode route refuses it.
#[test]
fn candidates_bound_the_episodes_asked() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    common::fill_garden(&f, &f.alice);
    let q = json!({"question": "Which table was missing?", "structures": "all", "limit": 1, "candidates": 1});
    let v = f.ok("POST", "/v1/query", &f.alice, Some(q));
    assert_eq!(
        (v["considered"].as_u64(), v["searched"].as_u64()),
        (Some(2), Some(1)),
        "{v}"
    );
    assert_eq!(v["episodes"][0]["episode"], "run-1", "{v}");
    let q = json!({"question": "Which table was missing?", "structures": "all", "limit": 1, "candidates": 0});
    let v = f.ok("POST", "/v1/query", &f.alice, Some(q));
    assert_eq!(v["searched"], 2, "{v}");
    let q = json!({"question": "q", "structures": "all", "candidates": 3});
    let r = f.send("POST", "/v1/episodes/run-1/query", &f.alice, Some(q));
    assert_eq!(r.status().as_u16(), 400);
    let body = r.text().unwrap();
    assert!(
        body.contains("`candidates` is a field of POST /v1/query"),
        "{body}"
    );
}
