//! The HTTP API driven by a real HTTP client against a server started on
//! 127.0.0.1 by the test: every route, the error codes, tenant isolation,
//! policies and hot reload, the OpenAPI document, metrics, hostile
//! requests, and a graceful shutdown with writes in flight.

mod common;

use common::{fill, fixture, fixture_with, POLICY};
use mesa_server::{add_token, Limits};
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::time::Duration;
#[test]
fn health_metrics_and_the_openapi_document_match_the_routes() {
    let f = fixture();
    let v: Value = f.http.get(f.url("/health")).send().unwrap().json().unwrap();
    assert_eq!(v["status"], "ok");
    let doc: Value = f
        .http
        .get(f.url("/openapi.json"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        doc,
        serde_json::from_str::<Value>(mesa_server::routes::OPENAPI).unwrap()
    );
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for method in ops.as_object().unwrap().keys() {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    let mut routes: Vec<(String, String)> = mesa_server::routes::ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    documented.sort();
    routes.sort();
    assert_eq!(
        documented, routes,
        "the OpenAPI document lists exactly the routes"
    );
    // Every documented route is served (not 404 for want of a route, not 405).
    for (method, path) in &routes {
        let concrete = path
            .replace("{id}", "nope")
            .replace("{index}", "0")
            .replace("{name}", "p");
        let r = f.send(method, &concrete, &f.alice, None);
        let status = r.status().as_u16();
        let body: Value = r.json().unwrap_or(Value::Null);
        assert_ne!(status, 405, "{method} {path}");
        assert!(
            status != 404 || body["error"]["code"] != "no-route",
            "{method} {path}: {body}"
        );
    }
    let metrics = f.metrics();
    assert!(
        metrics.contains(
            "mesa_http_requests_total{method=\"GET\",route=\"/health\",status=\"200\"} 2"
        ),
        "{metrics}"
    );
    assert!(metrics.contains(
        "mesa_http_request_duration_seconds_bucket{method=\"GET\",route=\"/v1/episodes\""
    ));
}

#[test]
fn tokens_pick_the_tenant_and_tenants_never_see_each_other() {
    let f = fixture();
    for token in ["", "wrong", "mesa_0000"] {
        let r = f.send("GET", "/v1/episodes", token, None);
        assert_eq!(r.status().as_u16(), 401);
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let v: Value = r.json().unwrap();
        assert_eq!(v["error"]["code"], "unauthorized");
    }
    let r = f.http.get(f.url("/v1/episodes")).send().unwrap();
    assert_eq!(r.status().as_u16(), 401, "no header at all");
    fill(&f, &f.alice, "run-1");
    f.ok(
        "POST",
        "/v1/episodes",
        &f.bob,
        Some(json!({"id": "run-1", "task": "bob's"})),
    );
    f.ok(
        "POST",
        "/v1/episodes/run-1/steps",
        &f.bob,
        Some(json!({"action": "bob's only step", "observation": "nothing"})),
    );
    let a = f.ok("GET", "/v1/episodes", &f.alice, None);
    let b = f.ok("GET", "/v1/episodes", &f.bob, None);
    assert_eq!(a["episodes"][0]["steps"], 3);
    assert_eq!(b["episodes"][0]["steps"], 1);
    let ans = f.ok(
        "POST",
        "/v1/episodes/run-1/query",
        &f.bob,
        Some(json!({"question": "no such table orders", "structures": "all"})),
    );
    assert!(
        !ans["evidence"].to_string().contains("orders"),
        "bob's evidence holds nothing of alice's: {ans}"
    );
    // Path tricks cannot reach another tenant: there is no tenant in any path.
    for path in [
        "/v1/episodes/..%2F..%2Ftenants%2Fbob/steps",
        "/v1/../v1/episodes/run-1/steps",
        "/v1/episodes/%2e%2e/steps",
    ] {
        let r = f.send("GET", path, &f.alice, None);
        let status = r.status().as_u16();
        let text = r.text().unwrap();
        assert!(status == 404 || status == 200, "{path}: {status}");
        assert!(!text.contains("bob's only step"), "{path}: {text}");
    }
    // The running server rereads the token file: a new token works at
    // once, and a removed line revokes its token at the next request.
    let carol = add_token(&f.root.join("tokens"), "carol").unwrap();
    f.ok("GET", "/v1/episodes", &carol, None);
    let file = f.root.join("tokens");
    let kept: String = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .filter(|l| !l.ends_with(" alice"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&file, kept).unwrap();
    let (s, c) = f.err("GET", "/v1/episodes", &f.alice, None);
    assert_eq!((s, c.as_str()), (401, "unauthorized"));
    f.ok("GET", "/v1/episodes", &f.bob, None);
    // A file that no longer reads keeps the tokens it had.
    std::fs::write(&file, "not a token line\n").unwrap();
    f.ok("GET", "/v1/episodes", &f.bob, None);
}

#[test]
fn every_write_route_and_its_errors() {
    let f = fixture();
    fill(&f, &f.alice, "e");
    let (s, c) = f.err("POST", "/v1/episodes", &f.alice, Some(json!({"id": "e"})));
    assert_eq!((s, c.as_str()), (409, "episode-exists"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/none/steps",
        &f.alice,
        Some(json!({"action": "x"})),
    );
    assert_eq!((s, c.as_str()), (404, "unknown-episode"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/steps",
        &f.alice,
        Some(json!({"action": ""})),
    );
    assert_eq!((s, c.as_str()), (422, "empty"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/steps",
        &f.alice,
        Some(json!({"action": "x", "index": 1})),
    );
    assert_eq!((s, c.as_str()), (409, "index-taken"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/steps",
        &f.alice,
        Some(json!({"action": "x", "timestamp": "soon"})),
    );
    assert_eq!((s, c.as_str()), (422, "bad-timestamp"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/steps",
        &f.alice,
        Some(json!({"steps": []})),
    );
    assert_eq!((s, c.as_str()), (422, "batch-size"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/steps",
        &f.alice,
        Some(json!({"acton": "typo"})),
    );
    assert_eq!((s, c.as_str()), (400, "bad-json"));
    let r = f
        .http
        .post(f.url("/v1/episodes/e/steps"))
        .bearer_auth(&f.alice)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let r = f
        .http
        .post(f.url("/v1/episodes/e/steps"))
        .bearer_auth(&f.alice)
        .header("content-type", "text/plain")
        .body("{\"action\": \"x\"}")
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 415);
    let v: Value = r.json().unwrap();
    assert_eq!(v["error"]["code"], "unsupported-media-type");
    // A media type that only begins like JSON's is not JSON; parameters
    // and case do not matter.
    for (ct, status) in [
        ("application/jsonx", 415),
        ("Application/JSON; charset=utf-8", 201),
    ] {
        let r = f
            .http
            .post(f.url("/v1/episodes/e/steps"))
            .bearer_auth(&f.alice)
            .header("content-type", ct)
            .body("{\"action\": \"x\"}")
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{ct}");
    }
    // Correct, forget (one, a range), forget the episode, compact.
    f.ok(
        "PUT",
        "/v1/episodes/e/steps/2",
        &f.alice,
        Some(json!({"action": "list every table", "observation": "customers, invoices, items"})),
    );
    let steps = f.ok("GET", "/v1/episodes/e/steps", &f.alice, None);
    assert_eq!(steps["steps"][2]["action"], "list every table");
    assert_eq!(steps["steps"][2]["timestamp"], "2026-03-01T10:02:00Z");
    let (s, c) = f.err(
        "PUT",
        "/v1/episodes/e/steps/9",
        &f.alice,
        Some(json!({"action": "x"})),
    );
    assert_eq!((s, c.as_str()), (404, "unknown-step"));
    assert_eq!(
        f.ok("DELETE", "/v1/episodes/e/steps/0", &f.alice, None)["forgotten"],
        1
    );
    let (s, _) = f.err("DELETE", "/v1/episodes/e/steps/0", &f.alice, None);
    assert_eq!(s, 404);
    let (s, c) = f.err("DELETE", "/v1/episodes/e/steps/2?last=1", &f.alice, None);
    assert_eq!((s, c.as_str()), (400, "bad-range"));
    assert_eq!(
        f.ok("DELETE", "/v1/episodes/e/steps/1?last=2", &f.alice, None)["forgotten"],
        2
    );
    f.ok("POST", "/v1/compact", &f.alice, None);
    // The step appended with `Application/JSON` is the one left.
    assert_eq!(
        f.ok("DELETE", "/v1/episodes/e", &f.alice, None)["forgotten"],
        1
    );
    let (s, _) = f.err("GET", "/v1/episodes/e/steps", &f.alice, None);
    assert_eq!(s, 404);
    let (s, c) = f.err("GET", "/v1/nowhere", &f.alice, None);
    assert_eq!((s, c.as_str()), (404, "no-route"));
    let (s, c) = f.err("PATCH", "/v1/episodes", &f.alice, None);
    assert_eq!((s, c.as_str()), (405, "method-not-allowed"));
}

#[test]
fn queries_policies_and_hot_reload() {
    let f = fixture();
    fill(&f, &f.alice, "e");
    let a = f.ok(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "What happened at step 1?", "structures": "T"})),
    );
    assert_eq!(a["mask"], json!(["T"]));
    assert_eq!(a["evidence"][0]["steps"], json!([1]));
    assert_eq!(
        a["evidence"][0]["timestamps"],
        json!(["2026-03-01T10:01:00Z"])
    );
    assert!(a["evidence"][0]["text"]
        .as_str()
        .unwrap()
        .contains("no such table"));
    assert!(a["micros"]["total"].as_f64().is_some_and(|t| t > 0.0));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "q"})),
    );
    assert_eq!((s, c.as_str()), (400, "no-policy"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "q", "structures": "Q"})),
    );
    assert_eq!((s, c.as_str()), (400, "bad-structures"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "q", "policy": "ghost"})),
    );
    assert_eq!((s, c.as_str()), (404, "unknown-policy"));
    let (s, c) = f.err(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "x".repeat(70_000), "structures": "T"})),
    );
    assert_eq!((s, c.as_str()), (422, "question-too-long"));

    // Upload, activate, query with the active policy.
    let v = f.ok(
        "PUT",
        "/v1/policies/p",
        &f.alice,
        Some(json!({"source": POLICY})),
    );
    assert_eq!(v["name"], "p");
    f.ok(
        "PUT",
        "/v1/active-policy",
        &f.alice,
        Some(json!({"name": "p"})),
    );
    let a = f.ok(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "Why did the query fail?"})),
    );
    assert_eq!(
        (a["rule"].as_str(), a["policy"].as_str()),
        (Some("errors"), Some("p"))
    );
    assert_eq!(a["mask"], json!(["T", "R"]));
    assert!(a.get("trace").is_none(), "only when asked");
    let a = f.ok(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "Why did the query fail?", "trace": true})),
    );
    let trace = a["trace"].to_string();
    assert!(
        trace.contains("errors"),
        "the trace names the rule that fired: {trace}"
    );
    // An invalid upload is refused with diagnostics and replaces nothing.
    let r = f.send("PUT", "/v1/policies/p", &f.alice, Some(json!({"source": "policy \"p\"\nrule r when query has wrds [\"x\"] -> select {T}\ndefault {S}\n"})));
    assert_eq!(r.status().as_u16(), 422);
    let v: Value = r.json().unwrap();
    assert_eq!(v["error"]["code"], "policy-check");
    assert_eq!(v["diagnostics"][0]["line"], 2);
    let a = f.ok(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "Why did the query fail?"})),
    );
    assert_eq!(a["rule"], "errors", "the valid policy still answers");
    // Bob has no policy p.
    let (s, _) = f.err(
        "POST",
        "/v1/episodes/e/query",
        &f.bob,
        Some(json!({"question": "q", "policy": "p"})),
    );
    assert_eq!(s, 404);
    // Hot reload: change the file on disk; a reload picks it up, a broken file is reported and kept out.
    let dir = f.root.join("tenants/alice/policies");
    std::fs::write(
        dir.join("p.mesa"),
        POLICY.replace("select {T, R}", "select {S}"),
    )
    .unwrap();
    std::fs::write(dir.join("broken.mesa"), "rule when").unwrap();
    let v = f.ok("POST", "/v1/policies/reload", &f.alice, None);
    assert_eq!(v["loaded"], json!(["p"]));
    assert_eq!(v["failed"][0]["code"], "policy-check");
    let a = f.ok(
        "POST",
        "/v1/episodes/e/query",
        &f.alice,
        Some(json!({"question": "Why did the query fail?"})),
    );
    assert_eq!(a["mask"], json!(["S"]));
    let listed = f.ok("GET", "/v1/policies", &f.alice, None);
    assert_eq!(listed, json!({"policies": ["p"], "active": "p"}));
    let (s, c) = f.err(
        "PUT",
        "/v1/active-policy",
        &f.alice,
        Some(json!({"name": "broken"})),
    );
    assert_eq!((s, c.as_str()), (404, "unknown-policy"));
}

#[test]
fn hostile_requests_get_errors_and_lose_nothing() {
    let f = fixture_with(Limits {
        body_bytes: 1 << 20,
        ..Limits::default()
    });
    fill(&f, &f.alice, "e");
    use std::io::{Read, Write};
    let addr = f.server.as_ref().unwrap().addr;
    // A body past the limit, sent whole by a client that reads only when
    // it has written it: the 413 is read, not a closed connection. (One
    // announced far past the limit is refused at once: limits.rs.)
    let huge = json!({"action": "x".repeat(2 << 20)});
    for _ in 0..5 {
        let r = f.send("POST", "/v1/episodes/e/steps", &f.alice, Some(huge.clone()));
        assert_eq!(r.status().as_u16(), 413);
        let v: Value = r.json().unwrap();
        assert_eq!(v["error"]["code"], "body-too-large");
    }
    // 1,000 connections at once, each sending an append: each gets an
    // answer or a refused connection, every acknowledged step is stored,
    // and the server keeps serving.
    let mut conns = Vec::new();
    for i in 0..1000 {
        let Ok(mut c) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
            continue;
        };
        let body = json!({"action": format!("concurrent {i}")}).to_string();
        let req = format!(
            "POST /v1/episodes/e/steps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            f.alice,
            body.len()
        );
        if c.write_all(req.as_bytes()).is_ok() {
            conns.push(c);
        }
    }
    assert!(conns.len() > 100, "{} connections", conns.len());
    let mut acked: Vec<Value> = Vec::new();
    for mut c in conns {
        c.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        let mut out = String::new();
        if c.read_to_string(&mut out).is_err() {
            continue;
        }
        if out.starts_with("HTTP/1.1 201") {
            let body = out.split("\r\n\r\n").nth(1).unwrap_or("");
            acked.push(serde_json::from_str(body).expect("an acknowledgement is JSON"));
        } else {
            assert!(out.is_empty() || out.starts_with("HTTP/1.1 "), "{out}");
        }
    }
    assert!(!acked.is_empty());
    let steps = f.ok("GET", "/v1/episodes/e/steps", &f.alice, None);
    let stored: Vec<u64> = steps["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["index"].as_u64().unwrap())
        .collect();
    for a in &acked {
        let i = a["indices"][0].as_u64().unwrap();
        assert!(stored.contains(&i), "acknowledged step {i} is stored");
    }
    assert_eq!(f.ok("GET", "/health", "", None)["status"], "ok");
}

#[test]
fn graceful_shutdown_keeps_every_acknowledged_write() {
    let mut f = fixture();
    f.ok(
        "POST",
        "/v1/episodes",
        &f.alice,
        Some(json!({"id": "w", "task": "writes in flight"})),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let url = f.url("/v1/episodes/w/steps");
            let token = f.alice.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let c = Client::new();
                let mut acked = Vec::new();
                let mut i = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let r = c
                        .post(&url)
                        .bearer_auth(&token)
                        .json(&json!({"action": format!("writer {w} step {i}")}))
                        .send();
                    match r {
                        Ok(r) if r.status().is_success() => {
                            let v: Value = r.json().unwrap();
                            acked.push(v["indices"][0].as_u64().unwrap());
                        }
                        _ => break,
                    }
                    i += 1;
                }
                acked
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    f.stop();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let acked: Vec<u64> = writers
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert!(!acked.is_empty(), "some writes landed before the stop");
    // Reopen the memory directly: every acknowledged step is there.
    let mem = mesa_memory::LiveMemory::open(&f.root).unwrap();
    let t = mem.tenant("alice").unwrap();
    let stored: Vec<u64> = t
        .steps("w")
        .unwrap()
        .iter()
        .map(|s| s.index as u64)
        .collect();
    for i in &acked {
        assert!(
            stored.contains(i),
            "acknowledged step {i} survived the shutdown"
        );
    }
}

#[test]
fn questions_are_kept_per_episode_and_tenant() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    fill(&f, &f.bob, "run-1");
    let path = "/v1/episodes/run-1/questions";
    let kept = json!({"questions": [
        {"id": "q1", "question": "Why did step 1 fail?", "answer": "no such table", "evidence": [1]},
        {"id": "q2", "question": "Which tables exist?"}
    ]});
    let v = f.ok("POST", path, &f.alice, Some(kept));
    assert_eq!(v["kept"], 2);
    let v = f.ok("GET", path, &f.alice, None);
    let ids: Vec<&str> = v["questions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["q1", "q2"]);
    assert_eq!(v["questions"][0]["evidence"], json!([1]));
    // Another tenant's episode of the same id holds none of them.
    let v = f.ok("GET", path, &f.bob, None);
    assert_eq!(v["questions"], json!([]));
    let bad = [
        (json!({"questions": []}), 422, "batch-size"),
        (json!({"questions": [{"id": "q3"}]}), 400, "bad-json"),
        (
            json!({"questions": [{"id": "q3", "question": " "}]}),
            422,
            "empty",
        ),
        (json!({"other": 1}), 400, "bad-json"),
    ];
    for (body, status, code) in bad {
        assert_eq!(
            f.err("POST", path, &f.alice, Some(body)),
            (status, code.into())
        );
    }
    let one = json!({"questions": [{"id": "q", "question": "?"}]});
    let (status, code) = f.err("POST", "/v1/episodes/nope/questions", &f.alice, Some(one));
    assert_eq!((status, code.as_str()), (404, "unknown-episode"));
    f.ok("DELETE", "/v1/episodes/run-1", &f.alice, None);
    assert_eq!(f.err("GET", path, &f.alice, None).0, 404);
    assert_eq!(f.ok("GET", path, &f.bob, None)["questions"], json!([]));
}

/// `GET /v1/export` writes the token's tenant as a dataset that reads back
/// as its episodes, and nothing of another tenant.
#[test]
fn a_tenant_exports_its_own_episodes_as_a_dataset() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    fill(&f, &f.alice, "run-2");
    fill(&f, &f.bob, "bobs");
    let kept = json!({"questions": [{"id": "q1", "question": "Why did step 1 fail?", "evidence": [0, 1]}]});
    f.ok("POST", "/v1/episodes/run-1/questions", &f.alice, Some(kept));
    f.ok("DELETE", "/v1/episodes/run-1/steps/0", &f.alice, None);
    let empty = json!({"id": "empty", "task": "nothing yet"});
    f.ok("POST", "/v1/episodes", &f.alice, Some(empty));
    let r = f.send("GET", "/v1/export", &f.alice, None);
    assert_eq!(r.status(), 200);
    let header = |name: &str| r.headers()[name].to_str().unwrap().to_string();
    assert_eq!(header("content-type"), "application/x-ndjson");
    let counts = [
        "x-mesa-episodes",
        "x-mesa-empty-episodes",
        "x-mesa-dropped-evidence",
    ]
    .map(header);
    assert_eq!(counts, ["3", "1", "1"]);
    let text = r.text().unwrap();
    let options = mesa_memory::dataset::LoadOptions {
        into_tenant: true,
        ..Default::default()
    };
    let loaded = mesa_memory::dataset::load_str(&text, "export", &options).expect("reads back");
    let ids: Vec<&str> = loaded.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["empty", "run-1", "run-2"]);
    let steps = f.ok("GET", "/v1/episodes/run-1/steps", &f.alice, None);
    assert_eq!(
        loaded.episodes[1].steps.len(),
        steps["steps"].as_array().unwrap().len()
    );
    assert_eq!(loaded.episodes[1].questions[0].evidence, [1]);
    let listed = f.ok("GET", "/v1/episodes", &f.alice, None);
    assert_eq!(
        loaded.episodes[0].created.as_deref(),
        listed["episodes"][0]["created"].as_str(),
        "the export carries the creation time"
    );
    let bobs = f.send("GET", "/v1/export", &f.bob, None).text().unwrap();
    assert_eq!(bobs.lines().count(), 1);
    assert!(
        bobs.contains("\"bobs\"") && !bobs.contains("run-1"),
        "{bobs}"
    );
    assert_eq!(f.err("GET", "/v1/export", "mesa_not_a_token", None).0, 401);
    // Bob imports Alice's export, and then exports what she did, his own
    // episode first; the same body again adds nothing.
    let import = |body: &str, content_type: &str| {
        f.http
            .post(f.url("/v1/import"))
            .bearer_auth(&f.bob)
            .header("content-type", content_type)
            .body(body.to_string())
            .send()
            .unwrap()
    };
    let r = import(&text, "application/x-ndjson");
    assert_eq!(r.status(), 200);
    let done: Value = r.json().unwrap();
    assert_eq!(
        (done["episodes"].as_u64(), done["again"].as_u64()),
        (Some(3), Some(0))
    );
    let bobs = f.send("GET", "/v1/export", &f.bob, None).text().unwrap();
    assert_eq!(
        bobs.lines().skip(1).collect::<Vec<_>>(),
        text.lines().collect::<Vec<_>>()
    );
    let again: Value = import(&text, "application/x-ndjson").json().unwrap();
    assert_eq!(again["again"], 3);
    let r = import(&text, "application/json");
    assert_eq!(r.status(), 415);
    let r = import("{\"id\": \"x\", \"steps\": []}\n", "application/x-ndjson");
    assert_eq!(r.status(), 400);
    let body: Value = r.json().unwrap();
    assert_eq!(body["error"]["code"], "bad-dataset", "{body}");
    // An episode Bob made himself is not imported over.
    let own = text
        .lines()
        .find(|l| l.contains("\"run-1\""))
        .unwrap()
        .replace("\"run-1\"", "\"bobs\"");
    let r = import(&own, "application/x-ndjson");
    assert_eq!(r.status(), 409);
}

/// An append sent again with its `Idempotency-Key` (after a 408, a dropped
/// connection) gets the first one's indices and appends nothing; the key
/// with other steps is a 409.
#[test]
fn a_retried_append_with_its_key_appends_nothing() {
    let mut f = fixture();
    fill(&f, &f.alice, "e");
    let post = |key: &str, action: &str| {
        f.http
            .post(f.url("/v1/episodes/e/steps"))
            .bearer_auth(&f.alice)
            .header("Idempotency-Key", key)
            .json(&json!({"action": action}))
            .send()
            .unwrap()
    };
    let first = post("k-1", "run the report");
    assert_eq!(first.status().as_u16(), 201);
    let v: Value = first.json().unwrap();
    assert_eq!(v, json!({"indices": [3], "replayed": false}));
    let again = post("k-1", "run the report");
    assert_eq!(again.status().as_u16(), 200);
    let v: Value = again.json().unwrap();
    assert_eq!(v, json!({"indices": [3], "replayed": true}));
    let steps = f.ok("GET", "/v1/episodes/e/steps", &f.alice, None);
    assert_eq!(steps["steps"].as_array().map(Vec::len), Some(4), "{steps}");
    let reused = post("k-1", "something else");
    assert_eq!(reused.status().as_u16(), 409);
    let v: Value = reused.json().unwrap();
    assert_eq!(v["error"]["code"], "request-id-reused", "{v}");
    let bad = post(&"k".repeat(300), "x");
    assert_eq!(bad.status().as_u16(), 422);
    f.stop();
}

/// The other writes take the key too: a creation, a correction and a
/// forget sent again are answered as the first was, with `replayed`, and
/// change nothing; each kind of write has its own ids.
#[test]
fn retried_creations_corrections_and_forgets_with_their_keys_change_nothing() {
    let mut f = fixture();
    let send = |method: &str, path: &str, key: &str, body: Option<Value>| {
        let mut req = f
            .http
            .request(method.parse().unwrap(), f.url(path))
            .bearer_auth(&f.alice)
            .header("Idempotency-Key", key);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().unwrap();
        let status = res.status().as_u16();
        (status, res.json::<Value>().unwrap())
    };
    let episode = json!({"id": "k", "task": "file the claims"});
    for (status, replayed) in [(201, false), (200, true)] {
        let (s, v) = send("POST", "/v1/episodes", "c-1", Some(episode.clone()));
        assert_eq!((s, v), (status, json!({"id": "k", "replayed": replayed})));
    }
    let (s, v) = send("POST", "/v1/episodes", "c-2", Some(episode.clone()));
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("episode-exists"))
    );
    let three = json!({"steps": [{"action": "a"}, {"action": "b"}, {"action": "c"}]});
    f.ok("POST", "/v1/episodes/k/steps", &f.alice, Some(three));
    let fix = json!({"action": "file claim 7", "observation": "filed"});
    for replayed in [false, true] {
        let (s, v) = send("PUT", "/v1/episodes/k/steps/1", "p-1", Some(fix.clone()));
        assert_eq!((s, v), (200, json!({"corrected": 1, "replayed": replayed})));
    }
    let other = json!({"action": "file claim 8"});
    let (s, v) = send("PUT", "/v1/episodes/k/steps/1", "p-1", Some(other));
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("request-id-reused"))
    );
    for replayed in [false, true] {
        let (s, v) = send("DELETE", "/v1/episodes/k/steps/0?last=1", "d-1", None);
        assert_eq!((s, v), (200, json!({"forgotten": 2, "replayed": replayed})));
    }
    let steps = f.ok("GET", "/v1/episodes/k/steps", &f.alice, None);
    assert_eq!(steps["steps"].as_array().map(Vec::len), Some(1), "{steps}");
    // A key is one write's: the forget's key with other steps is refused
    // (the forget cleared the correction's key, as any forget does).
    let (s, v) = send("DELETE", "/v1/episodes/k/steps/2", "d-1", None);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (409, Some("request-id-reused"))
    );
    for replayed in [false, true] {
        let (s, v) = send("DELETE", "/v1/episodes/k", "d-2", None);
        assert_eq!((s, v), (200, json!({"forgotten": 1, "replayed": replayed})));
    }
    assert_eq!(f.err("GET", "/v1/episodes/k/steps", &f.alice, None).0, 404);
    // Another tenant's keys are its own.
    let res = f
        .http
        .post(f.url("/v1/episodes"))
        .bearer_auth(&f.bob)
        .header("Idempotency-Key", "c-1")
        .json(&episode)
        .send()
        .unwrap();
    assert_eq!(res.status().as_u16(), 201);
    f.stop();
}
