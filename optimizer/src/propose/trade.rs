//! The `trade` direction: after the rules, each question keeps the subset
//! of its mask that shows the most for its tokens (docs/LANGUAGE.md,
//! "Trade"). The offline proposer tries each unit at each of its prices
//! on train ([`crate::strata::DEFAULT_TRADE_PRICES`] unless
//! `mesa optimize --trade-price` says otherwise), as `mesa stratify` does.

use super::learn::{Fit, Params};
use super::spec::{PolicySpec, TradeSpec};
use mesa_core::Shown;

impl Fit<'_> {
    /// The best of no trade and `trade UNIT at P` for both units and every
    /// price of `prices` on the train objective. Starting from no trade, each candidate
    /// in turn (`words` then `steps`, prices rising) replaces the best so
    /// far only when it gains at least half of `min_gain` over it, as the
    /// budget direction does: a later candidate must earn its place.
    /// Nothing changes when the sweep records no subset counts (a trade
    /// could not be scored).
    pub fn trade(
        &self,
        base: &PolicySpec,
        params: &Params,
        prices: &[f64],
    ) -> (PolicySpec, Vec<String>) {
        if !self.problem.shown_available {
            return (
                base.clone(),
                vec!["no trade: the sweep records no subset counts (`words`, `steps`); sweep again with this mesa".into()],
            );
        }
        let with = |trade: Option<TradeSpec>| PolicySpec {
            trade,
            ..base.clone()
        };
        let mut best = (self.total(&with(None)), None);
        for unit in Shown::ALL {
            for &price in prices {
                let trade = Some(TradeSpec { unit, price });
                let v = self.total(&with(trade));
                if v > best.0 + params.min_gain * 0.5 {
                    best = (v, trade);
                }
            }
        }
        if best.1 == base.trade {
            return (base.clone(), Vec::new());
        }
        let show = |t: Option<TradeSpec>| {
            t.map_or("none".to_string(), |t| format!("{} at {}", t.unit, t.price))
        };
        let note = format!(
            "trade {} -> {} ({:+.3})",
            show(base.trade),
            show(best.1),
            best.0 - self.total(base)
        );
        (with(best.1), vec![note])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::propose::spec::FeatTable;
    use crate::strata::tests_trade::planted_shown;
    use crate::strata::DEFAULT_TRADE_PRICES;
    use mesa_core::Mask;

    /// Each question needs one structure that only what the subsets show
    /// tells; tokens cost 1e-3 each (so all five read untraded costs more
    /// than it gains).
    fn fit_of<'a>(
        problem: &'a crate::eval::Problem,
        table: &'a FeatTable,
        idx: &'a [usize],
    ) -> Fit<'a> {
        Fit {
            problem,
            table,
            idx,
            rate: 1e-3,
        }
    }

    #[test]
    fn the_trade_direction_finds_the_subset_the_counts_tell() {
        let problem = planted_shown();
        let table = FeatTable::new(&problem);
        let idx: Vec<usize> = (0..problem.questions.len()).step_by(2).collect();
        let fit = fit_of(&problem, &table, &idx);
        let base = PolicySpec::fixed("p", Mask::ALL);
        let (spec, notes) = fit.trade(&base, &Params::default(), &DEFAULT_TRADE_PRICES);
        let t = spec.trade.expect("a trade");
        assert!(notes[0].starts_with("trade none -> "), "{notes:?}");
        assert!(fit.total(&spec) > fit.total(&base) + 0.05 * idx.len() as f64);
        // Every question reads exactly the structure it needs.
        let (picked, _) = fit.outcomes(&spec);
        for (&i, &k) in idx.iter().zip(&picked) {
            assert_eq!(problem.questions[i].utility[k], 1.0);
            assert_eq!(Mask::subset(k).len(), 1, "{t:?} read {}", Mask::subset(k));
        }
        // Fitting again keeps it, with nothing to say.
        let (again, notes) = fit.trade(&spec, &Params::default(), &DEFAULT_TRADE_PRICES);
        assert_eq!(again.trade, spec.trade);
        assert!(notes.is_empty(), "{notes:?}");
        // Re-fitting the masks of a traded policy weighs the trade: it
        // does not lose what the trade gained.
        let (refit, _) = fit.refit_masks(&spec);
        assert!(fit.total(&refit) >= fit.total(&spec) - 1e-9);
        // Only the prices given are tried.
        for price in [0.37, 0.02] {
            let (only, _) = fit.trade(&base, &Params::default(), &[price]);
            assert_eq!(only.trade.map(|t| t.price), Some(price));
        }
    }

    #[test]
    fn without_subset_counts_nothing_changes() {
        let mut problem = planted_shown();
        problem.shown_available = false;
        let table = FeatTable::new(&problem);
        let idx: Vec<usize> = (0..problem.questions.len()).collect();
        let fit = fit_of(&problem, &table, &idx);
        let base = PolicySpec::fixed("p", Mask::ALL);
        let (spec, notes) = fit.trade(&base, &Params::default(), &DEFAULT_TRADE_PRICES);
        assert_eq!(spec.trade, None);
        assert!(notes[0].contains("no subset counts"), "{notes:?}");
    }
}
