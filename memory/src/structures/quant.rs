//! V's exact scan, read from 8-bit codes: each vector row is also kept as
//! `i8` codes with one scale per row (a quarter of the bytes), a question
//! scores every row from the codes, and only the rows whose score could
//! still reach the top k are scored again from the `f32` rows. The codes
//! are kept by dimension, so a question reads only the dimensions where
//! its own code is not 0 (an AMA-Bench question's hashed vector has 45% of
//! its values nonzero: docs/BENCHMARKS.md). The answer
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

/// The codes of a vector index's rows, kept by dimension: `cols[j][p]`
/// is row p's code j. A question's integer dot products then read only
/// the dimensions where its own code is not 0, a block of rows at a time;
/// integer sums do not depend on their order, so each is exactly the
/// row-by-row dot product.
#[derive(Debug, Clone, Default)]
pub(super) struct Codes {
    dim: usize,
    cols: Vec<Vec<i8>>,
    /// Per row: the scale `s` and `|v|₁`.
    rows: Vec<(f32, f32)>,
}

/// Rows scored together: their partial sums stay in the first-level cache
/// while the question's dimensions are added in.
const BLOCK: usize = 2048;

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
    pub(super) fn new(dim: usize) -> Codes {
        Codes {
            dim,
            cols: vec![Vec::new(); dim],
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
            for (col, &c) in self.cols.iter_mut().zip(&codes) {
                col.push(c);
            }
            // A row with a non-finite value (only a damaged stored vector
            // has one) gets an infinite bound: always a candidate, never
            // part of the cut, so the exact scan ranks it as before.
            let l1 = row.iter().map(|x| x.abs()).sum::<f32>();
            self.rows
                .push((s, if l1.is_finite() { l1 } else { f32::INFINITY }));
        }
    }

    /// The codes (by dimension: `n` codes of dimension 0, then of 1, ...)
    /// and each row's scale and `|v|₁` as bytes, for a persisted state.
    pub(super) fn to_bytes(&self) -> (Vec<u8>, Vec<u8>) {
        let codes = self.cols.iter().flatten().map(|&c| c as u8).collect();
        let mut scales = Vec::with_capacity(self.rows.len() * 8);
        for &(s, l1) in &self.rows {
            crate::le::extend_le(&mut scales, &[s, l1]);
        }
        (codes, scales)
    }

    /// Codes read back from [`Codes::to_bytes`]; `None` unless they are
    /// `dim` whole columns, one code per row each, and one scale pair per
    /// row.
    pub(super) fn from_bytes(dim: usize, codes: &[u8], rows: &[u8]) -> Option<Codes> {
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
        let column = |j: usize| codes[j * n..(j + 1) * n].iter().map(|&b| b as i8).collect();
        Some(Codes {
            dim,
            cols: (0..dim).map(column).collect(),
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
        // The question's dimensions with a code, and their weights.
        let used: Vec<(&[i8], i32)> = self
            .cols
            .iter()
            .zip(&qc)
            .filter(|(_, c)| **c != 0)
            .map(|(col, c)| (&col[..n], i32::from(*c)))
            .collect();
        let mut lo = Vec::with_capacity(n);
        let mut hi = Vec::with_capacity(n);
        let mut sums = [0i32; BLOCK];
        for start in (0..n).step_by(BLOCK) {
            let end = (start + BLOCK).min(n);
            let sums = &mut sums[..end - start];
            sums.fill(0);
            for (col, w) in &used {
                for (sum, &c) in sums.iter_mut().zip(&col[start..end]) {
                    *sum += i32::from(c) * w;
                }
            }
            for (&d, &row) in sums.iter().zip(&self.rows[start..end]) {
                let (l, h) = bounds(row, t, q1, d);
                lo.push(l);
                hi.push(h);
            }
        }
        reaching(lo, &hi, k)
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

    /// The candidates as the scan made them row by row before the codes
    /// were kept by dimension: each row's integer dot product in one go.
    fn candidates_by_rows(codes: &Codes, q: &[f32], n: usize, k: usize) -> Vec<usize> {
        let mut qc = Vec::new();
        let t = quantize(q, &mut qc);
        let q1: f32 = qc.iter().map(|c| f32::from(c.unsigned_abs())).sum();
        let (lo, hi): (Vec<f32>, Vec<f32>) = (0..n)
            .map(|p| {
                let row: Vec<i8> = codes.cols.iter().map(|col| col[p]).collect();
                bounds(codes.rows[p], t, q1, dot_i8(&row, &qc))
            })
            .unzip();
        reaching(lo, &hi, k)
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
            let mut codes = Codes::new(dim);
            codes.push(&data);
            let n = data.len() / dim;
            let c = codes.candidates(&q, n, k);
            for p in exact(&data, dim, &q, k) {
                proptest::prop_assert!(c.contains(&p), "row {p} left out");
            }
            if n > k && q.iter().any(|x| *x != 0.0) {
                proptest::prop_assert_eq!(&c, &candidates_by_rows(&codes, &q, n, k));
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
        let mut codes = Codes::new(384);
        codes.push(&data);
        let q = embed_one(&embedder, "The door 2 is locked. Error: you need a key").unwrap();
        let c = codes.candidates(&q, codes.len(), 5);
        for p in exact(&data, 384, &q, 5) {
            assert!(c.contains(&p));
        }
        assert!(c.len() < codes.len() / 4, "{} of {}", c.len(), codes.len());
        assert_eq!(c, candidates_by_rows(&codes, &q, codes.len(), 5));
    }

    #[test]
    fn codes_read_back_from_their_bytes_or_not_at_all() {
        let dim = 4;
        let mut data = rows(&[1, 2, 3, 4, 4, 3, 2, 1, -1, 1, -1, 1, 0, 0, 0, 0], dim);
        data.extend_from_slice(&[f32::NAN, 0.5, 0.0, 0.0]);
        let mut codes = Codes::new(dim);
        codes.push(&data);
        let (c, s) = codes.to_bytes();
        let back = Codes::from_bytes(dim, &c, &s).expect("whole rows");
        assert_eq!(back.cols, codes.cols);
        let bits = |r: &[(f32, f32)]| -> Vec<(u32, u32)> {
            r.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect()
        };
        assert_eq!(bits(&back.rows), bits(&codes.rows));
        let q = [0.5, -0.5, 0.5, 0.5];
        assert_eq!(back.candidates(&q, 5, 2), codes.candidates(&q, 5, 2));
        // Ragged or mismatched bytes are refused.
        assert!(Codes::from_bytes(dim, &c[1..], &s).is_none());
        assert!(Codes::from_bytes(dim, &c, &s[..s.len() - 8]).is_none());
        assert!(Codes::from_bytes(dim, &c, &s[..s.len() - 1]).is_none());
        assert!(Codes::from_bytes(dim + 1, &c, &s).is_none());
    }

    #[test]
    fn damaged_rows_stay_candidates_and_k_zero_asks_for_none() {
        let dim = 4;
        let mut data = rows(&[1, 2, 3, 4, 4, 3, 2, 1, 1, 1, 1, 1, 0, 5, 0, 5], dim);
        data.extend_from_slice(&[f32::NAN, 0.5, 0.0, 0.0, f32::INFINITY, 0.0, 0.0, 0.0]);
        let mut codes = Codes::new(dim);
        codes.push(&data);
        let q = [0.5, 0.5, 0.5, 0.5];
        let c = codes.candidates(&q, 6, 1);
        assert!(c.contains(&4) && c.contains(&5), "{c:?}");
        assert!(codes.candidates(&q, 6, 0).is_empty());
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
