//! What a selector reads: the question, its metadata and the previews.

use crate::feature::{Feature, PreviewKey};
use crate::mask::{Mask, Structure};
use crate::shown::Shown;
use serde::Deserialize;

/// Preview values per structure, and which structures were previewed. A
/// policy reads a preview that was not computed as 0; a sweep or a host
/// tells "not computed" from 0 with [`Previews::of`] and
/// [`Previews::present`]. An overlap is stored for both structures of its
/// pair, so `T.overlap_R` and `R.overlap_T` read the same value.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Previews {
    values: [[f64; Feature::COUNT]; 5],
    present: Mask,
    /// Per [`Shown`] unit, the count of each non-empty subset.
    shown: [[f64; Mask::SUBSETS]; 2],
    /// Which units' counts were given.
    shown_present: [bool; 2],
}

/// One structure's preview values, in [`Feature::ALL`] order.
pub type PreviewRow = [f64; Feature::COUNT];

impl Previews {
    /// Every structure previewed, with these values (rows in structure
    /// order, each in [`Feature::ALL`] order; overlaps are taken as given).
    pub fn full(values: [PreviewRow; 5]) -> Previews {
        Previews {
            values,
            present: Mask::ALL,
            ..Previews::default()
        }
    }

    /// Every structure previewed with these `[tokens, top, hits]` values
    /// and every other feature 0.
    pub fn basic(values: [[f64; 3]; 5]) -> Previews {
        Previews::full(values.map(|v| {
            let mut row = [0.0; Feature::COUNT];
            row[..3].copy_from_slice(&v);
            row
        }))
    }

    /// The value of `preview.K.feature` (0 when not computed).
    pub fn get(&self, s: Structure, f: Feature) -> f64 {
        self.values[s.index()][f.index()]
    }

    /// The value of one key (0 when not computed).
    pub fn value(&self, key: PreviewKey) -> f64 {
        self.get(key.structure, key.feature)
    }

    /// Sets `preview.K.feature` (an overlap for both structures of the
    /// pair); `s` counts as previewed.
    pub fn set(&mut self, s: Structure, f: Feature, value: f64) {
        self.values[s.index()][f.index()] = value;
        if let Some(o) = f.partner() {
            self.values[o.index()][Feature::overlap(s).index()] = value;
        }
        self.present = self.present.with(s);
    }

    /// A structure's values, or `None` when not previewed.
    pub fn of(&self, s: Structure) -> Option<PreviewRow> {
        self.present.contains(s).then(|| self.values[s.index()])
    }

    /// Sets every feature of `s` (overlaps for both structures of each
    /// pair, except `s`'s overlap with itself, which is not a feature).
    pub fn set_all(&mut self, s: Structure, values: PreviewRow) {
        for f in Feature::ALL {
            if f.partner() != Some(s) {
                self.set(s, f, values[f.index()]);
            }
        }
    }

    /// Forgets `s`'s previews (they read as 0 again, overlaps with `s`
    /// included).
    pub fn remove(&mut self, s: Structure) {
        self.values[s.index()] = [0.0; Feature::COUNT];
        for row in &mut self.values {
            row[Feature::overlap(s).index()] = 0.0;
        }
        self.present = self.present.without(Mask::single(s));
    }

    /// The structures previewed.
    pub fn present(&self) -> Mask {
        self.present
    }

    /// Sets what each non-empty subset shows, in `unit` (index `k` is
    /// [`Mask::subset`]`(k)`).
    pub fn set_shown(&mut self, unit: Shown, counts: [f64; Mask::SUBSETS]) {
        self.shown[unit.index()] = counts;
        self.shown_present[unit.index()] = true;
    }

    /// What each non-empty subset shows in `unit`, or `None` when not given.
    pub fn shown(&self, unit: Shown) -> Option<&[f64; Mask::SUBSETS]> {
        self.shown_present[unit.index()].then_some(&self.shown[unit.index()])
    }

    /// What `mask` shows in `unit` (0 when not given, or for the empty mask).
    pub fn shown_value(&self, unit: Shown, mask: Mask) -> f64 {
        mask.subset_index()
            .map_or(0.0, |k| self.shown[unit.index()][k])
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
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The line is not a JSON object of the expected shape.
    #[error("invalid JSON input: {0}")]
    Json(#[source] std::sync::Arc<serde_json::Error>),
    /// A preview names an unknown structure.
    #[error("unknown structure `{0}` in a preview (structures are S, T, G, V, R)")]
    UnknownStructure(String),
    /// A preview names an unknown feature.
    #[error(
        "unknown preview feature `{0}` (features are tokens, top, hits, steps, gap, share, \
         named and overlap_K for another structure K)"
    )]
    UnknownFeature(String),
    /// A preview names a structure's overlap with itself.
    #[error("`{0}` is a structure's overlap with itself; name another structure after `overlap_`")]
    SelfOverlap(String),
    /// A preview value is not a finite number.
    #[error("preview `{0}` must be a finite number, got `{1}`")]
    NotFinite(String, String),
    /// One structure is given twice in a `preview` object (`"R"` and `"raw"`).
    #[error("structure given twice in `preview`, as `{0}` and as `{1}`; give each structure once")]
    DuplicateStructure(String, String),
    /// One feature of a structure is given twice in a `preview` object.
    #[error("preview feature `{0}` given twice; give each feature once")]
    DuplicateFeature(String),
    /// A `shown` object names an unknown unit.
    #[error("unknown unit `{0}` in `shown` (units are words and steps)")]
    UnknownShown(String),
    /// A `shown` unit's counts are not 31 finite, non-negative numbers.
    #[error("`shown.{0}` {1}; give 31 finite, non-negative counts, one per non-empty subset in mask order")]
    BadShown(String, String),
    /// A `--preview` argument is not of the form `K.feature=VALUE`.
    #[error("`{0}` is not of the form K.feature=VALUE (e.g. R.tokens=4000)")]
    BadAssignment(String),
}

/// Applies a `K.feature=VALUE` assignment (the CLI's `--preview`).
pub fn apply_preview_assignment(previews: &mut Previews, text: &str) -> Result<(), InputError> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| InputError::BadAssignment(text.to_string()))?;
    let PreviewKey {
        structure: s,
        feature: f,
    } = key.trim().parse()?;
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
    preview: PreviewObject,
    #[serde(default)]
    shown: std::collections::BTreeMap<String, Vec<f64>>,
}

/// Reads a line's `shown` object into `previews`.
fn read_shown(
    shown: std::collections::BTreeMap<String, Vec<f64>>,
    previews: &mut Previews,
) -> Result<(), InputError> {
    for (name, counts) in shown {
        apply_shown(previews, &name, counts)?;
    }
    Ok(())
}

/// Sets what each non-empty subset shows in the unit named `name` (`words`
/// or `steps`): 31 finite, non-negative counts in mask order, as a JSONL
/// line's `"shown": {"words": [...]}` gives them.
pub fn apply_shown(
    previews: &mut Previews,
    name: &str,
    counts: Vec<f64>,
) -> Result<(), InputError> {
    let unit = Shown::from_name(name).ok_or_else(|| InputError::UnknownShown(name.into()))?;
    let counts: [f64; Mask::SUBSETS] = counts.try_into().map_err(|c: Vec<f64>| {
        InputError::BadShown(name.into(), format!("has {} counts, not 31", c.len()))
    })?;
    if let Some((k, v)) = counts
        .iter()
        .enumerate()
        .find(|(_, v)| !v.is_finite() || **v < 0.0)
    {
        return Err(InputError::BadShown(
            name.into(),
            format!("item {k} is {v}"),
        ));
    }
    previews.set_shown(unit, counts);
    Ok(())
}

/// The `preview` object of a JSONL line, read straight into [`Previews`]:
/// the same structure named twice (`"R"` and `"raw"`) or the same feature
/// given twice is an error rather than a silent "last one wins", as a
/// duplicate `query` is.
#[derive(Default)]
struct PreviewObject(Previews);

impl<'de> Deserialize<'de> for PreviewObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};
        struct Outer;
        struct Inner<'a>(&'a mut Previews, Structure, &'a str);
        impl<'de> Visitor<'de> for Outer {
            type Value = PreviewObject;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"an object such as {"R": {"tokens": 5000}}"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PreviewObject, A::Error> {
                let mut previews = Previews::default();
                let mut seen: [Option<String>; 5] = Default::default();
                while let Some(name) = map.next_key::<String>()? {
                    let s = Structure::from_name(&name).ok_or_else(|| {
                        A::Error::custom(InputError::UnknownStructure(name.clone()))
                    })?;
                    if let Some(first) = &seen[s.index()] {
                        return Err(A::Error::custom(InputError::DuplicateStructure(
                            first.clone(),
                            name,
                        )));
                    }
                    map.next_value_seed(Inner(&mut previews, s, &name))?;
                    seen[s.index()] = Some(name);
                }
                Ok(PreviewObject(previews))
            }
        }
        impl<'de> serde::de::DeserializeSeed<'de> for Inner<'_> {
            type Value = ();
            fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
                d.deserialize_map(self)
            }
        }
        impl<'de> Visitor<'de> for Inner<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(r#"an object of features such as {"tokens": 5000, "top": 0.4}"#)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                let Inner(previews, s, structure) = self;
                let mut seen = [false; Feature::COUNT];
                while let Some(name) = map.next_key::<String>()? {
                    let f = Feature::from_name(&name).ok_or_else(|| {
                        A::Error::custom(InputError::UnknownFeature(name.clone()))
                    })?;
                    if f.partner() == Some(s) {
                        return Err(A::Error::custom(InputError::SelfOverlap(format!(
                            "{structure}.{name}"
                        ))));
                    }
                    if seen[f.index()] {
                        return Err(A::Error::custom(InputError::DuplicateFeature(format!(
                            "{structure}.{name}"
                        ))));
                    }
                    seen[f.index()] = true;
                    previews.set(s, f, map.next_value::<f64>()?);
                }
                Ok(())
            }
        }
        d.deserialize_map(Outer)
    }
}

/// Reads one JSONL line: `{"id": .., "query": "..", "domain": .., "task": ..,
/// "qtype": .., "preview": {"R": {"tokens": 5000, "top": 0.4}},
/// "shown": {"words": [31 counts]}}`. Only `query`
/// is required; other fields are ignored (hosts may carry their own). A UTF-8 byte-order mark before the
/// object is skipped. Numbers are read exactly: the text of a JSON number
/// becomes the nearest `f64`, as Python's and JavaScript's readers do.
/// Returns the `id` (echoed in output).
pub fn parse_json_line(line: &str) -> Result<(Option<serde_json::Value>, Input), InputError> {
    let line = line.strip_prefix('\u{FEFF}').unwrap_or(line);
    let mut parsed: Line = serde_json::from_str(line).map_err(|e| InputError::Json(e.into()))?;
    read_shown(std::mem::take(&mut parsed.shown), &mut parsed.preview.0)?;
    Ok((
        parsed.id,
        Input {
            query: parsed.query,
            task: parsed.task,
            domain: parsed.domain,
            qtype: parsed.qtype,
            previews: parsed.preview.0,
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
            parse_json_line(r#"{"query": "", "preview": {"R": {"tokens": 1}, "raw": {"top": 1}}}"#),
            Err(InputError::Json(e)) if e.to_string().contains("given twice")
        ));
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"R": {"tokens": 1, "tokens": 2}}}"#),
            Err(InputError::Json(e)) if e.to_string().contains("given twice")
        ));
        assert!(parse_json_line("\u{FEFF}{\"query\": \"a\"}").is_ok());
        assert!(matches!(
            parse_json_line(r#"{"query": 1}"#),
            Err(InputError::Json(_))
        ));
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"X": {}}}"#),
            Err(InputError::Json(e)) if e.to_string().contains("unknown structure `X`")
        ));
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"S": {"tok": 1}}}"#),
            Err(InputError::Json(e)) if e.to_string().contains("unknown preview feature `tok`")
        ));
        let (_, input) = parse_json_line(
            r#"{"query": "", "preview": {"G": {"named": -1, "overlap_V": 0.5, "share": 0.3}}}"#,
        )
        .unwrap();
        assert_eq!(input.previews.get(Structure::Graph, Feature::Named), -1.0);
        assert_eq!(
            input.previews.get(Structure::Vector, Feature::OverlapG),
            0.5
        );
        assert_eq!(input.previews.get(Structure::Graph, Feature::Share), 0.3);
        assert!(matches!(
            parse_json_line(r#"{"query": "", "preview": {"G": {"overlap_graph": 1}}}"#),
            Err(InputError::Json(e)) if e.to_string().contains("overlap with itself")
        ));
    }

    #[test]
    fn shown_counts() {
        let counts: Vec<String> = (0..31).map(|k| k.to_string()).collect();
        let line = format!(
            r#"{{"query": "", "shown": {{"steps": [{}]}}}}"#,
            counts.join(",")
        );
        let (_, input) = parse_json_line(&line).unwrap();
        assert_eq!(input.previews.shown(Shown::Words), None);
        assert_eq!(input.previews.shown_value(Shown::Steps, Mask::ALL), 30.0);
        assert_eq!(input.previews.shown_value(Shown::Steps, Mask::EMPTY), 0.0);
        assert!(matches!(
            parse_json_line(r#"{"query": "", "shown": {"words": [1, 2]}}"#),
            Err(InputError::BadShown(u, why)) if u == "words" && why.contains("2 counts")
        ));
        let neg = line.replace("[0,", "[-1,");
        assert!(
            matches!(parse_json_line(&neg), Err(InputError::BadShown(_, why)) if why.contains("item 0 is -1"))
        );
        assert!(matches!(
            parse_json_line(r#"{"query": "", "shown": {"lines": []}}"#),
            Err(InputError::UnknownShown(u)) if u == "lines"
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
        apply_preview_assignment(&mut p, "R.overlap_T=0.25").unwrap();
        assert_eq!(p.get(Structure::Temporal, Feature::OverlapR), 0.25);
        assert_eq!(p.get(Structure::Raw, Feature::OverlapT), 0.25);
        assert!(matches!(
            apply_preview_assignment(&mut p, "R.overlap_R=1"),
            Err(InputError::SelfOverlap(_))
        ));
        p.remove(Structure::Raw);
        assert_eq!(p.get(Structure::Temporal, Feature::OverlapR), 0.0);
    }
}

#[cfg(test)]
mod number_tests {
    use super::*;
    use proptest::prelude::*;

    fn tokens_of(line: &str) -> f64 {
        let (_, input) = parse_json_line(line).expect("valid line");
        input.previews.get(Structure::Raw, Feature::Tokens)
    }

    #[test]
    fn the_reported_double_reads_exactly() {
        let line = r#"{"query":"a","preview":{"R":{"tokens":0.9999999999999999}}}"#;
        assert_eq!(tokens_of(line), 0.9999999999999999_f64);
        assert!(tokens_of(line) < 1.0);
    }

    proptest! {
        /// Any finite double, printed in its shortest form or with 17
        /// significant digits or in exponent form, reads back bit for bit, as
        /// it does through `--preview` (Rust's `str::parse`).
        #[test]
        fn json_numbers_round_trip(bits in any::<u64>()) {
            let v = f64::from_bits(bits);
            prop_assume!(v.is_finite());
            for text in [format!("{v:?}"), format!("{v:.17e}"), format!("{v:e}")] {
                let line = format!(r#"{{"query":"a","preview":{{"R":{{"tokens":{text}}}}}}}"#);
                let from_json = tokens_of(&line);
                let mut p = Previews::default();
                apply_preview_assignment(&mut p, &format!("R.tokens={text}")).expect("assignment");
                prop_assert_eq!(from_json.to_bits(), v.to_bits(), "{}", text);
                prop_assert_eq!(p.get(Structure::Raw, Feature::Tokens).to_bits(), v.to_bits());
            }
        }
    }
}
