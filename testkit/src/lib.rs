//! Test support shared by MESA's crates: a tiny HTTP/1.1 server on
//! 127.0.0.1 that speaks enough of the OpenAI-compatible API for tests. One
//! thread per connection, one request per connection (`Connection:
//! close`), canned replies from a handler, a log of the requests and
//! counters. Nothing leaves the machine. The `mesa-llm`, `mesa-memory` and
//! `mesa-optimizer` tests use it; each sets the client's retry and model
//! settings its assertions count on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mesa_llm::Config;

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// `POST`, …
    pub method: String,
    /// `/v1/chat/completions`, …
    pub path: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
}

impl Request {
    /// A header's value (`name` lowercased).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics when it is not (the clients send JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }

    /// The number of messages of a chat request.
    pub fn message_count(&self) -> usize {
        self.json()["messages"].as_array().map_or(0, Vec::len)
    }

    /// The text of message `i` of a chat request ("" when there is none).
    pub fn message(&self, i: usize) -> String {
        self.json()["messages"][i]["content"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The text of the last message of a chat request.
    pub fn last_message(&self) -> String {
        self.message(self.message_count().saturating_sub(1))
    }
}

/// A canned reply.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: String,
    /// Wait this long before answering.
    pub delay: Duration,
}

impl Reply {
    /// A reply with this status and JSON body.
    pub fn json(status: u16, body: serde_json::Value) -> Reply {
        Reply::text(status, body.to_string())
    }

    /// A reply with this status and body.
    pub fn text(status: u16, body: impl Into<String>) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.into(),
            delay: Duration::ZERO,
        }
    }

    /// Adds a header.
    pub fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.to_string(), v.to_string()));
        self
    }

    /// Answers after `d`.
    pub fn delay(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

/// A chat completions reply whose content is `text`.
pub fn chat_reply(text: &str) -> Reply {
    Reply::json(
        200,
        serde_json::json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
        }),
    )
}

/// An embeddings reply with these vectors.
pub fn embeddings_reply(vectors: &[Vec<f32>]) -> Reply {
    let data: Vec<serde_json::Value> = vectors
        .iter()
        .enumerate()
        .map(|(i, v)| serde_json::json!({"object": "embedding", "index": i, "embedding": v}))
        .collect();
    Reply::json(
        200,
        serde_json::json!({"object": "list", "data": data, "model": "m"}),
    )
}

#[derive(Default)]
struct Stats {
    requests: AtomicUsize,
    current: AtomicUsize,
    peak: AtomicUsize,
    log: Mutex<Vec<Request>>,
}

type Handler = dyn Fn(&Request, usize) -> Reply + Send + Sync;

/// The running server. Its threads live until the test process ends.
pub struct Server {
    port: u16,
    stats: Arc<Stats>,
    tune: fn(Config) -> Config,
}

impl Server {
    /// Starts a server answering request number `n` (from 0) with `handler(&request, n)`.
    pub fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let port = listener.local_addr().expect("local addr").port();
        let stats = Arc::new(Stats::default());
        let handler: Arc<Handler> = Arc::new(handler);
        let st = Arc::clone(&stats);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let st = Arc::clone(&st);
                let handler = Arc::clone(&handler);
                std::thread::spawn(move || serve(stream, &st, &*handler));
            }
        });
        Server {
            port,
            stats,
            tune: |c| c,
        }
    }

    /// The same server, with [`Server::config`] passed through `tune`:
    /// for tests whose request counts depend on other retry settings.
    pub fn with_config(self, tune: fn(Config) -> Config) -> Server {
        Server { tune, ..self }
    }

    /// `http://127.0.0.1:PORT/v1`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// A config for this server: no proxy, no key, short timeouts and
    /// backoff, 3 retries; then what [`Server::with_config`] set.
    pub fn config(&self) -> Config {
        (self.tune)(self.base_config())
    }

    fn base_config(&self) -> Config {
        Config::default()
            .with_base_url(self.base_url())
            .with_api_key(None::<String>)
            .with_system_proxy(false)
            .with_timeout(Duration::from_secs(10))
            .with_connect_timeout(Duration::from_secs(5))
            .with_backoff(Duration::from_millis(5), Duration::from_millis(40))
            .with_max_retries(3)
    }

    /// A client for [`Server::config`].
    pub fn client(&self) -> mesa_llm::Client {
        mesa_llm::Client::new(self.config()).expect("a valid config")
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.stats.requests.load(Ordering::SeqCst)
    }

    /// The most requests being handled at the same time.
    pub fn peak(&self) -> usize {
        self.stats.peak.load(Ordering::SeqCst)
    }

    /// Every request received, in arrival order.
    pub fn log(&self) -> Vec<Request> {
        self.stats.log.lock().expect("log lock").clone()
    }

    /// The distinct `model`s the requests named, sorted (a request without
    /// one counts as `""`).
    pub fn models(&self) -> Vec<String> {
        let mut models: Vec<String> = self
            .log()
            .iter()
            .map(|r| r.json()["model"].as_str().unwrap_or_default().to_string())
            .collect();
        models.sort();
        models.dedup();
        models
    }
}

fn serve(stream: TcpStream, stats: &Stats, handler: &Handler) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    // Counted from a fully read request until just before the reply is written, so the count
    // never exceeds the requests the client really has in flight.
    let now = stats.current.fetch_add(1, Ordering::SeqCst) + 1;
    stats.peak.fetch_max(now, Ordering::SeqCst);
    let n = stats.requests.fetch_add(1, Ordering::SeqCst);
    stats.log.lock().expect("log lock").push(request.clone());
    let reply = handler(&request, n);
    std::thread::sleep(reply.delay);
    stats.current.fetch_sub(1, Ordering::SeqCst);
    let mut out = format!(
        "HTTP/1.1 {} Canned\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(&reply.body);
    let mut stream = stream;
    // The client may have given up (timeouts): ignore write errors.
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8(body).ok()?,
    })
}
