//! One question over many episodes of a tenant: which of its episodes
//! hold what the question asks about, with each one's answer.
//!
//! ```text
//! question ─► for each episode (all, or those named) ─► SharedChooser::ask ─► Answer
//!                                                                              │
//!        ranked by the share of the question's content words its evidence shows
//!        (ties: the best item score, then the newer episode) ◄─────────────────┘
//!        ─► the first `limit` ─► Across
//! ```
//!
//! Each episode is asked exactly as a question to that episode alone is
//! (the policy chooses per episode, from that episode's previews), so an
//! episode's entry is the answer `POST /v1/episodes/{id}/query` would give.
//! The rank is the one number that is comparable between episodes whatever
//! structures each read: the share of the question's distinct content words
//! (words less stopwords, as S scores) that occur in the episode's composed
//! evidence, words compared by their English stems (Snowball, so `fail`
//! matches `failed`); equal shares go to the higher best item score (each
//! structure's scores are in `[0, 1]`), then to the newer episode. Words
//! alone miss a question that shares none with its answer ("why did the
//! query fail?" of an episode that says "Error: no such table"), so no
//! episode is left out for matching nothing: it ranks after those that do. The
//! cost is one question per episode searched (and an episode's first build,
//! if it was never asked); name the episodes to bound it.

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
    /// The share of the question's content words its evidence shows, in
    /// `[0, 1]`.
    pub matched: f64,
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
/// `None`) and keeps the `limit` whose evidence shows the largest share of
/// the question's content words (see the module docs for the ties).
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
    // Only stopwords: every share is 0, and the ties decide.
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
        found.push((
            best,
            Found {
                episode: id.to_string(),
                matched: matched(&stemmer, &asked, &answer),
                answer,
            },
        ));
    }
    // Stable: equal keys keep the newest-first order.
    found.sort_by(|(a_best, a), (b_best, b)| {
        b.matched
            .total_cmp(&a.matched)
            .then_with(|| b_best.total_cmp(a_best))
    });
    let found: Vec<Found> = found.into_iter().take(limit).map(|(_, f)| f).collect();
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

/// The share of `asked` (sorted distinct stems) that the answer's
/// evidence shows.
fn matched(stemmer: &Stemmer, asked: &[String], answer: &Answer) -> f64 {
    let mut seen = vec![false; asked.len()];
    for item in answer.composition.items() {
        for word in words(&item.text).filter(|w| !is_stopword(w)) {
            let stem = stemmer.stem(&word);
            if let Ok(k) = asked.binary_search_by(|a| a.as_str().cmp(&stem)) {
                seen[k] = true;
            }
        }
    }
    let n = seen.iter().filter(|s| **s).count();
    n as f64 / asked.len().max(1) as f64
}

impl Across {
    /// As JSON: `{"searched", "episodes": [...]}`, each episode's entry its
    /// answer's JSON ([`Answer::to_json`]) with its `matched` share.
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
                v["matched"] = serde_json::json!(f.matched);
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
