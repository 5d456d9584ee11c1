//! `mesa serve`'s `/mcp`: the MCP streamable HTTP transport, spoken here as
//! raw JSON-RPC over HTTP (the official Python client drives it too, in
//! server/tests/mcp/test_mcp_client.py): the token picks the tenant, the
//! tools write and read that tenant's memory, the active policy chooses.

mod common;

use common::{fill, fixture};
use serde_json::{json, Value};

/// One JSON-RPC request to `/mcp` with `token`; the status and the body.
fn rpc(f: &common::Fixture, token: &str, method: &str, params: Value) -> (u16, Value) {
    let r = f
        .http
        .post(f.url("/mcp"))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .expect("the server answers");
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// A tool call's text and whether it is a tool error.
fn call(f: &common::Fixture, token: &str, tool: &str, args: Value) -> (String, bool) {
    let (status, v) = rpc(
        f,
        token,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    );
    assert_eq!(status, 200, "{tool}: {v}");
    let text = v["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{tool}: {v}"))
        .to_string();
    (text, v["result"]["isError"] == json!(true))
}

#[test]
fn mcp_over_http_serves_the_tokens_tenant() {
    let mut f = fixture();
    let init = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}
    });
    let (status, v) = rpc(&f, &f.alice, "initialize", init);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["serverInfo"]["name"], "mesa", "{v}");
    let (_, v) = rpc(&f, &f.alice, "tools/list", json!({}));
    let tools: Vec<&str> = v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(tools.contains(&"add_memory") && tools.contains(&"search_memory"));

    // Alice writes over MCP and reads over REST, and the other way round.
    let (text, bad) = call(
        &f,
        &f.alice,
        "add_memory",
        json!({"episode": "m", "action": "note the zebra-7731 key", "task": "remember"}),
    );
    assert!(!bad, "{text}");
    let steps = f.ok("GET", "/v1/episodes/m/steps", &f.alice, None);
    assert!(steps.to_string().contains("zebra-7731"), "{steps}");
    fill(&f, &f.alice, "sales");
    let (text, bad) = call(
        &f,
        &f.alice,
        "search_memory",
        json!({"episode": "sales", "question": "Why did the query fail?"}),
    );
    assert!(!bad, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    // No active policy: all five structures.
    assert_eq!(answer["mask"], json!(["S", "T", "G", "V", "R"]), "{answer}");

    // With an active policy, a search without structures uses it.
    common::activate(&f, &f.alice);
    let (text, _) = call(
        &f,
        &f.alice,
        "search_memory",
        json!({"episode": "sales", "question": "Why did the query fail?"}),
    );
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["rule"], "errors", "{answer}");
    assert_eq!(answer["mask"], json!(["T", "R"]), "{answer}");

    // Bob's token reaches Bob's memory only.
    let (text, _) = call(&f, &f.bob, "list_episodes", json!({}));
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["episodes"],
        json!([])
    );
    let (text, bad) = call(&f, &f.bob, "read_episode", json!({"episode": "m"}));
    assert!(bad && text.contains("unknown-episode"), "{text}");

    // No token, or a wrong one: the REST routes' 401, before any MCP.
    for token in ["", "not-a-token"] {
        let (status, v) = rpc(&f, token, "tools/list", json!({}));
        assert_eq!(status, 401, "{v}");
        assert_eq!(v["error"]["code"], "unauthorized", "{v}");
    }
    // An empty question is a tool error, as over stdio.
    let (text, bad) = call(
        &f,
        &f.alice,
        "search_memory",
        json!({"episode": "sales", "question": " "}),
    );
    assert!(bad && text.contains("empty"), "{text}");
    // A question past the server's limit, as on the REST route.
    let long = "why ".repeat(20_000);
    let (text, bad) = call(
        &f,
        &f.alice,
        "search_memory",
        json!({"episode": "sales", "question": long}),
    );
    assert!(bad && text.contains("--question-limit"), "{text}");
    f.stop();
}

/// What is not MCP gets MCP's errors: a method the protocol does not
/// define (-32601, naming what the server answers), a body that is no
/// JSON-RPC message (400 with -32700 or -32600 and a null id, as `mesa mcp`
/// answers such a line).
#[test]
fn what_is_not_mcp_gets_mcp_errors() {
    let mut f = fixture();
    // A method MCP does not define: what the server answers instead.
    let (status, v) = rpc(&f, &f.alice, "memory/recall", json!({}));
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let message = v["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("memory/recall") && message.contains("search_memory"),
        "{v}"
    );
    // Every tool the server lists is in that message's list, and back.
    let (_, v) = rpc(&f, &f.alice, "tools/list", json!({}));
    let mut listed: Vec<&str> = v["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    listed.sort_unstable();
    let mut named = mesa_server::mcp::TOOLS.to_vec();
    named.sort_unstable();
    assert_eq!(listed, named);

    // A body that is no JSON-RPC message: 400 with JSON-RPC's error and a
    // null id, as `mesa mcp` answers such a line.
    for (body, code) in [
        ("not json", -32700),
        ("[]", -32600),
        (r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#, -32600),
        (
            r#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}"#,
            -32600,
        ),
        (r#"{"jsonrpc": "2.0", "id": 6}"#, -32600),
        (r#"{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}"#, -32600),
    ] {
        let r = f
            .http
            .post(f.url("/mcp"))
            .bearer_auth(&f.alice)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .body(body)
            .send()
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{body}");
        let v: Value = r.json().unwrap();
        assert_eq!(v["error"]["code"], code, "{body}: {v}");
    }
    f.stop();
}

/// A retried `add_memory`, `correct_memory` or `forget_memory` with its
/// request id changes nothing.
#[test]
fn retried_tool_calls_with_their_request_ids_change_nothing() {
    let mut f = fixture();
    // A retried add with its request id stores nothing new.
    for replayed in [false, true] {
        let (text, bad) = call(
            &f,
            &f.alice,
            "add_memory",
            json!({"episode": "m", "action": "note the second key", "request_id": "add-2"}),
        );
        assert!(!bad, "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            (v["index"].clone(), v["replayed"].clone()),
            (json!(0), json!(replayed))
        );
    }
    let steps = f.ok("GET", "/v1/episodes/m/steps", &f.alice, None);
    assert_eq!(steps["steps"].as_array().map(Vec::len), Some(1), "{steps}");
    // So do a retried correction and a retried forget.
    let tool = |name: &str, args: Value| {
        let (text, bad) = call(&f, &f.alice, name, args);
        assert!(!bad, "{text}");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    for replayed in [false, true] {
        let args = json!({"episode": "m", "step": 0, "action": "note the third key", "request_id": "fix-1"});
        let v = tool("correct_memory", args);
        assert_eq!(v["replayed"], json!(replayed), "{v}");
    }
    for replayed in [false, true] {
        let args = json!({"episode": "m", "step": 0, "request_id": "forget-1"});
        let v = tool("forget_memory", args);
        assert_eq!(
            (v["forgotten"].clone(), v["replayed"].clone()),
            (json!(1), json!(replayed))
        );
    }
    let steps = f.ok("GET", "/v1/episodes/m/steps", &f.alice, None);
    assert_eq!(steps["steps"], json!([]), "{steps}");
    f.stop();
}

/// `export_memory` and `import_memory` move a tenant's memory to another:
/// what alice exports, bob imports, and bob's memory then answers with
/// alice's steps; sent again it adds nothing twice; a cap too small and a
/// dataset that does not read are tool errors that say what to do.
#[test]
fn mcp_moves_a_memory_by_export_and_import() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    let (text, err) = call(&f, &f.alice, "export_memory", json!({}));
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        (v["episodes"].as_u64(), v["steps"].as_u64()),
        (Some(1), Some(3)),
        "{v}"
    );
    let dataset = v["dataset"].as_str().expect("the dataset").to_string();
    assert_eq!(dataset.lines().count(), 1, "{dataset}");

    let (text, err) = call(&f, &f.bob, "import_memory", json!({ "dataset": dataset }));
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        (v["episodes"].as_u64(), v["again"].as_u64()),
        (Some(1), Some(0)),
        "{v}"
    );
    let steps = f.ok("GET", "/v1/episodes/run-1/steps", &f.bob, None);
    let moved = f.ok("GET", "/v1/episodes/run-1/steps", &f.alice, None);
    assert_eq!(steps, moved);
    let q = json!({"episode": "run-1", "question": "Which table was missing?", "structures": "R"});
    let (text, err) = call(&f, &f.bob, "search_memory", q);
    assert!(!err && text.contains("no such table: orders"), "{text}");

    let (text, err) = call(&f, &f.bob, "import_memory", json!({ "dataset": dataset }));
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert!(!err && v["again"] == json!(1), "{text}");
    let (text, err) = call(&f, &f.alice, "export_memory", json!({"max_bytes": 10}));
    assert!(
        err && text.contains("export-too-large") && text.contains("mesa export"),
        "{text}"
    );
    let (text, err) = call(
        &f,
        &f.bob,
        "import_memory",
        json!({"dataset": "{not json\n"}),
    );
    assert!(
        err && text.contains("bad-dataset") && text.contains("line 1"),
        "{text}"
    );
}

/// `search_memory` without an episode searches every episode of the
/// token's tenant, the one holding the answer first.
#[test]
fn mcp_search_without_an_episode_searches_them_all() {
    let f = fixture();
    fill(&f, &f.alice, "run-1");
    let add =
        json!({"episode": "garden", "action": "water the roses", "observation": "the soil is wet"});
    let (text, err) = call(&f, &f.alice, "add_memory", add);
    assert!(!err, "{text}");
    let q = json!({"question": "Which table was missing?", "structures": "all"});
    let (text, err) = call(&f, &f.alice, "search_memory", q);
    assert!(!err, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(v["searched"], 2, "{v}");
    assert_eq!(v["episodes"][0]["episode"], "run-1", "{v}");
    assert!(
        v["episodes"][0]["evidence"]
            .to_string()
            .contains("no such table"),
        "{v}"
    );
    let q = json!({"question": "Which table was missing?", "structures": "all", "limit": 0});
    let (text, err) = call(&f, &f.alice, "search_memory", q);
    assert!(err && text.contains("bad-limit"), "{text}");
}
