//! MESA as a service: the live memory over HTTP, one tenant per bearer
//! token, with policies uploaded, checked and hot-reloaded per tenant.
//!
//! ```text
//! client ──HTTP──► axum router ─ track (metrics, JSON errors) ─ timeout ─ concurrency limit (one for all routes)
//!                     │ Authed: Authorization: Bearer T ─sha256─► tokens ─► tenant name
//!                     ▼
//!                 AppState ── tenant(name) ──► TenantState { Tenant (writer), policies, active }
//!                     │                              │ spawn_blocking
//!                     ▼                              ▼
//!               mesa-query Asker  ◄──memory()── mesa-memory LiveMemory/Tenant (SQLite, WAL)
//! ```
//!
//! `/mcp` serves the same memory to MCP clients (the streamable HTTP
//! transport, `mcp_http`), with the tools of `mesa mcp`.
//!
//! Every route but `/health`, `/metrics` and `/openapi.json` needs a token,
//! and the token alone picks the tenant: no route names a tenant, so none
//! can read another's data, and a wrong token gets the same 401 whether or
//! not any tenant exists. Library calls run on the blocking pool, so a
//! long query never stalls the async threads. [`Running::stop`] stops
//! accepting connections and waits for the requests in flight (writes
//! included) to finish.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub(crate) mod ask;
pub mod auth;
mod canned;
mod error;
pub mod mcp;
mod mcp_http;
mod mcp_stdio;
mod metrics;
pub mod routes;
mod serve;
mod state;
mod transfer;

pub use auth::{add_token, TokenError, TokenFile, Tokens};
pub use error::ApiError;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};
use axum::Router;
use mesa_memory::{BuilderKinds, LiveError, LiveMemory};
use routes::Shared;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// What a request may be.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest request body, in bytes. Default 16 MiB (a batch of
    /// steps; one step's text is at most 1 MiB).
    pub body_bytes: usize,
    /// The longest question, in bytes. Default 64 KiB.
    pub question_bytes: usize,
    /// The most steps in one append. Default 1,000.
    pub batch_steps: usize,
    /// How long a request may take before it gets 408. Default 30 s.
    pub timeout: Duration,
    /// How many requests are served at once; more wait. Default 64.
    pub concurrency: usize,
    /// How long a connection may take to send a request's headers before
    /// it is closed (a client that trickles them would otherwise hold its
    /// socket for good). Default 10 s.
    pub header_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 16 << 20,
            question_bytes: 64 << 10,
            batch_steps: 1_000,
            timeout: Duration::from_secs(30),
            concurrency: 64,
            header_timeout: Duration::from_secs(10),
        }
    }
}

impl Limits {
    /// Whether a question fits `question_bytes`; else what to say.
    pub fn check_question(&self, question: &str) -> Result<(), String> {
        match question.len() > self.question_bytes {
            true => Err(format!(
                "the question has {} bytes; the limit is {} (`mesa serve --question-limit`)",
                question.len(),
                self.question_bytes
            )),
            false => Ok(()),
        }
    }
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct Config {
    /// The live memory directory (created if new).
    pub root: PathBuf,
    /// Where to listen. Default 127.0.0.1:7878.
    pub addr: SocketAddr,
    /// The token file. Default `ROOT/tokens`.
    pub tokens: Option<PathBuf>,
    /// The limits.
    pub limits: Limits,
    /// The builders a new tenant gets (default the built-in ones); a
    /// tenant keeps the ones it recorded.
    pub builders: BuilderKinds,
    /// Where MiniLM's files are, for the tenants whose vectors it makes
    /// (else `MESA_MINILM_DIR`, else `models/all-MiniLM-L6-v2`).
    pub minilm_dir: Option<PathBuf>,
    /// How long the request that first opens a tenant waits for the
    /// tenant's other writer (a `mesa append`, an import) to close. Default
    /// zero: it is refused at once, 409 `locked`. At most the request
    /// timeout (a longer wait is cut to it): requests that arrive while
    /// one waits wait for that one and share its outcome, and every
    /// waiting request counts toward `limits.concurrency`.
    pub writer_wait: std::time::Duration,
    /// Steps of built episodes the server keeps in memory, over all its
    /// tenants; past it, the episodes asked about least recently, in any
    /// tenant, are dropped and built again when asked
    /// (`LiveMemory::keeping_steps`). Default
    /// [`mesa_memory::live::DEFAULT_RESIDENT_STEPS`].
    pub resident_steps: usize,
}

impl Config {
    /// Serving `root` on the default address with the default limits.
    pub fn new(root: PathBuf) -> Config {
        Config {
            root,
            addr: SocketAddr::from(([127, 0, 0, 1], 7878)),
            tokens: None,
            limits: Limits::default(),
            builders: BuilderKinds::default(),
            minilm_dir: None,
            writer_wait: std::time::Duration::ZERO,
            resident_steps: mesa_memory::live::DEFAULT_RESIDENT_STEPS,
        }
    }

    /// The token file this configuration reads.
    pub fn tokens_path(&self) -> PathBuf {
        self.tokens
            .clone()
            .unwrap_or_else(|| self.root.join("tokens"))
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The live memory could not be opened.
    #[error(transparent)]
    Memory(#[from] LiveError),
    /// The token file could not be read.
    #[error(transparent)]
    Tokens(#[from] TokenError),
    /// The policy runtime could not start.
    #[error("the policy runtime: {0}")]
    Runtime(#[from] mesa_runtime::LoadError),
    /// The builders for new tenants could not be made.
    #[error("the builders for new tenants ({kinds}) cannot be made: {source}")]
    Builders {
        /// The builders asked for.
        kinds: BuilderKinds,
        /// Why.
        #[source]
        source: mesa_memory::SetupError,
    },
    /// The address could not be bound, or serving failed.
    #[error("{addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The router over this state (exposed for tests and embedding).
pub fn router(state: Shared) -> Router {
    let limits = state.limits.clone();
    Router::new()
        .route("/health", get(routes::health))
        .route("/metrics", get(routes::metrics))
        .route("/openapi.json", get(routes::openapi))
        .route(
            "/v1/episodes",
            get(routes::list_episodes).post(routes::create_episode),
        )
        .route(
            "/v1/episodes/{id}",
            get(routes::get_episode)
                .delete(routes::forget_episode)
                .patch(routes::update_episode),
        )
        .route(
            "/v1/episodes/{id}/steps",
            get(routes::list_steps).post(routes::append),
        )
        .route(
            "/v1/episodes/{id}/steps/{index}",
            put(routes::correct).delete(routes::forget_steps),
        )
        .route(
            "/v1/episodes/{id}/questions",
            get(routes::list_questions).post(routes::add_questions),
        )
        .route("/v1/episodes/{id}/query", post(ask::query))
        .route("/v1/query", post(ask::query_across))
        .route("/v1/compact", post(routes::compact))
        .route("/v1/export", get(transfer::export))
        .route("/v1/import", post(transfer::import))
        .route("/v1/forget-before", post(routes::forget_before))
        .route("/v1/policies", get(routes::list_policies))
        .route("/v1/policies/reload", post(routes::reload))
        .route("/v1/policies/{name}", put(routes::put_policy))
        .route("/v1/active-policy", put(routes::set_active))
        .route_service(
            "/mcp",
            tower::ServiceBuilder::new()
                .layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    mcp_http::authenticate,
                ))
                .service(mcp_http::service(&state)),
        )
        .layer(DefaultBodyLimit::max(limits.body_bytes))
        // One limit shared by every route (a plain `ConcurrencyLimitLayer`
        // would give each route its own), inside the timeout, so a request
        // waiting for its turn times out too.
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(
            limits.concurrency,
        ))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            axum::http::StatusCode::REQUEST_TIMEOUT,
            limits.timeout,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            routes::track,
        ))
        .with_state(state)
}

/// A bound server, not yet serving.
pub struct Server {
    listener: std::net::TcpListener,
    state: Shared,
}

impl Server {
    /// Opens the memory, reads the tokens and binds the address.
    pub fn bind(config: &Config) -> Result<Server, ServeError> {
        let wait = config.writer_wait.min(config.limits.timeout);
        let memory = LiveMemory::open(&config.root)?
            .waiting_for_writer(wait)
            .keeping_steps(config.resident_steps);
        let tokens = auth::TokenFile::open(&config.tokens_path())?;
        let options = mesa_memory::PluginOptions::with_minilm_dir(config.minilm_dir.clone());
        let builders = new_tenants(config.builders, &options)?;
        let state = state::AppState::new(memory, tokens, config.limits.clone(), builders, options)?;
        let state = Arc::new(state);
        let io = |source| ServeError::Io {
            addr: config.addr.to_string(),
            source,
        };
        let listener = std::net::TcpListener::bind(config.addr).map_err(io)?;
        listener.set_nonblocking(true).map_err(io)?;
        Ok(Server { listener, state })
    }

    /// The address it listens on (the port is chosen when 0 was asked).
    pub fn addr(&self) -> Result<SocketAddr, ServeError> {
        self.listener.local_addr().map_err(|source| ServeError::Io {
            addr: "the listener".into(),
            source,
        })
    }

    /// How many tokens it knows.
    pub fn tokens(&self) -> usize {
        self.state.tokens.len()
    }

    /// Serves until `shutdown` resolves, then finishes the requests in
    /// flight.
    pub fn run_until(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let addr = self.addr()?.to_string();
        let io = |source| ServeError::Io {
            addr: addr.clone(),
            source,
        };
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(io)?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(self.listener).map_err(io)?;
            let header_timeout = self.state.limits.header_timeout;
            serve::serve(listener, router(self.state), header_timeout, shutdown).await;
            Ok(())
        })
    }

    /// Serves on a thread of its own until [`Running::stop`].
    pub fn spawn(self) -> Result<Running, ServeError> {
        let addr = self.addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            self.run_until(async move {
                let _ = rx.await;
            })
        });
        Ok(Running {
            addr,
            stop: Some(tx),
            thread: Some(thread),
        })
    }
}

/// A server serving on its own thread.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), ServeError>>>,
}

impl Running {
    /// Stops accepting, waits for the requests in flight, and returns how
    /// serving ended.
    pub fn stop(mut self) -> Result<(), ServeError> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), ServeError> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(ServeError::Io {
                addr: self.addr.to_string(),
                source: std::io::Error::other("the server thread panicked"),
            }),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The builders a new tenant gets, made now, so that a missing model or
/// endpoint stops the server at its start rather than at a first request.
pub(crate) fn new_tenants(
    kinds: BuilderKinds,
    options: &mesa_memory::PluginOptions,
) -> Result<mesa_memory::Plugins, ServeError> {
    kinds
        .plugins(options)
        .map_err(|source| ServeError::Builders { kinds, source })
}
