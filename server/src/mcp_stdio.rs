//! The MCP server's stdio, guarded: every line the client sends is read
//! here first, and one that is not a JSON-RPC message gets its error reply
//! at once (the SDK drops such lines silently, so a client waiting on
//! them would hang).
//!
//! ```text
//! stdin ─lines─► guard ─JSON objects (and batches)─► rmcp ─replies─┐
//!                  │ not JSON: -32700; not an object: -32600;        ▼
//!                  └ over MAX_LINE_BYTES: -32600 ──────────────► writer ─lines─► stdout
//! ```

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// The longest line passed on: 64 MiB (a batch of large steps).
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// JSON-RPC's error reply to the message with `id` (null when none could
/// be read).
fn error_line(id: Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What to do with one line from the client: pass it on, or answer it.
fn check(line: &[u8]) -> Result<(), String> {
    if line.len() > MAX_LINE_BYTES {
        return Err(error_line(
            Value::Null,
            -32600,
            &format!(
                "a message of {} bytes is over the limit of {MAX_LINE_BYTES}; send less per call",
                line.len()
            ),
        ));
    }
    check_message(line, true)
}

/// Whether `bytes` is a JSON-RPC message the SDK can take (`Ok`), or the
/// error reply to send instead: -32700 for text that is not JSON, -32600
/// for JSON that is no message (not an object; no `method`, `result` or
/// `error`; an id that is not a string or a whole number; an array where
/// `batches` are not taken), with the message's id when it has a valid one.
pub(crate) fn check_message(bytes: &[u8], batches: bool) -> Result<(), String> {
    let invalid =
        |id: Value, why: &str| Err(error_line(id, -32600, &format!("invalid request: {why}")));
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(o)) => {
            let id = o.get("id").cloned().unwrap_or(Value::Null);
            let whole = |n: &serde_json::Number| n.is_i64() || n.is_u64();
            if !matches!(&id, Value::Null | Value::String(_)) && !id.as_number().is_some_and(whole)
            {
                return invalid(Value::Null, "a JSON-RPC id is a string or a whole number");
            }
            // A request or notification has a method, a response a result
            // or an error; anything else is answered here, with its id if
            // it has one (the SDK's own reply would carry none).
            if !["method", "result", "error"]
                .iter()
                .any(|k| o.contains_key(*k))
            {
                return invalid(id, "a JSON-RPC request needs a `method`");
            }
            Ok(())
        }
        Ok(Value::Array(_)) if batches => Ok(()),
        Ok(Value::Array(_)) => invalid(
            Value::Null,
            "send one JSON-RPC message per request (no batches)",
        ),
        Ok(_) => invalid(Value::Null, "a JSON-RPC message is a JSON object"),
        Err(e) => Err(error_line(
            Value::Null,
            -32700,
            &format!("parse error: {e}"),
        )),
    }
}

/// Reads the client's lines from `input`: messages go to `to_sdk`, answers
/// to bad lines to `replies`. Ends (closing `to_sdk`) at the input's end.
async fn guard(
    input: impl AsyncRead + Unpin,
    mut to_sdk: DuplexStream,
    replies: mpsc::UnboundedSender<String>,
) {
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        match check(text) {
            Ok(()) => {
                let sent = to_sdk
                    .write_all(text)
                    .await
                    .and(to_sdk.write_all(b"\n").await);
                if sent.is_err() {
                    break;
                }
            }
            Err(reply) => {
                if replies.send(reply).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_sdk.shutdown().await;
}

/// Writes whole lines to `output`: the SDK's replies and the guard's, one
/// at a time. Ends when the SDK closes its side.
async fn writer(
    from_sdk: DuplexStream,
    mut replies: mpsc::UnboundedReceiver<String>,
    mut output: impl AsyncWrite + Unpin,
) {
    let mut from_sdk = BufReader::new(from_sdk);
    // The SDK's line so far: a read cut short by a reply of the guard's
    // keeps its bytes here and goes on where it stopped.
    let mut sdk_line = Vec::new();
    loop {
        let line = tokio::select! {
            biased;
            Some(reply) = replies.recv() => reply.into_bytes(),
            read = from_sdk.read_until(b'\n', &mut sdk_line) => match read {
                Ok(n) if n > 0 => std::mem::take(&mut sdk_line),
                _ => break,
            },
        };
        if !write_line(&mut output, &line).await {
            return;
        }
    }
    // The SDK closed after the guard's last line: every answer the guard
    // made is queued already.
    while let Ok(reply) = replies.try_recv() {
        if !write_line(&mut output, reply.as_bytes()).await {
            return;
        }
    }
}

/// Writes `line` (ending it with a newline if it has none) and flushes;
/// whether the output took it.
async fn write_line(output: &mut (impl AsyncWrite + Unpin), line: &[u8]) -> bool {
    let end: &[u8] = if line.ends_with(b"\n") { b"" } else { b"\n" };
    output.write_all(line).await.is_ok()
        && output.write_all(end).await.is_ok()
        && output.flush().await.is_ok()
}

/// The transport for the SDK over `input` and `output`: the SDK reads and
/// writes its ends; two tasks guard the input and write the output. Await
/// the returned writer after the SDK is done, so that its last replies
/// reach `output`.
pub fn guarded(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> ((DuplexStream, DuplexStream), tokio::task::JoinHandle<()>) {
    let (to_sdk, sdk_in) = tokio::io::duplex(1 << 20);
    let (sdk_out, from_sdk) = tokio::io::duplex(1 << 20);
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(guard(input, to_sdk, tx));
    let written = tokio::spawn(writer(from_sdk, rx, output));
    ((sdk_in, sdk_out), written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_lines_get_json_rpc_errors_with_a_null_id() {
        for (line, code) in [
            (&b"not json at all"[..], -32700),
            (b"{\"jsonrpc\": \"2.0\", \"id\": 1", -32700),
            (b"42", -32600),
            (b"\"text\"", -32600),
        ] {
            let reply: Value = serde_json::from_str(&check(line).unwrap_err()).unwrap();
            assert_eq!(reply["error"]["code"], code, "{reply}");
            assert_eq!(reply["id"], Value::Null);
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        assert!(
            check(deep.as_bytes()).is_err(),
            "nesting past serde's limit"
        );
        assert!(check(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}").is_ok());
        // An id that is neither a string nor a number is no id.
        let odd: Value = serde_json::from_str(
            &check(b"{\"jsonrpc\": \"2.0\", \"id\": {\"a\": 1}, \"method\": \"ping\"}")
                .unwrap_err(),
        )
        .unwrap();
        assert_eq!(
            (odd["id"].clone(), odd["error"]["code"].as_i64()),
            (Value::Null, Some(-32600))
        );
        // Batches pass on stdio, and are refused where they are not taken.
        let batch = b"[{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}]";
        assert!(check(batch).is_ok());
        assert!(check_message(batch, false).is_err());
        let no_method: Value =
            serde_json::from_str(&check(b"{\"jsonrpc\": \"2.0\", \"id\": 4}").unwrap_err())
                .unwrap();
        assert_eq!(
            (
                no_method["id"].as_i64(),
                no_method["error"]["code"].as_i64()
            ),
            (Some(4), Some(-32600))
        );
    }
}
