//! Chat completions: messages, options, the reply, and reading the reply's JSON.

use serde::Serialize;
use serde_json::{json, Value};

use crate::error::excerpt;
use crate::Error;

/// Who wrote a [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The user's turn.
    User,
    /// A previous reply of the model.
    Assistant,
}

/// One message of a chat conversation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text.
    pub content: String,
}

impl Message {
    /// A message with the given role and text.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::new(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::new(Role::User, content)
    }

    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::new(Role::Assistant, content)
    }
}

/// Per-call options of [`Client::chat`](crate::Client::chat). Unset options are not sent, so
/// the server's defaults apply.
///
/// ```
/// let options = mesa_llm::ChatOptions::default().temperature(0.0).max_tokens(256).seed(7);
/// assert_eq!(options.max_tokens, Some(256));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ChatOptions {
    /// The model, instead of [`Config::chat_model`](crate::Config::chat_model).
    pub model: Option<String>,
    /// Sampling temperature (`temperature`), typically 0 to 2.
    pub temperature: Option<f32>,
    /// Most tokens to generate (`max_tokens`).
    pub max_tokens: Option<u32>,
    /// Sampling seed (`seed`), for servers that support reproducible sampling.
    pub seed: Option<u64>,
    /// Sequences that stop generation (`stop`); not sent when empty.
    pub stop: Vec<String>,
    /// Ask for a JSON object reply (`response_format: {"type": "json_object"}`).
    pub json_object: bool,
}

impl ChatOptions {
    /// Sets the model for this call.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets the temperature.
    pub fn temperature(mut self, t: f32) -> Self {
        self.temperature = Some(t);
        self
    }

    /// Sets the most tokens to generate.
    pub fn max_tokens(mut self, n: u32) -> Self {
        self.max_tokens = Some(n);
        self
    }

    /// Sets the sampling seed.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Adds a stop sequence.
    pub fn stop(mut self, s: impl Into<String>) -> Self {
        self.stop.push(s.into());
        self
    }

    /// Asks for a JSON object reply.
    pub fn json_object(mut self, on: bool) -> Self {
        self.json_object = on;
        self
    }
}

/// Token counts reported by the server (`usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Usage {
    /// Tokens of the prompt (`prompt_tokens`).
    pub prompt_tokens: u64,
    /// Tokens generated (`completion_tokens`).
    pub completion_tokens: u64,
    /// Their sum as reported (`total_tokens`).
    pub total_tokens: u64,
}

/// The reply of [`Client::chat`](crate::Client::chat): the first choice's text and metadata.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ChatReply {
    /// The text of `choices[0].message.content`.
    pub content: String,
    /// `choices[0].finish_reason` (`stop`, `length`, ...), when the server gave one.
    pub finish_reason: Option<String>,
    /// The model that answered (`model`), when the server said.
    pub model: Option<String>,
    /// Token counts (`usage`), when the server gave them all.
    pub usage: Option<Usage>,
}

/// The JSON body of a chat completions request.
pub(crate) fn request_body(
    model: &str,
    messages: &[Message],
    options: &ChatOptions,
) -> Result<Value, Error> {
    if messages.is_empty() {
        return Err(Error::config(
            "messages",
            "[]",
            "a chat request needs at least one message; pass e.g. [Message::user(..)]",
        ));
    }
    let mut body = json!({ "model": model, "messages": messages });
    if let Some(t) = options.temperature {
        if !t.is_finite() || t < 0.0 {
            return Err(Error::config(
                "ChatOptions::temperature",
                t.to_string(),
                "the temperature must be a finite number, 0 or more (usually 0 to 2)",
            ));
        }
        body["temperature"] = json!(t);
    }
    if let Some(n) = options.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if let Some(seed) = options.seed {
        body["seed"] = json!(seed);
    }
    if !options.stop.is_empty() {
        body["stop"] = json!(options.stop);
    }
    if options.json_object {
        body["response_format"] = json!({ "type": "json_object" });
    }
    Ok(body)
}

/// Reads a chat completions reply body.
pub(crate) fn parse_reply(url: &str, text: &str) -> Result<ChatReply, Error> {
    let malformed = |field: &str, problem: String| Error::MalformedReply {
        url: url.to_string(),
        field: field.to_string(),
        problem,
        body_excerpt: excerpt(text),
    };
    let root: Value = serde_json::from_str(text)
        .map_err(|e| malformed("(body)", format!("is not JSON ({e})")))?;
    if !root.is_object() {
        return Err(malformed(
            "(body)",
            format!("is a JSON {}, not an object", kind(&root)),
        ));
    }
    let choices = match root.get("choices") {
        Some(Value::Array(a)) => a,
        Some(other) => {
            return Err(malformed(
                "choices",
                format!("is a JSON {}, not an array", kind(other)),
            ))
        }
        None => return Err(malformed("choices", "is missing".into())),
    };
    let first = choices
        .first()
        .ok_or_else(|| malformed("choices[0]", "is missing (`choices` is empty)".into()))?;
    let message = first
        .get("message")
        .ok_or_else(|| malformed("choices[0].message", "is missing".into()))?;
    let content = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) => {
            let why = match message.get("refusal").and_then(Value::as_str) {
                Some(r) => format!("is null; the model refused: {}", excerpt(r)),
                None => "is null (the model returned no text, e.g. only tool calls)".to_string(),
            };
            return Err(malformed("choices[0].message.content", why));
        }
        Some(other) => {
            return Err(malformed(
                "choices[0].message.content",
                format!("is a JSON {}, not a string", kind(other)),
            ))
        }
        None => return Err(malformed("choices[0].message.content", "is missing".into())),
    };
    let finish_reason = first
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    let model = root
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    let usage = root.get("usage").and_then(|u| {
        Some(Usage {
            prompt_tokens: u.get("prompt_tokens")?.as_u64()?,
            completion_tokens: u.get("completion_tokens")?.as_u64()?,
            total_tokens: u.get("total_tokens")?.as_u64()?,
        })
    });
    Ok(ChatReply {
        content,
        finish_reason,
        model,
        usage,
    })
}

/// The JSON kind of a value, for messages.
pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_has_only_set_options() {
        let b = request_body("m", &[Message::user("hi")], &ChatOptions::default()).unwrap();
        assert_eq!(
            b,
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        );
        let o = ChatOptions::default()
            .temperature(0.5)
            .max_tokens(9)
            .seed(3)
            .stop("\n")
            .json_object(true);
        let b = request_body("m", &[Message::system("s")], &o).unwrap();
        assert_eq!(b["temperature"], json!(0.5));
        assert_eq!(b["max_tokens"], json!(9));
        assert_eq!(b["seed"], json!(3));
        assert_eq!(b["stop"], json!(["\n"]));
        assert_eq!(b["response_format"], json!({"type": "json_object"}));
    }

    #[test]
    fn bad_requests_are_refused_before_sending() {
        assert!(matches!(
            request_body("m", &[], &ChatOptions::default()),
            Err(Error::Config { .. })
        ));
        let o = ChatOptions::default().temperature(f32::NAN);
        assert!(matches!(
            request_body("m", &[Message::user("x")], &o),
            Err(Error::Config { .. })
        ));
    }

    fn field_of(text: &str) -> String {
        match parse_reply("u", text) {
            Err(Error::MalformedReply { field, .. }) => field,
            other => panic!("expected MalformedReply, got {other:?}"),
        }
    }

    #[test]
    fn malformed_replies_name_the_field() {
        assert_eq!(field_of("nope"), "(body)");
        assert_eq!(field_of("[1]"), "(body)");
        assert_eq!(field_of("{}"), "choices");
        assert_eq!(field_of(r#"{"choices": {}}"#), "choices");
        assert_eq!(field_of(r#"{"choices": []}"#), "choices[0]");
        assert_eq!(field_of(r#"{"choices": [{}]}"#), "choices[0].message");
        assert_eq!(
            field_of(r#"{"choices": [{"message": {}}]}"#),
            "choices[0].message.content"
        );
        assert_eq!(
            field_of(r#"{"choices": [{"message": {"content": null}}]}"#),
            "choices[0].message.content"
        );
        assert_eq!(
            field_of(r#"{"choices": [{"message": {"content": 3}}]}"#),
            "choices[0].message.content"
        );
    }

    #[test]
    fn lenient_about_optional_metadata() {
        let r = parse_reply(
            "u",
            r#"{"choices": [{"message": {"content": "ok"}, "finish_reason": 1}], "usage": "x"}"#,
        )
        .unwrap();
        assert_eq!(r.content, "ok");
        assert_eq!(r.finish_reason, None);
        assert_eq!(r.usage, None);
    }
}
