//! A sweep's evidence item by item (`mesa sweep --items PATH`), for
//! studies of a finer choice than a subset of whole structures: for
//! example reading only R's first window (scripts/depth_study.py).
//!
//! ```text
//! question ─► five sections ─► per item: tokens, steps, content words
//!                           └► per section: its header's tokens
//! labels (recall) or answer words (coverage) ──────────┘  one JSON line
//! ```
//!
//! The record holds all a study needs to recompute the sweep's arrays for
//! any selection of items: a section's tokens are its header's plus each
//! item's tokens plus one per item; a composition's are its non-empty
//! sections' plus one between each two ([`mesa_memory::composed_tokens`]);
//! a subset's steps and content words are the union of its items'; its
//! utility is the recall of `labels` over those steps, or the share of
//! `answer_words` among those words. The sweep's tests check that the
//! items recompute its record exactly.

use mesa_core::Structure;
use mesa_memory::coverage::is_content_word;
use mesa_memory::text::words;
use mesa_memory::Evidence;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeSet, HashSet};

/// One question's evidence item by item: one JSON line of `--items`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemsRecord {
    /// The question's id, as in the sweep.
    pub question_id: String,
    /// The question's episode.
    pub episode: String,
    /// The evidence-recall labels (for `evidence-recall` and
    /// `answer-only-recall`), sorted; the recall is the share of them
    /// that the evidence shows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<usize>>,
    /// The answer words that answer coverage looks for (for
    /// `answer-coverage`), sorted; the coverage is the share of them among
    /// the evidence's content words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_words: Option<Vec<String>>,
    /// The five sections, in `S T G V R` order.
    pub sections: Vec<SectionItems>,
}

/// One structure's section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionItems {
    /// The structure's letter.
    pub structure: char,
    /// The section header's tokens (counted when the section has an item).
    pub header_tokens: usize,
    /// The items, in the structure's order (best first for G, V and R).
    pub items: Vec<ItemRow>,
}

/// One evidence item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemRow {
    /// The item's tokens (without the line break before it).
    pub tokens: usize,
    /// The item's score.
    pub score: f64,
    /// The steps the item shows, as recorded.
    pub steps: Vec<usize>,
    /// The item's distinct content words for this question
    /// ([`is_content_word`]), sorted.
    pub words: Vec<String>,
    /// How many of the question's own content words (its words that are
    /// not stopwords, numbers or layout words) the item's text shows: 0
    /// for an item that shares no such word with the question.
    #[serde(default)]
    pub question_hits: usize,
}

/// What a question's items record beside its sections.
pub(crate) enum Wanted {
    /// Evidence-recall labels.
    Labels(Vec<usize>),
    /// Answer-coverage words.
    AnswerWords(Vec<String>),
    /// Neither (the judge).
    Nothing,
}

impl ItemsRecord {
    /// The record of one question's five sections (in structure order).
    pub(crate) fn new(
        question_id: &str,
        episode: &str,
        question: &str,
        sections: &[Evidence; 5],
        wanted: Wanted,
    ) -> ItemsRecord {
        let question_words: HashSet<String> = words(question).collect();
        let asked: HashSet<String> = question_words
            .iter()
            .filter(|w| is_content_word(w, &HashSet::new()))
            .cloned()
            .collect();
        let sections = sections
            .iter()
            .zip(Structure::ALL)
            .map(|(e, s)| section(e, s, &question_words, &asked))
            .collect();
        let (labels, answer_words) = match wanted {
            Wanted::Labels(mut l) => {
                l.sort_unstable();
                (Some(l), None)
            }
            Wanted::AnswerWords(w) => (None, Some(sorted(w.into_iter()))),
            Wanted::Nothing => (None, None),
        };
        ItemsRecord {
            question_id: question_id.to_owned(),
            episode: episode.to_owned(),
            labels,
            answer_words,
            sections,
        }
    }
}

fn section(
    e: &Evidence,
    s: Structure,
    question: &HashSet<String>,
    asked: &HashSet<String>,
) -> SectionItems {
    let items: Vec<ItemRow> = e
        .items
        .iter()
        .map(|i| {
            let all: HashSet<String> = words(&i.text).collect();
            ItemRow {
                tokens: i.tokens,
                score: i.score,
                steps: i.steps.clone(),
                question_hits: asked.iter().filter(|w| all.contains(*w)).count(),
                words: sorted(all.into_iter().filter(|w| is_content_word(w, question))),
            }
        })
        .collect();
    let item_tokens: usize = items.iter().map(|i| i.tokens + 1).sum();
    SectionItems {
        structure: s.letter(),
        header_tokens: e.tokens().saturating_sub(item_tokens),
        items,
    }
}

fn sorted(words: impl Iterator<Item = String>) -> Vec<String> {
    words.collect::<BTreeSet<String>>().into_iter().collect()
}
