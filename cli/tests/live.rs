//! The live memory through the `mesa` binary: appends acknowledged line by
//! line survive `kill -9` at any moment with no partial step, and the
//! write commands round-trip through `mesa query --tenant`.

mod common;

use common::{command as mesa, on, run, run_with};
use mesa_memory::LiveMemory;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Stdio;

/// `mesa append ROOT --tenant t --episode e --task TASK EXTRA...` with
/// its standard input and output piped.
fn spawn_append(root: &Path, task: &str, extra: &[&str]) -> std::process::Child {
    mesa()
        .args([
            "append",
            root.to_str().expect("utf-8 path"),
            "--tenant",
            "t",
        ])
        .args(["--episode", "e", "--task", task])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mesa append")
}

fn line(round: usize, i: usize) -> (String, String) {
    (
        format!("round {round} step {i}: run the tests"),
        format!("output {round}-{i}: {}", "ok ".repeat(50 + (i * 37) % 400)),
    )
}

/// 30 times: a child `mesa append` takes a stream of steps and is killed
/// (SIGKILL) at a pseudo-random point, sometimes between acknowledgements,
/// sometimes in the middle of a write. Every acknowledged step is there,
/// whole; no step is there that was not sent whole; indices have no gap.
#[test]
fn acknowledged_appends_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("mem");
    let mut acked: Vec<(usize, usize, usize)> = Vec::new(); // (round, i, index)
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for round in 0..30 {
        let mut child = spawn_append(&root, "kill test", &[]);
        let mut stdin = child.stdin.take().expect("stdin");
        let feeder = std::thread::spawn(move || {
            for i in 0..400 {
                let (a, o) = line(round, i);
                let l = serde_json::json!({"action": a, "observation": o});
                if writeln!(stdin, "{l}").is_err() {
                    break;
                }
            }
        });
        let mut acks = BufReader::new(child.stdout.take().expect("stdout"));
        let stop_after = 1 + next(12) as usize;
        let mut got = 0;
        let mut buf = String::new();
        while got < stop_after {
            buf.clear();
            if acks.read_line(&mut buf).expect("read ack") == 0 {
                break;
            }
            let v: serde_json::Value = serde_json::from_str(&buf).expect("ack is JSON");
            let index = v["index"].as_u64().expect("an index") as usize;
            acked.push((round, got, index));
            got += 1;
        }
        // Kill mid-write about half the time: a short, varied pause first.
        if next(2) == 0 {
            std::thread::sleep(std::time::Duration::from_micros(next(3000)));
        }
        child.kill().expect("kill");
        let _ = child.wait();
        let _ = feeder.join();
    }
    let t = LiveMemory::open(&root)
        .unwrap()
        .tenant("t")
        .expect("reopens");
    let steps = t.steps("e").expect("steps");
    let indices: Vec<usize> = steps.iter().map(|s| s.index).collect();
    assert_eq!(indices, (0..steps.len()).collect::<Vec<_>>(), "no gaps");
    assert!(steps.len() >= acked.len());
    for &(round, i, index) in &acked {
        let (a, o) = line(round, i);
        let s = &steps[index];
        assert_eq!(
            (&s.action, &s.observation),
            (&a, &o),
            "acknowledged step {index}"
        );
    }
    // Every step present is one that was sent, whole.
    for s in &steps {
        let round: usize = s.action["round ".len()..]
            .split(' ')
            .next()
            .and_then(|r| r.parse().ok())
            .expect("a round");
        let i: usize = s
            .action
            .split("step ")
            .nth(1)
            .and_then(|r| r.split(':').next())
            .and_then(|r| r.parse().ok())
            .expect("an i");
        assert_eq!((s.action.clone(), s.observation.clone()), line(round, i));
    }
}

fn append(root: &Path, input: &[u8]) -> (bool, String, String) {
    let mut child = spawn_append(root, "Fix the failing date test", &["--domain", "SOFTWARE"]);
    child.stdin.take().unwrap().write_all(input).unwrap();
    let o = child.wait_with_output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn write_commands_round_trip_through_query() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let r = root.to_str().unwrap();
    let (ok, out, _) = append(
        &root,
        concat!(
            "{\"action\": \"execute_bash: pytest tests/test_dates.py\", \"observation\": \"1 failed: ValueError month 13\", \"timestamp\": \"2026-03-01T10:00:00Z\"}\n",
            "{\"action\": \"open src/dates.py\", \"observation\": \"def parse(d): return d.split('-')\"}\n",
            "not json\n",
            "{\"action\": \"\", \"observation\": \"x\"}\n",
        )
        .as_bytes(),
    );
    assert!(!ok, "bad lines give exit 1");
    let acks: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(acks[0]["index"], 0);
    assert_eq!(acks[1]["index"], 1);
    assert!(
        acks[2]["error"].as_str().unwrap().contains("expected"),
        "{out}"
    );
    assert!(
        acks[3]["error"].as_str().unwrap().contains("empty"),
        "{out}"
    );
    let ask = |q: &str| {
        let (ok, out, err) = on(
            r,
            "query",
            "e",
            &["--structures", "all", "--format", "json", q],
        );
        assert!(ok, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let a = ask("What failed at step 0?");
    let items = a["evidence"].as_array().unwrap();
    let t = items
        .iter()
        .find(|i| i["structure"] == "T")
        .expect("T answers step 0");
    assert_eq!(t["steps"], serde_json::json!([0]));
    assert_eq!(t["timestamps"], serde_json::json!(["2026-03-01T10:00:00Z"]));
    assert!(t["text"].as_str().unwrap().contains("month 13"));
    let (ok, _, err) = on(
        r,
        "correct",
        "e",
        &[
            "--step",
            "0",
            "--action",
            "execute_bash: pytest",
            "--observation",
            "all passed",
        ],
    );
    assert!(ok, "{err}");
    let a = ask("What failed at step 0?");
    assert!(!a.to_string().contains("month 13"));
    let (ok, _, err) = on(r, "forget", "e", &["--step", "1", "--compact"]);
    assert!(ok, "{err}");
    let a = ask("Which file was opened?");
    assert!(!a.to_string().contains("dates.py"), "{a}");
    let (ok, out, _) = run(&["episodes", r, "--tenant", "t"]);
    assert!(ok && out.starts_with("e\t1 steps\tSOFTWARE"), "{out}");
    // Errors: a bad tenant, an unknown episode, a step that does not exist.
    let (ok, _, err) = run(&["episodes", r, "--tenant", "../x"]);
    assert!(!ok && err.contains("not allowed"), "{err}");
    let (ok, _, err) = on(r, "query", "nope", &["--structures", "S", "q"]);
    assert!(!ok && err.contains("no episode `nope`"), "{err}");
    let (ok, _, err) = on(r, "forget", "e", &["--step", "9"]);
    assert!(!ok && err.contains("no step 9"), "{err}");
    // With a request id, a rerun changes nothing and says so.
    let fix = ["--step", "0", "--action", "ls", "--request-id", "fix-1"];
    let (ok, _, err) = on(r, "correct", "e", &fix);
    assert!(ok && err.starts_with("corrected step 0"), "{err}");
    let (ok, _, err) = on(r, "correct", "e", &fix);
    assert!(ok && err.starts_with("already done"), "{err}");
    let (ok, _, err) = on(r, "forget", "e", &["--step", "0", "--request-id", "f-1"]);
    assert!(ok && err.starts_with("forgot 1 step(s)"), "{err}");
    let (ok, _, err) = on(r, "forget", "e", &["--step", "0", "--request-id", "f-1"]);
    assert!(ok && err.contains("request id: forgot 1 step(s)"), "{err}");
    let (ok, _, err) = run(&["compact", r, "--tenant", "t"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["episodes", r, "--tenant", "nobody"]);
    assert!(!ok && err.contains("no tenant `nobody`"), "{err}");
}

/// `mesa query --tenant` reads beside a running `mesa append`.
#[test]
fn a_query_runs_while_an_append_is_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let r = root.to_str().unwrap();
    let mut child = spawn_append(&root, "t", &[]);
    let mut stdin = child.stdin.take().unwrap();
    let mut acks = BufReader::new(child.stdout.take().unwrap());
    writeln!(
        stdin,
        r#"{{"action": "grep TODO", "observation": "src/a.rs: TODO fix parser"}}"#
    )
    .unwrap();
    let mut ack = String::new();
    acks.read_line(&mut ack).unwrap();
    assert!(ack.contains("\"index\":0"), "{ack}");
    // The writer still holds the tenant; a reader answers anyway.
    let (ok, out, err) = on(
        r,
        "query",
        "e",
        &["--structures", "T", "What was at step 0?"],
    );
    assert!(ok, "{err}");
    assert!(out.contains("TODO fix parser"), "{out}");
    let (ok, _, err) = run(&["forget", r, "--tenant", "t", "--episode", "e", "--all"]);
    assert!(!ok && err.contains("open for writing elsewhere"), "{err}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// A dataset imported into a tenant (`mesa build --into`) keeps its
/// questions, and `mesa query --tenant --all` asks them with the same
/// evidence, mask and tokens as `mesa query --all` on a store built from
/// the same file.
#[test]
fn an_imported_dataset_answers_its_questions_as_a_built_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.jsonl");
    let lines = [
        r#"{"id": "a", "task": "fix the test", "domain": "software", "steps": [{"action": "run pytest", "observation": "1 failed: test_dates", "timestamp": "2026-03-01T10:01:00Z"}, {"action": "edit src/dates.py", "observation": "ok", "timestamp": "2026-03-01T10:02:00Z"}, {"action": "run pytest", "observation": "1 passed", "timestamp": "2026-03-01T10:03:00Z"}], "questions": [{"id": "a1", "question": "What failed at step 0?", "answer": "test_dates"}, {"id": "a2", "question": "Which file was edited?", "answer": "src/dates.py"}]}"#,
        r#"{"id": "b", "task": "find the kettle", "domain": "web", "steps": [{"action": "search kettle", "observation": "3 results", "timestamp": "2026-03-01T10:04:00Z"}, {"action": "click item 2", "observation": "red kettle $25", "timestamp": "2026-03-01T10:05:00Z"}], "questions": [{"id": "b1", "question": "How much was the kettle?", "answer": "$25"}]}"#,
    ];
    std::fs::write(&data, lines.join("\n")).unwrap();
    let (data, store) = (data.to_str().unwrap(), dir.path().join("store"));
    let (store, root) = (store.to_str().unwrap(), dir.path().join("mem"));
    let root = root.to_str().unwrap();
    let (ok, _, err) = run(&["build", data, "-o", store, "--quiet"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&["build", data, "--into", root, "--tenant", "t", "--quiet"]);
    assert!(ok, "{err}");
    assert!(err.contains("5 steps and 3 questions"), "{err}");
    let answers = |args: &[&str]| -> Vec<serde_json::Value> {
        let (ok, out, err) = run(args);
        assert!(ok, "{err}");
        out.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
                v.as_object_mut().unwrap().remove("micros");
                v
            })
            .collect()
    };
    let built = answers(&["query", store, "--all", "--structures", "all"]);
    let live = answers(&[
        "query",
        root,
        "--tenant",
        "t",
        "--all",
        "--structures",
        "all",
    ]);
    assert_eq!(built.len(), 3);
    assert_eq!(live, built);
    let one = answers(&[
        "query", root, "--tenant", "t", "--all", "-e", "b", "-s", "all",
    ]);
    assert_eq!(one, built[2..]);
    assert!(
        built[0]["evidence"][0]["timestamps"].is_array(),
        "{}",
        built[0]
    );
    // Forgetting an episode forgets its questions.
    let (ok, _, err) = on(root, "forget", "a", &["--all"]);
    assert!(ok, "{err}");
    let left = answers(&["query", root, "--tenant", "t", "--all", "-s", "all"]);
    assert_eq!(left, built[2..]);
}

/// Commands that read, forget, correct or compact create nothing: a
/// mistyped root or tenant is an error that says so, and leaves no
/// directory behind; indices past a signed 64-bit integer are refused.
#[test]
fn only_append_creates_memories_and_tenants() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let r = root.to_str().unwrap();
    let (ok, _, err) = run(&["episodes", r, "--tenant", "t"]);
    assert!(!ok && err.contains("there is no MESA live memory"), "{err}");
    let (ok, _, err) = run(&["compact", r, "--tenant", "t"]);
    assert!(!ok && err.contains("there is no MESA live memory"), "{err}");
    assert!(!root.exists(), "a failed command made {r}");
    let (ok, _, err) = append(&root, b"{\"action\": \"open the file\"}\n");
    assert!(ok, "{err}");
    for (cmd, rest) in [
        ("forget", &["--all"][..]),
        ("correct", &["--step", "0", "--action", "x"][..]),
    ] {
        let mut args = vec![cmd, r, "--tenant", "ghost", "--episode", "e"];
        args.extend_from_slice(rest);
        let (ok, _, err) = run(&args);
        assert!(
            !ok && err.contains("there is no tenant `ghost`"),
            "{cmd}: {err}"
        );
    }
    let (ok, _, err) = run(&["compact", r, "--tenant", "ghost"]);
    assert!(!ok && err.contains("there is no tenant `ghost`"), "{err}");
    assert!(!root.join("tenants/ghost").exists());
    let (ok, out, _) = append(
        &root,
        b"{\"action\": \"b\", \"index\": 9223372036854775808}\n",
    );
    assert!(
        !ok && out.contains("above the largest a step may have"),
        "{out}"
    );
}

/// `mesa mcp` answers a line that is not a JSON-RPC message with JSON-RPC's
/// error (a null id) instead of leaving the client waiting, keeps serving,
/// and writes every reply before it exits at the end of its input.
#[test]
fn mcp_answers_lines_that_are_not_messages() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let mut child = mesa()
        .args(["mcp", root.to_str().unwrap(), "--tenant", "t"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run mesa mcp");
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
    let input = format!("not json at all\n42\n{init}\n{{\"jsonrpc\": \"2.0\", \"id\": 2\n");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let replies: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("each reply is one JSON line"))
        .collect();
    let codes: Vec<i64> = replies
        .iter()
        .filter_map(|r| r["error"]["code"].as_i64())
        .collect();
    assert_eq!(codes, [-32700, -32600, -32700], "{replies:?}");
    assert!(replies
        .iter()
        .filter(|r| r.get("error").is_some())
        .all(|r| r["id"].is_null()));
    let init = replies
        .iter()
        .find(|r| r["id"] == 1)
        .expect("initialize answered");
    assert_eq!(init["result"]["serverInfo"]["name"], "mesa", "{init}");
}

/// `mesa append` run again over the same lines with request ids (a rerun
/// after a crash) appends nothing and says so in each acknowledgement.
#[test]
fn a_rerun_with_request_ids_appends_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("mem");
    let input: String = (0..3)
        .map(|i| {
            let l =
                serde_json::json!({"action": format!("step {i}"), "request_id": format!("r{i}")});
            format!("{l}\n")
        })
        .collect();
    let mut acks = Vec::new();
    for _ in 0..2 {
        let mut child = spawn_append(&root, "rerun", &[]);
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write");
        let out = child.wait_with_output().expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<serde_json::Value> = String::from_utf8(out.stdout)
            .expect("utf-8")
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON"))
            .collect();
        acks.push(lines);
    }
    for (i, (first, again)) in acks[0].iter().zip(&acks[1]).enumerate() {
        assert_eq!(first["index"], i, "{first}");
        assert_eq!(again["index"], i, "{again}");
        assert_eq!(first.get("replayed"), None, "{first}");
        assert_eq!(again["replayed"], true, "{again}");
    }
    let t = LiveMemory::open(&root).unwrap().tenant("t").unwrap();
    assert_eq!(t.steps("e").unwrap().len(), 3);
}

/// A tenant imported with an endpoint's embedder (`mesa build --into
/// --embedder openai`) is then appended to and asked through the CLI with
/// that embedder and its recorded model, whatever model the environment
/// names; with no endpoint where the environment points, opening it fails
/// and names the embedder.
#[test]
fn a_tenant_imported_with_an_endpoint_embedder_opens_with_it() {
    let server = mesa_testkit::Server::start(|req, _| {
        let texts = req.json()["input"].as_array().cloned().unwrap_or_default();
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| vec![1.0, t.as_str().map_or(0, str::len) as f32, 0.5])
            .collect();
        mesa_testkit::embeddings_reply(&vectors)
    });
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data.jsonl");
    let line = r#"{"id": "a", "task": "fix the test", "domain": "software", "steps": [{"action": "run pytest", "observation": "1 failed: test_dates"}, {"action": "edit src/dates.py", "observation": "ok"}]}"#;
    std::fs::write(&data, line).unwrap();
    let (data, root) = (data.to_str().unwrap(), dir.path().join("mem"));
    let root = root.to_str().unwrap();
    let with_input = |url: &str, model: &str, args: &[&str], input: &str| {
        let env = [
            ("MESA_LLM_BASE_URL", url),
            ("MESA_LLM_API_KEY", "test"),
            ("MESA_LLM_EMBEDDING_MODEL", model),
            ("MESA_LLM_MAX_RETRIES", "0"),
        ];
        run_with(&env, args, input)
    };
    let with_endpoint = |url: &str, model: &str, args: &[&str]| with_input(url, model, args, "");
    let url = server.base_url();
    let build = [
        "build",
        data,
        "--into",
        root,
        "--tenant",
        "t",
        "--embedder",
        "openai",
        "--quiet",
    ];
    let (ok, _, err) = with_endpoint(&url, "emb-a", &build);
    assert!(ok, "{err}");
    let step = r#"{"action": "run pytest again", "observation": "2 passed"}"#;
    let append = ["append", root, "--tenant", "t", "--episode", "a"];
    let (ok, _, err) = with_input(&url, "emb-b", &append, step);
    assert!(ok, "{err}");
    let sent = server.requests();
    let ask = [
        "query",
        root,
        "--tenant",
        "t",
        "--episode",
        "a",
        "--structures",
        "V",
        "Which test failed?",
    ];
    let (ok, out, err) = with_endpoint(&url, "emb-b", &ask);
    assert!(ok, "{err}");
    assert!(out.contains("test_dates"), "{out}");
    assert!(
        server.requests() > sent,
        "the question went to the endpoint"
    );
    assert_eq!(server.models(), ["emb-a"]);
    drop(server);
    let (ok, _, err) = with_endpoint("http://127.0.0.1:9/v1", "emb-a", &ask);
    assert!(!ok, "opened with no endpoint");
    assert!(
        err.contains("openai:emb-a:3") && err.contains("tenant `t`"),
        "{err}"
    );
}

/// A tenant `mesa append --summarizer llm --extractor llm` creates records
/// those builders: a later plain `mesa append` extracts its step's
/// relations through the chat endpoint, and `mesa query` reads the LLM's
/// summary.
#[test]
fn a_tenant_created_with_llm_builders_keeps_them() {
    let server = mesa_testkit::Server::start(|req, _| {
        let system = req.json()["messages"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if system.contains("\"triples\"") {
            mesa_testkit::chat_reply(
                r#"{"triples": [{"subject": "agent", "relation": "ran", "object": "pytest"}]}"#,
            )
        } else {
            mesa_testkit::chat_reply("- [step 0] the agent ran the tests\nSUMMARY-BY-THE-LLM")
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let root = root.to_str().unwrap();
    let url = server.base_url();
    let env = [
        ("MESA_LLM_BASE_URL", url.as_str()),
        ("MESA_LLM_API_KEY", "test"),
        ("MESA_LLM_CHAT_MODEL", "chat-a"),
        ("MESA_LLM_MAX_RETRIES", "0"),
    ];
    let with_llm = |args: &[&str], input: &str| run_with(&env, args, input);
    let append = ["append", root, "-t", "t", "-e", "a", "--task", "fix it"];
    let llm = ["--summarizer", "llm", "--extractor", "llm"];
    let first = r#"{"action": "run pytest", "observation": "1 failed"}"#;
    let (ok, _, err) = with_llm(&[&append[..], &llm[..]].concat(), first);
    assert!(ok, "{err}");
    let extractions = || {
        server
            .log()
            .iter()
            .filter(|r| r.body.contains("triples"))
            .count()
    };
    assert_eq!(extractions(), 1, "the first step's relations");
    let (ok, _, err) = with_llm(
        &append,
        r#"{"action": "run pytest again", "observation": "ok"}"#,
    );
    assert!(ok, "{err}");
    assert_eq!(
        extractions(),
        2,
        "the plain append used the recorded extractor"
    );
    let ask = [
        "query",
        root,
        "--tenant",
        "t",
        "--episode",
        "a",
        "--structures",
        "S",
        "What failed?",
    ];
    let (ok, out, err) = with_llm(&ask, "");
    assert!(ok, "{err}");
    assert!(out.contains("SUMMARY-BY-THE-LLM"), "{out}");
    // Naming other builders at an import into it is refused.
    let data = dir.path().join("data.jsonl");
    let line = r#"{"id": "b", "task": "t", "steps": [{"action": "x", "observation": "y"}]}"#;
    std::fs::write(&data, line).unwrap();
    let build = [
        "build",
        data.to_str().unwrap(),
        "--into",
        root,
        "--tenant",
        "t",
        "--quiet",
    ];
    let (ok, _, err) = with_llm(&build, "");
    assert!(!ok, "imported with other builders");
    assert!(err.contains("llm-summary-v1:chat-a"), "{err}");
    // Listed without an endpoint: no builder is made to list.
    let (ok, out, err) = run(&["tenants", root]);
    assert!(ok, "{err}");
    assert_eq!(
        out.trim(),
        "t\t1 episodes\t2 steps\thash-v1-384 llm-summary-v1:chat-a llm-openie-v1:chat-a"
    );
}

/// `mesa update` records how an episode ended: `mesa episodes` lists the
/// outcome, the summary shows it, and the same update again changes
/// nothing.
#[test]
fn an_episode_records_how_it_ended() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let (ok, _, err) = append(
        &root,
        b"{\"action\": \"pytest\", \"observation\": \"1 failed\"}\n",
    );
    assert!(ok, "{err}");
    let r = root.to_str().unwrap();
    let set = ["--outcome", "success", "--meta", "agent=v3"];
    let (ok, _, err) = on(r, "update", "e", &set);
    assert!(ok && err.contains("updated episode `e`"), "{err}");
    let (ok, _, err) = on(r, "update", "e", &set);
    assert!(ok && err.contains("already so"), "{err}");
    let (ok, listed, err) = run(&["episodes", r, "--tenant", "t"]);
    assert!(
        ok && listed.trim_end().ends_with("\tsuccess"),
        "{listed}{err}"
    );
    let (ok, listed, err) = run(&["episodes", r, "--tenant", "t", "--json"]);
    assert!(ok, "{err}");
    let e: serde_json::Value = serde_json::from_str(listed.trim()).expect("one JSON line");
    assert_eq!(
        (&e["id"], &e["steps"]),
        (&serde_json::json!("e"), &serde_json::json!(1))
    );
    assert_eq!(
        (&e["outcome"], &e["meta"]),
        (
            &serde_json::json!("success"),
            &serde_json::json!({"agent": "v3"})
        )
    );
    let (ok, out, err) = on(r, "query", "e", &["--structures", "S", "How did it end?"]);
    assert!(ok && out.contains("Outcome: success"), "{out}{err}");
    let (ok, _, err) = on(r, "update", "e", &["--remove-outcome"]);
    assert!(ok && err.contains("updated episode `e`"), "{err}");
    let (ok, out, err) = on(r, "query", "e", &["--structures", "S", "How did it end?"]);
    assert!(ok && !out.contains("Outcome:"), "{out}{err}");
    let both = ["--remove-outcome", "--outcome", "x"];
    let (ok, _, err) = on(r, "update", "e", &both);
    assert!(!ok && err.contains("cannot be used with"), "{err}");
    let (ok, _, err) = on(r, "update", "e", &["--clear-meta"]);
    assert!(ok && err.contains("updated episode `e`"), "{err}");
    let (ok, listed, err) = run(&["episodes", r, "--tenant", "t", "--json"]);
    assert!(ok, "{err}");
    let e: serde_json::Value = serde_json::from_str(listed.trim()).expect("one JSON line");
    assert_eq!(
        (&e["outcome"], &e["meta"]),
        (&serde_json::Value::Null, &serde_json::json!({}))
    );
    let (ok, _, err) = on(r, "update", "e", &["--meta", "no-equals-sign"]);
    assert!(!ok && err.contains("is not KEY=VALUE"), "{err}");
    let (ok, _, err) = on(r, "update", "e", &[]);
    assert!(!ok && err.contains("what to change"), "{err}");
    let (ok, _, err) = on(r, "update", "nope", &set);
    assert!(!ok && err.contains("nope"), "{err}");
}
