//! Request ids: a write sent again with the same id (after a timeout, a
//! dropped connection, a crash of the client) is answered as the first
//! one was, and changes nothing (writes.rs calls these).
//!
//! ```text
//! write(episode, .., id) ─ write lock ─► requests(episode, id)?
//!     ├ found, same write ─► its answer, replayed (nothing written)
//!     ├ found, other write ─► RequestIdReused (nothing written)
//!     └ none ─► the write and the (episode, id, digest, answer) row in one transaction
//! ```
//!
//! "The same write" is the same kind (create, append, correct, forget) with
//! the same content: a digest of the steps' text and numbers for an
//! append, of the episode's fields for a create, of the step number and
//! new text for a correction, of what is forgotten (step numbers or the
//! whole episode) for a forget. The row is written in the write's own
//! transaction, so an acknowledged write and its id are on disk together
//! or not at all. Rows are kept for [`KEEP_MILLIS`] (a day) and pruned by
//! later writes with an id (through an index on their time, so a prune
//! reads only the rows it deletes). Any forget or correction in an episode clears
//! its ids (they hold digests of steps' text), then records its own; a
//! forget's row holds no text. So an append sent again after a forget
//! appends anew. A whole-episode forget's id goes to the `forgotten` table
//! (the episode's rows are gone, and with them the key `requests` needs):
//! the episode's id and the number of steps, for a day.

use super::{Forget, LiveError, NewEpisode, NewStep, Tenant};
use crate::text::hash;
use rusqlite::{params, Connection, OptionalExtension};

/// The longest request id, in bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 255;

/// How long a request id is kept: a day, in milliseconds.
pub const KEEP_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// A write's request id and the digest of what it writes.
pub(super) struct Request<'a> {
    id: &'a str,
    digest: String,
}

impl<'a> Request<'a> {
    /// The request for `id` (checked), if there is one; `digest` is only
    /// computed then.
    pub(super) fn new(
        id: Option<&'a str>,
        digest: impl FnOnce() -> String,
    ) -> Result<Option<Request<'a>>, LiveError> {
        match id {
            Some(id) => {
                validate_id(id)?;
                Ok(Some(Request {
                    id,
                    digest: digest(),
                }))
            }
            None => Ok(None),
        }
    }
}

/// A request id is 1 to [`MAX_REQUEST_ID_BYTES`] bytes without control
/// characters.
fn validate_id(id: &str) -> Result<(), LiveError> {
    if id.is_empty() || id.len() > MAX_REQUEST_ID_BYTES || id.chars().any(char::is_control) {
        return Err(LiveError::BadRequestId {
            id: crate::text::cut(id, 64).0.to_string(),
            limit: MAX_REQUEST_ID_BYTES,
        });
    }
    Ok(())
}

/// A hash of the fields, each with its length, so that no two lists of
/// fields give the same bytes.
fn fields_hash<'a>(fields: impl IntoIterator<Item = &'a str>) -> u64 {
    let mut bytes = Vec::new();
    for field in fields {
        bytes.extend_from_slice(&(field.len() as u64).to_le_bytes());
        bytes.extend_from_slice(field.as_bytes());
    }
    hash(&bytes)
}

/// An append's digest: two appends with one id must send the same steps.
pub(super) fn appended(steps: &[NewStep]) -> String {
    let indices: Vec<String> = steps
        .iter()
        .map(|s| s.index.map_or(String::new(), |i| i.to_string()))
        .collect();
    let fields = steps.iter().zip(&indices).flat_map(|(s, index)| {
        let time = s.timestamp.as_deref().unwrap_or("");
        [
            index.as_str(),
            s.action.as_str(),
            s.observation.as_str(),
            time,
        ]
    });
    format!("{:016x}-{}", fields_hash(fields), steps.len())
}

/// A creation's digest: the episode's fields.
pub(super) fn created(e: &NewEpisode) -> String {
    let outcome = e
        .outcome
        .as_deref()
        .map_or(String::new(), |o| format!("+{o}"));
    let mut fields = vec![e.task.as_str(), e.domain.as_str(), outcome.as_str()];
    for (k, v) in &e.meta {
        fields.extend([k.as_str(), v.as_str()]);
    }
    // A creation that names its time differs from one that does not (and
    // one that does not hashes as before this field was added).
    let created = e.created.as_deref().map(|c| format!("@{c}"));
    fields.extend(created.as_deref());
    format!("create-{:016x}", fields_hash(fields))
}

/// A correction's digest: the step number and the new text.
pub(super) fn corrected(index: usize, s: &NewStep) -> String {
    let time = s
        .timestamp
        .as_deref()
        .map_or(String::new(), |t| format!("+{t}"));
    let fields = [s.action.as_str(), s.observation.as_str(), time.as_str()];
    format!("correct-{index}-{:016x}", fields_hash(fields))
}

/// A forget's digest: what it forgets, without any text.
pub(super) fn forgot(what: Forget) -> String {
    match what {
        Forget::Episode => "forget-episode".to_string(),
        Forget::Step(i) => format!("forget-{i}-{i}"),
        Forget::Range(i, l) => format!("forget-{i}-{l}"),
    }
}

/// The digest and answer recorded for `id` in `episode`, if any (and not
/// older than [`KEEP_MILLIS`]). A whole-episode forget's id is in the
/// `forgotten` table: its episode's rows (and their key) are gone.
fn find(
    conn: &Connection,
    episode: &str,
    id: &str,
) -> rusqlite::Result<Option<(String, Vec<usize>)>> {
    let since = now_millis() - KEEP_MILLIS;
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT digest, indices FROM requests WHERE episode = ?1 AND id = ?2 AND created >= ?3",
            params![episode, id, since],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if let Some((digest, indices)) = row {
        let indices = indices
            .split(',')
            .filter_map(|i| i.parse::<usize>().ok())
            .collect();
        return Ok(Some((digest, indices)));
    }
    let forgotten: Option<i64> = conn
        .query_row(
            "SELECT steps FROM forgotten WHERE episode = ?1 AND id = ?2 AND created >= ?3",
            params![episode, id, since],
            |r| r.get(0),
        )
        .optional()?;
    Ok(forgotten.map(|n| {
        (
            forgot(Forget::Episode),
            vec![usize::try_from(n).unwrap_or(0)],
        )
    }))
}

/// Records `id`'s digest and answer (in the write's transaction), and
/// prunes the ids past [`KEEP_MILLIS`].
fn record(
    conn: &Connection,
    episode: &str,
    id: &str,
    digest: &str,
    answer: &[usize],
) -> rusqlite::Result<()> {
    let now = now_millis();
    for table in ["requests", "forgotten"] {
        conn.execute(
            &format!("DELETE FROM {table} WHERE created < ?1"),
            [now - KEEP_MILLIS],
        )?;
    }
    if digest == forgot(Forget::Episode) {
        let steps = answer.first().map_or(0, |&n| n as i64);
        conn.execute(
            "INSERT OR REPLACE INTO forgotten (episode, id, steps, created) VALUES (?1, ?2, ?3, ?4)",
            params![episode, id, steps, now],
        )?;
        return Ok(());
    }
    let list: Vec<String> = answer.iter().map(usize::to_string).collect();
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
    /// What an earlier write with this request gave, if there was one
    /// with the same digest; an error if it was another write.
    pub(super) fn replay(
        &self,
        conn: &Connection,
        episode: &str,
        request: Option<&Request>,
    ) -> Result<Option<Vec<usize>>, LiveError> {
        let Some(r) = request else {
            return Ok(None);
        };
        match find(conn, episode, r.id).map_err(self.db_error())? {
            Some((seen, answer)) if seen == r.digest => Ok(Some(answer)),
            Some(_) => Err(LiveError::RequestIdReused {
                episode: episode.to_string(),
                id: r.id.to_string(),
            }),
            None => Ok(None),
        }
    }

    /// Records the request, if there is one, with the write's answer.
    pub(super) fn record(
        &self,
        conn: &Connection,
        episode: &str,
        request: Option<&Request>,
        answer: &[usize],
    ) -> Result<(), LiveError> {
        match request {
            Some(r) => record(conn, episode, r.id, &r.digest, answer).map_err(self.db_error()),
            None => Ok(()),
        }
    }
}
