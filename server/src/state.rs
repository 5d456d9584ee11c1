//! What the server holds: the live memory, the token map, and per tenant
//! its open handle and its policies.
//!
//! A tenant's policies are files, `ROOT/tenants/T/policies/NAME.mesa`; an
//! upload is checked first and written only if it checks, so an invalid
//! policy never replaces a valid one. The active policy's name is in
//! `policies/active`. A reload rereads every file and replaces only those
//! that check.

use crate::error::ApiError;
use crate::Limits;
use axum::http::StatusCode;
use mesa_core::Mask;
use mesa_memory::{LiveMemory, Tenant};
use mesa_query::{Asker, Chooser, SharedChooser};
use mesa_runtime::{EngineKind, PolicyError, PolicyFormat, Runtime, RuntimeConfig, Staged};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

/// The server's shared state.
pub struct AppState {
    /// The live memory.
    pub memory: LiveMemory,
    /// Tokens to tenants.
    pub tokens: crate::auth::TokenFile,
    /// The limits.
    pub limits: Limits,
    /// One slot per tenant asked for: the map's lock is held only to find
    /// a slot, so a tenant that is slow to open (its writer's wait, a first
    /// build) holds up only its own requests.
    tenants: Mutex<HashMap<String, Arc<Slot>>>,
    /// The policy runtime (one engine configuration for every tenant).
    pub runtime: Runtime,
    /// Request counts and latencies.
    pub metrics: crate::metrics::Metrics,
    /// The builders a new tenant gets; a tenant keeps the ones it
    /// recorded.
    pub new_tenants: mesa_memory::Plugins,
    /// What the tenants' recorded builders are made from; its LLM client
    /// is shared by every tenant's.
    pub options: mesa_memory::PluginOptions,
}

/// Where one tenant's state goes once it is open: `opening` lets one
/// request at a time open it (the others wait for that one) and keeps the
/// last attempt's failure, `attempts` counts the attempts that ended, and
/// `open` is read without a lock.
#[derive(Default)]
struct Slot {
    opening: Mutex<Option<ApiError>>,
    attempts: std::sync::atomic::AtomicU64,
    open: std::sync::OnceLock<Arc<TenantState>>,
}

/// One tenant's open handle and policies.
pub struct TenantState {
    /// The writer handle.
    pub tenant: Arc<Tenant>,
    /// The loaded policies, by name.
    pub policies: RwLock<BTreeMap<String, Arc<Mutex<Asker>>>>,
    /// The active policy's name.
    pub active: RwLock<Option<String>>,
}

impl TenantState {
    /// The active policy's name, if one is active.
    pub fn active_name(&self) -> Option<String> {
        self.active
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The loaded policy `name`'s asker.
    pub fn policy(&self, name: &str) -> Option<Arc<Mutex<Asker>>> {
        let policies = self.policies.read().unwrap_or_else(|p| p.into_inner());
        policies.get(name).cloned()
    }

    /// How a question that names neither a policy nor structures is
    /// answered over MCP: with the active policy, else all five structures.
    pub fn chooser(&self) -> SharedChooser {
        self.active_name()
            .and_then(|name| self.policy(&name))
            .map_or(SharedChooser::Fixed(Mask::ALL), SharedChooser::Policy)
    }
}

/// A policy that does not check or load, as a 422 with its diagnostics.
pub fn policy_error(name: &str, e: PolicyError) -> ApiError {
    match e {
        PolicyError::Check { diagnostics, text } => {
            let list: Vec<_> = diagnostics
                .iter()
                .map(|d| d.to_json(&format!("{name}.mesa"), &text))
                .collect();
            let mut err = ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "policy-check",
                format!(
                    "policy `{name}` does not check ({} error(s)); the active policy is unchanged",
                    diagnostics.iter().filter(|d| d.is_error()).count()
                ),
            );
            err.diagnostics = serde_json::to_value(list).ok();
            err
        }
        other => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "policy-load",
            format!("policy `{name}`: {other}"),
        ),
    }
}

/// Whether a policy name is safe as a file name.
pub fn valid_policy_name(name: &str) -> bool {
    mesa_memory::live::valid_tenant(name)
}

impl AppState {
    /// The state over `memory`; a new tenant gets the builders
    /// `new_tenants`, and a tenant's recorded builders are made from
    /// `options`.
    pub fn new(
        memory: LiveMemory,
        tokens: crate::auth::TokenFile,
        limits: Limits,
        new_tenants: mesa_memory::Plugins,
        options: mesa_memory::PluginOptions,
    ) -> Result<AppState, mesa_runtime::LoadError> {
        let config = RuntimeConfig::for_workload(PolicyFormat::Source, u64::MAX);
        Ok(AppState {
            memory,
            tokens,
            limits,
            tenants: Mutex::new(HashMap::new()),
            runtime: Runtime::with_config(config)?,
            metrics: crate::metrics::Metrics::default(),
            new_tenants,
            options,
        })
    }

    /// Tenant `name` if it is open already (no I/O and no wait: the
    /// request path's common case).
    pub fn opened(&self, name: &str) -> Option<Arc<TenantState>> {
        let map = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        map.get(name).and_then(|slot| slot.open.get().cloned())
    }

    /// What each open tenant keeps built in memory (no names: `/metrics`
    /// needs no token, and no route tells whether a tenant exists).
    pub fn resident(&self) -> Vec<mesa_memory::Resident> {
        let map = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        map.values()
            .filter_map(|slot| Some(slot.open.get()?.tenant.resident()))
            .collect()
    }

    /// Tenant `name`, opened (and its policy files loaded) on first use.
    /// A tenant another writer holds is waited for as the memory says
    /// ([`LiveMemory::waiting_for_writer`]); meanwhile the other tenants'
    /// requests go on, and this tenant's next requests wait for this
    /// opening rather than start their own.
    pub fn tenant(&self, name: &str) -> Result<Arc<TenantState>, ApiError> {
        use std::sync::atomic::Ordering;
        let slot = {
            let mut map = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(name.to_string()).or_default().clone()
        };
        let seen = slot.attempts.load(Ordering::Acquire);
        let mut failed = slot.opening.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = slot.open.get() {
            return Ok(t.clone());
        }
        // An attempt ended while this request queued behind it: share its
        // failure rather than wait the whole wait again.
        if slot.attempts.load(Ordering::Acquire) != seen {
            if let Some(e) = failed.as_ref() {
                return Err(e.clone());
            }
        }
        let opened = self.open_tenant(name);
        slot.attempts.fetch_add(1, Ordering::AcqRel);
        match opened {
            Ok(state) => {
                *failed = None;
                Ok(slot.open.get_or_init(|| state).clone())
            }
            Err(e) => {
                *failed = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Opens tenant `name` (waiting for its other writer as the memory
    /// says) and loads its policy files.
    fn open_tenant(&self, name: &str) -> Result<Arc<TenantState>, ApiError> {
        let new = self.new_tenants.clone();
        let tenant = self.memory.tenant_builders(name, new, &self.options)?;
        let state = Arc::new(TenantState {
            tenant: Arc::new(tenant),
            policies: RwLock::new(BTreeMap::new()),
            active: RwLock::new(None),
        });
        self.reload(&state)?;
        Ok(state)
    }

    /// Checks and loads a policy source into an asker; also its warnings.
    pub fn load(
        &self,
        name: &str,
        source: &str,
    ) -> Result<(Asker, Vec<mesa_grammar::Diagnostic>), ApiError> {
        let mut staged = Staged::check(source).map_err(|e| policy_error(name, e))?;
        let engine = staged
            .engine(&self.runtime, EngineKind::Wasm)
            .map_err(|e| policy_error(name, e))?;
        let warnings = staged.warnings().to_vec();
        Ok((Asker::new(Chooser::Policy(Box::new(engine))), warnings))
    }

    /// Rereads the tenant's policy files: each that checks replaces the
    /// loaded one; the others are reported and the loaded one kept.
    pub fn reload(&self, t: &TenantState) -> Result<ReloadReport, ApiError> {
        let dir = policy_dir(t);
        let mut report = ReloadReport::default();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
            Err(e) => return Err(ApiError::internal(format!("{}: {e}", dir.display()))),
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "mesa"))
            .collect();
        files.sort();
        for path in files {
            let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if !valid_policy_name(name) {
                continue;
            }
            let loaded = std::fs::read_to_string(&path)
                .map_err(|e| ApiError::internal(format!("{}: {e}", path.display())))
                .and_then(|source| self.load(name, &source));
            match loaded {
                Ok((asker, _)) => {
                    t.policies
                        .write()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(name.to_string(), Arc::new(Mutex::new(asker)));
                    report.loaded.push(name.to_string());
                }
                Err(e) => report.failed.push(e),
            }
        }
        if let Ok(active) = std::fs::read_to_string(dir.join("active")) {
            let active = active.trim().to_string();
            if t.policy(&active).is_some() {
                *t.active.write().unwrap_or_else(|p| p.into_inner()) = Some(active);
            }
        }
        Ok(report)
    }
}

/// What a reload did.
#[derive(Debug, Default)]
pub struct ReloadReport {
    /// The policies that checked and were loaded.
    pub loaded: Vec<String>,
    /// The ones that did not (the loaded versions were kept).
    pub failed: Vec<ApiError>,
}

/// The tenant's policy folder.
pub fn policy_dir(t: &TenantState) -> PathBuf {
    t.tenant.dir().join("policies")
}

/// Brings the episode's snapshot up to date on a blocking thread, after a
/// write was answered, so that the next question does not pay for it
/// ([`Tenant::catch_up`]; a failure there is the next question's to meet).
pub fn catch_up_later(tenant: Arc<Tenant>, episode: String) {
    tokio::task::spawn_blocking(move || tenant.catch_up(&episode));
}

/// [`catch_up_later`] for each of `episodes`, one after another on one
/// blocking thread (a retention run may touch every episode; only those
/// whose snapshot was built have anything to do). It holds the tenant only
/// while it catches one episode up, and stops once the server has let the
/// tenant go, so a shutdown waits for one episode at most.
pub fn catch_up_all_later(tenant: &Arc<Tenant>, episodes: Vec<String>) {
    if episodes.is_empty() {
        return;
    }
    let tenant = Arc::downgrade(tenant);
    tokio::task::spawn_blocking(move || {
        for e in &episodes {
            let Some(t) = tenant.upgrade() else { break };
            let _ = t.catch_up(e);
        }
    });
}
