//! A tenant as a dataset, both ways: [`Tenant::import_episode`] adds a
//! dataset's episode (what `mesa build --into` does for each), and
//! [`Tenant::export`] writes every episode with its steps and kept
//! questions, one line each in MESA's generic layout (docs/DATA.md), which
//! an import reads back into another tenant (to change its builders, say,
//! or to move it to another memory).
//!
//! ```text
//! episodes() ──► per episode: episode(id) + questions(id) (each one read)
//!            ──► evidence of forgotten steps dropped (counted)
//!            ──► dataset::generic_line ──► out, one line
//! ```
//!
//! A step keeps its index, text and timestamp; an episode its task, domain,
//! outcome and metadata; a question its id, text, answer, type and the
//! evidence steps that remain. An episode without steps (created and never
//! appended to, or every step forgotten) is not written, as the layout
//! needs a step; [`Exported::empty`] names it.

use super::{LiveError, NewEpisode, NewStep, Tenant};
use crate::dataset::{generic_line, Episode};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The request id of an imported episode's creation.
pub const IMPORT_CREATE: &str = "import:episode";
/// The request id of an imported episode's steps.
pub const IMPORT_STEPS: &str = "import:steps";

/// What [`Tenant::import_episode`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportedEpisode {
    /// The episode's steps.
    pub steps: usize,
    /// Its questions, kept (again).
    pub questions: usize,
    /// Whether an earlier import had created it with these steps (and
    /// nothing was written but its questions).
    pub again: bool,
}

/// What [`Tenant::export`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Exported {
    /// Episodes written.
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// Their kept questions.
    pub questions: usize,
    /// Episodes not written because they have no step.
    pub empty: Vec<String>,
    /// Evidence labels left out of kept questions because their step was
    /// forgotten.
    pub dropped_evidence: usize,
}

impl Tenant {
    /// Creates the dataset's episode `e`, appends its steps in one batch
    /// (indices and timestamps kept; a step without a timestamp gets the
    /// time of the import) and keeps its questions. The creation and the
    /// append carry request ids ([`IMPORT_CREATE`], [`IMPORT_STEPS`]), so an
    /// import run again (after an interruption, say) writes nothing for
    /// the episodes it imported and completes the one it was in; an
    /// episode of that id with other steps is
    /// [`LiveError::RequestIdReused`], one created otherwise
    /// [`LiveError::EpisodeExists`].
    pub fn import_episode(&self, e: &Episode) -> Result<ImportedEpisode, LiveError> {
        let created = self.create_episode_once(&NewEpisode::of(e), Some(IMPORT_CREATE))?;
        let batch = e.steps.iter().map(NewStep::of).collect();
        let appended = self.append_once(&e.id, batch, Some(IMPORT_STEPS))?;
        let questions = self.add_questions(&e.id, &e.questions)?;
        Ok(ImportedEpisode {
            steps: appended.indices.len(),
            questions,
            again: created && appended.replayed,
        })
    }

    /// Writes every episode to `out` (see the module docs); `output` names
    /// it in an error. An episode forgotten while the export runs is left
    /// out; each one written is read in one transaction.
    pub fn export(&self, out: &mut dyn Write, output: &str) -> Result<Exported, LiveError> {
        let mut done = Exported::default();
        for info in self.episodes()? {
            let mut episode = match self.episode(&info.id) {
                Err(LiveError::UnknownEpisode { .. }) => continue,
                other => other?,
            };
            if episode.steps.is_empty() {
                done.empty.push(info.id);
                continue;
            }
            let mut questions = match self.questions(&info.id) {
                Err(LiveError::UnknownEpisode { .. }) => continue,
                other => other?,
            };
            for q in &mut questions {
                let before = q.evidence.len();
                q.evidence.retain(|&i| episode.position(i).is_some());
                done.dropped_evidence += before - q.evidence.len();
            }
            episode.questions = questions;
            writeln!(out, "{}", generic_line(&episode)).map_err(|source| LiveError::Io {
                path: output.to_string(),
                source,
            })?;
            done.episodes += 1;
            done.steps += episode.steps.len();
            done.questions += episode.questions.len();
        }
        out.flush().map_err(|source| LiveError::Io {
            path: output.to_string(),
            source,
        })?;
        Ok(done)
    }

    /// [`Tenant::export`] into the file at `path`, which is replaced whole
    /// once the export is complete and on disk (written beside it first);
    /// on an error it is left as it was.
    pub fn export_to(&self, path: &Path) -> Result<Exported, LiveError> {
        let mut part = path.as_os_str().to_owned();
        part.push(format!(".part-{}", std::process::id()));
        let part = PathBuf::from(part);
        let shown = part.display().to_string();
        let io = |source| LiveError::Io {
            path: shown.clone(),
            source,
        };
        let written = std::fs::File::create(&part).map_err(io).and_then(|file| {
            let mut out = std::io::BufWriter::new(file);
            let done = self.export(&mut out, &shown)?;
            let file = out.into_inner().map_err(|e| io(e.into_error()))?;
            file.sync_all().map_err(io)?;
            Ok(done)
        });
        let done = match written {
            Ok(done) => done,
            Err(e) => {
                let _ = std::fs::remove_file(&part);
                return Err(e);
            }
        };
        std::fs::rename(&part, path).map_err(|source| LiveError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(done)
    }
}
