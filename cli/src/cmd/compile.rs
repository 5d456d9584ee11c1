//! `mesa compile FILE -o out.wasm [--aot out.cwasm]`

use crate::backend::{compile_failed, stage};
use crate::error::CliError;
use mesa_runtime::Runtime;
use std::process::ExitCode;

#[derive(clap::Args)]
pub struct Args {
    /// The policy (`.mesa`).
    file: String,
    /// Where to write the module (default: FILE with `.wasm`).
    #[arg(long, short)]
    output: Option<String>,
    /// Also compile ahead of time for this host (Cranelift) and write a `.cwasm`.
    #[arg(long, value_name = "OUT.cwasm")]
    aot: Option<String>,
}

fn write(path: &str, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(CliError::io("write", path))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut staged = stage(&args.file)?;
    let bytes = match staged.module() {
        Ok(bytes) => bytes.to_vec(),
        Err(e) => return Err(compile_failed(&args.file, &staged, e)),
    };
    let out = args.output.clone().unwrap_or_else(|| {
        let stem = args.file.strip_suffix(".mesa").unwrap_or(&args.file);
        format!("{stem}.wasm")
    });
    // Validate what was produced exactly as a host would before writing it.
    // The default (Cranelift) runtime: `--aot` must match what loads it.
    let runtime = Runtime::new()?;
    let policy = runtime.load(&bytes)?;
    write(&out, &bytes)?;
    eprintln!(
        "compiled `{}` to `{out}`: {} bytes, {} memory pages, {} rules",
        args.file,
        bytes.len(),
        policy.metadata().memory_pages,
        policy.metadata().rules.len()
    );
    if let Some(aot) = &args.aot {
        let cwasm = runtime.precompile(&bytes)?;
        write(aot, &cwasm)?;
        eprintln!(
            "precompiled for this host to `{aot}`: {} bytes",
            cwasm.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
