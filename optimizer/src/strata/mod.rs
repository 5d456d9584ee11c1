//! Stratified policies: `mesa stratify`.
//!
//! A stratified policy splits the questions into a few strata by what a
//! policy can read before selecting, and reads one fixed subset per
//! stratum. Two families of strata:
//!
//! - **key sets** (`fit.rs`): the domain and, for a structure K, whether
//!   the question names no step, K shows every step it names, or only some
//!   (`preview.K.named`); one rule per combination
//!   (`rule text2sql_t_some when domain is TEXT2SQL and preview.T.named >
//!   -0.5 and preview.T.named < 1 -> select all`);
//! - **trees** (`tree.rs`): greedy splits on any preview at a learned,
//!   rounded threshold, or on one domain against the rest, one to three
//!   levels deep; one rule per leaf, its path as the condition
//!   (`rule r_tokens_hi when preview.R.tokens > 2400 -> select {S, T, G}`).
//!
//! Either way each rule is one stratum that a person can read, check and
//! edit, and the rules are disjoint. A key set may also be **refined**
//! (`refine.rs`, `--refine N`): up to N `remove` rules after the strata,
//! each on one preview at a rounded threshold (`rule drop_r_v_tokens_hi
//! when preview.V.tokens > 4960 -> remove {R}`), for questions of a
//! stratum that do not need all it reads.
//!
//! The fit never reads test. Which family (six key sets, each with 0 to N
//! refinements, trees of depth 1 to 3) and the token price each stratum's
//! subset is chosen at are picked together by k-fold cross-validation over
//! the episodes of train and val
//! (`cv.rs`): each fold's questions are selected by the strata fitted on
//! the other folds, and the candidate whose out-of-fold selections best
//! meet the target wins (for `keep`: the fewest tokens keeping the share of
//! all five's J; for `within`: the highest J spending at most the share of
//! its tokens, less a margin). The chosen candidate is then fitted once on
//! all of train and val and written as `.mesa` through the syntax tree and
//! the formatter.
//!
//! ```text
//! sweep ─► Problem ─► train + val ─► folds ─► (family × price) out of fold ─► the target picks one
//!                                                            └─► fit on train + val ─► best.mesa, report.json
//! ```

mod cv;
mod fit;
mod refine;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod tests_trade;
mod tree;

use crate::eval::{EvalError, Problem};
use crate::propose::spec::PolicySpec;
use crate::propose::spec::RuleSpec;
use crate::split::{FitOn, Split};
use crate::sweep::Sweep;
use cv::{choose_candidate, cross_validate, Model, BAGS, FOLDS};
pub use cv::{Families, Family, TREE_DEPTHS};
pub use fit::{Key, KEY_SETS};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the chosen stratified policy should achieve, as shares of all
/// five's J and tokens over the out-of-fold selections.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Target {
    /// The fewest tokens keeping `share` of all five's J (plus `margin`).
    Keep {
        /// The share of J to keep, in `(0, 1]`.
        share: f64,
        /// Added to `share` for the out-of-fold check (the fit's optimism).
        margin: f64,
    },
    /// The highest J spending at most `tokens` of all five's tokens (less `margin`).
    Within {
        /// The share of tokens, in `(0, 1]`.
        tokens: f64,
        /// Taken from `tokens` for the out-of-fold check.
        margin: f64,
    },
}

impl Target {
    /// Keep 99% of all five's J, no margin.
    pub const KEEP_99: Target = Target::Keep {
        share: 0.99,
        margin: 0.0,
    };
    /// At most half of all five's tokens, checked out of fold at 45%.
    pub const WITHIN_HALF: Target = Target::Within {
        tokens: 0.5,
        margin: 0.05,
    };

    /// A short name for reports: `keep` or `within`.
    pub fn name(self) -> &'static str {
        match self {
            Target::Keep { .. } => "keep",
            Target::Within { .. } => "within",
        }
    }
}

/// The token prices tried by default.
pub const DEFAULT_LAMBDAS: [f64; 14] = [
    1e-7, 2e-7, 3e-7, 5e-7, 7e-7, 1e-6, 1.5e-6, 2e-6, 3e-6, 5e-6, 7e-6, 1e-5, 2e-5, 5e-5,
];

/// The trade prices tried by default with `trade` (0.05 to 1 in steps of
/// 0.05): a trade's price is the share of what all five show that all
/// five's tokens are worth, so a useful one lies in `(0, 1]`.
pub const DEFAULT_TRADE_PRICES: [f64; 20] = [
    0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85,
    0.9, 0.95, 1.0,
];

/// The default prior: each key-set stratum is shrunk toward the pooled
/// questions by 10 pseudo-questions (chosen on val in the design study,
/// docs/RESULTS.md, against 0, 3, 5, 20, 30 and 100).
pub const DEFAULT_PRIOR: u32 = 10;

/// The default bound: the out-of-fold check keeps one bootstrap standard
/// error clear of the target (chosen on val with [`DEFAULT_PRIOR`], against
/// 0, 0.5 and 2).
pub const DEFAULT_BOUND: f64 = 1.0;

/// Options of [`stratify`]. Each default is documented on its field.
#[derive(Debug, Clone)]
pub struct StrataOptions {
    /// The sweep file.
    pub sweep: PathBuf,
    /// The output directory (`best.mesa`, `report.json`).
    pub out: PathBuf,
    /// The split seed (default 0).
    pub seed: u64,
    /// The target (default [`Target::KEEP_99`]).
    pub target: Target,
    /// Folds over train and val's episodes (default 5; at least 2).
    pub folds: usize,
    /// Token prices to try (default [`DEFAULT_LAMBDAS`]).
    pub lambdas: Vec<f64>,
    /// What the strata are fitted and cross-validated on (default
    /// [`FitOn::TrainVal`]; [`FitOn::Train`] leaves val to judge the policy,
    /// as the design study does).
    pub fit: FitOn,
    /// The families cross-validation chooses among (default
    /// [`Families::Keys`]; trees were studied on val and did not help:
    /// docs/RESULTS.md, "The design study").
    pub families: Families,
    /// Questions each side of a tree's split keeps at least (default 30).
    pub min_leaf: usize,
    /// Fits of a key set to join (default 1: one fit on everything; with
    /// `n` > 1, `n` fits each leaving a part of the episodes out, and each
    /// stratum reads the union of their subsets).
    pub bag: usize,
    /// Standard errors the out-of-fold check keeps clear of the target
    /// (default [`DEFAULT_BOUND`]). `keep` asks the J share less `bound`
    /// standard errors to keep the share, `within` the token share plus
    /// `bound` standard errors to stay within the tokens (less the margin).
    pub bound: f64,
    /// The priors cross-validation chooses among for the key sets, in
    /// pseudo-questions (default `[DEFAULT_PRIOR]`; 0: each stratum's
    /// subset from its own questions alone). With `m`, a stratum's sums
    /// gain `m` questions' worth of the pooled questions' mean, so a small
    /// stratum leaves the pooled subset only when its own questions say so
    /// clearly.
    pub priors: Vec<u32>,
    /// Refinements at most (default 0): `remove` rules fitted greedily
    /// after a key set's strata, each on one preview at a rounded threshold
    /// and changing at least `min_leaf` questions; cross-validation
    /// chooses how many, from 0 to this.
    pub refine: usize,
    /// Trades to choose among too (default both units, `words` and
    /// `steps`: on AMA-Bench's val they kept 99% of J with fewer tokens than
    /// the key sets alone, docs/RESULTS.md, "The variants"): per unit,
    /// policies reading all five then `trade UNIT at PRICE` join the
    /// candidates, one per price of `trade_prices`. The sweep must record
    /// what each subset shows (`mesa sweep` does); empty: none.
    pub trade: Vec<mesa_core::Shown>,
    /// The trade's prices (default [`DEFAULT_TRADE_PRICES`]).
    pub trade_prices: Vec<f64>,
    /// Whether a key set's strata followed by a trade are candidates too
    /// (default false): each key set at each prior, unit of `trade` and
    /// trade price, at every token price.
    pub trade_after: bool,
}

impl StrataOptions {
    /// The defaults for `sweep`, writing to `out`.
    pub fn new(sweep: impl Into<PathBuf>, out: impl Into<PathBuf>) -> StrataOptions {
        StrataOptions {
            sweep: sweep.into(),
            out: out.into(),
            seed: 0,
            target: Target::KEEP_99,
            folds: 5,
            lambdas: DEFAULT_LAMBDAS.to_vec(),
            fit: FitOn::TrainVal,
            families: Families::Keys,
            min_leaf: 30,
            bag: 1,
            bound: DEFAULT_BOUND,
            priors: vec![DEFAULT_PRIOR],
            refine: 0,
            trade: mesa_core::Shown::ALL.to_vec(),
            trade_prices: DEFAULT_TRADE_PRICES.to_vec(),
            trade_after: false,
        }
    }
}

/// What to do when there are fewer episodes than `--{flag}` parts: ask
/// for fewer parts, where the option allows as few as there are episodes
/// (it allows no fewer than `least`).
fn fewer_help(flag: &str, least: usize, episodes: usize) -> String {
    if episodes >= least {
        format!("use --{flag} {episodes} or fewer, or a larger sweep")
    } else {
        format!("--{flag} needs at least {least} episode(s) there: use a larger sweep")
    }
}

/// Why [`stratify`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StrataError {
    /// The sweep could not be read or split.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// Fewer episodes to fit on than folds (or bags).
    #[error("the questions fitted on for seed {seed} have {episodes} episode(s), fewer than the {parts} parts --{flag} asks for; {}", fewer_help(flag, *least, *episodes))]
    TooFewEpisodes {
        /// The seed.
        seed: u64,
        /// Episodes in the questions dealt.
        episodes: usize,
        /// Parts asked for.
        parts: usize,
        /// The option that asked (`folds` or `bag`).
        flag: &'static str,
        /// The fewest parts that option allows.
        least: usize,
    },
    /// No bag.
    #[error("--bag must be at least 1 (1 fits once, on everything), got 0")]
    Bag,
    /// No prior to choose among.
    #[error("--prior needs at least one value (0: no shrinkage)")]
    Priors,
    /// Fewer than two folds.
    #[error("--folds must be at least 2, got {0}")]
    Folds(usize),
    /// A tree's sides may not be empty.
    #[error("--min-leaf must be at least 1, got 0")]
    MinLeaf,
    /// A share outside `(0, 1]` or a margin outside `[0, 1)`.
    #[error("{what} must be in {range}, got {value}")]
    Share {
        /// Which option.
        what: &'static str,
        /// The allowed range.
        range: &'static str,
        /// The value given.
        value: f64,
    },
    /// No token price, or one negative or not finite.
    #[error("token prices must be finite numbers >= 0, and at least one is needed; got {0:?}")]
    Lambdas(Vec<f64>),
    /// No trade price, or one negative or not finite.
    #[error("trade prices must be finite numbers >= 0, and at least one is needed; got {0:?}")]
    TradePrices(Vec<f64>),
    /// A trade was asked for and the sweep does not record what subsets show.
    #[error("a trade needs what each subset shows, and the sweep {0} does not record it; regenerate it with `mesa sweep`, or leave trades out (`--trade none`)")]
    NoShown(String),
    /// The output could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// One candidate (key set and price) and its out-of-fold figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    /// The family: a key set (`domain+T.named`) or a tree (`tree depth 2`).
    pub keys: String,
    /// Pseudo-questions of the pooled mean each stratum was shrunk by (0
    /// for trees).
    #[serde(default)]
    pub prior: u32,
    /// Refinements after the strata.
    #[serde(default)]
    pub refine: usize,
    /// The token price each stratum's subset was chosen at (for a trade,
    /// the trade's price).
    pub lambda: f64,
    /// Out-of-fold J as a share of all five's over the same questions.
    pub j_share: f64,
    /// Out-of-fold tokens as a share of all five's.
    pub token_share: f64,
    /// The standard error of `j_share`, over bootstrap resamples of the
    /// episodes (0 for the all-five fallback).
    #[serde(default)]
    pub j_se: f64,
    /// The standard error of `token_share`, likewise.
    #[serde(default)]
    pub token_se: f64,
    /// Strata with a rule of their own, mean over folds.
    pub rules: f64,
}

impl Candidate {
    /// What it is, for messages: `trade words at 0.2`, `strata domain+T.named
    /// prior 10 at lambda 1e-6`, `all five`.
    pub fn describe(&self) -> String {
        if self.keys.starts_with("trade ") {
            format!("{} at {}", self.keys, self.lambda)
        } else if self.keys == ALL_FIVE {
            self.keys.clone()
        } else {
            format!("strata {} at lambda {:e}", self.keys, self.lambda)
        }
    }
}

/// The name of the candidate that reads all five, when none meets `keep`.
const ALL_FIVE: &str = "all five";

/// One stratum of the policy fitted on train and val.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StratumReport {
    /// Its rule's name (`default` for the questions no rule catches).
    pub rule: String,
    /// Its condition, as the policy writes it.
    pub when: String,
    /// Train and val questions in it.
    pub support: usize,
    /// The subset it reads.
    pub select: String,
}

/// What [`stratify`] did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrataReport {
    /// The sweep.
    pub sweep: String,
    /// The seed.
    pub seed: u64,
    /// The target.
    pub target: Target,
    /// Folds.
    pub folds: usize,
    /// What it was fitted on (`train+val` or `train`).
    pub fit: FitOn,
    /// The families chosen among.
    pub families: Families,
    /// A tree split's smallest side.
    pub min_leaf: usize,
    /// Fits of a key set joined.
    pub bag: usize,
    /// Standard errors the out-of-fold check kept clear of the target.
    #[serde(default)]
    pub bound: f64,
    /// The priors chosen among.
    #[serde(default)]
    pub priors: Vec<u32>,
    /// Refinements at most.
    #[serde(default)]
    pub refine: usize,
    /// The trades' units chosen among, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trade: Vec<mesa_core::Shown>,
    /// Questions fitted on.
    pub questions: usize,
    /// Every candidate, in the order tried.
    pub candidates: Vec<Candidate>,
    /// The index of the chosen one; `None` when none meets the target and
    /// the policy reads all five (keep) or the cheapest candidate (within).
    pub chosen: Option<usize>,
    /// The candidate the policy was fitted with.
    pub fitted: Candidate,
    /// The policy's strata, as fitted on train and val.
    pub strata: Vec<StratumReport>,
    /// The policy's source.
    pub policy: String,
}

/// Fits a stratified policy on a sweep's train and val (or train alone,
/// per `opts.fit`; never test),
/// writes `best.mesa` and `report.json` into `opts.out`, and returns the
/// report.
pub fn stratify(opts: &StrataOptions) -> Result<StrataReport, StrataError> {
    check(opts)?;
    let sweep = Sweep::read(&opts.sweep).map_err(EvalError::from)?;
    let problem = Problem::new(&sweep, 0.0, true)?;
    let splits = problem.splits(opts.seed)?;
    let mut idx = problem.indices(&splits, Split::Train);
    if opts.fit == FitOn::TrainVal {
        idx.extend(problem.indices(&splits, Split::Val));
        idx.sort_unstable();
    }
    let report = stratify_problem(&problem, &idx, opts)?;
    write(&opts.out, &report)?;
    Ok(report)
}

fn check(opts: &StrataOptions) -> Result<(), StrataError> {
    if opts.folds < FOLDS.least {
        return Err(StrataError::Folds(opts.folds));
    }
    if opts.min_leaf == 0 {
        return Err(StrataError::MinLeaf);
    }
    if opts.bag < BAGS.least {
        return Err(StrataError::Bag);
    }
    if opts.priors.is_empty() {
        return Err(StrataError::Priors);
    }
    let bad =
        |prices: &[f64]| prices.is_empty() || prices.iter().any(|l| !l.is_finite() || *l < 0.0);
    if bad(&opts.lambdas) {
        return Err(StrataError::Lambdas(opts.lambdas.clone()));
    }
    if !opts.trade.is_empty() && bad(&opts.trade_prices) {
        return Err(StrataError::TradePrices(opts.trade_prices.clone()));
    }
    let (share, what, margin) = match opts.target {
        Target::Keep { share, margin } => (share, "the share of J to keep", margin),
        Target::Within { tokens, margin } => (tokens, "the share of tokens", margin),
    };
    if !(share > 0.0 && share <= 1.0) {
        return Err(StrataError::Share {
            what,
            range: "(0, 1]",
            value: share,
        });
    }
    if !(0.0..1.0).contains(&margin) {
        return Err(StrataError::Share {
            what: "the margin",
            range: "[0, 1)",
            value: margin,
        });
    }
    if !(opts.bound.is_finite() && opts.bound >= 0.0) {
        return Err(StrataError::Share {
            what: "--bound (standard errors)",
            range: "[0, inf)",
            value: opts.bound,
        });
    }
    Ok(())
}

/// [`stratify`] over the questions `idx` of `problem` (the library's core,
/// without files).
pub fn stratify_problem(
    problem: &Problem,
    idx: &[usize],
    opts: &StrataOptions,
) -> Result<StrataReport, StrataError> {
    fit_policy(problem, idx, opts).map(|(report, _)| report)
}

/// The report and the model it wrote.
fn fit_policy(
    problem: &Problem,
    idx: &[usize],
    opts: &StrataOptions,
) -> Result<(StrataReport, Model), StrataError> {
    if !opts.trade.is_empty() && !problem.shown_available {
        return Err(StrataError::NoShown(problem.source.clone()));
    }
    let mut families = opts.families.list(&opts.priors, opts.refine);
    families.extend(opts.trade.iter().map(|&unit| cv::Family::Trade { unit }));
    if opts.trade_after && opts.families != Families::Trees {
        for keys in KEY_SETS {
            for &prior in &opts.priors {
                for &unit in &opts.trade {
                    families.extend(opts.trade_prices.iter().map(|p| cv::Family::Traded {
                        keys,
                        prior,
                        unit,
                        price: p.to_bits(),
                    }));
                }
            }
        }
    }
    let candidates = cross_validate(problem, idx, &families, opts)?;
    let chosen = choose_candidate(&candidates, opts.target, opts.bound);
    // When no candidate meets the target: the cheapest for `within`, all
    // five for `keep`.
    let fitted_on = match (chosen, opts.target) {
        (None, Target::Within { .. }) => (0..candidates.len()).min_by(|&a, &b| {
            candidates[a]
                .token_share
                .total_cmp(&candidates[b].token_share)
        }),
        _ => chosen,
    };
    // Candidates run over the families, each at its every price.
    let tries: Vec<(cv::Family, f64)> = families
        .iter()
        .flat_map(|&f| f.prices(opts).iter().map(move |&l| (f, l)))
        .collect();
    let (model, fitted) = match fitted_on.and_then(|c| Some((tries.get(c)?, candidates.get(c)?))) {
        Some((&(family, lambda), candidate)) => {
            let model = Model::fit(problem, idx, family, lambda, opts)?;
            (model, candidate.clone())
        }
        None => (
            Model::Strata(fit::Fitted::all_five()),
            Candidate {
                keys: ALL_FIVE.to_string(),
                prior: 0,
                refine: 0,
                lambda: 0.0,
                j_share: 1.0,
                token_share: 1.0,
                j_se: 0.0,
                token_se: 0.0,
                rules: 0.0,
            },
        ),
    };
    let name = format!("strata-{}-seed{}", opts.target.name(), opts.seed);
    let spec: PolicySpec = model.spec(problem, &name);
    let report = StrataReport {
        sweep: problem.source.clone(),
        seed: opts.seed,
        target: opts.target,
        folds: opts.folds,
        fit: opts.fit,
        families: opts.families,
        min_leaf: opts.min_leaf,
        bag: opts.bag,
        bound: opts.bound,
        priors: opts.priors.clone(),
        refine: opts.refine,
        trade: opts.trade.clone(),
        questions: idx.len(),
        candidates,
        chosen,
        fitted,
        strata: model.strata_report(problem, idx, &spec),
        policy: spec.to_source(),
    };
    Ok((report, model))
}

/// Numbers repeated rule names (`web_1` and `web-1` both spell `web_1`):
/// the second becomes `web_1_2`.
fn number_repeats(rules: &mut [RuleSpec]) {
    let mut seen = std::collections::HashSet::new();
    for r in rules {
        let base = r.name.clone();
        let mut n = 1;
        while !seen.insert(r.name.clone()) {
            n += 1;
            r.name = format!("{base}_{n}");
        }
    }
}

fn write(out: &Path, report: &StrataReport) -> Result<(), StrataError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| StrataError::Io { path, source }
    };
    std::fs::create_dir_all(out).map_err(io(out))?;
    let policy = out.join("best.mesa");
    std::fs::write(&policy, &report.policy).map_err(io(&policy))?;
    let json = out.join("report.json");
    let text = serde_json::to_string_pretty(report).unwrap_or_default();
    std::fs::write(&json, text + "\n").map_err(io(&json))?;
    Ok(())
}
