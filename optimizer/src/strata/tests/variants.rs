//! The fit's other families and steps: trees over the previews, bagged fits
//! and refinements, each against what the interpreter reads.

use super::*;

/// A sweep whose need follows a number no key set reads: a question
/// whose `preview.V.share` is above 0.6 needs V, every other G.
fn planted_numeric() -> Problem {
    let mut problem = planted();
    for (n, q) in problem.questions.iter_mut().enumerate() {
        let share = ((n * 37) % 100) as f64 / 100.0;
        q.input
            .previews
            .set(Structure::Vector, Feature::Share, share);
        let needs = if share > 0.6 {
            Structure::Vector
        } else {
            Structure::Graph
        };
        for k in 0..Mask::SUBSETS {
            q.utility[k] = if Mask::subset(k).contains(needs) {
                1.0
            } else {
                0.3
            };
        }
    }
    problem
}

#[test]
fn a_tree_finds_a_threshold_the_key_sets_cannot_read() {
    let problem = planted_numeric();
    let idx = train_val(&problem, 3);
    let o = StrataOptions {
        seed: 3,
        families: Families::Both,
        ..opts()
    };
    let (report, model) = fit_policy(&problem, &idx, &o).unwrap();
    assert!(report.fitted.keys.starts_with("tree depth"), "{report:#?}");
    assert!(report.fitted.token_share < 0.3, "{report:#?}");
    assert!(
        report.policy.contains("preview.V.share > 0.6"),
        "{}",
        report.policy
    );
    assert_policy_reads_the_model(&problem, &report, &model);
    let splits = problem.splits(3).unwrap();
    for i in problem.indices(&splits, Split::Test) {
        assert_eq!(problem.questions[i].utility[model.choose(&problem, i)], 1.0);
    }
    let support: usize = report.strata.iter().map(|s| s.support).sum();
    assert_eq!(support, idx.len());
    // With the key sets alone, the same questions cannot be told apart.
    let keys = StrataOptions {
        families: Families::Keys,
        ..o
    };
    let (alone, _) = fit_policy(&problem, &idx, &keys).unwrap();
    assert!(alone.fitted.token_share > report.fitted.token_share + 0.1);
}

#[test]
fn a_cut_tree_is_the_tree_grown_to_that_depth() {
    for problem in [planted(), planted_numeric()] {
        let idx = train_val(&problem, 0);
        for lambda in [0.0, 1e-4, 1e-3] {
            let grow = |depth| tree::Grow {
                depth,
                lambda,
                min_leaf: 20,
            };
            let deep = tree::Tree::fit(&problem, &idx, grow(3));
            for depth in 0..3 {
                assert_eq!(
                    deep.truncated(depth),
                    tree::Tree::fit(&problem, &idx, grow(depth))
                );
            }
        }
    }
}

#[test]
fn a_tree_on_the_planted_strata_reads_what_the_interpreter_reads() {
    let problem = planted();
    let idx: Vec<usize> = train_val(&problem, 0)
        .into_iter()
        .filter(|&i| problem.questions[i].domain != "WEB")
        .collect();
    let o = StrataOptions {
        families: Families::Trees,
        ..opts()
    };
    let (report, model) = fit_policy(&problem, &idx, &o).unwrap();
    assert!(report.fitted.j_share >= 0.99, "{report:#?}");
    assert_policy_reads_the_model(&problem, &report, &model);
}

#[test]
fn thresholds_are_the_roundest_number_between_two_values() {
    use tree::roundest_between as r;
    assert_eq!(r(2347.2, 2361.0), Some(2350.0));
    assert_eq!(r(0.18, 0.2), Some(0.19));
    assert_eq!(r(0.5, 1.0), Some(0.6));
    assert_eq!(r(-1.0, 0.0), Some(-0.9));
    assert_eq!(r(1.0, 1e6), Some(1e5));
    assert_eq!(r(1.0, f64::from_bits(1.0f64.to_bits() + 1)), None);
    for (a, b) in [(0.1234, 0.1235), (1e-9, 2e-9), (-3.5, -3.25), (99.0, 100.5)] {
        let t = r(a, b).unwrap();
        assert!(t > a && t < b, "{a} {b} {t}");
    }
}

#[test]
fn a_bagged_fit_reads_the_union_of_its_bags_and_the_policy_agrees() {
    let problem = planted();
    let idx = train_val(&problem, 4);
    let o = StrataOptions {
        seed: 4,
        bag: 5,
        ..opts()
    };
    let (report, model) = fit_policy(&problem, &idx, &o).unwrap();
    assert_eq!(report.bag, 5);
    let Model::Strata(_) = &model else {
        panic!("a key set was expected: {report:#?}")
    };
    // Each bag leaves one part of the episodes out; the union reads
    // everything any bag reads, on every question.
    assert_reads_the_union(&problem, &idx, &report, &model, 4);
    assert_policy_reads_the_model(&problem, &report, &model);
    let too_many = StrataOptions { bag: 10_000, ..o };
    let e = stratify_problem(&problem, &idx, &too_many).unwrap_err();
    assert!(e.to_string().contains("--bag"), "{e}");
}

/// Every question reads the union of what the report's bags read.
fn assert_reads_the_union(
    problem: &Problem,
    idx: &[usize],
    report: &StrataReport,
    model: &Model,
    seed: u64,
) {
    let keys = KEY_SETS
        .iter()
        .find(|k| {
            let family = Family::Keys {
                keys: k,
                prior: report.fitted.prior,
                refine: 0,
            };
            family.name() == report.fitted.keys
        })
        .unwrap();
    let part = cv::folds(problem, idx, report.bag, seed, cv::BAGS).unwrap();
    let bags: Vec<fit::Fitted> = (0..report.bag)
        .map(|b| {
            fit::Fitted::fit(
                problem,
                &cv::without(idx, &part, b),
                keys,
                report.fitted.lambda,
                report.fitted.prior,
            )
        })
        .collect();
    for i in 0..problem.questions.len() {
        let union = bags.iter().fold(Mask::EMPTY, |m, f| {
            m.union(Mask::subset(f.choose(problem, i)))
        });
        assert_eq!(
            Mask::subset(model.choose(problem, i)),
            union,
            "question {i}"
        );
    }
}

#[test]
fn a_domain_some_bags_never_saw_reads_their_backoff_in_the_union() {
    let problem = planted();
    // WEB keeps two episodes: of five bags, some never see it.
    let mut web = Vec::new();
    let idx: Vec<usize> = train_val(&problem, 0)
        .into_iter()
        .filter(|&i| {
            let q = &problem.questions[i];
            if q.domain != "WEB" {
                return true;
            }
            if !web.contains(&q.episode_no) && web.len() < 2 {
                web.push(q.episode_no);
            }
            web.contains(&q.episode_no)
        })
        .collect();
    for keys in [0, 1, 3, 4] {
        let o = StrataOptions {
            bag: 5,
            lambdas: vec![1e-4],
            ..opts()
        };
        let model = cv::Model::fit(
            &problem,
            &idx,
            Family::Keys {
                keys: KEY_SETS[keys],
                prior: 0,
                refine: 0,
            },
            1e-4,
            &o,
        )
        .unwrap();
        let report = StrataReport {
            fitted: Candidate {
                keys: fit::keys_name(KEY_SETS[keys]),
                prior: 0,
                refine: 0,
                lambda: 1e-4,
                j_share: 0.0,
                token_share: 0.0,
                j_se: 0.0,
                token_se: 0.0,
                rules: 0.0,
            },
            ..stratify_problem(&problem, &idx, &o).unwrap()
        };
        assert_reads_the_union(&problem, &idx, &report, &model, 0);
    }
}

/// [`planted`] where R is a second need, except for the questions whose
/// `preview.S.top` is above 0.6: no key set tells those apart, so every
/// stratum reads R, and a refinement can drop it for them.
fn planted_refinable() -> Problem {
    let mut problem = planted();
    for (n, q) in problem.questions.iter_mut().enumerate() {
        let top = ((n * 37) % 100) as f64 / 100.0;
        q.input.previews.set(Structure::Summary, Feature::Top, top);
        for k in 0..Mask::SUBSETS {
            let m = Mask::subset(k);
            let need = if q.utility[k] == 1.0 { 0.5 } else { 0.15 };
            let raw = if top > 0.6 || m.contains(Structure::Raw) {
                0.5
            } else {
                0.15
            };
            q.utility[k] = need + raw;
        }
    }
    problem
}

#[test]
fn a_refinement_drops_what_no_stratum_can_and_the_policy_reads_it() {
    let problem = planted_refinable();
    let idx = train_val(&problem, 1);
    let o = StrataOptions {
        seed: 1,
        refine: 2,
        ..opts()
    };
    let (report, model) = fit_policy(&problem, &idx, &o).unwrap();
    assert_eq!(report.fitted.refine, 1, "{report:#?}");
    assert!(report.fitted.j_share >= 0.99, "{report:#?}");
    assert!(
        report
            .policy
            .contains("when preview.S.top > 0.601 -> remove {R}"),
        "{}",
        report.policy
    );
    assert_policy_reads_the_model(&problem, &report, &model);
    let splits = problem.splits(1).unwrap();
    for i in problem.indices(&splits, Split::Test) {
        assert_eq!(problem.questions[i].utility[model.choose(&problem, i)], 1.0);
    }
    // The refinement's row counts the questions it changes.
    let drop = report.strata.last().unwrap();
    assert_eq!(drop.select, "remove {R}");
    let above = idx
        .iter()
        .filter(|&&i| {
            problem.questions[i]
                .input
                .previews
                .get(Structure::Summary, Feature::Top)
                > 0.6
        })
        .count();
    assert_eq!(drop.support, above);
    // Candidates: every key set at 0 to 2 refinements; without, fewer
    // candidates and more tokens.
    assert_eq!(
        report.candidates.len(),
        KEY_SETS.len() * 3 * o.lambdas.len()
    );
    let (plain, _) = fit_policy(&problem, &idx, &opts()).unwrap();
    assert_eq!(plain.candidates.len(), KEY_SETS.len() * o.lambdas.len());
    assert!(plain.fitted.token_share > report.fitted.token_share + 0.1);
}

#[test]
fn refinements_are_greedy_so_fewer_are_the_first_ones() {
    let problem = planted_refinable();
    let idx = train_val(&problem, 0);
    for lambda in [0.0, 1e-4, 1e-3] {
        let base = cv::Model::fit(
            &problem,
            &idx,
            Family::Keys {
                keys: KEY_SETS[3],
                prior: 0,
                refine: 0,
            },
            lambda,
            &opts(),
        )
        .unwrap();
        let most = base.clone().refined(&problem, &idx, lambda, 3, 30);
        for n in 0..3 {
            let fewer = base.clone().refined(&problem, &idx, lambda, n, 30);
            for &i in &idx {
                assert_eq!(
                    most.truncated(n).choose(&problem, i),
                    fewer.choose(&problem, i)
                );
            }
        }
    }
}

#[test]
fn a_refined_policy_adds_and_removes_as_the_model_reads() {
    // Plain strata on the planted sweep read subsets the default does not
    // contain (so each stratum is written as `remove` and `add`); then
    // removals that may empty a mask (which reads the default).
    let problem = planted();
    // Fitted on the questions that name no step: G is the default, and
    // TEXT2SQL's stratum reads R instead.
    let idx: Vec<usize> = train_val(&problem, 0)
        .into_iter()
        .filter(|&i| {
            let q = &problem.questions[i];
            q.input.previews.get(Structure::Temporal, Feature::Named) < 0.0
        })
        .collect();
    let domain = Family::Keys {
        keys: KEY_SETS[1],
        prior: 0,
        refine: 0,
    };
    let base = cv::Model::fit(&problem, &idx, domain, 1e-3, &opts()).unwrap();
    let removal = |remove, structure, feature, threshold, above| refine::Removal {
        remove,
        structure,
        feature,
        threshold,
        above,
    };
    let refined = Model::Refined {
        base: Box::new(base),
        removals: vec![
            removal(Structure::Raw, Structure::Summary, Feature::Top, 0.5, true),
            removal(
                Structure::Graph,
                Structure::Temporal,
                Feature::Named,
                0.5,
                false,
            ),
            removal(
                Structure::Vector,
                Structure::Summary,
                Feature::Top,
                0.25,
                false,
            ),
        ],
    };
    let text = refined.spec(&problem, "refined").to_source();
    assert!(text.contains(" -> add {"), "{text}");
    assert!(
        text.contains("when preview.T.named < 0.5 -> remove {G}"),
        "{text}"
    );
    assert_source_reads_the_model(&problem, &text, &refined);
    // A question whose stratum reads G alone and names no step has its
    // mask emptied by the second removal, and reads the default.
    let Model::Refined { base, .. } = &refined else {
        unreachable!()
    };
    let g = Mask::single(Structure::Graph).subset_index().unwrap();
    let default = refined.spec(&problem, "refined").default;
    let emptied: Vec<usize> = (0..problem.questions.len())
        .filter(|&i| base.choose(&problem, i) == g)
        .collect();
    assert!(!emptied.is_empty());
    for i in emptied {
        assert_eq!(Mask::subset(refined.choose(&problem, i)), default);
    }
}
