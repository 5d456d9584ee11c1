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

/// An input whose structures cost `tokens` and whose subsets show, in
/// words, the sum of `per` over their structures (no word shared).
fn priced(tokens: [f64; 5], per: [f64; 5]) -> Input {
    let mut i = q("x");
    for (s, t) in Structure::ALL.into_iter().zip(tokens) {
        i.previews.set(s, Feature::Tokens, t);
    }
    let counts =
        std::array::from_fn(|k| Mask::subset(k).iter().map(|s| per[s.index()]).sum::<f64>());
    i.previews.set_shown(mesa_core::Shown::Words, counts);
    i
}

#[test]
fn trade_keeps_the_subset_worth_its_tokens() {
    let src = "policy \"t\"\ndefault all\ntrade words at 0.5\n";
    // Shares of words 0.4 0.3 0.15 0.05 0.1, of tokens 0.1 0.1 0.2 0.2 0.4:
    // a structure is kept when its word share beats half its token share.
    let i = priced([100., 100., 200., 200., 400.], [4., 3., 1.5, 0.5, 1.]);
    let out = selector(src).select(&i);
    assert_eq!(out.mask.to_string(), "{S, T, G}");
    assert_eq!(
        out.trace.steps,
        vec![Step::Trade {
            before: Mask::ALL,
            after: out.mask
        }]
    );
    // Only within what the rules chose.
    let src = "policy \"t\"\nrule r -> remove {S}\ndefault all\ntrade words at 0.5\n";
    assert_eq!(selector(src).select(&i).mask.to_string(), "{T, G}");
    // At price 0 every structure that shows a word is worth keeping; a
    // structure that shows nothing is dropped (equal value, fewer tokens).
    let src = "policy \"t\"\ndefault all\ntrade words at 0\n";
    let i0 = priced([100., 100., 200., 200., 400.], [4., 3., 1., 1., 0.]);
    assert_eq!(selector(src).select(&i0).mask.to_string(), "{S, T, G, V}");
    // A price so high that one structure is best: the best ratio.
    let src = "policy \"t\"\ndefault all\ntrade words at 1000\n";
    assert_eq!(selector(src).select(&i).mask.to_string(), "{S}");
}

#[test]
fn trade_ties_go_to_fewer_tokens_then_lower_bits() {
    let src = "policy \"t\"\ndefault all\ntrade steps at 1\n";
    // S and T show the same and cost the same: S (lower bits) wins.
    let mut i = priced([100., 100., 100., 100., 100.], [0.; 5]);
    let counts = std::array::from_fn(|k| {
        if Mask::subset(k).bits() <= 2 {
            1.0
        } else {
            0.0
        }
    });
    i.previews.set_shown(mesa_core::Shown::Steps, counts);
    // All five must show something for the trade to apply.
    let mut counts = counts;
    counts[30] = 1.0;
    i.previews.set_shown(mesa_core::Shown::Steps, counts);
    assert_eq!(selector(src).select(&i).mask.to_string(), "{S}");
}

#[test]
fn trade_leaves_the_mask_without_counts_or_tokens() {
    let src = "policy \"t\"\ndefault {S, T}\ntrade words at 0.5\n";
    // No counts given (all five show nothing): the mask stays.
    let mut i = q("x");
    i.previews.set(Structure::Summary, Feature::Tokens, 10.0);
    assert_eq!(selector(src).select(&i).mask.to_string(), "{S, T}");
    // Counts but no tokens: the mask stays.
    let i = priced([0.; 5], [1., 1., 1., 1., 1.]);
    assert_eq!(selector(src).select(&i).mask.to_string(), "{S, T}");
    // An empty mask stays empty and falls back.
    let src = "policy \"t\"\nrule r -> remove all\ndefault {S}\nfallback {G}\ntrade words at 0.5\n";
    let i = priced([1.; 5], [1.; 5]);
    assert_eq!(selector(src).select(&i).mask.to_string(), "{G}");
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

#[test]
fn trade_is_checked() {
    let codes = |src: &str| -> Vec<String> {
        check(src)
            .diagnostics
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.code.as_str().to_string())
            .collect()
    };
    assert_eq!(
        codes("policy \"t\"\ndefault all\ntrade words at 0.3\ntrade steps at 1\n"),
        ["E0104"]
    );
    assert_eq!(
        codes("policy \"t\"\ndefault all\ntrade lines at 0.3\n"),
        ["E0307"]
    );
    let checked = check("policy \"t\"\ndefault all\ntrade steps at 0.25\n");
    let program = checked.program.expect("checks");
    assert_eq!(
        program.trade,
        Some(crate::ir::Trade {
            unit: mesa_core::Shown::Steps,
            price: 0.25
        })
    );
    // A trade reads every structure's tokens and the counts in its unit.
    assert_eq!(program.features.shown, Some(mesa_core::Shown::Steps));
    assert_eq!(program.features.previews.len(), 5);
}
