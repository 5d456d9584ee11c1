//! What a selector reads: the question, its metadata and the previews.

use crate::ir::Feature;
use crate::mask::Structure;
use serde::Deserialize;
use std::collections::BTreeMap;

/// Preview features per structure; a feature the host did not supply is 0.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Previews(pub [[f64; 3]; 5]);

impl Previews {
    /// The value of `preview.K.feature`.
    pub fn get(&self, s: Structure, f: Feature) -> f64 {
        self.0[s.index()][f as usize]
    }

    /// Sets `preview.K.feature`.
    pub fn set(&mut self, s: Structure, f: Feature, value: f64) {
        self.0[s.index()][f as usize] = value;
    }
}

/// One question to select for.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Input {
    /// The question text.
    pub query: String,
    /// The episode's task description, if known.
    pub task: Option<String>,
    /// The episode's domain, if known.
    pub domain: Option<String>,
    /// The question type, if known.
    pub qtype: Option<String>,
    /// The previews.
    pub previews: Previews,
}

impl Input {
    /// An input with just a query.
    pub fn query(query: impl Into<String>) -> Self {
        Input {
            query: query.into(),
            ..Input::default()
        }
    }
}

/// Why an input could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The line is not a JSON object of the expected shape.
    #[error("invalid JSON input: {0}")]
    Json(String),
    /// A preview names an unknown structure.
    #[error("unknown structure `{0}` in a preview (structures are S, T, G, V, R)")]
    UnknownStructure(String),
    /// A preview names an unknown feature.
    #[error("unknown preview feature `{0}` (features are tokens, top, hits)")]
    UnknownFeature(String),
    /// A preview value is not a finite number.
    #[error("preview `{0}` must be a finite number, got `{1}`")]
    NotFinite(String, String),
    /// A `--preview` argument is not of the form `K.feature=VALUE`.
    #[error("`{0}` is not of the form K.feature=VALUE (e.g. R.tokens=4000)")]
    BadAssignment(String),
}

/// Reads `K.feature` into its structure and feature.
pub fn parse_preview_key(key: &str) -> Result<(Structure, Feature), InputError> {
    let (s, f) = key
        .split_once('.')
        .ok_or_else(|| InputError::BadAssignment(key.to_string()))?;
    let s = Structure::from_name(s).ok_or_else(|| InputError::UnknownStructure(s.to_string()))?;
    let f = Feature::from_name(f).ok_or_else(|| InputError::UnknownFeature(f.to_string()))?;
    Ok((s, f))
}

/// Applies a `K.feature=VALUE` assignment (the CLI's `--preview`).
pub fn apply_preview_assignment(previews: &mut Previews, text: &str) -> Result<(), InputError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| InputError::BadAssignment(text.to_string()))?;
    let (s, f) = parse_preview_key(key.trim())?;
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| InputError::NotFinite(key.to_string(), value.to_string()))?;
    if !v.is_finite() {
        return Err(InputError::NotFinite(key.to_string(), value.to_string()));
    }
    previews.set(s, f, v);
    Ok(())
}

#[derive(Deserialize)]
struct Line {
    #[serde(default)]
    id: Option<serde_json::Value>,
    query: String,
    #[serde(default)]
    task: Option<String>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    qtype: Option<String>,
    #[serde(default)]
    preview: BTreeMap<String, BTreeMap<String, f64>>,
}

/// Reads one JSONL line: `{"id": .., "query": "..", "domain": .., "task": ..,
/// "qtype": .., "preview": {"R": {"tokens": 5000, "top": 0.4}}}`. Only `query`
/// is required; other fields are ignored. Returns the `id` (echoed in output).
pub fn parse_json_line(line: &str) -> Result<(Option<serde_json::Value>, Input), InputError> {
    let parsed: Line = serde_json::from_str(line).map_err(|e| InputError::Json(e.to_string()))?;
    let mut previews = Previews::default();
    for (structure, features) in &parsed.preview {
        let s = Structure::from_name(structure)
            .ok_or_else(|| InputError::UnknownStructure(structure.clone()))?;
        for (feature, value) in features {
            let f = Feature::from_name(feature)
                .ok_or_else(|| InputError::UnknownFeature(feature.clone()))?;
            previews.set(s, f, *value);
        }
    }
    Ok((
        parsed.id,
        Input {
            query: parsed.query,
            task: parsed.task,
            domain: parsed.domain,
            qtype: parsed.qtype,
            previews,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines() {
        let (id, input) = parse_json_line(r#"{"id": 7, "query": "why?", "domain": "web", "preview": {"R": {"tokens": 10}, "vector": {"top": 0.5}}, "extra": 1}"#).unwrap();
        assert_eq!(id, Some(serde_json::json!(7)));
        assert_eq!(input.domain.as_deref(), Some("web"));
        assert_eq!(input.previews.get(Structure::Raw, Feature::Tokens), 10.0);
        assert_eq!(input.previews.get(Structure::Vector, Feature::Top), 0.5);
        assert!(matches!(
            parse_json_line(r#"{"query": 1}"#),
            Err(InputError::Json(_))
        ));
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"X": {}}}"#),
            Err(InputError::UnknownStructure(_))
        ));
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"S": {"tok": 1}}}"#),
            Err(InputError::UnknownFeature(_))
        ));
    }

    #[test]
    fn assignments() {
        let mut p = Previews::default();
        apply_preview_assignment(&mut p, "R.tokens=4000").unwrap();
        assert_eq!(p.get(Structure::Raw, Feature::Tokens), 4000.0);
        assert!(apply_preview_assignment(&mut p, "R.tokens=inf").is_err());
        assert!(apply_preview_assignment(&mut p, "R.tokens").is_err());
        assert!(apply_preview_assignment(&mut p, "Q.tokens=1").is_err());
    }
}
