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
use mesa_memory::dataset::{load_str, DatasetError, LoadOptions};
use mesa_memory::{Exported, LiveError, Tenant};
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
        import_text(&t.tenant, &text, "the body").map_err(|e| match e {
            ImportFail::Dataset(e) => ApiError::bad_request("bad-dataset", e.to_string()),
            ImportFail::Live(e) => e.into(),
        })
    })
    .await?;
    Ok(Json(done))
}

/// Why [`import_text`] imported nothing (or stopped at an episode).
#[derive(Debug)]
pub(crate) enum ImportFail {
    /// A line did not read as a dataset line: nothing was written.
    Dataset(DatasetError),
    /// The tenant refused an episode (those before it are imported).
    Live(LiveError),
}

/// A dataset's text (JSON Lines, MESA's generic layout or AMA-Bench's)
/// imported into `tenant`, as `POST /v1/import` and MCP's `import_memory`
/// do: texts cut at the live store's limit, and what was added as JSON.
/// `label` names the text in a line's error.
pub(crate) fn import_text(tenant: &Tenant, text: &str, label: &str) -> Result<Value, ImportFail> {
    let options = LoadOptions {
        max_text_bytes: mesa_memory::live::MAX_TEXT_BYTES,
        into_tenant: true,
        ..LoadOptions::default()
    };
    let loaded = load_str(text, label, &options).map_err(ImportFail::Dataset)?;
    let done = tenant
        .import(&loaded.episodes, |_| {})
        .map_err(ImportFail::Live)?;
    let r = &loaded.report;
    Ok(json!({
        "episodes": done.episodes,
        "steps": done.steps,
        "questions": done.questions,
        "again": done.again,
        "cut": r.cut_actions + r.cut_observations,
    }))
}

/// The tenant exported into memory, or `None` once the dataset would pass
/// `max_bytes` (MCP's `export_memory`: a tool's reply goes whole into the
/// agent's context, so it has a cap where `GET /v1/export` has none).
pub(crate) fn export_capped(
    tenant: &Tenant,
    max_bytes: usize,
) -> Result<Option<(String, Exported)>, LiveError> {
    let mut out = Capped {
        bytes: Vec::new(),
        max: max_bytes,
        over: false,
    };
    match tenant.export(&mut out, "the reply") {
        Err(_) if out.over => Ok(None),
        Err(e) => Err(e),
        // The export writes JSON, which serde_json makes UTF-8.
        Ok(done) => {
            let text = String::from_utf8(out.bytes)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            Ok(Some((text, done)))
        }
    }
}

/// A writer that refuses to grow past `max` bytes.
struct Capped {
    bytes: Vec<u8>,
    max: usize,
    over: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.max {
            self.over = true;
            return Err(std::io::Error::new(
                std::io::ErrorKind::FileTooLarge,
                "over the export's cap",
            ));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
