//! A stand-in for the `mesa` binary's `eval` and `optimize` subcommands
//! (until they are wired in), plus `synth` to write a synthetic sweep:
//!
//! ```text
//! cargo run --release -p mesa-optimizer --example mesa-opt -- synth --out sweep.jsonl
//! cargo run --release -p mesa-optimizer --example mesa-opt -- optimize --sweep sweep.jsonl --out run/
//! cargo run --release -p mesa-optimizer --example mesa-opt -- eval run/best.mesa --sweep sweep.jsonl
//! ```

use clap::{Parser, Subcommand};
use mesa_optimizer::sweep::synthetic::{generate, SyntheticConfig};
use mesa_optimizer::sweep::{write_sweep, UtilityKind};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Score a policy and the baselines on a sweep.
    Eval(mesa_optimizer::cli::EvalArgs),
    /// Search for a policy.
    Optimize(mesa_optimizer::cli::OptimizeArgs),
    /// Write a synthetic sweep with planted structure.
    Synth {
        /// Output file.
        #[arg(long)]
        out: PathBuf,
        /// Episodes.
        #[arg(long, default_value_t = 208)]
        episodes: usize,
        /// Questions per episode.
        #[arg(long, default_value_t = 12)]
        questions: usize,
        /// Seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Eval(a) => mesa_optimizer::cli::eval_main(a),
        Command::Optimize(a) => mesa_optimizer::cli::optimize_main(a),
        Command::Synth {
            out,
            episodes,
            questions,
            seed,
        } => {
            let records = generate(&SyntheticConfig {
                episodes,
                questions_per_episode: questions,
                seed,
                ..SyntheticConfig::default()
            });
            match write_sweep(
                &out,
                UtilityKind::EvidenceRecall,
                "synthetic",
                "none",
                &records,
            ) {
                Ok(()) => {
                    eprintln!("wrote {} questions to {}", records.len(), out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
