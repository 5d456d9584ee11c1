//! `mesa std [MODULE]`

use crate::error::CliError;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A module to print (e.g. `causal`); without it, list every set.
    module: Option<String>,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    match args.module {
        None => {
            for m in mesa_stdlib::MODULES {
                outln!("module {}", m.name);
            }
            outln!();
            for name in mesa_compiler::std_names() {
                outln!("std.{name}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Some(name) => match mesa_stdlib::module(&name) {
            Some(m) => {
                out!("{}", m.source);
                Ok(ExitCode::SUCCESS)
            }
            None => {
                let names: Vec<&str> = mesa_stdlib::MODULES.iter().map(|m| m.name).collect();
                Err(CliError::NotFound(format!(
                    "no standard module `{name}`; the modules are {}",
                    names.join(", ")
                )))
            }
        },
    }
}
