//! One question over many episodes of a tenant: which of its episodes
//! hold what the question asks about, with each one's answer.
//!
//! ```text
//! question ─► for each episode (all, or those named) ─► SharedChooser::ask ─► Answer
//!                                                                              │
//!        ranked by BM25 of the question over each episode's evidence
//!        (ties: the best item score, then the newer episode) ◄─────────────────┘
//!        ─► the first `limit` ─► Across
//! ```
//!
//! Each episode is asked exactly as a question to that episode alone is
//! (the policy chooses per episode, from that episode's previews), so an
//! episode's entry is the answer `POST /v1/episodes/{id}/query` would give.
//! The rank is the one number that is comparable between episodes whatever
//! structures each read: Okapi BM25 (`k1` 1.2, `b` 0.75, the usual values)
//! of the question's content words (words less stopwords, compared by their
//! English stems, Snowball: `fail` matches `failed`) over each episode's
//! composed evidence as one document, the episodes searched being the
//! corpus. So a word every episode's evidence shows weighs little, and a
//! long evidence does not win by its length alone. Equal relevance
//! goes to the higher best item score (each structure's scores are in
//! `[0, 1]`), then to the newer episode. Words alone miss a question that
//! shares none with its answer ("why did the query fail?" of an episode that
//! says "Error: no such table"), so no episode is left out for matching
//! nothing: it ranks after those that do. The cost is one question per
//! episode searched (and an episode's first build, if it was never asked);
//! name the episodes to bound it.

use crate::{Answer, QueryError, Question, SharedChooser};
use mesa_memory::text::{is_stopword, words};
use mesa_memory::{LiveError, Tenant};
use rust_stemmers::{Algorithm, Stemmer};

/// Why a question over many episodes could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcrossError {
    /// The tenant's episodes could not be listed, or one opened.
    #[error("episode `{episode}`: {source}")]
    Episode {
        /// The episode (empty while listing them).
        episode: String,
        /// What the memory said.
        #[source]
        source: LiveError,
    },
    /// An episode named is not in the tenant.
    #[error("the tenant has no episode `{id}` (list them with GET /v1/episodes, `mesa episodes`)")]
    UnknownEpisode {
        /// The id named.
        id: String,
    },
    /// The question has no words.
    #[error("the question is empty (or only spaces); ask with words")]
    EmptyQuestion,
    /// One episode's question failed.
    #[error("episode `{episode}`: {source}")]
    Query {
        /// The episode.
        episode: String,
        /// Why.
        #[source]
        source: QueryError,
    },
}

/// One episode's entry in [`Across`].
#[derive(Debug, Clone)]
pub struct Found {
    /// The episode.
    pub episode: String,
    /// Okapi BM25 of the question over its evidence (0 when the evidence
    /// holds none of the question's words).
    pub relevance: f64,
    /// Its answer, as a question to it alone gets.
    pub answer: Answer,
}

/// What one question over many episodes found.
#[derive(Debug, Clone)]
pub struct Across {
    /// Episodes asked.
    pub searched: usize,
    /// The episodes, best first, at most the limit asked.
    pub found: Vec<Found>,
}

/// Asks `text` of the tenant's episodes (`episodes`, or all of them when
/// `None`) and keeps the `limit` whose evidence the question fits best
/// (see the module docs).
pub fn ask_across(
    tenant: &Tenant,
    chooser: &SharedChooser,
    text: &str,
    qtype: Option<&str>,
    episodes: Option<&[String]>,
    limit: usize,
) -> Result<Across, AcrossError> {
    let listed = tenant.episodes().map_err(|source| AcrossError::Episode {
        episode: String::new(),
        source,
    })?;
    // Newest first, so that equal shares keep the newer episode.
    let mut order: Vec<(&str, &str)> = listed
        .iter()
        .map(|e| (e.id.as_str(), e.created.as_str()))
        .collect();
    order.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let chosen: Vec<&str> = match episodes {
        None => order.iter().map(|(id, _)| *id).collect(),
        Some(named) => {
            if let Some(id) = named.iter().find(|n| !listed.iter().any(|e| &e.id == *n)) {
                return Err(AcrossError::UnknownEpisode { id: id.clone() });
            }
            order
                .iter()
                .map(|(id, _)| *id)
                .filter(|id| named.iter().any(|n| n == id))
                .collect()
        }
    };
    if words(text).next().is_none() {
        return Err(AcrossError::EmptyQuestion);
    }
    let stemmer = Stemmer::create(Algorithm::English);
    // Only stopwords: every relevance is 0, and the ties decide.
    let asked = stems(&stemmer, text);
    let mut found = Vec::new();
    for id in &chosen {
        let memory = match tenant.memory(id) {
            // Forgotten since it was listed.
            Err(LiveError::UnknownEpisode { .. }) => continue,
            other => other.map_err(|source| AcrossError::Episode {
                episode: id.to_string(),
                source,
            })?,
        };
        let (answer, _) =
            chooser
                .ask(&memory, text, qtype, false)
                .map_err(|source| AcrossError::Query {
                    episode: id.to_string(),
                    source,
                })?;
        let best = answer
            .composition
            .items()
            .map(|i| i.score)
            .fold(0.0, f64::max);
        let counts = counts(&stemmer, &asked, &answer);
        found.push((
            best,
            counts,
            Found {
                episode: id.to_string(),
                relevance: 0.0,
                answer,
            },
        ));
    }
    let counts: Vec<&Counts> = found.iter().map(|(_, c, _)| c).collect();
    let scores = bm25(&counts, asked.len());
    for ((_, _, f), score) in found.iter_mut().zip(scores) {
        f.relevance = score;
    }
    // Stable: equal keys keep the newest-first order.
    found.sort_by(|(a_best, _, a), (b_best, _, b)| {
        b.relevance
            .total_cmp(&a.relevance)
            .then_with(|| b_best.total_cmp(a_best))
    });
    let found: Vec<Found> = found.into_iter().take(limit).map(|(_, _, f)| f).collect();
    Ok(Across {
        searched: chosen.len(),
        found,
    })
}

/// The distinct stems of `text`'s content words, sorted.
fn stems(stemmer: &Stemmer, text: &str) -> Vec<String> {
    let mut out: Vec<String> = words(text)
        .filter(|w| !is_stopword(w))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// How often each of the question's stems occurs in one episode's
/// evidence, and how many content words the evidence has.
struct Counts {
    tf: Vec<f64>,
    len: f64,
}

/// The counts of `asked` (sorted distinct stems) in the answer's evidence.
fn counts(stemmer: &Stemmer, asked: &[String], answer: &Answer) -> Counts {
    let mut c = Counts {
        tf: vec![0.0; asked.len()],
        len: 0.0,
    };
    for item in answer.composition.items() {
        for word in words(&item.text).filter(|w| !is_stopword(w)) {
            c.len += 1.0;
            let stem = stemmer.stem(&word);
            if let Ok(k) = asked.binary_search_by(|a| a.as_str().cmp(&stem)) {
                c.tf[k] += 1.0;
            }
        }
    }
    c
}

/// BM25's `k1` and `b`, at their usual values (not tuned here).
const K1: f64 = 1.2;
const B: f64 = 0.75;

/// Okapi BM25 of the question (its `terms` stems) over each episode's
/// evidence as one document, with the episodes searched as the corpus.
fn bm25(docs: &[&Counts], terms: usize) -> Vec<f64> {
    let n = docs.len() as f64;
    let avg = docs.iter().map(|d| d.len).sum::<f64>() / n.max(1.0);
    let idf: Vec<f64> = (0..terms)
        .map(|k| {
            let df = docs.iter().filter(|d| d.tf[k] > 0.0).count() as f64;
            (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
        })
        .collect();
    docs.iter()
        .map(|d| {
            let norm = K1 * (1.0 - B + B * d.len / avg.max(1.0));
            idf.iter()
                .zip(&d.tf)
                .map(|(w, tf)| w * tf * (K1 + 1.0) / (tf + norm))
                .sum()
        })
        .collect()
}

impl Across {
    /// As JSON: `{"searched", "episodes": [...]}`, each episode's entry its
    /// answer's JSON ([`Answer::to_json`]) with its `relevance`.
    pub fn to_json(&self, text: &str, qtype: Option<&str>, with_text: bool) -> serde_json::Value {
        let episodes: Vec<serde_json::Value> = self
            .found
            .iter()
            .map(|f| {
                let q = Question {
                    episode: &f.episode,
                    text,
                    qtype,
                };
                let mut v = f.answer.to_json(&q, with_text);
                v["relevance"] = serde_json::json!(f.relevance);
                v
            })
            .collect();
        serde_json::json!({
            "question": text,
            "searched": self.searched,
            "episodes": episodes,
        })
    }
}
