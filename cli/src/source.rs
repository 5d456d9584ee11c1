//! Reading policy files and printing their diagnostics.

use crate::error::CliError;
use mesa_compiler::{check_bytes, Checked};
use mesa_grammar::Diagnostic;
use std::io::IsTerminal;
use std::path::Path;

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
