//! Reading policy files and printing their diagnostics.

use mesa_compiler::{check_bytes, Checked};
use mesa_grammar::Diagnostic;
use std::io::IsTerminal;
use std::path::Path;

/// An error that stops a command, printed as `error: ...`.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A file could not be read or written.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        action: &'static str,
        path: String,
        source: std::io::Error,
    },
    /// The command line itself is wrong (a missing or malformed flag): exit 2,
    /// as clap does for its own usage errors.
    #[error("{0}")]
    Usage(String),
    /// Anything else, already worded for the user.
    #[error("{0}")]
    Message(String),
}

impl CliError {
    /// The process exit code for this error: 2 for usage errors, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            _ => 1,
        }
    }
}

/// Reads a whole file (or standard input for `-`).
pub fn read(path: &str) -> Result<Vec<u8>, CliError> {
    let io = |source| CliError::Io {
        action: "read",
        path: path.to_string(),
        source,
    };
    if path == "-" {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(io)?;
        Ok(buf)
    } else {
        std::fs::read(Path::new(path)).map_err(io)
    }
}

/// A policy file, read and checked.
pub struct Loaded {
    pub path: String,
    /// The text, lossily decoded for rendering diagnostics.
    pub text: String,
    pub checked: Checked,
}

/// Reads and checks a policy.
pub fn load(path: &str) -> Result<Loaded, CliError> {
    let bytes = read(path)?;
    let checked = check_bytes(&bytes);
    Ok(Loaded {
        path: path.to_string(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
        checked,
    })
}

/// Whether to color human output on standard error.
pub fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

/// Prints diagnostics for people on standard error.
pub fn print_human(path: &str, text: &str, diagnostics: &[Diagnostic]) {
    let color = color();
    for d in diagnostics {
        eprint!("{}", d.render(path, text, color));
    }
}

/// Loads a policy that must be free of errors; prints its diagnostics
/// (warnings included) and fails when it has errors. Returns the program and
/// its text.
pub fn load_program(path: &str) -> Result<(mesa_compiler::Program, String), CliError> {
    let Loaded { text, checked, .. } = load(path)?;
    print_human(path, &text, &checked.diagnostics);
    match checked.program {
        Some(program) => Ok((program, text)),
        None => {
            let n = checked.diagnostics.iter().filter(|d| d.is_error()).count();
            Err(CliError::Message(format!(
                "`{path}` has {n} error(s); run `mesa check {path}` for details"
            )))
        }
    }
}
