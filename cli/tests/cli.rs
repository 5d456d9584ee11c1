//! End-to-end tests of the `mesa` binary: exit codes, output shapes, and bad
//! input that must give a diagnostic and exit 1, never a panic (exit 101) or
//! a crash.

mod common;

use common::{mesa, root, stderr, stdout, tmp};
use std::process::Output;

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

/// Standard output that is gone ends a command without a panic: quietly
/// when the reader closed the pipe, with an error when the disk is full.
#[test]
fn a_closed_or_full_standard_output_is_no_panic() {
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_mesa"))
        .args(["std"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mesa");
    drop(child.stdout.take());
    let o = child.wait_with_output().expect("mesa ends");
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    let full = std::fs::File::create("/dev/full").expect("/dev/full");
    let o = Command::new(env!("CARGO_BIN_EXE_mesa"))
        .args(["std"])
        .stdout(full)
        .output()
        .expect("run mesa");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("cannot write to standard output"),
        "{}",
        stderr(&o)
    );
}

/// Token prices past 1 and seeds past 2^64 are usage errors that say what
/// to use, before any file is read.
#[test]
fn prices_and_seeds_out_of_range_are_usage_errors() {
    let o = mesa(&[
        "eval",
        "none.mesa",
        "--sweep",
        "none.jsonl",
        "--lambda",
        "1e308",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("token price from 0 to 1"),
        "{}",
        stderr(&o)
    );
    let o = mesa(&[
        "frontier",
        "--sweep",
        "none.jsonl",
        "--first-seed",
        "18446744073709551615",
        "--seeds",
        "2",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("smaller --first-seed"),
        "{}",
        stderr(&o)
    );
}

/// Texts too long for a compiled policy's input get the error and a line
/// of help naming the interpreter, which takes them.
#[test]
fn too_long_for_the_module_says_to_use_the_interpreter() {
    let task = "fix the failing test ".repeat(4_000);
    let query = "why did it fail ".repeat(4_000);
    let args = [
        "run",
        "examples/quickstart.mesa",
        "--query",
        &query,
        "--task",
        &task,
    ];
    let o = mesa(&args);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("input buffer"), "{}", stderr(&o));
    assert!(stderr(&o).contains("help: ") && stderr(&o).contains("--engine interp"));
    let o = mesa(&[&args[..], &["--engine", "interp"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
