//! The five memory structures, built per episode, behind one trait.
//!
//! | key | type | access |
//! | --- | --- | --- |
//! | S | [`Summary`] | the episode summary, the same for every question |
//! | T | [`Temporal`] | the steps the question names, else lexical top-k turn keys |
//! | G | [`Graph`] | focal relations linked to the question, with neighbours |
//! | V | [`Vector`] | top-k steps by cosine similarity |
//! | R | [`Raw`] | BM25 top-k overlapping windows |
//!
//! Every [`EvidenceItem`] carries its provenance: the structure, the step
//! indices it shows, a score normalized to `[0, 1]`, its text and the text's
//! token count. Token counts are computed when the structure is built (step
//! renderings, windows, summary, relations), so retrieval never tokenizes.

pub mod ann;
pub mod graph;
mod persist;
mod quant;
pub mod raw;
pub mod stepref;
pub mod summary;
pub mod temporal;
mod texts;
pub mod timeref;
pub mod vector;

pub use ann::{AnnFile, AnnSource};
pub use graph::{Graph, RuleExtractor, Triple, TripleExtractor};
pub use persist::{state_fingerprint, DecodedRest, DecodedState, OwnedState, StateBytes};
pub use raw::{windows, Raw, Window};
pub use stepref::{StepRef, StepRefs};
pub use summary::{ExtractiveSummarizer, Summarizer, Summary, SummaryLine};
pub use temporal::Temporal;
pub use texts::{render_step, StepTexts};
pub use timeref::{TimeRef, TimeRefs};
pub use vector::{Embedder, HashEmbedder, Vector};

use crate::config::Config;
use crate::dataset::{Episode, Step};
use crate::text::term_hashes;
use crate::tokens::count_tokens;
use mesa_core::Structure;
use serde::Serialize;
use std::sync::{Arc, OnceLock};

/// A plugged-in builder (embedder, summarizer, triple extractor) failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PluginError {
    /// The plugin reported a failure.
    #[error("{plugin}: {message}")]
    Failed {
        /// The plugin's name.
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The plugin's call to the LLM endpoint failed.
    #[cfg(feature = "llm")]
    #[error("{plugin}: {what}: {source}")]
    Llm {
        /// The plugin's name.
        plugin: String,
        /// What it was doing (`summarizing steps 0-11`, ...).
        what: String,
        /// The client's error.
        #[source]
        source: Box<mesa_llm::Error>,
    },
    /// The plugin returned something of the wrong shape.
    #[error("{plugin}: {message}")]
    BadOutput {
        /// The plugin's name.
        plugin: String,
        /// What was wrong.
        message: String,
    },
}

/// A structure could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A plugin failed.
    #[error("episode `{episode}`: {source}")]
    Plugin {
        /// The episode.
        episode: String,
        /// The plugin's error.
        #[source]
        source: PluginError,
    },
}

impl BuildError {
    /// A plugin (or the stored parts, or a persisted state, named by
    /// `plugin`) gave episode `episode` something of the wrong shape.
    pub(crate) fn bad_output(
        episode: &Episode,
        plugin: impl Into<String>,
        message: String,
    ) -> Self {
        BuildError::Plugin {
            episode: episode.id.clone(),
            source: PluginError::BadOutput {
                plugin: plugin.into(),
                message,
            },
        }
    }
}

/// Retrieval failed (an embedder could not embed the question).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum RetrieveError {
    /// The embedder failed on the question.
    #[error("embedding the question: {0}")]
    Embed(#[from] PluginError),
}

/// A question, prepared once for all five structures: its content terms and
/// the step references it makes.
#[derive(Debug, Clone)]
pub struct Query {
    text: String,
    terms: Vec<u64>,
    refs: StepRefs,
    times: TimeRefs,
    embedding: OnceLock<Result<Vec<f32>, PluginError>>,
}

impl Query {
    /// Prepares a question.
    pub fn new(text: &str) -> Query {
        Query {
            text: text.to_string(),
            terms: term_hashes(text),
            refs: StepRefs::parse(text),
            times: TimeRefs::parse(text),
            embedding: OnceLock::new(),
        }
    }

    /// The question text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The distinct content terms (stable hashes, sorted).
    pub fn terms(&self) -> &[u64] {
        &self.terms
    }

    /// The step references the question makes.
    pub fn refs(&self) -> &StepRefs {
        &self.refs
    }

    /// The time references the question makes.
    pub fn times(&self) -> &TimeRefs {
        &self.times
    }

    /// The question's embedding by `embedder`, computed once per query.
    pub(crate) fn embedding(&self, embedder: &dyn Embedder) -> Result<&[f32], PluginError> {
        self.embedding
            .get_or_init(|| vector::embed_one(embedder, &self.text))
            .as_ref()
            .map(Vec::as_slice)
            .map_err(Clone::clone)
    }
}

/// One piece of evidence, with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceItem {
    /// The structure it comes from.
    pub structure: Structure,
    /// The step indices it shows, in increasing order.
    pub steps: Vec<usize>,
    /// Its retrieval score, normalized to `[0, 1]` (see each structure).
    pub score: f64,
    /// The text given to the answer model.
    pub text: String,
    /// `cl100k_base` tokens in `text`.
    pub tokens: usize,
}

/// What one structure returns for one question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// The structure.
    pub structure: Structure,
    /// The items, in the structure's order (T: by step; V, R, G: best
    /// first; S: one item).
    pub items: Vec<EvidenceItem>,
    /// The preview's `hits` (see each structure).
    pub hits: usize,
    /// S only: steps appended since the summary was written that it does
    /// not cover yet (a model-backed summarizer lags until the summary is
    /// rewritten; see [`Summary::stale`]). 0 when current, and then left
    /// out of JSON.
    #[serde(skip_serializing_if = "is_zero")]
    pub stale: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Evidence {
    /// No evidence.
    pub fn empty(structure: Structure) -> Evidence {
        Evidence {
            structure,
            items: Vec::new(),
            hits: 0,
            stale: 0,
        }
    }

    /// The section header in a composition, e.g. `## T: temporal`.
    pub fn header(&self) -> &'static str {
        [
            "## S: summary",
            "## T: temporal",
            "## G: graph",
            "## V: vector",
            "## R: raw",
        ][self.structure.index()]
    }

    /// Tokens this evidence adds to a composition: 0 if there are no items,
    /// else the header's tokens plus each item's tokens plus one per item
    /// for the line break before it. (Parts are counted separately; the
    /// joined text may tokenize to slightly fewer, never more.)
    pub fn tokens(&self) -> usize {
        if self.items.is_empty() {
            return 0;
        }
        header_tokens(self.structure) + self.items.iter().map(|i| i.tokens + 1).sum::<usize>()
    }

    /// The best item score, in `[0, 1]`; 0 with no items.
    pub fn top(&self) -> f64 {
        self.items.iter().map(|i| i.score).fold(0.0, f64::max)
    }

    /// The section text: the header and the items, one per paragraph.
    pub fn render(&self) -> String {
        let mut out = String::from(self.header());
        for item in &self.items {
            out.push('\n');
            out.push_str(&item.text);
        }
        out
    }
}

fn header_tokens(s: Structure) -> usize {
    static COUNTS: OnceLock<[usize; 5]> = OnceLock::new();
    COUNTS.get_or_init(|| Structure::ALL.map(|s| count_tokens(Evidence::empty(s).header())))
        [s.index()]
}

/// A memory structure built over one episode.
pub trait MemoryStructure {
    /// Which of the five it is.
    fn structure(&self) -> Structure;
    /// The evidence for a question.
    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError>;
}

/// The builders that can be swapped for model-backed ones.
#[derive(Clone)]
pub struct Plugins {
    /// Embeds step texts and questions for V.
    pub embedder: Arc<dyn Embedder>,
    /// Writes the summary for S.
    pub summarizer: Arc<dyn Summarizer>,
    /// Extracts relations for G.
    pub extractor: Arc<dyn TripleExtractor>,
}

impl Default for Plugins {
    /// The built-in, offline, deterministic builders.
    fn default() -> Self {
        Plugins {
            embedder: Arc::new(HashEmbedder::default()),
            summarizer: Arc::new(ExtractiveSummarizer),
            extractor: Arc::new(RuleExtractor),
        }
    }
}

impl std::fmt::Debug for Plugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugins")
            .field("embedder", &self.embedder.name())
            .field("summarizer", &self.summarizer.name())
            .field("extractor", &self.extractor.name())
            .finish()
    }
}

/// All five structures over one episode. A clone shares what it can (the
/// step renderings, V's HNSW graph); [`EpisodeMemory::extend`] changes a
/// memory in place, copying only what an older clone still shares.
#[derive(Clone)]
pub struct EpisodeMemory {
    /// The episode (steps as loaded, questions, metadata). In a memory the
    /// live store opened from a persisted state, the first
    /// [`EpisodeMemory::elided_steps`] steps hold their index and
    /// timestamp but no action or observation: their renderings are in
    /// the state (`temporal.steps()`), and `Tenant::steps` reads them whole.
    pub episode: Arc<Episode>,
    /// S.
    pub summary: Summary,
    /// T.
    pub temporal: Temporal,
    /// G.
    pub graph: Graph,
    /// V.
    pub vector: Vector,
    /// R.
    pub raw: Raw,
    /// How many of the first steps have no action or observation here.
    pub(crate) elided: usize,
}

impl std::fmt::Debug for EpisodeMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EpisodeMemory")
            .field("episode", &self.episode.id)
            .field("steps", &self.episode.steps.len())
            .field("elided", &self.elided)
            .finish()
    }
}

/// What the builders derive from one step alone: its evidence text's
/// tokens, its normalized embedding and its relations. This is the
/// model-backed cost of a step, paid once when the step is written; the
/// live store keeps it beside the step, and
/// [`EpisodeMemory::from_parts`] assembles the five structures from it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct StepParts {
    /// Tokens of the step's evidence text (cl100k_base).
    pub tokens: u32,
    /// The step's embedding, normalized.
    pub vector: Vec<f32>,
    /// The step's relations, as extracted.
    pub triples: Vec<Triple>,
}

impl StepParts {
    /// The parts of `steps` (steps of `episode`): embeddings in batches of
    /// 64, relations one step at a time.
    pub fn derive(
        episode: &Episode,
        steps: &[Step],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<Vec<StepParts>, PluginError> {
        Ok(StepParts::derive_with_texts(episode, steps, config, plugins)?.0)
    }

    /// [`StepParts::derive`], and the rendered steps it embedded.
    fn derive_with_texts(
        episode: &Episode,
        steps: &[Step],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<(Vec<StepParts>, StepTexts), PluginError> {
        let texts = StepTexts::build(steps, config.evidence_text_bytes);
        let vectors = vector::embed_all(&texts, plugins.embedder.as_ref())?;
        let dim = plugins.embedder.dim();
        let parts = steps
            .iter()
            .enumerate()
            .map(|(i, step)| {
                Ok(StepParts {
                    tokens: texts.tokens[i],
                    vector: vectors[i * dim..(i + 1) * dim].to_vec(),
                    triples: plugins.extractor.extract(episode, step)?,
                })
            })
            .collect::<Result<Vec<_>, PluginError>>()?;
        Ok((parts, texts))
    }
}

impl EpisodeMemory {
    /// How many of the episode's first steps this memory holds without
    /// their action and observation (0 unless the live store opened it
    /// from a persisted state; see [`EpisodeMemory::episode`]).
    pub fn elided_steps(&self) -> usize {
        self.elided
    }

    /// Records that the first `n` steps came without their texts.
    pub(crate) fn elide(&mut self, n: usize) {
        self.elided = n;
    }

    /// Builds the five structures over an episode.
    pub fn build(
        episode: Arc<Episode>,
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let (parts, steps) =
            StepParts::derive_with_texts(&episode, &episode.steps, config, plugins).map_err(
                |source| BuildError::Plugin {
                    episode: episode.id.clone(),
                    source,
                },
            )?;
        EpisodeMemory::from_texts(episode, Arc::new(steps), &parts, config, plugins)
    }

    /// Assembles the five structures from each step's [`StepParts`] (one
    /// per step, in order): no embedding or extraction runs, only the
    /// summarizer (S is rewritten over the whole episode) and the indexes.
    /// A store built step by step answers exactly like one built in one
    /// batch ([`EpisodeMemory::build`]): both assemble through the same code
    /// from the same parts.
    pub fn from_parts(
        episode: Arc<Episode>,
        parts: &[StepParts],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        let steps = EpisodeMemory::render_parts(&episode, parts, config, "step parts")?;
        EpisodeMemory::from_texts(episode, steps, parts, config, plugins)
    }

    /// The renderings of `episode`'s steps, from their parts (one per
    /// step; only the token counts are read); an error naming `what`
    /// unless the counts match.
    pub(crate) fn render_parts(
        episode: &Episode,
        parts: &[StepParts],
        config: &Config,
        what: &str,
    ) -> Result<Arc<StepTexts>, BuildError> {
        let tokens = parts.iter().map(|p| p.tokens).collect();
        StepTexts::with_tokens(&episode.steps, config.evidence_text_bytes, tokens)
            .map(Arc::new)
            .ok_or_else(|| {
                let message = format!("{} parts for {} steps", parts.len(), episode.steps.len());
                BuildError::bad_output(episode, what, message)
            })
    }

    /// [`EpisodeMemory::from_parts`] with the steps already rendered.
    fn from_texts(
        episode: Arc<Episode>,
        steps: Arc<StepTexts>,
        parts: &[StepParts],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<EpisodeMemory, BuildError> {
        // The structures are independent: built side by side (rayon, so a
        // batch build that already runs episodes in parallel is not
        // oversubscribed).
        let ((summary, temporal), (graph, (vector, raw))) = rayon::join(
            || {
                rayon::join(
                    || Summary::build(&episode, plugins.summarizer.as_ref(), config),
                    || Temporal::new(&episode, steps.clone(), config),
                )
            },
            || {
                rayon::join(
                    || {
                        let triples = parts.iter().map(|p| p.triples.as_slice());
                        Graph::from_triples(&episode, triples, config)
                    },
                    || {
                        (
                            Self::stored_vectors(&steps, parts, config, plugins),
                            Raw::build(steps.clone(), config),
                        )
                    },
                )
            },
        );
        let plugin = |source| BuildError::Plugin {
            episode: episode.id.clone(),
            source,
        };
        let summary = summary.map_err(plugin)?;
        let vector =
            vector.map_err(|m| BuildError::bad_output(&episode, plugins.embedder.name(), m))?;
        Ok(EpisodeMemory {
            episode,
            summary,
            temporal,
            graph,
            vector,
            raw,
            elided: 0,
        })
    }

    /// V over the stored vectors, one per step of the embedder's width.
    fn stored_vectors(
        steps: &Arc<StepTexts>,
        parts: &[StepParts],
        config: &Config,
        plugins: &Plugins,
    ) -> Result<Vector, String> {
        let dim = plugins.embedder.dim();
        let mut data = Vec::with_capacity(parts.len() * dim);
        for p in parts {
            if p.vector.len() != dim {
                let n = p.vector.len();
                return Err(format!("a stored vector has {n} dimensions, not {dim}"));
            }
            data.extend_from_slice(&p.vector);
        }
        Vector::from_stored(steps.clone(), data, plugins.embedder.clone(), config)
            .ok_or_else(|| "one vector per step expected".into())
    }

    /// Appends later steps (indices above the last), given their parts:
    /// every structure takes in the new steps at their cost (S reruns its
    /// selection over kept per-step lines, or, for a summarizer that only
    /// rewrites whole episodes, is counted stale; R re-indexes its changed
    /// windows). Answers exactly as [`EpisodeMemory::from_parts`] over all
    /// the steps. Nothing changes if the parts do not fit the steps.
    pub fn extend(
        &mut self,
        new: &[Step],
        parts: &[StepParts],
        config: &Config,
    ) -> Result<(), BuildError> {
        let plugin = |message| BuildError::bad_output(&self.episode, "step parts", message);
        let last = self.episode.steps.last().map(|s| s.index);
        let increasing = new
            .iter()
            .map(|s| Some(s.index))
            .try_fold(last, |prev, i| (prev < i || prev.is_none()).then_some(i));
        if parts.len() != new.len() || increasing.is_none() {
            return Err(plugin(format!(
                "{} parts for {} new steps, whose indices must increase past {last:?}",
                parts.len(),
                new.len()
            )));
        }
        let dim = self.vector.dim();
        if let Some(p) = parts.iter().find(|p| p.vector.len() != dim) {
            let n = p.vector.len();
            return Err(plugin(format!("a vector has {n} dimensions, not {dim}")));
        }
        // T, V and R share one rendering of the steps: take it from them,
        // so that it is extended in place unless an older clone holds it.
        let mut steps = std::mem::take(&mut self.temporal.steps);
        self.vector.steps = Arc::default();
        self.raw.steps = Arc::default();
        let tokens: Vec<u32> = parts.iter().map(|p| p.tokens).collect();
        Arc::make_mut(&mut steps).extend(new, &tokens, config.evidence_text_bytes);
        Arc::make_mut(&mut self.episode)
            .steps
            .extend_from_slice(new);
        self.summary.extend(&self.episode, new, config);
        self.temporal.extend(new, steps.clone());
        let triples = parts.iter().map(|p| p.triples.as_slice());
        self.graph.extend(new, triples, config);
        let vectors: Vec<&[f32]> = parts.iter().map(|p| p.vector.as_slice()).collect();
        self.vector.extend(&vectors, steps.clone());
        self.raw.extend(steps);
        Ok(())
    }

    /// The structure behind a key.
    pub fn structure(&self, s: Structure) -> &dyn MemoryStructure {
        match s {
            Structure::Summary => &self.summary,
            Structure::Temporal => &self.temporal,
            Structure::Graph => &self.graph,
            Structure::Vector => &self.vector,
            Structure::Raw => &self.raw,
        }
    }

    /// Retrieves from one structure.
    pub fn retrieve(&self, s: Structure, query: &Query) -> Result<Evidence, RetrieveError> {
        self.structure(s).retrieve(query)
    }
}

/// Keeps the first `m` of `v` in `order`, sorted: a partial selection,
/// then a sort of those `m` (the same as sorting all and keeping `m` when
/// `order` is total).
pub(crate) fn top<T>(v: &mut Vec<T>, m: usize, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    if v.len() > m && m > 0 {
        v.select_nth_unstable_by(m - 1, &order);
    }
    v.truncate(m);
    v.sort_by(order);
}

#[cfg(test)]
pub(crate) mod fixtures {
    /// A dense test embedder (not [`super::Embedder::hashed`], so V may
    /// search it approximately): the hashed embedding into 16 dimensions
    /// (few buckets, so every vector is dense), unlike the built-in one's
    /// 384.
    pub struct Dense;

    impl super::Embedder for Dense {
        fn name(&self) -> String {
            "dense-test-16".into()
        }
        fn dim(&self) -> usize {
            16
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, super::PluginError> {
            super::HashEmbedder::new(16).embed(texts)
        }
    }

    use super::*;

    /// A small SQL-agent episode used across the structure tests.
    pub fn sql_episode() -> Episode {
        let steps = [
            ("execute_bash: ls /db/FINANCE", "DDL.csv\nBANKS.json\nRATES.json"),
            ("execute_bash: cat /db/FINANCE/DDL.csv", "table_name,description\nFINANCE.BANKS,\"banks and branches\"\nFINANCE.RATES,\"interest rates\""),
            ("execute_sql: SELECT name, total_assets FROM FINANCE.BANKS LIMIT 5", "Error: invalid identifier 'TOTAL_ASSETS'"),
            ("execute_sql: SELECT name, assets FROM FINANCE.BANKS LIMIT 5", "name,assets\nAlpha Bank,100\nBeta Bank,90"),
            ("execute_sql: SELECT AVG(rate) FROM FINANCE.RATES WHERE year = 2020", "AVG(rate)\n1.25"),
            ("fetch_website_content({\"website_url\": \"https://example.org/rates\"})", "Rates page: the central bank rate was 1.25 in 2020"),
            ("terminate: answer is 1.25", "Task finished. Final answer: 1.25; status=success"),
        ];
        Episode {
            id: "sql-1".into(),
            task: "Find the average interest rate in 2020".into(),
            domain: "TEXT2SQL".into(),
            outcome: Some("success".into()),
            meta: Default::default(),
            created: None,
            steps: steps
                .iter()
                .enumerate()
                .map(|(i, (a, o))| Step {
                    index: i,
                    action: a.to_string(),
                    observation: o.to_string(),
                    timestamp: None,
                })
                .collect(),
            questions: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// A longer game episode: `n` steps of moves with a few events.
    pub fn game_episode(n: usize) -> Episode {
        let moves = ["left", "right", "up", "down"];
        Episode {
            id: format!("game-{n}"),
            task: "collect the key and open the door".into(),
            domain: "GAME".into(),
            outcome: Some("failure".into()),
            meta: Default::default(),
            created: None,
            steps: (0..n)
                .map(|i| Step {
                    index: i,
                    action: moves[i % 4].to_string(),
                    observation: match i {
                        10 => "You pick up the key 1. Inventory: key 1".to_string(),
                        20 => "The door 2 is locked. Error: you need a key".to_string(),
                        _ => format!("You see a wall {} steps to the north.", i % 7),
                    },
                    timestamp: None,
                })
                .collect(),
            questions: Vec::new(),
            notes: Vec::new(),
        }
    }
}
