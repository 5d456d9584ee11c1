//! Dense sets of relation positions, one bit each, and the scans G's
//! retrieval makes over them: upward and downward from a position, a word
//! (64 positions) at a time. A scan reads only the words it passes, so
//! finding the few members nearest a step costs a few words where the set
//! is dense, and at most one pass over `len / 64` words where it is not.

/// A set of positions below `len`.
#[derive(Debug, Clone)]
pub(super) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set of positions below `len`.
    pub(super) fn new(len: usize) -> Bits {
        Bits {
            words: vec![0; len.div_ceil(64)],
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

    pub(super) fn insert(&mut self, p: u32) {
        if let Some(w) = self.words.get_mut(p as usize / 64) {
            *w |= 1 << (p % 64);
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

/// A set read a word at a time (`word(i)` holds positions `64 i ..`), over
/// `words` words: a [`Bits`] or a combination of several.
pub(super) type View<'a> = (usize, &'a dyn Fn(usize) -> u64);

/// The members of `view` from position `from` up, increasing.
pub(super) fn up<'a>((words, word): View<'a>, from: usize) -> impl Iterator<Item = u32> + 'a {
    let mut i = from / 64;
    let mut cur = if i < words {
        word(i) & (!0u64 << (from % 64))
    } else {
        0
    };
    std::iter::from_fn(move || {
        while cur == 0 {
            i += 1;
            if i >= words {
                return None;
            }
            cur = word(i);
        }
        let b = cur.trailing_zeros();
        cur &= cur - 1;
        u32::try_from(i * 64 + b as usize).ok()
    })
}

/// The members of `view` below position `below`, decreasing.
pub(super) fn down<'a>((words, word): View<'a>, below: usize) -> impl Iterator<Item = u32> + 'a {
    let below = below.min(words * 64);
    let mut i = below.saturating_sub(1) / 64;
    let mut cur = if below == 0 {
        0
    } else {
        let k = (below - 1) % 64;
        word(i) & (u64::MAX >> (63 - k))
    };
    let mut done = below == 0;
    std::iter::from_fn(move || {
        while cur == 0 {
            if done || i == 0 {
                done = true;
                return None;
            }
            i -= 1;
            cur = word(i);
        }
        let b = 63 - cur.leading_zeros();
        cur &= !(1u64 << b);
        u32::try_from(i * 64 + b as usize).ok()
    })
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
            let word = |i: usize| b.word(i);
            let view: View<'_> = (b.words(), &word);
            let want_up: Vec<u32> = members.iter().copied().filter(|p| *p as usize >= at).collect();
            let want_down: Vec<u32> = members.iter().rev().copied().filter(|p| (*p as usize) < at).collect();
            prop_assert_eq!(up(view, at).collect::<Vec<_>>(), want_up);
            prop_assert_eq!(down(view, at).collect::<Vec<_>>(), want_down);
            for p in 0..len as u32 {
                prop_assert_eq!(b.has(p), members.contains(&p));
            }
        }
    }
}
