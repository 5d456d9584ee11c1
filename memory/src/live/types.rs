//! The values the live memory's calls take and return, and the checks a
//! step passes before anything is written, and how a batch is numbered.

use super::{LiveError, MAX_ID_BYTES, MAX_STEP_INDEX, MAX_TEXT_BYTES};
use crate::dataset::Step;
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
    /// When it was created (RFC 3339); the time of the creation when
    /// absent (an import gives the exported episode's).
    pub created: Option<String>,
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
            created: e.created.clone(),
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

/// An episode as listed (its JSON form is what `GET /v1/episodes` and
/// `mesa episodes --json` give).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EpisodeInfo {
    /// The id.
    pub id: String,
    /// The task.
    pub task: String,
    /// The domain.
    pub domain: String,
    /// How it ended, if known.
    pub outcome: Option<String>,
    /// Its metadata.
    pub meta: BTreeMap<String, String>,
    /// How many steps it has.
    pub steps: usize,
    /// When it was created.
    pub created: String,
}

impl EpisodeInfo {
    /// An episode's row and its number of steps, as listed.
    pub(super) fn of((e, steps): (super::db::EpisodeRow, usize)) -> EpisodeInfo {
        EpisodeInfo {
            id: e.id,
            task: e.task,
            domain: e.domain,
            outcome: e.outcome,
            meta: e.meta,
            steps,
            created: e.created,
        }
    }
}

/// Changes to an episode's fields ([`Tenant::update_episode`]): each
/// field given replaces the episode's.
///
/// [`Tenant::update_episode`]: super::Tenant::update_episode
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EpisodeUpdate {
    /// The task (S's `Task:` line; an extractor that reads it, such as the
    /// LLM one, extracts every step's relations again under the new one).
    pub task: Option<String>,
    /// The domain.
    pub domain: Option<String>,
    /// How it ended (the summary's `Outcome:` line): `Some(Some(o))` sets
    /// it, `Some(None)` removes it (the episode is again one whose end is
    /// not known), `None` leaves it.
    pub outcome: Option<Option<String>>,
    /// The whole metadata, replacing the episode's.
    pub meta: Option<BTreeMap<String, String>>,
}

impl EpisodeUpdate {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.task.is_none()
            && self.domain.is_none()
            && self.outcome.is_none()
            && self.meta.is_none()
    }
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

/// Checks a new episode: an id of 1 to [`MAX_ID_BYTES`] bytes without
/// control characters, and texts within [`MAX_TEXT_BYTES`] (the metadata's
/// keys and values together).
pub(super) fn validate_episode(e: &NewEpisode) -> Result<(), LiveError> {
    if e.id.trim().is_empty() {
        return Err(LiveError::Empty {
            what: "the episode id".into(),
        });
    }
    let bad_id = |reason: String| LiveError::BadEpisodeId {
        shown: e
            .id
            .chars()
            .take(40)
            .collect::<String>()
            .escape_debug()
            .to_string(),
        reason,
    };
    if e.id.len() > MAX_ID_BYTES {
        return Err(bad_id(format!(
            "it has {} bytes, more than {MAX_ID_BYTES}",
            e.id.len()
        )));
    }
    if e.id.chars().any(char::is_control) {
        return Err(bad_id(
            "it holds a control character (a newline, a tab, NUL, ...)".into(),
        ));
    }
    check_sizes(&e.task, &e.domain, e.outcome.as_deref(), &e.meta)?;
    if let Some(t) = &e.created {
        check_time(t)?;
    }
    Ok(())
}

/// Checks an episode's texts against [`MAX_TEXT_BYTES`] (the metadata's
/// keys and values together).
pub(super) fn check_sizes(
    task: &str,
    domain: &str,
    outcome: Option<&str>,
    meta: &BTreeMap<String, String>,
) -> Result<(), LiveError> {
    let meta: usize = meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    let outcome = outcome.map_or(0, str::len);
    for (what, bytes) in [
        ("the task", task.len()),
        ("the domain", domain.len()),
        ("the outcome", outcome),
        ("the metadata", meta),
    ] {
        if bytes > MAX_TEXT_BYTES {
            return Err(LiveError::TooLarge {
                what: what.into(),
                bytes,
                limit: MAX_TEXT_BYTES,
            });
        }
    }
    Ok(())
}

/// Checks that `t` is an RFC 3339 time.
fn check_time(t: &str) -> Result<(), LiveError> {
    t.parse::<jiff::Timestamp>()
        .map(|_| ())
        .map_err(|source| LiveError::BadTimestamp {
            given: t.to_string(),
            source,
        })
}

/// Checks a step before it is written: `at` is its place in a batch, or
/// `None` for a correction.
pub(super) fn validate_step(at: Option<usize>, s: &NewStep) -> Result<(), LiveError> {
    let name = |what: &str| match at {
        Some(i) => format!("step {i}'s {what} (of the batch, from 0)"),
        None => format!("the corrected step's {what}"),
    };
    if s.action.trim().is_empty() {
        return Err(LiveError::Empty {
            what: name("action"),
        });
    }
    for (what, text) in [("action", &s.action), ("observation", &s.observation)] {
        if text.len() > MAX_TEXT_BYTES {
            return Err(LiveError::TooLarge {
                what: name(what),
                bytes: text.len(),
                limit: MAX_TEXT_BYTES,
            });
        }
    }
    if let Some(t) = &s.timestamp {
        check_time(t)?;
    }
    Ok(())
}

/// Numbers a batch of new steps from `first`, the episode's next free
/// index: an explicit index must not be below the one before it (or
/// `first`), none may pass [`MAX_STEP_INDEX`]; a missing timestamp is
/// `stamp`.
pub(super) fn number_steps(
    episode: &str,
    first: usize,
    steps: Vec<NewStep>,
    stamp: &str,
) -> Result<Vec<Step>, LiveError> {
    let mut next = first;
    let mut numbered = Vec::with_capacity(steps.len());
    for (i, s) in steps.into_iter().enumerate() {
        let index = match s.index {
            Some(x) if x < next => {
                return Err(LiveError::IndexTaken {
                    episode: episode.to_string(),
                    index: x,
                    next,
                    at: i,
                })
            }
            Some(x) => x,
            None => next,
        };
        if index > MAX_STEP_INDEX {
            return Err(LiveError::IndexTooLarge {
                episode: episode.to_string(),
                index,
                max: MAX_STEP_INDEX,
                at: i,
            });
        }
        next = index + 1;
        numbered.push(Step {
            index,
            action: s.action,
            observation: s.observation,
            timestamp: Some(s.timestamp.unwrap_or_else(|| stamp.to_string())),
        });
    }
    Ok(numbered)
}

/// The current time, RFC 3339 in UTC to the millisecond.
pub(super) fn now() -> String {
    let t = jiff::Timestamp::now();
    t.round(jiff::Unit::Millisecond).unwrap_or(t).to_string()
}
