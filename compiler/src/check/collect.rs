//! Sorting a file's statements by kind ([`Decls`]), and reporting those
//! that are misplaced, repeated or missing.

use super::{Checker, Decls, LetDecl, MAX_LETS, MAX_RULES};
use mesa_grammar::ast::{Expr, File, HeaderKind, Ident, StatementKind};
use mesa_grammar::{did_you_mean, Code, Diagnostic, Span};
use std::collections::HashMap;

impl<'f> Checker<'f> {
    /// Sorts the statements and reports misplaced, duplicate or missing ones.
    pub(super) fn collect(&mut self, file: &'f File) -> Decls<'f> {
        let mut d = Decls::default();
        let Some(first) = file.statements.first() else {
            self.help(
                Code::E0103,
                Span::new(0, 0),
                "the file has no statements",
                "a policy starts with `policy \"name\"`, then declares `default {S, T}` and its rules",
            );
            return d;
        };
        if !matches!(first.kind, StatementKind::Header { .. }) {
            self.help(
                Code::E0103,
                Span::new(first.span.start, first.span.start),
                "missing header: the first statement must be `policy \"name\"`",
                "add a line such as `policy \"my-policy\"` at the top",
            );
        }
        let is_module = matches!(
            first.kind,
            StatementKind::Header {
                kind: HeaderKind::Module,
                ..
            }
        );
        let mut rule_names: HashMap<&str, Span> = HashMap::new();
        for (i, stmt) in file.statements.iter().enumerate() {
            if is_module
                && !matches!(
                    stmt.kind,
                    StatementKind::Header { .. }
                        | StatementKind::Let { .. }
                        | StatementKind::Use { .. }
                )
            {
                self.help(
                    Code::E0106,
                    stmt.span,
                    "a module may only contain `let`s",
                    "move rules, scores, default, fallback and budget into a policy file",
                );
                continue;
            }
            self.collect_one(i, stmt, &mut d, &mut rule_names);
        }
        if !is_module && d.default.is_none() && d.header.is_some() {
            self.help(
                Code::E0105,
                Span::new(first.span.start, first.span.end),
                "the policy has no `default` mask",
                "add a line such as `default {S, T, V}`: the mask rules start from",
            );
        }
        d
    }

    /// Files statement `i` of the file into `d`, reporting what is out of place.
    fn collect_one(
        &mut self,
        i: usize,
        stmt: &'f mesa_grammar::ast::Statement,
        d: &mut Decls<'f>,
        rule_names: &mut HashMap<&'f str, Span>,
    ) {
        match &stmt.kind {
            StatementKind::Header { kind, name } => {
                if i == 0 {
                    d.header = Some((*kind, name.value.clone()));
                    return;
                }
                let code = if d.header.is_some() {
                    Code::E0104
                } else {
                    Code::E0103
                };
                self.help(
                    code,
                    stmt.span,
                    "the header must be the first statement, once",
                    "remove this line or move it to the top",
                );
            }
            StatementKind::Use { module } => self.collect_use(module, stmt.span, d),
            StatementKind::Let { name, value } => self.collect_let(name, value),
            StatementKind::Score { structure, value } => d.scores.push((structure, value)),
            StatementKind::Rule { name, .. } => {
                if let Some(prev) = rule_names.insert(&name.name, name.span) {
                    self.diags.push(
                        Diagnostic::new(
                            Code::E0206,
                            name.span,
                            format!("rule name `{}` is used twice", name.name),
                        )
                        .with_label(prev, "first used here")
                        .with_help("rule names appear in traces; give each rule its own"),
                    );
                }
                if d.rules.len() == MAX_RULES {
                    self.help(
                        Code::E0500,
                        stmt.span,
                        format!("more than {MAX_RULES} rules"),
                        "merge rules that share an action",
                    );
                }
                d.rules.push(stmt);
            }
            StatementKind::Default(e) => self.once(&mut d.default, e, stmt.span, "default"),
            StatementKind::Fallback(e) => self.once(&mut d.fallback, e, stmt.span, "fallback"),
            StatementKind::Budget {
                amount,
                amount_span,
            } => {
                if d.budget.is_some() {
                    self.help(
                        Code::E0104,
                        stmt.span,
                        "`budget` is given twice",
                        "keep one budget",
                    );
                } else {
                    d.budget = Some((*amount, *amount_span));
                }
            }
            StatementKind::Trade { .. } => {
                if d.trade.is_some() {
                    self.help(
                        Code::E0104,
                        stmt.span,
                        "`trade` is given twice",
                        "keep one trade",
                    );
                } else {
                    d.trade = Some(stmt);
                }
            }
            _ => {}
        }
    }

    /// `use MODULE`: only `std`, once.
    fn collect_use(&mut self, module: &'f Ident, span: Span, d: &mut Decls<'f>) {
        if module.name != "std" {
            let hint = match did_you_mean(&module.name, ["std"]) {
                Some(s) => format!("did you mean `{s}`? the only module is `std`"),
                None => "the only module is `std`".into(),
            };
            self.help(
                Code::E0210,
                module.span,
                format!("unknown module `{}`", module.name),
                hint,
            );
        } else if self.uses_std {
            self.help(
                Code::W0109,
                span,
                "`use std` is given twice",
                "remove the second one",
            );
        } else {
            self.uses_std = true;
            d.uses.push(module);
        }
    }

    /// `let NAME = VALUE`: not a reserved word, not defined twice, at most
    /// [`MAX_LETS`].
    fn collect_let(&mut self, name: &'f Ident, value: &'f Expr) {
        if mesa_grammar::RESERVED.contains(&name.name.as_str()) {
            self.help(
                Code::E0208,
                name.span,
                format!("`{}` is a reserved word and cannot name a `let`", name.name),
                format!("rename it, e.g. `{}_set`", name.name),
            );
            return;
        }
        if let Some(&prev) = self.let_index.get(name.name.as_str()) {
            let first = self.lets[prev].name.span;
            self.diags.push(
                Diagnostic::new(
                    Code::E0205,
                    name.span,
                    format!("`{}` is defined twice", name.name),
                )
                .with_label(first, "first defined here")
                .with_help("rename one of them"),
            );
            return;
        }
        if self.lets.len() == MAX_LETS {
            self.help(
                Code::E0505,
                name.span,
                format!("more than {MAX_LETS} `let`s"),
                "merge keyword sets or split the policy",
            );
        }
        self.let_index.insert(&name.name, self.lets.len());
        self.lets.push(LetDecl {
            name,
            value,
            lowered: None,
            used: false,
        });
    }
}
