//! `frontier`: the fixed subsets' frontier, the oracle and policies on a
//! hand-made sweep whose numbers can be worked out by hand.

use mesa_core::{Mask, Previews};
use mesa_optimizer::frontier::{frontier, FrontierOptions, Rule, Target, ValChoice};
use mesa_optimizer::{write_sweep, SweepRecord, UtilityKind};
use std::path::Path;

/// Twenty episodes, each with a question that needs S (type X) and one
/// that needs T (type Y): a subset's utility is 1 if it holds the needed
/// structure, else 0; each structure adds 200 tokens. So all five: J 1,
/// 1000 tokens; the cheapest fixed subset keeping 99% of J is {S, T} (40%
/// of the tokens, J 100%); routing X to {S} and Y to {T} needs 20%.
fn sweep(dir: &Path) -> std::path::PathBuf {
    let mut records = Vec::new();
    for e in 0..20 {
        for (j, (qtype, needs)) in [("X", 0usize), ("Y", 1)].into_iter().enumerate() {
            let mut utility = [0.0; Mask::SUBSETS];
            let mut tokens = [0.0; Mask::SUBSETS];
            for k in 0..Mask::SUBSETS {
                let bits = k + 1;
                utility[k] = if bits & (1 << needs) != 0 { 1.0 } else { 0.0 };
                tokens[k] = 200.0 * f64::from((bits as u32).count_ones());
            }
            records.push(SweepRecord {
                episode: format!("ep{e}"),
                question_id: format!("ep{e}:{j}"),
                domain: "alpha".into(),
                qtype: Some(qtype.into()),
                task: "do things".into(),
                query: format!("question of type {qtype}"),
                labelled: true,
                previews: Previews::basic([[200.0, 0.5, 1.0]; 5]),
                utility,
                tokens,
                coverage: None,
            });
        }
    }
    let path = dir.join("hand.jsonl");
    write_sweep(&path, UtilityKind::EvidenceRecall, "hand", "none", &records).unwrap();
    path
}

/// The hand-made sweep, a routed policy per seed (read through `{seed}`)
/// and an all-five policy, in `dir`; the options that score both on two
/// seeds.
fn setup(dir: &Path) -> FrontierOptions {
    let path = sweep(dir);
    for seed in 0..2 {
        let src = "policy \"routed\"\nrule x when qtype is X -> select {S}\ndefault {T}\n";
        std::fs::write(dir.join(format!("routed-{seed}.mesa")), src).unwrap();
    }
    let all = dir.join("all.mesa");
    std::fs::write(&all, "policy \"all\"\ndefault all\n").unwrap();
    let policies = vec![
        dir.join("routed-{seed}.mesa").display().to_string(),
        all.display().to_string(),
    ];
    FrontierOptions {
        seeds: 0..2,
        ..FrontierOptions::new(&path, policies)
    }
}

#[test]
fn the_frontier_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let opts = setup(dir.path());
    let r = frontier(&opts).unwrap();
    assert_eq!(r.seeds.len(), 2);
    for f in &r.seeds {
        assert_eq!(f.fixed.len(), Mask::SUBSETS);
        assert_eq!((f.all_five.j, f.all_five.c), (1.0, 1000.0));
        let fixed = f.fixed_headline;
        assert!(
            (fixed.tokens_for_keep.unwrap() - 0.4).abs() < 1e-12,
            "{fixed:?}"
        );
        assert!((fixed.j_at_half.unwrap() - 1.0).abs() < 1e-12);
        let routed = f.policy_headlines[0];
        assert!((routed.tokens_for_keep.unwrap() - 0.2).abs() < 1e-12);
        assert!((f.oracle_headline.tokens_for_keep.unwrap() - 0.2).abs() < 1e-12);
        let all = f.policy_headlines[1];
        assert_eq!(all.tokens_for_keep, Some(1.0));
        assert_eq!(all.j_at_half, None);
        // Every resample gives the same difference: -0.2.
        let keep = f.against_fixed.unwrap().tokens_for_keep.unwrap();
        assert!(
            (keep.lo + 0.2).abs() < 1e-12 && (keep.hi + 0.2).abs() < 1e-12,
            "{keep:?}"
        );
        // Val picks the routed policy for both targets, by every rule: it
        // keeps all of J on every half and every resample of val, so the
        // margin and the standard errors are 0.
        let v = &f.chosen_on_val;
        let chosen = v.chosen(Rule::Keep).unwrap();
        assert_eq!(chosen.policy, 0);
        assert!((chosen.c - 0.2).abs() < 1e-12);
        for rule in Rule::ALL {
            assert_eq!(v.chosen(rule), Some(chosen), "{rule:?}");
        }
        assert_eq!(v.allowance(Rule::KeepMargin), Some(0.0));
        assert_eq!(v.allowance(Rule::KeepBound), Some(0.0));
        assert_eq!(v.allowance(Rule::Keep), None);
        // Checked on val alone, every rule's pick keeps J on the other half
        // with half the fixed subsets' tokens ({S, T}: 40%), so every
        // halving is a win for the keep rules; within half the tokens it
        // only ties {S, T}'s J, which is no win. Ties go to the plainest.
        for c in &v.checks {
            assert_eq!(c.draws, mesa_optimizer::frontier::CHECK_DRAWS, "{c:?}");
            let wins = match c.rule.target() {
                Target::Keep => c.draws,
                Target::Half => 0,
            };
            assert_eq!((c.picked, c.met, c.beats), (c.draws, c.draws, wins));
            assert!((c.c - 0.2).abs() < 1e-12 && (c.j - 1.0).abs() < 1e-12);
        }
        assert_eq!(v.checked_keep, Some(Rule::Keep));
        assert_eq!(v.checked(Target::Keep), Some(chosen));
        assert_eq!(v.checked_half, Some(Rule::Half));
        // Against all five it keeps all of J with a fifth of the tokens,
        // on every resample.
        let p = f.against_fixed.unwrap();
        let (j, c) = (p.chosen_j.unwrap(), p.chosen_tokens.unwrap());
        assert!(j.lo.abs() < 1e-12 && j.hi.abs() < 1e-12, "{j:?}");
        assert!(
            (c.lo + 0.8).abs() < 1e-12 && (c.hi + 0.8).abs() < 1e-12,
            "{c:?}"
        );
        // {S, T} and {S} / {T} are on the fixed frontier; all five is not.
        assert!(!f.pareto.contains(&(Mask::SUBSETS - 1)));
    }
    let md = r.to_markdown();
    assert!(
        md.contains("| best fixed subset (in hindsight) | 40.0% ± 0.0 | 100.0% ± 0.0 |"),
        "{md}"
    );
    let svg = r.to_svg();
    assert!(svg.starts_with("<svg") && svg.matches("<rect x=").count() >= Mask::SUBSETS);
}

#[test]
fn the_choice_on_a_half_of_val_and_cross_fitted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = setup(dir.path());
    let r = frontier(&opts).unwrap();
    // Choosing on val's choice half only says so, and picks the same here.
    let half = mesa_optimizer::ValHalf::Choice;
    let on_half = FrontierOptions {
        val: ValChoice::Half(half),
        ..opts.clone()
    };
    let h = frontier(&on_half).unwrap();
    for (a, b) in r.seeds.iter().zip(&h.seeds) {
        assert_eq!((a.chosen_on_val.on, b.chosen_on_val.on), (None, Some(half)));
        assert_eq!(a.chosen_on_val.rules, b.chosen_on_val.rules);
    }
    let (routed, all_path) = (opts.policies[0].clone(), opts.policies[1].clone());
    // Cross-fitted, with the stand-ins swapped: on val, policy 1 (routed)
    // reads as the all-five policy and policy 2 (all five) as the routed
    // one, so the choice follows the stand-ins, not the policies scored.
    let crossed = FrontierOptions {
        val: ValChoice::CrossFit(vec![
            (all_path.clone(), all_path.clone()),
            (routed.clone(), routed),
        ]),
        ..opts.clone()
    };
    for f in &frontier(&crossed).unwrap().seeds {
        let v = &f.chosen_on_val;
        assert!(v.cross_fit);
        // Policy 2's stand-in (routed) keeps J with a fifth of the tokens
        // on val, so `keep` picks policy 2, scored as what it is: all five.
        let c = v.chosen(Rule::Keep).unwrap();
        assert_eq!(c.policy, 1);
        assert_eq!((c.j, c.c), (1.0, 1.0));
    }
}

#[test]
fn missing_policies_and_unmatched_pairs_are_errors_that_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let opts = setup(dir.path());
    let all_path = opts.policies[1].clone();
    // Pairs must match the policies one to one.
    let short = FrontierOptions {
        val: ValChoice::CrossFit(vec![(all_path.clone(), all_path)]),
        ..opts.clone()
    };
    let e = frontier(&short).unwrap_err();
    assert!(
        e.to_string()
            .contains("1 --cross-fit pair(s) for 2 --policy"),
        "{e}"
    );
    // A missing policy file is an error that names it.
    let missing = [dir.path().join("none-{seed}.mesa").display().to_string()];
    let e = frontier(&FrontierOptions {
        seeds: 0..1,
        ..FrontierOptions::new(&opts.sweep, missing.to_vec())
    })
    .unwrap_err();
    assert!(e.to_string().contains("none-0.mesa"), "{e}");
}
