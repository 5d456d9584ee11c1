//! Regression tests for what an outside review found (one test per finding).

use mesa_compiler::{check, check_bytes, Input, Selector};
use mesa_grammar::{format_source, Code};

fn codes(source: &str) -> Vec<Code> {
    check(source).diagnostics.iter().map(|d| d.code).collect()
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let src = b"\xef\xbb\xbfpolicy \"p\"\ndefault {S}\n";
    let checked = check_bytes(src);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    // Diagnostics after it still point at the right bytes.
    let bad = "\u{feff}policy \"p\"\ndefault {X}\n";
    let d = &check(bad).diagnostics[0];
    assert_eq!(&bad[d.span.start..d.span.end], "X");
}

#[test]
fn the_lets_of_a_cycle_are_not_called_unused() {
    let found = codes("policy \"p\"\nlet a = b and true\nlet b = a or false\ndefault {S}\n");
    assert!(found.contains(&Code::E0207), "{found:?}");
    assert!(!found.contains(&Code::W0103), "{found:?}");
}

#[test]
fn min_and_max_with_one_argument_say_so() {
    let checked =
        check("policy \"p\"\nrule r when max(preview.R.tokens) > 1 -> add {T}\ndefault {S}\n");
    let d = &checked.diagnostics[0];
    assert_eq!(d.code, Code::E0100);
    assert!(d.message.contains("two or more arguments"), "{}", d.message);
}

#[test]
fn the_formatter_writes_the_shortest_exact_number() {
    for (written, canonical) in [
        ("1e308", "1e308"),
        ("1e-308", "1e-308"),
        ("0.25", "0.25"),
        ("1500", "1500"),
        ("12000.0", "12000"),
        ("1.5e20", "1.5e20"),
        ("0.000001", "0.000001"),
        ("4e3", "4000"),
        ("0.0000000000000001", "1e-16"),
        ("123456789000000000000000", "1.23456789e23"),
    ] {
        let src = format!(
            "policy \"p\"\nrule r when preview.R.tokens > {written} -> add {{T}}\ndefault {{S}}\n"
        );
        let out = format_source(&src).expect("formats");
        let line = out.lines().nth(1).expect("rule line");
        assert!(
            line.contains(&format!("> {canonical} ")),
            "{written}: {line}"
        );
        // The formatted number is the same value.
        let again = format_source(&out).expect("formats again");
        assert_eq!(out, again);
    }
}

#[test]
fn a_top_count_that_does_not_fit_is_an_error_not_a_different_program() {
    let found = codes(
        "policy \"p\"\nrule r when true -> select top 99999999999999999999 by score\ndefault {S}\n",
    );
    assert_eq!(found, [Code::E0102]);
}

/// The reported policy: it checked clean, then failed to compile (E0504)
/// because the two patterns' combined DFA was too large.
#[test]
fn a_policy_that_checks_also_compiles() {
    let src = "policy \"p\"\nuse std\nlet errors = pattern r\"(?i)traceback|exception\"\n\
               rule e when query matches errors -> add {R}\n\
               rule i when query matches std.identifiers -> add {G}\ndefault {S}\n";
    let checked = check(src);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let program = checked.program.expect("program");
    assert!(program.pattern_dfas.len() >= 2);
    let selector = Selector::new(program.clone()).expect("selector");
    mesa_compiler::wasm::compile(&program, src).expect("compiles");
    let out = selector.select(&Input::query("Traceback in parse_args"));
    assert_eq!(out.mask.to_string(), "{S, G, R}");
}

#[test]
fn a_pattern_too_large_alone_is_underlined_where_it_is_written() {
    let src = "policy \"p\"\nlet big = pattern r\"[01]*1[01]{20}\"\nrule r when query matches big -> add {R}\ndefault {S}\n";
    let checked = check(src);
    let d = checked
        .diagnostics
        .iter()
        .find(|d| d.code == Code::E0504)
        .expect("E0504");
    assert_eq!(&src[d.span.start..d.span.end], "r\"[01]*1[01]{20}\"");
}

#[test]
fn an_infinite_budget_estimate_is_a_word_in_json() {
    let src = "policy \"p\"\nbudget 10 tokens\ndefault {S, T}\n";
    let selector = Selector::new(check(src).program.expect("program")).expect("selector");
    let mut input = Input::query("q");
    input.previews.set(
        mesa_compiler::Structure::Summary,
        mesa_compiler::Feature::Tokens,
        f64::MAX,
    );
    input.previews.set(
        mesa_compiler::Structure::Temporal,
        mesa_compiler::Feature::Tokens,
        f64::MAX,
    );
    let out = selector.select(&input);
    let json = serde_json::to_string(&out.trace).expect("json");
    assert!(json.contains("\"estimate\":\"inf\""), "{json}");
}
