//! What each subset of the five structures shows: its distinct content
//! words and its distinct steps, for all 31 non-empty subsets at once.
//!
//! A preview describes one structure (or a pair, `overlap_K2`); how much a
//! *set* of structures shows together is not a sum of them, because two
//! structures often show the same step or word. [`Coverage`] counts, for
//! every subset, the words and steps at least one of its structures shows,
//! so that a study (or a selector) can weigh what a subset adds against
//! what it costs. A sweep records it per question (`words`, `steps`).
//!
//! ```text
//! evidence(S..R) ─► content words(K) ─┐  each word's structures as bits
//! shown steps(S..R) ──────────────────┴─► counts per bit pattern (32)
//!                                        ─► per subset m: Σ counts[p], p ∩ m ≠ ∅
//! ```
//!
//! A **content word** is a lower-case word ([`crate::text::words`]) of an
//! item's text that is not a stopword, not a bare number, not one of the
//! words the evidence layout itself prints ([`LAYOUT_WORDS`]) and not a
//! word of the question: what the evidence tells that the question does not.

use crate::structures::Evidence;
use crate::text::{is_stopword, words};
use mesa_core::Mask;
use std::collections::{HashMap, HashSet};

/// Words the evidence layout prints whatever it shows: the step rendering
/// (`[step N] action: … observation: …`), R's window header (`[steps
/// A-B]`) and the summary's `Task:` and `Outcome:` lines. A word among them
/// is found in nearly any evidence, so it tells nothing (answer coverage
/// does not look for them either).
pub const LAYOUT_WORDS: &[&str] = &["step", "steps", "action", "observation", "task", "outcome"];

/// Whether a lower-case word is a content word for a question whose words
/// are `question` (see the module doc).
pub fn is_content_word(word: &str, question: &HashSet<String>) -> bool {
    !is_stopword(word)
        && !word.chars().all(|c| c.is_ascii_digit())
        && !LAYOUT_WORDS.contains(&word)
        && !question.contains(word)
}

/// Per non-empty subset (index `k` is [`Mask::subset`]`(k)`), the distinct
/// content words and the distinct steps its structures' evidence shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coverage {
    /// Distinct content words shown by at least one structure of the subset.
    pub words: [u32; Mask::SUBSETS],
    /// Distinct steps shown by at least one structure of the subset.
    pub steps: [u32; Mask::SUBSETS],
}

impl Coverage {
    /// Counts what each subset shows, from each structure's content words
    /// and shown steps (in [`Structure::ALL`] order).
    pub fn from_sets<W>(words: [&HashSet<W>; 5], steps: [&[usize]; 5]) -> Coverage
    where
        W: std::hash::Hash + Eq,
    {
        Coverage {
            words: per_subset(words.map(|w| w.iter())),
            steps: per_subset(steps.map(|s| s.iter())),
        }
    }

    /// The counts in `unit`, as a trading policy reads them
    /// ([`mesa_core::Previews::set_shown`]).
    pub fn counts(&self, unit: mesa_core::Shown) -> [f64; Mask::SUBSETS] {
        let counts = match unit {
            mesa_core::Shown::Words => &self.words,
            mesa_core::Shown::Steps => &self.steps,
        };
        counts.map(f64::from)
    }
}

/// For each element, the structures that show it as bits; then, per
/// subset, the elements whose bits meet it.
pub(crate) fn per_subset<'a, T, I>(sets: [I; 5]) -> [u32; Mask::SUBSETS]
where
    T: std::hash::Hash + Eq + 'a,
    I: Iterator<Item = &'a T>,
{
    let mut bits: HashMap<&T, u8> = HashMap::new();
    for (i, set) in sets.into_iter().enumerate() {
        for x in set {
            *bits.entry(x).or_insert(0) |= 1 << i;
        }
    }
    let mut pattern = [0u32; 32];
    for b in bits.values() {
        pattern[usize::from(*b)] += 1;
    }
    let mut out = [0u32; Mask::SUBSETS];
    for (k, o) in out.iter_mut().enumerate() {
        let m = Mask::subset(k).bits();
        *o = (1..32u8)
            .filter(|p| p & m != 0)
            .map(|p| pattern[usize::from(p)])
            .sum();
    }
    out
}

/// The distinct content words of a structure's evidence.
pub fn content_words(evidence: &Evidence, question: &HashSet<String>) -> HashSet<String> {
    evidence
        .items
        .iter()
        .flat_map(|i| words(&i.text))
        .filter(|w| is_content_word(w, question))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ws: &[&str]) -> HashSet<String> {
        ws.iter().map(|w| w.to_string()).collect()
    }

    /// The count by brute force: the union of the subset's sets.
    fn union_len<T: std::hash::Hash + Eq + Clone>(sets: &[Vec<T>], mask: Mask) -> u32 {
        let mut u = HashSet::new();
        for s in mask.iter() {
            u.extend(sets[s.index()].iter().cloned());
        }
        u.len() as u32
    }

    #[test]
    fn every_subset_counts_its_union() {
        let w = [
            set(&["a", "b"]),
            set(&["b", "c"]),
            set(&[]),
            set(&["d"]),
            set(&["a", "d", "e"]),
        ];
        let st: [Vec<usize>; 5] = [vec![1, 2], vec![2], vec![], vec![5, 7], vec![1, 9]];
        let c = Coverage::from_sets(
            [&w[0], &w[1], &w[2], &w[3], &w[4]],
            [&st[0], &st[1], &st[2], &st[3], &st[4]],
        );
        let wv: Vec<Vec<String>> = w.iter().map(|s| s.iter().cloned().collect()).collect();
        for (k, mask) in Mask::subsets().enumerate() {
            assert_eq!(c.words[k], union_len(&wv, mask), "words of {mask}");
            assert_eq!(c.steps[k], union_len(&st, mask), "steps of {mask}");
        }
        assert_eq!(c.words[Mask::SUBSETS - 1], 5);
        assert_eq!(c.steps[Mask::SUBSETS - 1], 5);
    }

    #[test]
    fn nothing_shown_counts_nothing() {
        let e = HashSet::<String>::new();
        let c = Coverage::from_sets([&e, &e, &e, &e, &e], [&[], &[], &[], &[], &[]]);
        assert_eq!(c.words, [0; Mask::SUBSETS]);
        assert_eq!(c.steps, [0; Mask::SUBSETS]);
    }

    #[test]
    fn content_words_leave_out_the_question_numbers_layout_and_stopwords() {
        let q: HashSet<String> = words("Which table did the agent query?").collect();
        for w in ["table", "the", "42", "step", "observation", "agent"] {
            assert!(!is_content_word(w, &q), "{w}");
        }
        for w in ["orders", "x42", "join"] {
            assert!(is_content_word(w, &q), "{w}");
        }
    }
}
