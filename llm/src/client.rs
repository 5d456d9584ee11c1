//! The client: one HTTP attempt, the retry loop, and the public calls.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use reqwest::blocking::Client as HttpClient;
use reqwest::header::{HeaderMap, ACCEPT, CONTENT_TYPE, RETRY_AFTER};

use crate::chat::{self, ChatOptions, ChatReply, Message};
use crate::embed;
use crate::error::{excerpt, is_retryable_status};
use crate::limit::{map_bounded, ConcurrencyLimit};
use crate::{Config, Error};

/// A blocking client for an OpenAI-compatible endpoint.
///
/// Cheap to clone; clones share the connection pool and the concurrency bound, so any number
/// of threads can call it and together keep at most
/// [`Config::max_concurrency`] requests in flight. Must not be created or dropped inside an
/// async runtime (it runs its own).
#[derive(Clone, Debug)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: Config,
    http: HttpClient,
    limit: ConcurrencyLimit,
    chat_url: String,
    embeddings_url: String,
}

/// Why one attempt failed, and how long the server asked us to wait.
struct Failure {
    error: Error,
    retry_after: Option<Duration>,
}

impl Client {
    /// A client with these settings, after [`Config::validate`].
    pub fn new(config: Config) -> Result<Client, Error> {
        config.validate()?;
        let mut builder = HttpClient::builder()
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("mesa-llm/", env!("CARGO_PKG_VERSION")));
        if !config.use_system_proxy {
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|e| {
            Error::config(
                "http client",
                "",
                format!(
                    "the HTTP client could not be built ({}); check the TLS setup of this machine",
                    chain(&e)
                ),
            )
        })?;
        Ok(Client {
            inner: Arc::new(Inner {
                limit: ConcurrencyLimit::new(config.max_concurrency),
                chat_url: config.chat_completions_url(),
                embeddings_url: config.embeddings_url(),
                config,
                http,
            }),
        })
    }

    /// A client configured by [`Config::from_env`].
    pub fn from_env() -> Result<Client, Error> {
        Client::new(Config::from_env()?)
    }

    /// The settings of this client.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// This client when its default chat model is `model`, else a client
    /// with its settings and that chat model. A model is a client setting:
    /// a client for another one has its own connection pool and
    /// concurrency bound.
    pub fn for_chat_model(&self, model: &str) -> Result<Client, Error> {
        if self.config().chat_model == model {
            return Ok(self.clone());
        }
        Client::new(self.config().clone().with_chat_model(model))
    }

    /// [`Client::for_chat_model`] for the embedding model.
    pub fn for_embedding_model(&self, model: &str) -> Result<Client, Error> {
        if self.config().embedding_model == model {
            return Ok(self.clone());
        }
        Client::new(self.config().clone().with_embedding_model(model))
    }

    /// The number of requests of this client (and its clones) in flight right now.
    pub fn in_flight(&self) -> usize {
        self.inner.limit.in_flight()
    }

    /// Sends `messages` to `POST {base}/chat/completions` and returns the first choice.
    ///
    /// Uses `options.model`, else [`Config::chat_model`]. Retries as described on the crate
    /// page. Fails with [`Error::MalformedReply`] when the reply lacks a string
    /// `choices[0].message.content`.
    pub fn chat(&self, messages: &[Message], options: &ChatOptions) -> Result<ChatReply, Error> {
        let model = options
            .model
            .as_deref()
            .unwrap_or(&self.inner.config.chat_model);
        let body = chat::request_body(model, messages, options)?;
        let url = &self.inner.chat_url;
        let text = self.post_json(url, &body)?;
        chat::parse_reply(url, &text)
    }

    /// Embeds `texts` with one `POST {base}/embeddings` (the whole slice as one batch) and
    /// returns one vector per text, in the order of `texts`.
    ///
    /// The reply's items are put in order by their `index` field. Fails with
    /// [`Error::MalformedReply`] when the number of vectors differs from the number of texts,
    /// when a `data[i].embedding` is missing or not an array of finite numbers, or when the
    /// vectors differ in size. An empty slice returns an empty vector without a request.
    pub fn embed<S: AsRef<str>>(&self, texts: &[S]) -> Result<Vec<Vec<f32>>, Error> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let body = embed::request_body(&self.inner.config.embedding_model, texts);
        let url = &self.inner.embeddings_url;
        let text = self.post_json(url, &body)?;
        embed::parse_reply(url, &text, texts.len())
    }

    /// Embeds `texts` in batches of at most `batch_size` (0 counts as 1), sending up to
    /// [`Config::max_concurrency`] batches at once, and returns one vector per text in order.
    /// Fails with the first failing batch's error (in input order); all vectors have one size.
    pub fn embed_batched<S: AsRef<str> + Sync>(
        &self,
        texts: &[S],
        batch_size: usize,
    ) -> Result<Vec<Vec<f32>>, Error> {
        let batches: Vec<&[S]> = texts.chunks(batch_size.max(1)).collect();
        let results = self.map_concurrent(&batches, |batch| self.embed(batch));
        let mut out = Vec::with_capacity(texts.len());
        for result in results {
            out.extend(result?);
        }
        if let Some(first) = out.first() {
            let dim = first.len();
            if let Some(i) = out.iter().position(|v| v.len() != dim) {
                return Err(Error::MalformedReply {
                    url: self.inner.embeddings_url.clone(),
                    field: format!("data[{}].embedding", i % batch_size.max(1)),
                    problem: format!(
                        "has {} dimensions in batch {} where batch 0 has {dim}; all embeddings \
                         of one model must have the same size",
                        out[i].len(),
                        i / batch_size.max(1)
                    ),
                    body_excerpt: String::new(),
                });
            }
        }
        Ok(out)
    }

    /// Runs [`Client::chat`] on every conversation with the same options, up to
    /// [`Config::max_concurrency`] at once, and returns the results in order.
    pub fn chat_many(
        &self,
        conversations: &[Vec<Message>],
        options: &ChatOptions,
    ) -> Vec<Result<ChatReply, Error>> {
        self.map_concurrent(conversations, |messages| self.chat(messages, options))
    }

    /// Applies `f` to every item on [`Config::max_concurrency`] threads and returns the
    /// results in the order of `items` (see [`map_bounded`]). Use it for batches of requests:
    /// `client.map_concurrent(&prompts, |p| client.chat(p, &options))`.
    pub fn map_concurrent<T, R, F>(&self, items: &[T], f: F) -> Vec<R>
    where
        T: Sync,
        R: Send,
        F: Fn(&T) -> R + Sync,
    {
        map_bounded(items, self.inner.config.max_concurrency, f)
    }

    /// POSTs `body` to `url` with retries, and returns the body of the first successful reply.
    fn post_json(&self, url: &str, body: &serde_json::Value) -> Result<String, Error> {
        let payload = serde_json::to_vec(body).map_err(|e| {
            Error::config(
                "request",
                "",
                format!("the request could not be encoded as JSON ({e})"),
            )
        })?;
        let config = &self.inner.config;
        let mut attempt: u32 = 0;
        loop {
            attempt = attempt.saturating_add(1);
            let outcome = {
                let _permit = self.inner.limit.acquire();
                self.attempt(url, &payload)
            };
            let failure = match outcome {
                Ok(text) => return Ok(text),
                Err(failure) => failure,
            };
            let retries_done = attempt - 1;
            if !failure.error.is_retryable() || retries_done >= config.max_retries {
                return Err(failure.error.with_attempts(attempt));
            }
            let delay = match failure.retry_after {
                Some(asked) => asked.min(config.max_retry_after),
                None => config.backoff_delay(retries_done),
            };
            std::thread::sleep(delay);
        }
    }

    /// One request and its reply body.
    fn attempt(&self, url: &str, payload: &[u8]) -> Result<String, Failure> {
        let inner = &self.inner;
        let mut request = inner
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(payload.to_vec());
        if let Some(key) = inner.config.api_key.as_deref().filter(|k| !k.is_empty()) {
            request = request.bearer_auth(key);
        }
        let response = request
            .send()
            .map_err(|e| self.transport_failure(url, &e))?;
        let status = response.status().as_u16();
        let retry_after = if is_retryable_status(status) {
            retry_after(response.headers())
        } else {
            None
        };
        let success = response.status().is_success();
        let text = response.text();
        if success {
            return text.map_err(|e| self.transport_failure(url, &e));
        }
        let body_excerpt = match text {
            Ok(text) => error_excerpt(&text),
            Err(e) => format!("<the body could not be read: {}>", chain(&e)),
        };
        Err(Failure {
            error: Error::Http {
                url: url.to_string(),
                status,
                body_excerpt,
                attempts: 1,
            },
            retry_after,
        })
    }

    fn transport_failure(&self, url: &str, e: &reqwest::Error) -> Failure {
        let url = url.to_string();
        let error = if e.is_connect() {
            Error::Connect {
                url,
                detail: chain(e),
                attempts: 1,
            }
        } else if e.is_timeout() {
            Error::Timeout {
                url,
                limit: self.inner.config.timeout,
                attempts: 1,
            }
        } else {
            Error::Transport {
                url,
                detail: chain(e),
                attempts: 1,
            }
        };
        Failure {
            error,
            retry_after: None,
        }
    }
}

/// An error and its sources, joined by `: ` (reqwest's own message is generic).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The excerpt of an error body: an OpenAI-style `error.message` when there is one, else the
/// body's start.
fn error_excerpt(text: &str) -> String {
    let message = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| match v.get("error") {
            Some(serde_json::Value::String(s)) => Some(s.clone()),
            Some(e) => e.get("message")?.as_str().map(str::to_string),
            None => None,
        });
    excerpt(message.as_deref().unwrap_or(text))
}

/// The delay a reply asks for: `retry-after-ms` (milliseconds, as OpenAI sends), else
/// `Retry-After` as seconds (decimals tolerated) or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64((ms / 1000.0).min(1e9)));
        }
    }
    let value = header(RETRY_AFTER.as_str())?;
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs.min(1e9)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(retry_after(&headers(&[])), None);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "3")])),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "0.5")])),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        let past = httpdate::fmt_http_date(SystemTime::UNIX_EPOCH);
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)])),
            Some(Duration::ZERO)
        );
        let future = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(100));
        let d = retry_after(&headers(&[("retry-after", &future)])).unwrap();
        assert!(
            d > Duration::from_secs(90) && d <= Duration::from_secs(100),
            "{d:?}"
        );
    }

    #[test]
    fn error_excerpt_prefers_openai_message() {
        assert_eq!(
            error_excerpt(r#"{"error": {"message": "bad model", "type": "x"}}"#),
            "bad model"
        );
        assert_eq!(error_excerpt(r#"{"error": "nope"}"#), "nope");
        assert_eq!(error_excerpt("plain\ntext"), "plain text");
    }
}
