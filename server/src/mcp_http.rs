//! MCP over HTTP: `mesa serve` answers the Model Context Protocol's
//! streamable HTTP transport at `/mcp`, beside its REST routes, with the
//! tools of `mesa mcp` (the official Rust SDK's service, `rmcp`).
//!
//! ```text
//! MCP client ──POST /mcp, Authorization: Bearer T──► track ─ timeout ─ limit (as every route)
//!      ──► authenticate: token ─► tenant T (401 JSON otherwise) ─► Caller in the request
//!      ──► StreamableHttpService (stateless, JSON replies) ─► MemoryTools::per_request
//!                                   tenant T's memory, its active policy or all five ◄─┘
//! ```
//!
//! The token picks the tenant for every request, as on the REST routes, so
//! a client reaches only its own memory. The service is stateless: each
//! POST carries one JSON-RPC message and gets its reply as JSON; no session
//! is kept between requests (a `GET` for server-sent events or a `DELETE`
//! of a session gets 405), so any number of clients can call it and a
//! restart loses nothing but the calls in flight. A search that names no
//! `structures` uses the tenant's active policy (`PUT /v1/active-policy`),
//! or all five structures when none is active.

use crate::mcp::MemoryTools;
use crate::routes::{Authed, Shared};
use crate::state::TenantState;
use crate::ApiError;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// The tenant an authenticated MCP request works on, as the request's
/// extensions carry it to the tools, with the server (for its limits).
#[derive(Clone)]
pub struct Caller {
    /// The tenant the token names.
    pub tenant: Arc<TenantState>,
    /// The server's state.
    pub server: Shared,
}

/// The MCP service mounted at `/mcp`.
pub(crate) fn service(state: &Shared) -> StreamableHttpService<MemoryTools, NeverSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_max_request_body_bytes(state.limits.body_bytes)
        // Every request needs a bearer token, which a page that rebinds a
        // host name to this server cannot send; the server may be reached by
        // any name it is served under.
        .disable_allowed_hosts();
    StreamableHttpService::new(
        || Ok(MemoryTools::per_request()),
        Arc::new(NeverSessionManager::default()),
        config,
    )
}

/// Lets a request through to the MCP service only with a known token, its
/// tenant attached as a [`Caller`]; otherwise the REST routes' 401. A POST
/// whose body is not one JSON-RPC message gets 400 with JSON-RPC's error
/// (-32700 or -32600, as `mesa mcp` answers such a line), where the SDK
/// would answer 415.
pub(crate) async fn authenticate(
    State(s): State<Shared>,
    Authed(tenant): Authed,
    req: Request,
    next: Next,
) -> Response {
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(Caller {
        tenant,
        server: s.clone(),
    });
    if parts.method != Method::POST {
        return next.run(Request::from_parts(parts, body)).await;
    }
    let bytes = match axum::body::to_bytes(body, s.limits.body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return ApiError::body_too_large("the body is longer", s.limits.body_bytes)
                .into_response()
        }
    };
    if let Err(reply) = crate::mcp_stdio::check_message(&bytes, false) {
        return (
            StatusCode::BAD_REQUEST,
            [(CONTENT_TYPE, "application/json")],
            reply,
        )
            .into_response();
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
