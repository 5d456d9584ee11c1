//! One question over many episodes of a tenant: which of its episodes
//! hold what the question asks about, with each one's answer.
//!
//! ```text
//! question ─► for each episode (all, or those named) ─► SharedChooser::ask ─► Answer
//!                                                                              │
//!        ranked by the share of the question's content words its evidence shows
//!        (ties: the newer episode first) ◄─────────────────────────────────────┘
//!        ─► the first `limit` that show any ─► Across
//! ```
//!
//! Each episode is asked exactly as a question to that episode alone is
//! (the policy chooses per episode, from that episode's previews), so an
//! episode's entry is the answer `POST /v1/episodes/{id}/query` would give.
//! The rank is the one number that is comparable between episodes whatever
//! structures each read: the share of the question's distinct content words
//! (words less stopwords, as S scores) that occur in the episode's composed
//! evidence. An episode whose evidence shows none of them is left out. The
//! cost is one question per episode searched (and an episode's first build,
//! if it was never asked); name the episodes to bound it.

use crate::{Answer, QueryError, Question, SharedChooser};
use mesa_memory::text::term_hashes;
use mesa_memory::{LiveError, Tenant};

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
    /// `(0, 1]`.
    pub matched: f64,
    /// Its answer, as a question to it alone gets.
    pub answer: Answer,
}

/// What one question over many episodes found.
#[derive(Debug, Clone)]
pub struct Across {
    /// Episodes asked.
    pub searched: usize,
    /// The episodes whose evidence shows any of the question's content
    /// words, best first, at most the limit asked.
    pub found: Vec<Found>,
}

/// Asks `text` of the tenant's episodes (`episodes`, or all of them when
/// `None`) and keeps the `limit` whose evidence shows the largest share of
/// the question's content words (see the module docs).
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
    if mesa_memory::text::words(text).next().is_none() {
        return Err(AcrossError::EmptyQuestion);
    }
    let asked = term_hashes(text);
    if asked.is_empty() {
        // Only stopwords: nothing to rank by, so every episode shows none.
        return Ok(Across {
            searched: chosen.len(),
            found: Vec::new(),
        });
    }
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
        let matched = matched(&asked, &answer);
        if matched > 0.0 {
            found.push(Found {
                episode: id.to_string(),
                matched,
                answer,
            });
        }
    }
    // Stable: equal shares keep the newest-first order.
    found.sort_by(|a, b| b.matched.total_cmp(&a.matched));
    found.truncate(limit);
    Ok(Across {
        searched: chosen.len(),
        found,
    })
}

/// The share of `asked` (sorted distinct content-word hashes) that the
/// answer's evidence shows.
fn matched(asked: &[u64], answer: &Answer) -> f64 {
    let mut seen = vec![false; asked.len()];
    for item in answer.composition.items() {
        for term in term_hashes(&item.text) {
            if let Ok(k) = asked.binary_search(&term) {
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
