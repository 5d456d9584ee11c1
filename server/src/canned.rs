//! JSON bodies for the errors hyper answers itself. A request whose head
//! cannot be read (a malformed request line or header: 400; too many or
//! too large headers: 431; a URI past hyper's limit: 414) never reaches
//! the router: hyper writes a bare head with `content-length: 0` and
//! closes. [`JsonErrors`] sits between hyper and the socket and gives
//! those heads the body every other error has, `{"error": {"code",
//! "message"}}`.
//!
//! ```text
//! hyper ─poll_write(head)─► JsonErrors ─ a bare 400/414/431 head? ─ yes ─► head + JSON body ─► socket
//!                                                               └ no ──► unchanged ─► socket
//! ```
//!
//! The router's own errors always carry a JSON body (`routes::jsonify`),
//! so a head with one of these statuses and `content-length: 0` is
//! hyper's. Writes are not vectored through the wrapper, so hyper hands
//! over each head whole.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection whose bare error heads from hyper get JSON bodies.
#[derive(Debug)]
pub struct JsonErrors<S> {
    inner: S,
    /// The replacement being written: its bytes, how many are out, and
    /// the length of hyper's head it stands for.
    replacing: Option<(Vec<u8>, usize, usize)>,
}

impl<S> JsonErrors<S> {
    /// Wraps a connection.
    pub fn new(inner: S) -> JsonErrors<S> {
        JsonErrors {
            inner,
            replacing: None,
        }
    }
}

/// The longest head hyper writes for a parse error (its status line,
/// `connection`, `content-length` and `date`).
const MAX_CANNED: usize = 256;

/// The code and message for a bare head's status, if it is one hyper
/// writes for a request it could not read.
fn explain(status: &[u8]) -> Option<(&'static str, &'static str)> {
    Some(match status {
        b"400" => (
            "bad-request",
            "the request could not be read as HTTP/1.1: its request line or a header is malformed",
        ),
        b"414" => (
            "uri-too-long",
            "the request's URI is too long; episode ids are at most 1,024 bytes",
        ),
        b"431" => (
            "headers-too-large",
            "the request's headers are too many (at most 100) or too large (about 400 KB in all); send fewer or smaller ones",
        ),
        _ => return None,
    })
}

/// `head` with a JSON body, if it is a bare error head from hyper.
fn with_body(head: &[u8]) -> Option<Vec<u8>> {
    const EMPTY: &[u8] = b"\r\ncontent-length: 0\r\n";
    if head.len() > MAX_CANNED || !head.starts_with(b"HTTP/1.1 ") || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let (code, message) = explain(head.get(9..12)?)?;
    let at = head.windows(EMPTY.len()).position(|w| w == EMPTY)?;
    let body = serde_json::json!({ "error": { "code": code, "message": message } }).to_string();
    let mut out = Vec::with_capacity(head.len() + body.len() + 64);
    out.extend_from_slice(&head[..at]);
    out.extend_from_slice(b"\r\ncontent-type: application/json");
    out.extend_from_slice(format!("\r\ncontent-length: {}\r\n", body.len()).as_bytes());
    out.extend_from_slice(&head[at + EMPTY.len()..]);
    out.extend_from_slice(body.as_bytes());
    Some(out)
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonErrors<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonErrors<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.replacing.is_none() {
            match with_body(buf) {
                Some(out) => this.replacing = Some((out, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        // Until the whole replacement is out, hyper's head counts as
        // unwritten (it calls again with it).
        while let Some((out, sent, stands_for)) = &mut this.replacing {
            if *sent == out.len() {
                let n = *stands_for;
                this.replacing = None;
                return Poll::Ready(Ok(n));
            }
            match ready!(Pin::new(&mut this.inner).poll_write(cx, &out[*sent..])) {
                Ok(0) => {
                    this.replacing = None;
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => *sent += n,
                Err(e) => {
                    this.replacing = None;
                    return Poll::Ready(Err(e));
                }
            }
        }
        Poll::Ready(Ok(0))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_bare_error_heads_get_a_body() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\nconnection: close\r\ncontent-length: 0\r\ndate: Mon, 07 Dec 2026 00:05:55 GMT\r\n\r\n";
        let out = String::from_utf8(with_body(head).expect("replaced")).unwrap();
        let (top, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(top.starts_with("HTTP/1.1 431 "), "{top}");
        assert!(top.contains("content-type: application/json"), "{top}");
        assert!(
            top.contains(&format!("content-length: {}", body.len())),
            "{top}"
        );
        assert!(top.contains("date: Mon, 07 Dec 2026"), "{top}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "headers-too-large");
        // Left alone: a body already there, another status, a body's bytes.
        let json_404 = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";
        let with_len = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 51\r\n\r\n";
        for other in [&json_404[..], &with_len[..], b"{\"error\": 1}\r\n\r\n"] {
            assert_eq!(with_body(other), None, "{}", String::from_utf8_lossy(other));
        }
    }
}
