//! The search with the offline proposer: it beats the best fixed subset
//! on a planted synthetic sweep, its fitted scores equal the sandbox's, it
//! resumes after a kill without losing candidates, and refuses to mix runs.

mod support;

use mesa_optimizer::testing::{total_objective, FeatTable, Simulator};
use mesa_optimizer::{
    optimize, read_entries, selections, ArchiveEntry, FitOn, OptimizeError, OptimizeOptions,
    PolicyFile, Problem, Split, Sweep, ValHalf, ARCHIVE_FILE,
};
use mesa_runtime::EngineKind;
use support::synthetic_sweep;

fn opts(sweep: &std::path::Path, out: &std::path::Path, iterations: usize) -> OptimizeOptions {
    let mut o = OptimizeOptions::new(sweep, out);
    o.iterations = iterations;
    o
}

#[test]
fn offline_beats_the_best_fixed_subset() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 100, 10, 3);
    let out = dir.path().join("run");
    let summary = optimize(&opts(&sweep, &out, 6)).unwrap();
    let r = &summary.report;
    let fixed = r
        .baselines_test
        .iter()
        .find(|b| b.name == "best fixed (val)")
        .unwrap()
        .metrics
        .objective;
    let oracle = r
        .baselines_test
        .iter()
        .find(|b| b.name == "oracle")
        .unwrap()
        .metrics
        .objective;
    assert!(
        r.best.test.objective > fixed + 0.01,
        "best {} vs best fixed {fixed}",
        r.best.test.objective
    );
    assert!(r.best.test.objective <= oracle);
    assert_eq!(r.counts.total, 1 + 3 * 6);
    assert_eq!(
        r.counts.valid, r.counts.total,
        "offline candidates are valid by construction"
    );
    for f in [
        "report.md",
        "report.json",
        "best.mesa",
        "best.wasm",
        "pareto.svg",
        "run.json",
        ARCHIVE_FILE,
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
    let best = std::fs::read_to_string(out.join("best.mesa")).unwrap();
    assert_eq!(
        mesa_grammar::format_source(&best).unwrap(),
        best,
        "written by the formatter"
    );
    assert!(r.timings.turnaround_ms.n > 0 && r.timings.turnaround_ms.mean > 0.0);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("candidate compile time") && md.contains("qtype (gold labels)"));
    let svg = std::fs::read_to_string(out.join("pareto.svg")).unwrap();
    assert!(svg.contains("best #") && svg.contains("all five"));

    // The native simulation the offline proposer fits with selects what the
    // reference interpreter selects, for every question and candidate.
    let sw = Sweep::read(&sweep).unwrap();
    let problem = Problem::new(&sw, 1e-6, false).unwrap();
    let table = FeatTable::new(&problem);
    let splits = problem.splits(0).unwrap();
    let train = problem.indices(&splits, Split::Train);
    let (entries, _) = read_entries(&out.join(ARCHIVE_FILE)).unwrap();
    for e in entries
        .iter()
        .filter(|e| e.spec.is_some() && e.duplicate_of.is_none())
    {
        let spec = e.spec.as_ref().unwrap();
        let sim = Simulator::new(spec, &table);
        let policy = PolicyFile::Source {
            path: format!("#{}", e.id),
            text: e.source.clone().unwrap(),
        };
        let interp = selections(&policy, &problem, EngineKind::Interp).unwrap();
        for (i, s) in interp.iter().enumerate() {
            assert_eq!(sim.run(&table, i).0, s.mask, "#{} question {i}", e.id);
        }
        let native = total_objective(spec, &problem, &table, &train) / train.len() as f64;
        assert!(native.is_finite());
    }
}

#[test]
fn no_qtype_hides_the_type() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 60, 8, 4);
    let out = dir.path().join("run");
    let mut o = opts(&sweep, &out, 3);
    o.hide_qtype = true;
    let summary = optimize(&o).unwrap();
    assert!(!summary.report.inputs.qtype);
    let (entries, _) = read_entries(&out.join(ARCHIVE_FILE)).unwrap();
    for e in &entries {
        assert!(
            !e.source.as_deref().unwrap_or("").contains("qtype"),
            "#{} reads qtype",
            e.id
        );
        assert_ne!(e.direction.as_deref(), Some("qtype-routing"));
    }
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("qtype hidden"));
}

#[test]
fn the_search_half_of_val_leaves_the_choice_half_unseen() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 60, 8, 4);
    let out = dir.path().join("run");
    let mut o = opts(&sweep, &out, 3);
    o.val_half = Some(ValHalf::Search);
    let summary = optimize(&o).unwrap();
    // The val questions compared on are exactly the search half's.
    let read = Sweep::read(&sweep).unwrap();
    let problem = Problem::new(&read, o.lambda, false).unwrap();
    let splits = problem.splits(o.seed).unwrap();
    let half = |h| problem.indices_in(&splits, Split::Val, Some(h)).len();
    let all = problem.indices(&splits, Split::Val).len();
    let (search, choice) = (half(ValHalf::Search), half(ValHalf::Choice));
    assert!(search > 0 && choice > 0 && search + choice == all);
    assert_eq!(summary.report.split_questions[1], search);
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("val's search half only"));
    // A resume must compare on the same val.
    let mut other = opts(&sweep, &out, 3);
    other.resume = true;
    let e = optimize(&other).unwrap_err();
    assert!(e.to_string().contains("--val-half"), "{e}");
    o.resume = true;
    optimize(&o).unwrap();
}

#[test]
fn fitting_on_train_and_val_compares_on_the_same_questions() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 60, 8, 4);
    let out = dir.path().join("run");
    let mut o = opts(&sweep, &out, 3);
    o.fit = FitOn::TrainVal;
    o.val_half = Some(ValHalf::Search);
    let summary = optimize(&o).unwrap();
    let read = Sweep::read(&sweep).unwrap();
    let problem = Problem::new(&read, o.lambda, false).unwrap();
    let splits = problem.splits(o.seed).unwrap();
    let train = problem.split_data(&splits, Split::Train).unwrap();
    let search = problem
        .split_data_in(&splits, Split::Val, Some(ValHalf::Search))
        .unwrap();
    let both = train.joined(&search);
    // Joined in question order, nothing twice, nothing of the choice half.
    assert_eq!(both.idx.len(), train.idx.len() + search.idx.len());
    assert!(both.idx.windows(2).all(|w| w[0] < w[1]));
    for (i, input) in both.idx.iter().zip(&both.inputs) {
        assert_eq!(input.query, problem.questions[*i].input.query);
        assert!(!splits.holds(
            &problem.questions[*i].episode,
            Split::Val,
            Some(ValHalf::Choice)
        ));
    }
    // The best candidate's "val" figures are over the joined questions.
    assert_eq!(
        summary.report.best.val.as_ref().map(|m| m.n),
        Some(both.idx.len())
    );
    assert_eq!(
        summary.report.best.train.as_ref().map(|m| m.n),
        Some(both.idx.len())
    );
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("fitted and candidates compared on train and val together"));
    // A resume must fit on the same questions.
    let mut other = opts(&sweep, &out, 3);
    other.val_half = Some(ValHalf::Search);
    other.resume = true;
    let e = optimize(&other).unwrap_err();
    assert!(e.to_string().contains("--fit"), "{e}");
}

/// What must match between an uninterrupted and a resumed run (timings may differ).
type Comparable = (
    usize,
    String,
    Option<String>,
    Option<String>,
    bool,
    Option<f64>,
    Option<usize>,
);

fn comparable(e: &ArchiveEntry) -> Comparable {
    (
        e.iteration,
        e.mode.name().to_string(),
        e.direction.clone(),
        e.source.clone(),
        e.valid,
        e.val.map(|m| m.objective),
        e.duplicate_of,
    )
}

#[test]
fn resume_after_a_kill_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 50, 8, 5);
    // Uninterrupted.
    let a = dir.path().join("a");
    optimize(&opts(&sweep, &a, 4)).unwrap();
    let (full, _) = read_entries(&a.join(ARCHIVE_FILE)).unwrap();
    // Killed during iteration 3: run 3 iterations, then cut the last line
    // in the middle as a kill during the write would.
    let b = dir.path().join("b");
    optimize(&opts(&sweep, &b, 3)).unwrap();
    let path = b.join(ARCHIVE_FILE);
    let text = std::fs::read(&path).unwrap();
    let last_start = text[..text.len() - 1]
        .iter()
        .rposition(|&c| c == b'\n')
        .unwrap()
        + 1;
    let cut = last_start + (text.len() - last_start) / 2;
    std::fs::write(&path, &text[..cut]).unwrap();
    // Without --resume, the run directory is refused.
    let e = optimize(&opts(&sweep, &b, 4)).unwrap_err();
    assert!(
        matches!(e, OptimizeError::Archive(_)) && e.to_string().contains("--resume"),
        "{e}"
    );
    // With other settings, too.
    let mut other = opts(&sweep, &b, 4);
    other.resume = true;
    other.lambda = 2e-6;
    let e = optimize(&other).unwrap_err();
    assert!(e.to_string().contains("--lambda"), "{e}");
    // Resumed: the cut line is dropped and reported, the candidate proposed again.
    let mut resume = opts(&sweep, &b, 4);
    resume.resume = true;
    let summary = optimize(&resume).unwrap();
    let rec = summary
        .report
        .recovered
        .clone()
        .expect("the cut line is reported");
    assert_eq!(rec.line, 10);
    assert!(std::fs::read_to_string(b.join("report.md"))
        .unwrap()
        .contains("cut-off last archive line"));
    let (resumed, recovered) = read_entries(&path).unwrap();
    assert!(recovered.is_none());
    assert_eq!(resumed.len(), full.len());
    for (x, y) in full.iter().zip(&resumed) {
        assert_eq!(comparable(x), comparable(y), "#{}", x.id);
    }
    // Resuming a finished run changes nothing.
    optimize(&resume).unwrap();
    assert_eq!(read_entries(&path).unwrap().0.len(), full.len());
    // A damaged line in the middle is an error, not a silent loss.
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"id\": 2, broken";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let e = optimize(&resume).unwrap_err();
    assert!(e.to_string().contains(":3: damaged archive line"), "{e}");
}

#[test]
fn bad_trade_prices_are_clear_errors_that_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 20, 4, 6);
    for prices in [vec![], vec![0.0], vec![0.1, f64::NAN], vec![-0.5]] {
        let out = dir.path().join("run");
        let mut o = opts(&sweep, &out, 1);
        o.trade_prices = prices.clone();
        let e = optimize(&o).unwrap_err();
        assert!(matches!(e, OptimizeError::TradePrices(_)), "{e}");
        assert!(e.to_string().contains("trade prices must be"), "{e}");
        assert!(!out.exists(), "{prices:?} wrote {}", out.display());
    }
}

#[test]
fn a_resume_must_try_the_same_trade_prices() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 20, 4, 6);
    let out = dir.path().join("run");
    let mut o = opts(&sweep, &out, 1);
    optimize(&o).unwrap();
    o.resume = true;
    o.iterations = 2;
    o.trade_prices = vec![0.1, 0.2];
    let e = optimize(&o).unwrap_err();
    assert!(matches!(e, OptimizeError::Archive(_)), "{e}");
    assert!(e.to_string().contains("--trade-price"), "{e}");
    assert!(e.to_string().contains("0.1,0.2"), "{e}");
    // With the archived (default) prices the run goes on.
    o.trade_prices = mesa_optimizer::strata::DEFAULT_TRADE_PRICES.to_vec();
    optimize(&o).unwrap();
}

#[test]
fn bad_sweeps_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 20, 4, 6);
    let text = std::fs::read_to_string(&sweep).unwrap();
    let cut = dir.path().join("cut.jsonl");
    std::fs::write(&cut, &text[..text.len() - 50]).unwrap();
    let e = optimize(&opts(&cut, &dir.path().join("r1"), 1)).unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let v1 = dir.path().join("v1.jsonl");
    std::fs::write(&v1, text.replacen("\"version\":2", "\"version\":1", 1)).unwrap();
    let e = optimize(&opts(&v1, &dir.path().join("r2"), 1)).unwrap_err();
    assert!(e.to_string().contains("version 1"), "{e}");
}
