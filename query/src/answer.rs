//! [`QueryEngine`]: previews, select, retrieve, compose; and the JSON form
//! of an [`Answer`].

use mesa_core::{Engine, Input, Mask, PreviewKey, Previews, Selection, Shown};
use mesa_memory::{Composition, EpisodeMemory, RetrieveError, Store};
use mesa_runtime::{AnyEngine, SelectError};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Why a question could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// The store has no episode with this id.
    #[error("the store has no episode `{id}`{}", hint(.close))]
    UnknownEpisode {
        /// The id asked for.
        id: String,
        /// A close id, if there is one.
        close: Option<String>,
    },
    /// A structure could not retrieve.
    #[error("retrieving for the question failed: {0}")]
    Retrieve(#[from] RetrieveError),
    /// The policy failed to select.
    #[error("the policy failed: {0}")]
    Select(#[from] SelectError),
    /// The question has no words: every structure would return what it
    /// ranks first for nothing, which answers nothing.
    #[error("the question is empty (or only spaces); ask with words")]
    EmptyQuestion,
}

fn hint(close: &Option<String>) -> String {
    match close {
        Some(c) => format!("; did you mean `{c}`? (`mesa query STORE --list` lists them)"),
        None => "; `mesa query STORE --list` lists the episodes".into(),
    }
}

/// How the structures to read are chosen.
#[derive(Debug)]
pub enum Chooser {
    /// A policy decides.
    Policy(Box<AnyEngine>),
    /// A fixed set of structures, bypassing any policy.
    Fixed(Mask),
}

/// One question to answer against one episode.
#[derive(Debug, Clone, PartialEq)]
pub struct Question<'q> {
    /// The episode's id in the store.
    pub episode: &'q str,
    /// The question.
    pub text: &'q str,
    /// Its type, when known and when policies may see it.
    pub qtype: Option<&'q str>,
}

/// Time spent on each stage of one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Reading the question: its terms and step references.
    pub prepare: Duration,
    /// Computing the previews the policy reads.
    pub previews: Duration,
    /// Running the policy.
    pub select: Duration,
    /// Retrieving the selected structures not already retrieved for previews.
    pub retrieve: Duration,
    /// Composing the evidence.
    pub compose: Duration,
}

impl Timings {
    /// The whole answer.
    pub fn total(&self) -> Duration {
        self.prepare + self.previews + self.select + self.retrieve + self.compose
    }

    /// Each stage and the total in whole microseconds, as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        let map: serde_json::Map<String, serde_json::Value> = self
            .micros()
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        serde_json::Value::Object(map)
    }

    /// Each stage and the total, in whole microseconds.
    pub fn micros(&self) -> [(&'static str, f64); 6] {
        let us = |d: Duration| (d.as_secs_f64() * 1e6).round();
        [
            ("prepare", us(self.prepare)),
            ("previews", us(self.previews)),
            ("select", us(self.select)),
            ("retrieve", us(self.retrieve)),
            ("compose", us(self.compose)),
            ("total", us(self.total())),
        ]
    }
}

/// What one question got.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The mask and the deciding rule (`None` with a fixed set, or when no
    /// rule changed the default).
    pub selection: Selection,
    /// The deciding rule's name.
    pub rule_name: Option<String>,
    /// The previews computed for the policy (only the ones it reads).
    pub previews: Vec<(PreviewKey, f64)>,
    /// For a trading policy, what each non-empty subset showed, in its
    /// unit (index `k` is [`Mask::subset`]`(k)`).
    pub shown: Option<(Shown, [f64; Mask::SUBSETS])>,
    /// The selected structures' evidence, in the order S, T, G, V, R.
    pub composition: Composition,
    /// Where the time went.
    pub timings: Timings,
    /// When each step of the evidence happened, for the steps whose
    /// trajectory says.
    pub times: BTreeMap<usize, String>,
}

impl Answer {
    /// The timestamps of these steps, in order (`None` where unknown).
    pub fn times_of(&self, steps: &[usize]) -> Vec<Option<&str>> {
        steps
            .iter()
            .map(|s| self.times.get(s).map(String::as_str))
            .collect()
    }

    /// The answer as `mesa query --format json` prints it: episode,
    /// question, mask, bits, rule, previews, tokens, evidence (structure,
    /// steps, score, tokens, and the text when `with_text`), timings in
    /// microseconds, and `stale` (steps a structure lacks) when any does.
    pub fn to_json(&self, q: &Question<'_>, with_text: bool) -> serde_json::Value {
        let previews: serde_json::Map<String, serde_json::Value> = self
            .previews
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let items: Vec<serde_json::Value> = self
            .composition
            .items()
            .map(|i| {
                let mut v = json!({
                    "structure": i.structure,
                    "steps": i.steps,
                    "score": i.score,
                    "tokens": i.tokens,
                });
                if !self.times.is_empty() {
                    v["timestamps"] = json!(self.times_of(&i.steps));
                }
                if with_text {
                    v["text"] = json!(i.text);
                }
                v
            })
            .collect();
        let mut v = json!({
            "episode": q.episode,
            "question": q.text,
            "mask": self.selection.mask,
            "bits": self.selection.mask.bits(),
            "rule": self.rule_name,
            "previews": previews,
            "tokens": self.composition.tokens,
            "evidence": items,
            "micros": self.timings.to_json(),
        });
        if let Some((unit, counts)) = &self.shown {
            v["shown"] = json!({ unit.name(): counts.as_slice() });
        }
        let stale = self.stale();
        if !stale.is_empty() {
            v["stale"] = json!(stale);
        }
        v
    }

    /// How many steps each selected structure's evidence lacks (a summary
    /// an LLM rewrites over the whole episode lags behind appends), by
    /// structure letter; empty when every structure is current.
    pub fn stale(&self) -> BTreeMap<String, usize> {
        self.composition
            .sections
            .iter()
            .filter(|e| e.stale > 0)
            .map(|e| (e.structure.letter().to_string(), e.stale))
            .collect()
    }
}

/// Answers questions about episodes with one chooser: the part of the
/// question path that does not care where the episode came from (a built
/// store, or a live tenant's `Tenant::memory`).
pub struct Asker {
    chooser: Chooser,
    /// The previews the policy reads, read once from its metadata.
    wanted: Vec<PreviewKey>,
    /// The unit a trading policy reads counts in.
    shown: Option<Shown>,
}

impl Asker {
    /// An asker choosing with `chooser`.
    pub fn new(chooser: Chooser) -> Asker {
        let (wanted, shown) = match &chooser {
            Chooser::Policy(engine) => (engine.previews(), engine.shown()),
            Chooser::Fixed(_) => (Vec::new(), None),
        };
        Asker {
            chooser,
            wanted,
            shown,
        }
    }

    /// The previews the policy reads.
    pub fn wanted_previews(&self) -> &[PreviewKey] {
        &self.wanted
    }

    /// The policy's engine, to select without retrieving (`None` with a
    /// fixed set).
    pub fn engine_mut(&mut self) -> Option<&mut AnyEngine> {
        match &mut self.chooser {
            Chooser::Policy(engine) => Some(engine),
            Chooser::Fixed(_) => None,
        }
    }

    /// Answers one question about `memory`: previews, select, retrieve,
    /// compose.
    pub fn ask(
        &mut self,
        memory: &EpisodeMemory,
        text: &str,
        qtype: Option<&str>,
    ) -> Result<Answer, QueryError> {
        if text.trim().is_empty() {
            return Err(QueryError::EmptyQuestion);
        }
        let mut timings = Timings::default();
        let t = Instant::now();
        let retrieval = mesa_memory::Retrieval::new(memory, text);
        timings.prepare = t.elapsed();

        let t = Instant::now();
        let mut previews = retrieval.previews(&self.wanted)?;
        // A trading policy reads what each subset shows: all five are
        // retrieved for it.
        let shown = match self.shown {
            Some(unit) => Some((unit, retrieval.shown_counts(unit)?)),
            None => None,
        };
        if let Some((unit, counts)) = shown {
            previews.set_shown(unit, counts);
        }
        timings.previews = t.elapsed();

        let t = Instant::now();
        let (selection, rule_name) = match &mut self.chooser {
            Chooser::Fixed(mask) => (
                Selection {
                    mask: *mask,
                    rule: None,
                },
                None,
            ),
            Chooser::Policy(engine) => {
                let input = policy_input(memory, text, qtype, previews);
                let selection = engine.select(&input)?;
                let name = selection.rule.map(|i| engine.rule_name(i));
                (selection, name)
            }
        };
        timings.select = t.elapsed();

        let t = Instant::now();
        for s in selection.mask.iter() {
            retrieval.evidence(s)?;
        }
        timings.retrieve = t.elapsed();

        let t = Instant::now();
        let composition = retrieval.compose(selection.mask)?;
        timings.compose = t.elapsed();

        let times = composition
            .steps()
            .into_iter()
            .filter_map(|i| {
                let pos = memory.episode.position(i)?;
                let time = memory.episode.steps[pos].timestamp.clone()?;
                Some((i, time))
            })
            .collect();
        Ok(Answer {
            selection,
            rule_name,
            previews: self
                .wanted
                .iter()
                .map(|&k| (k, previews.value(k)))
                .collect(),
            shown,
            composition,
            timings,
            times,
        })
    }
}

/// What a policy reads for a question about `memory`.
fn policy_input(
    memory: &EpisodeMemory,
    text: &str,
    qtype: Option<&str>,
    previews: Previews,
) -> Input {
    let episode = &memory.episode;
    Input {
        query: text.to_string(),
        task: Some(episode.task.clone()),
        domain: Some(episode.domain.clone()),
        qtype: qtype.map(str::to_string),
        previews,
    }
}

impl Asker {
    /// The policy's trace for a question `answer` answered: every rule in
    /// order, its mask before and after and whether it fired, as `mesa run
    /// --trace` prints it, with each rule's name added. The policy reruns on the same input (the answer's
    /// previews), so it decides as it did. `None` with fixed structures.
    pub fn trace(
        &mut self,
        memory: &EpisodeMemory,
        text: &str,
        qtype: Option<&str>,
        answer: &Answer,
    ) -> Result<Option<serde_json::Value>, QueryError> {
        let Chooser::Policy(engine) = &mut self.chooser else {
            return Ok(None);
        };
        let mut previews = Previews::default();
        for (k, v) in &answer.previews {
            previews.set(k.structure, k.feature, *v);
        }
        if let Some((unit, counts)) = answer.shown {
            previews.set_shown(unit, counts);
        }
        let outcome = engine.select_traced(&policy_input(memory, text, qtype, previews))?;
        let mut trace = serde_json::to_value(&outcome.trace).unwrap_or(serde_json::Value::Null);
        // Name each rule step, beside the index the trace keeps.
        for step in trace["steps"].as_array_mut().into_iter().flatten() {
            if step["step"] == "rule" {
                if let Some(i) = step["index"].as_u64() {
                    step["name"] = json!(engine.rule_name(i as usize));
                }
            }
        }
        Ok(Some(trace))
    }
}

/// How a front end serving many threads chooses: fixed structures, or one
/// policy's asker shared behind a lock (the Python package, `mesa serve`
/// and `mesa mcp` all answer through it).
#[derive(Clone)]
pub enum SharedChooser {
    /// A fixed set of structures.
    Fixed(Mask),
    /// A policy, its asker shared.
    Policy(std::sync::Arc<std::sync::Mutex<Asker>>),
}

impl SharedChooser {
    /// A shared policy asker.
    pub fn policy(asker: Asker) -> SharedChooser {
        SharedChooser::Policy(std::sync::Arc::new(std::sync::Mutex::new(asker)))
    }

    /// Answers one question as [`Asker::ask`] does; with `traced`, also the
    /// policy's [`Asker::trace`] (`None` with fixed structures).
    pub fn ask(
        &self,
        memory: &EpisodeMemory,
        text: &str,
        qtype: Option<&str>,
        traced: bool,
    ) -> Result<(Answer, Option<serde_json::Value>), QueryError> {
        match self {
            SharedChooser::Fixed(mask) => {
                let answer = Asker::new(Chooser::Fixed(*mask)).ask(memory, text, qtype)?;
                Ok((answer, None))
            }
            SharedChooser::Policy(asker) => {
                // A thread that panicked mid-question left no state behind.
                let mut asker = asker.lock().unwrap_or_else(|p| p.into_inner());
                let answer = asker.ask(memory, text, qtype)?;
                let trace = match traced {
                    true => asker.trace(memory, text, qtype, &answer)?,
                    false => None,
                };
                Ok((answer, trace))
            }
        }
    }
}

/// Answers questions against an opened store with one chooser.
pub struct QueryEngine<'s> {
    store: &'s Store,
    asker: Asker,
}

impl<'s> QueryEngine<'s> {
    /// A query engine over `store`.
    pub fn new(store: &'s Store, chooser: Chooser) -> QueryEngine<'s> {
        QueryEngine {
            store,
            asker: Asker::new(chooser),
        }
    }

    /// The previews the policy reads.
    pub fn wanted_previews(&self) -> &[PreviewKey] {
        self.asker.wanted_previews()
    }

    /// Answers one question: previews, select, retrieve, compose.
    pub fn answer(&mut self, q: &Question<'_>) -> Result<Answer, QueryError> {
        let memory = self
            .store
            .episode(q.episode)
            .ok_or_else(|| QueryError::UnknownEpisode {
                id: q.episode.to_string(),
                close: closest_id(self.store, q.episode),
            })?;
        self.asker.ask(memory, q.text, q.qtype)
    }
}

/// The episode id closest to `id`, for "did you mean".
fn closest_id(store: &Store, id: &str) -> Option<String> {
    let ids: Vec<&str> = store
        .manifest()
        .episodes
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    mesa_grammar::did_you_mean(id, ids.iter().copied()).map(str::to_string)
}
