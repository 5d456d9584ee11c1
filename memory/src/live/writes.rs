//! The writes: creating an episode, appending, correcting and forgetting
//! steps. Each takes the tenant's write lock for its whole length and
//! commits in one transaction; each may carry a request id, so that a
//! write sent again (after a timeout, a dropped connection, a crash of the
//! client) is answered as the first one was and changes nothing
//! (requests.rs has the rules).
//!
//! ```text
//! write(.., id) ─ write lock ─► id seen in the episode? ─ yes, same write ─► the first answer, replayed
//!                                   │                  └ yes, other write ─► RequestIdReused
//!                                   └ no ─► validate, derive ─► one transaction: the rows, the id's row ─► ack
//! ```

use super::db::{self, EpisodeRow};
use super::requests::{self, Request};
use super::types::{now, number_steps, validate_episode, validate_step};
use super::{Forget, LiveError, NewEpisode, NewStep, Tenant};
use crate::dataset::Step;

/// What an append did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The steps' indices.
    pub indices: Vec<usize>,
    /// Whether they were given to an earlier append with the same request
    /// id (and nothing was written this time).
    pub replayed: bool,
}

/// What a forget did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forgotten {
    /// How many steps went (the first time, when replayed).
    pub steps: usize,
    /// Whether an earlier forget with the same request id did it (and
    /// nothing was deleted this time).
    pub replayed: bool,
}

impl Tenant {
    /// Creates an episode.
    pub fn create_episode(&self, e: &NewEpisode) -> Result<(), LiveError> {
        self.create_episode_once(e, None).map(|_| ())
    }

    /// Creates an episode; with a request `id`, the same creation sent
    /// again returns `Ok(true)` (replayed) where it would be
    /// `EpisodeExists`. Returns whether it was replayed.
    pub fn create_episode_once(&self, e: &NewEpisode, id: Option<&str>) -> Result<bool, LiveError> {
        validate_episode(e)?;
        let request = Request::new(id, || requests::created(e))?;
        let _write = self.write_lock()?;
        let conn = self.conn();
        if self.replay(&conn, &e.id, request.as_ref())?.is_some() {
            return Ok(true);
        }
        if db::episode(&conn, &e.id)
            .map_err(self.db_error())?
            .is_some()
        {
            return Err(LiveError::EpisodeExists {
                tenant: self.name.clone(),
                id: e.id.clone(),
            });
        }
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        db::insert_episode(
            &tx,
            &EpisodeRow {
                id: e.id.clone(),
                task: e.task.clone(),
                domain: e.domain.clone(),
                outcome: e.outcome.clone(),
                meta: e.meta.clone(),
                created: e.created.clone().unwrap_or_else(now),
            },
        )
        .map_err(self.db_error())?;
        self.record(&tx, &e.id, request.as_ref(), &[])?;
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.forget_snapshot(&e.id);
        Ok(false)
    }

    /// Appends one step; returns its index.
    pub fn append(&self, episode: &str, step: NewStep) -> Result<usize, LiveError> {
        Ok(self.append_batch(episode, vec![step])?[0])
    }

    /// Appends steps in order, in one transaction (all or none); returns
    /// their indices. The new steps are embedded and extracted before
    /// anything is written.
    pub fn append_batch(
        &self,
        episode: &str,
        steps: Vec<NewStep>,
    ) -> Result<Vec<usize>, LiveError> {
        Ok(self.append_once(episode, steps, None)?.indices)
    }

    /// Appends a batch as [`Tenant::append_batch`] does; with a request
    /// `id`, a batch sent again with the same id gets the indices of the
    /// first and appends nothing (`replayed`), and the same id with other
    /// steps is refused.
    pub fn append_once(
        &self,
        episode: &str,
        steps: Vec<NewStep>,
        id: Option<&str>,
    ) -> Result<Appended, LiveError> {
        for (i, s) in steps.iter().enumerate() {
            validate_step(Some(i), s)?;
        }
        let request = Request::new(id, || requests::appended(&steps))?;
        let stamp = now();
        let _write = self.write_lock()?;
        let (row, first) = {
            let conn = self.conn();
            let row = self.episode_row(&conn, episode)?;
            if let Some(indices) = self.replay(&conn, episode, request.as_ref())? {
                return Ok(Appended {
                    indices,
                    replayed: true,
                });
            }
            (
                row,
                db::next_index(&conn, episode).map_err(self.db_error())?,
            )
        };
        let steps = number_steps(episode, first, steps, &stamp)?;
        let parts = self.derive(&row, &steps)?;
        let indices: Vec<usize> = steps.iter().map(|s| s.index).collect();
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        for (step, parts) in steps.iter().zip(&parts) {
            db::put_step(&tx, episode, step, parts).map_err(self.db_error())?;
        }
        self.record(&tx, episode, request.as_ref(), &indices)?;
        self.change_begins(episode);
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.note_appended(episode, &steps, parts);
        Ok(Appended {
            indices,
            replayed: false,
        })
    }

    /// Replaces a step's action and observation (and timestamp, if given).
    pub fn correct(&self, episode: &str, index: usize, step: NewStep) -> Result<(), LiveError> {
        self.correct_once(episode, index, step, None).map(|_| ())
    }

    /// Corrects a step as [`Tenant::correct`] does; with a request `id`,
    /// the same correction sent again writes nothing and returns `Ok(true)`
    /// (replayed). A later forget or correction in the episode clears its
    /// ids, as for appends; after that the retry corrects again. Returns
    /// whether it was replayed.
    pub fn correct_once(
        &self,
        episode: &str,
        index: usize,
        step: NewStep,
        id: Option<&str>,
    ) -> Result<bool, LiveError> {
        validate_step(None, &step)?;
        let request = Request::new(id, || requests::corrected(index, &step))?;
        let _write = self.write_lock()?;
        let (row, old) = {
            let conn = self.conn();
            let row = self.episode_row(&conn, episode)?;
            if self.replay(&conn, episode, request.as_ref())?.is_some() {
                return Ok(true);
            }
            let old = db::plain_steps(&conn, episode, Some(index)).map_err(self.db_error())?;
            match old.into_iter().next() {
                Some(old) => (row, old),
                None => return Err(self.unknown_step(&conn, episode, index)),
            }
        };
        let new = Step {
            index,
            action: step.action,
            observation: step.observation,
            timestamp: step.timestamp.or(old.timestamp),
        };
        let parts = self.derive(&row, std::slice::from_ref(&new))?;
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        db::put_step(&tx, episode, &new, &parts[0]).map_err(self.db_error())?;
        db::delete_state(&tx, episode).map_err(self.db_error())?;
        // The ids' digests hold the old text.
        requests::clear(&tx, episode).map_err(self.db_error())?;
        self.record(&tx, episode, request.as_ref(), &[])?;
        self.change_begins(episode);
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.forget_snapshot(episode);
        self.remove_ann(episode);
        Ok(false)
    }

    /// Forgets steps or the whole episode; returns how many steps went.
    /// After it returns no query returns them; after [`Tenant::compact`] no
    /// file holds them.
    pub fn forget(&self, episode: &str, what: Forget) -> Result<usize, LiveError> {
        Ok(self.forget_once(episode, what, None)?.steps)
    }

    /// Forgets as [`Tenant::forget`] does; with a request `id`, the same
    /// forget sent again deletes nothing and answers as the first did
    /// (`replayed`), where it would find the steps or the episode gone.
    /// The id's row keeps the episode's id and what was forgotten (step
    /// numbers), never a step's text.
    pub fn forget_once(
        &self,
        episode: &str,
        what: Forget,
        id: Option<&str>,
    ) -> Result<Forgotten, LiveError> {
        let request = Request::new(id, || requests::forgot(what))?;
        let write = self.write_lock()?;
        self.forget_held(&write, episode, what, request.as_ref())
    }

    /// [`Tenant::forget_once`]'s work, under the write lock `_write`.
    pub(super) fn forget_held(
        &self,
        _write: &std::sync::MutexGuard<'_, ()>,
        episode: &str,
        what: Forget,
        request: Option<&Request<'_>>,
    ) -> Result<Forgotten, LiveError> {
        let conn = self.conn();
        if let Some(steps) = self.replay(&conn, episode, request)? {
            return Ok(Forgotten {
                steps: steps.first().copied().unwrap_or(0),
                replayed: true,
            });
        }
        self.episode_row(&conn, episode)?;
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        let gone = match what {
            Forget::Episode => db::delete_episode(&tx, episode).map_err(self.db_error())?,
            Forget::Step(i) | Forget::Range(i, _) => {
                let last = match what {
                    Forget::Range(_, l) => l,
                    _ => i,
                };
                let n = db::delete_steps(&tx, episode, i, last).map_err(self.db_error())?;
                if n == 0 {
                    return Err(self.unknown_step(&tx, episode, i));
                }
                db::delete_state(&tx, episode).map_err(self.db_error())?;
                requests::clear(&tx, episode).map_err(self.db_error())?;
                n
            }
        };
        self.record(&tx, episode, request, &[gone])?;
        self.change_begins(episode);
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.forget_snapshot(episode);
        self.remove_ann(episode);
        Ok(Forgotten {
            steps: gone,
            replayed: false,
        })
    }
}
