//! The HTTP server's limits against a real client on 127.0.0.1: what would
//! overflow what the server keeps, requests past the time limit, slow
//! headers, bodies announced too large, concurrent uploads of one policy.

mod common;

use common::{fill, fixture, fixture_with, POLICY};
use mesa_server::Limits;
use serde_json::{json, Value};
use std::time::Duration;

/// An empty question is refused (422, `empty-question`), with a policy and
/// with structures: it would get whatever the structures rank first.
#[test]
fn an_empty_question_is_refused() {
    let f = fixture();
    fill(&f, &f.alice, "e");
    f.ok(
        "PUT",
        "/v1/policies/p",
        &f.alice,
        Some(json!({"source": POLICY})),
    );
    for ask in [
        json!({"question": "  ", "policy": "p"}),
        json!({"question": "", "structures": "all"}),
    ] {
        let (s, c) = f.err("POST", "/v1/episodes/e/query", &f.alice, Some(ask));
        assert_eq!((s, c.as_str()), (422, "empty-question"));
    }
}

/// Requests that would overflow what the server keeps are refused with
/// what to do, and leave nothing behind: step indices past a signed 64-bit
/// integer, texts too long for a compiled policy's input, made-up methods
/// (counted under one label); concurrent uploads of one policy name leave
/// the file holding the policy that is served.
#[test]
fn overflowing_requests_are_refused_and_uploads_stay_in_step() {
    let f = fixture();
    fill(&f, &f.alice, "e");
    let huge = json!({"steps": [{"action": "a", "index": 5}, {"action": "b", "index": u64::MAX}]});
    let r = f.send("POST", "/v1/episodes/e/steps", &f.alice, Some(huge));
    assert_eq!(r.status().as_u16(), 422);
    let v: Value = r.json().unwrap();
    assert_eq!(v["error"]["code"], "index-too-large", "{v}");
    let steps = f.ok("GET", "/v1/episodes/e/steps", &f.alice, None);
    assert_eq!(steps["steps"].as_array().map(Vec::len), Some(3), "{steps}");

    // Ids that could not be addressed or kept, and metadata past the limit.
    for (body, code) in [
        (json!({"id": "x".repeat(2000)}), "bad-episode-id"),
        (json!({"id": "a\u{0}b"}), "bad-episode-id"),
        (
            json!({"id": "m", "meta": {"k": "v".repeat(2 << 20)}}),
            "too-large",
        ),
    ] {
        let (s, c) = f.err("POST", "/v1/episodes", &f.alice, Some(body));
        assert_eq!((s, c.as_str()), (422, code));
    }
    // A path segment that is not a number says so with a code of its own.
    let (s, c) = f.err(
        "PUT",
        "/v1/episodes/e/steps/abc",
        &f.alice,
        Some(json!({"action": "x"})),
    );
    assert_eq!((s, c.as_str()), (400, "bad-request"));

    // A task the memory takes but a compiled policy's input cannot hold.
    f.ok(
        "POST",
        "/v1/episodes",
        &f.alice,
        Some(json!({"id": "long", "task": "fix the bug ".repeat(20_000)})),
    );
    f.ok(
        "POST",
        "/v1/episodes/long/steps",
        &f.alice,
        Some(json!({"action": "run the tests"})),
    );
    f.ok(
        "PUT",
        "/v1/policies/p",
        &f.alice,
        Some(json!({"source": POLICY})),
    );
    let ask = json!({"question": "what failed?", "policy": "p"});
    let r = f.send("POST", "/v1/episodes/long/query", &f.alice, Some(ask));
    assert_eq!(r.status().as_u16(), 422);
    let v: Value = r.json().unwrap();
    assert_eq!(v["error"]["code"], "input-too-large", "{v}");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("structures"));

    // Made-up methods share one metrics label.
    for k in 0..5 {
        let m = reqwest::Method::from_bytes(format!("MADEUP{k}").as_bytes()).unwrap();
        let _ = f.http.request(m, f.url("/health")).send().unwrap();
    }
    let metrics = f.metrics();
    assert!(!metrics.contains("MADEUP"), "{metrics}");
    assert!(metrics.contains("method=\"other\""), "{metrics}");

    // Twenty uploads of one name at once: all succeed, and the file holds
    // the policy that answers.
    let sources: Vec<String> = ["S", "T", "G", "V", "R"]
        .iter()
        .cycle()
        .take(20)
        .map(|s| format!("policy \"race\"\ndefault {{{s}}}\n"))
        .collect();
    std::thread::scope(|scope| {
        for src in &sources {
            let f = &f;
            scope.spawn(move || {
                f.ok(
                    "PUT",
                    "/v1/policies/race",
                    &f.alice,
                    Some(json!({"source": src})),
                )
            });
        }
    });
    let ask = json!({"question": "anything", "policy": "race"});
    let served = f.ok("POST", "/v1/episodes/e/query", &f.alice, Some(ask));
    let file = std::fs::read_to_string(f.root.join("tenants/alice/policies/race.mesa")).unwrap();
    let mask = served["mask"][0].as_str().unwrap();
    assert!(
        file.contains(&format!("default {{{mask}}}")),
        "{file} vs {served}"
    );
}

/// A request past the time limit gets a 408 that says the write it asked
/// for may still have been applied, so a client reads before retrying.
#[test]
fn a_timeout_says_a_write_may_have_been_applied() {
    let f = fixture_with(Limits {
        timeout: Duration::from_millis(1),
        ..Limits::default()
    });
    let steps: Vec<Value> = (0..1000)
        .map(|i| json!({"action": format!("step {i} of a long batch"), "observation": "ok ".repeat(200)}))
        .collect();
    let mut seen = None;
    // Creating the episode may itself take longer than 1 ms; try a few.
    for k in 0..20 {
        let id = format!("t{k}");
        let created = f.send("POST", "/v1/episodes", &f.alice, Some(json!({"id": id})));
        if !created.status().is_success() {
            continue;
        }
        let body = Some(json!({ "steps": steps }));
        let r = f.send("POST", &format!("/v1/episodes/{id}/steps"), &f.alice, body);
        if r.status().as_u16() == 408 {
            seen = Some(r.json::<Value>().unwrap());
            break;
        }
    }
    let v = seen.expect("a 1000-step batch takes longer than 1 ms");
    assert_eq!(v["error"]["code"], "timeout", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(message.contains("may still have been applied"), "{message}");
    assert!(message.contains("0.001 s"), "{message}");
}

/// A connection that trickles its request headers is closed once the
/// header deadline passes, and other clients are served meanwhile.
#[test]
fn a_connection_that_never_finishes_its_headers_is_closed() {
    use std::io::{Read, Write};
    let f = fixture_with(Limits {
        header_timeout: Duration::from_secs(1),
        ..Limits::default()
    });
    let addr = f.base.trim_start_matches("http://").to_string();
    let mut slow = std::net::TcpStream::connect(&addr).unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let health = f.http.get(f.url("/health")).send().unwrap();
    assert!(health.status().is_success());
    let t0 = std::time::Instant::now();
    let mut buf = [0u8; 1024];
    // Closed: the read ends (0 bytes, an error status, or a reset) well
    // before the 20 s the read would wait.
    let _ = slow.read(&mut buf);
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let _ = slow.write_all(b"X-More: 1\r\n\r\n");
    let n = slow.read(&mut buf).unwrap_or(0);
    assert!(
        !String::from_utf8_lossy(&buf[..n]).contains("200 OK"),
        "the late request was served"
    );
}

/// A body announced as larger than the limit gets its 413 at once, before
/// the client sends any of it.
#[test]
fn a_body_announced_too_large_is_refused_at_once() {
    use std::io::{Read, Write};
    let f = fixture();
    let addr = f.base.trim_start_matches("http://").to_string();
    let mut c = std::net::TcpStream::connect(&addr).unwrap();
    let head = format!(
        "POST /v1/episodes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n",
        f.alice
    );
    c.write_all(head.as_bytes()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t0 = std::time::Instant::now();
    let mut buf = vec![0u8; 4096];
    let n = c.read(&mut buf).unwrap();
    let reply = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(reply.starts_with("HTTP/1.1 413"), "{reply}");
    assert!(
        reply.contains("body-too-large") && reply.contains("--body-limit"),
        "{reply}"
    );
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}

/// What hyper refuses before the router (a malformed request line, too
/// many headers, a URI past its limit) gets a JSON error like every other,
/// and the server goes on serving.
#[test]
fn requests_hyper_cannot_read_get_json_errors() {
    use std::io::{Read, Write};
    let f = fixture();
    let addr = f.base.trim_start_matches("http://").to_string();
    let send = |raw: &[u8]| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(raw).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    };
    let headers: Vec<u8> = (0..150)
        .flat_map(|i| format!("X-{i}: a\r\n").into_bytes())
        .collect();
    let many = [
        b"GET /health HTTP/1.1\r\nHost: x\r\n".as_slice(),
        &headers,
        b"\r\n",
    ]
    .concat();
    let long_uri = [
        b"GET /".as_slice(),
        &vec![b'a'; 70_000],
        b" HTTP/1.1\r\nHost: x\r\n\r\n",
    ]
    .concat();
    for (raw, status, code) in [
        (&b"GARBAGE\r\n\r\n"[..], 400, "bad-request"),
        (&many[..], 431, "headers-too-large"),
        (&long_uri[..], 414, "uri-too-long"),
    ] {
        let reply = send(raw);
        let (head, body) = reply.split_once("\r\n\r\n").expect("a whole reply");
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(
            v["error"]["message"].as_str().is_some_and(|m| m.len() > 20),
            "{v}"
        );
    }
    // A request the router answers is unchanged, and the server serves on.
    let ok = send(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(ok.starts_with("HTTP/1.1 200 "), "{ok}");
    let missing = send(b"GET /v1/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert!(missing.contains("\"error\""), "{missing}");
}
