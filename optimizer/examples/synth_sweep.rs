//! Writes a synthetic sweep with planted structure, for trying `mesa eval`
//! and `mesa optimize` without building a store:
//!
//! ```text
//! cargo run --release -p mesa-optimizer --example synth_sweep -- sweep.jsonl [EPISODES] [QUESTIONS] [SEED]
//! mesa optimize --sweep sweep.jsonl --out run/
//! ```

use mesa_optimizer::synthetic::{generate, SyntheticConfig};
use mesa_optimizer::{write_sweep, UtilityKind};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(out) = args.first() else {
        eprintln!("usage: synth_sweep OUT.jsonl [EPISODES=208] [QUESTIONS=12] [SEED=1]");
        return ExitCode::from(2);
    };
    let number = |i: usize, default: u64| match args.get(i) {
        None => Ok(default),
        Some(a) => a
            .parse::<u64>()
            .map_err(|_| format!("`{a}` is not a number")),
    };
    let (episodes, questions, seed) = match (number(1, 208), number(2, 12), number(3, 1)) {
        (Ok(e), Ok(q), Ok(s)) => (e as usize, q as usize, s),
        (Err(m), _, _) | (_, Err(m), _) | (_, _, Err(m)) => {
            eprintln!("error: {m}");
            return ExitCode::from(2);
        }
    };
    let records = generate(&SyntheticConfig {
        episodes,
        questions_per_episode: questions,
        seed,
        ..SyntheticConfig::default()
    });
    let path = std::path::Path::new(out);
    match write_sweep(
        path,
        UtilityKind::EvidenceRecall,
        "synthetic",
        "none",
        &records,
    ) {
        Ok(()) => {
            eprintln!("wrote {} questions to {out}", records.len());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
