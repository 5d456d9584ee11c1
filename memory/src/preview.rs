//! Previews: what a policy may read about a structure's evidence before
//! selecting it (`preview.K.tokens`, `preview.K.top`, `preview.K.hits`).
//!
//! A [`Retrieval`] holds one question against one episode and retrieves
//! from a structure only when something asks for it, once: a policy that
//! reads no previews costs nothing until the selected structures are
//! composed, and composing reuses the evidence the previews computed.
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

use crate::compose::{compose, Composition};
use crate::structures::{EpisodeMemory, Evidence, Query, RetrieveError};
use mesa_core::{Feature, Mask, PreviewKey, Previews, Structure};
use std::cell::OnceCell;

/// A feature's value for some evidence.
pub fn feature_value(evidence: &Evidence, feature: Feature) -> f64 {
    match feature {
        Feature::Tokens => evidence.tokens() as f64,
        Feature::Top => evidence.top(),
        Feature::Hits => evidence.hits as f64,
    }
}

/// One question against one episode, retrieving lazily.
pub struct Retrieval<'a> {
    memory: &'a EpisodeMemory,
    query: Query,
    cache: [OnceCell<Result<Evidence, RetrieveError>>; 5],
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

    /// One preview value.
    pub fn preview(&self, s: Structure, f: Feature) -> Result<f64, RetrieveError> {
        Ok(feature_value(self.evidence(s)?, f))
    }

    /// The requested previews; the others stay 0, and structures no pair
    /// names are not retrieved.
    pub fn previews(&self, wanted: &[PreviewKey]) -> Result<Previews, RetrieveError> {
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

    /// The structures retrieved so far.
    pub fn retrieved(&self) -> Mask {
        Structure::ALL
            .into_iter()
            .filter(|s| self.cache[s.index()].get().is_some())
            .fold(Mask::EMPTY, Mask::with)
    }

    /// The composed evidence of the structures in `mask`.
    pub fn compose(&self, mask: Mask) -> Result<Composition, RetrieveError> {
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
}
