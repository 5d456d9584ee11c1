//! Sets of relation positions, one bit each, and the scans G's retrieval
//! makes over them. [`Bits`] is dense (`len / 64` words): the long sources'
//! sets, kept by the graph across questions ([`BitSets`]), and the matched
//! relations. [`Sparse`] keeps only its nonzero words: the classes and the
//! sets derived from them per question, scanned upward and downward from a
//! position without reading the empty stretches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A set of positions below `len`.
#[derive(Debug, Clone)]
pub(super) struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    /// The empty set of positions below `len`.
    pub(super) fn new(len: usize) -> Bits {
        Bits {
            words: vec![0; len.div_ceil(64)],
            len,
        }
    }

    /// The set of `positions` (each below `len`).
    pub(super) fn of(len: usize, positions: &[u32]) -> Bits {
        let mut b = Bits::new(len);
        for &p in positions {
            b.insert(p);
        }
        b
    }

    /// This set of positions below `len` (not less than its own), with the
    /// members of `sorted` from its old `len` on added.
    fn grown(&self, len: usize, sorted: &[u32]) -> Bits {
        let mut b = self.clone();
        b.words.resize(len.div_ceil(64), 0);
        let from = sorted.partition_point(|&p| (p as usize) < self.len);
        b.len = len.max(self.len);
        for &p in &sorted[from..] {
            b.insert(p);
        }
        b
    }

    pub(super) fn insert(&mut self, p: u32) {
        if (p as usize) < self.len {
            if let Some(w) = self.words.get_mut(p as usize / 64) {
                *w |= 1 << (p % 64);
            }
        }
    }

    pub(super) fn has(&self, p: u32) -> bool {
        self.word(p as usize / 64) >> (p % 64) & 1 == 1
    }

    /// Positions `64 i .. 64 i + 63` (0 past the end).
    pub(super) fn word(&self, i: usize) -> u64 {
        self.words.get(i).copied().unwrap_or(0)
    }

    pub(super) fn set_word(&mut self, i: usize, w: u64) {
        if let Some(x) = self.words.get_mut(i) {
            *x = w;
        }
    }

    /// Words in the set's range.
    pub(super) fn words(&self) -> usize {
        self.words.len()
    }

    /// Members.
    pub(super) fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// A source of matches: a term's postings or a node's relations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Source {
    Term(u64),
    Node(usize),
}

/// How many long sources' sets a graph keeps; past it, it forgets them
/// all and starts again (a bound on memory: `len / 8` bytes each).
const KEPT: usize = 256;

/// The long sources' sets, built on a question's first use and kept
/// for the next questions. A graph only grows at the end (a forget or a
/// correction builds a new one), so a set built over fewer relations is
/// still right for them, and is grown by the source's newer positions.
#[derive(Debug, Default)]
pub(super) struct BitSets(Mutex<HashMap<Source, Arc<Bits>>>);

impl Clone for BitSets {
    fn clone(&self) -> BitSets {
        let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        BitSets(Mutex::new(map.clone()))
    }
}

impl BitSets {
    /// `source`'s set over `len` positions; `sorted` is its list.
    pub(super) fn get(&self, source: Source, len: usize, sorted: &[u32]) -> Arc<Bits> {
        let kept = {
            let map = self.0.lock().unwrap_or_else(|p| p.into_inner());
            map.get(&source).cloned()
        };
        let bits = match kept {
            Some(b) if b.len == len => return b,
            Some(b) if b.len < len => Arc::new(b.grown(len, sorted)),
            _ => Arc::new(Bits::of(len, sorted)),
        };
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= KEPT {
            map.clear();
        }
        map.insert(source, bits.clone());
        bits
    }
}

/// A set kept as its nonzero words only (with their indices), for the
/// classes and the sets derived from them per question: a scan skips
/// the empty stretches without reading them.
#[derive(Debug, Clone, Default)]
pub(super) struct Sparse {
    at: Vec<u32>,
    words: Vec<u64>,
}

impl Sparse {
    /// The set whose word `i` is `word(i)`, for `i` in `range`.
    pub(super) fn of(range: impl Iterator<Item = usize>, word: impl Fn(usize) -> u64) -> Sparse {
        let mut s = Sparse::default();
        for i in range {
            s.push(i, word(i));
        }
        s
    }

    /// The set of `positions`, increasing.
    pub(super) fn of_sorted(positions: impl Iterator<Item = u32>) -> Sparse {
        let mut s = Sparse::default();
        let mut word = None;
        for p in positions {
            let i = p as usize / 64;
            match word {
                Some((at, ref mut w)) if at == i => *w |= 1u64 << (p % 64),
                _ => {
                    if let Some((at, w)) = word {
                        s.push(at, w);
                    }
                    word = Some((i, 1u64 << (p % 64)));
                }
            }
        }
        if let Some((at, w)) = word {
            s.push(at, w);
        }
        s
    }

    /// Adds word `i` (past every word added so far) if it is not 0.
    pub(super) fn push(&mut self, i: usize, w: u64) {
        if w != 0 {
            if let Ok(i) = u32::try_from(i) {
                self.at.push(i);
                self.words.push(w);
            }
        }
    }

    /// The nonzero words: (index, word), increasing.
    pub(super) fn nonzero(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.at
            .iter()
            .map(|&i| i as usize)
            .zip(self.words.iter().copied())
    }

    pub(super) fn has(&self, p: u32) -> bool {
        let i = p / 64;
        self.at
            .binary_search(&i)
            .is_ok_and(|k| self.words[k] >> (p % 64) & 1 == 1)
    }

    /// The least member.
    pub(super) fn first(&self) -> Option<u32> {
        self.up(0).next()
    }

    /// The members from position `from` up, increasing.
    pub(super) fn up(&self, from: usize) -> impl Iterator<Item = u32> + '_ {
        let first = from / 64;
        let mut k = self.at.partition_point(|&i| (i as usize) < first);
        let mut cur = match self.at.get(k) {
            Some(&i) if i as usize == first => self.words[k] & (u64::MAX << (from % 64)),
            Some(_) => self.words[k],
            None => 0,
        };
        std::iter::from_fn(move || {
            while cur == 0 {
                k += 1;
                cur = *self.words.get(k)?;
            }
            let b = cur.trailing_zeros();
            cur &= cur - 1;
            u32::try_from(self.at[k] as usize * 64 + b as usize).ok()
        })
    }

    /// The members below position `below`, decreasing.
    pub(super) fn down(&self, below: usize) -> impl Iterator<Item = u32> + '_ {
        // `k` is one past the word being read.
        let last = below.checked_sub(1).map(|p| p / 64);
        let mut k = last.map_or(0, |l| self.at.partition_point(|&i| i as usize <= l));
        let mut cur = match (k.checked_sub(1), last) {
            (Some(j), Some(l)) if self.at[j] as usize == l => {
                self.words[j] & (u64::MAX >> (63 - (below - 1) % 64))
            }
            (Some(j), Some(_)) => self.words[j],
            _ => 0,
        };
        std::iter::from_fn(move || {
            while cur == 0 {
                if k <= 1 {
                    k = 0;
                    return None;
                }
                k -= 1;
                cur = self.words[k - 1];
            }
            let b = 63 - cur.leading_zeros();
            cur &= !(1u64 << b);
            u32::try_from(self.at[k - 1] as usize * 64 + b as usize).ok()
        })
    }
}

/// Every matched relation (`listed` and every heavy source's), and the
/// classes of the matched relations that are not listed: one bit set per
/// combination of the `heavy` sources that holds any of them. Each word is
/// split source by source, only where it has members left.
pub(super) fn split(listed: &Bits, heavy: &[&Bits]) -> (Bits, Vec<Sparse>) {
    let mut matched = listed.clone();
    let mut classes: Vec<(u64, Sparse)> = Vec::new();
    let mut stack = Vec::new();
    for w in 0..listed.words() {
        let any = heavy.iter().fold(0, |u, b| u | b.word(w));
        matched.set_word(w, listed.word(w) | any);
        stack.push((any & !listed.word(w), 0, 0u64));
        while let Some((u, k, sig)) = stack.pop() {
            if u == 0 {
                continue;
            }
            let Some(source) = heavy.get(k) else {
                match classes.iter_mut().find(|(s, _)| *s == sig) {
                    Some((_, c)) => c.push(w, u),
                    None => {
                        let mut c = Sparse::default();
                        c.push(w, u);
                        classes.push((sig, c));
                    }
                }
                continue;
            };
            let s = source.word(w);
            stack.push((u & s, k + 1, sig | 1 << k));
            stack.push((u & !s, k + 1, sig));
        }
    }
    (matched, classes.into_iter().map(|(_, c)| c).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Both scans list exactly the members on their side, in order.
        #[test]
        fn scans_list_the_members_in_order(
            members in prop::collection::btree_set(0..300u32, 0..80),
            len in 0..300usize,
            at in 0..320usize,
        ) {
            let members: Vec<u32> = members.into_iter().filter(|p| (*p as usize) < len).collect();
            let b = Bits::of(len, &members);
            prop_assert_eq!(b.count(), members.len());
            let s = Sparse::of(0..b.words(), |i| b.word(i));
            let listed = Sparse::of_sorted(members.iter().copied());
            prop_assert_eq!(listed.nonzero().collect::<Vec<_>>(), s.nonzero().collect::<Vec<_>>());
            let want_up: Vec<u32> = members.iter().copied().filter(|p| *p as usize >= at).collect();
            let want_down: Vec<u32> = members.iter().rev().copied().filter(|p| (*p as usize) < at).collect();
            prop_assert_eq!(s.up(at).collect::<Vec<_>>(), want_up);
            prop_assert_eq!(s.down(at).collect::<Vec<_>>(), want_down);
            prop_assert_eq!(s.first(), members.first().copied());
            for p in 0..len as u32 {
                prop_assert_eq!(b.has(p), members.contains(&p));
                prop_assert_eq!(s.has(p), members.contains(&p));
            }
        }
    }
}
