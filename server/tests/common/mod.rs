//! What the HTTP test files share: a server on 127.0.0.1 over a fresh
//! memory with two tenants' tokens, a client, and a filled episode.
#![allow(dead_code)] // each test file uses its own part of these

use mesa_server::{add_token, Config, Limits, Running, Server};
use reqwest::blocking::{Client, Response};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

pub struct Fixture {
    pub _dir: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub server: Option<Running>,
    pub base: String,
    pub alice: String,
    pub bob: String,
    pub http: Client,
}

/// A server over `root` on a free port, configured by `set`.
pub fn start_with(root: &Path, set: impl FnOnce(&mut Config)) -> Running {
    let mut config = Config::new(root.to_path_buf());
    config.addr = "127.0.0.1:0".parse().unwrap();
    set(&mut config);
    Server::bind(&config)
        .expect("binds")
        .spawn()
        .expect("serves")
}

pub fn fixture_with(limits: Limits) -> Fixture {
    fixture_config(|c| c.limits = limits)
}

/// The fixture with its server configured by `set`.
pub fn fixture_config(set: impl FnOnce(&mut Config)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    mesa_memory::LiveMemory::open(&root).unwrap();
    let alice = add_token(&root.join("tokens"), "alice").unwrap();
    let bob = add_token(&root.join("tokens"), "bob").unwrap();
    let server = start_with(&root, set);
    let base = format!("http://{}", server.addr);
    Fixture {
        _dir: dir,
        root,
        server: Some(server),
        base,
        alice,
        bob,
        http: Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    }
}

pub fn fixture() -> Fixture {
    fixture_with(Limits::default())
}

impl Fixture {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn send(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Response {
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut r = self.http.request(m, self.url(path)).bearer_auth(token);
        if let Some(b) = body {
            r = r.json(&b);
        }
        r.send().expect("the server answers")
    }

    pub fn ok(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> Value {
        let r = self.send(method, path, token, body);
        let status = r.status();
        let v: Value = r.json().expect("JSON");
        assert!(status.is_success(), "{method} {path}: {status} {v}");
        v
    }

    pub fn err(&self, method: &str, path: &str, token: &str, body: Option<Value>) -> (u16, String) {
        let r = self.send(method, path, token, body);
        let status = r.status().as_u16();
        let v: Value = r.json().expect("errors are JSON");
        (
            status,
            v["error"]["code"].as_str().unwrap_or("").to_string(),
        )
    }

    /// `GET /metrics`'s text.
    pub fn metrics(&self) -> String {
        self.http
            .get(self.url("/metrics"))
            .send()
            .unwrap()
            .text()
            .unwrap()
    }

    pub fn stop(&mut self) {
        if let Some(s) = self.server.take() {
            s.stop().expect("stops cleanly");
        }
    }
}

pub fn fill(f: &Fixture, token: &str, id: &str) {
    f.ok(
        "POST",
        "/v1/episodes",
        token,
        Some(json!({"id": id, "task": "count the orders", "domain": "text2sql"})),
    );
    let steps: Vec<Value> = [
        ("open the database", "connected to sales.db"),
        ("SELECT * FROM orders", "Error: no such table: orders"),
        ("list the tables", "customers, invoices"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (a, o))| json!({"action": a, "observation": o, "timestamp": format!("2026-03-01T10:0{i}:00Z")}))
    .collect();
    let v = f.ok(
        "POST",
        &format!("/v1/episodes/{id}/steps"),
        token,
        Some(json!({ "steps": steps })),
    );
    assert_eq!(v["indices"], json!([0, 1, 2]));
}

/// A second episode for `token`'s tenant, `run-2`, about other things.
pub fn fill_garden(f: &Fixture, token: &str) {
    f.ok(
        "POST",
        "/v1/episodes",
        token,
        Some(json!({"id": "run-2", "task": "water the plants"})),
    );
    let steps =
        json!({"steps": [{"action": "fill the can", "observation": "the can holds 5 litres"}]});
    f.ok("POST", "/v1/episodes/run-2/steps", token, Some(steps));
}

pub const POLICY: &str = "policy \"p\"\nrule errors when query has words [\"error\", \"fail\", \"failed\"] -> select {T, R}\ndefault {S, V}\n";

/// Uploads [`POLICY`] as `p` for `token`'s tenant and makes it active.
pub fn activate(f: &Fixture, token: &str) {
    f.ok(
        "PUT",
        "/v1/policies/p",
        token,
        Some(json!({"source": POLICY})),
    );
    f.ok(
        "PUT",
        "/v1/active-policy",
        token,
        Some(json!({"name": "p"})),
    );
}
