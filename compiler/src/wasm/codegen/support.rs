//! The module's helper functions: trace records (one, and the rules'
//! replay), the token budget, case-insensitive equality and top-k.

use super::select::RULE_FIRED;
use super::*;

impl Gen<'_> {
    /// `trace_rules(evaluated, default)`: the trace records of the first
    /// `evaluated` rules, replayed from `rule_out` and the actions: the
    /// masks before and after each rule follow from the default, each
    /// rule's mask and its action, as `select` applied them.
    pub(super) fn trace_rules_fn(&self) -> Function {
        let (evaluated, mask) = (0, 1);
        let (i, v, t, act, after) = (2, 3, 4, 5, 6);
        let l = self.layout;
        let mut a = Asm::new(0);
        a.ops([I::I32Const(0), I::LocalSet(i)]);
        a.counted_loop(i, I::LocalGet(evaluated), |a| {
            a.ops([
                I::LocalGet(i),
                I::I32Const(2),
                I::I32Shl,
                I::I32Load(ma(l.rule_out, 2)),
                I::LocalTee(v),
                I::I32Const(RULE_FIRED),
                I::I32And,
                I::If(BlockType::Empty),
                I::LocalGet(v),
                I::I32Const(0xff),
                I::I32And,
                I::LocalSet(t),
                I::LocalGet(i),
                I::I32Load8U(ma(l.actions, 0)),
                I::LocalSet(act),
                // select: t; add: mask | t; remove: mask & !t
                I::LocalGet(t),
                I::LocalGet(mask),
                I::LocalGet(t),
                I::I32Or,
                I::LocalGet(mask),
                I::LocalGet(t),
                I::I32Const(-1),
                I::I32Xor,
                I::I32And,
                I::LocalGet(act),
                I::I32Const(1),
                I::I32Eq,
                I::Select,
                I::LocalGet(act),
                I::I32Eqz,
                I::Select,
                I::LocalSet(after),
                I::I32Const(record::RULE as i32),
                I::I32Const(1),
                I::LocalGet(mask),
                I::LocalGet(after),
                I::LocalGet(i),
                I::F64Const(0.0.into()),
                I::F64Const(0.0.into()),
                I::Call(F_TRACE),
                I::LocalGet(after),
                I::LocalSet(mask),
                I::Else,
                I::I32Const(record::RULE as i32),
                I::I32Const(0),
                I::LocalGet(mask),
                I::LocalGet(mask),
                I::LocalGet(i),
                I::F64Const(0.0.into()),
                I::F64Const(0.0.into()),
                I::Call(F_TRACE),
                I::End,
            ]);
        });
        a.finish(vec![(5, ValType::I32)])
    }

    /// `trace(kind, a, before, after, index, x, y)`: appends one record.
    pub(super) fn trace_fn(&self) -> Function {
        let mut a = Asm::new(0);
        let p = 7;
        a.ops([
            I::I32Const(0),
            I::I32Load(ma(TRACE_N, 2)),
            I::I32Const(abi::TRACE_RECORD_BYTES as i32),
            I::I32Mul,
            I::I32Const(self.layout.trace as i32),
            I::I32Add,
            I::LocalSet(p),
        ]);
        for (param, off) in [(0, 0), (1, 1), (2, 2), (3, 3)] {
            a.ops([I::LocalGet(p), I::LocalGet(param), I::I32Store8(ma(off, 0))]);
        }
        a.ops([I::LocalGet(p), I::LocalGet(4), I::I32Store(ma(4, 2))]);
        a.ops([I::LocalGet(p), I::LocalGet(5), I::F64Store(ma(8, 3))]);
        a.ops([I::LocalGet(p), I::LocalGet(6), I::F64Store(ma(16, 3))]);
        a.ops([
            I::I32Const(0),
            I::I32Const(0),
            I::I32Load(ma(TRACE_N, 2)),
            I::I32Const(1),
            I::I32Add,
            I::I32Store(ma(TRACE_N, 2)),
        ]);
        a.finish(vec![(1, ValType::I32)])
    }

    /// `budget(mask, limit) -> mask`, with the token estimates in TOKENS.
    pub(super) fn budget_fn(&self) -> Function {
        let (mask, limit) = (0, 1);
        let (s, drop, est) = (2, 3, 4);
        let tokens_at = |local: u32| {
            [
                I::LocalGet(local),
                I::I32Const(3),
                I::I32Shl,
                I::F64Load(ma(TOKENS, 3)),
            ]
        };
        let mut a = Asm::new(0);
        a.op(I::Loop(BlockType::Empty));
        // est = sum of tokens over the mask, in structure order from +0.0.
        a.ops([
            I::F64Const(0.0.into()),
            I::LocalSet(est),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.bit(mask, s);
            a.ops([I::If(BlockType::Empty), I::LocalGet(est)]);
            a.ops(tokens_at(s));
            a.ops([I::F64Add, I::LocalSet(est), I::End]);
        });
        a.ops([
            I::LocalGet(mask),
            I::I32Popcnt,
            I::I32Const(1),
            I::I32LeU,
            I::LocalGet(est),
            I::LocalGet(limit),
            I::F64Gt,
            I::I32Eqz,
            I::I32Or,
            I::If(BlockType::Empty),
            I::LocalGet(mask),
            I::Return,
            I::End,
        ]);
        // drop = the costliest; ties go to the later structure.
        a.ops([
            I::I32Const(-1),
            I::LocalSet(drop),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.bit(mask, s);
            a.ops([
                I::If(BlockType::Empty),
                I::LocalGet(drop),
                I::I32Const(0),
                I::I32LtS,
                I::If(BlockType::Result(ValType::I32)),
                I::I32Const(1),
                I::Else,
            ]);
            a.ops(tokens_at(s));
            a.ops(tokens_at(drop));
            a.ops([
                I::F64Ge,
                I::End,
                I::If(BlockType::Empty),
                I::LocalGet(s),
                I::LocalSet(drop),
                I::End,
                I::End,
            ]);
        });
        a.ops([
            I::I32Const(0),
            I::I32Load(ma(self.layout.input + 20, 2)),
            I::I32Const(abi::FLAG_TRACE as i32),
            I::I32And,
            I::If(BlockType::Empty),
            I::I32Const(record::BUDGET as i32),
            I::LocalGet(drop),
            I::I32Const(0),
            I::I32Const(0),
            I::I32Const(0),
        ]);
        a.ops(tokens_at(drop));
        a.ops([I::LocalGet(est), I::Call(F_TRACE), I::End]);
        a.ops([
            I::LocalGet(mask),
            I::I32Const(1),
            I::LocalGet(drop),
            I::I32Shl,
            I::I32Const(-1),
            I::I32Xor,
            I::I32And,
            I::LocalSet(mask),
            I::Br(0),
        ]);
        a.op(I::End);
        a.op(I::LocalGet(mask));
        a.finish(vec![(2, ValType::I32), (1, ValType::F64)])
    }
}

/// `eq_ci(a_ptr, a_len, b_ptr, b_len) -> i32`: ASCII case-insensitive
/// equality with a lower-cased constant.
pub(super) fn eq_ci_fn() -> Function {
    let (pa, la, pb, lb) = (0, 1, 2, 3);
    let (i, c) = (4, 5);
    let mut a = Asm::new(0);
    a.ops([
        I::LocalGet(la),
        I::LocalGet(lb),
        I::I32Ne,
        I::If(BlockType::Empty),
        I::I32Const(0),
        I::Return,
        I::End,
    ]);
    a.op(I::Loop(BlockType::Empty));
    a.ops([
        I::LocalGet(i),
        I::LocalGet(la),
        I::I32GeU,
        I::If(BlockType::Empty),
        I::I32Const(1),
        I::Return,
        I::End,
    ]);
    a.byte_at(pa, i);
    a.ops([
        I::LocalSet(c),
        I::LocalGet(c),
        I::I32Const(32),
        I::I32Add,
        I::LocalGet(c),
        I::LocalGet(c),
        I::I32Const(65),
        I::I32Sub,
        I::I32Const(26),
        I::I32LtU,
        I::Select,
    ]);
    a.byte_at(pb, i);
    a.ops([
        I::I32Ne,
        I::If(BlockType::Empty),
        I::I32Const(0),
        I::Return,
        I::End,
    ]);
    a.incr(i).op(I::Br(0));
    a.op(I::End);
    a.op(I::I32Const(0));
    a.finish(vec![(2, ValType::I32)])
}

/// `top_k(k, has_threshold, threshold) -> mask`, with the scores in SCORES.
pub(super) fn top_k_fn() -> Function {
    let (k, has_thr, thr) = (0, 1, 2);
    let (chosen, n, best, s, v, bestv) = (3, 4, 5, 6, 7, 8);
    let mut a = Asm::new(0);
    // Scores not strictly above the threshold are never chosen (made NaN).
    a.op(I::LocalGet(has_thr));
    a.op(I::If(BlockType::Empty));
    for i in 0..5u64 {
        a.ops([
            I::I32Const(0),
            I::F64Load(ma(SCORES + 8 * i, 3)),
            I::LocalGet(thr),
            I::F64Gt,
            I::I32Eqz,
            I::If(BlockType::Empty),
            I::I32Const(0),
            I::F64Const(f64::NAN.into()),
            I::F64Store(ma(SCORES + 8 * i, 3)),
            I::End,
        ]);
    }
    a.op(I::End);
    // k rounds; each takes the highest remaining score (earlier wins ties).
    a.counted_loop(n, I::LocalGet(k), |a| {
        a.ops([
            I::I32Const(-1),
            I::LocalSet(best),
            I::I32Const(0),
            I::LocalSet(s),
        ]);
        a.counted_loop(s, I::I32Const(5), |a| {
            a.ops([
                I::LocalGet(s),
                I::I32Const(3),
                I::I32Shl,
                I::F64Load(ma(SCORES, 3)),
                I::LocalSet(v),
            ]);
            // not chosen, not NaN, and (no best yet or strictly better)
            a.bit(chosen, s);
            a.ops([
                I::I32Eqz,
                I::LocalGet(v),
                I::LocalGet(v),
                I::F64Eq,
                I::I32And,
                I::LocalGet(best),
                I::I32Const(0),
                I::I32LtS,
                I::LocalGet(v),
                I::LocalGet(bestv),
                I::F64Gt,
                I::I32Or,
                I::I32And,
                I::If(BlockType::Empty),
                I::LocalGet(s),
                I::LocalSet(best),
                I::LocalGet(v),
                I::LocalSet(bestv),
                I::End,
            ]);
        });
        // No candidate left: stop.
        a.ops([I::LocalGet(best), I::I32Const(0), I::I32LtS, I::BrIf(1)]);
        a.ops([
            I::LocalGet(chosen),
            I::I32Const(1),
            I::LocalGet(best),
            I::I32Shl,
            I::I32Or,
            I::LocalSet(chosen),
        ]);
    });
    a.op(I::LocalGet(chosen));
    a.finish(vec![(4, ValType::I32), (2, ValType::F64)])
}
