//! Composition: the evidence of the selected structures, in the order S, T,
//! G, V, R, with provenance and a total token count, and its text for an
//! answer model.
//!
//! The text is each non-empty structure's section ([`Evidence::render`]: a
//! `## K: name` header, then one item per line) joined by blank lines.
//! The token count is the sum of the sections' counts plus one per blank
//! line between sections: parts are counted separately, so the rendered
//! text may tokenize to a few tokens fewer, never more.

use crate::structures::{Evidence, EvidenceItem};
use mesa_core::{Mask, Structure};
use serde::Serialize;

/// The composed evidence for one question.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Composition {
    /// The structures asked for.
    pub mask: Mask,
    /// Their evidence, in the order S, T, G, V, R; empty ones are kept here
    /// but add nothing to the text.
    pub sections: Vec<Evidence>,
    /// Tokens of the rendered text (see the module docs).
    pub tokens: usize,
}

/// Composes the evidence of the structures in `mask`, taken from
/// `evidence` (which may hold other structures too; they are ignored).
pub fn compose(mask: Mask, evidence: Vec<Evidence>) -> Composition {
    let mut sections: Vec<Evidence> = evidence
        .into_iter()
        .filter(|e| mask.contains(e.structure))
        .collect();
    sections.sort_by_key(|e| e.structure);
    sections.dedup_by_key(|e| e.structure);
    let tokens = composed_tokens(sections.iter());
    Composition {
        mask,
        sections,
        tokens,
    }
}

/// The tokens a composition of these sections has (see the module docs):
/// the sections' tokens plus one per blank line between non-empty ones. A
/// sweep uses it to cost all 31 subsets without composing each.
pub fn composed_tokens<'a>(sections: impl Iterator<Item = &'a Evidence>) -> usize {
    let (sum, non_empty) = sections.fold((0, 0), |(sum, n), e| {
        (sum + e.tokens(), n + usize::from(!e.items.is_empty()))
    });
    sum + usize::saturating_sub(non_empty, 1)
}

impl Composition {
    /// Every item, in order.
    pub fn items(&self) -> impl Iterator<Item = &EvidenceItem> {
        self.sections.iter().flat_map(|s| s.items.iter())
    }

    /// The distinct step indices the evidence shows, increasing.
    pub fn steps(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.items().flat_map(|i| i.steps.iter().copied()).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The evidence of one structure, if selected.
    pub fn section(&self, s: Structure) -> Option<&Evidence> {
        self.sections.iter().find(|e| e.structure == s)
    }

    /// The text for an answer model.
    pub fn render(&self) -> String {
        self.sections
            .iter()
            .filter(|e| !e.items.is_empty())
            .map(Evidence::render)
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(s: Structure, tokens: usize) -> Evidence {
        Evidence {
            structure: s,
            items: (tokens > 0)
                .then(|| EvidenceItem {
                    structure: s,
                    steps: vec![1],
                    score: 0.5,
                    text: "x".into(),
                    tokens,
                })
                .into_iter()
                .collect(),
            hits: 1,
            stale: 0,
        }
    }

    #[test]
    fn order_filter_and_count() {
        let all = vec![
            ev(Structure::Raw, 10),
            ev(Structure::Summary, 5),
            ev(Structure::Vector, 0),
            ev(Structure::Temporal, 7),
        ];
        let mask = Mask::single(Structure::Raw)
            .with(Structure::Summary)
            .with(Structure::Vector);
        let c = compose(mask, all);
        let order: Vec<Structure> = c.sections.iter().map(|e| e.structure).collect();
        assert_eq!(
            order,
            [Structure::Summary, Structure::Vector, Structure::Raw]
        );
        // S and R: header + item + line break each, one blank line between.
        let s = c.sections[0].tokens();
        let r = c.sections[2].tokens();
        assert_eq!(c.sections[1].tokens(), 0);
        assert_eq!(c.tokens, s + r + 1);
        assert_eq!(c.render(), "## S: summary\nx\n\n## R: raw\nx");
        assert_eq!(compose(Mask::EMPTY, vec![ev(Structure::Raw, 3)]).tokens, 0);
    }
}
