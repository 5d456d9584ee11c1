//! The families of stratified policies (key sets and trees), one fitted
//! model of either kind, and the cross-validation that chooses among them.

use super::fit::{keys_name, Fitted, Key, KEY_SETS};
use super::refine::{self, Removal};
use super::tree::{Grow, Tree};
use super::{number_repeats, Candidate, StrataError, StrataOptions, StratumReport, Target};
use crate::eval::Problem;
use crate::frontier::val::{self, Sums};
use crate::propose::spec::{Cond, PolicySpec, TradeSpec};
use crate::rng::Rng;
use mesa_core::{Mask, Shown};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The depths of the trees cross-validation chooses among.
pub const TREE_DEPTHS: [usize; 3] = [1, 2, 3];

/// Which families of strata cross-validation chooses among.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Families {
    /// The six key sets ([`KEY_SETS`]): the domain and `preview.K.named`.
    Keys,
    /// Trees of depth 1 to 3 ([`TREE_DEPTHS`]) over every preview and the domain.
    Trees,
    /// Both.
    Both,
}

impl Families {
    /// The families, key sets first (each at every prior of `priors`, each
    /// with 0 to `refine` refinements), in the order candidates are tried.
    pub fn list(self, priors: &[u32], refine: usize) -> Vec<Family> {
        let keys = KEY_SETS.iter().flat_map(|k| {
            priors.iter().flat_map(move |&prior| {
                (0..=refine).map(move |refine| Family::Keys {
                    keys: k,
                    prior,
                    refine,
                })
            })
        });
        let trees = TREE_DEPTHS.iter().map(|&depth| Family::Tree { depth });
        match self {
            Families::Keys => keys.collect(),
            Families::Trees => trees.collect(),
            Families::Both => keys.chain(trees).collect(),
        }
    }
}

/// One family: a key set, or trees of one depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// One stratum per combination of the keys' values, each stratum's
    /// sums shrunk toward the pooled questions' by `prior` pseudo-questions.
    Keys {
        /// The keys.
        keys: &'static [Key],
        /// Pseudo-questions of the pooled mean added to each stratum.
        prior: u32,
        /// Refinements (`remove` rules, `refine.rs`) after the strata.
        refine: usize,
    },
    /// A greedy tree of at most `depth` levels of splits.
    Tree {
        /// Levels of splits at most.
        depth: usize,
    },
    /// No strata: all five, then `trade UNIT at PRICE`, the price tried
    /// in place of the token price (nothing is fitted).
    Trade {
        /// What a subset's count counts.
        unit: Shown,
    },
    /// A key set's strata, then `trade UNIT at PRICE` on what they chose.
    Traded {
        /// The keys.
        keys: &'static [Key],
        /// Pseudo-questions of the pooled mean added to each stratum.
        prior: u32,
        /// What a subset's count counts.
        unit: Shown,
        /// The trade's price, as its bits ([`f64::to_bits`], so that a
        /// family stays `Eq`).
        price: u64,
    },
}

impl Family {
    /// Its name in reports: `none`, `domain+T.named`, `domain prior 10`,
    /// `domain prior 10 refine 2`, `tree depth 2`.
    pub fn name(self) -> String {
        match self {
            Family::Keys {
                keys,
                prior,
                refine,
            } => {
                let mut name = keys_name(keys);
                if prior > 0 {
                    name += &format!(" prior {prior}");
                }
                if refine > 0 {
                    name += &format!(" refine {refine}");
                }
                name
            }
            Family::Tree { depth } => format!("tree depth {depth}"),
            Family::Trade { unit } => format!("trade {unit}"),
            Family::Traded {
                keys,
                prior,
                unit,
                price,
            } => {
                format!(
                    "{}, trade {unit} at {}",
                    Family::strata(keys, prior).name(),
                    f64::from_bits(price)
                )
            }
        }
    }

    /// A key set's strata without refinements.
    fn strata(keys: &'static [Key], prior: u32) -> Family {
        Family::Keys {
            keys,
            prior,
            refine: 0,
        }
    }

    /// The prices this family is tried at: the trade's own grid, or the
    /// token prices.
    pub fn prices(self, opts: &StrataOptions) -> &[f64] {
        match self {
            Family::Trade { .. } => &opts.trade_prices,
            _ => &opts.lambdas,
        }
    }

    /// The family without refinements (what a refined model is fitted on).
    fn unrefined(self) -> Family {
        self.with_refinements(0)
    }

    /// The same key set with `refine` refinements (a tree is unchanged).
    fn with_refinements(self, refine: usize) -> Family {
        match self {
            Family::Keys { keys, prior, .. } => Family::Keys {
                keys,
                prior,
                refine,
            },
            other => other,
        }
    }

    /// Its refinements.
    fn refinements(self) -> usize {
        match self {
            Family::Keys { refine, .. } => refine,
            _ => 0,
        }
    }
}

/// A fitted stratified policy of either family.
#[derive(Debug, Clone)]
pub enum Model {
    /// Strata of a key set.
    Strata(Fitted),
    /// A tree's leaves.
    Tree(Tree),
    /// A model with `remove` rules after it.
    Refined {
        /// The model refined.
        base: Box<Model>,
        /// Its refinements, in order.
        removals: Vec<Removal>,
    },
    /// All five, then a trade.
    Trade(TradeSpec),
    /// A model, then a trade on what it chose.
    Traded {
        /// The model traded after.
        base: Box<Model>,
        /// The trade.
        trade: TradeSpec,
    },
}

impl Model {
    /// Fits `family` on `idx` at the price `lambda`. With `opts.bag` > 1
    /// a key set is fitted once per bag (each leaving one of `bag` parts of
    /// the episodes out) and each stratum reads the union of their subsets.
    pub fn fit(
        problem: &Problem,
        idx: &[usize],
        family: Family,
        lambda: f64,
        opts: &StrataOptions,
    ) -> Result<Model, StrataError> {
        let refine = family.refinements();
        if refine > 0 {
            let base = Model::fit(problem, idx, family.unrefined(), lambda, opts)?;
            return Ok(base.refined(problem, idx, lambda, refine, opts.min_leaf));
        }
        Ok(match family {
            Family::Keys { keys, prior, .. } if opts.bag > 1 => {
                let part = folds(problem, idx, opts.bag, opts.seed, BAGS)?;
                let fits: Vec<Fitted> = (0..opts.bag)
                    .map(|b| Fitted::fit(problem, &without(idx, &part, b), keys, lambda, prior))
                    .collect();
                Model::Strata(Fitted::union(&fits))
            }
            Family::Keys { keys, prior, .. } => {
                Model::Strata(Fitted::fit(problem, idx, keys, lambda, prior))
            }
            Family::Tree { depth } => Model::Tree(Tree::fit(
                problem,
                idx,
                Grow {
                    depth,
                    lambda,
                    min_leaf: opts.min_leaf,
                },
            )),
            Family::Trade { unit } => Model::Trade(TradeSpec {
                unit,
                price: lambda,
            }),
            Family::Traded {
                keys,
                prior,
                unit,
                price,
            } => {
                let strata = Family::strata(keys, prior);
                let price = f64::from_bits(price);
                Model::Traded {
                    base: Box::new(Model::fit(problem, idx, strata, lambda, opts)?),
                    trade: TradeSpec { unit, price },
                }
            }
        })
    }

    /// This model with at most `n` refinements fitted on `idx` at `lambda`.
    pub fn refined(
        self,
        problem: &Problem,
        idx: &[usize],
        lambda: f64,
        n: usize,
        min_leaf: usize,
    ) -> Model {
        let start: Vec<usize> = idx.iter().map(|&i| self.choose(problem, i)).collect();
        let default = self.default_subset();
        let removals = refine::fit_removals(problem, idx, &start, default, (lambda, n, min_leaf));
        Model::Refined {
            base: Box::new(self),
            removals,
        }
    }

    /// The same model with its first `n` refinements (a greedy list's
    /// first rules are the shorter list); unrefined models are unchanged.
    pub fn truncated(&self, n: usize) -> Model {
        match self {
            Model::Refined { base, removals } => Model::Refined {
                base: base.clone(),
                removals: removals[..n.min(removals.len())].to_vec(),
            },
            other => other.clone(),
        }
    }

    /// The mask index of questions no rule decides.
    fn default_subset(&self) -> usize {
        match self {
            Model::Strata(f) => f.default_subset(),
            Model::Tree(t) => t.default_subset(),
            Model::Refined { base, .. } => base.default_subset(),
            Model::Trade(_) => Mask::SUBSETS - 1,
            Model::Traded { base, .. } => base.default_subset(),
        }
    }

    /// The mask index the model reads for question `i`.
    pub fn choose(&self, problem: &Problem, i: usize) -> usize {
        match self {
            Model::Strata(f) => f.choose(problem, i),
            Model::Tree(t) => t.choose(problem, i),
            Model::Refined { base, removals } => refine::apply(
                problem,
                i,
                base.choose(problem, i),
                removals,
                base.default_subset(),
            ),
            Model::Trade(t) => t
                .apply(Mask::ALL, &problem.questions[i].input.previews)
                .subset_index()
                .unwrap_or(Mask::SUBSETS - 1),
            Model::Traded { base, trade } => {
                let k = base.choose(problem, i);
                trade
                    .apply(Mask::subset(k), &problem.questions[i].input.previews)
                    .subset_index()
                    .unwrap_or(k)
            }
        }
    }

    /// Rules of its own (strata or leaves whose subset is not the default,
    /// and refinements).
    pub fn rules(&self) -> usize {
        match self {
            Model::Strata(f) => f.rules(),
            Model::Tree(t) => t.rules(),
            Model::Refined { base, removals } => base.rules() + removals.len(),
            Model::Trade(_) => 0,
            Model::Traded { base, .. } => base.rules(),
        }
    }

    /// The rule that decides question `i`'s stratum, numbered as the
    /// unrefined model's [`Model::spec`] writes them; `None` for the default.
    pub fn rule_of(&self, problem: &Problem, i: usize) -> Option<usize> {
        match self {
            Model::Strata(f) => f.rule_of(problem, i),
            Model::Tree(t) => t.rule_of(problem, i),
            Model::Refined { base, .. } => base.rule_of(problem, i),
            Model::Trade(_) => None,
            Model::Traded { base, .. } => base.rule_of(problem, i),
        }
    }

    /// The model as a policy named `name`.
    pub fn spec(&self, problem: &Problem, name: &str) -> PolicySpec {
        let mut spec = match self {
            Model::Strata(f) => f.spec(problem, name),
            Model::Tree(t) => t.spec(problem, name),
            Model::Refined { base, removals } => {
                refine::refined_spec(base.spec(problem, name), removals)
            }
            Model::Trade(t) => PolicySpec {
                trade: Some(*t),
                ..PolicySpec::fixed(name, Mask::ALL)
            },
            Model::Traded { base, trade } => PolicySpec {
                trade: Some(*trade),
                ..base.spec(problem, name)
            },
        };
        number_repeats(&mut spec.rules);
        spec
    }

    /// Each rule's stratum and the default, with their support over `idx`.
    /// `spec` is this model's [`Model::spec`].
    pub fn strata_report(
        &self,
        problem: &Problem,
        idx: &[usize],
        spec: &PolicySpec,
    ) -> Vec<StratumReport> {
        if let Model::Refined { base, removals } = self {
            let mut out = base.strata_report(problem, idx, &base.spec(problem, &spec.name));
            let start: Vec<usize> = idx.iter().map(|&i| base.choose(problem, i)).collect();
            let support = refine::support(problem, idx, &start, removals);
            let written = &spec.rules[spec.rules.len().saturating_sub(removals.len())..];
            out.extend(written.iter().zip(support).map(|(r, n)| StratumReport {
                rule: r.name.clone(),
                when: r.cond.as_ref().map(Cond::describe).unwrap_or_default(),
                support: n,
                select: format!("remove {}", r.mask),
            }));
            return out;
        }
        let rules = spec.rules.len();
        let mut support = vec![0usize; rules + 1];
        for &i in idx {
            support[self.rule_of(problem, i).unwrap_or(rules)] += 1;
        }
        let mut out: Vec<StratumReport> = spec
            .rules
            .iter()
            .zip(&support)
            .map(|(r, &n)| StratumReport {
                rule: r.name.clone(),
                when: r.cond.as_ref().map(Cond::describe).unwrap_or_default(),
                support: n,
                select: r.mask.to_string(),
            })
            .collect();
        out.push(StratumReport {
            rule: "default".to_string(),
            when: "no rule matches".to_string(),
            support: support[rules],
            select: spec.default.to_string(),
        });
        if let Some(t) = spec.trade {
            out.push(StratumReport {
                rule: "trade".to_string(),
                when: "after the rules".to_string(),
                support: idx.len(),
                select: format!("trade {} at {}", t.unit, t.price),
            });
        }
        out
    }
}

/// What [`folds`] deals: the cross-validation's folds, or a bagged fit's parts.
#[derive(Debug, Clone, Copy)]
pub(super) struct Deal {
    /// The option that sets how many, for messages.
    flag: &'static str,
    /// The fewest parts the option allows.
    pub(super) least: usize,
    /// Mixed into the seed, so the bags are not the folds.
    salt: u64,
}

pub(super) const FOLDS: Deal = Deal {
    flag: "folds",
    least: 2,
    salt: 0x5354_5241_5441,
};
pub(super) const BAGS: Deal = Deal {
    flag: "bag",
    least: 1,
    salt: 0x4241_4753,
};

/// Each position of `idx` its part: the episodes shuffled by the seed and
/// dealt round-robin into `k` parts, so a part holds whole episodes.
pub(super) fn folds(
    problem: &Problem,
    idx: &[usize],
    k: usize,
    seed: u64,
    deal: Deal,
) -> Result<Vec<usize>, StrataError> {
    let mut episodes: Vec<u32> = idx
        .iter()
        .map(|&i| problem.questions[i].episode_no)
        .collect();
    episodes.sort_unstable();
    episodes.dedup();
    if episodes.len() < k {
        return Err(StrataError::TooFewEpisodes {
            seed,
            episodes: episodes.len(),
            parts: k,
            flag: deal.flag,
            least: deal.least,
        });
    }
    let mut rng = Rng::derive(&[seed, deal.salt]);
    for n in (1..episodes.len()).rev() {
        episodes.swap(n, rng.below(n + 1));
    }
    let fold: BTreeMap<u32, usize> = episodes
        .iter()
        .enumerate()
        .map(|(n, &e)| (e, n % k))
        .collect();
    Ok(idx
        .iter()
        .map(|&i| fold[&problem.questions[i].episode_no])
        .collect())
}

/// The questions of `idx` outside part `f` (`part` gives each one's).
pub(super) fn without(idx: &[usize], part: &[usize], f: usize) -> Vec<usize> {
    idx.iter()
        .zip(part)
        .filter(|&(_, &g)| g != f)
        .map(|(&i, _)| i)
        .collect()
}

/// Every family at every price, scored out of fold over `idx`, in the
/// order of `families` then [`Family::prices`].
pub fn cross_validate(
    problem: &Problem,
    idx: &[usize],
    families: &[Family],
    opts: &StrataOptions,
) -> Result<Vec<Candidate>, StrataError> {
    let fold = folds(problem, idx, opts.folds, opts.seed, FOLDS)?;
    let fits: Vec<Vec<usize>> = (0..opts.folds).map(|f| without(idx, &fold, f)).collect();
    let all = Mask::SUBSETS - 1;
    let total = |pick: &dyn Fn(usize) -> usize| {
        idx.iter().enumerate().fold((0.0, 0.0), |(u, t), (p, &i)| {
            let q = &problem.questions[i];
            (u + q.utility[pick(p)], t + q.tokens[pick(p)])
        })
    };
    let (u5, t5) = total(&|_| all);
    let share = |x: f64, of: f64| if of > 0.0 { x / of } else { 1.0 };
    // A greedy tree's first levels are the shallower tree: grow the
    // deepest once per price and fold, and cut it.
    let deepest = families
        .iter()
        .filter_map(|f| match f {
            Family::Tree { depth } => Some(*depth),
            _ => None,
        })
        .max();
    let grown: BTreeMap<(usize, usize), Tree> = match deepest {
        Some(depth) => (0..opts.lambdas.len())
            .flat_map(|l| (0..opts.folds).map(move |f| (l, f)))
            .map(|(l, f)| {
                let grow = Grow {
                    depth,
                    lambda: opts.lambdas[l],
                    min_leaf: opts.min_leaf,
                };
                ((l, f), Tree::fit(problem, &fits[f], grow))
            })
            .collect(),
        None => BTreeMap::new(),
    };
    // Refinements are greedy too: fit the most once per key set, prior,
    // price and fold, and cut.
    let mut refined: BTreeMap<(String, usize, usize), Model> = BTreeMap::new();
    let mut out = Vec::new();
    let mut all_picks = Vec::new();
    for &family in families {
        for (l, &lambda) in family.prices(opts).iter().enumerate() {
            let mut picks = vec![all; idx.len()];
            let mut rules = 0;
            for (f, train) in fits.iter().enumerate() {
                let model = match (family, grown.get(&(l, f))) {
                    (Family::Tree { depth }, Some(tree)) => Model::Tree(tree.truncated(depth)),
                    (Family::Keys { refine, .. }, _) if refine > 0 => {
                        let key = (family.unrefined().name(), l, f);
                        if !refined.contains_key(&key) {
                            let most = family.with_refinements(opts.refine.max(refine));
                            let model = Model::fit(problem, train, most, lambda, opts)?;
                            refined.insert(key.clone(), model);
                        }
                        refined[&key].truncated(refine)
                    }
                    _ => Model::fit(problem, train, family, lambda, opts)?,
                };
                rules += model.rules();
                for (p, &i) in idx.iter().enumerate() {
                    if fold[p] == f {
                        picks[p] = model.choose(problem, i);
                    }
                }
            }
            let (u, t) = total(&|p| picks[p]);
            out.push(Candidate {
                keys: family.name(),
                prior: match family {
                    Family::Keys { prior, .. } | Family::Traded { prior, .. } => prior,
                    Family::Tree { .. } | Family::Trade { .. } => 0,
                },
                refine: family.refinements(),
                lambda,
                j_share: share(u, u5),
                token_share: share(t, t5),
                j_se: 0.0,
                token_se: 0.0,
                rules: rules as f64 / opts.folds as f64,
            });
            all_picks.push(picks);
        }
    }
    let se = standard_errors(problem, idx, &all_picks, opts.seed);
    for (c, (j, t)) in out.iter_mut().zip(se) {
        (c.j_se, c.token_se) = (j, t);
    }
    Ok(out)
}

/// Each candidate's standard errors of its out-of-fold J and token shares,
/// over bootstrap resamples of the episodes of `idx` (the frontier's bound
/// rules use the same estimate). `picks[c][p]` is candidate `c`'s mask
/// index for question `idx[p]`.
fn standard_errors(
    problem: &Problem,
    idx: &[usize],
    picks: &[Vec<usize>],
    seed: u64,
) -> Vec<(f64, f64)> {
    let masks: Vec<Vec<Mask>> = picks
        .iter()
        .map(|pick| {
            let mut m = vec![Mask::ALL; problem.questions.len()];
            for (&i, &k) in idx.iter().zip(pick) {
                m[i] = Mask::subset(k);
            }
            m
        })
        .collect();
    let refs: Vec<&Vec<Mask>> = masks.iter().collect();
    let sums = Sums::new(problem, idx, &refs);
    let episodes: Vec<usize> = (0..sums.episodes()).collect();
    let mut rng = Rng::derive(&[seed, 0x5345]);
    val::standard_errors(&sums, &episodes, &mut rng)
}

/// The candidate that best meets `target`, or `None` when none does.
/// `keep`: the fewest tokens among those whose J share less `bound`
/// standard errors keeps `share + margin` (ties: fewer rules, then the
/// earlier); `within`: the highest J among those whose token share plus
/// `bound` standard errors is at most `tokens - margin` (ties: fewer
/// tokens, rules).
pub fn choose_candidate(candidates: &[Candidate], target: Target, bound: f64) -> Option<usize> {
    let order = |a: &Candidate, b: &Candidate, first: [f64; 2], second: [f64; 2]| {
        first[0]
            .total_cmp(&first[1])
            .then(second[0].total_cmp(&second[1]))
            .then(a.rules.total_cmp(&b.rules))
    };
    let ok = |c: &Candidate| match target {
        Target::Keep { share, margin } => c.j_share - bound * c.j_se >= share + margin,
        Target::Within { tokens, margin } => c.token_share + bound * c.token_se <= tokens - margin,
    };
    let mut best: Option<usize> = None;
    for (n, c) in candidates.iter().enumerate() {
        if !ok(c) {
            continue;
        }
        let better = best.is_none_or(|b| {
            let b = &candidates[b];
            let o = match target {
                Target::Keep { .. } => {
                    order(c, b, [c.token_share, b.token_share], [b.j_share, c.j_share])
                }
                Target::Within { .. } => {
                    order(c, b, [b.j_share, c.j_share], [c.token_share, b.token_share])
                }
            };
            o.is_lt()
        });
        if better {
            best = Some(n);
        }
    }
    best
}
