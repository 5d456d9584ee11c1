//! Differential tests: the interpreter (the reference semantics) and the
//! compiled Wasm module must agree on the mask, the deciding rule and the
//! whole trace, for random policies using every construct and random inputs
//! (empty, non-ASCII, up to 64 KiB, with and without metadata and previews).
//!
//! A case is one (policy, input) pair. CI runs 300 policies x 8 inputs =
//! 2,400 cases; `MESA_DIFF_POLICIES=5000 cargo test --release -p mesa-runtime
//! --test differential` runs a longer campaign.

use mesa_compiler::ir::Feature;
use mesa_compiler::{check, wasm, Input, Selector, Structure};
use mesa_core::{Mask, Shown};
use mesa_runtime::Runtime;
use proptest::prelude::*;
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::new().expect("runtime"))
}

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

fn policies() -> u32 {
    std::env::var("MESA_DIFF_POLICIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
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

/// The keyword schemes a module can be compiled with: word hashing (with
/// the automaton for keywords with a non-word byte at either end) or the
/// automaton alone, each with a dense or a sparse automaton table.
const SCHEMES: [wasm::CompileOptions; 4] = [
    wasm::CompileOptions {
        dense_keyword_table_limit: usize::MAX,
        word_hash: true,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: 0,
        word_hash: true,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: usize::MAX,
        word_hash: false,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: 0,
        word_hash: false,
    },
];

/// Compares the engines on one policy for the given queries, with every
/// keyword scheme.
fn agree_on(src: &str, queries: &[String]) {
    agree_on_inputs(
        src,
        &queries
            .iter()
            .map(|q| Input::query(q.clone()))
            .collect::<Vec<_>>(),
        &SCHEMES,
    );
}

/// Compares the engines on one policy for the given inputs (mask, rule and
/// trace), with each of `schemes`.
fn agree_on_inputs(src: &str, inputs: &[Input], schemes: &[wasm::CompileOptions]) {
    agree_with(runtime(), src, inputs, schemes);
}

/// [`agree_on_inputs`] on a given runtime.
fn agree_with(runtime: &Runtime, src: &str, inputs: &[Input], schemes: &[wasm::CompileOptions]) {
    let program = check(src)
        .program
        .unwrap_or_else(|| panic!("checks: {:?}", check(src).diagnostics));
    let selector = Selector::new(program.clone()).expect("prepares");
    for options in schemes {
        let bytes = wasm::compile_with(&program, src, options).expect("compiles");
        let mut instance = runtime
            .load(&bytes)
            .expect("loads")
            .instantiate()
            .expect("instance");
        for input in inputs {
            assert_eq!(
                instance.select(input).expect("runs"),
                selector.select(input),
                "{options:?}, input {input:?}\npolicy:\n{src}"
            );
        }
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

// ---- Random keyword sets ----
//
// Word hashing finds a keyword by the hash of its last word and checks its
// bytes; the automaton takes keywords with a non-word byte at either end.
// These generate keyword sets of every shape a user or an optimizer writes
// and texts made of those keywords, mangled and run together, and compare
// the exact hit count of every set in both engines.

/// One keyword: a random word, a phrase with whitespace runs, one with
/// non-word bytes at either end, only non-word bytes, UTF-8, or a known
/// troublemaker; in any case.
fn random_keyword() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z0-9_]{1,8}",
        2 => "[a-zA-Z]{1,5}([ \t]{1,2}[a-z0-9]{1,5}){1,2}",
        2 => "[-.(#+?!/\"']{0,2}[a-zA-Z0-9]{1,4}[-.)+?!:']{0,2}",
        1 => "[a-z]{0,3}(é|É|ü|中|文|\u{1F600})[a-z]{0,3}",
        1 => "[-+.?!()]{1,3}",
        1 => prop::sample::select(vec![
            "Why", "WHY", "led to", "Led  To", "error", "(error)", "step 12", "12.5", "c++",
            ".net", "café", "CAFÉ", "a", "I", "x-ray", "e-mail", "_", "__init__", "a b a",
        ])
        .prop_map(String::from),
    ]
    .prop_filter("not blank", |k| !k.trim().is_empty())
}

/// A MESA string literal.
fn quote(k: &str) -> String {
    let mut q = String::from("\"");
    for c in k.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q + "\""
}

/// A text built from `pool` (the policy's keywords), separators and noise,
/// run together, each piece possibly upper-cased or given a space.
fn text_from(pool: Vec<String>) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => prop::sample::select(pool),
        3 => prop::sample::select(vec![
            " ", " ", "  ", "\t", "\n", ".", ",", "-", "(", ")", "é", "x", "_", "?", "+", "\r\n", "1",
        ])
        .prop_map(String::from),
        1 => "[a-zA-Z]{1,6}",
        1 => "\\PC{0,3}",
    ];
    prop::collection::vec((piece, 0u8..4), 0..24).prop_map(|parts| {
        parts
            .into_iter()
            .map(|(p, how)| match how {
                0 => p.to_ascii_uppercase(),
                1 => p + " ",
                2 => p.replace(' ', " \t "),
                _ => p,
            })
            .collect()
    })
}

/// A policy whose trace shows the exact number of distinct keywords of each
/// set found in the query and in the task.
fn hits_policy(sets: &[Vec<String>]) -> String {
    let mut src = String::from("policy \"keywords\"\n");
    for (i, set) in sets.iter().enumerate() {
        let words: Vec<String> = set.iter().map(|k| quote(k)).collect();
        src.push_str(&format!("let k{i} = words [{}]\n", words.join(", ")));
        for n in 0..=set.len() {
            src.push_str(&format!(
                "rule q{i}x{n} when hits(query, k{i}) == {n} -> add {{T}}\n"
            ));
            src.push_str(&format!(
                "rule t{i}x{n} when hits(task, k{i}) == {n} -> add {{G}}\n"
            ));
        }
        src.push_str(&format!(
            "rule b{i} when query has k{i} and task has k{i} -> add {{R}}\n"
        ));
    }
    src.push_str("default {S}\n");
    src
}

fn keyword_case() -> impl Strategy<Value = (Vec<Vec<String>>, Vec<(String, String)>)> {
    prop::collection::vec(prop::collection::vec(random_keyword(), 1..9), 1..5).prop_flat_map(
        |sets| {
            let pool: Vec<String> = sets.iter().flatten().cloned().collect();
            let texts = prop::collection::vec((text_from(pool.clone()), text_from(pool)), 6);
            (Just(sets), texts)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(policies() / 2))]

    #[test]
    fn random_keyword_sets_agree((sets, texts) in keyword_case(), scheme in 0usize..4) {
        let src = hits_policy(&sets);
        let inputs: Vec<Input> = texts
            .into_iter()
            .map(|(query, task)| Input { query, task: Some(task), ..Input::default() })
            .collect();
        agree_on_inputs(&src, &inputs, &SCHEMES[scheme..=scheme]);
    }
}

/// Patterns whose scan skips idle bytes, eight at a time and then one at a
/// time: literals placed at every offset of long runs of skippable bytes,
/// near the end of the text and split by it, one pattern per rule so that
/// each pattern's answer shows in the mask.
fn skipping_case() -> impl Strategy<Value = (Vec<&'static str>, Vec<String>)> {
    let pats = prop::sample::subsequence(
        vec![
            r#"r"\bstep\s+\d+""#,
            r#"r"(?i)traceback|exception""#,
            r#"r"ab$""#,
            r#"r"^zz""#,
            r#"r"(?m)^x""#,
            r#"r"q\b""#,
            r#"r"\d{3}""#,
        ],
        1..5,
    );
    let piece = prop::sample::select(vec![
        "step 12",
        "steps",
        "Traceback",
        "EXCEPTION",
        "ab",
        "zz",
        "\nx",
        "q",
        "q.",
        "123",
        "1 2",
    ]);
    let text = (
        prop::collection::vec((0usize..40, piece), 0..4),
        prop::sample::select(vec!["o", "kjh ", "uvw.", "\n"]),
    )
        .prop_map(|(pieces, filler)| {
            let mut t = String::new();
            for (run, p) in pieces {
                t.push_str(&filler.repeat(run));
                t.push_str(p);
            }
            t
        });
    (pats, prop::collection::vec(text, 6))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(policies() / 2))]

    #[test]
    fn skipped_bytes_never_hide_a_match((pats, texts) in skipping_case()) {
        let mut src = String::from("policy \"skip\"\n");
        for (i, p) in pats.iter().enumerate() {
            let m = ["S", "T", "G", "V", "R"][i];
            src.push_str(&format!("let p{i} = pattern {p}\nrule r{i} when query matches p{i} -> add {{{m}}}\n"));
        }
        src.push_str("default {}\nfallback {S, T, G, V, R}\n");
        let inputs: Vec<Input> = texts.into_iter().map(Input::query).collect();
        agree_on_inputs(&src, &inputs, &SCHEMES[..1]);
    }
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

/// Two different words with the same 32-bit hash share a slot of the word
/// table: each must still be found alone, and a phrase ending in one must
/// not be taken for the other.
#[test]
fn words_with_the_same_hash_are_told_apart() {
    use mesa_compiler::wasm::wordhash::hash_word;
    // Found by enumerating five-letter words (FNV-1a is injective on four bytes).
    let (x, y) = ("glbvs".to_string(), "yacxa".to_string());
    assert_ne!(x, y);
    assert_eq!(hash_word(x.as_bytes()), hash_word(y.as_bytes()));
    let src = format!(
        "policy \"collide\"\nlet a = words [{}, \"go {x}\"]\nlet b = words [{}, \"go {y}\"]\n\
         rule ra when hits(query, a) == 1 -> add {{T}}\nrule ra2 when hits(query, a) == 2 -> add {{G}}\n\
         rule rb when hits(query, b) == 1 -> add {{V}}\nrule rb2 when hits(query, b) == 2 -> add {{R}}\n\
         default {{S}}\n",
        quote(&x),
        quote(&y)
    );
    let queries: Vec<String> = [
        x.clone(),
        y.clone(),
        format!("go {x}"),
        format!("go {y}"),
        format!("{x} {y}"),
        format!("go {x} go {y}"),
        format!("{x}{y}"),
        format!("ego {y}"),
    ]
    .into_iter()
    .collect();
    agree_on(&src, &queries);
}

/// The scan records keyword events and runs them after each 2 KiB chunk of
/// input: phrases across a chunk boundary, at every offset around it, and
/// texts that record the most events a chunk can hold (three word-hash
/// events per word, or an automaton event per byte).
#[test]
fn chunk_boundaries_and_dense_events() {
    let src = "policy \"chunks\"\n\
        let w = words [\"a\", \"a a\", \"a a a\", \"led to\", \"x-ray\"]\n\
        let p = words [\"-\", \"--\", \"(error)\"]\n\
        rule w1 when hits(query, w) == 1 -> add {T}\n\
        rule w2 when hits(query, w) == 2 -> add {G}\n\
        rule w3 when hits(query, w) >= 3 -> add {V}\n\
        rule p1 when hits(query, p) == 1 -> add {R}\n\
        rule p2 when hits(query, p) >= 2 -> remove {S}\n\
        default {S}\n";
    let mut queries = Vec::new();
    for at in 2030..2060 {
        for phrase in ["led to", "led \t to", "x-ray", "(error)", "a a"] {
            let mut q = "z ".repeat(at / 2);
            q.truncate(at);
            q.push_str(phrase);
            queries.push(q.clone());
            q.push_str(" tail");
            queries.push(q);
        }
    }
    queries.push("a ".repeat(5000));
    queries.push("a a".repeat(3000));
    queries.push("-".repeat(9000));
    queries.push("- ".repeat(5000));
    queries.push("a-".repeat(5000));
    queries.push(format!("{}(error)", "- a ".repeat(1500)));
    agree_on(src, &queries);
}

/// Dead words (words no keyword span can reach) are passed over whole,
/// across the scan's chunk boundaries: a dead word that straddles one must
/// not leave its tail to be read as a word of its own, or `kq cat` would be
/// found in `zzzkq cat`.
#[test]
fn dead_words_across_chunk_boundaries() {
    let src = "policy \"dead\"\n\
        let w = words [\"kq cat\", \"cx\", \"kq\"]\n\
        rule w1 when hits(query, w) == 1 -> add {T}\n\
        rule w2 when hits(query, w) >= 2 -> add {G}\n\
        rule w3 when query has w -> add {V}\n\
        default {S}\n";
    let mut queries = Vec::new();
    for at in 2030..2060 {
        for (dead, tail) in [
            ("zzzkq", " cat"),
            ("zzzkq", " cx"),
            ("zz", " kq cat"),
            ("zzzzzzzzkq", " cat."),
        ] {
            let mut q = "z ".repeat(at / 2);
            q.truncate(at);
            q.push_str(dead);
            q.push_str(tail);
            queries.push(q.clone());
            q.push_str(" and more zzz words");
            queries.push(q);
        }
    }
    agree_on(src, &queries);
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
