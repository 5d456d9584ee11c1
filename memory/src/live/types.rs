//! The values the live memory's calls take and return, and the checks a
//! step passes before anything is written.

use super::{LiveError, MAX_TEXT_BYTES};
use std::collections::BTreeMap;

/// A new episode.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewEpisode {
    /// Unique within the tenant.
    pub id: String,
    /// The task the agent was given.
    pub task: String,
    /// The domain (free text; policies may test it).
    pub domain: String,
    /// How it ended, if known.
    pub outcome: Option<String>,
    /// Other metadata.
    pub meta: BTreeMap<String, String>,
}

impl NewEpisode {
    /// The episode a dataset's `e` becomes when imported (its steps are
    /// appended separately, see [`NewStep::of`]).
    pub fn of(e: &crate::dataset::Episode) -> NewEpisode {
        NewEpisode {
            id: e.id.clone(),
            task: e.task.clone(),
            domain: e.domain.clone(),
            outcome: e.outcome.clone(),
            meta: e.meta.clone(),
        }
    }
}

/// A step to append; the index is assigned unless given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewStep {
    /// The step's index, as the agent's log numbers it (an import keeps the
    /// dataset's numbers); above every index the episode has. `None`: one
    /// past the last.
    pub index: Option<usize>,
    /// What the agent did.
    pub action: String,
    /// What it saw.
    pub observation: String,
    /// When (RFC 3339); the time of the append when absent.
    pub timestamp: Option<String>,
}

impl NewStep {
    /// A dataset's step as imported: its index and timestamp kept.
    pub fn of(s: &crate::dataset::Step) -> NewStep {
        NewStep {
            index: Some(s.index),
            action: s.action.clone(),
            observation: s.observation.clone(),
            timestamp: s.timestamp.clone(),
        }
    }
}

/// An episode as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeInfo {
    /// The id.
    pub id: String,
    /// The task.
    pub task: String,
    /// The domain.
    pub domain: String,
    /// How many steps it has.
    pub steps: usize,
    /// When it was created.
    pub created: String,
}

/// Which steps to forget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forget {
    /// One step.
    Step(usize),
    /// The steps `first..=last` that exist (at least one must).
    Range(usize, usize),
    /// The whole episode.
    Episode,
}

pub(super) fn validate_step(i: usize, s: &NewStep) -> Result<(), LiveError> {
    if s.action.trim().is_empty() {
        return Err(LiveError::Empty {
            what: format!("step {}'s action (of the batch, from 0)", i),
        });
    }
    for (what, text) in [("action", &s.action), ("observation", &s.observation)] {
        if text.len() > MAX_TEXT_BYTES {
            return Err(LiveError::TooLarge {
                what: format!("step {i}'s {what} (of the batch, from 0)"),
                bytes: text.len(),
                limit: MAX_TEXT_BYTES,
            });
        }
    }
    if let Some(t) = &s.timestamp {
        t.parse::<jiff::Timestamp>()
            .map_err(|source| LiveError::BadTimestamp {
                given: t.clone(),
                source,
            })?;
    }
    Ok(())
}

/// The current time, RFC 3339 in UTC to the millisecond.
pub(super) fn now() -> String {
    let t = jiff::Timestamp::now();
    t.round(jiff::Unit::Millisecond).unwrap_or(t).to_string()
}
