//! `mesa fmt [--check] FILE...`

use crate::error::CliError;
use crate::source::{print_human, read};
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// Policy files; `-` formats standard input to standard output.
    #[arg(required = true)]
    files: Vec<String>,
    /// Report files that are not formatted, change nothing; exit 1 if any.
    #[arg(long)]
    check: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut failed = false;
    for path in &args.files {
        let bytes = read(path)?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let formatted = match mesa_grammar::parse_bytes(&bytes) {
            Ok(file) => mesa_grammar::format_file(&file, &text),
            Err(diags) => {
                print_human(path, &text, &diags);
                eprintln!("`{path}` was not formatted: it does not parse");
                failed = true;
                continue;
            }
        };
        if path == "-" {
            out!("{formatted}");
            failed |= args.check && formatted != text;
        } else if formatted == text {
            continue;
        } else if args.check {
            eprintln!("would reformat `{path}`");
            failed = true;
        } else {
            write_atomically(path, &formatted)?;
            eprintln!("formatted `{path}`");
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Writes through a temporary file in the same folder, then renames it over
/// the original, so an interrupted write never leaves half a policy.
fn write_atomically(path: &str, text: &str) -> Result<(), CliError> {
    let target = std::path::Path::new(path);
    let tmp = target.with_extension("mesa.fmt-tmp");
    let io = |source| CliError::Io {
        action: "write",
        path: path.to_string(),
        source,
    };
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}
