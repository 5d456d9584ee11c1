//! The pattern scan in the generated module: one function per DFA group,
//! `(ptr, end) -> i64`, the mask of the group's patterns that match the
//! bytes `ptr..end`. [`PatternDfa::scan_skipping`] is its reference.
//!
//! The loop is the one a DFA needs, one dependent table load per byte, made
//! cheap three ways:
//! - A state is held as its row's byte offset in the transition table
//!   (rows padded to a power of two), so the next state is
//!   `next[(s & !3) + class_offset[b]]`: no multiply on the chain from one
//!   byte's state to the next.
//! - The two low bits of that offset are flags: [`MATCH`] (the state ends a
//!   match; only then is the mask table read) and [`IDLE`] (see
//!   [`IdleSkip`](super::patterns::IdleSkip)). In an idle state the loop
//!   passes over skippable bytes, eight at a time, looking only at each
//!   byte: no chain at all. Most bytes of real text are skippable for
//!   literal-led patterns.
//! - The scan stops early once every pattern of the group has matched.
//!
//! The keyword scan and the word count run in their own loop afterwards
//! ([`super::kwscan`]); a separate loop per group keeps each loop's state in
//! registers.

use super::asm::{ma, Asm, Data};
use super::patterns::{EntryLayout, PatternDfa};
use wasm_encoder::{BlockType, Function, Instruction as I, ValType};

/// Entry flag: the state ends a match of some pattern.
const MATCH: u32 = 1;
/// Entry flag: the state is idle (skippable bytes may be passed over).
const IDLE: u32 = 2;
/// Bytes the skip tests at once before going byte by byte: one branch and
/// one bound check per run instead of per byte.
const SKIP_RUN: u32 = 8;

// The scan function's parameters (`ptr`, `end`) and locals: the state's
// entry, a landing entry, the last of eight landing entries, the mask.
const L_PTR: u32 = 0;
const L_END: u32 = 1;
const L_STATE: u32 = 2;
const L_ENTRY: u32 = 3;
const L_LAST: u32 = 4;
const L_MASK: u32 = 5;

/// Addresses and constants of one group's tables in the data segment.
pub(super) struct PatternScan {
    layout: EntryLayout,
    /// The start state's entry.
    start: u32,
    /// Patterns the start state matches (the empty text's matches before
    /// end of text).
    start_mask: u64,
    /// Every pattern bit of the group.
    all: u64,
    /// Per raw byte: its class's offset in a row (u16).
    class_offsets: u64,
    /// Rows of entries.
    next: u64,
    /// Per raw byte: the entry of the state a skippable byte lands on, or 0
    /// (no [`IDLE`] flag: stop skipping).
    land: u64,
    /// Per state: the index of the state after end of text.
    eoi: u64,
    /// Per state: its match mask (u64).
    masks: u64,
    /// Whether any state is idle.
    skips: bool,
}

impl PatternScan {
    /// Lays out `dfa`'s tables in `data`. Fails when an entry does not fit
    /// 32 bits (a DFA far beyond the checker's limits).
    pub(super) fn put(dfa: &PatternDfa, data: &mut Data) -> Result<PatternScan, String> {
        let layout = dfa.entry_layout();
        let skip = dfa.idle_skip();
        let too_large = || format!("a pattern DFA of {} states", dfa.len());
        let entry = |t: u32| -> Result<u32, String> {
            let row = t
                .checked_shl(layout.shift)
                .filter(|r| r >> layout.shift == t);
            let row = row.ok_or_else(too_large)?;
            let mut flags = 0;
            if dfa.matches[t as usize] != 0 {
                flags |= MATCH;
            }
            if skip.idle[t as usize] {
                flags |= IDLE;
            }
            Ok(row | flags)
        };
        let c = dfa.class_count;
        let row_entries = (1usize << layout.shift) / layout.width as usize;
        let mut rows = Vec::with_capacity(dfa.len() * row_entries);
        for s in 0..dfa.len() {
            for k in 0..row_entries {
                rows.push(if k < c {
                    entry(dfa.next[s * c + k])?
                } else {
                    0
                });
            }
        }
        let land = skip
            .land
            .iter()
            .map(|l| l.map_or(Ok(0), entry))
            .collect::<Result<Vec<u32>, String>>()?;
        let masks: Vec<u8> = dfa.matches.iter().flat_map(|m| m.to_le_bytes()).collect();
        let w = layout.width;
        Ok(PatternScan {
            layout,
            start: entry(0)?,
            start_mask: dfa.matches[0],
            all: dfa.matches.iter().fold(0, |a, m| a | m),
            class_offsets: data.put_w(2, dfa.classes.iter().map(|&k| u32::from(k) * w)),
            next: data.put_w(w, rows),
            land: data.put_w(w, land),
            eoi: data.put_w(w, dfa.eoi.iter().copied()),
            masks: data.put(8, &masks),
            skips: skip.idle.iter().any(|&i| i),
        })
    }

    /// Loads the entry-width value at `base + offset`, the offset on the
    /// stack.
    fn load_entry(&self, a: &mut Asm, base: u64) {
        a.op(if self.layout.width == 2 {
            I::I32Load16U(ma(base, 1))
        } else {
            I::I32Load(ma(base, 2))
        });
    }

    /// Pushes `pm | masks[state index]`, the state's entry on the stack.
    fn or_mask(&self, a: &mut Asm, pm: u32) {
        a.ops([
            I::I32Const(self.layout.shift as i32),
            I::I32ShrU,
            I::I32Const(3),
            I::I32Shl,
            I::I64Load(ma(self.masks, 3)),
            I::LocalGet(pm),
            I::I64Or,
        ]);
    }

    /// While `s` is idle and the next byte is skippable: `s = land[b]`;
    /// eight bytes at a time while they all are, then one at a time.
    fn emit_idle_skip(&self, a: &mut Asm) {
        let (ptr, end, s, t, u) = (L_PTR, L_END, L_STATE, L_ENTRY, L_LAST);
        let width_shift = self.layout.width.trailing_zeros() as i32;
        a.ops([
            I::LocalGet(s),
            I::I32Const(IDLE as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::Loop(BlockType::Empty), // $eights
            I::LocalGet(end),
            I::LocalGet(ptr),
            I::I32Sub,
            I::I32Const(SKIP_RUN as i32),
            I::I32GeU,
            I::If(BlockType::Empty),
        ]);
        // t = land[b7] & ... & land[b0], keeping land[b7] in u.
        for k in (0..SKIP_RUN).rev() {
            a.ops([
                I::LocalGet(ptr),
                I::I32Load8U(ma(k as u64, 0)),
                I::I32Const(width_shift),
                I::I32Shl,
            ]);
            self.load_entry(a, self.land);
            if k == SKIP_RUN - 1 {
                a.op(I::LocalTee(u));
            } else {
                a.op(I::I32And);
            }
        }
        a.ops([
            I::I32Const(IDLE as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::LocalGet(u),
            I::LocalSet(s),
            I::LocalGet(ptr),
            I::I32Const(SKIP_RUN as i32),
            I::I32Add,
            I::LocalSet(ptr),
            I::Br(2), // $eights
            I::End,
            I::End,
            I::End,                    // loop $eights
            I::Loop(BlockType::Empty), // $skip
            I::LocalGet(ptr),
            I::LocalGet(end),
            I::I32LtU,
            I::If(BlockType::Empty),
            I::LocalGet(ptr),
            I::I32Load8U(ma(0, 0)),
            I::I32Const(width_shift),
            I::I32Shl,
        ]);
        self.load_entry(a, self.land);
        a.ops([
            I::LocalTee(t),
            I::I32Const(IDLE as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::LocalGet(t),
            I::LocalSet(s),
        ]);
        a.incr(ptr);
        a.ops([
            I::Br(2), // $skip
            I::End,
            I::End,
            I::End, // loop $skip
            I::End,
        ]);
    }

    /// The group's scan function, `(ptr, end) -> i64`.
    pub(super) fn function(&self) -> Function {
        let (ptr, end, s, pm) = (L_PTR, L_END, L_STATE, L_MASK);
        let width_shift = self.layout.width.trailing_zeros() as i32;
        let mut a = Asm::new(0);
        a.ops([
            I::I64Const(self.start_mask as i64),
            I::LocalSet(pm),
            I::I32Const(self.start as i32),
            I::LocalSet(s),
        ]);
        a.op(I::Block(BlockType::Empty)); // $done
        a.op(I::Loop(BlockType::Empty)); // $top
        if self.skips {
            self.emit_idle_skip(&mut a);
        }
        a.ops([
            I::LocalGet(ptr),
            I::LocalGet(end),
            I::I32GeU,
            I::BrIf(1), // $done
            // s = next[(s & !3) + class_offsets[b]]
            I::LocalGet(s),
            I::I32Const(!3),
            I::I32And,
            I::LocalGet(ptr),
            I::I32Load8U(ma(0, 0)),
            I::I32Const(1),
            I::I32Shl,
            I::I32Load16U(ma(self.class_offsets, 1)),
            I::I32Add,
        ]);
        self.load_entry(&mut a, self.next);
        a.op(I::LocalSet(s));
        a.incr(ptr);
        a.ops([
            I::LocalGet(s),
            I::I32Const(MATCH as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::LocalGet(s),
        ]);
        self.or_mask(&mut a, pm);
        a.ops([
            I::LocalTee(pm),
            I::I64Const(self.all as i64),
            I::I64And,
            I::I64Const(self.all as i64),
            I::I64Eq,
            I::BrIf(2), // $done: every pattern of the group found
            I::End,
            I::Br(0), // $top
            I::End,   // loop $top
            I::End,   // block $done
        ]);
        // The state after end of text.
        a.ops([
            I::LocalGet(s),
            I::I32Const(self.layout.shift as i32),
            I::I32ShrU,
            I::I32Const(width_shift),
            I::I32Shl,
        ]);
        self.load_entry(&mut a, self.eoi);
        a.ops([
            I::I32Const(3),
            I::I32Shl,
            I::I64Load(ma(self.masks, 3)),
            I::LocalGet(pm),
            I::I64Or,
        ]);
        a.finish(vec![(3, ValType::I32), (1, ValType::I64)])
    }
}
