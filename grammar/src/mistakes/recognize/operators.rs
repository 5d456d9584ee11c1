//! Calls, symbols and spellings of other languages inside a condition:
//! methods, `len(...)`, `&&`, capitals, `=` and `:=`, `between`, `std::`, and
//! the preview's bracketed or incomplete forms.

use super::*;

/// `query.contains("x")`, `query.includes('x')`, `query.lower()`, `query.length`
pub(super) fn method_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn length_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn count_call(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn symbol_boolean(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn capital_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn single_equals(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn walrus(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn sql_not_equal(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn between(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn std_path(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn preview_brackets(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn preview_without_feature(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn top_compared(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
