//! `mesa serve` (the HTTP server) and `mesa token`; the server itself is
//! the `mesa-server` library.

use crate::error::CliError;
use mesa_server::{Config, Limits, Server};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// `mesa serve ROOT`.
#[derive(clap::Args)]
pub struct ServeArgs {
    /// The live memory directory (created if new).
    root: PathBuf,
    /// Where to listen.
    #[arg(long, default_value = "127.0.0.1:7878")]
    addr: SocketAddr,
    /// The token file (`sha256:HEX TENANT` per line; `mesa token` adds one). Default ROOT/tokens.
    #[arg(long)]
    tokens: Option<PathBuf>,
    /// The largest request body, in bytes.
    #[arg(long, default_value_t = Limits::default().body_bytes)]
    body_limit: usize,
    /// The longest question, in bytes.
    #[arg(long, default_value_t = Limits::default().question_bytes)]
    question_limit: usize,
    /// The most steps in one append.
    #[arg(long, default_value_t = Limits::default().batch_steps)]
    batch_limit: usize,
    /// Seconds a request may take before it gets 408.
    #[arg(long, default_value_t = Limits::default().timeout.as_secs())]
    timeout: u64,
    /// Requests served at once (more wait).
    #[arg(long, default_value_t = Limits::default().concurrency)]
    concurrency: usize,
    /// Seconds a connection may take to send a request's headers before it
    /// is closed.
    #[arg(long, default_value_t = Limits::default().header_timeout.as_secs())]
    header_timeout: u64,
    /// The request that first opens a tenant waits this many seconds at
    /// most for the tenant's other writer (a `mesa append`, an import) to
    /// close; 0 refuses it at once (409 locked). At most --timeout; that
    /// tenant's requests arriving meanwhile share its outcome, other
    /// tenants' are not queued behind it, and waiting requests count
    /// toward --concurrency.
    #[arg(long, value_name = "SECONDS", value_parser = super::live::seconds, default_value = "0")]
    wait: Duration,
    #[command(flatten)]
    resident: ResidentArg,
    #[command(flatten)]
    builders: super::builders::BuilderArgs,
}

/// `--resident-steps`, for the commands that keep a tenant open.
#[derive(clap::Args)]
struct ResidentArg {
    /// Steps of built episodes kept in memory, over all the tenants the
    /// server holds (about 19 KB a step with the built-in embedder); past
    /// it, the episodes asked about least recently, in any tenant, are
    /// dropped, and built again when asked.
    #[arg(long, value_name = "STEPS", default_value_t = mesa_memory::live::DEFAULT_RESIDENT_STEPS)]
    resident_steps: usize,
}

/// Serves until Ctrl-C (or SIGTERM), then finishes the requests in flight.
pub fn serve(args: ServeArgs) -> Result<ExitCode, CliError> {
    let config = Config {
        root: args.root.clone(),
        addr: args.addr,
        tokens: args.tokens,
        limits: Limits {
            body_bytes: args.body_limit,
            question_bytes: args.question_limit,
            batch_steps: args.batch_limit,
            timeout: Duration::from_secs(args.timeout),
            concurrency: args.concurrency.max(1),
            header_timeout: Duration::from_secs(args.header_timeout.max(1)),
        },
        builders: args.builders.kinds(),
        minilm_dir: args.builders.minilm_dir.clone(),
        writer_wait: args.wait,
        resident_steps: args.resident.resident_steps,
    };
    let server = Server::bind(&config)?;
    eprintln!(
        "mesa serve: {} on http://{} ({} token(s) from {}); Ctrl-C stops",
        args.root.display(),
        server.addr()?,
        server.tokens(),
        config.tokens_path().display()
    );
    server.run_until(async {
        shutdown_signal().await;
        eprintln!("mesa serve: stopping; finishing the requests in flight");
    })?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// `mesa token ROOT --tenant T`.
#[derive(clap::Args)]
pub struct TokenArgs {
    /// The live memory directory.
    root: PathBuf,
    /// The tenant the token opens.
    #[arg(long, short)]
    tenant: String,
    /// The token file. Default ROOT/tokens.
    #[arg(long)]
    tokens: Option<PathBuf>,
}

/// Makes a token, records its hash, and prints the token (only this once).
pub fn token(args: TokenArgs) -> Result<ExitCode, CliError> {
    if !mesa_memory::live::valid_tenant(&args.tenant) {
        return Err(mesa_memory::LiveError::BadTenant { name: args.tenant }.into());
    }
    // The memory first (created if new), so that its directory holds the
    // live memory's marker before the token file.
    mesa_memory::LiveMemory::open(&args.root)?;
    let path = args.tokens.unwrap_or_else(|| args.root.join("tokens"));
    let token = mesa_server::add_token(&path, &args.tenant)?;
    eprintln!(
        "added a token for tenant `{}` to {} (only its hash is stored; keep the token)",
        args.tenant,
        path.display()
    );
    outln!("{token}");
    Ok(ExitCode::SUCCESS)
}

/// `mesa mcp ROOT --tenant T`.
#[derive(clap::Args)]
pub struct McpArgs {
    /// The live memory directory (created if new).
    root: PathBuf,
    /// The tenant the server reads and writes.
    #[arg(long, short)]
    tenant: String,
    /// Wait this many seconds at most for the tenant's other writer (an
    /// import, say) to close; 0 refuses at once.
    #[arg(long, value_name = "SECONDS", value_parser = super::live::seconds, default_value = "0")]
    wait: std::time::Duration,
    /// The policy `search_memory` asks (a `.mesa`, `.wasm` or `.cwasm`); all five structures without one.
    #[arg(long, short)]
    policy: Option<String>,
    #[command(flatten)]
    resident: ResidentArg,
    #[command(flatten)]
    builders: super::builders::BuilderArgs,
}

/// Serves the tenant as an MCP server on stdio; logs go to stderr.
pub fn mcp(args: McpArgs) -> Result<ExitCode, CliError> {
    let policy = match &args.policy {
        Some(p) => {
            let engine = crate::backend::load(p, crate::backend::EngineKind::Wasm, u64::MAX)?;
            Some(mesa_query::Asker::new(mesa_query::Chooser::Policy(
                Box::new(engine),
            )))
        }
        None => None,
    };
    let waits = if args.wait.is_zero() {
        String::new()
    } else {
        format!(" (waiting up to {:?} for its other writer)", args.wait)
    };
    eprintln!(
        "mesa mcp: tenant `{}` of {} on stdio{waits}",
        args.tenant,
        args.root.display()
    );
    let (kinds, options) = (args.builders.kinds(), args.builders.options());
    let memory = mesa_memory::LiveMemory::open(&args.root)?
        .waiting_for_writer(args.wait)
        .keeping_steps(args.resident.resident_steps);
    mesa_server::mcp::serve_stdio(&memory, &args.tenant, policy, kinds, &options)?;
    Ok(ExitCode::SUCCESS)
}
