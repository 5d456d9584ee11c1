//! The token/utility frontier of a split: where every one of the 31 fixed
//! subsets, the per-question oracle and given policies sit against reading
//! all five structures, and the two numbers that say whether selection
//! earns its keep.
//!
//! ```text
//! sweep ──Problem──► split (seed) ──► 31 fixed points (J, C), oracle point, policy points
//!                                      └─► headline per method:
//!                                          tokens for 99% of all five's J (share of its C)
//!                                          J with at most 50% of all five's C (share of its J)
//! val (all, one half, or cross-fitted stand-ins) ──val.rs──► each rule's choice, scored on the split;
//!                                                            each rule checked on val alone
//! the report ──markdown.rs──► tables; frontier_svg.rs ──► the first seed's figure
//! ```
//!
//! The fixed subsets are scored on the split itself, so "the best fixed
//! subset" is the best in hindsight: a bound a learned policy has to beat
//! without seeing the split.

use crate::eval::{EvalError, Metrics, Problem};
use crate::split::{Split, ValHalf};
use mesa_core::Mask;
use serde::Serialize;
use val::by_episode;
pub use val::{
    Chosen, ChosenOnVal, Rule, RuleCheck, RuleChoice, Target, BOUND_DRAWS, CHECK_DRAWS,
    MARGIN_DRAWS,
};

mod markdown;
pub(crate) mod val;

/// The share of all five's J a method must keep.
pub const KEEP: f64 = 0.99;
/// The share of all five's tokens a method may spend.
pub const HALF: f64 = 0.5;

/// A method's mean utility and tokens on a split.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// `{S, T}`, `oracle`, a policy's file.
    pub name: String,
    /// Mean utility.
    pub j: f64,
    /// Mean evidence tokens.
    pub c: f64,
}

/// The two numbers of a set of points (a method's frontier), as shares of
/// all five's: `None` when no point qualifies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Headline {
    /// The fewest tokens (share of all five's) among points keeping
    /// [`KEEP`] of all five's J.
    pub tokens_for_keep: Option<f64>,
    /// The highest J (share of all five's) among points spending at most
    /// [`HALF`] of all five's tokens.
    pub j_at_half: Option<f64>,
}

impl Headline {
    /// The headline of `points` against `all_five`.
    /// Both are `None` when all five's J or tokens are 0 (no share is
    /// defined).
    pub fn of<'a>(points: impl IntoIterator<Item = &'a Point>, all_five: &Point) -> Headline {
        let (mut tokens_for_keep, mut j_at_half) = (None::<f64>, None::<f64>);
        for p in points {
            let Some((j, c)) = shares(p, all_five) else {
                break;
            };
            if j >= KEEP - 1e-12 {
                tokens_for_keep = Some(tokens_for_keep.map_or(c, |t| t.min(c)));
            }
            if c <= HALF + 1e-12 {
                j_at_half = Some(j_at_half.map_or(j, |b| b.max(j)));
            }
        }
        Headline {
            tokens_for_keep,
            j_at_half,
        }
    }
}

/// One split's frontier.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SplitFrontier {
    /// The split seed.
    pub seed: u64,
    /// Questions scored.
    pub questions: usize,
    /// All five structures.
    pub all_five: Point,
    /// The 31 fixed subsets, by mask index.
    pub fixed: Vec<Point>,
    /// Indices into `fixed` that no other fixed subset beats on both J and
    /// tokens, by increasing tokens.
    pub pareto: Vec<usize>,
    /// The per-question oracle (the best mask by objective).
    pub oracle: Point,
    /// The given policies' points.
    pub policies: Vec<Point>,
    /// The fixed subsets' headline.
    pub fixed_headline: Headline,
    /// The oracle's.
    pub oracle_headline: Headline,
    /// Each policy's.
    pub policy_headlines: Vec<Headline>,
    /// The policies' together (their frontier: e.g. one policy per token
    /// price).
    pub policies_headline: Headline,
    /// The policies' headline minus the fixed subsets', and the policy
    /// chosen on val against all five, with paired bootstrap intervals
    /// over the split's episodes (`None` without policies).
    pub against_fixed: Option<Paired>,
    /// The policies chosen for each target on the val split (so that the
    /// scored split does not choose among them), scored on this split.
    pub chosen_on_val: ChosenOnVal,
}

/// Shares of `p`'s J and tokens of `all`'s; `None` if either of `all`'s
/// is not positive.
fn shares(p: &Point, all: &Point) -> Option<(f64, f64)> {
    (all.j > 0.0 && all.c > 0.0).then(|| (p.j / all.j, p.c / all.c))
}

/// Bootstrap draws of [`Paired`].
pub const DRAWS: usize = 1000;

/// A bootstrap estimate: the mean over draws and the 2.5% and 97.5%
/// quantiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    /// The mean difference.
    pub mean: f64,
    /// 2.5% quantile.
    pub lo: f64,
    /// 97.5% quantile.
    pub hi: f64,
    /// Draws where both sides were defined.
    pub draws: usize,
}

/// Differences of the two headline numbers (policies minus fixed subsets,
/// in shares of all five's), and the policy chosen on val against all
/// five; each resample of the episodes scores both sides on the same
/// questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// Tokens for [`KEEP`] of all five's J (negative: the policies need
    /// fewer).
    pub tokens_for_keep: Option<Interval>,
    /// J at [`HALF`] of all five's tokens (positive: the policies keep
    /// more).
    pub j_at_half: Option<Interval>,
    /// The policy chosen on val for [`KEEP`] (by the checked rule,
    /// [`ChosenOnVal::checked_keep`]) against all five: its J as a share
    /// of all five's, minus 1 (negative: it loses J), on the same
    /// resamples.
    pub chosen_j: Option<Interval>,
    /// The same policy's tokens as a share of all five's, minus 1
    /// (negative: it reads fewer).
    pub chosen_tokens: Option<Interval>,
}

fn interval(mut v: Vec<f64>) -> Option<Interval> {
    if v.len() < DRAWS / 2 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some(Interval {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        lo: at(0.025),
        hi: at(0.975),
        draws: v.len(),
    })
}

/// The paired bootstrap of the policies' headline against the fixed
/// subsets' over the questions `idx`, resampling whole episodes with
/// replacement (the splits are by episode, and an episode's questions are
/// not independent); and of policy `chosen` against all five.
fn paired(
    problem: &Problem,
    idx: &[usize],
    seed: u64,
    masks: &[&Vec<Mask>],
    chosen: Option<usize>,
) -> Paired {
    let mut rng = crate::rng::Rng::derive(&[seed, 0xb007]);
    let (mut keep, mut half) = (Vec::new(), Vec::new());
    let (mut chosen_j, mut chosen_c) = (Vec::new(), Vec::new());
    let named = |m: Metrics| point(String::new(), m);
    let episodes = by_episode(problem, idx);
    if episodes.is_empty() {
        return Paired {
            tokens_for_keep: None,
            j_at_half: None,
            chosen_j: None,
            chosen_tokens: None,
        };
    }
    for _ in 0..DRAWS {
        let sample: Vec<usize> = (0..episodes.len())
            .flat_map(|_| episodes[rng.below(episodes.len())].iter().copied())
            .collect();
        let fixed: Vec<Point> = (0..Mask::SUBSETS)
            .map(|k| named(Metrics::of(problem, &sample, |_| Mask::subset(k))))
            .collect();
        let policies: Vec<Point> = masks
            .iter()
            .map(|m| named(Metrics::of(problem, &sample, |i| m[i])))
            .collect();
        let all_five = &fixed[Mask::SUBSETS - 1];
        let (f, p) = (
            Headline::of(&fixed, all_five),
            Headline::of(&policies, all_five),
        );
        if let (Some(a), Some(b)) = (p.tokens_for_keep, f.tokens_for_keep) {
            keep.push(a - b);
        }
        if let (Some(a), Some(b)) = (p.j_at_half, f.j_at_half) {
            half.push(a - b);
        }
        let picked = chosen.and_then(|c| policies.get(c));
        if let Some((j, c)) = picked.and_then(|p| shares(p, all_five)) {
            chosen_j.push(j - 1.0);
            chosen_c.push(c - 1.0);
        }
    }
    Paired {
        tokens_for_keep: interval(keep),
        j_at_half: interval(half),
        chosen_j: interval(chosen_j),
        chosen_tokens: interval(chosen_c),
    }
}

fn point(name: String, m: Metrics) -> Point {
    Point {
        name,
        j: m.j,
        c: m.c,
    }
}

/// What the choice among the policies reads on val.
#[derive(Debug, Clone, Copy, Default)]
pub struct ValMasks<'a> {
    /// Only this half of val (`None`: all of it).
    pub half: Option<ValHalf>,
    /// Each policy's masks on val in place of its own (cross-fitted).
    pub masks: Option<&'a [Vec<Mask>]>,
}

/// The frontier of `split` under `seed`; `policies` are a name and the
/// mask selected for each of `problem.questions`; the choice among them
/// reads val as `val` says.
pub fn of_split(
    problem: &Problem,
    split: Option<Split>,
    seed: u64,
    policies: &[(String, Vec<Mask>)],
    val: ValMasks<'_>,
) -> Result<SplitFrontier, EvalError> {
    // `--split all` needs no splits (a held-out sweep may be small).
    let splits = split.map(|_| problem.splits(seed)).transpose()?;
    let idx = match (split, &splits) {
        (Some(split), Some(splits)) => problem.indices(splits, split),
        _ => (0..problem.questions.len()).collect(),
    };
    if let (Some(split), true) = (split, idx.is_empty()) {
        return Err(EvalError::EmptySplit {
            split,
            seed,
            half: None,
        });
    }
    let fixed: Vec<Point> = (0..Mask::SUBSETS)
        .map(|k| {
            let mask = Mask::subset(k);
            point(mask.to_string(), Metrics::of(problem, &idx, |_| mask))
        })
        .collect();
    let all_five = fixed[Mask::SUBSETS - 1].clone();
    let oracle = point(
        "oracle".into(),
        Metrics::of(problem, &idx, |i| Mask::subset(problem.oracle(i))),
    );
    let masks: Vec<&Vec<Mask>> = policies.iter().map(|(_, m)| m).collect();
    let val_masks: Vec<&Vec<Mask>> = val.masks.map_or(masks.clone(), |m| m.iter().collect());
    // Scoring every question (another benchmark, a held-out domain) leaves
    // no val split of this sweep to choose on, and scoring val itself
    // would choose on what it scores.
    let chosen_on_val = match (split, &splits) {
        (Some(Split::Train | Split::Test), Some(splits)) => val::choose_on_val(
            problem,
            val::OnVal {
                val: &problem.indices_in(splits, Split::Val, val.half),
                masks: &val_masks,
                half: val.half,
                cross_fit: val.masks.is_some(),
            },
            &idx,
            &masks,
            seed,
        ),
        _ => ChosenOnVal::default(),
    };
    let chosen = chosen_on_val.checked(Target::Keep).map(|c| c.policy);
    let against_fixed = (!masks.is_empty()).then(|| paired(problem, &idx, seed, &masks, chosen));
    let policies: Vec<Point> = policies
        .iter()
        .map(|(name, masks)| point(name.clone(), Metrics::of(problem, &idx, |i| masks[i])))
        .collect();
    Ok(SplitFrontier {
        seed,
        questions: idx.len(),
        pareto: pareto(&fixed),
        fixed_headline: Headline::of(&fixed, &all_five),
        oracle_headline: Headline::of([&oracle], &all_five),
        policy_headlines: policies
            .iter()
            .map(|p| Headline::of([p], &all_five))
            .collect(),
        policies_headline: Headline::of(&policies, &all_five),
        against_fixed,
        chosen_on_val,
        all_five,
        fixed,
        oracle,
        policies,
    })
}

/// The points no other point beats on both J (higher) and tokens (lower),
/// by increasing tokens.
pub fn pareto(points: &[Point]) -> Vec<usize> {
    let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.c, p.j)).collect();
    crate::svg::pareto_indices(&xy)
}

/// Everything `mesa frontier` reports: one frontier per seed, and the
/// headlines' mean and spread over seeds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrontierReport {
    /// The sweep's utility.
    pub utility: String,
    /// The split scored.
    /// `None`: every labelled question.
    pub split: Option<Split>,
    /// The token price of the oracle's objective.
    pub lambda: f64,
    /// Per seed.
    pub seeds: Vec<SplitFrontier>,
}

/// The text a policy path has in place of the seed, so that each seed
/// reads the policy searched on its own train and val splits.
pub const SEED_PLACEHOLDER: &str = "{seed}";

/// Where the choice among the policies reads val.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum ValChoice {
    /// The policies' own selections on all of val.
    #[default]
    All,
    /// Their own selections on one half of val (for runs whose searches
    /// compared candidates on the other half).
    Half(ValHalf),
    /// Cross-fitted: per policy, two more policy files, from searches that
    /// compared their candidates on val's search half and on its choice
    /// half (`mesa optimize --val-half`); each val question is selected by
    /// the one whose search did not see it, so that the choice reads what
    /// a search at that setting does on episodes it did not choose on,
    /// while the policies scored are searched on all of val.
    CrossFit(Vec<(String, String)>),
}

/// What [`frontier`] scores and how it chooses.
#[derive(Debug, Clone, PartialEq)]
pub struct FrontierOptions {
    /// The sweep file.
    pub sweep: std::path::PathBuf,
    /// Policy files; a path containing [`SEED_PLACEHOLDER`] is read per
    /// seed with the seed in its place.
    pub policies: Vec<String>,
    /// The split scored (`None`: every labelled question). Default test.
    pub split: Option<Split>,
    /// The split seeds. Default `0..5`.
    pub seeds: std::ops::Range<u64>,
    /// The token price of the oracle's objective. Default 1e-6.
    pub lambda: f64,
    /// Hide the question type from the policies. Default false.
    pub hide_qtype: bool,
    /// Where the choice reads val. Default [`ValChoice::All`].
    pub val: ValChoice,
}

impl FrontierOptions {
    /// The defaults each field names, for `sweep` and `policies`.
    pub fn new(sweep: &std::path::Path, policies: Vec<String>) -> FrontierOptions {
        FrontierOptions {
            sweep: sweep.to_path_buf(),
            policies,
            split: Some(Split::Test),
            seeds: 0..crate::split::DEFAULT_SEEDS as u64,
            lambda: 1e-6,
            hide_qtype: false,
            val: ValChoice::All,
        }
    }
}

/// The masks the policy at `template` selects for every question, read
/// with `seed` in place of [`SEED_PLACEHOLDER`].
fn masks_of(problem: &Problem, template: &str, seed: u64) -> Result<Vec<Mask>, EvalError> {
    let path = template.replace(SEED_PLACEHOLDER, &seed.to_string());
    let policy = crate::PolicyFile::read(std::path::Path::new(&path))?;
    let out = crate::eval::run::selections(&policy, problem, mesa_runtime::EngineKind::Wasm)
        .map_err(|failure| EvalError::Policy {
            path: path.clone(),
            failure,
        })?;
    Ok(out.iter().map(|s| s.mask).collect())
}

/// Each val question's mask from the policy of the pair whose search did
/// not see its half (the first searched on the search half, the second on
/// the choice half).
fn cross_fitted(
    problem: &Problem,
    pairs: &[(String, String)],
    seed: u64,
) -> Result<Vec<Vec<Mask>>, EvalError> {
    let splits = problem.splits(seed)?;
    pairs
        .iter()
        .map(|(on_search, on_choice)| {
            let (a, b) = (
                masks_of(problem, on_search, seed)?,
                masks_of(problem, on_choice, seed)?,
            );
            Ok((0..problem.questions.len())
                .map(|i| {
                    let ep = &problem.questions[i].episode;
                    if splits.holds(ep, Split::Val, Some(ValHalf::Search)) {
                        b[i]
                    } else {
                        a[i]
                    }
                })
                .collect())
        })
        .collect()
}

/// Scores the fixed subsets, the oracle and the policies of `opts` on its
/// split for each of its seeds, and chooses among the policies on val as
/// `opts.val` says.
pub fn frontier(opts: &FrontierOptions) -> Result<FrontierReport, EvalError> {
    let read = crate::sweep::Sweep::read(&opts.sweep)?;
    let problem = Problem::new(&read, opts.lambda, opts.hide_qtype)?;
    if let ValChoice::CrossFit(pairs) = &opts.val {
        if pairs.len() != opts.policies.len() {
            return Err(EvalError::CrossFitPairs {
                policies: opts.policies.len(),
                pairs: pairs.len(),
            });
        }
    }
    let mut per_seed = Vec::new();
    for seed in opts.seeds.clone() {
        let selected = opts
            .policies
            .iter()
            .map(|t| Ok((t.clone(), masks_of(&problem, t, seed)?)))
            .collect::<Result<Vec<_>, EvalError>>()?;
        let (half, fitted) = match &opts.val {
            ValChoice::All => (None, None),
            ValChoice::Half(h) => (Some(*h), None),
            ValChoice::CrossFit(pairs) => (None, Some(cross_fitted(&problem, pairs, seed)?)),
        };
        let val = ValMasks {
            half,
            masks: fitted.as_deref(),
        };
        per_seed.push(of_split(&problem, opts.split, seed, &selected, val)?);
    }
    Ok(FrontierReport {
        utility: read.header.utility.name().to_string(),
        split: opts.split,
        lambda: opts.lambda,
        seeds: per_seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(name: &str, j: f64, c: f64) -> Point {
        Point {
            name: name.into(),
            j,
            c,
        }
    }

    #[test]
    fn headline_and_pareto_by_hand() {
        let all = p("all", 1.0, 100.0);
        let pts = [
            p("a", 0.5, 10.0),
            p("b", 0.995, 60.0),
            p("c", 0.9, 50.0),
            p("d", 0.8, 70.0),
            all.clone(),
        ];
        let h = Headline::of(&pts, &all);
        assert_eq!(h.tokens_for_keep, Some(0.6));
        assert_eq!(h.j_at_half, Some(0.9));
        assert_eq!(pareto(&pts), vec![0, 2, 1, 4]);
        let none = Headline::of([&p("x", 0.2, 90.0)], &all);
        assert_eq!((none.tokens_for_keep, none.j_at_half), (None, None));
    }
}
