//! Sweep files: per question and per non-empty subset of the five
//! structures, the utility and the evidence tokens.
//!
//! A sweep is JSON Lines. Line 1 is a [`SweepHeader`]:
//!
//! ```json
//! {"format":"mesa-sweep","version":2,"utility":"evidence-recall","dataset":"ama-bench",
//!  "store":"store/","questions":2496,"labelled":2300,"created_by":"mesa 0.1.0"}
//! ```
//!
//! then one [`SweepRecord`] per question:
//!
//! ```json
//! {"episode":"12","question_id":"12:3","domain":"TEXT2SQL","qtype":"B","task":"...",
//!  "query":"...","labelled":true,
//!  "previews":{"S":[812,0.4,1,3,1,1,-1,0,0.1,0,0.2,0.3],"T":[..],"G":[..],"V":[..],"R":[..]},
//!  "utility":[31 numbers],"tokens":[31 numbers],"words":[31 counts],"steps":[31 counts]}
//! ```
//!
//! Index `k` of `utility` and `tokens` is the mask whose bits are `k + 1`
//! (bit 0 = S, bit 1 = T, bit 2 = G, bit 3 = V, bit 4 = R), so index 0 is
//! `{S}` and index 30 is all five; `words` and `steps`, in the same order,
//! are the distinct content words and steps the mask's evidence shows
//! ([`mesa_memory::coverage`]), optional (both or neither; `mesa sweep`
//! writes both). A structure's previews are its twelve
//! features in [`Feature::ALL`] order: `[tokens, top, hits, steps, gap,
//! share, named, overlap_S, overlap_T, overlap_G, overlap_V, overlap_R]`
//! (its overlap with itself is written as 0 and not read); a
//! structure missing from `previews` means the producer did not compute
//! its previews, and a policy that reads them cannot be evaluated on the
//! sweep. `qtype` may be `null` (a dataset without question types). Unknown
//! fields are ignored; an incompatible change bumps `version`.
//!
//! [`SweepReader`] streams a file and rejects, with the file, line and
//! field named: another format or version, a malformed or truncated line,
//! a missing field, an array of the wrong length, a non-finite number, a
//! negative token count, a question id given twice, and a header whose
//! `questions`/`labelled` counts disagree with the records.
//! [`SweepWriter`] writes the same format (the producer in the memory side
//! uses it).

mod parse;
use parse::{parse_header, parse_record};
pub mod synthetic;

use mesa_core::{Feature, Mask, Previews, Structure};
use mesa_memory::Coverage;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The `format` every sweep header carries.
pub const SWEEP_FORMAT: &str = "mesa-sweep";
/// The sweep format version this build reads and writes.
pub const SWEEP_VERSION: u32 = 2;
/// How the utilities were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UtilityKind {
    /// Recall of the labelled evidence steps.
    EvidenceRecall,
    /// Recall of the answer-only labels: the labelled steps that the
    /// question itself does not name (the temporal structure retrieves the
    /// steps a question names by construction, so only these test
    /// retrieval).
    AnswerOnlyRecall,
    /// Coverage of the reference answer's tokens by the evidence.
    AnswerCoverage,
    /// An answer model's answer, graded by an LLM judge.
    Judge,
}

impl UtilityKind {
    /// The name as written in the header.
    pub fn name(self) -> &'static str {
        match self {
            UtilityKind::EvidenceRecall => "evidence-recall",
            UtilityKind::AnswerOnlyRecall => "answer-only-recall",
            UtilityKind::AnswerCoverage => "answer-coverage",
            UtilityKind::Judge => "judge",
        }
    }
}

/// Line 1 of a sweep file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepHeader {
    /// Always [`SWEEP_FORMAT`].
    pub format: String,
    /// Always [`SWEEP_VERSION`] for files this build writes.
    pub version: u32,
    /// How utilities were computed.
    pub utility: UtilityKind,
    /// The dataset the questions come from.
    pub dataset: String,
    /// The memory store the evidence came from.
    pub store: String,
    /// Records in the file.
    pub questions: usize,
    /// Records with `labelled: true`.
    pub labelled: usize,
    /// The program that wrote the file, e.g. `mesa 0.1.0`.
    pub created_by: String,
}

impl SweepHeader {
    /// A header for `questions` records of which `labelled` are labelled.
    pub fn new(
        utility: UtilityKind,
        dataset: impl Into<String>,
        store: impl Into<String>,
        questions: usize,
        labelled: usize,
    ) -> SweepHeader {
        SweepHeader {
            format: SWEEP_FORMAT.to_string(),
            version: SWEEP_VERSION,
            utility,
            dataset: dataset.into(),
            store: store.into(),
            questions,
            labelled,
            created_by: format!("mesa {}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// One question of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRecord {
    /// The episode (trajectory) the question is about; splits are by episode.
    pub episode: String,
    /// Unique in the file, e.g. `12:3`.
    pub question_id: String,
    /// The episode's domain.
    pub domain: String,
    /// The question type, if the dataset has one.
    pub qtype: Option<String>,
    /// The episode's task description.
    pub task: String,
    /// The question.
    pub query: String,
    /// Whether the utility rests on labels (evidence steps, a reference
    /// answer); evaluation uses labelled questions only.
    pub labelled: bool,
    /// Previews per structure.
    pub previews: Previews,
    /// Utility of each non-empty mask (index `k` = bits `k + 1`).
    pub utility: [f64; Mask::SUBSETS],
    /// Evidence tokens of each non-empty mask.
    pub tokens: [f64; Mask::SUBSETS],
    /// What each non-empty mask shows (distinct content words and steps),
    /// when the producer recorded it (`words` and `steps`).
    pub coverage: Option<Coverage>,
}

impl SweepRecord {
    /// The record as the JSON object written on its line.
    pub fn to_json(&self) -> Value {
        let mut previews = Map::new();
        for s in Structure::ALL {
            if let Some(v) = self.previews.of(s) {
                previews.insert(s.letter().to_string(), serde_json::json!(v));
            }
        }
        let mut line = serde_json::json!({
            "episode": self.episode,
            "question_id": self.question_id,
            "domain": self.domain,
            "qtype": self.qtype,
            "task": self.task,
            "query": self.query,
            "labelled": self.labelled,
            "previews": previews,
            "utility": self.utility.to_vec(),
            "tokens": self.tokens.to_vec(),
        });
        if let (Some(c), Value::Object(m)) = (&self.coverage, &mut line) {
            m.insert("words".into(), serde_json::json!(c.words.to_vec()));
            m.insert("steps".into(), serde_json::json!(c.steps.to_vec()));
        }
        line
    }

    /// Checks the numbers a writer must not write: non-finite values and
    /// negative token counts. Returns the offending field.
    pub fn validate(&self) -> Result<(), (String, String)> {
        for (name, arr) in [("utility", &self.utility), ("tokens", &self.tokens)] {
            for (k, v) in arr.iter().enumerate() {
                if !v.is_finite() {
                    return Err((
                        format!("{name}[{k}]"),
                        format!("is {v}, not a finite number"),
                    ));
                }
                if name == "tokens" && *v < 0.0 {
                    return Err((format!("{name}[{k}]"), format!("is negative ({v})")));
                }
            }
        }
        for s in Structure::ALL {
            if let Some(v) = self.previews.of(s) {
                for f in Feature::ALL {
                    let x = v[f.index()];
                    if !x.is_finite() {
                        return Err((
                            format!("previews.{}.{}", s.letter(), f.name()),
                            format!("is {x}, not a finite number"),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Everything that can go wrong reading or writing a sweep.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// The file could not be opened, read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file has no header line.
    #[error("{}: the file is empty; a sweep starts with a header line {{\"format\":\"mesa-sweep\",...}}", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Line 1 is not a sweep header of this format.
    #[error("{}:1: not a MESA sweep: {problem}", path.display())]
    NotASweep {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The header names a version this build does not read.
    #[error("{}:1: sweep format version {found}; this build of mesa reads version {expected}; regenerate the sweep with this version", path.display())]
    Version {
        /// The file.
        path: PathBuf,
        /// The version in the file.
        found: u64,
        /// The version this build reads.
        expected: u32,
    },
    /// A line is not valid, with the field at fault when there is one.
    #[error("{}:{line}: {}{problem}", path.display(), match field { Some(f) => format!("field `{f}`: "), None => String::new() })]
    Malformed {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The field at fault, e.g. `utility` or `previews.R`.
        field: Option<String>,
        /// What is wrong.
        problem: String,
    },
    /// The last line ends without a newline and does not parse: the writer
    /// was interrupted.
    #[error("{}:{line}: the file ends in the middle of a line (it is truncated: the writer was interrupted); regenerate the sweep", path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the cut line.
        line: usize,
    },
    /// A question id appears twice.
    #[error("{}:{line}: question_id `{id}` was already given on line {first}", path.display())]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// Where it appears again.
        line: usize,
        /// The id.
        id: String,
        /// Where it appeared first.
        first: usize,
    },
    /// The header's counts disagree with the records.
    #[error("{}: the header says {field} = {header}, but the file has {found}{}", path.display(), if found < header { " (is the file truncated?)" } else { "" })]
    Count {
        /// The file.
        path: PathBuf,
        /// `questions` or `labelled`.
        field: &'static str,
        /// The header's count.
        header: usize,
        /// The count found.
        found: usize,
    },
    /// A record to write is invalid.
    #[error("cannot write question `{id}`: field `{field}` {problem}")]
    Invalid {
        /// The question.
        id: String,
        /// The field.
        field: String,
        /// What is wrong.
        problem: String,
    },
}

/// Writes a sweep: the header, then one line per record.
pub struct SweepWriter<W: Write> {
    out: W,
    written: usize,
}

impl SweepWriter<BufWriter<std::fs::File>> {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &Path, header: &SweepHeader) -> Result<Self, SweepError> {
        let io = |source| SweepError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = std::fs::File::create(path).map_err(io)?;
        SweepWriter::new(BufWriter::new(file), header).map_err(io)
    }
}

impl<W: Write> SweepWriter<W> {
    /// Writes the header to `out`.
    pub fn new(mut out: W, header: &SweepHeader) -> std::io::Result<Self> {
        let line = serde_json::to_string(header).map_err(std::io::Error::other)?;
        writeln!(out, "{line}")?;
        Ok(SweepWriter { out, written: 0 })
    }

    /// Writes one record (rejecting non-finite numbers and negative tokens).
    pub fn write(&mut self, record: &SweepRecord) -> Result<(), SweepError> {
        record
            .validate()
            .map_err(|(field, problem)| SweepError::Invalid {
                id: record.question_id.clone(),
                field,
                problem,
            })?;
        let io = |source| SweepError::Io {
            path: PathBuf::from("<sweep>"),
            source,
        };
        writeln!(self.out, "{}", record.to_json()).map_err(io)?;
        self.written += 1;
        Ok(())
    }

    /// Records written so far.
    pub fn written(&self) -> usize {
        self.written
    }

    /// Flushes and returns the underlying writer.
    pub fn finish(mut self) -> std::io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Writes a whole sweep to `path`, header counts filled in from `records`.
pub fn write_sweep(
    path: &Path,
    utility: UtilityKind,
    dataset: &str,
    store: &str,
    records: &[SweepRecord],
) -> Result<(), SweepError> {
    let labelled = records.iter().filter(|r| r.labelled).count();
    let header = SweepHeader::new(utility, dataset, store, records.len(), labelled);
    let mut w = SweepWriter::create(path, &header)?;
    for r in records {
        w.write(r)?;
    }
    w.finish().map_err(|source| SweepError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(())
}

/// Streams the records of a sweep file, after reading and checking its header.
pub struct SweepReader<R: BufRead> {
    path: PathBuf,
    input: R,
    header: SweepHeader,
    line: usize,
    buf: Vec<u8>,
    seen: HashMap<String, usize>,
    questions: usize,
    labelled: usize,
    done: bool,
}

impl SweepReader<BufReader<std::fs::File>> {
    /// Opens `path` and reads its header.
    pub fn open(path: &Path) -> Result<Self, SweepError> {
        let file = std::fs::File::open(path).map_err(|source| SweepError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        SweepReader::new(path, BufReader::new(file))
    }
}

impl<R: BufRead> SweepReader<R> {
    /// Reads the header from `input`; `path` names the source in errors.
    pub fn new(path: &Path, mut input: R) -> Result<Self, SweepError> {
        let path = path.to_path_buf();
        let mut buf = Vec::new();
        let n = input
            .read_until(b'\n', &mut buf)
            .map_err(|source| SweepError::Io {
                path: path.clone(),
                source,
            })?;
        if n == 0 || buf.iter().all(u8::is_ascii_whitespace) {
            return Err(SweepError::Empty { path });
        }
        let header = parse_header(&path, &buf)?;
        Ok(SweepReader {
            path,
            input,
            header,
            line: 1,
            buf,
            seen: HashMap::new(),
            questions: 0,
            labelled: 0,
            done: false,
        })
    }

    /// The header.
    pub fn header(&self) -> &SweepHeader {
        &self.header
    }

    fn next_record(&mut self) -> Result<Option<SweepRecord>, SweepError> {
        loop {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|source| SweepError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            if n == 0 {
                // End of file: the header's counts must match what was read.
                for (field, header, found) in [
                    ("questions", self.header.questions, self.questions),
                    ("labelled", self.header.labelled, self.labelled),
                ] {
                    if header != found {
                        return Err(SweepError::Count {
                            path: self.path.clone(),
                            field,
                            header,
                            found,
                        });
                    }
                }
                return Ok(None);
            }
            self.line += 1;
            let ended = self.buf.last() == Some(&b'\n');
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let record = match parse_record(&self.path, self.line, &self.buf) {
                Ok(r) => r,
                // A last line cut short reads as malformed JSON; say what
                // most likely happened.
                Err(SweepError::Malformed { field: None, .. }) if !ended => {
                    return Err(SweepError::Truncated {
                        path: self.path.clone(),
                        line: self.line,
                    })
                }
                Err(e) => return Err(e),
            };
            if let Some(&first) = self.seen.get(&record.question_id) {
                return Err(SweepError::Duplicate {
                    path: self.path.clone(),
                    line: self.line,
                    id: record.question_id,
                    first,
                });
            }
            self.seen.insert(record.question_id.clone(), self.line);
            self.questions += 1;
            self.labelled += usize::from(record.labelled);
            return Ok(Some(record));
        }
    }
}

impl<R: BufRead> Iterator for SweepReader<R> {
    type Item = Result<SweepRecord, SweepError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_record() {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// A whole sweep in memory.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Where it was read from.
    pub path: PathBuf,
    /// Its header.
    pub header: SweepHeader,
    /// Its records, in file order.
    pub records: Vec<SweepRecord>,
}

impl Sweep {
    /// Reads and checks a whole sweep file.
    pub fn read(path: &Path) -> Result<Sweep, SweepError> {
        let mut reader = SweepReader::open(path)?;
        let header = reader.header().clone();
        let records = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok(Sweep {
            path: path.to_path_buf(),
            header,
            records,
        })
    }

    /// The structures whose previews every record carries.
    pub fn available_previews(&self) -> [bool; 5] {
        let mut all = [true; 5];
        for r in &self.records {
            for (i, a) in all.iter_mut().enumerate() {
                *a &= r.previews.of(Structure::ALL[i]).is_some();
            }
        }
        all
    }
}

#[cfg(test)]
mod tests;
