//! The built episodes a tenant keeps in memory, and how many: a question
//! builds its episode's five structures once and shares them until the
//! episode changes; past [`LiveMemory::keeping_steps`]'s budget, the
//! episodes asked about least recently are dropped, and their next
//! question builds them again (from the persisted state when the episode
//! has one, state.rs).
//!
//! ```text
//! question ──ready?── built[episode] (its last use stamped) ──► shared
//!          └─ build ──► keep(episode): built steps over the budget?
//!                         └─ drop the least recently used others (never the
//!                            one just kept), with their pending appends
//! ```
//!
//! A dropped snapshot a question still holds lives until that question
//! ends. Dropping loses nothing: every step is in the database.
//!
//! [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps

use crate::dataset::Step;
use crate::structures::vector::AnnHold;
use crate::structures::EpisodeMemory;
use crate::structures::StepParts;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The default budget of [`LiveMemory::keeping_steps`]: steps of built
/// episodes a tenant keeps in memory. Built with the built-in embedder,
/// AMA-Bench's episodes take about 19 KB per step (docs/BENCHMARKS.md,
/// "Memory kept by built episodes"), so the default is about 1.8 GiB per
/// tenant; it holds AMA-Bench's 15,244 steps six times over.
///
/// [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps
pub const DEFAULT_RESIDENT_STEPS: usize = 100_000;

/// What a tenant keeps built in memory ([`super::Tenant::resident`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Resident {
    /// Episodes built and kept.
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// The budget in steps ([`LiveMemory::keeping_steps`]).
    ///
    /// [`LiveMemory::keeping_steps`]: super::LiveMemory::keeping_steps
    pub budget: usize,
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
            budget: s.built.budget,
        }
    }
}

/// One built episode and when a question last used it.
struct Entry {
    memory: Arc<EpisodeMemory>,
    used: AtomicU64,
}

/// The built episodes, least recently used dropped past the budget.
pub(super) struct Built {
    map: HashMap<String, Entry>,
    /// Stamps uses; a larger stamp is a later use.
    clock: AtomicU64,
    /// The steps of the episodes in `map`.
    steps: usize,
    /// The budget, in steps.
    budget: usize,
}

impl Default for Built {
    fn default() -> Built {
        Built::with_budget(DEFAULT_RESIDENT_STEPS)
    }
}

impl Built {
    pub(super) fn with_budget(budget: usize) -> Built {
        Built {
            map: HashMap::new(),
            clock: AtomicU64::new(0),
            steps: 0,
            budget,
        }
    }

    /// The episode's snapshot, its use stamped (under a read lock: the
    /// stamp is atomic).
    pub(super) fn get(&self, episode: &str) -> Option<&Arc<EpisodeMemory>> {
        let r = self.map.get(episode)?;
        r.used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
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
        self.steps -= r.memory.episode.steps.len();
        Some(r.memory)
    }

    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.steps = 0;
    }

    /// Keeps `memory` as the episode's snapshot, then drops the least
    /// recently used others while the kept steps are over the budget;
    /// the episodes dropped, with their snapshots.
    fn insert(
        &mut self,
        episode: &str,
        memory: Arc<EpisodeMemory>,
    ) -> Vec<(String, Arc<EpisodeMemory>)> {
        self.remove(episode);
        self.steps += memory.episode.steps.len();
        let used = AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed));
        self.map.insert(episode.to_string(), Entry { memory, used });
        let mut dropped = Vec::new();
        while self.steps > self.budget {
            let oldest = self
                .map
                .iter()
                .filter(|(k, _)| k.as_str() != episode)
                .min_by_key(|(_, r)| r.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else { break };
            if let Some(m) = self.remove(&oldest) {
                dropped.push((oldest, m));
            }
        }
        dropped
    }
}

/// The built episodes, and a count of each episode's changes: a snapshot
/// is kept only if no change began while it was being built, so a build
/// that raced a write never hides that write from later questions.
#[derive(Default)]
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
    pub(super) fn with_budget(budget: usize) -> Snapshots {
        Snapshots {
            built: Built::with_budget(budget),
            ..Snapshots::default()
        }
    }

    /// Keeps the episode's snapshot, which has every append so far;
    /// episodes dropped for the budget lose their pending appends too (the
    /// next question reads them from the database with the rest).
    pub(super) fn keep(&mut self, episode: &str, memory: Arc<EpisodeMemory>) {
        for (old, m) in self.built.insert(episode, memory) {
            self.appended.remove(&old);
            if let Some(hold) = m.vector.ann_hold() {
                self.dropped_anns.entry(old).or_default().push(hold);
            }
        }
        // Holds whose index is gone (its build ended, its memory freed).
        self.dropped_anns
            .retain(|_, holds| holds.iter().any(AnnHold::is_alive));
        self.appended.remove(episode);
        self.dropped.remove(episode);
    }

    /// Retires the approximate indexes of the episode's snapshots that the
    /// budget dropped (called with every change to the episode).
    pub(super) fn retire_dropped(&mut self, episode: &str) {
        for hold in self.dropped_anns.remove(episode).unwrap_or_default() {
            hold.retire();
        }
    }
}
