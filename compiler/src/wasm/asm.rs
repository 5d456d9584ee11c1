//! Small helpers for emitting WebAssembly: memory arguments, the data
//! segment under construction, and an instruction buffer with typed
//! shorthands. Shared by the code generator and the keyword scanners.

use wasm_encoder::{BlockType, Function, Instruction as I, MemArg, ValType};

/// A memory argument for memory 0 with a constant `offset` and alignment
/// `2^align`.
pub(super) fn ma(offset: u64, align: u32) -> MemArg {
    MemArg {
        offset,
        align,
        memory_index: 0,
    }
}

/// The data segment under construction and where each table lives.
pub(super) struct Data {
    /// The address of the first byte.
    base: u64,
    /// The bytes so far.
    pub(super) bytes: Vec<u8>,
}

impl Data {
    /// An empty segment placed at `base`.
    pub(super) fn new(base: u64) -> Self {
        Data {
            base,
            bytes: Vec::new(),
        }
    }

    pub(super) fn align(&mut self, a: usize) {
        while !(self.base as usize + self.bytes.len()).is_multiple_of(a) {
            self.bytes.push(0);
        }
    }

    /// Appends bytes (aligned to `a`) and returns their address.
    pub(super) fn put(&mut self, a: usize, bytes: &[u8]) -> u64 {
        self.align(a);
        let at = self.base + self.bytes.len() as u64;
        self.bytes.extend_from_slice(bytes);
        at
    }

    /// Appends values of width 2 or 4 bytes.
    pub(super) fn put_w(&mut self, w: u32, values: impl IntoIterator<Item = u32>) -> u64 {
        let mut b = Vec::new();
        for v in values {
            if w == 2 {
                b.extend_from_slice(&(v as u16).to_le_bytes());
            } else {
                b.extend_from_slice(&v.to_le_bytes());
            }
        }
        self.put(w as usize, &b)
    }

    pub(super) fn end(&self) -> u64 {
        self.base + self.bytes.len() as u64
    }
}

/// Instructions plus the bookkeeping for temporary locals.
pub(super) struct Asm {
    /// The instructions so far.
    pub(super) code: Vec<I<'static>>,
    /// First f64 temporary local and how many are in use / were ever used.
    f64_base: u32,
    f64_used: u32,
    pub(super) f64_max: u32,
}

impl Asm {
    pub(super) fn new(f64_base: u32) -> Self {
        Asm {
            code: Vec::new(),
            f64_base,
            f64_used: 0,
            f64_max: 0,
        }
    }
    pub(super) fn op(&mut self, i: I<'static>) -> &mut Self {
        self.code.push(i);
        self
    }
    pub(super) fn ops(&mut self, is: impl IntoIterator<Item = I<'static>>) -> &mut Self {
        self.code.extend(is);
        self
    }
    pub(super) fn temp(&mut self) -> u32 {
        let t = self.f64_base + self.f64_used;
        self.f64_used += 1;
        self.f64_max = self.f64_max.max(self.f64_used);
        t
    }
    pub(super) fn free(&mut self) {
        self.f64_used -= 1;
    }
    /// Loads a table entry of width `w` at `base + index * w`; the index is on the stack.
    pub(super) fn load_w(&mut self, base: u64, w: u32) -> &mut Self {
        if w == 2 {
            self.ops([I::I32Const(1), I::I32Shl, I::I32Load16U(ma(base, 1))])
        } else {
            self.ops([I::I32Const(2), I::I32Shl, I::I32Load(ma(base, 2))])
        }
    }
    /// Pushes the byte at `ptr + i` (two locals).
    pub(super) fn byte_at(&mut self, ptr: u32, i: u32) -> &mut Self {
        self.ops([
            I::LocalGet(ptr),
            I::LocalGet(i),
            I::I32Add,
            I::I32Load8U(ma(0, 0)),
        ])
    }
    /// `local += 1`.
    pub(super) fn incr(&mut self, local: u32) -> &mut Self {
        self.ops([
            I::LocalGet(local),
            I::I32Const(1),
            I::I32Add,
            I::LocalSet(local),
        ])
    }
    /// Pushes bit `bit` (a local) of `mask` (a local), as 0 or 1.
    pub(super) fn bit(&mut self, mask: u32, bit: u32) -> &mut Self {
        self.ops([
            I::LocalGet(mask),
            I::LocalGet(bit),
            I::I32ShrU,
            I::I32Const(1),
            I::I32And,
        ])
    }
    /// `while counter < limit { body; counter += 1 }` (unsigned), with the
    /// counter set by the caller. Inside `body` (outside any block of its
    /// own), `br 1` leaves the loop.
    pub(super) fn counted_loop(
        &mut self,
        counter: u32,
        limit: I<'static>,
        body: impl FnOnce(&mut Asm),
    ) -> &mut Self {
        self.op(I::Block(BlockType::Empty));
        self.op(I::Loop(BlockType::Empty));
        self.ops([I::LocalGet(counter), limit, I::I32GeU, I::BrIf(1)]);
        body(self);
        self.incr(counter);
        self.ops([I::Br(0), I::End, I::End])
    }
    pub(super) fn finish(self, locals: Vec<(u32, ValType)>) -> Function {
        let mut f = Function::new(locals);
        for i in &self.code {
            f.instruction(i);
        }
        f.instruction(&I::End);
        f
    }
}
