//! R's BM25 index over one episode's windows, kept in memory and changed in
//! place when steps are appended.
//!
//! It scores as tantivy does (the default analyzer, k1 = 1.2, b = 0.75,
//! idf `ln(1 + (N - df + 0.5) / (df + 0.5))`, field lengths quantized to
//! tantivy's one-byte field norms, the average length from the exact token
//! total, all in `f32`), so it ranks the windows as a tantivy index of them
//! would; `reference.rs` (tests) checks that against tantivy itself. What it
//! adds is the live case: tantivy keeps a deleted document in its
//! statistics until a merge, so an index whose tail window is replaced on
//! every append would rank differently from one built in one batch; here a
//! window's postings are removed exactly, and the statistics are always
//! those of the windows as they are.
//!
//! Postings hold window numbers in increasing order, and windows only change
//! at the tail (or all at once, when the width changes), so replacing the
//! last window pops its entries from the end of each of its terms' lists.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;
use std::sync::OnceLock;
use tantivy::fieldnorm::FieldNormReader;
use tantivy::tokenizer::{TextAnalyzer, TokenizerManager};

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// Tantivy's default analyzer (simple tokenizer, tokens over 40 bytes
/// dropped, lower case), which the windows were always indexed with.
fn analyzer() -> TextAnalyzer {
    static DEFAULT: OnceLock<TextAnalyzer> = OnceLock::new();
    DEFAULT
        .get_or_init(|| {
            TokenizerManager::default()
                .get("default")
                .unwrap_or_default()
        })
        .clone()
}

/// The tokens of a text, in order, with repetitions.
pub fn tokens(text: &str) -> Vec<String> {
    let mut a = analyzer();
    let mut stream = a.token_stream(text);
    let mut out = Vec::new();
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

/// A window and a term's frequency in it.
type Posting = (u32, u32);

/// One indexed window after the base: its terms with their frequencies.
#[derive(Debug, Clone, PartialEq)]
struct Doc {
    terms: Vec<(u32, u32)>,
}

/// The windows before `docs`, frozen: the vocabulary sorted (term `k` has
/// id `k`), and each term's postings one after another. It is what a
/// persisted state holds, read back at memory speed.
#[derive(Debug, Clone, Default, PartialEq)]
struct Base {
    docs: u32,
    /// The terms, increasing, one after another.
    text: String,
    /// Where each term ends in `text`.
    term_ends: Vec<u32>,
    /// Where each term's postings end in `postings`.
    ends: Vec<u32>,
    /// (window, term frequency), windows increasing within a term.
    postings: Vec<(u32, u32)>,
}

impl Base {
    fn term(&self, k: usize) -> &str {
        let start = k.checked_sub(1).map_or(0, |p| self.term_ends[p] as usize);
        &self.text[start..self.term_ends[k] as usize]
    }

    fn id(&self, term: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0, self.term_ends.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.term(mid).cmp(term) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return u32::try_from(mid).ok(),
            }
        }
        None
    }

    fn postings(&self, id: u32) -> &[(u32, u32)] {
        let k = id as usize;
        if k >= self.ends.len() {
            return &[];
        }
        let start = k.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.postings[start..self.ends[k] as usize]
    }
}

/// The index: a frozen [`Base`] (empty unless read from a state), and the
/// windows after it, whose postings are kept per term apart.
#[derive(Debug, Clone, Default)]
pub struct Bm25 {
    base: Base,
    /// Terms not in the base, with their ids (after the base's).
    vocab: HashMap<String, u32>,
    /// Per term id: (window, term frequency) of the windows after the
    /// base, windows increasing.
    tail: HashMap<u32, Vec<(u32, u32)>>,
    /// The windows after the base.
    docs: Vec<Doc>,
    /// Every window's length.
    lens: Vec<u32>,
    total_tokens: u64,
}

impl Bm25 {
    /// Windows indexed.
    pub fn len(&self) -> usize {
        self.lens.len()
    }

    fn id(&self, term: &str) -> Option<u32> {
        self.base.id(term).or_else(|| self.vocab.get(term).copied())
    }

    /// A term's postings: the base's, then the tail's.
    fn postings(&self, id: u32) -> (&[Posting], &[Posting]) {
        let tail = self.tail.get(&id).map_or(&[][..], Vec::as_slice);
        (self.base.postings(id), tail)
    }

    /// Indexes the next window's text.
    pub fn push(&mut self, text: &str) {
        let window = u32::try_from(self.lens.len()).unwrap_or(u32::MAX);
        let mut tf: HashMap<u32, u32> = HashMap::new();
        let mut len = 0u32;
        let first_new = self.base.term_ends.len();
        for t in tokens(text) {
            len = len.saturating_add(1);
            let id = match self.base.id(&t) {
                Some(id) => id,
                None => {
                    let next = u32::try_from(first_new + self.vocab.len()).unwrap_or(u32::MAX);
                    *self.vocab.entry(t).or_insert(next)
                }
            };
            *tf.entry(id).or_insert(0) += 1;
        }
        let mut terms: Vec<(u32, u32)> = tf.into_iter().collect();
        terms.sort_unstable();
        for &(id, f) in &terms {
            self.tail.entry(id).or_default().push((window, f));
        }
        self.total_tokens += u64::from(len);
        self.lens.push(len);
        self.docs.push(Doc { terms });
    }

    /// Removes the last window.
    pub fn pop(&mut self) {
        if self.docs.is_empty() && !self.lens.is_empty() {
            self.thaw();
        }
        let Some(doc) = self.docs.pop() else {
            return;
        };
        for (id, _) in doc.terms {
            if let Some(list) = self.tail.get_mut(&id) {
                list.pop();
                if list.is_empty() {
                    self.tail.remove(&id);
                }
            }
        }
        if let Some(len) = self.lens.pop() {
            self.total_tokens -= u64::from(len);
        }
    }

    /// Keeps the first `n` windows.
    pub fn truncate(&mut self, n: usize) {
        if n == 0 {
            *self = Bm25::default();
        }
        while self.len() > n {
            self.pop();
        }
    }

    /// Moves the base into the tail (its terms keep their ids), so that
    /// its windows can be removed.
    fn thaw(&mut self) {
        let base = std::mem::take(&mut self.base);
        let mut docs = vec![Doc { terms: Vec::new() }; base.docs as usize];
        for k in 0..base.term_ends.len() {
            let id = u32::try_from(k).unwrap_or(u32::MAX);
            self.vocab.insert(base.term(k).to_string(), id);
            let list = base.postings(id);
            for &(w, f) in list {
                if let Some(d) = docs.get_mut(w as usize) {
                    d.terms.push((id, f));
                }
            }
            let tail = self.tail.entry(id).or_default();
            tail.splice(0..0, list.iter().copied());
        }
        docs.append(&mut self.docs);
        self.docs = docs;
    }

    /// The documents containing `term`.
    pub fn doc_freq(&self, term: &str) -> usize {
        self.id(term).map_or(0, |id| {
            let (base, tail) = self.postings(id);
            base.len() + tail.len()
        })
    }

    /// Every window matching any of `terms` (distinct) with its BM25 score,
    /// summed in the order of `terms`.
    pub fn scores(&self, terms: &[String]) -> HashMap<u32, f32> {
        let mut out: HashMap<u32, f32> = HashMap::new();
        let n = self.lens.len() as u64;
        if n == 0 {
            return out;
        }
        let average = self.total_tokens as f32 / n as f32;
        let mut cache = [0.0f32; 256];
        for (id, c) in cache.iter_mut().enumerate() {
            let norm = FieldNormReader::id_to_fieldnorm(id as u8) as f32;
            *c = K1 * (1.0 - B + B * norm / average);
        }
        for t in terms {
            let Some(id) = self.id(t) else {
                continue;
            };
            let (base, tail) = self.postings(id);
            let df = (base.len() + tail.len()) as u64;
            if df == 0 {
                continue;
            }
            let x = ((n - df) as f32 + 0.5) / (df as f32 + 0.5);
            let weight = (1.0 + x).ln() * (1.0 + K1);
            for &(window, f) in base.iter().chain(tail) {
                let norm_id = FieldNormReader::fieldnorm_to_id(self.lens[window as usize]);
                let f = f as f32;
                *out.entry(window).or_insert(0.0) += weight * (f / (f + cache[norm_id as usize]));
            }
        }
        out
    }

    /// Every term with its postings, increasing by term.
    fn merged(&self) -> Vec<(&str, Vec<(u32, u32)>)> {
        let base = (0..self.base.term_ends.len()).map(|k| (self.base.term(k), k as u32));
        let mut terms: Vec<(&str, u32)> = base.collect();
        terms.extend(self.vocab.iter().map(|(t, id)| (t.as_str(), *id)));
        terms.sort_unstable();
        terms
            .into_iter()
            .map(|(t, id)| {
                let (base, tail) = self.postings(id);
                (t, base.iter().chain(tail).copied().collect())
            })
            .filter(|(_, p): &(&str, Vec<_>)| !p.is_empty())
            .collect()
    }
}

impl PartialEq for Bm25 {
    /// The same windows, lengths and postings, whatever the terms' ids.
    fn eq(&self, other: &Bm25) -> bool {
        (self.lens == other.lens && self.total_tokens == other.total_tokens)
            && self.merged() == other.merged()
    }
}

/// The persisted form: every window but the last frozen as a [`Base`]
/// (little-endian arrays), and the last window's terms, so that the
/// window an append replaces is in the tail when the index is read back.
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    #[serde(borrow)]
    text: &'a str,
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    term_ends: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    ends: &'a [u8],
    /// (window, frequency) pairs, flattened.
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    postings: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    lens: &'a [u8],
    total_tokens: u64,
    #[serde(borrow)]
    last: Vec<(&'a str, u32)>,
}

impl Serialize for Bm25 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let last_window = self.lens.len().checked_sub(1).map(|w| w as u32);
        let (mut text, mut term_ends, mut ends, mut postings) =
            (String::new(), Vec::new(), Vec::new(), Vec::new());
        let mut last = Vec::new();
        let too_long = |_| serde::ser::Error::custom("an index past 4 GiB");
        for (term, list) in self.merged() {
            let (before, at_last) = match list.split_last() {
                Some((&(w, f), before)) if Some(w) == last_window => (before, Some(f)),
                _ => (list.as_slice(), None),
            };
            if let Some(f) = at_last {
                last.push((term, f));
            }
            if !before.is_empty() {
                text.push_str(term);
                term_ends.push(u32::try_from(text.len()).map_err(too_long)?);
                postings.extend(before.iter().flat_map(|&(w, f)| [w, f]));
                ends.push(u32::try_from(postings.len() / 2).map_err(too_long)?);
            }
        }
        let le = crate::le::u32s_to_le;
        Stored {
            text: &text,
            term_ends: &le(&term_ends),
            ends: &le(&ends),
            postings: &le(&postings),
            lens: &le(&self.lens),
            total_tokens: self.total_tokens,
            last,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Bm25 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bm25, D::Error> {
        let s = Stored::deserialize(d)?;
        s.open()
            .map_err(|m| D::Error::custom(format!("R's index: {m}")))
    }
}

impl Stored<'_> {
    /// The index, or what is wrong with the stored form.
    fn open(self) -> Result<Bm25, &'static str> {
        let le = crate::le::u32s_from_le;
        let whole = "an array is not whole";
        let (term_ends, ends) = (
            le(self.term_ends).ok_or(whole)?,
            le(self.ends).ok_or(whole)?,
        );
        let (flat, lens) = (le(self.postings).ok_or(whole)?, le(self.lens).ok_or(whole)?);
        if !flat.len().is_multiple_of(2) || ends.len() != term_ends.len() {
            return Err("the postings are not pairs, one list per term");
        }
        if lens.iter().map(|&l| u64::from(l)).sum::<u64>() != self.total_tokens {
            return Err("the lengths do not add up to the token total");
        }
        let docs = u32::try_from(lens.len().saturating_sub(1)).map_err(|_| "too many windows")?;
        let postings: Vec<(u32, u32)> = flat.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let base = Base {
            docs,
            text: self.text.to_string(),
            term_ends,
            ends,
            postings,
        };
        base.check()?;
        let mut index = Bm25 {
            base,
            lens,
            total_tokens: self.total_tokens,
            ..Bm25::default()
        };
        if !index.lens.is_empty() {
            // The last window, after the base's.
            let window = docs;
            let mut terms = Vec::with_capacity(self.last.len());
            for (term, f) in self.last {
                let first_new = index.base.term_ends.len();
                let id = match index.base.id(term) {
                    Some(id) => id,
                    None => {
                        let next = u32::try_from(first_new + index.vocab.len()).unwrap_or(u32::MAX);
                        if index.vocab.insert(term.to_string(), next).is_some() {
                            return Err("the last window lists a term twice");
                        }
                        next
                    }
                };
                if index.tail.insert(id, vec![(window, f)]).is_some() {
                    return Err("the last window lists a term twice");
                }
                terms.push((id, f));
            }
            terms.sort_unstable();
            index.docs.push(Doc { terms });
        } else if !self.last.is_empty() {
            return Err("terms of a window that is not there");
        }
        Ok(index)
    }
}

impl Base {
    /// Whether the frozen arrays are what [`Bm25`]'s serialization writes:
    /// terms increasing and ending at character boundaries, each with a
    /// list of increasing windows of the base.
    fn check(&self) -> Result<(), &'static str> {
        let (mut start, mut at) = (0usize, 0usize);
        let mut previous: Option<&str> = None;
        for (&term_end, &end) in self.term_ends.iter().zip(&self.ends) {
            let (term_end, end) = (term_end as usize, end as usize);
            if term_end <= start
                || !self.text.is_char_boundary(term_end)
                || term_end > self.text.len()
            {
                return Err("a term does not end where it can");
            }
            let term = &self.text[start..term_end];
            if previous.is_some_and(|p| p >= term) {
                return Err("the terms do not increase");
            }
            let list = self
                .postings
                .get(at..end)
                .ok_or("a term's postings are out of order")?;
            let ordered = list.windows(2).all(|w| w[0].0 < w[1].0);
            if list.is_empty() || !ordered || list.last().is_some_and(|p| p.0 >= self.docs) {
                return Err("a term's windows are not increasing windows of the index");
            }
            (start, at, previous) = (term_end, end, Some(term));
        }
        if start != self.text.len() || at != self.postings.len() {
            return Err("the arrays go past the last term");
        }
        Ok(())
    }
}

/// [`Bm25::canonical`]: postings by term, window lengths, token total.
#[cfg(test)]
pub(crate) type Canonical<'a> = (Vec<(&'a str, Vec<(u32, u32)>)>, Vec<u32>, u64);

#[cfg(test)]
impl Bm25 {
    /// The index with term numbering left out: each term's postings, the
    /// windows' lengths and the token total.
    pub(crate) fn canonical(&self) -> Canonical<'_> {
        (self.merged(), self.lens.clone(), self.total_tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXTS: [&str; 7] = [
        "the red apple fell",
        "a green apple and a red pear",
        "red red wine",
        "blue sky over the sea",
        "apple wine sky",
        "the sea at night",
        "night falls on the red sea",
    ];

    fn index(texts: &[&str]) -> Bm25 {
        let mut b = Bm25::default();
        texts.iter().for_each(|t| b.push(t));
        b
    }

    fn persisted(b: &Bm25) -> Bm25 {
        postcard::from_bytes(&postcard::to_stdvec(b).unwrap()).unwrap()
    }

    fn same(a: &Bm25, b: &Bm25) {
        assert_eq!(a.canonical(), b.canonical());
        for q in ["red apple", "sea night wine", "zebra", "the"] {
            let terms = tokens(q);
            let (x, y) = (a.scores(&terms), b.scores(&terms));
            assert_eq!(x.len(), y.len(), "{q}");
            for (w, s) in &x {
                assert_eq!(s.to_bits(), y[w].to_bits(), "{q} / window {w}");
            }
            for t in &terms {
                assert_eq!(a.doc_freq(t), b.doc_freq(t));
            }
        }
    }

    /// Persisted after any number of windows and then grown, with the last
    /// window replaced, or popped into the frozen part: the index of the
    /// same windows built in one go.
    #[test]
    fn persisted_grown_and_popped_index_as_built() {
        for cut in 0..=TEXTS.len() {
            let mut grown = persisted(&index(&TEXTS[..cut]));
            TEXTS[cut..].iter().for_each(|t| grown.push(t));
            same(&grown, &index(&TEXTS));
            let mut replaced = persisted(&index(&TEXTS[..cut]));
            if cut > 0 {
                replaced.pop();
                replaced.push("a window replaced at the tail");
                let mut want = index(&TEXTS[..cut - 1]);
                want.push("a window replaced at the tail");
                same(&replaced, &want);
            }
            let mut popped = persisted(&index(&TEXTS));
            popped.truncate(cut);
            same(&popped, &index(&TEXTS[..cut]));
            popped.push("red night");
            let mut want = index(&TEXTS[..cut]);
            want.push("red night");
            same(&popped, &want);
            assert_eq!(persisted(&popped), popped);
        }
    }

    #[test]
    fn a_damaged_index_is_refused() {
        let (lens, odd) = (crate::le::u32s_to_le(&[1, 2]), [0u8; 3]);
        let bytes = postcard::to_stdvec(&index(&TEXTS)).unwrap();
        let stored = || postcard::from_bytes::<Stored<'_>>(&bytes).unwrap();
        assert!(!stored().last.is_empty());
        let mut damaged = Vec::new();
        for k in 0..6 {
            let mut t = stored();
            match k {
                0 => t.total_tokens += 1,
                1 => t.lens = &lens,
                2 => t.ends = &odd,
                3 => t.text = &t.text[1..],
                4 => t.last.push(("red", 1)),
                _ => t.last.push(t.last[0]),
            }
            damaged.push(postcard::to_stdvec(&t).unwrap());
        }
        for (k, bad) in damaged.iter().enumerate() {
            assert!(postcard::from_bytes::<Bm25>(bad).is_err(), "damage {k}");
        }
    }
}
