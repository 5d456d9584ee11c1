//! The corpus of mistakes (tests/corpora/syntax-mistakes.txt): each gets
//! the expected code and help, no message shows the grammar's internal
//! names, and applying the suggested fixes gives a policy that parses.

use mesa_compiler::check_bytes;
use mesa_grammar::Diagnostic;

struct Entry {
    title: String,
    code: String,
    help: String,
    source: String,
}

fn corpus() -> Vec<Entry> {
    let text = include_str!("../corpora/syntax-mistakes.txt");
    let mut out = Vec::new();
    for block in text.split("\n## ").skip(1) {
        let mut lines = block.lines();
        let title = lines.next().unwrap_or_default().to_string();
        let mut code = String::new();
        let mut help = String::new();
        let mut body = String::new();
        for line in lines {
            if let Some(c) = line.strip_prefix("code: ") {
                code = c.to_string();
            } else if let Some(h) = line.strip_prefix("help: ") {
                help = h.to_string();
            } else if !line.trim().is_empty() {
                body.push_str(line);
                body.push('\n');
            }
        }
        let source = if body.starts_with("policy") {
            body
        } else {
            format!("policy \"p\"\nuse std\n{body}default {{S}}\n")
        };
        out.push(Entry {
            title,
            code,
            help,
            source,
        });
    }
    out
}

/// Words of the grammar's rule names that a message must never show.
const INTERNAL: &[&str] = &[
    "kw_",
    "kw ",
    "_lit",
    " lit",
    "name_ref",
    "call name",
    "_pred",
    "EOI",
    "SOI",
    "infix",
    "prefix",
    "atom",
];

fn apply_fixes(source: &str, diagnostics: &[Diagnostic]) -> String {
    let mut fixes: Vec<_> = diagnostics
        .iter()
        .filter_map(|d| d.suggestion.as_ref())
        .collect();
    fixes.sort_by_key(|s| std::cmp::Reverse(s.span.start));
    let mut out = source.to_string();
    for s in fixes {
        out.replace_range(s.span.start..s.span.end, &s.replacement);
    }
    out
}

#[test]
fn every_mistake_gets_its_code_help_and_a_fix_that_parses() {
    let entries = corpus();
    assert!(entries.len() >= 40, "only {} entries", entries.len());
    let mut failures = Vec::new();
    for e in &entries {
        let checked = check_bytes(e.source.as_bytes());
        let Some(first) = checked.diagnostics.iter().find(|d| d.is_error()) else {
            failures.push(format!("{}: no error at all", e.title));
            continue;
        };
        if first.code.as_str() != e.code {
            failures.push(format!(
                "{}: code {} ({}), expected {}",
                e.title, first.code, first.message, e.code
            ));
            continue;
        }
        let help = first.help.clone().unwrap_or_default();
        if !help.contains(&e.help) {
            failures.push(format!("{}: help `{help}` lacks `{}`", e.title, e.help));
        }
        for d in &checked.diagnostics {
            let text = format!("{} {}", d.message, d.help.clone().unwrap_or_default());
            if let Some(word) = INTERNAL.iter().find(|w| text.contains(*w)) {
                failures.push(format!("{}: message shows `{word}`: {text}", e.title));
            }
        }
        if checked.diagnostics.iter().any(|d| d.suggestion.is_some()) {
            let fixed = apply_fixes(&e.source, &checked.diagnostics);
            if let Err(errors) = mesa_grammar::parse(&fixed) {
                failures.push(format!(
                    "{}: the fixed text does not parse ({}):\n{fixed}",
                    e.title, errors[0].message
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn three_mistakes_give_three_diagnostics() {
    let source = "policy \"p\"\nuse std\n\
        rule a when qtype == \"C\" -> select {S, T}\n\
        rule ok when query has std.causal -> add {R}\n\
        rule b when query has std.causal -> select [\"S\", \"T\"]\n\
        if query has std.causal then select {S, T}\n\
        default {S}\n";
    let errors = mesa_grammar::parse(source).expect_err("three mistakes");
    let codes: Vec<&str> = errors.iter().map(|d| d.code.as_str()).collect();
    assert_eq!(codes, ["E0110", "E0111", "E0112"], "{errors:#?}");
    let lines: Vec<usize> = errors
        .iter()
        .map(|d| source[..d.span.start].matches('\n').count() + 1)
        .collect();
    assert_eq!(lines, [3, 5, 6]);
}

#[test]
fn an_unfinished_statement_is_reported_where_it_ends() {
    let source = "policy \"p\"\nrule a when query has std.causal\ndefault {S}\n";
    let errors = mesa_grammar::parse(source).expect_err("no action");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let d = &errors[0];
    assert_eq!(d.code.as_str(), "E0100");
    assert_eq!(
        &source[..d.span.start],
        "policy \"p\"\nrule a when query has std.causal"
    );
    let help = d.help.clone().unwrap_or_default();
    assert!(
        help.contains("rule NAME when CONDITION -> select|add|remove MASK"),
        "{help}"
    );
}

#[test]
fn recovery_is_bounded() {
    let mut source = String::from("policy \"p\"\n");
    for i in 0..100 {
        source.push_str(&format!("rule r{i} when qtype == \"C\" -> add {{R}}\n"));
    }
    source.push_str("default {S}\n");
    let errors = mesa_grammar::parse(&source).expect_err("mistakes");
    assert_eq!(errors.len(), mesa_grammar::MAX_SYNTAX_ERRORS);
}
