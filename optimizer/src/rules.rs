//! What each rule of a policy does on a split: how many questions it
//! decides (its support) and what it adds to the split's objective against
//! reading all five structures for them (its gain), so that a reader can
//! see which rules carry a learned policy and which fit noise.

use crate::eval::Problem;
use mesa_core::{Mask, Selection};
use serde::{Deserialize, Serialize};

/// One rule (or the default) on train and val.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleStat {
    /// The rule's name, or `default`.
    pub name: String,
    /// Train questions it decides.
    pub train_support: usize,
    /// Its gain on train: over the questions it decides, the objective of
    /// its choice minus that of all five, divided by all train questions.
    pub train_gain: f64,
    /// Val questions it decides.
    pub val_support: usize,
    /// Its gain on val.
    pub val_gain: f64,
}

/// The rule names of a policy's source, in order (`rule NAME ...` lines).
pub fn rule_names(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("rule "))
        .map(|rest| rest.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// Support and gain of rule `r` (`None`: the default) over `idx` and the
/// selections made for them (in the same order).
fn of(problem: &Problem, idx: &[usize], sel: &[Selection], r: Option<usize>) -> (usize, f64) {
    let all = Mask::subset_index(Mask::ALL).unwrap_or(Mask::SUBSETS - 1);
    let (mut n, mut gain) = (0, 0.0);
    for (&i, s) in idx.iter().zip(sel) {
        if s.rule != r {
            continue;
        }
        n += 1;
        let o = &problem.questions[i].objective;
        gain += Mask::subset_index(s.mask).map_or(0.0, |k| o[k]) - o[all];
    }
    (
        n,
        if idx.is_empty() {
            0.0
        } else {
            gain / idx.len() as f64
        },
    )
}

/// Every rule's (and the default's) support and gain.
pub fn rule_stats(
    problem: &Problem,
    names: &[String],
    train: (&[usize], &[Selection]),
    val: (&[usize], &[Selection]),
) -> Vec<RuleStat> {
    let rules = (0..names.len()).map(Some).chain([None]);
    rules
        .map(|r| {
            let (train_support, train_gain) = of(problem, train.0, train.1, r);
            let (val_support, val_gain) = of(problem, val.0, val.1, r);
            RuleStat {
                name: r.map_or("default".into(), |k| names[k].clone()),
                train_support,
                train_gain,
                val_support,
                val_gain,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_names_in_order() {
        let src = "policy \"p\"\nrule steps when query matches std.stepref -> select {T}\n  rule b when domain is GAME -> select {S}\ndefault all\n";
        assert_eq!(rule_names(src), vec!["steps", "b"]);
    }
}
