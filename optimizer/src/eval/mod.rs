//! Evaluation: a sweep prepared for policies, the metrics of a choice of
//! masks on a split, and policies compiled to Wasm and run in the sandbox.
//!
//! For one question and mask `m`, the sweep gives the utility `u(m)` and the
//! evidence tokens `c(m)`. A policy's choices on a split give
//! `J` = mean utility, `C` = mean tokens and the objective `J - lambda * C`.

pub mod engine;
pub mod metrics;
pub mod problem;
pub mod run;

pub use engine::CandidateFailure;
pub use metrics::{Breakdown, Metrics, MetricsAgg, Stat};
pub use problem::{InputsSeen, Problem, SplitData};
pub use run::{evaluate_policy, EvalOptions, EvalReport, PolicyFile};

fn half_of(half: Option<crate::split::ValHalf>) -> String {
    half.map_or(String::new(), |h| format!("'s {} half", h.name()))
}

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The sweep could not be read.
    #[error(transparent)]
    Sweep(#[from] crate::sweep::SweepError),
    /// The sweep cannot be split.
    #[error(transparent)]
    Split(#[from] crate::split::SplitError),
    /// The sweep has no labelled question.
    #[error("{0}: no question is labelled, so there is nothing to evaluate on; each utility labels its own questions (evidence recall: a step named in the question, its answer or its `evidence`; answer coverage: an answer with content words; docs/DATA.md): sweep another --utility, or add those to the dataset")]
    NoLabelled(String),
    /// A split has no labelled question for some seed.
    #[error("the {split} split{} of seed {seed} has no labelled question; use a larger sweep{}", half_of(*.half), if half.is_some() { ", or choose on all of val (no --val-half)" } else { "" })]
    EmptySplit {
        /// The split.
        split: crate::split::Split,
        /// The seed.
        seed: u64,
        /// The half of val asked for, if only one was.
        half: Option<crate::split::ValHalf>,
    },
    /// `lambda` is not a number from 0 to [`Problem::MAX_LAMBDA`].
    #[error("--lambda must be a token price from 0 to {max} (1e-6 weighs a million tokens as all of a question's utility), got {0}", max = Problem::MAX_LAMBDA)]
    Lambda(f64),
    /// The policy file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The policy was rejected or failed in the sandbox.
    #[error("{path}: {failure}")]
    Policy {
        /// The policy file.
        path: String,
        /// What failed.
        failure: CandidateFailure,
    },
    /// The Wasm runtime could not be created.
    #[error("cannot start the Wasm runtime: {0}")]
    Runtime(#[from] mesa_runtime::LoadError),
    /// A cross-fitted choice needs one pair of policies per policy.
    #[error("{pairs} --cross-fit pair(s) for {policies} --policy file(s); give one pair per policy, in the same order")]
    CrossFitPairs {
        /// Policies given.
        policies: usize,
        /// Pairs given.
        pairs: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::EvalError;
    use crate::split::{Split, ValHalf};

    /// An empty half of val is named as the half, with the way out of
    /// choosing on all of val; a whole split is named as it is.
    #[test]
    fn an_empty_split_names_the_half_asked_for() {
        let half = EvalError::EmptySplit {
            split: Split::Val,
            seed: 3,
            half: Some(ValHalf::Choice),
        };
        assert_eq!(
            half.to_string(),
            "the val split's choice half of seed 3 has no labelled question; use a larger sweep, or choose on all of val (no --val-half)"
        );
        let whole = EvalError::EmptySplit {
            split: Split::Test,
            seed: 0,
            half: None,
        };
        assert_eq!(
            whole.to_string(),
            "the test split of seed 0 has no labelled question; use a larger sweep"
        );
    }
}
