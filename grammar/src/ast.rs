//! The syntax tree of a policy, with a byte span on every node.
//!
//! The tree is what the user wrote, before names are resolved or types checked:
//! `mesa-compiler` turns it into the checked decision program. Parentheses are
//! kept (as [`ExprKind::Paren`]) so that the formatter can reproduce them.

use crate::span::Span;

/// A name, keyword argument or structure letter as written, with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// The text of the name.
    pub name: String,
    /// Where it was written.
    pub span: Span,
}

/// A string literal after escapes are resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct StrLit {
    /// The value, escapes resolved.
    pub value: String,
    /// Whether it was written as a raw string (`r"..."`), which the formatter keeps.
    pub raw: bool,
    /// Where it was written, quotes included.
    pub span: Span,
}

/// A parsed policy or module file: its statements in source order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct File {
    /// Every statement, in the order written.
    pub statements: Vec<Statement>,
}

/// One statement with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// What the statement says.
    pub kind: StatementKind,
    /// From its keyword to its last token.
    pub span: Span,
}

/// Whether a file is a policy or a library module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    /// `policy "name"`: a selector policy.
    Policy,
    /// `module "name"`: a library of `let`s (the standard library is written so).
    Module,
}

/// What a rule does to the mask when its condition holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    /// `select M`: set the mask to M and stop.
    Select,
    /// `add M`: union M into the mask and go on.
    Add,
    /// `remove M`: take M out of the mask and go on.
    Remove,
}

impl ActionKind {
    /// The keyword as written.
    pub fn keyword(self) -> &'static str {
        match self {
            ActionKind::Select => "select",
            ActionKind::Add => "add",
            ActionKind::Remove => "remove",
        }
    }
}

/// The statements of the language.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StatementKind {
    /// `policy "name"` or `module "name"`.
    Header {
        /// Policy or module.
        kind: HeaderKind,
        /// The name.
        name: StrLit,
    },
    /// `use std`.
    Use {
        /// The module brought in (only `std` exists).
        module: Ident,
    },
    /// `let name = expr`.
    Let {
        /// The bound name.
        name: Ident,
        /// Its value.
        value: Expr,
    },
    /// `score K = expr`.
    Score {
        /// The structure scored.
        structure: Ident,
        /// Its score.
        value: Expr,
    },
    /// `rule name [when cond] -> action mask`.
    Rule {
        /// The rule's name.
        name: Ident,
        /// Its condition; absent means always.
        when: Option<Expr>,
        /// What it does.
        action: ActionKind,
        /// The span of the action keyword.
        action_span: Span,
        /// The mask the action uses.
        mask: Expr,
    },
    /// `default mask`.
    Default(Expr),
    /// `fallback mask`.
    Fallback(Expr),
    /// `budget N tokens`.
    Budget {
        /// The token budget.
        amount: f64,
        /// Its span.
        amount_span: Span,
    },
    /// `trade UNIT at PRICE`: among the subsets of the mask the rules chose,
    /// keep the one whose share of what all five show (in `unit`) less
    /// `price` times its share of all five's tokens is highest.
    Trade {
        /// What is counted, as written (`words` or `steps`).
        unit: String,
        /// Its span.
        unit_span: Span,
        /// The price of all five's tokens, in shares of what they show.
        price: f64,
        /// Its span.
        price_span: Span,
    },
}

/// An expression with its span.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What it is.
    pub kind: ExprKind,
    /// Where it was written.
    pub span: Span,
}

/// The text a predicate looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Subject {
    /// The question.
    Query,
    /// The episode's task description.
    Task,
}

impl Subject {
    /// The keyword as written.
    pub fn keyword(self) -> &'static str {
        match self {
            Subject::Query => "query",
            Subject::Task => "task",
        }
    }
}

/// A metadata field compared with `is` / `in`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaField {
    /// The episode's domain (e.g. `text2sql`).
    Domain,
    /// The question type (optional metadata).
    Qtype,
}

impl MetaField {
    /// The keyword as written.
    pub fn keyword(self) -> &'static str {
        match self {
            MetaField::Domain => "domain",
            MetaField::Qtype => "qtype",
        }
    }
}

/// Binary arithmetic and comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (division by zero gives 0)
    Div,
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

impl BinaryOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
        }
    }

    /// Whether the operator compares (yields a boolean).
    pub fn is_comparison(self) -> bool {
        !matches!(
            self,
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div
        )
    }
}

/// `min` or `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallName {
    /// The smallest argument.
    Min,
    /// The largest argument.
    Max,
}

impl CallName {
    /// The function name as written.
    pub fn keyword(self) -> &'static str {
        match self {
            CallName::Min => "min",
            CallName::Max => "max",
        }
    }
}

/// The expression forms. Types are checked by `mesa-compiler`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ExprKind {
    /// A number literal.
    Number(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A reference to a `let`.
    Name(Ident),
    /// `std.name`: a standard-library cue set.
    Std(Ident),
    /// `words ["a", "b c"]`: a keyword set.
    Words(Vec<StrLit>),
    /// `pattern "regex"`.
    Pattern(StrLit),
    /// `{S, T}`: a mask literal.
    Mask(Vec<Ident>),
    /// `all`: the five structures.
    All,
    /// `top K by score [above X]`.
    Top {
        /// How many structures at most.
        k: u64,
        /// The span of K.
        k_span: Span,
        /// Only structures scoring strictly above this.
        above: Option<Box<Expr>>,
    },
    /// `query has SET`.
    Has {
        /// The text searched.
        subject: Subject,
        /// The keyword set.
        set: Box<Expr>,
    },
    /// `query matches PATTERN`.
    Matches {
        /// The text searched.
        subject: Subject,
        /// The pattern.
        pattern: Box<Expr>,
    },
    /// `domain is x` (one value) or `domain in [x, y]` (a list).
    MetaIs {
        /// Which field.
        field: MetaField,
        /// The accepted values.
        values: Vec<StrLit>,
        /// Whether it was written with `in [...]`.
        list: bool,
    },
    /// `query.words`: the number of words.
    WordCount(Subject),
    /// `hits(query, SET)`: how many distinct keywords of SET occur.
    Hits {
        /// The text searched.
        subject: Subject,
        /// The keyword set.
        set: Box<Expr>,
    },
    /// `preview.K.feature`.
    Preview {
        /// The structure.
        structure: Ident,
        /// `tokens`, `top` or `hits`.
        feature: Ident,
    },
    /// `size`: the number of structures in the current mask.
    Size,
    /// `-x`.
    Neg(Box<Expr>),
    /// `not x`.
    Not(Box<Expr>),
    /// Arithmetic or comparison.
    Binary {
        /// The operator.
        op: BinaryOp,
        /// Left operand.
        lhs: Box<Expr>,
        /// Right operand.
        rhs: Box<Expr>,
    },
    /// `a and b and ...` (two or more operands).
    And(Vec<Expr>),
    /// `a or b or ...` (two or more operands).
    Or(Vec<Expr>),
    /// `min(a, b, ...)` / `max(a, b, ...)`.
    Call {
        /// Which function.
        name: CallName,
        /// Two or more arguments.
        args: Vec<Expr>,
    },
    /// `if c then a else b`.
    If {
        /// The condition.
        cond: Box<Expr>,
        /// Value when it holds.
        then: Box<Expr>,
        /// Value otherwise.
        otherwise: Box<Expr>,
    },
    /// `( x )`, kept for the formatter.
    Paren(Box<Expr>),
}

impl Expr {
    /// The direct sub-expressions, in source order.
    pub fn children(&self) -> Vec<&Expr> {
        match &self.kind {
            ExprKind::Number(_)
            | ExprKind::Bool(_)
            | ExprKind::Name(_)
            | ExprKind::Std(_)
            | ExprKind::Words(_)
            | ExprKind::Pattern(_)
            | ExprKind::Mask(_)
            | ExprKind::All
            | ExprKind::MetaIs { .. }
            | ExprKind::WordCount(_)
            | ExprKind::Preview { .. }
            | ExprKind::Size => Vec::new(),
            ExprKind::Top { above, .. } => above.iter().map(|e| &**e).collect(),
            ExprKind::Has { set: e, .. }
            | ExprKind::Matches { pattern: e, .. }
            | ExprKind::Hits { set: e, .. }
            | ExprKind::Neg(e)
            | ExprKind::Not(e)
            | ExprKind::Paren(e) => vec![&**e],
            ExprKind::Binary { lhs, rhs, .. } => vec![&**lhs, &**rhs],
            ExprKind::And(v) | ExprKind::Or(v) | ExprKind::Call { args: v, .. } => {
                v.iter().collect()
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => vec![&**cond, &**then, &**otherwise],
        }
    }
}

impl File {
    /// Sets every span to `0..0`, so that two trees can be compared for
    /// structure alone (e.g. a policy and its formatted version).
    pub fn erase_spans(&mut self) {
        for stmt in &mut self.statements {
            stmt.span = Span::default();
            match &mut stmt.kind {
                StatementKind::Header { name, .. } => name.span = Span::default(),
                StatementKind::Use { module } => module.span = Span::default(),
                StatementKind::Let { name, value } => {
                    name.span = Span::default();
                    value.erase_spans();
                }
                StatementKind::Score { structure, value } => {
                    structure.span = Span::default();
                    value.erase_spans();
                }
                StatementKind::Rule {
                    name,
                    when,
                    action_span,
                    mask,
                    ..
                } => {
                    name.span = Span::default();
                    *action_span = Span::default();
                    if let Some(w) = when {
                        w.erase_spans();
                    }
                    mask.erase_spans();
                }
                StatementKind::Default(e) | StatementKind::Fallback(e) => e.erase_spans(),
                StatementKind::Budget { amount_span, .. } => *amount_span = Span::default(),
                StatementKind::Trade {
                    unit_span,
                    price_span,
                    ..
                } => {
                    *unit_span = Span::default();
                    *price_span = Span::default();
                }
            }
        }
    }
}

impl Expr {
    /// Sets every span in this expression to `0..0`.
    pub fn erase_spans(&mut self) {
        self.span = Span::default();
        match &mut self.kind {
            ExprKind::Name(i) | ExprKind::Std(i) => i.span = Span::default(),
            ExprKind::Words(ws) => ws.iter_mut().for_each(|w| w.span = Span::default()),
            ExprKind::Pattern(p) => p.span = Span::default(),
            ExprKind::Mask(items) => items.iter_mut().for_each(|i| i.span = Span::default()),
            ExprKind::Top { k_span, above, .. } => {
                *k_span = Span::default();
                if let Some(a) = above {
                    a.erase_spans();
                }
            }
            ExprKind::MetaIs { values, .. } => {
                values.iter_mut().for_each(|v| v.span = Span::default())
            }
            ExprKind::Preview { structure, feature } => {
                structure.span = Span::default();
                feature.span = Span::default();
            }
            ExprKind::Has { set: e, .. }
            | ExprKind::Matches { pattern: e, .. }
            | ExprKind::Hits { set: e, .. }
            | ExprKind::Neg(e)
            | ExprKind::Not(e)
            | ExprKind::Paren(e) => e.erase_spans(),
            ExprKind::Binary { lhs, rhs, .. } => {
                lhs.erase_spans();
                rhs.erase_spans();
            }
            ExprKind::And(v) | ExprKind::Or(v) | ExprKind::Call { args: v, .. } => {
                v.iter_mut().for_each(Expr::erase_spans)
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => {
                cond.erase_spans();
                then.erase_spans();
                otherwise.erase_spans();
            }
            ExprKind::Number(_)
            | ExprKind::Bool(_)
            | ExprKind::All
            | ExprKind::WordCount(_)
            | ExprKind::Size => {}
        }
    }
}
