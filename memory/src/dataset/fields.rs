//! Reading one line's fields: typed access with the path of each field in
//! its errors ([`Fields`]), the problems a line can have before its file and
//! line are attached ([`Bad`]), the text cap ([`Capper`]) and the checks
//! every layout shares.

use super::{DatasetError, Episode, Step};
use serde_json::{Map, Value};

/// A problem found while reading one line, before the file and line are
/// attached.
#[derive(Debug)]
pub(crate) enum Bad {
    Missing(String),
    Type {
        field: String,
        expected: &'static str,
        found: String,
    },
    Order {
        field: String,
        index: usize,
        previous: usize,
    },
    NoSteps(String),
    DuplicateQuestion {
        episode: String,
        question: String,
    },
    Unknown,
}

impl Bad {
    pub(super) fn at(self, file: &str, line: usize) -> DatasetError {
        let file = file.to_string();
        match self {
            Bad::Missing(field) => DatasetError::MissingField { file, line, field },
            Bad::Type {
                field,
                expected,
                found,
            } => DatasetError::BadField {
                file,
                line,
                field,
                expected: expected.to_string(),
                found,
            },
            Bad::Order {
                field,
                index,
                previous,
            } => DatasetError::StepOrder {
                file,
                line,
                field,
                index,
                previous,
            },
            Bad::NoSteps(episode) => DatasetError::NoSteps {
                file,
                line,
                episode,
            },
            Bad::DuplicateQuestion { episode, question } => DatasetError::DuplicateQuestion {
                file,
                line,
                episode,
                question,
            },
            Bad::Unknown => DatasetError::UnknownFormat { file, line },
        }
    }
}

/// Field access with error paths.
pub(crate) struct Fields<'a> {
    pub(crate) obj: &'a Map<String, Value>,
    pub(crate) path: String,
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let (head, cut) = crate::text::cut(s, 40);
            format!("the string \"{head}{}\"", if cut { "…" } else { "" })
        }
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

impl<'a> Fields<'a> {
    pub(crate) fn new(obj: &'a Map<String, Value>, path: String) -> Self {
        Fields { obj, path }
    }

    pub(crate) fn name(&self, field: &str) -> String {
        if self.path.is_empty() {
            field.to_string()
        } else {
            format!("{}.{field}", self.path)
        }
    }

    fn get(&self, field: &str) -> Option<&'a Value> {
        self.obj.get(field).filter(|v| !v.is_null())
    }

    fn req(&self, field: &str) -> Result<&'a Value, Bad> {
        self.get(field)
            .ok_or_else(|| Bad::Missing(self.name(field)))
    }

    fn bad(&self, field: &str, expected: &'static str, v: &Value) -> Bad {
        Bad::Type {
            field: self.name(field),
            expected,
            found: describe(v),
        }
    }

    pub(crate) fn string(&self, field: &str) -> Result<String, Bad> {
        let v = self.req(field)?;
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| self.bad(field, "a string", v))
    }

    /// A string with something besides white space (a question).
    pub(crate) fn words(&self, field: &str) -> Result<String, Bad> {
        let v = self.req(field)?;
        match v.as_str() {
            Some(s) if !s.trim().is_empty() => Ok(s.to_string()),
            _ => Err(self.bad(field, "a string with words (not blank)", v)),
        }
    }

    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<String>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.bad(field, "a string", v)),
        }
    }

    /// An RFC 3339 time, if present.
    pub(crate) fn opt_time(&self, field: &str) -> Result<Option<String>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) if s.parse::<jiff::Timestamp>().is_ok() => Ok(Some(s.clone())),
            Some(v) => Err(self.bad(field, "an RFC 3339 time", v)),
        }
    }

    /// A string, or an integer written as its decimal form (ids).
    pub(crate) fn id(&self, field: &str) -> Result<String, Bad> {
        let v = self.req(field)?;
        match v {
            Value::String(s) if !s.is_empty() => Ok(s.clone()),
            Value::Number(n) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
            _ => Err(self.bad(field, "a non-empty string or an integer", v)),
        }
    }

    pub(crate) fn opt_id(&self, field: &str) -> Result<Option<String>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(_) => self.id(field).map(Some),
        }
    }

    pub(crate) fn opt_index(&self, field: &str) -> Result<Option<usize>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.bad(field, "a non-negative integer", v)),
        }
    }

    pub(crate) fn index(&self, field: &str) -> Result<usize, Bad> {
        self.opt_index(field)?
            .ok_or_else(|| Bad::Missing(self.name(field)))
    }

    pub(crate) fn opt_bool(&self, field: &str) -> Result<Option<bool>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(self.bad(field, "a boolean", v)),
        }
    }

    /// A string, or a number written as its JSON text (timestamps).
    pub(crate) fn opt_scalar(&self, field: &str) -> Result<Option<String>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(v) => Err(self.bad(field, "a string or a number", v)),
        }
    }

    pub(crate) fn array(&self, field: &str) -> Result<&'a [Value], Bad> {
        let v = self.req(field)?;
        v.as_array()
            .map(Vec::as_slice)
            .ok_or_else(|| self.bad(field, "an array", v))
    }

    pub(crate) fn opt_array(&self, field: &str) -> Result<&'a [Value], Bad> {
        match self.get(field) {
            None => Ok(&[]),
            Some(_) => self.array(field),
        }
    }

    /// The objects of an array field, each with its path.
    pub(crate) fn objects(&self, field: &str, items: &'a [Value]) -> Result<Vec<Fields<'a>>, Bad> {
        items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let path = format!("{}[{i}]", self.name(field));
                match v.as_object() {
                    Some(obj) => Ok(Fields::new(obj, path)),
                    None => Err(Bad::Type {
                        field: path,
                        expected: "an object",
                        found: describe(v),
                    }),
                }
            })
            .collect()
    }
}

/// Cuts step texts at the cap, noting each cut in the episode.
pub(crate) struct Capper<'a> {
    pub(crate) max: usize,
    pub(crate) notes: &'a mut Vec<String>,
    pub(crate) cut_actions: usize,
    pub(crate) cut_observations: usize,
}

impl Capper<'_> {
    pub(crate) fn cap(&mut self, text: String, index: usize, observation: bool) -> String {
        let (head, cut) = crate::text::cut(&text, self.max);
        if !cut {
            return text;
        }
        let what = if observation { "observation" } else { "action" };
        self.notes.push(format!(
            "step {index}: {what} cut from {} to {} bytes",
            text.len(),
            head.len()
        ));
        if observation {
            self.cut_observations += 1;
        } else {
            self.cut_actions += 1;
        }
        head.to_string()
    }
}

/// Checks order: strictly increasing step indices.
pub(crate) fn check_order(steps: &[Step], field: &str) -> Result<(), Bad> {
    for (i, w) in steps.windows(2).enumerate() {
        if w[1].index <= w[0].index {
            return Err(Bad::Order {
                field: format!("{field}[{}]", i + 1),
                index: w[1].index,
                previous: w[0].index,
            });
        }
    }
    Ok(())
}

/// Checks that question ids are unique within the episode.
pub(crate) fn check_questions(episode: &Episode) -> Result<(), Bad> {
    let mut seen = std::collections::HashSet::new();
    for q in &episode.questions {
        if !seen.insert(q.id.as_str()) {
            return Err(Bad::DuplicateQuestion {
                episode: episode.id.clone(),
                question: q.id.clone(),
            });
        }
    }
    Ok(())
}
