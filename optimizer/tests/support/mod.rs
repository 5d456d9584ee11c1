//! Shared test helpers: synthetic sweeps on disk, and a tiny HTTP/1.1
//! server on 127.0.0.1 answering chat completions from a handler.

#![allow(dead_code)]

use mesa_optimizer::sweep::synthetic::{generate, SyntheticConfig};
use mesa_optimizer::sweep::{write_sweep, UtilityKind};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Writes a synthetic sweep of `episodes` x `per` questions into `dir`.
pub fn synthetic_sweep(dir: &Path, episodes: usize, per: usize, seed: u64) -> PathBuf {
    let records = generate(&SyntheticConfig {
        episodes,
        questions_per_episode: per,
        seed,
        ..SyntheticConfig::default()
    });
    let path = dir.join(format!("synthetic-{episodes}x{per}-{seed}.jsonl"));
    write_sweep(
        &path,
        UtilityKind::EvidenceRecall,
        "synthetic",
        "none",
        &records,
    )
    .expect("write sweep");
    path
}

/// A canned reply.
pub struct Reply {
    pub status: u16,
    pub body: String,
    pub delay: Duration,
}

/// A chat completion whose content is `text`.
pub fn chat(text: &str) -> Reply {
    Reply {
        status: 200,
        body: serde_json::json!({
            "id": "x", "object": "chat.completion", "model": "test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        })
        .to_string(),
        delay: Duration::ZERO,
    }
}

/// A request: how many messages it had, and the last one's text.
pub struct Seen {
    pub messages: usize,
    pub last: String,
    pub first_user: String,
}

type Handler = dyn Fn(&Seen, usize) -> Reply + Send + Sync;

/// The server; its threads live until the test process ends.
pub struct Server {
    pub port: u16,
    pub requests: Arc<AtomicUsize>,
}

impl Server {
    pub fn start(handler: impl Fn(&Seen, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let handler: Arc<Handler> = Arc::new(handler);
        let count = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                let n = count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || serve(stream, &*handler, n));
            }
        });
        Server { port, requests }
    }

    pub fn config(&self) -> mesa_llm::Config {
        mesa_llm::Config::default()
            .with_base_url(format!("http://127.0.0.1:{}/v1", self.port))
            .with_api_key(None::<String>)
            .with_system_proxy(false)
            .with_timeout(Duration::from_secs(10))
            .with_connect_timeout(Duration::from_secs(5))
            .with_backoff(Duration::from_millis(5), Duration::from_millis(20))
            .with_max_retries(1)
    }
}

fn serve(stream: TcpStream, handler: &Handler, n: usize) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let msgs = json["messages"].as_array().cloned().unwrap_or_default();
    let seen = Seen {
        messages: msgs.len(),
        last: msgs
            .last()
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string(),
        first_user: msgs
            .get(1)
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string(),
    };
    let reply = handler(&seen, n);
    std::thread::sleep(reply.delay);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
    let _ = stream.flush();
}
