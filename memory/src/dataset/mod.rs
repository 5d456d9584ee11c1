//! Trajectory datasets: episodes of (action, observation) steps with
//! questions, read from JSON Lines.
//!
//! Two layouts are read, detected line by line (docs/DATA.md documents both):
//!
//! - **AMA-Bench** (`ama`): `{episode_id, task_type, domain, source, success,
//!   task, num_turns, trajectory: [{turn_idx, action, observation}],
//!   qa_pairs: [{question, answer, type}]}`. Question ids are
//!   `{episode_id}:{qa_index}`.
//! - **Generic** (`generic`): `{id, task, domain, outcome?, steps: [{index?,
//!   action, observation, timestamp?}], questions?: [{id?, question, answer?,
//!   type?, evidence?}]}`, for bringing your own agent logs.
//!
//! Files are streamed one line at a time ([`EpisodeReader`]), so a large file
//! never has to fit in memory as text. Every problem is an error naming the
//! file, the line and the field; with [`LoadOptions::skip_bad`] a bad line is
//! skipped and counted in the [`LoadReport`] with its reason instead.
//! Nothing is ever dropped silently.
//!
//! Caps: an action or observation longer than [`LoadOptions::max_text_bytes`]
//! (32 KiB by default) is cut at a character boundary; the cut is counted in
//! the report and noted in the episode's `notes`. A line longer than
//! [`LoadOptions::max_line_bytes`] (256 MiB) is an error. A UTF-8 byte order
//! mark at the start of a line is ignored, as are blank lines (counted).

mod ama;
mod generic;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// One step of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The step's index as the trajectory numbers it ("step 12" in a
    /// question means index 12). Strictly increasing within an episode;
    /// gaps are allowed.
    pub index: usize,
    /// What the agent did.
    pub action: String,
    /// What it saw in return.
    pub observation: String,
    /// When, if the log says (free text, e.g. RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// A question about an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// Unique within the dataset; AMA-Bench's are `{episode_id}:{qa_index}`.
    pub id: String,
    /// The question text.
    pub question: String,
    /// The reference answer, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The question type (AMA-Bench: A recall, B causal inference, C state
    /// updating, D state abstraction), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qtype: Option<String>,
    /// Step indices the answer rests on, if labelled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<usize>,
}

/// One episode: a task, its trajectory and questions about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Unique within the dataset.
    pub id: String,
    /// The task the agent was given.
    pub task: String,
    /// The domain (AMA-Bench: TEXT2SQL, OPENWORLD_QA, WEB, GAME, EMBODIED_AI,
    /// SOFTWARE).
    pub domain: String,
    /// How the episode ended (`success`, `failure`, or the log's own word).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// Other string metadata (AMA-Bench: `task_type`, `source`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
    /// The steps, in increasing index order; never empty.
    pub steps: Vec<Step>,
    /// The questions.
    #[serde(default)]
    pub questions: Vec<Question>,
    /// What loading changed, e.g. cut observations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Episode {
    /// The position of the step with this index, if there is one.
    pub fn position(&self, index: usize) -> Option<usize> {
        self.steps.binary_search_by_key(&index, |s| s.index).ok()
    }
}

/// Which layout a line was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Format {
    /// AMA-Bench's `open_end_qa_set.jsonl` layout.
    Ama,
    /// The generic trajectory layout of docs/DATA.md.
    Generic,
}

/// How to read a dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// Skip bad lines (counted, with reasons, in the report) instead of
    /// failing on the first.
    pub skip_bad: bool,
    /// Actions and observations are cut to this many bytes (at a character
    /// boundary). Default 32 KiB.
    pub max_text_bytes: usize,
    /// A longer line is an error. Default 256 MiB.
    pub max_line_bytes: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            skip_bad: false,
            max_text_bytes: 32 * 1024,
            max_line_bytes: 256 * 1024 * 1024,
        }
    }
}

/// A line that was skipped, and why.
#[derive(Debug)]
pub struct Skipped {
    /// The 1-based line number.
    pub line: usize,
    /// Why it was skipped.
    pub reason: DatasetError,
}

/// What reading a dataset found.
#[derive(Debug, Default)]
pub struct LoadReport {
    /// Lines read, blank ones included.
    pub lines: usize,
    /// Blank lines (ignored).
    pub blank_lines: usize,
    /// Episodes read.
    pub episodes: usize,
    /// Steps read.
    pub steps: usize,
    /// Questions read.
    pub questions: usize,
    /// Episodes per layout: AMA-Bench, generic.
    pub by_format: [usize; 2],
    /// Observations cut at `max_text_bytes`.
    pub cut_observations: usize,
    /// Actions cut at `max_text_bytes`.
    pub cut_actions: usize,
    /// Lines skipped (only with `skip_bad`).
    pub skipped: Vec<Skipped>,
}

/// A dataset read into memory.
#[derive(Debug)]
pub struct Loaded {
    /// The episodes, in file order.
    pub episodes: Vec<Episode>,
    /// What reading found.
    pub report: LoadReport,
}

/// Why a dataset line could not be read. Every variant names the file and
/// the 1-based line; field errors name the field as a path such as
/// `trajectory[3].turn_idx`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The file could not be opened or read.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The line is longer than the limit.
    #[error("{file}:{line}: the line is longer than {limit} bytes")]
    LineTooLong {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The limit in bytes.
        limit: usize,
    },
    /// The line is not UTF-8.
    #[error("{file}:{line}: not valid UTF-8 (at byte {offset} of the line)")]
    NotUtf8 {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// Where the invalid byte is.
        offset: usize,
    },
    /// The line is not JSON (truncated, or not JSON at all).
    #[error("{file}:{line}: not valid JSON: {source}")]
    Json {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// The line is JSON but in neither known layout.
    #[error("{file}:{line}: unknown layout: expected an AMA-Bench episode (with `episode_id` and `trajectory`) or a generic one (with `id` and `steps`); see docs/DATA.md")]
    UnknownFormat {
        /// The file.
        file: String,
        /// The line.
        line: usize,
    },
    /// A required field is missing.
    #[error("{file}:{line}: missing field `{field}`")]
    MissingField {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The field's path.
        field: String,
    },
    /// A field has the wrong type or an invalid value.
    #[error("{file}:{line}: field `{field}`: expected {expected}, found {found}")]
    BadField {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The field's path.
        field: String,
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },
    /// Steps are out of order or duplicated.
    #[error("{file}:{line}: field `{field}`: step index {index} after step {previous}: steps must be in increasing order, without duplicates")]
    StepOrder {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The field's path.
        field: String,
        /// The offending index.
        index: usize,
        /// The index before it.
        previous: usize,
    },
    /// The episode has no steps.
    #[error("{file}:{line}: episode `{episode}` has no steps")]
    NoSteps {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The episode id.
        episode: String,
    },
    /// Two episodes share an id.
    #[error("{file}:{line}: duplicate episode id `{episode}` (first on line {first})")]
    DuplicateEpisode {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The episode id.
        episode: String,
        /// The line of the first episode with this id.
        first: usize,
    },
    /// Two questions share an id.
    #[error("{file}:{line}: duplicate question id `{question}` in episode `{episode}`")]
    DuplicateQuestion {
        /// The file.
        file: String,
        /// The line.
        line: usize,
        /// The episode id.
        episode: String,
        /// The question id.
        question: String,
    },
}

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
    fn at(self, file: &str, line: usize) -> DatasetError {
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

    pub(crate) fn opt_string(&self, field: &str) -> Result<Option<String>, Bad> {
        match self.get(field) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v) => Err(self.bad(field, "a string", v)),
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

/// Parses one line's JSON text (BOM and line ending already removed) as an
/// episode, detecting the layout. `file` and `line` only label errors.
pub fn parse_episode(
    text: &str,
    options: &LoadOptions,
    file: &str,
    line: usize,
) -> Result<(Episode, Format, [usize; 2]), DatasetError> {
    let value: Value = serde_json::from_str(text).map_err(|source| DatasetError::Json {
        file: file.to_string(),
        line,
        source,
    })?;
    let obj = value
        .as_object()
        .ok_or_else(|| Bad::Unknown.at(file, line))?;
    let fields = Fields::new(obj, String::new());
    let result = if obj.contains_key("trajectory") || obj.contains_key("episode_id") {
        ama::parse(&fields, options.max_text_bytes).map(|(e, c)| (e, Format::Ama, c))
    } else if obj.contains_key("steps") {
        generic::parse(&fields, options.max_text_bytes).map(|(e, c)| (e, Format::Generic, c))
    } else {
        Err(Bad::Unknown)
    };
    result.map_err(|b| b.at(file, line))
}

/// Streams the episodes of a JSONL dataset, one line at a time.
///
/// Yields `Ok(episode)` per good line. A bad line yields `Err`, unless
/// `skip_bad` is set, in which case it is recorded in [`Self::report`] and
/// reading goes on. I/O errors always end the stream.
pub struct EpisodeReader<R> {
    reader: R,
    file: String,
    options: LoadOptions,
    line: usize,
    buf: Vec<u8>,
    seen: HashMap<String, usize>,
    report: LoadReport,
    done: bool,
}

impl EpisodeReader<BufReader<File>> {
    /// Opens a file.
    pub fn open(path: &Path, options: LoadOptions) -> Result<Self, DatasetError> {
        let file = File::open(path).map_err(|source| DatasetError::Io {
            file: path.display().to_string(),
            source,
        })?;
        Ok(EpisodeReader::new(
            BufReader::with_capacity(1 << 20, file),
            path.display().to_string(),
            options,
        ))
    }
}

impl<R: BufRead> EpisodeReader<R> {
    /// Reads from any buffered reader; `file` names it in errors.
    pub fn new(reader: R, file: impl Into<String>, options: LoadOptions) -> Self {
        EpisodeReader {
            reader,
            file: file.into(),
            options,
            line: 0,
            buf: Vec::new(),
            seen: HashMap::new(),
            report: LoadReport::default(),
            done: false,
        }
    }

    /// What has been read so far.
    pub fn report(&self) -> &LoadReport {
        &self.report
    }

    /// The report, consuming the reader.
    pub fn into_report(self) -> LoadReport {
        self.report
    }

    /// Reads one line into `buf`, without its line ending. Returns
    /// `Ok(None)` at the end, `Ok(Some(too_long))` otherwise.
    fn read_line(&mut self) -> Result<Option<bool>, std::io::Error> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let avail = match self.reader.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                break;
            }
            any = true;
            let (chunk, found) = match avail.iter().position(|&b| b == b'\n') {
                Some(i) => (&avail[..i], Some(i)),
                None => (avail, None),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > self.options.max_line_bytes {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            let used = found.map_or(avail.len(), |i| i + 1);
            self.reader.consume(used);
            if found.is_some() {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        Ok(Some(too_long))
    }

    fn next_line(&mut self) -> Option<Result<Episode, DatasetError>> {
        loop {
            let too_long = match self.read_line() {
                Ok(None) => return None,
                Ok(Some(t)) => t,
                Err(source) => {
                    self.done = true;
                    return Some(Err(DatasetError::Io {
                        file: self.file.clone(),
                        source,
                    }));
                }
            };
            self.line += 1;
            self.report.lines += 1;
            let line = self.line;
            if too_long {
                return Some(Err(DatasetError::LineTooLong {
                    file: self.file.clone(),
                    line,
                    limit: self.options.max_line_bytes,
                }));
            }
            let bytes = self.buf.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&self.buf);
            let text = match std::str::from_utf8(bytes) {
                Ok(t) => t,
                Err(e) => {
                    return Some(Err(DatasetError::NotUtf8 {
                        file: self.file.clone(),
                        line,
                        offset: e.valid_up_to(),
                    }))
                }
            };
            if text.trim().is_empty() {
                self.report.blank_lines += 1;
                continue;
            }
            let parsed = parse_episode(text, &self.options, &self.file, line);
            return Some(parsed.and_then(|(episode, format, cuts)| {
                if let Some(&first) = self.seen.get(&episode.id) {
                    return Err(DatasetError::DuplicateEpisode {
                        file: self.file.clone(),
                        line,
                        episode: episode.id.clone(),
                        first,
                    });
                }
                self.seen.insert(episode.id.clone(), line);
                self.report.episodes += 1;
                self.report.steps += episode.steps.len();
                self.report.questions += episode.questions.len();
                self.report.by_format[match format {
                    Format::Ama => 0,
                    Format::Generic => 1,
                }] += 1;
                self.report.cut_actions += cuts[0];
                self.report.cut_observations += cuts[1];
                Ok(episode)
            }));
        }
    }
}

impl<R: BufRead> Iterator for EpisodeReader<R> {
    type Item = Result<Episode, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.done {
                return None;
            }
            match self.next_line()? {
                Ok(e) => return Some(Ok(e)),
                Err(e @ DatasetError::Io { .. }) => return Some(Err(e)),
                Err(e) if self.options.skip_bad => {
                    let line = self.line;
                    self.report.skipped.push(Skipped { line, reason: e });
                }
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

/// Reads a whole dataset file: all episodes and the report. Fails on the
/// first bad line unless `skip_bad` is set.
pub fn load(path: &Path, options: &LoadOptions) -> Result<Loaded, DatasetError> {
    let mut reader = EpisodeReader::open(path, options.clone())?;
    let episodes = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(Loaded {
        episodes,
        report: reader.into_report(),
    })
}

/// Reads a dataset from a string (tests, small inputs); `file` names it in
/// errors.
pub fn load_str(text: &str, file: &str, options: &LoadOptions) -> Result<Loaded, DatasetError> {
    let mut reader = EpisodeReader::new(text.as_bytes(), file, options.clone());
    let episodes = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    Ok(Loaded {
        episodes,
        report: reader.into_report(),
    })
}

#[cfg(test)]
mod tests;
