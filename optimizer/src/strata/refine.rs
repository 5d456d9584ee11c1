//! Refinements: `remove` rules learned on top of a stratified policy.
//!
//! A stratum reads one subset for all its questions; within a stratum the
//! questions differ in what a structure would add. A refinement is one
//! rule a person can read, appended after the strata:
//!
//! ```text
//! rule drop_r_t_overlap_r_hi when preview.T.overlap_R > 0.08 -> remove {R}
//! ```
//!
//! Refinements are found greedily on the fit's questions: each step adds
//! the rule (a structure to remove, a preview, a rounded threshold and a
//! side) that most raises `J - lambda * tokens` over the questions whose
//! mask it changes, as long as it raises it and changes at least
//! `min_leaf` of them. Cross-validation chooses how many to keep (a greedy
//! list's first rules are the shorter list).
//!
//! `select` stops evaluation, so a refined policy writes each stratum as
//! non-stopping `remove`/`add` rules that turn the default into its subset
//! (the strata are disjoint, so this reads the same subsets), then the
//! refinements. A mask the refinements empty reads the default, as the
//! policy's fallback does.

use super::tree::roundest_between;
use crate::eval::Problem;
use crate::propose::spec::{Act, Cmp, Cond, PolicySpec, RuleSpec};
use mesa_core::{Feature, Mask, Structure};

/// One refinement: remove `remove` when `preview.K.f` is above (or below)
/// `threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Removal {
    /// The structure taken out of the mask.
    pub remove: Structure,
    /// The preview tested: its structure and feature.
    pub structure: Structure,
    /// The preview's feature.
    pub feature: Feature,
    /// The threshold (the roundest number between two fitted values).
    pub threshold: f64,
    /// `preview > threshold` fires it when true, `preview < threshold` when false.
    pub above: bool,
}

impl Removal {
    /// Whether it fires for question `i` (never on a value equal to the
    /// threshold or not a number, as the written condition).
    fn fires(&self, problem: &Problem, i: usize) -> bool {
        let v = problem.questions[i]
            .input
            .previews
            .get(self.structure, self.feature);
        if self.above {
            v > self.threshold
        } else {
            v < self.threshold
        }
    }

    fn rule(&self) -> RuleSpec {
        RuleSpec {
            name: mesa_grammar::identifier_from(
                &format!(
                    "drop_{}_{}_{}_{}",
                    self.remove.letter().to_ascii_lowercase(),
                    self.structure.letter().to_ascii_lowercase(),
                    self.feature.name(),
                    if self.above { "hi" } else { "lo" }
                ),
                "s",
            ),
            cond: Some(Cond::Preview {
                structure: self.structure,
                feature: self.feature,
                op: if self.above { Cmp::Gt } else { Cmp::Lt },
                threshold: self.threshold,
            }),
            action: Act::Remove,
            mask: Mask::single(self.remove),
        }
    }
}

/// A preview and the positions of `idx` sorted by its value.
type Sorted = (Structure, Feature, Vec<(f64, usize)>);

/// The mask index a policy reads for raw mask `bits` after its rules: the
/// default's when the rules emptied it.
fn read(bits: u8, default: usize) -> usize {
    Mask::from_bits(bits).subset_index().unwrap_or(default)
}

/// Fits at most `n` removals greedily on `idx`, starting from `start` (the
/// mask index each question of `idx` reads before them) with `default`
/// for a mask they empty.
pub fn fit_removals(
    problem: &Problem,
    idx: &[usize],
    start: &[usize],
    default: usize,
    (lambda, n, min_leaf): (f64, usize, usize),
) -> Vec<Removal> {
    let value = |i: usize, k: usize| {
        let q = &problem.questions[i];
        q.utility[k] - lambda * q.tokens[k]
    };
    let mut bits: Vec<u8> = start.iter().map(|&k| Mask::subset(k).bits()).collect();
    // Each available preview's order over `idx`, sorted once.
    let orders: Vec<Sorted> = Structure::ALL
        .into_iter()
        .filter(|s| problem.available[s.index()])
        .flat_map(|s| Feature::ALL.into_iter().map(move |f| (s, f)))
        .filter_map(|(s, f)| {
            let mut vals: Vec<(f64, usize)> = idx
                .iter()
                .enumerate()
                .map(|(p, &i)| (problem.questions[i].input.previews.get(s, f), p))
                .collect();
            if vals.iter().any(|(v, _)| !v.is_finite()) {
                return None;
            }
            vals.sort_by(|a, b| a.0.total_cmp(&b.0));
            Some((s, f, vals))
        })
        .collect();
    let mut out = Vec::new();
    for _ in 0..n {
        let mut best: Option<(f64, Removal)> = None;
        for remove in Structure::ALL {
            let drop = Mask::single(remove).bits();
            // Each question's gain from removing it, and whether it changes.
            let gain: Vec<Option<f64>> = idx
                .iter()
                .zip(&bits)
                .map(|(&i, &b)| {
                    let (from, to) = (read(b, default), read(b & !drop, default));
                    (b & drop != 0 && from != to).then(|| value(i, to) - value(i, from))
                })
                .collect();
            if gain.iter().flatten().count() < min_leaf.max(1) {
                continue;
            }
            for (structure, feature, vals) in &orders {
                let Some((g, threshold, above)) = best_cut(vals, &gain, min_leaf) else {
                    continue;
                };
                if g > 1e-12 && best.as_ref().is_none_or(|(b, _)| g > *b) {
                    let r = Removal {
                        remove,
                        structure: *structure,
                        feature: *feature,
                        threshold,
                        above,
                    };
                    best = Some((g, r));
                }
            }
        }
        let Some((_, r)) = best else { break };
        let drop = Mask::single(r.remove).bits();
        for (b, &i) in bits.iter_mut().zip(idx) {
            if r.fires(problem, i) {
                *b &= !drop;
            }
        }
        out.push(r);
    }
    out
}

/// The best cut of one sorted preview: the side's total gain, the
/// threshold and whether the side is above it; each side must change at
/// least `min_leaf` questions.
fn best_cut(
    vals: &[(f64, usize)],
    gain: &[Option<f64>],
    min_leaf: usize,
) -> Option<(f64, f64, bool)> {
    let min = min_leaf.max(1);
    let (total, changed) = gain
        .iter()
        .flatten()
        .fold((0.0, 0usize), |(g, n), x| (g + x, n + 1));
    let (mut lo, mut lo_n) = (0.0, 0usize);
    let mut best: Option<(f64, f64, bool)> = None;
    for w in 0..vals.len().saturating_sub(1) {
        if let Some(g) = gain[vals[w].1] {
            lo += g;
            lo_n += 1;
        }
        let (a, b) = (vals[w].0, vals[w + 1].0);
        if a >= b {
            continue;
        }
        let Some(t) = roundest_between(a, b) else {
            continue;
        };
        for (g, n, above) in [(lo, lo_n, false), (total - lo, changed - lo_n, true)] {
            if n >= min && best.is_none_or(|(bg, _, _)| g > bg) {
                best = Some((g, t, above));
            }
        }
    }
    best
}

/// The mask index after `removals`, from mask index `k` (`default` when
/// they empty it).
pub fn apply(problem: &Problem, i: usize, k: usize, removals: &[Removal], default: usize) -> usize {
    let bits = removals
        .iter()
        .filter(|r| r.fires(problem, i))
        .fold(Mask::subset(k).bits(), |b, r| {
            b & !Mask::single(r.remove).bits()
        });
    read(bits, default)
}

/// `spec` (disjoint `select` rules over a default) with `removals` after
/// it: each `select` becomes the `remove` and `add` rules that turn the
/// default into its subset, so evaluation reaches the removals.
pub fn refined_spec(mut spec: PolicySpec, removals: &[Removal]) -> PolicySpec {
    if removals.is_empty() {
        return spec;
    }
    let default = spec.default;
    let mut rules = Vec::with_capacity(spec.rules.len() * 2 + removals.len());
    for r in spec.rules {
        let (take, put) = (default.without(r.mask), r.mask.without(default));
        if !take.is_empty() {
            rules.push(RuleSpec {
                action: Act::Remove,
                mask: take,
                ..r.clone()
            });
        }
        if !put.is_empty() {
            rules.push(RuleSpec {
                name: if take.is_empty() {
                    r.name
                } else {
                    format!("{}_add", r.name)
                },
                action: Act::Add,
                mask: put,
                cond: r.cond,
            });
        }
    }
    rules.extend(removals.iter().map(Removal::rule));
    spec.rules = rules;
    spec
}

/// The questions of `idx` each removal fires on and changes the mask of,
/// from the mask indices `start`.
pub fn support(
    problem: &Problem,
    idx: &[usize],
    start: &[usize],
    removals: &[Removal],
) -> Vec<usize> {
    let mut bits: Vec<u8> = start.iter().map(|&k| Mask::subset(k).bits()).collect();
    removals
        .iter()
        .map(|r| {
            let drop = Mask::single(r.remove).bits();
            idx.iter()
                .zip(bits.iter_mut())
                .filter(|(&i, b)| **b & drop != 0 && r.fires(problem, i))
                .map(|(_, b)| *b &= !drop)
                .count()
        })
        .collect()
}
