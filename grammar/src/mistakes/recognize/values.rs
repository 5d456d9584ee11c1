//! Statements' values: `let` lists, `words` arguments, numbers with
//! suffixes, `budget` without `tokens`, `elif`, single quotes, `→`.

use super::*;

/// `let failing = ["error", "failed"]`, `let x = "error"`
pub(super) fn let_list(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn words_braces(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn number_suffix(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn budget_without_tokens(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn elif_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn single_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn unicode_arrow(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
