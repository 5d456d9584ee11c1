//! A tiny HTTP/1.1 server on 127.0.0.1 for the plugin tests (the pattern of
//! `llm/tests/support`): one thread per connection, one request per
//! connection, canned replies from a handler. Nothing leaves the machine.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `/v1/chat/completions`, …
    pub path: String,
    /// The body.
    pub body: String,
}

impl Request {
    /// The body as JSON (`null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// The text of the last message of a chat request.
    pub fn last_message(&self) -> String {
        self.json()["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }
}

/// A canned reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: String,
}

impl Reply {
    /// A reply with this status and body.
    pub fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            body: body.into(),
        }
    }
}

/// A chat completions reply whose content is `text`.
pub fn chat_reply(text: &str) -> Reply {
    Reply::text(
        200,
        serde_json::json!({
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop"
            }]
        })
        .to_string(),
    )
}

/// An embeddings reply with these vectors.
pub fn embeddings_reply(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| serde_json::json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Reply::text(
        200,
        serde_json::json!({"object": "list", "data": data, "model": "m"}).to_string(),
    )
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// The running server; its threads live until the test process ends.
pub struct Server {
    port: u16,
    count: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    /// Answers request number `n` (from 0) with `handler(&request, n)`.
    pub fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let count = Arc::new(AtomicUsize::new(0));
        let log = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let (c, l) = (Arc::clone(&count), Arc::clone(&log));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (c, l, h) = (Arc::clone(&c), Arc::clone(&l), Arc::clone(&handler));
                std::thread::spawn(move || serve(stream, &c, &l, &*h));
            }
        });
        Server { port, count, log }
    }

    /// A client config for this server: no proxy, no key, short timeouts,
    /// quick retries.
    pub fn config(&self) -> mesa_llm::Config {
        mesa_llm::Config::default()
            .with_base_url(format!("http://127.0.0.1:{}/v1", self.port))
            .with_api_key(None::<String>)
            .with_system_proxy(false)
            .with_chat_model("chat-test")
            .with_timeout(Duration::from_secs(10))
            .with_connect_timeout(Duration::from_secs(5))
            .with_backoff(Duration::from_millis(2), Duration::from_millis(10))
            .with_max_retries(2)
    }

    /// A client for this server.
    pub fn client(&self) -> mesa_llm::Client {
        mesa_llm::Client::new(self.config()).expect("a valid config")
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Every request received, in arrival order.
    pub fn log(&self) -> Vec<Request> {
        self.log.lock().expect("log lock").clone()
    }
}

fn serve(stream: TcpStream, count: &AtomicUsize, log: &Mutex<Vec<Request>>, handler: &Handler) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let n = count.fetch_add(1, Ordering::SeqCst);
    log.lock().expect("log lock").push(request.clone());
    let reply = handler(&request, n);
    let out = format!(
        "HTTP/1.1 {} Canned\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        reply.status,
        reply.body.len(),
        reply.body
    );
    let mut stream = stream;
    // The client may have given up: ignore write errors.
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        path,
        body: String::from_utf8(body).ok()?,
    })
}
