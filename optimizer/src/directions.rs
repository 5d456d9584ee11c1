//! The prior directions the search chooses among, covering the paper's
//! five axes. Each direction is a family of rules the offline proposer
//! knows how to fit on train, and a paragraph the LLM proposer is given.

use serde::{Deserialize, Serialize};

/// The paper's five axes of policy improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Axis {
    /// What the question needs, inferred from its wording and metadata.
    DemandInference,
    /// How much each structure's evidence is worth for this question.
    BackendValueEstimation,
    /// Which combination of structures to read.
    SubsetConstruction,
    /// Whether the retrieved evidence is any good (the previews).
    EvidenceAwareness,
    /// Not overfitting, and not paying tokens for nothing.
    RobustnessAndCostShaping,
}

impl Axis {
    /// The name.
    pub fn name(self) -> &'static str {
        match self {
            Axis::DemandInference => "demand inference",
            Axis::BackendValueEstimation => "backend value estimation",
            Axis::SubsetConstruction => "subset construction",
            Axis::EvidenceAwareness => "evidence awareness",
            Axis::RobustnessAndCostShaping => "robustness and cost shaping",
        }
    }
}

/// A prior direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Direction {
    /// Keyword cues mined from training questions.
    QueryCues,
    /// A lookup on the (gold) question type.
    QtypeRouting,
    /// Keyword cues in the episode's task description.
    TaskCues,
    /// The best subset per domain.
    DomainLookup,
    /// Keyword cues within one domain.
    DomainCues,
    /// Re-fit the masks of the current rules.
    SubsetRefit,
    /// Gates on the previews' hits and top scores.
    PreviewGates,
    /// Gates on what the evidence shows: the named steps, two structures'
    /// overlap, how concentrated the scores are, how many steps.
    EvidenceGates,
    /// Per-structure thresholds on the retrieval score.
    BackendValue,
    /// Remove costly structures with low marginal utility.
    CostTrim,
    /// A token budget.
    Budget,
    /// After the rules, the subset of the mask that shows the most for its
    /// tokens (`trade words|steps at P`).
    Trade,
    /// Drop rules that do not pay for themselves.
    Prune,
}

impl Direction {
    /// Every direction, in order.
    pub const ALL: [Direction; 13] = [
        Direction::QueryCues,
        Direction::QtypeRouting,
        Direction::TaskCues,
        Direction::DomainLookup,
        Direction::DomainCues,
        Direction::SubsetRefit,
        Direction::PreviewGates,
        Direction::EvidenceGates,
        Direction::BackendValue,
        Direction::CostTrim,
        Direction::Budget,
        Direction::Trade,
        Direction::Prune,
    ];

    /// The directions usable with or without the question type, and with
    /// or without the sweep's subset counts (`trade` needs them).
    pub fn available(hide_qtype: bool, shown: bool) -> Vec<Direction> {
        Direction::ALL
            .into_iter()
            .filter(|d| !(hide_qtype && *d == Direction::QtypeRouting))
            .filter(|d| shown || *d != Direction::Trade)
            .collect()
    }

    /// The name, as archived.
    pub fn name(self) -> &'static str {
        match self {
            Direction::QueryCues => "query-cues",
            Direction::QtypeRouting => "qtype-routing",
            Direction::TaskCues => "task-cues",
            Direction::DomainLookup => "domain-lookup",
            Direction::DomainCues => "domain-cues",
            Direction::SubsetRefit => "subset-refit",
            Direction::PreviewGates => "preview-gates",
            Direction::EvidenceGates => "evidence-gates",
            Direction::BackendValue => "backend-value",
            Direction::CostTrim => "cost-trim",
            Direction::Budget => "budget",
            Direction::Trade => "trade",
            Direction::Prune => "prune",
        }
    }

    /// The axis it belongs to.
    pub fn axis(self) -> Axis {
        match self {
            Direction::QueryCues | Direction::QtypeRouting | Direction::TaskCues => {
                Axis::DemandInference
            }
            Direction::DomainLookup | Direction::DomainCues | Direction::SubsetRefit => {
                Axis::SubsetConstruction
            }
            Direction::PreviewGates | Direction::EvidenceGates => Axis::EvidenceAwareness,
            Direction::BackendValue => Axis::BackendValueEstimation,
            Direction::CostTrim | Direction::Budget | Direction::Trade | Direction::Prune => {
                Axis::RobustnessAndCostShaping
            }
        }
    }

    /// What to try, for the LLM proposer's prompt and the reports.
    pub fn description(self) -> &'static str {
        match self {
            Direction::QueryCues => "Infer what the question needs from its wording: keyword sets (`words [...]`) or patterns whose presence in the query shifts the best subset, each routed to the subset that serves it.",
            Direction::QtypeRouting => "Route on the question type (`qtype is X`): recall, causal, state-update and abstraction questions need different structures.",
            Direction::TaskCues => "Use the episode's task description (`task has ...`): what the agent was doing says which structures hold the answer.",
            Direction::DomainLookup => "Pick the best subset per domain (`domain is X -> select {...}`).",
            Direction::DomainCues => "Combine domain and wording: within a domain, specific keywords call for specific structures (`domain is X and query has ...`).",
            Direction::SubsetRefit => "Keep the current conditions but choose better masks for them: each rule's subset should be the best for the questions that rule decides.",
            Direction::PreviewGates => "Be evidence-aware: drop a structure whose preview shows nothing (`preview.K.hits == 0`) or a weak match (`preview.K.top < t`), or add one whose preview is strong.",
            Direction::EvidenceGates => "Read what the evidence shows before choosing: whether a structure shows the steps the question names (`preview.K.named`, -1 when it names none), how much two structures show the same steps (`preview.T.overlap_R`: one of them may be redundant), how concentrated a structure's scores are (`preview.K.share`, `preview.K.gap`), how many steps it shows (`preview.K.steps`).",
            Direction::BackendValue => "Estimate each structure's value from its retrieval score: add a structure when `preview.K.top` is high, or score structures and `select top k by score above x`.",
            Direction::CostTrim => "Shape cost: remove costly structures whose marginal utility does not pay for their tokens (`preview.K.tokens > t -> remove {K}`, or smaller masks).",
            Direction::Budget => "Cap the evidence with a token budget (`budget N tokens`), dropping the costliest structures first.",
            Direction::Trade => "Weigh tokens against what the evidence shows: `trade words at P` (or `steps`) after the rules keeps, per question, the subset of the mask with the highest share of all five's distinct content words (or steps) less P times its share of all five's tokens; P between 0.05 and 1, higher reads less.",
            Direction::Prune => "Be robust: drop rules that fire rarely or do not pay for themselves, merge rules with the same subset, prefer few general rules over many specific ones.",
        }
    }

    /// Reads a name.
    #[cfg(test)]
    pub fn from_name(s: &str) -> Option<Direction> {
        Direction::ALL.into_iter().find(|d| d.name() == s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cover_five_axes_with_eight_or_more() {
        for (hide, shown) in [(false, true), (true, true), (true, false)] {
            let ds = Direction::available(hide, shown);
            assert!(ds.len() >= 8);
            assert_eq!(ds.contains(&Direction::Trade), shown);
            assert_eq!(ds.contains(&Direction::QtypeRouting), !hide);
            let mut axes: Vec<Axis> = ds.iter().map(|d| d.axis()).collect();
            axes.dedup();
            for axis in [
                Axis::DemandInference,
                Axis::BackendValueEstimation,
                Axis::SubsetConstruction,
                Axis::EvidenceAwareness,
                Axis::RobustnessAndCostShaping,
            ] {
                assert!(axes.contains(&axis), "{axis:?}");
            }
        }
        for d in Direction::ALL {
            assert_eq!(Direction::from_name(d.name()), Some(d));
        }
    }
}
