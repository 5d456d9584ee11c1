//! Differential tests of the keyword scans: word hashing and the automaton,
//! dense and sparse, must count exactly the hits the interpreter counts, for
//! random keyword sets of every shape, words whose hashes collide, and texts
//! whose matches straddle the scan's chunk boundaries.

mod common;

use common::{agree_on, agree_on_inputs, policies, SCHEMES};
use mesa_compiler::Input;
use proptest::prelude::*;

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
