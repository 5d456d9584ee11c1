//! The tenant's database: one SQLite file in WAL mode with
//! `synchronous = FULL` (a commit that returned is on disk) and
//! `secure_delete = ON` (freed pages are zeroed), and the rows it keeps.
//!
//! ```text
//! meta(key, value)                      format, version, embedder, config
//! episodes(id, task, domain, outcome, meta, created)
//! steps(episode, idx, action, observation, timestamp, tokens, vector, triples)
//! states(episode, steps, last_idx, fingerprint, state)   built structures, to open fast
//! requests(episode, id, digest, indices, created)       writes' request ids (requests.rs)
//! forgotten(episode, id, steps, created)                 the ids of whole-episode forgets (requests.rs)
//! ```
//!
//! A step's row holds what the model-backed builders derived from it
//! ([`crate::StepParts`]), so a step is embedded and extracted once, when it
//! is written, and forgetting the row forgets those too.

use super::word_index;
use super::{LiveError, MAX_STEP_INDEX};
use crate::dataset::Step;
use crate::structures::StepParts;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::BTreeMap;
use std::path::Path;

/// The format marker and version in `meta`.
pub const FORMAT: &str = "mesa-live-memory";
/// The layout version this build writes. Version 2 added `states`,
/// version 3 the word index (`step_rows`, `step_words`: module
/// `word_index`); an older file is upgraded when opened (the tables are
/// added and the index filled), so that a build that does not know them
/// (and would not keep them with the steps) refuses the file from then on.
pub const VERSION: i64 = 3;
/// The oldest version this build upgrades.
const OLDEST: i64 = 1;

/// Whether this build upgrades a file (or root marker) of `version`.
pub fn upgrades(version: i64) -> bool {
    (OLDEST..VERSION).contains(&version)
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) STRICT;
CREATE TABLE IF NOT EXISTS episodes (
    id TEXT PRIMARY KEY,
    task TEXT NOT NULL,
    domain TEXT NOT NULL,
    outcome TEXT,
    meta TEXT NOT NULL,
    created TEXT NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS steps (
    episode TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    action TEXT NOT NULL,
    observation TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    vector BLOB NOT NULL,
    triples TEXT NOT NULL,
    PRIMARY KEY (episode, idx)
) STRICT, WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS states (
    episode TEXT PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
    steps INTEGER NOT NULL,
    last_idx INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    state BLOB NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS requests (
    episode TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    digest TEXT NOT NULL,
    indices TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (episode, id)
) STRICT;
CREATE TABLE IF NOT EXISTS forgotten (
    episode TEXT NOT NULL,
    id TEXT NOT NULL,
    steps INTEGER NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (episode, id)
) STRICT;
CREATE INDEX IF NOT EXISTS requests_created ON requests (created);
CREATE INDEX IF NOT EXISTS forgotten_created ON forgotten (created);
CREATE TABLE IF NOT EXISTS questions (
    episode TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    body TEXT NOT NULL,
    UNIQUE (episode, id)
) STRICT;
";

/// A persisted memory state: the number of steps it covers, the last one's
/// index and what it was built under. Its bytes are in the row's blob as
/// sections ([`crate::structures::StateBytes`]): each but the last after its length (8
/// bytes, little-endian), the last to the end; [`StateBlob`] reads them
/// one by one, so that the first can be decoded while the others are read.
#[derive(Debug, Clone)]
pub struct StateRow {
    /// Steps covered (the first `steps` of the episode).
    pub steps: usize,
    /// The index of the last covered step.
    pub last_idx: usize,
    /// [`crate::structures::state_fingerprint`] at the time.
    pub fingerprint: String,
}

/// Where the next section of a state's blob starts, in the transaction
/// that read its row. Each read goes straight into its buffer (incremental
/// blob I/O), not assembled by SQLite first and copied.
#[derive(Debug)]
pub struct StateBlob {
    rowid: i64,
    at: usize,
}

/// Bytes before a section: its length.
const SECTION_HEAD: usize = 8;

impl StateBlob {
    /// The next section; empty (and every later one too) if its length
    /// is damaged: it then does not decode.
    pub fn next(&mut self, conn: &Connection) -> rusqlite::Result<Vec<u8>> {
        let blob = conn.blob_open(rusqlite::MAIN_DB, "states", "state", self.rowid, true)?;
        let mut head = [0u8; SECTION_HEAD];
        let left = blob.len().saturating_sub(self.at + SECTION_HEAD);
        let n = match blob.read_at_exact(&mut head, self.at) {
            Ok(()) => usize::try_from(u64::from_le_bytes(head))
                .ok()
                .filter(|&n| n <= left),
            Err(_) => None,
        };
        let Some(n) = n else {
            self.at = blob.len();
            return Ok(Vec::new());
        };
        let mut section = vec![0; n];
        blob.read_at_exact(&mut section, self.at + SECTION_HEAD)?;
        self.at += SECTION_HEAD + n;
        Ok(section)
    }

    /// The last section: the rest of the blob.
    pub fn rest(&mut self, conn: &Connection) -> rusqlite::Result<Vec<u8>> {
        let blob = conn.blob_open(rusqlite::MAIN_DB, "states", "state", self.rowid, true)?;
        let mut rest = vec![0; blob.len().saturating_sub(self.at)];
        blob.read_at_exact(&mut rest, self.at.min(blob.len()))?;
        self.at = blob.len();
        Ok(rest)
    }
}

/// The persisted state of an episode, if any, and where its bytes are;
/// with `fingerprint`, only one written under it (another is not read at
/// all).
pub fn state(
    conn: &Connection,
    episode: &str,
    fingerprint: Option<&str>,
) -> rusqlite::Result<Option<(StateRow, StateBlob)>> {
    conn.query_row(
        "SELECT rowid, steps, last_idx, fingerprint FROM states
         WHERE episode = ?1 AND (?2 IS NULL OR fingerprint = ?2)",
        params![episode, fingerprint],
        |r| {
            let row = StateRow {
                steps: r.get::<_, i64>(1)? as usize,
                last_idx: r.get::<_, i64>(2)? as usize,
                fingerprint: r.get(3)?,
            };
            let rowid = r.get::<_, i64>(0)?;
            Ok((row, StateBlob { rowid, at: 0 }))
        },
    )
    .optional()
}

/// An episode's persisted state with its three sections (G, the rest,
/// the renderings' text), whatever it was built under.
#[cfg(test)]
pub fn read_state(
    conn: &Connection,
    episode: &str,
) -> rusqlite::Result<Option<(StateRow, [Vec<u8>; 3])>> {
    let Some((row, mut blob)) = state(conn, episode, None)? else {
        return Ok(None);
    };
    let sections = [blob.next(conn)?, blob.next(conn)?, blob.rest(conn)?];
    Ok(Some((row, sections)))
}

/// Replaces an episode's persisted state with `sections` (each but the
/// last after its length).
pub fn put_state(
    conn: &Connection,
    episode: &str,
    row: &StateRow,
    sections: &[&[u8]],
) -> rusqlite::Result<()> {
    let total: usize = sections.iter().map(|s| SECTION_HEAD + s.len()).sum();
    let mut blob = Vec::with_capacity(total);
    for (k, section) in sections.iter().enumerate() {
        if k + 1 < sections.len() {
            blob.extend_from_slice(&(section.len() as u64).to_le_bytes());
        }
        blob.extend_from_slice(section);
    }
    conn.execute(
        "INSERT OR REPLACE INTO states (episode, steps, last_idx, fingerprint, state)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![
            episode,
            row.steps as i64,
            row.last_idx as i64,
            row.fingerprint,
            blob
        ],
    )
    .map(|_| ())
}

/// Drops an episode's persisted state (it holds the text of every step it
/// covers, so a forget or a correction drops it in the same transaction).
pub fn delete_state(conn: &Connection, episode: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM states WHERE episode = ?1", [episode])
        .map(|_| ())
}

/// An episode's row.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeRow {
    /// The id.
    pub id: String,
    /// The task.
    pub task: String,
    /// The domain.
    pub domain: String,
    /// How it ended, if known.
    pub outcome: Option<String>,
    /// Other metadata.
    pub meta: BTreeMap<String, String>,
    /// When it was created (RFC 3339).
    pub created: String,
}

/// Opens (creating if new) the database at `path` and checks its format.
pub fn open(path: &Path) -> Result<Connection, LiveError> {
    let shown = path.display().to_string();
    let db = |source| LiveError::Db {
        path: shown.clone(),
        source,
    };
    let conn = Connection::open(path).map_err(db)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(db)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(db)?;
    conn.pragma_update(None, "secure_delete", "ON")
        .map_err(db)?;
    conn.pragma_update(None, "foreign_keys", "ON").map_err(db)?;
    // Reads of the database file through a mapping (SQLite caps its size
    // at its build's maximum, about 2 GiB on Linux): opening an episode
    // reads its state blob and steps without a copy per page. SQLite still
    // writes with write(2).
    conn.pragma_update(None, "mmap_size", 1i64 << 31)
        .map_err(db)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(db)?;
    conn.execute_batch(SCHEMA).map_err(db)?;
    conn.execute_batch(word_index::SCHEMA).map_err(db)?;
    let format: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'format'", [], |r| {
            r.get(0)
        })
        .optional()
        .map_err(db)?;
    match format.as_deref() {
        None => {
            // `OR IGNORE`: a reader that opens a new tenant's file while its
            // writer makes it may find the rows written in between.
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('format', ?1), ('version', ?2)",
                params![FORMAT, VERSION.to_string()],
            )
            .map_err(db)?;
        }
        Some(FORMAT) => {
            let version: String = conn
                .query_row("SELECT value FROM meta WHERE key = 'version'", [], |r| {
                    r.get(0)
                })
                .map_err(db)?;
            let found = version.parse::<i64>().unwrap_or(0);
            if upgrades(found) {
                let tx = conn.unchecked_transaction().map_err(db)?;
                word_index::fill(&tx).map_err(db)?;
                tx.execute(
                    "UPDATE meta SET value = ?1 WHERE key = 'version'",
                    [VERSION.to_string()],
                )
                .map_err(db)?;
                tx.commit().map_err(db)?;
            } else if found != VERSION {
                return Err(LiveError::Version {
                    path: shown,
                    found,
                    expected: VERSION,
                });
            }
        }
        Some(other) => {
            return Err(LiveError::NotAMemory {
                dir: shown,
                reason: format!("its format marker is `{other}`"),
            })
        }
    }
    Ok(conn)
}

/// Reads a `meta` value.
pub fn meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()
}

/// Writes a `meta` value.
pub fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT(key) DO UPDATE SET value = ?2",
        params![key, value],
    )
    .map(|_| ())
}

/// One episode's row, if it exists.
pub fn episode(conn: &Connection, id: &str) -> rusqlite::Result<Option<EpisodeRow>> {
    conn.query_row(
        "SELECT id, task, domain, outcome, meta, created FROM episodes WHERE id = ?1",
        [id],
        episode_row,
    )
    .optional()
}

/// Every episode with its number of steps, by id.
pub fn episodes(conn: &Connection) -> rusqlite::Result<Vec<(EpisodeRow, usize)>> {
    let mut stmt = conn.prepare(&format!("{LISTED} ORDER BY e.id"))?;
    let rows = stmt.query_map([], listed)?;
    rows.collect()
}

/// One episode with its number of steps, if it exists.
pub fn episode_listed(
    conn: &Connection,
    id: &str,
) -> rusqlite::Result<Option<(EpisodeRow, usize)>> {
    conn.query_row(&format!("{LISTED} WHERE e.id = ?1"), [id], listed)
        .optional()
}

/// An episode's row and its number of steps.
const LISTED: &str = "SELECT e.id, e.task, e.domain, e.outcome, e.meta, e.created,
        (SELECT count(*) FROM steps s WHERE s.episode = e.id)
    FROM episodes e";

fn listed(r: &rusqlite::Row<'_>) -> rusqlite::Result<(EpisodeRow, usize)> {
    Ok((episode_row(r)?, r.get::<_, i64>(6)? as usize))
}

fn episode_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<EpisodeRow> {
    let meta: String = r.get(4)?;
    Ok(EpisodeRow {
        id: r.get(0)?,
        task: r.get(1)?,
        domain: r.get(2)?,
        outcome: r.get(3)?,
        meta: serde_json::from_str(&meta).unwrap_or_default(),
        created: r.get(5)?,
    })
}

/// Inserts an episode.
pub fn insert_episode(conn: &Connection, e: &EpisodeRow) -> rusqlite::Result<()> {
    let meta = serde_json::to_string(&e.meta).unwrap_or_else(|_| "{}".into());
    conn.execute(
        "INSERT INTO episodes (id, task, domain, outcome, meta, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![e.id, e.task, e.domain, e.outcome, meta, e.created],
    )
    .map(|_| ())
}

/// Replaces an episode's task, domain, outcome and metadata.
pub fn update_episode(conn: &Connection, e: &EpisodeRow) -> rusqlite::Result<()> {
    let meta = serde_json::to_string(&e.meta).unwrap_or_else(|_| "{}".into());
    conn.execute(
        "UPDATE episodes SET task = ?2, domain = ?3, outcome = ?4, meta = ?5 WHERE id = ?1",
        params![e.id, e.task, e.domain, e.outcome, meta],
    )
    .map(|_| ())
}

/// Replaces a step's relations (its other parts stay).
pub fn set_triples(
    conn: &Connection,
    episode: &str,
    idx: usize,
    triples: &[crate::structures::graph::Triple],
) -> rusqlite::Result<()> {
    let triples = serde_json::to_string(triples).unwrap_or_else(|_| "[]".into());
    conn.execute(
        "UPDATE steps SET triples = ?3 WHERE episode = ?1 AND idx = ?2",
        params![episode, idx as i64, triples],
    )
    .map(|_| ())
}

/// The `meta` key that keeps an episode's next free index once steps at
/// its end were forgotten (so their indices are never given again).
fn next_key(episode: &str) -> String {
    format!("next-index:{episode}")
}

/// The next step index of an episode: one past the last step it has had
/// (forgotten ones included), or 0.
pub fn next_index(conn: &Connection, episode: &str) -> rusqlite::Result<usize> {
    let last: Option<i64> = conn.query_row(
        "SELECT max(idx) FROM steps WHERE episode = ?1",
        [episode],
        |r| r.get(0),
    )?;
    let kept = meta(conn, &next_key(episode))?.and_then(|v| v.parse::<usize>().ok());
    Ok(last.map_or(0, |l| l as usize + 1).max(kept.unwrap_or(0)))
}

/// Inserts or replaces a step with its parts.
pub fn put_step(
    conn: &Connection,
    episode: &str,
    step: &Step,
    parts: &StepParts,
) -> rusqlite::Result<()> {
    let triples = serde_json::to_string(&parts.triples).unwrap_or_else(|_| "[]".into());
    let vector = crate::le::f32s_to_le(&parts.vector);
    conn.execute(
        "INSERT OR REPLACE INTO steps (episode, idx, action, observation, timestamp, tokens, vector, triples)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            episode,
            step.index as i64,
            step.action,
            step.observation,
            step.timestamp.as_deref().unwrap_or(""),
            i64::from(parts.tokens),
            vector,
            triples
        ],
    )?;
    let idx = step.index as i64;
    word_index::put(conn, episode, idx, &step.action, &step.observation)
}

/// An episode's steps and their parts, in index order (an `Err` part is
/// damaged, and names its step). The relations are kept as their JSON
/// until [`StoredParts::parse_into`]. For the steps with an index up to
/// `covered` (those a persisted state covers: an opening from it does not
/// need them) neither the relations nor the vector are read; their parts
/// hold the token count alone.
pub fn steps(
    conn: &Connection,
    episode: &str,
    covered: Option<usize>,
) -> rusqlite::Result<Vec<(Step, Result<StoredParts, String>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx, action, observation, timestamp, tokens,
                CASE WHEN ?2 IS NULL OR idx > ?2 THEN vector END,
                CASE WHEN ?2 IS NULL OR idx > ?2 THEN triples END
         FROM steps WHERE episode = ?1 ORDER BY idx",
    )?;
    let skip = covered.map(|i| i as i64);
    let rows = stmt.query_map(params![episode, skip], step_with_parts)?;
    rows.collect()
}

/// A step and its parts from the columns idx, action, observation,
/// timestamp, tokens, vector and triples (the last two may be NULL).
fn step_with_parts(r: &rusqlite::Row<'_>) -> rusqlite::Result<(Step, Result<StoredParts, String>)> {
    let step = step_row(r)?;
    let tokens: i64 = r.get(4)?;
    let vector = r.get_ref(5)?.as_blob_or_null()?;
    let triples: Option<String> = r.get(6)?;
    let parts = stored_parts(step.index, tokens, vector, triples);
    Ok((step, parts))
}

/// Whether an episode still has the step at `idx` (a persisted state's
/// last: every change that removes or rewrites a step the state covers
/// deletes the state in its own transaction, so this is a check against a
/// store changed behind its back). One seek: the steps' keys are their
/// whole rows, so a scan over a range of them would copy every text.
pub fn has_step(conn: &Connection, episode: &str, idx: usize) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT 1 FROM steps WHERE episode = ?1 AND idx = ?2")?
        .exists(params![episode, idx as i64])
}

/// An episode's steps after index `after` and their parts, in index
/// order, as [`steps`] reads them (a range the index seeks to).
pub fn steps_after(
    conn: &Connection,
    episode: &str,
    after: usize,
) -> rusqlite::Result<Vec<(Step, Result<StoredParts, String>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx, action, observation, timestamp, tokens, vector, triples
         FROM steps WHERE episode = ?1 AND idx > ?2 ORDER BY idx",
    )?;
    let after = after as i64;
    let rows = stmt.query_map(params![episode, after], step_with_parts)?;
    rows.collect()
}

/// An episode's steps without their parts, in index order; with `only`,
/// just that step (if it exists).
pub fn plain_steps(
    conn: &Connection,
    episode: &str,
    only: Option<usize>,
) -> rusqlite::Result<Vec<Step>> {
    let mut stmt = conn.prepare_cached(
        "SELECT idx, action, observation, timestamp FROM steps
         WHERE episode = ?1 AND (?2 IS NULL OR idx = ?2) ORDER BY idx",
    )?;
    let rows = stmt.query_map(params![episode, only.map(|i| i as i64)], step_row)?;
    rows.collect()
}

/// An episode's step indices and timestamps (empty when none), in order,
/// without their texts.
pub fn step_times(conn: &Connection, episode: &str) -> rusqlite::Result<Vec<(usize, String)>> {
    let mut stmt =
        conn.prepare_cached("SELECT idx, timestamp FROM steps WHERE episode = ?1 ORDER BY idx")?;
    let rows = stmt.query_map(params![episode], |r| {
        Ok((r.get::<_, i64>(0)? as usize, r.get::<_, String>(1)?))
    })?;
    rows.collect()
}

/// A step from the first four columns: idx, action, observation, timestamp.
fn step_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Step> {
    let timestamp: String = r.get(3)?;
    Ok(Step {
        index: r.get::<_, i64>(0)? as usize,
        action: r.get(1)?,
        observation: r.get(2)?,
        timestamp: (!timestamp.is_empty()).then_some(timestamp),
    })
}

/// A step's parts as stored: its relations still JSON.
#[derive(Debug)]
pub struct StoredParts {
    /// The parts, with no relations yet.
    pub parts: StepParts,
    index: usize,
    /// `None` when not read.
    triples: Option<String>,
}

impl StoredParts {
    /// Reads the relations into `parts` (the parts of this step). An error
    /// if they are damaged, or were not read.
    pub fn parse_into(&self, parts: &mut StepParts) -> Result<(), String> {
        let index = self.index;
        let json = self
            .triples
            .as_deref()
            .ok_or_else(|| format!("step {index}: the relations were not read"))?;
        parts.triples = serde_json::from_str(json)
            .map_err(|e| format!("step {index}: the relations are not JSON: {e}"))?;
        Ok(())
    }
}

fn stored_parts(
    index: usize,
    tokens: i64,
    vector: Option<&[u8]>,
    triples: Option<String>,
) -> Result<StoredParts, String> {
    let vector = crate::le::f32s_from_le(vector.unwrap_or_default())
        .ok_or_else(|| format!("step {index}: the vector is not whole floats"))?;
    let parts = StepParts {
        tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
        vector,
        triples: Vec::new(),
    };
    Ok(StoredParts {
        parts,
        index,
        triples,
    })
}

/// Deletes the steps with `first <= idx <= last`; returns how many. The
/// episode's next free index stays where it was.
pub fn delete_steps(
    conn: &Connection,
    episode: &str,
    first: usize,
    last: usize,
) -> rusqlite::Result<usize> {
    if first > MAX_STEP_INDEX {
        return Ok(0);
    }
    let next = next_index(conn, episode)?;
    let (first, last) = (first as i64, last.min(MAX_STEP_INDEX) as i64);
    word_index::delete(conn, episode, first, last)?;
    let gone = conn.execute(
        "DELETE FROM steps WHERE episode = ?1 AND idx >= ?2 AND idx <= ?3",
        params![episode, first, last],
    )?;
    if gone > 0 {
        set_meta(conn, &next_key(episode), &next.to_string())?;
    }
    Ok(gone)
}

/// Keeps questions with an episode (one replaces a question of the same
/// id); `bodies` are `(id, JSON)` pairs.
pub fn put_questions(
    conn: &Connection,
    episode: &str,
    bodies: &[(String, String)],
) -> rusqlite::Result<()> {
    let mut put = conn.prepare_cached(
        "INSERT OR REPLACE INTO questions (episode, id, body) VALUES (?1, ?2, ?3)",
    )?;
    for (id, body) in bodies {
        put.execute(params![episode, id, body])?;
    }
    Ok(())
}

/// The questions kept with an episode, as JSON, in the order they were
/// kept.
pub fn questions(conn: &Connection, episode: &str) -> rusqlite::Result<Vec<String>> {
    let mut q =
        conn.prepare_cached("SELECT body FROM questions WHERE episode = ?1 ORDER BY rowid")?;
    let rows = q.query_map([episode], |r| r.get(0))?;
    rows.collect()
}

/// Deletes an episode, its steps and its questions; returns how many
/// steps.
pub fn delete_episode(conn: &Connection, episode: &str) -> rusqlite::Result<usize> {
    delete_state(conn, episode)?;
    word_index::delete(conn, episode, 0, i64::MAX)?;
    let steps = conn.execute("DELETE FROM steps WHERE episode = ?1", [episode])?;
    conn.execute("DELETE FROM questions WHERE episode = ?1", [episode])?;
    super::requests::clear(conn, episode)?;
    conn.execute("DELETE FROM episodes WHERE id = ?1", [episode])?;
    conn.execute("DELETE FROM meta WHERE key = ?1", [next_key(episode)])?;
    Ok(steps)
}

/// Rewrites the file without free pages and empties the write-ahead log,
/// so no byte of a deleted row is left in either.
pub fn compact(conn: &Connection) -> rusqlite::Result<()> {
    // The word index merged into one segment first, which drops the
    // words of deleted steps from its pages (`word_index`).
    conn.execute(
        "INSERT INTO step_words (step_words) VALUES ('optimize')",
        [],
    )?;
    conn.execute_batch("VACUUM;")?;
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    Ok(())
}
