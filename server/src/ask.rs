//! Questions over HTTP: `POST /v1/episodes/{id}/query` asks one episode,
//! `POST /v1/query` asks many and ranks them ([`mesa_query::ask_across`]).
//!
//! ```text
//! body ─► QueryBody ─► chooser (structures, the policy named, or the active one)
//!     ─► blocking: Tenant::memory ─► SharedChooser::ask ─► Answer::to_json
//!     ─► blocking: ask_across (each episode asked alike, ranked) ─► Across::to_json
//! ```

use crate::error::ApiError;
use crate::routes::{blocking, body, Authed, Shared};
use crate::state::TenantState;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use mesa_core::Mask;
use mesa_query::{Question, SharedChooser};
use serde::Deserialize;
use serde_json::{json, Value};

/// The body of both question routes; each refuses the fields that are
/// the other's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryFields {
    question: String,
    #[serde(default)]
    policy: Option<String>,
    #[serde(default)]
    structures: Option<String>,
    #[serde(default)]
    qtype: Option<String>,
    /// One episode: add the policy's trace (every rule, what it tested,
    /// whether it fired).
    #[serde(default)]
    trace: bool,
    /// Many episodes: those to ask (all when absent).
    #[serde(default)]
    episodes: Option<Vec<String>>,
    /// Many episodes: how many to return at most.
    #[serde(default)]
    limit: Option<usize>,
    /// Many episodes: how many to ask at most (0: every one).
    #[serde(default)]
    candidates: Option<usize>,
}

/// 400 for a field the route does not take.
fn not_here(field: &str, route: &str) -> ApiError {
    ApiError::bad_request(
        "bad-json",
        format!("`{field}` is a field of {route}, not of this route"),
    )
}

/// `POST /v1/episodes/{id}/query`: the answer as `mesa query --format
/// json` prints it, with the policy that chose.
pub async fn query(
    State(s): State<Shared>,
    Authed(t): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let q: QueryFields = body(&headers, &bytes)?;
    let many = [
        ("episodes", q.episodes.is_some()),
        ("limit", q.limit.is_some()),
        ("candidates", q.candidates.is_some()),
    ];
    if let Some((field, _)) = many.iter().find(|(_, given)| *given) {
        return Err(not_here(field, "POST /v1/query"));
    }
    check_question(&s, &q.question)?;
    let (name, chooser) = chooser(&t, q.policy.as_deref(), q.structures.as_deref())?;
    blocking(move || {
        let memory = t.tenant.memory(&id)?;
        let (answer, trace) = chooser
            .ask(&memory, &q.question, q.qtype.as_deref(), q.trace)
            .map_err(|e| asking_failed(&id, e))?;
        let question = Question {
            episode: &id,
            text: &q.question,
            qtype: q.qtype.as_deref(),
        };
        let mut v = answer.to_json(&question, true);
        v["policy"] = json!(name);
        if let Some(t) = trace {
            v["trace"] = t;
        }
        Ok(Json(v))
    })
    .await
}

/// The fixed structures asked for, the policy named, or the active one.
fn chooser(
    t: &TenantState,
    policy: Option<&str>,
    structures: Option<&str>,
) -> Result<(Option<String>, SharedChooser), ApiError> {
    if let Some(s) = structures {
        if policy.is_some() {
            return Err(ApiError::bad_request(
                "bad-chooser",
                "give either `policy` or `structures`, not both",
            ));
        }
        let mask = s
            .parse::<Mask>()
            .map_err(|e| ApiError::bad_request("bad-structures", format!("structures: {e}")))?;
        return Ok((None, SharedChooser::Fixed(mask)));
    }
    let name = match policy {
        Some(n) => n.to_string(),
        None => t.active_name().ok_or_else(|| {
                ApiError::bad_request(
                    "no-policy",
                    "give `structures` (\"S,T\") or `policy`, or make a policy active (PUT /v1/active-policy)",
                )
            })?,
    };
    let asker = t.policy(&name).ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown-policy",
            format!("there is no policy `{name}` (GET /v1/policies lists them)"),
        )
    })?;
    Ok((Some(name), SharedChooser::Policy(asker)))
}

/// A query that failed: the request's fault when its texts do not fit the
/// policy module's input (422, with what to do), else the server's.
fn asking_failed(id: &str, e: mesa_query::QueryError) -> ApiError {
    use mesa_runtime::SelectError;
    match e {
        mesa_query::QueryError::Select(SelectError::Input(e)) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "input-too-large",
            format!(
                "episode `{id}`: {e}: the question, its qtype and the episode's task and domain together are too long for a compiled policy; shorten them, or ask with `structures` instead of a policy"
            ),
        ),
        e @ mesa_query::QueryError::EmptyQuestion => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "empty-question",
            format!("episode `{id}`: {e}"),
        ),
        e => ApiError::internal(format!("episode `{id}`: {e}")),
    }
}

/// `POST /v1/query`: one question over the tenant's episodes (or those
/// named), the episodes whose evidence shows the question's words best
/// first, each with its answer as `POST /v1/episodes/{id}/query` gives it.
pub async fn query_across(
    State(s): State<Shared>,
    Authed(t): Authed,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let q: QueryFields = body(&headers, &bytes)?;
    if q.trace {
        return Err(not_here("trace", "POST /v1/episodes/{id}/query"));
    }
    check_question(&s, &q.question)?;
    let limit = q.limit.unwrap_or(mesa_query::DEFAULT_LIMIT);
    let (name, chooser) = chooser(&t, q.policy.as_deref(), q.structures.as_deref())?;
    // The search stops when the request would time out (408): a search
    // the client no longer waits for does not go on asking.
    let deadline = std::time::Instant::now().checked_add(s.limits.timeout);
    blocking(move || {
        let options = mesa_query::AcrossOptions::default()
            .limit(limit)
            .qtype(q.qtype.as_deref())
            .episodes(q.episodes.as_deref())
            .asking_at_most(q.candidates.unwrap_or(mesa_query::DEFAULT_CANDIDATES))
            .deadline(deadline);
        let across = mesa_query::ask_across(&t.tenant, &chooser, &q.question, &options)
            .map_err(across_failed)?;
        let mut v = across.to_json(&q.question, q.qtype.as_deref(), true);
        v["policy"] = json!(name);
        Ok(Json(v))
    })
    .await
}

/// 422 for a question over the limit.
fn check_question(s: &Shared, question: &str) -> Result<(), ApiError> {
    s.limits.check_question(question).map_err(|message| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "question-too-long",
            message,
        )
    })
}

/// A question over many episodes that failed.
fn across_failed(e: mesa_query::AcrossError) -> ApiError {
    use mesa_query::AcrossError;
    let status = match e {
        AcrossError::List(source) | AcrossError::Words(source) => return source.into(),
        AcrossError::UnknownEpisode { .. } => StatusCode::NOT_FOUND,
        AcrossError::EmptyQuestion => StatusCode::UNPROCESSABLE_ENTITY,
        AcrossError::BadLimit { .. } => StatusCode::BAD_REQUEST,
        AcrossError::OutOfTime { .. } => StatusCode::REQUEST_TIMEOUT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    ApiError::new(status, e.code(), e.to_string())
}
