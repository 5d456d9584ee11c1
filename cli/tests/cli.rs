//! End-to-end tests of the `mesa` binary: exit codes, output shapes, and bad
//! input that must give a diagnostic and exit 1, never a panic (exit 101) or
//! a crash.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mesa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mesa"))
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(root())
        .output()
        .expect("run mesa")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmp(name: &str, bytes: &[u8]) -> String {
    let dir = std::env::temp_dir().join(format!("mesa-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write temp file");
    path.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .expect("examples/")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mesa"))
        .map(|p| {
            format!(
                "examples/{}",
                p.file_name().unwrap_or_default().to_string_lossy()
            )
        })
        .collect();
    v.sort();
    v
}

/// Asserts a rejected input: exit 1, the code on stderr, no panic.
fn rejected(o: &Output, code: &str) {
    assert_eq!(o.status.code(), Some(1), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert!(err.contains(code), "expected {code} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn every_example_is_clean_formatted_and_runs() {
    let examples = examples();
    assert!(examples.len() >= 6, "{examples:?}");
    for ex in &examples {
        let o = mesa(&["check", ex]);
        assert_eq!(o.status.code(), Some(0), "{ex}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("no problems"),
            "{ex} has warnings: {}",
            stderr(&o)
        );
        let o = mesa(&["fmt", "--check", ex]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{ex} is not formatted: {}",
            stderr(&o)
        );
        let o = mesa(&["run", ex, "--input", "examples/queries.jsonl"]);
        assert_eq!(o.status.code(), Some(0), "{ex}: {}", stderr(&o));
        let lines: Vec<serde_json::Value> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect();
        assert_eq!(lines.len(), 8, "{ex}: one result per query");
        for (i, v) in lines.iter().enumerate() {
            assert_eq!(v["id"], serde_json::json!(i + 1));
            let mask = v["mask"].as_array().expect("mask");
            assert!(!mask.is_empty(), "{ex}: empty mask");
            assert!(v["bits"].as_u64().is_some_and(|b| (1..32).contains(&b)));
        }
    }
}

#[test]
fn run_and_explain_a_single_query() {
    let o = mesa(&[
        "run",
        "examples/fig5.mesa",
        "--query",
        "Why did the SQL fail?",
        "--domain",
        "text2sql",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "{S, T, R}  (decided by rule causal_sql, line 9)"
            .replace(", line", " (line")
            .replace("9)", "9))")
    );
    let o = mesa(&[
        "run",
        "examples/fig5.mesa",
        "-q",
        "x",
        "--format",
        "json",
        "--trace",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("json");
    assert_eq!(v["mask"], serde_json::json!(["S", "V"]));
    assert!(v["trace"]["steps"].as_array().is_some_and(|s| s.len() == 6));
    let o = mesa(&[
        "explain",
        "examples/token_budget.mesa",
        "-q",
        "summarize it",
        "--preview",
        "R.tokens=5000",
        "--preview",
        "V.tokens=3000",
    ]);
    let text = stdout(&o);
    assert!(text.contains("rule abstract (line 6): fired"), "{text}");
    assert!(text.contains("dropped R (5000 tokens)"), "{text}");
    assert!(text.contains("result: {S, T, G, V}"), "{text}");
}

#[test]
fn bad_preview_and_missing_query_are_errors() {
    let o = mesa(&[
        "run",
        "examples/fig5.mesa",
        "-q",
        "x",
        "--preview",
        "Q.tokens=3",
    ]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    assert!(stderr(&o).contains("unknown structure `Q`"));
    let o = mesa(&["run", "examples/fig5.mesa"]);
    assert_eq!(o.status.code(), Some(2), "a usage error");
    assert!(stderr(&o).contains("--query"));
    let o = mesa(&["check", "does/not/exist.mesa"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("cannot read `does/not/exist.mesa`"));
}

#[test]
fn bad_jsonl_lines_get_error_results_and_exit_1() {
    let input = tmp("q.jsonl", b"{\"query\": \"why\"}\nnot json\n\n{\"query\": 3}\n{\"id\": \"x\", \"query\": \"summarize\"}\n");
    let o = mesa(&["run", "examples/fig5.mesa", "--input", &input]);
    assert_eq!(o.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(
        lines.len(),
        4,
        "blank lines are skipped, every other line answered"
    );
    assert_eq!(lines[1]["line"], 2);
    assert!(lines[1]["error"].is_string());
    assert_eq!(lines[2]["line"], 4);
    assert_eq!(lines[3]["id"], "x");
    assert_eq!(lines[3]["rule"], "abstract");
}

#[test]
fn check_json_output() {
    let f = tmp("typo.mesa", b"policy \"p\"\ndefault {S, X}\n");
    let o = mesa(&["check", "--format", "json", &f]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("json array");
    let d = &v[0];
    assert_eq!(d["code"], "E0203");
    assert_eq!(d["severity"], "error");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(2), Some(13))
    );
    assert_eq!(
        (d["byte_start"].as_u64(), d["byte_end"].as_u64()),
        (Some(23), Some(24))
    );
    assert!(d["help"]
        .as_str()
        .is_some_and(|h| h.contains("S, T, G, V, R")));
}

#[test]
fn warnings_pass_unless_denied() {
    let f = tmp(
        "warn.mesa",
        b"policy \"p\"\nlet unused = words [\"x\"]\ndefault {S}\n",
    );
    assert_eq!(mesa(&["check", &f]).status.code(), Some(0));
    let o = mesa(&["check", "--deny-warnings", &f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("W0103"));
}

#[test]
fn fmt_rewrites_and_check_reports() {
    let messy = b"policy   \"p\"\nrule r when size>1->add{T}   # keep me\ndefault {S}";
    let f = tmp("messy.mesa", messy);
    let o = mesa(&["fmt", "--check", &f]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("would reformat"));
    assert_eq!(
        std::fs::read(&f).expect("read"),
        messy,
        "--check changes nothing"
    );
    assert_eq!(mesa(&["fmt", &f]).status.code(), Some(0));
    let formatted = std::fs::read_to_string(&f).expect("read");
    assert_eq!(
        formatted,
        "policy \"p\"\nrule r when size > 1 -> add {T}  # keep me\ndefault {S}\n"
    );
    assert_eq!(mesa(&["fmt", "--check", &f]).status.code(), Some(0));
    // A file that does not parse is left alone.
    let broken = tmp("broken.mesa", b"policy \"p\" rule");
    let o = mesa(&["fmt", &broken]);
    rejected(&o, "E0100");
    assert_eq!(std::fs::read(&broken).expect("read"), b"policy \"p\" rule");
}

#[test]
fn bad_input_gets_a_diagnostic_never_a_panic() {
    // Random bytes (a fixed-seed generator so failures reproduce).
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let random: Vec<u8> = (0..65536)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    rejected(&mesa(&["check", &tmp("random.mesa", &random)]), "E0001");
    // Random printable ASCII.
    let ascii: Vec<u8> = random.iter().map(|b| 32 + b % 95).collect();
    rejected(&mesa(&["check", &tmp("ascii.mesa", &ascii)]), "E0");
    rejected(
        &mesa(&[
            "check",
            &tmp("utf8.mesa", b"policy \"p\xc3\x28\"\ndefault {S}\n"),
        ]),
        "E0001",
    );
    rejected(&mesa(&["check", &tmp("empty.mesa", b"")]), "E0103");
    let mut big = b"policy \"big\"\ndefault {S}\n".to_vec();
    while big.len() < 10 << 20 {
        big.extend_from_slice(b"rule r when query has words [\"padding\"] -> add {T}\n");
    }
    rejected(&mesa(&["check", &tmp("big.mesa", &big)]), "E0002");
    let deep = format!(
        "policy \"deep\"\nrule r when {}true{} -> add {{S}}\ndefault {{T}}\n",
        "(".repeat(100_000),
        ")".repeat(100_000)
    );
    rejected(
        &mesa(&["check", &tmp("deep.mesa", deep.as_bytes())]),
        "E0003",
    );
    let nots = format!(
        "policy \"nots\"\nrule r when {}true -> add {{S}}\ndefault {{T}}\n",
        "not ".repeat(100_000)
    );
    rejected(
        &mesa(&["check", &tmp("nots.mesa", nots.as_bytes())]),
        "E0003",
    );
    let ifs = format!(
        "policy \"ifs\"\nrule r when {}true -> add {{S}}\ndefault {{T}}\n",
        "if true then true else ".repeat(20_000)
    );
    rejected(&mesa(&["check", &tmp("ifs.mesa", ifs.as_bytes())]), "E0003");
    let sum = format!(
        "policy \"sum\"\nrule r when 1{} > 0 -> add {{S}}\ndefault {{T}}\n",
        " + 1".repeat(100_000)
    );
    rejected(&mesa(&["check", &tmp("sum.mesa", sum.as_bytes())]), "E0003");
    let cycle =
        b"policy \"p\"\nlet a = b\nlet b = c\nlet c = a\nrule r when a -> add {S}\ndefault {T}\n";
    let o = mesa(&["check", &tmp("cycle.mesa", cycle)]);
    rejected(&o, "E0207");
    assert!(stderr(&o).contains("`a`, `b`, `c`"), "{}", stderr(&o));
    let o = mesa(&[
        "check",
        &tmp("letter.mesa", b"policy \"p\"\ndefault {S, Q}\n"),
    ]);
    rejected(&o, "E0203");
    // The same inputs through `run` and `fmt`.
    rejected(
        &mesa(&["run", &tmp("random2.mesa", &random), "-q", "x"]),
        "E0001",
    );
    rejected(
        &mesa(&["fmt", &tmp("deep2.mesa", deep.as_bytes())]),
        "E0003",
    );
}

#[test]
fn compile_inspect_and_run_both_engines() {
    let dir = std::env::temp_dir().join(format!("mesa-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let wasm = dir.join("fig5.wasm").to_string_lossy().into_owned();
    let cwasm = dir.join("fig5.cwasm").to_string_lossy().into_owned();
    let o = mesa(&[
        "compile",
        "examples/fig5.mesa",
        "-o",
        &wasm,
        "--aot",
        &cwasm,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("memory pages"), "{}", stderr(&o));
    let o = mesa(&["inspect", &wasm]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("\"name\": \"fig5-style\""),
        "{}",
        stdout(&o)
    );
    assert!(stdout(&o).contains("\"R.tokens\""), "{}", stdout(&o));
    assert_eq!(mesa(&["inspect", &cwasm]).status.code(), Some(0));
    let args = [
        "-q",
        "Why did the SQL fail?",
        "--domain",
        "text2sql",
        "--format",
        "json",
        "--trace",
    ];
    let mut outputs = Vec::new();
    for (file, engine) in [
        ("examples/fig5.mesa", "wasm"),
        ("examples/fig5.mesa", "interp"),
        (wasm.as_str(), "wasm"),
        (cwasm.as_str(), "wasm"),
    ] {
        let mut a = vec!["run", file, "--engine", engine];
        a.extend(args);
        let o = mesa(&a);
        assert_eq!(o.status.code(), Some(0), "{file} {engine}: {}", stderr(&o));
        outputs.push(stdout(&o));
    }
    assert!(outputs.iter().all(|o| *o == outputs[0]), "{outputs:?}");
    assert!(outputs[0].contains("\"rule\":\"causal_sql\""));
    // The interpreter needs the source.
    let o = mesa(&["run", &wasm, "--engine", "interp", "-q", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("needs the policy's `.mesa` source"));
    // Not a module, and a module with an import.
    let junk = tmp("junk.wasm", b"\0asm\x01\0\0\0garbage");
    let o = mesa(&["inspect", &junk]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("not a valid WebAssembly module"),
        "{}",
        stderr(&o)
    );
    let o = mesa(&["run", &junk, "-q", "x"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(!stderr(&o).contains("panicked"));
}

#[test]
fn check_reports_a_pattern_dfa_blowup_on_the_pattern() {
    let src = b"policy \"p\"\nlet wide = pattern r\"[01]*1[01]{20}\"\nrule r when query matches wide -> add {T}\ndefault {S}\n";
    let f = tmp("blowup.mesa", src);
    // A policy that checks must compile: the checker reports what the
    // compiler would refuse, on the pattern itself.
    let o = mesa(&["check", &f]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.contains("E0504") && err.contains("`wide`") && err.contains("2:20"),
        "{err}"
    );
    let o = mesa(&["compile", &f, "-o", &tmp("blowup.wasm", b"")]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(mesa(&["run", &f, "-q", "x"]).status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2_and_bom_lines_are_read() {
    let o = mesa(&[
        "run",
        "examples/quickstart.mesa",
        "-q",
        "x",
        "--preview",
        "R.tokens",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let lines = tmp(
        "bom.jsonl",
        "\u{feff}{\"query\": \"why did it fail\"}\n".as_bytes(),
    );
    let o = mesa(&["run", "examples/quickstart.mesa", "--input", &lines]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn inspect_refuses_a_file_that_is_not_wasm_in_words() {
    let f = tmp("text.wasm", b"policy \"p\"\n");
    let o = mesa(&["inspect", &f]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("magic bytes"), "{err}");
    assert!(!err.contains("[112,"), "no raw bytes: {err}");
}

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
    let not_a_store = dir.to_string_lossy().into_owned();
    let o = mesa(&["query", &not_a_store, "--list"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not a"), "{}", stderr(&o));
}

/// Every preview, the evidence-aware ones included, reads the same in a
/// sweep as at query time: `mesa sweep` records all of them, and a policy
/// that reads them all gets the same numbers from `mesa query`.
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
    let names = [
        "tokens",
        "top",
        "hits",
        "steps",
        "gap",
        "share",
        "named",
        "overlap_S",
        "overlap_T",
        "overlap_G",
        "overlap_V",
        "overlap_R",
    ];
    let letters = ["S", "T", "G", "V", "R"];
    let mut terms = Vec::new();
    for (a, s) in letters.iter().enumerate() {
        for (f, name) in names.iter().enumerate() {
            if f < 7 || f - 7 > a {
                terms.push(format!("preview.{s}.{name}"));
            }
        }
    }
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
    for (a, s) in letters.iter().enumerate() {
        let row = record["previews"][s]
            .as_array()
            .expect("a row per structure");
        assert_eq!(row.len(), 12);
        for (f, name) in names.iter().enumerate() {
            if f >= 7 && f - 7 <= a {
                continue;
            }
            let key = format!("{s}.{name}");
            assert_eq!(read[&key], row[f], "{key}");
        }
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
    let o = mesa(&[
        "stratify",
        "--sweep",
        &sweep,
        "--out",
        &train,
        "--trade-price=-1",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("trade prices must be"),
        "{}",
        stderr(&o)
    );
    let o = mesa(&[
        "stratify", "--sweep", &sweep, "--out", &out, "--folds", "100",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("use --folds"), "{}", stderr(&o));
    let o = mesa(&["stratify", "--sweep", &sweep, "--out", &out, "--folds", "1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--folds must be at least 2"),
        "{}",
        stderr(&o)
    );
    let o = mesa(&[
        "stratify", "--sweep", &sweep, "--out", &out, "--target", "most",
    ]);
    assert_eq!(o.status.code(), Some(2));
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
    for (flag, says) in [
        ("--bag", "--bag must be at least 1"),
        ("--min-leaf", "--min-leaf must be"),
    ] {
        let o = mesa(&["stratify", "--sweep", &sweep, "--out", &trees, flag, "0"]);
        assert_eq!(o.status.code(), Some(1));
        assert!(stderr(&o).contains(says), "{}", stderr(&o));
    }
    let o = mesa(&["stratify", "--sweep", &sweep, "--out", &trees, "--bound=-1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--bound"), "{}", stderr(&o));
    let o = mesa(&[
        "stratify", "--sweep", &sweep, "--out", &trees, "--prior", "ten",
    ]);
    assert_eq!(o.status.code(), Some(2));
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
    let _ = std::fs::remove_dir_all(&dir);
}
