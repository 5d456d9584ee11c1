//! `Memory`: one tenant of a live memory directory, open for writing (or
//! reading only), as the library's [`mesa_memory::Tenant`]. Every call
//! releases the GIL while the library works, so one thread can append while
//! others query.

use crate::answer::{Answer, EpisodeInfo, Exported, Imported, KeptQuestion, Step};
use crate::errors::{self, invalid, raise, ClosedError};
use crate::policy::Policy;
use mesa_core::Mask;
use mesa_memory::{
    Embedders, Extractors, Forget, LiveMemory, NamedBuilders, NewEpisode, NewStep, PluginOptions,
    Summarizers, Tenant,
};
use mesa_query::{AcrossError, AcrossOptions, QueryError, Question, SharedChooser};
use pyo3::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

/// A step to append, from a dict: `action` (required), `observation`,
/// `timestamp` (RFC 3339) and `index` (optional).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct StepIn {
    action: String,
    #[pyo3(default)]
    observation: String,
    #[pyo3(default)]
    timestamp: Option<String>,
    #[pyo3(default)]
    index: Option<usize>,
}

impl From<StepIn> for NewStep {
    fn from(s: StepIn) -> NewStep {
        NewStep {
            index: s.index,
            action: s.action,
            observation: s.observation,
            timestamp: s.timestamp,
        }
    }
}

/// A question to keep, from a dict: `id` and `question` (required),
/// `answer`, `qtype` and `evidence` (optional).
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
struct QuestionIn {
    id: String,
    question: String,
    #[pyo3(default)]
    answer: Option<String>,
    #[pyo3(default)]
    qtype: Option<String>,
    #[pyo3(default)]
    evidence: Vec<usize>,
}

/// One tenant of a live memory directory. Open it with
/// `Memory(root, tenant)`; it is created if new. Use it from many threads;
/// close it (or use `with`) to release the tenant's writer lock.
#[pyclass(frozen, module = "mesa_memory")]
pub struct Memory {
    root: PathBuf,
    tenant: String,
    read_only: bool,
    inner: RwLock<Option<Arc<Tenant>>>,
}

impl Memory {
    /// The open tenant, or ClosedError.
    fn open(&self) -> PyResult<Arc<Tenant>> {
        let inner = self.inner.read().unwrap_or_else(|p| p.into_inner());
        inner.clone().ok_or_else(|| {
            raise::<ClosedError>(
                "closed",
                format!(
                    "the Memory for tenant `{}` at {} is closed",
                    self.tenant,
                    self.root.display()
                ),
                Some("open it again with Memory(root, tenant)"),
            )
        })
    }

    /// Runs `f` on the tenant without the GIL.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&Tenant) -> Result<T, mesa_memory::LiveError> + Send,
    ) -> PyResult<T> {
        let tenant = self.open()?;
        py.detach(|| f(&tenant)).map_err(errors::live)
    }
}

/// The handles whose budget of built steps the `Memory` objects of this
/// process share: one per root (as given, or resolved when it exists)
/// and budget, kept while the process runs (a budget with no tenant open
/// holds nothing).
static BUDGETS: std::sync::Mutex<BTreeMap<(PathBuf, usize), LiveMemory>> =
    std::sync::Mutex::new(BTreeMap::new());

/// `memory`, sharing the budget of `steps` built steps with every other
/// `Memory` of this process opened on `root` with the same number.
fn shared_budget(root: &std::path::Path, memory: LiveMemory, steps: usize) -> LiveMemory {
    let key = (
        std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf()),
        steps,
    );
    let mut budgets = BUDGETS.lock().unwrap_or_else(|p| p.into_inner());
    match budgets.get(&key) {
        Some(first) => memory.sharing_budget_with(first),
        None => {
            let memory = memory.keeping_steps(steps);
            budgets.insert(key, memory.clone());
            memory
        }
    }
}

#[pymethods]
impl Memory {
    /// Opens tenant `tenant` of the live memory at `root` (both created if
    /// new). With `read_only`, the tenant must exist, and this handle sees
    /// what its writer (another process, perhaps) commits, and cannot write.
    /// The tenant's structures are made by the builders it recorded;
    /// a new tenant's by those named here, the built-in ones otherwise:
    /// `embedder` is `builtin`, `minilm` (all-MiniLM-L6-v2 in candle, its
    /// files from `MESA_MINILM_DIR`) or `openai` (an OpenAI-compatible
    /// embeddings endpoint, from `MESA_LLM_BASE_URL`, `MESA_LLM_API_KEY`
    /// and `MESA_LLM_EMBEDDING_MODEL`); `summarizer` (S) and `extractor`
    /// (G) are `builtin` or `llm` (its chat endpoint, `MESA_LLM_CHAT_MODEL`).
    /// A named builder that differs from the one a tenant recorded is
    /// refused (`embedder-mismatch`, `builder-mismatch`). A writer waits up
    /// to `wait` seconds for the tenant's other writer (another process)
    /// to close; past it, or at once with 0, it is refused (`locked`).
    /// Built episodes of at most `resident_steps` steps stay in memory;
    /// past it, those asked about least recently are dropped and built
    /// again when asked (`resident()` reports them); the `Memory` objects
    /// of one process opened on the same root with the same
    /// `resident_steps` share that budget, as a server's tenants do.
    #[new]
    #[pyo3(signature = (root, tenant, *, read_only = false, embedder = None, summarizer = None, extractor = None, wait = 0.0, resident_steps = mesa_memory::live::DEFAULT_RESIDENT_STEPS as i64))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        root: PathBuf,
        tenant: String,
        read_only: bool,
        embedder: Option<String>,
        summarizer: Option<String>,
        extractor: Option<String>,
        wait: f64,
        resident_steps: i64,
    ) -> PyResult<Memory> {
        let resident_steps = usize::try_from(resident_steps).map_err(|_| {
            invalid(
                "bad-resident-steps",
                format!("resident_steps={resident_steps}: give a number of steps from 0 up"),
            )
        })?;
        let wait = std::time::Duration::try_from_secs_f64(wait).map_err(|_| {
            invalid(
                "bad-wait",
                format!("wait={wait}: give a number of seconds from 0 up"),
            )
        })?;
        let options = PluginOptions::default();
        let named = py.detach(|| named_builders(&options, embedder, summarizer, extractor))?;
        let memory = py
            .detach(|| LiveMemory::open(&root))
            .map_err(errors::live)?;
        let memory = shared_budget(&root, memory, resident_steps);
        let open = |wait| {
            let memory = memory.clone().waiting_for_writer(wait);
            if read_only {
                memory.reader_named(&tenant, &named, &options)
            } else {
                memory.tenant_named(&tenant, &named, &options)
            }
        };
        // The wait goes in slices, so Ctrl-C stops it.
        let deadline = std::time::Instant::now().checked_add(wait);
        let opened = loop {
            let left = deadline.map_or(std::time::Duration::MAX, |d| {
                d.saturating_duration_since(std::time::Instant::now())
            });
            let slice = left.min(std::time::Duration::from_millis(200));
            match py.detach(|| open(slice)) {
                Err(mesa_memory::LiveError::Locked { .. }) if left > slice => py.check_signals()?,
                other => break other.map_err(errors::live)?,
            }
        };
        Ok(Memory {
            root,
            tenant,
            read_only,
            inner: RwLock::new(Some(Arc::new(opened))),
        })
    }

    /// The tenants of the live memory at `root`.
    #[staticmethod]
    fn tenants(py: Python<'_>, root: PathBuf) -> PyResult<Vec<String>> {
        py.detach(|| LiveMemory::open(&root)?.tenants())
            .map_err(errors::live)
    }

    /// The memory directory.
    #[getter]
    fn root(&self) -> PathBuf {
        self.root.clone()
    }

    /// The tenant's name.
    #[getter]
    fn tenant(&self) -> String {
        self.tenant.clone()
    }

    /// Whether this handle only reads.
    #[getter]
    fn read_only(&self) -> bool {
        self.read_only
    }

    /// Whether `close()` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.inner
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }

    /// Releases the tenant (its writer lock, once no call is running).
    /// Every acknowledged write is already on disk. Calls after it raise
    /// ClosedError.
    fn close(&self) {
        self.inner.write().unwrap_or_else(|p| p.into_inner()).take();
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close();
        false
    }

    /// Creates an episode (ConflictError if the id exists). `created`
    /// (RFC 3339) is its creation time, now by default. With `request_id`,
    /// a call made again with the same id and fields (a retry) returns
    /// quietly where it would raise ConflictError.
    #[pyo3(
        signature = (id, task = String::new(), domain = String::new(), *, outcome = None, meta = None, created = None, request_id = None),
        text_signature = "($self, id, task='', domain='', *, outcome=None, meta=None, created=None, request_id=None)"
    )]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn create_episode(
        &self,
        py: Python<'_>,
        id: String,
        task: String,
        domain: String,
        outcome: Option<String>,
        meta: Option<BTreeMap<String, String>>,
        created: Option<String>,
        request_id: Option<String>,
    ) -> PyResult<()> {
        let e = NewEpisode {
            id,
            task,
            domain,
            outcome,
            meta: meta.unwrap_or_default(),
            created,
        };
        let rid = request_id.as_deref();
        self.with(py, |t| t.create_episode_once(&e, rid).map(|_| ()))
    }

    /// Replaces the episode's task, domain, outcome or metadata (each one
    /// given replaces the episode's; `meta` the whole metadata; with an
    /// extractor that reads the task, the LLM one, a changed task extracts
    /// every step's relations again). `remove_outcome=True` removes the
    /// outcome recorded (not with `outcome`). Returns whether anything
    /// changed: the same call made again (a retry) changes nothing and
    /// returns False.
    #[pyo3(signature = (id, *, task = None, domain = None, outcome = None, meta = None, remove_outcome = false))]
    #[allow(clippy::too_many_arguments)]
    fn update_episode(
        &self,
        py: Python<'_>,
        id: String,
        task: Option<String>,
        domain: Option<String>,
        outcome: Option<String>,
        meta: Option<BTreeMap<String, String>>,
        remove_outcome: bool,
    ) -> PyResult<bool> {
        let mut update = mesa_memory::EpisodeUpdate::default();
        update.outcome = match (outcome, remove_outcome) {
            (Some(_), true) => {
                return Err(invalid(
                    "bad-update",
                    "give outcome or remove_outcome=True, not both".into(),
                ))
            }
            (None, true) => Some(None),
            (outcome, false) => outcome.map(Some),
        };
        (update.task, update.domain, update.meta) = (task, domain, meta);
        self.with(py, |t| t.update_episode(&id, &update))
    }

    /// Appends one step; returns its index. It is on disk when this
    /// returns, and the next query sees it. Without `timestamp`, the step
    /// gets the time of the append. With `request_id`, a call made again
    /// with the same id and step (a retry) returns the first call's index
    /// and appends nothing.
    #[pyo3(
        signature = (episode, action, observation = String::new(), *, timestamp = None, index = None, request_id = None),
        text_signature = "($self, episode, action, observation='', *, timestamp=None, index=None, request_id=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn append(
        &self,
        py: Python<'_>,
        episode: String,
        action: String,
        observation: String,
        timestamp: Option<String>,
        index: Option<usize>,
        request_id: Option<String>,
    ) -> PyResult<usize> {
        let step = NewStep {
            index,
            action,
            observation,
            timestamp,
        };
        let id = request_id.as_deref();
        let done = self.with(py, |t| t.append_once(&episode, vec![step], id))?;
        Ok(done.indices.first().copied().unwrap_or_default())
    }

    /// Appends steps (dicts with `action`, and optionally `observation`,
    /// `timestamp`, `index`) in one transaction: all or none. Returns their
    /// indices. `request_id` makes a retry safe, as for `append`.
    #[pyo3(signature = (episode, steps, *, request_id = None))]
    fn append_many(
        &self,
        py: Python<'_>,
        episode: String,
        steps: Vec<Bound<'_, PyAny>>,
        request_id: Option<String>,
    ) -> PyResult<Vec<usize>> {
        let mut batch = Vec::with_capacity(steps.len());
        for (i, s) in steps.iter().enumerate() {
            let s: StepIn = s.extract().map_err(|e| {
                invalid(
                    "bad-step",
                    format!("steps[{i}] must be a dict with a str `action` (and optional `observation`, `timestamp`, `index`): {e}"),
                )
            })?;
            batch.push(NewStep::from(s));
        }
        let id = request_id.as_deref();
        let done = self.with(py, |t| t.append_once(&episode, batch, id))?;
        Ok(done.indices)
    }

    /// Answers a question about an episode exactly as `mesa query` does:
    /// with a `Policy` deciding, or the fixed `structures` (`"S,T"`,
    /// `["S", "T"]` or `"all"`).
    #[pyo3(signature = (episode, question, *, policy = None, structures = None, qtype = None))]
    fn query(
        &self,
        py: Python<'_>,
        episode: String,
        question: String,
        policy: Option<PyRef<'_, Policy>>,
        structures: Option<Bound<'_, PyAny>>,
        qtype: Option<String>,
    ) -> PyResult<Answer> {
        let chooser = chooser_of(policy, structures)?;
        let tenant = self.open()?;
        let q = Question {
            episode: &episode,
            text: &question,
            qtype: qtype.as_deref(),
        };
        py.detach(|| {
            let memory = tenant.memory(&episode).map_err(errors::live)?;
            let (answer, _) =
                chooser
                    .ask(&memory, &question, q.qtype, false)
                    .map_err(|e| match e {
                        QueryError::EmptyQuestion => raise::<errors::InvalidInputError>(
                            "empty-question",
                            format!("episode `{episode}`: {e}"),
                            None,
                        ),
                        e => raise::<errors::PolicyError>(
                            "query",
                            format!("episode `{episode}`: {e}"),
                            None,
                        ),
                    })?;
            Ok(Answer::of(&q, answer))
        })
    }

    /// Asks one question of many episodes (all, or those in `episodes`):
    /// each is asked as `query` asks it, and the answers come back best
    /// first, at most `limit` (1 to 100), ranked by `relevance` (the
    /// reciprocal rank fusion, 0 to 2, of the episode's rank by Okapi BM25
    /// of the question's content words, by stem, over its evidence, and of
    /// its rank by its best step in the word index; ties: that BM25, the
    /// best item score, then the newer episode). An
    /// episode whose question fails is left out with a RuntimeWarning that
    /// names it and says why. At most `candidates` episodes are asked,
    /// those whose steps share the most words with the question (None or 0:
    /// every one).
    #[pyo3(signature = (question, *, policy = None, structures = None, qtype = None, episodes = None, limit = mesa_query::DEFAULT_LIMIT as i64, candidates = Some(mesa_query::DEFAULT_CANDIDATES as i64)))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        question: String,
        policy: Option<PyRef<'_, Policy>>,
        structures: Option<Bound<'_, PyAny>>,
        qtype: Option<String>,
        episodes: Option<Vec<String>>,
        limit: i64,
        candidates: Option<i64>,
    ) -> PyResult<Vec<Answer>> {
        let candidates = usize::try_from(candidates.unwrap_or(0)).map_err(|_| {
            let message = format!(
                "candidates is how many episodes to ask at most (0 or None: every one), not {}",
                candidates.unwrap_or(0)
            );
            raise::<errors::InvalidInputError>("bad-candidates", message, None)
        })?;
        let limit = usize::try_from(limit).map_err(|_| {
            let max = mesa_query::MAX_LIMIT;
            let message =
                format!("the limit is how many episodes to return: 1 to {max}, not {limit}");
            raise::<errors::InvalidInputError>("bad-limit", message, None)
        })?;
        let chooser = chooser_of(policy, structures)?;
        let tenant = self.open()?;
        let q = qtype.as_deref();
        let across = py
            .detach(|| {
                let options = AcrossOptions::default()
                    .limit(limit)
                    .qtype(q)
                    .asking_at_most(candidates)
                    .episodes(episodes.as_deref());
                mesa_query::ask_across(&tenant, &chooser, &question, &options)
            })
            .map_err(|e| match e {
                AcrossError::List(e) | AcrossError::Words(e) => errors::live(e),
                AcrossError::UnknownEpisode { .. } => {
                    raise::<errors::NotFoundError>(e.code(), e.to_string(), None)
                }
                e => raise::<errors::InvalidInputError>(e.code(), e.to_string(), None),
            })?;
        for (episode, why) in &across.skipped {
            let message = std::ffi::CString::new(format!("episode `{episode}` left out: {why}"))
                .unwrap_or_default();
            PyErr::warn(
                py,
                &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                &message,
                1,
            )?;
        }
        Ok(across
            .found
            .into_iter()
            .map(|f| Answer::found(&question, q, f))
            .collect())
    }

    /// Forgets one step (`step`), the steps `step..=last` that exist, or
    /// the whole episode (`whole=True`); returns how many steps went. No
    /// query returns them after this; after `compact()` no file holds them.
    /// With `request_id`, a call made again with the same id and steps (a
    /// retry) returns the first call's count and forgets nothing more.
    #[pyo3(signature = (episode, step = None, *, last = None, whole = false, request_id = None))]
    fn forget(
        &self,
        py: Python<'_>,
        episode: String,
        step: Option<usize>,
        last: Option<usize>,
        whole: bool,
        request_id: Option<String>,
    ) -> PyResult<usize> {
        let what = match (step, last, whole) {
            (None, None, true) => Forget::Episode,
            (Some(s), None, false) => Forget::Step(s),
            (Some(s), Some(l), false) if l >= s => Forget::Range(s, l),
            _ => {
                return Err(invalid(
                    "bad-forget",
                    "give a step, a step and last >= step, or whole=True (alone)".into(),
                ))
            }
        };
        let rid = request_id.as_deref();
        self.with(py, |t| Ok(t.forget_once(&episode, what, rid)?.steps))
    }

    /// Replaces a step's action and observation (and its timestamp, if
    /// given). With `request_id`, a call made again with the same id and
    /// text (a retry) writes nothing.
    #[pyo3(
        signature = (episode, index, action, observation = String::new(), *, timestamp = None, request_id = None),
        text_signature = "($self, episode, index, action, observation='', *, timestamp=None, request_id=None)"
    )]
    #[allow(clippy::too_many_arguments)] // the Python keywords, one each
    fn correct(
        &self,
        py: Python<'_>,
        episode: String,
        index: usize,
        action: String,
        observation: String,
        timestamp: Option<String>,
        request_id: Option<String>,
    ) -> PyResult<()> {
        let step = NewStep {
            index: Some(index),
            action,
            observation,
            timestamp,
        };
        let rid = request_id.as_deref();
        self.with(py, |t| {
            t.correct_once(&episode, index, step, rid).map(|_| ())
        })
    }

    /// Forgets, in every episode, the steps whose timestamp is before
    /// `time` (RFC 3339, such as `2026-03-01T00:00:00Z`): a retention
    /// limit. Returns how many steps went; called again, it forgets what is
    /// left. `compact()` afterwards removes them from the files.
    fn forget_before(&self, py: Python<'_>, time: String) -> PyResult<usize> {
        Ok(self.with(py, |t| t.forget_before(&time))?.steps)
    }

    /// Rewrites the tenant's database without free pages and empties its
    /// log: after it, no file holds a byte of anything forgotten.
    fn compact(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |t| t.compact())
    }

    /// What this handle keeps built in memory: `{"episodes": N, "steps":
    /// N, "shared_steps": N, "budget": N, "dropped": N}` (the budget is
    /// `resident_steps`, shared with the process's other `Memory` objects
    /// on the root with the same number: `shared_steps` are theirs and
    /// this one's, `dropped` the episodes it has dropped).
    fn resident(&self, py: Python<'_>) -> PyResult<BTreeMap<&'static str, u64>> {
        let r = self.with(py, |t| Ok(t.resident()))?;
        let n = |x: usize| x as u64;
        Ok([
            ("episodes", n(r.episodes)),
            ("steps", n(r.steps)),
            ("shared_steps", n(r.shared_steps)),
            ("budget", n(r.budget)),
            ("dropped", r.dropped),
        ]
        .into())
    }

    /// The episodes, by id.
    fn episodes(&self, py: Python<'_>) -> PyResult<Vec<EpisodeInfo>> {
        let list = self.with(py, |t| t.episodes())?;
        Ok(list.into_iter().map(EpisodeInfo::from).collect())
    }

    /// One episode as `episodes()` lists it (NotFoundError if unknown).
    fn episode(&self, py: Python<'_>, id: String) -> PyResult<EpisodeInfo> {
        Ok(self.with(py, |t| t.episode_info(&id))?.into())
    }

    /// Keeps questions with the episode (a dataset's, or the agent's own),
    /// all or none, so that they can be asked again; one with the id of a
    /// kept question replaces it. No structure reads them, and forgetting
    /// the episode forgets them. Returns how many were kept.
    fn add_questions(
        &self,
        py: Python<'_>,
        episode: String,
        questions: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<usize> {
        let mut kept = Vec::with_capacity(questions.len());
        for (i, q) in questions.iter().enumerate() {
            let q: QuestionIn = q.extract().map_err(|e| {
                invalid(
                    "bad-question",
                    format!("questions[{i}] must be a dict with a str `id` and `question` (and optional `answer`, `qtype`, `evidence`): {e}"),
                )
            })?;
            kept.push(mesa_memory::dataset::Question {
                id: q.id,
                question: q.question,
                answer: q.answer,
                qtype: q.qtype,
                evidence: q.evidence,
            });
        }
        self.with(py, |t| t.add_questions(&episode, &kept))
    }

    /// The questions kept with the episode, in the order they were kept.
    fn questions(&self, py: Python<'_>, episode: String) -> PyResult<Vec<KeptQuestion>> {
        let kept = self.with(py, |t| t.questions(&episode))?;
        Ok(kept
            .into_iter()
            .map(|q| KeptQuestion {
                id: q.id,
                question: q.question,
                answer: q.answer,
                qtype: q.qtype,
                evidence: q.evidence,
            })
            .collect())
    }

    /// Writes the tenant as a dataset to `path` (replaced whole once it is
    /// complete): every episode with its steps (indices, timestamps) and
    /// kept questions, one JSON line each in MESA's generic layout, which
    /// `import_dataset` (or `mesa build --into`) reads back into a tenant
    /// that answers the same. Episodes keep their creation time, and those
    /// without steps are written too (counted in `empty`); evidence labels
    /// of forgotten steps are left out, and counted.
    fn export(&self, py: Python<'_>, path: PathBuf) -> PyResult<Exported> {
        let done = self.with(py, |t| t.export_to(&path))?;
        Ok(Exported {
            episodes: done.episodes,
            steps: done.steps,
            questions: done.questions,
            empty: done.empty,
            dropped_evidence: done.dropped_evidence,
        })
    }

    /// Imports a dataset file (MESA's generic layout or AMA-Bench's, JSON
    /// Lines) into the tenant, as `mesa build PATH --into ROOT --tenant T`
    /// does: each episode created, its steps appended in one batch (indices
    /// and timestamps kept) and its questions kept. Texts longer than
    /// `max_text_bytes` (by default the most a live step holds, 1 MiB) are
    /// cut (counted); with `skip_bad`, lines that do not read are skipped
    /// (listed) instead of stopping the import. Run again (after an
    /// interruption, say), it adds nothing to an episode it finds whole and
    /// unchanged (counted in `again`) and completes the others;
    /// an episode of the same id that differs stops it (ConflictError), the
    /// episodes before it imported.
    #[pyo3(signature = (path, *, max_text_bytes = mesa_memory::live::MAX_TEXT_BYTES, skip_bad = false))]
    fn import_dataset(
        &self,
        py: Python<'_>,
        path: PathBuf,
        max_text_bytes: usize,
        skip_bad: bool,
    ) -> PyResult<Imported> {
        let tenant = self.open()?;
        py.detach(|| {
            let options = mesa_memory::dataset::LoadOptions {
                skip_bad,
                max_text_bytes,
                into_tenant: true,
                ..Default::default()
            };
            let loaded = mesa_memory::load(&path, &options).map_err(|e| {
                raise::<errors::InvalidInputError>(
                    "bad-dataset",
                    e.to_string(),
                    Some("see docs/DATA.md for the layouts, or pass skip_bad=True"),
                )
            })?;
            let done = tenant
                .import(&loaded.episodes, |_| {})
                .map_err(errors::live)?;
            let report = &loaded.report;
            Ok(Imported {
                episodes: done.episodes,
                steps: done.steps,
                questions: done.questions,
                skipped: report
                    .skipped
                    .iter()
                    .map(|s| (s.line, s.reason.to_string()))
                    .collect(),
                cut: report.cut_actions + report.cut_observations,
                again: done.again,
            })
        })
    }

    /// An episode's steps, in order.
    fn steps(&self, py: Python<'_>, episode: String) -> PyResult<Vec<Step>> {
        let steps = self.with(py, |t| t.steps(&episode))?;
        Ok(steps
            .into_iter()
            .map(|s| Step {
                index: s.index,
                action: s.action,
                observation: s.observation,
                timestamp: s.timestamp,
            })
            .collect())
    }

    fn __repr__(&self) -> String {
        let state = if self.closed() { " closed" } else { "" };
        format!(
            "<Memory {} tenant={}{state}>",
            self.root.display(),
            self.tenant
        )
    }
}

/// A fixed mask from `"S,T"`, `"all"` or a list of letters or names.
fn mask_of(s: &Bound<'_, PyAny>) -> PyResult<Mask> {
    let text = match s.extract::<String>() {
        Ok(t) => t,
        Err(_) => s
            .extract::<Vec<String>>()
            .map_err(|_| {
                invalid(
                    "bad-structures",
                    "structures= must be a str such as \"S,T\" or a list such as [\"S\", \"T\"]"
                        .into(),
                )
            })?
            .join(","),
    };
    text.parse::<Mask>()
        .map_err(|e| invalid("bad-structures", format!("structures={text:?}: {e}")))
}

/// The builders named by `Memory(...)`'s keywords, made from `options`.
fn named_builders(
    options: &PluginOptions,
    embedder: Option<String>,
    summarizer: Option<String>,
    extractor: Option<String>,
) -> PyResult<NamedBuilders> {
    Ok(NamedBuilders {
        embedder: made("embedder", embedder, |n| Embedders::from_name(n, options))?,
        summarizer: made("summarizer", summarizer, |n| {
            Summarizers::from_name(n, options)
        })?,
        extractor: made("extractor", extractor, |n| {
            Extractors::from_name(n, options)
        })?,
    })
}

/// The `kind` of builder `name` names, if it names one.
fn made<T>(
    kind: &str,
    name: Option<String>,
    make: impl FnOnce(&str) -> Result<T, mesa_memory::SetupError>,
) -> PyResult<Option<T>> {
    name.map(|n| make(&n).map_err(|e| errors::builder(kind, &n, e)))
        .transpose()
}

/// The chooser a query names: a `Policy`, or fixed structures (not both).
fn chooser_of(
    policy: Option<PyRef<'_, Policy>>,
    structures: Option<Bound<'_, PyAny>>,
) -> PyResult<SharedChooser> {
    match (policy, structures) {
        (Some(_), Some(_)) => Err(invalid(
            "bad-chooser",
            "give either policy= or structures=, not both".into(),
        )),
        (None, None) => Err(invalid(
            "bad-chooser",
            "give policy=Policy.load(...) or structures=\"S,T\"".into(),
        )),
        (None, Some(s)) => Ok(SharedChooser::Fixed(mask_of(&s)?)),
        (Some(p), None) => Ok(p.chooser()),
    }
}
