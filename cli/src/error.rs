//! The binary's one error type. Library errors convert into it with `?`
//! and keep their kind; `main` prints `error: {e}` and exits with
//! [`CliError::exit_code`].

use mesa_optimizer::{EvalError, OptimizeError, SweepError};
use mesa_query::QueryError;
use mesa_runtime::{LoadError, PolicyError, SelectError};

/// An error that stops a command, printed as `error: ...`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// A file could not be read or written.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// `read`, `write`, ...
        action: &'static str,
        /// The file.
        path: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// Standard output is gone (a closed pipe, a full disk); see the `out`
    /// module.
    #[error("cannot write to standard output: {0}")]
    Stdout(#[source] std::io::Error),
    /// The command line itself is wrong (a missing or malformed flag): exit 2,
    /// as clap does for its own usage errors.
    #[error("{0}")]
    Usage(String),
    /// A policy file has errors; its diagnostics were printed.
    #[error("`{path}` has {errors} error(s); run `mesa check {path}` for details")]
    Diagnosed {
        /// The file.
        path: String,
        /// How many errors.
        errors: usize,
    },
    /// A policy could not be made into an engine.
    #[error("`{path}`: {source}")]
    Policy {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: PolicyError,
    },
    /// The sandbox could not be set up.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A policy failed on an input.
    #[error(transparent)]
    Select(#[from] SelectError),
    /// A store could not be built or opened.
    #[error(transparent)]
    Store(#[from] mesa_memory::StoreError),
    /// A model-backed builder could not be set up.
    #[error(transparent)]
    Setup(#[from] mesa_memory::SetupError),
    /// A dataset could not be read.
    #[error(transparent)]
    Dataset(#[from] mesa_memory::DatasetError),
    /// A live-memory call failed.
    #[error(transparent)]
    Live(#[from] mesa_memory::LiveError),
    /// The server could not start, or stopped with an error.
    #[error(transparent)]
    Serve(#[from] mesa_server::ServeError),
    /// The MCP server could not run.
    #[error(transparent)]
    Mcp(#[from] mesa_server::mcp::McpError),
    /// The token file could not be read or written.
    #[error(transparent)]
    Token(#[from] mesa_server::TokenError),
    /// A question could not be answered.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A question over many episodes could not be answered.
    #[error(transparent)]
    Across(#[from] mesa_query::AcrossError),
    /// The LLM client could not be configured.
    #[error("LLM endpoint: {0}")]
    Llm(#[from] mesa_llm::Error),
    /// Measuring a sweep failed.
    #[error(transparent)]
    Measure(#[from] mesa_optimizer::MeasureError),
    /// The judge could not be set up.
    #[error(transparent)]
    Judge(#[from] mesa_optimizer::JudgeError),
    /// A sweep could not be read.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// Evaluation failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The search failed.
    #[error(transparent)]
    Optimize(#[from] OptimizeError),
    /// A stratified policy could not be fitted.
    #[error(transparent)]
    Strata(#[from] mesa_optimizer::strata::StrataError),
    /// JSON output could not be written.
    #[error("cannot write JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A standard module does not exist.
    #[error("{0}")]
    NotFound(String),
}

impl CliError {
    /// The process exit code for this error: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }

    /// Whether this is a write to standard output whose reader closed the
    /// pipe, which ends a command quietly (see the `out` module).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Stdout(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
    }

    /// A line of advice printed after the error, where one helps.
    pub fn help(&self) -> Option<&'static str> {
        let select = match self {
            CliError::Select(e) | CliError::Query(QueryError::Select(e)) => e,
            CliError::Live(mesa_memory::LiveError::Locked { .. }) => {
                return Some(
                    "wait for the other writer with --wait SECONDS, or stop it (a running `mesa serve` or `mesa mcp` holds its tenants until it stops: write through it); `mesa query --tenant` and `mesa episodes` read beside it",
                )
            }
            _ => return None,
        };
        matches!(select, SelectError::Input(_)).then_some(
            "the texts are too long for a compiled policy's input: shorten them, or run the policy with the interpreter (`--engine interp`), which has no such limit",
        )
    }

    /// An I/O error on `path`.
    pub fn io(
        action: &'static str,
        path: impl std::fmt::Display,
    ) -> impl FnOnce(std::io::Error) -> CliError {
        let path = path.to_string();
        move |source| CliError::Io {
            action,
            path,
            source,
        }
    }
}
