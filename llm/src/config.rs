//! Client settings: where the endpoint is, which models to use, and the limits.

use std::fmt;
use std::time::Duration;

use crate::Error;

/// The base URL used when neither `MESA_LLM_BASE_URL` nor `OPENAI_BASE_URL` is set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The chat model used when `MESA_LLM_CHAT_MODEL` is not set.
pub const DEFAULT_CHAT_MODEL: &str = "gpt-4o-mini";
/// The embedding model used when `MESA_LLM_EMBEDDING_MODEL` is not set.
pub const DEFAULT_EMBEDDING_MODEL: &str = "text-embedding-3-small";

/// Environment variable for the base URL (takes precedence over [`ENV_OPENAI_BASE_URL`]).
pub const ENV_BASE_URL: &str = "MESA_LLM_BASE_URL";
/// Fallback environment variable for the base URL.
pub const ENV_OPENAI_BASE_URL: &str = "OPENAI_BASE_URL";
/// Environment variable for the API key (takes precedence over [`ENV_OPENAI_API_KEY`]).
pub const ENV_API_KEY: &str = "MESA_LLM_API_KEY";
/// Fallback environment variable for the API key.
pub const ENV_OPENAI_API_KEY: &str = "OPENAI_API_KEY";
/// Environment variable for the chat model name.
pub const ENV_CHAT_MODEL: &str = "MESA_LLM_CHAT_MODEL";
/// Environment variable for the embedding model name.
pub const ENV_EMBEDDING_MODEL: &str = "MESA_LLM_EMBEDDING_MODEL";
/// Environment variable for the total timeout of one attempt, in seconds (decimals allowed).
pub const ENV_TIMEOUT_SECS: &str = "MESA_LLM_TIMEOUT_SECS";
/// Environment variable for the connect timeout, in seconds (decimals allowed).
pub const ENV_CONNECT_TIMEOUT_SECS: &str = "MESA_LLM_CONNECT_TIMEOUT_SECS";
/// Environment variable for the number of retries after the first attempt.
pub const ENV_MAX_RETRIES: &str = "MESA_LLM_MAX_RETRIES";
/// Environment variable for the maximum number of requests in flight at once.
pub const ENV_MAX_CONCURRENCY: &str = "MESA_LLM_MAX_CONCURRENCY";

/// Settings of a [`Client`](crate::Client).
///
/// Start from [`Config::default()`] (no environment) or [`Config::from_env()`], then override
/// with the `with_*` methods; [`Client::new`](crate::Client::new) validates the result.
/// Fields are public for reading and assignment; the struct is `#[non_exhaustive]`, so build it
/// with those constructors rather than a struct literal.
///
/// `Debug` never shows the API key.
///
/// ```
/// use std::time::Duration;
/// let config = mesa_llm::Config::default()
///     .with_base_url("http://127.0.0.1:8080/v1")
///     .with_chat_model("qwen2.5-7b-instruct")
///     .with_timeout(Duration::from_secs(30))
///     .with_max_concurrency(8);
/// assert_eq!(config.chat_completions_url(), "http://127.0.0.1:8080/v1/chat/completions");
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The API root, e.g. `https://api.openai.com/v1`; `/chat/completions` and `/embeddings`
    /// are appended. A trailing slash is ignored.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set; local servers usually need none.
    pub api_key: Option<String>,
    /// The model of [`Client::chat`](crate::Client::chat) unless the call's options name one.
    pub chat_model: String,
    /// The model of [`Client::embed`](crate::Client::embed).
    pub embedding_model: String,
    /// Total time allowed for one attempt: connecting, sending, and reading the whole reply.
    pub timeout: Duration,
    /// Time allowed for establishing the connection (TCP and TLS).
    pub connect_timeout: Duration,
    /// Retries after the first attempt, on connection failures, timeouts, 429 and 5xx.
    pub max_retries: u32,
    /// Most requests in flight at once across all threads sharing one client (at least 1).
    pub max_concurrency: usize,
    /// Delay before the first retry; each later retry doubles it, up to `max_backoff`.
    pub initial_backoff: Duration,
    /// Longest delay between two attempts computed by the backoff schedule.
    pub max_backoff: Duration,
    /// Longest delay honoured from a `Retry-After` (or `retry-after-ms`) reply header.
    pub max_retry_after: Duration,
    /// Whether to use the proxies named by the `HTTP_PROXY`/`HTTPS_PROXY`/`NO_PROXY`
    /// environment variables (default true).
    pub use_system_proxy: bool,
}

impl Default for Config {
    /// The defaults, ignoring the environment: OpenAI's URL, no key, `gpt-4o-mini` and
    /// `text-embedding-3-small`, 120 s total and 10 s connect timeouts, 4 retries backing off
    /// 1 s, 2 s, 4 s, 8 s (at most 30 s; `Retry-After` honoured up to 60 s), 4 requests in flight.
    fn default() -> Self {
        Config {
            base_url: DEFAULT_BASE_URL.to_string(),
            api_key: None,
            chat_model: DEFAULT_CHAT_MODEL.to_string(),
            embedding_model: DEFAULT_EMBEDDING_MODEL.to_string(),
            timeout: Duration::from_secs(120),
            connect_timeout: Duration::from_secs(10),
            max_retries: 4,
            max_concurrency: 4,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            use_system_proxy: true,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("chat_model", &self.chat_model)
            .field("embedding_model", &self.embedding_model)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_retries", &self.max_retries)
            .field("max_concurrency", &self.max_concurrency)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("use_system_proxy", &self.use_system_proxy)
            .finish()
    }
}

impl Config {
    /// The defaults overridden by the process environment: see [`Config::from_lookup`] for
    /// the variables read.
    pub fn from_env() -> Result<Config, Error> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// The defaults overridden by the variables that `lookup` returns (an empty or
    /// whitespace-only value counts as unset):
    ///
    /// | variable | setting |
    /// | --- | --- |
    /// | `MESA_LLM_BASE_URL`, else `OPENAI_BASE_URL` | `base_url` |
    /// | `MESA_LLM_API_KEY`, else `OPENAI_API_KEY` | `api_key` |
    /// | `MESA_LLM_CHAT_MODEL` | `chat_model` |
    /// | `MESA_LLM_EMBEDDING_MODEL` | `embedding_model` |
    /// | `MESA_LLM_TIMEOUT_SECS` | `timeout` (seconds, decimals allowed) |
    /// | `MESA_LLM_CONNECT_TIMEOUT_SECS` | `connect_timeout` |
    /// | `MESA_LLM_MAX_RETRIES` | `max_retries` |
    /// | `MESA_LLM_MAX_CONCURRENCY` | `max_concurrency` |
    ///
    /// Fails with [`Error::Config`] naming the variable when a number does not parse or is out
    /// of range. The URL itself is checked by [`Config::validate`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, Error> {
        let get = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut config = Config::default();
        if let Some(url) = get(ENV_BASE_URL).or_else(|| get(ENV_OPENAI_BASE_URL)) {
            config.base_url = url;
        }
        config.api_key = get(ENV_API_KEY).or_else(|| get(ENV_OPENAI_API_KEY));
        if let Some(model) = get(ENV_CHAT_MODEL) {
            config.chat_model = model;
        }
        if let Some(model) = get(ENV_EMBEDDING_MODEL) {
            config.embedding_model = model;
        }
        if let Some(v) = get(ENV_TIMEOUT_SECS) {
            config.timeout = parse_secs(ENV_TIMEOUT_SECS, &v)?;
        }
        if let Some(v) = get(ENV_CONNECT_TIMEOUT_SECS) {
            config.connect_timeout = parse_secs(ENV_CONNECT_TIMEOUT_SECS, &v)?;
        }
        if let Some(v) = get(ENV_MAX_RETRIES) {
            config.max_retries = v.parse::<u32>().map_err(|_| {
                Error::config(
                    ENV_MAX_RETRIES,
                    &v,
                    "expected a whole number of retries such as 4 (0 disables retrying)",
                )
            })?;
        }
        if let Some(v) = get(ENV_MAX_CONCURRENCY) {
            config.max_concurrency =
                v.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                    Error::config(
                        ENV_MAX_CONCURRENCY,
                        &v,
                        "expected a whole number of requests in flight, at least 1, such as 4",
                    )
                })?;
        }
        Ok(config)
    }

    /// Sets the base URL (the API root, e.g. `http://localhost:8000/v1`).
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets the API key, or removes it with `None`.
    pub fn with_api_key<S: Into<String>>(mut self, key: Option<S>) -> Self {
        self.api_key = key.map(Into::into);
        self
    }

    /// Sets the default chat model.
    pub fn with_chat_model(mut self, model: impl Into<String>) -> Self {
        self.chat_model = model.into();
        self
    }

    /// Sets the embedding model.
    pub fn with_embedding_model(mut self, model: impl Into<String>) -> Self {
        self.embedding_model = model.into();
        self
    }

    /// Sets the total timeout of one attempt.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the connect timeout.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the number of retries after the first attempt (0 disables retrying).
    pub fn with_max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sets the most requests in flight at once across threads sharing one client.
    pub fn with_max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = n;
        self
    }

    /// Sets the backoff schedule: `initial` before the first retry, doubling, at most `max`.
    pub fn with_backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.initial_backoff = initial;
        self.max_backoff = max;
        self
    }

    /// Sets the longest delay honoured from a `Retry-After` header.
    pub fn with_max_retry_after(mut self, max: Duration) -> Self {
        self.max_retry_after = max;
        self
    }

    /// Sets whether the proxy environment variables are used.
    pub fn with_system_proxy(mut self, use_it: bool) -> Self {
        self.use_system_proxy = use_it;
        self
    }

    /// The delay before retry number `retry` (0 for the first retry): `initial_backoff * 2^retry`,
    /// at most `max_backoff`. Deterministic, without jitter.
    pub fn backoff_delay(&self, retry: u32) -> Duration {
        let factor = 1u32.checked_shl(retry).unwrap_or(u32::MAX);
        self.initial_backoff
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.max_backoff)
    }

    /// The chat completions URL: the base URL without trailing slashes, then `/chat/completions`.
    pub fn chat_completions_url(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }

    /// The embeddings URL: the base URL without trailing slashes, then `/embeddings`.
    pub fn embeddings_url(&self) -> String {
        format!("{}/embeddings", self.base_url.trim_end_matches('/'))
    }

    /// Checks the settings: the base URL is an absolute `http` or `https` URL with a host and
    /// no query or fragment, the timeouts are positive, the concurrency is at least 1, and the
    /// model names are not empty.
    pub fn validate(&self) -> Result<(), Error> {
        let url = reqwest::Url::parse(&self.base_url).map_err(|e| {
            Error::config(
                "base_url",
                &self.base_url,
                format!(
                    "not a valid URL ({e}); use an absolute URL such as {DEFAULT_BASE_URL} \
                     or http://localhost:8000/v1 (set {ENV_BASE_URL})"
                ),
            )
        })?;
        if url.scheme() != "http" && url.scheme() != "https" {
            return Err(Error::config(
                "base_url",
                &self.base_url,
                format!(
                    "the scheme must be http or https, not {:?}; set {ENV_BASE_URL} to e.g. \
                     http://localhost:8000/v1",
                    url.scheme()
                ),
            ));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(Error::config(
                "base_url",
                &self.base_url,
                "the URL has no host; use e.g. http://localhost:8000/v1",
            ));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(Error::config(
                "base_url",
                &self.base_url,
                "the base URL must not have a query or fragment, since paths are appended to it; \
                 remove everything from `?` or `#`",
            ));
        }
        if self.timeout.is_zero() {
            return Err(Error::config(
                "timeout",
                "0s",
                format!("the timeout must be positive; set {ENV_TIMEOUT_SECS} to e.g. 120"),
            ));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::config(
                "connect_timeout",
                "0s",
                format!(
                    "the connect timeout must be positive; set {ENV_CONNECT_TIMEOUT_SECS} to e.g. 10"
                ),
            ));
        }
        if self.max_concurrency == 0 {
            return Err(Error::config(
                "max_concurrency",
                "0",
                format!("at least one request must be allowed in flight; set {ENV_MAX_CONCURRENCY} to e.g. 4"),
            ));
        }
        if self.chat_model.trim().is_empty() {
            return Err(Error::config(
                "chat_model",
                &self.chat_model,
                format!("the chat model name is empty; set {ENV_CHAT_MODEL}"),
            ));
        }
        if self.embedding_model.trim().is_empty() {
            return Err(Error::config(
                "embedding_model",
                &self.embedding_model,
                format!("the embedding model name is empty; set {ENV_EMBEDDING_MODEL}"),
            ));
        }
        Ok(())
    }
}

fn parse_secs(name: &str, value: &str) -> Result<Duration, Error> {
    value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 1e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            Error::config(
                name,
                value,
                "expected a positive number of seconds such as 30 or 2.5",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let c = Config::default().with_backoff(Duration::from_millis(100), Duration::from_secs(1));
        let got: Vec<u128> = (0..6).map(|r| c.backoff_delay(r).as_millis()).collect();
        assert_eq!(got, vec![100, 200, 400, 800, 1000, 1000]);
        assert_eq!(c.backoff_delay(40), Duration::from_secs(1));
        assert_eq!(c.backoff_delay(u32::MAX), Duration::from_secs(1));
    }

    #[test]
    fn urls_join_without_double_slash() {
        let c = Config::default().with_base_url("http://h:1/v1/");
        assert_eq!(c.chat_completions_url(), "http://h:1/v1/chat/completions");
        assert_eq!(c.embeddings_url(), "http://h:1/v1/embeddings");
    }
}
