//! The keyword automaton compiled into a module: an Aho-Corasick trie over
//! normalized bytes with failure and output links, laid out as flat tables.
//!
//! Since the word-hash scheme ([`super::wordhash`]) finds every keyword that
//! begins and ends with a word byte, the automaton only holds the others
//! (`"(error)"`, `"c++"`, `"?"`), usually none or a handful, so its dense
//! table nearly always fits. It still handles any keyword, which is how a
//! module is compiled with [`super::CompileOptions::word_hash`] off.
//!
//! The generated code (`emit_pending`, `emit_step`, `check_fn`) follows
//! [`KeywordAutomaton::scan`], which is the same
//! algorithm in Rust; the tests check it against the interpreter's matching
//! on random texts.

use super::asm::{ma, Asm, Data};
use super::kwscan::Shared;
use crate::cues;
use std::collections::VecDeque;
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

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
            let c = cues::normalize_byte(raw);
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

/// Where the automaton's tables live in the module's data, and how it steps.
pub(super) struct AutomatonTables {
    /// Entry width of the state and keyword tables (2 or 4 bytes).
    w: u32,
    /// "None" at that width.
    none: u32,
    step: KeywordStep,
    /// Per state: the (global) keyword ending there, or `none`.
    kw: u64,
    /// Per state: the next state on the output chain, or `none`.
    out: u64,
    /// Per state: 1 when a keyword ends there or on its output chain.
    emit: u64,
}

/// How the keyword automaton steps from one state to the next.
enum KeywordStep {
    /// A full table over byte classes: one load per byte. Entries are
    /// premultiplied and carry the emit flag, `(state * class_count) << 1 |
    /// emit(state)`, so the step needs no multiplication and the flag no
    /// second table.
    Dense {
        /// Normalized byte to class.
        classes: u64,
        /// Number of classes.
        class_count: u32,
        /// `next[state * class_count + class]`, encoded as above.
        next: u64,
        /// Entry width in bytes (2 or 4).
        w: u32,
    },
    /// Trie transitions with failure links; the root has a full table.
    Sparse {
        root: u64,
        off: u64,
        len: u64,
        fail: u64,
        tbyte: u64,
        ttarget: u64,
    },
}

impl AutomatonTables {
    /// Lays out the automaton `ac` built over `keywords`, whose ids in the
    /// module are `ids` (`ids[i]` for `keywords[i]`), out of `total` keywords.
    /// The table is dense when it takes at most `dense_limit` bytes.
    pub(super) fn put(
        ac: &KeywordAutomaton,
        keywords: &[String],
        ids: &[u32],
        total: usize,
        dense_limit: usize,
        data: &mut Data,
    ) -> AutomatonTables {
        let n = ac.children.len();
        let w = if n < 0xFFFF && total < 0xFFFF { 2 } else { 4 };
        let none = if w == 2 { 0xFFFF } else { NONE };
        let step = Self::put_step(ac, keywords, w, dense_limit, data);
        let global = |k: u32| if k == NONE { none } else { ids[k as usize] };
        let narrow = |v: u32| if v == NONE { none } else { v };
        let emit: Vec<u8> = ac
            .keyword
            .iter()
            .zip(&ac.output)
            .map(|(&k, &o)| u8::from(k != NONE || o != NONE))
            .collect();
        AutomatonTables {
            w,
            none,
            step,
            kw: data.put_w(w, ac.keyword.iter().map(|&k| global(k))),
            out: data.put_w(w, ac.output.iter().map(|&o| narrow(o))),
            emit: data.put(1, &emit),
        }
    }

    fn put_step(
        ac: &KeywordAutomaton,
        keywords: &[String],
        w: u32,
        dense_limit: usize,
        data: &mut Data,
    ) -> KeywordStep {
        let n = ac.children.len();
        // Classes: each byte that occurs in a keyword, and one for all others
        // (from every state they lead back to the root).
        let mut class_of = [0u8; 256];
        let mut class_count = 1u32;
        for k in keywords {
            for &b in k.as_bytes() {
                if class_of[b as usize] == 0 {
                    class_of[b as usize] = class_count as u8;
                    class_count += 1;
                }
            }
        }
        let dense_bytes = n * class_count as usize * 2;
        if class_count <= 256 && dense_bytes <= dense_limit {
            let mut rep = vec![0u8; class_count as usize];
            // Class 0 stands for any byte in no keyword; find one such byte
            // (there always is one: keywords cannot contain every byte).
            rep[0] = (0..=255u8)
                .find(|b| class_of[*b as usize] == 0)
                .unwrap_or(0);
            for b in 0..=255u8 {
                let c = class_of[b as usize];
                if c != 0 {
                    rep[c as usize] = b;
                }
            }
            let emits = |t: u32| ac.keyword[t as usize] != NONE || ac.output[t as usize] != NONE;
            let mut next = Vec::with_capacity(n * class_count as usize);
            for state in 0..n as u32 {
                for &b in &rep {
                    let t = ac.step(state, b);
                    next.push(((t * class_count) << 1) | u32::from(emits(t)));
                }
            }
            let dense_w = if (n as u64 * class_count as u64) << 1 < 0xFFFF {
                2
            } else {
                4
            };
            return KeywordStep::Dense {
                classes: data.put(1, &class_of),
                class_count,
                next: data.put_w(dense_w, next),
                w: dense_w,
            };
        }
        let mut root = vec![0u32; 256];
        for &(b, t) in &ac.children[0] {
            root[b as usize] = t;
        }
        let mut offs = Vec::with_capacity(n);
        let mut lens = Vec::with_capacity(n);
        let mut tbytes = Vec::new();
        let mut ttargets = Vec::new();
        for ch in &ac.children {
            offs.push(tbytes.len() as u32);
            lens.push(ch.len() as u32);
            for &(b, t) in ch {
                tbytes.push(b);
                ttargets.push(t);
            }
        }
        KeywordStep::Sparse {
            root: data.put_w(w, root),
            off: data.put_w(4, offs),
            len: data.put_w(w, lens),
            fail: data.put_w(w, ac.fail.iter().copied()),
            tbyte: data.put(1, &tbytes),
            ttarget: data.put_w(w, ttargets),
        }
    }
}

/// The scan loop's locals the automaton reads and writes.
pub(super) struct Locals {
    /// The normalized byte.
    pub c: u32,
    /// The byte's class (`kwscan::WORD` set for a word byte).
    pub cls: u32,
    /// The automaton state (encoded as its step representation says).
    pub ac: u32,
    /// Scratch for the sparse step.
    pub k: u32,
    /// Scratch for the sparse step.
    pub e: u32,
}

/// Pushes whether a keyword ends in the automaton state held in local `ac`.
fn emit_flag(a: &mut Asm, t: &AutomatonTables, ac: u32) {
    match t.step {
        KeywordStep::Dense { .. } => a.ops([I::LocalGet(ac), I::I32Const(1), I::I32And]),
        KeywordStep::Sparse { .. } => a.ops([I::LocalGet(ac), I::I32Load8U(ma(t.emit, 0))]),
    };
}

/// Per normalized byte, before it is appended (or after the last byte,
/// with `at_end`): when the byte ends a word (the end always does) and a
/// keyword ends in the state before it, `record` records an event for
/// `check` with the raw state (see `kwscan`).
pub(super) fn emit_pending(
    a: &mut Asm,
    t: &AutomatonTables,
    l: &Locals,
    at_end: bool,
    record: impl FnOnce(&mut Asm),
) {
    if !at_end {
        a.ops([
            I::LocalGet(l.cls),
            I::I32Const(super::kwscan::WORD as i32),
            I::I32And,
            I::I32Eqz,
            I::If(BlockType::Empty),
        ]);
    }
    emit_flag(a, t, l.ac);
    a.op(I::If(BlockType::Empty));
    record(a);
    a.op(I::End);
    if !at_end {
        a.op(I::End);
    }
}

/// Pushes the state index of the raw automaton state on the stack.
pub(super) fn emit_state_index(a: &mut Asm, t: &AutomatonTables) {
    if let KeywordStep::Dense { class_count, .. } = t.step {
        a.ops([
            I::I32Const(1),
            I::I32ShrU,
            I::I32Const(class_count as i32),
            I::I32DivU,
        ]);
    }
}

/// `ac = step(ac, c)`.
pub(super) fn emit_step(a: &mut Asm, t: &AutomatonTables, l: &Locals) {
    let (ac, c, k, e) = (l.ac, l.c, l.k, l.e);
    match t.step {
        KeywordStep::Dense {
            classes, next, w, ..
        } => {
            a.ops([
                I::LocalGet(ac),
                I::I32Const(1),
                I::I32ShrU,
                I::LocalGet(c),
                I::I32Load8U(ma(classes, 0)),
                I::I32Add,
            ]);
            a.load_w(next, w);
            a.op(I::LocalSet(ac));
        }
        KeywordStep::Sparse {
            root,
            off,
            len,
            fail,
            tbyte,
            ttarget,
        } => {
            a.op(I::Block(BlockType::Empty)); // $found
            a.op(I::Loop(BlockType::Empty)); // $fail
            a.ops([
                I::LocalGet(ac),
                I::I32Eqz,
                I::If(BlockType::Empty),
                I::LocalGet(c),
            ]);
            a.load_w(root, t.w);
            a.ops([I::LocalSet(ac), I::Br(2), I::End]);
            a.op(I::LocalGet(ac));
            a.load_w(off, 4);
            a.ops([I::LocalSet(k), I::LocalGet(k), I::LocalGet(ac)]);
            a.load_w(len, t.w);
            a.ops([I::I32Add, I::LocalSet(e)]);
            a.op(I::Block(BlockType::Empty)); // $miss
            a.op(I::Loop(BlockType::Empty)); // $scan
            a.ops([I::LocalGet(k), I::LocalGet(e), I::I32GeU, I::BrIf(1)]);
            a.ops([
                I::LocalGet(k),
                I::I32Load8U(ma(tbyte, 0)),
                I::LocalGet(c),
                I::I32Eq,
                I::If(BlockType::Empty),
                I::LocalGet(k),
            ]);
            a.load_w(ttarget, t.w);
            a.ops([I::LocalSet(ac), I::Br(4), I::End]);
            a.incr(k).op(I::Br(0));
            a.op(I::End); // loop $scan
            a.op(I::End); // block $miss
            a.op(I::LocalGet(ac));
            a.load_w(fail, t.w);
            a.ops([I::LocalSet(ac), I::Br(0)]);
            a.op(I::End); // loop $fail
            a.op(I::End); // block $found
        }
    }
}

/// `check(state, j, after, subject)`: calls `found(k, subject)` for the
/// keywords that end in `state` at normalized offset `j` and are bounded by
/// non-word bytes ([`KeywordAutomaton::check`]). The scan only records an
/// event when `after` is not a word byte; the test stays so that the
/// function means what its reference does.
pub(super) fn check_fn(t: &AutomatonTables, s: &Shared, found: u32) -> Function {
    let (state, j, after, subj) = (0, 1, 2, 3);
    let (st, k, start) = (4, 5, 6);
    let mut a = Asm::new(0);
    a.ops([
        I::LocalGet(after),
        I::I32Load8U(ma(s.word, 0)),
        I::If(BlockType::Empty),
        I::Return,
        I::End,
    ]);
    // st = kw[state] != NONE ? state : out[state]
    a.op(I::LocalGet(state));
    a.op(I::LocalGet(state));
    a.load_w(t.out, t.w);
    a.op(I::LocalGet(state));
    a.load_w(t.kw, t.w);
    a.ops([
        I::I32Const(t.none as i32),
        I::I32Ne,
        I::Select,
        I::LocalSet(st),
    ]);
    a.op(I::Block(BlockType::Empty));
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(st),
        I::I32Const(t.none as i32),
        I::I32Eq,
        I::BrIf(1),
    ]);
    a.op(I::LocalGet(st));
    a.load_w(t.kw, t.w);
    a.op(I::LocalSet(k));
    a.ops([I::LocalGet(j), I::LocalGet(k)]);
    a.load_w(s.kwlen, 2);
    a.ops([I::I32Sub, I::LocalSet(start)]);
    // start == 0 || !word[nbuf[start - 1]]
    a.ops([
        I::LocalGet(start),
        I::I32Eqz,
        I::If(BlockType::Result(ValType::I32)),
        I::I32Const(1),
        I::Else,
        I::LocalGet(start),
        I::I32Const(1),
        I::I32Sub,
        I::I32Load8U(ma(s.nbuf, 0)),
        I::I32Load8U(ma(s.word, 0)),
        I::I32Eqz,
        I::End,
        I::If(BlockType::Empty),
        I::LocalGet(k),
        I::LocalGet(subj),
        I::Call(found),
        I::End,
    ]);
    a.op(I::LocalGet(st));
    a.load_w(t.out, t.w);
    a.ops([I::LocalSet(st), I::Br(0)]);
    a.op(I::End);
    a.op(I::End);
    a.finish(vec![(3, ValType::I32)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::cues::naive_keyword_matches as reference;

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
