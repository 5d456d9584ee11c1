//! The semantics, construct by construct. Each case is a policy, an input and
//! the mask (and deciding rule) the language reference says it gives.

use super::*;
use crate::check;

fn selector(src: &str) -> Selector {
    let checked = check(src);
    let Some(program) = checked.program else {
        panic!("policy does not check: {:?}\n{src}", checked.diagnostics);
    };
    Selector::new(program).expect("selector")
}

/// `cond` as the condition of a rule that adds R to default {S}.
fn holds(cond: &str, input: &Input) -> bool {
    let src = format!("policy \"t\"\nuse std\nrule r when {cond} -> add {{R}}\ndefault {{S}}\n");
    let out = selector(&src).select(input);
    out.mask.contains(Structure::Raw)
}

fn q(text: &str) -> Input {
    Input::query(text)
}

#[test]
fn keywords_match_whole_words_case_insensitively() {
    assert!(holds(
        r#"query has words ["error"]"#,
        &q("An ERROR occurred")
    ));
    assert!(!holds(
        r#"query has words ["error"]"#,
        &q("errors occurred")
    ));
    assert!(!holds(r#"query has words ["error"]"#, &q("terror")));
    assert!(holds(r#"query has words ["error"]"#, &q("(error)")));
    assert!(holds(
        r#"query has words ["led to"]"#,
        &q("what Led \t\n To this")
    ));
    assert!(!holds(r#"query has words ["led to"]"#, &q("ledto")));
    // Non-ASCII letters are word characters: "caf" is not a word of "café".
    assert!(!holds(r#"query has words ["caf"]"#, &q("un café")));
    assert!(holds(r#"query has words ["café"]"#, &q("un café noir")));
    // Overlapping keywords are all found.
    assert!(holds(
        r#"hits(query, words ["step", "step 12", "12"]) == 3"#,
        &q("at step 12")
    ));
    // An earlier failed boundary does not hide a later good match.
    assert!(holds(
        r#"query has words ["error"]"#,
        &q("errors and an error")
    ));
}

#[test]
fn hits_count_distinct_keywords() {
    let i = q("why? why! because of the cause");
    assert!(holds(
        r#"hits(query, words ["why", "because", "cause", "reason"]) == 3"#,
        &i
    ));
    assert!(holds(r#"hits(query, words ["nothing"]) == 0"#, &i));
}

#[test]
fn patterns_are_ascii_and_case_sensitive() {
    assert!(holds(
        r#"query matches pattern r"\bstep \d+""#,
        &q("at step 12")
    ));
    assert!(!holds(
        r#"query matches pattern r"\bstep \d+""#,
        &q("at Step 12")
    ));
    assert!(holds(
        r#"query matches pattern r"(?i)\bstep \d+""#,
        &q("at Step 12")
    ));
    assert!(!holds(r#"query matches pattern r"\d""#, &q("٣")));
    assert!(holds(r#"query matches pattern "^$""#, &q("")));
}

#[test]
fn metadata_is_case_insensitive_and_absent_means_false() {
    let mut i = q("x");
    assert!(!holds("domain is text2sql", &i));
    assert!(holds("not (domain is text2sql)", &i));
    assert!(!holds("qtype in [a, b]", &i));
    i.domain = Some("TEXT2SQL".into());
    assert!(holds("domain is text2sql", &i));
    assert!(holds("domain in [web, text2sql]", &i));
    assert!(!holds("domain is \"text2sql \"", &i));
    i.qtype = Some("Causal Inference".into());
    assert!(holds("qtype is \"causal inference\"", &i));
}

#[test]
fn task_subject() {
    let mut i = q("nothing here");
    assert!(!holds(r#"task has words ["sql"]"#, &i));
    assert!(holds("task.words == 0", &i));
    i.task = Some("Write SQL for the table".into());
    assert!(holds(r#"task has words ["sql"]"#, &i));
    assert!(holds("task.words == 5", &i));
    assert!(!holds(r#"query has words ["sql"]"#, &i));
}

#[test]
fn arithmetic() {
    let i = q("one two  three");
    for cond in [
        "1 + 2 * 3 == 7",
        "(1 + 2) * 3 == 9",
        "10 - 4 - 3 == 3",
        "8 / 4 / 2 == 1",
        "5 / 0 == 0",
        "-2 * -3 == 6",
        "1 - -1 == 2",
        "min(3, 1, 2) == 1",
        "max(3, 1, 2) == 3",
        "query.words == 3",
        "(if query.words > 2 then 10 else 20) == 10",
        "if query.words > 5 then false else true",
        "0.1 + 0.2 != 0.3",
        "1e3 == 1000",
        "2 >= 2 and 2 <= 2 and 1 < 2 and 2 > 1",
    ] {
        assert!(holds(cond, &i), "{cond}");
    }
    assert!(!holds("1 > 2 or 2 < 1", &i));
}

#[test]
fn previews_default_to_zero() {
    let mut i = q("x");
    assert!(holds("preview.R.tokens == 0", &i));
    i.previews.set(Structure::Raw, Feature::Tokens, 4500.0);
    assert!(holds("preview.R.tokens > 4000", &i));
    assert!(holds("preview.raw.tokens == preview.R.tokens", &i));
}

#[test]
fn rules_run_in_order_select_stops() {
    let s = selector(
        "policy \"t\"\nrule a when true -> add {G}\nrule b when size == 3 -> remove {S}\nrule c when true -> select {V}\nrule d when true -> select {R}\ndefault {S, T}\n",
    );
    let out = s.select(&q("x"));
    assert_eq!(out.mask.to_string(), "{V}");
    assert_eq!(out.rule, Some(2));
    assert_eq!(out.trace.steps.len(), 3, "rule d is never evaluated");
}

#[test]
fn deciding_rule_is_the_last_change() {
    let s = selector("policy \"t\"\nrule a -> add {G}\nrule b -> add {G}\nrule c when false -> add {V}\ndefault {S}\n");
    let out = s.select(&q("x"));
    assert_eq!(out.mask.to_string(), "{S, G}");
    assert_eq!(out.rule, Some(0), "rule b fired but changed nothing");
    let s =
        selector("policy \"t\"\nrule a when query has words [\"zzz\"] -> add {G}\ndefault {S}\n");
    assert_eq!(s.select(&q("x")).rule, None);
}

#[test]
fn top_k_by_score() {
    let src = "policy \"t\"\nscore S = 0.5\nscore T = 0.9\nscore G = 0.5\nrule r -> select top 2 by score\ndefault {V}\n";
    // T first, then the tie S/G goes to the earlier structure (S).
    assert_eq!(selector(src).select(&q("x")).mask.to_string(), "{S, T}");
    let src = "policy \"t\"\nscore S = 0.5\nscore T = 0.9\nrule r -> select top 3 by score above 0.5\ndefault {V}\nfallback {R}\n";
    // Only T is strictly above 0.5; unscored G, V, R use preview top (0).
    assert_eq!(selector(src).select(&q("x")).mask.to_string(), "{T}");
    let src =
        "policy \"t\"\nrule r -> select top 2 by score above 0.95\ndefault {V}\nfallback {R}\n";
    let out = selector(src).select(&q("x"));
    assert_eq!(out.mask.to_string(), "{R}");
    assert!(matches!(
        out.trace.steps.last(),
        Some(Step::Fallback { .. })
    ));
    // Unscored structures are ranked by their preview top.
    let mut i = q("x");
    i.previews.set(Structure::Vector, Feature::Top, 0.8);
    i.previews.set(Structure::Graph, Feature::Top, 0.7);
    let src = "policy \"t\"\nrule r -> select top 1 by score\ndefault {S}\n";
    assert_eq!(selector(src).select(&i).mask.to_string(), "{V}");
    // A score can read `size`, the current mask size.
    let src = "policy \"t\"\nscore R = size\nrule a -> add {T}\nrule r -> add top 1 by score above 1\ndefault {S}\n";
    assert_eq!(selector(src).select(&q("x")).mask.to_string(), "{S, T, R}");
}

#[test]
fn budget_drops_costliest_first_never_below_one() {
    let src = "policy \"t\"\ndefault all\nbudget 3000 tokens\n";
    let mut i = q("x");
    for (s, t) in [
        (Structure::Summary, 500.0),
        (Structure::Temporal, 1000.0),
        (Structure::Graph, 2000.0),
        (Structure::Vector, 2000.0),
        (Structure::Raw, 400.0),
    ] {
        i.previews.set(s, Feature::Tokens, t);
    }
    let out = selector(src).select(&i);
    // Total 5900: drop V (2000, tie with G goes to the later), then G: 1900 fits.
    assert_eq!(out.mask.to_string(), "{S, T, R}");
    let dropped: Vec<char> = out
        .trace
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Budget { dropped, .. } => Some(dropped.letter()),
            _ => None,
        })
        .collect();
    assert_eq!(dropped, vec!['V', 'G']);
    let src = "policy \"t\"\ndefault {S, T}\nbudget 1 tokens\n";
    assert_eq!(selector(src).select(&i).mask.to_string(), "{S}");
}

#[test]
fn remove_everything_falls_back() {
    let src = "policy \"t\"\nrule r -> remove all\ndefault {S, T}\nfallback {V}\n";
    assert_eq!(selector(src).select(&q("x")).mask.to_string(), "{V}");
    let src = "policy \"t\"\nrule r -> remove all\ndefault {S, T}\n";
    assert_eq!(selector(src).select(&q("x")).mask.to_string(), "{S, T}");
}

#[test]
fn lets_and_std_sets() {
    let src = "policy \"t\"\nuse std\nlet why = query has std.causal\nlet n = hits(query, std.causal)\nrule r when why and n >= 2 -> select {G}\ndefault {S}\n";
    let s = selector(src);
    assert_eq!(s.select(&q("Why did it fail?")).mask.to_string(), "{G}");
    assert_eq!(s.select(&q("Why?")).mask.to_string(), "{S}");
}

#[test]
fn select_mask_agrees_with_select() {
    let s = selector(include_str!("../../../examples/fig5.mesa"));
    for text in [
        "Why did the SQL fail?",
        "",
        "summarize",
        "at step 3 there was an error",
    ] {
        let mut i = q(text);
        i.domain = Some("text2sql".into());
        let full = s.select(&i);
        assert_eq!(s.select_mask(&i), (full.mask, full.rule));
    }
}
