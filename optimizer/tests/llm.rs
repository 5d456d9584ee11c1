//! The LLM proposer against a local HTTP server (never an outside
//! service): valid replies, invalid-then-repaired ones, ones the
//! diagnostics' suggestions fix, garbage, HTTP 500 and timeouts.

mod support;

use mesa_optimizer::{
    optimize, read_entries, LlmOptions, OptimizeError, OptimizeOptions, ProposerConfig,
    ARCHIVE_FILE,
};
use mesa_testkit::{chat_reply as chat, Reply, Server};
use std::time::Duration;
use support::{start, synthetic_sweep};

const VALID: &str = "Here is a policy.\n\n```mesa\npolicy \"llm\"\nlet why = words [\"why\", \"caused\", \"failure\"]\nrule causal when query has why -> select {S, T, R}\nrule state when query has words [\"current\", \"change\"] -> select {S, T, G, V}\ndefault {S, T, V}\n```\n";
/// A type error with no machine-applicable fix.
const INVALID: &str = "```mesa\npolicy \"llm\"\nrule causal when query.words -> select {S, T, R}\ndefault {S, T, V}\n```";
/// Another language's syntax, which the checker's suggestion fixes.
const TYPO: &str = "```mesa\npolicy \"llm\"\nrule causal when query contains \"why\" -> select {S, T, R}\ndefault {S, T, V}\n```";

fn run(
    server: &Server,
    dir: &std::path::Path,
    name: &str,
    iterations: usize,
) -> (
    Result<mesa_optimizer::RunSummary, OptimizeError>,
    std::path::PathBuf,
) {
    let sweep = synthetic_sweep(dir, 30, 6, 9);
    let out = dir.join(name);
    let mut o = OptimizeOptions::new(&sweep, &out);
    o.iterations = iterations;
    o.proposer = ProposerConfig::Llm(Box::new(LlmOptions::new(server.config())));
    (optimize(&o), out)
}

#[test]
fn valid_replies() {
    let server = start(|seen, _| {
        // The prompt carries the reference, the scores, the UCB table and the errors.
        let first_user = seen.message(1);
        assert!(first_user.contains("# Direction:"));
        assert!(first_user.contains("UCB"));
        assert!(first_user.contains("Recurring errors"));
        chat(VALID)
    });
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(&server, dir.path(), "valid", 2);
    let r = r.unwrap().report;
    let llm = r.llm.clone().unwrap();
    assert_eq!(llm.candidates, 6);
    assert_eq!(llm.first_try, 6);
    assert!((llm.share_first_try - 1.0).abs() < 1e-12);
    assert_eq!(r.counts.duplicates, 5, "the same policy is evaluated once");
    assert!(std::fs::read_to_string(out.join("report.md"))
        .unwrap()
        .contains("valid at the first try: 6/6"));
}

#[test]
fn invalid_then_repaired() {
    let server = start(|seen, _| {
        if seen.message_count() > 2 {
            // The repair round gets the JSON diagnostics.
            let last = seen.last_message();
            assert!(last.contains("\"code\""), "{last}");
            assert!(last.contains("E0300"), "{last}");
            chat(VALID)
        } else {
            chat(INVALID)
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let (r, _) = run(&server, dir.path(), "repair", 1);
    let r = r.unwrap().report;
    let llm = r.llm.unwrap();
    assert_eq!((llm.candidates, llm.first_try, llm.repaired), (3, 0, 3));
    assert!((llm.share_after_repair - 1.0).abs() < 1e-12);
    assert_eq!(server.requests(), 6);
}

#[test]
fn suggestions_fix_typos_without_a_round_trip() {
    let server = start(|_, _| chat(TYPO));
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(&server, dir.path(), "typo", 1);
    let r = r.unwrap().report;
    let llm = r.llm.unwrap();
    assert_eq!((llm.candidates, llm.autofixed, llm.first_try), (3, 3, 0));
    assert_eq!(server.requests(), 3);
    let (entries, _) = read_entries(&out.join(ARCHIVE_FILE)).unwrap();
    assert!(entries[1]
        .source
        .as_deref()
        .unwrap()
        .contains("query has words [\"why\"]"));
}

#[test]
fn garbage_is_archived_with_the_reason() {
    let server = start(|_, n| {
        chat(if n % 2 == 0 {
            "I cannot help with that."
        } else {
            "```mesa\nselect everything please\n```"
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(&server, dir.path(), "garbage", 1);
    let r = r.unwrap().report;
    assert_eq!(r.best.id, 0, "only the seed is valid");
    assert_eq!(r.llm.unwrap().share_after_repair, 0.0);
    let (entries, _) = read_entries(&out.join(ARCHIVE_FILE)).unwrap();
    assert_eq!(entries.len(), 4);
    for e in &entries[1..] {
        assert!(!e.valid);
        let f = e.failure.as_ref().unwrap();
        assert!(
            f.message.contains("code block") || !f.diagnostics.is_empty(),
            "{f:?}"
        );
        assert_eq!(
            e.reward,
            entries[0].val.unwrap().objective,
            "failures score the floor"
        );
    }
}

#[test]
fn http_500_stops_cleanly_and_resumes() {
    let server = start(|_, _| Reply::text(500, "{\"error\": {\"message\": \"boom\"}}"));
    let dir = tempfile::tempdir().unwrap();
    let (r, out) = run(&server, dir.path(), "down", 2);
    match r {
        Err(OptimizeError::EndpointDown {
            count,
            archived,
            last,
        }) => {
            assert_eq!(count, 3);
            assert_eq!(archived, 4);
            assert!(last.contains("500"), "{last}");
        }
        other => panic!("{other:?}"),
    }
    let (entries, _) = read_entries(&out.join(ARCHIVE_FILE)).unwrap();
    assert!(entries[1..].iter().all(|e| e.endpoint_failed()));
    // The endpoint is back: --resume proposes those candidates again.
    let good = start(|_, _| chat(VALID));
    let sweep = synthetic_sweep(dir.path(), 30, 6, 9);
    let mut o = OptimizeOptions::new(&sweep, &out);
    o.iterations = 2;
    o.resume = true;
    o.proposer = ProposerConfig::Llm(Box::new(LlmOptions::new(good.config())));
    let r = optimize(&o).unwrap().report;
    assert_eq!(r.counts.endpoint_failures, 3);
    assert_eq!(r.counts.total, 4 + 6);
    assert_eq!(r.llm.unwrap().candidates, 6);
}

#[test]
fn timeouts_stop_cleanly() {
    let server = start(|_, _| chat(VALID).delay(Duration::from_millis(1500)));
    let dir = tempfile::tempdir().unwrap();
    let sweep = synthetic_sweep(dir.path(), 30, 6, 9);
    let mut o = OptimizeOptions::new(&sweep, dir.path().join("slow"));
    o.iterations = 1;
    o.max_endpoint_failures = 1;
    o.proposer = ProposerConfig::Llm(Box::new(LlmOptions::new(
        server
            .config()
            .with_timeout(Duration::from_millis(300))
            .with_max_retries(0),
    )));
    let e = optimize(&o).unwrap_err();
    assert!(
        e.to_string().contains("timed out") && e.to_string().contains("--resume"),
        "{e}"
    );
}
