//! `mesa compile FILE -o out.wasm [--aot out.cwasm]`

use crate::backend::{compile, runtime};
use crate::source::{load_program, CliError};
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
    std::fs::write(path, bytes).map_err(|source| CliError::Io {
        action: "write",
        path: path.to_string(),
        source,
    })
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let (program, source) = load_program(&args.file)?;
    let bytes = compile(&program, &source, &args.file)?;
    let out = args.output.clone().unwrap_or_else(|| {
        let stem = args.file.strip_suffix(".mesa").unwrap_or(&args.file);
        format!("{stem}.wasm")
    });
    // Validate what was produced exactly as a host would before writing it.
    let runtime = runtime()?;
    let policy = runtime.load(&bytes).map_err(|e| {
        CliError::Message(format!(
            "internal error: the compiled module does not validate: {e}"
        ))
    })?;
    write(&out, &bytes)?;
    eprintln!(
        "compiled `{}` to `{out}`: {} bytes, {} memory pages, {} rules",
        args.file,
        bytes.len(),
        policy.metadata().memory_pages,
        policy.metadata().rules.len()
    );
    if let Some(aot) = &args.aot {
        let cwasm = runtime
            .precompile(&bytes)
            .map_err(|e| CliError::Message(e.to_string()))?;
        write(aot, &cwasm)?;
        eprintln!(
            "precompiled for this host to `{aot}`: {} bytes",
            cwasm.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}
