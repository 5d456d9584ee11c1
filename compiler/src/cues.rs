//! The exact matching rules for keywords and patterns.
//!
//! Keywords match whole words, ASCII case-insensitively; a space in a keyword
//! stands for a run of whitespace. Concretely, the subject text is
//! *normalized* (ASCII letters lower-cased, each run of whitespace turned into
//! one space) and a keyword occurrence counts when the bytes just before and
//! just after it are not word bytes. Word bytes are ASCII letters, digits,
//! `_`, and every byte of a non-ASCII character, so `caf` does not match in
//! `café`. Whitespace is ASCII space, tab, line feed, form feed and carriage
//! return.
//!
//! Patterns are Rust `regex` syntax searched anywhere in the raw subject
//! bytes, in ASCII mode: `\d`, `\w`, `\s`, `\b` and `(?i)` are ASCII-only
//! unless a pattern turns Unicode on with `(?u)`.

/// Whether `b` is part of a word for keyword boundaries.
pub fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Whether `b` is whitespace for keyword matching and word counting.
pub fn is_space(b: u8) -> bool {
    b.is_ascii_whitespace()
}

/// A byte as keyword matching sees it: ASCII lower case, whitespace as a
/// space (a run of which [`normalize_into`] then collapses to one).
pub fn normalize_byte(b: u8) -> u8 {
    if is_space(b) {
        b' '
    } else {
        b.to_ascii_lowercase()
    }
}

/// Writes the normalized form of `text` into `out` (cleared first).
pub fn normalize_into(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let mut in_space = false;
    for &b in text {
        if is_space(b) {
            if !in_space {
                out.push(b' ');
            }
            in_space = true;
        } else {
            out.push(normalize_byte(b));
            in_space = false;
        }
    }
}

/// A keyword as matched: normalized and trimmed. Empty means invalid.
pub fn normalize_keyword(keyword: &str) -> String {
    let mut out = Vec::with_capacity(keyword.len());
    normalize_into(
        keyword
            .trim_matches(|c: char| c.is_ascii_whitespace())
            .as_bytes(),
        &mut out,
    );
    // Only ASCII bytes were changed, so the result is still UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// Whether an occurrence at `start..end` of normalized `text` is a whole word.
pub fn at_word_boundaries(text: &[u8], start: usize, end: usize) -> bool {
    (start == 0 || !is_word_byte(text[start - 1]))
        && (end >= text.len() || !is_word_byte(text[end]))
}

/// The number of words: maximal runs of non-whitespace bytes.
pub fn word_count(text: &[u8]) -> usize {
    let mut count = 0;
    let mut in_word = false;
    for &b in text {
        let space = is_space(b);
        if !space && !in_word {
            count += 1;
        }
        in_word = !space;
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalization() {
        let mut out = Vec::new();
        normalize_into(b"Why  DID\t\nit FAIL?", &mut out);
        assert_eq!(out, b"why did it fail?");
        assert_eq!(normalize_keyword("  Led \t To "), "led to");
        assert_eq!(normalize_keyword(" \t "), "");
    }

    #[test]
    fn boundaries() {
        let t = b"errors error caf\xc3\xa9";
        assert!(!at_word_boundaries(t, 0, 5));
        assert!(at_word_boundaries(t, 7, 12));
        assert!(!at_word_boundaries(t, 13, 16));
    }

    #[test]
    fn words() {
        assert_eq!(word_count(b""), 0);
        assert_eq!(word_count(b"  a bb\tc\n"), 3);
    }
}

/// Longest pattern source accepted, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;
/// Largest compiled regex program accepted, in bytes (the `regex` size limit).
pub const MAX_PATTERN_PROGRAM_BYTES: usize = 1 << 20;

/// Compiles a pattern exactly as the interpreter runs it.
pub fn build_regex(source: &str) -> Result<regex::bytes::Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(source)
        .unicode(false)
        .size_limit(MAX_PATTERN_PROGRAM_BYTES)
        .build()
}

/// Why a pattern is rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternProblem {
    /// Longer than [`MAX_PATTERN_BYTES`].
    TooLong(usize),
    /// Not valid regex syntax (the regex crate's message).
    Syntax(String),
    /// Uses something a DFA cannot run (e.g. a Unicode word boundary).
    NotDfa(String),
    /// The compiled program exceeds [`MAX_PATTERN_PROGRAM_BYTES`].
    TooBig,
}

/// Checks that a pattern is valid and DFA-compatible.
///
/// Results are cached for the process (the optimizer checks many candidates
/// that share patterns); [`clear_pattern_cache`] empties the cache.
pub fn validate_pattern(source: &str) -> Result<(), PatternProblem> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<String, Result<(), PatternProblem>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if CLEAR.swap(false, std::sync::atomic::Ordering::Relaxed) {
        if let Ok(mut map) = cache.lock() {
            map.clear();
        }
    }
    if let Some(hit) = cache.lock().ok().and_then(|map| map.get(source).cloned()) {
        return hit;
    }
    let result = validate_pattern_uncached(source);
    if let Ok(mut map) = cache.lock() {
        // Bound the memory: start over rather than grow without limit.
        if map.len() >= 4096 {
            map.clear();
        }
        map.insert(source.to_string(), result.clone());
    }
    result
}

static CLEAR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Empties the pattern-validation cache (benchmarks use it to measure a cold check).
pub fn clear_pattern_cache() {
    CLEAR.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn validate_pattern_uncached(source: &str) -> Result<(), PatternProblem> {
    if source.len() > MAX_PATTERN_BYTES {
        return Err(PatternProblem::TooLong(source.len()));
    }
    match build_regex(source) {
        Ok(_) => {}
        Err(regex::Error::CompiledTooBig(_)) => return Err(PatternProblem::TooBig),
        Err(e) => return Err(PatternProblem::Syntax(e.to_string())),
    }
    // The lazy DFA accepts exactly what a DFA can run; building it does not
    // determinize anything yet, so this is cheap.
    use regex_automata::{hybrid::dfa::DFA, nfa::thompson, util::syntax};
    DFA::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .thompson(thompson::Config::new().nfa_size_limit(Some(MAX_PATTERN_PROGRAM_BYTES)))
        .build(source)
        .map(|_| ())
        .map_err(|e| PatternProblem::NotDfa(e.to_string()))
}

#[cfg(test)]
mod pattern_tests {
    use super::*;

    #[test]
    fn patterns_are_ascii_and_dfa_compatible() {
        assert_eq!(validate_pattern(r"\bstep\s+\d+"), Ok(()));
        assert!(matches!(
            validate_pattern("("),
            Err(PatternProblem::Syntax(_))
        ));
        assert!(matches!(
            validate_pattern(r"(?u:\b)x"),
            Err(PatternProblem::NotDfa(_))
        ));
        assert!(matches!(
            validate_pattern(&"a".repeat(2000)),
            Err(PatternProblem::TooLong(2000))
        ));
        assert!(matches!(
            validate_pattern(r"(?u:\w){1000}"),
            Err(PatternProblem::TooBig)
        ));
        let re = build_regex(r"\d").unwrap();
        // ASCII mode: an Arabic-Indic digit is not \d.
        assert!(!re.is_match("٣".as_bytes()));
    }
}

/// The matching rules by brute force, for tests of every scanner: for each
/// (normalized) keyword, whether it occurs in `text` between word boundaries.
#[cfg(test)]
pub(crate) fn naive_keyword_matches(keywords: &[String], text: &[u8]) -> Vec<bool> {
    let mut norm = Vec::new();
    normalize_into(text, &mut norm);
    keywords
        .iter()
        .map(|k| {
            let k = k.as_bytes();
            (0..norm.len())
                .filter(|&i| norm[i..].starts_with(k))
                .any(|i| at_word_boundaries(&norm, i, i + k.len()))
        })
        .collect()
}
