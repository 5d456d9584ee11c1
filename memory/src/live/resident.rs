//! The built episodes kept in memory, and how many: a question builds its
//! episode's five structures once and shares them until the episode
//! changes. One budget of steps ([`LiveMemory::keeping_steps`]) is shared
//! by every tenant a [`LiveMemory`] (and its clones) opens, so a server
//! holding many tenants keeps one bound: past it, the episodes asked about
//! least recently, in any of them, are dropped, and their next question
//! builds them again (from the persisted state when the episode has one,
//! state.rs).
//!
//! ```text
//! question ──ready?── built[episode] (its last use stamped on the shared clock)
//!          └─ build ──► keep(episode) under the tenant's lock, adding its
//!                       steps to the shared count; then, no lock held,
//!                       Budget::enforce: while the count is over the budget,
//!                       drop the least recently used episode of any tenant
//!                       (never the one just kept), with its pending appends,
//!                       taking one tenant's lock at a time
//! ```
//!
//! A dropped snapshot a question still holds lives until that question
//! ends. Dropping loses nothing: every step is in the database.
//!
//! [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps
//! [`LiveMemory`]: super::LiveMemory

use crate::dataset::Step;
use crate::structures::vector::AnnHold;
use crate::structures::EpisodeMemory;
use crate::structures::StepParts;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};

/// The default budget of [`LiveMemory::keeping_steps`]: steps of built
/// episodes kept in memory, over every tenant a handle opens. Built with
/// the built-in embedder, AMA-Bench's episodes take about 19 KB per step
/// (docs/BENCHMARKS.md, "Memory kept by built episodes"), so the default
/// is about 1.8 GiB; it holds AMA-Bench's 15,244 steps six times over.
///
/// [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps
pub const DEFAULT_RESIDENT_STEPS: usize = 100_000;

/// What a tenant keeps built in memory ([`super::Tenant::resident`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resident {
    /// Episodes of this tenant built and kept.
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// The steps kept by every tenant that shares the budget (this one
    /// included).
    pub shared_steps: usize,
    /// The budget in steps, shared by the tenants of one [`LiveMemory`]
    /// ([`LiveMemory::keeping_steps`]).
    ///
    /// [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps
    /// [`LiveMemory`]: super::LiveMemory
    pub budget: usize,
    /// Built episodes the shared budget has dropped so far, over the
    /// tenants that share it ([`super::LiveMemory::budget_drops`]).
    pub dropped: u64,
}

impl super::Tenant {
    /// Whether the episode is built and kept (its next question may still
    /// extend it by appends made since).
    pub fn is_resident(&self, episode: &str) -> bool {
        let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
        s.built.contains_key(episode)
    }

    /// The episodes this handle keeps built, and their steps.
    pub fn resident(&self) -> Resident {
        let s = self.snapshots.read().unwrap_or_else(|p| p.into_inner());
        Resident {
            episodes: s.built.map.len(),
            steps: s.built.steps,
            shared_steps: s.built.budget.steps.load(Ordering::Relaxed),
            budget: s.built.budget.limit,
            dropped: s.built.budget.dropped(),
        }
    }
}

/// A budget of built steps shared by the tenants of one
/// [`super::LiveMemory`]: the count of their steps, the clock that stamps
/// their uses (so that uses in two tenants compare), and the tenants, to
/// drop from.
pub(super) struct Budget {
    limit: usize,
    steps: AtomicUsize,
    /// Episodes dropped for the budget so far.
    dropped: AtomicU64,
    clock: AtomicU64,
    tenants: Mutex<Vec<Weak<RwLock<Snapshots>>>>,
}

impl std::fmt::Debug for Budget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Budget")
            .field("limit", &self.limit)
            .field("steps", &self.steps.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// An episode [`Budget::enforce`] may drop: its tenant, name and last use.
struct Candidate {
    used: u64,
    tenant: usize,
    episode: String,
}

impl Budget {
    pub(super) fn new(limit: usize) -> Arc<Budget> {
        Arc::new(Budget {
            limit,
            steps: AtomicUsize::new(0),
            dropped: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            tenants: Mutex::new(Vec::new()),
        })
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    /// A tenant's snapshots, sharing this budget.
    pub(super) fn register(self: &Arc<Budget>) -> Arc<RwLock<Snapshots>> {
        let snapshots = Arc::new(RwLock::new(Snapshots::with_budget(self.clone())));
        let mut tenants = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        tenants.retain(|t| t.strong_count() > 0);
        tenants.push(Arc::downgrade(&snapshots));
        snapshots
    }

    /// While the steps kept are over the budget, drops the least recently
    /// used episode of any tenant but `kept`'s episode of `tenant` (the one
    /// just built). Called with no tenant's lock held: it takes one at a
    /// time, so two tenants enforcing at once never wait on each other.
    pub(super) fn enforce(&self, tenant: &Arc<RwLock<Snapshots>>, kept: &str) {
        // A use between the scan and the drop spares an episode; a few
        // rounds settle, and the last drops the oldest whatever their
        // uses since the scan, so that the budget holds once it returns.
        const ROUNDS: usize = 4;
        for round in 0..ROUNDS {
            if self.steps.load(Ordering::Relaxed) <= self.limit {
                return;
            }
            let tenants: Vec<Arc<RwLock<Snapshots>>> = {
                let list = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
                list.iter().filter_map(Weak::upgrade).collect()
            };
            let mut candidates = Vec::new();
            for (i, t) in tenants.iter().enumerate() {
                let own = Arc::ptr_eq(t, tenant);
                let s = t.read().unwrap_or_else(|p| p.into_inner());
                for (episode, entry) in &s.built.map {
                    if !(own && episode == kept) {
                        candidates.push(Candidate {
                            used: entry.used.load(Ordering::Relaxed),
                            tenant: i,
                            episode: episode.clone(),
                        });
                    }
                }
            }
            if candidates.is_empty() {
                return;
            }
            candidates.sort_unstable_by_key(|c| c.used);
            for c in candidates {
                if self.steps.load(Ordering::Relaxed) <= self.limit {
                    return;
                }
                let mut s = tenants[c.tenant].write().unwrap_or_else(|p| p.into_inner());
                let since = (round + 1 < ROUNDS).then_some(c.used);
                if s.drop_unused(&c.episode, since) {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// One built episode and when a question last used it.
struct Entry {
    memory: Arc<EpisodeMemory>,
    used: AtomicU64,
}

/// A tenant's built episodes, their steps counted in the shared budget.
pub(super) struct Built {
    map: HashMap<String, Entry>,
    /// The steps of the episodes in `map`.
    steps: usize,
    budget: Arc<Budget>,
}

impl Drop for Built {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Built {
    fn with_budget(budget: Arc<Budget>) -> Built {
        Built {
            map: HashMap::new(),
            steps: 0,
            budget,
        }
    }

    /// The episode's snapshot, its use stamped (under a read lock: the
    /// stamp is atomic).
    pub(super) fn get(&self, episode: &str) -> Option<&Arc<EpisodeMemory>> {
        let r = self.map.get(episode)?;
        r.used.store(self.budget.tick(), Ordering::Relaxed);
        Some(&r.memory)
    }

    pub(super) fn contains_key(&self, episode: &str) -> bool {
        self.map.contains_key(episode)
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &Arc<EpisodeMemory>)> {
        self.map.iter().map(|(k, r)| (k, &r.memory))
    }

    pub(super) fn remove(&mut self, episode: &str) -> Option<Arc<EpisodeMemory>> {
        let r = self.map.remove(episode)?;
        let n = r.memory.episode.steps.len();
        self.steps -= n;
        self.budget.steps.fetch_sub(n, Ordering::Relaxed);
        Some(r.memory)
    }

    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.budget.steps.fetch_sub(self.steps, Ordering::Relaxed);
        self.steps = 0;
    }

    /// Keeps `memory` as the episode's snapshot (the shared budget is
    /// enforced after, with no lock held: [`Budget::enforce`]).
    fn insert(&mut self, episode: &str, memory: Arc<EpisodeMemory>) {
        self.remove(episode);
        let n = memory.episode.steps.len();
        self.steps += n;
        self.budget.steps.fetch_add(n, Ordering::Relaxed);
        let used = AtomicU64::new(self.budget.tick());
        self.map.insert(episode.to_string(), Entry { memory, used });
    }
}

/// The built episodes, and a count of each episode's changes: a snapshot
/// is kept only if no change began while it was being built, so a build
/// that raced a write never hides that write from later questions.
pub(super) struct Snapshots {
    pub(super) built: Built,
    /// Steps this handle appended to a built episode since it was built:
    /// the next question extends that snapshot instead of rebuilding.
    pub(super) appended: HashMap<String, Vec<(Step, StepParts)>>,
    pub(super) changes: HashMap<String, u64>,
    /// Steps covered by the episode's persisted state, as this writer
    /// knows it (see [`super::state`]).
    pub(super) persisted: HashMap<String, usize>,
    /// Episodes whose built snapshot a correction, a forget or an update
    /// dropped:
    /// [`super::Tenant::catch_up`] builds them again.
    pub(super) dropped: HashSet<String>,
    /// A reader's view of the database (`PRAGMA data_version`): when
    /// another connection commits, every snapshot is dropped.
    pub(super) data_version: Option<i64>,
    /// Counts those drops, for the race check.
    pub(super) epoch: u64,
    /// The approximate indexes of snapshots dropped for the budget that
    /// were still being built on another thread: a forget or a correction
    /// of the episode retires them, so that no save of the forgotten rows
    /// follows ([`Snapshots::retire_dropped`]).
    pub(super) dropped_anns: HashMap<String, Vec<AnnHold>>,
}

impl Snapshots {
    fn with_budget(budget: Arc<Budget>) -> Snapshots {
        Snapshots {
            built: Built::with_budget(budget),
            appended: HashMap::new(),
            changes: HashMap::new(),
            persisted: HashMap::new(),
            dropped: HashSet::new(),
            data_version: None,
            epoch: 0,
            dropped_anns: HashMap::new(),
        }
    }

    /// Keeps the episode's snapshot, which has every append so far (the
    /// caller then enforces the budget: [`Budget::enforce`]).
    pub(super) fn keep(&mut self, episode: &str, memory: Arc<EpisodeMemory>) {
        self.built.insert(episode, memory);
        // Holds whose index is gone (its build ended, its memory freed).
        self.dropped_anns
            .retain(|_, holds| holds.iter().any(AnnHold::is_alive));
        self.appended.remove(episode);
        self.dropped.remove(episode);
    }

    /// Drops the episode's snapshot for the budget if no question has used
    /// it since the stamp `used` (whatever its uses with `None`); its
    /// pending appends go too (the next question reads them from the
    /// database with the rest). Whether it dropped it.
    fn drop_unused(&mut self, episode: &str, used: Option<u64>) -> bool {
        let unused = self
            .built
            .map
            .get(episode)
            .is_some_and(|e| used.is_none_or(|used| e.used.load(Ordering::Relaxed) == used));
        let Some(m) = unused.then(|| self.built.remove(episode)).flatten() else {
            return false;
        };
        self.appended.remove(episode);
        if let Some(hold) = m.vector.ann_hold() {
            self.dropped_anns
                .entry(episode.to_string())
                .or_default()
                .push(hold);
        }
        true
    }

    /// Retires the approximate indexes of the episode's snapshots that the
    /// budget dropped (called with every change to the episode).
    pub(super) fn retire_dropped(&mut self, episode: &str) {
        for hold in self.dropped_anns.remove(episode).unwrap_or_default() {
            hold.retire();
        }
    }
}
