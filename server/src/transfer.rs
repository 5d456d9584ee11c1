//! A tenant as a dataset over HTTP: `GET /v1/export` writes it as `mesa
//! export` does, and `POST /v1/import` reads one in as `mesa build --into`
//! does (both in `mesa_memory::live`'s export module).
//!
//! ```text
//! GET /v1/export ──Authed──► Tenant::export ──► 200 application/x-ndjson (+ X-Mesa-* counts)
//! POST /v1/import ─Authed─► dataset::load_str (either layout; texts cut at the live limit)
//!                 ──► Tenant::import (import_episode per episode; request ids: a retry adds nothing twice)
//!                 ──► 200 {"episodes", "steps", "questions", "again", "cut"}
//! ```

use crate::routes::{blocking, Authed};
use crate::ApiError;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use mesa_memory::dataset::{load_str, LoadOptions};
use serde_json::{json, Value};

/// `GET /v1/export`'s headers: episodes written, of them those without
/// steps, evidence labels left out for want of their steps.
const EXPORTED: HeaderName = HeaderName::from_static("x-mesa-episodes");
const EMPTY: HeaderName = HeaderName::from_static("x-mesa-empty-episodes");
const DROPPED: HeaderName = HeaderName::from_static("x-mesa-dropped-evidence");

/// The media types `POST /v1/import` takes.
const DATASET_TYPES: [&str; 3] = [
    "application/x-ndjson",
    "application/jsonl",
    "application/json-lines",
];

/// `GET /v1/export`: the tenant as a dataset, one episode per line in
/// MESA's generic layout, with how many episodes were written and what was
/// left out in headers.
pub async fn export(Authed(t): Authed) -> Result<Response, ApiError> {
    let (bytes, done) = blocking(move || {
        let mut out = Vec::new();
        let done = t.tenant.export(&mut out, "the reply")?;
        Ok((out, done))
    })
    .await?;
    let headers = [
        (
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson"),
        ),
        (EXPORTED, HeaderValue::from(done.episodes)),
        (EMPTY, HeaderValue::from(done.empty)),
        (DROPPED, HeaderValue::from(done.dropped_evidence)),
    ];
    Ok((headers, bytes).into_response())
}

/// `POST /v1/import`: a dataset (JSON Lines, MESA's generic layout or
/// AMA-Bench's) into the token's tenant. Texts are cut at the live store's
/// limit (counted in `cut`). A line that does not read is a 400, and an
/// episode of more steps than a batch may hold a 422, before anything is
/// written; an episode of an id the tenant has (made
/// otherwise, or imported with other steps) is a 409, the episodes before
/// it imported; the same body sent again adds nothing to an episode it
/// finds whole (`again`) and completes the rest.
pub async fn import(
    Authed(t): Authed,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let media = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if !DATASET_TYPES.contains(&media.as_str()) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the dataset as JSON Lines, with Content-Type: application/x-ndjson",
        ));
    }
    let text = String::from_utf8(bytes.to_vec())
        .map_err(|e| ApiError::bad_request("bad-dataset", format!("the body is not UTF-8: {e}")))?;
    let done = blocking(move || {
        let options = LoadOptions {
            max_text_bytes: mesa_memory::live::MAX_TEXT_BYTES,
            into_tenant: true,
            ..LoadOptions::default()
        };
        let loaded = load_str(&text, "the body", &options)
            .map_err(|e| ApiError::bad_request("bad-dataset", e.to_string()))?;
        let done = t.tenant.import(&loaded.episodes, |_| {})?;
        let r = &loaded.report;
        Ok(json!({
            "episodes": done.episodes,
            "steps": done.steps,
            "questions": done.questions,
            "again": done.again,
            "cut": r.cut_actions + r.cut_observations,
        }))
    })
    .await?;
    Ok(Json(done))
}
