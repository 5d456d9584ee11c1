//! `POST /v1/forget-before`: the token's tenant forgets, in every episode,
//! the steps from before a time, and no other tenant loses anything.

mod common;

use common::{fill, fixture};
use serde_json::json;

#[test]
fn a_tenant_forgets_its_steps_before_a_time() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    fill(&f, &f.alice, "run-2");
    fill(&f, &f.bob, "run-1");
    // fill's steps are at 10:00, 10:01 and 10:02 on 2026-03-01.
    let ask = || {
        let q = json!({"question": "no such table orders", "structures": "all"});
        f.ok("POST", "/v1/episodes/run-1/query", &f.alice, Some(q))["evidence"].to_string()
    };
    // Asked about, run-1's snapshot is built; the forget drops it, and the
    // server catches it up in the background (not observed here): the
    // questions after the forget, which may race that, see what is left.
    assert!(ask().contains("no such table"));
    let before = json!({"before": "2026-03-01T10:01:30Z"});
    let v = f.ok("POST", "/v1/forget-before", &f.alice, Some(before.clone()));
    assert_eq!(
        (v["forgotten"].as_u64(), v["episodes"].as_u64()),
        (Some(4), Some(2))
    );
    for _ in 0..3 {
        let shown = ask();
        assert!(!shown.contains("no such table"), "forgotten: {shown}");
        assert!(shown.contains("customers, invoices"), "kept: {shown}");
    }
    let steps = |token: &str| {
        f.ok("GET", "/v1/episodes/run-1/steps", token, None)["steps"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(steps(&f.alice), 1);
    assert_eq!(steps(&f.bob), 3, "another tenant keeps its steps");
    let again = f.ok("POST", "/v1/forget-before", &f.alice, Some(before));
    assert_eq!(again["forgotten"], 0);
    let bad = json!({"before": "yesterday"});
    let (status, code) = f.err("POST", "/v1/forget-before", &f.alice, Some(bad));
    assert_eq!((status, code.as_str()), (422, "bad-timestamp"));
    let (status, _) = f.err(
        "POST",
        "/v1/forget-before",
        &f.alice,
        Some(json!({"after": 1})),
    );
    assert_eq!(status, 400);
}
