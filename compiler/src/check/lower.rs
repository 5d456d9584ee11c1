//! Lowering expressions to the decision program, with type checking.

use super::{Checker, Export, MAX_EXPR_DEPTH, MAX_EXPR_NODES, MAX_KEYWORDS, MAX_KEYWORD_BYTES};
use crate::cues::{self, PatternProblem};
use crate::ir::{BoolExpr, CmpOp, KeywordSet, MaskExpr, NumExpr, PatternDef};
use mesa_core::Mask;
use mesa_grammar::ast::{BinaryOp, CallName, Expr, ExprKind, Ident, StrLit};
use mesa_grammar::{did_you_mean, Code, Diagnostic, Span};
use std::collections::HashSet;

/// A lowered, typed value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Bool(BoolExpr),
    Num(NumExpr),
    /// A keyword set, by index.
    Set(usize),
    /// A pattern, by index.
    Pattern(usize),
    Mask(MaskExpr),
    /// Lowering failed and was reported; uses of it report nothing more.
    Error,
}

impl Value {
    fn type_name(&self) -> &'static str {
        match self {
            Value::Bool(_) => "a boolean",
            Value::Num(_) => "a number",
            Value::Set(_) => "a keyword set",
            Value::Pattern(_) => "a pattern",
            Value::Mask(_) => "a mask",
            Value::Error => "an invalid value",
        }
    }
}

fn take_bool(v: Value) -> Result<BoolExpr, Value> {
    match v {
        Value::Bool(b) => Ok(b),
        other => Err(other),
    }
}

fn take_num(v: Value) -> Result<NumExpr, Value> {
    match v {
        Value::Num(n) => Ok(n),
        other => Err(other),
    }
}

/// Every `let` name an expression refers to.
pub(crate) fn referenced_names<'e>(e: &'e Expr, out: &mut Vec<&'e str>) {
    if let ExprKind::Name(ident) = &e.kind {
        out.push(&ident.name);
    }
    for child in e.children() {
        referenced_names(child, out);
    }
}

/// Counts nodes and depth of lowered expressions, stopping early once the
/// node limit is passed.
#[derive(Default)]
struct Measure {
    nodes: usize,
}

impl Measure {
    fn num(&mut self, e: &NumExpr) -> usize {
        self.nodes += 1;
        if self.nodes > MAX_EXPR_NODES {
            return 0;
        }
        1 + match e {
            NumExpr::Const(_)
            | NumExpr::Preview(..)
            | NumExpr::WordCount(_)
            | NumExpr::Hits(..)
            | NumExpr::Size => 0,
            NumExpr::Neg(a) => self.num(a),
            NumExpr::Add(a, b) | NumExpr::Sub(a, b) | NumExpr::Mul(a, b) | NumExpr::Div(a, b) => {
                self.num(a).max(self.num(b))
            }
            NumExpr::Min(v) | NumExpr::Max(v) => v.iter().map(|x| self.num(x)).max().unwrap_or(0),
            NumExpr::If(c, a, b) => self.boolean(c).max(self.num(a)).max(self.num(b)),
        }
    }

    fn boolean(&mut self, e: &BoolExpr) -> usize {
        self.nodes += 1;
        if self.nodes > MAX_EXPR_NODES {
            return 0;
        }
        1 + match e {
            BoolExpr::Const(_)
            | BoolExpr::Has(..)
            | BoolExpr::Matches(..)
            | BoolExpr::MetaIn(..) => 0,
            BoolExpr::Cmp(_, a, b) => self.num(a).max(self.num(b)),
            BoolExpr::And(v) | BoolExpr::Or(v) => {
                v.iter().map(|x| self.boolean(x)).max().unwrap_or(0)
            }
            BoolExpr::Not(a) => self.boolean(a),
            BoolExpr::If(c, a, b) => self.boolean(c).max(self.boolean(a)).max(self.boolean(b)),
        }
    }

    fn value(&mut self, v: &Value) -> usize {
        match v {
            Value::Bool(b) => self.boolean(b),
            Value::Num(n) => self.num(n),
            Value::Mask(MaskExpr::Top { above: Some(a), .. }) => 1 + self.num(a),
            _ => 1,
        }
    }
}

impl Checker<'_> {
    /// Lowers a statement-level expression and enforces the size limits.
    /// `name` names keyword sets and patterns written directly as a `let`'s value.
    pub(crate) fn lower_top(&mut self, e: &Expr, name: Option<&str>) -> Value {
        let v = match (&e.kind, name) {
            (ExprKind::Words(words), Some(n)) => self.keyword_set(words, n.to_string(), e.span),
            (ExprKind::Pattern(p), Some(n)) => self.pattern(p, n.to_string()),
            _ => self.lower(e),
        };
        let mut m = Measure::default();
        let depth = m.value(&v);
        if m.nodes > MAX_EXPR_NODES || depth > MAX_EXPR_DEPTH {
            self.diags.push(
                Diagnostic::new(
                    Code::E0506,
                    e.span,
                    format!("this expression is too large once its `let`s are expanded (limits: {MAX_EXPR_NODES} nodes, {MAX_EXPR_DEPTH} levels)"),
                )
                .with_help("`let`s are expanded where they are used; simplify the expression or the `let`s it uses"),
            );
            return Value::Error;
        }
        v
    }

    fn mismatch(&mut self, span: Span, want: &str, got: &Value, help: Option<String>) {
        if matches!(got, Value::Error) {
            return;
        }
        let help = help.unwrap_or_else(|| match (want, got) {
            ("a boolean", Value::Num(_)) => {
                "compare the number, e.g. `preview.R.tokens > 4000`".into()
            }
            ("a boolean", Value::Set(_)) => "test it against a text, e.g. `query has NAME`".into(),
            ("a boolean", Value::Pattern(_)) => {
                "test it against a text, e.g. `query matches NAME`".into()
            }
            ("a mask", _) => "write a set such as {S, T}, `all`, or `top 2 by score`".into(),
            _ => format!("this place needs {want}"),
        });
        self.diags.push(
            Diagnostic::new(
                Code::E0300,
                span,
                format!("type mismatch: expected {want}, found {}", got.type_name()),
            )
            .with_help(help),
        );
    }

    /// Keeps a value of the expected type, or reports the mismatch.
    fn expect<T>(
        &mut self,
        span: Span,
        v: Value,
        want: &str,
        take: fn(Value) -> Result<T, Value>,
    ) -> Option<T> {
        match take(v) {
            Ok(t) => Some(t),
            Err(other) => {
                self.mismatch(span, want, &other, None);
                None
            }
        }
    }

    /// A statement-level condition.
    pub(crate) fn lower_bool(&mut self, e: &Expr) -> Option<BoolExpr> {
        let v = self.lower_top(e, None);
        self.expect(e.span, v, "a boolean", take_bool)
    }

    /// A statement-level number.
    pub(crate) fn lower_num(&mut self, e: &Expr) -> Option<NumExpr> {
        let v = self.lower_top(e, None);
        self.expect(e.span, v, "a number", take_num)
    }

    /// A statement-level mask.
    pub(crate) fn lower_mask(&mut self, e: &Expr) -> Option<MaskExpr> {
        let v = self.lower_top(e, None);
        self.expect(e.span, v, "a mask", |v| match v {
            Value::Mask(m) => Ok(m),
            other => Err(other),
        })
    }

    fn sub_bool(&mut self, e: &Expr) -> Option<BoolExpr> {
        let v = self.lower(e);
        self.expect(e.span, v, "a boolean", take_bool)
    }

    fn sub_num(&mut self, e: &Expr) -> Option<NumExpr> {
        let v = self.lower(e);
        self.expect(e.span, v, "a number", take_num)
    }

    fn sub_set(&mut self, e: &Expr, verb: &str) -> Option<usize> {
        match self.lower(e) {
            Value::Set(id) => Some(id),
            other => {
                let help = match other {
                    Value::Pattern(_) => Some(
                        "`has` and `hits` take keyword sets; test a pattern with `matches`"
                            .to_string(),
                    ),
                    _ => Some(format!(
                        "`{verb}` takes a keyword set such as `words [\"why\"]` or `std.causal`"
                    )),
                };
                self.mismatch(e.span, "a keyword set", &other, help);
                None
            }
        }
    }

    fn sub_pattern(&mut self, e: &Expr) -> Option<usize> {
        match self.lower(e) {
            Value::Pattern(id) => Some(id),
            other => {
                let help = match other {
                    Value::Set(_) => {
                        Some("`matches` takes a pattern; test a keyword set with `has`".to_string())
                    }
                    _ => Some(
                        "`matches` takes a pattern such as `pattern r\"step \\d+\"`".to_string(),
                    ),
                };
                self.mismatch(e.span, "a pattern", &other, help);
                None
            }
        }
    }

    /// Lowers any expression, inferring its type.
    fn lower(&mut self, e: &Expr) -> Value {
        let span = e.span;
        let wrap_b = |b: Option<BoolExpr>| b.map_or(Value::Error, Value::Bool);
        let wrap_n = |n: Option<NumExpr>| n.map_or(Value::Error, Value::Num);
        match &e.kind {
            ExprKind::Number(v) => Value::Num(NumExpr::Const(*v)),
            ExprKind::Bool(b) => Value::Bool(BoolExpr::Const(*b)),
            ExprKind::Name(ident) => self.name(&ident.name, ident.span),
            ExprKind::Std(ident) => self.std_ref(&ident.name, ident.span, span),
            ExprKind::Words(words) => {
                let (line, col) = self.lines.line_column(self.source, span.start);
                self.keyword_set(words, format!("words@{line}:{col}"), span)
            }
            ExprKind::Pattern(p) => {
                let (line, col) = self.lines.line_column(self.source, span.start);
                self.pattern(p, format!("pattern@{line}:{col}"))
            }
            ExprKind::Mask(items) => self.mask_literal(items),
            ExprKind::All => Value::Mask(MaskExpr::Const(Mask::ALL)),
            ExprKind::Top { k, k_span, above } => self.top(*k, *k_span, above.as_deref()),
            ExprKind::Has { subject, set } => wrap_b(
                self.sub_set(set, "has")
                    .map(|id| BoolExpr::Has(*subject, id)),
            ),
            ExprKind::Matches { subject, pattern } => wrap_b(
                self.sub_pattern(pattern)
                    .map(|id| BoolExpr::Matches(*subject, id)),
            ),
            ExprKind::MetaIs { field, values, .. } => Value::Bool(BoolExpr::MetaIn(
                *field,
                values.iter().map(|v| v.value.clone()).collect(),
            )),
            ExprKind::WordCount(subject) => Value::Num(NumExpr::WordCount(*subject)),
            ExprKind::Hits { subject, set } => wrap_n(
                self.sub_set(set, "hits")
                    .map(|id| NumExpr::Hits(*subject, id)),
            ),
            ExprKind::Preview { structure, feature } => self.preview(structure, feature),
            ExprKind::Size => Value::Num(NumExpr::Size),
            ExprKind::Neg(x) => wrap_n(self.sub_num(x).map(|n| NumExpr::Neg(Box::new(n)))),
            ExprKind::Not(x) => wrap_b(self.sub_bool(x).map(|b| BoolExpr::Not(Box::new(b)))),
            ExprKind::Binary { op, lhs, rhs } => self.binary(*op, lhs, rhs),
            ExprKind::And(items) | ExprKind::Or(items) => {
                let lowered: Vec<Option<BoolExpr>> =
                    items.iter().map(|x| self.sub_bool(x)).collect();
                let Some(all) = lowered.into_iter().collect::<Option<Vec<_>>>() else {
                    return Value::Error;
                };
                if matches!(e.kind, ExprKind::And(_)) {
                    Value::Bool(BoolExpr::And(all))
                } else {
                    Value::Bool(BoolExpr::Or(all))
                }
            }
            ExprKind::Call { name, args } => {
                let lowered: Vec<Option<NumExpr>> = args.iter().map(|x| self.sub_num(x)).collect();
                let Some(all) = lowered.into_iter().collect::<Option<Vec<_>>>() else {
                    return Value::Error;
                };
                Value::Num(match name {
                    CallName::Min => NumExpr::Min(all),
                    CallName::Max => NumExpr::Max(all),
                })
            }
            ExprKind::If {
                cond,
                then,
                otherwise,
            } => self.if_value(cond, then, otherwise),
            ExprKind::Paren(x) => self.lower(x),
            _ => Value::Error,
        }
    }

    /// A mask literal `{S, T}`; a structure listed twice is a warning.
    fn mask_literal(&mut self, items: &[Ident]) -> Value {
        let mut mask = Mask::EMPTY;
        let mut ok = true;
        for item in items {
            match self.structure(item) {
                Some(s) if mask.contains(s) => self.diags.push(
                    Diagnostic::new(
                        Code::W0107,
                        item.span,
                        format!("{} is listed twice in this mask", s.letter()),
                    )
                    .with_help("remove the repetition"),
                ),
                Some(s) => mask = mask.with(s),
                None => ok = false,
            }
        }
        if ok {
            Value::Mask(MaskExpr::Const(mask))
        } else {
            Value::Error
        }
    }

    /// `top K by score [above X]`: K from 1 to 5.
    fn top(&mut self, k: u64, k_span: Span, above: Option<&Expr>) -> Value {
        let above = match above {
            Some(a) => match self.sub_num(a) {
                Some(n) => Some(Box::new(n)),
                None => return Value::Error,
            },
            None => None,
        };
        if !(1..=5).contains(&k) {
            self.diags.push(
                Diagnostic::new(Code::E0304, k_span, format!("`top {k}` is out of range"))
                    .with_help("there are five structures: use a count from 1 to 5"),
            );
            return Value::Error;
        }
        Value::Mask(MaskExpr::Top { k: k as u8, above })
    }

    /// `preview.S.feature`: a known structure and feature; an overlap
    /// feature must name a structure other than `S`.
    fn preview(&mut self, structure: &Ident, feature: &Ident) -> Value {
        let s = self.structure(structure);
        let f = self.preview_feature(feature);
        match (s, f) {
            (Some(s), Some(f)) if f.partner() == Some(s) => {
                self.diags.push(
                    Diagnostic::new(
                        Code::E0204,
                        feature.span,
                        format!("`{}` is {}'s overlap with itself", feature.name, s.letter()),
                    )
                    .with_help("an overlap compares two structures: name another one"),
                );
                Value::Error
            }
            (Some(s), Some(f)) => {
                let key = mesa_core::PreviewKey::new(s, f);
                Value::Num(NumExpr::Preview(key.structure, key.feature))
            }
            _ => Value::Error,
        }
    }

    /// Arithmetic and comparisons: numbers on both sides.
    fn binary(&mut self, op: BinaryOp, lhs: &Expr, rhs: &Expr) -> Value {
        let a = self.sub_num(lhs);
        let b = self.sub_num(rhs);
        let (Some(a), Some(b)) = (a, b) else {
            return Value::Error;
        };
        let (a, b) = (Box::new(a), Box::new(b));
        match op {
            BinaryOp::Add => Value::Num(NumExpr::Add(a, b)),
            BinaryOp::Sub => Value::Num(NumExpr::Sub(a, b)),
            BinaryOp::Mul => Value::Num(NumExpr::Mul(a, b)),
            BinaryOp::Div => Value::Num(NumExpr::Div(a, b)),
            BinaryOp::Lt => Value::Bool(BoolExpr::Cmp(CmpOp::Lt, a, b)),
            BinaryOp::Le => Value::Bool(BoolExpr::Cmp(CmpOp::Le, a, b)),
            BinaryOp::Gt => Value::Bool(BoolExpr::Cmp(CmpOp::Gt, a, b)),
            BinaryOp::Ge => Value::Bool(BoolExpr::Cmp(CmpOp::Ge, a, b)),
            BinaryOp::Eq => Value::Bool(BoolExpr::Cmp(CmpOp::Eq, a, b)),
            BinaryOp::Ne => Value::Bool(BoolExpr::Cmp(CmpOp::Ne, a, b)),
        }
    }

    /// `if c then a else b`: a boolean condition, branches of one type.
    fn if_value(&mut self, cond: &Expr, then: &Expr, otherwise: &Expr) -> Value {
        let c = self.sub_bool(cond);
        let t = self.lower(then);
        let o = self.lower(otherwise);
        let Some(c) = c else { return Value::Error };
        match (t, o) {
            (Value::Num(a), Value::Num(b)) => {
                Value::Num(NumExpr::If(Box::new(c), Box::new(a), Box::new(b)))
            }
            (Value::Bool(a), Value::Bool(b)) => {
                Value::Bool(BoolExpr::If(Box::new(c), Box::new(a), Box::new(b)))
            }
            (Value::Error, _) | (_, Value::Error) => Value::Error,
            (a @ (Value::Num(_) | Value::Bool(_)), b) => {
                let want = a.type_name();
                self.mismatch(
                    otherwise.span,
                    want,
                    &b,
                    Some("both branches of `if` must have the same type".into()),
                );
                Value::Error
            }
            (a, _) => {
                self.mismatch(
                    then.span,
                    "a number or a boolean",
                    &a,
                    Some("`if` chooses between numbers or between booleans".into()),
                );
                Value::Error
            }
        }
    }

    fn name(&mut self, name: &str, span: Span) -> Value {
        if let Some(&i) = self.let_index.get(name) {
            self.lets[i].used = true;
            return self.lets[i].lowered.clone().unwrap_or(Value::Error);
        }
        let names: Vec<&str> = self.lets.iter().map(|l| l.name.name.as_str()).collect();
        let mut help = match did_you_mean(name, names.iter().copied()) {
            Some(n) => {
                // The suggested `let` was probably meant here: do not also
                // report it as unused.
                if let Some(&i) = self.let_index.get(n) {
                    self.lets[i].used = true;
                }
                format!("did you mean `{n}`?")
            }
            None => "define it with `let`".to_string(),
        };
        if !self.module_mode && crate::stdlib::lookup(name).is_some() {
            help = format!("`{name}` is a standard set: write `std.{name}` (and `use std`)");
        }
        self.diags.push(
            Diagnostic::new(Code::E0200, span, format!("unknown name `{name}`")).with_help(help),
        );
        Value::Error
    }

    fn std_ref(&mut self, name: &str, name_span: Span, span: Span) -> Value {
        if !self.uses_std {
            self.diags.push(
                Diagnostic::new(
                    Code::E0202,
                    span,
                    format!("`std.{name}` is used without `use std`"),
                )
                .with_help("add `use std` after the `policy` line"),
            );
            return Value::Error;
        }
        self.std_used = true;
        if let Some(v) = self.std_ids.get(name) {
            return v.clone();
        }
        let value = match crate::stdlib::lookup(name) {
            Some(Export::Set(set)) => {
                self.keyword_sets.push(KeywordSet {
                    name: format!("std.{name}"),
                    keywords: set.keywords.clone(),
                });
                Value::Set(self.keyword_sets.len() - 1)
            }
            Some(Export::Pattern(p)) => {
                self.patterns.push(PatternDef {
                    name: format!("std.{name}"),
                    source: p.source.clone(),
                    span,
                });
                Value::Pattern(self.patterns.len() - 1)
            }
            None => {
                let names = crate::stdlib::names();
                let help = match did_you_mean(name, names.iter().map(String::as_str)) {
                    Some(n) => format!("did you mean `std.{n}`?"),
                    None => format!("the standard sets are: {}", names.join(", ")),
                };
                self.diags.push(
                    Diagnostic::new(
                        Code::E0201,
                        name_span,
                        format!("unknown standard cue set `std.{name}`"),
                    )
                    .with_help(help),
                );
                return Value::Error;
            }
        };
        self.std_ids.insert(name.to_string(), value.clone());
        value
    }

    fn keyword_set(&mut self, words: &[StrLit], name: String, span: Span) -> Value {
        if words.is_empty() {
            self.diags.push(
                Diagnostic::new(
                    Code::W0108,
                    span,
                    "this keyword set is empty: it never matches",
                )
                .with_help("add keywords, or remove the set and the conditions that use it"),
            );
        }
        let mut seen = HashSet::new();
        let mut keywords = Vec::new();
        let mut ok = true;
        for w in words {
            let k = cues::normalize_keyword(&w.value);
            if k.is_empty() {
                self.diags.push(
                    Diagnostic::new(Code::E0303, w.span, "empty keyword")
                        .with_help("a keyword needs at least one non-blank character; remove it"),
                );
                ok = false;
                continue;
            }
            if k.len() > MAX_KEYWORD_BYTES {
                self.diags.push(
                    Diagnostic::new(
                        Code::E0502,
                        w.span,
                        format!(
                            "keyword of {} bytes; the limit is {MAX_KEYWORD_BYTES}",
                            k.len()
                        ),
                    )
                    .with_help("keywords are words or short phrases; use a pattern for long text"),
                );
                ok = false;
                continue;
            }
            if !seen.insert(k.clone()) {
                self.diags.push(
                    Diagnostic::new(Code::W0104, w.span, format!("duplicate keyword \"{k}\" in this set"))
                        .with_help("keywords match case-insensitively with blanks collapsed; remove the repetition"),
                );
                continue;
            }
            keywords.push(k);
        }
        let before = self.total_keywords;
        self.total_keywords += keywords.len();
        if before <= MAX_KEYWORDS && self.total_keywords > MAX_KEYWORDS {
            self.diags.push(
                Diagnostic::new(
                    Code::E0501,
                    span,
                    format!("the policy has more than {MAX_KEYWORDS} keywords"),
                )
                .with_help("keep the sets that decide something; remove the rest"),
            );
        }
        if !ok {
            return Value::Error;
        }
        self.keyword_sets.push(KeywordSet { name, keywords });
        Value::Set(self.keyword_sets.len() - 1)
    }

    fn pattern(&mut self, p: &StrLit, name: String) -> Value {
        match cues::validate_pattern(&p.value) {
            Ok(()) => {
                self.patterns.push(PatternDef {
                    name,
                    source: p.value.clone(),
                    span: p.span,
                });
                Value::Pattern(self.patterns.len() - 1)
            }
            Err(problem) => {
                let d = match problem {
                    PatternProblem::TooLong(n) => Diagnostic::new(
                        Code::E0503,
                        p.span,
                        format!("pattern `{name}` is {n} bytes; the limit is {}", cues::MAX_PATTERN_BYTES),
                    )
                    .with_help("split it into several patterns joined with `or`"),
                    PatternProblem::Syntax(msg) => Diagnostic::new(
                        Code::E0301,
                        p.span,
                        format!("invalid pattern `{name}`: {}", msg.lines().last().unwrap_or("syntax error").trim()),
                    )
                    .with_help("patterns use Rust regex syntax; in a normal string write `\\\\` for a backslash, or use a raw string r\"...\""),
                    PatternProblem::NotDfa(msg) => Diagnostic::new(
                        Code::E0302,
                        p.span,
                        format!("pattern `{name}` cannot run as a DFA: {msg}"),
                    )
                    .with_help("use ASCII word boundaries `\\b` (the default) instead of Unicode ones `(?u:\\b)`"),
                    PatternProblem::TooBig => Diagnostic::new(
                        Code::E0504,
                        p.span,
                        format!("pattern `{name}` compiles to more than {} bytes", cues::MAX_PATTERN_PROGRAM_BYTES),
                    )
                    .with_help("large counted repetitions such as {1000} or Unicode classes blow up; simplify the pattern"),
                };
                self.diags.push(d);
                Value::Error
            }
        }
    }
}
