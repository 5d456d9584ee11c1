//! `select`: the input header, the scans, the rules (each recording what
//! it saw for `trace_rules`), the trade, the budget and the fallback.

use super::*;

// Locals of `select`.
pub(super) const L_MASK: u32 = 0;
pub(super) const L_DECIDED: u32 = 1;
pub(super) const L_BEFORE: u32 = 2;
pub(super) const L_T: u32 = 3;
pub(super) const L_P: u32 = 4;
pub(super) const L_LEN: u32 = 5;
pub(super) const L_TRACE: u32 = 6;
/// The number of rules evaluated (all, or up to the `select` that fired).
pub(super) const L_EVALUATED: u32 = 7;
pub(super) const SELECT_I32_LOCALS: u32 = 8;

/// In a rule's `rule_out` entry: the rule fired (masks use bits 0-4).
pub(super) const RULE_FIRED: i32 = 0x100;

/// A rule's action as `trace_rules` reads it.
pub(super) fn action_code(action: ActionKind) -> u8 {
    match action {
        ActionKind::Select => 0,
        ActionKind::Add => 1,
        ActionKind::Remove => 2,
    }
}

impl Gen<'_> {
    /// `select() -> i32`: the mask and the deciding rule, or an error code.
    pub(super) fn select(&self) -> Function {
        let mut a = Asm::new(SELECT_I32_LOCALS);
        self.read_header(&mut a);
        self.scan_texts(&mut a);
        self.run_rules(&mut a);
        self.finish_mask(&mut a);
        let f64s = a.f64_max;
        a.finish(vec![
            (SELECT_I32_LOCALS, ValType::I32),
            (f64s, ValType::F64),
        ])
    }

    /// Validates the input header (feature count, total size), records
    /// each text's pointer and length, and clears the previous call's
    /// scratch state. Returns an error code from `select` on bad input.
    fn read_header(&self, a: &mut Asm) {
        let l = self.layout;
        // The previews, then the 31 shown counts when the policy trades.
        let nfeat = self.program.features.slots() as u32;
        let input = l.input as i32;
        // Feature count.
        a.ops([
            I::I32Const(input),
            I::I32Load(ma(16, 2)),
            I::I32Const(nfeat as i32),
            I::I32Ne,
            I::If(BlockType::Empty),
            I::I32Const(abi::ERR_FEATURE_COUNT),
            I::Return,
            I::End,
        ]);
        // Total size, in 64-bit arithmetic so lengths cannot wrap.
        // The query is never absent: its length counts as written, so an
        // "absent" query (0xFFFFFFFF) is simply too large.
        a.op(I::I64Const((abi::HEADER_BYTES + 8 * nfeat) as i64));
        a.ops([
            I::I32Const(input),
            I::I32Load(ma(0, 2)),
            I::I64ExtendI32U,
            I::I64Add,
        ]);
        for f in 1..4u64 {
            a.ops([
                I::I32Const(input),
                I::I32Load(ma(4 * f, 2)),
                I::LocalTee(L_T),
                I::I64ExtendI32U,
                I::I64Const(0),
                I::LocalGet(L_T),
                I::I32Const(-1),
                I::I32Ne,
                I::Select,
                I::I64Add,
            ]);
        }
        a.ops([
            I::I64Const(abi::INPUT_CAPACITY as i64),
            I::I64GtU,
            I::If(BlockType::Empty),
            I::I32Const(abi::ERR_INPUT_TOO_LARGE),
            I::Return,
            I::End,
        ]);
        // Text pointers and lengths.
        a.ops([
            I::I32Const(input + (abi::HEADER_BYTES + 8 * nfeat) as i32),
            I::LocalSet(L_P),
        ]);
        for f in 0..4u64 {
            a.ops([
                I::I32Const(input),
                I::I32Load(ma(4 * f, 2)),
                I::LocalSet(L_LEN),
                I::I32Const(0),
                I::LocalGet(L_P),
                I::I32Store(ma(FIELD_PTR + 4 * f, 2)),
                I::I32Const(0),
                I::LocalGet(L_LEN),
                I::I32Store(ma(FIELD_LEN + 4 * f, 2)),
                I::LocalGet(L_P),
                I::LocalGet(L_LEN),
                I::I32Const(0),
                I::LocalGet(L_LEN),
                I::I32Const(-1),
                I::I32Ne,
                I::Select,
                I::I32Add,
                I::LocalSet(L_P),
            ]);
        }
        // Reset the scratch state of the previous call.
        a.ops([
            I::I32Const(FIXED_ZERO_START as i32),
            I::I32Const(0),
            I::I32Const((FIXED_ZERO_END - FIXED_ZERO_START) as i32),
            I::MemoryFill(0),
            I::I32Const(0),
            I::I32Const(0),
            I::I32Store(ma(TRACE_N, 2)),
        ]);
        if l.zero_end > l.counts {
            a.ops([
                I::I32Const(l.counts as i32),
                I::I32Const(0),
                I::I32Const((l.zero_end - l.counts) as i32),
                I::MemoryFill(0),
            ]);
        }
    }

    /// Scans the texts the policy reads.
    fn scan_texts(&self, a: &mut Asm) {
        let p = self.program;
        if p.features.query {
            a.ops([
                I::I32Const(0),
                I::I32Load(ma(FIELD_PTR, 2)),
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN, 2)),
                I::I32Const(0),
                I::Call(F_SCAN),
            ]);
        }
        if p.features.task {
            a.ops([
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN + 4, 2)),
                I::I32Const(-1),
                I::I32Ne,
                I::If(BlockType::Empty),
                I::I32Const(0),
                I::I32Load(ma(FIELD_PTR + 4, 2)),
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN + 4, 2)),
                I::I32Const(1),
                I::Call(F_SCAN),
                I::End,
            ]);
        }
    }

    /// The rules in order from the default, each an `if` that records what
    /// it saw in `rule_out`; then, when the call asked for a trace, the
    /// start record and the rules' records.
    fn run_rules(&self, a: &mut Asm) {
        let p = self.program;
        a.ops([
            I::I32Const(self.layout.input as i32),
            I::I32Load(ma(20, 2)),
            I::I32Const(abi::FLAG_TRACE as i32),
            I::I32And,
            I::LocalSet(L_TRACE),
        ]);
        let default = p.default.bits() as i32;
        a.ops([
            I::I32Const(default),
            I::LocalSet(L_MASK),
            I::I32Const(0),
            I::LocalSet(L_DECIDED),
        ]);
        trace_call(
            a,
            record::START,
            I::I32Const(default),
            I::I32Const(0),
            I::I32Const(0),
            0,
        );
        // The rules record what they saw in `rule_out`; the trace's rule
        // records are written from it afterwards, by one loop
        // (`trace_rules`), rather than by a call per rule: a call site per
        // rule doubled the code Cranelift compiles.
        a.ops([I::I32Const(p.rules.len() as i32), I::LocalSet(L_EVALUATED)]);
        a.op(I::Block(BlockType::Empty)); // $rules
        for (index, rule) in p.rules.iter().enumerate() {
            let out = ma(self.layout.rule_out + 4 * index as u64, 2);
            self.boolean(a, &rule.cond);
            a.op(I::If(BlockType::Empty));
            a.ops([I::LocalGet(L_MASK), I::LocalSet(L_BEFORE)]);
            self.mask_value(a, &rule.mask);
            a.ops([
                I::LocalSet(L_T),
                I::I32Const(0),
                I::LocalGet(L_T),
                I::I32Const(RULE_FIRED),
                I::I32Or,
                I::I32Store(out),
            ]);
            match rule.action {
                ActionKind::Select => {
                    a.ops([
                        I::LocalGet(L_T),
                        I::LocalSet(L_MASK),
                        I::I32Const(index as i32 + 1),
                        I::LocalTee(L_DECIDED),
                        I::LocalSet(L_EVALUATED),
                        I::Br(1),
                    ]);
                }
                ActionKind::Add | ActionKind::Remove => {
                    a.ops([I::LocalGet(L_BEFORE), I::LocalGet(L_T)]);
                    if rule.action == ActionKind::Remove {
                        a.ops([I::I32Const(-1), I::I32Xor, I::I32And]);
                    } else {
                        a.op(I::I32Or);
                    }
                    a.ops([
                        I::LocalTee(L_MASK),
                        I::LocalGet(L_BEFORE),
                        I::I32Ne,
                        I::If(BlockType::Empty),
                        I::I32Const(index as i32 + 1),
                        I::LocalSet(L_DECIDED),
                        I::End,
                    ]);
                }
            }
            a.ops([
                I::Else,
                I::I32Const(0),
                I::I32Const(0),
                I::I32Store(out),
                I::End,
            ]);
        }
        a.op(I::End); // $rules
        if !p.rules.is_empty() {
            a.ops([
                I::LocalGet(L_TRACE),
                I::If(BlockType::Empty),
                I::LocalGet(L_EVALUATED),
                I::I32Const(default),
                I::Call(F_TRACE_RULES),
                I::End,
            ]);
        }
    }

    /// The trade, the budget, then the fallback when the mask is empty;
    /// leaves the result (mask, and the deciding rule above bit 8) on the
    /// stack.
    fn finish_mask(&self, a: &mut Asm) {
        let p = self.program;
        if p.budget.is_some() || p.trade.is_some() {
            for s in Structure::ALL {
                a.op(I::I32Const(0));
                self.feature(a, s, Feature::Tokens);
                a.op(I::F64Store(ma(TOKENS + 8 * s.index() as u64, 3)));
            }
        }
        if let Some(t) = p.trade {
            a.ops([
                I::LocalGet(L_MASK),
                I::LocalTee(L_T),
                I::F64Const(t.price.into()),
                I::Call(F_TRADE),
                I::LocalSet(L_MASK),
            ]);
            trace_call(
                a,
                record::TRADE,
                I::I32Const(0),
                I::LocalGet(L_T),
                I::LocalGet(L_MASK),
                0,
            );
        }
        if let Some(limit) = p.budget {
            a.ops([
                I::LocalGet(L_MASK),
                I::F64Const(limit.into()),
                I::Call(F_BUDGET),
                I::LocalSet(L_MASK),
            ]);
        }
        let fallback = p.fallback.bits() as i32;
        a.ops([I::LocalGet(L_MASK), I::I32Eqz, I::If(BlockType::Empty)]);
        a.ops([I::I32Const(fallback), I::LocalSet(L_MASK)]);
        trace_call(
            a,
            record::FALLBACK,
            I::I32Const(fallback),
            I::I32Const(0),
            I::I32Const(0),
            0,
        );
        a.op(I::End);
        a.ops([
            I::LocalGet(L_MASK),
            I::LocalGet(L_DECIDED),
            I::I32Const(8),
            I::I32Shl,
            I::I32Or,
        ]);
    }
}

/// Emits `trace(kind, a, before, after, index, 0, 0)`.
fn trace_call(
    a: &mut Asm,
    kind: u8,
    x: I<'static>,
    before: I<'static>,
    after: I<'static>,
    index: usize,
) {
    // Only when the call asked for a trace.
    a.ops([
        I::LocalGet(L_TRACE),
        I::If(BlockType::Empty),
        I::I32Const(kind as i32),
        x,
        before,
        after,
        I::I32Const(index as i32),
        I::F64Const(0.0.into()),
        I::F64Const(0.0.into()),
        I::Call(F_TRACE),
        I::End,
    ]);
}
