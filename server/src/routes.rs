//! The routes: JSON over the live memory, one tenant per token.

use crate::error::{code_of, ApiError};
use crate::state::{
    catch_up_all_later, catch_up_later, policy_dir, valid_policy_name, AppState, TenantState,
};
use axum::body::Bytes;
use axum::extract::{FromRequestParts, MatchedPath, Path, Query, Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use mesa_memory::{EpisodeInfo, EpisodeUpdate, Forget, LiveError, NewEpisode, NewStep, Tenant};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The shared state handlers see.
pub type Shared = Arc<AppState>;

/// Every route, as the OpenAPI document lists it (a test keeps the two in
/// step, and checks that each answers).
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/health"),
    ("GET", "/metrics"),
    ("GET", "/openapi.json"),
    ("GET", "/v1/episodes"),
    ("POST", "/v1/episodes"),
    ("GET", "/v1/episodes/{id}"),
    ("DELETE", "/v1/episodes/{id}"),
    ("PATCH", "/v1/episodes/{id}"),
    ("GET", "/v1/episodes/{id}/steps"),
    ("POST", "/v1/episodes/{id}/steps"),
    ("PUT", "/v1/episodes/{id}/steps/{index}"),
    ("DELETE", "/v1/episodes/{id}/steps/{index}"),
    ("GET", "/v1/episodes/{id}/questions"),
    ("POST", "/v1/episodes/{id}/questions"),
    ("POST", "/v1/episodes/{id}/query"),
    ("POST", "/v1/query"),
    ("POST", "/v1/compact"),
    ("GET", "/v1/export"),
    ("POST", "/v1/import"),
    ("POST", "/v1/forget-before"),
    ("GET", "/v1/policies"),
    ("PUT", "/v1/policies/{name}"),
    ("POST", "/v1/policies/reload"),
    ("PUT", "/v1/active-policy"),
    ("POST", "/mcp"),
];

/// The OpenAPI document, checked in beside the code.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// The tenant a request's bearer token names.
pub struct Authed(pub Arc<TenantState>);

impl FromRequestParts<Shared> for Authed {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ApiError> {
        let token = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(ApiError::unauthorized)?;
        let tenant = state
            .tokens
            .tenant(token.trim())
            .ok_or_else(ApiError::unauthorized)?;
        if let Some(t) = state.opened(&tenant) {
            return Ok(Authed(t));
        }
        // The first request opens the tenant's database: off the async threads.
        let state = state.clone();
        blocking(move || state.tenant(&tenant)).await.map(Authed)
    }
}

/// Runs a blocking library call off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ApiError::internal(format!("the call did not finish: {e}")))?
}

/// A JSON body of type `T` (415 unless the content type says JSON).
pub(crate) fn body<T: DeserializeOwned>(headers: &HeaderMap, bytes: &Bytes) -> Result<T, ApiError> {
    let ct = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // The media type before any parameters (`; charset=utf-8`), in any case.
    let media = ct.split(';').next().unwrap_or("").trim();
    if !media.eq_ignore_ascii_case("application/json") {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "send the body as JSON, with Content-Type: application/json",
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request(
            "bad-json",
            format!("the body is not what this route takes: {e}"),
        )
    })
}

/// `GET /health`.
pub async fn health() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `GET /metrics`.
pub async fn metrics(State(s): State<Shared>) -> impl IntoResponse {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render()
            + &crate::metrics::render_resident(
                &s.resident(),
                s.memory.steps_budget(),
                s.memory.budget_drops(),
            ),
    )
}

/// `GET /openapi.json`.
pub async fn openapi() -> impl IntoResponse {
    ([(CONTENT_TYPE, "application/json")], OPENAPI)
}

/// `GET /v1/episodes`.
pub async fn list_episodes(Authed(t): Authed) -> Result<Json<Value>, ApiError> {
    let list = blocking(move || Ok(t.tenant.episodes()?)).await?;
    let episodes: Vec<Value> = list.into_iter().map(episode_json).collect();
    Ok(Json(json!({ "episodes": episodes })))
}

/// `GET /v1/episodes/{id}`: the episode as the list gives it.
pub async fn get_episode(
    Authed(t): Authed,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let e = blocking(move || Ok(t.tenant.episode_info(&id)?)).await?;
    Ok(Json(episode_json(e)))
}

/// An episode as the routes and the MCP tools list it.
pub(crate) fn episode_json(e: EpisodeInfo) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EpisodeBody {
    id: String,
    #[serde(default)]
    task: String,
    #[serde(default)]
    domain: String,
    #[serde(default)]
    outcome: Option<String>,
    #[serde(default)]
    meta: BTreeMap<String, String>,
    #[serde(default)]
    created: Option<String>,
}

/// `POST /v1/episodes`.
pub async fn create_episode(
    Authed(t): Authed,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let b: EpisodeBody = body(&headers, &bytes)?;
    let e = NewEpisode {
        id: b.id,
        task: b.task,
        domain: b.domain,
        outcome: b.outcome,
        meta: b.meta,
        created: b.created,
    };
    let id = e.id.clone();
    let key = idempotency_key(&headers)?;
    let replayed = blocking(move || Ok(t.tenant.create_episode_once(&e, key.as_deref())?)).await?;
    let body = json!({ "id": id, "replayed": replayed });
    Ok((created_or_replayed(replayed), Json(body)))
}

/// `PATCH /v1/episodes/{id}`'s body: an absent field stays, a given one
/// replaces the episode's (`meta` the whole metadata), and `null` removes
/// one (the outcome; the domain becomes `""` and the metadata `{}`); the
/// task cannot be `null`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    #[serde(default, deserialize_with = "not_null")]
    task: Option<String>,
    #[serde(default, deserialize_with = "given")]
    domain: Option<Option<String>>,
    #[serde(default, deserialize_with = "given")]
    outcome: Option<Option<String>>,
    #[serde(default, deserialize_with = "given")]
    meta: Option<Option<BTreeMap<String, String>>>,
}

/// A field that is present and not `null` (an absent field is `None` by
/// `#[serde(default)]`; `null` is refused).
fn not_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// A field that is present: `Some` of its value, `null` included (an
/// absent field is `None` by `#[serde(default)]`).
fn given<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// `PATCH /v1/episodes/{id}`: replaces the episode's `task`, `domain`,
/// `outcome` or `meta`; `null` removes one (not the task); sent again, it
/// changes nothing (`"updated": false`).
pub async fn update_episode(
    Authed(t): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let b: UpdateBody = body(&headers, &bytes)?;
    let mut update = EpisodeUpdate::default();
    update.task = b.task;
    update.domain = b.domain.map(Option::unwrap_or_default);
    update.outcome = b.outcome;
    update.meta = b.meta.map(Option::unwrap_or_default);
    let episode = id.clone();
    let updated = writing(t, id, move |t, id| t.update_episode(id, &update)).await?;
    Ok(Json(json!({ "id": episode, "updated": updated })))
}

/// `DELETE /v1/episodes/{id}`.
pub async fn forget_episode(
    Authed(t): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    forget(t, id, Forget::Episode, &headers).await
}

/// Forgets `what`, with the request's `Idempotency-Key` if it has one.
async fn forget(
    t: Arc<TenantState>,
    id: String,
    what: Forget,
    headers: &HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let key = idempotency_key(headers)?;
    let done = writing(t, id, move |t, id| t.forget_once(id, what, key.as_deref())).await?;
    Ok(Json(
        json!({ "forgotten": done.steps, "replayed": done.replayed }),
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BeforeBody {
    before: String,
}

/// `POST /v1/forget-before`: forgets, in every episode, the steps whose
/// timestamp is before `before` (a retention limit); sent again, it
/// forgets what is left. Once answered, the snapshots of the episodes
/// that lost steps catch up in the background, one after another.
pub async fn forget_before(
    Authed(t): Authed,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let b: BeforeBody = body(&headers, &bytes)?;
    let tenant = t.tenant.clone();
    let done = blocking(move || Ok(tenant.forget_before(&b.before)?)).await?;
    catch_up_all_later(&t.tenant, done.touched);
    Ok(Json(
        json!({ "forgotten": done.steps, "episodes": done.episodes }),
    ))
}

/// `GET /v1/episodes/{id}/steps`.
pub async fn list_steps(
    Authed(t): Authed,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let steps = blocking(move || Ok(t.tenant.steps(&id)?)).await?;
    Ok(Json(json!({ "steps": steps })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepBody {
    action: String,
    #[serde(default)]
    observation: String,
    #[serde(default)]
    timestamp: Option<String>,
    #[serde(default)]
    index: Option<usize>,
}

impl From<StepBody> for NewStep {
    fn from(s: StepBody) -> NewStep {
        NewStep {
            index: s.index,
            action: s.action,
            observation: s.observation,
            timestamp: s.timestamp,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    steps: Vec<StepBody>,
}

/// `POST /v1/episodes/{id}/steps`: one step, or `{"steps": [...]}` in one
/// transaction. Answers once the steps are on disk.
pub async fn append(
    State(s): State<Shared>,
    Authed(t): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let value: Value = body(&headers, &bytes)?;
    let steps: Vec<NewStep> = if value.get("steps").is_some() {
        let b: Batch = serde_json::from_value(value).map_err(|e| {
            ApiError::bad_request(
                "bad-json",
                format!("a batch is {{\"steps\": [step, ...]}}: {e}"),
            )
        })?;
        b.steps.into_iter().map(NewStep::from).collect()
    } else {
        let one: StepBody = serde_json::from_value(value).map_err(|e| {
            ApiError::bad_request(
                "bad-json",
                format!(
                    "a step is {{\"action\", \"observation\"?, \"timestamp\"?, \"index\"?}}: {e}"
                ),
            )
        })?;
        vec![one.into()]
    };
    batch_size(steps.len(), s.limits.batch_steps, "steps")?;
    // A retry with the request's key gets the first one's indices.
    let key = idempotency_key(&headers)?;
    let done = writing(t, id, move |t, id| t.append_once(id, steps, key.as_deref())).await?;
    let body = json!({ "indices": done.indices, "replayed": done.replayed });
    Ok((created_or_replayed(done.replayed), Json(body)))
}

/// Runs a write to episode `id` off the async threads; once it is
/// answered, the episode's snapshot catches up in the background (a no-op
/// when the write changed nothing), as after an MCP write.
async fn writing<T: Send + 'static>(
    t: Arc<TenantState>,
    id: String,
    f: impl FnOnce(&Tenant, &str) -> Result<T, LiveError> + Send + 'static,
) -> Result<T, ApiError> {
    let (tenant, episode) = (t.tenant.clone(), id.clone());
    let done = blocking(move || Ok(f(&t.tenant, &id)?)).await?;
    catch_up_later(tenant, episode);
    Ok(done)
}

/// The request id a write carries in its `Idempotency-Key` header: sent
/// again with it, the write is answered as the first one was and changes
/// nothing (mesa_memory's `requests`).
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    match headers.get("idempotency-key") {
        Some(v) => Ok(Some(v.to_str().map(str::to_string).map_err(|_| {
            ApiError::bad_request(
                "bad-request-id",
                "the Idempotency-Key header must be visible ASCII",
            )
        })?)),
        None => Ok(None),
    }
}

/// 201 for a write that created something, 200 for its replay.
fn created_or_replayed(replayed: bool) -> StatusCode {
    match replayed {
        true => StatusCode::OK,
        false => StatusCode::CREATED,
    }
}

/// A batch of `n` (`what`) must hold 1 to `limit` (422 otherwise).
fn batch_size(n: usize, limit: usize, what: &str) -> Result<(), ApiError> {
    if n == 0 || n > limit {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "batch-size",
            format!("a batch has {n} {what}; send 1 to {limit}"),
        ));
    }
    Ok(())
}

/// `GET /v1/episodes/{id}/questions`: the questions kept with the episode.
pub async fn list_questions(
    Authed(t): Authed,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let questions = blocking(move || Ok(t.tenant.questions(&id)?)).await?;
    Ok(Json(json!({ "questions": questions })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Questions {
    questions: Vec<mesa_memory::dataset::Question>,
}

/// `POST /v1/episodes/{id}/questions`: `{"questions": [...]}` kept with the
/// episode in one transaction (one with a kept id replaces it).
pub async fn add_questions(
    State(s): State<Shared>,
    Authed(t): Authed,
    Path(id): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let b: Questions = body(&headers, &bytes)?;
    batch_size(b.questions.len(), s.limits.batch_steps, "questions")?;
    let kept = blocking(move || Ok(t.tenant.add_questions(&id, &b.questions)?)).await?;
    Ok((StatusCode::CREATED, Json(json!({ "kept": kept }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CorrectBody {
    action: String,
    #[serde(default)]
    observation: String,
    #[serde(default)]
    timestamp: Option<String>,
}

/// `PUT /v1/episodes/{id}/steps/{index}`: corrects a step.
pub async fn correct(
    Authed(t): Authed,
    Path((id, index)): Path<(String, usize)>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let b: CorrectBody = body(&headers, &bytes)?;
    let step = NewStep {
        index: Some(index),
        action: b.action,
        observation: b.observation,
        timestamp: b.timestamp,
    };
    let key = idempotency_key(&headers)?;
    let replayed = writing(t, id, move |t, id| {
        t.correct_once(id, index, step, key.as_deref())
    })
    .await?;
    Ok(Json(json!({ "corrected": index, "replayed": replayed })))
}

#[derive(Deserialize)]
/// `?last=N`: forget through step N.
pub struct ForgetRange {
    last: Option<usize>,
}

/// `DELETE /v1/episodes/{id}/steps/{index}[?last=N]`.
pub async fn forget_steps(
    Authed(t): Authed,
    Path((id, index)): Path<(String, usize)>,
    Query(range): Query<ForgetRange>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let what = match range.last {
        Some(last) if last >= index => Forget::Range(index, last),
        Some(last) => {
            return Err(ApiError::bad_request(
                "bad-range",
                format!("last ({last}) is below the first step ({index})"),
            ))
        }
        None => Forget::Step(index),
    };
    forget(t, id, what, &headers).await
}

/// `POST /v1/compact`.
pub async fn compact(Authed(t): Authed) -> Result<Json<Value>, ApiError> {
    blocking(move || Ok(t.tenant.compact()?)).await?;
    Ok(Json(json!({ "compacted": true })))
}

/// `GET /v1/policies`.
pub async fn list_policies(Authed(t): Authed) -> Json<Value> {
    let names: Vec<String> = t
        .policies
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .cloned()
        .collect();
    Json(json!({ "policies": names, "active": t.active_name() }))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyBody {
    source: String,
}

/// `PUT /v1/policies/{name}`: checks the source; only if it checks is it
/// written and loaded (an invalid one never replaces a valid one).
pub async fn put_policy(
    State(s): State<Shared>,
    Authed(t): Authed,
    Path(name): Path<String>,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let b: PolicyBody = body(&headers, &bytes)?;
    if !valid_policy_name(&name) {
        return Err(ApiError::bad_request(
            "bad-policy-name",
            "a policy name is 1 to 64 letters, digits, `-` or `_`",
        ));
    }
    blocking(move || {
        let (asker, warnings) = s.load(&name, &b.source)?;
        let dir = policy_dir(&t);
        let io = |e: std::io::Error| ApiError::internal(format!("{}: {e}", dir.display()));
        // The file and the served policy change under one lock, so that
        // uploads of one name, even at once, leave the file holding the
        // policy that is served (and never share the temporary file).
        let mut policies = t.policies.write().unwrap_or_else(|p| p.into_inner());
        std::fs::create_dir_all(&dir).map_err(io)?;
        let tmp = dir.join(format!("{name}.mesa.tmp"));
        std::fs::write(&tmp, &b.source).map_err(io)?;
        std::fs::rename(&tmp, dir.join(format!("{name}.mesa"))).map_err(io)?;
        policies.insert(name.clone(), Arc::new(Mutex::new(asker)));
        drop(policies);
        let warnings: Vec<_> = warnings
            .iter()
            .map(|d| d.to_json(&format!("{name}.mesa"), &b.source))
            .collect();
        Ok(Json(json!({ "name": name, "diagnostics": warnings })))
    })
    .await
}

/// `POST /v1/policies/reload`: rereads the tenant's policy files.
pub async fn reload(State(s): State<Shared>, Authed(t): Authed) -> Result<Json<Value>, ApiError> {
    let report = blocking(move || s.reload(&t)).await?;
    let failed: Vec<Value> = report
        .failed
        .into_iter()
        .map(|e| json!({"code": e.code, "message": e.message, "diagnostics": e.diagnostics}))
        .collect();
    Ok(Json(json!({ "loaded": report.loaded, "failed": failed })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActiveBody {
    name: String,
}

/// `PUT /v1/active-policy`: the policy a query without `policy` or
/// `structures` uses.
pub async fn set_active(
    Authed(t): Authed,
    headers: HeaderMap,
    bytes: Bytes,
) -> Result<Json<Value>, ApiError> {
    let b: ActiveBody = body(&headers, &bytes)?;
    if t.policy(&b.name).is_none() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown-policy",
            format!("there is no policy `{}`; upload it first", b.name),
        ));
    }
    let name = b.name.clone();
    blocking(move || {
        let dir = policy_dir(&t);
        std::fs::write(dir.join("active"), &name)
            .map_err(|e| ApiError::internal(format!("{}: {e}", dir.display())))?;
        *t.active.write().unwrap_or_else(|p| p.into_inner()) = Some(name);
        Ok(())
    })
    .await?;
    Ok(Json(json!({ "active": b.name })))
}

/// Counts every request, and turns the framework's plain-text errors
/// (unknown route, body too large, timeout) into the API's JSON errors.
pub async fn track(State(s): State<Shared>, req: Request, next: Next) -> Response {
    // The standard methods by name, any other as one label, so that
    // made-up methods cannot grow the metrics without bound.
    let method = match req.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "HEAD" | "OPTIONS" | "PATCH" | "CONNECT"
        | "TRACE") => m.to_string(),
        _ => "other".to_string(),
    };
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let t0 = Instant::now();
    // A body announced as too large is refused before any of it is read.
    let announced = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let res = match announced {
        Some(n) if n > s.limits.body_bytes as u64 => {
            // A client that writes its whole body before reading would see
            // the connection closed rather than the 413: a body of up to
            // four times the limit is read (and dropped) first, within the
            // request timeout; a larger one is refused at once.
            if n <= 4 * s.limits.body_bytes as u64 {
                let _ = tokio::time::timeout(s.limits.timeout, drain(req.into_body())).await;
            }
            ApiError::body_too_large(
                &format!("the body announces {n} bytes"),
                s.limits.body_bytes,
            )
            .into_response()
        }
        _ => jsonify(next.run(req).await, s.limits.timeout).await,
    };
    s.metrics
        .record(&method, &route, res.status().as_u16(), t0.elapsed());
    res
}

/// Reads a body to its end, keeping none of it.
async fn drain(mut body: axum::body::Body) {
    use http_body_util::BodyExt;
    while let Some(Ok(_)) = body.frame().await {}
}

async fn jsonify(res: Response, timeout: std::time::Duration) -> Response {
    let status = res.status();
    let is_json = res
        .headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if status.as_u16() < 400 || is_json {
        return res;
    }
    let text = axum::body::to_bytes(res.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let message = if status == StatusCode::REQUEST_TIMEOUT {
        format!(
            "the request took longer than the server's limit ({} s, `mesa serve --timeout`); a write it asked for may still have been applied: send it again with the same Idempotency-Key (it is then answered as the first was, and changes nothing), or read the episode before retrying it",
            timeout.as_secs_f64()
        )
    } else if text.trim().is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text.trim().to_string()
    };
    let mut out = ApiError::new(status, code_of(status), message).into_response();
    out.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    out
}
