//! Changing an episode's fields after its creation: an agent records how
//! its task ended, moves it to another domain, or replaces its metadata
//! ([`Tenant::update_episode`]).
//!
//! ```text
//! EpisodeUpdate ──write lock──► the episode's row, changed ──checks (sizes)
//!     ──► one transaction: UPDATE episodes; the persisted state deleted when the outcome
//!         changes (S's `Outcome:` line is built from it)
//!     ──► the snapshot dropped (its episode holds the old fields; a server catches it up)
//! ```
//!
//! The domain and the metadata reach no structure (policies test them), so
//! the state is kept and the next question reopens it with the new row. An
//! episode updated after its steps answers exactly as one created with
//! those fields and the same steps (`update_tests`).

use super::types::check_sizes;
use super::{db, EpisodeUpdate, LiveError, Tenant};

impl Tenant {
    /// Replaces the fields `update` gives (see [`EpisodeUpdate`]); the
    /// task stays. Returns whether anything changed: the same update sent
    /// again (a retry) changes nothing and returns `false`, and so does an
    /// update that gives no field. An update sets fields, so it needs no
    /// request id; a late retry of one after another update sets its
    /// fields again. An unknown episode is [`LiveError::UnknownEpisode`];
    /// a field past the text limit [`LiveError::TooLarge`], and nothing is
    /// written. A changed outcome makes the next question assemble the
    /// episode from its stored parts (about a second at 15,000 steps with
    /// the offline builders; the LLM summarizer summarizes it again), as
    /// after a correction; the request ids of the episode's earlier writes
    /// are cleared, as a correction clears them.
    pub fn update_episode(&self, episode: &str, update: &EpisodeUpdate) -> Result<bool, LiveError> {
        let _write = self.write_lock()?;
        let conn = self.conn();
        let old = self.episode_row(&conn, episode)?;
        let mut row = old.clone();
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
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        db::update_episode(&tx, &row).map_err(self.db_error())?;
        if row.outcome != old.outcome {
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
}
