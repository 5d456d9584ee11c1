//! Candidate evidence-aware features for every AMA-Bench question, to study
//! what predicts the oracle's choice (scripts/oracle_study.py reads them with
//! a sweep): per structure, the share of the steps the question names that
//! its evidence shows, how concentrated its item scores are, and per pair of
//! structures how much their shown steps overlap.
//!
//! ```text
//! cargo run --release -p mesa-optimizer --example oracle_features -- DATA STORE OUT.jsonl
//! ```

use mesa_core::Structure;
use mesa_memory::dataset::LoadOptions;
use mesa_memory::structures::stepref::StepRefs;
use mesa_memory::{Retrieval, Store};
use std::collections::BTreeSet;
use std::io::Write;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(data), Some(store), Some(out)) = (args.get(1), args.get(2), args.get(3)) else {
        return Err(
            "usage: oracle_features DATA STORE OUT.jsonl (STORE built by `mesa build DATA`)".into(),
        );
    };
    let loaded = mesa_memory::load(std::path::Path::new(data), &LoadOptions::default())?;
    let store = Store::open(std::path::Path::new(store))?;
    let mut w = std::io::BufWriter::new(std::fs::File::create(out)?);
    for e in &loaded.episodes {
        let memory = store
            .episode(&e.id)
            .ok_or("an episode of DATA is not in STORE")?;
        let indices: Vec<usize> = e.steps.iter().map(|s| s.index).collect();
        for q in &e.questions {
            let r = Retrieval::new(memory, &q.question);
            let named: BTreeSet<usize> = StepRefs::parse(&q.question)
                .resolve(&indices, 0, usize::MAX)
                .into_iter()
                .map(|p| indices[p])
                .collect();
            let mut shown: Vec<BTreeSet<usize>> = Vec::new();
            let mut feats = serde_json::Map::new();
            for s in Structure::ALL {
                let ev = r.evidence(s)?;
                let steps: BTreeSet<usize> = ev
                    .items
                    .iter()
                    .flat_map(|i| i.steps.iter().copied())
                    .collect();
                let named_shown = if named.is_empty() {
                    -1.0
                } else {
                    named.intersection(&steps).count() as f64 / named.len() as f64
                };
                let scores: Vec<f64> = ev.items.iter().map(|i| i.score).collect();
                let sum: f64 = scores.iter().sum();
                let top = scores.iter().copied().fold(0.0, f64::max);
                let second = scores
                    .iter()
                    .copied()
                    .filter(|x| *x < top)
                    .fold(0.0, f64::max);
                let l = s.letter();
                feats.insert(format!("{l}.named_shown"), named_shown.into());
                feats.insert(
                    format!("{l}.concentration"),
                    (if sum > 0.0 { top / sum } else { 0.0 }).into(),
                );
                feats.insert(format!("{l}.gap"), (top - second).into());
                feats.insert(format!("{l}.steps"), (steps.len() as f64).into());
                shown.push(steps);
            }
            for a in 0..5 {
                for b in a + 1..5 {
                    let (x, y) = (&shown[a], &shown[b]);
                    let union = x.union(y).count();
                    let j = if union == 0 {
                        0.0
                    } else {
                        x.intersection(y).count() as f64 / union as f64
                    };
                    let key = format!(
                        "{}{}.overlap",
                        Structure::ALL[a].letter(),
                        Structure::ALL[b].letter()
                    );
                    feats.insert(key, j.into());
                }
            }
            feats.insert("named".into(), (named.len() as f64).into());
            let line = serde_json::json!({"question_id": q.id, "episode": e.id, "features": feats});
            writeln!(w, "{line}")?;
        }
    }
    w.flush()?;
    Ok(())
}
