//! The keyword automaton compiled into a module: an Aho-Corasick trie over
//! normalized bytes with failure and output links, laid out as flat tables.
//!
//! The generated scan loop follows [`KeywordAutomaton::scan`], which is the
//! same algorithm in Rust; the tests check it against the interpreter's
//! matching on random texts.

use crate::cues;
use std::collections::VecDeque;

/// "No keyword" / "no state" in the tables.
pub const NONE: u32 = u32::MAX;

/// A trie with failure links, states numbered breadth-first from the root (0).
#[derive(Debug, Clone)]
pub struct KeywordAutomaton {
    /// Per state: transitions sorted by byte.
    pub children: Vec<Vec<(u8, u32)>>,
    /// Per state: the longest proper suffix that is also a trie state.
    pub fail: Vec<u32>,
    /// Per state: the keyword that ends exactly here, or NONE.
    pub keyword: Vec<u32>,
    /// Per state: the nearest state on the failure chain (excluding itself)
    /// where a keyword ends, or NONE.
    pub output: Vec<u32>,
    /// Per keyword: its length in bytes.
    pub lengths: Vec<u32>,
}

impl KeywordAutomaton {
    /// Builds the automaton for distinct, normalized, non-empty keywords.
    pub fn new(keywords: &[String]) -> Self {
        let mut children: Vec<Vec<(u8, u32)>> = vec![Vec::new()];
        let mut keyword = vec![NONE];
        for (id, k) in keywords.iter().enumerate() {
            let mut s = 0usize;
            for &b in k.as_bytes() {
                s = match children[s].iter().find(|(c, _)| *c == b) {
                    Some(&(_, t)) => t as usize,
                    None => {
                        let t = children.len();
                        children.push(Vec::new());
                        keyword.push(NONE);
                        children[s].push((b, t as u32));
                        t
                    }
                };
            }
            keyword[s] = id as u32;
        }
        // Renumber breadth-first so the tables read in trie order, and sort
        // each state's transitions.
        let mut order = vec![0usize];
        let mut new_id = vec![0u32; children.len()];
        let mut i = 0;
        while i < order.len() {
            let s = order[i];
            children[s].sort_unstable_by_key(|(b, _)| *b);
            for &(_, t) in &children[s] {
                new_id[t as usize] = order.len() as u32;
                order.push(t as usize);
            }
            i += 1;
        }
        let children: Vec<Vec<(u8, u32)>> = order
            .iter()
            .map(|&s| {
                children[s]
                    .iter()
                    .map(|&(b, t)| (b, new_id[t as usize]))
                    .collect()
            })
            .collect();
        let keyword: Vec<u32> = order.iter().map(|&s| keyword[s]).collect();
        let n = children.len();
        let mut fail = vec![0u32; n];
        let mut output = vec![NONE; n];
        let mut queue: VecDeque<u32> = children[0].iter().map(|&(_, t)| t).collect();
        while let Some(s) = queue.pop_front() {
            for &(b, t) in &children[s as usize] {
                // The failure of t: follow s's failure chain until a state has a b-child.
                let mut f = fail[s as usize];
                let target = loop {
                    if let Some(&(_, x)) = children[f as usize].iter().find(|(c, _)| *c == b) {
                        if x != t {
                            break x;
                        }
                    }
                    if f == 0 {
                        break 0;
                    }
                    f = fail[f as usize];
                };
                fail[t as usize] = target;
                output[t as usize] = if keyword[target as usize] != NONE {
                    target
                } else {
                    output[target as usize]
                };
                queue.push_back(t);
            }
        }
        let lengths = keywords.iter().map(|k| k.len() as u32).collect();
        KeywordAutomaton {
            children,
            fail,
            keyword,
            output,
            lengths,
        }
    }

    /// The next state from `s` on normalized byte `b`.
    pub fn step(&self, mut s: u32, b: u8) -> u32 {
        loop {
            if let Some(&(_, t)) = self.children[s as usize].iter().find(|(c, _)| *c == b) {
                return t;
            }
            if s == 0 {
                return 0;
            }
            s = self.fail[s as usize];
        }
    }

    /// The reference for the generated loop: which keywords occur in `text`,
    /// under the rules of [`crate::cues`], in one pass with normalization on
    /// the fly and output checks delayed by one byte (to see the byte after).
    pub fn scan(&self, text: &[u8]) -> Vec<bool> {
        let mut found = vec![false; self.lengths.len()];
        let mut norm: Vec<u8> = Vec::with_capacity(text.len());
        let mut state = 0u32;
        let mut prev_space = false;
        for &raw in text {
            let c = if cues::is_space(raw) {
                b' '
            } else {
                raw.to_ascii_lowercase()
            };
            if c == b' ' && prev_space {
                continue;
            }
            prev_space = c == b' ';
            self.check(state, &norm, c, &mut found);
            norm.push(c);
            state = self.step(state, c);
        }
        self.check(state, &norm, b' ', &mut found);
        found
    }

    /// Records the keywords ending at the end of `norm` (in `state`) whose
    /// occurrence is bounded by non-word bytes; `after` is the next byte (a
    /// space at the end of the text).
    fn check(&self, state: u32, norm: &[u8], after: u8, found: &mut [bool]) {
        if cues::is_word_byte(after) {
            return;
        }
        let mut s = if self.keyword[state as usize] != NONE {
            state
        } else {
            self.output[state as usize]
        };
        while s != NONE {
            let k = self.keyword[s as usize] as usize;
            let start = norm.len() - self.lengths[k] as usize;
            if start == 0 || !cues::is_word_byte(norm[start - 1]) {
                found[k] = true;
            }
            s = self.output[s as usize];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn reference(keywords: &[String], text: &[u8]) -> Vec<bool> {
        let mut norm = Vec::new();
        cues::normalize_into(text, &mut norm);
        keywords
            .iter()
            .map(|k| {
                let k = k.as_bytes();
                (0..norm.len())
                    .filter(|&i| norm[i..].starts_with(k))
                    .any(|i| cues::at_word_boundaries(&norm, i, i + k.len()))
            })
            .collect()
    }

    #[test]
    fn finds_overlapping_and_bounded_keywords() {
        let kws: Vec<String> = ["step", "step 12", "12", "error", "led to", "a"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let ac = KeywordAutomaton::new(&kws);
        let found = ac.scan(b"At STEP  12: errors, led\tto a");
        assert_eq!(found, vec![true, true, true, false, true, true]);
        assert_eq!(found, reference(&kws, b"At STEP  12: errors, led\tto a"));
    }

    proptest! {
        #[test]
        fn agrees_with_the_definition(
            kws in prop::collection::btree_set("[ab _]{1,4}", 1..8),
            text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b' ', b'\t', b'_', b'.', 0xc3, 0xa9]), 0..40),
        ) {
            let kws: Vec<String> = kws.into_iter().map(|k| cues::normalize_keyword(&k)).filter(|k| !k.is_empty()).collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            prop_assume!(!kws.is_empty());
            let ac = KeywordAutomaton::new(&kws);
            prop_assert_eq!(ac.scan(&text), reference(&kws, &text));
        }
    }
}
