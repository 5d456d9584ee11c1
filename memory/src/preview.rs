//! Previews: what a policy may read about a structure's evidence before
//! selecting it (`preview.K.feature`).
//!
//! A [`Retrieval`] holds one question against one episode and retrieves
//! from a structure only when something asks for it, once (the structures
//! one call needs, a composition's or a set of previews', side by side on
//! a pool of threads of its own): a policy that
//! reads no previews costs nothing until the selected structures are
//! composed, and composing reuses the evidence the previews computed.
//! Every feature is computed from the evidence alone (and, for `named`,
//! the steps the question names), so a sweep and a query compute the same
//! value with the same function, [`Retrieval::preview`].
//!
//! ```text
//! question ─► Retrieval ─► evidence(K) once ─┬─► tokens, top, hits, gap, share
//!                                            ├─► shown steps(K) once ─► steps
//!             T.named(question) once ────────┼─► named  (shown ∩ named / named)
//!                          shown steps(K2) ──┴─► overlap_K2 (Jaccard)
//! ```
//!
//! - `tokens`: the tokens the structure's evidence adds to a composition
//!   ([`Evidence::tokens`]: its header, items and line breaks; 0 if empty).
//! - `top`: the best item score, normalized to `[0, 1]` as each structure
//!   defines it (S: share of question terms in the summary; T: 1 for named
//!   steps, else idf-weighted overlap; G: relation score over its maximum;
//!   V: cosine; R: BM25 over its upper bound).
//! - `hits`: S: summary lines sharing a term with the question; T: steps
//!   returned; G: relations with a positive score; V: returned steps with a
//!   positive cosine; R: windows with a positive BM25 score.
//! - `steps`: the distinct steps the items show.
//! - `gap`: `(best - second) / best` over the item scores (1 with one
//!   item, 0 with none or when the two best tie).
//! - `share`: `best / sum` of the item scores (0 when the sum is 0).
//! - `named`: the share of the steps the question names (by number or by
//!   time, [`crate::structures::temporal::Temporal::named`]) that the items
//!   show; -1 when it names no step of the episode.
//! - `overlap_K`: the Jaccard overlap of the steps two structures show (0
//!   when neither shows one); it retrieves both.

use crate::compose::{compose, Composition};
use crate::coverage::{content_words, per_subset, Coverage};
use crate::structures::{EpisodeMemory, Evidence, Query, RetrieveError};
use crate::text::words;
use mesa_core::{Feature, Mask, PreviewKey, Previews, Shown, Structure};
use rayon::prelude::*;
use std::cell::OnceCell;
use std::collections::HashSet;
use std::sync::OnceLock;

/// A feature's value for some evidence, for the features that need only
/// the evidence (`None` for `named` and the overlaps, which
/// [`Retrieval::preview`] computes).
pub fn feature_value(evidence: &Evidence, feature: Feature) -> Option<f64> {
    let best_two = || {
        let mut two = [0.0f64; 2];
        for i in &evidence.items {
            if i.score > two[0] {
                two = [i.score, two[0]];
            } else if i.score > two[1] {
                two[1] = i.score;
            }
        }
        two
    };
    Some(match feature {
        Feature::Tokens => evidence.tokens() as f64,
        Feature::Top => evidence.top(),
        Feature::Hits => evidence.hits as f64,
        Feature::Steps => shown_steps(evidence).len() as f64,
        Feature::Gap => match evidence.items.len() {
            0 => 0.0,
            1 => 1.0,
            _ => {
                let [best, second] = best_two();
                if best > 0.0 {
                    (best - second) / best
                } else {
                    0.0
                }
            }
        },
        Feature::Share => {
            let sum: f64 = evidence.items.iter().map(|i| i.score.max(0.0)).sum();
            if sum > 0.0 {
                best_two()[0] / sum
            } else {
                0.0
            }
        }
        _ => return None,
    })
}

/// The distinct steps the evidence's items show, in increasing order.
pub fn shown_steps(evidence: &Evidence) -> Vec<usize> {
    let mut out: Vec<usize> = evidence
        .items
        .iter()
        .flat_map(|i| i.steps.iter().copied())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// `|a ∩ b|` of two increasing lists.
fn common(a: &[usize], b: &[usize]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The threads that retrieve a question's structures side by side: a
/// pool of their own (one thread per core, at most five), so that a long
/// build on rayon's global pool (a snapshot rebuilt after a forget, say)
/// never holds up a question. `None` if no thread could be started: then
/// the structures are retrieved one after another.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores.clamp(1, 5))
            .thread_name(|i| format!("mesa-retrieve-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// One question against one episode, retrieving lazily.
pub struct Retrieval<'a> {
    memory: &'a EpisodeMemory,
    query: Query,
    cache: [OnceCell<Result<Evidence, RetrieveError>>; 5],
    shown: [OnceCell<Vec<usize>>; 5],
    named: OnceCell<Vec<usize>>,
    question_words: OnceCell<HashSet<String>>,
    content: [OnceCell<HashSet<String>>; 5],
}

impl<'a> Retrieval<'a> {
    /// Prepares a question; retrieves nothing yet.
    pub fn new(memory: &'a EpisodeMemory, question: &str) -> Retrieval<'a> {
        Retrieval::with_query(memory, Query::new(question))
    }

    /// Uses an already prepared question.
    pub fn with_query(memory: &'a EpisodeMemory, query: Query) -> Retrieval<'a> {
        Retrieval {
            memory,
            query,
            cache: Default::default(),
            shown: Default::default(),
            named: OnceCell::new(),
            question_words: OnceCell::new(),
            content: Default::default(),
        }
    }

    /// The prepared question.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// The structure's evidence, retrieved on first use.
    pub fn evidence(&self, s: Structure) -> Result<&Evidence, RetrieveError> {
        self.cache[s.index()]
            .get_or_init(|| self.memory.retrieve(s, &self.query))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The distinct steps the structure's evidence shows, in order.
    pub fn shown(&self, s: Structure) -> Result<&[usize], RetrieveError> {
        if let Some(v) = self.shown[s.index()].get() {
            return Ok(v);
        }
        let v = shown_steps(self.evidence(s)?);
        Ok(self.shown[s.index()].get_or_init(|| v))
    }

    /// The distinct content words of the structure's evidence
    /// ([`crate::coverage::is_content_word`] for this question).
    pub fn content_words(&self, s: Structure) -> Result<&HashSet<String>, RetrieveError> {
        if let Some(v) = self.content[s.index()].get() {
            return Ok(v);
        }
        let question = self
            .question_words
            .get_or_init(|| words(self.query.text()).collect());
        let v = content_words(self.evidence(s)?, question);
        Ok(self.content[s.index()].get_or_init(|| v))
    }

    /// What each subset of the five structures shows together (retrieves
    /// those not retrieved yet side by side).
    pub fn coverage(&self) -> Result<Coverage, RetrieveError> {
        Ok(Coverage {
            words: self.unit_counts(Shown::Words)?,
            steps: self.unit_counts(Shown::Steps)?,
        })
    }

    /// What each subset shows in `unit` alone, as a trading policy reads it
    /// (the same counts as [`Retrieval::coverage`]'s, without the other
    /// unit's: a `steps` trade does not count any evidence's words).
    pub fn shown_counts(&self, unit: Shown) -> Result<[f64; Mask::SUBSETS], RetrieveError> {
        Ok(self.unit_counts(unit)?.map(f64::from))
    }

    /// Per subset, the distinct elements of `unit` its structures show:
    /// the one count both [`Retrieval::coverage`] and
    /// [`Retrieval::shown_counts`] read.
    fn unit_counts(&self, unit: Shown) -> Result<[u32; Mask::SUBSETS], RetrieveError> {
        self.fetch(Mask::ALL);
        Ok(match unit {
            Shown::Words => {
                let [s, t, g, v, r] = Structure::ALL.map(|k| self.content_words(k));
                per_subset([s?, t?, g?, v?, r?].map(|w| w.iter()))
            }
            Shown::Steps => {
                let [s, t, g, v, r] = Structure::ALL.map(|k| self.shown(k));
                per_subset([s?, t?, g?, v?, r?].map(|w| w.iter()))
            }
        })
    }

    /// The steps the question names (see the module doc).
    pub fn named(&self) -> &[usize] {
        self.named
            .get_or_init(|| self.memory.temporal.named(&self.query))
    }

    /// One preview value.
    pub fn preview(&self, s: Structure, f: Feature) -> Result<f64, RetrieveError> {
        if let Some(o) = f.partner() {
            let (a, b) = (self.shown(s)?, self.shown(o)?);
            let both = common(a, b);
            let union = a.len() + b.len() - both;
            return Ok(if union == 0 {
                0.0
            } else {
                both as f64 / union as f64
            });
        }
        if f == Feature::Steps {
            return Ok(self.shown(s)?.len() as f64);
        }
        if f == Feature::Named {
            let named = self.named();
            if named.is_empty() {
                return Ok(-1.0);
            }
            return Ok(common(named, self.shown(s)?) as f64 / named.len() as f64);
        }
        let e = self.evidence(s)?;
        Ok(feature_value(e, f).unwrap_or_default())
    }

    /// Retrieves the structures of `mask` that are not retrieved yet, side
    /// by side (on [`pool`]'s threads). Each structure's retrieval reads
    /// only the memory and the question and is deterministic, so this
    /// changes when the evidence is ready, never what it is.
    fn fetch(&self, mask: Mask) {
        let missing: Vec<Structure> = mask
            .iter()
            .filter(|s| self.cache[s.index()].get().is_none())
            .collect();
        if missing.len() < 2 {
            return;
        }
        let (memory, query) = (self.memory, &self.query);
        let one = |&s: &Structure| memory.retrieve(s, query);
        let found: Vec<Result<Evidence, RetrieveError>> = match pool() {
            Some(pool) => pool.install(|| missing.par_iter().map(one).collect()),
            None => missing.iter().map(one).collect(),
        };
        for (s, r) in missing.into_iter().zip(found) {
            let _ = self.cache[s.index()].set(r);
        }
    }

    /// The requested previews; the others stay 0, and structures no key
    /// names are not retrieved. The structures the keys name are retrieved
    /// side by side.
    pub fn previews(&self, wanted: &[PreviewKey]) -> Result<Previews, RetrieveError> {
        let named = wanted
            .iter()
            .flat_map(|k| std::iter::once(k.structure).chain(k.feature.partner()));
        self.fetch(named.fold(Mask::EMPTY, Mask::with));
        let mut p = Previews::default();
        for &k in wanted {
            p.set(
                k.structure,
                k.feature,
                self.preview(k.structure, k.feature)?,
            );
        }
        Ok(p)
    }

    /// Every preview of every structure (what a sweep records).
    pub fn all_previews(&self) -> Result<Previews, RetrieveError> {
        let all: Vec<PreviewKey> = PreviewKey::all().collect();
        self.previews(&all)
    }

    /// The structures retrieved so far.
    pub fn retrieved(&self) -> Mask {
        Structure::ALL
            .into_iter()
            .filter(|s| self.cache[s.index()].get().is_some())
            .fold(Mask::EMPTY, Mask::with)
    }

    /// The composed evidence of the structures in `mask` (those not
    /// retrieved yet are retrieved side by side).
    pub fn compose(&self, mask: Mask) -> Result<Composition, RetrieveError> {
        self.fetch(mask);
        let sections = mask
            .iter()
            .map(|s| self.evidence(s).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(compose(mask, sections))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::structures::fixtures::sql_episode;
    use crate::structures::Plugins;
    use crate::tokens::count_tokens;
    use std::sync::Arc;

    fn memory() -> EpisodeMemory {
        EpisodeMemory::build(
            Arc::new(sql_episode()),
            &Config::default(),
            &Plugins::default(),
        )
        .unwrap()
    }

    /// Retrieving side by side changes nothing: a composition of every
    /// subset equals the one built from the structures retrieved one at a
    /// time, in order.
    #[test]
    fn side_by_side_equals_one_at_a_time() {
        let m = memory();
        let q = "What error did the agent get at step 2 with TOTAL_ASSETS?";
        for k in 0..Mask::SUBSETS {
            let mask = Mask::subset(k);
            let alone = Retrieval::new(&m, q);
            let sections: Vec<Evidence> = mask
                .iter()
                .map(|s| alone.evidence(s).unwrap().clone())
                .collect();
            assert_eq!(alone.retrieved(), mask);
            let together = Retrieval::new(&m, q).compose(mask).unwrap();
            assert_eq!(together, compose(mask, sections), "{mask:?}");
        }
    }

    /// One unit's counts alone are the coverage's counts in that unit.
    #[test]
    fn shown_counts_are_the_coverage_counts() {
        let m = memory();
        for q in [
            "What error did the agent get at step 2 with TOTAL_ASSETS?",
            "Why did the query fail?",
        ] {
            let coverage = Retrieval::new(&m, q).coverage().unwrap();
            for unit in Shown::ALL {
                let alone = Retrieval::new(&m, q).shown_counts(unit).unwrap();
                assert_eq!(alone, coverage.counts(unit), "{q}: {unit}");
            }
        }
    }

    #[test]
    fn only_requested_structures_are_retrieved() {
        let m = memory();
        let r = Retrieval::new(&m, "What error did the agent get at step 2?");
        assert_eq!(r.retrieved(), Mask::EMPTY);
        let p = r.previews(&[]).unwrap();
        assert_eq!(p, Previews::default());
        assert_eq!(r.retrieved(), Mask::EMPTY);
        let p = r
            .previews(&[
                PreviewKey::new(Structure::Vector, Feature::Top),
                PreviewKey::new(Structure::Raw, Feature::Tokens),
            ])
            .unwrap();
        assert_eq!(
            r.retrieved(),
            Mask::single(Structure::Vector).with(Structure::Raw)
        );
        assert!(p.get(Structure::Vector, Feature::Top) > 0.0);
        assert_eq!(p.get(Structure::Vector, Feature::Tokens), 0.0);
        assert!(p.get(Structure::Raw, Feature::Tokens) > 0.0);
        // T names step 2: top 1, one hit.
        assert_eq!(r.preview(Structure::Temporal, Feature::Top).unwrap(), 1.0);
        assert_eq!(r.preview(Structure::Temporal, Feature::Hits).unwrap(), 1.0);
    }

    #[test]
    fn previews_match_the_composition() {
        let m = memory();
        let r = Retrieval::new(
            &m,
            "Which identifier was invalid when querying FINANCE.BANKS?",
        );
        let all: Vec<PreviewKey> = PreviewKey::all().collect();
        let p = r.previews(&all).unwrap();
        for s in Structure::ALL {
            assert!((0.0..=1.0).contains(&p.get(s, Feature::Top)), "{s:?}");
        }
        let mask = Mask::single(Structure::Raw)
            .with(Structure::Summary)
            .with(Structure::Graph);
        let c = r.compose(mask).unwrap();
        let order: Vec<Structure> = c.sections.iter().map(|e| e.structure).collect();
        assert_eq!(
            order,
            [Structure::Summary, Structure::Graph, Structure::Raw]
        );
        let sum: f64 = mask.iter().map(|s| p.get(s, Feature::Tokens)).sum();
        assert_eq!(c.tokens as f64, sum + 2.0);
        let text = c.render();
        assert!(text.starts_with("## S: summary\nTask: "));
        assert!(text.contains("\n\n## G: graph\n") && text.contains("\n\n## R: raw\n[steps "));
        // Parts are counted separately: never fewer than the joined text.
        let exact = count_tokens(&text);
        assert!(
            c.tokens >= exact && c.tokens <= exact + 40,
            "{} vs {exact}",
            c.tokens
        );
        assert!(c.items().all(|i| !i.text.is_empty() && !i.steps.is_empty()));
        assert!(c.steps().contains(&2));
        assert!(c.section(Structure::Vector).is_none());
    }

    #[test]
    fn evidence_aware_features_follow_their_definitions() {
        use std::collections::BTreeSet;
        let m = memory();
        for q in [
            "What error did the agent get at step 2?",
            "What happened between step 1 and step 3?",
            "Which identifier was invalid when querying FINANCE.BANKS?",
            "What did the agent do at step 99?",
        ] {
            let r = Retrieval::new(&m, q);
            let p = r.all_previews().unwrap();
            let sets: Vec<BTreeSet<usize>> = Structure::ALL
                .iter()
                .map(|&s| {
                    r.evidence(s)
                        .unwrap()
                        .items
                        .iter()
                        .flat_map(|i| i.steps.iter().copied())
                        .collect()
                })
                .collect();
            let named: BTreeSet<usize> = r.named().iter().copied().collect();
            for s in Structure::ALL {
                let shown = &sets[s.index()];
                assert_eq!(p.get(s, Feature::Steps), shown.len() as f64, "{q} {s:?}");
                let want = if named.is_empty() {
                    -1.0
                } else {
                    named.intersection(shown).count() as f64 / named.len() as f64
                };
                assert_eq!(p.get(s, Feature::Named), want, "{q} {s:?}");
                for f in [Feature::Gap, Feature::Share] {
                    assert!((0.0..=1.0).contains(&p.get(s, f)), "{q} {s:?} {f:?}");
                }
                for o in Structure::ALL.into_iter().filter(|o| *o != s) {
                    let other = &sets[o.index()];
                    let union = shown.union(other).count();
                    let j = if union == 0 {
                        0.0
                    } else {
                        shown.intersection(other).count() as f64 / union as f64
                    };
                    assert_eq!(p.get(s, Feature::overlap(o)), j, "{q} {s:?} {o:?}");
                    assert_eq!(r.preview(s, Feature::overlap(o)).unwrap(), j);
                }
            }
        }
        // Step 2 exists and T shows it; step 99 does not exist.
        let r = Retrieval::new(&m, "What error did the agent get at step 2?");
        assert_eq!(r.named(), &[2]);
        assert_eq!(r.preview(Structure::Temporal, Feature::Named).unwrap(), 1.0);
        let r = Retrieval::new(&m, "What did the agent do at step 99?");
        assert!(r.named().is_empty());
        // An overlap retrieves both structures and nothing else.
        let r = Retrieval::new(&m, "Which bank had the most assets?");
        r.previews(&[PreviewKey::new(Structure::Raw, Feature::OverlapG)])
            .unwrap();
        assert_eq!(
            r.retrieved(),
            Mask::single(Structure::Graph).with(Structure::Raw)
        );
    }

    #[test]
    fn gap_and_share_of_known_scores() {
        let item = |score: f64| crate::structures::EvidenceItem {
            structure: Structure::Vector,
            steps: vec![1],
            score,
            text: "x".into(),
            tokens: 1,
        };
        let mut e = Evidence::empty(Structure::Vector);
        assert_eq!(feature_value(&e, Feature::Gap), Some(0.0));
        assert_eq!(feature_value(&e, Feature::Share), Some(0.0));
        e.items = vec![item(0.5)];
        assert_eq!(feature_value(&e, Feature::Gap), Some(1.0));
        assert_eq!(feature_value(&e, Feature::Share), Some(1.0));
        e.items = vec![item(0.2), item(0.8), item(0.2)];
        assert!((feature_value(&e, Feature::Gap).unwrap() - 0.75).abs() < 1e-12);
        assert!((feature_value(&e, Feature::Share).unwrap() - 0.8 / 1.2).abs() < 1e-12);
        e.items = vec![item(0.8), item(0.8)];
        assert_eq!(feature_value(&e, Feature::Gap), Some(0.0));
        assert_eq!(feature_value(&e, Feature::Named), None);
    }
}
