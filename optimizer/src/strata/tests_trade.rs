//! `--trade`: policies that read all five and then trade, chosen among the
//! strata by the same cross-validation.

use super::cv::Model;
use super::tests::{assert_source_reads_the_model, opts, planted, planted_with, train_val, COST};
use super::*;
use crate::eval::run::selections;
use crate::eval::PolicyFile;
use crate::sweep::UtilityKind;
use mesa_core::{Feature, Mask, Shown, Structure};
use mesa_memory::Coverage;
use mesa_runtime::EngineKind;

/// A sweep where each question needs one structure that nothing a rule
/// can read tells (it follows the question's number), and only that
/// structure shows anything: a trade finds it, strata cannot.
pub(crate) fn planted_shown() -> Problem {
    planted_with(UtilityKind::AnswerCoverage, |n, r| {
        let needs = Structure::ALL[(n * 7 + n / 5) % 5];
        for s in Structure::ALL {
            r.previews.set(s, Feature::Tokens, COST[s.index()]);
        }
        let shows: [u32; Mask::SUBSETS] = std::array::from_fn(|k| {
            if Mask::subset(k).contains(needs) {
                10
            } else {
                0
            }
        });
        r.coverage = Some(Coverage {
            words: shows,
            steps: shows.map(|c| c / 5),
        });
        needs
    })
}

#[test]
fn a_trade_is_chosen_where_no_stratum_can_tell_and_the_policy_reads_it() {
    let problem = planted_shown();
    let idx = train_val(&problem, 0);
    let mut o = opts();
    o.trade = vec![Shown::Words, Shown::Steps];
    let (report, model) = fit_policy(&problem, &idx, &o).unwrap();
    assert_eq!(report.fitted.keys, "trade words", "{report:#?}");
    assert_eq!(report.fitted.j_share, 1.0);
    assert!(report.fitted.token_share < 0.25, "{report:#?}");
    assert!(
        report.policy.contains("default all") && report.policy.contains("trade words at "),
        "{}",
        report.policy
    );
    assert_eq!(report.trade, [Shown::Words, Shown::Steps]);
    // The written policy reads what the model chose, in the interpreter
    // and in the sandbox, on every question (test included).
    assert_source_reads_the_model(&problem, &report.policy, &model);
    let policy = PolicyFile::Source {
        path: "trade".into(),
        text: report.policy.clone(),
    };
    let sandbox = selections(&policy, &problem, EngineKind::Wasm).unwrap();
    for (i, s) in sandbox.iter().enumerate() {
        assert_eq!(s.mask, Mask::subset(model.choose(&problem, i)));
        // The planted need, which only what the subsets show tells.
        assert_eq!(problem.questions[i].utility[model.choose(&problem, i)], 1.0);
    }
    // Without --trade, the strata keep 99% only by reading (nearly) all.
    let (plain, _) = fit_policy(&problem, &idx, &opts()).unwrap();
    assert!(plain.fitted.token_share > 2.0 * report.fitted.token_share);
}

#[test]
fn a_trade_model_is_all_five_then_the_trade() {
    let problem = planted_shown();
    let model = Model::Trade(crate::propose::spec::TradeSpec {
        unit: Shown::Steps,
        price: 0.5,
    });
    let spec = model.spec(&problem, "t");
    assert_eq!(spec.default, Mask::ALL);
    assert!(spec.rules.is_empty());
    assert_source_reads_the_model(&problem, &spec.to_source(), &model);
}

#[test]
fn a_trade_needs_a_sweep_that_records_what_subsets_show() {
    let problem = planted();
    assert!(!problem.shown_available);
    let idx = train_val(&problem, 0);
    let mut o = opts();
    o.trade = vec![Shown::Steps];
    let err = fit_policy(&problem, &idx, &o).unwrap_err();
    assert!(
        matches!(err, StrataError::NoShown(_)) && err.to_string().contains("mesa sweep"),
        "{err}"
    );
    o.trade_prices = vec![-1.0];
    assert!(matches!(check(&o), Err(StrataError::TradePrices(_))));
}

#[test]
fn strata_then_a_trade_read_what_the_model_reads() {
    let problem = planted_shown();
    let idx = train_val(&problem, 0);
    let family = super::cv::Family::Traded {
        keys: KEY_SETS[1],
        prior: 0,
        unit: Shown::Words,
        price: 0.5f64.to_bits(),
    };
    let model = Model::fit(&problem, &idx, family, 1e-6, &opts()).unwrap();
    let spec = model.spec(&problem, "t");
    assert!(spec.trade.is_some());
    let source = spec.to_source();
    assert!(source.contains("trade words at 0.5"), "{source}");
    assert_source_reads_the_model(&problem, &source, &model);
    // The trade keeps the planted need within whatever the strata chose.
    for i in idx {
        assert_eq!(problem.questions[i].utility[model.choose(&problem, i)], 1.0);
    }
    // As a candidate of the cross-validation.
    let mut o = opts();
    o.trade = vec![Shown::Words];
    o.trade_prices = vec![0.5];
    o.trade_after = true;
    let (report, _) = fit_policy(&problem, &train_val(&problem, 0), &o).unwrap();
    let traded = report
        .candidates
        .iter()
        .filter(|c| c.keys.contains(", trade words at 0.5"))
        .count();
    assert_eq!(traded, KEY_SETS.len() * o.lambdas.len());
}
