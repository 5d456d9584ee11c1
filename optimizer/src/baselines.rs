//! The baselines every report shows: each single structure, all five,
//! random subsets, the best fixed subset chosen on val, a per-domain lookup
//! fitted on train, and the per-question oracle (the upper bound).

use crate::eval::problem::argmax;
use crate::eval::{Breakdown, Metrics, Problem};
use crate::rng::Rng;

use mesa_core::{Mask, Structure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Random draws averaged for the random baseline.
pub const DEFAULT_DRAWS: usize = 32;

/// One baseline scored on one split.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineResult {
    /// Short name, e.g. `best fixed (val)`.
    pub name: String,
    /// What it chose, e.g. `{S, T, R}`.
    pub detail: String,
    /// Its metrics.
    pub metrics: Metrics,
    /// By domain and question type (none for the random baseline).
    pub breakdown: Option<Breakdown>,
}

/// The mask index with the highest total objective over `idx` (the first
/// on ties); `{S}` when `idx` is empty.
pub fn best_fixed(problem: &Problem, idx: &[usize]) -> usize {
    let mut sums = [0.0; Mask::SUBSETS];
    for &i in idx {
        for (s, o) in sums.iter_mut().zip(problem.questions[i].objective.iter()) {
            *s += o;
        }
    }
    argmax(&sums)
}

/// The best mask index per domain over `idx`, and the overall best for
/// domains `idx` does not have.
pub fn per_domain(problem: &Problem, idx: &[usize]) -> (BTreeMap<String, usize>, usize) {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for &i in idx {
        groups
            .entry(problem.questions[i].domain.clone())
            .or_default()
            .push(i);
    }
    let lookup = groups
        .into_iter()
        .map(|(d, v)| {
            let k = best_fixed(problem, &v);
            (d, k)
        })
        .collect();
    (lookup, best_fixed(problem, idx))
}

fn fixed(problem: &Problem, eval: &[usize], name: &str, m: Mask) -> BaselineResult {
    BaselineResult {
        name: name.to_string(),
        detail: m.to_string(),
        metrics: Metrics::of(problem, eval, |_| m),
        breakdown: Some(Breakdown::of(problem, eval, |_| m)),
    }
}

/// Scores every baseline on `eval`, fitting on `train` and choosing on
/// `val`; the random baseline averages `draws` seeded draws.
pub fn baselines(
    problem: &Problem,
    train: &[usize],
    val: &[usize],
    eval: &[usize],
    seed: u64,
    draws: usize,
) -> Vec<BaselineResult> {
    let mut out = Vec::new();
    for s in Structure::ALL {
        out.push(fixed(
            problem,
            eval,
            &format!("{} only", s.letter()),
            Mask::single(s),
        ));
    }
    out.push(fixed(problem, eval, "all five", Mask::ALL));
    let runs: Vec<Metrics> = (0..draws.max(1))
        .map(|d| {
            let mut rng = Rng::derive(&[seed, d as u64, 0x5a17]);
            let picks: BTreeMap<usize, Mask> = eval
                .iter()
                .map(|&i| (i, Mask::subset(rng.below(Mask::SUBSETS))))
                .collect();
            Metrics::of(problem, eval, |i| {
                picks.get(&i).copied().unwrap_or(Mask::ALL)
            })
        })
        .collect();
    out.push(BaselineResult {
        name: "random".into(),
        detail: format!(
            "uniform over the 31 subsets, mean of {} draws",
            draws.max(1)
        ),
        metrics: Metrics::mean(&runs, problem.lambda),
        breakdown: None,
    });
    let best = Mask::subset(best_fixed(problem, val));
    let mut r = fixed(problem, eval, "best fixed (val)", best);
    r.detail = format!("{best}, chosen on val");
    out.push(r);
    let (lookup, fallback) = per_domain(problem, train);
    let mask_of = |i: usize| {
        Mask::subset(
            lookup
                .get(&problem.questions[i].domain)
                .copied()
                .unwrap_or(fallback),
        )
    };
    out.push(BaselineResult {
        name: "per-domain (train)".into(),
        detail: lookup
            .iter()
            .map(|(d, k)| format!("{d} {}", Mask::subset(*k)))
            .collect::<Vec<_>>()
            .join("; "),
        metrics: Metrics::of(problem, eval, mask_of),
        breakdown: Some(Breakdown::of(problem, eval, mask_of)),
    });
    let oracle = |i: usize| Mask::subset(problem.oracle(i));
    out.push(BaselineResult {
        name: "oracle".into(),
        detail: "best objective per question (upper bound)".into(),
        metrics: Metrics::of(problem, eval, oracle),
        breakdown: Some(Breakdown::of(problem, eval, oracle)),
    });
    out
}
