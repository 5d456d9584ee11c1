//! Grammar-aware random programs: token soup from the language's own
//! vocabulary, so most inputs get deep into the parser and checker. Nothing
//! may panic; whatever checks must select a non-empty mask, with and without
//! a trace; whatever parses must survive formatting unchanged.

use mesa_compiler::{check, Input, Selector, Structure};
use mesa_grammar::ast::{HeaderKind, StatementKind};
use proptest::prelude::*;

const TOKENS: &[&str] = &[
    "policy",
    "\"p\"",
    "module",
    "use",
    "std",
    "let",
    "x",
    "y",
    "=",
    "score",
    "S",
    "T",
    "G",
    "V",
    "R",
    "raw",
    "Q",
    "rule",
    "r1",
    "r2",
    "when",
    "->",
    "select",
    "add",
    "remove",
    "default",
    "fallback",
    "budget",
    "tokens",
    "trade",
    "at",
    "words",
    "steps",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "and",
    "or",
    "not",
    "if",
    "then",
    "else",
    "min",
    "max",
    "hits",
    "top",
    "by",
    "above",
    "has",
    "matches",
    "is",
    "in",
    "query",
    "task",
    "domain",
    "qtype",
    "preview",
    ".",
    "size",
    "words",
    "pattern",
    "all",
    "true",
    "false",
    "0",
    "1",
    "2.5",
    "4000",
    "1e400",
    "+",
    "-",
    "*",
    "/",
    "<",
    "<=",
    ">",
    ">=",
    "==",
    "!=",
    "\"why\"",
    "\"led to\"",
    "\"\"",
    "r\"\\bstep \\d+\"",
    "\"(\"",
    "std.causal",
    "std.stepref",
    "std.nope",
    "text2sql",
    "# c\n",
    "\n",
    "tokens",
    "top",
    "hits",
];

fn soup() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec(prop::sample::select(TOKENS), 0..60),
    )
        .prop_map(|(header, toks)| {
            let mut s = if header {
                String::from("policy \"p\"\nuse std\ndefault {S}\n")
            } else {
                String::new()
            };
            s.push_str(&toks.join(" "));
            s
        })
}

fn inputs() -> Vec<Input> {
    let mut a = Input::query("Why did the query fail at step 12?");
    a.domain = Some("TEXT2SQL".into());
    a.previews
        .set(Structure::Raw, mesa_compiler::ir::Feature::Tokens, 5000.0);
    let b = Input::query("");
    let mut c = Input::query("summarize the overall strategy, then list all steps 3-5");
    c.task = Some("Write SQL".into());
    c.qtype = Some("abstraction".into());
    vec![a, b, c]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn token_soup_never_panics(src in soup()) {
        let checked = check(&src);
        // A module checks without a program of its own.
        let module = mesa_grammar::parse(&src).is_ok_and(|f| {
            matches!(
                f.statements.first().map(|s| &s.kind),
                Some(StatementKind::Header { kind: HeaderKind::Module, .. })
            )
        });
        prop_assert_eq!(checked.program.is_some(), !checked.has_errors() && !module);
        if let Some(program) = checked.program {
            let selector = Selector::new(program).expect("checked programs prepare");
            for input in inputs() {
                let out = selector.select(&input);
                prop_assert!(!out.mask.is_empty());
                prop_assert_eq!(selector.select_mask(&input), (out.mask, out.rule));
            }
        }
        if let Ok(mut file) = mesa_grammar::parse(&src) {
            let formatted = mesa_grammar::format_file(&file, &src);
            let mut again = mesa_grammar::parse(&formatted).expect("formatted text parses");
            file.erase_spans();
            again.erase_spans();
            prop_assert_eq!(file, again);
            prop_assert_eq!(mesa_grammar::format_source(&formatted).ok(), Some(formatted.clone()));
        }
    }
}

fn cond() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "query has std.causal",
        "query has words [\"why\", \"step 12\", \"fail\"]",
        "query matches std.stepref",
        "domain is text2sql",
        "qtype in [abstraction, recall]",
        "preview.R.tokens > 4000",
        "size >= 2",
        "size == 0",
        "hits(query, std.causal) > 1",
        "true",
        "false",
        "1 > 2",
        "query.words < 5",
        "task has std.state",
        "min(preview.R.tokens, 10) / 0 == 0",
    ])
    .prop_map(String::from);
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} and {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} or {b})")),
            inner.clone().prop_map(|a| format!("not {a}")),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(a, b, c)| format!("(if {a} then {b} else {c})")),
        ]
    })
}

fn policy() -> impl Strategy<Value = String> {
    let mask = prop::sample::select(vec![
        "{}",
        "{S}",
        "{T, R}",
        "{G, V}",
        "all",
        "top 2 by score",
        "top 1 by score above 0.5",
    ]);
    let action = prop::sample::select(vec!["select", "add", "remove"]);
    let rule = (prop::option::of(cond()), action, mask.clone());
    let fixed = prop::sample::select(vec!["{}", "{S}", "{S, T, V}", "all"]);
    (
        prop::collection::vec(rule, 0..8),
        fixed.clone(),
        prop::option::of(fixed),
        prop::option::of(prop::sample::select(vec![1.0, 3000.0, 1e9])),
        prop::option::of(prop::sample::select(vec!["words at 0.3", "steps at 2"])),
    )
        .prop_map(|(rules, default, fallback, budget, trade)| {
            let mut s = String::from(
                "policy \"p\"\nuse std\nscore G = 0.2 + 0.1 * hits(query, std.causal)\n",
            );
            for (i, (cond, action, mask)) in rules.into_iter().enumerate() {
                match cond {
                    Some(c) => s.push_str(&format!("rule r{i} when {c} -> {action} {mask}\n")),
                    None => s.push_str(&format!("rule r{i} -> {action} {mask}\n")),
                }
            }
            s.push_str(&format!("default {default}\n"));
            if let Some(f) = fallback {
                s.push_str(&format!("fallback {f}\n"));
            }
            if let Some(b) = budget {
                s.push_str(&format!("budget {b} tokens\n"));
            }
            if let Some(t) = trade {
                s.push_str(&format!("trade {t}\n"));
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// What the checker claims about rules holds in every evaluation: a rule
    /// that "can never fire" or is "unreachable" or "shadowed" never fires, a
    /// rule that "cannot change the mask" never changes it, and a policy that
    /// checks never returns the empty mask.
    #[test]
    fn checker_claims_hold_when_running(src in policy()) {
        let checked = check(&src);
        let Some(program) = checked.program.clone() else {
            // Only the empty-result proof and empty fallbacks can reject these.
            let codes: Vec<&str> = checked.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code.as_str()).collect();
            prop_assert!(codes.iter().all(|c| *c == "E0400" || *c == "E0401"), "{codes:?}\n{src}");
            return Ok(());
        };
        let claims: Vec<(String, String)> = checked
            .diagnostics
            .iter()
            .filter_map(|d| {
                let name = program.rules.iter().find(|r| r.span == d.span)?.name.clone();
                Some((d.code.as_str().to_string(), name))
            })
            .collect();
        let selector = Selector::new(program).expect("prepare");
        for input in inputs() {
            let out = selector.select(&input);
            prop_assert!(!out.mask.is_empty());
            for step in &out.trace.steps {
                if let mesa_compiler::Step::Rule { index, fired, before, after } = step {
                    let name = &selector.program().rules[*index].name;
                    for (code, claimed) in &claims {
                        if claimed != name {
                            continue;
                        }
                        match code.as_str() {
                            "W0100" | "W0101" | "W0102" => prop_assert!(!fired, "{code} on {name} but it fired\n{src}"),
                            "W0105" => prop_assert_eq!(before, after, "{} on {} but it changed the mask\n{}", code, name, src),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
}

/// Found by `checker_claims_hold_when_running`: a condition on `size` is not
/// shadowed by an earlier `select` with the same text, because a rule in
/// between may change the mask; a condition free of `size` still is.
#[test]
fn only_mask_free_conditions_are_shadowed() {
    let codes = |src: &str| -> Vec<String> {
        check(src)
            .diagnostics
            .iter()
            .map(|d| d.code.as_str().to_string())
            .collect()
    };
    let on_size = "policy \"p\"\nrule r0 when not size >= 2 -> select {}\nrule r1 -> remove all\n\
                   rule r2 when not size >= 2 -> select {}\ndefault {S, T, V}\nfallback {S}\n";
    assert!(
        !codes(on_size).contains(&"W0102".to_string()),
        "{:?}",
        codes(on_size)
    );
    let on_words =
        "policy \"p\"\nrule r0 when query.words > 3 -> select {S}\nrule r1 -> remove all\n\
                    rule r2 when query.words > 3 -> select {T}\ndefault {S, T, V}\nfallback {S}\n";
    assert!(
        codes(on_words).contains(&"W0102".to_string()),
        "{:?}",
        codes(on_words)
    );
}

/// The case the soup found: a module alone checks clean, without a program.
#[test]
fn a_module_checks_without_a_program() {
    let checked = check("module \"why\"\nlet cues = words [\"why\"]\n");
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    assert!(checked.program.is_none());
}
