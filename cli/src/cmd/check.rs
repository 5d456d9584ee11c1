//! `mesa check FILE...`

use super::Format;
use crate::error::CliError;
use crate::source::{load, print_human};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Policy files (`-` reads standard input).
    #[arg(required = true)]
    files: Vec<String>,
    /// How to print diagnostics: `human` (source lines underlined, on standard error) or
    /// `json` (one array on standard output).
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Exit 1 on warnings too.
    #[arg(long)]
    deny_warnings: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut json = Vec::new();
    let (mut errors, mut warnings) = (0usize, 0usize);
    for path in &args.files {
        let loaded = load(path)?;
        let diags = &loaded.checked.diagnostics;
        errors += diags.iter().filter(|d| d.is_error()).count();
        warnings += diags.iter().filter(|d| !d.is_error()).count();
        match args.format {
            Format::Human => print_human(&loaded.path, &loaded.text, diags),
            Format::Json => {
                json.extend(diags.iter().map(|d| d.to_json(&loaded.path, &loaded.text)))
            }
        }
    }
    match args.format {
        Format::Human => {
            if errors + warnings == 0 {
                eprintln!("ok: {} file(s) checked, no problems", args.files.len());
            } else {
                eprintln!(
                    "{errors} error(s), {warnings} warning(s) in {} file(s)",
                    args.files.len()
                );
            }
        }
        Format::Json => {
            let text = serde_json::to_string_pretty(&json)?;
            outln!("{text}");
        }
    }
    let failed = errors > 0 || (args.deny_warnings && warnings > 0);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
