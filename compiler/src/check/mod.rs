//! The checker: from a syntax tree to a [`Program`], with diagnostics.
//!
//! It resolves names (structures, `let`s, `std` cue sets), checks types
//! (boolean, number, keyword set, pattern, mask), orders `let`s and rejects
//! cycles, enforces the limits, proves that the result can never be empty and
//! emits the warnings. See docs/ERRORS.md for every diagnostic.

mod collect;
mod lints;
mod lower;

use crate::ir::{Features, MaskExpr, Program};
use mesa_core::{Feature, Mask, Structure};
use mesa_grammar::ast::{Expr, File, HeaderKind, Ident, StatementKind};
use mesa_grammar::{did_you_mean, Code, Diagnostic, Span};
use petgraph::graph::DiGraph;
use std::collections::HashMap;

pub(crate) use lower::Value;

/// Most rules in one policy.
pub const MAX_RULES: usize = 1000;
/// Most `let`s in one file.
pub const MAX_LETS: usize = 1000;
/// Most keywords over all of a policy's sets.
pub const MAX_KEYWORDS: usize = 10_000;
/// Longest keyword, in bytes.
pub const MAX_KEYWORD_BYTES: usize = 256;
/// Largest expression, in nodes, after `let`s are expanded.
pub const MAX_EXPR_NODES: usize = 10_000;
/// Deepest expression after `let`s are expanded.
pub const MAX_EXPR_DEPTH: usize = 512;

/// The outcome of checking: the program when there is no error, and every
/// diagnostic (errors and warnings) in source order.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The checked program, present exactly when there are no errors and the
    /// file is a policy (a module's `let`s are checked, but it is not a
    /// program of its own).
    pub program: Option<Program>,
    /// Errors and warnings, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

impl Checked {
    /// Whether any diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    fn failed(diagnostics: Vec<Diagnostic>) -> Checked {
        Checked {
            program: None,
            diagnostics,
        }
    }
}

/// Checks raw file contents (which must be UTF-8).
pub fn check_bytes(bytes: &[u8]) -> Checked {
    match std::str::from_utf8(bytes) {
        Ok(source) => check(source),
        // parse_bytes reports the encoding error (E0001).
        Err(_) => Checked::failed(mesa_grammar::parse_bytes(bytes).err().unwrap_or_default()),
    }
}

/// Parses and checks a policy or module source.
pub fn check(source: &str) -> Checked {
    match mesa_grammar::parse(source) {
        Ok(file) => check_file(&file, source),
        Err(diagnostics) => Checked::failed(diagnostics),
    }
}

/// Checks a parsed file; `source` is the text it was parsed from.
pub fn check_file(file: &File, source: &str) -> Checked {
    let mut checker = Checker::new(source);
    let program = checker.run(file);
    let mut diagnostics = checker.diags;
    diagnostics.sort_by_key(|d| (d.span.start, d.span.end));
    let has_errors = diagnostics.iter().any(Diagnostic::is_error);
    Checked {
        program: if has_errors { None } else { program },
        diagnostics,
    }
}

/// A `let` declaration and what lowering made of it.
struct LetDecl<'f> {
    name: &'f Ident,
    value: &'f Expr,
    lowered: Option<Value>,
    used: bool,
}

/// The statements of a file, sorted by kind.
#[derive(Default)]
struct Decls<'f> {
    header: Option<(HeaderKind, String)>,
    uses: Vec<&'f Ident>,
    scores: Vec<(&'f Ident, &'f Expr)>,
    rules: Vec<&'f mesa_grammar::ast::Statement>,
    default: Option<&'f Expr>,
    fallback: Option<&'f Expr>,
    budget: Option<(f64, Span)>,
    trade: Option<&'f mesa_grammar::ast::Statement>,
}

pub(crate) struct Checker<'f> {
    source: &'f str,
    pub(crate) diags: Vec<Diagnostic>,
    lets: Vec<LetDecl<'f>>,
    let_index: HashMap<&'f str, usize>,
    uses_std: bool,
    std_used: bool,
    keyword_sets: Vec<crate::ir::KeywordSet>,
    patterns: Vec<crate::ir::PatternDef>,
    std_ids: HashMap<String, Value>,
    total_keywords: usize,
    /// Checking a standard module: the standard library is not consulted.
    module_mode: bool,
    lines: mesa_grammar::span::LineIndex,
}

impl<'f> Checker<'f> {
    fn new(source: &'f str) -> Self {
        Checker {
            source,
            diags: Vec::new(),
            lets: Vec::new(),
            let_index: HashMap::new(),
            uses_std: false,
            std_used: false,
            keyword_sets: Vec::new(),
            patterns: Vec::new(),
            std_ids: HashMap::new(),
            total_keywords: 0,
            module_mode: false,
            lines: mesa_grammar::span::LineIndex::new(source),
        }
    }

    fn help(
        &mut self,
        code: Code,
        span: Span,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.diags
            .push(Diagnostic::new(code, span, message).with_help(help));
    }

    fn line_of(&self, offset: usize) -> usize {
        self.lines.line_column(self.source, offset).0
    }

    fn text(&self, span: Span) -> String {
        let raw = self.source.get(span.start..span.end).unwrap_or("");
        raw.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    /// A `trade` statement's unit and price.
    fn trade(&mut self, stmt: &mesa_grammar::ast::Statement) -> Option<crate::ir::Trade> {
        let StatementKind::Trade {
            unit,
            unit_span,
            price,
            ..
        } = &stmt.kind
        else {
            return None;
        };
        let Some(unit) = mesa_core::Shown::from_name(unit) else {
            self.help(
                Code::E0307,
                *unit_span,
                format!("a trade counts `words` or `steps`, not `{unit}`"),
                "write `trade words at 0.3` (distinct content words) or `trade steps at 0.3` (distinct steps)",
            );
            return None;
        };
        Some(crate::ir::Trade {
            unit,
            price: *price,
        })
    }

    fn once(&mut self, slot: &mut Option<&'f Expr>, e: &'f Expr, span: Span, what: &str) {
        if slot.is_some() {
            self.help(
                Code::E0104,
                span,
                format!("`{what}` is given twice"),
                format!("keep one `{what}`"),
            );
        } else {
            *slot = Some(e);
        }
    }

    /// Orders the `let`s so each comes after the ones it uses; reports cycles.
    fn let_order(&mut self) -> Vec<usize> {
        let mut graph = DiGraph::<usize, ()>::new();
        let nodes: Vec<_> = (0..self.lets.len()).map(|i| graph.add_node(i)).collect();
        for (i, decl) in self.lets.iter().enumerate() {
            let mut names = Vec::new();
            lower::referenced_names(decl.value, &mut names);
            for name in names {
                if let Some(&j) = self.let_index.get(name) {
                    // Edge j -> i: j must be lowered before i.
                    graph.add_edge(nodes[j], nodes[i], ());
                }
            }
        }
        let mut order = Vec::with_capacity(self.lets.len());
        for scc in petgraph::algo::tarjan_scc(&graph) {
            let cyclic = scc.len() > 1 || graph.contains_edge(scc[0], scc[0]);
            if cyclic {
                let mut members: Vec<usize> = scc.iter().map(|n| graph[*n]).collect();
                members.sort_unstable();
                let names: Vec<String> = members
                    .iter()
                    .map(|&m| format!("`{}`", self.lets[m].name.name))
                    .collect();
                let first = self.lets[members[0]].name.span;
                let mut diag = Diagnostic::new(
                    Code::E0207,
                    first,
                    format!("`let` cycle: {} refer to each other", names.join(", ")),
                )
                .with_help("a `let` may only use `let`s that do not use it back; break the cycle");
                for &m in &members[1..] {
                    diag = diag.with_label(self.lets[m].name.span, "part of the cycle");
                }
                self.diags.push(diag);
                for m in members {
                    self.lets[m].lowered = Some(Value::Error);
                    // E0207 speaks for them: W0103 would call them unused
                    // although they are used, by each other.
                    self.lets[m].used = true;
                }
            } else {
                order.push(graph[scc[0]]);
            }
        }
        // tarjan_scc yields components in reverse topological order.
        order.reverse();
        order
    }

    fn run(&mut self, file: &'f File) -> Option<Program> {
        let decls = self.collect(file);
        for i in self.let_order() {
            let decl_value = self.lets[i].value;
            let name = self.lets[i].name.name.clone();
            let value = self.lower_top(decl_value, Some(&name));
            self.lets[i].lowered = Some(value);
        }
        let (kind, name) = decls.header.clone()?;
        if kind == HeaderKind::Module {
            self.check_module_exports();
            return None;
        }
        let scores = self.lower_scores(&decls);
        let default = decls.default.and_then(|e| self.fixed_mask(e, "default"));
        let fallback_decl = decls.fallback.and_then(|e| self.fixed_mask(e, "fallback"));
        if let (Some(fb), Some(e)) = (fallback_decl, decls.fallback) {
            if fb.is_empty() {
                self.help(
                    Code::E0401,
                    e.span,
                    "the fallback mask is empty",
                    "the fallback is what an empty result becomes; name at least one structure",
                );
            }
        }
        let budget = decls
            .budget
            .and_then(|(amount, span)| self.budget(amount, span));
        let trade = decls.trade.and_then(|stmt| self.trade(stmt));
        let rules = self.lower_rules(&decls);
        self.report_unused(&decls);
        if self.diags.iter().any(Diagnostic::is_error) {
            return None;
        }
        let default = default?;
        let mut program = Program {
            name,
            kind,
            keyword_sets: std::mem::take(&mut self.keyword_sets),
            patterns: std::mem::take(&mut self.patterns),
            scores,
            rules,
            default,
            fallback: fallback_decl.unwrap_or(default),
            budget,
            trade,
            features: Features::default(),
            pattern_dfas: Vec::new(),
        };
        lints::check_rules(
            self,
            &program,
            &decls.rules,
            fallback_decl.is_some(),
            decls.default.map(|e| e.span),
        );
        if let (Some(fb), Some(e)) = (fallback_decl, decls.fallback) {
            if fb == default {
                self.help(
                    Code::W0106,
                    e.span,
                    "the fallback repeats the default",
                    "remove the `fallback` line: the default is the fallback when none is given",
                );
            }
        }
        crate::features::finish(&mut program);
        let limit = crate::wasm::patterns::MAX_PATTERNS;
        if program.patterns.len() > limit {
            self.help(
                Code::E0507,
                Span::new(0, 0),
                format!(
                    "the policy uses {} patterns; at most {limit} are supported",
                    program.patterns.len()
                ),
                "merge patterns with `|`, or use keyword sets",
            );
            return None;
        }
        if !self.module_mode {
            self.compile_patterns(&mut program)?;
        }
        Some(program)
    }

    /// The `score` lines by structure; a structure scored twice is an error.
    fn lower_scores(&mut self, decls: &Decls<'f>) -> [Option<crate::ir::NumExpr>; 5] {
        let mut scores: [Option<crate::ir::NumExpr>; 5] = Default::default();
        let mut score_spans: [Option<Span>; 5] = [None; 5];
        for (structure, value) in &decls.scores {
            let s = self.structure(structure);
            let lowered = self.lower_num(value);
            if let Some(s) = s {
                if let Some(prev) = score_spans[s.index()] {
                    let mut d = Diagnostic::new(
                        Code::E0209,
                        structure.span,
                        format!("structure {} is scored twice", s.letter()),
                    )
                    .with_help("keep one `score` line per structure");
                    d = d.with_label(prev, "first scored here");
                    self.diags.push(d);
                } else {
                    score_spans[s.index()] = Some(structure.span);
                    scores[s.index()] = lowered;
                }
            }
        }
        scores
    }

    /// A `budget`'s amount, which must be above 0 tokens.
    fn budget(&mut self, amount: f64, span: Span) -> Option<f64> {
        if amount > 0.0 {
            return Some(amount);
        }
        self.help(
            Code::E0305,
            span,
            "the budget must be more than 0 tokens",
            "remove the budget or give a positive number of tokens",
        );
        None
    }

    /// The rules, lowered; a rule whose condition or mask fails is left out
    /// (its errors are reported).
    fn lower_rules(&mut self, decls: &Decls<'f>) -> Vec<crate::ir::Rule> {
        let mut rules = Vec::new();
        for stmt in &decls.rules {
            if let StatementKind::Rule {
                name,
                when,
                action,
                mask,
                ..
            } = &stmt.kind
            {
                let cond = match when {
                    Some(c) => self.lower_bool(c),
                    None => Some(crate::ir::BoolExpr::Const(true)),
                };
                let mask_expr = self.lower_mask(mask);
                if let (Some(cond), Some(mask_expr)) = (cond, mask_expr) {
                    rules.push(crate::ir::Rule {
                        name: name.name.clone(),
                        line: self.line_of(stmt.span.start),
                        span: stmt.span,
                        cond,
                        action: *action,
                        mask: mask_expr,
                        cond_text: when
                            .as_ref()
                            .map_or_else(|| "always".to_string(), |c| self.text(c.span)),
                        mask_text: self.text(mask.span),
                    });
                }
            }
        }
        rules
    }

    /// Compiles the patterns to the DFAs the Wasm module will carry, so that
    /// every limit the compiler has is reported here, on the culprit.
    fn compile_patterns(&mut self, program: &mut Program) -> Option<()> {
        use crate::wasm::patterns::{self, DfaError};
        let sources: Vec<String> = program.patterns.iter().map(|p| p.source.clone()).collect();
        match patterns::compile_groups(&sources) {
            Ok(groups) => {
                program.pattern_dfas = groups;
                Some(())
            }
            Err(DfaError::TooBig(Some(i))) => {
                let p = &program.patterns[i];
                self.help(
                    Code::E0504,
                    p.span,
                    format!(
                        "pattern `{}` compiles to a DFA larger than {} bytes",
                        p.name,
                        patterns::MAX_DFA_BYTES
                    ),
                    "counted repetitions such as {20} after a class, Unicode classes and long alternations of classes blow up; simplify the pattern or split it into several joined with `or`",
                );
                None
            }
            Err(DfaError::TooBig(None)) => {
                let mut d = Diagnostic::new(
                    Code::E0504,
                    program.patterns[0].span,
                    format!(
                        "the policy's {} patterns together compile to DFAs larger than {} bytes",
                        program.patterns.len(),
                        patterns::MAX_TOTAL_DFA_BYTES
                    ),
                )
                .with_help("use fewer or simpler patterns, or keyword sets");
                for p in &program.patterns[1..] {
                    d = d.with_label(p.span, "one of the patterns");
                }
                self.diags.push(d);
                None
            }
            Err(DfaError::TooManyPatterns(_)) => Some(()), // E0507, above
            Err(DfaError::Other(message)) => {
                self.help(
                    Code::E0504,
                    program.patterns[0].span,
                    format!("the policy's patterns cannot be compiled to a DFA: {message}"),
                    "simplify the patterns",
                );
                None
            }
        }
    }

    /// A mask that must be known when the policy is checked.
    fn fixed_mask(&mut self, e: &Expr, what: &str) -> Option<Mask> {
        match self.lower_mask(e)? {
            MaskExpr::Const(m) => Some(m),
            MaskExpr::Top { .. } => {
                self.help(
                    Code::E0306,
                    e.span,
                    format!("the {what} must be a fixed mask"),
                    "write a set such as {S, T} or `all`; `top` can only be used in rules",
                );
                None
            }
        }
    }

    fn structure(&mut self, ident: &Ident) -> Option<Structure> {
        let s = Structure::from_name(&ident.name);
        if s.is_none() {
            let help = match did_you_mean(&ident.name, Structure::spellings()) {
                Some(s) => format!("did you mean `{s}`? structures are S, T, G, V, R (summary, temporal, graph, vector, raw)"),
                None => "structures are S, T, G, V, R (summary, temporal, graph, vector, raw)".into(),
            };
            self.help(
                Code::E0203,
                ident.span,
                format!("unknown structure `{}`", ident.name),
                help,
            );
        }
        s
    }

    /// A preview feature's name (`top`, `overlap_R`), or an E0204.
    fn preview_feature(&mut self, ident: &Ident) -> Option<Feature> {
        let f = Feature::from_name(&ident.name);
        if f.is_none() {
            let list = "previews have `tokens`, `top`, `hits`, `steps`, `gap`, `share`, `named` \
                        and `overlap_K` (K another structure)";
            let help = match did_you_mean(&ident.name, Feature::names()) {
                Some(n) => format!("did you mean `{n}`? {list}"),
                None => list.into(),
            };
            self.help(
                Code::E0204,
                ident.span,
                format!("unknown preview feature `{}`", ident.name),
                help,
            );
        }
        f
    }

    fn check_module_exports(&mut self) {
        for i in 0..self.lets.len() {
            if !matches!(
                self.lets[i].lowered,
                Some(Value::Set(_)) | Some(Value::Pattern(_)) | Some(Value::Error)
            ) {
                let span = self.lets[i].name.span;
                self.help(
                    Code::E0106,
                    span,
                    "a module `let` must be a keyword set or a pattern",
                    "modules export cue sets; keep numbers, conditions and masks in policies",
                );
            }
        }
    }

    fn report_unused(&mut self, decls: &Decls<'f>) {
        for i in 0..self.lets.len() {
            if !self.lets[i].used && !self.lets[i].name.name.starts_with('_') {
                let name = self.lets[i].name;
                self.help(
                    Code::W0103,
                    name.span,
                    format!("`{}` is never used", name.name),
                    "remove it, or use it in a rule; names starting with `_` are not reported",
                );
            }
        }
        if self.uses_std && !self.std_used {
            if let Some(u) = decls.uses.first() {
                self.help(
                    Code::W0109,
                    u.span,
                    "`use std` is never used",
                    "remove it, or refer to a standard set such as `std.causal`",
                );
            }
        }
    }

    /// The exported keyword sets and patterns of a checked module, by name.
    pub(crate) fn into_exports(self) -> Vec<(String, Export)> {
        let mut out = Vec::new();
        for decl in &self.lets {
            match decl.lowered {
                Some(Value::Set(id)) => out.push((
                    decl.name.name.clone(),
                    Export::Set(self.keyword_sets[id].clone()),
                )),
                Some(Value::Pattern(id)) => out.push((
                    decl.name.name.clone(),
                    Export::Pattern(self.patterns[id].clone()),
                )),
                _ => {}
            }
        }
        out
    }
}

/// What a module exports under one name.
#[derive(Debug, Clone)]
pub(crate) enum Export {
    Set(crate::ir::KeywordSet),
    Pattern(crate::ir::PatternDef),
}

/// Checks a module and returns its exports, or its diagnostics.
pub(crate) fn check_module(source: &str) -> Result<Vec<(String, Export)>, Vec<Diagnostic>> {
    let file = mesa_grammar::parse(source)?;
    let mut checker = Checker::new(source);
    checker.module_mode = true;
    let _ = checker.run(&file);
    if checker.diags.iter().any(Diagnostic::is_error) {
        return Err(checker.diags);
    }
    Ok(checker.into_exports())
}
