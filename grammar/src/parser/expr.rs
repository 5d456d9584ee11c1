//! The tree builder's expressions: one method per kind of operand, and
//! precedence climbing over the flat operand/operator lists pest yields.

use super::builder::{ident, subject};
use super::{mk, Builder, Built, Rule};
use crate::ast::*;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use pest::iterators::Pair;

const PREC_CMP: u8 = 4;
const PREC_NEG: u8 = 7;

impl Builder<'_> {
    pub(super) fn expr(&mut self, pair: Pair<'_, Rule>) -> Option<Built> {
        let span = self.span(&pair);
        match pair.as_rule() {
            Rule::expr => {
                let items: Vec<Pair<'_, Rule>> = pair.into_inner().collect();
                let mut pos = 0;
                self.climb(&items, &mut pos, 0, 0)
            }
            Rule::paren => {
                let (e, d) = self.expr(pair.into_inner().next()?)?;
                Some(mk(ExprKind::Paren(Box::new(e)), span, d + 1))
            }
            Rule::if_expr => self.if_expr(pair, span),
            Rule::call => self.call(pair, span),
            Rule::hits_call => {
                let mut inner = pair.into_inner();
                inner.next()?;
                let subject = subject(inner.next()?);
                let (set, d) = self.expr(inner.next()?)?;
                let set = Box::new(set);
                Some(mk(ExprKind::Hits { subject, set }, span, d + 1))
            }
            Rule::top_mask => self.top_mask(pair, span),
            Rule::has_pred | Rule::matches_pred => self.text_predicate(pair, span),
            Rule::meta_is | Rule::meta_in => self.meta(pair, span),
            Rule::name_ref => self.name_ref(pair, span),
            _ => self.leaf(pair, span),
        }
    }

    /// The operands without sub-expressions (depth 1).
    fn leaf(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let kind = match pair.as_rule() {
            Rule::word_count => ExprKind::WordCount(subject(pair.into_inner().next()?)),
            Rule::preview_ref => {
                let mut inner = pair.into_inner();
                inner.next()?;
                let structure = ident(inner.next()?);
                let feature = ident(inner.next()?);
                ExprKind::Preview { structure, feature }
            }
            Rule::size_ref => ExprKind::Size,
            Rule::words_lit => ExprKind::Words(
                pair.into_inner()
                    .filter(|p| p.as_rule() == Rule::string)
                    .map(|p| self.string(p))
                    .collect(),
            ),
            Rule::pattern_lit => {
                let s = pair.into_inner().find(|p| p.as_rule() == Rule::string)?;
                ExprKind::Pattern(self.string(s))
            }
            Rule::mask_lit => ExprKind::Mask(pair.into_inner().map(ident).collect()),
            Rule::all_lit => ExprKind::All,
            Rule::bool_lit => ExprKind::Bool(pair.into_inner().next()?.as_rule() == Rule::kw_true),
            Rule::number => ExprKind::Number(self.number(&pair)),
            Rule::std_ref => {
                let mut inner = pair.into_inner();
                inner.next()?;
                ExprKind::Std(ident(inner.next()?))
            }
            _ => return None,
        };
        Some(mk(kind, span, 1))
    }

    /// `if c then a else b`.
    fn if_expr(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let mut inner = pair
            .into_inner()
            .filter(|p| !matches!(p.as_rule(), Rule::kw_if | Rule::kw_then | Rule::kw_else));
        let (c, d1) = self.expr(inner.next()?)?;
        let (t, d2) = self.expr(inner.next()?)?;
        let (o, d3) = self.expr(inner.next()?)?;
        let kind = ExprKind::If {
            cond: Box::new(c),
            then: Box::new(t),
            otherwise: Box::new(o),
        };
        Some(mk(kind, span, d1.max(d2).max(d3) + 1))
    }

    /// `min(a, b, ...)` and `max(a, b, ...)`: two arguments or more.
    fn call(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let mut inner = pair.into_inner();
        let name = match inner.next()?.into_inner().next()?.as_rule() {
            Rule::kw_min => CallName::Min,
            _ => CallName::Max,
        };
        let mut args = Vec::new();
        let mut depth = 0;
        for p in inner {
            let (e, d) = self.expr(p)?;
            depth = depth.max(d);
            args.push(e);
        }
        if args.len() < 2 {
            let word = if name == CallName::Min { "min" } else { "max" };
            self.errors.push(
                Diagnostic::new(
                    Code::E0100,
                    span,
                    format!("`{word}` takes two or more arguments, got one"),
                )
                .with_help(format!(
                    "write `{word}(a, b)` or `{word}(a, b, c)`; with one value, write the value itself"
                )),
            );
            return None;
        }
        Some(mk(ExprKind::Call { name, args }, span, depth + 1))
    }

    /// `top K by score [above X]`.
    fn top_mask(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let mut inner = pair.into_inner().filter(|p| {
            !matches!(
                p.as_rule(),
                Rule::kw_top | Rule::kw_by | Rule::kw_score | Rule::kw_above
            )
        });
        let k_pair = inner.next()?;
        let k_span = Span::from(k_pair.as_span());
        let Ok(k) = k_pair.as_str().parse::<u64>() else {
            self.errors.push(
                Diagnostic::new(
                    Code::E0102,
                    k_span,
                    format!("`top {}` is out of range", k_pair.as_str()),
                )
                .with_help("there are five structures: use a count from 1 to 5"),
            );
            return None;
        };
        let mut depth = 0;
        let above = match inner.next() {
            Some(p) => {
                let (e, d) = self.expr(p)?;
                depth = d;
                Some(Box::new(e))
            }
            None => None,
        };
        Some(mk(ExprKind::Top { k, k_span, above }, span, depth + 1))
    }

    /// `SUBJECT has SET` and `SUBJECT matches PATTERN`.
    fn text_predicate(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let is_has = pair.as_rule() == Rule::has_pred;
        let mut inner = pair.into_inner();
        let subject = subject(inner.next()?);
        inner.next()?;
        let (operand, d) = self.expr(inner.next()?)?;
        let kind = if is_has {
            ExprKind::Has {
                subject,
                set: Box::new(operand),
            }
        } else {
            ExprKind::Matches {
                subject,
                pattern: Box::new(operand),
            }
        };
        Some(mk(kind, span, d + 1))
    }

    /// `domain is V`, `qtype in [V, ...]`.
    fn meta(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let list = pair.as_rule() == Rule::meta_in;
        let mut inner = pair.into_inner();
        let field = match inner.next()?.into_inner().next()?.as_rule() {
            Rule::kw_qtype => MetaField::Qtype,
            _ => MetaField::Domain,
        };
        inner.next()?;
        let values = inner.map(|v| self.value(v)).collect::<Option<Vec<_>>>()?;
        let kind = ExprKind::MetaIs {
            field,
            values,
            list,
        };
        Some(mk(kind, span, 1))
    }

    /// A name; a reserved word in its place is a syntax error.
    fn name_ref(&mut self, pair: Pair<'_, Rule>, span: Span) -> Option<Built> {
        let w = ident(pair.into_inner().next()?);
        if crate::format::RESERVED.contains(&w.name.as_str()) {
            self.errors.push(
                Diagnostic::new(
                    Code::E0100,
                    w.span,
                    format!(
                        "syntax error: expected an expression, found the keyword `{}`",
                        w.name
                    ),
                )
                .with_help("see docs/LANGUAGE.md for the syntax of each statement"),
            );
            return None;
        }
        Some(mk(ExprKind::Name(w), span, 1))
    }

    /// Precedence climbing over the flat operand/operator list of an `expr`.
    /// Binding, loosest first: `or`, `and`, prefix `not`, comparisons, `+ -`,
    /// `* /`, prefix `-`. Binary operators group to the left; comparisons do
    /// not chain. `level` counts recursion, bounded by
    /// [`super::MAX_EXPR_DEPTH`].
    fn climb(
        &mut self,
        items: &[Pair<'_, Rule>],
        pos: &mut usize,
        min_prec: u8,
        level: u32,
    ) -> Option<Built> {
        let (mut lhs, mut depth) = self.prefixed(items, pos, level)?;
        while let Some(op_pair) = items.get(*pos) {
            let prec = infix_prec(op_pair.as_rule());
            if prec < min_prec.max(1) {
                break;
            }
            let op_span = Span::from(op_pair.as_span());
            let op_rule = op_pair.as_rule();
            let op_text = op_pair.as_str();
            *pos += 1;
            let (rhs, d) = self.climb(items, pos, prec + 1, level + 1)?;
            let s = lhs.span.to(rhs.span);
            (lhs, depth) = match op_rule {
                Rule::kw_and | Rule::kw_or => {
                    join_logic(lhs, rhs, op_rule == Rule::kw_and, depth, d)
                }
                _ => {
                    let op = binary_op(op_text);
                    if op.is_comparison() && is_comparison(&lhs) {
                        self.errors.push(
                            Diagnostic::new(
                                Code::E0100,
                                op_span,
                                "syntax error: comparisons cannot be chained",
                            )
                            .with_help("write `a < b and b < c`, or add parentheses"),
                        );
                        return None;
                    }
                    let kind = ExprKind::Binary {
                        op,
                        lhs: Box::new(lhs),
                        rhs: Box::new(rhs),
                    };
                    (Expr { kind, span: s }, depth.max(d) + 1)
                }
            };
            self.deep(depth, s)?;
        }
        Some((lhs, depth))
    }

    /// The first operand of a climb, with its prefix `not` or `-` if any.
    fn prefixed(&mut self, items: &[Pair<'_, Rule>], pos: &mut usize, level: u32) -> Option<Built> {
        let first = items.get(*pos)?.clone();
        let span = Span::from(first.as_span());
        self.deep(level, span)?;
        *pos += 1;
        if !matches!(first.as_rule(), Rule::kw_not | Rule::neg) {
            return self.expr(first);
        }
        let is_not = first.as_rule() == Rule::kw_not;
        // `not` applies to a comparison; `-` to one operand.
        let prec = if is_not { PREC_CMP } else { PREC_NEG };
        let (operand, d) = self.climb(items, pos, prec, level + 1)?;
        let s = span.to(operand.span);
        let kind = if is_not {
            ExprKind::Not(Box::new(operand))
        } else {
            ExprKind::Neg(Box::new(operand))
        };
        self.deep(d + 1, s)?;
        Some(mk(kind, s, d + 1))
    }
}

/// Whether `e` is a comparison (which another comparison cannot follow).
fn is_comparison(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Binary { op, .. } if op.is_comparison())
}

/// `lhs and rhs` / `lhs or rhs`: a chain of the same operator stays one flat
/// node; `depth` is the left side's, `d` the right side's.
fn join_logic(lhs: Expr, rhs: Expr, is_and: bool, depth: u32, d: u32) -> Built {
    let span = lhs.span.to(rhs.span);
    match lhs.kind {
        ExprKind::And(mut v) if is_and => {
            v.push(rhs);
            mk(ExprKind::And(v), span, depth.max(d + 1))
        }
        ExprKind::Or(mut v) if !is_and => {
            v.push(rhs);
            mk(ExprKind::Or(v), span, depth.max(d + 1))
        }
        kind => {
            let v = vec![
                Expr {
                    kind,
                    span: lhs.span,
                },
                rhs,
            ];
            let kind = if is_and {
                ExprKind::And(v)
            } else {
                ExprKind::Or(v)
            };
            mk(kind, span, depth.max(d) + 1)
        }
    }
}

/// The binding strength of an infix operator; 0 for anything else.
fn infix_prec(rule: Rule) -> u8 {
    match rule {
        Rule::kw_or => 1,
        Rule::kw_and => 2,
        Rule::cmp_op => PREC_CMP,
        Rule::add_op => 5,
        Rule::mul_op => 6,
        _ => 0,
    }
}

fn binary_op(s: &str) -> BinaryOp {
    match s {
        "+" => BinaryOp::Add,
        "-" => BinaryOp::Sub,
        "*" => BinaryOp::Mul,
        "/" => BinaryOp::Div,
        "<" => BinaryOp::Lt,
        "<=" => BinaryOp::Le,
        ">" => BinaryOp::Gt,
        ">=" => BinaryOp::Ge,
        "==" => BinaryOp::Eq,
        _ => BinaryOp::Ne,
    }
}
