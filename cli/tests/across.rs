//! `mesa query ROOT --tenant T "question"` without `--episode`: every
//! episode is asked, and the one holding the answer is shown first.

mod common;

use common::{run, run_with};

#[test]
fn a_question_without_an_episode_asks_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let r = root.to_str().unwrap();
    for (episode, task, steps) in [
        (
            "sql",
            "count the orders",
            "{\"action\": \"SELECT * FROM orders\", \"observation\": \"Error: no such table: orders\"}\n",
        ),
        (
            "garden",
            "water the plants",
            "{\"action\": \"water the roses\", \"observation\": \"the soil is wet\"}\n",
        ),
    ] {
        let args = ["append", r, "--tenant", "t", "--episode", episode, "--task", task];
        let (ok, _, err) = run_with(&[], &args, steps);
        assert!(ok, "{err}");
    }
    let ask = ["query", r, "--tenant", "t", "--structures", "all"];
    let (ok, out, err) =
        run(&[&ask[..], &["--format", "json", "Which table was missing?"]].concat());
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(v["searched"], 2, "{v}");
    assert_eq!(v["episodes"][0]["episode"], "sql", "{v}");
    assert!(
        v["episodes"][0]["evidence"]
            .to_string()
            .contains("no such table"),
        "{v}"
    );

    let (ok, out, err) = run(&[&ask[..], &["--limit", "1", "Which table was missing?"]].concat());
    assert!(ok, "{err}");
    assert!(
        out.contains("episode sql: relevance") && !out.contains("episode garden"),
        "{out}"
    );
    // One candidate: only the episode sharing the question's words is asked.
    let one = ["--limit", "1", "--candidates", "1", "--format", "json"];
    let (ok, out, err) = run(&[&ask[..], &one, &["Which table was missing?"]].concat());
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(
        (v["considered"].as_u64(), v["searched"].as_u64()),
        (Some(2), Some(1)),
        "{v}"
    );
    assert_eq!(v["episodes"][0]["episode"], "sql", "{v}");
    let (ok, _, err) = run(&[&ask[..], &["--limit", "0", "q"]].concat());
    assert!(!ok && err.contains("--limit"), "{err}");
}
