//! The plugin tests' local server: `mesa-testkit`'s, with the client
//! settings these tests count requests by.

use std::time::Duration;

pub use mesa_testkit::{chat_reply, embeddings_reply, Reply, Request, Server};

/// A server answering request number `n` (from 0) with `handler(&request,
/// n)`, whose config has a chat model, quick backoff and 2 retries.
pub fn start(handler: impl Fn(&Request, usize) -> Reply + Send + Sync + 'static) -> Server {
    Server::start(handler).with_config(|c| {
        c.with_chat_model("chat-test")
            .with_backoff(Duration::from_millis(2), Duration::from_millis(10))
            .with_max_retries(2)
    })
}

/// The step index named in an OpenIE prompt.
pub fn step_of(req: &Request) -> usize {
    let m = req.last_message();
    m.split("\n\nStep ")
        .nth(1)
        .and_then(|r| r.split('\n').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX)
}

/// An OpenIE reply for step `step`: two relations and one with an empty
/// subject (skipped).
pub fn triples_for(step: usize) -> String {
    serde_json::json!({"triples": [
        {"subject": "agent", "relation": "ran", "object": format!("command {step}")},
        {"subject": format!("command {step}"), "relation": "returned", "object": step},
        {"subject": "", "relation": "x", "object": "skipped"}
    ]})
    .to_string()
}

/// A summary reply: one anchored line per step of the segment it is asked
/// about, plus an unanchored remark.
pub fn echo(req: &Request, _: usize) -> Reply {
    let text = req.last_message();
    let steps: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("[step "))
        .filter_map(|l| l.split(']').next())
        .map(str::to_string)
        .collect();
    let mut reply: Vec<String> = steps
        .iter()
        .map(|s| format!("- [step {s}] the agent did thing {s}"))
        .collect();
    reply.push("Overall the segment went fine.".into());
    chat_reply(&reply.join("\n"))
}

/// A chat server for both LLM builders: OpenIE prompts get
/// [`triples_for`] their step, the others [`echo`].
pub fn builders(req: &Request, n: usize) -> Reply {
    let system = req.json()["messages"][0]["content"]
        .as_str()
        .map(str::to_string);
    if system.as_deref() == Some(super::OPENIE_SYSTEM_PROMPT) {
        chat_reply(&triples_for(step_of(req)))
    } else {
        echo(req, n)
    }
}
