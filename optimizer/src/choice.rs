//! The frozen choice: which archived candidate a run tests.
//!
//! `best-val` takes the highest val objective. `one-se` guards against a
//! small val split's noise: among the candidates whose val objective is
//! within one standard error of the best's (the error of their paired
//! per-question difference), it takes the one with the fewest rules, then
//! the higher val objective, then the earlier.

use serde::{Deserialize, Serialize};

/// How the frozen candidate is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Choice {
    /// The best val objective.
    #[default]
    BestVal,
    /// The simplest within one standard error of the best val objective.
    OneSe,
}

impl Choice {
    /// The name, as the CLI and the report write it.
    pub fn name(self) -> &'static str {
        match self {
            Choice::BestVal => "best-val",
            Choice::OneSe => "one-se",
        }
    }
}

/// A candidate for the choice: its archive id, its number of rules and its
/// objective on each val question (the same questions, in the same order,
/// for every candidate).
#[derive(Debug, Clone)]
pub struct Contender {
    /// Archive id.
    pub id: usize,
    /// Rules in the policy.
    pub rules: usize,
    /// Per val question.
    pub objectives: Vec<f64>,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// The one-standard-error choice among `contenders` (their order is the
/// archive's); `None` if there are none.
pub fn one_se(contenders: &[Contender]) -> Option<usize> {
    let best = contenders
        .iter()
        .enumerate()
        .fold(None::<usize>, |b, (i, c)| match b {
            Some(j) if mean(&contenders[j].objectives) >= mean(&c.objectives) => Some(j),
            _ => Some(i),
        })?;
    let top = &contenders[best].objectives;
    let within = |c: &Contender| {
        let d: Vec<f64> = top.iter().zip(&c.objectives).map(|(a, b)| a - b).collect();
        let n = d.len() as f64;
        let m = mean(&d);
        let se = if d.len() > 1 {
            (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt()
        } else {
            0.0
        };
        m <= se
    };
    contenders
        .iter()
        .filter(|c| c.objectives.len() == top.len() && within(c))
        .min_by(|a, b| {
            a.rules
                .cmp(&b.rules)
                .then(mean(&b.objectives).total_cmp(&mean(&a.objectives)))
                .then(a.id.cmp(&b.id))
        })
        .map(|c| c.id)
}

/// How val objectives predict test objectives across an archive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ValTest {
    /// Candidates.
    pub n: usize,
    /// Pearson correlation of val and test objectives.
    pub pearson: f64,
    /// Spearman rank correlation.
    pub spearman: f64,
    /// The test rank (1 = best) of the candidate with the best val
    /// objective.
    pub best_val_test_rank: usize,
}

fn pearson(pairs: &[(f64, f64)]) -> f64 {
    let n = pairs.len() as f64;
    if pairs.len() < 2 {
        return f64::NAN;
    }
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let cov: f64 = pairs.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let vx: f64 = pairs.iter().map(|(x, _)| (x - mx).powi(2)).sum();
    let vy: f64 = pairs.iter().map(|(_, y)| (y - my).powi(2)).sum();
    if vx == 0.0 || vy == 0.0 {
        return f64::NAN;
    }
    cov / (vx * vy).sqrt()
}

/// Ranks (average ranks for ties), 1-based.
fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut r = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        for &k in &order[i..=j] {
            r[k] = (i + j) as f64 / 2.0 + 1.0;
        }
        i = j + 1;
    }
    r
}

impl ValTest {
    /// From (val, test) objective pairs.
    pub fn of(pairs: &[(f64, f64)]) -> ValTest {
        let (rv, rt) = (
            ranks(&pairs.iter().map(|p| p.0).collect::<Vec<_>>()),
            ranks(&pairs.iter().map(|p| p.1).collect::<Vec<_>>()),
        );
        let ranked: Vec<(f64, f64)> = rv.into_iter().zip(rt).collect();
        let best = pairs
            .iter()
            .enumerate()
            .max_by(|a, b| a.1 .0.total_cmp(&b.1 .0).then(b.0.cmp(&a.0)))
            .map(|(i, _)| i);
        let best_val_test_rank =
            best.map_or(0, |i| 1 + pairs.iter().filter(|p| p.1 > pairs[i].1).count());
        ValTest {
            n: pairs.len(),
            pearson: pearson(pairs),
            spearman: pearson(&ranked),
            best_val_test_rank,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: usize, rules: usize, objectives: &[f64]) -> Contender {
        Contender {
            id,
            rules,
            objectives: objectives.to_vec(),
        }
    }

    #[test]
    fn the_simplest_within_one_standard_error_wins() {
        // #1 is best; #0 is within noise of it with fewer rules; #2 is far.
        let all = [
            c(0, 1, &[0.5, 0.6, 0.4, 0.7]),
            c(1, 5, &[0.6, 0.5, 0.5, 0.7]),
            c(2, 0, &[0.0, 0.1, 0.0, 0.1]),
        ];
        assert_eq!(one_se(&all), Some(0));
        // Without noise the best stands.
        let exact = [c(0, 1, &[0.5, 0.5]), c(1, 5, &[0.6, 0.6])];
        assert_eq!(one_se(&exact), Some(1));
        assert_eq!(one_se(&[]), None);
        let vt = ValTest::of(&[(0.1, 0.2), (0.2, 0.1), (0.3, 0.4), (0.4, 0.3)]);
        assert!((vt.spearman - 0.6).abs() < 1e-12, "{vt:?}");
        assert_eq!((vt.n, vt.best_val_test_rank), (4, 2));
        let src =
            "policy \"p\"\nrule a when x -> select {S}\n  rule b when y -> select {T}\ndefault all";
        assert_eq!(crate::rules::rule_names(src).len(), 2);
    }
}
