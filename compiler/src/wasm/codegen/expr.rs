//! Conditions, numbers and masks of the rules, as Wasm expressions.

use super::select::L_MASK;
use super::*;

fn subject_index(s: Subject) -> u32 {
    match s {
        Subject::Query => 0,
        Subject::Task => 1,
    }
}

fn field_index(f: MetaField) -> u64 {
    match f {
        MetaField::Domain => 2,
        MetaField::Qtype => 3,
    }
}

impl Gen<'_> {
    pub(super) fn slot(&self, s: Structure, f: Feature) -> Option<u64> {
        self.slots
            .iter()
            .position(|x| *x == mesa_core::PreviewKey::new(s, f))
            .map(|i| i as u64)
    }

    pub(super) fn feature(&self, a: &mut Asm, s: Structure, f: Feature) {
        match self.slot(s, f) {
            Some(i) => {
                a.ops([
                    I::I32Const(0),
                    I::F64Load(ma(self.layout.input + abi::HEADER_BYTES as u64 + 8 * i, 3)),
                ]);
            }
            None => {
                a.op(I::F64Const(0.0.into()));
            }
        }
    }

    pub(super) fn boolean(&self, a: &mut Asm, e: &BoolExpr) {
        let l = self.layout;
        match e {
            BoolExpr::Const(b) => {
                a.op(I::I32Const(i32::from(*b)));
            }
            BoolExpr::Has(s, set) => {
                let off = (subject_index(*s) as u64 * l.nsets as u64 + *set as u64) * 4;
                a.ops([
                    I::I32Const(0),
                    I::I32Load(ma(l.counts + off, 2)),
                    I::I32Const(0),
                    I::I32Ne,
                ]);
            }
            BoolExpr::Matches(s, pat) => {
                a.ops([
                    I::I32Const(0),
                    I::I64Load(ma(PMASK + 8 * subject_index(*s) as u64, 3)),
                    I::I64Const(1i64 << *pat),
                    I::I64And,
                    I::I64Const(0),
                    I::I64Ne,
                ]);
            }
            BoolExpr::MetaIn(field, values) => self.meta_in(a, *field, values),
            BoolExpr::Cmp(op, x, y) => {
                self.num(a, x);
                self.num(a, y);
                a.op(match op {
                    CmpOp::Lt => I::F64Lt,
                    CmpOp::Le => I::F64Le,
                    CmpOp::Gt => I::F64Gt,
                    CmpOp::Ge => I::F64Ge,
                    CmpOp::Eq => I::F64Eq,
                    CmpOp::Ne => I::F64Ne,
                });
            }
            // An empty `and` is true and an empty `or` false, as in the
            // interpreter (the checker never builds them).
            BoolExpr::And(v) if v.is_empty() => {
                a.op(I::I32Const(1));
            }
            BoolExpr::Or(v) if v.is_empty() => {
                a.op(I::I32Const(0));
            }
            BoolExpr::And(v) => {
                // `a and b and c` is `if a { if b { c } else { 0 } } else { 0 }`:
                // each operand nests in the previous one's `then` branch.
                self.boolean(a, &v[0]);
                for x in &v[1..] {
                    a.op(I::If(BlockType::Result(ValType::I32)));
                    self.boolean(a, x);
                }
                for _ in 1..v.len() {
                    a.ops([I::Else, I::I32Const(0), I::End]);
                }
            }
            BoolExpr::Or(v) => {
                self.boolean(a, &v[0]);
                for x in &v[1..] {
                    a.ops([
                        I::If(BlockType::Result(ValType::I32)),
                        I::I32Const(1),
                        I::Else,
                    ]);
                    self.boolean(a, x);
                }
                for _ in 1..v.len() {
                    a.op(I::End);
                }
            }
            BoolExpr::Not(x) => {
                self.boolean(a, x);
                a.op(I::I32Eqz);
            }
            BoolExpr::If(c, x, y) => {
                self.choice(
                    a,
                    c,
                    ValType::I32,
                    |a| self.boolean(a, x),
                    |a| self.boolean(a, y),
                );
            }
        }
    }

    /// `FIELD in [V, ...]`: a case-insensitive comparison with each value,
    /// the later ones only when the earlier ones fail; false for no value.
    fn meta_in(&self, a: &mut Asm, field: MetaField, values: &[String]) {
        let f = field_index(field);
        if values.is_empty() {
            a.op(I::I32Const(0));
        }
        for (n, v) in values.iter().enumerate() {
            let at = self
                .meta_consts
                .iter()
                .find(|(x, _)| x == v)
                .map_or(0, |(_, at)| *at);
            if n > 0 {
                a.ops([
                    I::If(BlockType::Result(ValType::I32)),
                    I::I32Const(1),
                    I::Else,
                ]);
            }
            a.ops([
                I::I32Const(0),
                I::I32Load(ma(FIELD_PTR + 4 * f, 2)),
                I::I32Const(0),
                I::I32Load(ma(FIELD_LEN + 4 * f, 2)),
                I::I32Const(at as i32),
                I::I32Const(v.len() as i32),
                I::Call(F_EQ_CI),
            ]);
        }
        for _ in 1..values.len() {
            a.op(I::End);
        }
    }

    /// `if c then .. else ..` producing a value of type `ty`.
    pub(super) fn choice(
        &self,
        a: &mut Asm,
        c: &BoolExpr,
        ty: ValType,
        then: impl FnOnce(&mut Asm),
        otherwise: impl FnOnce(&mut Asm),
    ) {
        self.boolean(a, c);
        a.op(I::If(BlockType::Result(ty)));
        then(a);
        a.op(I::Else);
        otherwise(a);
        a.op(I::End);
    }

    pub(super) fn num(&self, a: &mut Asm, e: &NumExpr) {
        let l = self.layout;
        match e {
            NumExpr::Const(v) => {
                a.op(I::F64Const((*v).into()));
            }
            NumExpr::Preview(s, f) => self.feature(a, *s, *f),
            NumExpr::WordCount(s) => {
                a.ops([
                    I::I32Const(0),
                    I::F64Load(ma(WORDS + 8 * subject_index(*s) as u64, 3)),
                ]);
            }
            NumExpr::Hits(s, set) => {
                let off = (subject_index(*s) as u64 * l.nsets as u64 + *set as u64) * 4;
                a.ops([
                    I::I32Const(0),
                    I::I32Load(ma(l.counts + off, 2)),
                    I::F64ConvertI32U,
                ]);
            }
            NumExpr::Size => {
                a.ops([I::LocalGet(L_MASK), I::I32Popcnt, I::F64ConvertI32U]);
            }
            NumExpr::Neg(x) => {
                self.num(a, x);
                a.op(I::F64Neg);
            }
            NumExpr::Add(x, y) | NumExpr::Sub(x, y) | NumExpr::Mul(x, y) => {
                self.num(a, x);
                self.num(a, y);
                a.op(match e {
                    NumExpr::Add(..) => I::F64Add,
                    NumExpr::Sub(..) => I::F64Sub,
                    _ => I::F64Mul,
                });
            }
            NumExpr::Div(x, y) => {
                // x / y, or 0 when y == 0.
                let tx = a.temp();
                let ty = a.temp();
                self.num(a, x);
                a.op(I::LocalSet(tx));
                self.num(a, y);
                a.op(I::LocalSet(ty));
                a.ops([
                    I::F64Const(0.0.into()),
                    I::LocalGet(tx),
                    I::LocalGet(ty),
                    I::F64Div,
                    I::LocalGet(ty),
                    I::F64Const(0.0.into()),
                    I::F64Eq,
                    I::Select,
                ]);
                a.free();
                a.free();
            }
            NumExpr::Min(v) | NumExpr::Max(v) if v.is_empty() => {
                a.op(I::F64Const(f64::NAN.into()));
            }
            NumExpr::Min(v) | NumExpr::Max(v) => {
                // acc = first; acc = x when x is strictly better.
                let acc = a.temp();
                let tx = a.temp();
                self.num(a, &v[0]);
                a.op(I::LocalSet(acc));
                for x in &v[1..] {
                    self.num(a, x);
                    a.op(I::LocalSet(tx));
                    a.ops([
                        I::LocalGet(tx),
                        I::LocalGet(acc),
                        I::LocalGet(tx),
                        I::LocalGet(acc),
                        if matches!(e, NumExpr::Min(_)) {
                            I::F64Lt
                        } else {
                            I::F64Gt
                        },
                        I::Select,
                        I::LocalSet(acc),
                    ]);
                }
                a.op(I::LocalGet(acc));
                a.free();
                a.free();
            }
            NumExpr::If(c, x, y) => {
                self.choice(a, c, ValType::F64, |a| self.num(a, x), |a| self.num(a, y));
            }
        }
    }

    pub(super) fn mask_value(&self, a: &mut Asm, m: &MaskExpr) {
        match m {
            MaskExpr::Const(m) => {
                a.op(I::I32Const(m.bits() as i32));
            }
            MaskExpr::Top { k, above } => {
                for s in Structure::ALL {
                    a.op(I::I32Const(0));
                    match &self.program.scores[s.index()] {
                        Some(e) => self.num(a, e),
                        None => self.feature(a, s, Feature::Top),
                    }
                    a.op(I::F64Store(ma(SCORES + 8 * s.index() as u64, 3)));
                }
                a.op(I::I32Const(*k as i32));
                match above {
                    Some(x) => {
                        a.op(I::I32Const(1));
                        self.num(a, x);
                    }
                    None => {
                        a.ops([I::I32Const(0), I::F64Const(0.0.into())]);
                    }
                }
                a.op(I::Call(F_TOP_K));
            }
        }
    }
}
