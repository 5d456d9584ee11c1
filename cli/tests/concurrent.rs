//! Several `mesa` processes on one live memory at once, as agents started
//! together each append their steps: a new root is made once, whichever
//! process comes first, and with `--wait` the writers of one tenant take
//! turns instead of being refused.

mod common;

use common::{run, run_with};

/// Four `mesa append` processes started together on a new root, one
/// episode each: without `--wait`, each writes its own tenant; with it,
/// they share one tenant, and every step of every episode lands.
#[test]
fn appends_started_together_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let steps: String = (0..5)
        .map(|i| format!("{{\"action\": \"click {i}\", \"observation\": \"page {i}\"}}\n"))
        .collect();
    for (name, tenant_of, wait) in [("own", true, "0"), ("shared", false, "60")] {
        let root = dir.path().join(name);
        let root = root.to_str().unwrap();
        let runs: Vec<_> = (0..4)
            .map(|k| {
                let tenant = if tenant_of {
                    format!("t{k}")
                } else {
                    "t".into()
                };
                let episode = format!("e{k}");
                let (root, steps, wait) = (root.to_string(), steps.clone(), wait.to_string());
                std::thread::spawn(move || {
                    let args = [
                        "append",
                        &root,
                        "--tenant",
                        &tenant,
                        "--episode",
                        &episode,
                        "--task",
                        "click through",
                        "--wait",
                        &wait,
                    ];
                    run_with(&[], &args, &steps)
                })
            })
            .collect();
        for r in runs {
            let (ok, out, err) = r.join().expect("no panic");
            assert!(ok, "{name}: {out}{err}");
            assert_eq!(out.lines().count(), 5, "{name}: {out}");
        }
        for k in 0..4 {
            let tenant = if tenant_of {
                format!("t{k}")
            } else {
                "t".into()
            };
            let (ok, out, err) = run(&["episodes", root, "--tenant", &tenant, "--json"]);
            assert!(ok, "{err}");
            let episode = format!("\"id\":\"e{k}\"");
            let line = out.lines().find(|l| l.contains(&episode));
            assert!(
                line.is_some_and(|l| l.contains("\"steps\":5")),
                "{name}: {out}"
            );
        }
    }
}

/// A writer that stays open (an append reading its steps as the agent
/// makes them) holds the tenant: another writer is refused at once without
/// `--wait`, and with it takes its turn when the first closes. `--wait`
/// takes only seconds from 0 up.
#[test]
fn a_busy_tenant_waits_its_turn_with_wait() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let root = root.to_str().unwrap();
    let (mut holder, input) = hold(root);

    let update = |wait: &str| {
        run(&[
            "update",
            root,
            "--tenant",
            "t",
            "--episode",
            "e",
            "--outcome",
            "ok",
            "--wait",
            wait,
        ])
    };
    let (ok, _, err) = update("0");
    assert!(!ok && err.contains("open for writing elsewhere"), "{err}");
    assert!(
        err.contains("--wait SECONDS"),
        "the help names --wait: {err}"
    );
    let mut waiting = common::command()
        .args(["update", root, "--tenant", "t", "--episode", "e"])
        .args(["--outcome", "ok", "--wait", "60"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("update");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        waiting.try_wait().expect("update").is_none(),
        "it waits while the tenant is held"
    );
    drop(input);
    assert!(holder.wait().expect("append ends").success());
    let o = waiting.wait_with_output().expect("update ends");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        o.status.success() && err.contains("updated episode `e`"),
        "{err}"
    );
    // A restated task, then the same again.
    let task = ["update", root, "--tenant", "t", "--episode", "e"];
    let task = [&task[..], &["--task", "sort the mail"]].concat();
    let (ok, _, err) = run(&task);
    assert!(ok && err.contains("updated episode `e`"), "{err}");
    let (ok, _, err) = run(&task);
    assert!(ok && err.contains("already so"), "{err}");
    let (ok, out, _) = run(&["episodes", root, "--tenant", "t", "--json"]);
    assert!(ok && out.contains("sort the mail"), "{out}");

    for bad in ["--wait=-2", "--wait=x", "--wait=inf"] {
        let (ok, _, err) = run(&["update", root, "--tenant", "t", "--episode", "e", bad]);
        assert!(!ok && err.contains("from 0 up"), "{bad}: {err}");
        let into = ["build", "data.jsonl", "--into", root, "--tenant", "t", bad];
        let (ok, _, err) = run(&into);
        assert!(
            !ok && err.contains("from 0 up"),
            "build --into {bad}: {err}"
        );
    }
}

/// `mesa mcp --wait` started while an import (here an append) holds the
/// tenant serves once it closes; without `--wait` it is refused.
#[test]
fn an_mcp_server_waits_for_the_tenant_with_wait() {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let root = root.to_str().unwrap();
    let (mut holder, input) = hold(root);

    let (ok, _, err) = run_with(&[], &["mcp", root, "--tenant", "t"], "");
    assert!(!ok && err.contains("open for writing elsewhere"), "{err}");
    let mut server = common::command()
        .args(["mcp", root, "--tenant", "t", "--wait", "60"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("mcp");
    let mut to_server = server.stdin.take().expect("stdin");
    let hello = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"0"}}}"#;
    writeln!(to_server, "{hello}").expect("initialize");
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(input);
    assert!(holder.wait().expect("append ends").success());
    let mut reply = String::new();
    let mut from_server = std::io::BufReader::new(server.stdout.take().expect("stdout"));
    from_server.read_line(&mut reply).expect("a reply");
    assert!(
        reply.contains("\"id\":1") && reply.contains("\"result\""),
        "{reply}"
    );
    drop(to_server);
    let _ = server.wait();
}

/// `mesa serve --wait` answers the request that first opens a tenant an
/// append holds once that append closes (a plain HTTP/1.1 request on a
/// socket: this checks the flag's wiring; the server's own tests drive it
/// with an HTTP client).
#[test]
fn a_server_with_wait_answers_once_the_tenant_is_free() {
    use std::io::{BufRead, Read, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    let root = root.to_str().unwrap();
    let (mut holder, input) = hold(root);
    let (ok, token, err) = run(&["token", root, "--tenant", "t"]);
    assert!(ok, "{err}");
    let mut server = common::command()
        .args(["serve", root, "--addr", "127.0.0.1:0", "--wait", "300"])
        .args(["--resident-steps", "7"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("serve");
    let mut banner = String::new();
    let mut log = std::io::BufReader::new(server.stderr.take().expect("stderr"));
    log.read_line(&mut banner).expect("the banner");
    let addr = banner
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {banner}"))
        .to_string();
    let get = move |path: &str| {
        let mut socket = std::net::TcpStream::connect(&addr).expect("connects");
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            token.trim()
        );
        socket.write_all(head.as_bytes()).expect("sends");
        let mut reply = String::new();
        socket.read_to_string(&mut reply).expect("a reply");
        reply
    };
    let episodes = get.clone();
    let request = std::thread::spawn(move || episodes("/v1/episodes"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!request.is_finished(), "the request waits for the append");
    drop(input);
    assert!(holder.wait().expect("append ends").success());
    let reply = request.join().expect("the request");
    assert!(
        reply.starts_with("HTTP/1.1 200") && reply.contains("\"id\":\"e\""),
        "{reply}"
    );
    // The open tenant's budget of built steps is --resident-steps.
    let metrics = get("/metrics");
    assert!(
        metrics.contains("mesa_resident_budget_steps 7\n"),
        "{metrics}"
    );
    let _ = server.kill();
    let _ = server.wait();
}

/// A `mesa append` holding tenant `t` of `root` (episode `e`, one step
/// acknowledged) until its input, returned with it, is dropped.
fn hold(root: &str) -> (std::process::Child, std::process::ChildStdin) {
    use std::io::{BufRead, Write};
    use std::process::Stdio;
    let mut holder = common::command()
        .args([
            "append",
            root,
            "--tenant",
            "t",
            "--episode",
            "e",
            "--task",
            "x",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("append");
    let mut input = holder.stdin.take().expect("stdin");
    input.write_all(b"{\"action\": \"a\"}\n").expect("a step");
    input.flush().expect("flush");
    let mut ack = String::new();
    let mut out = std::io::BufReader::new(holder.stdout.take().expect("stdout"));
    out.read_line(&mut ack).expect("its acknowledgement");
    assert!(ack.contains("\"index\":0"), "{ack}");
    (holder, input)
}
