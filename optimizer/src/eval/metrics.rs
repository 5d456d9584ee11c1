//! J, C, the objective and mean structures of a choice of masks, their
//! mean and standard deviation over seeds, and breakdowns by group.

use super::problem::Problem;
use mesa_core::Mask;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A choice of masks scored on a set of questions.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Metrics {
    /// Questions scored.
    pub n: usize,
    /// Mean utility of the chosen masks.
    pub j: f64,
    /// Mean evidence tokens of the chosen masks.
    pub c: f64,
    /// `j - lambda * c`.
    pub objective: f64,
    /// Mean number of structures chosen.
    pub structures: f64,
}

impl Metrics {
    /// Scores the masks `mask_of(i)` of the questions `idx` (indices into
    /// `problem.questions`). An empty mask (never produced by a checked
    /// policy) scores as utility 0 and 0 tokens.
    pub fn of(problem: &Problem, idx: &[usize], mut mask_of: impl FnMut(usize) -> Mask) -> Metrics {
        let (mut u, mut c, mut s) = (0.0, 0.0, 0.0);
        for &i in idx {
            let m = mask_of(i);
            if let Some(k) = Mask::subset_index(m) {
                let q = &problem.questions[i];
                u += q.utility[k];
                c += q.tokens[k];
            }
            s += f64::from(m.len());
        }
        Metrics::from_sums(idx.len(), u, c, s, problem.lambda)
    }

    /// Metrics from sums over `n` questions.
    pub fn from_sums(n: usize, u: f64, c: f64, s: f64, lambda: f64) -> Metrics {
        if n == 0 {
            return Metrics::default();
        }
        let nf = n as f64;
        let (j, c) = (u / nf, c / nf);
        Metrics {
            n,
            j,
            c,
            objective: j - lambda * c,
            structures: s / nf,
        }
    }

    /// The mean of several metrics weighted equally (e.g. random draws).
    pub fn mean(all: &[Metrics], lambda: f64) -> Metrics {
        if all.is_empty() {
            return Metrics::default();
        }
        let k = all.len() as f64;
        let j = all.iter().map(|m| m.j).sum::<f64>() / k;
        let c = all.iter().map(|m| m.c).sum::<f64>() / k;
        Metrics {
            n: all[0].n,
            j,
            c,
            objective: j - lambda * c,
            structures: all.iter().map(|m| m.structures).sum::<f64>() / k,
        }
    }
}

/// Mean and sample standard deviation of one number over seeds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Stat {
    /// The mean.
    pub mean: f64,
    /// The sample standard deviation (n - 1); 0 for one value.
    pub std: f64,
    /// The values, by seed.
    pub values: Vec<f64>,
}

impl Stat {
    /// The statistic of `values`.
    pub fn of(values: Vec<f64>) -> Stat {
        let n = values.len();
        if n == 0 {
            return Stat::default();
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let std = if n > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Stat { mean, std, values }
    }
}

/// Metrics over seeds.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MetricsAgg {
    /// Mean questions per seed.
    pub n: f64,
    /// Mean utility.
    pub j: Stat,
    /// Mean tokens.
    pub c: Stat,
    /// The objective.
    pub objective: Stat,
    /// Mean structures.
    pub structures: Stat,
}

impl MetricsAgg {
    /// Aggregates per-seed metrics.
    pub fn of(per_seed: &[Metrics]) -> MetricsAgg {
        let col = |f: fn(&Metrics) -> f64| Stat::of(per_seed.iter().map(f).collect());
        MetricsAgg {
            n: if per_seed.is_empty() {
                0.0
            } else {
                per_seed.iter().map(|m| m.n as f64).sum::<f64>() / per_seed.len() as f64
            },
            j: col(|m| m.j),
            c: col(|m| m.c),
            objective: col(|m| m.objective),
            structures: col(|m| m.structures),
        }
    }
}

/// Metrics per domain and per question type.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Breakdown {
    /// By domain.
    pub domain: BTreeMap<String, Metrics>,
    /// By question type (`-` for questions without one).
    pub qtype: BTreeMap<String, Metrics>,
}

impl Breakdown {
    /// The breakdown of the masks `mask_of(i)` over `idx`.
    pub fn of(problem: &Problem, idx: &[usize], mask_of: impl Fn(usize) -> Mask) -> Breakdown {
        let mut by_domain: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        let mut by_qtype: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for &i in idx {
            let q = &problem.questions[i];
            by_domain.entry(q.domain.clone()).or_default().push(i);
            by_qtype
                .entry(q.qtype.clone().unwrap_or_else(|| "-".into()))
                .or_default()
                .push(i);
        }
        let score = |groups: BTreeMap<String, Vec<usize>>| {
            groups
                .into_iter()
                .map(|(k, v)| (k, Metrics::of(problem, &v, &mask_of)))
                .collect()
        };
        Breakdown {
            domain: score(by_domain),
            qtype: score(by_qtype),
        }
    }

    /// The mean over seeds of each group's metrics (groups missing from a
    /// seed's split are averaged over the seeds that have them).
    pub fn mean(all: &[Breakdown], lambda: f64) -> Breakdown {
        let merge = |get: fn(&Breakdown) -> &BTreeMap<String, Metrics>| {
            let mut acc: BTreeMap<String, Vec<Metrics>> = BTreeMap::new();
            for b in all {
                for (k, m) in get(b) {
                    acc.entry(k.clone()).or_default().push(*m);
                }
            }
            acc.into_iter()
                .map(|(k, v)| {
                    let mut m = Metrics::mean(&v, lambda);
                    m.n = v.iter().map(|x| x.n).sum::<usize>() / v.len().max(1);
                    (k, m)
                })
                .collect()
        };
        Breakdown {
            domain: merge(|b| &b.domain),
            qtype: merge(|b| &b.qtype),
        }
    }
}
