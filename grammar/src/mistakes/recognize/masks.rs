//! Masks written as lists, quoted names or without braces or commas.

use super::*;

/// Whether token `i` follows something that takes a mask.
fn after_mask_taker(cx: &Cx<'_, '_>, i: usize) -> bool {
    i > 0
        && ["select", "add", "remove", "default", "fallback"]
            .iter()
            .any(|w| cx.word(i - 1, w))
}

/// `select ["S", "T"]`, `select (S, T)`
pub(super) fn mask_in_brackets(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn mask_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn mask_without_braces(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn mask_without_commas(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
