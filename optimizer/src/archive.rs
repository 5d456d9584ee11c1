//! The run archive: every candidate, valid or not, one JSON line each in
//! `RUN/archive.jsonl`, appended and flushed (and synced) as soon as the
//! candidate is evaluated, so a killed run loses at most the candidate in
//! flight. `RUN/run.json` holds the settings a resumed run must share.
//!
//! On `--resume`, a last line cut by the kill (no newline at the end, not
//! valid JSON) is dropped and reported; a damaged line anywhere else is an
//! error, since dropping it would lose an evaluated candidate.

use crate::eval::engine::{CandidateFailure, Diag, StageTimings};
use crate::eval::Metrics;
use crate::propose::{LlmTrace, Mode, PolicySpec};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The archive's file name inside the run directory.
pub const ARCHIVE_FILE: &str = "archive.jsonl";
/// The settings file's name inside the run directory.
pub const RUN_FILE: &str = "run.json";

/// One candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveEntry {
    /// 0, 1, 2, ... in archive order.
    pub id: usize,
    /// 0 for the seed, then 1-based iterations.
    pub iteration: usize,
    /// Seed, exploit, explore or repair.
    pub mode: Mode,
    /// The direction's name (none for the seed).
    pub direction: Option<String>,
    /// `offline`, `llm` or `seed`.
    pub proposer: String,
    /// The candidate it was built on.
    pub parent: Option<usize>,
    /// The policy source, when there is one.
    pub source: Option<String>,
    /// The offline proposer's rule list (to build on after a resume).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PolicySpec>,
    /// Checked, compiled, instantiated and evaluated.
    pub valid: bool,
    /// Why not.
    #[serde(default)]
    pub failure: Option<CandidateFailure>,
    /// The checker's warnings.
    #[serde(default)]
    pub warnings: Vec<Diag>,
    /// The same source as this earlier candidate (not evaluated again).
    #[serde(default)]
    pub duplicate_of: Option<usize>,
    /// What the proposer did.
    #[serde(default)]
    pub note: String,
    /// Metrics on train.
    pub train: Option<Metrics>,
    /// Metrics on val.
    pub val: Option<Metrics>,
    /// The reward the direction's UCB statistics got.
    pub reward: f64,
    /// Milliseconds to propose.
    pub propose_ms: f64,
    /// Milliseconds per stage.
    pub timings: StageTimings,
    /// The LLM exchange, for the LLM proposer.
    #[serde(default)]
    pub llm: Option<LlmTrace>,
}

impl ArchiveEntry {
    /// Marks this entry as the same policy as `dup`, which was evaluated:
    /// valid, with `dup`'s metrics and warnings.
    pub(crate) fn same_as(&mut self, dup: &ArchiveEntry) {
        self.valid = true;
        self.duplicate_of = Some(dup.id);
        self.train = dup.train;
        self.val = dup.val;
        self.warnings = dup.warnings.clone();
        self.note.push_str(&format!(
            "; same policy as #{}, not evaluated again",
            dup.id
        ));
    }

    /// Whether the endpoint failed: such an entry is no verdict on the
    /// direction, and a resumed run proposes that candidate again.
    pub fn endpoint_failed(&self) -> bool {
        self.llm
            .as_ref()
            .is_some_and(|l| l.endpoint_error.is_some())
    }

    /// The val objective of a valid candidate.
    pub fn val_objective(&self) -> Option<f64> {
        if self.valid {
            self.val.map(|m| m.objective)
        } else {
            None
        }
    }
}

/// The settings a resumed run must share with the run it continues.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Always `mesa-optimizer-run`.
    pub format: String,
    /// Always 1.
    pub version: u32,
    /// The sweep file.
    pub sweep: String,
    /// FNV-1a 64 of the sweep's bytes, hex.
    pub sweep_fnv1a64: String,
    /// The split seed.
    pub seed: u64,
    /// The token price.
    pub lambda: f64,
    /// The UCB exploration weight.
    pub beta: f64,
    /// `offline` or `llm`.
    pub proposer: String,
    /// Whether the question type was hidden.
    pub no_qtype: bool,
    /// The half of val candidates were compared on (absent: all of val).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub val_half: Option<crate::split::ValHalf>,
    /// What rules were fitted and candidates compared on (absent: train,
    /// then val).
    #[serde(default, skip_serializing_if = "is_train")]
    pub fit: crate::split::FitOn,
    /// The offline proposer's trade prices when not the default (absent:
    /// [`crate::strata::DEFAULT_TRADE_PRICES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade_prices: Option<Vec<f64>>,
}

fn is_train(f: &crate::split::FitOn) -> bool {
    *f == crate::split::FitOn::Train
}

/// What went wrong with the archive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The run directory already has an archive and `--resume` was not given.
    #[error("{} already holds a run ({ARCHIVE_FILE}); pass --resume to continue it, or choose another --out directory", dir.display())]
    Exists {
        /// The directory.
        dir: PathBuf,
    },
    /// A line other than the last one is damaged.
    #[error("{}:{line}: damaged archive line ({problem}); it is not the last line, so it is not a cut-off write: restore the file or start a new run", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// `--resume` with other settings than the archived run.
    #[error("cannot resume: the run in {} has {field} = {archived}, this command has {given}; use the same settings or another --out directory", dir.display())]
    Settings {
        /// The directory.
        dir: PathBuf,
        /// The setting.
        field: String,
        /// The archived value.
        archived: String,
        /// The given value.
        given: String,
    },
}

/// What a resume found at the end of the archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovery {
    /// The line that was cut.
    pub line: usize,
    /// Bytes dropped.
    pub dropped_bytes: usize,
}

/// The append-only archive of a run.
#[derive(Debug)]
pub struct Archive {
    path: PathBuf,
    file: std::fs::File,
    /// Every entry, in order.
    pub entries: Vec<ArchiveEntry>,
    /// A cut last line dropped on resume.
    pub recovered: Option<Recovery>,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ArchiveError + '_ {
    move |source| ArchiveError::Io {
        path: path.to_path_buf(),
        source,
    }
}

impl Archive {
    /// Opens the archive of `dir`: a new one, or with `resume` the existing
    /// one (a new one if there is none). `settings` are written to, or
    /// compared with, `run.json`.
    pub fn open(dir: &Path, settings: &RunSettings, resume: bool) -> Result<Archive, ArchiveError> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(ARCHIVE_FILE);
        let run = dir.join(RUN_FILE);
        let exists = path.exists() && std::fs::metadata(&path).map_err(io(&path))?.len() > 0;
        if exists && !resume {
            return Err(ArchiveError::Exists {
                dir: dir.to_path_buf(),
            });
        }
        if exists && run.exists() {
            let text = std::fs::read_to_string(&run).map_err(io(&run))?;
            let old: RunSettings =
                serde_json::from_str(&text).map_err(|e| ArchiveError::Corrupt {
                    path: run.clone(),
                    line: 1,
                    problem: e.to_string(),
                })?;
            compare(dir, &old, settings)?;
        } else {
            let text = serde_json::to_string_pretty(settings).unwrap_or_default();
            std::fs::write(&run, text + "\n").map_err(io(&run))?;
        }
        let (entries, recovered) = if exists {
            read_entries(&path)?
        } else {
            (Vec::new(), None)
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        Ok(Archive {
            path,
            file,
            entries,
            recovered,
        })
    }

    /// The archive file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next entry's id.
    pub fn next_id(&self) -> usize {
        self.entries.len()
    }

    /// Appends an entry, flushed and synced before returning.
    pub fn append(&mut self, entry: ArchiveEntry) -> Result<(), ArchiveError> {
        let mut line = serde_json::to_string(&entry).map_err(|e| ArchiveError::Io {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .map_err(io(&self.path))?;
        self.file.flush().map_err(io(&self.path))?;
        self.file.sync_data().map_err(io(&self.path))?;
        self.entries.push(entry);
        Ok(())
    }
}

fn compare(dir: &Path, old: &RunSettings, new: &RunSettings) -> Result<(), ArchiveError> {
    let half = |s: &RunSettings| s.val_half.map_or("all of val", |h| h.name()).to_string();
    let prices = |s: &RunSettings| match &s.trade_prices {
        None => "the default (0.05 to 1 in steps of 0.05)".to_string(),
        Some(p) => p.iter().map(f64::to_string).collect::<Vec<_>>().join(","),
    };
    let fields: [(&str, String, String); 9] = [
        (
            "the sweep's content (FNV-1a)",
            old.sweep_fnv1a64.clone(),
            new.sweep_fnv1a64.clone(),
        ),
        ("--seed", old.seed.to_string(), new.seed.to_string()),
        ("--lambda", old.lambda.to_string(), new.lambda.to_string()),
        ("--beta", old.beta.to_string(), new.beta.to_string()),
        ("--proposer", old.proposer.clone(), new.proposer.clone()),
        (
            "--no-qtype",
            old.no_qtype.to_string(),
            new.no_qtype.to_string(),
        ),
        ("--val-half", half(old), half(new)),
        ("--fit", old.fit.name().into(), new.fit.name().into()),
        ("--trade-price", prices(old), prices(new)),
    ];
    for (field, archived, given) in fields {
        if archived != given {
            return Err(ArchiveError::Settings {
                dir: dir.to_path_buf(),
                field: field.to_string(),
                archived,
                given,
            });
        }
    }
    Ok(())
}

/// Reads an archive, dropping (and truncating the file at) a cut last line.
pub fn read_entries(path: &Path) -> Result<(Vec<ArchiveEntry>, Option<Recovery>), ArchiveError> {
    let bytes = std::fs::read(path).map_err(io(path))?;
    let mut entries = Vec::new();
    let mut recovered = None;
    let mut start = 0;
    let mut line_no = 0;
    while start < bytes.len() {
        line_no += 1;
        let (end, complete) = match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(p) => (start + p, true),
            None => (bytes.len(), false),
        };
        let line = &bytes[start..end];
        let next = if complete { end + 1 } else { end };
        if line.iter().all(u8::is_ascii_whitespace) {
            start = next;
            continue;
        }
        let parsed = std::str::from_utf8(line)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<ArchiveEntry>(t).map_err(|e| e.to_string()));
        match parsed {
            Ok(e) => {
                if !complete {
                    // Complete JSON whose newline was not written: keep it
                    // and finish the line so the next append starts fresh.
                    let mut f = std::fs::OpenOptions::new()
                        .append(true)
                        .open(path)
                        .map_err(io(path))?;
                    f.write_all(b"\n").map_err(io(path))?;
                }
                entries.push(e);
            }
            Err(_) if !complete => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(io(path))?;
                f.set_len(start as u64).map_err(io(path))?;
                f.sync_data().map_err(io(path))?;
                recovered = Some(Recovery {
                    line: line_no,
                    dropped_bytes: end - start,
                });
            }
            Err(problem) => {
                return Err(ArchiveError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    problem,
                })
            }
        }
        start = next;
    }
    // Ids are positions: a resumed run appends after the last one kept.
    for (i, e) in entries.iter_mut().enumerate() {
        e.id = i;
    }
    Ok((entries, recovered))
}
