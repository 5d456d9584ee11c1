//! What Python gets back: answers with their provenance, episodes and
//! steps, as frozen objects with typed attributes.

use mesa_query::{Answer as RsAnswer, Question};
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// One evidence item: where it came from and what it says.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct EvidenceItem {
    /// The structure's letter: S, T, G, V or R.
    pub structure: String,
    /// The steps it shows, increasing.
    pub steps: Vec<usize>,
    /// Each step's timestamp (None where the step has none).
    pub timestamps: Vec<Option<String>>,
    /// The structure's score, in [0, 1].
    pub score: f64,
    /// Its tokens (cl100k).
    pub tokens: usize,
    /// The text.
    pub text: String,
}

#[pymethods]
impl EvidenceItem {
    fn __repr__(&self) -> String {
        format!(
            "<EvidenceItem {} steps={:?} score={:.3} tokens={}>",
            self.structure, self.steps, self.score, self.tokens
        )
    }
}

/// The answer to one question: what was selected, why, and the evidence.
/// The evidence items become Python objects when `items` is first read
/// (a caller that only wants `text()` or `to_json()` never pays for them).
#[pyclass(frozen, module = "mesa_memory")]
#[derive(Debug)]
pub struct Answer {
    /// The episode asked about.
    #[pyo3(get)]
    pub episode: String,
    /// The question.
    #[pyo3(get)]
    pub question: String,
    /// The selected structures, as letters in the order S, T, G, V, R.
    #[pyo3(get)]
    pub structures: Vec<String>,
    /// The mask as `mesa query` prints it (`{S, T}`).
    #[pyo3(get)]
    pub mask: String,
    /// The deciding rule's name (None with fixed structures, or when no
    /// rule changed the default).
    #[pyo3(get)]
    pub rule: Option<String>,
    /// The previews the policy read, by key (`"R.tokens"`).
    #[pyo3(get)]
    pub previews: BTreeMap<String, f64>,
    /// Tokens of the composed evidence.
    #[pyo3(get)]
    pub tokens: usize,
    /// The evidence items, structure by structure: made on first read.
    items: OnceLock<Vec<Py<EvidenceItem>>>,
    /// Time per stage, in microseconds.
    #[pyo3(get)]
    pub micros: BTreeMap<String, u64>,
    /// Steps a selected structure's evidence lacks, by letter (a summary
    /// rewritten over whole episodes lags behind appends); empty when all
    /// are current.
    #[pyo3(get)]
    pub stale: BTreeMap<String, usize>,
    /// From `Memory.search`: 0 to 2, the reciprocal rank fusion of this
    /// episode's rank by BM25 of the question over its evidence and its
    /// rank by the word index, which ranks the episodes (None from
    /// `Memory.query`).
    #[pyo3(get)]
    pub relevance: Option<f64>,
    /// The library's answer: its evidence for `items` and `text`, and
    /// `to_json`.
    answer: RsAnswer,
    qtype: Option<String>,
}

/// The answer's evidence items, as Python reads them.
fn evidence(a: &RsAnswer) -> Vec<EvidenceItem> {
    a.composition
        .items()
        .map(|i| EvidenceItem {
            structure: i.structure.letter().to_string(),
            steps: i.steps.clone(),
            timestamps: a
                .times_of(&i.steps)
                .into_iter()
                .map(|t| t.map(str::to_string))
                .collect(),
            score: i.score,
            tokens: i.tokens,
            text: i.text.clone(),
        })
        .collect()
}

impl Answer {
    /// The Python form of an answer.
    pub fn of(q: &Question<'_>, a: RsAnswer) -> Answer {
        let micros = a
            .timings
            .micros()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v as u64))
            .collect();
        Answer {
            episode: q.episode.to_string(),
            question: q.text.to_string(),
            structures: a.selection.mask.letters(),
            mask: a.selection.mask.to_string(),
            rule: a.rule_name.clone(),
            previews: a
                .previews
                .iter()
                .map(|(k, v)| (k.to_string(), *v))
                .collect(),
            tokens: a.composition.tokens,
            items: OnceLock::new(),
            micros,
            stale: a.stale(),
            relevance: None,
            answer: a,
            qtype: q.qtype.map(str::to_string),
        }
    }

    /// One episode's entry of a search over many.
    pub fn found(text: &str, qtype: Option<&str>, f: mesa_query::Found) -> Answer {
        let q = Question {
            episode: &f.episode,
            text,
            qtype,
        };
        Answer {
            relevance: Some(f.relevance),
            ..Answer::of(&q, f.answer)
        }
    }
}

#[pymethods]
impl Answer {
    /// The answer as `mesa query --format json` prints it (one line).
    fn to_json(&self) -> String {
        let q = Question {
            episode: &self.episode,
            text: &self.question,
            qtype: self.qtype.as_deref(),
        };
        let mut v = self.answer.to_json(&q, true);
        if let Some(r) = self.relevance {
            v["relevance"] = serde_json::json!(r);
        }
        v.to_string()
    }

    /// The evidence text, structure by structure, as a prompt would hold it.
    fn text(&self) -> String {
        let parts: Vec<&str> = self
            .answer
            .composition
            .items()
            .map(|i| i.text.as_str())
            .collect();
        parts.join("\n\n")
    }

    /// The evidence items, structure by structure (the same objects on
    /// every read).
    #[getter]
    fn items(&self, py: Python<'_>) -> PyResult<Vec<Py<EvidenceItem>>> {
        if self.items.get().is_none() {
            let made = evidence(&self.answer)
                .into_iter()
                .map(|i| Py::new(py, i))
                .collect::<PyResult<Vec<_>>>()?;
            // Another thread may have made them meanwhile: the first kept wins.
            let _ = self.items.set(made);
        }
        let items = self.items.get().map(Vec::as_slice).unwrap_or_default();
        Ok(items.iter().map(|i| i.clone_ref(py)).collect())
    }

    fn __repr__(&self) -> String {
        format!(
            "<Answer {} rule={} items={} tokens={}>",
            self.mask,
            py_opt(&self.rule),
            self.answer.composition.items().count(),
            self.tokens
        )
    }
}

/// An episode as listed.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
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
    pub meta: std::collections::BTreeMap<String, String>,
    /// How many steps it has.
    pub steps: usize,
    /// When it was created (RFC 3339).
    pub created: String,
}

impl From<mesa_memory::EpisodeInfo> for EpisodeInfo {
    fn from(e: mesa_memory::EpisodeInfo) -> EpisodeInfo {
        EpisodeInfo {
            id: e.id,
            task: e.task,
            domain: e.domain,
            outcome: e.outcome,
            meta: e.meta,
            steps: e.steps,
            created: e.created,
        }
    }
}

#[pymethods]
impl EpisodeInfo {
    fn __repr__(&self) -> String {
        format!("<EpisodeInfo {} steps={}>", self.id, self.steps)
    }
}

/// One stored step.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct Step {
    /// Its index in the episode.
    pub index: usize,
    /// What the agent did.
    pub action: String,
    /// What it saw.
    pub observation: String,
    /// When (RFC 3339).
    pub timestamp: Option<String>,
}

#[pymethods]
impl Step {
    fn __repr__(&self) -> String {
        format!("<Step {} {:?}>", self.index, self.action)
    }
}

/// A question kept with an episode.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct KeptQuestion {
    /// Its id, unique within the episode.
    pub id: String,
    /// The question text.
    pub question: String,
    /// The reference answer, if known.
    pub answer: Option<String>,
    /// The question type, if known.
    pub qtype: Option<String>,
    /// The step indices the answer rests on, if labelled.
    pub evidence: Vec<usize>,
}

#[pymethods]
impl KeptQuestion {
    fn __repr__(&self) -> String {
        format!("<KeptQuestion {:?} {:?}>", self.id, self.question)
    }
}

/// What `Memory.export` wrote.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct Exported {
    /// Episodes written.
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// Their kept questions.
    pub questions: usize,
    /// Of the episodes, those written without steps.
    pub empty: usize,
    /// Evidence labels left out because their step was forgotten.
    pub dropped_evidence: usize,
}

#[pymethods]
impl Exported {
    fn __repr__(&self) -> String {
        format!(
            "<Exported episodes={} steps={} questions={} empty={} dropped_evidence={}>",
            self.episodes, self.steps, self.questions, self.empty, self.dropped_evidence
        )
    }
}

/// What `Memory.import_dataset` added.
#[pyclass(frozen, get_all, module = "mesa_memory")]
#[derive(Clone, Debug)]
pub struct Imported {
    /// Episodes created.
    pub episodes: usize,
    /// Their steps.
    pub steps: usize,
    /// Their questions.
    pub questions: usize,
    /// Lines skipped (with `skip_bad`): (1-based line, why).
    pub skipped: Vec<(usize, String)>,
    /// Actions and observations cut at `max_text_bytes`.
    pub cut: usize,
    /// Episodes an earlier import had made with these steps (nothing was
    /// added to them).
    pub again: usize,
}

#[pymethods]
impl Imported {
    fn __repr__(&self) -> String {
        format!(
            "<Imported episodes={} steps={} questions={} skipped={} cut={} again={}>",
            self.episodes,
            self.steps,
            self.questions,
            self.skipped.len(),
            self.cut,
            self.again
        )
    }
}

/// An optional name as Python shows it: `'name'` or `None`.
pub fn py_opt(v: &Option<String>) -> String {
    match v {
        Some(s) => format!("{s:?}").replace('"', "'"),
        None => "None".into(),
    }
}
