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
