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

/// The scan loop's locals this scheme reads and writes.
pub(super) struct Locals {
    /// The normalized byte.
    pub c: u32,
    /// The byte's class (`kwscan::WORD` set for a word byte).
    pub cls: u32,
    /// The previous normalized byte's class.
    pub prev: u32,
    /// The hashes from the start of the last, second last and third last
    /// word ([`MAX_DEPTH`] locals, of which the table's depth are used).
    pub h: [u32; MAX_DEPTH as usize],
    /// Words a span that may match still covers ([`WordTable::scan`]).
    pub live: u32,
    /// The scan position and the end of the text (not of the chunk: a
    /// dead word records no event, and must be passed over whole).
    pub ptr: u32,
    pub end: u32,
    /// The normalized length.
    pub j: u32,
}

/// What passing over dead words and regions needs: raw byte to class
/// (with [`super::kwscan::FIRST`]), the normalized text, and whether to
/// pass over dead regions too (see [`WordTable::scan`]; the code generator
/// does not when the policy counts words).
pub(super) struct DeadWordBuffers {
    pub classes: u64,
    pub nbuf: u64,
    pub regions: bool,
}

/// Before the loop: every hash starts at the basis, no span is live.
pub(super) fn emit_start(a: &mut Asm, t: &WordTables, l: &Locals) {
    for &h in &l.h[..t.depth as usize] {
        a.ops([I::I32Const(HASH_BASIS as i32), I::LocalSet(h)]);
    }
    a.ops([I::I32Const(0), I::LocalSet(l.live)]);
}

/// Per normalized byte, before `c` is appended to the normalized text, as
/// in [`WordTable::scan`]: where a word starts the hashes shift and `live`
/// counts down; where one ends each is probed; then every hash takes `c` in.
/// One branch per byte, taken twice per word. `record` records an event for
/// `probe` with the hash on the stack.
///
/// A dead word (when the table skips them) is consumed here to its last
/// byte by a loop that only looks for the word's end, and the code
/// then branches to the next byte; so this must be emitted in the body of
/// the scan loop, directly in its body (not inside a block of the
/// caller's); the scan loop must stop at the end of its chunk even when
/// this took it past. The first-byte flag of the byte's class
/// ([`super::kwscan::FIRST`]) tells a word that may begin a keyword.
pub(super) fn emit_byte(
    a: &mut Asm,
    t: &WordTables,
    l: &Locals,
    b: &DeadWordBuffers,
    record: &dyn Fn(&mut Asm, u32),
) {
    let depth = t.depth as usize;
    let word = super::kwscan::WORD as i32;
    a.ops([
        I::LocalGet(l.cls),
        I::LocalGet(l.prev),
        I::I32Xor,
        I::I32Const(word),
        I::I32And,
        I::If(BlockType::Empty),
        I::LocalGet(l.cls),
        I::I32Const(word),
        I::I32And,
        I::If(BlockType::Empty),
    ]);
    for m in (1..depth).rev() {
        a.ops([I::LocalGet(l.h[m - 1]), I::LocalSet(l.h[m])]);
    }
    a.ops([I::I32Const(HASH_BASIS as i32), I::LocalSet(l.h[0])]);
    if t.skip_dead_words {
        // live = (cls & FIRST) ? depth : live - (live != 0)
        a.ops([
            I::I32Const(t.depth as i32),
            I::LocalGet(l.live),
            I::LocalGet(l.live),
            I::I32Const(0),
            I::I32Ne,
            I::I32Sub,
            I::LocalGet(l.cls),
            I::I32Const(super::kwscan::FIRST as i32),
            I::I32And,
            I::Select,
            I::LocalTee(l.live),
            I::I32Eqz,
            I::If(BlockType::Empty),
        ]);
        emit_dead_word(a, l, b);
        // Out of this `if`, the word start's and the boundary's, to the
        // scan loop: its next byte.
        a.ops([I::Br(3), I::End]);
    }
    a.op(I::Else);
    if t.skip_dead_words {
        a.ops([I::LocalGet(l.live), I::If(BlockType::Empty)]);
    }
    for &h in &l.h[..depth] {
        emit_probe(a, t, h, record);
    }
    if t.skip_dead_words {
        a.op(I::End);
        if b.regions {
            a.ops([
                I::LocalGet(l.live),
                I::I32Const(2),
                I::I32LtU,
                I::If(BlockType::Empty),
            ]);
            emit_dead_region(a, l, b);
            a.ops([I::Br(3), I::End]);
        }
    }
    a.ops([I::End, I::End]);
    for &h in &l.h[..depth] {
        a.ops([
            I::LocalGet(h),
            I::LocalGet(l.c),
            I::I32Xor,
            I::I32Const(HASH_PRIME as i32),
            I::I32Mul,
            I::LocalSet(h),
        ]);
    }
}

/// At the head of a `block` + `loop` pair: leaves the block at the end of
/// the text, else pushes the class of the byte at `ptr` (not consumed).
fn emit_next_class(a: &mut Asm, l: &Locals, b: &DeadWordBuffers) {
    a.ops([
        I::LocalGet(l.ptr),
        I::LocalGet(l.end),
        I::I32GeU,
        I::BrIf(1),
        I::LocalGet(l.ptr),
        I::I32Load8U(ma(0, 0)),
        I::I32Const(1),
        I::I32Shl,
        I::I32Load16U(ma(b.classes, 1)),
    ]);
}

/// A dead word from its first byte (`cls`, already read): passes over it
/// and every following word byte of the chunk (see [`WordTable::scan`]).
fn emit_dead_word(a: &mut Asm, l: &Locals, b: &DeadWordBuffers) {
    a.ops([I::LocalGet(l.cls), I::LocalSet(l.prev)]);
    a.op(I::Block(BlockType::Empty)); // $end
    a.op(I::Loop(BlockType::Empty)); // $byte
    emit_next_class(a, l, b);
    a.ops([
        I::I32Const(super::kwscan::WORD as i32),
        I::I32And,
        I::I32Eqz,
        I::BrIf(1),
    ]);
    a.incr(l.ptr);
    a.ops([I::Br(0), I::End, I::End]);
}

/// A dead region from the non-word byte that ended the last live word
/// (`cls`, already read): passes over every byte up to the next word that
/// begins with a first byte (or the end of the text), and appends the byte
/// before it. `cls` holds the class of the byte before the one looked at,
/// `c` the class looked at.
fn emit_dead_region(a: &mut Asm, l: &Locals, b: &DeadWordBuffers) {
    let (before, next) = (l.cls, l.c);
    a.op(I::Block(BlockType::Empty)); // $stop
    a.op(I::Loop(BlockType::Empty)); // $byte
    emit_next_class(a, l, b);
    a.ops([
        I::LocalTee(next),
        I::I32Const(super::kwscan::FIRST as i32),
        I::I32And,
        I::I32Const(0),
        I::I32Ne,
        I::LocalGet(before),
        I::I32Const(super::kwscan::WORD as i32),
        I::I32And,
        I::I32Eqz,
        I::I32And,
        I::BrIf(1),
        I::LocalGet(next),
        I::LocalSet(before),
    ]);
    a.incr(l.ptr);
    a.ops([I::Br(0), I::End, I::End]);
    // The word's left boundary; no span is live.
    a.ops([
        I::LocalGet(before),
        I::LocalSet(l.prev),
        I::LocalGet(l.j),
        I::LocalGet(before),
        I::I32Store8(ma(b.nbuf, 0)),
        I::I32Const(0),
        I::LocalSet(l.live),
    ]);
    a.incr(l.j);
}

/// Probes hash local `h`: the first slot is tested inline, so that a word
/// that is no keyword costs no event when its slot is empty (most are).
fn emit_probe(a: &mut Asm, t: &WordTables, h: u32, record: &dyn Fn(&mut Asm, u32)) {
    a.ops([
        I::LocalGet(h),
        I::I32Const(SLOT_MIX as i32),
        I::I32Mul,
        I::I32Const(32 - t.bits as i32),
        I::I32ShrU,
        I::I32Const(3),
        I::I32Shl,
        I::I32Load(ma(t.slots + 4, 2)),
        I::If(BlockType::Empty),
    ]);
    record(a, h);
    a.op(I::End);
}

/// After the last byte: probes the word the text ends with, if any.
pub(super) fn emit_end(a: &mut Asm, t: &WordTables, l: &Locals, record: &dyn Fn(&mut Asm, u32)) {
    a.ops([
        I::LocalGet(l.prev),
        I::I32Const(super::kwscan::WORD as i32),
        I::I32And,
    ]);
    if t.skip_dead_words {
        a.ops([
            I::I32Const(0),
            I::I32Ne,
            I::LocalGet(l.live),
            I::I32Const(0),
            I::I32Ne,
            I::I32And,
        ]);
    }
    a.op(I::If(BlockType::Empty));
    for &h in &l.h[..t.depth as usize] {
        emit_probe(a, t, h, record);
    }
    a.op(I::End);
}

/// Locals of [`emit_lookup`]: the hash and offset of the event (set by the
/// caller) and scratch.
pub(super) struct LookupLocals {
    pub hash: u32,
    pub j: u32,
    pub slot: u32,
    pub ent: u32,
    pub m: u32,
    pub end: u32,
    pub verify: VerifyLocals,
}

/// [`WordTable::candidates`] for local `hash` at the word ending at
/// normalized offset `j`: each candidate not found before (`known` pushes
/// whether it was, given the local holding its id) is verified
/// ([`emit_verify`]) and handed to `found`.
pub(super) fn emit_lookup(
    a: &mut Asm,
    t: &WordTables,
    s: &Shared,
    l: &LookupLocals,
    known: &dyn Fn(&mut Asm, u32),
    found: &dyn Fn(&mut Asm, u32),
) {
    a.op(I::Block(BlockType::Empty)); // $miss
    a.ops([
        I::LocalGet(l.hash),
        I::I32Const(SLOT_MIX as i32),
        I::I32Mul,
        I::I32Const(32 - t.bits as i32),
        I::I32ShrU,
        I::LocalSet(l.slot),
    ]);
    a.op(I::Loop(BlockType::Empty));
    // An empty slot: no keyword has this hash.
    a.ops([
        I::LocalGet(l.slot),
        I::I32Const(3),
        I::I32Shl,
        I::I32Load(ma(t.slots + 4, 2)),
        I::LocalTee(l.ent),
        I::I32Eqz,
        I::BrIf(1),
    ]);
    // A slot with another hash: try the next one.
    a.ops([
        I::LocalGet(l.slot),
        I::I32Const(3),
        I::I32Shl,
        I::I32Load(ma(t.slots, 2)),
        I::LocalGet(l.hash),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::LocalGet(l.slot),
        I::I32Const(1),
        I::I32Add,
        I::I32Const((1 << t.bits) - 1),
        I::I32And,
        I::LocalSet(l.slot),
        I::Br(1),
        I::End,
    ]);
    a.op(I::End);
    // The slot of this hash: verify each member.
    a.ops([
        I::LocalGet(l.ent),
        I::I32Const(0xffff),
        I::I32And,
        I::LocalSet(l.m),
        I::LocalGet(l.m),
        I::LocalGet(l.ent),
        I::I32Const(16),
        I::I32ShrU,
        I::I32Add,
        I::LocalSet(l.end),
    ]);
    let v = &l.verify;
    a.counted_loop(l.m, I::LocalGet(l.end), |a| {
        a.op(I::LocalGet(l.m));
        a.load_w(t.members, 2);
        a.op(I::LocalSet(v.k));
        a.op(I::Block(BlockType::Empty));
        known(a, v.k);
        a.op(I::BrIf(0));
        emit_verify(a, s, l.j, v);
        found(a, v.k);
        a.op(I::End);
    });
    a.op(I::End); // $miss
}

/// Locals of [`emit_verify`] (scratch; `k` is the candidate).
pub(super) struct VerifyLocals {
    pub k: u32,
    pub len: u32,
    pub base: u32,
    pub off: u32,
    pub i: u32,
}

/// Inside a block that `br 0` leaves: leaves it unless keyword `k` ends at
/// normalized offset `j` (its bytes are the last ones written) with a word
/// boundary before it. Compared from the end, eight bytes at a time while
/// they last.
fn emit_verify(a: &mut Asm, s: &Shared, j: u32, v: &VerifyLocals) {
    a.op(I::LocalGet(v.k));
    a.load_w(s.kwlen, 2);
    a.ops([
        I::LocalTee(v.len),
        I::LocalGet(j),
        I::I32GtU,
        I::BrIf(0),
        I::LocalGet(j),
        I::LocalGet(v.len),
        I::I32Sub,
        I::LocalSet(v.base),
        I::LocalGet(v.k),
    ]);
    a.load_w(s.kwoff, 4);
    a.ops([I::LocalSet(v.off), I::LocalGet(v.len), I::LocalSet(v.i)]);
    for (width, load) in [
        (8, I::I64Load(ma(s.nbuf, 0))),
        (1, I::I32Load8U(ma(s.nbuf, 0))),
    ] {
        let (kw_load, ne) = if width == 8 {
            (I::I64Load(ma(s.kwbytes, 0)), I::I64Ne)
        } else {
            (I::I32Load8U(ma(s.kwbytes, 0)), I::I32Ne)
        };
        // while i >= width { i -= width; if text[base + i..] != kw[off + i..] { leave } }
        a.op(I::Block(BlockType::Empty));
        a.op(I::Loop(BlockType::Empty));
        a.ops([
            I::LocalGet(v.i),
            I::I32Const(width),
            I::I32LtU,
            I::BrIf(1),
            I::LocalGet(v.i),
            I::I32Const(width),
            I::I32Sub,
            I::LocalSet(v.i),
            I::LocalGet(v.base),
            I::LocalGet(v.i),
            I::I32Add,
            load,
            I::LocalGet(v.off),
            I::LocalGet(v.i),
            I::I32Add,
            kw_load,
            ne,
            I::BrIf(2),
            I::Br(0),
            I::End,
            I::End,
        ]);
    }
    // Equal: is the byte before a word byte? (At base 0 there is none; the
    // load at nbuf - 1 is harmless and its result discarded by the `and`.)
    a.ops([
        I::LocalGet(v.base),
        I::I32Const(0),
        I::I32Ne,
        I::LocalGet(v.base),
        I::I32Load8U(ma(s.nbuf - 1, 0)),
        I::I32Load8U(ma(s.word, 0)),
        I::I32And,
        I::BrIf(0),
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::cues::naive_keyword_matches as reference;

    fn scan(keywords: &[String], text: &[u8]) -> Vec<bool> {
        let ids: Vec<u32> = (0..keywords.len() as u32).collect();
        let mut found = vec![false; keywords.len()];
        let (table, left_out) = WordTable::new(keywords, &ids);
        assert!(left_out.is_empty());
        table.scan(keywords, text, &mut found);
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
        assert!(fits(b"a b c"));
        assert!(!fits(b"a b c d"));
        assert!(fits(b"x, y"));
        assert!(!fits(b"x,"));
        assert_eq!(word_count(b"a b, c"), 3);
        assert_eq!(word_count("café au".as_bytes()), 2);
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
        let (table, _) = WordTable::new(&kws, &ids);
        assert_eq!(table.depth, 2);
        assert_eq!(table.candidates(hash_word(b"yacxa")), &[0, 1]);
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
        let (table, _) = WordTable::new(&words, &ids);
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
            kws in prop::collection::btree_set("[ab_é.]{1,3}( [ab.]{1,2}){0,4}", 1..8),
            text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b' ', b'\t', b'_', b'.', 0xc3, 0xa9]), 0..40),
        ) {
            let kws: Vec<String> = kws
                .into_iter()
                .map(|k| cues::normalize_keyword(&k))
                .filter(|k| fits(k.as_bytes()))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            prop_assume!(!kws.is_empty());
            prop_assert_eq!(scan(&kws, &text), reference(&kws, &text));
        }

        /// Keywords beginning with `a` or `b` in texts where most words
        /// begin with `c` or `d`: most words are dead and passed over.
        #[test]
        fn dead_words_change_nothing(
            kws in prop::collection::btree_set("[ab][a-d]{0,2}([ .-][a-d]{1,2}){0,2}", 1..6),
            words in prop::collection::vec(("[a-dA-D]{1,4}", prop::sample::select(vec![" ", "  ", ".", "-", " - ", "\n"])), 0..16),
        ) {
            let kws: Vec<String> = kws.into_iter().map(|k| cues::normalize_keyword(&k)).collect();
            let kws: Vec<String> = kws.into_iter().collect::<std::collections::BTreeSet<_>>().into_iter().collect();
            let text: String = words.into_iter().map(|(w, sep)| w + sep).collect();
            let ids: Vec<u32> = (0..kws.len() as u32).collect();
            let (table, _) = WordTable::new(&kws, &ids);
            prop_assert!(table.skip_dead_words);
            prop_assert_eq!(scan(&kws, text.as_bytes()), reference(&kws, text.as_bytes()), "{:?} in {:?}", kws, text);
        }
    }
}
