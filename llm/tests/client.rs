//! The client against a local canned HTTP server (no outside service is ever called).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mesa_llm::{ChatOptions, Client, Config, Error, Message};
use mesa_testkit::{chat_reply, Reply, Server};
use serde_json::json;

fn hello() -> Vec<Message> {
    vec![Message::system("be brief"), Message::user("hello")]
}

fn client(config: Config) -> Client {
    Client::new(config).expect("valid config")
}

#[test]
fn valid_chat() {
    let server = Server::start(|_, _| chat_reply("hi there"));
    let c = client(server.config().with_chat_model("m-chat"));
    let reply = c
        .chat(
            &hello(),
            &ChatOptions::default()
                .temperature(0.25)
                .max_tokens(32)
                .seed(42),
        )
        .expect("chat succeeds");
    assert_eq!(reply.content, "hi there");
    assert_eq!(reply.finish_reason.as_deref(), Some("stop"));
    assert_eq!(reply.model.as_deref(), Some("test-model"));
    assert_eq!(reply.usage.map(|u| u.total_tokens), Some(7));

    let log = server.log();
    assert_eq!(log.len(), 1);
    let req = &log[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("authorization"), None, "no key, no header");
    let body = req.json();
    assert_eq!(body["model"], "m-chat");
    assert_eq!(
        body["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello"}])
    );
    assert_eq!(body["temperature"], json!(0.25));
    assert_eq!(body["max_tokens"], 32);
    assert_eq!(body["seed"], 42);

    // A per-call model overrides the configured one; unset options are not sent.
    c.chat(&hello(), &ChatOptions::default().model("other"))
        .expect("chat succeeds");
    let body = server.log()[1].json();
    assert_eq!(body["model"], "other");
    assert!(body.get("temperature").is_none());
    assert!(body.get("seed").is_none());
}

#[test]
fn valid_embeddings_out_of_order() {
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({
                "object": "list",
                "data": [
                    {"object": "embedding", "index": 2, "embedding": [0.0, 0.0, 3.0]},
                    {"object": "embedding", "index": 0, "embedding": [1.0, 0.0, 0.0]},
                    {"object": "embedding", "index": 1, "embedding": [0.0, 2.5, 0.0]}
                ],
                "model": "e"
            }),
        )
    });
    let c = client(server.config().with_embedding_model("m-embed"));
    let v = c.embed(&["a", "b", "c"]).expect("embed succeeds");
    assert_eq!(
        v,
        vec![
            vec![1.0, 0.0, 0.0],
            vec![0.0, 2.5, 0.0],
            vec![0.0, 0.0, 3.0]
        ]
    );
    let log = server.log();
    assert_eq!(log[0].path, "/v1/embeddings");
    assert_eq!(
        log[0].json(),
        json!({"model": "m-embed", "input": ["a", "b", "c"]})
    );

    // No texts, no request.
    assert!(c.embed::<&str>(&[]).expect("empty").is_empty());
    assert_eq!(server.requests(), 1);
}

#[test]
fn embed_batched_splits_and_keeps_order() {
    // Each input "tN" embeds to [N]; the server answers in reverse order.
    let server = Server::start(|req, _| {
        let inputs = req.json()["input"].as_array().cloned().unwrap_or_default();
        let mut data: Vec<_> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n: f64 = t.as_str().unwrap_or("t0")[1..].parse().unwrap_or(-1.0);
                json!({"index": i, "embedding": [n]})
            })
            .collect();
        data.reverse();
        Reply::json(200, json!({ "data": data }))
    });
    let c = client(server.config().with_max_concurrency(3));
    let texts: Vec<String> = (0..10).map(|i| format!("t{i}")).collect();
    let v = c.embed_batched(&texts, 3).expect("batched embed");
    let want: Vec<Vec<f32>> = (0..10).map(|i| vec![i as f32]).collect();
    assert_eq!(v, want);
    assert_eq!(server.requests(), 4);
    assert!(server
        .log()
        .iter()
        .all(|r| r.json()["input"].as_array().is_some_and(|a| a.len() <= 3)));
}

#[test]
fn slow_reply_times_out() {
    let server = Server::start(|_, _| chat_reply("late").delay(Duration::from_secs(3)));
    let c = client(
        server
            .config()
            .with_timeout(Duration::from_millis(300))
            .with_max_retries(1),
    );
    let start = Instant::now();
    let err = c.chat(&hello(), &ChatOptions::default()).unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    match &err {
        Error::Timeout {
            url,
            limit,
            attempts,
        } => {
            assert!(url.ends_with("/v1/chat/completions"));
            assert_eq!(*limit, Duration::from_millis(300));
            assert_eq!(*attempts, 2, "timeouts are retried");
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(server.requests(), 2);
    assert!(err.to_string().contains("MESA_LLM_TIMEOUT_SECS"), "{err}");
}

#[test]
fn malformed_json_is_not_retried() {
    let server = Server::start(|_, _| Reply::text(200, "<html>gateway says hi</html>"));
    let c = client(server.config());
    let err = c.chat(&hello(), &ChatOptions::default()).unwrap_err();
    match &err {
        Error::MalformedReply {
            field,
            problem,
            body_excerpt,
            ..
        } => {
            assert_eq!(field, "(body)");
            assert!(problem.contains("not JSON"), "{problem}");
            assert!(body_excerpt.contains("gateway says hi"));
        }
        other => panic!("expected MalformedReply, got {other:?}"),
    }
    assert_eq!(server.requests(), 1);
    assert!(!err.is_retryable());
    let msg = err.to_string();
    assert!(msg.contains(&server.base_url()), "{msg}");
    assert!(msg.contains("OpenAI-compatible"), "{msg}");
}

#[test]
fn json_lacking_fields_names_the_field() {
    let cases: Vec<(&str, serde_json::Value, &str)> = vec![
        ("chat", json!({"object": "chat.completion"}), "choices"),
        ("chat", json!({"choices": []}), "choices[0]"),
        (
            "chat",
            json!({"choices": [{"message": {"role": "assistant"}}]}),
            "choices[0].message.content",
        ),
        (
            "embed",
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1}]}),
            "data[1].embedding",
        ),
        (
            "embed",
            json!({"data": [{"index": 0, "embedding": [1.0]}]}),
            "data",
        ),
        (
            "embed",
            json!({"data": [{"index": 0, "embedding": [1.0, 2.0]}, {"index": 1, "embedding": [1.0]}]}),
            "data[1].embedding",
        ),
        (
            "embed",
            json!({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1e300]}]}),
            "data[1].embedding[0]",
        ),
    ];
    let cases = Arc::new(cases);
    let served = Arc::clone(&cases);
    let server = Server::start(move |_, n| Reply::json(200, served[n].1.clone()));
    let c = client(server.config());
    for (i, (kind, _, want)) in cases.iter().enumerate() {
        let err = if *kind == "chat" {
            c.chat(&hello(), &ChatOptions::default()).unwrap_err()
        } else {
            c.embed(&["x", "y"]).unwrap_err()
        };
        match &err {
            Error::MalformedReply { field, .. } => assert_eq!(field, want, "case {i}"),
            other => panic!("case {i}: expected MalformedReply, got {other:?}"),
        }
        assert!(err.to_string().contains(want), "{err}");
    }
    assert_eq!(
        server.requests(),
        cases.len(),
        "malformed replies are not retried"
    );
}

#[test]
fn server_error_then_success_is_retried() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::text(500, "oops")
        } else {
            chat_reply("second time lucky")
        }
    });
    let c = client(server.config());
    let reply = c.chat(&hello(), &ChatOptions::default()).expect("retried");
    assert_eq!(reply.content, "second time lucky");
    assert_eq!(server.requests(), 2);
}

#[test]
fn server_error_forever_gives_up_with_the_status() {
    let server = Server::start(|_, _| {
        Reply::json(
            503,
            json!({"error": {"message": "overloaded", "type": "server_error"}}),
        )
    });
    let c = client(server.config().with_max_retries(2));
    let start = Instant::now();
    let err = c.embed(&["x"]).unwrap_err();
    match &err {
        Error::Http {
            status,
            attempts,
            body_excerpt,
            url,
        } => {
            assert_eq!(*status, 503);
            assert_eq!(*attempts, 3);
            assert_eq!(body_excerpt, "overloaded");
            assert!(url.ends_with("/v1/embeddings"));
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert_eq!(server.requests(), 3);
    // Backoff 5 ms then 10 ms.
    assert!(start.elapsed() >= Duration::from_millis(15));
    let msg = err.to_string();
    assert!(
        msg.contains("HTTP 503") && msg.contains("overloaded"),
        "{msg}"
    );
}

#[test]
fn client_errors_are_not_retried() {
    let server = Server::start(|_, _| {
        Reply::json(
            400,
            json!({"error": {"message": "model `nope` does not exist"}}),
        )
    });
    let c = client(server.config());
    let err = c.chat(&hello(), &ChatOptions::default()).unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.attempts(), Some(1));
    assert_eq!(server.requests(), 1);
    let msg = err.to_string();
    assert!(msg.contains("model `nope` does not exist"), "{msg}");
    assert!(msg.contains("check the model name"), "{msg}");

    let server = Server::start(|_, _| Reply::text(401, "no"));
    let err = client(server.config())
        .chat(&hello(), &ChatOptions::default())
        .unwrap_err();
    assert_eq!(err.status(), Some(401));
    assert_eq!(server.requests(), 1);
    assert!(err.to_string().contains("MESA_LLM_API_KEY"));
}

#[test]
fn rate_limit_honours_retry_after() {
    let server = Server::start(|_, n| {
        if n == 0 {
            Reply::text(429, "slow down").header("Retry-After", "1")
        } else {
            chat_reply("ok")
        }
    });
    // The backoff alone would wait 5 ms; Retry-After asks for 1 s.
    let c = client(server.config());
    let start = Instant::now();
    let reply = c.chat(&hello(), &ChatOptions::default()).expect("retried");
    let waited = start.elapsed();
    assert_eq!(reply.content, "ok");
    assert_eq!(server.requests(), 2);
    assert!(waited >= Duration::from_millis(950), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");
}

#[test]
fn retry_after_is_capped() {
    let server = Server::start(|_, n| {
        if n < 2 {
            Reply::text(429, "later").header("Retry-After", "3600")
        } else {
            chat_reply("ok")
        }
    });
    let c = client(
        server
            .config()
            .with_max_retry_after(Duration::from_millis(50)),
    );
    let start = Instant::now();
    let reply = c.chat(&hello(), &ChatOptions::default()).expect("retried");
    assert_eq!(reply.content, "ok");
    assert_eq!(server.requests(), 3);
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(100), "{waited:?}");
    assert!(waited < Duration::from_secs(5), "{waited:?}");

    // Rate-limited on every attempt: the 429 is reported.
    let server = Server::start(|_, _| Reply::text(429, "later").header("Retry-After", "0"));
    let err = client(server.config().with_max_retries(1))
        .chat(&hello(), &ChatOptions::default())
        .unwrap_err();
    assert_eq!(err.status(), Some(429));
    assert_eq!(err.attempts(), Some(2));
    assert!(
        err.to_string().contains("MESA_LLM_MAX_CONCURRENCY"),
        "{err}"
    );
}

#[test]
fn concurrency_bound_is_respected_across_threads() {
    let server = Server::start(|_, _| chat_reply("ok").delay(Duration::from_millis(150)));
    let c = client(server.config().with_max_concurrency(2));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || c.chat(&hello(), &ChatOptions::default()))
        })
        .collect();
    for t in threads {
        t.join().expect("thread").expect("chat succeeds");
    }
    assert_eq!(server.requests(), 6);
    assert!(server.peak() <= 2, "peak {}", server.peak());
    assert_eq!(server.peak(), 2, "requests did run concurrently");
    assert_eq!(c.in_flight(), 0);
}

#[test]
fn chat_many_keeps_order_within_the_bound() {
    // Echo the user's message, the early ones slowest.
    let server = Server::start(|req, _| {
        let text = req.json()["messages"][0]["content"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let n: u64 = text.parse().unwrap_or(0);
        chat_reply(&text).delay(Duration::from_millis(10 * (8 - n.min(8))))
    });
    let c = client(server.config().with_max_concurrency(3));
    let conversations: Vec<Vec<Message>> =
        (0..8).map(|i| vec![Message::user(i.to_string())]).collect();
    let replies = c.chat_many(&conversations, &ChatOptions::default());
    let got: Vec<String> = replies
        .into_iter()
        .map(|r| r.expect("chat succeeds").content)
        .collect();
    let want: Vec<String> = (0..8).map(|i| i.to_string()).collect();
    assert_eq!(got, want);
    assert!(server.peak() <= 3, "peak {}", server.peak());
}

#[test]
fn api_key_is_sent_as_bearer() {
    let server = Server::start(|_, _| chat_reply("ok"));
    let c = client(server.config().with_api_key(Some("sk-test-123")));
    c.chat(&hello(), &ChatOptions::default()).expect("chat");
    c.embed(&["x"]).ok();
    for req in server.log() {
        assert_eq!(req.header("authorization"), Some("Bearer sk-test-123"));
    }
    assert!(!format!("{:?}", c.config()).contains("sk-test-123"));
}

#[test]
fn refused_connection_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let c = client(
        Config::default()
            .with_base_url(format!("http://127.0.0.1:{port}/v1"))
            .with_system_proxy(false)
            .with_max_retries(1)
            .with_backoff(Duration::from_millis(1), Duration::from_millis(1)),
    );
    let err = c.embed(&["x"]).unwrap_err();
    match &err {
        Error::Connect { url, attempts, .. } => {
            assert_eq!(url, &format!("http://127.0.0.1:{port}/v1/embeddings"));
            assert_eq!(*attempts, 2);
        }
        other => panic!("expected Connect, got {other:?}"),
    }
    assert!(err.to_string().contains("MESA_LLM_BASE_URL"), "{err}");
}

#[test]
fn config_from_lookup() {
    let env = |pairs: &[(&str, &str)]| {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).cloned()
    };
    let c = Config::from_lookup(env(&[])).expect("defaults");
    assert_eq!(c.base_url, mesa_llm::DEFAULT_BASE_URL);
    assert_eq!(c.api_key, None);
    assert_eq!(c, Config::default());

    let c = Config::from_lookup(env(&[
        ("OPENAI_BASE_URL", "http://fallback/v1"),
        ("OPENAI_API_KEY", "sk-fallback"),
    ]))
    .expect("fallbacks");
    assert_eq!(c.base_url, "http://fallback/v1");
    assert_eq!(c.api_key.as_deref(), Some("sk-fallback"));

    let c = Config::from_lookup(env(&[
        ("MESA_LLM_BASE_URL", "http://mesa:8000/v1"),
        ("OPENAI_BASE_URL", "http://fallback/v1"),
        ("MESA_LLM_API_KEY", "sk-mesa"),
        ("OPENAI_API_KEY", "sk-fallback"),
        ("MESA_LLM_CHAT_MODEL", "chat-x"),
        ("MESA_LLM_EMBEDDING_MODEL", "embed-y"),
        ("MESA_LLM_TIMEOUT_SECS", "2.5"),
        ("MESA_LLM_CONNECT_TIMEOUT_SECS", "1"),
        ("MESA_LLM_MAX_RETRIES", "0"),
        ("MESA_LLM_MAX_CONCURRENCY", "16"),
    ]))
    .expect("overrides");
    assert_eq!(c.base_url, "http://mesa:8000/v1");
    assert_eq!(c.api_key.as_deref(), Some("sk-mesa"));
    assert_eq!(c.chat_model, "chat-x");
    assert_eq!(c.embedding_model, "embed-y");
    assert_eq!(c.timeout, Duration::from_millis(2500));
    assert_eq!(c.connect_timeout, Duration::from_secs(1));
    assert_eq!(c.max_retries, 0);
    assert_eq!(c.max_concurrency, 16);

    // Empty values count as unset.
    let c = Config::from_lookup(env(&[("MESA_LLM_BASE_URL", " "), ("MESA_LLM_API_KEY", "")]))
        .expect("empty");
    assert_eq!(c.base_url, mesa_llm::DEFAULT_BASE_URL);
    assert_eq!(c.api_key, None);

    for (var, value) in [
        ("MESA_LLM_TIMEOUT_SECS", "soon"),
        ("MESA_LLM_TIMEOUT_SECS", "0"),
        ("MESA_LLM_CONNECT_TIMEOUT_SECS", "-1"),
        ("MESA_LLM_MAX_RETRIES", "many"),
        ("MESA_LLM_MAX_CONCURRENCY", "0"),
    ] {
        match Config::from_lookup(env(&[(var, value)])) {
            Err(e @ Error::Config { .. }) => {
                assert!(e.to_string().contains(var), "{e}");
            }
            other => panic!("{var}={value}: expected a Config error, got {other:?}"),
        }
    }
}

#[test]
fn bad_settings_are_refused() {
    for url in [
        "not a url",
        "ftp://host/v1",
        "http://host/v1?x=1",
        "localhost:8000",
    ] {
        match Client::new(Config::default().with_base_url(url)) {
            Err(e @ Error::Config { .. }) => {
                let m = e.to_string();
                assert!(m.contains("base_url") && m.contains(url), "{m}");
            }
            other => panic!("{url}: expected a Config error, got {other:?}"),
        }
    }
    assert!(matches!(
        Client::new(Config::default().with_timeout(Duration::ZERO)),
        Err(Error::Config { .. })
    ));
    assert!(matches!(
        Client::new(Config::default().with_max_concurrency(0)),
        Err(Error::Config { .. })
    ));
    // A trailing slash is fine.
    Client::new(Config::default().with_base_url("http://localhost:8000/v1/")).expect("valid");
}

/// A client for another model sends that model and keeps every other
/// setting; asked for its own model, a client gives one of the same
/// settings.
#[test]
fn a_client_for_another_model_keeps_the_other_settings() {
    let server = Server::start(|_, _| chat_reply("ok"));
    let c = client(
        server
            .config()
            .with_chat_model("m-chat")
            .with_max_concurrency(3),
    );
    let other = c.for_chat_model("m-other").expect("valid");
    other.chat(&hello(), &ChatOptions::default()).expect("chat");
    assert_eq!(server.log()[0].json()["model"], "m-other");
    let (a, b) = (c.config(), other.config());
    assert_eq!(
        (&a.base_url, a.max_concurrency),
        (&b.base_url, b.max_concurrency)
    );
    let embed = c.for_embedding_model("e-other").expect("valid");
    assert_eq!(embed.config().embedding_model, "e-other");
    assert_eq!(embed.config().chat_model, "m-chat");
    let same = c.for_chat_model("m-chat").expect("valid");
    assert_eq!(same.config(), c.config());
    let same = same
        .for_embedding_model(&c.config().embedding_model.clone())
        .expect("valid");
    assert_eq!(same.config(), c.config());
}
