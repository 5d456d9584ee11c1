//! End-to-end tests of the `mesa` binary over a store: `build`, `query`,
//! `sweep`, the main job (`pipeline`) and `stratify`.

mod common;

use common::{mesa, stderr, stdout, tmp};
use mesa_core::{Feature, Structure};
use std::path::Path;

/// Two small episodes in MESA's generic layout, and a broken line.
const DATA: &str = concat!(
    r#"{"id": "a", "task": "fix the test", "domain": "software", "steps": [{"action": "run pytest", "observation": "1 failed: test_dates"}, {"action": "edit src/dates.py", "observation": "ok"}, {"action": "run pytest", "observation": "1 passed"}], "questions": [{"question": "What failed at step 0?", "answer": "test_dates"}]}"#,
    "\n",
    r#"{"id": "b", "task": "find the kettle", "domain": "web", "steps": [{"action": "search kettle", "observation": "3 results"}, {"action": "click item 2", "observation": "red kettle $25"}]}"#,
    "\n",
);

#[test]
fn build_and_query_a_store() {
    let data = tmp("data.jsonl", DATA.as_bytes());
    let store = std::env::temp_dir()
        .join(format!("mesa-cli-{}", std::process::id()))
        .join("store");
    let store = store.to_string_lossy().into_owned();
    let o = mesa(&["build", &data, "-o", &store, "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("2 episodes, 5 steps, 1 questions"),
        "{}",
        stderr(&o)
    );
    // One question, as JSON, through a policy.
    let o = mesa(&[
        "query",
        &store,
        "--episode",
        "a",
        "--policy",
        "examples/quickstart.mesa",
        "--format",
        "json",
        "What failed at step 0?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["rule"], "causal");
    assert!(v["mask"].as_array().expect("mask").iter().any(|s| s == "T"));
    let items = v["evidence"].as_array().expect("evidence");
    assert!(items.iter().any(|i| i["structure"] == "T"
        && i["steps"] == serde_json::json!([0])
        && i["text"].as_str().unwrap_or("").contains("test_dates")));
    assert!(v["tokens"].as_u64().unwrap_or(0) > 0);
    // Fixed structures, in words.
    let o = mesa(&[
        "query",
        &store,
        "-e",
        "b",
        "--structures",
        "S,R",
        "What did the kettle cost?",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("mask: {S, R}") && stdout(&o).contains("## R: raw"),
        "{}",
        stdout(&o)
    );
    // Every stored question.
    let o = mesa(&["query", &store, "--structures", "all", "--all"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 1);
    // An unknown episode, a bad structure, no chooser.
    let o = mesa(&["query", &store, "-e", "c", "--structures", "all", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no episode `c`"), "{}", stderr(&o));
    let o = mesa(&["query", &store, "-e", "a", "--structures", "S,X", "x"]);
    assert_eq!(o.status.code(), Some(2));
    let o = mesa(&["query", &store, "-e", "a", "x"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn build_refuses_bad_data_unless_told_to_skip_and_query_refuses_a_non_store() {
    let bad = format!(
        "{DATA}{{\"id\": \"c\", \"task\": \"t\", \"domain\": \"d\", \"steps\": []}}\nnot json\n"
    );
    let data = tmp("bad.jsonl", bad.as_bytes());
    let dir = std::env::temp_dir().join(format!("mesa-cli-{}", std::process::id()));
    let store = dir.join("bad-store").to_string_lossy().into_owned();
    let o = mesa(&["build", &data, "-o", &store, "--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("bad.jsonl:3: episode `c` has no steps"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(&store).exists(), "no half store");
    let o = mesa(&["build", &data, "-o", &store, "--quiet", "--skip-bad"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipped 2 line(s)"), "{}", stderr(&o));
    // The store built past bad lines is swept past them too, when told.
    let sweep = dir.join("bad-sweep.jsonl").to_string_lossy().into_owned();
    let o = mesa(&["sweep", &store, &data, "-o", &sweep, "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let o = mesa(&[
        "sweep",
        &store,
        &data,
        "-o",
        &sweep,
        "--quiet",
        "--skip-bad",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("skipped 2 line(s)"), "{}", stderr(&o));
    let not_a_store = dir.to_string_lossy().into_owned();
    let o = mesa(&["query", &not_a_store, "--list"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a"), "{}", stderr(&o));
}

/// Builds a store of `data` in `dir` and sweeps it: the store's and the
/// sweep's paths.
fn build_and_sweep(data: &str, dir: &Path) -> (String, String) {
    let store = dir.join("store").to_string_lossy().into_owned();
    let sweep = dir.join("sweep.jsonl").to_string_lossy().into_owned();
    let o = mesa(&["build", data, "-o", &store, "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = mesa(&["sweep", &store, data, "-o", &sweep, "--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    (store, sweep)
}

/// A sweep over a dataset whose episodes have other steps than the store
/// was built from is refused with what to do, not scored against the
/// wrong steps.
#[test]
fn a_sweep_refuses_a_store_built_from_other_steps() {
    let data = tmp("differ-data.jsonl", DATA.as_bytes());
    let dir = std::env::temp_dir().join(format!("mesa-cli-differ-{}", std::process::id()));
    let (store, _) = build_and_sweep(&data, &dir);
    let more = DATA.replacen(
        r#"{"action": "run pytest", "observation": "1 passed"}"#,
        r#"{"action": "run pytest", "observation": "1 passed"}, {"action": "commit", "observation": "done"}"#,
        1,
    );
    assert_ne!(more, DATA, "the dataset gained a step");
    let other = tmp("differ-other.jsonl", more.as_bytes());
    let out = dir.join("other.jsonl").to_string_lossy().into_owned();
    let o = mesa(&["sweep", &store, &other, "-o", &out, "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("episode `a` has 4 step(s) in the dataset and 3 in the store"),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("mesa build DATA -o STORE"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every preview, the evidence-aware ones included, reads the same in a
/// sweep as at query time: `mesa sweep` records all of them, and a policy
/// that reads them all gets the same numbers from `mesa query`.
#[test]
fn a_sweep_and_a_query_read_the_same_previews() {
    let data = tmp("previews-data.jsonl", DATA.as_bytes());
    let dir = std::env::temp_dir().join(format!("mesa-cli-previews-{}", std::process::id()));
    let (store, sweep) = build_and_sweep(&data, &dir);
    let text = std::fs::read_to_string(&sweep).unwrap();
    let record: serde_json::Value =
        serde_json::from_str(text.lines().nth(1).expect("one record")).unwrap();
    // What each subset shows: a structure alone shows its `steps` preview's
    // steps, and no subset shows more than all five.
    let counts = |f: &str| -> Vec<u64> {
        let a = record[f]
            .as_array()
            .unwrap_or_else(|| panic!("`{f}` recorded"));
        a.iter().map(|x| x.as_u64().expect("a count")).collect()
    };
    let (words, steps) = (counts("words"), counts("steps"));
    assert_eq!((words.len(), steps.len()), (31, 31));
    for (i, s) in ["S", "T", "G", "V", "R"].iter().enumerate() {
        let shown = record["previews"][s][3].as_f64().unwrap();
        assert_eq!(steps[(1 << i) - 1] as f64, shown, "{s} alone");
    }
    assert!(
        words.iter().all(|w| *w <= words[30]) && words[30] > 0,
        "{words:?}"
    );
    assert!(steps.iter().all(|w| *w <= steps[30]), "{steps:?}");
    // Every preview of every structure (a pair's overlap once), by the
    // names the language gives them: its structure's letter, its place in
    // the sweep's row, its name.
    let previews: Vec<(char, usize, &str)> = Structure::ALL
        .iter()
        .enumerate()
        .flat_map(|(a, s)| {
            Feature::ALL
                .iter()
                .enumerate()
                .filter(move |(f, _)| *f < 7 || f - 7 > a)
                .map(move |(f, feature)| (s.letter(), f, feature.name()))
        })
        .collect();
    let terms: Vec<String> = previews
        .iter()
        .map(|(s, _, name)| format!("preview.{s}.{name}"))
        .collect();
    assert_eq!(terms.len(), 45);
    let policy = tmp(
        "all-previews.mesa",
        format!(
            "policy \"all previews\"\nrule r when {} > -1000000 -> select {{S}}\ndefault {{R}}\n",
            terms.join(" + ")
        )
        .as_bytes(),
    );
    let question = record["query"].as_str().unwrap();
    let o = mesa(&[
        "query",
        &store,
        "--episode",
        "a",
        "--policy",
        &policy,
        "--format",
        "json",
        question,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    let read = v["previews"].as_object().expect("previews");
    assert_eq!(read.len(), 45, "{read:?}");
    for (s, f, name) in &previews {
        let row = record["previews"][s.to_string().as_str()]
            .as_array()
            .expect("a row per structure");
        assert_eq!(row.len(), 12);
        let key = format!("{s}.{name}");
        assert_eq!(read[&key], row[*f], "{key}");
    }
    // The question names step 0, which T shows.
    assert_eq!(read["T.named"], serde_json::json!(1.0));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A generated dataset of 20 episodes of 8 steps, two questions each,
/// in two domains.
fn twenty_episodes() -> String {
    let mut lines = String::new();
    for e in 0..20 {
        let steps: Vec<String> = (0..8)
            .map(|i| {
                format!(
                    r#"{{"action": "step {i} of run {e}: open file_{i}.py", "observation": "{}"}}"#,
                    if i == 3 {
                        "Error: test_dates failed"
                    } else {
                        "ok"
                    }
                )
            })
            .collect();
        lines.push_str(&format!(
            r#"{{"id": "ep{e}", "task": "fix run {e}", "domain": "{}", "steps": [{}], "questions": [{{"id": "ep{e}:0", "question": "What failed at step 3?", "answer": "test_dates at step 3"}}, {{"id": "ep{e}:1", "question": "Which file was opened at step 5?", "answer": "file_5.py at step 5"}}]}}"#,
            if e % 2 == 0 { "software" } else { "web" },
            steps.join(", ")
        ));
        lines.push('\n');
    }
    lines
}

/// The README's main job (`mesa pipeline`) end to end on a generated
/// dataset of 20 episodes: build, sweep, optimize, and the frontier
/// summary printed after the report, with the frozen policy on disk.
#[test]
fn the_main_job_runs_end_to_end() {
    let data = tmp("pipeline.jsonl", twenty_episodes().as_bytes());
    let work = std::env::temp_dir()
        .join(format!("mesa-cli-{}", std::process::id()))
        .join("pipeline");
    let work = work.to_string_lossy().into_owned();
    let o = mesa(&[
        "pipeline",
        "--data",
        &data,
        "--work",
        &work,
        "--iterations",
        "3",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let frontier = out.find("## The frontier").expect("the frontier summary");
    assert!(
        out[frontier..].contains("tokens for 99% of all five's J"),
        "{out}"
    );
    assert!(out[frontier..].contains("oracle"), "{out}");
    let best = Path::new(&work).join("run-seed0").join("best.mesa");
    let policy = std::fs::read_to_string(&best).expect("best.mesa");
    assert!(policy.starts_with("policy "), "{policy}");
    // The stratified policies are fitted and placed on the same frontier.
    for target in ["keep", "within"] {
        let dir = Path::new(&work).join(format!("strata-{target}-seed0"));
        let policy = std::fs::read_to_string(dir.join("best.mesa")).expect("strata best.mesa");
        assert!(
            policy.starts_with(&format!("policy \"strata-{target}-seed0\"")),
            "{policy}"
        );
        assert!(
            out[frontier..].contains(&format!("strata-{target}-seed0")),
            "{out}"
        );
    }
}

/// The main job on a dataset unlike AMA-Bench: no domains, and no question
/// naming a step, so evidence recall labels nothing; the job says so,
/// measures answer coverage instead, and runs to the frontier. Asked for
/// evidence recall by name, it stops and says what to do.
#[test]
fn the_main_job_takes_a_dataset_without_domains_or_step_labels() {
    let mut lines = String::new();
    for e in 0..24 {
        let item = ["kettle", "lamp", "router", "ticket"][e % 4];
        let steps: Vec<String> = (0..10)
            .map(|i| format!(r#"{{"action": "search {item} {i}", "observation": "found {item} model X{e}{i} at {} dollars"}}"#, 10 + i))
            .collect();
        lines.push_str(&format!(
            r#"{{"id": "r{e}", "task": "buy a {item}", "steps": [{}], "questions": [{{"question": "Which {item} model was cheapest?", "answer": "X{e}0 at 10 dollars"}}]}}"#,
            steps.join(", ")
        ));
        lines.push('\n');
    }
    let data = tmp("no-domains.jsonl", lines.as_bytes());
    let work = std::env::temp_dir()
        .join(format!("mesa-cli-{}", std::process::id()))
        .join("pipeline-no-domains");
    let work = work.to_string_lossy().into_owned();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "pipeline",
            "--data",
            &data,
            "--work",
            &work,
            "--iterations",
            "2",
        ];
        args.extend_from_slice(extra);
        mesa(&args)
    };
    let o = run(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("answer coverage instead"),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).contains("Frontier on test (answer-coverage)"),
        "{}",
        stdout(&o)
    );
    let o = run(&["--utility", "evidence-recall"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("sweep another --utility"),
        "{}",
        stderr(&o)
    );
}

/// Each bad option of `mesa stratify` exits 1 (a value out of range, with
/// what to do) or 2 (a usage error), and writes nothing.
fn stratify_refuses_bad_options(sweep: &str, out: &Path) {
    let out = out.to_string_lossy();
    let cases: [(&[&str], i32, &str); 8] = [
        (&["--trade-price=-1"], 1, "trade prices must be"),
        (&["--folds", "100"], 1, "use --folds"),
        (&["--folds", "1"], 1, "--folds must be at least 2"),
        (&["--bag", "0"], 1, "--bag must be at least 1"),
        (&["--min-leaf", "0"], 1, "--min-leaf must be"),
        (&["--bound=-1"], 1, "--bound"),
        (&["--target", "most"], 2, "most"),
        (&["--prior", "ten"], 2, "ten"),
    ];
    for (args, code, says) in cases {
        let o = mesa(&[&["stratify", "--sweep", sweep, "--out", &out][..], args].concat());
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
        assert!(!Path::new(&*out).exists(), "{args:?} wrote {out}");
    }
}

/// `mesa stratify` on a sweep: writes a policy that `mesa check` accepts
/// and a report whose strata cover train and val; bad options exit 1 or 2
/// with what to do.
#[test]
fn stratify_writes_a_checked_policy_and_its_report() {
    let data = tmp("stratify-data.jsonl", twenty_episodes().as_bytes());
    let dir = std::env::temp_dir().join(format!("mesa-cli-stratify-{}", std::process::id()));
    let (_, sweep) = build_and_sweep(&data, &dir);
    let out = dir.join("strata").to_string_lossy().into_owned();
    let o = mesa(&["stratify", "--sweep", &sweep, "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("out of fold J"), "{}", stdout(&o));
    let policy = Path::new(&out).join("best.mesa");
    let o = mesa(&["check", &policy.to_string_lossy()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&out).join("report.json")).unwrap(),
    )
    .unwrap();
    let support: u64 = report["strata"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["support"].as_u64().unwrap())
        .sum();
    assert_eq!(support, report["questions"].as_u64().unwrap());
    // Six key sets at 14 token prices, and trades in two units at 20 prices.
    assert_eq!(
        report["candidates"].as_array().unwrap().len(),
        6 * 14 + 2 * 20
    );
    assert_eq!(report["trade"], serde_json::json!(["words", "steps"]));
    assert_eq!(report["fit"], "train+val");
    // Fitted on train alone, it reads fewer questions and leaves val out.
    let train = dir.join("strata-train").to_string_lossy().into_owned();
    let o = mesa(&[
        "stratify", "--sweep", &sweep, "--out", &train, "--fit", "train", "--folds", "4",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let on_train: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&train).join("report.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(on_train["fit"], "train");
    assert!(on_train["questions"].as_u64() < report["questions"].as_u64());
    // Without trades, and with one unit at two prices.
    for (trade, candidates) in [
        (&["--trade", "none"][..], 6 * 14),
        (
            &["--trade", "steps", "--trade-price", "0.2,0.4"],
            6 * 14 + 2,
        ),
    ] {
        let o = mesa(
            &[
                &[
                    "stratify", "--sweep", &sweep, "--out", &train, "--format", "json",
                ][..],
                trade,
            ]
            .concat(),
        );
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let r: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert_eq!(
            r["candidates"].as_array().unwrap().len(),
            candidates,
            "{trade:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `mesa stratify` with trees, bagged fits, refinements and two priors:
/// the same checked output, a report that says what it tried; bad options
/// are refused.
#[test]
fn stratify_variants_and_bad_options() {
    let data = tmp("stratify-variants.jsonl", twenty_episodes().as_bytes());
    let dir = std::env::temp_dir().join(format!("mesa-cli-variants-{}", std::process::id()));
    let (_, sweep) = build_and_sweep(&data, &dir);
    // Trees, bagged fits and refinements: the same checked output.
    let trees = dir.join("strata-trees").to_string_lossy().into_owned();
    let o = mesa(&[
        "stratify",
        "--sweep",
        &sweep,
        "--out",
        &trees,
        "--families",
        "both",
        "--bag",
        "3",
        "--min-leaf",
        "5",
        "--refine",
        "2",
        "--format",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let both: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    // Six key sets with 0 to 2 refinements each, and three trees.
    assert_eq!(
        both["candidates"].as_array().unwrap().len(),
        (6 * 3 + 3) * 14 + 2 * 20
    );
    assert_eq!(both["refine"].as_u64(), Some(2));
    assert_eq!(
        (both["families"].as_str(), both["bag"].as_u64()),
        (Some("both"), Some(3))
    );
    let o = mesa(&[
        "check",
        &Path::new(&trees).join("best.mesa").to_string_lossy(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Two priors: every key set at both, the report says which it chose.
    let o = mesa(&[
        "stratify", "--sweep", &sweep, "--out", &trees, "--prior", "0,10", "--bound", "0",
        "--format", "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let two: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        two["candidates"].as_array().unwrap().len(),
        6 * 2 * 14 + 2 * 20
    );
    assert_eq!(two["priors"], serde_json::json!([0, 10]));
    stratify_refuses_bad_options(&sweep, &dir.join("strata-refused"));
    let _ = std::fs::remove_dir_all(&dir);
}
