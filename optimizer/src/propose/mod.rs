//! Proposers: where candidate policies come from. The offline proposer
//! fits rules on train and writes them through the syntax tree; the LLM
//! proposer asks an OpenAI-compatible endpoint.

pub mod cues;
pub mod learn;
pub mod llm;
pub mod offline;
pub mod spec;
mod trade;

use crate::archive::ArchiveEntry;
use crate::directions::Direction;
use crate::eval::engine::{CandidateFailure, Diag};
use crate::eval::{InputsSeen, Problem, SplitData};

use mesa_core::Mask;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

pub use llm::{LlmOptions, LlmProposer, LlmTrace};
pub use offline::OfflineProposer;
pub use spec::PolicySpec;

/// What a candidate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The starting policy (best fixed subset on train), before any iteration.
    Seed,
    /// Build on the best candidate in the UCB-chosen direction.
    Exploit,
    /// Try the least-explored direction, with other settings.
    Explore,
    /// Fix the best candidate's most frequent errors.
    Repair,
}

impl Mode {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Seed => "seed",
            Mode::Exploit => "exploit",
            Mode::Explore => "explore",
            Mode::Repair => "repair",
        }
    }

    /// The three kinds proposed every iteration, in order.
    pub const ITERATION: [Mode; 3] = [Mode::Exploit, Mode::Explore, Mode::Repair];
}

/// A direction's UCB statistics, as shown to the LLM and in reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionStat {
    /// The direction.
    pub direction: String,
    /// Its axis.
    pub axis: String,
    /// Candidates so far.
    pub n: u64,
    /// Mean val objective (failures at the floor).
    pub mean: f64,
    /// UCB score.
    pub ucb: f64,
}

/// A recurring error of a policy on train: questions of one domain (and
/// type, when visible) where it chose one mask and lost against the oracle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// The domain.
    pub domain: String,
    /// The question type, when policies may see it.
    pub qtype: Option<String>,
    /// What the policy chose.
    pub chosen: Mask,
    /// The single mask that would have done best for the group.
    pub better: Mask,
    /// Questions in the group with a loss.
    pub count: usize,
    /// Total objective lost against the per-question oracle.
    pub regret: f64,
    /// Objective the group would gain with `better` instead of `chosen`.
    pub fixable: f64,
    /// A few of the questions.
    pub examples: Vec<String>,
}

/// The worst error groups of `masks` (one per position of `idx`), by
/// fixable objective, at most `limit`.
pub fn error_groups(
    problem: &Problem,
    idx: &[usize],
    masks: &[Mask],
    limit: usize,
) -> Vec<ErrorGroup> {
    /// Domain, visible question type, chosen mask bits.
    type Key = (String, Option<String>, u8);
    /// Count, regret, objective sums per mask, examples, chosen objective.
    type Acc = (usize, f64, [f64; Mask::SUBSETS], Vec<String>, f64);
    let mut groups: HashMap<Key, Acc> = HashMap::new();
    for (&i, &m) in idx.iter().zip(masks) {
        let q = &problem.questions[i];
        let Some(k) = Mask::subset_index(m) else {
            continue;
        };
        let best = problem.oracle(i);
        let regret = q.objective[best] - q.objective[k];
        if regret <= 1e-12 {
            continue;
        }
        let key = (q.domain.clone(), q.input.qtype.clone(), m.bits());
        let g = groups
            .entry(key)
            .or_insert_with(|| (0, 0.0, [0.0; Mask::SUBSETS], Vec::new(), 0.0));
        g.0 += 1;
        g.1 += regret;
        for (s, v) in g.2.iter_mut().zip(q.objective.iter()) {
            *s += v;
        }
        g.4 += q.objective[k];
        if g.3.len() < 3 {
            g.3.push(q.input.query.clone());
        }
    }
    let mut out: Vec<ErrorGroup> = groups
        .into_iter()
        .map(
            |((domain, qtype, bits), (count, regret, sums, examples, chosen_sum))| {
                let b = crate::eval::problem::argmax(&sums);
                ErrorGroup {
                    domain,
                    qtype,
                    chosen: Mask::from_bits(bits),
                    better: Mask::subset(b),
                    count,
                    regret,
                    fixable: sums[b] - chosen_sum,
                    examples,
                }
            },
        )
        .collect();
    out.sort_by(|a, b| {
        b.fixable
            .total_cmp(&a.fixable)
            .then(b.regret.total_cmp(&a.regret))
            .then_with(|| {
                (&a.domain, &a.qtype, a.chosen.bits()).cmp(&(&b.domain, &b.qtype, b.chosen.bits()))
            })
    });
    out.truncate(limit);
    out
}

/// What makes two candidates the same policy: the canonical layout
/// without the `policy "name"` header (candidates differ in name only
/// when a proposer found nothing new).
pub fn policy_key(source: &str) -> String {
    let text = mesa_grammar::format_source(source).unwrap_or_else(|_| source.to_string());
    text.lines()
        .filter(|l| !l.starts_with("policy "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything a proposer may use.
pub struct ProposeContext<'a> {
    /// The sweep's labelled questions.
    pub problem: &'a Problem,
    /// The train split (rules are fitted here).
    pub train: &'a SplitData,
    /// The direction to work in.
    pub direction: Direction,
    /// Exploit, explore or repair.
    pub mode: Mode,
    /// The iteration (1-based).
    pub iteration: usize,
    /// The run's seed.
    pub seed: u64,
    /// The candidate to build on.
    pub parent: Option<&'a ArchiveEntry>,
    /// The archive's best valid candidates, best first.
    pub top: Vec<&'a ArchiveEntry>,
    /// UCB statistics per direction.
    pub ucb: Vec<DirectionStat>,
    /// The parent's recurring errors on train.
    pub errors: Vec<ErrorGroup>,
    /// What policies may read.
    pub inputs: InputsSeen,
    /// The [`policy_key`]s of the candidates evaluated so far (a proposer
    /// may try harder rather than propose one of them again).
    pub known: &'a HashMap<String, usize>,
}

/// A proposer's answer.
#[derive(Debug, Clone, Default)]
pub struct Proposal {
    /// The policy source, or why there is none.
    pub source: Option<String>,
    /// Why there is no source.
    pub failure: Option<CandidateFailure>,
    /// The offline proposer's rule list.
    pub spec: Option<PolicySpec>,
    /// What was done, in words.
    pub note: String,
    /// The LLM exchange's summary.
    pub llm: Option<LlmTrace>,
}

/// Checks a candidate the way the search will (check, inputs, compile), so
/// that a proposer can repair it first.
pub type Validator<'a> = dyn Fn(&str) -> Result<(), CandidateFailure> + 'a;

/// A source of candidate policies.
pub trait Proposer {
    /// `offline` or `llm`.
    fn name(&self) -> &'static str;

    /// Proposes one candidate.
    fn propose(&mut self, ctx: &ProposeContext<'_>, validate: &Validator<'_>) -> Proposal;
}

/// Applies every machine-applicable suggestion of the error diagnostics
/// (non-overlapping ones, from the end of the text backwards). Returns the
/// new text when anything changed.
pub fn apply_suggestions(source: &str, diags: &[Diag]) -> Option<String> {
    let mut fixes: Vec<(usize, usize, &str)> = diags
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| d.suggestion.as_ref())
        .map(|s| (s.byte_start, s.byte_end, s.replacement.as_str()))
        .filter(|(a, b, _)| a <= b && *b <= source.len())
        .filter(|(a, b, _)| source.is_char_boundary(*a) && source.is_char_boundary(*b))
        .collect();
    fixes.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut text = source.to_string();
    let mut last_start = usize::MAX;
    let mut changed = false;
    for (a, b, r) in fixes {
        if b > last_start {
            continue; // overlaps a fix already applied
        }
        text.replace_range(a..b, r);
        last_start = a;
        changed = true;
    }
    (changed && text != source).then_some(text)
}
