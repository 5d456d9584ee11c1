//! Recognizers of the mistakes people and LLMs make when they write MESA
//! with the habits of another language.
//!
//! Each recognizer looks at the tokens of a statement that failed to parse,
//! at one position, and either says nothing or returns a [`Hit`]: what the
//! mistake is, where, and the MESA text to write instead. Every recognizer
//! matches only text that can never be valid MESA, so a hit is always a real
//! mistake, whatever else is wrong with the statement.
//!
//! The recognizers sit in one file per kind of mistake (statement shapes,
//! conditions, operators, masks, values); this file keeps what they share
//! (the statement's tokens, the hit, the MESA spellings) and
//! [`RECOGNIZERS`], the order they are tried in.

mod conditions;
mod masks;
mod operators;
mod statements;
mod values;

use super::tokens::{Kind, Tok};
use crate::diagnostic::Code;
use crate::span::Span;

/// One recognized mistake.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    pub code: Code,
    pub span: Span,
    pub message: String,
    pub help: String,
    /// The text that replaces `span` to fix the mistake, when it is known.
    pub fix: Option<String>,
    /// Tokens covered, so that the scan resumes after them.
    pub len: usize,
}

/// The statement being examined.
pub(crate) struct Cx<'a, 's> {
    pub src: &'s str,
    pub toks: &'a [Tok<'s>],
}

impl<'s> Cx<'_, 's> {
    fn tok(&self, i: usize) -> Option<&Tok<'s>> {
        self.toks.get(i)
    }

    fn word(&self, i: usize, w: &str) -> bool {
        self.tok(i).is_some_and(|t| t.is(w))
    }

    fn punct(&self, i: usize, p: &str) -> bool {
        self.tok(i).is_some_and(|t| t.is_punct(p))
    }

    /// The source text from token `a` to token `b`, both included.
    fn text(&self, a: usize, b: usize) -> &'s str {
        &self.src[self.toks[a].span.start..self.toks[b].span.end]
    }

    fn span(&self, a: usize, b: usize) -> Span {
        Span::new(self.toks[a].span.start, self.toks[b].span.end)
    }

    /// The index of the bracket closing the one at `open`, on this statement.
    fn closing(&self, open: usize, close: &str) -> Option<usize> {
        let opener = self.tok(open)?.text;
        let mut depth = 0usize;
        for (i, t) in self.toks.iter().enumerate().skip(open) {
            if t.is_punct(opener) {
                depth += 1;
            } else if t.is_punct(close) {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
        }
        None
    }

    /// The first token of the statement.
    fn head(&self) -> Option<&Tok<'s>> {
        self.toks.first()
    }

    fn is_rule(&self) -> bool {
        self.head().is_some_and(|t| t.is("rule"))
    }
}

fn hit(
    code: Code,
    span: Span,
    message: impl Into<String>,
    fix: Option<String>,
    help: String,
) -> Hit {
    Hit {
        code,
        span,
        message: message.into(),
        help,
        fix,
        len: 1,
    }
}

/// A hit whose help is "write `fix`" and which replaces `span` with `fix`.
fn rewrite(code: Code, span: Span, len: usize, message: impl Into<String>, fix: String) -> Hit {
    Hit {
        help: format!("write `{fix}`"),
        fix: Some(fix),
        len,
        ..hit(code, span, message, None, String::new())
    }
}

const CONDITION: Code = Code::E0110;
const MASK: Code = Code::E0111;
const STATEMENT: Code = Code::E0112;

/// A string token as a MESA string: double quotes, same contents.
fn mesa_string(t: &Tok<'_>) -> String {
    match t.kind {
        Kind::SingleStr => format!("\"{}\"", t.inner().replace('"', "\\\"")),
        _ => t.text.to_string(),
    }
}

/// A value after `domain is` / `qtype is`: a bare word when it is one.
fn mesa_value(t: &Tok<'_>, lower: bool) -> String {
    let v = t.inner();
    let word = !v.is_empty()
        && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !v.as_bytes()[0].is_ascii_digit()
        && !crate::format::RESERVED.contains(&v);
    match (word, lower) {
        (true, true) => v.to_ascii_lowercase(),
        (true, false) => v.to_string(),
        (false, _) => format!("\"{}\"", v.replace('"', "\\\"")),
    }
}

/// A structure as MESA writes it in a mask, from a word or string.
fn structure(text: &str) -> Option<&'static str> {
    let letters = ["S", "T", "G", "V", "R"];
    let long = ["summary", "temporal", "graph", "vector", "raw"];
    (0..5).find_map(|i| {
        (text.eq_ignore_ascii_case(letters[i]) || text.eq_ignore_ascii_case(long[i]))
            .then_some(letters[i])
    })
}

/// The items between tokens `a` and `b` (exclusive) as a MESA mask, when
/// every item names a structure.
fn mask_of(cx: &Cx<'_, '_>, a: usize, b: usize, separators: &[&str]) -> Option<String> {
    let mut items = Vec::new();
    for t in &cx.toks[a + 1..b] {
        if t.kind == Kind::Punct && separators.contains(&t.text) {
            continue;
        }
        if !matches!(t.kind, Kind::Word | Kind::Str | Kind::SingleStr) {
            return None;
        }
        items.push(structure(t.inner())?);
    }
    (!items.is_empty()).then(|| format!("{{{}}}", items.join(", ")))
}

/// The keywords of statements and conditions, for upper-case spellings.
const KEYWORDS: &[&str] = &[
    "policy", "rule", "when", "select", "add", "remove", "default", "fallback", "budget", "tokens",
    "and", "or", "not", "if", "then", "else", "has", "matches", "is", "in", "words", "pattern",
    "use", "let", "score", "top", "by", "above", "all", "true", "false", "query", "task", "domain",
    "qtype", "preview", "size", "trade", "at",
];

/// Every recognizer, tried in order at each token.
pub(crate) const RECOGNIZERS: &[fn(&Cx<'_, '_>, usize) -> Option<Hit>] = &[
    statements::if_then_rule,
    statements::yaml_key,
    statements::semicolon,
    statements::slash_comment,
    statements::rule_name_quoted,
    statements::rule_name_missing,
    statements::policy_name_unquoted,
    statements::when_missing,
    statements::colon_or_fat_arrow,
    statements::then_before_action,
    statements::arrow_missing,
    statements::action_missing,
    statements::return_word,
    conditions::meta_compared_with_eq,
    conditions::meta_is_not,
    conditions::meta_not_in,
    conditions::meta_in_parens,
    conditions::has_list,
    conditions::has_string,
    conditions::subject_operator,
    conditions::matches_string,
    conditions::string_in_subject,
    operators::method_call,
    operators::length_call,
    operators::count_call,
    operators::symbol_boolean,
    operators::capital_word,
    operators::single_equals,
    operators::walrus,
    operators::sql_not_equal,
    operators::between,
    operators::std_path,
    operators::preview_brackets,
    operators::preview_without_feature,
    operators::top_compared,
    masks::mask_in_brackets,
    masks::mask_quoted,
    masks::mask_without_braces,
    masks::mask_without_commas,
    values::let_list,
    values::words_braces,
    values::number_suffix,
    values::budget_without_tokens,
    values::elif_word,
    values::single_quoted,
    values::unicode_arrow,
];

fn is_meta(t: &Tok<'_>) -> bool {
    t.is("domain") || t.is("qtype")
}

fn is_subject(t: &Tok<'_>) -> bool {
    t.is("query") || t.is("task")
}

/// The strings of a bracketed list `[a, b]` from token `open`, as MESA strings.
fn string_list(cx: &Cx<'_, '_>, open: usize, close: &str) -> Option<(usize, Vec<String>)> {
    let end = cx.closing(open, close)?;
    let mut out = Vec::new();
    for t in &cx.toks[open + 1..end] {
        if t.is_punct(",") {
            continue;
        }
        if !t.is_str() {
            return None;
        }
        out.push(mesa_string(t));
    }
    Some((end, out))
}

/// Escapes regex metacharacters, for an exact-text comparison turned into a
/// pattern.
fn regex_syntax_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The regular expression a string token holds, for a raw string: a
/// cooked string's `\\` and `\"` escapes are undone (other backslashes
/// are the regex's own, as people write them by mistake).
fn regex_text(t: &Tok<'_>) -> String {
    if t.kind == Kind::Str && t.text.starts_with('r') {
        return t.inner().to_string();
    }
    t.inner().replace("\\\\", "\\").replace("\\\"", "\"")
}

/// A regular expression argument: a string, or `/.../` (JavaScript). Returns
/// the last token used and the expression.
fn regex_argument(cx: &Cx<'_, '_>, at: usize) -> Option<(usize, String)> {
    let t = cx.tok(at)?;
    if t.is_str() {
        return Some((at, regex_text(t)));
    }
    if !t.is_punct("/") {
        return None;
    }
    let close = (at + 1..cx.toks.len()).find(|&j| cx.punct(j, "/"))?;
    if close == at + 1 {
        return None;
    }
    let re = &cx.src[t.span.end..cx.toks[close].span.start];
    // A trailing `i` flag becomes `(?i)`.
    if cx.word(close + 1, "i") && cx.toks[close + 1].span.start == cx.toks[close].span.end {
        return Some((close + 1, format!("(?i){re}")));
    }
    Some((close, re.to_string()))
}
