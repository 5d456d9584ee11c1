//! Trajectory datasets: episodes of (action, observation) steps with
//! questions, read from JSON Lines.
//!
//! Two layouts are read, detected line by line (docs/DATA.md documents both):
//!
//! - **AMA-Bench** (`ama`): `{episode_id, task_type, domain, source, success,
//!   task, num_turns, trajectory: [{turn_idx, action, observation}],
//!   qa_pairs: [{question, answer, type}]}`. Question ids are
//!   `{episode_id}:{qa_index}`.
//! - **Generic** (`generic`): `{id, task, domain?, outcome?, steps: [{index?,
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
mod fields;
mod generic;

pub use generic::line as generic_line;
mod strict;

use fields::{check_order, check_questions, Bad, Capper, Fields};

use serde::{Deserialize, Serialize};
use serde_json::Value;
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
    /// When the episode was created (RFC 3339), if the dataset says: a live
    /// tenant's export gives it, and an import keeps it (read only with
    /// [`LoadOptions::into_tenant`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// The steps, in increasing index order; never empty, unless read with
    /// [`LoadOptions::into_tenant`].
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
    /// Read for an import into a live tenant (`mesa build --into`,
    /// `POST /v1/import`, Python's `import_dataset`), as a tenant's export
    /// writes it: a generic episode without steps (`"steps": []`) is read,
    /// as a tenant holds such episodes, and its `created` is read and must
    /// be an RFC 3339 time (else the line is bad, before anything is
    /// written). Default false, for a store build ([`crate::Store`]): an
    /// episode needs steps, and `created` is ignored as any unknown field.
    pub into_tenant: bool,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            skip_bad: false,
            max_text_bytes: 32 * 1024,
            max_line_bytes: 256 * 1024 * 1024,
            into_tenant: false,
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

/// Parses one line's JSON text (BOM and line ending already removed) as an
/// episode, detecting the layout. `file` and `line` only label errors.
pub fn parse_episode(
    text: &str,
    options: &LoadOptions,
    file: &str,
    line: usize,
) -> Result<(Episode, Format, [usize; 2]), DatasetError> {
    let value: Value = strict::from_str(text).map_err(|source| DatasetError::Json {
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
        generic::parse(&fields, options).map(|(e, c)| (e, Format::Generic, c))
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
