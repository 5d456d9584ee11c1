//! The error type of every fallible operation in this crate.

use std::time::Duration;

/// Longest body excerpt (in characters) kept in an [`Error`].
pub(crate) const EXCERPT_CHARS: usize = 200;

/// Everything that can go wrong when talking to an OpenAI-compatible endpoint.
///
/// Every message names what failed, where (the URL, the field or the setting) and what to do
/// about it. New variants may be added, so match with a wildcard arm.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a non-success HTTP status (after all retries, for the statuses
    /// that are retried: 429 and 5xx).
    #[error(
        "HTTP {status} from POST {url} (after {attempts} attempt(s)): {body_excerpt:?}; {}",
        status_hint(*.status)
    )]
    Http {
        /// The URL that was requested.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the reply body (or of its `error.message`, when the body is an
        /// OpenAI-style error object), control characters replaced, at most 200 characters.
        body_excerpt: String,
        /// How many requests were sent, the first one included.
        attempts: u32,
    },

    /// No complete reply arrived within the total timeout, on every attempt.
    #[error(
        "POST {url} timed out: no complete reply within {limit:?} on any of {attempts} attempt(s); \
         raise the timeout (MESA_LLM_TIMEOUT_SECS or Config::with_timeout), lower max_tokens, \
         or check whether the server is overloaded"
    )]
    Timeout {
        /// The URL that was requested.
        url: String,
        /// The total timeout of one attempt.
        limit: Duration,
        /// How many requests were sent, the first one included.
        attempts: u32,
    },

    /// The connection to the server could not be established (refused, unresolvable host,
    /// TLS failure, connect timeout), on every attempt.
    #[error(
        "cannot connect to {url} (after {attempts} attempt(s)): {detail}; check that the server \
         is running and that the base URL (MESA_LLM_BASE_URL or OPENAI_BASE_URL) is right"
    )]
    Connect {
        /// The URL that was requested.
        url: String,
        /// What the network layer reported.
        detail: String,
        /// How many requests were sent, the first one included.
        attempts: u32,
    },

    /// The connection failed after it was established (reset, closed early, unreadable body),
    /// on every attempt.
    #[error(
        "the exchange with {url} failed (after {attempts} attempt(s)): {detail}; check the \
         server's logs and any proxy between here and the server"
    )]
    Transport {
        /// The URL that was requested.
        url: String,
        /// What the network layer reported.
        detail: String,
        /// How many requests were sent, the first one included.
        attempts: u32,
    },

    /// A successful reply that is not what the OpenAI API specifies: not JSON, a missing or
    /// mistyped field, the wrong number of items, unequal embedding sizes, non-finite numbers.
    #[error(
        "malformed reply from {url}: `{field}` {problem}; check that the endpoint is \
         OpenAI-compatible and that the model supports this request (reply starts: {body_excerpt:?})"
    )]
    MalformedReply {
        /// The URL that was requested.
        url: String,
        /// The JSON path of the offending field, e.g. `choices[0].message.content` or
        /// `data[2].embedding`; `(body)` when the body is not JSON at all.
        field: String,
        /// What is wrong with it.
        problem: String,
        /// The start of the reply body, control characters replaced, at most 200 characters.
        body_excerpt: String,
    },

    /// A setting or a request option is invalid (a bad base URL, a zero timeout, a non-finite
    /// temperature, an environment variable that does not parse).
    #[error("invalid LLM setting {setting} = {value:?}: {reason}")]
    Config {
        /// The setting: an environment variable name or a `Config`/`ChatOptions` field.
        setting: String,
        /// The offending value (an API key is never shown).
        value: String,
        /// Why it is invalid and what to use instead.
        reason: String,
    },
}

impl Error {
    /// The HTTP status, for [`Error::Http`].
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How many requests were sent before this error, when a request was sent at all.
    pub fn attempts(&self) -> Option<u32> {
        match self {
            Error::Http { attempts, .. }
            | Error::Timeout { attempts, .. }
            | Error::Connect { attempts, .. }
            | Error::Transport { attempts, .. } => Some(*attempts),
            _ => None,
        }
    }

    /// Whether the client retries a request that failed this way: connection failures,
    /// timeouts, HTTP 429 and 5xx. Other 4xx, malformed replies and bad settings are not retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Http { status, .. } => is_retryable_status(*status),
            Error::Timeout { .. } | Error::Connect { .. } | Error::Transport { .. } => true,
            _ => false,
        }
    }

    /// The same error with its attempt count set to `n`.
    pub(crate) fn with_attempts(mut self, n: u32) -> Self {
        match &mut self {
            Error::Http { attempts, .. }
            | Error::Timeout { attempts, .. }
            | Error::Connect { attempts, .. }
            | Error::Transport { attempts, .. } => *attempts = n,
            _ => {}
        }
        self
    }

    pub(crate) fn config(
        setting: impl Into<String>,
        value: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Error::Config {
            setting: setting.into(),
            value: value.into(),
            reason: reason.into(),
        }
    }
}

/// Whether an HTTP status is retried: 429 and every 5xx.
pub(crate) fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..600).contains(&status)
}

fn status_hint(status: u16) -> &'static str {
    match status {
        300..=399 => {
            "the server redirected; set the base URL to the final location (redirects are not followed for POST)"
        }
        400 => "the server rejected the request; check the model name and the request options",
        401 => "authentication failed; set MESA_LLM_API_KEY (or OPENAI_API_KEY) to a valid key",
        403 => "access denied; check that the API key may use this model",
        404 => {
            "not found; check the base URL (it usually ends in /v1) and that the model exists on this server"
        }
        408 | 413 => "the request was too large or too slow; send fewer or shorter inputs",
        422 => "the server could not process the request; check the model name and options",
        429 => {
            "rate limited even after retrying; lower the concurrency (MESA_LLM_MAX_CONCURRENCY) or try later"
        }
        500..=599 => "the server failed even after retrying; check its logs or try later",
        _ => "check the request and the server's documentation",
    }
}

/// The first [`EXCERPT_CHARS`] characters of `text`, control characters replaced by spaces,
/// with an ellipsis when cut.
pub(crate) fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n == EXCERPT_CHARS {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { ' ' } else { c });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpt_cuts_and_cleans() {
        assert_eq!(excerpt("a\nb\tc"), "a b c");
        let long = "é".repeat(500);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt(""), "");
    }

    #[test]
    fn retryable_statuses() {
        for s in [429, 500, 502, 503, 599] {
            assert!(is_retryable_status(s), "{s}");
        }
        for s in [200, 400, 401, 404, 422, 600] {
            assert!(!is_retryable_status(s), "{s}");
        }
    }

    #[test]
    fn messages_say_where_and_what_to_do() {
        let e = Error::Http {
            url: "http://x/v1/chat/completions".into(),
            status: 401,
            body_excerpt: "bad key".into(),
            attempts: 1,
        };
        let m = e.to_string();
        assert!(m.contains("HTTP 401"), "{m}");
        assert!(m.contains("http://x/v1/chat/completions"), "{m}");
        assert!(m.contains("MESA_LLM_API_KEY"), "{m}");
        assert_eq!(e.status(), Some(401));
        assert!(!e.is_retryable());
    }
}
