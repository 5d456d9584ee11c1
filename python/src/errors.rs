//! The exception hierarchy, and the mapping from the library's errors.
//!
//! ```text
//! MesaError (Exception)            .code .message .help
//! ├── NotFoundError                an unknown tenant, episode or step
//! ├── InvalidInputError            empty, too large, bad timestamp or name
//! ├── ConflictError                exists already, index taken, locked, read-only,
//! │                                a named builder not the tenant's (embedder-/builder-mismatch)
//! ├── StorageError                 disk, database, not a memory, version
//! ├── BuilderError                 a builder failed (nothing written) or cannot be made
//! │                                (embedder-/builder-unavailable)
//! ├── ClosedError                  a call on a closed Memory
//! └── PolicyError                  a policy that does not check or load; .diagnostics
//! ```

use mesa_memory::{LiveError, LiveErrorKind};
use mesa_runtime::PolicyError as RtPolicyError;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3::PyTypeInfo;

pyo3::create_exception!(
    mesa_memory,
    MesaError,
    PyException,
    "Base of every MESA error: `code` (stable), `message` and `help` (what to do, or None)."
);
pyo3::create_exception!(
    mesa_memory,
    NotFoundError,
    MesaError,
    "The tenant, episode or step does not exist."
);
pyo3::create_exception!(
    mesa_memory,
    InvalidInputError,
    MesaError,
    "The input is wrong (an empty action, a text too large, a bad timestamp or name); nothing was written."
);
pyo3::create_exception!(
    mesa_memory,
    ConflictError,
    MesaError,
    "The call conflicts with the memory's state: the episode exists, the index is taken, another writer holds the tenant, or the handle is read-only."
);
pyo3::create_exception!(
    mesa_memory,
    StorageError,
    MesaError,
    "The disk, the database or a file failed, or the directory is not a live memory this version reads. Nothing acknowledged was lost."
);
pyo3::create_exception!(
    mesa_memory,
    BuilderError,
    MesaError,
    "A model-backed builder (embedder, extractor, summarizer) failed on the new steps; nothing was written."
);
pyo3::create_exception!(
    mesa_memory,
    ClosedError,
    MesaError,
    "The Memory was closed."
);
pyo3::create_exception!(
    mesa_memory,
    PolicyError,
    MesaError,
    "A policy that does not check, compile, load or select; `diagnostics` lists the checker's findings."
);

/// An exception of type `E` with its attributes set.
pub fn raise<E: PyTypeInfo>(code: &str, message: String, help: Option<&str>) -> PyErr {
    Python::attach(|py| {
        let err = PyErr::new::<E, _>(message.clone());
        let value = err.value(py);
        let set = || -> PyResult<()> {
            value.setattr("code", code)?;
            value.setattr("message", message)?;
            value.setattr("help", help)?;
            value.setattr("diagnostics", PyList::empty(py))?;
            Ok(())
        };
        match set() {
            Ok(()) => err,
            Err(e) => e,
        }
    })
}

/// What to do, per kind of live-memory failure (the messages already say
/// it for the specific case).
fn live_help(kind: LiveErrorKind) -> &'static str {
    match kind {
        LiveErrorKind::NotFound => "list what exists with Memory.episodes() or Memory.steps()",
        LiveErrorKind::Invalid => "fix the input and call again; nothing was written",
        LiveErrorKind::Conflict => "see the message; nothing was written",
        LiveErrorKind::Storage => "see the message; every acknowledged write is kept",
        LiveErrorKind::Builder => "check the builder's endpoint or files, then call again",
        _ => "see the message",
    }
}

/// A named builder (`embedder`, `summarizer` or `extractor`) that cannot
/// be made: an unknown name, MiniLM's files missing, or an endpoint that
/// is not configured or answers its probe badly.
pub fn builder(kind: &str, name: &str, e: mesa_memory::SetupError) -> PyErr {
    let (code, help) = match kind {
        "embedder" => (
            "embedder-unavailable",
            "use embedder=\"builtin\", \"minilm\" with MESA_MINILM_DIR naming the model's files (scripts/fetch-minilm.sh), or \"openai\" with MESA_LLM_BASE_URL (and MESA_LLM_API_KEY, MESA_LLM_EMBEDDING_MODEL) set",
        ),
        _ => (
            "builder-unavailable",
            "use \"builtin\", or \"llm\" with MESA_LLM_BASE_URL (and MESA_LLM_API_KEY, MESA_LLM_CHAT_MODEL) set",
        ),
    };
    raise::<BuilderError>(
        code,
        format!("the {kind} `{name}` cannot be made: {e}"),
        Some(help),
    )
}

/// The live memory's error as its exception.
pub fn live(e: LiveError) -> PyErr {
    let kind = e.kind();
    let help = Some(match e {
        LiveError::Locked { .. } => {
            "open it with wait=SECONDS to wait for the other writer, or stop it (a running mesa serve or mesa mcp holds its tenants until it stops); read_only=True reads beside it"
        }
        _ => live_help(kind),
    });
    let message = e.to_string();
    match kind {
        LiveErrorKind::NotFound => raise::<NotFoundError>(e.code(), message, help),
        LiveErrorKind::Invalid => raise::<InvalidInputError>(e.code(), message, help),
        LiveErrorKind::Conflict => raise::<ConflictError>(e.code(), message, help),
        LiveErrorKind::Builder => raise::<BuilderError>(e.code(), message, help),
        _ => raise::<StorageError>(e.code(), message, help),
    }
}

/// A policy's error; `file` names it in the diagnostics.
pub fn policy(file: &str, e: RtPolicyError) -> PyErr {
    match e {
        RtPolicyError::Check { diagnostics, text } => {
            let errors = diagnostics.iter().filter(|d| d.is_error()).count();
            let first = diagnostics.iter().find(|d| d.is_error());
            let message = match first {
                Some(d) => format!("{file}: {errors} error(s); the first: {}", d.message),
                None => format!("{file}: the policy does not check"),
            };
            let help = first.and_then(|d| d.help.clone());
            let err = raise::<PolicyError>("check", message, help.as_deref());
            Python::attach(|py| {
                let list: Vec<crate::policy::Diagnostic> = diagnostics
                    .iter()
                    .map(|d| crate::policy::Diagnostic::of(file, &text, d))
                    .collect();
                match err.value(py).setattr("diagnostics", list) {
                    Ok(()) => err,
                    Err(e) => e,
                }
            })
        }
        other => raise::<PolicyError>(
            policy_code(&other),
            format!("{file}: {other}"),
            Some("check the policy with mesa_memory.check() or `mesa check`"),
        ),
    }
}

fn policy_code(e: &RtPolicyError) -> &'static str {
    match e {
        RtPolicyError::InterpNeedsSource => "needs-source",
        RtPolicyError::Compile(_) => "compile",
        _ => "load",
    }
}

/// An invalid argument, before anything was done.
pub fn invalid(code: &str, message: String) -> PyErr {
    raise::<InvalidInputError>(code, message, None)
}

/// Registers the exceptions on the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("MesaError", py.get_type::<MesaError>())?;
    m.add("NotFoundError", py.get_type::<NotFoundError>())?;
    m.add("InvalidInputError", py.get_type::<InvalidInputError>())?;
    m.add("ConflictError", py.get_type::<ConflictError>())?;
    m.add("StorageError", py.get_type::<StorageError>())?;
    m.add("BuilderError", py.get_type::<BuilderError>())?;
    m.add("ClosedError", py.get_type::<ClosedError>())?;
    m.add("PolicyError", py.get_type::<PolicyError>())?;
    Ok(())
}
