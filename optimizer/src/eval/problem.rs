//! A sweep prepared for evaluation: the labelled questions, each with its
//! policy input built once, and its per-mask objective.

use super::EvalError;
use crate::split::{Split, Splits, ValHalf};
use crate::sweep::Sweep;
use mesa_core::{Input, Mask, Shown, Structure};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One labelled question, ready to select for and score.
#[derive(Debug, Clone)]
pub struct Question {
    /// Index of the record in the sweep.
    pub record: usize,
    /// Its episode.
    pub episode: String,
    /// Its episode as a number: episodes numbered in the order they first
    /// appear in the sweep (so that counting a set of questions' episodes
    /// compares numbers, not ids).
    pub episode_no: u32,
    /// Its id.
    pub question_id: String,
    /// Its domain.
    pub domain: String,
    /// Its question type (kept for breakdowns even when hidden from policies).
    pub qtype: Option<String>,
    /// Utility per mask index.
    pub utility: [f64; Mask::SUBSETS],
    /// Evidence tokens per mask index.
    pub tokens: [f64; Mask::SUBSETS],
    /// `utility - lambda * tokens` per mask index.
    pub objective: [f64; Mask::SUBSETS],
    /// What a policy reads for this question.
    pub input: Input,
}

/// Which inputs policies saw: reports state it, because the paper's
/// selector read gold question-type labels, which a deployed agent lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputsSeen {
    /// Query text.
    pub query: bool,
    /// Task description.
    pub task: bool,
    /// Domain.
    pub domain: bool,
    /// Question type (false with `--no-qtype`).
    pub qtype: bool,
    /// Structures whose previews (`tokens`, `top`, `hits`) the sweep carries.
    pub previews: Vec<String>,
}

impl InputsSeen {
    /// One line for reports.
    pub fn describe(&self) -> String {
        let mut parts = vec!["query", "task", "domain"];
        if self.qtype {
            parts.push("qtype (gold labels)");
        }
        let previews = if self.previews.is_empty() {
            "no previews".to_string()
        } else {
            format!("previews of {}", self.previews.join(", "))
        };
        let hidden = if self.qtype {
            ""
        } else {
            "; qtype hidden (--no-qtype)"
        };
        format!("{}, {previews}{hidden}", parts.join(", "))
    }
}

/// The labelled questions of a sweep with a fixed `lambda`.
#[derive(Debug, Clone)]
pub struct Problem {
    /// The labelled questions, in file order.
    pub questions: Vec<Question>,
    /// The token price in the objective.
    pub lambda: f64,
    /// Whether the question type is hidden from policies.
    pub hide_qtype: bool,
    /// Structures whose previews every record carries.
    pub available: [bool; 5],
    /// Whether every record carries what each subset shows (the counts a
    /// trading policy reads).
    pub shown_available: bool,
    /// Records in the sweep (labelled or not).
    pub total_records: usize,
    /// Every episode of the sweep (labelled questions or not), for splits.
    pub episodes: Vec<String>,
    /// Distinct domains of the labelled questions, sorted.
    pub domains: Vec<String>,
    /// Distinct question types of the labelled questions, sorted.
    pub qtypes: Vec<String>,
    /// The sweep's path, for messages.
    pub source: String,
}

impl Problem {
    /// The highest token price: at 1 a single token weighs as much as all
    /// of a question's utility, so higher prices rank nothing differently
    /// and only risk overflowing the objectives.
    pub const MAX_LAMBDA: f64 = 1.0;

    /// Prepares `sweep` for evaluation.
    pub fn new(sweep: &Sweep, lambda: f64, hide_qtype: bool) -> Result<Problem, EvalError> {
        if !(0.0..=Self::MAX_LAMBDA).contains(&lambda) {
            return Err(EvalError::Lambda(lambda));
        }
        let available = sweep.available_previews();
        let mut questions = Vec::new();
        let mut domains = BTreeSet::new();
        let mut qtypes = BTreeSet::new();
        let mut numbers: std::collections::HashMap<&str, u32> = Default::default();
        for (i, r) in sweep.records.iter().enumerate() {
            if !r.labelled {
                continue;
            }
            let objective: [f64; Mask::SUBSETS] =
                std::array::from_fn(|k| r.utility[k] - lambda * r.tokens[k]);
            domains.insert(r.domain.clone());
            if let Some(t) = &r.qtype {
                qtypes.insert(t.clone());
            }
            let mut previews = r.previews;
            if let Some(c) = &r.coverage {
                for unit in Shown::ALL {
                    previews.set_shown(unit, c.counts(unit));
                }
            }
            let next = numbers.len() as u32;
            let episode_no = *numbers.entry(r.episode.as_str()).or_insert(next);
            questions.push(Question {
                record: i,
                episode: r.episode.clone(),
                episode_no,
                question_id: r.question_id.clone(),
                domain: r.domain.clone(),
                qtype: r.qtype.clone(),
                utility: r.utility,
                tokens: r.tokens,
                objective,
                input: Input {
                    query: r.query.clone(),
                    task: Some(r.task.clone()),
                    domain: Some(r.domain.clone()),
                    qtype: if hide_qtype { None } else { r.qtype.clone() },
                    previews,
                },
            });
        }
        if questions.is_empty() {
            return Err(EvalError::NoLabelled(sweep.path.display().to_string()));
        }
        Ok(Problem {
            questions,
            lambda,
            hide_qtype,
            available,
            shown_available: sweep.records.iter().all(|r| r.coverage.is_some()),
            total_records: sweep.records.len(),
            episodes: sweep.records.iter().map(|r| r.episode.clone()).collect(),
            domains: domains.into_iter().collect(),
            qtypes: qtypes.into_iter().collect(),
            source: sweep.path.display().to_string(),
        })
    }

    /// The splits of this problem's episodes for `seed`.
    pub fn splits(&self, seed: u64) -> Result<Splits, EvalError> {
        Ok(Splits::new(self.episodes.iter().map(String::as_str), seed)?)
    }

    /// Indices of the questions in `split`.
    pub fn indices(&self, splits: &Splits, split: Split) -> Vec<usize> {
        self.indices_in(splits, split, None)
    }

    /// Indices of the questions in `split` and, for val with `half`, in
    /// that half of it.
    pub fn indices_in(&self, splits: &Splits, split: Split, half: Option<ValHalf>) -> Vec<usize> {
        self.questions
            .iter()
            .enumerate()
            .filter(|(_, q)| splits.holds(&q.episode, split, half))
            .map(|(i, _)| i)
            .collect()
    }

    /// A split's questions and their inputs, copied once so that a warm
    /// engine can select the whole split in one batch.
    pub fn split_data(&self, splits: &Splits, split: Split) -> Result<SplitData, EvalError> {
        self.split_data_in(splits, split, None)
    }

    /// [`Problem::split_data`] of one half of val (`half` is ignored for
    /// the other splits).
    pub fn split_data_in(
        &self,
        splits: &Splits,
        split: Split,
        half: Option<ValHalf>,
    ) -> Result<SplitData, EvalError> {
        let idx = self.indices_in(splits, split, half);
        if idx.is_empty() {
            return Err(EvalError::EmptySplit {
                split,
                seed: splits.seed,
                half: half.filter(|_| split == Split::Val),
            });
        }
        let inputs = idx
            .iter()
            .map(|&i| self.questions[i].input.clone())
            .collect();
        Ok(SplitData { split, idx, inputs })
    }

    /// What policies see.
    pub fn inputs_seen(&self) -> InputsSeen {
        InputsSeen {
            query: true,
            task: true,
            domain: true,
            qtype: !self.hide_qtype,
            previews: Structure::ALL
                .into_iter()
                .filter(|s| self.available[s.index()])
                .map(|s| s.letter().to_string())
                .collect(),
        }
    }

    /// The best mask index of question `i` by objective (ties: the lower
    /// index, i.e. the smaller bit pattern).
    pub fn oracle(&self, i: usize) -> usize {
        argmax(&self.questions[i].objective)
    }
}

/// The index of the largest value (the first on ties).
pub fn argmax(values: &[f64]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

/// One split of a [`Problem`]: question indices and their inputs.
#[derive(Debug, Clone)]
pub struct SplitData {
    /// Which split.
    pub split: Split,
    /// Indices into [`Problem::questions`].
    pub idx: Vec<usize>,
    /// The inputs, in the order of `idx`.
    pub inputs: Vec<Input>,
}

impl SplitData {
    /// This split's questions and `other`'s together, in question order
    /// (`idx` stays sorted), labelled with this split.
    pub fn joined(&self, other: &SplitData) -> SplitData {
        let mut rows: Vec<(usize, &Input)> = self
            .idx
            .iter()
            .copied()
            .zip(&self.inputs)
            .chain(other.idx.iter().copied().zip(&other.inputs))
            .collect();
        rows.sort_by_key(|(i, _)| *i);
        rows.dedup_by_key(|(i, _)| *i);
        SplitData {
            split: self.split,
            idx: rows.iter().map(|(i, _)| *i).collect(),
            inputs: rows.into_iter().map(|(_, x)| x.clone()).collect(),
        }
    }
}
