//! The tree builder's statements and leaves: spans without trailing
//! trivia, statements, numbers, strings and their escapes, metadata values,
//! the depth bound. Expressions are in [`super::expr`].

use super::{code_len, Builder, Rule, MAX_EXPR_DEPTH};
use crate::ast::*;
use crate::diagnostic::{Code, Diagnostic};
use crate::span::Span;
use pest::iterators::Pair;

impl Builder<'_> {
    /// The span of a pair without the whitespace and comments pest includes
    /// after a trailing repetition.
    pub(super) fn span(&self, pair: &Pair<'_, Rule>) -> Span {
        let span = Span::from(pair.as_span());
        let text = &self.source[span.start..span.end];
        // Most spans end in code; only scan the ones that may end in trivia.
        if !text.ends_with(|c: char| c.is_ascii_whitespace()) && !text.contains('#') {
            return span;
        }
        Span::new(span.start, span.start + code_len(text))
    }

    pub(super) fn statement(&mut self, pair: Pair<'_, Rule>) -> Option<Statement> {
        let span = self.span(&pair);
        let rule = pair.as_rule();
        let mut inner = pair.into_inner();
        let kind = match rule {
            Rule::header => {
                let kind = match inner.next()?.into_inner().next()?.as_rule() {
                    Rule::kw_module => HeaderKind::Module,
                    _ => HeaderKind::Policy,
                };
                let name = self.string(inner.next()?);
                StatementKind::Header { kind, name }
            }
            Rule::use_stmt => {
                inner.next()?;
                StatementKind::Use {
                    module: ident(inner.next()?),
                }
            }
            Rule::let_stmt => {
                inner.next()?;
                let name = ident(inner.next()?);
                let value = self.top_expr(inner.next()?)?;
                StatementKind::Let { name, value }
            }
            Rule::score_stmt => {
                inner.next()?;
                let structure = ident(inner.next()?);
                let value = self.top_expr(inner.next()?)?;
                StatementKind::Score { structure, value }
            }
            Rule::rule_stmt => {
                inner.next()?;
                let name = ident(inner.next()?);
                let mut next = inner.next()?;
                let mut when = None;
                if next.as_rule() == Rule::kw_when {
                    when = Some(self.top_expr(inner.next()?)?);
                    next = inner.next()?;
                }
                let action_span = self.span(&next);
                let action = match next.into_inner().next()?.as_rule() {
                    Rule::kw_select => ActionKind::Select,
                    Rule::kw_add => ActionKind::Add,
                    _ => ActionKind::Remove,
                };
                let mask = self.top_expr(inner.next()?)?;
                StatementKind::Rule {
                    name,
                    when,
                    action,
                    action_span,
                    mask,
                }
            }
            Rule::default_stmt => {
                inner.next()?;
                StatementKind::Default(self.top_expr(inner.next()?)?)
            }
            Rule::fallback_stmt => {
                inner.next()?;
                StatementKind::Fallback(self.top_expr(inner.next()?)?)
            }
            Rule::budget_stmt => {
                inner.next()?;
                let n = inner.next()?;
                let amount_span = Span::from(n.as_span());
                let amount = self.number(&n);
                StatementKind::Budget {
                    amount,
                    amount_span,
                }
            }
            Rule::trade_stmt => {
                inner.next()?;
                let unit = inner.next()?;
                inner.next()?;
                let n = inner.next()?;
                StatementKind::Trade {
                    unit: unit.as_str().to_string(),
                    unit_span: Span::from(unit.as_span()),
                    price: self.number(&n),
                    price_span: Span::from(n.as_span()),
                }
            }
            _ => return None,
        };
        Some(Statement { kind, span })
    }

    /// An expression at statement level.
    pub(super) fn top_expr(&mut self, pair: Pair<'_, Rule>) -> Option<Expr> {
        self.expr(pair).map(|(e, _)| e)
    }

    /// Reports a tree deeper than [`MAX_EXPR_DEPTH`]. Trees are checked while
    /// they are built, so no deeper tree ever exists (dropping one would
    /// recurse as deep as it is).
    pub(super) fn deep(&mut self, depth: u32, span: Span) -> Option<()> {
        if depth <= MAX_EXPR_DEPTH {
            return Some(());
        }
        self.errors.push(
            Diagnostic::new(
                Code::E0003,
                span,
                format!("expression tree deeper than {MAX_EXPR_DEPTH} levels (a chain of N operators is N levels)"),
            )
            .with_help("split the expression into `let`s"),
        );
        None
    }

    pub(super) fn number(&mut self, pair: &Pair<'_, Rule>) -> f64 {
        let span = self.span(pair);
        match pair.as_str().parse::<f64>() {
            Ok(v) if v.is_finite() => v,
            _ => {
                self.errors.push(
                    Diagnostic::new(
                        Code::E0102,
                        span,
                        format!("number `{}` is out of range", pair.as_str()),
                    )
                    .with_help("numbers must be finite 64-bit floating-point values"),
                );
                0.0
            }
        }
    }

    pub(super) fn string(&mut self, pair: Pair<'_, Rule>) -> StrLit {
        let span = self.span(&pair);
        let Some(inner) = pair.into_inner().next() else {
            return StrLit {
                value: String::new(),
                raw: false,
                span,
            };
        };
        let raw = inner.as_rule() == Rule::raw_string;
        let body = inner.into_inner().next();
        let text = body.as_ref().map_or("", |b| b.as_str());
        let body_start = body.as_ref().map_or(span.start, |b| b.as_span().start());
        let value = if raw {
            text.to_string()
        } else {
            self.unescape(text, body_start)
        };
        StrLit { value, raw, span }
    }

    pub(super) fn unescape(&mut self, text: &str, offset: usize) -> String {
        let mut out = String::with_capacity(text.len());
        let mut chars = text.char_indices();
        while let Some((i, c)) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some((_, e)) = chars.next() else { break };
            match e {
                '\\' => out.push('\\'),
                '"' => out.push('"'),
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' => {
                    let rest = &text[i + 2..];
                    let parsed = rest
                        .strip_prefix('{')
                        .and_then(|r| r.find('}').map(|end| &r[..end]))
                        .and_then(|hex| {
                            u32::from_str_radix(hex, 16)
                                .ok()
                                .and_then(char::from_u32)
                                .map(|ch| (ch, hex.len() + 2))
                        });
                    match parsed {
                        Some((ch, len)) => {
                            out.push(ch);
                            for _ in 0..len {
                                chars.next();
                            }
                        }
                        None => self.bad_escape(offset + i, 2, "\\u"),
                    }
                }
                other => self.bad_escape(offset + i, 1 + other.len_utf8(), &format!("\\{other}")),
            }
        }
        out
    }

    pub(super) fn bad_escape(&mut self, at: usize, len: usize, text: &str) {
        self.errors.push(
            Diagnostic::new(
                Code::E0101,
                Span::new(at, at + len),
                format!("invalid escape `{text}` in a string"),
            )
            .with_help(r#"valid escapes are \\ \" \n \t \r \0 \u{HEX}; for regexes a raw string r"..." needs none"#),
        );
    }

    /// A metadata value: a bare word or a string (the formatter writes a bare
    /// word where it can, so the two spellings are the same value).
    pub(super) fn value(&mut self, pair: Pair<'_, Rule>) -> Option<StrLit> {
        let inner = pair.into_inner().next()?;
        Some(if inner.as_rule() == Rule::string {
            self.string(inner)
        } else {
            StrLit {
                value: inner.as_str().to_string(),
                raw: false,
                span: Span::from(inner.as_span()),
            }
        })
    }
}

pub(super) fn ident(pair: Pair<'_, Rule>) -> Ident {
    Ident {
        name: pair.as_str().to_string(),
        span: Span::from(pair.as_span()),
    }
}

pub(super) fn subject(pair: Pair<'_, Rule>) -> Subject {
    match pair.into_inner().next().map(|p| p.as_rule()) {
        Some(Rule::kw_task) => Subject::Task,
        _ => Subject::Query,
    }
}
