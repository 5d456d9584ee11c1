//! Which mined words may become a keyword cue of a learned rule: words a
//! person would write in a rule, not words that only fit the split.
//!
//! A word is refused if it is
//! - a stopword of the memory's lexical scoring ([`mesa_memory::text::is_stopword`])
//!   or one of the other English function words below (`for`, `here`,
//!   `again`, ...), which the memory keeps (changing its list would change
//!   every structure's scores) but a cue must not;
//! - one of the words that describe how a question is asked rather than
//!   what it is about (`specific`, `exact`, `identify`, `explain`, ...);
//! - shorter than two characters, all digits, or not ASCII;
//! - in more than half of the questions mined (checked by the miner, which
//!   knows how many it mined).

/// English function words that [`mesa_memory::text::is_stopword`] does not
/// hold (the rest of a standard English stopword list), sorted.
const FUNCTION_WORDS: &[&str] = &[
    "above",
    "again",
    "against",
    "am",
    "below",
    "down",
    "few",
    "for",
    "further",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "isn",
    "itself",
    "let",
    "ll",
    "myself",
    "now",
    "off",
    "onto",
    "ours",
    "ourselves",
    "re",
    "s",
    "t",
    "theirs",
    "themselves",
    "upon",
    "us",
    "ve",
    "wasn",
    "whether",
    "yours",
    "yourself",
    "yourselves",
];

/// Words of how a question is phrased, not of what it asks about, sorted.
const QUESTION_WORDS: &[&str] = &[
    "based",
    "describe",
    "exact",
    "exactly",
    "explain",
    "given",
    "identify",
    "list",
    "provide",
    "specific",
    "specifically",
    "stated",
];

/// Whether `word` (lower case) may be a mined keyword cue.
pub fn is_cue_word(word: &str) -> bool {
    word.len() >= 2
        && word.is_ascii()
        && !word.bytes().all(|b| b.is_ascii_digit())
        && !mesa_memory::text::is_stopword(word)
        && FUNCTION_WORDS.binary_search(&word).is_err()
        && QUESTION_WORDS.binary_search(&word).is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_sorted_and_refuse_what_they_hold() {
        for list in [FUNCTION_WORDS, QUESTION_WORDS] {
            assert!(list.windows(2).all(|w| w[0] < w[1]), "{list:?}");
            assert!(list.iter().all(|w| !is_cue_word(w)));
        }
    }

    #[test]
    fn content_words_pass_and_function_words_do_not() {
        for w in ["button", "django", "error", "sql", "first", "door", "x2"] {
            assert!(is_cue_word(w), "{w}");
        }
        for w in ["for", "the", "in", "was", "specific", "a", "42", "é́t"] {
            assert!(!is_cue_word(w), "{w}");
        }
    }
}
