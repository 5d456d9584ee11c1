//! `mesa`: check, format, run and explain MESA selector policies.

#![forbid(unsafe_code)]

#[macro_use]
mod out;

mod backend;
mod cmd;
mod error;
mod progress;
mod source;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Selector policies for long-horizon agent memory.
#[derive(Parser)]
#[command(name = "mesa", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Check policies: exit 0 when clean (warnings allowed), 1 on any error.
    Check(cmd::check::Args),
    /// Rewrite policies in the canonical layout (or just report with --check).
    Fmt(cmd::fmt::Args),
    /// Select structures for a query (or for every line of a JSONL file).
    Run(cmd::run::Args),
    /// Compile a policy to a self-contained WebAssembly module.
    Compile(cmd::compile::Args),
    /// Validate a compiled module and print its metadata.
    Inspect(cmd::inspect::Args),
    /// Select for one query and explain the evaluation in words.
    Explain(cmd::run::ExplainArgs),
    /// List the standard cue sets, or print one standard module.
    Std(cmd::std_cmd::Args),
    /// Build the five memory structures of every episode of a dataset into a store.
    Build(cmd::build::Args),
    /// Select, retrieve and compose evidence for a question (or a question file) from a store.
    Query(cmd::query::Args),
    /// Append steps (JSONL on stdin) to an episode of a live memory's tenant.
    Append(cmd::live::AppendArgs),
    /// Forget a step, a range of steps or an episode of a live memory.
    Forget(cmd::live::ForgetArgs),
    /// Replace a step's text in a live memory.
    Correct(cmd::live::CorrectArgs),
    /// Change an episode's outcome, domain or metadata in a live memory.
    Update(cmd::live::UpdateArgs),
    /// Rewrite a tenant's files so that nothing forgotten remains in them.
    Compact(cmd::live::CompactArgs),
    /// List a live memory tenant's episodes.
    Episodes(cmd::live::EpisodesArgs),
    /// List a live memory's tenants: episodes, steps and the builders each recorded.
    Tenants(cmd::live::TenantsArgs),
    /// Write a live memory tenant's episodes and questions as a dataset (JSONL) that `mesa build --into` imports.
    Export(cmd::live::ExportArgs),
    /// Serve a live memory over HTTP (a JSON API; tenants by bearer token).
    Serve(cmd::serve::ServeArgs),
    /// Serve a live memory tenant as a Model Context Protocol server on stdio.
    Mcp(cmd::serve::McpArgs),
    /// Make a bearer token for a tenant of a live memory served by `mesa serve`.
    Token(cmd::serve::TokenArgs),
    /// The end-to-end job: build the store over AMA-Bench, sweep, optimize offline, print the report.
    Pipeline(cmd::pipeline::Args),
    /// Measure every question: previews, and each of the 31 subsets' utility and tokens.
    Sweep(cmd::sweep::Args),
    /// Score a policy and the baselines on a sweep.
    Eval(cmd::optimize::EvalArgs),
    /// Search for a policy (UCB over prior directions; offline or LLM proposer).
    Optimize(cmd::optimize::OptimizeArgs),
    /// Place the 31 fixed subsets, the oracle and policies on a split's token/utility frontier.
    Frontier(cmd::frontier::Args),
    /// Fit one fixed subset per stratum (domain, which named steps T shows), chosen by cross-validation on train and val.
    Stratify(cmd::stratify::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check(a) => cmd::check::run(a),
        Command::Fmt(a) => cmd::fmt::run(a),
        Command::Run(a) => cmd::run::run(a),
        Command::Compile(a) => cmd::compile::run(a),
        Command::Inspect(a) => cmd::inspect::run(a),
        Command::Explain(a) => cmd::run::explain(a),
        Command::Std(a) => cmd::std_cmd::run(a),
        Command::Build(a) => cmd::build::run(a),
        Command::Query(a) => cmd::query::run(a),
        Command::Append(a) => cmd::live::append(a),
        Command::Forget(a) => cmd::live::forget(a),
        Command::Correct(a) => cmd::live::correct(a),
        Command::Update(a) => cmd::live::update(a),
        Command::Compact(a) => cmd::live::compact(a),
        Command::Episodes(a) => cmd::live::episodes(a),
        Command::Tenants(a) => cmd::live::tenants(a),
        Command::Export(a) => cmd::live::export(a),
        Command::Serve(a) => cmd::serve::serve(a),
        Command::Token(a) => cmd::serve::token(a),
        Command::Mcp(a) => cmd::serve::mcp(a),
        Command::Sweep(a) => cmd::sweep::run(a),
        Command::Pipeline(a) => cmd::pipeline::run(a),
        Command::Eval(a) => cmd::optimize::eval(a),
        Command::Optimize(a) => cmd::optimize::run(a),
        Command::Frontier(a) => cmd::frontier::run(a),
        Command::Stratify(a) => cmd::stratify::run(a),
    };
    match result {
        Ok(code) => code,
        // The reader closed the pipe: it has what it wanted (see `out`).
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            if let Some(help) = e.help() {
                eprintln!("help: {help}");
            }
            ExitCode::from(e.exit_code())
        }
    }
}
