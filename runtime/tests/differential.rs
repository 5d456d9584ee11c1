//! Differential tests: the interpreter (the reference semantics) and the
//! compiled Wasm module must agree on the mask, the deciding rule and the
//! whole trace, for random policies using every construct and random inputs
//! (empty, non-ASCII, up to 64 KiB, with and without metadata and previews).
//!
//! A case is one (policy, input) pair. CI runs 300 policies x 8 inputs =
//! 2,400 cases; `MESA_DIFF_POLICIES=5000 cargo test --release -p mesa-runtime
//! --test differential` runs a longer campaign.
//!
//! The keyword scans' own cases (random keyword sets, hash collisions,
//! chunk boundaries) are in keyword_scan.rs.

mod common;

use common::{agree_on, agree_on_inputs, agree_with, policies, runtime, SCHEMES};
use mesa_compiler::ir::Feature;
use mesa_compiler::{check, wasm, Input, Selector, Structure};
use mesa_core::{Mask, Shown};
use mesa_runtime::Runtime;
use proptest::prelude::*;

const VOCAB: &[&str] = &[
    "why",
    "Why",
    "WHY",
    "because",
    "step",
    "step 12",
    "steps 3-5",
    "error",
    "errors",
    "failed",
    "led",
    "to",
    "led to",
    "café",
    "ÉTAT",
    "état",
    "summary",
    "overall",
    "how many",
    "state",
    "x",
    "_",
    "-",
    "(error)",
    "\t",
    "  ",
    "\n",
    "?",
    "12",
    "12.5",
    "table_name",
    "Config.yaml",
    "中文",
    "",
];

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(VOCAB).prop_map(String::from)
}

fn keyword_list() -> impl Strategy<Value = String> {
    prop::collection::vec(
        word().prop_filter("non-empty", |w| !w.trim().is_empty()),
        1..6,
    )
    .prop_map(|ws| {
        let quoted: Vec<String> = ws
            .iter()
            .map(|w| serde_json::to_string(w).unwrap_or_default())
            .collect();
        format!("words [{}]", quoted.join(", "))
    })
}

const PATTERNS: &[&str] = &[
    r#"r"\bsteps?\s+\d+""#,
    r#"r"(?i)error""#,
    r#"r"^why""#,
    r#"r"\?$""#,
    r#"r"[A-Z][a-z]+""#,
    r#"r"\d{2,}""#,
    r#"r"é""#,
    r#"r"^$""#,
    r#"r"a\b""#,
];

fn num_leaf() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "preview.R.tokens",
        "preview.G.top",
        "preview.V.hits",
        "preview.S.tokens",
        "preview.T.top",
        "preview.G.named",
        "preview.R.overlap_T",
        "preview.T.overlap_raw",
        "preview.V.share",
        "preview.S.gap",
        "preview.R.steps",
        "size",
        "hits(query, k1)",
        "hits(task, k2)",
        "hits(query, std.causal)",
        "query.words",
        "task.words",
        "0",
        "1",
        "0.5",
        "4000",
        "1e308 * 10",
        "-0.0",
    ])
    .prop_map(String::from)
}

fn num() -> impl Strategy<Value = String> {
    num_leaf().prop_recursive(3, 10, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            inner.clone().prop_map(|a| format!("-{a}")),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("min({})", v.join(", "))),
            prop::collection::vec(inner.clone(), 2..4)
                .prop_map(|v| format!("max({})", v.join(", "))),
            (cond_leaf(), inner.clone(), inner)
                .prop_map(|(c, a, b)| format!("(if {c} then {a} else {b})")),
        ]
    })
}

fn cond_leaf() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "query has k1",
        "task has k2",
        "query has std.causal",
        "query has std.temporal",
        "query matches p1",
        "query matches p2",
        "task matches std.stepref",
        "domain is text2sql",
        "domain in [web, \"open world\"]",
        "qtype is recall",
        "qtype in [\"Causal Inference\", state]",
        "true",
        "false",
    ])
    .prop_map(String::from)
}

fn cond() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        3 => cond_leaf(),
        2 => (num(), prop::sample::select(vec!["<", "<=", ">", ">=", "==", "!="]), num())
            .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} and {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} or {b})")),
            inner.clone().prop_map(|a| format!("not {a}")),
            (inner.clone(), inner.clone(), inner)
                .prop_map(|(c, a, b)| format!("(if {c} then {a} else {b})")),
        ]
    })
}

fn mask() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec!["{S}", "{T, R}", "{G, V}", "all", "{}", "{S, T, V}"])
            .prop_map(String::from),
        (1u8..=5).prop_map(|k| format!("top {k} by score")),
        (1u8..=5, num()).prop_map(|(k, t)| format!("top {k} by score above {t}")),
    ]
}

fn policy() -> impl Strategy<Value = String> {
    let rule = (
        prop::option::of(cond()),
        prop::sample::select(vec!["select", "add", "remove"]),
        mask(),
    );
    (
        keyword_list(),
        keyword_list(),
        prop::sample::select(PATTERNS),
        prop::sample::select(PATTERNS),
        prop::collection::vec((prop::sample::select(vec!["S", "T", "G", "V", "R"]), num()), 0..4),
        prop::collection::vec(rule, 1..8),
        prop::sample::select(vec!["{S}", "{S, T, V}", "all", "{G}"]),
        prop::option::of(prop::sample::select(vec!["{R}", "{S, T}"])),
        prop::option::of(prop::sample::select(vec![1.0, 2500.0, 6000.0])),
        prop::option::of((
            prop::sample::select(vec!["words", "steps"]),
            prop::sample::select(vec!["0", "0.1", "0.35", "1", "3.5"]),
        )),
    )
        .prop_map(|(k1, k2, p1, p2, scores, rules, default, fallback, budget, trade)| {
            let mut s = format!("policy \"diff\"\nuse std\nlet k1 = {k1}\nlet k2 = {k2}\nlet p1 = pattern {p1}\nlet p2 = pattern {p2}\n");
            let mut seen = std::collections::HashSet::new();
            for (st, e) in scores {
                if seen.insert(st) {
                    s.push_str(&format!("score {st} = {e}\n"));
                }
            }
            for (i, (c, action, m)) in rules.into_iter().enumerate() {
                match c {
                    Some(c) => s.push_str(&format!("rule r{i} when {c} -> {action} {m}\n")),
                    None => s.push_str(&format!("rule r{i} -> {action} {m}\n")),
                }
            }
            s.push_str(&format!("default {default}\n"));
            if let Some(f) = fallback {
                s.push_str(&format!("fallback {f}\n"));
            }
            if let Some(b) = budget {
                s.push_str(&format!("budget {b} tokens\n"));
            }
            if let Some((unit, price)) = trade {
                s.push_str(&format!("trade {unit} at {price}\n"));
            }
            s
        })
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::collection::vec(word(), 0..12).prop_map(|v| v.join(" ")),
        1 => Just(String::new()),
        1 => (prop::collection::vec(word(), 1..6), 1000usize..6000).prop_map(|(v, n)| {
            // Long texts, up to about 64 KiB.
            let unit = v.join(" ") + " ";
            let mut s = unit.repeat(n / unit.len().max(1) + 1);
            let mut cut = s.len().min(65_000);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            s.truncate(cut);
            s
        }),
        1 => "\\PC{0,40}",
    ]
}

fn input() -> impl Strategy<Value = Input> {
    let value = prop::sample::select(vec![
        0.0, 0.1, 0.5, 0.9, 1.0, 3.0, 2000.0, 4000.0, 5000.0, -1.0, 1e300,
    ]);
    (
        text(),
        prop::option::of(text()),
        prop::option::of(prop::sample::select(vec![
            "text2sql",
            "TEXT2SQL",
            "web",
            "open world",
            "game",
            "",
        ])),
        prop::option::of(prop::sample::select(vec![
            "recall",
            "causal inference",
            "State",
            "x",
        ])),
        prop::collection::vec((0usize..5, 0usize..Feature::COUNT, value), 0..16),
        // What each subset shows, per unit: few distinct values, so ties
        // are common.
        prop::collection::vec(
            prop::option::of(prop::collection::vec(
                prop::sample::select(vec![0.0, 1.0, 2.0, 3.0, 7.0, 40.0, 1e300]),
                Mask::SUBSETS,
            )),
            2,
        ),
    )
        .prop_map(|(query, task, domain, qtype, previews, shown)| {
            let mut input = Input {
                query,
                task,
                domain: domain.map(String::from),
                qtype: qtype.map(String::from),
                ..Input::default()
            };
            for (s, f, v) in previews {
                // A structure's overlap with itself is no feature.
                if Feature::ALL[f].partner() != Some(Structure::ALL[s]) {
                    input.previews.set(Structure::ALL[s], Feature::ALL[f], v);
                }
            }
            for (unit, counts) in Shown::ALL.into_iter().zip(shown) {
                if let Some(counts) = counts {
                    let counts: [f64; Mask::SUBSETS] = counts.try_into().expect("31 counts");
                    input.previews.set_shown(unit, counts);
                }
            }
            input
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(policies()))]

    #[test]
    fn interpreter_and_wasm_agree(src in policy(), inputs in prop::collection::vec(input(), 8), scheme in 0usize..4) {
        let checked = check(&src);
        let Some(program) = checked.program else {
            // Rejected policies have nothing to compare; only these codes can reject.
            let codes: Vec<&str> = checked.diagnostics.iter().filter(|d| d.is_error()).map(|d| d.code.as_str()).collect();
            prop_assert!(codes.iter().all(|c| *c == "E0400"), "{codes:?}\n{src}");
            return Ok(());
        };
        // Every keyword scheme and automaton representation, whatever the policy's size.
        let bytes = wasm::compile_with(&program, &src, &SCHEMES[scheme]).expect("compiles");
        let selector = Selector::new(program).expect("prepares");
        let policy = runtime().load(&bytes).expect("loads");
        let mut instance = policy.instantiate().expect("instantiates");
        for input in &inputs {
            let want = selector.select(input);
            let got = instance.select(input).expect("runs");
            prop_assert_eq!(&got, &want, "policy:\n{}\ninput: {:?}", src, input);
            prop_assert_eq!(instance.select_mask(input).expect("runs"), (want.mask, want.rule));
        }
    }
}

#[test]
fn same_module_same_input_same_output() {
    let src = include_str!("../../examples/fig5.mesa");
    let program = check(src).program.expect("checks");
    let a = wasm::compile(&program, src).expect("compiles");
    let b = wasm::compile(&program, src).expect("compiles");
    assert_eq!(a, b, "compilation is deterministic");
    let policy = runtime().load(&a).expect("loads");
    let mut first = policy.instantiate().expect("instance");
    let mut second = policy.instantiate().expect("instance");
    let mut input = Input::query("Why did the query fail at step 12?");
    input.domain = Some("text2sql".into());
    input.previews.set(Structure::Raw, Feature::Tokens, 4500.0);
    let expected = first.select(&input).expect("runs");
    for _ in 0..100 {
        assert_eq!(first.select(&input).expect("runs"), expected);
        assert_eq!(second.select(&input).expect("runs"), expected);
    }
}

#[test]
fn wide_tables_large_automata_and_the_64th_pattern() {
    // 400 keywords of 200 bytes: more than 65,535 automaton states, so the
    // tables use 32-bit entries.
    let mut state: u64 = 42;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let keywords: Vec<String> = (0..400)
        .map(|_| {
            (0..200)
                .map(|_| (b'a' + (next() % 3) as u8) as char)
                .collect()
        })
        .collect();
    let states = mesa_compiler::wasm::keywords::KeywordAutomaton::new(&keywords)
        .children
        .len();
    assert!(states > 65_535, "{states} states");
    let quoted: Vec<String> = keywords.iter().map(|k| format!("\"{k}\"")).collect();
    let mut src = format!("policy \"wide\"\nlet big = words [{}]\n", quoted.join(", "));
    // 64 patterns, the most a module supports; the last one gets bit 63.
    for i in 0..64 {
        src.push_str(&format!(
            "let p{i} = pattern r\"x{i}y\"\nrule r{i} when query matches p{i} -> add {{T}}\n"
        ));
    }
    src.push_str("rule big_hit when hits(query, big) >= 2 -> add {R}\ndefault {S}\n");
    let mut queries = vec![
        format!("{} and {}", keywords[0], keywords[399]),
        format!("x63y {}", keywords[5]),
        "x0y x31y x32y x63y".to_string(),
        keywords[7][..150].to_string(),
        String::new(),
    ];
    queries.push(format!("{} {}", keywords[1].to_uppercase(), keywords[2]));
    agree_on(&src, &queries);
}

#[test]
fn every_whitespace_byte_and_control_characters() {
    let src = "policy \"ws\"\nlet k = words [\"led to\", \"a b c\", \"x\"]\nrule r when hits(query, k) >= 2 -> add {R}\nrule w when query.words > 3 -> add {G}\ndefault {S}\n";
    let queries: Vec<String> = [
        "led\tto x",
        "led\r\nto\x0cx",
        "led\x0bto x",
        "a\x0c\x0cb \r c x",
        "\x00a b c\x00 x",
        " \t\r\n\x0c",
        "x\u{a0}led to",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    agree_on(src, &queries);
}

/// The benchmarks' keyword workloads (generated, English, random), on long
/// and short queries, as written and upper-cased.
#[test]
fn workload_policies_agree() {
    for w in mesa_compiler::synthetic::workloads() {
        let src = w.policy(20, 10, 200);
        let mut queries = Vec::new();
        for len in [0, 100, 200, 2048, 9000, 120_000] {
            let q = w.query(len);
            queries.push(q.to_ascii_uppercase());
            queries.push(q);
        }
        // Every keyword once, then each twice in a row.
        queries.push(w.keywords.join(" "));
        queries.push(w.keywords.iter().map(|k| format!("{k} {k}.")).collect());
        let inputs: Vec<Input> = queries
            .into_iter()
            .map(|q| {
                let mut input = Input::query(q);
                input.domain = Some("web".into());
                input
            })
            .collect();
        agree_on_inputs(&src, &inputs, &SCHEMES[..1]);
        agree_on_inputs(&src, &inputs, &SCHEMES[2..3]);
    }
}

/// Modules compiled by Winch (`Compiler::Winch`) give the interpreter's
/// answers too, within the same fuel, up to the largest input.
#[test]
fn winch_compiled_modules_agree() {
    use mesa_runtime::{Compiler, RuntimeConfig};
    let winch = Runtime::with_config(RuntimeConfig {
        compiler: Compiler::Winch,
        ..RuntimeConfig::default()
    })
    .expect("a Winch runtime");
    let fig5 = include_str!("../../examples/fig5.mesa");
    let mut input = Input::query("Why did the query fail at step 12?");
    input.domain = Some("text2sql".into());
    input.previews.set(Structure::Raw, Feature::Tokens, 4500.0);
    agree_with(&winch, fig5, &[input], &SCHEMES[..1]);
    for w in mesa_compiler::synthetic::workloads() {
        let src = w.policy(20, 10, 200);
        let inputs: Vec<Input> = [0, 200, 2048, 120_000]
            .iter()
            .map(|&len| {
                let mut input = Input::query(w.query(len));
                input.domain = Some("web".into());
                input
            })
            .collect();
        agree_with(&winch, &src, &inputs, &SCHEMES[..1]);
        agree_with(&winch, &src, &inputs[..2], &SCHEMES[2..3]);
    }
}
