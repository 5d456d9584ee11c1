//! Warnings about rules, and the proof that a policy never returns the empty
//! mask.
//!
//! Masks have five bits, so the set of masks a policy can hold before each
//! rule is a subset of 32 values: this pass tracks it exactly, treating every
//! condition that is not constant as possibly true and possibly false.

use super::Checker;
use crate::ir::{BoolExpr, MaskExpr, NumExpr, Program};
use mesa_core::Mask;
use mesa_grammar::ast::{ActionKind, Statement};
use mesa_grammar::{Code, Diagnostic, Span};

/// A set of masks, as a 32-bit set over mask values.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
struct MaskSet(u32);

impl MaskSet {
    fn single(m: Mask) -> Self {
        MaskSet(1 << m.bits())
    }
    fn insert(&mut self, m: Mask) {
        self.0 |= 1 << m.bits();
    }
    fn is_empty(self) -> bool {
        self.0 == 0
    }
    fn contains(self, m: Mask) -> bool {
        self.0 & (1 << m.bits()) != 0
    }
    fn iter(self) -> impl Iterator<Item = Mask> {
        (0..32u8)
            .filter(move |b| self.0 & (1 << b) != 0)
            .map(Mask::from_bits)
    }
    fn map(self, f: impl Fn(Mask) -> Mask) -> Self {
        let mut out = MaskSet::default();
        for m in self.iter() {
            out.insert(f(m));
        }
        out
    }
}

/// The constant value of an `and` (`absorbing` false) or an `or` (`absorbing`
/// true): the absorbing value if any operand has it, the other value if all
/// operands have that, else unknown.
fn junction(v: &[BoolExpr], absorbing: bool) -> Option<bool> {
    let vals: Vec<Option<bool>> = v.iter().map(constant).collect();
    if vals.contains(&Some(absorbing)) {
        Some(absorbing)
    } else if vals.iter().all(|x| *x == Some(!absorbing)) {
        Some(!absorbing)
    } else {
        None
    }
}

/// The value of a condition when it does not depend on the input.
pub(crate) fn constant(e: &BoolExpr) -> Option<bool> {
    match e {
        BoolExpr::Const(b) => Some(*b),
        BoolExpr::Not(x) => constant(x).map(|b| !b),
        BoolExpr::And(v) => junction(v, false),
        BoolExpr::Or(v) => junction(v, true),
        BoolExpr::Cmp(op, a, b) => match (a.as_ref(), b.as_ref()) {
            (NumExpr::Const(x), NumExpr::Const(y)) => Some(op.apply(*x, *y)),
            _ => None,
        },
        BoolExpr::If(c, a, b) => match constant(c)? {
            true => constant(a),
            false => constant(b),
        },
        BoolExpr::MetaIn(_, values) if values.is_empty() => Some(false),
        _ => None,
    }
}

pub(super) fn check_rules(
    checker: &mut Checker<'_>,
    program: &Program,
    stmts: &[&Statement],
    fallback_declared: bool,
    default_span: Option<Span>,
) {
    let mut reach = MaskSet::single(program.default);
    let mut results = MaskSet::default();
    let mut may_be_empty_from_top = false;
    // The first rule that certainly stops evaluation, and every select rule so far.
    let mut stopper: Option<usize> = None;
    let mut selects: Vec<usize> = Vec::new();
    for (i, rule) in program.rules.iter().enumerate() {
        let span = stmts.get(i).map_or(rule.span, |s| s.span);
        if reach.is_empty() {
            let mut d = Diagnostic::new(
                Code::W0100,
                span,
                format!("rule `{}` is unreachable", rule.name),
            )
            .with_help(
                "an earlier rule always selects and stops; move this rule above it or remove it",
            );
            if let Some(j) = stopper {
                d = d.with_label(program.rules[j].span, "this rule always stops evaluation");
            }
            checker.diags.push(d);
            continue;
        }
        let c = constant(&rule.cond);
        if c == Some(false) {
            checker.diags.push(
                Diagnostic::new(
                    Code::W0101,
                    span,
                    format!(
                        "rule `{}` can never fire: its condition is always false",
                        rule.name
                    ),
                )
                .with_help("fix the condition or remove the rule"),
            );
            continue;
        }
        // A condition that reads `size` may differ once a rule in between
        // has changed the mask, so only mask-free conditions shadow.
        let shadow = (!rule.cond.reads_size())
            .then(|| {
                selects
                    .iter()
                    .find(|&&j| program.rules[j].cond == rule.cond)
            })
            .flatten();
        if let Some(&j) = shadow {
            checker.diags.push(
                Diagnostic::new(
                    Code::W0102,
                    span,
                    format!(
                        "rule `{}` is shadowed: `{}` has the same condition and selects first",
                        rule.name, program.rules[j].name
                    ),
                )
                .with_label(program.rules[j].span, "this rule fires first and stops")
                .with_help("merge the two rules or change one condition"),
            );
            continue;
        }
        match (&rule.action, &rule.mask) {
            (ActionKind::Select, mask) => {
                match mask {
                    MaskExpr::Const(m) => results.insert(*m),
                    MaskExpr::Top { .. } => may_be_empty_from_top = true,
                }
                selects.push(i);
                if c == Some(true) {
                    reach = MaskSet::default();
                    stopper = Some(i);
                }
            }
            (action, MaskExpr::Const(m)) => {
                let m = *m;
                let apply = |x: Mask| match action {
                    ActionKind::Add => x.union(m),
                    _ => x.without(m),
                };
                if reach.iter().all(|x| apply(x) == x) {
                    checker.diags.push(
                        Diagnostic::new(Code::W0105, span, format!("rule `{}` cannot change the mask", rule.name))
                            .with_help(format!(
                                "whenever it can fire, the mask already {} {}; remove the rule or change its mask",
                                if *action == ActionKind::Add { "has" } else { "lacks" },
                                m
                            )),
                    );
                }
                let after = reach.map(apply);
                reach = if c == Some(true) {
                    after
                } else {
                    MaskSet(reach.0 | after.0)
                };
            }
            (_, MaskExpr::Top { .. }) => {
                // add/remove top-k: any mask the union/difference can give.
                let mut any = MaskSet::default();
                for x in reach.iter() {
                    for b in 0..32u8 {
                        let t = Mask::from_bits(b);
                        any.insert(if rule.action == ActionKind::Add {
                            x.union(t)
                        } else {
                            x.without(t)
                        });
                    }
                }
                reach = if c == Some(true) {
                    any
                } else {
                    MaskSet(reach.0 | any.0)
                };
            }
        }
    }
    results.0 |= reach.0;
    let may_be_empty = results.contains(Mask::EMPTY) || may_be_empty_from_top;
    if may_be_empty && !fallback_declared && program.default.is_empty() {
        checker.diags.push(
            Diagnostic::new(
                Code::E0400,
                default_span.unwrap_or_default(),
                "the policy can return the empty mask: the default is empty and no fallback is declared",
            )
            .with_help("declare a non-empty `fallback {S}`, or start from a non-empty default"),
        );
    }
}
