//! One module per subcommand.

pub mod build;
pub mod builders;
pub mod check;
pub mod compile;
pub mod fmt;
pub mod frontier;
pub mod inspect;
pub mod live;
pub mod optimize;
pub mod pipeline;
pub mod query;
pub mod run;
pub mod serve;
pub mod std_cmd;
pub mod stratify;
pub mod sweep;

/// How a command prints its results.
#[derive(Clone, Copy, clap::ValueEnum, Default)]
pub enum Format {
    /// For people.
    #[default]
    Human,
    /// For programs.
    Json,
}
