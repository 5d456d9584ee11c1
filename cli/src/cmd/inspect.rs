//! `mesa inspect FILE.wasm|FILE.cwasm`

use crate::error::CliError;
use crate::source::read;
use mesa_runtime::Runtime;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// A compiled policy (`.wasm`, or `.cwasm` made on this host).
    file: String,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let bytes = read(&args.file)?;
    let runtime = Runtime::new()?;
    let loaded = if args.file.ends_with(".cwasm") {
        runtime.load_precompiled(&bytes)
    } else {
        runtime.load(&bytes)
    };
    let policy = match loaded {
        Ok(p) => p,
        Err(e) => {
            eprintln!("invalid: `{}`: {e}", args.file);
            return Ok(ExitCode::from(1));
        }
    };
    let m = policy.metadata();
    outln!("valid MESA policy module (ABI version {})", m.abi_version);
    outln!("file: {} ({} bytes)", args.file, bytes.len());
    let text = serde_json::to_string_pretty(m)?;
    outln!("{text}");
    Ok(ExitCode::SUCCESS)
}
