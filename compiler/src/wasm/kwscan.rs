//! Keyword scanning in the generated module: which scheme finds which
//! keyword, the tables the schemes share, and the code around them in the
//! scan loop.
//!
//! Keywords that begin and end with a word byte and have at most
//! [`wordhash::MAX_DEPTH`] words go to the word-hash table
//! ([`super::wordhash`]); the others to the Aho-Corasick automaton
//! ([`super::keywords`]). Both run in the same pass over the text and write
//! the same normalized buffer. Where a keyword may end, the byte loop only
//! records an *event* (a hash or an automaton state, and the offset); the
//! events of each chunk of `EVENT_CHUNK` input bytes are then looked up and
//! verified by the `events` function, which reports through one
//! `found(k, subject)` function that records keyword `k` once and counts it
//! for its sets. Verification only looks back at text already normalized,
//! so deferring it changes nothing. [`KeywordScanner::scan`] is the Rust
//! model of the whole scan.

use super::asm::{ma, Asm, Data};
use super::keywords::{self, AutomatonTables, KeywordAutomaton};
use super::wordhash::{self, WordTable, WordTables};
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

/// The most distinct first bytes the word-hash keywords may have for the
/// scan to pass over dead words ([`WordTable::scan`]): a third of the
/// letters and digits.
pub const MAX_FIRST_BYTES_TO_SKIP: usize = 12;

/// A policy's distinct keywords split between the two schemes.
#[derive(Debug, Clone)]
pub struct KeywordScanner {
    keywords: Vec<String>,
    /// The word-hash table, over the keywords that fit it.
    words: Option<WordTable>,
    /// The automaton over the other keywords, those keywords, and their ids.
    automaton: Option<(KeywordAutomaton, Vec<String>, Vec<u32>)>,
}

impl KeywordScanner {
    /// Splits distinct, normalized, non-empty `keywords`: those that
    /// [`wordhash::fits`] to the word-hash table (unless it leaves them
    /// out), the others to the automaton. With `word_hash` false every
    /// keyword goes to the automaton.
    pub fn new(keywords: &[String], word_hash: bool) -> KeywordScanner {
        let (by_word, mut others): (Vec<u32>, Vec<u32>) = (0..keywords.len() as u32)
            .partition(|&k| word_hash && wordhash::fits(keywords[k as usize].as_bytes()));
        let mut words = (!by_word.is_empty()).then(|| {
            let (table, left_out) = WordTable::new(keywords, &by_word);
            others.extend(left_out);
            others.sort_unstable();
            table
        });
        // The automaton steps on every byte, dead words' too. And when
        // keywords begin with most letters few words are dead, and the
        // bookkeeping at each word would cost more than it saves.
        if let Some(table) = &mut words {
            let first_bytes = table.first.iter().filter(|&&f| f).count();
            table.skip_dead_words = others.is_empty() && first_bytes <= MAX_FIRST_BYTES_TO_SKIP;
        }
        let automaton = (!others.is_empty()).then(|| {
            let subset: Vec<String> = others
                .iter()
                .map(|&k| keywords[k as usize].clone())
                .collect();
            (KeywordAutomaton::new(&subset), subset, others)
        });
        KeywordScanner {
            keywords: keywords.to_vec(),
            words,
            automaton,
        }
    }

    /// The reference for the module's scan: which keywords occur in `text`.
    pub fn scan(&self, text: &[u8]) -> Vec<bool> {
        let mut found = vec![false; self.keywords.len()];
        if let Some(table) = &self.words {
            table.scan(&self.keywords, text, &mut found);
        }
        if let Some((ac, _, ids)) = &self.automaton {
            for (i, hit) in ac.scan(text).into_iter().enumerate() {
                found[ids[i] as usize] |= hit;
            }
        }
        found
    }

    /// Per normalized byte: whether a word-hash keyword begins with it
    /// (the module's first-byte class flag).
    pub fn first_bytes(&self) -> [bool; 256] {
        self.words.as_ref().map_or([false; 256], |t| t.first)
    }

    /// How many keywords the automaton holds (0 when it is not needed).
    pub fn automaton_keywords(&self) -> usize {
        self.automaton.as_ref().map_or(0, |(_, k, _)| k.len())
    }
}

/// Indices of the functions the keyword scan calls.
pub(super) struct FuncIds {
    /// `check(state, j, after, subject)` of the automaton.
    pub check: u32,
    /// `found(k, subject)`.
    pub found: u32,
    /// `events(n, subject)`: runs the recorded events.
    pub events: u32,
}

/// A byte class flag: the normalized byte is a word byte.
pub(super) const WORD: u32 = 1 << 8;
/// A byte class flag: the byte is whitespace.
pub(super) const SPACE: u32 = 1 << 9;
/// A byte class flag: a word-hash keyword begins with the normalized byte
/// ([`WordTable::first`]).
pub(super) const FIRST: u32 = 1 << 10;

/// The scan loop's locals the keyword scan uses.
pub(super) struct ScanLocals {
    /// The normalized byte.
    pub c: u32,
    /// The byte's class: the normalized byte with [`WORD`] and [`SPACE`].
    pub cls: u32,
    /// The normalized length so far.
    pub j: u32,
    /// The subject (0 query, 1 task).
    pub subj: u32,
    /// The class of the previous normalized byte (0 before the first).
    pub prev: u32,
    /// The automaton state, and two scratch locals (its sparse step's, and
    /// the event recorder's).
    pub ac: u32,
    pub k: u32,
    pub e: u32,
    /// The word-hash scheme's hashes.
    pub h: [u32; wordhash::MAX_DEPTH as usize],
    /// The word-hash scheme's count of live words.
    pub live: u32,
    /// The scan position and the end of the text.
    pub ptr: u32,
    pub end: u32,
}

impl ScanLocals {
    fn automaton(&self) -> keywords::Locals {
        keywords::Locals {
            c: self.c,
            cls: self.cls,
            ac: self.ac,
            k: self.k,
            e: self.e,
        }
    }

    fn words(&self) -> wordhash::Locals {
        wordhash::Locals {
            c: self.c,
            cls: self.cls,
            prev: self.prev,
            h: self.h,
            live: self.live,
            ptr: self.ptr,
            end: self.end,
            j: self.j,
        }
    }
}

/// Addresses of the tables and buffers the schemes share.
pub(super) struct Shared {
    /// Per keyword: its length (u16).
    pub kwlen: u64,
    /// Per keyword: the offset of its bytes from `kwbytes` (u32).
    pub kwoff: u64,
    /// All keywords' bytes.
    pub kwbytes: u64,
    /// The normalized text buffer.
    pub nbuf: u64,
    /// Byte to word-byte flag.
    pub word: u64,
}

/// Scratch addresses outside the data segment, settled after it.
pub(super) struct Scratch {
    /// The normalized text buffer.
    pub nbuf: u64,
    /// Raw byte to class (u16, see [`WORD`]).
    pub classes: u64,
    /// Whether the scan counts words (then it must see every byte).
    pub counts_words: bool,
    /// Byte to word-byte flag.
    pub word: u64,
    /// `counts[subject * nsets + set]`: distinct keywords of the set found (u32).
    pub counts: u64,
    /// Per subject, a bitset of the keywords found.
    pub kwbits: u64,
    /// Number of keyword sets.
    pub nsets: u32,
    /// The event area ([`event_buffer_bytes`] long): the count of event
    /// bytes, then the events from `events + 8`.
    pub events: u64,
}

/// The keyword tables in a module's data.
pub(super) struct KeywordScan {
    /// 32-bit words in one subject's bitset of found keywords.
    pub bitset_words: u32,
    kwlen: u64,
    kwoff: u64,
    kwbytes: u64,
    kwset_off: u64,
    kwsets: u64,
    words: Option<WordTables>,
    automaton: Option<AutomatonTables>,
}

impl KeywordScan {
    /// Lays out `scanner`'s tables in `data`; `sets_of[k]` are the sets of
    /// keyword `k`. Fails only beyond 16-bit fields (far over the checker's
    /// limits).
    pub(super) fn put(
        scanner: &KeywordScanner,
        sets_of: &[Vec<u32>],
        dense_limit: usize,
        data: &mut Data,
    ) -> Result<KeywordScan, String> {
        let keywords = &scanner.keywords;
        let words = match &scanner.words {
            Some(t) => Some(
                WordTables::put(t, data)
                    .ok_or_else(|| format!("{} keywords (at most 65535)", keywords.len()))?,
            ),
            None => None,
        };
        let automaton = scanner.automaton.as_ref().map(|(ac, subset, ids)| {
            AutomatonTables::put(ac, subset, ids, keywords.len(), dense_limit, data)
        });
        let mut kwset_off = vec![0u32];
        let mut kwsets: Vec<u8> = Vec::new();
        for sets in sets_of {
            for &s in sets {
                kwsets.extend_from_slice(&(s as u16).to_le_bytes());
            }
            kwset_off.push((kwsets.len() / 2) as u32);
        }
        let mut kwoff = Vec::with_capacity(keywords.len());
        let mut kwbytes = Vec::new();
        for k in keywords {
            kwoff.push(kwbytes.len() as u32);
            kwbytes.extend_from_slice(k.as_bytes());
        }
        Ok(KeywordScan {
            bitset_words: (keywords.len() as u32).div_ceil(32),
            kwlen: data.put_w(2, keywords.iter().map(|k| k.len() as u32)),
            kwoff: data.put_w(4, kwoff),
            kwbytes: data.put(1, &kwbytes),
            kwset_off: data.put_w(4, kwset_off),
            kwsets: data.put(2, &kwsets),
            words,
            automaton,
        })
    }

    fn shared(&self, s: &Scratch) -> Shared {
        Shared {
            kwlen: self.kwlen,
            kwoff: self.kwoff,
            kwbytes: self.kwbytes,
            nbuf: s.nbuf,
            word: s.word,
        }
    }

    /// Before the loop: no events yet, and the hashes start empty.
    pub(super) fn emit_start(&self, a: &mut Asm, l: &ScanLocals, s: &Scratch) {
        a.ops([I::I32Const(0), I::I32Const(0), I::I32Store(ma(s.events, 2))]);
        if let Some(t) = &self.words {
            wordhash::emit_start(a, t, &l.words());
        }
    }

    /// Per byte, with the normalized byte in `l.c`; must be emitted directly
    /// in the body of the scan loop, since `br 0` there skips to the next
    /// byte (the second space of a whitespace run).
    ///
    /// The loop calls nothing: where a keyword may end it records an event
    /// (see [`EVENT_CHUNK`]), run after the chunk by `events`. A call in the
    /// loop would make the register allocator keep the loop's state in stack
    /// slots, which cost more than the scan itself.
    pub(super) fn emit_byte(&self, a: &mut Asm, l: &ScanLocals, s: &Scratch) {
        // The second and later bytes of a whitespace run are skipped.
        a.ops([
            I::LocalGet(l.cls),
            I::LocalGet(l.prev),
            I::I32And,
            I::I32Const(SPACE as i32),
            I::I32And,
            I::BrIf(0),
        ]);
        if let Some(t) = &self.automaton {
            keywords::emit_pending(a, t, &l.automaton(), false, |a| {
                record(a, l, s, l.ac, AUTOMATON_EVENT)
            });
        }
        if let Some(t) = &self.words {
            let buffers = wordhash::DeadWordBuffers {
                classes: s.classes,
                nbuf: s.nbuf,
                regions: !s.counts_words,
            };
            wordhash::emit_byte(a, t, &l.words(), &buffers, &|a, h| record(a, l, s, h, 0));
        }
        // The normalized text, for boundaries and verification.
        a.ops([
            I::LocalGet(l.cls),
            I::LocalSet(l.prev),
            I::LocalGet(l.j),
            I::LocalGet(l.c),
            I::I32Store8(ma(s.nbuf, 0)),
        ]);
        a.incr(l.j);
        if let Some(t) = &self.automaton {
            keywords::emit_step(a, t, &l.automaton());
        }
    }

    /// After a chunk of bytes: runs its events.
    pub(super) fn emit_flush(&self, a: &mut Asm, l: &ScanLocals, s: &Scratch, f: &FuncIds) {
        a.ops([
            I::I32Const(0),
            I::I32Load(ma(s.events, 2)),
            I::LocalTee(l.k),
            I::If(BlockType::Empty),
            I::LocalGet(l.k),
            I::LocalGet(l.subj),
            I::Call(f.events),
            I::I32Const(0),
            I::I32Const(0),
            I::I32Store(ma(s.events, 2)),
            I::End,
        ]);
    }

    /// After the last byte: the keywords that end the text.
    pub(super) fn emit_end(&self, a: &mut Asm, l: &ScanLocals, s: &Scratch, f: &FuncIds) {
        if let Some(t) = &self.automaton {
            keywords::emit_pending(a, t, &l.automaton(), true, |a| {
                record(a, l, s, l.ac, AUTOMATON_EVENT)
            });
        }
        if let Some(t) = &self.words {
            wordhash::emit_end(a, t, &l.words(), &|a, h| record(a, l, s, h, 0));
        }
        self.emit_flush(a, l, s, f);
    }

    /// The bodies of `check`, `found` and `events`, in that order (`check`
    /// is empty when the module has no automaton).
    pub(super) fn functions(&self, s: &Scratch, f: &FuncIds) -> [Function; 3] {
        let shared = self.shared(s);
        let check = match &self.automaton {
            Some(t) => keywords::check_fn(t, &shared, f.found),
            None => Asm::new(0).finish(vec![]),
        };
        [check, self.found_fn(s), self.events_fn(s, f)]
    }

    /// `events(n, subject)`: for each of the `n / 8` events recorded (after
    /// the count, at `events + 8`): for an automaton event,
    /// `check(state, j, 32, subject)`; for a word-hash one, the lookup,
    /// inline, with `found` called only for a keyword not found before.
    fn events_fn(&self, s: &Scratch, f: &FuncIds) -> Function {
        let (n, subj) = (0, 1);
        let (p, v, j) = (2, 3, 4);
        let lookup = wordhash::LookupLocals {
            hash: v,
            j,
            slot: 5,
            ent: 6,
            m: 7,
            end: 8,
            verify: wordhash::VerifyLocals {
                k: 9,
                len: 10,
                base: 11,
                off: 12,
                i: 13,
            },
        };
        let addr = 14;
        let shared = self.shared(s);
        let mut a = Asm::new(0);
        a.counted_loop(p, I::LocalGet(n), |a| {
            a.ops([
                I::LocalGet(p),
                I::I32Load(ma(s.events + 8, 2)),
                I::LocalSet(v),
                I::LocalGet(p),
                I::I32Load(ma(s.events + 12, 2)),
                I::LocalSet(j),
            ]);
            let check = |a: &mut Asm, t: &AutomatonTables| {
                a.op(I::LocalGet(v));
                keywords::emit_state_index(a, t);
                a.ops([
                    I::LocalGet(j),
                    I::I32Const((AUTOMATON_EVENT - 1) as i32),
                    I::I32And,
                    I::I32Const(32),
                    I::LocalGet(subj),
                    I::Call(f.check),
                ]);
            };
            let known = |a: &mut Asm, k: u32| self.emit_found_bit(a, s, k, subj, addr);
            let found = |a: &mut Asm, k: u32| {
                a.ops([I::LocalGet(k), I::LocalGet(subj), I::Call(f.found)]);
            };
            let probe = |a: &mut Asm| {
                if let Some(t) = &self.words {
                    wordhash::emit_lookup(a, t, &shared, &lookup, &known, &found);
                }
            };
            match (&self.automaton, &self.words) {
                (Some(t), Some(_)) => {
                    a.ops([
                        I::LocalGet(j),
                        I::I32Const(AUTOMATON_EVENT as i32),
                        I::I32And,
                        I::If(BlockType::Empty),
                    ]);
                    check(a, t);
                    a.op(I::Else);
                    probe(a);
                    a.op(I::End);
                }
                (Some(t), None) => check(a, t),
                (None, Some(_)) => probe(a),
                (None, None) => {}
            }
            // The counted loop adds 1: events are 8 bytes.
            a.ops([I::LocalGet(p), I::I32Const(7), I::I32Add, I::LocalSet(p)]);
        });
        a.finish(vec![(13, ValType::I32)])
    }

    /// Pushes whether keyword local `k` is already marked found in the
    /// subject (nonzero if so). `addr` is a scratch local.
    fn emit_found_bit(&self, a: &mut Asm, s: &Scratch, k: u32, subj: u32, addr: u32) {
        self.emit_bit_address(a, k, subj, addr);
        a.ops([
            I::LocalGet(addr),
            I::I32Load(ma(s.kwbits, 2)),
            I::I32Const(1),
            I::LocalGet(k),
            I::I32Shl,
            I::I32And,
        ]);
    }

    /// `addr = (subj * words + k / 32) * 4`: the offset of keyword `k`'s
    /// word in the found bitsets (its bit is `1 << (k % 32)`).
    fn emit_bit_address(&self, a: &mut Asm, k: u32, subj: u32, addr: u32) {
        a.ops([
            I::LocalGet(subj),
            I::I32Const(self.bitset_words as i32),
            I::I32Mul,
            I::LocalGet(k),
            I::I32Const(5),
            I::I32ShrU,
            I::I32Add,
            I::I32Const(2),
            I::I32Shl,
            I::LocalSet(addr),
        ]);
    }

    /// `found(k, subject)`: the first time keyword `k` is found in the
    /// subject, sets its bit and counts it for each set that has it.
    fn found_fn(&self, s: &Scratch) -> Function {
        let (k, subj) = (0, 1);
        let (addr, bit, i, e) = (2, 3, 4, 5);
        let mut a = Asm::new(0);
        self.emit_bit_address(&mut a, k, subj, addr);
        a.ops([I::I32Const(1), I::LocalGet(k), I::I32Shl, I::LocalSet(bit)]);
        a.ops([
            I::LocalGet(addr),
            I::I32Load(ma(s.kwbits, 2)),
            I::LocalGet(bit),
            I::I32And,
            I::If(BlockType::Empty),
            I::Return,
            I::End,
        ]);
        a.ops([
            I::LocalGet(addr),
            I::LocalGet(addr),
            I::I32Load(ma(s.kwbits, 2)),
            I::LocalGet(bit),
            I::I32Or,
            I::I32Store(ma(s.kwbits, 2)),
        ]);
        a.op(I::LocalGet(k));
        a.load_w(self.kwset_off, 4);
        a.op(I::LocalSet(i));
        a.ops([I::LocalGet(k), I::I32Const(1), I::I32Add]);
        a.load_w(self.kwset_off, 4);
        a.op(I::LocalSet(e));
        a.counted_loop(i, I::LocalGet(e), |a| {
            // counts[subj * nsets + set] += 1
            a.ops([
                I::LocalGet(subj),
                I::I32Const(s.nsets as i32),
                I::I32Mul,
                I::LocalGet(i),
            ]);
            a.load_w(self.kwsets, 2);
            a.ops([
                I::I32Add,
                I::I32Const(2),
                I::I32Shl,
                I::LocalTee(addr),
                I::LocalGet(addr),
                I::I32Load(ma(s.counts, 2)),
                I::I32Const(1),
                I::I32Add,
                I::I32Store(ma(s.counts, 2)),
            ]);
        });
        a.finish(vec![(4, ValType::I32)])
    }
}

/// Input bytes scanned between two runs of the recorded events. Each byte
/// records at most one automaton event and each word end (at most one per
/// two bytes, plus one) at most `MAX_DEPTH` word-hash events, which bounds
/// the buffer ([`event_buffer_bytes`]).
pub(super) const EVENT_CHUNK: u32 = 2048;

/// Marks an automaton event in the word holding `j` (normalized offsets are
/// far below 2^31).
const AUTOMATON_EVENT: u32 = 1 << 31;

/// The size of the event area: the count of event bytes (8 bytes, for
/// alignment), then one chunk's events and the end's.
pub(super) fn event_buffer_bytes() -> u64 {
    let words = wordhash::MAX_DEPTH as u64 * (EVENT_CHUNK as u64 / 2 + 1);
    let automaton = EVENT_CHUNK as u64 + 1;
    8 * (1 + words + automaton + 1)
}

/// Records an event: local `value` and `j` (with `tag`) at the end of the
/// event buffer. The count lives in memory rather than a local: events are
/// rare, and the byte loop is short of registers.
fn record(a: &mut Asm, l: &ScanLocals, s: &Scratch, value: u32, tag: u32) {
    a.ops([
        I::I32Const(0),
        I::I32Load(ma(s.events, 2)),
        I::LocalTee(l.k),
        I::LocalGet(value),
        I::I32Store(ma(s.events + 8, 2)),
        I::LocalGet(l.k),
        I::LocalGet(l.j),
    ]);
    if tag != 0 {
        a.ops([I::I32Const(tag as i32), I::I32Or]);
    }
    a.ops([
        I::I32Store(ma(s.events + 12, 2)),
        I::I32Const(0),
        I::LocalGet(l.k),
        I::I32Const(8),
        I::I32Add,
        I::I32Store(ma(s.events, 2)),
    ]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cues;
    use proptest::prelude::*;

    use crate::cues::naive_keyword_matches as reference;

    #[test]
    fn splits_by_the_bytes_at_either_end() {
        let kws: Vec<String> = ["why", "(error)", "led to", "c++", "?", "12.5", "-x"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let s = KeywordScanner::new(&kws, true);
        assert_eq!(s.automaton_keywords(), 4);
        // More words than the word-hash depth: the automaton's.
        let long: Vec<String> = vec!["a b c d".into(), "a b c".into()];
        assert_eq!(KeywordScanner::new(&long, true).automaton_keywords(), 1);
        assert_eq!(KeywordScanner::new(&kws, false).automaton_keywords(), 7);
        let text = b"Why ? (ERROR) led  to c++ 12.5 -x";
        assert_eq!(s.scan(text), vec![true; 7]);
        // "?" right after a word is not bounded; "c++" inside a word neither.
        let text = b"Why? xc++ 12.50";
        assert_eq!(s.scan(text), reference(&kws, text));
        assert_eq!(
            s.scan(text),
            vec![true, false, false, false, false, false, false]
        );
    }

    proptest! {
        #[test]
        fn both_schemes_together_agree_with_the_definition(
            kws in prop::collection::btree_set("[ab_é.(]{1,3}( [ab.]{1,2}){0,4}", 1..10),
            text in prop::collection::vec(prop::sample::select(vec![b'a', b'b', b'A', b' ', b'\t', b'_', b'.', b'(', 0xc3, 0xa9]), 0..40),
            word_hash in any::<bool>(),
        ) {
            let kws: Vec<String> = kws
                .into_iter()
                .map(|k| cues::normalize_keyword(&k))
                .filter(|k| !k.is_empty())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            prop_assume!(!kws.is_empty());
            let s = KeywordScanner::new(&kws, word_hash);
            prop_assert_eq!(s.scan(&text), reference(&kws, &text));
        }
    }
}
