//! A load test of `mesa serve` (docs/BENCHMARKS.md, "HTTP server"): a server
//! on 127.0.0.1 over a fresh memory, AMA-Bench's episodes imported through
//! the API (one batch append each), then C concurrent clients, each for D
//! seconds, sending mixed requests: 4 queries (all five structures, one of
//! the episode's own questions) to 1 append (one step). It prints
//! throughput and p50/p99 latency per route, and checks that every
//! acknowledged append is stored. With `mcp` as the fourth argument the
//! queries go through `/mcp` instead (the `search_memory` tool, JSON-RPC).
//! With `warm` as the fifth, each episode is asked one question before the
//! clients start, so that their figures leave out each episode's first
//! build (`cold`, the default, keeps them in).
//!
//! ```text
//! cargo run --release -p mesa-server --example load -- ../shared/data/ama-bench/open_end_qa_set.jsonl 16 20 [rest|mcp] [cold|warm]
//! ```

use mesa_server::{add_token, Config, Server};
use reqwest::blocking::Client;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::time::{Duration, Instant};

struct Episode {
    id: String,
    questions: Vec<String>,
    steps: Vec<Value>,
}

fn cut(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

type Outcome<T> = Result<T, Box<dyn std::error::Error>>;

/// Latencies in milliseconds by route.
type Latencies = BTreeMap<&'static str, Vec<f64>>;

/// AMA-Bench's episodes: their questions and their steps as the API takes them.
fn read_episodes(data: &str) -> Outcome<Vec<Episode>> {
    let mut episodes = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(data)?).lines() {
        let r: Value = serde_json::from_str(&line?)?;
        let steps = r["trajectory"].as_array().cloned().unwrap_or_default();
        episodes.push(Episode {
            id: r["episode_id"].to_string(),
            questions: r["qa_pairs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|q| q["question"].as_str().map(String::from))
                .collect(),
            steps: steps
                .iter()
                // Observations cut at 32 KiB, as `mesa build` cuts them (one
                // AMA-Bench observation is over the live memory's 1 MiB limit).
                .map(|t| {
                    let observation = cut(t["observation"].as_str().unwrap_or(""), 32 << 10);
                    json!({"action": t["action"], "observation": observation})
                })
                .collect(),
        });
    }
    Ok(episodes)
}

/// Creates every episode and appends its steps, a thousand per request.
fn import(http: &Client, base: &str, token: &str, episodes: &[Episode]) -> Outcome<()> {
    for e in episodes {
        http.post(format!("{base}/v1/episodes"))
            .bearer_auth(token)
            .json(&json!({"id": e.id, "task": "AMA-Bench"}))
            .send()?
            .error_for_status()?;
        for chunk in e.steps.chunks(1000) {
            http.post(format!("{base}/v1/episodes/{}/steps", e.id))
                .bearer_auth(token)
                .json(&json!({"steps": chunk}))
                .send()?
                .error_for_status()?;
        }
    }
    Ok(())
}

/// What one client saw: latencies by route, the appends acknowledged
/// (episode, index) and the requests that failed.
struct Seen {
    latencies: Latencies,
    acked: Vec<(String, u64)>,
    errors: usize,
}

/// How the clients ask their questions.
#[derive(Clone, Copy)]
enum Via {
    /// `POST /v1/episodes/{id}/query`.
    Rest,
    /// The `search_memory` tool through `POST /mcp` (JSON-RPC).
    Mcp,
}

/// One `search_memory` call through `/mcp`; whether it succeeded.
fn mcp_search(http: &Client, base: &str, token: &str, episode: &str, question: &str) -> bool {
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "search_memory",
                   "arguments": {"episode": episode, "question": question, "structures": "all"}}
    });
    let r = http
        .post(format!("{base}/mcp"))
        .bearer_auth(token)
        .header("Accept", "application/json, text/event-stream")
        .json(&call)
        .send();
    let reply = r.ok().filter(|r| r.status().is_success());
    reply
        .and_then(|r| r.json::<Value>().ok())
        .is_some_and(|v| v["result"]["isError"] != json!(true) && v["result"].is_object())
}

/// Client `c`: until the deadline, one append to four queries.
fn client(
    c: usize,
    (base, token, via): (&str, &str, Via),
    episodes: &[Episode],
    deadline: Instant,
) -> Seen {
    let mut seen = Seen {
        latencies: Latencies::new(),
        acked: Vec::new(),
        errors: 0,
    };
    let Ok(http) = Client::builder().timeout(Duration::from_secs(120)).build() else {
        seen.errors += 1;
        return seen;
    };
    let mut k = c * 7919;
    while Instant::now() < deadline {
        k += 1;
        let e = &episodes[k % episodes.len()];
        let t = Instant::now();
        let (route, ok) = if k.is_multiple_of(5) {
            let note =
                json!({"action": format!("client {c} note {k}"), "observation": "load test"});
            let r = http
                .post(format!("{base}/v1/episodes/{}/steps", e.id))
                .bearer_auth(token)
                .json(&note)
                .send();
            let reply = r.ok().filter(|r| r.status().is_success());
            match reply.and_then(|r| r.json::<Value>().ok()) {
                Some(v) => {
                    let index = v["indices"][0].as_u64().unwrap_or(u64::MAX);
                    seen.acked.push((e.id.clone(), index));
                    ("append", true)
                }
                None => ("append", false),
            }
        } else {
            let q = &e.questions[k % e.questions.len().max(1)];
            match via {
                Via::Rest => {
                    let r = http
                        .post(format!("{base}/v1/episodes/{}/query", e.id))
                        .bearer_auth(token)
                        .json(&json!({"question": q, "structures": "all"}))
                        .send();
                    // The answer is read, as a client would (and so the
                    // connection goes back to the pool).
                    let ok = r.is_ok_and(|r| r.status().is_success() && r.bytes().is_ok());
                    ("query", ok)
                }
                Via::Mcp => ("query (MCP)", mcp_search(&http, base, token, &e.id, q)),
            }
        };
        if ok {
            let ms = t.elapsed().as_secs_f64() * 1e3;
            seen.latencies.entry(route).or_default().push(ms);
        } else {
            seen.errors += 1;
        }
    }
    seen
}

fn main() -> Outcome<()> {
    let args: Vec<String> = std::env::args().collect();
    let data = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "../shared/data/ama-bench/open_end_qa_set.jsonl".into());
    let clients: usize = args.get(2).map_or(Ok(16), |s| s.parse())?;
    let seconds: u64 = args.get(3).map_or(Ok(20), |s| s.parse())?;
    let via = match args.get(4).map(String::as_str) {
        None | Some("rest") => Via::Rest,
        Some("mcp") => Via::Mcp,
        Some(other) => {
            return Err(format!("the 4th argument is `rest` or `mcp`, not `{other}`").into())
        }
    };
    let warm = match args.get(5).map(String::as_str) {
        None | Some("cold") => false,
        Some("warm") => true,
        Some(other) => {
            return Err(format!("the 5th argument is `cold` or `warm`, not `{other}`").into())
        }
    };
    let episodes = read_episodes(&data)?;
    let dir = tempfile::tempdir()?;
    let root = dir.path().join("mem");
    mesa_memory::LiveMemory::open(&root)?;
    let token = add_token(&root.join("tokens"), "bench")?;
    let mut config = Config::new(root.clone());
    config.addr = "127.0.0.1:0".parse()?;
    let server = Server::bind(&config)?.spawn()?;
    let base = format!("http://{}", server.addr);
    let http = Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let t0 = Instant::now();
    import(&http, &base, &token, &episodes)?;
    println!(
        "imported {} episodes through the API in {:.1} s",
        episodes.len(),
        t0.elapsed().as_secs_f64()
    );
    if warm {
        // One question per episode first, so that the clients' clock does
        // not include each episode's first build (a server that has run a
        // while has built the episodes it is asked about).
        let t0 = Instant::now();
        for e in &episodes {
            let q = e.questions.first().map_or("what happened?", String::as_str);
            http.post(format!("{base}/v1/episodes/{}/query", e.id))
                .bearer_auth(&token)
                .json(&json!({"question": q, "structures": "all"}))
                .send()?
                .error_for_status()?;
        }
        println!(
            "asked each episode once (warm-up) in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    let episodes = std::sync::Arc::new(episodes);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (base, token, episodes) = (base.clone(), token.clone(), episodes.clone());
            std::thread::spawn(move || client(c, (&base, &token, via), &episodes, deadline))
        })
        .collect();
    let mut lat = Latencies::new();
    let (mut acked, mut errors) = (Vec::new(), 0);
    for h in handles {
        let seen = h.join().map_err(|_| "a client panicked")?;
        for (k, v) in seen.latencies {
            lat.entry(k).or_default().extend(v)
        }
        acked.extend(seen.acked);
        errors += seen.errors;
    }
    for (route, v) in &mut lat {
        let n = v.len();
        let rate = n as f64 / seconds as f64;
        let (p50, p99) = (pct(v, 0.5), pct(v, 0.99));
        println!("{clients} clients, {seconds} s: {route}: {n} requests, {rate:.1}/s, p50 {p50:.1} ms, p99 {p99:.1} ms");
    }
    server.stop()?;
    let t = mesa_memory::LiveMemory::open(&root)?.tenant("bench")?;
    let mut lost = 0;
    for (e, i) in &acked {
        if !t.steps(e)?.iter().any(|s| s.index as u64 == *i) {
            lost += 1
        }
    }
    println!(
        "errors: {errors}; acknowledged appends: {}, lost: {lost}",
        acked.len()
    );
    Ok(())
}
