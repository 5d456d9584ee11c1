//! Reading a sweep file's lines: the header, each record's fields, and the
//! errors that say which line and field is wrong.

use super::{SweepError, SweepHeader, SweepRecord, SWEEP_FORMAT, SWEEP_VERSION};
use mesa_core::{Feature, Mask, Previews, Structure};
use mesa_memory::Coverage;
use serde_json::{Map, Value};
use std::path::Path;

fn malformed(
    path: &Path,
    line: usize,
    field: Option<&str>,
    problem: impl Into<String>,
) -> SweepError {
    SweepError::Malformed {
        path: path.to_path_buf(),
        line,
        field: field.map(str::to_string),
        problem: problem.into(),
    }
}

fn parse_object(path: &Path, line: usize, bytes: &[u8]) -> Result<Map<String, Value>, SweepError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| malformed(path, line, None, format!("not UTF-8 ({e})")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(malformed(
            path,
            line,
            None,
            format!("expected a JSON object, found {}", kind_of(&other)),
        )),
        Err(e) => Err(malformed(path, line, None, format!("invalid JSON: {e}"))),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn parse_header(path: &Path, bytes: &[u8]) -> Result<SweepHeader, SweepError> {
    let not = |problem: String| SweepError::NotASweep {
        path: path.to_path_buf(),
        problem,
    };
    let obj = parse_object(path, 1, bytes).map_err(|e| match e {
        SweepError::Malformed { problem, .. } => not(format!("line 1 {problem}")),
        other => other,
    })?;
    match obj.get("format") {
        Some(Value::String(f)) if f == SWEEP_FORMAT => {}
        Some(Value::String(f)) => {
            return Err(not(format!(
                "the header's format is `{f}`, expected `{SWEEP_FORMAT}`"
            )))
        }
        _ => {
            return Err(not(format!(
                "line 1 has no `\"format\": \"{SWEEP_FORMAT}\"`"
            )))
        }
    }
    match obj.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(SWEEP_VERSION) => {}
        Some(v) => {
            return Err(SweepError::Version {
                path: path.to_path_buf(),
                found: v,
                expected: SWEEP_VERSION,
            })
        }
        None => return Err(not("the header has no integer `version`".into())),
    }
    serde_json::from_value::<SweepHeader>(Value::Object(obj))
        .map_err(|e| malformed(path, 1, None, format!("invalid header: {e}")))
}

struct Fields<'a> {
    path: &'a Path,
    line: usize,
    obj: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Result<&Value, SweepError> {
        self.obj
            .get(name)
            .ok_or_else(|| malformed(self.path, self.line, Some(name), "missing"))
    }

    fn string(&self, name: &str) -> Result<String, SweepError> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            // Producers may write numeric ids; they are read as text.
            Value::Number(n) if name == "episode" || name == "question_id" => Ok(n.to_string()),
            other => Err(malformed(
                self.path,
                self.line,
                Some(name),
                format!("expected a string, found {}", kind_of(other)),
            )),
        }
    }

    /// 31 counts: whole numbers from 0 to `u32::MAX`.
    fn counts(&self, name: &str, v: &Value) -> Result<[u32; Mask::SUBSETS], SweepError> {
        let xs: [f64; Mask::SUBSETS] = self.numbers(name, v)?;
        let mut out = [0u32; Mask::SUBSETS];
        for (i, x) in xs.into_iter().enumerate() {
            if x < 0.0 || x.fract() != 0.0 || x > f64::from(u32::MAX) {
                let p = format!("item {i} is {x}, expected a count (a whole number, 0 or more)");
                return Err(malformed(self.path, self.line, Some(name), p));
            }
            out[i] = x as u32;
        }
        Ok(out)
    }

    fn numbers<const N: usize>(&self, name: &str, v: &Value) -> Result<[f64; N], SweepError> {
        let bad = |p: String| malformed(self.path, self.line, Some(name), p);
        let Value::Array(items) = v else {
            return Err(bad(format!(
                "expected an array of {N} numbers, found {}",
                kind_of(v)
            )));
        };
        if items.len() != N {
            return Err(bad(format!("expected {N} numbers, found {}", items.len())));
        }
        let mut out = [0.0; N];
        for (i, item) in items.iter().enumerate() {
            let x = item
                .as_f64()
                .ok_or_else(|| bad(format!("item {i} is {}, expected a number", kind_of(item))))?;
            if !x.is_finite() {
                return Err(bad(format!("item {i} is not a finite number")));
            }
            out[i] = x;
        }
        Ok(out)
    }
}

/// The most tokens a subset's evidence may count in a sweep: far above any
/// store's, and low enough that sums over any sweep stay finite.
const MAX_TOKENS: f64 = 1e12;

/// A number as a person reads it: `-1`, `0.5`, or `1e300` rather than all
/// its digits.
fn short(x: f64) -> String {
    if x.abs() >= 1e6 {
        format!("{x:e}")
    } else {
        x.to_string()
    }
}

pub(super) fn parse_record(
    path: &Path,
    line: usize,
    bytes: &[u8],
) -> Result<SweepRecord, SweepError> {
    let obj = parse_object(path, line, bytes)?;
    let f = Fields {
        path,
        line,
        obj: &obj,
    };
    let qtype = match f.get("qtype")? {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        other => {
            return Err(malformed(
                path,
                line,
                Some("qtype"),
                format!("expected a string or null, found {}", kind_of(other)),
            ))
        }
    };
    let labelled = f
        .get("labelled")?
        .as_bool()
        .ok_or_else(|| malformed(path, line, Some("labelled"), "expected true or false"))?;
    let previews = f.previews()?;
    let utility: [f64; Mask::SUBSETS] = f.numbers("utility", f.get("utility")?)?;
    let tokens: [f64; Mask::SUBSETS] = f.numbers("tokens", f.get("tokens")?)?;
    if let Some(k) = utility.iter().position(|u| !(0.0..=1.0).contains(u)) {
        return Err(malformed(
            path,
            line,
            Some("utility"),
            format!(
                "item {k} is {}, outside 0 to 1 (every utility is a share)",
                short(utility[k])
            ),
        ));
    }
    if let Some(k) = tokens.iter().position(|t| !(0.0..=MAX_TOKENS).contains(t)) {
        return Err(malformed(
            path,
            line,
            Some("tokens"),
            format!(
                "item {k} is {}, outside 0 to {MAX_TOKENS:e}",
                short(tokens[k])
            ),
        ));
    }
    let coverage = f.coverage()?;
    Ok(SweepRecord {
        episode: f.string("episode")?,
        question_id: f.string("question_id")?,
        domain: f.string("domain")?,
        qtype,
        task: f.string("task")?,
        query: f.string("query")?,
        labelled,
        previews,
        utility,
        tokens,
        coverage,
    })
}

impl Fields<'_> {
    /// `previews`: an object of structure letters to their feature values.
    fn previews(&self) -> Result<Previews, SweepError> {
        let mut previews = Previews::default();
        match self.get("previews")? {
            Value::Object(m) => {
                for (key, v) in m {
                    let s = Structure::from_name(key).ok_or_else(|| {
                        malformed(
                            self.path,
                            self.line,
                            Some("previews"),
                            format!("unknown structure `{key}` (structures are S, T, G, V, R)"),
                        )
                    })?;
                    let field = format!("previews.{key}");
                    let vals: [f64; Feature::COUNT] = self.numbers(&field, v)?;
                    if vals[0] < 0.0 {
                        return Err(malformed(
                            self.path,
                            self.line,
                            Some(&field),
                            "tokens (item 0) is negative",
                        ));
                    }
                    if previews.of(s).is_some() {
                        return Err(malformed(
                            self.path,
                            self.line,
                            Some(&field),
                            format!("structure {} given twice", s.letter()),
                        ));
                    }
                    previews.set_all(s, vals);
                }
            }
            other => {
                return Err(malformed(
                    self.path,
                    self.line,
                    Some("previews"),
                    format!("expected an object, found {}", kind_of(other)),
                ))
            }
        }
        Ok(previews)
    }

    /// `words` and `steps`, what each subset shows: both or neither.
    fn coverage(&self) -> Result<Option<Coverage>, SweepError> {
        Ok(match (self.obj.get("words"), self.obj.get("steps")) {
            (None, None) => None,
            (Some(w), Some(st)) => Some(Coverage {
                words: self.counts("words", w)?,
                steps: self.counts("steps", st)?,
            }),
            (w, _) => {
                let (given, missing) = if w.is_some() {
                    ("words", "steps")
                } else {
                    ("steps", "words")
                };
                return Err(malformed(
                    self.path,
                    self.line,
                    Some(missing),
                    format!("missing; `{given}` is given, and a record gives both or neither"),
                ));
            }
        })
    }
}
