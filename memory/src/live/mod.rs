//! Memory an agent writes while it works: tenants, episodes, appends,
//! forgets and corrections, durable in SQLite and queryable at once.
//!
//! ```text
//! ROOT/
//!   mesa-live.json                 marker: format and version
//!   tenants/NAME/memory.sqlite     the tenant's episodes, steps, persisted states and kept questions (WAL mode)
//!   tenants/NAME/writer.lock       held by the one handle that writes NAME
//!   tenants/NAME/ann/              V's HNSW graphs of episodes past its threshold (a cache; state.rs)
//!
//! append(step) ──derive StepParts (embed, extract: the new step only)──► one transaction ──► ack
//!                                                      │ kept beside the episode's snapshot
//! query ──snapshot(episode)── extended by the appended steps (EpisodeMemory::extend)
//!                          └─ or, on a fresh handle, reopened from the persisted state
//!                             and extended (state.rs); after a forget, a correction or
//!                             an outcome update (which delete the state) or without a
//!                             state, assembled from the stored parts
//!                             (EpisodeMemory::from_parts); then shared
//! ```
//!
//! Every call names its tenant by holding its [`Tenant`]; a tenant is its own
//! directory and database, so nothing one tenant wrote is read, ranked or
//! counted for another. An append or forget that returned is committed
//! (`synchronous = FULL`); a crash leaves every acknowledged step and no
//! partial one. A query reads a snapshot of the episode built from one
//! read, before an append or after it, never half; it never holds the
//! database while it retrieves, so a long query does not block writes.
//!
//! What an append and a forget cost, per structure (docs/ARCHITECTURE.md
//! has the table): the new step's tokens, embedding (V) and relations (G)
//! are computed once, at the append; the next question extends S, T, G, V
//! and R at the new steps' cost (R re-indexes its tail window, and every
//! window only while its width changes), with no model call. A forget
//! deletes rows (with `secure_delete`, their pages are
//! zeroed); [`Tenant::compact`] rewrites the file and empties the log, after
//! which no file of the tenant holds a byte of a forgotten step.

mod builders;
mod db;
mod error;
mod export;
mod open;
mod questions;
mod requests;
mod resident;
mod retention;
mod state;
mod types;
mod update;
mod word_index;
mod writes;

pub use builders::NamedBuilders;
pub use error::{LiveError, LiveErrorKind};
pub use export::{Exported, Imported, ImportedEpisode, IMPORT_CREATE, IMPORT_STEPS};
pub use requests::MAX_REQUEST_ID_BYTES;
pub use resident::{Resident, DEFAULT_RESIDENT_STEPS};
pub use retention::ForgottenBefore;
pub use types::{EpisodeInfo, EpisodeUpdate, Forget, NewEpisode, NewStep};
pub use word_index::MATCHED_STEPS;
pub use writes::{Appended, Forgotten};

use crate::config::Config;
use crate::dataset::{Episode, Step};
use crate::structures::{EpisodeMemory, Plugins, StepParts};
use db::EpisodeRow;
use resident::{Budget, Snapshots};
use rusqlite::Connection;
use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

/// The marker file at a live memory's root.
pub const MARKER: &str = "mesa-live.json";
/// The largest action or observation a step may have, in bytes.
pub const MAX_TEXT_BYTES: usize = 1 << 20;
/// The longest episode id, in bytes: it travels in URLs and file names.
pub const MAX_ID_BYTES: usize = 1024;
/// The largest step index: the database keeps indices as signed 64-bit
/// integers.
pub const MAX_STEP_INDEX: usize = i64::MAX as usize;

/// A directory of tenants.
#[derive(Debug, Clone)]
pub struct LiveMemory {
    root: PathBuf,
    /// How long an opening for writing waits for the tenant's writer to
    /// close ([`LiveMemory::waiting_for_writer`]).
    writer_wait: std::time::Duration,
    /// Steps of built episodes the tenants opened from here (and from its
    /// clones) keep in memory, together ([`LiveMemory::keeping_steps`]).
    budget: Arc<Budget>,
}

impl LiveMemory {
    /// Opens the live memory at `root`, creating it if the directory is
    /// new or empty.
    pub fn open(root: &Path) -> Result<LiveMemory, LiveError> {
        let shown = root.display().to_string();
        let io = |source| LiveError::Io {
            path: shown.clone(),
            source,
        };
        let marker = root.join(MARKER);
        if root.join("manifest.json").is_file() {
            return Err(LiveError::BuiltStore { dir: shown });
        }
        if !marker.is_file() {
            // The marker is written first, whole, so a directory that holds
            // anything but the marker's own unfinished siblings is not one a
            // concurrent first opening is making; several first openings at
            // once each write the same marker.
            let other = |e: std::io::Result<std::fs::DirEntry>| {
                e.map(|e| !crate::durable::is_part_of(&e.file_name(), MARKER))
            };
            if root.exists() {
                for entry in std::fs::read_dir(root).map_err(io)? {
                    if other(entry).map_err(io)? && !marker.is_file() {
                        return Err(LiveError::NotAMemory {
                            dir: shown,
                            reason: format!("it is not empty and has no {MARKER}"),
                        });
                    }
                }
            }
            std::fs::create_dir_all(root).map_err(io)?;
            if !marker.is_file() {
                let text = serde_json::json!({"format": db::FORMAT, "version": db::VERSION});
                let written = write_synced(&marker, text.to_string().as_bytes());
                // Another first opening's marker serves as well as this one.
                if !marker.is_file() {
                    written?;
                }
            }
        }
        std::fs::create_dir_all(root.join("tenants")).map_err(io)?;
        let text = std::fs::read_to_string(&marker).map_err(io)?;
        let value: serde_json::Value =
            serde_json::from_str(&text).map_err(|_| LiveError::NotAMemory {
                dir: shown.clone(),
                reason: format!("{MARKER} is not JSON"),
            })?;
        if value.get("format").and_then(|f| f.as_str()) != Some(db::FORMAT) {
            return Err(LiveError::NotAMemory {
                dir: shown,
                reason: format!("{MARKER} lacks the format marker"),
            });
        }
        let found = value.get("version").and_then(|v| v.as_i64()).unwrap_or(0);
        if db::upgrades(found) {
            // Each tenant's file is upgraded when it is opened.
            let text = serde_json::json!({"format": db::FORMAT, "version": db::VERSION});
            write_synced(&marker, text.to_string().as_bytes())?;
        } else if found != db::VERSION {
            return Err(LiveError::Version {
                path: marker.display().to_string(),
                found,
                expected: db::VERSION,
            });
        }
        Ok(LiveMemory {
            root: root.to_path_buf(),
            writer_wait: std::time::Duration::ZERO,
            budget: Budget::new(DEFAULT_RESIDENT_STEPS),
        })
    }

    /// Makes each opening for writing wait up to `wait` for the tenant's
    /// other writer (another process appending, say) to close, where it is
    /// refused at once by default ([`LiveError::Locked`]): several short
    /// writers, one `mesa append` per agent step, then take turns.
    pub fn waiting_for_writer(mut self, wait: std::time::Duration) -> LiveMemory {
        self.writer_wait = wait;
        self
    }

    /// Makes the tenants opened from here (and from this handle's clones)
    /// keep the built episodes of at most `steps` steps in memory, all of
    /// them together (default [`DEFAULT_RESIDENT_STEPS`]); past it, the
    /// episodes asked about least recently, in any of those tenants, are
    /// dropped, and built again when asked about (module `resident`). The
    /// episode just asked about is kept however long it is. A budget of 0
    /// keeps only that one; `usize::MAX` keeps every episode built. Call it
    /// before opening tenants: those opened earlier keep the budget they
    /// were opened with.
    pub fn keeping_steps(mut self, steps: usize) -> LiveMemory {
        self.budget = Budget::new(steps);
        self
    }

    /// Makes the tenants opened from here share `other`'s budget of built
    /// steps (its limit and its count) with the tenants `other` opens, as
    /// if both were one handle ([`LiveMemory::keeping_steps`]): a process
    /// that opens each tenant through its own handle (Python's `Memory`
    /// objects) bounds them all at once.
    pub fn sharing_budget_with(mut self, other: &LiveMemory) -> LiveMemory {
        self.budget = other.budget.clone();
        self
    }

    /// The budget [`LiveMemory::keeping_steps`] set.
    pub fn steps_budget(&self) -> usize {
        self.budget.limit()
    }

    /// How many built episodes the budget has dropped so far, over the
    /// tenants that share it: one that keeps rising tells that the budget
    /// is too small for what is asked (each drop is a build again).
    pub fn budget_drops(&self) -> u64 {
        self.budget.dropped()
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where tenant `name` lives, once the name is known to be safe.
    fn tenant_dir(&self, name: &str) -> Result<PathBuf, LiveError> {
        if !valid_tenant(name) {
            return Err(LiveError::BadTenant { name: name.into() });
        }
        Ok(self.root.join("tenants").join(name))
    }

    /// The tenants that exist.
    pub fn tenants(&self) -> Result<Vec<String>, LiveError> {
        let dir = self.root.join("tenants");
        let io = |source| LiveError::Io {
            path: dir.display().to_string(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(io)? {
            let name = entry
                .map_err(io)?
                .file_name()
                .to_string_lossy()
                .into_owned();
            if valid_tenant(&name) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }
}

/// Whether a tenant name is safe as a directory name.
pub fn valid_tenant(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A database error at `path`, a full disk told apart.
fn db_error(path: &Path) -> impl Fn(rusqlite::Error) -> LiveError + '_ {
    move |source| {
        let path = path.display().to_string();
        match source.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => LiveError::DiskFull { path, source },
            _ => LiveError::Db { path, source },
        }
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), LiveError> {
    crate::durable::write_synced(path, bytes).map_err(|source| LiveError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// One tenant, open for writing. Share it between threads (`Arc<Tenant>`):
/// writes are serialized, queries read snapshots.
pub struct Tenant {
    name: String,
    dir: PathBuf,
    path: PathBuf,
    conn: Mutex<Connection>,
    /// Held by a write for its whole length (index assignment, the model
    /// calls, the transaction); reads take only `conn`, briefly.
    writer: Mutex<()>,
    config: Config,
    plugins: Plugins,
    /// What a persisted state must have been built under
    /// ([`state_fingerprint`] of `config` and `plugins`).
    fingerprint: String,
    /// Built episodes, dropped when the episode changes or for the budget.
    snapshots: Arc<RwLock<Snapshots>>,
    /// The budget of built steps this tenant shares with the others its
    /// [`LiveMemory`] opened.
    budget: Arc<Budget>,
    /// Set when the handle closes: the states it persists then build
    /// nothing that should drop other tenants' episodes.
    closing: std::sync::atomic::AtomicBool,
    /// One gate per episode being built or extended: a question that finds
    /// its episode's snapshot missing or behind waits for the build under
    /// way instead of starting its own (which would be a cold build: an
    /// extension in place takes the snapshot out of `snapshots`).
    gates: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// The writer lock; `None` for a reader.
    lock: Option<File>,
    /// Opened to list and export only ([`LiveMemory::lister`]): its
    /// builders are not the tenant's, so it builds no structure.
    listing: bool,
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The tenant's database file, in its directory.
const DATABASE: &str = "memory.sqlite";

impl Tenant {
    /// The tenant's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name of the embedder that makes the tenant's vectors
    /// (`hash-v1-384`, `openai:MODEL:DIM`, ...); on a
    /// [`LiveMemory::lister`], which makes none, the built-in one's.
    pub fn embedder(&self) -> String {
        self.plugins.embedder.name()
    }

    /// The names of the builders the tenant recorded (embedder, summarizer,
    /// extractor; `None` where it recorded none yet), read from its
    /// database: what a [`LiveMemory::lister`] reports.
    pub fn recorded_builders(&self) -> Result<[Option<String>; 3], LiveError> {
        builders::recorded(&self.conn()).map_err(self.db_error())
    }

    /// The name of the summarizer that writes the tenant's S
    /// (`extractive-v1`, `llm-summary-v1:MODEL`).
    pub fn summarizer(&self) -> String {
        self.plugins.summarizer.name()
    }

    /// The name of the extractor that makes the tenant's G relations
    /// (`rules-v1`, `llm-openie-v1:MODEL`).
    pub fn extractor(&self) -> String {
        self.plugins.extractor.name()
    }

    /// The tenant's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The structures' parameters.
    pub fn config(&self) -> &Config {
        &self.config
    }

    fn db_error(&self) -> impl Fn(rusqlite::Error) -> LiveError + '_ {
        db_error(&self.path)
    }

    /// Caps the database at its current size, as a full disk would.
    #[cfg(test)]
    pub(crate) fn fill_disk(&self, extra_pages: i64) {
        let conn = self.conn();
        let pages: i64 = conn
            .query_row("PRAGMA page_count", [], |r| r.get(0))
            .expect("page count");
        conn.pragma_update(None, "max_page_count", pages + extra_pages)
            .expect("cap");
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A poisoned lock means a thread panicked mid-call; SQLite rolled
        // its transaction back, so the connection is still consistent.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serializes writes; refused on a reader.
    fn write_lock(&self) -> Result<MutexGuard<'_, ()>, LiveError> {
        if self.lock.is_none() {
            return Err(LiveError::ReadOnly {
                tenant: self.name.clone(),
            });
        }
        Ok(self.writer.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The write lock if it is free at once (`None` on a reader or while a
    /// write runs): for work a question may skip.
    fn try_write_lock(&self) -> Option<MutexGuard<'_, ()>> {
        self.lock.as_ref()?;
        match self.writer.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// Whether this handle writes (else it only reads).
    pub fn is_writer(&self) -> bool {
        self.lock.is_some()
    }

    /// Called just before a change to `episode` commits (and the change is
    /// counted again once applied, by `forget_snapshot` or
    /// `note_appended`): a snapshot whose read overlaps the commit is then
    /// not kept, whichever side of the commit its read fell on, so a later
    /// question never gets an older snapshot than an earlier one did.
    fn change_begins(&self, episode: &str) {
        let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
        *s.changes.entry(episode.to_string()).or_default() += 1;
    }

    /// Called after every committed change to `episode`. The snapshot it
    /// drops no longer holds the episode's rows, so its HNSW graph is
    /// retired: no save of it runs after this returns
    /// ([`crate::structures::Vector::retire_ann`]).
    fn forget_snapshot(&self, episode: &str) {
        let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
        if let Some(old) = s.built.remove(episode) {
            old.vector.retire_ann();
            s.dropped.insert(episode.to_string());
        }
        s.retire_dropped(episode);
        s.appended.remove(episode);
        s.persisted.remove(episode);
        *s.changes.entry(episode.to_string()).or_default() += 1;
    }

    /// Called after committed appends: a built snapshot is kept with the
    /// new steps beside it, for [`EpisodeMemory::extended`].
    fn note_appended(&self, episode: &str, steps: &[Step], parts: Vec<StepParts>) {
        let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
        *s.changes.entry(episode.to_string()).or_default() += 1;
        let Some(built) = s.built.get(episode) else {
            return;
        };
        // A snapshot built from a read after the commit already has them.
        let has = built.episode.steps.last().map(|x| x.index);
        let pending = s.appended.entry(episode.to_string()).or_default();
        let has = pending.last().map(|(x, _)| x.index).max(has);
        pending.extend(
            steps
                .iter()
                .cloned()
                .zip(parts)
                .filter(|(x, _)| has < Some(x.index)),
        );
    }

    /// The episodes, by id.
    pub fn episodes(&self) -> Result<Vec<EpisodeInfo>, LiveError> {
        let conn = self.conn();
        let rows = db::episodes(&conn).map_err(self.db_error())?;
        Ok(rows.into_iter().map(EpisodeInfo::of).collect())
    }

    /// One episode as [`Tenant::episodes`] lists it.
    pub fn episode_info(&self, episode: &str) -> Result<EpisodeInfo, LiveError> {
        let conn = self.conn();
        match db::episode_listed(&conn, episode).map_err(self.db_error())? {
            Some(row) => Ok(EpisodeInfo::of(row)),
            None => Err(LiveError::UnknownEpisode {
                tenant: self.name.clone(),
                id: episode.to_string(),
            }),
        }
    }

    /// Rewrites the database without free pages and empties its log: after
    /// it, no file of the tenant holds a byte of anything forgotten.
    pub fn compact(&self) -> Result<(), LiveError> {
        let write = self.write_lock()?;
        // The states are a shortcut: a full disk must not stop the call
        // that frees space and removes forgotten bytes.
        let _ = self.persist_built(&write);
        db::compact(&self.conn()).map_err(self.db_error())?;
        self.clean_ann()
    }

    /// An episode's steps, in order.
    pub fn steps(&self, episode: &str) -> Result<Vec<Step>, LiveError> {
        let conn = self.conn();
        self.episode_row(&conn, episode)?;
        db::plain_steps(&conn, episode, None).map_err(self.db_error())
    }

    /// The episode with its steps (and no questions: [`Tenant::questions`]).
    pub fn episode(&self, episode: &str) -> Result<Episode, LiveError> {
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        let row = self.episode_row(&tx, episode)?;
        let steps = db::plain_steps(&tx, episode, None).map_err(self.db_error())?;
        Ok(episode_of(row, steps))
    }

    /// The five structures over the episode as it is now: built from the
    /// stored parts on the first question after a change, then shared.
    pub fn memory(&self, episode: &str) -> Result<Arc<EpisodeMemory>, LiveError> {
        if self.listing {
            return Err(LiveError::Unbuilt {
                tenant: self.name.clone(),
            });
        }
        if self.lock.is_none() {
            self.see_other_writers()?;
        }
        if let Some(m) = self.ready(episode) {
            return Ok(m);
        }
        // One build at a time per episode; the others then find it ready.
        let gate = {
            let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
            gates.entry(episode.to_string()).or_default().clone()
        };
        let built = {
            let _one = gate.lock().unwrap_or_else(|p| p.into_inner());
            self.build(episode)
        };
        let mut gates = self.gates.lock().unwrap_or_else(|p| p.into_inner());
        // Clones are made under this lock: two are the map's and ours.
        if Arc::strong_count(&gate) == 2 {
            gates.remove(episode);
        }
        built
    }

    /// Brings the episode's snapshot up to date now, so that the next
    /// question finds it ready (a server calls it after acknowledging a
    /// write): a built snapshot is extended by the appends made since, and
    /// one that a correction, a forget or an update dropped is built again. Returns
    /// whether there was anything to do: an episode that had no snapshot
    /// is left alone (its first question builds it), and so is one that
    /// was forgotten whole.
    pub fn catch_up(&self, episode: &str) -> Result<bool, LiveError> {
        let behind = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            let extend = s.built.contains_key(episode) && s.appended.contains_key(episode);
            extend || s.dropped.contains(episode)
        };
        if !behind {
            return Ok(false);
        }
        match self.memory(episode) {
            Ok(_) => Ok(true),
            Err(LiveError::UnknownEpisode { .. }) => {
                let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
                s.dropped.remove(episode);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// The episode's snapshot, when it is built and no append is pending.
    fn ready(&self, episode: &str) -> Option<Arc<EpisodeMemory>> {
        let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
        match s.appended.get(episode) {
            None => s.built.get(episode).cloned(),
            Some(_) => None,
        }
    }

    /// [`Tenant::memory`]'s work, under the episode's gate: the snapshot
    /// extended by the pending appends, or assembled, then kept (unless a
    /// change raced it) and indexed.
    fn build(&self, episode: &str) -> Result<Arc<EpisodeMemory>, LiveError> {
        let (changes, base) = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            let pending = s.appended.get(episode);
            match (s.built.get(episode), pending) {
                (Some(m), None) => return Ok(m.clone()),
                (Some(m), Some(p)) => (
                    (s.changes.get(episode).copied(), s.epoch),
                    Some((m.clone(), p.clone())),
                ),
                (None, _) => ((s.changes.get(episode).copied(), s.epoch), None),
            }
        };
        let cold = base.is_none();
        let built = match base {
            Some((m, pending)) => self.extend_snapshot(episode, m, pending)?,
            None => {
                let (m, covered) = self.assemble(episode)?;
                if self.is_writer() {
                    let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
                    if (s.changes.get(episode).copied(), s.epoch) == changes {
                        s.persisted.insert(episode.to_string(), covered);
                    }
                }
                Arc::new(m)
            }
        };
        let kept = {
            let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
            let kept = (s.changes.get(episode).copied(), s.epoch) == changes;
            if kept {
                s.keep(episode, built.clone());
            }
            kept
        };
        if kept && !self.closing.load(std::sync::atomic::Ordering::Relaxed) {
            self.budget.enforce(&self.snapshots, episode);
        }
        // Only a kept snapshot indexes (and saves): one that raced a change
        // answers its question by the exact scan, and a change after this
        // retires the kept one's index (`Tenant::forget_snapshot`).
        if kept {
            built
                .vector
                .index_in_background(Some(self.ann_file(episode)));
        }
        self.maybe_persist(episode, &built, changes, cold);
        Ok(built)
    }

    /// A built snapshot with its pending appends applied. When no question
    /// holds it, the snapshot is changed in place, at the new steps' cost;
    /// otherwise a copy is (the holders keep the episode as they saw it).
    fn extend_snapshot(
        &self,
        episode: &str,
        mut m: Arc<EpisodeMemory>,
        pending: Vec<(Step, StepParts)>,
    ) -> Result<Arc<EpisodeMemory>, LiveError> {
        let (steps, parts): (Vec<Step>, Vec<StepParts>) = pending.into_iter().unzip();
        {
            // Our clone and the map's: take the map's out while extending,
            // so that ours is the only one when no question holds it.
            let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
            let own = s.built.get(episode).is_some_and(|b| Arc::ptr_eq(b, &m));
            if own && Arc::strong_count(&m) == 2 {
                s.built.remove(episode);
                if let Some(inner) = Arc::get_mut(&mut m) {
                    inner.extend(&steps, &parts, &self.config)?;
                    return Ok(m);
                }
            }
        }
        let mut copy = EpisodeMemory::clone(&m);
        copy.extend(&steps, &parts, &self.config)?;
        Ok(Arc::new(copy))
    }

    /// A reader drops its snapshots when another connection has committed.
    fn see_other_writers(&self) -> Result<(), LiveError> {
        let version: i64 = self
            .conn()
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(self.db_error())?;
        let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
        if s.data_version != Some(version) {
            s.data_version = Some(version);
            s.built.clear();
            s.appended.clear();
            s.epoch += 1;
        }
        Ok(())
    }

    fn episode_row(&self, conn: &Connection, episode: &str) -> Result<EpisodeRow, LiveError> {
        db::episode(conn, episode)
            .map_err(self.db_error())?
            .ok_or_else(|| LiveError::UnknownEpisode {
                tenant: self.name.clone(),
                id: episode.to_string(),
            })
    }

    fn unknown_step(&self, conn: &Connection, episode: &str, index: usize) -> LiveError {
        let last = db::next_index(conn, episode)
            .ok()
            .and_then(|n| n.checked_sub(1));
        LiveError::UnknownStep {
            episode: episode.to_string(),
            index,
            last,
        }
    }

    fn derive(&self, row: &EpisodeRow, steps: &[Step]) -> Result<Vec<StepParts>, LiveError> {
        let episode = episode_of(row.clone(), Vec::new());
        StepParts::derive(&episode, steps, &self.config, &self.plugins).map_err(|source| {
            LiveError::Plugin {
                episode: row.id.clone(),
                source,
            }
        })
    }
}

fn episode_of(row: EpisodeRow, steps: Vec<Step>) -> Episode {
    Episode {
        id: row.id,
        task: row.task,
        domain: row.domain,
        outcome: row.outcome,
        meta: row.meta,
        created: Some(row.created),
        steps,
        questions: Vec::new(),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod ann_tests;
#[cfg(test)]
mod builders_tests;
#[cfg(test)]
mod embedder_tests;
#[cfg(test)]
mod export_tests;
#[cfg(test)]
mod gate_tests;
#[cfg(test)]
mod kill_id_tests;
#[cfg(test)]
mod kill_tests;
#[cfg(test)]
mod open_tests;
#[cfg(test)]
mod request_tests;
#[cfg(test)]
mod resident_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod update_tests;
#[cfg(test)]
mod word_index_tests;
