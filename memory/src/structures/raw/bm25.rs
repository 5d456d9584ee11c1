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

/// One indexed window: its terms with their frequencies, and its length.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
struct Doc {
    terms: Vec<(u32, u32)>,
    len: u32,
}

/// The index.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Bm25 {
    vocab: HashMap<String, u32>,
    /// Per term: (window, term frequency), windows increasing.
    postings: Vec<Vec<(u32, u32)>>,
    docs: Vec<Doc>,
    total_tokens: u64,
}

impl Bm25 {
    /// Windows indexed.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Indexes the next window's text.
    pub fn push(&mut self, text: &str) {
        let window = u32::try_from(self.docs.len()).unwrap_or(u32::MAX);
        let mut tf: HashMap<u32, u32> = HashMap::new();
        let mut len = 0u32;
        for t in tokens(text) {
            len = len.saturating_add(1);
            let next = u32::try_from(self.vocab.len()).unwrap_or(u32::MAX);
            let id = *self.vocab.entry(t).or_insert(next);
            if id as usize == self.postings.len() {
                self.postings.push(Vec::new());
            }
            *tf.entry(id).or_insert(0) += 1;
        }
        let mut terms: Vec<(u32, u32)> = tf.into_iter().collect();
        terms.sort_unstable();
        for &(id, f) in &terms {
            self.postings[id as usize].push((window, f));
        }
        self.total_tokens += u64::from(len);
        self.docs.push(Doc { terms, len });
    }

    /// Removes the last window.
    pub fn pop(&mut self) {
        let Some(doc) = self.docs.pop() else {
            return;
        };
        for (id, _) in doc.terms {
            self.postings[id as usize].pop();
        }
        self.total_tokens -= u64::from(doc.len);
    }

    /// The documents containing `term`.
    pub fn doc_freq(&self, term: &str) -> usize {
        self.vocab
            .get(term)
            .map_or(0, |&id| self.postings[id as usize].len())
    }

    /// Every window matching any of `terms` (distinct) with its BM25 score,
    /// summed in the order of `terms`.
    pub fn scores(&self, terms: &[String]) -> HashMap<u32, f32> {
        let mut out: HashMap<u32, f32> = HashMap::new();
        let n = self.docs.len() as u64;
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
            let Some(&id) = self.vocab.get(t) else {
                continue;
            };
            let list = &self.postings[id as usize];
            if list.is_empty() {
                continue;
            }
            let df = list.len() as u64;
            let x = ((n - df) as f32 + 0.5) / (df as f32 + 0.5);
            let weight = (1.0 + x).ln() * (1.0 + K1);
            for &(window, f) in list {
                let norm_id = FieldNormReader::fieldnorm_to_id(self.docs[window as usize].len);
                let f = f as f32;
                *out.entry(window).or_insert(0.0) += weight * (f / (f + cache[norm_id as usize]));
            }
        }
        out
    }
}

/// [`Bm25::canonical`]: postings by term, window lengths, token total.
#[cfg(test)]
pub(crate) type Canonical<'a> = (
    std::collections::BTreeMap<&'a str, &'a [(u32, u32)]>,
    Vec<u32>,
    u64,
);

#[cfg(test)]
impl Bm25 {
    /// The index with term numbering left out: each term's postings, the
    /// windows' lengths and the token total.
    pub(crate) fn canonical(&self) -> Canonical<'_> {
        let terms = self
            .vocab
            .iter()
            .map(|(t, id)| (t.as_str(), self.postings[*id as usize].as_slice()))
            .filter(|(_, p)| !p.is_empty())
            .collect();
        let lens = self.docs.iter().map(|d| d.len).collect();
        (terms, lens, self.total_tokens)
    }
}
