//! Word-hash keyword matching: the scheme for keywords that begin and end
//! with a word byte (almost all keywords people and optimizers write).
//!
//! Such a keyword can only occur where a run of word bytes ends in the
//! normalized text: its last byte is a word byte and the byte after it must
//! not be. And the run that ends there is exactly the keyword's *last word*
//! (its trailing run of word bytes): the byte before that word inside the
//! keyword is a non-word byte, or, for a one-word keyword, the byte before
//! the occurrence must be. So the scan hashes each word of the normalized
//! text as it goes, and where a word ends it looks the hash up in an
//! open-addressing table keyed by the hash of keywords' last words. Each
//! candidate is verified byte for byte against the normalized text written
//! so far (which ends with the word just finished), and its start is
//! checked for a word boundary. Everything needed is already behind the scan
//! position, so one forward pass suffices.
//!
//! Per byte this costs a table-free hash step; per word one probe. Unlike an
//! automaton, the cost does not depend on how the keywords' prefixes are
//! shared. Keywords that begin or end with a non-word byte (`"(error)"`,
//! `"c++"`) are left to the automaton in [`super::keywords`].
//!
//! [`WordTable::scan`] is the reference for the generated loop
//! ([`emit_byte`], [`emit_end`]) and probe function ([`probe_fn`]); the
//! tests check it against the matching rules of [`crate::cues`].

use super::asm::{ma, Asm, Data};
use super::kwscan::Shared;
use crate::cues;
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

/// The hash of an empty word (FNV-1a's offset basis).
pub const HASH_BASIS: u32 = 0x811c_9dc5;
/// FNV-1a's multiplier: one xor and one multiply per byte.
pub const HASH_PRIME: u32 = 0x0100_0193;
/// Spreads a hash over the slots (Fibonacci hashing): FNV's low bits are
/// weak, its high bits after this multiply are not.
pub const SLOT_MIX: u32 = 0x9e37_79b1;

/// The hash after appending byte `b` to a word whose hash is `h`.
pub fn hash_byte(h: u32, b: u8) -> u32 {
    (h ^ u32::from(b)).wrapping_mul(HASH_PRIME)
}

/// The hash of a word.
pub fn hash_word(word: &[u8]) -> u32 {
    word.iter().fold(HASH_BASIS, |h, &b| hash_byte(h, b))
}

/// Whether this scheme can find `keyword` (normalized): it must begin and
/// end with a word byte.
pub fn is_word_bounded(keyword: &[u8]) -> bool {
    matches!((keyword.first(), keyword.last()), (Some(&a), Some(&z))
        if cues::is_word_byte(a) && cues::is_word_byte(z))
}

/// The trailing run of word bytes of a keyword.
pub fn last_word(keyword: &[u8]) -> &[u8] {
    let start = keyword
        .iter()
        .rposition(|&b| !cues::is_word_byte(b))
        .map_or(0, |i| i + 1);
    &keyword[start..]
}

/// One slot of the table: keywords whose last word hashes to `hash` are
/// `members[first..first + count]`; `count == 0` marks an empty slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// The full 32-bit hash of the last word.
    pub hash: u32,
    /// Index of the first member.
    pub first: u32,
    /// Number of members (0: empty slot).
    pub count: u32,
}

/// The open-addressing table of last-word hashes (linear probing, at most
/// half full, so a miss ends after one or two slots on average).
#[derive(Debug, Clone)]
pub struct WordTable {
    /// log2 of the slot count.
    pub bits: u32,
    /// The slots.
    pub slots: Vec<Slot>,
    /// Keyword ids, grouped by the hash of their last word.
    pub members: Vec<u32>,
}

impl WordTable {
    /// Builds the table for the keywords `ids` of `keywords` (normalized,
    /// each [`is_word_bounded`]). Keywords are grouped by the *hash* of their
    /// last word, not the word itself, so each hash has exactly one slot and
    /// a probe can stop at the first slot with its hash; verification sorts
    /// out keywords whose different last words collide.
    pub fn new(keywords: &[String], ids: &[u32]) -> WordTable {
        let mut groups: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for &id in ids {
            let k = keywords[id as usize].as_bytes();
            groups.entry(hash_word(last_word(k))).or_default().push(id);
        }
        let bits = (groups.len() * 2)
            .next_power_of_two()
            .trailing_zeros()
            .max(4);
        let mut slots = vec![Slot::default(); 1 << bits];
        let mut members = Vec::with_capacity(ids.len());
        for (hash, ids) in groups {
            let mut at = slot_of(hash, bits);
            while slots[at].count != 0 {
                at = (at + 1) & (slots.len() - 1);
            }
            slots[at] = Slot {
                hash,
                first: members.len() as u32,
                count: ids.len() as u32,
            };
            members.extend(ids);
        }
        WordTable {
            bits,
            slots,
            members,
        }
    }

    /// The keywords whose last word hashes to `hash` (the probe).
    pub fn candidates(&self, hash: u32) -> &[u32] {
        let mut at = slot_of(hash, self.bits);
        loop {
            let slot = self.slots[at];
            if slot.count == 0 {
                return &[];
            }
            if slot.hash == hash {
                return &self.members[slot.first as usize..(slot.first + slot.count) as usize];
            }
            at = (at + 1) & (self.slots.len() - 1);
        }
    }

    /// The reference for the generated code: marks in `found` the keywords
    /// of this table that occur in `text` under the rules of [`crate::cues`],
    /// in one pass with normalization on the fly, probing where a word ends.
    pub fn scan(&self, keywords: &[String], text: &[u8], found: &mut [bool]) {
        let mut norm: Vec<u8> = Vec::with_capacity(text.len());
        let mut hash = HASH_BASIS;
        let mut in_word = false;
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
            let word = cues::is_word_byte(c);
            if in_word && !word {
                self.probe(keywords, hash, &norm, found);
            }
            hash = if word { hash_byte(hash, c) } else { HASH_BASIS };
            in_word = word;
            norm.push(c);
        }
        if in_word {
            self.probe(keywords, hash, &norm, found);
        }
    }

    /// At the end of a word (the end of `norm`) whose hash is `hash`: marks
    /// the candidates that end here and start at a word boundary.
    fn probe(&self, keywords: &[String], hash: u32, norm: &[u8], found: &mut [bool]) {
        for &k in self.candidates(hash) {
            let kw = keywords[k as usize].as_bytes();
            if let Some(start) = norm.len().checked_sub(kw.len()) {
                if &norm[start..] == kw && (start == 0 || !cues::is_word_byte(norm[start - 1])) {
                    found[k as usize] = true;
                }
            }
        }
    }
}

/// The slot a hash probes first.
pub fn slot_of(hash: u32, bits: u32) -> usize {
    (hash.wrapping_mul(SLOT_MIX) >> (32 - bits)) as usize
}

/// Where the table lives in the module's data.
#[derive(Debug, Clone)]
pub(super) struct WordTables {
    bits: u32,
    /// 8 bytes per slot: the hash, then `first | count << 16`.
    slots: u64,
    /// 2 bytes per member: a keyword id.
    members: u64,
}

impl WordTables {
    /// Lays the table out in `data`; `None` when it does not fit 16-bit
    /// fields (more than 65,535 keywords, far over the checker's limit).
    pub(super) fn put(table: &WordTable, data: &mut Data) -> Option<WordTables> {
        if table.members.len() > u16::MAX as usize {
            return None;
        }
        let mut slots = Vec::with_capacity(table.slots.len() * 8);
        for s in &table.slots {
            slots.extend_from_slice(&s.hash.to_le_bytes());
            slots.extend_from_slice(&(s.first | s.count << 16).to_le_bytes());
        }
        Some(WordTables {
            bits: table.bits,
            slots: data.put(8, &slots),
            members: data.put_w(2, table.members.iter().copied()),
        })
    }
}

/// The scan loop's locals this scheme reads and writes.
pub(super) struct Locals {
    /// The normalized byte.
    pub c: u32,
    /// 1 when `c` is a word byte, else 0.
    pub w: u32,
    /// The normalized length so far (where `c` will be written).
    pub j: u32,
    /// The subject (0 query, 1 task).
    pub subj: u32,
    /// The hash of the current word.
    pub h: u32,
    /// 1 while inside a word.
    pub in_word: u32,
}

/// Per normalized byte, before `c` is appended to the normalized text: a
/// word that ends here is probed; then the hash takes `c` in (or restarts).
/// A select rather than a branch keeps the per-byte path branch-free except
/// at word ends. `h` must start at [`HASH_BASIS`] and `in_word` at 0.
pub(super) fn emit_byte(a: &mut Asm, l: &Locals, probe: u32) {
    a.ops([
        I::LocalGet(l.in_word),
        I::LocalGet(l.w),
        I::I32Eqz,
        I::I32And,
        I::If(BlockType::Empty),
        I::LocalGet(l.h),
        I::LocalGet(l.j),
        I::LocalGet(l.subj),
        I::Call(probe),
        I::End,
    ]);
    a.ops([
        I::LocalGet(l.h),
        I::LocalGet(l.c),
        I::I32Xor,
        I::I32Const(HASH_PRIME as i32),
        I::I32Mul,
        I::I32Const(HASH_BASIS as i32),
        I::LocalGet(l.w),
        I::Select,
        I::LocalSet(l.h),
        I::LocalGet(l.w),
        I::LocalSet(l.in_word),
    ]);
}

/// After the last byte: probes the word the text ends with, if any.
pub(super) fn emit_end(a: &mut Asm, l: &Locals, probe: u32) {
    a.ops([
        I::LocalGet(l.in_word),
        I::If(BlockType::Empty),
        I::LocalGet(l.h),
        I::LocalGet(l.j),
        I::LocalGet(l.subj),
        I::Call(probe),
        I::End,
    ]);
}

/// `probe(hash, j, subject)`: [`WordTable::candidates`] for the word ending
/// at normalized offset `j`, calling `verify(k, j, subject)` on each.
pub(super) fn probe_fn(t: &WordTables, verify: u32) -> Function {
    let (hash, j, subj) = (0, 1, 2);
    let (slot, ent, m, end) = (3, 4, 5, 6);
    let mut a = Asm::new(0);
    a.ops([
        I::LocalGet(hash),
        I::I32Const(SLOT_MIX as i32),
        I::I32Mul,
        I::I32Const(32 - t.bits as i32),
        I::I32ShrU,
        I::LocalSet(slot),
    ]);
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(slot),
        I::I32Const(3),
        I::I32Shl,
        I::I32Load(ma(t.slots + 4, 2)),
        I::LocalTee(ent),
        I::I32Eqz,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
    ]);
    // A slot with another hash: try the next one.
    a.ops([
        I::LocalGet(slot),
        I::I32Const(3),
        I::I32Shl,
        I::I32Load(ma(t.slots, 2)),
        I::LocalGet(hash),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::LocalGet(slot),
        I::I32Const(1),
        I::I32Add,
        I::I32Const((1 << t.bits) - 1),
        I::I32And,
        I::LocalSet(slot),
        I::Br(1),
        I::End,
    ]);
    a.op(I::End);
    // The slot of this hash: verify each member.
    a.ops([
        I::LocalGet(ent),
        I::I32Const(0xffff),
        I::I32And,
        I::LocalSet(m),
        I::LocalGet(m),
        I::LocalGet(ent),
        I::I32Const(16),
        I::I32ShrU,
        I::I32Add,
        I::LocalSet(end),
    ]);
    a.counted_loop(m, I::LocalGet(end), |a| {
        a.op(I::LocalGet(m));
        a.load_w(t.members, 2);
        a.ops([I::LocalGet(j), I::LocalGet(subj), I::Call(verify)]);
    });
    a.finish(vec![(4, ValType::I32)])
}

/// `verify(k, j, subject)`: whether keyword `k` ends at normalized offset
/// `j` (its bytes are the last ones written) with a word boundary before
/// it; if so, `found(k, subject)`. Compared from the end, where a wrong
/// candidate usually differs first.
pub(super) fn verify_fn(s: &Shared, found: u32) -> Function {
    let (k, j, subj) = (0, 1, 2);
    let (len, base, off, i) = (3, 4, 5, 6);
    let mut a = Asm::new(0);
    a.op(I::LocalGet(k));
    a.load_w(s.kwlen, 2);
    a.ops([
        I::LocalTee(len),
        I::LocalGet(j),
        I::I32GtU,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
        I::LocalGet(j),
        I::LocalGet(len),
        I::I32Sub,
        I::LocalSet(base),
        I::LocalGet(k),
    ]);
    a.load_w(s.kwoff, 4);
    a.ops([I::LocalSet(off), I::LocalGet(len), I::LocalSet(i)]);
    // Eight bytes at a time while they last, then byte by byte.
    a.op(I::Block(BlockType::Empty));
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(i),
        I::I32Const(8),
        I::I32LtU,
        I::BrIf(1),
        I::LocalGet(i),
        I::I32Const(8),
        I::I32Sub,
        I::LocalSet(i),
        I::LocalGet(base),
        I::LocalGet(i),
        I::I32Add,
        I::I64Load(ma(s.nbuf, 0)),
        I::LocalGet(off),
        I::LocalGet(i),
        I::I32Add,
        I::I64Load(ma(s.kwbytes, 0)),
        I::I64Ne,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
        I::Br(0),
        I::End,
        I::End,
    ]);
    a.op(I::Block(BlockType::Empty));
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(i),
        I::I32Eqz,
        I::BrIf(1),
        I::LocalGet(i),
        I::I32Const(1),
        I::I32Sub,
        I::LocalSet(i),
        I::LocalGet(base),
        I::LocalGet(i),
        I::I32Add,
        I::I32Load8U(ma(s.nbuf, 0)),
        I::LocalGet(off),
        I::LocalGet(i),
        I::I32Add,
        I::I32Load8U(ma(s.kwbytes, 0)),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
        I::Br(0),
        I::End,
        I::End,
    ]);
    // Equal: is the byte before a word byte? (At base 0 there is none; the
    // load at nbuf - 1 is harmless and its result discarded by the `and`.)
    a.ops([
        I::LocalGet(base),
        I::I32Const(0),
        I::I32Ne,
        I::LocalGet(base),
        I::I32Load8U(ma(s.nbuf - 1, 0)),
        I::I32Load8U(ma(s.word, 0)),
        I::I32And,
        I::If(BlockType::Empty),
        I::Return,
        I::End,
        I::LocalGet(k),
        I::LocalGet(subj),
        I::Call(found),
    ]);
    a.finish(vec![(4, ValType::I32)])
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

    fn scan(keywords: &[String], text: &[u8]) -> Vec<bool> {
        let ids: Vec<u32> = (0..keywords.len() as u32).collect();
        let mut found = vec![false; keywords.len()];
        WordTable::new(keywords, &ids).scan(keywords, text, &mut found);
        found
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn bounded_keywords_and_last_words() {
        assert!(is_word_bounded(b"led to"));
        assert!(is_word_bounded("café".as_bytes()));
        assert!(!is_word_bounded(b"(error)"));
        assert!(!is_word_bounded(b"c++"));
        assert_eq!(last_word(b"led to"), b"to");
        assert_eq!(last_word(b"12.5"), b"5");
        assert_eq!(last_word(b"step"), b"step");
    }

    #[test]
    fn finds_phrases_overlaps_and_boundaries() {
        let kws = strings(&[
            "step", "step 12", "12", "error", "led to", "a", "to", "x-ray",
        ]);
        let text = b"At STEP  12: errors, led\tto a X-Ray";
        assert_eq!(scan(&kws, text), reference(&kws, text));
        assert_eq!(
            scan(&kws, text),
            vec![true, true, true, false, true, true, true, true]
        );
        // "caf" is not a word of "café"; the whole word is.
        let kws = strings(&["caf", "café", "é"]);
        assert_eq!(scan(&kws, "un café".as_bytes()), vec![false, true, false]);
    }

    #[test]
    fn words_with_the_same_hash_share_a_slot_and_are_told_apart() {
        // A real FNV-1a collision (found by enumerating five-letter words).
        assert_eq!(hash_word(b"glbvs"), hash_word(b"yacxa"));
        let kws = strings(&["glbvs", "yacxa", "go glbvs", "go yacxa", "other"]);
        let ids: Vec<u32> = (0..kws.len() as u32).collect();
        let table = WordTable::new(&kws, &ids);
        assert_eq!(table.candidates(hash_word(b"yacxa")), &[0, 1, 2, 3]);
        for text in [
            "glbvs",
            "yacxa",
            "go yacxa",
            "ego glbvs",
            "glbvsyacxa",
            "x go glbvs",
        ] {
            assert_eq!(
                scan(&kws, text.as_bytes()),
                reference(&kws, text.as_bytes()),
                "{text}"
            );
        }
        // Many keywords: every one is found alone, and nothing else.
        let words: Vec<String> = (0..3000).map(|i| format!("w{i}")).collect();
        let ids: Vec<u32> = (0..words.len() as u32).collect();
        let table = WordTable::new(&words, &ids);
        for (i, w) in words.iter().enumerate().step_by(97) {
            let mut found = vec![false; words.len()];
            table.scan(&words, format!("x {w} y").as_bytes(), &mut found);
            let hits: Vec<usize> = (0..found.len()).filter(|&k| found[k]).collect();
            assert_eq!(hits, vec![i]);
        }
    }

    proptest! {
        #[test]
        fn agrees_with_the_definition(
            kws in prop::collection::btree_set("[ab_é.]{1,3}( [ab]{1,2})?", 1..8),
            text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b' ', b'\t', b'_', b'.', 0xc3, 0xa9]), 0..40),
        ) {
            let kws: Vec<String> = kws
                .into_iter()
                .map(|k| cues::normalize_keyword(&k))
                .filter(|k| is_word_bounded(k.as_bytes()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            prop_assume!(!kws.is_empty());
            prop_assert_eq!(scan(&kws, &text), reference(&kws, &text));
        }
    }
}
