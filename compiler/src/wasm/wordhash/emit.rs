//! The generated scan's word-hash steps: the start, each byte, the end, and
//! the lookup with its byte-for-byte verification. [`super::WordTable::scan`]
//! is their reference.

use super::*;

/// The scan loop's locals this scheme reads and writes.
pub(in crate::wasm) struct Locals {
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
/// (with [`crate::wasm::kwscan::FIRST`]), the normalized text, and whether to
/// pass over dead regions too (see [`WordTable::scan`]; the code generator
/// does not when the policy counts words).
pub(in crate::wasm) struct DeadWordBuffers {
    pub classes: u64,
    pub nbuf: u64,
    pub regions: bool,
}

/// Before the loop: every hash starts at the basis, no span is live.
pub(in crate::wasm) fn emit_start(a: &mut Asm, t: &WordTables, l: &Locals) {
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
/// ([`crate::wasm::kwscan::FIRST`]) tells a word that may begin a keyword.
pub(in crate::wasm) fn emit_byte(
    a: &mut Asm,
    t: &WordTables,
    l: &Locals,
    b: &DeadWordBuffers,
    record: &dyn Fn(&mut Asm, u32),
) {
    let depth = t.depth as usize;
    let word = crate::wasm::kwscan::WORD as i32;
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
            I::I32Const(crate::wasm::kwscan::FIRST as i32),
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
        I::I32Const(crate::wasm::kwscan::WORD as i32),
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
        I::I32Const(crate::wasm::kwscan::FIRST as i32),
        I::I32And,
        I::I32Const(0),
        I::I32Ne,
        I::LocalGet(before),
        I::I32Const(crate::wasm::kwscan::WORD as i32),
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
pub(in crate::wasm) fn emit_end(
    a: &mut Asm,
    t: &WordTables,
    l: &Locals,
    record: &dyn Fn(&mut Asm, u32),
) {
    a.ops([
        I::LocalGet(l.prev),
        I::I32Const(crate::wasm::kwscan::WORD as i32),
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
pub(in crate::wasm) struct LookupLocals {
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
pub(in crate::wasm) fn emit_lookup(
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
pub(in crate::wasm) struct VerifyLocals {
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
