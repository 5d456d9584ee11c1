//! One question over many episodes of a tenant: which of its episodes
//! hold what the question asks about, with each one's answer.
//!
//! ```text
//! question ─► word index (Tenant::word_matches): a rank of the episodes by their best step
//!          ─► for each episode (all, the candidates, or those named; the ones built first)
//!               ─► SharedChooser::ask ─► Answer ─► BM25 of the question over its evidence
//!          ─► relevance: reciprocal rank fusion of the two ranks
//!             (ties: BM25, the best item score, then the newer episode)
//!          ─► the first `limit` ─► Across
//! ```
//!
//! Each episode is asked exactly as a question to that episode alone is
//! (the policy chooses per episode, from that episode's previews), so an
//! episode's entry is the answer `POST /v1/episodes/{id}/query` would give.
//! Two ranks are comparable between episodes whatever structures each
//! read. One is by Okapi BM25 (`k1` 1.2, `b` 0.75, the usual values) of
//! the question's content words (words less stopwords, compared by their
//! English stems, Snowball: `fail` matches `failed`) over each episode's
//! composed evidence as one document, the episodes searched being the
//! corpus: so a word every episode's evidence shows weighs little, and a
//! long evidence does not win by its length alone. The other is by the
//! tenant's word index: each episode's best step by FTS5's BM25 over all
//! the tenant's steps, which sees the steps the evidence left out. An
//! episode's relevance fuses them by reciprocal rank (`60 / (60 + rank)`
//! for each rank where it matched, from 0 to 2): on AMA-Bench the fusion
//! puts the question's own episode first more often than either rank
//! alone (docs/BENCHMARKS.md, "Two ranks fused"). Equal
//! relevance goes to the higher BM25, then to the higher best item score
//! (each structure's scores are in `[0, 1]`), then to the newer episode.
//! Words alone miss a question that
//! shares none with its answer ("why did the query fail?" of an episode that
//! says "Error: no such table"), so no episode is left out for matching
//! nothing: it ranks after those that do. An episode whose question fails
//! (a policy whose input that episode's task overflows, a builder that
//! fails on it) is skipped and named in [`Across::skipped`], so one such
//! episode does not fail every search. The cost is one question per
//! episode searched (and an episode's build, if it was never asked or the
//! shared budget of built steps dropped it: `LiveMemory::keeping_steps`);
//! name the episodes to bound it. The episodes built already are asked
//! first, so that a search over more steps than the budget holds does not
//! drop them before it reaches them.

use crate::{Answer, QueryError, Question, SharedChooser};
use mesa_memory::text::{idf_of, is_stopword, words};
use mesa_memory::{EpisodeInfo, LiveError, Tenant};
use rust_stemmers::{Algorithm, Stemmer};
use std::cmp::Reverse;
use std::collections::HashSet;

/// How many episodes a search returns unless asked otherwise.
pub const DEFAULT_LIMIT: usize = 5;
/// The most episodes one search returns (each with all its evidence).
pub const MAX_LIMIT: usize = 100;
/// How many episodes a search asks, at most, unless told otherwise: in a
/// tenant with more, the ones whose steps share the most with the question
/// by the tenant's word index ([`Tenant::word_matches`]). docs/BENCHMARKS.md,
/// "Candidates from the word index", measures what it keeps on AMA-Bench.
pub const DEFAULT_CANDIDATES: usize = 50;

/// Why a question over many episodes could not be answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcrossError {
    /// The tenant's episodes could not be listed.
    #[error("listing the tenant's episodes: {0}")]
    List(#[source] LiveError),
    /// The tenant's word index could not be read.
    #[error("reading the tenant's word index: {0}")]
    Words(#[source] LiveError),
    /// An episode named is not in the tenant.
    #[error("the tenant has no episode `{id}` (list them with GET /v1/episodes, `mesa episodes`)")]
    UnknownEpisode {
        /// The id named.
        id: String,
    },
    /// The question has no words.
    #[error("the question is empty (or only spaces); ask with words")]
    EmptyQuestion,
    /// The deadline passed before every episode was asked.
    #[error("the search ran out of time after {searched} episode(s); name fewer episodes")]
    OutOfTime {
        /// Episodes asked by then.
        searched: usize,
    },
    /// The limit is 0 or over [`MAX_LIMIT`].
    #[error("the limit is how many episodes to return: 1 to {MAX_LIMIT}, not {limit}")]
    BadLimit {
        /// The limit asked.
        limit: usize,
    },
}

impl AcrossError {
    /// A stable code, as the front ends report it.
    pub fn code(&self) -> &'static str {
        match self {
            AcrossError::List(e) | AcrossError::Words(e) => e.code(),
            AcrossError::UnknownEpisode { .. } => "unknown-episode",
            AcrossError::EmptyQuestion => "empty-question",
            AcrossError::BadLimit { .. } => "bad-limit",
            AcrossError::OutOfTime { .. } => "timeout",
        }
    }
}

/// Why one episode was left out of a search.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Skip {
    /// Its memory could not be opened or built.
    #[error(transparent)]
    Memory(#[from] LiveError),
    /// Its question failed.
    #[error(transparent)]
    Query(#[from] QueryError),
}

/// One episode's entry in [`Across`].
#[derive(Debug, Clone)]
pub struct Found {
    /// The episode.
    pub episode: String,
    /// The reciprocal rank fusion of its rank by Okapi BM25 of the question
    /// over its evidence and its rank by the word index (module docs): 0
    /// when neither ranks it (no word of the question in its evidence, nor
    /// in its steps among the index's best), 2 when first by both.
    pub relevance: f64,
    /// Its answer, as a question to it alone gets.
    pub answer: Answer,
}

impl Found {
    /// As JSON: the answer's ([`Answer::to_json`]) with its `relevance`.
    pub fn to_json(&self, text: &str, qtype: Option<&str>, with_text: bool) -> serde_json::Value {
        let q = Question {
            episode: &self.episode,
            text,
            qtype,
        };
        let mut v = self.answer.to_json(&q, with_text);
        v["relevance"] = serde_json::json!(self.relevance);
        v
    }
}

/// What one question over many episodes found.
#[derive(Debug)]
pub struct Across {
    /// Episodes the search could ask: all of the tenant's, or those named.
    pub considered: usize,
    /// Episodes asked (those forgotten meanwhile are not counted): the
    /// considered ones, or the candidates among them
    /// ([`AcrossOptions::candidates`]).
    pub searched: usize,
    /// The episodes, best first, at most the limit asked.
    pub found: Vec<Found>,
    /// The episodes left out, and why.
    pub skipped: Vec<(String, Skip)>,
}

/// How [`ask_across`] searches; `AcrossOptions::default()` asks at most
/// [`DEFAULT_CANDIDATES`] of the tenant's episodes, without a question type
/// or a deadline, for [`DEFAULT_LIMIT`] episodes.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AcrossOptions<'a> {
    /// The question type, if the policy may see it. Default none.
    pub qtype: Option<&'a str>,
    /// The episodes to ask (each once); default all of the tenant's.
    pub episodes: Option<&'a [String]>,
    /// How many episodes to return, 1 to [`MAX_LIMIT`]. Default
    /// [`DEFAULT_LIMIT`].
    pub limit: usize,
    /// When to stop asking: checked before each episode, and past it the
    /// search ends with [`AcrossError::OutOfTime`] (a server passes its
    /// request timeout, so that a search it gave up on stops). Default
    /// none.
    pub deadline: Option<std::time::Instant>,
    /// How many episodes to ask when more are considered: those whose
    /// steps the tenant's word index ranks best for the question (their
    /// best step's BM25), and when fewer share a word with it, the newest
    /// others. `None` asks every one considered (one question each). Below
    /// `limit`, `limit` is used.
    /// Default [`DEFAULT_CANDIDATES`].
    pub candidates: Option<usize>,
}

impl Default for AcrossOptions<'_> {
    fn default() -> Self {
        AcrossOptions {
            qtype: None,
            episodes: None,
            limit: DEFAULT_LIMIT,
            deadline: None,
            candidates: Some(DEFAULT_CANDIDATES),
        }
    }
}

impl<'a> AcrossOptions<'a> {
    /// These options with `limit`.
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit;
        self
    }

    /// These options asking only `episodes` (all with `None`).
    pub fn episodes(mut self, episodes: Option<&'a [String]>) -> Self {
        self.episodes = episodes;
        self
    }

    /// These options with the question type `qtype`.
    pub fn qtype(mut self, qtype: Option<&'a str>) -> Self {
        self.qtype = qtype;
        self
    }

    /// These options asking at most `candidates` episodes (every one with
    /// `None`).
    pub fn candidates(mut self, candidates: Option<usize>) -> Self {
        self.candidates = candidates;
        self
    }

    /// These options asking at most `n` episodes; 0 asks every one (the
    /// front ends' way to say `None`).
    pub fn asking_at_most(self, n: usize) -> Self {
        self.candidates((n > 0).then_some(n))
    }

    /// These options stopping at `deadline` (never with `None`).
    pub fn deadline(mut self, deadline: Option<std::time::Instant>) -> Self {
        self.deadline = deadline;
        self
    }
}

/// Asks `text` of the tenant's episodes and keeps those whose evidence the
/// question fits best (see the module docs and [`AcrossOptions`]).
pub fn ask_across(
    tenant: &Tenant,
    chooser: &SharedChooser,
    text: &str,
    options: &AcrossOptions<'_>,
) -> Result<Across, AcrossError> {
    let AcrossOptions {
        qtype,
        episodes,
        limit,
        deadline,
        candidates,
    } = *options;
    if limit == 0 || limit > MAX_LIMIT {
        return Err(AcrossError::BadLimit { limit });
    }
    if text.trim().is_empty() {
        return Err(AcrossError::EmptyQuestion);
    }
    let chosen = chosen(tenant, episodes)?;
    let considered = chosen.len();
    // One episode has nothing to be ranked against.
    let matches = match chosen.len() {
        0 | 1 => Vec::new(),
        _ => tenant.word_matches(text).map_err(AcrossError::Words)?,
    };
    let chosen = narrow(chosen, &matches, candidates, limit);
    let word_rank = word_ranks(&matches, &chosen);
    let stemmer = Stemmer::create(Algorithm::English);
    // Only stopwords: every relevance is 0, and the ties decide.
    let asked = stems(&stemmer, text);
    let mut across = Across {
        considered,
        searched: 0,
        found: Vec::new(),
        skipped: Vec::new(),
    };
    let mut ranked = Vec::new();
    let mut skipped = Vec::new();
    // The episodes built already are asked first, before the others'
    // builds can drop them from the budget of built steps (a
    // search over more steps than it holds then builds again only what
    // it must); `pos` keeps the order the ties fall back to.
    let mut order: Vec<(usize, String)> = chosen.into_iter().enumerate().collect();
    // Read once per episode: other questions build and drop meanwhile.
    order.sort_by_cached_key(|(_, id)| !tenant.is_resident(id));
    for (pos, id) in order {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            return Err(AcrossError::OutOfTime {
                searched: across.searched,
            });
        }
        let asked_one = tenant
            .memory(&id)
            .map_err(Skip::from)
            .and_then(|memory| Ok(chooser.ask(&memory, text, qtype, false)?.0));
        let answer = match asked_one {
            Ok(answer) => answer,
            // Forgotten since it was listed.
            Err(Skip::Memory(LiveError::UnknownEpisode { .. })) => continue,
            Err(e) => {
                across.searched += 1;
                skipped.push((pos, id, e));
                continue;
            }
        };
        across.searched += 1;
        let best = answer
            .composition
            .items()
            .map(|i| i.score)
            .fold(0.0, f64::max);
        ranked.push(Asked {
            rank: Rank {
                pos,
                best,
                words: word_rank.get(id.as_str()).copied(),
                ..Rank::default()
            },
            counts: counts(&stemmer, &asked, &answer),
            found: Found {
                episode: id,
                relevance: 0.0,
                answer,
            },
        });
    }
    across.found = best_first(ranked, asked.len(), limit);
    skipped.sort_by_key(|(pos, _, _)| *pos);
    across.skipped = skipped.into_iter().map(|(_, id, e)| (id, e)).collect();
    Ok(across)
}

/// One episode asked, before the ranking.
struct Asked {
    rank: Rank,
    /// How often the question's stems occur in its evidence.
    counts: Counts,
    found: Found,
}

/// What ranks one episode asked.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Rank {
    /// Its place among the episodes asked.
    at: usize,
    /// Its place in the newest-first order: the last tie-break.
    pos: usize,
    /// Its best item score: a tie-break.
    best: f64,
    /// Its rank among the episodes asked by the word index, if its steps
    /// share a word with the question there.
    words: Option<usize>,
    /// BM25 of the question over its evidence.
    bm25: f64,
    /// What [`fuse`] makes of them.
    relevance: f64,
}

/// Reciprocal rank fusion's constant: a rank `r` (from 0) adds
/// `FUSION_K / (FUSION_K + r)`. 60 is the usual value (Cormack, Clarke
/// and Büttcher, SIGIR 2009), not tuned here.
const FUSION_K: f64 = 60.0;

/// The episodes asked, best `limit` first by their relevance: the
/// reciprocal rank fusion of their rank by BM25 over their evidence
/// (among those whose evidence holds a word of the question's `terms`
/// stems) and their rank by the word index (among those it matched), so
/// from 0 (neither matched) to 2 (first by both). Ties go to the higher
/// BM25, then the best item score, then the newer episode.
fn best_first(asked: Vec<Asked>, terms: usize, limit: usize) -> Vec<Found> {
    let counts: Vec<&Counts> = asked.iter().map(|a| &a.counts).collect();
    let scores = bm25(&counts, terms);
    let (mut ranks, mut found): (Vec<Rank>, Vec<Option<Found>>) = asked
        .into_iter()
        .zip(scores)
        .enumerate()
        .map(|(at, (a, bm25))| (Rank { at, bm25, ..a.rank }, Some(a.found)))
        .unzip();
    fuse(&mut ranks);
    ranks
        .into_iter()
        .take(limit)
        .filter_map(|r| {
            let mut f = found[r.at].take()?;
            f.relevance = r.relevance;
            Some(f)
        })
        .collect()
}

/// Sets each episode's relevance (see [`best_first`]) and sorts them by
/// it, best first.
fn fuse(ranks: &mut [Rank]) {
    let by_evidence = |a: &Rank, b: &Rank| {
        b.bm25
            .total_cmp(&a.bm25)
            .then_with(|| b.best.total_cmp(&a.best))
            .then_with(|| a.pos.cmp(&b.pos))
    };
    ranks.sort_by(by_evidence);
    let share = |rank: usize| FUSION_K / (FUSION_K + rank as f64);
    for (at, r) in ranks.iter_mut().enumerate() {
        let evidence = if r.bm25 > 0.0 { share(at) } else { 0.0 };
        r.relevance = evidence + r.words.map_or(0.0, share);
    }
    ranks.sort_by(|a, b| {
        b.relevance
            .total_cmp(&a.relevance)
            .then_with(|| by_evidence(a, b))
    });
}

/// Each of `chosen`'s episodes that the word index matched, with its rank
/// among them (from 0).
fn word_ranks<'m>(
    matches: &'m [(String, f64)],
    chosen: &[String],
) -> std::collections::HashMap<&'m str, usize> {
    let asked: HashSet<&str> = chosen.iter().map(String::as_str).collect();
    matches
        .iter()
        .map(|(id, _)| id.as_str())
        .filter(|id| asked.contains(id))
        .enumerate()
        .map(|(rank, id)| (id, rank))
        .collect()
}

/// The episodes to ask, newest first (so that equal relevance keeps the
/// newer episode): all, or those named (each once).
fn chosen(tenant: &Tenant, episodes: Option<&[String]>) -> Result<Vec<String>, AcrossError> {
    let mut listed = tenant.episodes().map_err(AcrossError::List)?;
    // By the time they name, parsed once each (offsets and fractions
    // compare as instants); one that does not parse sorts by its text,
    // after.
    listed.sort_by_cached_key(|e: &EpisodeInfo| {
        let when = e.created.parse::<jiff::Timestamp>().ok();
        (Reverse(when), Reverse(e.created.clone()), e.id.clone())
    });
    let Some(named) = episodes else {
        return Ok(listed.into_iter().map(|e| e.id).collect());
    };
    let named: HashSet<&str> = named.iter().map(String::as_str).collect();
    let known: HashSet<&str> = listed.iter().map(|e| e.id.as_str()).collect();
    if let Some(id) = named.iter().find(|n| !known.contains(*n)) {
        return Err(AcrossError::UnknownEpisode { id: id.to_string() });
    }
    Ok(listed
        .into_iter()
        .filter(|e| named.contains(e.id.as_str()))
        .map(|e| e.id)
        .collect())
}

/// The episodes of `pool` (newest first) to ask: all when they are no
/// more than `candidates` (at least `limit`); otherwise that many: those
/// the word index ranks best, and when fewer match, the newest others;
/// in the pool's order.
fn narrow(
    pool: Vec<String>,
    matches: &[(String, f64)],
    candidates: Option<usize>,
    limit: usize,
) -> Vec<String> {
    let Some(n) = candidates.map(|c| c.max(limit)) else {
        return pool;
    };
    if pool.len() <= n {
        return pool;
    }
    let in_pool: HashSet<&str> = pool.iter().map(String::as_str).collect();
    let mut keep: HashSet<String> = matches
        .iter()
        .map(|(id, _)| id.clone())
        .filter(|id| in_pool.contains(id.as_str()))
        .take(n)
        .collect();
    // Fewer matched (or the index's best steps fell outside the pool):
    // the newest others make up the number.
    for id in &pool {
        if keep.len() >= n {
            break;
        }
        keep.insert(id.clone());
    }
    pool.into_iter().filter(|id| keep.contains(id)).collect()
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
    // An evidence of no words has no length to normalize by.
    let relative = |len: f64| if avg > 0.0 { len / avg } else { 1.0 };
    // A stem no episode shows weighs nothing: its counts are all 0.
    let idf: Vec<f64> = (0..terms)
        .map(|k| match docs.iter().filter(|d| d.tf[k] > 0.0).count() {
            0 => 0.0,
            df => idf_of(docs.len(), u32::try_from(df).unwrap_or(u32::MAX)),
        })
        .collect();
    docs.iter()
        .map(|d| {
            let norm = K1 * (1.0 - B + B * relative(d.len));
            idf.iter()
                .zip(&d.tf)
                .map(|(w, tf)| w * tf * (K1 + 1.0) / (tf + norm))
                .sum()
        })
        .collect()
}

impl Across {
    /// As JSON: `{"question", "considered", "searched", "episodes": [...], "skipped":
    /// [...]}`, each episode's entry [`Found::to_json`], each skipped one
    /// `{"episode", "code", "error"}`.
    pub fn to_json(&self, text: &str, qtype: Option<&str>, with_text: bool) -> serde_json::Value {
        let episodes: Vec<serde_json::Value> = self
            .found
            .iter()
            .map(|f| f.to_json(text, qtype, with_text))
            .collect();
        let skipped: Vec<serde_json::Value> = self
            .skipped
            .iter()
            .map(|(episode, e)| {
                let code = match e {
                    Skip::Memory(e) => e.code(),
                    Skip::Query(_) => "query",
                };
                serde_json::json!({"episode": episode, "code": code, "error": e.to_string()})
            })
            .collect();
        serde_json::json!({
            "question": text,
            "considered": self.considered,
            "searched": self.searched,
            "episodes": episodes,
            "skipped": skipped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank(pos: usize, bm25: f64, words: Option<usize>) -> Rank {
        Rank {
            at: pos,
            pos,
            bm25,
            words,
            ..Rank::default()
        }
    }

    /// The two ranks are fused: episodes near the top of both beat one
    /// first by its evidence alone; one the word index alone matched still
    /// beats one nothing matched (relevance 0); first by both is 2.
    #[test]
    fn the_evidence_rank_and_the_word_index_rank_are_fused() {
        let mut ranks = vec![
            rank(0, 0.0, None),    // nothing matched
            rank(1, 3.0, None),    // first by evidence, unmatched by the index
            rank(2, 2.0, Some(0)), // second by evidence, first by the index
            rank(3, 1.0, Some(1)), // third, second
            rank(4, 0.0, Some(2)), // the index alone
        ];
        fuse(&mut ranks);
        let order: Vec<usize> = ranks.iter().map(|r| r.pos).collect();
        assert_eq!(order, [2, 3, 1, 4, 0]);
        let k = FUSION_K;
        assert_eq!(ranks[0].relevance, k / (k + 1.0) + 1.0);
        assert_eq!(ranks[4].relevance, 0.0);
        let mut alone = vec![rank(0, 1.0, Some(0))];
        fuse(&mut alone);
        assert_eq!(alone[0].relevance, 2.0);
    }

    /// Equal relevance goes to the higher BM25, then the best item score,
    /// then the newer episode (the lower `pos`).
    #[test]
    fn ties_go_to_the_evidence_then_the_best_item_then_the_newer() {
        let mut ranks = vec![rank(1, 0.0, None), rank(0, 0.0, None)];
        ranks[0].best = 0.9;
        fuse(&mut ranks);
        assert_eq!(ranks.iter().map(|r| r.pos).collect::<Vec<_>>(), [1, 0]);
        let mut ranks = vec![rank(1, 0.0, None), rank(0, 0.0, None)];
        fuse(&mut ranks);
        assert_eq!(ranks.iter().map(|r| r.pos).collect::<Vec<_>>(), [0, 1]);
    }
}
