//! Prints a generated policy, for measuring the command line end to end:
//! `cargo run --release -p mesa-compiler --example synthetic_policy -- 200 > gen200.mesa`
//! writes 200 rules over 20 keyword sets of 25 words (500 keywords) and 10
//! patterns, the "generated" workload of docs/BENCHMARKS.md.

fn main() {
    let rules = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    print!("{}", mesa_compiler::synthetic::policy(20, 25, 10, rules));
}
