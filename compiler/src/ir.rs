//! The checked decision program: what a policy means, with names resolved,
//! `let`s inlined and every cue set and pattern numbered.
//!
//! The interpreter ([`crate::interp`]) evaluates this form; it is the
//! reference semantics that every other backend must agree with.

pub use mesa_core::{Feature, Features};
use mesa_core::{Mask, Structure};
use mesa_grammar::ast::{ActionKind, HeaderKind, MetaField, Subject};
use mesa_grammar::Span;
use serde::Serialize;

/// A numeric expression.
#[derive(Debug, Clone, PartialEq)]
pub enum NumExpr {
    /// A constant.
    Const(f64),
    /// `preview.K.feature` (0 when the host does not supply it).
    Preview(Structure, Feature),
    /// `query.words` / `task.words`.
    WordCount(Subject),
    /// `hits(subject, set)`: distinct keywords of the set found.
    Hits(Subject, usize),
    /// `size`: structures in the current mask.
    Size,
    /// `-x`.
    Neg(Box<NumExpr>),
    /// `a + b`.
    Add(Box<NumExpr>, Box<NumExpr>),
    /// `a - b`.
    Sub(Box<NumExpr>, Box<NumExpr>),
    /// `a * b`.
    Mul(Box<NumExpr>, Box<NumExpr>),
    /// `a / b`, 0 when `b` is 0.
    Div(Box<NumExpr>, Box<NumExpr>),
    /// `min(a, b, ...)`.
    Min(Vec<NumExpr>),
    /// `max(a, b, ...)`.
    Max(Vec<NumExpr>),
    /// `if c then a else b`.
    If(Box<BoolExpr>, Box<NumExpr>, Box<NumExpr>),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl CmpOp {
    /// Applies the comparison with IEEE semantics (any NaN: false, except `!=`).
    pub fn apply(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
        }
    }
}

/// A boolean expression.
#[derive(Debug, Clone, PartialEq)]
pub enum BoolExpr {
    /// A constant.
    Const(bool),
    /// `subject has set`.
    Has(Subject, usize),
    /// `subject matches pattern`.
    Matches(Subject, usize),
    /// `domain in [...]` / `qtype in [...]`: ASCII case-insensitive equality
    /// with one of the values; false when the field is absent.
    MetaIn(MetaField, Vec<String>),
    /// A numeric comparison.
    Cmp(CmpOp, Box<NumExpr>, Box<NumExpr>),
    /// All hold (evaluated left to right, stopping at the first false).
    And(Vec<BoolExpr>),
    /// One holds (evaluated left to right, stopping at the first true).
    Or(Vec<BoolExpr>),
    /// Negation.
    Not(Box<BoolExpr>),
    /// `if c then a else b` over booleans.
    If(Box<BoolExpr>, Box<BoolExpr>, Box<BoolExpr>),
}

impl BoolExpr {
    /// Whether the value can depend on the current mask (through `size`):
    /// the same condition may then differ between two rules.
    pub fn reads_size(&self) -> bool {
        match self {
            BoolExpr::Const(_)
            | BoolExpr::Has(..)
            | BoolExpr::Matches(..)
            | BoolExpr::MetaIn(..) => false,
            BoolExpr::Cmp(_, a, b) => a.reads_size() || b.reads_size(),
            BoolExpr::And(v) | BoolExpr::Or(v) => v.iter().any(BoolExpr::reads_size),
            BoolExpr::Not(a) => a.reads_size(),
            BoolExpr::If(c, a, b) => c.reads_size() || a.reads_size() || b.reads_size(),
        }
    }
}

impl NumExpr {
    /// Whether the value can depend on the current mask (through `size`).
    pub fn reads_size(&self) -> bool {
        match self {
            NumExpr::Size => true,
            NumExpr::Const(_)
            | NumExpr::Preview(..)
            | NumExpr::WordCount(_)
            | NumExpr::Hits(..) => false,
            NumExpr::Neg(a) => a.reads_size(),
            NumExpr::Add(a, b) | NumExpr::Sub(a, b) | NumExpr::Mul(a, b) | NumExpr::Div(a, b) => {
                a.reads_size() || b.reads_size()
            }
            NumExpr::Min(v) | NumExpr::Max(v) => v.iter().any(NumExpr::reads_size),
            NumExpr::If(c, a, b) => c.reads_size() || a.reads_size() || b.reads_size(),
        }
    }
}

/// A mask-valued expression.
#[derive(Debug, Clone, PartialEq)]
pub enum MaskExpr {
    /// A fixed mask.
    Const(Mask),
    /// `top k by score [above x]`.
    Top {
        /// At most this many structures (1..=5).
        k: u8,
        /// Only scores strictly above this count.
        above: Option<Box<NumExpr>>,
    },
}

/// A keyword set, normalized.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeywordSet {
    /// How the policy names it (`failing`, `std.causal`, or `words@3:12`).
    pub name: String,
    /// Lower-cased keywords with single spaces, without duplicates.
    pub keywords: Vec<String>,
}

/// A pattern.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternDef {
    /// How the policy names it.
    pub name: String,
    /// The regex as written.
    pub source: String,
    /// Where this policy writes it: the literal, or the `std.name` that
    /// brings it in (for diagnostics that must point at the culprit).
    #[serde(skip)]
    pub span: Span,
}

/// One rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// Its name.
    pub name: String,
    /// Its 1-based line in the policy's source.
    pub line: usize,
    /// Its span in the source.
    pub span: Span,
    /// Its condition (`Const(true)` when it has none).
    pub cond: BoolExpr,
    /// What it does.
    pub action: ActionKind,
    /// The mask the action uses.
    pub mask: MaskExpr,
    /// The condition as written (for explanations).
    pub cond_text: String,
    /// The mask as written.
    pub mask_text: String,
}

/// A checked policy (or module).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// The name from the header.
    pub name: String,
    /// Policy or module.
    pub kind: HeaderKind,
    /// Every keyword set, numbered by position.
    pub keyword_sets: Vec<KeywordSet>,
    /// Every pattern, numbered by position.
    pub patterns: Vec<PatternDef>,
    /// Per-structure score (`None`: the structure's `preview.K.top`).
    pub scores: [Option<NumExpr>; 5],
    /// Rules in order.
    pub rules: Vec<Rule>,
    /// The starting mask.
    pub default: Mask,
    /// The mask used when the result would be empty (the default unless declared).
    pub fallback: Mask,
    /// Token budget, if any.
    pub budget: Option<f64>,
    /// The trade between what a subset shows and its tokens, if any.
    pub trade: Option<Trade>,
    /// What the host must supply.
    pub features: Features,
    /// The patterns compiled to DFAs, in as few groups as fit, computed by
    /// the checker so that a policy that checks also compiles (and the
    /// compiler does not build them twice).
    pub pattern_dfas: Vec<crate::wasm::patterns::PatternDfa>,
}

/// `trade UNIT at PRICE`: after the rules, the mask becomes its non-empty
/// subset `m` with the highest `shown(m) / shown(all) - price * tokens(m) /
/// tokens(all)` (ties: fewer tokens, then the lower bits), where `shown` is
/// the host's count in `unit` and `tokens` sums `preview.K.tokens`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trade {
    /// What a subset's count counts.
    pub unit: mesa_core::Shown,
    /// The price of all five's tokens, in shares of what all five show.
    pub price: f64,
}

impl Program {
    /// Every distinct keyword over all sets, numbered in order of first
    /// appearance (sets in order, keywords in order), and for each keyword
    /// the sets that contain it. Both engines number keywords this way.
    pub fn distinct_keywords(&self) -> (Vec<String>, Vec<Vec<u32>>) {
        let mut distinct: Vec<String> = Vec::new();
        let mut index = std::collections::HashMap::new();
        let mut sets_of: Vec<Vec<u32>> = Vec::new();
        for (set_id, set) in self.keyword_sets.iter().enumerate() {
            for k in &set.keywords {
                let id = *index.entry(k.as_str()).or_insert_with(|| {
                    distinct.push(k.clone());
                    sets_of.push(Vec::new());
                    distinct.len() - 1
                });
                if !sets_of[id].contains(&(set_id as u32)) {
                    sets_of[id].push(set_id as u32);
                }
            }
        }
        (distinct, sets_of)
    }
}
