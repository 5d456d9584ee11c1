//! Generated policies and queries of a given size, for benchmarks and
//! size measurements (not part of the stable API).
//!
//! Three keyword workloads exercise the keyword scan differently:
//! - [`policy`]: `kw{i}x{j}` keywords, which share long prefixes (the
//!   original benchmark);
//! - [`english_vocabulary`]: the most frequent words and word pairs of the
//!   AMA-Bench questions, so most words of an English query are keywords;
//! - [`random_keywords`]: seeded random strings with few shared prefixes, as
//!   a user or an optimizer writes them.

/// A policy with `sets` keyword sets of `per_set` keywords (`kw{i}x{j}`),
/// `patterns` patterns and `rules` rules that use them in turn.
pub fn policy(sets: usize, per_set: usize, patterns: usize, rules: usize) -> String {
    let keywords: Vec<String> = (0..sets)
        .flat_map(|i| (0..per_set).map(move |j| format!("kw{i}x{j}")))
        .collect();
    policy_over(&keywords, sets, patterns, rules)
}

/// A policy whose `sets` keyword sets split `keywords` evenly (in order),
/// with `patterns` patterns and `rules` rules that use them in turn.
pub fn policy_over(keywords: &[String], sets: usize, patterns: usize, rules: usize) -> String {
    let mut s = String::from("policy \"bench\"\nuse std\n");
    let per_set = keywords.len().div_ceil(sets.max(1));
    for (i, chunk) in keywords.chunks(per_set.max(1)).take(sets).enumerate() {
        let words: Vec<String> = chunk.iter().map(|k| quote(k)).collect();
        s.push_str(&format!("let set{i} = words [{}]\n", words.join(", ")));
    }
    for i in 0..patterns {
        s.push_str(&format!("let pat{i} = pattern r\"\\bstep{i}\\s+\\d+\"\n"));
    }
    let masks = ["{S, T}", "{G}", "{V}", "{R}", "{S, T, R}"];
    for i in 0..rules {
        let cond = match i % 4 {
            0 if sets > 0 => format!("query has set{}", i % sets),
            1 if patterns > 0 => format!("query matches pat{}", i % patterns),
            2 => format!("domain is d{i} and preview.R.tokens > {}", i * 10),
            _ => format!("hits(query, set{}) >= 2 or size > 3", i % sets.max(1)),
        };
        let action = ["add", "remove", "add", "select"][i % 4];
        s.push_str(&format!(
            "rule r{i} when {cond} -> {action} {}\n",
            masks[i % masks.len()]
        ));
    }
    s.push_str("default {S, T, V}\n");
    s
}

/// A MESA string literal for `text`.
fn quote(text: &str) -> String {
    let mut q = String::from("\"");
    for c in text.chars() {
        match c {
            '\\' => q.push_str("\\\\"),
            '"' => q.push_str("\\\""),
            '\n' => q.push_str("\\n"),
            '\t' => q.push_str("\\t"),
            '\r' => q.push_str("\\r"),
            c if c.is_control() => q.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// English filler, repeated and cut to `len` bytes after `head`.
fn filled(head: String, len: usize) -> String {
    let filler = "the agent opened the file and then looked at the table before it moved on ";
    let mut q = head;
    while q.len() < len {
        q.push_str(filler);
    }
    cut(&mut q, len);
    q
}

/// Truncates to at most `len` bytes, on a character boundary.
fn cut(s: &mut String, len: usize) {
    let mut at = len.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    s.truncate(at);
}

/// A query of `len` bytes with a few keywords from [`policy`] in it.
pub fn query(len: usize) -> String {
    filled(
        "Why did the agent fail at step3 12 after kw7x3 and kw19x24 were seen; ".into(),
        len,
    )
}

/// A query of `len` bytes: English filler with three of `keywords` (the 8th,
/// the middle one and the last) near the start and a step reference.
pub fn query_with(keywords: &[String], len: usize) -> String {
    let pick = |i: usize| keywords.get(i).map_or("", String::as_str);
    filled(
        format!(
            "Why did the agent fail at step3 12 after {} and {} were seen, then {}; ",
            pick(7),
            pick(keywords.len() / 2),
            pick(keywords.len().saturating_sub(1)),
        ),
        len,
    )
}

/// One keyword workload of the benchmarks: its keywords and its queries.
#[derive(Debug, Clone)]
pub struct Workload {
    /// A short name for reports ("generated", "English", "random").
    pub name: &'static str,
    /// The distinct keywords, in the order [`policy_over`] splits them.
    pub keywords: Vec<String>,
    /// Text queries are cut from; `None` for English filler with keywords.
    text: Option<String>,
}

impl Workload {
    /// A policy over the workload's keywords (see [`policy_over`]).
    pub fn policy(&self, sets: usize, patterns: usize, rules: usize) -> String {
        policy_over(&self.keywords, sets, patterns, rules)
    }

    /// A query of `len` bytes.
    pub fn query(&self, len: usize) -> String {
        match &self.text {
            Some(text) => {
                let mut q = text.repeat(len / text.len().max(1) + 1);
                cut(&mut q, len);
                q
            }
            None => query_with(&self.keywords, len),
        }
    }
}

/// The three keyword workloads, 500 keywords each: `kw{i}x{j}` (generated,
/// with the queries of [`query`]), the AMA-Bench vocabulary with AMA-Bench
/// questions as queries (when the dataset is at `../shared/data/ama-bench`;
/// English filler with keywords otherwise), and [`random_keywords`] with
/// seed 7.
pub fn workloads() -> Vec<Workload> {
    let generated: Vec<String> = (0..20)
        .flat_map(|i| (0..25).map(move |j| format!("kw{i}x{j}")))
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let questions =
        std::fs::read_to_string(root.join("../../shared/data/ama-bench/open_end_qa_set.jsonl"))
            .map(|jsonl| ama_questions(&jsonl))
            .unwrap_or_default();
    // Every 97th question, for a mix of domains.
    let sample: Vec<&str> = questions.iter().step_by(97).map(String::as_str).collect();
    vec![
        Workload {
            name: "generated",
            keywords: generated,
            text: Some(query(4096)),
        },
        Workload {
            name: "English",
            keywords: english_vocabulary(),
            text: (!sample.is_empty()).then(|| sample.join(" ") + " "),
        },
        Workload {
            name: "random",
            keywords: random_keywords(500, 7),
            text: None,
        },
    ]
}

/// A small deterministic generator (xorshift64*), so that workloads are the
/// same on every run and machine.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed (any value; 0 is replaced).
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number below `n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}

/// `n` distinct random keywords from `seed`: lower-case words of 3 to 10
/// letters (one in eight with a digit), one in five a two-word phrase and one
/// in twenty hyphenated. Random first letters mean few shared prefixes.
pub fn random_keywords(n: usize, seed: u64) -> Vec<String> {
    let mut rng = Rng::new(seed);
    let word = |rng: &mut Rng| -> String {
        let len = 3 + rng.below(8);
        let mut w: String = (0..len)
            .map(|_| (b'a' + rng.below(26) as u8) as char)
            .collect();
        if rng.below(8) == 0 {
            w.push((b'0' + rng.below(10) as u8) as char);
        }
        w
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let k = match rng.below(20) {
            0..=3 => format!("{} {}", word(&mut rng), word(&mut rng)),
            4 => format!("{}-{}", word(&mut rng), word(&mut rng)),
            _ => word(&mut rng),
        };
        if seen.insert(k.clone()) {
            out.push(k);
        }
    }
    out
}

/// The English keyword workload: the 350 most frequent words and the 150
/// most frequent word pairs of the AMA-Bench questions, as mined by
/// [`mine_vocabulary`] into `benches/data/ama_vocab.txt` (the test
/// `vocabulary_file_is_mined_from_ama_bench` regenerates and checks it).
pub fn english_vocabulary() -> Vec<String> {
    include_str!("../benches/data/ama_vocab.txt")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// The questions of an AMA-Bench JSONL file (`qa_pairs[].question` of every
/// episode, in file order); lines that do not parse are skipped.
pub fn ama_questions(jsonl: &str) -> Vec<String> {
    jsonl
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .flat_map(|episode| {
            episode["qa_pairs"]
                .as_array()
                .map(|pairs| {
                    pairs
                        .iter()
                        .filter_map(|p| p["question"].as_str().map(String::from))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// The `words` most frequent words and `pairs` most frequent pairs of
/// adjacent words in `questions`. A word is a run of ASCII letters of at
/// least two (lower-cased); a pair is two words separated by whitespace only.
/// Ties are broken alphabetically, so the result is deterministic.
pub fn mine_vocabulary(questions: &[String], words: usize, pairs: usize) -> Vec<String> {
    use std::collections::HashMap;
    let mut single: HashMap<String, usize> = HashMap::new();
    let mut double: HashMap<String, usize> = HashMap::new();
    for q in questions {
        // Tokens are letter runs; a pair only forms across plain whitespace.
        let mut prev: Option<String> = None;
        let mut current = String::new();
        let mut gap_is_space = true;
        for c in q.chars().chain(std::iter::once('\0')) {
            if c.is_ascii_alphabetic() {
                current.push(c.to_ascii_lowercase());
                continue;
            }
            if !current.is_empty() {
                let w = std::mem::take(&mut current);
                if w.len() >= 2 {
                    *single.entry(w.clone()).or_default() += 1;
                    if let (Some(p), true) = (&prev, gap_is_space) {
                        *double.entry(format!("{p} {w}")).or_default() += 1;
                    }
                    prev = Some(w);
                } else {
                    prev = None;
                }
                gap_is_space = true;
            }
            if !c.is_ascii_whitespace() {
                // Punctuation, digits or other characters break a pair.
                gap_is_space = false;
                prev = None;
            }
        }
    }
    let top = |map: HashMap<String, usize>, n: usize| {
        let mut v: Vec<(String, usize)> = map.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        v.into_iter().take(n).map(|(w, _)| w)
    };
    top(single, words).chain(top(double, pairs)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workloads_check() {
        for keywords in [random_keywords(500, 7), english_vocabulary()] {
            assert_eq!(keywords.len(), 500);
            let src = policy_over(&keywords, 20, 10, 200);
            let checked = crate::check(&src);
            assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
            assert_eq!(query_with(&keywords, 200).len(), 200);
        }
        assert_eq!(policy(2, 3, 0, 1), {
            let k: Vec<String> = ["kw0x0", "kw0x1", "kw0x2", "kw1x0", "kw1x1", "kw1x2"]
                .iter()
                .map(|s| s.to_string())
                .collect();
            policy_over(&k, 2, 0, 1)
        });
    }

    #[test]
    fn mining_counts_words_and_whitespace_pairs() {
        let qs = vec!["Why did it fail? Why, it did.".to_string()];
        let v = mine_vocabulary(&qs, 3, 2);
        assert_eq!(v, vec!["did", "it", "why", "did it", "it did"]);
    }

    /// The committed vocabulary is what [`mine_vocabulary`] gives for the
    /// AMA-Bench questions. With `MESA_WRITE_VOCAB=1` the test rewrites the
    /// file; without the dataset (outside the project's machines) it skips.
    #[test]
    fn vocabulary_file_is_mined_from_ama_bench() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let dataset = root.join("../../shared/data/ama-bench/open_end_qa_set.jsonl");
        let Ok(jsonl) = std::fs::read_to_string(&dataset) else {
            eprintln!("skipped: {} not found", dataset.display());
            return;
        };
        let mined = mine_vocabulary(&ama_questions(&jsonl), 350, 150);
        let file = root.join("benches/data/ama_vocab.txt");
        if std::env::var_os("MESA_WRITE_VOCAB").is_some() {
            let text = format!(
                "# The 350 most frequent words and 150 most frequent word pairs of the\n\
                 # AMA-Bench questions (synthetic::mine_vocabulary). Regenerate with\n\
                 # MESA_WRITE_VOCAB=1 cargo test -p mesa-compiler vocabulary_file\n{}\n",
                mined.join("\n")
            );
            std::fs::write(&file, text).expect("writes the vocabulary");
        }
        assert_eq!(english_vocabulary(), mined);
    }
}
