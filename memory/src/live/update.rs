//! Changing an episode's fields after its creation: an agent records how
//! its task ended, restates the task, moves it to another domain, or
//! replaces its metadata ([`Tenant::update_episode`]).
//!
//! ```text
//! EpisodeUpdate ──write lock──► the episode's row, changed ──checks (sizes)
//!     ──► a changed task, with an extractor that reads it (the LLM one):
//!         every step's relations extracted again under it, before any write
//!     ──► one transaction: UPDATE episodes (and the steps' relations); the
//!         persisted state deleted when the task or the outcome changes (S's
//!         `Task:` and `Outcome:` lines are built from them)
//!     ──► the snapshot dropped (its episode holds the old fields; a server catches it up)
//! ```
//!
//! The domain and the metadata reach no structure (policies test them), so
//! the state is kept and the next question reopens it with the new row. An
//! episode updated after its steps answers exactly as one created with
//! those fields and the same steps (`update_tests`).

use super::types::check_sizes;
use super::{db, episode_of, EpisodeUpdate, LiveError, Tenant};
use crate::structures::Triple;

impl Tenant {
    /// Replaces the fields `update` gives (see [`EpisodeUpdate`]). Returns
    /// whether anything changed: the same update sent again (a retry)
    /// changes nothing and returns `false`, and so does an update that
    /// gives no field. An update sets fields, so it needs no request id; a
    /// late retry of one after another update sets its fields again. An
    /// unknown episode is [`LiveError::UnknownEpisode`]; a field past the
    /// text limit [`LiveError::TooLarge`], and nothing is written. A
    /// changed task or outcome makes the next question assemble the
    /// episode from its stored parts (about a second at 15,000 steps with
    /// the offline builders; the LLM summarizer summarizes it again), as
    /// after a correction. A changed task, with an extractor that reads it
    /// ([`crate::structures::TripleExtractor::reads_task`]: the LLM one),
    /// also extracts every step's relations again, one call per step, before
    /// anything is written: a failed call is [`LiveError::Plugin`] and
    /// leaves the episode as it was. The request ids of the episode's
    /// earlier writes are cleared, as a correction clears them.
    pub fn update_episode(&self, episode: &str, update: &EpisodeUpdate) -> Result<bool, LiveError> {
        let _write = self.write_lock()?;
        let conn = self.conn();
        let old = self.episode_row(&conn, episode)?;
        let mut row = old.clone();
        if let Some(task) = &update.task {
            row.task.clone_from(task);
        }
        if let Some(domain) = &update.domain {
            row.domain.clone_from(domain);
        }
        if let Some(outcome) = &update.outcome {
            row.outcome.clone_from(outcome);
        }
        if let Some(meta) = &update.meta {
            row.meta.clone_from(meta);
        }
        check_sizes(&row.task, &row.domain, row.outcome.as_deref(), &row.meta)?;
        if row == old {
            return Ok(false);
        }
        let steps = if row.task != old.task && self.plugins.extractor.reads_task() {
            Some(db::plain_steps(&conn, episode, None).map_err(self.db_error())?)
        } else {
            None
        };
        // The extractor's calls take time: other handles may read
        // meanwhile (the write lock keeps writers out).
        drop(conn);
        let relations = match steps {
            Some(steps) => Some(self.extract_again(&row, steps)?),
            None => None,
        };
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        db::update_episode(&tx, &row).map_err(self.db_error())?;
        for (idx, triples) in relations.iter().flatten() {
            db::set_triples(&tx, episode, *idx, triples).map_err(self.db_error())?;
        }
        if row.outcome != old.outcome || row.task != old.task {
            db::delete_state(&tx, episode).map_err(self.db_error())?;
        }
        // An import's request ids would count the episode as imported
        // again unchanged; its fields have changed.
        super::requests::clear(&tx, episode).map_err(self.db_error())?;
        self.change_begins(episode);
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.forget_snapshot(episode);
        Ok(true)
    }

    /// Each step's relations, extracted under the episode's new row (the
    /// whole episode is given, so that an extractor may fetch the steps
    /// ahead, several at once, as an import does).
    fn extract_again(
        &self,
        row: &super::EpisodeRow,
        steps: Vec<crate::dataset::Step>,
    ) -> Result<Vec<(usize, Vec<Triple>)>, LiveError> {
        let episode = episode_of(row.clone(), steps);
        episode
            .steps
            .iter()
            .map(|step| {
                let triples = self
                    .plugins
                    .extractor
                    .extract(&episode, step)
                    .map_err(|source| LiveError::Plugin {
                        episode: row.id.clone(),
                        source,
                    })?;
                Ok((step.index, triples))
            })
            .collect()
    }
}
