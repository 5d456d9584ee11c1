//! Episode-level train/val/test splits, 2:2:6, deterministic per seed.
//!
//! The recipe, so that any tool can reproduce a split: take the distinct
//! episode ids; give each the key `mix64(fnv1a64(id) ^ mix64(seed))` (64-bit
//! FNV-1a of the id's UTF-8 bytes, SplitMix64's finalizer, both in
//! [`crate::rng`]); sort by (key, id); the first `round(0.2 n)` episodes are
//! train, the next `round(0.2 n)` val and the rest test (`round` is half
//! up). Questions go wherever their episode goes, so no episode is seen in
//! two splits. The file order of the sweep does not matter.
//!
//! Val has two halves, in the same key order: its first `ceil(v / 2)`
//! episodes are the *search* half and the rest the *choice* half
//! ([`ValHalf`]). A search that compares its candidates on the search half
//! only (`mesa optimize --val-half search`) leaves the choice half unseen,
//! so that `mesa frontier --val-half choice` can choose among such runs
//! (one per token price) on episodes that chose none of them.

use crate::rng::{fnv1a64, mix64};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The default seeds of a multi-seed evaluation: 0, 1, 2, 3, 4.
pub const DEFAULT_SEEDS: usize = 5;

/// One of the three splits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Split {
    /// 20% of episodes: rules are fitted here.
    Train,
    /// 20%: candidates are compared here.
    Val,
    /// 60%: the frozen best is tested here once.
    Test,
}

impl Split {
    /// The name (`train`, `val`, `test`).
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Val => "val",
            Split::Test => "test",
        }
    }

    /// Reads a name.
    pub fn from_name(s: &str) -> Option<Split> {
        match s {
            "train" => Some(Split::Train),
            "val" => Some(Split::Val),
            "test" => Some(Split::Test),
            _ => None,
        }
    }
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One of val's two halves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValHalf {
    /// The first half: where a search compares its candidates.
    Search,
    /// The second: where runs are chosen among.
    Choice,
}

impl ValHalf {
    /// The name (`search`, `choice`).
    pub fn name(self) -> &'static str {
        match self {
            ValHalf::Search => "search",
            ValHalf::Choice => "choice",
        }
    }
}

/// What a search fits its rules on, and compares its candidates on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FitOn {
    /// Rules fitted on train, candidates compared on val (or its half).
    #[default]
    Train,
    /// Rules fitted on train and val (or its half) together, and candidates
    /// compared on the same questions: twice the questions to fit on (1.5
    /// times with a half of val), with no held-out comparison inside the
    /// search. The split it leaves out
    /// (val's other half, with `--val-half`) is what then judges the run,
    /// as `mesa frontier --cross-fit` does.
    #[serde(rename = "train+val")]
    TrainVal,
}

impl FitOn {
    /// The name (`train`, `train+val`).
    pub fn name(self) -> &'static str {
        match self {
            FitOn::Train => "train",
            FitOn::TrainVal => "train+val",
        }
    }
}

/// Why episodes cannot be split.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SplitError {
    /// Fewer than five episodes leave a split empty.
    #[error("the sweep has {0} episode(s); 2:2:6 train/val/test splits need at least 5")]
    TooFewEpisodes(usize),
}

/// The assignment of episodes to splits for one seed.
#[derive(Debug, Clone)]
pub struct Splits {
    /// The seed.
    pub seed: u64,
    /// Each episode's split, and for val its half.
    of: HashMap<String, (Split, Option<ValHalf>)>,
    counts: [usize; 3],
}

impl Splits {
    /// Splits the distinct episodes among `episodes` (repeats are fine).
    pub fn new<'a>(
        episodes: impl IntoIterator<Item = &'a str>,
        seed: u64,
    ) -> Result<Splits, SplitError> {
        let mut ids: Vec<&str> = episodes.into_iter().collect();
        ids.sort_unstable();
        ids.dedup();
        let n = ids.len();
        if n < 5 {
            return Err(SplitError::TooFewEpisodes(n));
        }
        let s = mix64(seed);
        let mut keyed: Vec<(u64, &str)> = ids
            .into_iter()
            .map(|id| (mix64(fnv1a64(id.as_bytes()) ^ s), id))
            .collect();
        keyed.sort_unstable();
        let n_train = (2 * n + 5) / 10;
        let n_val = (2 * n + 5) / 10;
        let mut of = HashMap::with_capacity(n);
        for (i, (_, id)) in keyed.into_iter().enumerate() {
            let place = if i < n_train {
                (Split::Train, None)
            } else if i < n_train + n_val.div_ceil(2) {
                (Split::Val, Some(ValHalf::Search))
            } else if i < n_train + n_val {
                (Split::Val, Some(ValHalf::Choice))
            } else {
                (Split::Test, None)
            };
            of.insert(id.to_string(), place);
        }
        Ok(Splits {
            seed,
            of,
            counts: [n_train, n_val, n - n_train - n_val],
        })
    }

    /// The split of an episode (`None` for an episode not seen at construction).
    pub fn of(&self, episode: &str) -> Option<Split> {
        self.of.get(episode).map(|&(split, _)| split)
    }

    /// Whether an episode is in `split` and, for val with `half`, in that
    /// half of it.
    pub fn holds(&self, episode: &str, split: Split, half: Option<ValHalf>) -> bool {
        self.of
            .get(episode)
            .is_some_and(|&(s, h)| s == split && (s != Split::Val || half.is_none() || h == half))
    }

    /// Episodes per split: train, val, test.
    pub fn episode_counts(&self) -> [usize; 3] {
        self.counts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_disjoint_and_2_2_6() {
        let eps: Vec<String> = (0..208).map(|i| i.to_string()).collect();
        let a = Splits::new(eps.iter().map(String::as_str), 3).unwrap();
        let b = Splits::new(eps.iter().rev().map(String::as_str), 3).unwrap();
        for e in &eps {
            assert_eq!(a.of(e), b.of(e), "order of input must not matter");
        }
        assert_eq!(a.episode_counts(), [42, 42, 124]);
        let c = Splits::new(eps.iter().map(String::as_str), 4).unwrap();
        let differ = eps.iter().filter(|e| a.of(e) != c.of(e)).count();
        assert!(differ > 50, "another seed gives another split ({differ})");
        // Pinned: the recipe in the module docs must not drift.
        let ten: Vec<String> = (0..10).map(|i| format!("ep{i}")).collect();
        let s = Splits::new(ten.iter().map(String::as_str), 0).unwrap();
        assert_eq!(s.episode_counts(), [2, 2, 6]);
        let train: Vec<&String> = ten
            .iter()
            .filter(|e| s.of(e) == Some(Split::Train))
            .collect();
        let mut keyed: Vec<(u64, &String)> = ten
            .iter()
            .map(|id| (mix64(fnv1a64(id.as_bytes()) ^ mix64(0)), id))
            .collect();
        keyed.sort();
        let mut expect: Vec<&String> = keyed[..2].iter().map(|(_, id)| *id).collect();
        expect.sort();
        let mut got = train.clone();
        got.sort();
        assert_eq!(got, expect);
        // Val's halves: the first ceil(v / 2) of its episodes in key order
        // are the search half, and the two halves are disjoint and cover it.
        let val: Vec<&String> = keyed[2..4].iter().map(|(_, id)| *id).collect();
        assert!(s.holds(val[0], Split::Val, Some(ValHalf::Search)));
        assert!(!s.holds(val[0], Split::Val, Some(ValHalf::Choice)));
        assert!(s.holds(val[1], Split::Val, Some(ValHalf::Choice)));
        assert!(s.holds(val[1], Split::Val, None));
        assert!(!s.holds(val[1], Split::Train, None));
        let halves = |h| {
            eps.iter()
                .filter(|e| a.holds(e, Split::Val, Some(h)))
                .count()
        };
        assert_eq!((halves(ValHalf::Search), halves(ValHalf::Choice)), (21, 21));
        assert_eq!(
            Splits::new(["a", "b", "a"], 0).unwrap_err(),
            SplitError::TooFewEpisodes(2)
        );
    }
}
