//! `mesa sweep --items`: each question's evidence item by item. The items
//! must recompute the sweep's own record exactly (tokens, words, steps and
//! utility of all 31 subsets), or a study that reads them to weigh finer
//! choices (scripts/depth_study.py) would measure something else.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn mesa(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mesa"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run mesa")
}

fn ok(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Twelve episodes of 14 steps whose steps say different things, with
/// questions that name a step and answers that name others.
fn dataset() -> String {
    let things = [
        "kettle", "drawer", "lamp", "ticket", "invoice", "router", "garden",
    ];
    let mut out = String::new();
    for e in 0..12 {
        let steps: Vec<String> = (0..14)
            .map(|i| {
                let a = things[(i + e) % things.len()];
                let b = things[(i * 3 + e) % things.len()];
                format!(
                    r#"{{"action": "inspect {a} number {i}", "observation": "the {b} shows code c{e}x{i} near the {a}"}}"#
                )
            })
            .collect();
        let q = |n: usize, asked: usize, told: usize| {
            format!(
                r#"{{"id": "ep{e}:{n}", "question": "What did the agent inspect at step {asked}?", "answer": "the {} at step {told}, code c{e}x{told}"}}"#,
                things[(told + e) % things.len()]
            )
        };
        out.push_str(&format!(
            r#"{{"id": "ep{e}", "task": "audit {e}", "domain": "{}", "steps": [{}], "questions": [{}, {}, {}]}}"#,
            ["web", "software", "game"][e % 3],
            steps.join(", "),
            q(0, 2, 9),
            q(1, 5, 5),
            q(2, 11, 1),
        ));
        out.push('\n');
    }
    out
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// What the subset `bits` (bit i: the i-th of S T G V R) shows and costs,
/// recomputed from the items: (tokens, words, steps, utility).
fn recompute(items: &Value, bits: usize) -> (f64, usize, usize, f64) {
    let mut tokens = 0;
    let mut non_empty = 0;
    let mut words = BTreeSet::new();
    let mut steps = BTreeSet::new();
    for (i, section) in items["sections"].as_array().unwrap().iter().enumerate() {
        let list = section["items"].as_array().unwrap();
        if bits >> i & 1 == 0 || list.is_empty() {
            continue;
        }
        non_empty += 1;
        tokens += section["header_tokens"].as_u64().unwrap();
        for item in list {
            tokens += item["tokens"].as_u64().unwrap() + 1;
            words.extend(
                item["words"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w.as_str().unwrap().to_owned()),
            );
            steps.extend(
                item["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_u64().unwrap()),
            );
        }
    }
    let tokens = tokens + (non_empty as u64).saturating_sub(1);
    let share = |wanted: &[Value], found: &dyn Fn(&Value) -> bool| {
        if wanted.is_empty() {
            0.0
        } else {
            wanted.iter().filter(|w| found(w)).count() as f64 / wanted.len() as f64
        }
    };
    let utility = match (items.get("labels"), items.get("answer_words")) {
        (Some(l), None) => share(l.as_array().unwrap(), &|l| {
            steps.contains(&l.as_u64().unwrap())
        }),
        (None, Some(w)) => share(w.as_array().unwrap(), &|w| {
            words.contains(w.as_str().unwrap())
        }),
        other => panic!("labels or answer words, not {other:?}"),
    };
    (tokens as f64, words.len(), steps.len(), utility)
}

/// A new directory holding the dataset and a store built from it: the
/// directory, the dataset's path and the store's.
fn built(name: &str) -> (PathBuf, String, String) {
    let dir = std::env::temp_dir().join(format!("mesa-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("data.jsonl");
    std::fs::write(&data, dataset()).unwrap();
    let data = data.to_string_lossy().into_owned();
    let store = dir.join("store").to_string_lossy().into_owned();
    ok(&mesa(&["build", &data, "-o", &store, "--quiet"]));
    (dir, data, store)
}

#[test]
fn the_items_recompute_the_sweep() {
    let (dir, data, store) = built("items");
    let (data, store_s) = (data.as_str(), store.as_str());
    for utility in ["evidence-recall", "answer-only-recall", "answer-coverage"] {
        let sweep = dir.join(format!("sweep-{utility}.jsonl"));
        let items = dir.join(format!("items-{utility}.jsonl"));
        ok(&mesa(&[
            "sweep",
            store_s,
            data,
            "--utility",
            utility,
            "-o",
            sweep.to_str().unwrap(),
            "--items",
            items.to_str().unwrap(),
            "--quiet",
        ]));
        let records = lines(&sweep);
        let items = lines(&items);
        assert_eq!(
            records.len() - 1,
            items.len(),
            "{utility}: one items line per question"
        );
        assert_eq!(items.len(), 36);
        let mut positive = 0;
        for (r, it) in records[1..].iter().zip(&items) {
            assert_eq!(r["question_id"], it["question_id"], "{utility}: same order");
            assert_eq!(r["episode"], it["episode"]);
            for k in 0..31 {
                let (tokens, words, steps, u) = recompute(it, k + 1);
                let at = |f: &str| r[f][k].as_f64().unwrap();
                let q = &r["question_id"];
                assert_eq!(tokens, at("tokens"), "{utility} {q} subset {k}: tokens");
                assert_eq!(words as f64, at("words"), "{utility} {q} subset {k}: words");
                assert_eq!(steps as f64, at("steps"), "{utility} {q} subset {k}: steps");
                assert!(
                    (u - at("utility")).abs() < 1e-12,
                    "{utility} {q} subset {k}: utility"
                );
                positive += usize::from(u > 0.0);
            }
        }
        assert!(
            positive > 100,
            "{utility}: the utilities are not all 0 ({positive})"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// An items file that cannot be written is an error naming it, and exit 1.
#[test]
fn an_items_path_that_cannot_be_written_is_an_error() {
    let (dir, data, store) = built("items-bad");
    let (data, store_s) = (data.as_str(), store.as_str());
    let bad = dir.join("no-such-dir").join("items.jsonl");
    let sweep = dir.join("sweep.jsonl");
    let o = mesa(&[
        "sweep",
        store_s,
        data,
        "-o",
        sweep.to_str().unwrap(),
        "--items",
        bad.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("items.jsonl"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
