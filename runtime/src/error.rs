//! The host's two error kinds: [`LoadError`] (a module could not be made
//! ready: created, validated, compiled or instantiated) and [`SelectError`]
//! (a ready module failed on one input). Each keeps its typed source where
//! one exists; its message is complete on its own (a front end prints
//! `Display`; a front end that maps kinds to status codes or exception
//! classes matches on the variant).

use mesa_compiler::wasm::abi::LayoutError;

/// An error from wasmtime or wasmparser, kept as the cause.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The first line of an error and its causes joined by `: `, without the
/// multi-line detail some of wasmtime's carry.
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let next = c.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = c.source();
    }
    let line = text.lines().next().unwrap_or("");
    line.split(" - expected=")
        .next()
        .unwrap_or(line)
        .to_string()
}

/// Converts a wasmtime error into a kept cause.
pub(crate) fn boxed(e: wasmtime::Error) -> BoxError {
    e.into_boxed_dyn_error()
}

/// Why a module could not be made ready to select.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The engine could not be created (a setting this host does not support).
    #[error("cannot create the WebAssembly engine: {}", describe(.0.as_ref()))]
    Engine(#[source] BoxError),
    /// The bytes do not start like a WebAssembly module.
    #[error("not a valid WebAssembly module: the file does not start with the WebAssembly magic bytes `\\0asm`")]
    NotWasm,
    /// The bytes are not a precompiled module for this engine.
    #[error("not a valid WebAssembly module: not a precompiled wasmtime module")]
    NotPrecompiled,
    /// The module does not parse, validate or compile.
    #[error("not a valid WebAssembly module: {}", describe(.0.as_ref()))]
    Invalid(#[source] BoxError),
    /// The module imports something; policy modules are self-contained.
    #[error("the module imports {0}; a MESA policy module must have no imports")]
    HasImports(String),
    /// A required export is missing or has the wrong type.
    #[error("the module's export `{name}` is {problem}; see docs/ABI.md for the required exports")]
    BadExport {
        /// The export's name.
        name: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A required function export cannot be called as the ABI says.
    #[error("the module's export `{name}` is not callable as `() -> i32`: {}; see docs/ABI.md", describe(.source.as_ref()))]
    ExportType {
        /// The export's name.
        name: String,
        /// wasmtime's reason.
        #[source]
        source: BoxError,
    },
    /// The memory is not fixed-size or is too large.
    #[error("the module's memory is {0}")]
    BadMemory(String),
    /// The ABI version is not the one this host speaks.
    #[error("the module speaks MESA ABI version {found}; this host speaks version {expected}")]
    AbiVersion {
        /// What the module says.
        found: i64,
        /// What this host speaks.
        expected: u32,
    },
    /// The module is larger or more complex than a policy module may be.
    #[error("the module is too large to load: {found} {what}; the limit is {limit}; see docs/ABI.md, \"Limits\"")]
    TooLarge {
        /// What was counted (`bytes`, `functions`, ...).
        what: &'static str,
        /// How many the module has.
        found: u64,
        /// The limit ([`crate::limits`]).
        limit: u64,
    },
    /// The metadata is missing, duplicated or inconsistent.
    #[error("the module's metadata is {0}")]
    BadMetadata(String),
    /// The metadata is not the JSON the ABI describes.
    #[error("the module's metadata is not valid: {0}")]
    MetadataJson(#[source] serde_json::Error),
    /// Instantiation failed (e.g. the instance pool is exhausted).
    #[error("cannot instantiate the policy: {}", describe(.0.as_ref()))]
    Instantiate(#[source] BoxError),
    /// Instantiating used up its fuel (a foreign module's start function).
    #[error("the policy ran out of fuel ({0} units) while being instantiated")]
    OutOfFuel(u64),
    /// One of the module's getters failed while the host read it.
    #[error("the module failed while its ABI was read: {0}")]
    Getter(#[source] SelectError),
}

/// Why a ready module failed to select for one input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    /// The input does not fit the module's buffer.
    #[error("{0}")]
    Input(#[from] LayoutError),
    /// The call used up its fuel.
    #[error("the policy ran out of fuel ({0} units) and was stopped")]
    OutOfFuel(u64),
    /// The module trapped.
    #[error("the policy failed: {}", describe(.0.as_ref()))]
    Trap(#[source] BoxError),
    /// `select` returned an error code.
    #[error("the policy failed: `select` returned error code {0}")]
    ErrorCode(i32),
    /// `select` returned an empty mask.
    #[error("the policy failed: `select` returned an empty mask")]
    EmptyMask,
    /// `select` named a rule the metadata does not list.
    #[error("the policy failed: `select` named rule {0}, which does not exist")]
    UnknownRule(usize),
    /// A getter returned a negative value.
    #[error("the policy failed: a getter returned {0}")]
    BadGetter(i32),
    /// The module pointed outside its memory.
    #[error("the policy failed: the module points outside its memory ({start}..{end})")]
    OutOfBounds {
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// The trace records do not decode.
    #[error("the policy failed: the module's trace is malformed")]
    MalformedTrace,
}
