//! Small text helpers shared by the structures: word terms, a stable hash,
//! cutting at a character boundary, and an idf table for lexical scores.

use std::collections::HashMap;

/// Words too common to carry meaning in a lexical match.
const STOPWORDS: &[&str] = &[
    "a", "about", "after", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been",
    "before", "being", "between", "both", "but", "by", "can", "could", "did", "do", "does",
    "doing", "during", "each", "from", "had", "has", "have", "having", "he", "her", "his", "how",
    "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor",
    "not", "of", "on", "once", "only", "or", "other", "our", "out", "over", "own", "same", "she",
    "should", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will",
    "with", "would", "you", "your",
];

/// Whether `ends` cut `text` into consecutive pieces, one after another
/// (the stored form of a list of strings kept in one buffer): each end at
/// least the one before and on a character boundary, the last at the
/// text's end (an empty text when there are none).
pub fn cuts_whole(text: &str, ends: &[usize]) -> bool {
    let mut start = 0;
    for &end in ends {
        if end < start || !text.is_char_boundary(end) {
            return false;
        }
        start = end;
    }
    start == text.len()
}

/// Whether `word` (lower case) is a stopword.
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// The lower-case words of `text`: maximal runs of alphanumeric characters
/// or `_`, in order, with repetitions.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
}

/// The distinct content terms of `text` (words minus stopwords), as stable
/// hashes, sorted.
pub fn term_hashes(text: &str) -> Vec<u64> {
    let mut out: Vec<u64> = words(text)
        .filter(|w| !is_stopword(w))
        .map(|w| hash(w.as_bytes()))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// FNV-1a, 64 bits: stable across runs, platforms and versions (unlike
/// `std`'s hasher), so hashes may be stored.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The longest prefix of `text` of at most `max_bytes` bytes that ends on a
/// character boundary, and whether anything was cut.
pub fn cut(text: &str, max_bytes: usize) -> (&str, bool) {
    if text.len() <= max_bytes {
        return (text, false);
    }
    let mut end = max_bytes;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// `text` cut to `max_bytes` with a visible marker saying how much was left out.
pub fn cut_marked(text: &str, max_bytes: usize) -> String {
    let (head, was_cut) = cut(text, max_bytes);
    if was_cut {
        format!("{head} […{} more bytes cut]", text.len() - head.len())
    } else {
        head.to_string()
    }
}

/// Whether two sorted hash lists share an element.
pub fn intersects(a: &[u64], b: &[u64]) -> bool {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// Inverse document frequencies over a set of documents (each a sorted list
/// of term hashes), for idf-weighted overlap scores.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Idf {
    docs: usize,
    df: HashMap<u64, u32>,
}

impl Idf {
    /// Counts document frequencies.
    pub fn new<'a>(docs: impl IntoIterator<Item = &'a [u64]>) -> Idf {
        let mut df: HashMap<u64, u32> = HashMap::new();
        let mut n = 0;
        for d in docs {
            n += 1;
            for t in d {
                *df.entry(*t).or_insert(0) += 1;
            }
        }
        Idf { docs: n, df }
    }

    /// Counts one more document (its distinct terms).
    pub fn add(&mut self, doc: &[u64]) {
        self.docs += 1;
        for t in doc {
            *self.df.entry(*t).or_insert(0) += 1;
        }
    }

    /// The idf of a term, `ln(1 + (N - df + 0.5) / (df + 0.5))` (BM25's), or
    /// 0 for a term that occurs in no document.
    pub fn idf(&self, term: u64) -> f64 {
        self.df.get(&term).map_or(0.0, |&df| idf_of(self.docs, df))
    }

    /// Idf-weighted overlap of `query` with `doc` (both sorted), divided by
    /// the idf mass of the query terms that occur anywhere: in [0, 1].
    pub fn overlap(&self, query: &[(u64, f64)], doc: &[u64]) -> f64 {
        overlap(query, doc)
    }

    /// The query's terms with their idf, dropping terms that occur nowhere.
    pub fn weigh(&self, query_terms: &[u64]) -> Vec<(u64, f64)> {
        weigh(query_terms, |t| self.idf(t))
    }
}

/// BM25's idf of a term in `df` of `docs` documents (`df` > 0).
pub fn idf_of(docs: usize, df: u32) -> f64 {
    let (n, df) = (docs as f64, f64::from(df));
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// [`Idf::overlap`], for any idf table.
pub(crate) fn overlap(query: &[(u64, f64)], doc: &[u64]) -> f64 {
    let total: f64 = query.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return 0.0;
    }
    let got: f64 = query
        .iter()
        .filter(|(t, _)| doc.binary_search(t).is_ok())
        .map(|(_, w)| w)
        .sum();
    got / total
}

/// [`Idf::weigh`], for any idf table.
pub(crate) fn weigh(query_terms: &[u64], idf: impl Fn(u64) -> f64) -> Vec<(u64, f64)> {
    query_terms
        .iter()
        .map(|t| (*t, idf(*t)))
        .filter(|(_, w)| *w > 0.0)
        .collect()
}

pub use crate::term_index::{IdfOf, TermIndex};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_cut_whole_only_in_order_on_boundaries_to_the_end() {
        assert!(cuts_whole("", &[]));
        assert!(cuts_whole("aöb", &[1, 1, 4]));
        for ends in [&[1, 2][..], &[2, 1, 4], &[1, 3], &[1, 5], &[]] {
            assert!(!cuts_whole("aöb", ends), "{ends:?}");
        }
    }

    #[test]
    fn stopwords_sorted() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("the") && !is_stopword("table"));
    }

    #[test]
    fn words_and_terms() {
        let w: Vec<String> = words("Click [5023] on `Foo_bar`, étage 2!").collect();
        assert_eq!(w, ["click", "5023", "on", "foo_bar", "étage", "2"]);
        assert_eq!(term_hashes("the table THE Table"), vec![hash(b"table")]);
    }

    #[test]
    fn cutting() {
        assert_eq!(cut("héllo", 2), ("h", true));
        assert_eq!(cut("héllo", 3), ("hé", true));
        assert_eq!(cut("abc", 3), ("abc", false));
        assert_eq!(cut_marked("abcdef", 2), "ab […4 more bytes cut]");
    }

    #[test]
    fn idf_overlap() {
        let docs = [term_hashes("red apple"), term_hashes("green apple")];
        let idf = Idf::new(docs.iter().map(|d| d.as_slice()));
        assert!(idf.idf(hash(b"red")) > idf.idf(hash(b"apple")));
        assert_eq!(idf.idf(hash(b"blue")), 0.0);
        let q = idf.weigh(&term_hashes("red blue"));
        assert_eq!(q.len(), 1);
        assert_eq!(idf.overlap(&q, &docs[0]), 1.0);
        assert_eq!(idf.overlap(&q, &docs[1]), 0.0);
    }
}
