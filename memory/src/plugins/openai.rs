//! V through an OpenAI-compatible `POST /embeddings` endpoint.
//!
//! The dimension is the endpoint's: [`OpenAiEmbedder::connect`] sends one
//! probe text and keeps the size of the vector it gets back, because a
//! store needs the dimension before the first step is embedded. Every later
//! reply must have that size, else the call fails with
//! [`PluginError::BadOutput`]. Texts go out in batches
//! ([`mesa_llm::Client::embed_batched`], 64 per request, up to the client's
//! concurrency at once). An empty (or all-whitespace) text is not sent
//! (endpoints reject empty inputs) and gets a zero vector; a text is cut at
//! 8,000 bytes, which keeps it under the usual 8,191-token input limit
//! (a token is at least one byte).

use super::{llm_failure, SetupError};
use crate::structures::{Embedder, PluginError};
use crate::text::cut;

/// Texts per request.
const BATCH: usize = 64;
/// Bytes of a text that are sent.
const INPUT_BYTES: usize = 8000;
/// The text of the dimension probe.
const PROBE: &str = "dimension probe";

/// An embedder backed by an OpenAI-compatible endpoint (see the module docs).
#[derive(Debug, Clone)]
pub struct OpenAiEmbedder {
    client: mesa_llm::Client,
    model: String,
    dim: usize,
}

impl OpenAiEmbedder {
    /// An embedder using the client's embedding model; sends the probe.
    pub fn connect(client: mesa_llm::Client) -> Result<OpenAiEmbedder, SetupError> {
        let model = client.config().embedding_model.clone();
        OpenAiEmbedder::connect_model(client, &model)
    }

    /// An embedder using `model` instead of the client's embedding model;
    /// sends the probe.
    pub fn connect_model(
        client: mesa_llm::Client,
        model: &str,
    ) -> Result<OpenAiEmbedder, SetupError> {
        let client = client.for_embedding_model(model)?;
        let probe = client.embed(&[PROBE])?;
        let dim = probe.first().map_or(0, Vec::len);
        let e = OpenAiEmbedder {
            client,
            model: model.to_string(),
            dim,
        };
        if dim == 0 {
            return Err(e.bad("the probe embedding is empty".into()).into());
        }
        Ok(e)
    }

    /// The embedding model.
    pub fn model(&self) -> &str {
        &self.model
    }

    fn bad(&self, message: String) -> PluginError {
        PluginError::BadOutput {
            plugin: self.name(),
            message,
        }
    }
}

impl Embedder for OpenAiEmbedder {
    /// `openai:MODEL:DIM`.
    fn name(&self) -> String {
        format!("openai:{}:{}", self.model, self.dim)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError> {
        let sent: Vec<(usize, &str)> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| (i, cut(t, INPUT_BYTES).0))
            .filter(|(_, t)| !t.trim().is_empty())
            .collect();
        let inputs: Vec<&str> = sent.iter().map(|(_, t)| *t).collect();
        let vectors = self.client.embed_batched(&inputs, BATCH).map_err(|e| {
            llm_failure(
                self.name(),
                &format!("embedding {} texts", inputs.len()),
                &e,
            )
        })?;
        if vectors.len() != inputs.len() {
            return Err(self.bad(format!(
                "{} vectors for {} texts",
                vectors.len(),
                inputs.len()
            )));
        }
        let mut out = vec![vec![0.0; self.dim]; texts.len()];
        for ((i, _), v) in sent.iter().zip(vectors) {
            if v.len() != self.dim {
                return Err(self.bad(format!(
                    "a vector of dimension {} for text {i}, but the endpoint's first reply had {}",
                    v.len(),
                    self.dim
                )));
            }
            out[*i] = v;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{embeddings_reply, start, Reply};
    use super::*;
    use serde_json::Value;

    /// A vector per input: `[len(text), 1, 0, ...]` of `dim` numbers.
    fn vectors_for(body: &Value, dim: usize) -> Vec<Vec<f32>> {
        body["input"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        let mut v = vec![0.0; dim];
                        v[0] = t.as_str().map_or(0, str::len) as f32;
                        v[1] = 1.0;
                        v
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn dimension_from_the_first_reply_and_order_kept() {
        let server = start(|req, _| embeddings_reply(&vectors_for(&req.json(), 5)));
        let client =
            mesa_llm::Client::new(server.config().with_embedding_model("emb-test")).unwrap();
        let e = OpenAiEmbedder::connect(client).unwrap();
        assert_eq!(e.dim(), 5);
        assert_eq!(e.name(), "openai:emb-test:5");
        let texts: Vec<String> = (0..150).map(|i| "x".repeat(i % 7 + 1)).collect();
        let mut refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        refs[3] = "   ";
        let v = e.embed(&refs).unwrap();
        assert_eq!(v.len(), 150);
        for (i, row) in v.iter().enumerate() {
            if i == 3 {
                assert_eq!(row, &vec![0.0; 5], "blank text: zero vector");
            } else {
                assert_eq!(row[0], (i % 7 + 1) as f32, "row {i}");
            }
        }
        // The probe, then 149 texts in batches of 64: 3 requests. The
        // batches are sent concurrently, so they arrive in any order.
        let log = server.log();
        assert_eq!(log.len(), 4);
        assert_eq!(log[0].json()["input"], serde_json::json!([PROBE]));
        let mut sizes: Vec<usize> = log[1..]
            .iter()
            .map(|r| {
                assert_eq!(r.json()["model"], "emb-test");
                r.json()["input"].as_array().map_or(0, Vec::len)
            })
            .collect();
        sizes.sort_unstable();
        assert_eq!(sizes, vec![21, 64, 64]);
    }

    #[test]
    fn disagreeing_dimensions_are_an_error() {
        // The probe gets 4 dimensions, later replies 6.
        let server =
            start(|req, n| embeddings_reply(&vectors_for(&req.json(), if n == 0 { 4 } else { 6 })));
        let e = OpenAiEmbedder::connect(mesa_llm::Client::new(server.config()).unwrap()).unwrap();
        assert_eq!(e.dim(), 4);
        let err = e.embed(&["a", "b"]).unwrap_err();
        assert!(matches!(err, PluginError::BadOutput { .. }), "{err}");
        let m = err.to_string();
        assert!(m.contains("dimension 6") && m.contains("had 4"), "{m}");
    }

    #[test]
    fn endpoint_failures_are_errors() {
        let server = start(|req, n| {
            if n == 0 {
                embeddings_reply(&vectors_for(&req.json(), 3))
            } else {
                Reply::text(500, "boom")
            }
        });
        let e = OpenAiEmbedder::connect(mesa_llm::Client::new(server.config()).unwrap()).unwrap();
        let err = e.embed(&["a"]).unwrap_err();
        assert!(matches!(err, PluginError::Llm { .. }), "{err}");
        assert!(err.to_string().contains("HTTP 500"), "{err}");

        // A probe that fails is a setup error.
        let down = start(|_, _| Reply::text(404, "no such model"));
        let err =
            OpenAiEmbedder::connect(mesa_llm::Client::new(down.config()).unwrap()).unwrap_err();
        assert!(err.to_string().contains("HTTP 404"), "{err}");
    }
}
