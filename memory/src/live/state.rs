//! Persisted memory states: a writer keeps each long episode's built
//! structures in the database, so that opening it (a restart, a reader)
//! reads them back and extends them by the steps appended since, instead of
//! rebuilding S, T, G and R from every step.
//!
//! ```text
//! question on a cold episode ──load (one read transaction): state row, then
//!     the steps and their token counts ║ the state decoded (another thread);
//!     relations and vectors only of the steps the state does not cover──┐
//!   state fits (fingerprint, covered steps) ──► EpisodeMemory::reopen_decoded + extend(the rest)
//!   no state ─────────────────────────────────► EpisodeMemory::from_parts
//!   a state that does not fit or open ──load again, every relation and vector──► from_parts
//! writer: state written when the episode has PERSIST_MIN_STEPS steps and the
//!         stored one lags by as many steps as it covers (so at most
//!         log2(steps) writes), on compact and on close
//! forget / correct / an outcome update ──same transaction──► the episode's state row deleted
//!                  ──after it──► the episode's saved HNSW graph removed
//! ```
//!
//! V's HNSW graph (episodes past `vector_hnsw_threshold` steps) is not in
//! the state: hnsw_rs saves it as its own files, in `ann/` beside the
//! database ([`crate::structures::ann`]). It is a cache, checked against
//! the rows it was built over before it is used: a writer saves it when
//! its background build ends and when it closes; any handle loads it on
//! opening instead of building; a forget or a correction removes it, and
//! [`Tenant::compact`] removes whatever no episode's manifest names.

use super::db::{self, StateRow, StoredParts};
use super::{episode_of, LiveError, Tenant};
use crate::dataset::{Episode, Step};
use crate::structures::{ann, AnnFile, DecodedRest, DecodedState, EpisodeMemory, Graph};
use crate::structures::{StepParts, Summary};
use std::collections::HashSet;
use std::sync::Arc;

/// Episodes shorter than this are rebuilt on opening (it costs a few
/// milliseconds), and their state is not kept.
pub const PERSIST_MIN_STEPS: usize = 256;

/// The largest state written (SQLite's limit on one value is 1e9 bytes;
/// at 384 dimensions a state takes about 3 KB per step).
const MAX_STATE_BYTES: usize = 900_000_000;

/// What [`Tenant::load`] reads: the episode, its steps' stored parts, and
/// its persisted state if it was written under this handle's fingerprint
/// and covers a step.
pub(super) struct Loaded {
    /// The episode: every step, or with `unread`, the steps after the
    /// state's only.
    pub(super) episode: Episode,
    pub(super) stored: Vec<StoredParts>,
    pub(super) state: Option<StateRow>,
    /// With `skip_covered`: the state, decoding on other threads since
    /// its sections were read.
    opening: Option<Opening>,
    /// The steps the state covers were not read (the state holds what the
    /// memory needs of them; see [`Tenant::load`]).
    unread: bool,
}

/// A persisted state being decoded: G on a thread of its own since its
/// section was read (first), the rest on another since it was, and the
/// renderings' text.
struct Opening {
    graph: Decoding<Graph>,
    rest: Decoding<DecodedRest>,
    text: Vec<u8>,
}

impl Opening {
    /// The decoded state, or what is wrong with it.
    fn wait(self) -> Result<DecodedState, String> {
        let (graph, rest) = (self.graph.wait(), self.rest.wait());
        DecodedState::new(graph?, rest?, self.text)
    }
}

/// A part of a persisted state being decoded on a thread of its own (or,
/// if no thread could be started, decoded already).
enum Decoding<T> {
    Thread(std::thread::JoinHandle<Result<T, String>>),
    Done(Result<T, String>),
}

impl<T: Send + 'static> Decoding<T> {
    /// Starts `decode`, on a thread of its own if one starts.
    fn start(decode: impl FnOnce() -> Result<T, String> + Send + 'static) -> Decoding<T> {
        let cell = Arc::new(std::sync::Mutex::new(Some(decode)));
        let inner = cell.clone();
        let thread = std::thread::Builder::new().name("mesa-state-decode".into());
        let run = move || {
            let decode = inner.lock().ok().and_then(|mut d| d.take());
            decode.map_or_else(|| Err("decoded already".into()), |d| d())
        };
        match thread.spawn(run) {
            Ok(h) => Decoding::Thread(h),
            Err(_) => {
                let decode = cell.lock().ok().and_then(|mut d| d.take());
                Decoding::Done(decode.map_or_else(|| Err("decoded already".into()), |d| d()))
            }
        }
    }

    /// The decoded part, or what is wrong with it.
    fn wait(self) -> Result<T, String> {
        match self {
            Decoding::Thread(h) => h
                .join()
                .unwrap_or_else(|_| Err("decoding it panicked".into())),
            Decoding::Done(r) => r,
        }
    }
}

/// What a snapshot was built from: the episode's change count and the
/// handle's epoch, compared before a state is written.
pub(super) type Seen = (Option<u64>, u64);

impl Tenant {
    /// The five structures over a loaded episode: reopened from its
    /// persisted state when it fits, else assembled from the parts.
    /// Returns the memory and how many of its steps the stored state
    /// covers (0 for none).
    pub(super) fn assemble(&self, episode: &str) -> Result<(EpisodeMemory, usize), LiveError> {
        let loaded = self.load(episode, true)?;
        let (Some(state), Some(opening)) = (loaded.state, loaded.opening) else {
            // No state: every step's relations were read.
            return self.rebuild(loaded.episode, loaded.stored);
        };
        let (mut ep, mut stored) = (loaded.episode, loaded.stored);
        let covered = state.steps;
        // The steps after the state (all of them when the covered ones
        // were not read).
        let rest = if loaded.unread {
            Some(std::mem::take(&mut ep.steps))
        } else if self.state_fits(&ep, &state) {
            stored.drain(..covered);
            Some(ep.steps.split_off(covered))
        } else {
            None
        };
        if let Some(rest) = rest {
            let mut parts = take_parts(&mut stored);
            // Only the steps after the state had their relations read.
            self.parse(&stored, &mut parts)?;
            if let Some(m) = self.reopen(ep, (&state, loaded.unread), rest, &parts, opening) {
                return Ok((m, covered));
            }
        } else {
            drop(opening.wait());
        }
        // A state that does not fit or does not open: every step again, with
        // its relations and vectors, and a rebuild (the next write replaces
        // the state).
        let loaded = self.load(episode, false)?;
        self.rebuild(loaded.episode, loaded.stored)
    }

    /// The five structures built from every step's stored parts, relations
    /// included.
    fn rebuild(
        &self,
        loaded: Episode,
        mut stored: Vec<StoredParts>,
    ) -> Result<(EpisodeMemory, usize), LiveError> {
        let mut parts = take_parts(&mut stored);
        self.parse(&stored, &mut parts)?;
        let m = EpisodeMemory::from_parts(Arc::new(loaded), &parts, &self.config, &self.plugins)?;
        Ok((m, 0))
    }

    fn parse(&self, stored: &[StoredParts], parts: &mut [StepParts]) -> Result<(), LiveError> {
        for (s, p) in stored.iter().zip(parts) {
            s.parse_into(p).map_err(|m| self.corrupt(m))?;
        }
        Ok(())
    }

    /// The episode, its parts and its persisted state if it was written
    /// under this handle's fingerprint, from one read. With
    /// `skip_covered`, the state is decoded on another thread while the
    /// steps are read, and the steps it covers come without their
    /// relations and vectors; when the summarizer extends its summary step
    /// by step (so that nothing is rebuilt over the old steps' texts) and
    /// the episode still has the state's last step ([`db::has_step`]),
    /// those are not read at all (`unread`): the state holds their
    /// indices, timestamps and renderings.
    pub(super) fn load(&self, episode: &str, skip_covered: bool) -> Result<Loaded, LiveError> {
        let conn = self.conn();
        let tx = conn.unchecked_transaction().map_err(self.db_error())?;
        let row = self.episode_row(&tx, episode)?;
        let state = db::state(&tx, episode, Some(&self.fingerprint))
            .map_err(self.db_error())?
            .filter(|(s, _)| s.steps > 0);
        let (state, blob) = state.unzip();
        let covered = state.as_ref().filter(|_| skip_covered);
        let last_idx = covered.map(|s| s.last_idx);
        let opening = match blob.filter(|_| skip_covered) {
            Some(blob) => Some(self.open_state(&tx, blob)?),
            None => None,
        };
        // The summarizer extends its summary step by step when it keeps
        // per-step candidates (`Summarizer::candidates`).
        let unread = match covered {
            Some(s) if self.plugins.summarizer.candidates(&[]).is_some() => {
                db::has_step(&tx, episode, s.last_idx).map_err(self.db_error())?
            }
            _ => false,
        };
        let rows = match last_idx.filter(|_| unread) {
            Some(last) => db::steps_after(&tx, episode, last),
            None => db::steps(&tx, episode, last_idx),
        };
        let rows = rows.map_err(self.db_error())?;
        // The read is done: the connection is free while the state decodes.
        drop(tx);
        drop(conn);
        let mut steps = Vec::with_capacity(rows.len());
        let mut stored = Vec::with_capacity(rows.len());
        for (step, p) in rows {
            steps.push(step);
            stored.push(p.map_err(|message| self.corrupt(message))?);
        }
        Ok(Loaded {
            episode: episode_of(row, steps),
            stored,
            state,
            opening,
            unread,
        })
    }

    /// Reads a state's sections in order, each decoding on its own thread
    /// from when it is read.
    fn open_state(
        &self,
        tx: &rusqlite::Connection,
        mut blob: db::StateBlob,
    ) -> Result<Opening, LiveError> {
        let graph = blob.next(tx).map_err(self.db_error())?;
        let graph = Decoding::start(move || DecodedState::decode_graph(&graph));
        let rest = blob.next(tx).map_err(self.db_error())?;
        let embedder = self.plugins.embedder.clone();
        let rest = Decoding::start(move || DecodedState::decode_rest(&rest, embedder.as_ref()));
        let text = blob.rest(tx).map_err(self.db_error())?;
        Ok(Opening { graph, rest, text })
    }

    /// The error for a damaged row.
    pub(super) fn corrupt(&self, message: String) -> LiveError {
        LiveError::Corrupt {
            path: self.path.display().to_string(),
            message,
        }
    }

    /// Whether the episode still has the steps `s` covers (`load` has
    /// checked the fingerprint).
    fn state_fits(&self, episode: &Episode, s: &StateRow) -> bool {
        s.steps > 0 && episode.steps.get(s.steps - 1).map(|x| x.index) == Some(s.last_idx)
    }

    /// The persisted prefix, then the steps after it (`rest`, with their
    /// `parts`); `None` if the state does not open (damaged, or from
    /// another build): the caller rebuilds, and the next write replaces
    /// the state, or if it does not cover the steps its `row` says. With
    /// `unread`, `prefix` has no steps yet: they are the state's.
    fn reopen(
        &self,
        mut prefix: Episode,
        (row, unread): (&StateRow, bool),
        rest: Vec<Step>,
        parts: &[StepParts],
        opening: Opening,
    ) -> Option<EpisodeMemory> {
        let mut state = opening.wait().ok()?;
        let covered = state.take_steps();
        if covered.len() != row.steps || covered.last().map(|s| s.index) != Some(row.last_idx) {
            return None;
        }
        let elided = if unread { covered.len() } else { 0 };
        if unread {
            prefix.steps = covered;
        }
        let prefix = Arc::new(prefix);
        let mut m =
            EpisodeMemory::reopen_decoded(prefix.clone(), state, &self.config, &self.plugins)
                .ok()?;
        // The memory's episode is extended in place once it is the only
        // holder.
        drop(prefix);
        m.extend(&rest, parts, &self.config).ok()?;
        m.elide(elided);
        if m.summary.stale() > 0 {
            // A summarizer that only rewrites whole episodes writes the
            // summary on opening, as a rebuild would (its steps were read).
            let summarizer = self.plugins.summarizer.as_ref();
            m.summary = Summary::build(&m.episode, summarizer, &self.config).ok()?;
        }
        Some(m)
    }

    /// After a question built or extended `m`: a writer stores its state
    /// when the stored one lags far enough behind. `cold` is whether `m`
    /// was just opened (then any lag of `PERSIST_MIN_STEPS` is written, as
    /// the next opening would pay it again). Failures are not the
    /// question's: the state is only a shortcut, and the next write tells
    /// of a full disk.
    pub(super) fn maybe_persist(&self, episode: &str, m: &EpisodeMemory, seen: Seen, cold: bool) {
        if !self.is_writer() {
            return;
        }
        let n = m.episode.steps.len();
        let have = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            s.persisted.get(episode).copied().unwrap_or(0)
        };
        let lag = n.saturating_sub(have);
        let due = if cold {
            lag >= PERSIST_MIN_STEPS
        } else {
            n >= PERSIST_MIN_STEPS && lag >= have.max(PERSIST_MIN_STEPS)
        };
        // Only if no write runs: a question never waits for one.
        if due {
            if let Some(write) = self.try_write_lock() {
                let _ = self.persist(&write, episode, m, Some(seen));
            }
        }
    }

    /// Writes `m`'s state, unless the episode changed since `seen` (a
    /// forget after the build must not bring the forgotten steps back).
    pub(super) fn persist(
        &self,
        _write: &std::sync::MutexGuard<'_, ()>,
        episode: &str,
        m: &EpisodeMemory,
        seen: Option<Seen>,
    ) -> Result<(), LiveError> {
        let current = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            (s.changes.get(episode).copied(), s.epoch)
        };
        if seen.is_some_and(|seen| seen != current) {
            return Ok(());
        }
        let Some(last) = m.episode.steps.last().map(|s: &Step| s.index) else {
            return Ok(());
        };
        let state = m.state();
        let row = StateRow {
            steps: m.episode.steps.len(),
            last_idx: last,
            fingerprint: self.fingerprint.clone(),
        };
        let b = state.bytes();
        // SQLite refuses a value over 1e9 bytes: a state that large is not
        // written (the stored, shorter one still opens and is extended), and
        // is not tried again before the episode doubles.
        if b.graph.len() + b.rest.len() + b.text.len() <= MAX_STATE_BYTES {
            let sections = [b.graph, b.rest, b.text];
            db::put_state(&self.conn(), episode, &row, &sections).map_err(self.db_error())?;
        }
        let mut s = self.snapshots.write().unwrap_or_else(|p| p.into_inner());
        s.persisted.insert(episode.to_string(), row.steps);
        Ok(())
    }

    /// Stores the state of every built episode whose stored state lags
    /// (on compact and when the writer closes), its pending appends
    /// applied first. An episode no question has built is not built for
    /// this: its next opening rebuilds it, and persists it then.
    pub(super) fn persist_built(
        &self,
        write: &std::sync::MutexGuard<'_, ()>,
    ) -> Result<(), LiveError> {
        let due: Vec<String> = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            s.built
                .iter()
                .filter(|(id, m)| {
                    let pending = s.appended.get(*id).map_or(0, Vec::len);
                    let n = m.episode.steps.len() + pending;
                    n >= PERSIST_MIN_STEPS && s.persisted.get(*id).copied().unwrap_or(0) < n
                })
                .map(|(id, _)| id.clone())
                .collect()
        };
        for id in due {
            // No write runs while `write` is held, so the memory is the
            // episode as committed.
            let m = self.memory(&id)?;
            self.persist(write, &id, &m, None)?;
        }
        Ok(())
    }
}

/// The directory of a tenant's saved HNSW graphs.
const ANN_DIR: &str = "ann";

/// The file name of an episode's saved HNSW graph (a hash of its id: a
/// collision only costs a rebuild, as the graph is checked against the
/// rows before it is used).
fn ann_name(episode: &str) -> String {
    format!("e{:016x}", crate::text::hash(episode.as_bytes()))
}

impl Tenant {
    /// Where `episode`'s HNSW graph is saved (a writer saves it; any
    /// handle loads it).
    pub(super) fn ann_file(&self, episode: &str) -> AnnFile {
        AnnFile {
            dir: self.dir.join(ANN_DIR),
            name: ann_name(episode),
            write: self.is_writer(),
        }
    }

    /// After a forget or a correction (whose `forget_snapshot` retired the
    /// snapshot's graph, so no save of it follows): the episode's saved
    /// graph is not of its rows any more. A failure is left to
    /// [`Tenant::compact`] (and the graph would not be used: its rows no
    /// longer match).
    pub(super) fn remove_ann(&self, episode: &str) {
        let _ = ann::remove(&self.ann_file(episode));
    }

    /// Removes the saved graphs of episodes that are gone, and whatever an
    /// interrupted save left.
    pub(super) fn clean_ann(&self) -> Result<(), LiveError> {
        let keep: HashSet<String> = self.episodes()?.iter().map(|e| ann_name(&e.id)).collect();
        let dir = self.dir.join(ANN_DIR);
        ann::clean(&dir, &keep).map_err(|source| LiveError::Io {
            path: dir.display().to_string(),
            source,
        })
    }

    /// Saves the HNSW graph of every built episode whose graph grew since
    /// its last save (when the writer closes).
    fn save_anns(&self) {
        let built: Vec<(String, Arc<EpisodeMemory>)> = {
            let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
            s.built
                .iter()
                .map(|(k, m)| (k.clone(), m.clone()))
                .collect()
        };
        for (id, m) in built {
            let _ = m.vector.save_ann(&self.ann_file(&id));
        }
    }
}

/// The parts out of their stored form (relations not read yet).
fn take_parts(stored: &mut [StoredParts]) -> Vec<StepParts> {
    stored
        .iter_mut()
        .map(|s| std::mem::take(&mut s.parts))
        .collect()
}

impl Drop for Tenant {
    fn drop(&mut self) {
        if self.is_writer() {
            self.closing
                .store(true, std::sync::atomic::Ordering::Relaxed);
            if let Ok(write) = self.write_lock() {
                let _ = self.persist_built(&write);
                self.save_anns();
            }
        }
    }
}
