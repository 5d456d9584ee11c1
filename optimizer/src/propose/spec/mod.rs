//! The offline proposer's policies: a small rule list it can fit on train,
//! simulate natively (to score thousands of variants quickly), and write
//! out through the syntax tree and the formatter as `.mesa` source.
//!
//! The native simulation follows docs/LANGUAGE.md exactly for the forms
//! used here (keyword sets of single words, `is`/`in`, preview comparisons,
//! `and`/`not`, `select`/`add`/`remove`, `budget`, the fallback), so the
//! sandbox's score of the written policy equals the score it was fitted
//! for; a test checks that.

use crate::eval::Problem;
use mesa_core::{Feature, Input, Mask, Structure};
use mesa_grammar::ast::{
    ActionKind, BinaryOp, Expr, ExprKind, File, HeaderKind, Ident, MetaField, Statement,
    StatementKind, StrLit, Subject,
};
use mesa_grammar::Span;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

mod simulate;
pub use simulate::{after_rules, holds_vec, total_objective, FeatTable, Simulator};

/// A comparison with a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cmp {
    /// `>`
    Gt,
    /// `<`
    Lt,
    /// `==`
    Eq,
}

/// A condition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Cond {
    /// `domain is X` / `domain in [..]`.
    Domain {
        /// Accepted values.
        values: Vec<String>,
    },
    /// `qtype is X` / `qtype in [..]`.
    Qtype {
        /// Accepted values.
        values: Vec<String>,
    },
    /// `query has words [..]` (single lower-case words).
    QueryHas {
        /// The words.
        words: Vec<String>,
    },
    /// `task has words [..]`.
    TaskHas {
        /// The words.
        words: Vec<String>,
    },
    /// `preview.K.f OP t`.
    Preview {
        /// The structure.
        structure: Structure,
        /// The feature.
        feature: Feature,
        /// The comparison.
        op: Cmp,
        /// The constant.
        threshold: f64,
    },
    /// `query has std.NAME` (a standard keyword set) or `query matches
    /// std.NAME` (a standard pattern), per `pattern`.
    Std {
        /// The standard name (without `std.`).
        name: String,
        /// Whether it is a pattern (`matches`) rather than a set (`has`).
        pattern: bool,
    },
    /// All of them.
    And {
        /// The conjuncts.
        all: Vec<Cond>,
    },
    /// The negation.
    Not {
        /// The negated condition.
        cond: Box<Cond>,
    },
}

impl Cond {
    /// `a and b`, flattening nested conjunctions.
    pub fn and(a: Cond, b: Cond) -> Cond {
        let mut all = Vec::new();
        for c in [a, b] {
            match c {
                Cond::And { all: inner } => all.extend(inner),
                other => all.push(other),
            }
        }
        Cond::And { all }
    }

    /// A short text for notes.
    pub fn describe(&self) -> String {
        match self {
            Cond::Domain { values } => format!("domain in {values:?}"),
            Cond::Qtype { values } => format!("qtype in {values:?}"),
            Cond::QueryHas { words } => format!("query has {words:?}"),
            Cond::TaskHas { words } => format!("task has {words:?}"),
            Cond::Preview {
                structure,
                feature,
                op,
                threshold,
            } => format!(
                "preview.{}.{} {} {threshold}",
                structure.letter(),
                feature.name(),
                match op {
                    Cmp::Gt => ">",
                    Cmp::Lt => "<",
                    Cmp::Eq => "==",
                }
            ),
            Cond::Std { name, pattern } => format!(
                "query {} std.{name}",
                if *pattern { "matches" } else { "has" }
            ),
            Cond::And { all } => all
                .iter()
                .map(Cond::describe)
                .collect::<Vec<_>>()
                .join(" and "),
            Cond::Not { cond } => format!("not ({})", cond.describe()),
        }
    }

    /// Whether it reads the question type.
    pub fn reads_qtype(&self) -> bool {
        match self {
            Cond::Qtype { .. } => true,
            Cond::And { all } => all.iter().any(Cond::reads_qtype),
            Cond::Not { cond } => cond.reads_qtype(),
            _ => false,
        }
    }

    /// Whether it reads a standard cue set (the policy needs `use std`).
    pub fn uses_std(&self) -> bool {
        match self {
            Cond::Std { .. } => true,
            Cond::And { all } => all.iter().any(Cond::uses_std),
            Cond::Not { cond } => cond.uses_std(),
            _ => false,
        }
    }
}

/// What a rule does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Act {
    /// `select`
    Select,
    /// `add`
    Add,
    /// `remove`
    Remove,
}

/// One rule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleSpec {
    /// Its name (an identifier, unique in the policy).
    pub name: String,
    /// Its condition (`None`: always).
    pub cond: Option<Cond>,
    /// Its action.
    pub action: Act,
    /// Its mask.
    pub mask: Mask,
}

/// A policy the offline proposer can fit and simulate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicySpec {
    /// The policy's name.
    pub name: String,
    /// Rules, in order.
    pub rules: Vec<RuleSpec>,
    /// The default mask (never empty).
    pub default: Mask,
    /// The token budget.
    #[serde(default)]
    pub budget: Option<f64>,
    /// The trade (`trade UNIT at PRICE`), applied before the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trade: Option<TradeSpec>,
}

/// `trade UNIT at PRICE` (docs/LANGUAGE.md, "Trade").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TradeSpec {
    /// What a subset's count counts.
    pub unit: mesa_core::Shown,
    /// The price of all five's tokens, in shares of what all five show.
    pub price: f64,
}

impl TradeSpec {
    /// The subset of `mask` the trade keeps, by the interpreter's own
    /// function (the reference semantics).
    pub fn apply(self, mask: Mask, previews: &mesa_core::Previews) -> Mask {
        let t = mesa_compiler::ir::Trade {
            unit: self.unit,
            price: self.price,
        };
        mesa_compiler::interp::trade(mask, t, previews)
    }
}

impl PolicySpec {
    /// A policy that always reads `default`.
    pub fn fixed(name: &str, default: Mask) -> PolicySpec {
        PolicySpec {
            name: name.to_string(),
            rules: Vec::new(),
            default,
            budget: None,
            trade: None,
        }
    }

    /// A rule name not used yet, `prefix_N`.
    pub fn fresh_name(&self, prefix: &str) -> String {
        (1..)
            .map(|n| format!("{prefix}_{n}"))
            .find(|name| self.rules.iter().all(|r| &r.name != name))
            .unwrap_or_else(|| prefix.to_string())
    }

    /// Index just after the last `select` rule: where rules that only see
    /// the questions no `select` caught go.
    pub fn after_selects(&self) -> usize {
        self.rules
            .iter()
            .rposition(|r| r.action == Act::Select)
            .map_or(0, |i| i + 1)
    }

    /// Whether any rule adds or removes.
    pub fn has_modifiers(&self) -> bool {
        self.rules.iter().any(|r| r.action != Act::Select)
    }

    /// The syntax tree.
    pub fn to_ast(&self) -> File {
        let mut statements = vec![stmt(StatementKind::Header {
            kind: HeaderKind::Policy,
            name: strlit(&self.name),
        })];
        if self
            .rules
            .iter()
            .any(|r| r.cond.as_ref().is_some_and(Cond::uses_std))
        {
            statements.push(stmt(StatementKind::Use {
                module: ident("std"),
            }));
        }
        let mut lets = Vec::new();
        let mut rules = Vec::new();
        for r in &self.rules {
            let when = r.cond.as_ref().map(|c| cond_expr(c, &r.name, &mut lets));
            rules.push(stmt(StatementKind::Rule {
                name: ident(&r.name),
                when,
                action: match r.action {
                    Act::Select => ActionKind::Select,
                    Act::Add => ActionKind::Add,
                    Act::Remove => ActionKind::Remove,
                },
                action_span: Span::default(),
                mask: mask_expr(r.mask),
            }));
        }
        statements.extend(lets);
        statements.extend(rules);
        statements.push(stmt(StatementKind::Default(mask_expr(self.default))));
        if let Some(t) = self.trade {
            statements.push(stmt(StatementKind::Trade {
                unit: t.unit.name().to_string(),
                unit_span: Span::default(),
                price: t.price,
                price_span: Span::default(),
            }));
        }
        if let Some(b) = self.budget {
            statements.push(stmt(StatementKind::Budget {
                amount: b,
                amount_span: Span::default(),
            }));
        }
        File { statements }
    }

    /// The policy's source, written by the formatter from the syntax tree.
    pub fn to_source(&self) -> String {
        mesa_grammar::format_file(&self.to_ast(), "")
    }

    /// Whether any rule reads the question type.
    pub fn reads_qtype(&self) -> bool {
        self.rules
            .iter()
            .any(|r| r.cond.as_ref().is_some_and(Cond::reads_qtype))
    }
}

fn e(kind: ExprKind) -> Expr {
    Expr {
        kind,
        span: Span::default(),
    }
}

fn stmt(kind: StatementKind) -> Statement {
    Statement {
        kind,
        span: Span::default(),
    }
}

fn ident(name: &str) -> Ident {
    Ident {
        name: name.to_string(),
        span: Span::default(),
    }
}

fn strlit(value: &str) -> StrLit {
    StrLit {
        value: value.to_string(),
        raw: false,
        span: Span::default(),
    }
}

fn mask_expr(m: Mask) -> Expr {
    if m == Mask::ALL {
        e(ExprKind::All)
    } else {
        e(ExprKind::Mask(
            m.iter().map(|s| ident(&s.letter().to_string())).collect(),
        ))
    }
}

fn number(x: f64) -> Expr {
    if x < 0.0 {
        e(ExprKind::Neg(Box::new(e(ExprKind::Number(-x)))))
    } else {
        e(ExprKind::Number(x))
    }
}

/// Parenthesizes what would otherwise bind differently inside `and`/`not`.
fn operand(x: Expr) -> Expr {
    match x.kind {
        ExprKind::And(_) | ExprKind::Or(_) => e(ExprKind::Paren(Box::new(x))),
        _ => x,
    }
}

/// `SUBJECT has NAME`, with `let NAME = words [...]` added to `lets` under
/// a name not used yet.
fn words_let(subject: Subject, words: &[String], rule: &str, lets: &mut Vec<Statement>) -> Expr {
    let base = match subject {
        Subject::Query => format!("{rule}_words"),
        Subject::Task => format!("{rule}_task_words"),
    };
    let taken = |n: &str| {
        lets.iter()
            .any(|s| matches!(&s.kind, StatementKind::Let { name, .. } if name.name == n))
    };
    let name = (1..)
        .map(|n| {
            if n == 1 {
                base.clone()
            } else {
                format!("{base}_{n}")
            }
        })
        .find(|n| !taken(n))
        .unwrap_or(base);
    lets.push(stmt(StatementKind::Let {
        name: ident(&name),
        value: e(ExprKind::Words(words.iter().map(|w| strlit(w)).collect())),
    }));
    e(ExprKind::Has {
        subject,
        set: Box::new(e(ExprKind::Name(ident(&name)))),
    })
}

fn cond_expr(c: &Cond, rule: &str, lets: &mut Vec<Statement>) -> Expr {
    match c {
        Cond::Domain { values } | Cond::Qtype { values } => e(ExprKind::MetaIs {
            field: if matches!(c, Cond::Domain { .. }) {
                MetaField::Domain
            } else {
                MetaField::Qtype
            },
            values: values.iter().map(|v| strlit(v)).collect(),
            list: values.len() != 1,
        }),
        Cond::QueryHas { words } => words_let(Subject::Query, words, rule, lets),
        Cond::TaskHas { words } => words_let(Subject::Task, words, rule, lets),
        Cond::Std { name, pattern } => {
            let set = Box::new(e(ExprKind::Std(ident(name))));
            if *pattern {
                e(ExprKind::Matches {
                    subject: Subject::Query,
                    pattern: set,
                })
            } else {
                e(ExprKind::Has {
                    subject: Subject::Query,
                    set,
                })
            }
        }
        Cond::Preview {
            structure,
            feature,
            op,
            threshold,
        } => e(ExprKind::Binary {
            op: match op {
                Cmp::Gt => BinaryOp::Gt,
                Cmp::Lt => BinaryOp::Lt,
                Cmp::Eq => BinaryOp::Eq,
            },
            lhs: Box::new(e(ExprKind::Preview {
                structure: ident(&structure.letter().to_string()),
                feature: ident(feature.name()),
            })),
            rhs: Box::new(number(*threshold)),
        }),
        Cond::And { all } => {
            let parts: Vec<Expr> = all
                .iter()
                .map(|c| operand(cond_expr(c, rule, lets)))
                .collect();
            if parts.len() == 1 {
                parts
                    .into_iter()
                    .next()
                    .unwrap_or_else(|| e(ExprKind::Bool(true)))
            } else if parts.is_empty() {
                e(ExprKind::Bool(true))
            } else {
                e(ExprKind::And(parts))
            }
        }
        Cond::Not { cond } => e(ExprKind::Not(Box::new(operand(cond_expr(
            cond, rule, lets,
        ))))),
    }
}

#[cfg(test)]
mod std_cond_tests {
    use super::*;

    #[test]
    fn std_conditions_are_written_with_use_std_and_check() {
        let mut spec = PolicySpec::fixed("p", Mask::ALL);
        for (i, (name, pattern)) in [("stepref", true), ("causal", false)].iter().enumerate() {
            spec.rules.push(RuleSpec {
                name: format!("r{i}"),
                cond: Some(Cond::and(
                    Cond::Domain {
                        values: vec!["WEB".into()],
                    },
                    Cond::Std {
                        name: name.to_string(),
                        pattern: *pattern,
                    },
                )),
                action: Act::Select,
                mask: Mask::single(Structure::ALL[i]),
            });
        }
        let src = spec.to_source();
        assert!(src.contains("use std"), "{src}");
        assert!(src.contains("query matches std.stepref"), "{src}");
        assert!(src.contains("query has std.causal"), "{src}");
        let checked = mesa_compiler::check(&src);
        assert!(
            checked.program.is_some(),
            "{src}: {:?}",
            checked.diagnostics
        );
        assert!(!PolicySpec::fixed("q", Mask::ALL)
            .to_source()
            .contains("use std"));
    }
}
