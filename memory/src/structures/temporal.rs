//! T: the turn-indexed store of (step, action, observation).
//!
//! Access: the steps the question names (see [`super::stepref`]) and the
//! steps of the times it names (see [`super::timeref`]), each with score 1; if it names none, the top-k turns by idf-weighted overlap of the
//! question's terms with each turn's key (its action and the first 300 bytes
//! of its observation), score = that overlap in `[0, 1]`, only turns with a
//! positive score. Items are in step order. `hits` = items.

use super::timeref::parse_timestamp;
use super::{Evidence, MemoryStructure, Query, RetrieveError, StepTexts};
use crate::config::Config;
use crate::dataset::Episode;
use crate::text::{cut, term_hashes, TermIndex};
use mesa_core::Structure;
use std::sync::Arc;

/// Bytes of the observation in a turn key.
const KEY_OBSERVATION_BYTES: usize = 300;
/// Bytes of the action in a turn key.
const KEY_ACTION_BYTES: usize = 300;

/// The temporal store of one episode.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Temporal {
    /// Not kept in a persisted state: the memory's own rendering.
    #[serde(skip)]
    pub(super) steps: Arc<StepTexts>,
    /// The turn keys' terms, by step position.
    keys: TermIndex,
    /// Each step's timestamp, when readable (read again from the steps
    /// when a persisted state is opened).
    #[serde(skip)]
    times: Vec<Option<jiff::Timestamp>>,
    window: usize,
    max_steps: usize,
    top_k: usize,
}

/// Each step's timestamp, when readable.
fn times_of(steps: &[crate::dataset::Step]) -> Vec<Option<jiff::Timestamp>> {
    steps
        .iter()
        .map(|s| s.timestamp.as_deref().and_then(parse_timestamp))
        .collect()
}

/// A turn's key: its action and the start of its observation.
pub fn turn_key(action: &str, observation: &str) -> String {
    format!(
        "{} {}",
        cut(action, KEY_ACTION_BYTES).0,
        cut(observation, KEY_OBSERVATION_BYTES).0
    )
}

impl Temporal {
    /// Indexes an episode's turns.
    pub fn new(episode: &Episode, steps: Arc<StepTexts>, config: &Config) -> Temporal {
        let mut keys = TermIndex::default();
        for s in &episode.steps {
            keys.add(&term_hashes(&turn_key(&s.action, &s.observation)));
        }
        let times = times_of(&episode.steps);
        Temporal {
            steps,
            keys,
            times,
            window: config.temporal_window,
            max_steps: config.temporal_max_steps,
            top_k: config.temporal_top_k,
        }
    }

    /// Adds later steps (`steps` renders every step, the new ones last):
    /// the same store as [`Temporal::new`] over all of them, at the new
    /// steps' cost.
    pub(super) fn extend(&mut self, new: &[crate::dataset::Step], steps: Arc<StepTexts>) {
        for s in new {
            self.keys
                .add(&term_hashes(&turn_key(&s.action, &s.observation)));
            self.times
                .push(s.timestamp.as_deref().and_then(parse_timestamp));
        }
        self.steps = steps;
    }

    /// A persisted store over `episode`'s steps: takes the rendering and
    /// reads the timestamps again. `None` if the store indexes another
    /// number of steps.
    pub(super) fn reopen(mut self, episode: &Episode, steps: Arc<StepTexts>) -> Option<Temporal> {
        if self.keys.docs() != episode.steps.len() || steps.len() != episode.steps.len() {
            return None;
        }
        self.times = times_of(&episode.steps);
        self.steps = steps;
        Some(self)
    }

    /// The rendered steps.
    pub fn steps(&self) -> &StepTexts {
        &self.steps
    }

    /// The step indices the question names, by number or by time (no
    /// window around them, no limit), in increasing order: what the
    /// `named` preview compares each structure's evidence with.
    pub fn named(&self, query: &Query) -> Vec<usize> {
        let indices = &self.steps.indices;
        let mut positions = query.refs().resolve(indices, 0, usize::MAX);
        if !query.times().is_empty() {
            positions.extend(query.times().resolve(&self.times, 0));
            positions.sort_unstable();
            positions.dedup();
        }
        positions.into_iter().map(|p| indices[p]).collect()
    }

    /// The positions a question selects and their scores, in step order.
    pub fn select(&self, query: &Query) -> Vec<(usize, f64)> {
        let mut named = query
            .refs()
            .resolve(&self.steps.indices, self.window, self.max_steps);
        if !query.times().is_empty() {
            let timed = query.times().resolve(&self.times, self.window);
            let extra: Vec<usize> = timed
                .into_iter()
                .filter(|p| named.binary_search(p).is_err())
                .collect();
            let room = self.max_steps.saturating_sub(named.len());
            named.extend(super::stepref::sample(&extra, room));
            named.sort_unstable();
        }
        if !named.is_empty() {
            return named.into_iter().map(|p| (p, 1.0)).collect();
        }
        let weights = self.keys.idf().weigh(query.terms());
        let mut scored: Vec<(usize, f64)> = self
            .keys
            .overlaps(&weights)
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        // The best `top_k` by score, then position, then in step order.
        super::top(&mut scored, self.top_k, |a, b| {
            b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
        });
        scored.sort_by_key(|(p, _)| *p);
        scored
    }
}

impl MemoryStructure for Temporal {
    fn structure(&self) -> Structure {
        Structure::Temporal
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let items: Vec<_> = self
            .select(query)
            .into_iter()
            .map(|(p, s)| self.steps.item(Structure::Temporal, p, s))
            .collect();
        Ok(Evidence {
            structure: Structure::Temporal,
            hits: items.len(),
            items,
            stale: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{game_episode, sql_episode};
    use super::*;

    fn temporal(e: &Episode) -> Temporal {
        let c = Config::default();
        Temporal::new(
            e,
            Arc::new(StepTexts::build(&e.steps, c.evidence_text_bytes)),
            &c,
        )
    }

    #[test]
    fn named_steps() {
        let e = game_episode(40);
        let t = temporal(&e);
        let ev = t
            .retrieve(&Query::new("What happened between step 9 and step 11?"))
            .unwrap();
        let steps: Vec<usize> = ev.items.iter().flat_map(|i| i.steps.clone()).collect();
        assert_eq!(steps, [9, 10, 11]);
        assert_eq!(ev.hits, 3);
        assert!(ev.items[1]
            .text
            .starts_with("[step 10] action: up\nobservation: You pick up the key 1"));
        assert!(ev.items.iter().all(|i| i.score == 1.0 && i.tokens > 0));
        assert_eq!(ev.top(), 1.0);
    }

    #[test]
    fn lexical_fallback() {
        let e = sql_episode();
        let t = temporal(&e);
        let ev = t
            .retrieve(&Query::new("Which query hit the invalid identifier error?"))
            .unwrap();
        assert_eq!(ev.items[0].steps, [2]);
        assert!(ev.items.len() <= 5);
        let steps: Vec<usize> = ev.items.iter().map(|i| i.steps[0]).collect();
        assert!(steps.windows(2).all(|w| w[0] < w[1]));
        let none = t.retrieve(&Query::new("zebra giraffe")).unwrap();
        assert!(none.items.is_empty());
        assert_eq!(none.tokens(), 0);
    }
}
