//! `mesa mcp ROOT --tenant T`: the live memory as a Model Context Protocol
//! server on stdio (the official Rust SDK, `rmcp`), for one tenant.
//!
//! ```text
//! MCP client ──stdio JSON-RPC──► guard (mcp_stdio) ──► MemoryTools (#[tool_router])
//!                                   │ spawn_blocking
//!                                   ▼
//!                      Tenant (writer) + Asker (policy or fixed structures)
//! ```
//!
//! The tools are named as MCP memory servers name them: `add_memory`,
//! `search_memory`, `explain_selection`, `forget_memory`,
//! `forget_memory_before`, `correct_memory`, `update_episode`,
//! `list_episodes`, `read_episode`, `compact_memory`, and `export_memory`
//! and `import_memory` (the tenant as a dataset's text, as `GET /v1/export`
//! and `POST /v1/import` move it: transfer.rs). A tool that ran and
//! failed (an unknown episode, an empty action) answers with a tool error
//! result (`isError: true`) carrying the library's message; protocol errors
//! are left for malformed requests, and a line that is not a message at
//! all gets JSON-RPC's parse or invalid-request error (`mcp_stdio`). Logs
//! go to stderr; stdout carries only the protocol.

use crate::state::{catch_up_all_later, catch_up_later};
use mesa_core::Mask;
use mesa_memory::{EpisodeUpdate, Forget, LiveError, LiveMemory, NewEpisode, NewStep, Tenant};
use mesa_query::{Asker, Question, SharedChooser};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CustomRequest, CustomResult, ErrorCode, ErrorData, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{tool, tool_handler, tool_router, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// The tools' names, in the order the module doc gives them.
pub const TOOLS: [&str; 12] = [
    "add_memory",
    "search_memory",
    "explain_selection",
    "forget_memory",
    "forget_memory_before",
    "correct_memory",
    "update_episode",
    "list_episodes",
    "read_episode",
    "compact_memory",
    "export_memory",
    "import_memory",
];

/// The tools, over one tenant (stdio) or over the tenant each HTTP
/// request's token names.
#[derive(Clone)]
pub struct MemoryTools {
    source: Source,
    tool_router: ToolRouter<Self>,
}

/// Whose memory a call reads and writes, and how it chooses structures.
#[derive(Clone)]
enum Source {
    /// One tenant, with the policy given or all five structures (`mesa mcp`).
    One {
        tenant: Arc<Tenant>,
        chooser: SharedChooser,
    },
    /// The tenant the HTTP request's bearer token names, with its active
    /// policy or all five structures (`mesa serve`'s `/mcp`).
    Request,
}

/// `add_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AddMemory {
    /// The episode (a task, a conversation) the memory belongs to; created if new.
    pub episode: String,
    /// What happened: the agent's action, or the fact to remember.
    pub action: String,
    /// What the agent saw in return (optional).
    #[serde(default)]
    pub observation: String,
    /// When it happened, RFC 3339 (default: now).
    #[serde(default)]
    pub timestamp: Option<String>,
    /// The episode's task, used when the episode is created.
    #[serde(default)]
    pub task: Option<String>,
    /// A request id (a UUID, say): a retry with the same id and step
    /// returns the first call's index and stores nothing new.
    #[serde(default)]
    pub request_id: Option<String>,
}

/// `search_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchMemory {
    /// The episode to search; without one, the episodes are searched (at
    /// most `candidates` of them) and those whose evidence fits the
    /// question best come first.
    #[serde(default)]
    pub episode: Option<String>,
    /// Without an episode: how many episodes to return, 1 to 100 (default
    /// 5); not read with one.
    #[serde(default)]
    pub limit: Option<usize>,
    /// Without an episode: how many episodes to ask at most, those whose
    /// steps share the most words with the question (default 50; 0 asks
    /// every one); not read with one.
    #[serde(default)]
    pub candidates: Option<usize>,
    /// The question.
    pub question: String,
    /// Read these structures instead of asking the policy, e.g. "S,T" or "all".
    #[serde(default)]
    pub structures: Option<String>,
}

/// `explain_selection`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExplainSelection {
    /// The episode.
    pub episode: String,
    /// The question.
    pub question: String,
    /// Read these structures instead of asking the policy, e.g. "S,T" or "all".
    #[serde(default)]
    pub structures: Option<String>,
}

/// `forget_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetMemory {
    /// The episode.
    pub episode: String,
    /// The step to forget (with `last`: the first of a range). Omit, with `whole`, to forget the episode.
    #[serde(default)]
    pub step: Option<usize>,
    /// The last step of a range to forget.
    #[serde(default)]
    pub last: Option<usize>,
    /// Forget the whole episode.
    #[serde(default)]
    pub whole: bool,
    /// A request id (a UUID, say): a retry with the same id and arguments
    /// is answered as the first call was (`replayed`) and changes nothing.
    #[serde(default)]
    pub request_id: Option<String>,
}

/// `forget_memory_before`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetBefore {
    /// Forget every step stamped before this time, RFC 3339 (such as
    /// `2026-03-01T00:00:00Z`).
    pub before: String,
}

/// `export_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExportMemory {
    /// The most bytes the dataset may take (default 4 MiB, at most 32 MiB);
    /// a larger memory is refused whole (move it with `mesa export` or
    /// `GET /v1/export`).
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// `export_memory`'s cap when the call gives none.
pub const EXPORT_BYTES: usize = 4 << 20;
/// The largest cap `export_memory` takes: the reply is held whole, and a
/// larger one would not come back through `import_memory` in one message.
pub const EXPORT_MAX_BYTES: usize = 32 << 20;

/// `import_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ImportMemory {
    /// The dataset: JSON Lines, one episode per line, in MESA's generic
    /// layout (what `export_memory` returns) or AMA-Bench's.
    pub dataset: String,
}

/// `correct_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CorrectMemory {
    /// The episode.
    pub episode: String,
    /// The step to correct.
    pub step: usize,
    /// The corrected action.
    pub action: String,
    /// The corrected observation.
    #[serde(default)]
    pub observation: String,
    /// A request id (a UUID, say): a retry with the same id and arguments
    /// is answered as the first call was (`replayed`) and changes nothing.
    #[serde(default)]
    pub request_id: Option<String>,
}

/// `update_episode`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateEpisode {
    /// The episode.
    pub episode: String,
    /// Its task, restated (the summary's `Task:` line follows; an LLM
    /// extractor extracts every step's relations again under it). A
    /// `task` of null leaves it as it is.
    #[serde(default)]
    pub task: Option<String>,
    /// How it ended (`success`, `failure`, or your own word).
    #[serde(default)]
    pub outcome: Option<String>,
    /// Remove the outcome recorded (the episode's end is not known after
    /// all); not with `outcome`. (An `outcome` of null leaves it as it is.)
    #[serde(default)]
    pub remove_outcome: bool,
    /// Its domain.
    #[serde(default)]
    pub domain: Option<String>,
    /// Its whole metadata (string values), replacing what it had.
    #[serde(default)]
    pub meta: Option<std::collections::BTreeMap<String, String>>,
}

/// `read_episode`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadEpisode {
    /// The episode.
    pub episode: String,
}

/// Runs a write off the async threads; once it is answered, the episode's
/// snapshot catches up in the background, as after a REST write.
async fn writing(
    tenant: Arc<Tenant>,
    episode: String,
    f: impl FnOnce() -> Result<String, String> + Send + 'static,
) -> Result<String, String> {
    let done = blocking(f).await;
    if done.is_ok() {
        catch_up_later(tenant, episode);
    }
    done
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the call did not finish: {e}"))?
}

fn live(e: LiveError) -> String {
    format!("{} ({})", e, e.code())
}

#[tool_router]
impl MemoryTools {
    /// The tools over `tenant`, answering with `policy` unless a call
    /// names structures (all five without a policy).
    pub fn new(tenant: Arc<Tenant>, policy: Option<Asker>) -> MemoryTools {
        MemoryTools {
            source: Source::One {
                tenant,
                chooser: policy.map_or(SharedChooser::Fixed(Mask::ALL), SharedChooser::policy),
            },
            tool_router: Self::tool_router(),
        }
    }

    /// The tools over the tenant each request's token names (the request
    /// carries it as a [`crate::mcp_http::Caller`], put there by the
    /// authentication in front of the service).
    pub(crate) fn per_request() -> MemoryTools {
        MemoryTools {
            source: Source::Request,
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Store a memory: append one step (an action and what was observed) to an episode, creating the episode if new. Durable when it returns; returns the step's index."
    )]
    async fn add_memory(
        &self,
        Parameters(a): Parameters<AddMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        let episode = a.episode.clone();
        writing(t.clone(), episode, move || {
            let step = NewStep {
                index: None,
                action: a.action,
                observation: a.observation,
                timestamp: a.timestamp,
            };
            let id = a.request_id.as_deref();
            // The episode is created on the first add to it.
            let done = match t.append_once(&a.episode, vec![step.clone()], id) {
                Err(LiveError::UnknownEpisode { .. }) => {
                    let created = t.create_episode(&NewEpisode {
                        id: a.episode.clone(),
                        task: a.task.clone().unwrap_or_default(),
                        ..NewEpisode::default()
                    });
                    // Another call may have created it meanwhile.
                    match created {
                        Ok(()) | Err(LiveError::EpisodeExists { .. }) => {}
                        Err(e) => return Err(live(e)),
                    }
                    t.append_once(&a.episode, vec![step], id)
                }
                other => other,
            }
            .map_err(live)?;
            let index = done.indices.first().copied().unwrap_or_default();
            Ok(
                json!({"episode": a.episode, "index": index, "replayed": done.replayed})
                    .to_string(),
            )
        })
        .await
    }

    #[tool(
        description = "Search memory with a question: the selector policy picks which structures to read (summary, temporal, graph, vector, raw windows); returns the evidence with each item's structure, steps, timestamps, score and text. Give `episode` to search one episode; without it the episodes are searched and those whose evidence fits the question best come first (at most `limit`, default 5), each with its evidence and its `relevance` (0 to 2: the fusion of its rank by BM25 of the question over that evidence and its rank by its steps' words); it asks at most `candidates` episodes (default 50; 0: every one), those whose steps share the most words with the question."
    )]
    async fn search_memory(
        &self,
        Parameters(s): Parameters<SearchMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        self.answer(s, true, &ctx).await
    }

    #[tool(
        description = "Explain why the memory would read what it reads for a question: the structures selected, the deciding rule, the previews the policy read, and each item's provenance (without the texts)."
    )]
    async fn explain_selection(
        &self,
        Parameters(e): Parameters<ExplainSelection>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let s = SearchMemory {
            episode: Some(e.episode),
            limit: None,
            candidates: None,
            question: e.question,
            structures: e.structures,
        };
        self.answer(s, false, &ctx).await
    }

    #[tool(
        description = "Forget a step, a range of steps (step..=last) or a whole episode (whole=true). No search returns it afterwards. With request_id, a retry is answered as the first call was and forgets nothing more."
    )]
    async fn forget_memory(
        &self,
        Parameters(f): Parameters<ForgetMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let what = match (f.step, f.last, f.whole) {
            (None, None, true) => Forget::Episode,
            (Some(s), None, false) => Forget::Step(s),
            (Some(s), Some(l), false) if l >= s => Forget::Range(s, l),
            _ => {
                return Err(
                    "give `step`, `step` and `last` (last >= step), or `whole: true` alone".into(),
                )
            }
        };
        let t = self.tenant(&ctx)?;
        let episode = f.episode.clone();
        writing(t.clone(), episode, move || {
            let id = f.request_id.as_deref();
            let done = t.forget_once(&f.episode, what, id).map_err(live)?;
            let (n, replayed) = (done.steps, done.replayed);
            Ok(json!({"episode": f.episode, "forgotten": n, "replayed": replayed}).to_string())
        })
        .await
    }

    #[tool(
        description = "Forget, in every episode, each step whose timestamp is before a time (a retention limit such as \"keep 30 days\"). Called again, it forgets what is left, so a retry is safe."
    )]
    async fn forget_memory_before(
        &self,
        Parameters(f): Parameters<ForgetBefore>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        let tenant = t.clone();
        let done = blocking(move || tenant.forget_before(&f.before).map_err(live)).await?;
        catch_up_all_later(&t, done.touched);
        Ok(json!({"forgotten": done.steps, "episodes": done.episodes}).to_string())
    }

    #[tool(
        description = "Correct a stored step's text. With request_id, a retry is answered as the first call was and writes nothing."
    )]
    async fn correct_memory(
        &self,
        Parameters(c): Parameters<CorrectMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        let episode = c.episode.clone();
        writing(t.clone(), episode, move || {
            let step = NewStep {
                index: Some(c.step),
                action: c.action,
                observation: c.observation,
                timestamp: None,
            };
            let id = c.request_id.as_deref();
            let replayed = t.correct_once(&c.episode, c.step, step, id).map_err(live)?;
            Ok(
                json!({"episode": c.episode, "corrected": c.step, "replayed": replayed})
                    .to_string(),
            )
        })
        .await
    }

    #[tool(
        description = "Record how an episode ended (outcome) or remove that record (remove_outcome), restate its task, or change its domain or metadata. Called again with the same fields, it changes nothing."
    )]
    async fn update_episode(
        &self,
        Parameters(u): Parameters<UpdateEpisode>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        let episode = u.episode.clone();
        writing(t.clone(), episode, move || {
            let mut update = EpisodeUpdate::default();
            update.outcome = match (u.outcome, u.remove_outcome) {
                (Some(_), true) => {
                    return Err("give `outcome` or `remove_outcome`, not both".into())
                }
                (None, true) => Some(None),
                (outcome, false) => outcome.map(Some),
            };
            (update.task, update.domain, update.meta) = (u.task, u.domain, u.meta);
            let updated = t.update_episode(&u.episode, &update).map_err(live)?;
            Ok(json!({"episode": u.episode, "updated": updated}).to_string())
        })
        .await
    }

    #[tool(
        description = "List the episodes in memory, with their tasks, outcomes and step counts."
    )]
    async fn list_episodes(&self, ctx: RequestContext<RoleServer>) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        blocking(move || {
            let list: Vec<_> = t
                .episodes()
                .map_err(live)?
                .into_iter()
                .map(crate::routes::episode_json)
                .collect();
            Ok(json!({ "episodes": list }).to_string())
        })
        .await
    }

    #[tool(
        description = "Read an episode: its task, domain, outcome, metadata and creation time, and its stored steps in order."
    )]
    async fn read_episode(
        &self,
        Parameters(r): Parameters<ReadEpisode>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        blocking(move || {
            let info = t.episode_info(&r.episode).map_err(live)?;
            let steps = t.steps(&r.episode).map_err(live)?;
            Ok(
                json!({"episode": r.episode, "task": info.task, "domain": info.domain,
                "outcome": info.outcome, "meta": info.meta, "created": info.created,
                "steps": steps})
                .to_string(),
            )
        })
        .await
    }

    #[tool(
        description = "Rewrite the memory's files so that no byte of anything forgotten remains on disk."
    )]
    async fn compact_memory(&self, ctx: RequestContext<RoleServer>) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        blocking(move || {
            t.compact().map_err(live)?;
            Ok(json!({"compacted": true}).to_string())
        })
        .await
    }

    #[tool(
        description = "Export the memory as a dataset (JSON Lines, one episode per line with its steps, outcome and kept questions) to move it into another memory with import_memory; refused whole past max_bytes."
    )]
    async fn export_memory(
        &self,
        Parameters(a): Parameters<ExportMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(&ctx)?;
        let max = a.max_bytes.unwrap_or(EXPORT_BYTES);
        if max > EXPORT_MAX_BYTES {
            return Err(format!(
                "max_bytes is at most {EXPORT_MAX_BYTES} (bad-max-bytes); move a larger memory with `mesa export` or GET /v1/export"
            ));
        }
        blocking(move || match crate::transfer::export_capped(&t, max).map_err(live)? {
            None => Err(format!(
                "the memory's dataset is over max_bytes ({max} bytes) (export-too-large); give a larger max_bytes, or move it with `mesa export` or GET /v1/export"
            )),
            Some((dataset, done)) => Ok(json!({
                "episodes": done.episodes,
                "steps": done.steps,
                "questions": done.questions,
                "empty_episodes": done.empty,
                "dropped_evidence": done.dropped_evidence,
                "dataset": dataset,
            })
            .to_string()),
        })
        .await
    }

    #[tool(
        description = "Import a dataset (what export_memory returns, or AMA-Bench's layout) into the memory: each episode created with its steps (indices and timestamps kept) and questions. Sent again, it adds nothing twice; an episode of the same id with other steps stops it (the episodes before it are imported)."
    )]
    async fn import_memory(
        &self,
        Parameters(a): Parameters<ImportMemory>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<String, String> {
        use crate::transfer::{import_text, ImportFail};
        let t = self.tenant(&ctx)?;
        blocking(move || match import_text(&t, &a.dataset, "the dataset") {
            Ok(done) => Ok(done.to_string()),
            Err(ImportFail::Dataset(e)) => Err(format!("{e} (bad-dataset)")),
            Err(ImportFail::Live(e)) => Err(live(e)),
        })
        .await
    }
}

impl MemoryTools {
    /// The tenant a call works on.
    fn tenant(&self, ctx: &RequestContext<RoleServer>) -> Result<Arc<Tenant>, String> {
        match &self.source {
            Source::One { tenant, .. } => Ok(tenant.clone()),
            Source::Request => caller(ctx)
                .map(|c| c.tenant.tenant.clone())
                .ok_or_else(no_tenant),
        }
    }

    /// How a search that names no structures chooses.
    fn default_chooser(&self, ctx: &RequestContext<RoleServer>) -> Result<SharedChooser, String> {
        match &self.source {
            Source::One { chooser, .. } => Ok(chooser.clone()),
            Source::Request => caller(ctx)
                .map(|c| c.tenant.chooser())
                .ok_or_else(no_tenant),
        }
    }

    async fn answer(
        &self,
        s: SearchMemory,
        with_text: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<String, String> {
        let t = self.tenant(ctx)?;
        // Over HTTP, the REST query route's limit on a question's length.
        if let Some(c) = caller(ctx) {
            c.server.limits.check_question(&s.question)?;
        }
        let chooser = match &s.structures {
            Some(text) => SharedChooser::Fixed(
                text.parse::<Mask>()
                    .map_err(|e| format!("structures `{text}`: {e}"))?,
            ),
            None => self.default_chooser(ctx)?,
        };
        // Over HTTP, a search over many episodes stops at the request
        // timeout, as `POST /v1/query` does.
        let deadline =
            caller(ctx).and_then(|c| Instant::now().checked_add(c.server.limits.timeout));
        blocking(move || {
            let Some(episode) = &s.episode else {
                return across(&t, &chooser, &s, deadline);
            };
            let memory = t.memory(episode).map_err(live)?;
            // explain_selection adds every rule's test and result.
            let (answer, trace) = chooser
                .ask(&memory, &s.question, None, !with_text)
                .map_err(|e| format!("episode `{episode}`: {e}"))?;
            let q = Question {
                episode,
                text: &s.question,
                qtype: None,
            };
            let mut v = answer.to_json(&q, with_text);
            if let Some(t) = trace {
                v["trace"] = t;
            }
            Ok(v.to_string())
        })
        .await
    }
}

/// A search that names no episode (only `search_memory` makes one, with
/// the texts): its candidates asked, the best first
/// ([`mesa_query::ask_across`]), until `deadline`.
fn across(
    t: &Tenant,
    chooser: &SharedChooser,
    s: &SearchMemory,
    deadline: Option<Instant>,
) -> Result<String, String> {
    let limit = s.limit.unwrap_or(mesa_query::DEFAULT_LIMIT);
    let options = mesa_query::AcrossOptions::default()
        .limit(limit)
        .asking_at_most(s.candidates.unwrap_or(mesa_query::DEFAULT_CANDIDATES))
        .deadline(deadline);
    let found = mesa_query::ask_across(t, chooser, &s.question, &options)
        .map_err(|e| format!("{e} ({})", e.code()))?;
    Ok(found.to_json(&s.question, None, true).to_string())
}

fn no_tenant() -> String {
    "the request names no tenant (it needs a bearer token)".into()
}

/// The authenticated caller an HTTP request carries (none over stdio).
fn caller(ctx: &RequestContext<RoleServer>) -> Option<&crate::mcp_http::Caller> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<crate::mcp_http::Caller>())
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryTools {
    /// A method the protocol does not define: what this server answers,
    /// where the SDK's error says only the method's name.
    fn on_custom_request(
        &self,
        request: CustomRequest,
        _: RequestContext<RoleServer>,
    ) -> impl std::future::Future<Output = Result<CustomResult, ErrorData>> + Send + '_ {
        std::future::ready(Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "`{}` is not a method this server answers: it answers initialize, ping, tools/list and tools/call (tools: {})",
                request.method,
                TOOLS.join(", ")
            ),
            Some(json!({ "method": request.method })),
        )))
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                rmcp::model::Implementation::new("mesa", env!("CARGO_PKG_VERSION"))
                    .with_title("MESA memory"),
            )
            .with_instructions(
            "MESA memory for one tenant: add_memory as you work, search_memory to recall (every item says which steps it came from and when), explain_selection to see why, forget_memory to remove.",
        )
    }
}

/// Why the MCP server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The memory or tenant could not be opened.
    #[error(transparent)]
    Memory(#[from] LiveError),
    /// The protocol or the runtime failed.
    #[error("MCP: {0}")]
    Protocol(String),
    /// The builders for a new tenant could not be made.
    #[error(transparent)]
    Builders(Box<crate::ServeError>),
}

/// Serves tenant `tenant` of `memory` on stdio until the client closes it
/// (holding its writer lock, taken with `memory`'s writer wait). A new
/// tenant gets the `builders`; one that exists keeps the builders it
/// recorded; both are made from `options`.
pub fn serve_stdio(
    memory: &LiveMemory,
    tenant: &str,
    policy: Option<Asker>,
    builders: mesa_memory::BuilderKinds,
    options: &mesa_memory::PluginOptions,
) -> Result<(), McpError> {
    let new = crate::new_tenants(builders, options).map_err(|e| McpError::Builders(Box::new(e)))?;
    let tenant = Arc::new(memory.tenant_builders(tenant, new, options)?);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| McpError::Protocol(e.to_string()))?;
    let served = rt.block_on(async move {
        let (transport, written) =
            crate::mcp_stdio::guarded(tokio::io::stdin(), tokio::io::stdout());
        let service = MemoryTools::new(tenant, policy)
            .serve(transport)
            .await
            .map_err(|e| McpError::Protocol(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| McpError::Protocol(e.to_string()))?;
        // The SDK has closed its side: the writer ends once it has written
        // every reply.
        let _ = written.await;
        Ok(())
    });
    // A read of stdin may still be blocked on a thread of the runtime's.
    rt.shutdown_timeout(std::time::Duration::from_secs(1));
    served
}
