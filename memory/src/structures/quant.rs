//! V's exact scan, read from 8-bit codes: each vector row is also kept as
//! `i8` codes with one scale per row (a quarter of the bytes), a question
//! scores every row from the codes, and only the rows whose score could
//! still reach the top k are scored again from the `f32` rows. Hashed
//! vectors' codes are kept by dimension, so a question reads only the
//! dimensions where its own code is not 0 (an AMA-Bench question's hashed
//! vector has 45% of its values nonzero); dense vectors' are kept row by
//! row, whose dot products are cheaper when a question uses every
//! dimension (docs/BENCHMARKS.md, "V's codes kept by dimension"). The answer
//! is exactly the full `f32` scan's (same rows, same order, same cosines).
//!
//! ```text
//! row v (f32, unit) ──push──► codes round(v / s), s = max|v| / 127; |v|₁
//! question q ──quantize──► q̂ (i8, scale t)
//!   every row: a = s·t·(q̂·codes)  (integer dot), bound b ≥ |q·v − a|
//!   L = the k-th largest a − b; rows with a + b ≥ L ──exact f32 dot──► top k
//! ```
//!
//! The bound: with `v = s·ĉ + e` (`|e_i| ≤ s/2`) and `q = t·q̂ + d`
//! (`|d_i| ≤ t/2`), `q·v − s·t·q̂·ĉ = t·q̂·e + d·v`, so
//! `|q·v − a| ≤ (s·t·|q̂|₁ + t·|v|₁) / 2`. The `f32` dot's own rounding is
//! at most `n·u·|q|∞·|v|₁` (unit roundoff `u = 2⁻²⁴`; for 384 dimensions
//! `2.3e-5·|q|∞·|v|₁`), under 1% of the second term alone
//! (`t·|v|₁ / 2 = |q|∞·|v|₁ / 254`), and the bound is widened by 2% plus
//! `1e-6`, so a row left out scores strictly below the k-th best, and a
//! row tied with it is kept. A row with a non-finite value is always kept.

use rayon::prelude::*;

/// How a vector index keeps its codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Row by row: each row's dot product in one go (dense vectors, whose
    /// questions use every dimension).
    Rows,
    /// By dimension: a question's dot products read only the dimensions
    /// where its own code is not 0 (hashed vectors).
    Dimensions,
}

impl Layout {
    /// The layout for `embedder`'s vectors.
    pub(crate) fn of(embedder: &dyn super::Embedder) -> Layout {
        if embedder.hashed() {
            Layout::Dimensions
        } else {
            Layout::Rows
        }
    }
}

/// The codes themselves, in their layout.
#[derive(Debug, Clone, PartialEq)]
enum Kept {
    /// Row-major: row p's codes are `[p * dim, (p + 1) * dim)`.
    Rows(Vec<i8>),
    /// `cols[j][p]` is row p's code j.
    Dimensions(Vec<Vec<i8>>),
}

/// The codes of a vector index's rows. Integer sums do not depend on their
/// order, so both layouts give every row exactly the same dot product.
#[derive(Debug, Clone)]
pub(super) struct Codes {
    dim: usize,
    kept: Kept,
    /// Per row: the scale `s` and `|v|₁`.
    rows: Vec<(f32, f32)>,
}

/// Rows scored together (by dimension: their partial sums stay in the
/// first-level cache while the question's dimensions are added in).
const BLOCK: usize = 2048;

/// Past this many rows, stretches of this many are scanned side by side.
const SIDE_BY_SIDE: usize = 16 * BLOCK;

/// The integer dot product of two code rows (exact: at most
/// `dim · 127²`, which fits an `i32` for any dimension below 133,000).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in ca.zip(cb) {
        for k in 0..16 {
            lanes[k] += i32::from(i16::from(x[k]) * i16::from(y[k]));
        }
    }
    lanes.iter().sum::<i32>() + tail
}

/// Codes of `v` and their scale (0 for a zero row, whose codes are then 0).
fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !v.iter().all(|x| x.is_finite()) {
        out.extend(std::iter::repeat_n(0, v.len()));
        return 0.0;
    }
    let s = max / 127.0;
    out.extend(v.iter().map(|x| (x / s).round().clamp(-127.0, 127.0) as i8));
    s
}

impl Codes {
    pub(super) fn new(dim: usize, layout: Layout) -> Codes {
        let kept = match layout {
            Layout::Rows => Kept::Rows(Vec::new()),
            Layout::Dimensions => Kept::Dimensions(vec![Vec::new(); dim]),
        };
        Codes {
            dim,
            kept,
            rows: Vec::new(),
        }
    }

    /// Adds rows (`data`: whole rows of `dim` floats).
    pub(super) fn push(&mut self, data: &[f32]) {
        if self.dim == 0 {
            return;
        }
        let mut codes = Vec::with_capacity(self.dim);
        for row in data.chunks_exact(self.dim) {
            codes.clear();
            let s = quantize(row, &mut codes);
            match &mut self.kept {
                Kept::Rows(all) => all.extend_from_slice(&codes),
                Kept::Dimensions(cols) => {
                    for (col, &c) in cols.iter_mut().zip(&codes) {
                        col.push(c);
                    }
                }
            }
            // A row with a non-finite value (only a damaged stored vector
            // has one) gets an infinite bound: always a candidate, never
            // part of the cut, so the exact scan ranks it as before.
            let l1 = row.iter().map(|x| x.abs()).sum::<f32>();
            self.rows
                .push((s, if l1.is_finite() { l1 } else { f32::INFINITY }));
        }
    }

    /// The codes in their layout (row by row, or by dimension: `n` codes
    /// of dimension 0, then of 1, ...) and each row's scale and `|v|₁` as
    /// bytes, for a persisted state.
    pub(super) fn to_bytes(&self) -> (Vec<u8>, Vec<u8>) {
        let codes = match &self.kept {
            Kept::Rows(all) => all.iter().map(|&c| c as u8).collect(),
            Kept::Dimensions(cols) => cols.iter().flatten().map(|&c| c as u8).collect(),
        };
        let mut scales = Vec::with_capacity(self.rows.len() * 8);
        for &(s, l1) in &self.rows {
            crate::le::extend_le(&mut scales, &[s, l1]);
        }
        (codes, scales)
    }

    /// Codes read back from [`Codes::to_bytes`] of the same layout; `None`
    /// unless there are `dim` codes and one scale pair per row.
    pub(super) fn from_bytes(
        dim: usize,
        layout: Layout,
        codes: &[u8],
        rows: &[u8],
    ) -> Option<Codes> {
        let flat = crate::le::f32s_from_le(rows)?;
        let n = flat.len() / 2;
        if !flat.len().is_multiple_of(2) || codes.len() != n.checked_mul(dim)? {
            return None;
        }
        // A scale is finite and not negative; `|v|₁` is not negative (it
        // is infinite for a row with a non-finite value).
        let sane = |c: &[f32]| c[0].is_finite() && c[0] >= 0.0 && c[1] >= 0.0;
        if !flat.chunks_exact(2).all(sane) {
            return None;
        }
        let signed = |bytes: &[u8]| bytes.iter().map(|&b| b as i8).collect();
        let kept = match layout {
            Layout::Rows => Kept::Rows(signed(codes)),
            // `dim` columns even when there is no row yet.
            Layout::Dimensions => Kept::Dimensions(
                (0..dim)
                    .map(|j| signed(&codes[j * n..(j + 1) * n]))
                    .collect(),
            ),
        };
        Some(Codes {
            dim,
            kept,
            rows: flat.chunks_exact(2).map(|c| (c[0], c[1])).collect(),
        })
    }

    /// How many rows it holds.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The rows among the first `n` that can be in the top `k` for `q`
    /// by the exact dot product (every row whose upper bound reaches the
    /// k-th best lower bound), by position. None for `k` = 0; all `n` rows
    /// when the codes cannot tell (at most `k` rows, rows without codes, a
    /// query of another dimension, or a zero or non-finite query).
    pub(super) fn candidates(&self, q: &[f32], n: usize, k: usize) -> Vec<usize> {
        self.candidates_in(q, n, k, SIDE_BY_SIDE)
    }

    /// [`Codes::candidates`], past `stretch` rows scanning stretches of
    /// that many side by side (the tests try small ones).
    fn candidates_in(&self, q: &[f32], n: usize, k: usize, stretch: usize) -> Vec<usize> {
        if k == 0 {
            return Vec::new();
        }
        if n > self.len() || n <= k || q.len() != self.dim {
            return (0..n).collect();
        }
        let mut qc = Vec::with_capacity(q.len());
        let t = quantize(q, &mut qc);
        if t == 0.0 {
            return (0..n).collect();
        }
        let q1: f32 = qc.iter().map(|c| f32::from(c.unsigned_abs())).sum();
        let (mut lo, mut hi) = (vec![0.0; n], vec![0.0; n]);
        // Each row's bounds depend on its own sum only, so stretches of
        // rows are bounded side by side (on the pool the caller runs in)
        // with the same results.
        let bound = |first: usize, lo: &mut [f32], hi: &mut [f32]| {
            let mut sums = [0i32; BLOCK];
            for at in (0..lo.len()).step_by(BLOCK) {
                let (start, end) = (first + at, (first + at + BLOCK).min(first + lo.len()));
                let sums = &mut sums[..end - start];
                self.dots(&qc, start, sums);
                for (i, (&d, &row)) in sums.iter().zip(&self.rows[start..end]).enumerate() {
                    (lo[at + i], hi[at + i]) = bounds(row, t, q1, d);
                }
            }
        };
        if n > stretch && stretch > 0 {
            let stretches = lo.par_chunks_mut(stretch).zip(hi.par_chunks_mut(stretch));
            stretches
                .enumerate()
                .for_each(|(c, (lo, hi))| bound(c * stretch, lo, hi));
        } else {
            bound(0, &mut lo, &mut hi);
        }
        reaching(lo, &hi, k)
    }

    /// The integer dot products of the question's codes `qc` with the
    /// rows from `start` on, one per entry of `sums`.
    fn dots(&self, qc: &[i8], start: usize, sums: &mut [i32]) {
        let end = start + sums.len();
        match &self.kept {
            Kept::Rows(all) => {
                let rows = all[start * self.dim..end * self.dim].chunks_exact(self.dim);
                for (sum, row) in sums.iter_mut().zip(rows) {
                    *sum = dot_i8(row, qc);
                }
            }
            Kept::Dimensions(cols) => {
                sums.fill(0);
                // Only the dimensions where the question has a code.
                for (col, &w) in cols.iter().zip(qc).filter(|(_, w)| **w != 0) {
                    let w = i32::from(w);
                    for (sum, &c) in sums.iter_mut().zip(&col[start..end]) {
                        *sum += i32::from(c) * w;
                    }
                }
            }
        }
    }
}

/// A row's score bounds from its integer dot product `d` with the
/// question's codes (scale `t`, `|q̂|₁ = q1`): `a ∓ b` of the module docs.
fn bounds((s, l1): (f32, f32), t: f32, q1: f32, d: i32) -> (f32, f32) {
    let a = s * t * d as f32;
    let b = 0.51 * (s * t * q1 + t * l1) + 1e-6;
    (a - b, a + b)
}

/// The rows whose upper bound reaches the k-th best lower bound
/// (`k` >= 1, at most the rows).
fn reaching(mut lo: Vec<f32>, hi: &[f32], k: usize) -> Vec<usize> {
    // Only the k-th best lower bound is needed: `lo` may be reordered.
    let (_, cut, _) = lo.select_nth_unstable_by(k - 1, |x, y| y.total_cmp(x));
    let cut = *cut;
    (0..hi.len()).filter(|&p| hi[p] >= cut).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structures::vector::{dot, normalize};

    /// The same rows' codes in each layout.
    fn both(dim: usize, data: &[f32]) -> [Codes; 2] {
        [Layout::Rows, Layout::Dimensions].map(|layout| {
            let mut codes = Codes::new(dim, layout);
            codes.push(data);
            codes
        })
    }

    /// The full scan's top k (cosine, then position).
    fn exact(data: &[f32], dim: usize, q: &[f32], k: usize) -> Vec<usize> {
        let mut s: Vec<(usize, f32)> = data
            .chunks_exact(dim)
            .enumerate()
            .map(|(p, r)| (p, dot(r, q)))
            .collect();
        s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        s.into_iter().take(k).map(|(p, _)| p).collect()
    }

    fn rows(seed: &[i16], dim: usize) -> Vec<f32> {
        let mut data: Vec<f32> = seed.iter().map(|&x| f32::from(x) / 7.0).collect();
        data.truncate(data.len() / dim * dim);
        for r in data.chunks_exact_mut(dim) {
            normalize(r);
        }
        data
    }

    proptest::proptest! {
        /// The candidates hold the exact top k, whatever the rows (ties,
        /// repeats, zero rows and near-duplicates included).
        #[test]
        fn candidates_hold_the_exact_top_k(
            seed in proptest::collection::vec(-6i16..7, 0..600),
            query in proptest::collection::vec(-6i16..7, 8),
            k in 1usize..8,
        ) {
            let dim = 8;
            let data = rows(&seed, dim);
            let mut q: Vec<f32> = query.iter().map(|&x| f32::from(x)).collect();
            normalize(&mut q);
            let [by_rows, by_dims] = both(dim, &data);
            let n = data.len() / dim;
            let c = by_rows.candidates(&q, n, k);
            for p in exact(&data, dim, &q, k) {
                proptest::prop_assert!(c.contains(&p), "row {p} left out");
            }
            // The layouts give every row the same dot product, and so do
            // stretches scanned side by side.
            proptest::prop_assert_eq!(&c, &by_dims.candidates(&q, n, k));
            for stretch in [1, 7, 64] {
                proptest::prop_assert_eq!(&c, &by_rows.candidates_in(&q, n, k, stretch));
                proptest::prop_assert_eq!(&c, &by_dims.candidates_in(&q, n, k, stretch));
            }
        }
    }

    #[test]
    fn the_codes_leave_out_most_rows_of_a_real_episode() {
        use crate::structures::fixtures::game_episode;
        use crate::structures::vector::{embed_all, embed_one, HashEmbedder};
        use crate::structures::StepTexts;
        let e = game_episode(2000);
        let steps = StepTexts::build(&e.steps, 4000);
        let embedder = HashEmbedder::default();
        let data = embed_all(&steps, &embedder).unwrap();
        let [codes, by_dims] = both(384, &data);
        let q = embed_one(&embedder, "The door 2 is locked. Error: you need a key").unwrap();
        let c = codes.candidates(&q, codes.len(), 5);
        for p in exact(&data, 384, &q, 5) {
            assert!(c.contains(&p));
        }
        assert!(c.len() < codes.len() / 4, "{} of {}", c.len(), codes.len());
        assert_eq!(c, by_dims.candidates(&q, codes.len(), 5));
        for stretch in [300, 2048, 3000] {
            assert_eq!(c, by_dims.candidates_in(&q, codes.len(), 5, stretch));
        }
    }

    #[test]
    fn codes_read_back_from_their_bytes_or_not_at_all() {
        let dim = 4;
        let mut data = rows(&[1, 2, 3, 4, 4, 3, 2, 1, -1, 1, -1, 1, 0, 0, 0, 0], dim);
        data.extend_from_slice(&[f32::NAN, 0.5, 0.0, 0.0]);
        for codes in both(dim, &data) {
            let layout = match codes.kept {
                Kept::Rows(_) => Layout::Rows,
                Kept::Dimensions(_) => Layout::Dimensions,
            };
            let (c, s) = codes.to_bytes();
            let back = Codes::from_bytes(dim, layout, &c, &s).expect("whole rows");
            assert_eq!(back.kept, codes.kept);
            let bits = |r: &[(f32, f32)]| -> Vec<(u32, u32)> {
                r.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
            };
            assert_eq!(bits(&back.rows), bits(&codes.rows));
            let q = [0.5, -0.5, 0.5, 0.5];
            assert_eq!(back.candidates(&q, 5, 2), codes.candidates(&q, 5, 2));
            // Ragged or mismatched bytes are refused.
            assert!(Codes::from_bytes(dim, layout, &c[1..], &s).is_none());
            assert!(Codes::from_bytes(dim, layout, &c, &s[..s.len() - 8]).is_none());
            assert!(Codes::from_bytes(dim, layout, &c, &s[..s.len() - 1]).is_none());
            assert!(Codes::from_bytes(dim + 1, layout, &c, &s).is_none());
        }
    }

    #[test]
    fn damaged_rows_stay_candidates_and_k_zero_asks_for_none() {
        let dim = 4;
        let mut data = rows(&[1, 2, 3, 4, 4, 3, 2, 1, 1, 1, 1, 1, 0, 5, 0, 5], dim);
        data.extend_from_slice(&[f32::NAN, 0.5, 0.0, 0.0, f32::INFINITY, 0.0, 0.0, 0.0]);
        for codes in both(dim, &data) {
            let q = [0.5, 0.5, 0.5, 0.5];
            let c = codes.candidates(&q, 6, 1);
            assert!(c.contains(&4) && c.contains(&5), "{c:?}");
            assert!(codes.candidates(&q, 6, 0).is_empty());
        }
    }

    #[test]
    fn integer_dot_is_exact() {
        let a: Vec<i8> = (0..384).map(|i| ((i * 37) % 255) as i8).collect();
        let b: Vec<i8> = (0..384).map(|i| ((i * 11 + 5) % 255) as i8).collect();
        let want: i32 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| i32::from(*x) * i32::from(*y))
            .sum();
        assert_eq!(dot_i8(&a, &b), want);
        assert_eq!(dot_i8(&[-127; 33], &[-127; 33]), 33 * 127 * 127);
    }
}
