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
//! outcome, metadata and creation time; a question its id, text, answer,
//! type and the evidence steps that remain. An episode without steps
//! (created and never appended to, or every step forgotten) is written with
//! `"steps": []`, which an import reads
//! ([`crate::dataset::LoadOptions::into_tenant`]) and a store build
//! refuses.

use super::{LiveError, NewEpisode, NewStep, Tenant};
use crate::dataset::{generic_line, Episode};
use std::io::Write;
use std::path::Path;

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

/// What [`Tenant::import`] added over a dataset's episodes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Imported {
    /// Episodes imported (again ones included).
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// Their questions.
    pub questions: usize,
    /// Episodes an earlier import had made with these steps.
    pub again: usize,
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
    /// Of the episodes, those written without steps.
    pub empty: usize,
    /// Evidence labels left out of kept questions because their step was
    /// forgotten.
    pub dropped_evidence: usize,
}

impl Tenant {
    /// Creates the dataset's episode `e`, appends its steps in one batch
    /// (indices and timestamps kept; a step without a timestamp gets the
    /// time of the import) and keeps its questions. Run again (after an
    /// interruption, say), it adds nothing to an episode it finds whole and
    /// unchanged (`again`), and completes the one an interruption cut
    /// short: the creation and the append carry request ids
    /// ([`IMPORT_CREATE`], [`IMPORT_STEPS`]), kept a day and cleared by a
    /// forget or a correction in the episode. An episode of that id with
    /// other steps is [`LiveError::RequestIdReused`] (within that day) or
    /// [`LiveError::EpisodeExists`].
    pub fn import_episode(&self, e: &Episode) -> Result<ImportedEpisode, LiveError> {
        let created = match self.create_episode_once(&NewEpisode::of(e), Some(IMPORT_CREATE)) {
            // Imported before, its request ids gone since (they are kept a
            // day, and a forget or a correction clears them): whole and
            // unchanged, it counts as imported again.
            Err(LiveError::EpisodeExists { .. }) if self.holds(e)? => {
                let questions = self.add_questions(&e.id, &e.questions)?;
                return Ok(ImportedEpisode {
                    steps: e.steps.len(),
                    questions,
                    again: true,
                });
            }
            other => other?,
        };
        let (steps, replayed) = if e.steps.is_empty() {
            // Made before by an import, it counts as imported again only
            // while it has no step either (its source may have forgotten
            // the steps that import brought).
            if created && !self.holds(e)? {
                return Err(LiveError::EpisodeExists {
                    tenant: self.name.clone(),
                    id: e.id.clone(),
                });
            }
            (0, true)
        } else {
            let batch = e.steps.iter().map(NewStep::of).collect();
            let appended = self.append_once(&e.id, batch, Some(IMPORT_STEPS))?;
            (appended.indices.len(), appended.replayed)
        };
        let questions = self.add_questions(&e.id, &e.questions)?;
        Ok(ImportedEpisode {
            steps,
            questions,
            again: created && replayed,
        })
    }

    /// [`Tenant::import_episode`] for each of `episodes` in order, calling
    /// `each` after every one (a progress bar); the first error stops it,
    /// the episodes before it imported.
    pub fn import(
        &self,
        episodes: &[Episode],
        mut each: impl FnMut(&ImportedEpisode),
    ) -> Result<Imported, LiveError> {
        let mut total = Imported::default();
        for e in episodes {
            let done = self.import_episode(e)?;
            total.episodes += 1;
            total.steps += done.steps;
            total.questions += done.questions;
            total.again += usize::from(done.again);
            each(&done);
        }
        Ok(total)
    }

    /// Whether the tenant's episode of `e`'s id has `e`'s fields and steps
    /// (texts and indices; timestamps and the creation time where `e` gives
    /// them).
    fn holds(&self, e: &Episode) -> Result<bool, LiveError> {
        let kept = self.episode(&e.id)?;
        let same_step = |(k, s): (&crate::dataset::Step, &crate::dataset::Step)| {
            (k.index, &k.action, &k.observation) == (s.index, &s.action, &s.observation)
                && (s.timestamp.is_none() || k.timestamp == s.timestamp)
        };
        Ok((&kept.task, &kept.domain, &kept.outcome, &kept.meta)
            == (&e.task, &e.domain, &e.outcome, &e.meta)
            && (e.created.is_none() || kept.created == e.created)
            && kept.steps.len() == e.steps.len()
            && kept.steps.iter().zip(&e.steps).all(same_step))
    }

    /// Writes every episode to `out` (see the module docs); `output` names
    /// it in an error. An episode forgotten while the export runs is left
    /// out; each one's steps are read in one transaction, its questions in
    /// another.
    pub fn export(&self, out: &mut dyn Write, output: &str) -> Result<Exported, LiveError> {
        let mut done = Exported::default();
        for info in self.episodes()? {
            let mut episode = match self.episode(&info.id) {
                Err(LiveError::UnknownEpisode { .. }) => continue,
                other => other?,
            };
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
            done.empty += usize::from(episode.steps.is_empty());
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
    /// once the export is complete and on disk (written beside it first,
    /// under a name of its own); on an error it is left as it was.
    pub fn export_to(&self, path: &Path) -> Result<Exported, LiveError> {
        crate::durable::replace(
            path,
            |out, part| self.export(out, &part.display().to_string()),
            |source, at| LiveError::Io {
                path: at.display().to_string(),
                source,
            },
        )
    }
}
