//! `trade(mask, price) -> mask`: the subset of the mask a `trade` keeps,
//! computed as [`crate::interp::trade`] computes it, value for value.
//!
//! ```text
//!   TOKENS (5 x f64, filled by select)      shown counts (31 x f64, input)
//!            |                                         |
//!   all = sum over S T G V R from +0.0      total = count of {S,T,G,V,R}
//!            \_______________ m = 1..31, m within the mask ____/
//!                 value = count(m) / total - price * tokens(m) / all
//!                 best  = higher value, or equal value with fewer tokens
//! ```

use super::*;

impl Gen<'_> {
    /// The trade function; without a `trade`, it returns the mask as it is
    /// (it is never called then, but keeps the function indices fixed).
    pub(super) fn trade_fn(&self) -> Function {
        let (mask, price) = (0, 1);
        let (m, best, s) = (2, 3, 4);
        let (total, all, tokens, value, best_v, best_c) = (5, 6, 7, 8, 9, 10);
        let mut a = Asm::new(0);
        if self.program.trade.is_none() {
            a.op(I::LocalGet(mask));
            return a.finish(vec![]);
        }
        // The shown counts follow the feature array; entry k is mask k + 1.
        let shown = self.layout.input + abi::HEADER_BYTES as u64 + 8 * self.slots.len() as u64;
        let count_of = |local: u32| {
            [
                I::LocalGet(local),
                I::I32Const(3),
                I::I32Shl,
                I::F64Load(ma(shown - 8, 3)),
            ]
        };
        a.ops([I::I32Const(31), I::LocalSet(m)]);
        emit_sum_tokens(&mut a, m, all, s);
        a.ops(count_of(m));
        a.ops([
            I::LocalTee(total),
            I::F64Const(0.0.into()),
            I::F64Gt,
            I::LocalGet(all),
            I::F64Const(0.0.into()),
            I::F64Gt,
            I::I32And,
            I::I32Eqz,
            I::If(BlockType::Empty),
            I::LocalGet(mask),
            I::Return,
            I::End,
        ]);
        a.ops([I::I32Const(1), I::LocalSet(m)]);
        a.counted_loop(m, I::I32Const(32), |a| {
            // Only subsets of the mask.
            a.ops([
                I::LocalGet(m),
                I::LocalGet(mask),
                I::I32Const(-1),
                I::I32Xor,
                I::I32And,
                I::I32Eqz,
                I::If(BlockType::Empty),
            ]);
            emit_sum_tokens(a, m, tokens, s);
            a.ops(count_of(m));
            a.ops([
                I::LocalGet(total),
                I::F64Div,
                I::LocalGet(price),
                I::LocalGet(tokens),
                I::F64Mul,
                I::LocalGet(all),
                I::F64Div,
                I::F64Sub,
                I::LocalSet(value),
                // The first candidate, a higher value, or an equal value
                // with fewer tokens replaces the best.
                I::LocalGet(best),
                I::I32Eqz,
                I::LocalGet(value),
                I::LocalGet(best_v),
                I::F64Gt,
                I::I32Or,
                I::LocalGet(value),
                I::LocalGet(best_v),
                I::F64Eq,
                I::LocalGet(tokens),
                I::LocalGet(best_c),
                I::F64Lt,
                I::I32And,
                I::I32Or,
                I::If(BlockType::Empty),
                I::LocalGet(m),
                I::LocalSet(best),
                I::LocalGet(value),
                I::LocalSet(best_v),
                I::LocalGet(tokens),
                I::LocalSet(best_c),
                I::End,
                I::End,
            ]);
        });
        // No candidate (an empty mask): the mask as it is.
        a.ops([
            I::LocalGet(best),
            I::LocalGet(mask),
            I::LocalGet(best),
            I::Select,
        ]);
        a.finish(vec![(3, ValType::I32), (6, ValType::F64)])
    }
}

/// `tokens(x)` summed into `into`, in S T G V R order from +0.0 (as the
/// interpreter sums), with `s` as the loop's counter.
fn emit_sum_tokens(a: &mut Asm, x: u32, into: u32, s: u32) {
    a.ops([
        I::F64Const(0.0.into()),
        I::LocalSet(into),
        I::I32Const(0),
        I::LocalSet(s),
    ]);
    a.counted_loop(s, I::I32Const(5), |a| {
        a.bit(x, s);
        a.ops([
            I::If(BlockType::Empty),
            I::LocalGet(into),
            I::LocalGet(s),
            I::I32Const(3),
            I::I32Shl,
            I::F64Load(ma(TOKENS, 3)),
            I::F64Add,
            I::LocalSet(into),
            I::End,
        ]);
    });
}
