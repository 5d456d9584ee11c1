//! The offline proposer: fits rules of the chosen direction on train and
//! writes the policy through the syntax tree and the formatter, so the
//! whole search runs without a network.
//!
//! - exploit: the direction applied to the best candidate so far;
//! - explore: the direction applied to one of the five best candidates,
//!   with other fitting settings (drawn from the run seed and iteration);
//! - repair: rules placed first that fix the best candidate's worst error
//!   groups (conditions of the direction, and generic ones, restricted to
//!   the group's domain and type).

use super::learn::{Fit, Insert, Params};
use super::spec::{Act, Cond, FeatTable, PolicySpec};
use super::{Mode, Proposal, ProposeContext, Proposer, Validator};
use crate::directions::Direction;
use crate::rng::Rng;
use mesa_core::Feature;

/// The evidence-aware features the `evidence-gates` direction thresholds
/// (overlaps once per pair: see [`Fit::preview_gates`]).
const EVIDENCE_FEATURES: [Feature; 9] = [
    Feature::Steps,
    Feature::Gap,
    Feature::Share,
    Feature::Named,
    Feature::OverlapT,
    Feature::OverlapG,
    Feature::OverlapV,
    Feature::OverlapR,
    Feature::OverlapS,
];

/// What a gate direction thresholds, and the prefix of its rules' names.
fn gates_of(d: Direction) -> (&'static [Feature], &'static str) {
    match d {
        Direction::PreviewGates => (&[Feature::Hits, Feature::Top], "gate"),
        _ => (&EVIDENCE_FEATURES, "evidence"),
    }
}

/// The offline proposer.
pub struct OfflineProposer {
    table: FeatTable,
    /// The prices the `trade` direction tries.
    trade_prices: Vec<f64>,
}

impl OfflineProposer {
    /// A proposer over `problem`'s questions whose `trade` direction tries
    /// `trade_prices`.
    pub fn new(problem: &crate::eval::Problem, trade_prices: &[f64]) -> OfflineProposer {
        OfflineProposer {
            table: FeatTable::new(problem),
            trade_prices: trade_prices.to_vec(),
        }
    }

    fn params(ctx: &ProposeContext<'_>) -> Params {
        if ctx.mode != Mode::Explore {
            return Params::default();
        }
        let mut rng = Rng::derive(&[ctx.seed, ctx.iteration as u64, 0xe4]);
        Params {
            min_support: *rng.pick(&[4, 6, 8, 12, 16]).unwrap_or(&8),
            min_gain: *rng.pick(&[0.2, 0.5, 1.0, 2.0]).unwrap_or(&0.5),
            max_rules: *rng.pick(&[2, 4, 6, 10]).unwrap_or(&6),
            group_size: *rng.pick(&[3, 5, 8, 12]).unwrap_or(&6),
        }
    }

    /// The candidate conditions of a direction's rule family (empty for the
    /// directions that transform a policy instead of adding rules).
    fn pool(
        &self,
        fit: &Fit<'_>,
        d: Direction,
        base: &PolicySpec,
        insert: Insert,
        p: &Params,
        hide_qtype: bool,
    ) -> Vec<Cond> {
        match d {
            Direction::QueryCues => {
                let mut pool = fit.std_cues();
                for c in fit.std_cues() {
                    for dm in fit.domains() {
                        pool.push(Cond::and(dm, c.clone()));
                    }
                }
                pool.extend(fit.mine_words(base, false, None, insert, p));
                pool
            }
            Direction::TaskCues => fit.mine_words(base, true, None, insert, p),
            Direction::QtypeRouting if !hide_qtype => {
                let mut pool = fit.qtypes();
                for t in fit.qtypes() {
                    for dm in fit.domains() {
                        pool.push(Cond::and(dm, t.clone()));
                    }
                }
                pool
            }
            Direction::DomainLookup => fit.domains(),
            Direction::DomainCues => fit
                .domains()
                .iter()
                .flat_map(|dm| fit.mine_words(base, false, Some(dm), insert, p))
                .collect(),
            Direction::PreviewGates | Direction::EvidenceGates => {
                let gates = fit.preview_gates(gates_of(d).0);
                let mut pool = gates.clone();
                for r in base.rules.iter().filter(|r| r.action == Act::Select) {
                    if let Some(c) = &r.cond {
                        for g in &gates {
                            pool.push(Cond::and(c.clone(), g.clone()));
                        }
                    }
                }
                pool
            }
            _ => Vec::new(),
        }
    }

    fn generic_pool(
        &self,
        fit: &Fit<'_>,
        base: &PolicySpec,
        p: &Params,
        hide_qtype: bool,
    ) -> Vec<Cond> {
        let mut pool = fit.domains();
        if !hide_qtype {
            pool.extend(fit.qtypes());
        }
        pool.extend(fit.std_cues());
        pool.extend(fit.mine_words(base, false, None, Insert::Front, p));
        pool
    }

    fn apply(
        &self,
        fit: &Fit<'_>,
        ctx: &ProposeContext<'_>,
        base: &PolicySpec,
        p: &Params,
    ) -> (PolicySpec, Vec<String>) {
        let hide = ctx.problem.hide_qtype;
        let d = ctx.direction;
        match ctx.mode {
            Mode::Repair => {
                let mut pool = self.pool(fit, d, base, Insert::Front, p, hide);
                pool.extend(self.generic_pool(fit, base, p, hide));
                let mut targeted = Vec::new();
                for g in ctx.errors.iter().take(3) {
                    let mut group = Cond::Domain {
                        values: vec![g.domain.clone()],
                    };
                    if let (Some(t), false) = (&g.qtype, hide) {
                        group = Cond::and(
                            group,
                            Cond::Qtype {
                                values: vec![t.clone()],
                            },
                        );
                    }
                    targeted.push(group.clone());
                    for c in &pool {
                        targeted.push(Cond::and(group.clone(), c.clone()));
                    }
                }
                targeted.extend(pool);
                let params = Params {
                    max_rules: 3,
                    min_support: p.min_support.min(5),
                    ..p.clone()
                };
                fit.greedy(base, &targeted, Insert::Front, &params, "repair")
            }
            _ => match d {
                Direction::SubsetRefit => fit.refit_masks(base),
                Direction::BackendValue => fit.backend_value(base, p),
                Direction::CostTrim => fit.cost_trim(base, p),
                Direction::Budget => fit.budget(base, p),
                Direction::Trade => fit.trade(base, p, &self.trade_prices),
                Direction::Prune => fit.prune(base, p),
                Direction::PreviewGates | Direction::EvidenceGates => {
                    let pool = self.pool(fit, d, base, Insert::Front, p, hide);
                    fit.greedy(base, &pool, Insert::Front, p, gates_of(d).1)
                }
                _ => {
                    let pool = self.pool(fit, d, base, Insert::AfterSelects, p, hide);
                    let prefix = d.name().split('-').next().unwrap_or("rule");
                    let (spec, mut notes) =
                        fit.greedy(base, &pool, Insert::AfterSelects, p, prefix);
                    // The questions no rule catches now may want another default.
                    let (spec, more) = fit.refit_masks(&spec);
                    notes.extend(more);
                    (spec, notes)
                }
            },
        }
    }
}

impl Proposer for OfflineProposer {
    fn name(&self) -> &'static str {
        "offline"
    }

    fn propose(&mut self, ctx: &ProposeContext<'_>, _validate: &Validator<'_>) -> Proposal {
        let fit = Fit {
            problem: ctx.problem,
            table: &self.table,
            idx: &ctx.train.idx,
            rate: 0.0,
        };
        let base = ctx
            .parent
            .and_then(|p| p.spec.clone())
            .or_else(|| ctx.top.iter().find_map(|e| e.spec.clone()))
            .unwrap_or_else(|| PolicySpec::fixed("seed", mesa_core::Mask::ALL));
        // A fit that reproduces a known policy is retried with looser
        // settings (smaller gains and supports): the search learns nothing
        // from evaluating the same policy twice.
        let first = Self::params(ctx);
        let mut tried = None;
        for (gain, support) in [(1.0, 1.0), (0.5, 0.75), (0.25, 0.5), (0.1, 0.5)] {
            let params = Params {
                min_gain: first.min_gain * gain,
                min_support: ((first.min_support as f64 * support).round() as usize).max(3),
                ..first.clone()
            };
            let (spec, notes) = self.apply(&fit, ctx, &base, &params);
            let known = ctx
                .known
                .contains_key(&super::policy_key(&spec.to_source()));
            tried = Some((spec, notes));
            if !known {
                break;
            }
        }
        let Some((mut spec, notes)) = tried else {
            return Proposal::default();
        };
        spec.name = format!(
            "offline-{}-{}-{}",
            ctx.iteration,
            ctx.mode.name(),
            ctx.direction.name()
        );
        let before = fit.total(&base);
        let after = fit.total(&spec);
        let mut note = format!(
            "{} {} on {}: train objective {:+.4} per question",
            ctx.mode.name(),
            ctx.direction.name(),
            ctx.parent
                .map_or("the seed".to_string(), |p| format!("#{}", p.id)),
            (after - before) / fit.idx.len().max(1) as f64
        );
        if notes.is_empty() {
            note.push_str("; no change fitted");
        } else {
            note.push_str("; ");
            note.push_str(&notes.join("; "));
        }
        Proposal {
            source: Some(spec.to_source()),
            failure: None,
            spec: Some(spec),
            note,
            llm: None,
        }
    }
}
