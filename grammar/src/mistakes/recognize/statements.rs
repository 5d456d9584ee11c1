//! Statement shapes from other languages: `if ... then`, YAML keys,
//! `;` and `//`, rule and policy names, `when`, the arrow and the action.

use super::*;

/// `if COND then ACTION MASK` as a statement: a rule.
pub(super) fn if_then_rule(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn yaml_key(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn semicolon(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn slash_comment(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn rule_name_quoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn rule_name_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn policy_name_unquoted(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn when_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn colon_or_fat_arrow(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn then_before_action(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn arrow_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
pub(super) fn action_missing(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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

pub(super) fn return_word(cx: &Cx<'_, '_>, i: usize) -> Option<Hit> {
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
