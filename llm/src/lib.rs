//! MESA's client for OpenAI-compatible HTTP endpoints: chat completions and embeddings.
//!
//! The memory builders (LLM summarizer, LLM OpenIE, embeddings) and the optimizer (LLM
//! proposer, answer model and judge) use it. The API is blocking, for synchronous callers that
//! parallelize with threads or rayon; one [`Client`] (cheap to clone) is shared by all threads.
//!
//! ```no_run
//! use mesa_llm::{ChatOptions, Client, Config, Message};
//!
//! # fn main() -> Result<(), mesa_llm::Error> {
//! // MESA_LLM_BASE_URL / OPENAI_BASE_URL, MESA_LLM_API_KEY / OPENAI_API_KEY, ...
//! let client = Client::new(Config::from_env()?.with_max_concurrency(8))?;
//!
//! let reply = client.chat(
//!     &[
//!         Message::system("Summarize the agent's trajectory in one sentence."),
//!         Message::user("step 0: ls -> a.txt b.txt\nstep 1: cat a.txt -> error: permission denied"),
//!     ],
//!     &ChatOptions::default().temperature(0.0).max_tokens(64).seed(1),
//! )?;
//! println!("{}", reply.content);
//!
//! let vectors = client.embed_batched(&["step 0: ls", "step 1: cat a.txt"], 64)?;
//! assert_eq!(vectors.len(), 2);
//! # Ok(())
//! # }
//! ```
//!
//! # Configuration
//!
//! [`Config::from_env`] reads `MESA_LLM_BASE_URL` (else `OPENAI_BASE_URL`, else
//! `https://api.openai.com/v1`), `MESA_LLM_API_KEY` (else `OPENAI_API_KEY`; optional, for local
//! servers), `MESA_LLM_CHAT_MODEL`, `MESA_LLM_EMBEDDING_MODEL`, `MESA_LLM_TIMEOUT_SECS`,
//! `MESA_LLM_CONNECT_TIMEOUT_SECS`, `MESA_LLM_MAX_RETRIES` and `MESA_LLM_MAX_CONCURRENCY`;
//! the `Config::with_*` methods override any of them.
//!
//! # Failures, retries and limits
//!
//! - Each attempt has a connect timeout and a total timeout (connect, send, read the whole
//!   reply).
//! - Connection failures, timeouts, HTTP 429 and 5xx are retried up to
//!   [`Config::max_retries`] times. The delay before retry `n` (from 0) is
//!   `initial_backoff * 2^n`, at most `max_backoff`, with no jitter; when a 429 or 5xx reply
//!   carries `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, that delay is used
//!   instead, at most [`Config::max_retry_after`]. Other statuses (4xx, redirects) and
//!   malformed replies are not retried.
//! - At most [`Config::max_concurrency`] requests are in flight at once over all threads
//!   sharing a client (a semaphore, [`ConcurrencyLimit`]); a permit is held for one attempt,
//!   not while waiting to retry. [`Client::map_concurrent`], [`Client::chat_many`] and
//!   [`Client::embed_batched`] run batches over that many threads and keep the input order.
//! - Every failure is an [`Error`] that names the URL or field and says what to do; nothing
//!   in a reply can make the client panic.

#![warn(missing_docs)]

mod chat;
mod client;
mod config;
mod embed;
mod error;
mod limit;

pub use chat::{ChatOptions, ChatReply, Message, Role, Usage};
pub use client::Client;
pub use config::{
    Config, DEFAULT_BASE_URL, DEFAULT_CHAT_MODEL, DEFAULT_EMBEDDING_MODEL, ENV_API_KEY,
    ENV_BASE_URL, ENV_CHAT_MODEL, ENV_CONNECT_TIMEOUT_SECS, ENV_EMBEDDING_MODEL,
    ENV_MAX_CONCURRENCY, ENV_MAX_RETRIES, ENV_OPENAI_API_KEY, ENV_OPENAI_BASE_URL,
    ENV_TIMEOUT_SECS,
};
pub use error::Error;
pub use limit::{map_bounded, ConcurrencyLimit, Permit};
