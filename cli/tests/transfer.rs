//! A tenant as a dataset through the `mesa` binary: `mesa export` and
//! `mesa build --into` move it whole, and `mesa forget --before` is its
//! retention limit.

mod common;

use common::{on, run, run_with};

/// `mesa export` writes a tenant as a dataset that `mesa build --into`
/// imports whole (a long observation, a correction and a forget included):
/// the new tenant answers every kept question as the first does, and
/// exports the same bytes.
#[test]
fn an_exported_tenant_imports_whole_into_another() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.jsonl");
    let lines = [
        r#"{"id": "a", "task": "fix the test", "domain": "software", "outcome": "success", "steps": [{"action": "run pytest", "observation": "1 failed: test_dates"}, {"action": "edit src/dates.py", "observation": "ok"}, {"action": "run pytest", "observation": "1 passed"}], "questions": [{"id": "a1", "question": "What failed at step 0?", "answer": "test_dates", "evidence": [0, 1]}]}"#,
        r#"{"id": "b", "task": "find the kettle", "domain": "web", "meta": {"site": "shop"}, "steps": [{"action": "search kettle", "observation": "3 results"}, {"action": "click item 2", "observation": "red kettle $25"}], "questions": [{"id": "b1", "question": "How much was the kettle?", "answer": "$25", "type": "A"}]}"#,
    ];
    std::fs::write(&data, lines.join("\n")).unwrap();
    let root = dir.path().join("mem");
    let (data, r) = (data.to_str().unwrap(), root.to_str().unwrap());
    let (ok, _, err) = run(&["build", data, "--into", r, "--tenant", "t", "--quiet"]);
    assert!(ok, "{err}");
    // A long observation, a correction and a forget, through the CLI.
    let long = "x".repeat(40_000);
    let line = format!("{{\"action\": \"read the log\", \"observation\": \"{long}\"}}\n");
    let (ok, _, err) = run_with(
        &[],
        &["append", r, "--tenant", "t", "--episode", "a"],
        &line,
    );
    assert!(ok, "{err}");
    let (ok, _, err) = on(
        r,
        "correct",
        "a",
        &["--step", "1", "--action", "edit src/dates.py line 3"],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = on(r, "forget", "a", &["--step", "0"]);
    assert!(ok, "{err}");
    let file = dir.path().join("export.jsonl");
    let f = file.to_str().unwrap();
    let (ok, _, err) = run(&["export", r, "--tenant", "t", "-o", f]);
    assert!(ok, "{err}");
    assert!(err.contains("2 episodes, 5 steps and 2 questions"), "{err}");
    assert!(err.contains("1 evidence label"), "{err}");
    let exported = std::fs::read_to_string(&file).unwrap();
    assert!(
        exported.contains(&long),
        "the long observation is exported whole"
    );
    let (ok, out, err) = run(&["export", r, "--tenant", "t"]);
    assert!(ok, "{err}");
    assert_eq!(out, exported, "standard output and the file agree");
    let import = ["build", f, "--into", r, "--tenant", "u", "--quiet"];
    let (ok, _, err) = run(&import);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&import);
    assert!(ok, "run again: {err}");
    assert!(
        err.contains("2 of the episodes had been imported before"),
        "{err}"
    );
    let (ok, again, err) = run(&["export", r, "--tenant", "u"]);
    assert!(ok, "{err}");
    assert_eq!(
        again, exported,
        "the imported tenant exports the same bytes"
    );
    let answers = |tenant: &str| {
        let (ok, out, err) = run(&["query", r, "--tenant", tenant, "--all", "-s", "all"]);
        assert!(ok, "{err}");
        out.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v.as_object_mut().unwrap().remove("micros");
                v
            })
            .collect::<Vec<_>>()
    };
    let first = answers("t");
    assert_eq!(first.len(), 2);
    assert_eq!(answers("u"), first);
    // With a store's cut the long observation is cut, and the import says so.
    let cut = ["--max-text-bytes", "32768"];
    let (ok, _, err) = run(&[
        &["build", f, "--into", r, "--tenant", "v", "--quiet"][..],
        &cut[..],
    ]
    .concat());
    assert!(ok, "{err}");
    assert!(err.contains("cut 1 observation"), "{err}");
    // An episode whose steps are all forgotten is exported without steps
    // and imported as such; a store build refuses it.
    let (ok, _, err) = on(r, "forget", "b", &["--steps", "0-1"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["export", r, "--tenant", "t", "-o", f]);
    assert!(ok, "{err}");
    assert!(err.contains("1 episode(s) without steps"), "{err}");
    let into = ["build", f, "--into", r, "--tenant", "w", "--quiet"];
    let (ok, _, err) = run(&into);
    assert!(ok, "{err}");
    // Listed with their steps and creation times as the first tenant's.
    let listed = |tenant: &str| run(&["episodes", r, "--tenant", tenant]).1;
    assert!(listed("w").contains("b\t0 steps"), "{}", listed("w"));
    assert_eq!(listed("w"), listed("t"));
    let store = dir.path().join("store");
    let (ok, _, err) = run(&["build", f, "-o", store.to_str().unwrap(), "--quiet"]);
    assert!(!ok && err.contains("has no steps"), "{err}");
}

/// `mesa forget --before TIME` forgets the older steps of every episode.
#[test]
fn forget_before_a_time_reaches_every_episode() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let r = root.to_str().unwrap();
    let step = |action: &str, day: u32| {
        format!("{{\"action\": \"{action}\", \"observation\": \"ok\", \"timestamp\": \"2026-03-{day:02}T10:00:00Z\"}}\n")
    };
    for (episode, days) in [("a", [1, 2, 20]), ("b", [3, 15, 16])] {
        let input: String = days.iter().map(|&d| step("work", d)).collect();
        let args = [
            "append",
            r,
            "--tenant",
            "t",
            "--episode",
            episode,
            "--task",
            "x",
        ];
        let (ok, _, err) = run_with(&[], &args, &input);
        assert!(ok, "{err}");
    }
    let (ok, _, err) = run(&["forget", r, "--tenant", "t", "--before", "soon"]);
    assert!(!ok && err.contains("soon"), "{err}");
    let forget = [
        "forget",
        r,
        "--tenant",
        "t",
        "--before",
        "2026-03-10T00:00:00Z",
        "--compact",
    ];
    let (ok, _, err) = run(&forget);
    assert!(ok, "{err}");
    assert!(
        err.contains("forgot 3 step(s)") && err.contains("in 2 episode(s)"),
        "{err}"
    );
    let (ok, out, err) = run(&["episodes", r, "--tenant", "t"]);
    assert!(ok, "{err}");
    let counts: Vec<&str> = out.lines().map(|l| l.split('\t').nth(1).unwrap()).collect();
    assert_eq!(counts, ["1 steps", "2 steps"]);
    let both = [
        "forget",
        r,
        "--tenant",
        "t",
        "--before",
        "2026-03-10T00:00:00Z",
        "-e",
        "a",
    ];
    let (ok, _, err) = run(&both);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
}
