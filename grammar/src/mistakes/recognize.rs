//! Recognizers of the mistakes people and LLMs make when they write MESA
//! with the habits of another language.
//!
//! Each recognizer looks at the tokens of a statement that failed to parse,
//! at one position, and either says nothing or returns a [`Hit`]: what the
//! mistake is, where, and the MESA text to write instead. Every recognizer
//! matches only text that can never be valid MESA, so a hit is always a real
//! mistake, whatever else is wrong with the statement.

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
    if_then_rule,
    yaml_key,
    semicolon,
    slash_comment,
    rule_name_quoted,
    rule_name_missing,
    policy_name_unquoted,
    when_missing,
    colon_or_fat_arrow,
    then_before_action,
    arrow_missing,
    action_missing,
    return_word,
    meta_compared_with_eq,
    meta_is_not,
    meta_not_in,
    meta_in_parens,
    has_list,
    has_string,
    subject_operator,
    matches_string,
    string_in_subject,
    method_call,
    length_call,
    count_call,
    symbol_boolean,
    capital_word,
    single_equals,
    walrus,
    sql_not_equal,
    between,
    std_path,
    preview_brackets,
    preview_without_feature,
    top_compared,
    mask_in_brackets,
    mask_quoted,
    mask_without_braces,
    mask_without_commas,
    let_list,
    words_braces,
    number_suffix,
    budget_without_tokens,
    elif_word,
    single_quoted,
    unicode_arrow,
];

/// `if COND then ACTION MASK` as a statement: a rule.
fn if_then_rule(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 0 || !(cx.word(0, "if") || cx.word(0, "IF")) {
        return None;
    }
    let then = (1..cx.toks.len()).find(|&j| {
        cx.word(j, "then") || cx.word(j, "THEN") || cx.punct(j, ":") || cx.punct(j, "->")
    })?;
    if then < 2 || then + 1 >= cx.toks.len() {
        return None;
    }
    let cond = cx.text(1, then - 1);
    let last = cx.toks.len() - 1;
    let action = cx.text(then + 1, last);
    let needs_verb = !["select", "add", "remove"]
        .iter()
        .any(|v| cx.word(then + 1, v));
    let fix = format!(
        "rule name_me when {cond} -> {}{action}",
        if needs_verb { "select " } else { "" }
    );
    Some(Hit {
        help: format!("a rule is a statement of its own: write `{fix}` (and give it a name)"),
        len: cx.toks.len(),
        ..rewrite(
            STATEMENT,
            cx.span(0, last),
            cx.toks.len(),
            "`if ... then` is not a statement in MESA; conditions live in rules",
            fix,
        )
    })
}

/// `default: {S}`, `rules:`: YAML keys.
fn yaml_key(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if t.kind != Kind::Word || !cx.punct(i + 1, ":") {
        return None;
    }
    if i == 0 && ["default", "fallback", "policy", "module", "use", "budget"].contains(&t.text) {
        let colon = cx.tok(i + 1)?;
        return Some(Hit {
            help: format!(
                "write `{} ...` with no colon, e.g. `default {{S, T}}`",
                t.text
            ),
            fix: Some(String::new()),
            len: 2,
            ..hit(
                STATEMENT,
                colon.span,
                format!("`{}:` is YAML; MESA statements have no colon", t.text),
                None,
                String::new(),
            )
        });
    }
    if i == 0 && cx.toks.len() <= 3 {
        return Some(hit(
            STATEMENT,
            cx.span(0, i + 1),
            format!("`{}:` looks like a YAML key; MESA is not YAML", t.text),
            None,
            "a policy is a list of statements: `policy \"name\"`, `rule NAME when CONDITION -> select {S, T}`, ..., `default {S}`".into(),
        ));
    }
    None
}

fn semicolon(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    t.is_punct(";").then(|| Hit {
        help: "remove the `;`: a statement ends where the next one begins".into(),
        fix: Some(String::new()),
        ..hit(
            STATEMENT,
            t.span,
            "MESA statements do not end with `;`",
            None,
            String::new(),
        )
    })
}

fn slash_comment(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    (t.is_punct("//") || t.is_punct("/*")).then(|| {
        rewrite(
            STATEMENT,
            t.span,
            1,
            format!("`{}` does not start a comment in MESA", t.text),
            "#".into(),
        )
    })
}

/// `rule "name" when ...`
fn rule_name_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if i != 1 || !cx.is_rule() || !t.is_str() {
        return None;
    }
    let name = crate::format::identifier_from(t.inner(), "r");
    Some(rewrite(
        STATEMENT,
        t.span,
        1,
        "a rule's name is a bare name, not a string",
        name,
    ))
}

/// `rule when ...`
fn rule_name_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 0 || !cx.is_rule() || !(cx.word(1, "when") || cx.punct(1, "->")) {
        return None;
    }
    Some(Hit {
        help: "give the rule a name: `rule name_me when ...` (a name that says what it is for, e.g. `rule causal when ...`)".into(),
        ..rewrite(
            STATEMENT,
            cx.toks[0].span,
            1,
            "the rule has no name",
            "rule name_me".into(),
        )
    })
}

/// `policy demo`
fn policy_name_unquoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 1 || !(cx.word(0, "policy") || cx.word(0, "module")) {
        return None;
    }
    let t = cx.tok(1)?;
    (t.kind == Kind::Word || t.kind == Kind::SingleStr).then(|| {
        rewrite(
            STATEMENT,
            t.span,
            1,
            format!("the {} name is a string", cx.toks[0].text),
            format!("\"{}\"", t.inner()),
        )
    })
}

/// `rule a query has x -> ...`: the condition without `when`.
fn when_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 2 || !cx.is_rule() || cx.tok(1)?.kind != Kind::Word || cx.word(1, "when") {
        return None;
    }
    let t = cx.tok(2)?;
    let starts_condition = [
        "query", "task", "domain", "qtype", "preview", "size", "not", "hits", "true", "false",
    ]
    .contains(&t.text)
        || t.is_punct("(");
    (t.kind == Kind::Word && starts_condition || t.is_punct("(")).then(|| Hit {
        help: format!(
            "write `when` before the condition: `rule {} when {} ...`",
            cx.toks[1].text, t.text
        ),
        fix: Some(format!("when {}", t.text)),
        ..hit(
            STATEMENT,
            t.span,
            "the rule's condition must follow `when`",
            None,
            String::new(),
        )
    })
}

/// `rule a when c: select {S}` and `rule a when c => select {S}`.
fn colon_or_fat_arrow(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if !(t.is_punct(":") || t.is_punct("=>")) || !cx.is_rule() || i < 2 {
        return None;
    }
    Some(rewrite(
        STATEMENT,
        t.span,
        1,
        format!("a rule's action follows `->`, not `{}`", t.text),
        "->".into(),
    ))
}

/// `rule a when c then select {S}`
fn then_before_action(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    let action = ["select", "add", "remove"]
        .iter()
        .any(|v| cx.word(i + 1, v));
    (cx.is_rule() && (t.is("then") || t.is("THEN") || t.is("do")) && action).then(|| {
        rewrite(
            STATEMENT,
            t.span,
            1,
            format!("a rule's action follows `->`, not `{}`", t.text),
            "->".into(),
        )
    })
}

/// `rule a when c select {S}`
fn arrow_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if !cx.is_rule()
        || i < 3
        || !["select", "add", "remove"].contains(&t.text)
        || t.kind != Kind::Word
    {
        return None;
    }
    let before = cx.tok(i - 1)?;
    let arrow_like = ["->", ":", "=>", "→", "⇒"]
        .iter()
        .any(|a| before.is_punct(a));
    if arrow_like || before.is("then") || before.is("do") {
        return None;
    }
    Some(Hit {
        help: format!("write `-> {}` after the condition", t.text),
        fix: Some(format!("-> {}", t.text)),
        ..hit(
            STATEMENT,
            t.span,
            "the rule's action must follow `->`",
            None,
            String::new(),
        )
    })
}

/// `rule a when c -> {S}`
fn action_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    let next = cx.tok(i + 1)?;
    if !t.is_punct("->") || !(next.is_punct("{") || next.is_punct("[") || next.is("all")) {
        return None;
    }
    Some(Hit {
        help: "say what the rule does with the mask: `-> select {S, T}` (replace the mask), `-> add {R}` or `-> remove {R}`".into(),
        fix: Some("-> select".into()),
        ..hit(
            STATEMENT,
            t.span,
            "the rule has no action before its mask",
            None,
            String::new(),
        )
    })
}

fn return_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    (t.is("return") || t.is("yield")).then(|| {
        rewrite(
            STATEMENT,
            t.span,
            1,
            format!(
                "`{}` is not MESA; a rule's action is `select`, `add` or `remove`",
                t.text
            ),
            "select".into(),
        )
    })
}

fn is_meta(t: &Tok<'_>) -> bool {
    t.is("domain") || t.is("qtype")
}

fn is_subject(t: &Tok<'_>) -> bool {
    t.is("query") || t.is("task")
}

/// `qtype == "C"`, `domain != 'web'`, `domain = web`, `domain <> web`
fn meta_compared_with_eq(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let field = cx.tok(i)?;
    let op = cx.tok(i + 1)?;
    let value = cx.tok(i + 2)?;
    if !is_meta(field)
        || !["==", "=", "!=", "<>", "==="].contains(&op.text)
        || !matches!(value.kind, Kind::Str | Kind::SingleStr | Kind::Word)
    {
        return None;
    }
    let negate = op.text == "!=" || op.text == "<>";
    let v = mesa_value(value, field.is("domain"));
    let fix = if negate {
        format!("not {} is {v}", field.text)
    } else {
        format!("{} is {v}", field.text)
    };
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 2),
        3,
        format!("`{}` is compared with `is`, not `{}`", field.text, op.text),
        fix,
    ))
}

/// `domain is not web`
fn meta_is_not(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let field = cx.tok(i)?;
    if !is_meta(field) || !cx.word(i + 1, "is") || !cx.word(i + 2, "not") {
        return None;
    }
    let value = cx.tok(i + 3)?;
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 3),
        4,
        "`not` goes before the whole comparison",
        format!(
            "not {} is {}",
            field.text,
            mesa_value(value, field.is("domain"))
        ),
    ))
}

/// `domain not in [a, b]`
fn meta_not_in(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let field = cx.tok(i)?;
    if !is_meta(field) || !cx.word(i + 1, "not") || !cx.word(i + 2, "in") {
        return None;
    }
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 2),
        3,
        "`not` goes before the whole comparison",
        format!("not {} in", field.text),
    ))
}

/// `domain in ("web", "game")` and `domain in {web}`
fn meta_in_parens(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let field = cx.tok(i)?;
    if !is_meta(field) || !cx.word(i + 1, "in") {
        return None;
    }
    let close = if cx.punct(i + 2, "(") {
        ")"
    } else if cx.punct(i + 2, "{") {
        "}"
    } else {
        return None;
    };
    let end = cx.closing(i + 2, close)?;
    let values: Vec<String> = cx.toks[i + 3..end]
        .iter()
        .filter(|t| !t.is_punct(","))
        .map(|t| mesa_value(t, field.is("domain")))
        .collect();
    Some(rewrite(
        CONDITION,
        cx.span(i, end),
        end - i + 1,
        "a list of values is written in square brackets",
        format!("{} in [{}]", field.text, values.join(", ")),
    ))
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

/// `query has ["why", "because"]`
fn has_list(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let subject = cx.tok(i)?;
    if !is_subject(subject) || !cx.word(i + 1, "has") || !cx.punct(i + 2, "[") {
        return None;
    }
    let (end, items) = string_list(cx, i + 2, "]")?;
    Some(rewrite(
        CONDITION,
        cx.span(i, end),
        end - i + 1,
        "a list of keywords is written `words [...]`",
        format!("{} has words [{}]", subject.text, items.join(", ")),
    ))
}

/// `query has "why"`
fn has_string(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let subject = cx.tok(i)?;
    let s = cx.tok(i + 2)?;
    if !is_subject(subject) || !cx.word(i + 1, "has") || !s.is_str() {
        return None;
    }
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 2),
        3,
        "`has` takes a keyword set, not a string",
        format!("{} has words [{}]", subject.text, mesa_string(s)),
    ))
}

/// `query contains "x"`, `query LIKE '%x%'`, `query includes [..]`, `query =~ "re"`
fn subject_operator(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let subject = cx.tok(i)?;
    let op = cx.tok(i + 1)?;
    let arg = cx.tok(i + 2)?;
    if !is_subject(subject) {
        return None;
    }
    let s = subject.text;
    let word_ops = [
        "contains",
        "includes",
        "like",
        "LIKE",
        "ilike",
        "ILIKE",
        "in",
        "startswith",
        "endswith",
        "contains_any",
        "containsAny",
        "has_any",
        "hasAny",
        "mentions",
        "CONTAINS",
    ];
    let regex_ops = [
        "=~",
        "~",
        "~*",
        "matches_regex",
        "regex",
        "REGEXP",
        "RLIKE",
        "rlike",
        "!~",
    ];
    let is_word_op = op.kind == Kind::Word && word_ops.contains(&op.text);
    let is_regex_op = regex_ops.contains(&op.text);
    let is_eq = op.is_punct("==") || op.is_punct("=");
    if !(is_word_op || is_regex_op || is_eq) {
        return None;
    }
    let message = format!("`{}` is not a MESA operator", op.text);
    if is_regex_op || is_eq {
        if !arg.is_str() && !arg.is_punct("/") {
            return None;
        }
        let (end, re) = regex_argument(cx, i + 2)?;
        let re = if is_eq {
            format!("^{}$", regex_syntax_escape(&re))
        } else {
            re
        };
        let negated = op.text == "!~";
        let fix = format!(
            "{}{s} matches pattern r\"{re}\"",
            if negated { "not " } else { "" }
        );
        let message = if is_eq {
            format!(
                "`{s} {}` compares the whole text; MESA tests patterns and keywords",
                op.text
            )
        } else {
            message
        };
        return Some(Hit {
            help: format!(
                "write `{fix}` (a regular expression), or `{s} has words [...]` for whole words"
            ),
            ..rewrite(CONDITION, cx.span(i, end), end - i + 1, message, fix)
        });
    }
    let (end, items) = if arg.is_punct("[") || arg.is_punct("(") {
        string_list(cx, i + 2, if arg.is_punct("[") { "]" } else { ")" })?
    } else if arg.is_str() {
        let words = arg.inner().trim_matches('%').trim_matches('*');
        (i + 2, vec![format!("\"{}\"", words.replace('"', "\\\""))])
    } else if arg.kind == Kind::Word {
        let end = if cx.punct(i + 3, ".") && cx.tok(i + 4).is_some() {
            i + 4
        } else {
            i + 2
        };
        let fix = format!("{s} has {}", cx.text(i + 2, end));
        return Some(Hit {
            help: format!("write `{fix}` for a keyword set, or `{s} matches ...` for a pattern"),
            ..rewrite(CONDITION, cx.span(i, end), end - i + 1, message, fix)
        });
    } else {
        return None;
    };
    let fix = format!("{s} has words [{}]", items.join(", "));
    Some(Hit {
        help: format!("write `{fix}` for whole words, or `{s} matches pattern r\"...\"` for a regular expression"),
        ..rewrite(CONDITION, cx.span(i, end), end - i + 1, message, fix)
    })
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

/// `query matches "re"` and `query matches /re/`
fn matches_string(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let subject = cx.tok(i)?;
    if !is_subject(subject) || !cx.word(i + 1, "matches") {
        return None;
    }
    let (end, re) = regex_argument(cx, i + 2)?;
    let lit = match cx.tok(i + 2)? {
        t if t.kind == Kind::Str => t.text.to_string(),
        _ => format!("r\"{re}\""),
    };
    Some(rewrite(
        CONDITION,
        cx.span(i, end),
        end - i + 1,
        "`matches` takes a pattern, written `pattern \"...\"`",
        format!("{} matches pattern {lit}", subject.text),
    ))
}

/// `"why" in query`
fn string_in_subject(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let s = cx.tok(i)?;
    let subject = cx.tok(i + 2)?;
    if !s.is_str() || !cx.word(i + 1, "in") || !is_subject(subject) {
        return None;
    }
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 2),
        3,
        "`\"...\" in query` is Python; MESA tests keyword sets",
        format!("{} has words [{}]", subject.text, mesa_string(s)),
    ))
}

/// `query.contains("x")`, `query.includes('x')`, `query.lower()`, `query.length`
fn method_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let subject = cx.tok(i)?;
    let method = cx.tok(i + 2)?;
    if !is_subject(subject) || !cx.punct(i + 1, ".") || method.kind != Kind::Word {
        return None;
    }
    let s = subject.text;
    let m = method.text;
    if ["length", "len", "size", "word_count", "count", "num_words"].contains(&m) {
        let end = if cx.punct(i + 3, "(") && cx.punct(i + 4, ")") {
            i + 4
        } else {
            i + 2
        };
        return Some(rewrite(
            CONDITION,
            cx.span(i, end),
            end - i + 1,
            format!("`{s}.{m}` is not MESA; `{s}.words` counts the words"),
            format!("{s}.words"),
        ));
    }
    if !cx.punct(i + 3, "(") {
        return None;
    }
    let close = cx.closing(i + 3, ")")?;
    let args: Vec<&Tok<'_>> = cx.toks[i + 4..close]
        .iter()
        .filter(|t| !t.is_punct(","))
        .collect();
    let fix = match m {
        "lower" | "toLowerCase" | "upper" | "toUpperCase" | "casefold" => {
            return Some(Hit {
                help: format!("remove `.{m}()`: keywords already match ignoring ASCII case"),
                fix: Some(String::new()),
                len: close - i + 1,
                ..hit(
                    CONDITION,
                    cx.span(i + 1, close),
                    format!("`{s}.{m}()` is not MESA"),
                    None,
                    String::new(),
                )
            })
        }
        "match" | "test" | "search" | "matches" | "regex" => {
            let re = regex_text(args.first().filter(|t| t.is_str())?);
            format!("{s} matches pattern r\"{re}\"")
        }
        _ if args.iter().all(|t| t.is_str()) && !args.is_empty() => {
            let items: Vec<String> = args.iter().map(|t| mesa_string(t)).collect();
            format!("{s} has words [{}]", items.join(", "))
        }
        _ => return None,
    };
    Some(rewrite(
        CONDITION,
        cx.span(i, close),
        close - i + 1,
        format!("`{s}.{m}(...)` is a method call; MESA has no methods"),
        fix,
    ))
}

/// `len(query)`, `len(query.split())`, `words(query)`
fn length_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let f = cx.tok(i)?;
    if !["len", "length", "count_words", "word_count", "wordcount"].contains(&f.text)
        || f.kind != Kind::Word
        || !cx.punct(i + 1, "(")
    {
        return None;
    }
    let close = cx.closing(i + 1, ")")?;
    let subject = cx.toks[i + 2..close].iter().find(|t| is_subject(t))?;
    Some(rewrite(
        CONDITION,
        cx.span(i, close),
        close - i + 1,
        format!(
            "`{}(...)` is not MESA; `{}.words` counts the words",
            f.text, subject.text
        ),
        format!("{}.words", subject.text),
    ))
}

/// `count(query, std.causal)`
fn count_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let f = cx.tok(i)?;
    if !["count", "matches_count", "num_hits", "hit_count"].contains(&f.text)
        || f.kind != Kind::Word
        || !cx.punct(i + 1, "(")
    {
        return None;
    }
    Some(rewrite(
        CONDITION,
        f.span,
        1,
        format!(
            "`{}` is not a MESA function; `hits(query, SET)` counts keyword hits",
            f.text
        ),
        "hits".into(),
    ))
}

/// `&&`, `||`, `!`, `&`, `|`
fn symbol_boolean(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    let word = match t.text {
        "&&" | "&" if t.kind == Kind::Punct => "and",
        "||" | "|" if t.kind == Kind::Punct => "or",
        "!" if t.kind == Kind::Punct => "not",
        _ => return None,
    };
    Some(rewrite(
        CONDITION,
        t.span,
        1,
        format!(
            "`{}` is not a MESA operator; MESA spells it `{word}`",
            t.text
        ),
        if word == "not" {
            "not ".into()
        } else {
            word.into()
        },
    ))
}

/// `SELECT`, `WHEN`, `AND`, `True`, `FALSE`
fn capital_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if t.kind != Kind::Word || t.text.len() < 2 || t.text.bytes().all(|b| b.is_ascii_lowercase()) {
        return None;
    }
    let lower = t.text.to_ascii_lowercase();
    if !KEYWORDS.contains(&lower.as_str()) {
        return None;
    }
    Some(rewrite(
        if ["true", "false", "and", "or", "not"].contains(&lower.as_str()) {
            CONDITION
        } else {
            STATEMENT
        },
        t.span,
        1,
        format!(
            "MESA keywords are lower case: `{}` is not `{lower}`",
            t.text
        ),
        lower,
    ))
}

/// `preview.R.tokens = 0` in a condition.
fn single_equals(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if !t.is_punct("=") || !cx.is_rule() {
        return None;
    }
    Some(rewrite(
        CONDITION,
        t.span,
        1,
        "`=` is not a comparison; equality is `==`",
        "==".into(),
    ))
}

/// `let x := ...`
fn walrus(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    if !t.is_punct(":=") {
        return None;
    }
    let fix = if cx.is_rule() { "==" } else { "=" };
    Some(rewrite(
        STATEMENT,
        t.span,
        1,
        format!("`:=` is not MESA; write `{fix}`"),
        fix.into(),
    ))
}

fn sql_not_equal(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    t.is_punct("<>").then(|| {
        rewrite(
            CONDITION,
            t.span,
            1,
            "`<>` is SQL; MESA writes `!=`",
            "!=".into(),
        )
    })
}

/// `x between 1 and 5`
fn between(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i == 0 || !cx.word(i, "between") && !cx.word(i, "BETWEEN") {
        return None;
    }
    let and = i + 2;
    if !(cx.word(and, "and") || cx.word(and, "AND")) {
        return None;
    }
    // The operand before `between`: `preview.K.f`, `query.words`, a name or a number.
    let start = if i >= 5 && cx.word(i - 5, "preview") {
        i - 5
    } else if i >= 3 && cx.punct(i - 2, ".") {
        i - 3
    } else {
        i - 1
    };
    let x = cx.text(start, i - 1);
    let (lo, hi) = (cx.tok(i + 1)?.text, cx.tok(and + 1)?.text);
    Some(rewrite(
        CONDITION,
        cx.span(start, and + 1),
        and + 2 - start,
        "`between` is SQL; MESA compares twice",
        format!("{x} >= {lo} and {x} <= {hi}"),
    ))
}

/// `std::causal`, `std/causal`
fn std_path(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let name = cx.tok(i + 2)?;
    if !cx.word(i, "std")
        || !(cx.punct(i + 1, "::") || cx.punct(i + 1, "/"))
        || name.kind != Kind::Word
    {
        return None;
    }
    Some(rewrite(
        CONDITION,
        cx.span(i, i + 2),
        3,
        format!(
            "standard sets are named with a dot, not `{}`",
            cx.toks[i + 1].text
        ),
        format!("std.{}", name.text),
    ))
}

/// `preview["R"]["tokens"]`, `preview.R["tokens"]`, `preview[R].tokens`
fn preview_brackets(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !cx.word(i, "preview") {
        return None;
    }
    let mut parts = Vec::new();
    let mut j = i + 1;
    let mut brackets = false;
    while parts.len() < 2 {
        if cx.punct(j, ".") && cx.tok(j + 1).is_some_and(|t| t.kind == Kind::Word) {
            parts.push(cx.tok(j + 1)?.text.to_string());
            j += 2;
        } else if cx.punct(j, "[") && cx.punct(j + 2, "]") {
            parts.push(cx.tok(j + 1)?.inner().to_string());
            brackets = true;
            j += 3;
        } else {
            return None;
        }
    }
    if !brackets {
        return None;
    }
    Some(rewrite(
        CONDITION,
        cx.span(i, j - 1),
        j - i,
        "previews are read with dots, not brackets",
        format!("preview.{}.{}", parts[0], parts[1]),
    ))
}

/// `preview.R > 4000`: no feature.
fn preview_without_feature(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !cx.word(i, "preview") || !cx.punct(i + 1, ".") {
        return None;
    }
    let s = cx.tok(i + 2)?;
    let next = cx.tok(i + 3);
    if s.kind != Kind::Word || structure(s.text).is_none() || next.is_some_and(|t| t.is_punct("."))
    {
        return None;
    }
    Some(Hit {
        help: format!(
            "name a feature: `preview.{0}.tokens`, `preview.{0}.top` or `preview.{0}.hits`",
            s.text
        ),
        fix: Some(format!("preview.{}.tokens", s.text)),
        len: 3,
        ..hit(
            CONDITION,
            cx.span(i, i + 2),
            format!("`preview.{}` needs a feature", s.text),
            None,
            String::new(),
        )
    })
}

/// `top 2 by score > 0.4`
fn top_compared(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !(cx.word(i, "top") && cx.word(i + 2, "by") && cx.word(i + 3, "score")) {
        return None;
    }
    let op = cx.tok(i + 4)?;
    if !(op.is_punct(">") || op.is_punct(">=")) {
        return None;
    }
    Some(rewrite(
        CONDITION,
        op.span,
        5,
        "a score threshold on `top` is written with `above`",
        "above".into(),
    ))
}

/// Whether token `i` follows something that takes a mask.
fn after_mask_taker(cx: &Cx<'_, '_>, i: usize) -> bool {
    i > 0
        && ["select", "add", "remove", "default", "fallback"]
            .iter()
            .any(|w| cx.word(i - 1, w))
}

/// `select ["S", "T"]`, `select (S, T)`
fn mask_in_brackets(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let close = if cx.punct(i, "[") {
        "]"
    } else if cx.punct(i, "(") {
        ")"
    } else {
        return None;
    };
    if !after_mask_taker(cx, i) {
        return None;
    }
    let end = cx.closing(i, close)?;
    let mask = mask_of(cx, i, end, &[",", "|", "+"])?;
    Some(rewrite(
        MASK,
        cx.span(i, end),
        end - i + 1,
        "a mask is a set of structures in braces",
        mask,
    ))
}

/// `{"S", "T"}`
fn mask_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !cx.punct(i, "{") {
        return None;
    }
    let end = cx.closing(i, "}")?;
    if !cx.toks[i + 1..end].iter().any(Tok::is_str) {
        return None;
    }
    let mask = mask_of(cx, i, end, &[",", "|", "+"])?;
    Some(rewrite(
        MASK,
        cx.span(i, end),
        end - i + 1,
        "structures in a mask are bare letters, not strings",
        mask,
    ))
}

/// `select S, T`
fn mask_without_braces(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !after_mask_taker(cx, i)
        || !cx
            .tok(i)
            .is_some_and(|t| t.kind == Kind::Word && structure(t.text).is_some())
    {
        return None;
    }
    let mut end = i;
    while cx.punct(end + 1, ",") || cx.punct(end + 1, "|") || cx.punct(end + 1, "+") {
        if !cx
            .tok(end + 2)
            .is_some_and(|t| t.kind == Kind::Word && structure(t.text).is_some())
        {
            break;
        }
        end += 2;
    }
    if end == i {
        return None;
    }
    // `mask_of` reads the tokens strictly between its bounds.
    let mask = mask_of(cx, i - 1, end + 1, &[",", "|", "+"])?;
    Some(rewrite(
        MASK,
        cx.span(i, end),
        end - i + 1,
        "a mask is written in braces",
        mask,
    ))
}

/// `{S T}`, `{S | T}`, `{S + T}`
fn mask_without_commas(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !cx.punct(i, "{") {
        return None;
    }
    let end = cx.closing(i, "}")?;
    let inner = &cx.toks[i + 1..end];
    let plain = inner
        .iter()
        .all(|t| t.kind == Kind::Word || t.is_punct(","));
    if plain
        && inner
            .windows(2)
            .all(|w| !(w[0].kind == Kind::Word && w[1].kind == Kind::Word))
    {
        return None;
    }
    let mask = mask_of(cx, i, end, &[",", "|", "+", "&"])?;
    Some(rewrite(
        MASK,
        cx.span(i, end),
        end - i + 1,
        "structures in a mask are separated by commas",
        mask,
    ))
}

/// `let failing = ["error", "failed"]`, `let x = "error"`
fn let_list(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 3 || !cx.word(0, "let") || !cx.punct(2, "=") {
        return None;
    }
    let t = cx.tok(3)?;
    if t.is_punct("[") || t.is_punct("{") || t.is_punct("(") {
        let close = match t.text {
            "[" => "]",
            "{" => "}",
            _ => ")",
        };
        let (end, items) = string_list(cx, 3, close)?;
        return Some(rewrite(
            CONDITION,
            cx.span(3, end),
            end - 2,
            "a keyword set is written `words [...]`",
            format!("words [{}]", items.join(", ")),
        ));
    }
    if t.is_str() && cx.toks.len() == 4 {
        let fix = format!("words [{}]", mesa_string(t));
        return Some(Hit {
            help: format!(
                "write `{fix}` for a keyword, or `pattern {}` for a regular expression",
                mesa_string(t)
            ),
            ..rewrite(
                CONDITION,
                t.span,
                1,
                "a bare string is neither a keyword set nor a pattern",
                fix,
            )
        });
    }
    None
}

/// `words("a", "b")`, `words {"a"}`
fn words_braces(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if !cx.word(i, "words") {
        return None;
    }
    let close = if cx.punct(i + 1, "(") {
        ")"
    } else if cx.punct(i + 1, "{") {
        "}"
    } else {
        return None;
    };
    let (end, items) = string_list(cx, i + 1, close)?;
    Some(rewrite(
        CONDITION,
        cx.span(i, end),
        end - i + 1,
        "a keyword set's words are in square brackets",
        format!("words [{}]", items.join(", ")),
    ))
}

/// `4k`, `12_000`, `12,000` (in a budget).
fn number_suffix(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let n = cx.tok(i)?;
    let next = cx.tok(i + 1)?;
    if n.kind != Kind::Number || next.span.start != n.span.end {
        return None;
    }
    let value: f64 = n.text.parse().ok()?;
    let (scaled, len) = match next.text {
        "k" | "K" => (value * 1e3, 2),
        "m" | "M" => (value * 1e6, 2),
        t if next.kind == Kind::Word
            && t.starts_with('_')
            && t[1..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            (format!("{}{}", n.text, &t[1..]).parse().ok()?, 2)
        }
        "," if cx.word(0, "budget") => {
            let rest = cx.tok(i + 2)?;
            if rest.kind != Kind::Number || rest.span.start != next.span.end {
                return None;
            }
            (format!("{}{}", n.text, rest.text).parse().ok()?, 3)
        }
        _ => return None,
    };
    Some(rewrite(
        CONDITION,
        cx.span(i, i + len - 1),
        len,
        format!(
            "`{}` is not a MESA number; write the digits",
            cx.text(i, i + len - 1)
        ),
        format!("{scaled}"),
    ))
}

/// `budget 12000` without `tokens`
fn budget_without_tokens(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    if i != 1 || !cx.word(0, "budget") || cx.toks.len() != 2 {
        return None;
    }
    let n = cx.tok(1)?;
    (n.kind == Kind::Number).then(|| {
        rewrite(
            STATEMENT,
            n.span,
            1,
            "a budget is counted in tokens and says so",
            format!("{} tokens", n.text),
        )
    })
}

fn elif_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    ["elif", "elsif", "elseif", "ELSIF"]
        .contains(&t.text)
        .then(|| {
            rewrite(
                CONDITION,
                t.span,
                1,
                format!("`{}` is not MESA", t.text),
                "else if".into(),
            )
        })
        .filter(|_| t.kind == Kind::Word)
}

/// `'why'` anywhere else.
fn single_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    (t.kind == Kind::SingleStr).then(|| {
        rewrite(
            CONDITION,
            t.span,
            1,
            "MESA strings use double quotes",
            mesa_string(t),
        )
    })
}

fn unicode_arrow(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
    let t = cx.tok(i)?;
    (t.is_punct("→") || t.is_punct("⇒")).then(|| {
        rewrite(
            STATEMENT,
            t.span,
            1,
            "write the arrow as two characters",
            "->".into(),
        )
    })
}
