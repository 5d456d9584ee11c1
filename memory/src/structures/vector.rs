//! V: one L2-normalized embedding per step (of the step's evidence text).
//!
//! The built-in [`HashEmbedder`] needs no weights: the text's lower-case word
//! unigrams (weight 1), word bigrams (0.5) and the character trigrams of each
//! word with boundary marks (0.25) are hashed (FNV-1a) into `dim` buckets
//! (384 by default) with a sign from the hash (signed hashing), each with
//! sublinear term frequency `1 + ln(tf)`, and the vector is L2-normalized.
//! Other embedders (a sentence model, an OpenAI-compatible endpoint) plug in
//! through [`Embedder`].
//!
//! Access: the top-k steps (default 5) by cosine similarity, best first;
//! the search is exact up to `Config::vector_hnsw_threshold` steps
//! (100,000), and at every length for hashed vectors
//! ([`Embedder::hashed`]: the built-in embedder's): every row is
//! scored from its 8-bit codes and only the rows that can still reach the
//! top k are scored again in `f32` ([`super::quant`]), which returns
//! exactly the full scan's answer. A persisted state holds the built-in
//! embedder's codes only, not its `f32` rows, so an opening reads half the
//! bytes it would: a V opened from it makes a rescored row again from its
//! step's text, which gives the same floats, and keeps it for the next
//! question ([`Rows::Remade`]). A V built from its steps keeps its rows
//! ([`Rows::Kept`]), as does one of another embedder, whose rows cost a
//! model or an endpoint call.
//! Beyond the threshold it is approximate, with
//! hnsw_rs (M = 16, ef_construction = 200, ef_search = max(200, 8k)) whose
//! candidates are re-scored exactly. The HNSW graph is built on the first
//! question for such an episode, from the stored vectors, unless its owner
//! asks for it in the background ([`Vector::index_in_background`]: loaded
//! from a saved dump if one fits, see [`super::ann`]). Score = the cosine,
//! clamped to `[0, 1]`; `hits` = returned steps with a positive cosine.

use super::ann::{self, Ann, AnnFile, AnnSource};
use super::quant::{Codes, Layout};
use super::{Evidence, MemoryStructure, PluginError, Query, RetrieveError, StepTexts};
use crate::config::Config;
use crate::text::{cut, hash, words};
use mesa_core::Structure;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Turns texts into vectors.
pub trait Embedder: Send + Sync {
    /// A name recorded in a store's manifest, e.g. `hash-v1-384`; a store is
    /// only opened with an embedder of the same name.
    fn name(&self) -> String;
    /// The vectors' dimension.
    fn dim(&self) -> usize;
    /// One vector per text (they need not be normalized).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError>;
    /// Whether these are feature-hashed vectors, like the built-in
    /// embedder's (default: no, dense vectors). V treats the two apart:
    ///
    /// - hashed vectors are scanned exactly at every length: HNSW's greedy
    ///   search misses more of their nearest rows the longer the episode
    ///   (at 100,000 steps it found 69% of the exact top 5 at the search
    ///   width V uses, and 89% at four times that width, as slow as the
    ///   exact scan); dense vectors switch to HNSW past
    ///   `Config::vector_hnsw_threshold` steps;
    /// - hashed vectors' codes are kept by dimension (a question's hashed
    ///   vector has under half of its values nonzero, and only those
    ///   dimensions are read); dense vectors' row by row, which is faster
    ///   when a question uses every dimension.
    ///
    /// docs/BENCHMARKS.md, "V: HNSW on hashed vectors" and "V's codes kept
    /// by dimension", has the measurements.
    fn hashed(&self) -> bool {
        false
    }
}

/// The built-in deterministic embedder (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashEmbedder {
    dim: usize,
}

impl HashEmbedder {
    /// An embedder into `dim` dimensions (at least 1).
    pub fn new(dim: usize) -> HashEmbedder {
        HashEmbedder { dim: dim.max(1) }
    }
}

impl Default for HashEmbedder {
    /// 384 dimensions.
    fn default() -> Self {
        HashEmbedder::new(384)
    }
}

/// Bytes of text an embedding reads.
const EMBED_BYTES: usize = 16 * 1024;

impl HashEmbedder {
    fn one(&self, text: &str) -> Vec<f32> {
        let text = cut(text, EMBED_BYTES).0;
        let mut tf: HashMap<u64, (f32, f32)> = HashMap::new();
        let mut add = |key: u64, weight: f32| {
            tf.entry(key).or_insert((0.0, weight)).0 += 1.0;
        };
        let ws: Vec<String> = words(text).collect();
        for (i, w) in ws.iter().enumerate() {
            add(hash(w.as_bytes()), 1.0);
            if let Some(next) = ws.get(i + 1) {
                add(hash(format!("{w} {next}").as_bytes()) ^ 0xb1, 0.5);
            }
            let marked: Vec<char> = std::iter::once('^')
                .chain(w.chars())
                .chain(std::iter::once('$'))
                .collect();
            if marked.len() > 3 {
                for g in marked.windows(3) {
                    let s: String = g.iter().collect();
                    add(hash(s.as_bytes()) ^ 0x7c3, 0.25);
                }
            }
        }
        let mut v = vec![0.0f32; self.dim];
        let mut keys: Vec<(&u64, &(f32, f32))> = tf.iter().collect();
        keys.sort_unstable_by_key(|(k, _)| **k);
        for (k, (count, weight)) in keys {
            let h = k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let bucket = (h % self.dim as u64) as usize;
            let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
            v[bucket] += sign * weight * (1.0 + count.ln());
        }
        v
    }
}

impl Embedder for HashEmbedder {
    fn name(&self) -> String {
        format!("hash-v1-{}", self.dim)
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError> {
        Ok(texts.iter().map(|t| self.one(t)).collect())
    }

    /// Yes (see [`Embedder::hashed`]).
    fn hashed(&self) -> bool {
        true
    }
}

/// Scales `v` to unit length (a zero vector stays zero).
pub fn normalize(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter_mut().for_each(|x| *x /= norm);
    } else {
        v.iter_mut().for_each(|x| *x = 0.0);
    }
}

/// Every step's text embedded (in batches of 64) and normalized, one
/// `dim`-float row per step.
pub fn embed_all(steps: &StepTexts, embedder: &dyn Embedder) -> Result<Vec<f32>, PluginError> {
    let mut data = Vec::with_capacity(steps.len() * embedder.dim());
    let all: Vec<&str> = steps.texts().collect();
    for texts in all.chunks(64) {
        let vs = embedder.embed(texts)?;
        check(embedder, &vs, texts.len())?;
        for mut v in vs {
            normalize(&mut v);
            data.extend_from_slice(&v);
        }
    }
    Ok(data)
}

fn check(embedder: &dyn Embedder, got: &[Vec<f32>], want: usize) -> Result<(), PluginError> {
    let bad = |message: String| PluginError::BadOutput {
        plugin: embedder.name(),
        message,
    };
    if got.len() != want {
        return Err(bad(format!("{} vectors for {want} texts", got.len())));
    }
    if let Some(v) = got.iter().find(|v| v.len() != embedder.dim()) {
        return Err(bad(format!(
            "a vector of dimension {}, expected {}",
            v.len(),
            embedder.dim()
        )));
    }
    Ok(())
}

/// Embeds one text, normalized.
pub(crate) fn embed_one(embedder: &dyn Embedder, text: &str) -> Result<Vec<f32>, PluginError> {
    let mut out = embedder.embed(&[text])?;
    check(embedder, &out, 1)?;
    let mut v = out.pop().unwrap_or_default();
    normalize(&mut v);
    Ok(v)
}

/// The dot product, summed in eight lanes (so the compiler vectorizes it;
/// the order of the additions is fixed, so the result is deterministic).
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            lanes[k] += x[k] * y[k];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// The `k` best of `scored` (position, cosine), best first, ties by
/// position: the same as sorting all of them and keeping `k`, in time
/// linear in their number.
fn top_k(mut scored: Vec<(usize, f32)>, k: usize) -> Vec<(usize, f32)> {
    super::top(&mut scored, k, |a, b| {
        b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
    });
    scored
}

/// The background half of [`Vector::index_in_background`]: the graph over
/// `data` (`dim` values a row), loaded from `file` or built (and saved).
fn make_in_background(ann: &Ann, data: &[f32], dim: usize, file: Option<&AnnFile>) {
    let n = data.len() / dim.max(1);
    let (h, source, saved) = ann::load_or_build(file, data, dim);
    let mut covered = ann.covered();
    if ann.graph.set(h).is_ok() {
        *covered = n;
        let _ = ann.source.set(source);
        ann.set_saved(saved);
    }
    drop(covered);
    if let Some(f) = file {
        // A save that fails leaves the last one (or none): the next
        // opening builds again.
        let _ = ann.save_if_grown(f, data, dim);
    }
}

/// A weak hold on a memory's approximate index ([`Vector::ann_hold`]).
#[derive(Debug, Clone)]
pub struct AnnHold(std::sync::Weak<Ann>);

impl AnnHold {
    /// As [`Vector::retire_ann`], if the index still exists; whether it
    /// does.
    pub fn retire(&self) -> bool {
        self.0.upgrade().map(|a| a.retire()).is_some()
    }

    /// Whether the index still exists (a build or a holder keeps it).
    pub fn is_alive(&self) -> bool {
        self.0.strong_count() > 0
    }
}

/// V's rows as a persisted state holds them, borrowed from its bytes:
/// the `f32` rows and the codes with their scale pairs
/// ([`Vector::to_bytes`]), little-endian.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct StoredRows<'a> {
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    pub vectors: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    pub codes: &'a [u8],
    #[serde(borrow, serialize_with = "crate::le::as_bytes")]
    pub scales: &'a [u8],
}

/// V's rows in `f32`, which rescore the rows the codes leave.
#[derive(Clone)]
enum Rows {
    /// Every row, `len * dim` floats: a V built from its steps, or opened
    /// from a state for an embedder whose vectors cost a model or an
    /// endpoint call (and which HNSW may index).
    Kept(Vec<f32>),
    /// A V opened from a state for the built-in hashed embedder (which
    /// keeps no rows there): the rows a question rescored and the rows
    /// appended since, by position, a rescored one made again from its
    /// step's text when first needed (the embedder is deterministic).
    /// Shared by clones: an append adds positions and changes none (a
    /// forget or a correction builds anew).
    Remade(Arc<Mutex<HashMap<usize, Arc<[f32]>>>>),
}

/// The vector index of one episode. Clones share the HNSW graph, which an
/// append extends in place: a clone made before the append filters out the
/// steps it does not have.
#[derive(Clone)]
pub struct Vector {
    pub(super) steps: Arc<StepTexts>,
    dim: usize,
    rows: Rows,
    embedder: Arc<dyn Embedder>,
    top_k: usize,
    hnsw_threshold: usize,
    hnsw: Arc<Ann>,
    /// The rows as 8-bit codes, for the exact scan.
    codes: Codes,
}

impl std::fmt::Debug for Vector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vector")
            .field("steps", &self.steps.len())
            .field("dim", &self.dim)
            .field("embedder", &self.embedder.name())
            .finish()
    }
}

impl Vector {
    /// Embeds every step's text.
    pub fn build(
        steps: Arc<StepTexts>,
        embedder: Arc<dyn Embedder>,
        config: &Config,
    ) -> Result<Vector, PluginError> {
        let data = embed_all(&steps, embedder.as_ref())?;
        Ok(Vector::from_parts(steps, data, embedder, config))
    }

    /// An index over stored vectors (`steps.len() * embedder.dim()` floats,
    /// normalized). Returns `None` if the sizes do not match.
    pub fn from_stored(
        steps: Arc<StepTexts>,
        data: Vec<f32>,
        embedder: Arc<dyn Embedder>,
        config: &Config,
    ) -> Option<Vector> {
        (data.len() == steps.len() * embedder.dim())
            .then(|| Vector::from_parts(steps, data, embedder, config))
    }

    fn from_parts(
        steps: Arc<StepTexts>,
        data: Vec<f32>,
        embedder: Arc<dyn Embedder>,
        config: &Config,
    ) -> Vector {
        let mut codes = Codes::new(embedder.dim(), Layout::of(embedder.as_ref()));
        codes.push(&data);
        Vector::with_codes(steps, Rows::Kept(data), codes, embedder, config)
    }

    fn with_codes(
        steps: Arc<StepTexts>,
        rows: Rows,
        codes: Codes,
        embedder: Arc<dyn Embedder>,
        config: &Config,
    ) -> Vector {
        let hnsw_threshold = if embedder.hashed() {
            usize::MAX
        } else {
            config.vector_hnsw_threshold
        };
        Vector {
            steps,
            dim: embedder.dim(),
            codes,
            rows,
            embedder,
            top_k: config.vector_top_k,
            hnsw_threshold,
            hnsw: Arc::default(),
        }
    }

    /// The rows and their codes as a persisted state keeps them:
    /// `[vectors, codes, scales]`, each as bytes (see [`StoredRows`]); no
    /// rows for a hashed embedder, whose rows are made again.
    pub(super) fn to_bytes(&self) -> [Vec<u8>; 3] {
        let (codes, scales) = self.codes.to_bytes();
        let rows = if self.embedder.hashed() {
            &[]
        } else {
            self.kept()
        };
        [crate::le::f32s_to_le(rows), codes, scales]
    }

    /// The index over rows and codes read back from [`Vector::to_bytes`],
    /// over `steps`; `None` unless there is one code row per step, and one
    /// row per step (none for a hashed embedder).
    pub(super) fn from_decoded(
        steps: Arc<StepTexts>,
        data: Vec<f32>,
        codes: Codes,
        embedder: Arc<dyn Embedder>,
        config: &Config,
    ) -> Option<Vector> {
        let hashed = embedder.hashed();
        let rows_stored = if hashed { 0 } else { steps.len() };
        let fits = data.len() == rows_stored * embedder.dim() && codes.len() == steps.len();
        let rows = if hashed {
            Rows::Remade(Arc::default())
        } else {
            Rows::Kept(data)
        };
        fits.then(|| Vector::with_codes(steps, rows, codes, embedder, config))
    }

    /// The vectors, `len * dim` floats, row by row (made again for a
    /// hashed embedder).
    pub fn data(&self) -> Cow<'_, [f32]> {
        match &self.rows {
            Rows::Kept(data) => Cow::Borrowed(data),
            Rows::Remade(_) => {
                let all = (0..self.steps.len()).flat_map(|p| self.remake(p).to_vec());
                Cow::Owned(all.collect())
            }
        }
    }

    /// The dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The kept rows (none for a hashed embedder, which HNSW never
    /// indexes: its threshold is past any length).
    fn kept(&self) -> &[f32] {
        match &self.rows {
            Rows::Kept(data) => data,
            Rows::Remade(_) => &[],
        }
    }

    /// Row `p` made from its step's text as [`embed_all`] made it. The
    /// built-in embedder cannot fail; an embedder that did would score
    /// the row 0.
    fn remake(&self, p: usize) -> Arc<[f32]> {
        let text = self.steps.text(p);
        let row = embed_one(self.embedder.as_ref(), text).unwrap_or_else(|_| vec![0.0; self.dim]);
        row.into()
    }

    /// Each candidate's exact cosine with `q`.
    fn rescore(&self, candidates: Vec<usize>, q: &[f32]) -> Vec<(usize, f32)> {
        let cache = match &self.rows {
            Rows::Kept(data) => {
                let row = |p: usize| &data[p * self.dim..(p + 1) * self.dim];
                return candidates
                    .into_iter()
                    .map(|p| (p, dot(row(p), q)))
                    .collect();
            }
            Rows::Remade(cache) => cache,
        };
        let lock = || cache.lock().unwrap_or_else(PoisonError::into_inner);
        let missing: Vec<usize> = {
            let held = lock();
            candidates
                .iter()
                .copied()
                .filter(|p| !held.contains_key(p))
                .collect()
        };
        // Made outside the lock: other questions rescore meanwhile.
        let made: Vec<_> = missing.into_iter().map(|p| (p, self.remake(p))).collect();
        let mut held = lock();
        for (p, row) in made {
            held.entry(p).or_insert(row);
        }
        candidates
            .into_iter()
            .map(|p| (p, held.get(&p).map_or(0.0, |row| dot(row, q))))
            .collect()
    }

    /// Adds later steps' vectors (`vectors`: one row of `dim` floats per
    /// new step, normalized; `steps` renders every step, the new ones
    /// last). If the HNSW graph is built, the rows it lacks are inserted.
    pub(super) fn extend(&mut self, vectors: &[&[f32]], steps: Arc<StepTexts>) {
        let n = self.codes.len();
        match &mut self.rows {
            Rows::Kept(data) => vectors.iter().for_each(|v| data.extend_from_slice(v)),
            // Given now: kept for the questions, as if remade.
            Rows::Remade(cache) => {
                let mut held = cache.lock().unwrap_or_else(PoisonError::into_inner);
                held.extend((n..).zip(vectors.iter().map(|&v| Arc::from(v))));
            }
        }
        for v in vectors {
            self.codes.push(v);
        }
        self.steps = steps;
        let mut covered = self.hnsw.covered();
        if let Some(h) = self.hnsw.graph.get() {
            let n = self.steps.len();
            ann::insert_rows_checked(h, self.kept(), self.dim, (*covered).min(n)..n);
            *covered = (*covered).max(n);
        }
    }

    /// The HNSW graph, built now over every row if it is not built yet.
    fn hnsw(&self) -> &ann::Graph {
        let mut covered = self.hnsw.covered();
        let n = self.steps.len();
        self.hnsw.graph.get_or_init(|| {
            let data = &self.kept()[..n * self.dim];
            let (h, source, saved) = ann::load_or_build(self.hnsw.file.get(), data, self.dim);
            *covered = n;
            let _ = self.hnsw.source.set(source);
            self.hnsw.set_saved(saved);
            h
        })
    }

    /// A built store's episode: its HNSW graph (past the threshold) is
    /// built now and saved to `file`, which a later opening hands to
    /// [`Vector::use_saved_ann`]. Returns whether it saved.
    pub fn index_and_save(&self, file: &AnnFile) -> std::io::Result<bool> {
        if self.steps.len() <= self.hnsw_threshold {
            return Ok(false);
        }
        self.hnsw();
        self.save_ann(file)
    }

    /// The graph, when a question first needs it, is loaded from `file`
    /// if the dump there fits these rows (and built otherwise), as
    /// synchronously as a build: a built store's questions do not depend
    /// on timing.
    pub fn use_saved_ann(&self, file: AnnFile) {
        let _ = self.hnsw.file.set(file);
    }

    /// For an episode past the HNSW threshold whose graph is not built:
    /// makes it on a background thread, and until it is ready questions
    /// are answered by the exact scan (the live store does this, so that
    /// no question waits for the build). With `file`, the graph is loaded
    /// from the dump saved there if it fits these rows, and otherwise
    /// built and (if `file.write`) saved there. Rows appended meanwhile
    /// are scanned exactly, then inserted by the next append.
    pub fn index_in_background(&self, file: Option<AnnFile>) {
        let n = self.steps.len();
        if n <= self.hnsw_threshold
            || self.hnsw.graph.get().is_some()
            || self
                .hnsw
                .background
                .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let (ann, dim) = (self.hnsw.clone(), self.dim);
        let data = self.kept()[..n * dim].to_vec();
        std::thread::spawn(move || make_in_background(&ann, &data, dim, file.as_ref()));
    }

    /// How the approximate index came to be, once it is ready.
    pub fn ann_source(&self) -> Option<AnnSource> {
        self.hnsw.graph.get().and(self.hnsw.source.get().copied())
    }

    /// After a forget or a correction: this memory's approximate index
    /// (shared by its clones, a background build included) is never
    /// saved again, and no save of it is running when this returns, so
    /// the removal of the saved one that follows is final.
    pub fn retire_ann(&self) {
        self.hnsw.retire();
    }

    /// A hold on this memory's approximate index that does not keep it
    /// alive, to retire it later ([`AnnHold::retire`]): a snapshot dropped
    /// for the memory budget may still be building its index on another
    /// thread, and a forget after the drop must stop that build's save.
    /// `None` when no index is built in the background (an episode within
    /// the HNSW threshold).
    pub fn ann_hold(&self) -> Option<AnnHold> {
        let background = self
            .hnsw
            .background
            .load(std::sync::atomic::Ordering::SeqCst);
        background.then(|| AnnHold(Arc::downgrade(&self.hnsw)))
    }

    /// Saves the approximate index to `file` if it is ready and holds more
    /// rows than its last save (a writer does this when it closes).
    pub fn save_ann(&self, file: &AnnFile) -> std::io::Result<bool> {
        self.hnsw.save_if_grown(file, self.kept(), self.dim)
    }

    /// Positions of the top-k steps and their cosines, best first.
    pub fn search(&self, q: &[f32]) -> Vec<(usize, f32)> {
        let n = self.steps.len();
        let background = self
            .hnsw
            .background
            .load(std::sync::atomic::Ordering::SeqCst);
        let ready = self.hnsw.graph.get().is_some();
        let candidates: Vec<usize> = if n > self.hnsw_threshold && (ready || !background) {
            let h = self.hnsw();
            let covered = *self.hnsw.covered();
            // 200: MiniLM's exact top 5 was found 96% of the time at 4,000
            // steps, against 89% at 64 (docs/BENCHMARKS.md).
            let ef = (8 * self.top_k).max(ann::SEARCH_EF);
            let mut c: Vec<usize> = h
                .search(q, (4 * self.top_k).max(self.top_k), ef)
                .into_iter()
                .map(|nb| nb.d_id)
                .filter(|&p| p < n)
                .collect();
            // Rows the graph does not hold yet are scanned exactly.
            c.extend(covered.min(n)..n);
            c.sort_unstable();
            c.dedup();
            c
        } else {
            self.codes.candidates(q, n, self.top_k)
        };
        top_k(self.rescore(candidates, q), self.top_k)
    }
}

impl MemoryStructure for Vector {
    fn structure(&self) -> Structure {
        Structure::Vector
    }

    fn retrieve(&self, query: &Query) -> Result<Evidence, RetrieveError> {
        let q = query.embedding(self.embedder.as_ref())?;
        let found = self.search(q);
        let hits = found.iter().filter(|(_, s)| *s > 0.0).count();
        let items = found
            .into_iter()
            .map(|(p, s)| {
                self.steps
                    .item(Structure::Vector, p, f64::from(s.clamp(0.0, 1.0)))
            })
            .collect();
        Ok(Evidence {
            structure: Structure::Vector,
            items,
            hits,
            stale: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{game_episode, sql_episode};
    use super::*;

    fn vector(e: &crate::dataset::Episode, config: &Config) -> Vector {
        let steps = Arc::new(StepTexts::build(&e.steps, config.evidence_text_bytes));
        Vector::build(steps, Arc::new(HashEmbedder::default()), config).unwrap()
    }

    #[test]
    fn embedder_is_deterministic_and_normalized() {
        let e = HashEmbedder::default();
        let a = embed_one(&e, "the invalid identifier error").unwrap();
        let b = embed_one(&e, "the invalid identifier error").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 384);
        assert!((a.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-5);
        let c = embed_one(&e, "invalid identifier").unwrap();
        let d = embed_one(&e, "banana smoothie recipe").unwrap();
        let dot = |x: &[f32], y: &[f32]| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>();
        assert!(dot(&a, &c) > dot(&a, &d) + 0.2);
        assert_eq!(embed_one(&e, "").unwrap(), vec![0.0; 384]);
    }

    /// V as a persisted state gives it back: the built-in embedder's
    /// codes, no rows.
    fn reopened(v: &Vector, config: &Config) -> Vector {
        let [rows, codes, scales] = v.to_bytes();
        assert!(rows.is_empty(), "the state keeps no rows");
        let e = v.embedder.clone();
        let codes = Codes::from_bytes(v.dim, Layout::of(e.as_ref()), &codes, &scales).unwrap();
        let back = Vector::from_decoded(v.steps.clone(), Vec::new(), codes, e, config).unwrap();
        assert!(matches!(back.rows, Rows::Remade(_)));
        back
    }

    /// The built-in embedder's rows are made again when rescored after an
    /// opening from a state: a search answers as the full `f32` scan over
    /// the rows [`embed_all`] makes, cosines bit for bit, the first time
    /// and once they are kept, and a clone extended by an append answers as
    /// a build of the longer episode.
    #[test]
    fn remade_rows_answer_as_the_full_scan() {
        let e = super::super::fixtures::game_episode(400);
        let config = Config::default();
        let built = vector(&e, &config);
        assert!(matches!(built.rows, Rows::Kept(_)));
        let v = reopened(&built, &config);
        let embedder = HashEmbedder::default();
        let rows = embed_all(&v.steps, &embedder).unwrap();
        let dim = embedder.dim();
        for q in [
            "Where is the key?",
            "push the rock",
            "what did step 12 do",
            "win",
        ] {
            let q = embed_one(&embedder, q).unwrap();
            let full: Vec<(usize, f32)> = rows
                .chunks_exact(dim)
                .enumerate()
                .map(|(p, row)| (p, dot(row, &q)))
                .collect();
            let want = top_k(full, config.vector_top_k);
            assert_eq!(v.search(&q), want, "cold");
            assert_eq!(v.search(&q), want, "kept");
            assert_eq!(built.search(&q), want, "built");
        }
        let (short, long) = (&e.steps[..300], &e.steps[300..]);
        let texts =
            |s: &[crate::dataset::Step]| Arc::new(StepTexts::build(s, config.evidence_text_bytes));
        let first = Vector::build(texts(short), Arc::new(embedder), &config).unwrap();
        let mut grown = reopened(&first, &config);
        grown.search(&embed_one(&embedder, "push the rock").unwrap());
        let added = embed_all(&texts(long), &embedder).unwrap();
        let added: Vec<&[f32]> = added.chunks_exact(dim).collect();
        grown.extend(&added, texts(&e.steps));
        for q in ["Where is the key?", "push the rock"] {
            let q = embed_one(&embedder, q).unwrap();
            assert_eq!(grown.search(&q), v.search(&q), "{q:?}");
        }
    }

    #[test]
    fn exact_top_k() {
        let e = sql_episode();
        let v = vector(&e, &Config::default());
        let ev = v
            .retrieve(&Query::new("invalid identifier TOTAL_ASSETS"))
            .unwrap();
        assert_eq!(ev.items.len(), 5);
        assert_eq!(ev.items[0].steps, [2]);
        assert!(ev.items.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(ev.top() > 0.2);
    }

    #[test]
    fn hnsw_matches_exact_on_a_clear_winner() {
        let e = game_episode(300);
        let dense = |config: &Config| {
            let steps = Arc::new(StepTexts::build(&e.steps, config.evidence_text_bytes));
            Vector::build(steps, Arc::new(super::super::fixtures::Dense), config).unwrap()
        };
        let exact = dense(&Config::default());
        let approx = dense(&Config {
            vector_hnsw_threshold: 100,
            ..Config::default()
        });
        // The built-in embedder's vectors are searched exactly whatever
        // the threshold.
        let hashed = vector(
            &e,
            &Config {
                vector_hnsw_threshold: 100,
                ..Config::default()
            },
        );
        hashed.index_in_background(None);
        hashed.retrieve(&Query::new("the door")).unwrap();
        assert_eq!(hashed.ann_source(), None);
        let q = Query::new("The door 2 is locked. Error: you need a key");
        let a = exact.retrieve(&q).unwrap();
        let b = approx.retrieve(&q).unwrap();
        assert_eq!(a.items[0].steps, [20]);
        assert_eq!(b.items[0].steps, [20]);
        // Deterministic: the same answer again.
        assert_eq!(b, approx.retrieve(&q).unwrap());
    }

    proptest::proptest! {
        #[test]
        fn top_k_is_the_sorted_prefix(
            scores in proptest::collection::vec(-4i8..4, 0..60),
            k in 0usize..12,
        ) {
            let scored: Vec<(usize, f32)> = scores
                .iter()
                .enumerate()
                .map(|(p, &s)| (p, f32::from(s) / 4.0))
                .collect();
            let mut all = scored.clone();
            all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            all.truncate(k);
            proptest::prop_assert_eq!(top_k(scored, k), all);
        }
    }

    struct Wrong;
    impl Embedder for Wrong {
        fn name(&self) -> String {
            "wrong".into()
        }
        fn dim(&self) -> usize {
            4
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, PluginError> {
            Ok(texts.iter().map(|_| vec![1.0; 3]).collect())
        }
    }

    #[test]
    fn bad_embedder_output_is_an_error() {
        let e = sql_episode();
        let steps = Arc::new(StepTexts::build(&e.steps, 2000));
        let err = Vector::build(steps, Arc::new(Wrong), &Config::default()).unwrap_err();
        assert!(matches!(err, PluginError::BadOutput { .. }));
    }
}
