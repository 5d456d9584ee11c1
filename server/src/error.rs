//! Every error the API returns: a status and a JSON body
//! `{"error": {"code": "...", "message": "..."}}` (and `diagnostics` for a
//! policy that does not check).

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mesa_memory::{LiveError, LiveErrorKind};
use serde_json::json;

/// An error response.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable code (`unknown-episode`, `unauthorized`, ...).
    pub code: String,
    /// What went wrong and what to do.
    pub message: String,
    /// The checker's findings, for a policy that does not check.
    pub diagnostics: Option<serde_json::Value>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
            diagnostics: None,
        }
    }

    /// 400: the request is not what the route takes.
    pub fn bad_request(code: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 401, the same for a missing, malformed or unknown token: it says
    /// nothing about which tenants exist.
    pub fn unauthorized() -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required (Authorization: Bearer TOKEN)",
        )
    }

    /// 413: the body (`what` says how large) is over the limit.
    pub fn body_too_large(what: &str, limit: usize) -> ApiError {
        let status = StatusCode::PAYLOAD_TOO_LARGE;
        ApiError::new(
            status,
            code_of(status),
            format!("{what}; the limit is {limit} bytes (`mesa serve --body-limit`)"),
        )
    }

    /// 500, for a failure that is not the request's fault.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl From<LiveError> for ApiError {
    fn from(e: LiveError) -> ApiError {
        let status = match (e.kind(), &e) {
            (_, LiveError::DiskFull { .. }) => StatusCode::INSUFFICIENT_STORAGE,
            (LiveErrorKind::NotFound, _) => StatusCode::NOT_FOUND,
            (LiveErrorKind::Invalid, _) => StatusCode::UNPROCESSABLE_ENTITY,
            (LiveErrorKind::Conflict, _) => StatusCode::CONFLICT,
            (LiveErrorKind::Builder, _) => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let message = match e {
            // The server holds a tenant from its first request on; the
            // writer it met is another process.
            LiveError::Locked { .. } => format!(
                "{e}; retry once that writer (a `mesa append` or an import, say) has closed"
            ),
            _ => e.to_string(),
        };
        ApiError::new(status, e.code(), message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some(d) = self.diagnostics {
            body["diagnostics"] = d;
        }
        let mut res = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            // RFC 9110: a 401 says which scheme would do.
            res.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        if self.code == "locked" {
            // RFC 9110: how long to wait before asking again; a writer such
            // as `mesa append` holds a tenant for about that long.
            res.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        res
    }
}

/// The code an error status gets when the framework, not a handler, made
/// the response (an unknown route, a body over the limit, a timeout).
pub fn code_of(status: StatusCode) -> &'static str {
    match status {
        StatusCode::BAD_REQUEST => "bad-request",
        StatusCode::NOT_FOUND => "no-route",
        StatusCode::METHOD_NOT_ALLOWED => "method-not-allowed",
        StatusCode::NOT_ACCEPTABLE => "not-acceptable",
        StatusCode::PAYLOAD_TOO_LARGE => "body-too-large",
        StatusCode::REQUEST_TIMEOUT => "timeout",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported-media-type",
        StatusCode::SERVICE_UNAVAILABLE => "unavailable",
        _ => "error",
    }
}
