//! `mesa serve --embedder openai --extractor llm`: a new tenant gets the
//! endpoint's embedder and relation extractor (a local server this test
//! starts on 127.0.0.1), a tenant that exists keeps the builders it
//! recorded, and an endpoint that cannot be reached stops the server at
//! its start.
//!
//! One test in its own binary: it sets the `MESA_LLM_*` environment,
//! which the embedder reads.

mod common;

use common::{fill, Fixture};
use mesa_memory::{BuilderKind, EmbedderKind, LiveMemory};
use mesa_server::{add_token, Config, ServeError, Server};
use serde_json::json;
use std::time::Duration;

#[test]
fn new_tenants_get_the_embedder_asked_for_and_old_ones_keep_theirs() {
    let endpoint = mesa_testkit::Server::start(|req, _| {
        if req.path.ends_with("/chat/completions") {
            let triples =
                r#"{"triples": [{"subject": "agent", "relation": "ran", "object": "a query"}]}"#;
            return mesa_testkit::chat_reply(triples);
        }
        let texts = req.json()["input"].as_array().cloned().unwrap_or_default();
        let vectors: Vec<Vec<f32>> = texts
            .iter()
            .map(|t| vec![1.0, t.as_str().map_or(0, str::len) as f32, 2.0])
            .collect();
        mesa_testkit::embeddings_reply(&vectors)
    });
    std::env::set_var("MESA_LLM_BASE_URL", endpoint.base_url());
    std::env::set_var("MESA_LLM_API_KEY", "test");
    std::env::set_var("MESA_LLM_EMBEDDING_MODEL", "emb-a");
    std::env::set_var("MESA_LLM_CHAT_MODEL", "chat-a");
    std::env::set_var("MESA_LLM_MAX_RETRIES", "0");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("mem");
    // Bob's tenant has vectors already, made by the built-in embedder.
    {
        let bob = LiveMemory::open(&root).unwrap().tenant("bob").unwrap();
        bob.create_episode(&mesa_memory::NewEpisode {
            id: "old".into(),
            task: "t".into(),
            ..Default::default()
        })
        .unwrap();
    }
    let alice = add_token(&root.join("tokens"), "alice").unwrap();
    let bob = add_token(&root.join("tokens"), "bob").unwrap();
    let mut config = Config::new(root.clone());
    config.addr = "127.0.0.1:0".parse().unwrap();
    config.builders.embedder = EmbedderKind::Openai;
    config.builders.extractor = BuilderKind::Llm;
    let server = Server::bind(&config)
        .expect("binds")
        .spawn()
        .expect("serves");
    let f = Fixture {
        base: format!("http://{}", server.addr),
        // The memory's directory stays with this test, past the fixture.
        _dir: tempfile::tempdir().unwrap(),
        root: root.clone(),
        server: Some(server),
        alice,
        bob,
        http: reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
    };
    let before = endpoint.requests();
    fill(&f, &f.alice, "run-1");
    let ask = json!({"question": "which table was missing?", "structures": "V"});
    let a = f.ok(
        "POST",
        "/v1/episodes/run-1/query",
        &f.alice,
        Some(ask.clone()),
    );
    assert!(!a["evidence"].as_array().unwrap().is_empty(), "{a}");
    let alice_sent = endpoint.requests();
    assert!(
        alice_sent > before,
        "alice's steps and question went to the endpoint"
    );
    fill(&f, &f.bob, "run-1");
    f.ok("POST", "/v1/episodes/run-1/query", &f.bob, Some(ask));
    assert_eq!(
        endpoint.requests(),
        alice_sent,
        "bob's tenant kept the built-in embedder"
    );
    let chats = endpoint
        .log()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count();
    assert!(chats > 0, "alice's steps' relations came from the endpoint");
    assert_eq!(endpoint.models(), ["chat-a", "emb-a"]);
    drop(f);
    let memory = LiveMemory::open(&root).unwrap();
    let names = |t: &str| {
        let t = memory.tenant(t).unwrap();
        [t.embedder(), t.summarizer(), t.extractor()]
    };
    assert_eq!(
        names("alice"),
        ["openai:emb-a:3", "extractive-v1", "llm-openie-v1:chat-a"]
    );
    assert_eq!(names("bob"), ["hash-v1-384", "extractive-v1", "rules-v1"]);
    // No endpoint: the server does not start, and says why.
    std::env::set_var("MESA_LLM_BASE_URL", "http://127.0.0.1:9/v1");
    let err = Server::bind(&config).map(|_| ()).expect_err("refused");
    assert!(matches!(err, ServeError::Builders { .. }), "{err}");
    assert!(err.to_string().contains("embedder openai"), "{err}");
}
