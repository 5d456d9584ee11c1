//! An inverted index over numbered documents (each a sorted list of term
//! hashes, numbered 0, 1, … as added): per term, the documents that contain
//! it, and from their counts the idf table. T's step keys and G's relation
//! terms are kept in one.
//!
//! ```text
//! persisted state ──decode──► base: sorted keys, each key's end, one column of postings
//!                             (three little-endian arrays: read at memory speed)
//! add(doc) ──► tail: a term's whole postings, copied out of the base the first time
//!              a document after it holds the term
//! postings(term) = tail's if the term is there, else the base's (one slice either way)
//! serialize ──► base and tail merged into one sorted base
//! ```
//!
//! The postings are the same whichever part holds them (the tests build an
//! index in one go, through a persisted base and by adding documents after
//! it, and compare every term's postings and every overlap), so the
//! scores do not depend on when the index was last persisted.

use crate::text::{idf_of, overlap, weigh};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;

/// An inverted index (see the module docs). [`TermIndex::overlaps`] gives
/// every document's [`crate::text::Idf::overlap`] with a question, bit for
/// bit, reading only the postings of the question's terms.
#[derive(Debug, Clone, Default)]
pub struct TermIndex {
    docs: usize,
    /// The base's terms, increasing.
    keys: Vec<u64>,
    /// Where each key's postings end in `base`.
    ends: Vec<u32>,
    /// The base's postings, key after key, each increasing.
    base: Vec<u32>,
    /// The whole postings of each term a document added after the base
    /// holds.
    tail: HashMap<u64, Vec<u32>>,
}

impl TermIndex {
    /// Indexes documents in order.
    pub fn new<'a>(docs: impl IntoIterator<Item = &'a [u64]>) -> TermIndex {
        let mut index = TermIndex::default();
        for d in docs {
            index.add(d);
        }
        index
    }

    /// Documents indexed.
    pub fn docs(&self) -> usize {
        self.docs
    }

    /// Adds the next document (its distinct terms).
    pub fn add(&mut self, doc: &[u64]) {
        let n = u32::try_from(self.docs).unwrap_or(u32::MAX);
        self.docs += 1;
        for t in doc {
            if let Some(list) = self.tail.get_mut(t) {
                list.push(n);
            } else {
                let mut list = Vec::with_capacity(self.in_base(*t).len() + 1);
                list.extend_from_slice(self.in_base(*t));
                list.push(n);
                self.tail.insert(*t, list);
            }
        }
    }

    /// The base's postings of `term` (empty if it has none).
    fn in_base(&self, term: u64) -> &[u32] {
        let Ok(k) = self.keys.binary_search(&term) else {
            return &[];
        };
        let start = k.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.base[start..self.ends[k] as usize]
    }

    /// The documents that contain `term`, increasing.
    pub fn postings(&self, term: u64) -> &[u32] {
        match self.tail.get(&term) {
            Some(list) => list,
            None => self.in_base(term),
        }
    }

    /// The idf table of the indexed documents.
    pub fn idf(&self) -> IdfOf<'_> {
        IdfOf(self)
    }

    /// Every document's overlap with `query` (weighed by [`IdfOf::weigh`]),
    /// by document number (0 where none). Each sum adds the same terms in
    /// the same order as [`crate::text::Idf::overlap`], so the values are
    /// the same.
    pub fn overlaps(&self, query: &[(u64, f64)]) -> Vec<f64> {
        let total: f64 = query.iter().map(|(_, w)| w).sum();
        let mut got = vec![0.0; self.docs];
        if total <= 0.0 {
            return got;
        }
        for (t, w) in query {
            for &d in self.postings(*t) {
                got[d as usize] += w;
            }
        }
        for g in &mut got {
            *g /= total;
        }
        got
    }

    /// Every term with its postings, increasing by term (the base and the
    /// tail merged).
    fn merged(&self) -> Vec<(u64, &[u32])> {
        let mut terms: Vec<u64> = self.keys.clone();
        terms.extend(
            self.tail
                .keys()
                .filter(|t| self.keys.binary_search(t).is_err()),
        );
        terms.sort_unstable();
        terms.into_iter().map(|t| (t, self.postings(t))).collect()
    }
}

/// A [`TermIndex`]'s idf table: BM25's idf of each term from the number of
/// documents that hold it.
#[derive(Debug, Clone, Copy)]
pub struct IdfOf<'a>(&'a TermIndex);

impl IdfOf<'_> {
    /// The idf of a term, `ln(1 + (N - df + 0.5) / (df + 0.5))`, or 0 for a
    /// term that occurs in no document.
    pub fn idf(&self, term: u64) -> f64 {
        let df = self.0.postings(term).len();
        match u32::try_from(df) {
            Ok(0) => 0.0,
            Ok(df) => idf_of(self.0.docs, df),
            Err(_) => idf_of(self.0.docs, u32::MAX),
        }
    }

    /// The query's terms with their idf, dropping terms that occur nowhere.
    pub fn weigh(&self, query_terms: &[u64]) -> Vec<(u64, f64)> {
        weigh(query_terms, |t| self.idf(t))
    }

    /// Idf-weighted overlap of `query` with `doc` (both sorted), as
    /// [`crate::text::Idf::overlap`].
    pub fn overlap(&self, query: &[(u64, f64)], doc: &[u64]) -> f64 {
        overlap(query, doc)
    }
}

/// The persisted form: the document count and the merged base as
/// little-endian arrays.
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    docs: u64,
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    keys: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    ends: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    base: &'a [u8],
}

impl Serialize for TermIndex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let merged = self.merged();
        let keys: Vec<u64> = merged.iter().map(|(t, _)| *t).collect();
        let mut ends = Vec::with_capacity(merged.len());
        let mut base = Vec::new();
        for (_, list) in &merged {
            base.extend_from_slice(list);
            ends.push(u32::try_from(base.len()).map_err(serde::ser::Error::custom)?);
        }
        Stored {
            docs: self.docs as u64,
            keys: &crate::le::u64s_to_le(&keys),
            ends: &crate::le::u32s_to_le(&ends),
            base: &crate::le::u32s_to_le(&base),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for TermIndex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TermIndex, D::Error> {
        let s = Stored::deserialize(d)?;
        let bad = |what: &str| D::Error::custom(format!("a term index's {what}"));
        let docs = usize::try_from(s.docs).map_err(|_| bad("document count is too large"))?;
        let keys = crate::le::u64s_from_le(s.keys).ok_or_else(|| bad("keys are not whole"))?;
        let ends = crate::le::u32s_from_le(s.ends).ok_or_else(|| bad("ends are not whole"))?;
        let base = crate::le::u32s_from_le(s.base).ok_or_else(|| bad("postings are not whole"))?;
        if ends.len() != keys.len() || !keys.windows(2).all(|w| w[0] < w[1]) {
            return Err(bad("keys do not increase, one end each"));
        }
        let mut start = 0;
        for &end in &ends {
            let end = end as usize;
            let list = base
                .get(start..end)
                .ok_or_else(|| bad("ends are out of order"))?;
            let ordered = list.windows(2).all(|w| w[0] < w[1]);
            if list.is_empty() || !ordered || list.last().is_some_and(|&l| l as usize >= docs) {
                return Err(bad("postings are not increasing document numbers"));
            }
            start = end;
        }
        if start != base.len() {
            return Err(bad("postings go past the last end"));
        }
        Ok(TermIndex {
            docs,
            keys,
            ends,
            base,
            tail: HashMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::{term_hashes, Idf};
    use proptest::prelude::*;

    fn persisted(index: &TermIndex) -> TermIndex {
        postcard::from_bytes(&postcard::to_stdvec(index).unwrap()).unwrap()
    }

    /// Built in one go, each document's overlap is `Idf::overlap`'s; built
    /// in one go, or persisted after `cut` documents and added to: the same
    /// postings for every term, the same idf and overlaps, and the same
    /// persisted bytes.
    fn check(docs: &[Vec<u64>], cut: usize, queries: &[Vec<u64>]) {
        let whole = TermIndex::new(docs.iter().map(|d| d.as_slice()));
        let mut grown = persisted(&TermIndex::new(docs[..cut].iter().map(|d| d.as_slice())));
        for d in &docs[cut..] {
            grown.add(d);
        }
        let reopened = persisted(&whole);
        let idf = Idf::new(docs.iter().map(|d| d.as_slice()));
        // Built in one go: each document's overlap is `Idf::overlap`'s.
        for q in queries {
            let w = idf.weigh(q);
            let got = whole.overlaps(&w);
            for (i, d) in docs.iter().enumerate() {
                let want = idf.overlap(&w, d);
                assert_eq!(got[i] > 0.0, want > 0.0, "{q:?} / {i}");
                if want > 0.0 {
                    assert_eq!(got[i].to_bits(), want.to_bits(), "{q:?} / {i}");
                }
            }
        }
        let terms: std::collections::BTreeSet<u64> = docs.iter().flatten().copied().collect();
        for other in [&grown, &reopened] {
            assert_eq!(other.docs(), whole.docs());
            for &t in terms.iter().chain(&[u64::MAX]) {
                assert_eq!(other.postings(t), whole.postings(t));
                assert_eq!(other.idf().idf(t).to_bits(), idf.idf(t).to_bits());
            }
            for q in queries {
                let w = idf.weigh(q);
                assert_eq!(other.idf().weigh(q), w);
                let (a, b) = (other.overlaps(&w), whole.overlaps(&w));
                assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
            }
            assert_eq!(
                postcard::to_stdvec(other).unwrap(),
                postcard::to_stdvec(&whole).unwrap()
            );
        }
    }

    #[test]
    fn persisted_and_grown_answer_as_built() {
        let texts = [
            "red apple pie",
            "green apple",
            "red red wine",
            "blue sky",
            "apple wine sky",
            "red sky at night",
        ];
        let docs: Vec<Vec<u64>> = texts.iter().map(|t| term_hashes(t)).collect();
        let queries = [
            "red wine",
            "apple sky pie",
            "zebra",
            "night red",
            "green blue apple red",
        ];
        let queries: Vec<Vec<u64>> = queries.iter().map(|q| term_hashes(q)).collect();
        for cut in 0..=docs.len() {
            check(&docs, cut, &queries);
        }
    }

    #[test]
    fn a_damaged_index_is_refused() {
        let index = TermIndex::new([[1u64, 5].as_slice(), &[5, 9]]);
        let bytes = postcard::to_stdvec(&index).unwrap();
        let s: Stored<'_> = postcard::from_bytes(&bytes).unwrap();
        let encode = |docs: u64, keys: &[u64], ends: &[u32], base: &[u32]| {
            let (k, e, b) = (
                crate::le::u64s_to_le(keys),
                crate::le::u32s_to_le(ends),
                crate::le::u32s_to_le(base),
            );
            let stored = Stored {
                docs,
                keys: &k,
                ends: &e,
                base: &b,
            };
            postcard::to_stdvec(&stored).unwrap()
        };
        assert_eq!(s.docs, 2);
        assert!(postcard::from_bytes::<TermIndex>(&encode(
            2,
            &[1, 5, 9],
            &[1, 3, 4],
            &[0, 0, 1, 1]
        ))
        .is_ok());
        for bad in [
            encode(1, &[1, 5, 9], &[1, 3, 4], &[0, 0, 1, 1]),
            encode(2, &[5, 1, 9], &[1, 3, 4], &[0, 0, 1, 1]),
            encode(2, &[1, 5, 9], &[1, 3], &[0, 0, 1, 1]),
            encode(2, &[1, 5, 9], &[3, 1, 4], &[0, 0, 1, 1]),
            encode(2, &[1, 5, 9], &[1, 3, 5], &[0, 0, 1, 1]),
            encode(2, &[1, 5, 9], &[1, 3, 3], &[0, 0, 1, 1]),
            encode(2, &[1, 5, 9], &[1, 3, 4], &[0, 1, 0, 1]),
        ] {
            assert!(postcard::from_bytes::<TermIndex>(&bad).is_err());
        }
    }

    proptest! {
        #[test]
        fn any_cut_of_any_documents(
            docs in prop::collection::vec(prop::collection::btree_set(0u64..40, 0..8), 1..30),
            cut in 0usize..30,
            queries in prop::collection::vec(prop::collection::btree_set(0u64..45, 0..6), 1..5),
        ) {
            let docs: Vec<Vec<u64>> = docs.into_iter().map(|d| d.into_iter().collect()).collect();
            let queries: Vec<Vec<u64>> = queries.into_iter().map(|q| q.into_iter().collect()).collect();
            check(&docs, cut.min(docs.len()), &queries);
        }
    }
}
