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
    let mut flow = Flow {
        reach: MaskSet::single(program.default),
        ..Flow::default()
    };
    for (i, rule) in program.rules.iter().enumerate() {
        let span = stmts.get(i).map_or(rule.span, |s| s.span);
        if !flow.is_live(checker, program, i, span) {
            continue;
        }
        flow.step(checker, i, rule, span);
    }
    flow.results.0 |= flow.reach.0;
    let may_be_empty = flow.results.contains(Mask::EMPTY) || flow.may_be_empty_from_top;
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

/// What the rules so far can leave, followed rule by rule.
#[derive(Default)]
struct Flow {
    /// The masks that can reach the next rule.
    reach: MaskSet,
    /// The masks a `select` can return.
    results: MaskSet,
    /// Whether a `select top` can return the empty mask.
    may_be_empty_from_top: bool,
    /// The first rule that certainly stops evaluation.
    stopper: Option<usize>,
    /// Every select rule so far.
    selects: Vec<usize>,
}

impl Flow {
    /// Whether rule `i` can matter; when it cannot (unreachable, never
    /// fires, shadowed), says why and returns false.
    fn is_live(&self, checker: &mut Checker<'_>, program: &Program, i: usize, span: Span) -> bool {
        let rule = &program.rules[i];
        if self.reach.is_empty() {
            let mut d = Diagnostic::new(
                Code::W0100,
                span,
                format!("rule `{}` is unreachable", rule.name),
            )
            .with_help(
                "an earlier rule always selects and stops; move this rule above it or remove it",
            );
            if let Some(j) = self.stopper {
                d = d.with_label(program.rules[j].span, "this rule always stops evaluation");
            }
            checker.diags.push(d);
            return false;
        }
        if constant(&rule.cond) == Some(false) {
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
            return false;
        }
        // A condition that reads `size` may differ once a rule in between
        // has changed the mask, so only mask-free conditions shadow.
        let shadow = (!rule.cond.reads_size())
            .then(|| {
                self.selects
                    .iter()
                    .find(|&&j| program.rules[j].cond == rule.cond)
            })
            .flatten();
        let Some(&j) = shadow else { return true };
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
        false
    }

    /// Follows rule `i` (a live one): what it selects, or what it leaves
    /// for the next rule; warns when an add or remove cannot change the mask.
    fn step(&mut self, checker: &mut Checker<'_>, i: usize, rule: &crate::ir::Rule, span: Span) {
        let always = constant(&rule.cond) == Some(true);
        let after = match (&rule.action, &rule.mask) {
            (ActionKind::Select, mask) => {
                match mask {
                    MaskExpr::Const(m) => self.results.insert(*m),
                    MaskExpr::Top { .. } => self.may_be_empty_from_top = true,
                }
                self.selects.push(i);
                if always {
                    self.reach = MaskSet::default();
                    self.stopper = Some(i);
                }
                return;
            }
            (action, MaskExpr::Const(m)) => {
                let m = *m;
                let apply = |x: Mask| match action {
                    ActionKind::Add => x.union(m),
                    _ => x.without(m),
                };
                if self.reach.iter().all(|x| apply(x) == x) {
                    checker.diags.push(
                        Diagnostic::new(Code::W0105, span, format!("rule `{}` cannot change the mask", rule.name))
                            .with_help(format!(
                                "whenever it can fire, the mask already {} {}; remove the rule or change its mask",
                                if *action == ActionKind::Add { "has" } else { "lacks" },
                                m
                            )),
                    );
                }
                self.reach.map(apply)
            }
            // add/remove top-k: any mask the union/difference can give.
            (action, MaskExpr::Top { .. }) => {
                let mut any = MaskSet::default();
                for x in self.reach.iter() {
                    for b in 0..32u8 {
                        let t = Mask::from_bits(b);
                        any.insert(if *action == ActionKind::Add {
                            x.union(t)
                        } else {
                            x.without(t)
                        });
                    }
                }
                any
            }
        };
        self.reach = if always {
            after
        } else {
            MaskSet(self.reach.0 | after.0)
        };
    }
}
