//! Word-hash keyword matching: the scheme for keywords of one to
//! [`MAX_DEPTH`] words that begin and end with a word byte (almost all
//! keywords people and optimizers write).
//!
//! Call the maximal runs of word bytes *words*. Such a keyword can only
//! occur where a word of the normalized text ends: its last byte is a word
//! byte and the byte after it must not be. More: inside an occurrence the
//! text's words are the keyword's words (the keyword's non-word bytes are the
//! text's, and the byte before the occurrence is not a word byte), so a
//! keyword of `m` words occurs exactly where the text from the start of its
//! `m`-th last word to the end of the word just finished *is* the keyword,
//! and the byte before is not a word byte.
//!
//! So the scan keeps, for `m = 1..depth` (`depth` the most words a keyword
//! in the table has), the hash of the text from the start of the `m`-th last
//! word, stepping each with every byte; where a word ends it looks each up
//! in an open-addressing table of keyword hashes. A hit is verified byte for
//! byte against the normalized text written so far and checked for a word
//! boundary before it; everything needed is behind the scan position, so one
//! forward pass suffices. Hashing whole phrases (rather than, say, their
//! last word) matters for real vocabularies: "the" ends dozens of English
//! bigrams, which would all need verifying at every "the".
//!
//! Per byte this costs `depth` multiplies and no table access; per word
//! `depth` probes, most of them ending at an empty slot. Unlike an
//! automaton's, the cost does not depend on how the keywords' prefixes are
//! shared, and it stays linear in the text: each word is in at most `depth`
//! hashed spans, and a slot holds at most [`MAX_GROUP`] keywords (only
//! keywords whose hashes collide share one). Keywords outside the scheme —
//! those that begin or end with a non-word byte (`"(error)"`, `"c++"`), have
//! more than [`MAX_DEPTH`] words, or would overfill a slot — are left to the
//! automaton in [`super::keywords`].
//!
//! [`WordTable::scan`] is the reference for the generated loop
//! (`emit_byte`, `emit_end`) and lookup (`emit_lookup`); the tests
//! check it against the matching rules of [`crate::cues`].

mod emit;
pub(super) use emit::{
    emit_byte, emit_end, emit_lookup, emit_start, DeadWordBuffers, Locals, LookupLocals,
    VerifyLocals,
};

use super::asm::{ma, Asm, Data};
use super::kwscan::Shared;
use crate::cues;
use wasm_encoder::{BlockType, Instruction as I};

/// The hash of empty text (FNV-1a's offset basis).
pub const HASH_BASIS: u32 = 0x811c_9dc5;
/// FNV-1a's multiplier: one xor and one multiply per byte.
pub const HASH_PRIME: u32 = 0x0100_0193;
/// Spreads a hash over the slots (Fibonacci hashing): FNV's low bits are
/// weak, its high bits after this multiply are not.
pub const SLOT_MIX: u32 = 0x9e37_79b1;
/// The most words a keyword in the table has (the scan keeps one hash per
/// word of depth, each costing a multiply per byte).
pub const MAX_DEPTH: u32 = 3;
/// The most keywords one slot holds: keywords share a slot only when their
/// 32-bit hashes collide, and the bound keeps the verification work per
/// word constant whatever keywords a policy has.
pub const MAX_GROUP: usize = 4;

/// The hash after appending byte `b` to text whose hash is `h`.
pub fn hash_byte(h: u32, b: u8) -> u32 {
    (h ^ u32::from(b)).wrapping_mul(HASH_PRIME)
}

/// The hash of some text.
pub fn hash_word(text: &[u8]) -> u32 {
    text.iter().fold(HASH_BASIS, |h, &b| hash_byte(h, b))
}

/// Whether `keyword` (normalized) begins and ends with a word byte.
pub fn is_word_bounded(keyword: &[u8]) -> bool {
    matches!((keyword.first(), keyword.last()), (Some(&a), Some(&z))
        if cues::is_word_byte(a) && cues::is_word_byte(z))
}

/// Whether this scheme can take `keyword` (normalized): word-bounded, of at
/// most [`MAX_DEPTH`] words.
pub fn fits(keyword: &[u8]) -> bool {
    is_word_bounded(keyword) && word_count(keyword) <= MAX_DEPTH
}

/// The number of words (maximal runs of word bytes) in `text`.
pub fn word_count(text: &[u8]) -> u32 {
    let mut n = 0;
    let mut prev = false;
    for &b in text {
        let w = cues::is_word_byte(b);
        n += u32::from(w && !prev);
        prev = w;
    }
    n
}

/// One slot of the table: keywords whose hash is `hash` are
/// `members[first..first + count]`; `count == 0` marks an empty slot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Slot {
    /// The full 32-bit hash of the keywords.
    pub hash: u32,
    /// Index of the first member.
    pub first: u32,
    /// Number of members (0: empty slot).
    pub count: u32,
}

/// The open-addressing table of keyword hashes (linear probing, at most a
/// quarter full, so most probes of words that are no keyword end at once on
/// an empty slot).
#[derive(Debug, Clone)]
pub struct WordTable {
    /// How many of the last words the scan hashes (1 to [`MAX_DEPTH`]).
    pub depth: u32,
    /// log2 of the slot count.
    pub bits: u32,
    /// The slots.
    pub slots: Vec<Slot>,
    /// Keyword ids, grouped by hash.
    pub members: Vec<u32>,
    /// Per normalized byte: whether a keyword of the table begins with it.
    pub first: [bool; 256],
    /// Whether the scan passes over *dead* words (see [`WordTable::scan`]);
    /// only when nothing else needs every byte stepped (no automaton).
    pub skip_dead_words: bool,
}

impl WordTable {
    /// Builds the table for the keywords `ids` of `keywords` (normalized,
    /// each [`fits`]). Returns it with the keywords it leaves out: those
    /// beyond [`MAX_GROUP`] with one hash (in practice none; it takes a
    /// many-way 32-bit collision).
    pub fn new(keywords: &[String], ids: &[u32]) -> (WordTable, Vec<u32>) {
        let mut groups: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        let mut left_out = Vec::new();
        for &id in ids {
            debug_assert!(fits(keywords[id as usize].as_bytes()));
            let group = groups
                .entry(hash_word(keywords[id as usize].as_bytes()))
                .or_default();
            if group.len() < MAX_GROUP {
                group.push(id);
            } else {
                left_out.push(id);
            }
        }
        let depth = groups
            .values()
            .flatten()
            .map(|&id| word_count(keywords[id as usize].as_bytes()))
            .max()
            .unwrap_or(1)
            .clamp(1, MAX_DEPTH);
        let bits = (groups.len() * 4)
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
        let mut first = [false; 256];
        for &id in &members {
            if let Some(&b) = keywords[id as usize].as_bytes().first() {
                first[b as usize] = true;
            }
        }
        let table = WordTable {
            depth,
            bits,
            slots,
            members,
            first,
            skip_dead_words: true,
        };
        (table, left_out)
    }

    /// The keywords whose hash is `hash` (the probe).
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
    ///
    /// A keyword's first word begins with one of its table's [`first`]
    /// bytes, so only the spans of `depth` words that start at such a word
    /// can match. `live` counts down the words such a span still covers; a
    /// word where it reaches 0 is *dead*: no span that can match contains
    /// it. Its bytes are passed over: not hashed, its end not probed, and
    /// not even appended to the normalized text. That text then lacks the
    /// dead words, which is harmless:
    /// - an occurrence of a keyword is made of live words and the non-word
    ///   bytes around them, all kept, in order, so verifying it succeeds;
    /// - a verified candidate is an occurrence: a window of the kept text
    ///   that runs across a dropped word starts at least `depth` words
    ///   before it (a word is dead only `depth` words after the last word
    ///   that could begin a keyword), so it holds more words than any
    ///   keyword of the table and cannot equal one.
    ///
    /// The hashes of spans through a dead word are wrong, which is also
    /// harmless: such a span cannot match, and a probe only proposes
    /// candidates. For a few keywords most words of a text are dead.
    ///
    /// Where a word ends and the next word is dead unless it begins with a
    /// first byte, the scan goes further (the generated scan only when the
    /// policy does not count words, which needs every byte): it passes over
    /// every byte up to the next word that does, keeping
    /// only the byte before that word (its left boundary). The bytes
    /// between two dead words belong to no occurrence, and the argument
    /// above holds for windows across the dropped region as for those
    /// across a dropped word.
    ///
    /// [`first`]: WordTable::first
    pub fn scan(&self, keywords: &[String], text: &[u8], found: &mut [bool]) {
        let depth = self.depth as usize;
        let mut norm: Vec<u8> = Vec::with_capacity(text.len());
        // hashes[m]: the text from the start of the (m + 1)-th last word.
        // Before a text has m + 1 words the value is meaningless, which is
        // harmless: a probe only proposes candidates.
        let mut hashes = [HASH_BASIS; MAX_DEPTH as usize];
        let mut in_word = false;
        let mut prev_space = false;
        let mut live = 0u32;
        let mut i = 0;
        while let Some(&raw) = text.get(i) {
            i += 1;
            let c = cues::normalize_byte(raw);
            if c == b' ' && prev_space {
                continue;
            }
            prev_space = c == b' ';
            let word = cues::is_word_byte(c);
            if word && !in_word {
                hashes.copy_within(0..depth - 1, 1);
                hashes[0] = HASH_BASIS;
                live = if self.first[c as usize] {
                    self.depth
                } else {
                    live.saturating_sub(1)
                };
            }
            if in_word && !word {
                if live > 0 || !self.skip_dead_words {
                    for &h in &hashes[..depth] {
                        self.probe(keywords, h, &norm, found);
                    }
                }
                if self.skip_dead_words && live <= 1 {
                    // To the next word that begins with a first byte; the
                    // byte before it is kept.
                    let mut before = c;
                    while let Some(&b) = text.get(i) {
                        let n = cues::normalize_byte(b);
                        if self.first[n as usize] && !cues::is_word_byte(before) {
                            break;
                        }
                        before = n;
                        i += 1;
                    }
                    norm.push(before);
                    in_word = false;
                    prev_space = before == b' ';
                    live = 0;
                    continue;
                }
            }
            if word && live == 0 && self.skip_dead_words {
                in_word = true;
                continue;
            }
            for h in &mut hashes[..depth] {
                *h = hash_byte(*h, c);
            }
            in_word = word;
            norm.push(c);
        }
        if in_word && (live > 0 || !self.skip_dead_words) {
            for &h in &hashes[..depth] {
                self.probe(keywords, h, &norm, found);
            }
        }
    }

    /// At the end of a word (the end of `norm`), for one of the hashes:
    /// marks the candidates that end here and start at a word boundary.
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
    depth: u32,
    bits: u32,
    /// 8 bytes per slot: the hash, then `first | count << 16`.
    slots: u64,
    /// 2 bytes per member: a keyword id.
    members: u64,
    /// [`WordTable::skip_dead_words`].
    skip_dead_words: bool,
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
            depth: table.depth,
            bits: table.bits,
            slots: data.put(8, &slots),
            members: data.put_w(2, table.members.iter().copied()),
            skip_dead_words: table.skip_dead_words,
        })
    }
}

#[cfg(test)]
mod tests;
