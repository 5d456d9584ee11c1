//! `mesa stratify`: a stratified policy (one fixed subset per stratum),
//! its strata and token price chosen by cross-validation over train and val.

use super::optimize::FitArg;
use super::Format;
use crate::error::CliError;
use mesa_optimizer::strata::{stratify, Families, StrataOptions, StrataReport, Target};
use std::path::PathBuf;
use std::process::ExitCode;

/// `mesa stratify --sweep FILE --out DIR [--target keep|within]`
#[derive(Clone, clap::Args)]
pub struct Args {
    /// The sweep file.
    #[arg(long)]
    pub sweep: PathBuf,
    /// Where to write `best.mesa` and `report.json`.
    #[arg(long)]
    pub out: PathBuf,
    /// The split seed (train and val are fitted on; test is never read).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// `keep`: the fewest tokens keeping --share of all five's J; `within`: the highest J
    /// spending at most --tokens of all five's tokens. Both are judged out of fold.
    #[arg(long, value_enum, default_value_t)]
    pub target: TargetArg,
    /// With `--target keep`: the share of all five's J to keep.
    #[arg(long, default_value_t = 0.99)]
    pub share: f64,
    /// With `--target within`: the share of all five's tokens to spend at most.
    #[arg(long, default_value_t = 0.5)]
    pub tokens: f64,
    /// Added to --share (keep) or taken from --tokens (within) for the out-of-fold check
    /// [default: 0 for keep, 0.05 for within].
    #[arg(long)]
    pub margin: Option<f64>,
    /// Standard errors (bootstrap over the episodes) the out-of-fold check keeps clear of
    /// the target: keep asks J less this many to keep --share, within asks tokens plus this
    /// many to stay within --tokens less the margin.
    #[arg(long, default_value_t = mesa_optimizer::strata::DEFAULT_BOUND)]
    pub bound: f64,
    /// Shrink each key-set stratum toward the pooled questions by this many pseudo-questions
    /// of their mean (0: none); several, comma-separated, are chosen among by the
    /// cross-validation.
    #[arg(long, value_delimiter = ',', default_values_t = [mesa_optimizer::strata::DEFAULT_PRIOR])]
    pub prior: Vec<u32>,
    /// Cross-validation folds over the fitted episodes.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Fit on train and val (the default), or on train alone, leaving val to judge the policy.
    #[arg(long, value_enum, default_value_t = FitArg::TrainVal)]
    pub fit: FitArg,
    /// The families of strata to choose among: `keys` (the domain and `preview.K.named`),
    /// `trees` (splits on any preview or one domain, depth 1 to 3), or `both`. Trees did
    /// not help on AMA-Bench's val (docs/RESULTS.md, "The design study").
    #[arg(long, value_enum, default_value_t)]
    pub families: FamiliesArg,
    /// Refinements at most: `remove` rules fitted after a key set's strata, each on one
    /// preview at a rounded threshold (`when preview.T.overlap_R > 0.08 -> remove {R}`);
    /// the cross-validation chooses how many, from 0 to this.
    #[arg(long, default_value_t = 0)]
    pub refine: usize,
    /// Questions each side of a tree's split keeps at least, and questions a refinement
    /// changes at least.
    #[arg(long, default_value_t = 30)]
    pub min_leaf: usize,
    /// Fit each key set this many times, each leaving a part of the episodes out, and read
    /// the union of their subsets in each stratum (1: one fit on everything).
    #[arg(long, default_value_t = 1)]
    pub bag: usize,
    /// Also choose among policies that read all five and then `trade UNIT at PRICE`
    /// (`words`: distinct content words; `steps`: distinct steps; comma-separated), one per
    /// unit and --trade-price; `none`: strata only.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [TradeArg::Words, TradeArg::Steps])]
    pub trade: Vec<TradeArg>,
    /// The trade's prices to try (comma-separated) [default: 0.05 to 1 in steps of 0.05].
    #[arg(long, value_delimiter = ',')]
    pub trade_price: Vec<f64>,
    /// Also choose among each key set's strata followed by a trade (every key set, prior,
    /// unit, trade price and token price).
    #[arg(long)]
    pub trade_after: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t)]
    pub format: Format,
}

/// `--target` of `mesa stratify`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum TargetArg {
    /// The fewest tokens keeping a share of all five's J.
    #[default]
    Keep,
    /// The highest J within a share of all five's tokens.
    Within,
}

/// `--families` of `mesa stratify`.
#[derive(Debug, Clone, Copy, Default, clap::ValueEnum)]
pub enum FamiliesArg {
    /// The key sets: the domain and `preview.K.named`.
    #[default]
    Keys,
    /// Trees over every preview and the domain.
    Trees,
    /// Both.
    Both,
}

/// `--trade` of `mesa stratify`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TradeArg {
    /// Distinct content words.
    Words,
    /// Distinct steps.
    Steps,
    /// No trade.
    None,
}

impl TradeArg {
    /// The unit, `None` for `none`.
    fn unit(self) -> Option<mesa_core::Shown> {
        match self {
            TradeArg::Words => Some(mesa_core::Shown::Words),
            TradeArg::Steps => Some(mesa_core::Shown::Steps),
            TradeArg::None => None,
        }
    }
}

impl std::fmt::Display for TradeArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.unit() {
            Some(unit) => unit.name(),
            None => "none",
        })
    }
}

impl From<FamiliesArg> for Families {
    fn from(f: FamiliesArg) -> Families {
        match f {
            FamiliesArg::Keys => Families::Keys,
            FamiliesArg::Trees => Families::Trees,
            FamiliesArg::Both => Families::Both,
        }
    }
}

/// Runs `mesa stratify`.
pub fn run(a: Args) -> Result<ExitCode, CliError> {
    let mut opts = StrataOptions::new(&a.sweep, &a.out);
    opts.seed = a.seed;
    opts.folds = a.folds;
    opts.fit = a.fit.into();
    opts.families = a.families.into();
    opts.min_leaf = a.min_leaf;
    opts.bag = a.bag;
    opts.bound = a.bound;
    opts.priors = a.prior;
    opts.refine = a.refine;
    opts.trade = a.trade.into_iter().filter_map(TradeArg::unit).collect();
    if !a.trade_price.is_empty() {
        opts.trade_prices = a.trade_price;
    }
    opts.trade_after = a.trade_after;
    opts.target = match a.target {
        TargetArg::Keep => Target::Keep {
            share: a.share,
            margin: a.margin.unwrap_or(0.0),
        },
        TargetArg::Within => Target::Within {
            tokens: a.tokens,
            margin: a.margin.unwrap_or(0.05),
        },
    };
    let report = stratify(&opts)?;
    match a.format {
        Format::Json => outln!("{}", serde_json::to_string_pretty(&report)?),
        Format::Human => out!("{}", human(&report, &a.out)),
    }
    Ok(ExitCode::SUCCESS)
}

fn human(r: &StrataReport, out: &std::path::Path) -> String {
    let f = &r.fitted;
    let how = match r.chosen {
        Some(_) => format!("chosen among {} candidates", r.candidates.len()),
        None => format!(
            "no one of {} candidates met the target out of fold",
            r.candidates.len()
        ),
    };
    let mut s = format!(
        "seed {}: {} questions of {}, {} folds; target {}; {how}\n\
         {}: out of fold J {:.1}% (se {:.1}) and tokens {:.1}% (se {:.1}) of all five's{}\n",
        r.seed,
        r.questions,
        r.fit.name(),
        r.folds,
        r.target.name(),
        f.describe(),
        100.0 * f.j_share,
        100.0 * f.j_se,
        100.0 * f.token_share,
        100.0 * f.token_se,
        if r.bound > 0.0 {
            format!(
                "; checked {} standard error(s) clear of the target",
                r.bound
            )
        } else {
            String::new()
        },
    );
    for st in &r.strata {
        s += &format!(
            "  {:<28} {:>5} questions  {}\n",
            st.rule, st.support, st.select
        );
    }
    s += &format!(
        "wrote {} and {}\n",
        out.join("best.mesa").display(),
        out.join("report.json").display()
    );
    s
}
