//! Request ids: an append sent again with the same id (after a timeout, a
//! dropped connection, a crash of the client) is answered with the indices
//! the first one was given, and appends nothing.
//!
//! ```text
//! append(episode, steps, id) ─ write lock ─► requests(episode, id)?
//!     ├ found, same steps ─► its indices, replayed (nothing written)
//!     ├ found, other steps ─► RequestIdReused (nothing written)
//!     └ none ─► the steps and the (episode, id, digest, indices) row in one transaction
//! ```
//!
//! The row is written in the append's own transaction, so an acknowledged
//! append and its id are on disk together or not at all. Rows are kept for
//! [`KEEP_MILLIS`] (a day) and pruned by later appends with an id. Any
//! forget in an episode clears its ids (they hold a digest of the steps'
//! text), so an append sent again after a forget appends anew.

use super::types::{now, number_steps, validate_step};
use super::{db, LiveError, NewStep, Tenant};
use crate::text::hash;
use rusqlite::{params, Connection, OptionalExtension};

/// The longest request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 255;

/// How long a request id is kept: a day, in milliseconds.
pub const KEEP_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// What an append with an id did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The steps' indices.
    pub indices: Vec<usize>,
    /// Whether they were given to an earlier append with the same id (and
    /// nothing was written this time).
    pub replayed: bool,
}

/// A request id is 1 to [`MAX_REQUEST_ID_BYTES`] bytes without control
/// characters.
pub(super) fn validate_id(id: &str) -> Result<(), LiveError> {
    if id.is_empty() || id.len() > MAX_REQUEST_ID_BYTES || id.chars().any(char::is_control) {
        return Err(LiveError::BadRequestId {
            id: crate::text::cut(id, 64).0.to_string(),
            limit: MAX_REQUEST_ID_BYTES,
        });
    }
    Ok(())
}

/// A digest of the steps as sent: two appends with one id must send the
/// same steps.
pub(super) fn digest(steps: &[NewStep]) -> String {
    let mut bytes = Vec::new();
    for s in steps {
        let index = s.index.map_or(String::new(), |i| i.to_string());
        let time = s.timestamp.as_deref().unwrap_or("");
        for field in [index.as_str(), &s.action, &s.observation, time] {
            bytes.extend_from_slice(&(field.len() as u64).to_le_bytes());
            bytes.extend_from_slice(field.as_bytes());
        }
    }
    format!("{:016x}-{}", hash(&bytes), steps.len())
}

/// The digest and indices recorded for `id` in `episode`, if any (and not
/// older than [`KEEP_MILLIS`]).
pub(super) fn find(
    conn: &Connection,
    episode: &str,
    id: &str,
) -> rusqlite::Result<Option<(String, Vec<usize>)>> {
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT digest, indices FROM requests WHERE episode = ?1 AND id = ?2 AND created >= ?3",
            params![episode, id, now_millis() - KEEP_MILLIS],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(row.map(|(digest, indices)| {
        let indices = indices
            .split(',')
            .filter_map(|i| i.parse::<usize>().ok())
            .collect();
        (digest, indices)
    }))
}

/// Records `id`'s digest and indices (in the append's transaction), and
/// prunes the ids past [`KEEP_MILLIS`].
pub(super) fn record(
    conn: &Connection,
    episode: &str,
    id: &str,
    digest: &str,
    indices: &[usize],
) -> rusqlite::Result<()> {
    let now = now_millis();
    conn.execute(
        "DELETE FROM requests WHERE created < ?1",
        [now - KEEP_MILLIS],
    )?;
    let list: Vec<String> = indices.iter().map(usize::to_string).collect();
    conn.execute(
        "INSERT OR REPLACE INTO requests (episode, id, digest, indices, created) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![episode, id, digest, list.join(","), now],
    )?;
    Ok(())
}

/// Clears an episode's request ids (a forget).
pub(super) fn clear(conn: &Connection, episode: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM requests WHERE episode = ?1", [episode])?;
    Ok(())
}

fn now_millis() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Tenant {
    /// Appends a batch as [`Tenant::append_batch`] does; with a request
    /// `id`, a batch sent again with the same id gets the indices of the
    /// first and appends nothing (`replayed`), and the same id with other
    /// steps is refused (the module doc has the rules).
    pub fn append_once(
        &self,
        episode: &str,
        steps: Vec<NewStep>,
        id: Option<&str>,
    ) -> Result<Appended, LiveError> {
        for (i, s) in steps.iter().enumerate() {
            validate_step(Some(i), s)?;
        }
        let request = match id {
            Some(id) => {
                validate_id(id)?;
                Some((id, digest(&steps)))
            }
            None => None,
        };
        let stamp = now();
        let _write = self.write_lock()?;
        let (row, first) = {
            let conn = self.conn();
            let row = self.episode_row(&conn, episode)?;
            if let Some((id, digest)) = &request {
                if let Some(seen) = self.replay(&conn, episode, id, digest)? {
                    return Ok(seen);
                }
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
        if let Some((id, digest)) = &request {
            record(&tx, episode, id, digest, &indices).map_err(self.db_error())?;
        }
        self.change_begins(episode);
        tx.commit().map_err(self.db_error())?;
        drop(conn);
        self.note_appended(episode, &steps, parts);
        Ok(Appended {
            indices,
            replayed: false,
        })
    }

    /// What an earlier append with this request id got, if there was one
    /// with the same steps; an error if it had other steps.
    fn replay(
        &self,
        conn: &Connection,
        episode: &str,
        id: &str,
        digest: &str,
    ) -> Result<Option<Appended>, LiveError> {
        match find(conn, episode, id).map_err(self.db_error())? {
            Some((seen, indices)) if seen == digest => Ok(Some(Appended {
                indices,
                replayed: true,
            })),
            Some(_) => Err(LiveError::RequestIdReused {
                episode: episode.to_string(),
                id: id.to_string(),
            }),
            None => Ok(None),
        }
    }
}
