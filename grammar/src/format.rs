//! The formatter: one canonical layout for every policy.
//!
//! Statements keep their order; each gets its own line; at most one blank line
//! separates statements (where the source had at least one). Comments are kept:
//! a comment after code on a statement's last line stays there, every other
//! comment goes on its own line before the statement that follows it.
//! Formatting is idempotent and keeps the syntax tree (spans aside).

use crate::ast::*;
use crate::diagnostic::Diagnostic;
use crate::lex::{Piece, Pieces};
use crate::parser::parse;

/// Lines longer than this are broken where the layout allows.
const WIDTH: usize = 100;
const INDENT: &str = "    ";

/// Words that cannot be used as names.
pub const RESERVED: &[&str] = &[
    "policy", "module", "use", "let", "score", "rule", "when", "select", "add", "remove",
    "default", "fallback", "budget", "tokens", "trade", "and", "or", "not", "if", "then", "else",
    "min", "max", "hits", "top", "by", "above", "has", "matches", "is", "in", "query", "task",
    "domain", "qtype", "preview", "size", "words", "pattern", "all", "true", "false", "std",
];

/// Whether `s` can be written as a bare name (not reserved).
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&s)
}

/// `text` as a bare name: ASCII letters and digits kept (lower-cased),
/// anything else `_`, and `{prefix}_` in front when that does not start
/// with a letter or is reserved (`"Rule 1"` → `rule_1`, `"1st"` →
/// `r_1st` with prefix `r`).
pub fn identifier_from(text: &str, prefix: &str) -> String {
    let name: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_alphabetic()) && is_identifier(&name) {
        name
    } else {
        format!("{prefix}_{name}")
    }
}

/// Parses and formats `source`.
pub fn format_source(source: &str) -> Result<String, Vec<Diagnostic>> {
    let file = parse(source)?;
    Ok(format_file(&file, source))
}

/// A comment found in the source.
struct Comment<'a> {
    start: usize,
    text: &'a str,
    /// Whether only whitespace precedes it on its line.
    own_line: bool,
}

/// Finds the comments of a source, skipping string literals.
fn comments(source: &str) -> Vec<Comment<'_>> {
    let mut out = Vec::new();
    let mut line_has_code = false;
    for piece in Pieces::new(source) {
        match piece {
            Piece::Newline(_) => line_has_code = false,
            Piece::Comment(start, end) => out.push(Comment {
                start,
                text: source[start..end].trim_end(),
                own_line: !line_has_code,
            }),
            Piece::Str(..) | Piece::Word(..) | Piece::Other(_) => line_has_code = true,
        }
    }
    out
}

/// Formats a parsed file; `source` is the text it was parsed from (for comments
/// and blank lines). Pass `""` to format a tree built in code.
pub fn format_file(file: &File, source: &str) -> String {
    let comments = comments(source);
    let mut ci = 0;
    let mut out = String::new();
    let mut prev_end: Option<usize> = None;
    for (n, stmt) in file.statements.iter().enumerate() {
        let next_start = file
            .statements
            .get(n + 1)
            .map_or(usize::MAX, |s| s.span.start);
        // Leading comments: everything before this statement's end that is not
        // a trailing comment of its last line.
        let mut leading = Vec::new();
        let mut trailing = None;
        while ci < comments.len() && comments[ci].start < next_start {
            let c = &comments[ci];
            let on_last_line = !c.own_line
                && c.start >= stmt.span.end
                && !source[stmt.span.end..c.start].contains('\n');
            if on_last_line && trailing.is_none() {
                trailing = Some(c.text);
            } else if c.start < stmt.span.start || c.start < stmt.span.end {
                leading.push(c);
            } else {
                // An own-line comment after the statement belongs to the next one.
                break;
            }
            ci += 1;
        }
        let block_start = leading.first().map_or(stmt.span.start, |c| c.start);
        if let Some(end) = prev_end {
            if blank_line_between(source, end, block_start) {
                out.push('\n');
            }
        }
        for c in &leading {
            out.push_str(c.text);
            out.push('\n');
        }
        out.push_str(&statement(stmt));
        if let Some(t) = trailing {
            out.push_str("  ");
            out.push_str(t);
        }
        out.push('\n');
        prev_end = Some(stmt.span.end);
    }
    // Comments after the last statement.
    let mut first = true;
    for c in &comments[ci..] {
        if first {
            if let Some(end) = prev_end {
                if blank_line_between(source, end, c.start) {
                    out.push('\n');
                }
            }
            first = false;
        }
        out.push_str(c.text);
        out.push('\n');
    }
    out
}

/// Whether the source has a blank line between `from` and `to`. The first
/// piece of the gap ends the previous line and the last starts the next token's
/// line, so only the pieces between them can be blank lines.
fn blank_line_between(source: &str, from: usize, to: usize) -> bool {
    let Some(gap) = source.get(from..to) else {
        return false;
    };
    let pieces: Vec<&str> = gap.split('\n').collect();
    pieces.len() > 2
        && pieces[1..pieces.len() - 1]
            .iter()
            .any(|l| l.trim().is_empty())
}

fn statement(stmt: &Statement) -> String {
    match &stmt.kind {
        StatementKind::Header { kind, name } => {
            let kw = match kind {
                HeaderKind::Policy => "policy",
                HeaderKind::Module => "module",
            };
            format!("{kw} {}", string(name))
        }
        StatementKind::Use { module } => format!("use {}", module.name),
        StatementKind::Let { name, value } => {
            let one_line = format!("let {} = {}", name.name, expr(value));
            match &value.kind {
                ExprKind::Words(words) if one_line.len() > WIDTH && !words.is_empty() => {
                    let mut s = format!("let {} = words [\n", name.name);
                    for w in words {
                        s.push_str(INDENT);
                        s.push_str(&string(w));
                        s.push_str(",\n");
                    }
                    s.push(']');
                    s
                }
                _ => one_line,
            }
        }
        StatementKind::Score { structure, value } => {
            format!("score {} = {}", structure.name, expr(value))
        }
        StatementKind::Rule {
            name,
            when,
            action,
            mask,
            ..
        } => {
            let head = match when {
                Some(cond) => format!("rule {} when {}", name.name, expr(cond)),
                None => format!("rule {}", name.name),
            };
            let tail = format!("-> {} {}", action.keyword(), expr(mask));
            if head.len() + 1 + tail.len() > WIDTH {
                format!("{head}\n{INDENT}{tail}")
            } else {
                format!("{head} {tail}")
            }
        }
        StatementKind::Default(e) => format!("default {}", expr(e)),
        StatementKind::Fallback(e) => format!("fallback {}", expr(e)),
        StatementKind::Budget { amount, .. } => format!("budget {} tokens", number(*amount)),
        StatementKind::Trade { unit, price, .. } => format!("trade {unit} at {}", number(*price)),
    }
}

/// Plain numbers of up to this many characters are never put in exponent
/// form: `4000` reads better than `4e3`.
const PLAIN_NUMBER_WIDTH: usize = 16;

/// The text of `v` that reads back as exactly `v`: Rust prints the
/// shortest round-tripping digits both plainly (`1500`, `0.25`) and in
/// exponent form (`1.5e3`, `1e308`). Everyday numbers stay plain; a number
/// whose plain form is long takes the shorter form, so `1e308` stays 5
/// characters, not 309.
fn number(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= PLAIN_NUMBER_WIDTH {
        return plain;
    }
    let exp = format!("{v:e}");
    if exp.len() < plain.len() {
        exp
    } else {
        plain
    }
}

/// A string literal as the formatter writes it.
fn string(s: &StrLit) -> String {
    if s.raw {
        return format!("r\"{}\"", s.value);
    }
    let mut out = String::with_capacity(s.value.len() + 2);
    out.push('"');
    for c in s.value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn value(s: &StrLit) -> String {
    if is_identifier(&s.value) {
        s.value.clone()
    } else {
        string(&StrLit {
            raw: false,
            ..s.clone()
        })
    }
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// Prints an expression. Trees from the parser carry their parentheses as
/// `Paren` nodes, so no parentheses are added here.
fn expr(e: &Expr) -> String {
    match &e.kind {
        ExprKind::Number(v) => number(*v),
        ExprKind::Bool(b) => b.to_string(),
        ExprKind::Name(i) => i.name.clone(),
        ExprKind::Std(i) => format!("std.{}", i.name),
        ExprKind::Words(ws) => format!("words [{}]", join(ws.iter().map(string))),
        ExprKind::Pattern(p) => format!("pattern {}", string(p)),
        ExprKind::Mask(items) => format!("{{{}}}", join(items.iter().map(|i| i.name.clone()))),
        ExprKind::All => "all".into(),
        ExprKind::Top { k, above, .. } => match above {
            Some(a) => format!("top {k} by score above {}", expr(a)),
            None => format!("top {k} by score"),
        },
        ExprKind::Has { subject, set } => format!("{} has {}", subject.keyword(), expr(set)),
        ExprKind::Matches { subject, pattern } => {
            format!("{} matches {}", subject.keyword(), expr(pattern))
        }
        ExprKind::MetaIs {
            field,
            values,
            list,
        } => {
            if *list {
                format!(
                    "{} in [{}]",
                    field.keyword(),
                    join(values.iter().map(value))
                )
            } else {
                format!("{} is {}", field.keyword(), join(values.iter().map(value)))
            }
        }
        ExprKind::WordCount(s) => format!("{}.words", s.keyword()),
        ExprKind::Hits { subject, set } => format!("hits({}, {})", subject.keyword(), expr(set)),
        ExprKind::Preview { structure, feature } => {
            format!("preview.{}.{}", structure.name, feature.name)
        }
        ExprKind::Size => "size".into(),
        ExprKind::Neg(x) => format!("-{}", expr(x)),
        ExprKind::Not(x) => format!("not {}", expr(x)),
        ExprKind::Binary { op, lhs, rhs } => {
            format!("{} {} {}", expr(lhs), op.symbol(), expr(rhs))
        }
        ExprKind::And(items) => items.iter().map(expr).collect::<Vec<_>>().join(" and "),
        ExprKind::Or(items) => items.iter().map(expr).collect::<Vec<_>>().join(" or "),
        ExprKind::Call { name, args } => {
            format!("{}({})", name.keyword(), join(args.iter().map(expr)))
        }
        ExprKind::If {
            cond,
            then,
            otherwise,
        } => format!(
            "if {} then {} else {}",
            expr(cond),
            expr(then),
            expr(otherwise)
        ),
        ExprKind::Paren(x) => format!("({})", expr(x)),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn identifier_from_text_is_a_bare_name() {
        assert_eq!(super::identifier_from("Rule 1", "r"), "rule_1");
        assert_eq!(super::identifier_from("TEXT2SQL", "s"), "text2sql");
        assert_eq!(super::identifier_from("1st-try", "r"), "r_1st_try");
        assert_eq!(super::identifier_from("select", "r"), "r_select");
        assert_eq!(super::identifier_from("", "r"), "r_");
        for t in ["Rule 1", "1st-try", "select", "", "é"] {
            assert!(super::is_identifier(&super::identifier_from(t, "r")), "{t}");
        }
    }
    use super::*;

    fn fmt(src: &str) -> String {
        match format_source(src) {
            Ok(s) => s,
            Err(d) => panic!("{src}: {d:?}"),
        }
    }

    #[test]
    fn canonical_layout() {
        let src = "policy   \"p\"  use std\nlet k=words[\"a\",\"b c\"]\n\n\nrule r when query has k and(size>1)->add{S,T}\ndefault {S}";
        assert_eq!(
            fmt(src),
            "policy \"p\"\nuse std\nlet k = words [\"a\", \"b c\"]\n\nrule r when query has k and (size > 1) -> add {S, T}\ndefault {S}\n"
        );
    }

    #[test]
    fn keeps_comments() {
        let src = "# leading\npolicy \"p\" # trailing\n\n# before default\ndefault {S}\n# at end\n";
        let out = fmt(src);
        assert_eq!(
            out,
            "# leading\npolicy \"p\"  # trailing\n\n# before default\ndefault {S}\n# at end\n"
        );
        assert_eq!(fmt(&out), out);
    }

    #[test]
    fn hash_in_string_is_not_a_comment() {
        let src = "policy \"a#b\"\nlet p = pattern r\"#\\d\"\ndefault {S}\n";
        assert_eq!(fmt(src), src);
    }

    #[test]
    fn long_word_lists_break() {
        let words: Vec<String> = (0..30).map(|i| format!("\"word{i}\"")).collect();
        let src = format!(
            "policy \"p\"\nlet k = words [{}]\ndefault {{S}}\n",
            words.join(",")
        );
        let out = fmt(&src);
        assert!(out.contains("let k = words [\n    \"word0\",\n"), "{out}");
        assert_eq!(fmt(&out), out);
    }

    #[test]
    fn values_become_bare_words_when_possible() {
        let out =
            fmt("policy \"p\" default {S} rule r when domain in [\"web\", \"a b\"] -> add {T}");
        assert!(out.contains("domain in [web, \"a b\"]"), "{out}");
    }
}
