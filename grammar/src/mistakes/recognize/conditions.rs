//! Conditions on metadata and on the query's text: `==` and `in (...)`
//! on `domain` and `qtype`, `has` with a list or a string, the operators and
//! `matches` of other languages, `"x" in query`.

use super::*;

/// `qtype == "C"`, `domain != 'web'`, `domain = web`, `domain <> web`
pub(super) fn meta_compared_with_eq(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn meta_is_not(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn meta_not_in(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn meta_in_parens(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

/// `query has ["why", "because"]`
pub(super) fn has_list(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn has_string(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn subject_operator(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

/// `query matches "re"` and `query matches /re/`
pub(super) fn matches_string(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn string_in_subject(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
