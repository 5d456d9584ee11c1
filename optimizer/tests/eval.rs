//! Evaluation on hand-made sweeps (numbers computed by hand), the
//! engines' agreement, and clear errors for bad input.

use mesa_core::{Mask, Previews};
use mesa_optimizer::synthetic::{generate, SyntheticConfig};
use mesa_optimizer::{
    evaluate_policy, selections, write_sweep, EvalError, EvalOptions, PolicyFile, Problem, Split,
    Stage, Sweep, SweepRecord, UtilityKind,
};
use mesa_runtime::EngineKind;
use std::path::Path;

const S: u8 = 0b00001;
const T: u8 = 0b00010;

/// Ten episodes, each with one question of type X and one of type Y, and
/// one unlabelled question that would change every number if it counted.
/// Utilities depend on the type only, so every split of every seed has the
/// same means, and the expected numbers can be worked out by hand:
///
/// | mask | u (X) | u (Y) | tokens |
/// | {S} | 0.8 | 0.2 | 1000 |
/// | {T} | 0.2 | 0.6 | 3000 |
/// | all five | 0.9 | 0.9 | 10000 |
/// | any other | 0.1 | 0.1 | 5000 |
fn hand_sweep(dir: &Path) -> std::path::PathBuf {
    let mut records = Vec::new();
    for e in 0..10 {
        for (j, (qtype, us, ut)) in [("X", 0.8, 0.2), ("Y", 0.2, 0.6)].into_iter().enumerate() {
            let mut utility = [0.1; Mask::SUBSETS];
            let mut tokens = [5000.0; Mask::SUBSETS];
            let (ks, kt) = (usize::from(S) - 1, usize::from(T) - 1);
            utility[ks] = us;
            utility[kt] = ut;
            utility[Mask::SUBSETS - 1] = 0.9;
            tokens[ks] = 1000.0;
            tokens[kt] = 3000.0;
            tokens[Mask::SUBSETS - 1] = 10000.0;
            records.push(SweepRecord {
                episode: format!("ep{e}"),
                question_id: format!("ep{e}:{j}"),
                domain: if e % 2 == 0 { "alpha" } else { "beta" }.into(),
                qtype: Some(qtype.into()),
                task: "do things".into(),
                query: format!("question of type {qtype}"),
                labelled: true,
                previews: Previews::basic([[1000.0, 0.5, 1.0]; 5]),
                utility,
                tokens,
                coverage: None,
            });
        }
    }
    let mut odd = records[0].clone();
    odd.question_id = "ep0:unlabelled".into();
    odd.labelled = false;
    odd.utility = [1.0; Mask::SUBSETS];
    records.push(odd);
    let path = dir.join("hand.jsonl");
    write_sweep(&path, UtilityKind::EvidenceRecall, "hand", "none", &records).unwrap();
    path
}

fn source(text: &str) -> PolicyFile {
    PolicyFile::Source {
        path: "p.mesa".into(),
        text: text.into(),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn hand_computed_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = hand_sweep(dir.path());
    let mut opts = EvalOptions::new(&sweep);
    opts.lambda = 1e-4;
    opts.split = mesa_optimizer::Split::Test;
    let policy = source("policy \"by-type\"\nrule x when qtype is X -> select {S}\ndefault {T}\n");
    let r = evaluate_policy(&policy, &opts).unwrap();
    assert_eq!(r.labelled, 20, "the unlabelled question is left out");
    assert_eq!(r.seeds, vec![0, 1, 2, 3, 4]);
    let p = &r.policy.metrics;
    // X -> {S}: u 0.8, 1000 tokens; Y -> {T}: u 0.6, 3000 tokens.
    assert!(close(p.j.mean, 0.7), "{:?}", p.j);
    assert!(close(p.c.mean, 2000.0));
    assert!(close(p.objective.mean, 0.7 - 1e-4 * 2000.0));
    assert!(close(p.structures.mean, 1.0));
    assert!(
        p.objective.std.abs() < 1e-12,
        "every split has the same mean"
    );
    // Test is 60% of 10 episodes = 6 episodes = 12 questions.
    assert!(close(r.policy.metrics.n, 12.0));
    let b = |name: &str| {
        r.baselines
            .iter()
            .find(|b| b.name == name)
            .unwrap_or_else(|| panic!("baseline {name}"))
    };
    assert!(close(b("S only").metrics.j.mean, 0.5));
    assert!(close(b("S only").metrics.objective.mean, 0.5 - 0.1));
    assert!(close(b("T only").metrics.objective.mean, 0.4 - 0.3));
    assert!(close(b("G only").metrics.objective.mean, 0.1 - 0.5));
    assert!(close(b("all five").metrics.objective.mean, 0.9 - 1.0));
    assert!(close(b("all five").metrics.structures.mean, 5.0));
    // Best fixed on val: {S} (0.4 beats {T} 0.1 and all five -0.1).
    assert!(b("best fixed (val)").detail.starts_with("{S}"));
    assert!(close(b("best fixed (val)").metrics.objective.mean, 0.4));
    // Per-domain: both domains prefer {S}.
    assert!(close(b("per-domain (train)").metrics.objective.mean, 0.4));
    let lookup = &b("per-domain (train)").detail;
    assert!(lookup.split("; ").all(|d| d.ends_with(" {S}")), "{lookup}");
    // Oracle: X -> {S} (0.7), Y -> {T} (0.3): the policy is the oracle here.
    assert!(close(b("oracle").metrics.objective.mean, 0.5));
    assert!(close(b("oracle").metrics.j.mean, 0.7));
    // Random: deterministic, within the range of the 31 masks.
    let random = b("random").metrics.objective.mean;
    assert!(random > -1.0 && random < 0.7);
    assert_eq!(
        evaluate_policy(&policy, &opts).unwrap().baselines,
        r.baselines
    );
    // Breakdown by type.
    let x = &r.policy.breakdown.qtype["X"];
    assert!(close(x.j, 0.8) && close(x.c, 1000.0));
    let y = &r.policy.breakdown.qtype["Y"];
    assert!(close(y.j, 0.6) && close(y.c, 3000.0));
    assert!(r.policy.breakdown.domain.contains_key("alpha"));
    // Markdown and JSON.
    let md = mesa_optimizer::eval_markdown(&r);
    assert!(
        md.contains("| **by-type** | 0.5000 ± 0.0000 | 0.7000 ± 0.0000 | 2000 ± 0 |"),
        "{md}"
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["policy"]["name"], "by-type");

    // With the question type hidden, `qtype is X` is always false: {T} for all.
    opts.hide_qtype = true;
    let r = evaluate_policy(&policy, &opts).unwrap();
    assert!(close(r.policy.metrics.j.mean, 0.4));
    assert!(!r.inputs.qtype);
    assert!(r.notes.iter().any(|n| n.contains("qtype")));

    // Another split: val.
    opts.hide_qtype = false;
    opts.split = Split::Val;
    opts.seeds = 1;
    let r = evaluate_policy(&policy, &opts).unwrap();
    assert!(close(r.policy.metrics.n, 4.0));
    assert_eq!(r.policy.per_seed.len(), 1);
}

#[test]
fn interpreter_and_wasm_agree() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("syn.jsonl");
    let records = generate(&SyntheticConfig {
        episodes: 40,
        questions_per_episode: 10,
        ..SyntheticConfig::default()
    });
    write_sweep(&path, UtilityKind::EvidenceRecall, "syn", "none", &records).unwrap();
    let sweep = Sweep::read(&path).unwrap();
    let problem = Problem::new(&sweep, 1e-6, false).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut policies: Vec<PolicyFile> = [
        "quickstart.mesa",
        "preview_thresholds.mesa",
        "token_budget.mesa",
        "topk_scores.mesa",
        "per_domain.mesa",
        "fig5.mesa",
        "std_cues.mesa",
    ]
    .iter()
    .filter_map(|f| std::fs::read_to_string(examples.join(f)).ok())
    .map(|t| source(&t))
    .collect();
    policies.push(source(
        "policy \"mix\"\nlet why = words [\"why\", \"caused\"]\nrule a when query has why and preview.R.hits > 0 -> select {S, T, R}\n\
         rule b when qtype in [C, D] -> select {S, G, V}\nrule c when preview.G.top < 0.3 -> remove {G}\ndefault {S, T, G}\nbudget 6000 tokens\n",
    ));
    assert!(policies.len() >= 3);
    for p in &policies {
        let wasm = selections(p, &problem, EngineKind::Wasm).unwrap();
        let interp = selections(p, &problem, EngineKind::Interp).unwrap();
        assert_eq!(wasm.len(), problem.questions.len());
        assert_eq!(wasm, interp);
    }
}

/// Found by the optimizer's native-vs-sandbox check: with unused keyword
/// sets in the policy, the compiled module reports a keyword that is not
/// in the query. A bug in the Wasm keyword scanner (mesa-compiler), not in
/// this crate; kept here because the optimizer's scores depend on it.
#[test]
fn wasm_agrees_with_the_interpreter_with_unused_keyword_sets() {
    use mesa_core::{Engine, Input};
    use mesa_runtime::{Runtime, Staged};
    let src = "policy \"p\"\nlet drawer = words [\"drawer\"]\nlet unused_a = words [\"me\"]\nlet unused_b = words [\"overall\"]\n\
               rule r when domain is EMBODIED_AI and qtype is C and query has drawer -> select {S, T, V, R}\n\
               rule c when qtype is C -> select {S, T, G, V}\ndefault {S, T, V, R}\n";
    let input = Input {
        query: "Where is the room located now?".into(),
        domain: Some("EMBODIED_AI".into()),
        qtype: Some("C".into()),
        ..Input::default()
    };
    let rt = Runtime::new().unwrap();
    let mut staged = Staged::check(src).unwrap();
    let mut wasm = staged.engine(&rt, EngineKind::Wasm).unwrap();
    let mut interp = staged.engine(&rt, EngineKind::Interp).unwrap();
    assert_eq!(
        wasm.select(&input).unwrap(),
        interp.select(&input).unwrap(),
        "the query has no `drawer`: rule c decides"
    );
}

#[test]
fn clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    // A sweep without R previews, and a policy that reads them.
    let mut records = generate(&SyntheticConfig {
        episodes: 10,
        questions_per_episode: 2,
        ..SyntheticConfig::default()
    });
    for r in &mut records {
        r.previews.remove(mesa_core::Structure::Raw);
    }
    let path = dir.path().join("nor.jsonl");
    write_sweep(&path, UtilityKind::EvidenceRecall, "syn", "none", &records).unwrap();
    let policy = source(
        "policy \"p\"\nrule big when preview.R.tokens > 4000 -> remove {R}\ndefault {S, R}\n",
    );
    match evaluate_policy(&policy, &EvalOptions::new(&path)) {
        Err(EvalError::Policy { failure, .. }) => {
            assert_eq!(failure.stage, Stage::Inputs);
            assert!(
                failure.message.contains("preview.R.tokens"),
                "{}",
                failure.message
            );
            assert!(
                failure.message.contains("S, T, G, V"),
                "{}",
                failure.message
            );
        }
        other => panic!("{other:?}"),
    }
    // A trading policy on a sweep that does not record what subsets show.
    let trade = source("policy \"p\"\ndefault all\ntrade steps at 0.3\n");
    match evaluate_policy(&trade, &EvalOptions::new(&path)) {
        Err(EvalError::Policy { failure, .. }) => {
            assert_eq!(failure.stage, Stage::Inputs);
            assert!(
                failure.message.contains("trades steps") && failure.message.contains("mesa sweep"),
                "{}",
                failure.message
            );
        }
        other => panic!("{other:?}"),
    }
    // A policy that does not check.
    let bad = source("policy \"p\"\nrule r when query has nothing -> add {R}\ndefault {S}\n");
    let e = evaluate_policy(&bad, &EvalOptions::new(&path)).unwrap_err();
    assert!(e.to_string().contains("E0200"), "{e}");
    // A sweep of another version.
    let text =
        std::fs::read_to_string(&path)
            .unwrap()
            .replacen("\"version\":2", "\"version\":7", 1);
    let v7 = dir.path().join("v7.jsonl");
    std::fs::write(&v7, text).unwrap();
    let e = evaluate_policy(
        &source("policy \"p\"\ndefault {S}\n"),
        &EvalOptions::new(&v7),
    )
    .unwrap_err();
    assert!(e.to_string().contains("version 7"), "{e}");
    // A missing file.
    let e = evaluate_policy(
        &source("policy \"p\"\ndefault {S}\n"),
        &EvalOptions::new(dir.path().join("none.jsonl")),
    )
    .unwrap_err();
    assert!(e.to_string().contains("none.jsonl"), "{e}");
    // Too few episodes to split.
    let few: Vec<SweepRecord> = records
        .iter()
        .filter(|r| r.episode.parse::<u32>().unwrap_or(0) < 3)
        .cloned()
        .collect();
    let fp = dir.path().join("few.jsonl");
    write_sweep(&fp, UtilityKind::EvidenceRecall, "syn", "none", &few).unwrap();
    let e = evaluate_policy(
        &source("policy \"p\"\ndefault {S}\n"),
        &EvalOptions::new(&fp),
    )
    .unwrap_err();
    assert!(e.to_string().contains("at least 5"), "{e}");
}

#[test]
fn masks_score_as_their_index() {
    // Sanity: index k of the arrays is the mask with bits k + 1.
    assert_eq!(Mask::subset_index(Mask::from_bits(S | T)), Some(2));
}
