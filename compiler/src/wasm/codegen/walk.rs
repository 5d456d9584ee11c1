//! The expression nodes the code generator emits, walked in one place:
//! what a module needs to know before emitting code (constant strings,
//! whether words are counted).

use crate::ir::{BoolExpr, MaskExpr, NumExpr, Program};

/// An expression node, for [`walk_program`].
pub(super) enum Node<'a> {
    Bool(&'a BoolExpr),
    Num(&'a NumExpr),
}

/// Calls `f` on every expression node the code generator emits: rule
/// conditions, `top` thresholds and scores.
pub(super) fn walk_program<'a>(p: &'a Program, f: &mut impl FnMut(Node<'a>)) {
    for rule in &p.rules {
        walk_bool(&rule.cond, f);
        if let MaskExpr::Top { above: Some(t), .. } = &rule.mask {
            walk_num(t, f);
        }
    }
    for score in p.scores.iter().flatten() {
        walk_num(score, f);
    }
}

fn walk_bool<'a>(e: &'a BoolExpr, f: &mut impl FnMut(Node<'a>)) {
    f(Node::Bool(e));
    match e {
        BoolExpr::And(v) | BoolExpr::Or(v) => v.iter().for_each(|x| walk_bool(x, f)),
        BoolExpr::Not(x) => walk_bool(x, f),
        BoolExpr::If(c, a, b) => {
            walk_bool(c, f);
            walk_bool(a, f);
            walk_bool(b, f);
        }
        BoolExpr::Cmp(_, a, b) => {
            walk_num(a, f);
            walk_num(b, f);
        }
        BoolExpr::Const(_) | BoolExpr::Has(..) | BoolExpr::Matches(..) | BoolExpr::MetaIn(..) => {}
    }
}

fn walk_num<'a>(e: &'a NumExpr, f: &mut impl FnMut(Node<'a>)) {
    f(Node::Num(e));
    match e {
        NumExpr::If(c, a, b) => {
            walk_bool(c, f);
            walk_num(a, f);
            walk_num(b, f);
        }
        NumExpr::Neg(a) => walk_num(a, f),
        NumExpr::Add(a, b) | NumExpr::Sub(a, b) | NumExpr::Mul(a, b) | NumExpr::Div(a, b) => {
            walk_num(a, f);
            walk_num(b, f);
        }
        NumExpr::Min(v) | NumExpr::Max(v) => v.iter().for_each(|x| walk_num(x, f)),
        NumExpr::Const(_)
        | NumExpr::Preview(..)
        | NumExpr::WordCount(_)
        | NumExpr::Hits(..)
        | NumExpr::Size => {}
    }
}
