//! The tenant's word index: every step's action and observation in an
//! SQLite FTS5 table, kept in the same transaction as the step, so that a
//! question over many episodes can find the episodes whose steps share its
//! words without building any of them ([`Tenant::word_matches`]).
//!
//! ```text
//! db::put_step ────► put(episode, idx, text): step_rows (episode, idx) ─► row ─► step_words(rowid = row)
//! db::delete_steps ─► delete(episode, first..=last): step_words rows, then step_rows
//! db::delete_episode ► delete(episode, every index)
//! question ─► words less stopwords, each quoted ─► "a" OR "b" ... MATCH ─► the best-ranked
//!             steps (BM25, at most MATCHED_STEPS) ─► each episode's best step ─► episodes, best first
//! ```
//!
//! The table is contentless (`content=''`: the text is in `steps` only) with
//! `contentless_delete=1`: a deleted step is gone from every query at
//! once, and [`super::Tenant::compact`] merges the index (`optimize`) before
//! its `VACUUM`, so a forgotten step leaves no word in any file
//! (`word_index_tests` checks the index's own list of terms and every
//! file's bytes). FTS5's `secure-delete` option, which would also clear
//! the words from the pages before the compaction, is off: it was left
//! off after one trial in which it cost an insert 0.05 ms, which later
//! runs did not repeat (docs/BENCHMARKS.md, "Candidates from the word
//! index"); the write-ahead log holds a forgotten step's pages until the
//! compaction in any case. Words are
//! lower-cased and Porter-stemmed (`porter unicode61`).

use super::{LiveError, Tenant};
use crate::text::{is_stopword, words};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;

/// The index's tables (created with the others, `db::open`).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS step_rows (
    row INTEGER PRIMARY KEY,
    episode TEXT NOT NULL,
    idx INTEGER NOT NULL,
    UNIQUE (episode, idx)
) STRICT;
CREATE VIRTUAL TABLE IF NOT EXISTS step_words USING fts5(
    text, content='', contentless_delete=1, tokenize='porter unicode61'
);
";

/// The most steps one question reads off the index (the best-ranked):
/// the episodes it finds are those of these steps.
pub const MATCHED_STEPS: usize = 4096;

/// Indexes every step (a file written before the index), each as [`put`]
/// writes it: the action, a newline, the observation.
pub(super) fn fill(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "DELETE FROM step_words; DELETE FROM step_rows;
         INSERT INTO step_rows (episode, idx) SELECT episode, idx FROM steps;
         INSERT INTO step_words (rowid, text)
             SELECT r.row, s.action || char(10) || s.observation
             FROM steps s JOIN step_rows r ON r.episode = s.episode AND r.idx = s.idx;",
    )
}

/// Indexes a step's text, replacing what its index held for it.
pub(super) fn put(
    conn: &Connection,
    episode: &str,
    idx: i64,
    action: &str,
    observation: &str,
) -> rusqlite::Result<()> {
    // A new step (an append) takes one statement; a replaced one (a
    // correction) drops its old words first.
    let new: Option<i64> = conn
        .prepare_cached(
            "INSERT INTO step_rows (episode, idx) VALUES (?1, ?2)
             ON CONFLICT (episode, idx) DO NOTHING RETURNING row",
        )?
        .query_row(params![episode, idx], |r| r.get(0))
        .optional()?;
    let row = match new {
        Some(row) => row,
        None => {
            let row: i64 = conn
                .prepare_cached("SELECT row FROM step_rows WHERE episode = ?1 AND idx = ?2")?
                .query_row(params![episode, idx], |r| r.get(0))?;
            conn.prepare_cached("DELETE FROM step_words WHERE rowid = ?1")?
                .execute([row])?;
            row
        }
    };
    conn.prepare_cached("INSERT INTO step_words (rowid, text) VALUES (?1, ?2)")?
        .execute(params![row, format!("{action}\n{observation}")])?;
    Ok(())
}

/// Removes the steps with `first <= idx <= last` from the index.
pub(super) fn delete(
    conn: &Connection,
    episode: &str,
    first: i64,
    last: i64,
) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "DELETE FROM step_words WHERE rowid IN
             (SELECT row FROM step_rows WHERE episode = ?1 AND idx >= ?2 AND idx <= ?3)",
    )?
    .execute(params![episode, first, last])?;
    conn.prepare_cached("DELETE FROM step_rows WHERE episode = ?1 AND idx >= ?2 AND idx <= ?3")?
        .execute(params![episode, first, last])?;
    Ok(())
}

/// `text`'s content words as an FTS5 query: each quoted (a quote inside
/// doubled), any of them; `None` when it has none.
fn query_of(text: &str) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    let terms: Vec<String> = words(text)
        .filter(|w| !is_stopword(w) && seen.insert(w.clone()))
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!terms.is_empty()).then(|| terms.join(" OR "))
}

impl Tenant {
    /// The episodes whose steps share words with `text`, by the tenant's
    /// word index (no episode is built): each with its best step's BM25
    /// score (FTS5's, made positive), best first, ties to the episode id.
    /// Only the [`MATCHED_STEPS`] best-ranked steps are read, so an
    /// episode none of whose steps is among them is not listed; nor is
    /// one without a step that shares a word, and a text of stopwords
    /// alone lists none.
    pub fn word_matches(&self, text: &str) -> Result<Vec<(String, f64)>, LiveError> {
        let Some(query) = query_of(text) else {
            return Ok(Vec::new());
        };
        let conn = self.conn();
        let mut best: HashMap<String, f64> = HashMap::new();
        let mut q = conn
            .prepare_cached(
                "SELECT r.episode, m.score FROM
                     (SELECT rowid, -bm25(step_words) AS score FROM step_words
                      WHERE step_words MATCH ?1 ORDER BY rank LIMIT ?2) m
                 JOIN step_rows r ON r.row = m.rowid",
            )
            .map_err(self.db_error())?;
        let rows = q
            .query_map(params![query, MATCHED_STEPS as i64], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?))
            })
            .map_err(self.db_error())?;
        for row in rows {
            let (episode, score) = row.map_err(self.db_error())?;
            let e = best.entry(episode).or_insert(f64::NEG_INFINITY);
            *e = e.max(score);
        }
        let mut out: Vec<(String, f64)> = best.into_iter().collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(out)
    }
}
