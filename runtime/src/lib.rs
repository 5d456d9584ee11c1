//! The MESA wasmtime host: runs compiled selector policies sandboxed and
//! deterministically.
//!
//! ```no_run
//! use mesa_runtime::Runtime;
//! use mesa_compiler::{check, wasm, Input};
//!
//! let source = "policy \"p\"\nuse std\nrule why when query has std.causal -> select {S, T, R}\ndefault {S, V}\n";
//! let program = check(source).program.unwrap();
//! let bytes = wasm::compile(&program, source).unwrap();
//! let runtime = Runtime::new().unwrap();
//! let policy = runtime.load(&bytes).unwrap();
//! let mut instance = policy.instantiate().unwrap();
//! let outcome = instance.select(&Input::query("Why did it fail?")).unwrap();
//! assert_eq!(outcome.mask.to_string(), "{S, T, R}");
//! ```
//!
//! The engine uses Cranelift (or Winch, see [`Compiler`]) with NaN
//! canonicalization, meters fuel (a call that runs out is an error, never a
//! hang), and allocates instances from a pooling allocator through an
//! [`InstancePre`], so instantiating costs little and a warm
//! [`PolicyInstance`] is reused across calls. Modules from outside
//! are validated before anything in them runs: imports, exports and their
//! types, memory size, the ABI version and the metadata.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod engine;
pub mod query;
pub use engine::{AnyEngine, EngineKind, LoadError};
pub use query::{Answer, Chooser, QueryEngine, QueryError, Question};

use mesa_compiler::interp::{Input, Outcome};
use mesa_compiler::wasm::abi::{self, exports, Metadata};
use mesa_compiler::Mask;
use wasmtime::{
    Config, Engine, ExternType, InstanceAllocationStrategy, InstancePre, Linker, Memory, Module,
    OptLevel, PoolingAllocationConfig, Store, Strategy, Trap, TypedFunc, ValType,
};

/// Largest memory a policy module may declare, in 64 KiB pages (16 MiB).
pub const MAX_MEMORY_PAGES: u64 = 256;

/// Limits on what a foreign module may contain, checked on the raw bytes
/// before anything is compiled: compiling is the one cost fuel cannot bound,
/// so a module must be small enough that compiling it is cheap.
///
/// MESA's own modules stay far inside them: a 200-rule policy over 500
/// keywords is under 100 KiB with 16 functions (15, plus one per pattern
/// group; a policy has at most 64 patterns).
pub mod limits {
    /// Largest `.wasm` accepted, in bytes (the data segments can fill the
    /// 16 MiB memory, plus the code).
    pub const MAX_MODULE_BYTES: usize = 20 << 20;
    /// Most functions defined in a module.
    pub const MAX_FUNCTIONS: u32 = 128;
    /// Largest code section (all function bodies), in bytes.
    pub const MAX_CODE_BYTES: u32 = 4 << 20;
    /// Largest single function body, in bytes.
    pub const MAX_FUNCTION_BYTES: u32 = 2 << 20;
    /// Most locals declared in one function.
    pub const MAX_LOCALS: u32 = 4096;
    /// Most types, globals, exports, tables, elements or data segments each.
    pub const MAX_ITEMS: u32 = 256;
}

/// Everything that can go wrong loading or running a policy module.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The engine could not be created.
    #[error("cannot create the WebAssembly engine: {0}")]
    Engine(String),
    /// The bytes are not a WebAssembly module (or not a precompiled one for this host).
    #[error("not a valid WebAssembly module: {0}")]
    NotAModule(String),
    /// The module imports something; policy modules are self-contained.
    #[error("the module imports {0}; a MESA policy module must have no imports")]
    HasImports(String),
    /// A required export is missing or has the wrong type.
    #[error("the module's export `{name}` is {problem}; see docs/ABI.md for the required exports")]
    BadExport {
        /// The export's name.
        name: String,
        /// What is wrong with it.
        problem: String,
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
    #[error("the module is too large to load: {0}; see docs/ABI.md, \"Limits\"")]
    TooLarge(String),
    /// The metadata is missing or unreadable.
    #[error("the module's metadata is {0}")]
    BadMetadata(String),
    /// The input does not fit the module's buffer.
    #[error("{0}")]
    Input(#[from] abi::LayoutError),
    /// The call used up its fuel.
    #[error("the policy ran out of fuel ({0} units) and was stopped")]
    OutOfFuel(u64),
    /// The module trapped or returned an error code.
    #[error("the policy failed: {0}")]
    Trap(String),
    /// Instantiation failed (e.g. the instance pool is exhausted).
    #[error("cannot instantiate the policy: {0}")]
    Instantiate(String),
}

/// Tunable limits of a [`Runtime`].
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// How many instances may exist at once (the pooling allocator's size).
    pub max_instances: u32,
    /// Fuel granted to each call: `base + per_byte * input bytes + per_rule * rules`.
    pub fuel_base: u64,
    /// Fuel per byte of input.
    pub fuel_per_byte: u64,
    /// Fuel per rule of the policy.
    pub fuel_per_rule: u64,
    /// The code generator that compiles modules.
    pub compiler: Compiler,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            max_instances: 32,
            fuel_base: 1_000_000,
            fuel_per_byte: 400,
            fuel_per_rule: 100_000,
            compiler: Compiler::default(),
        }
    }
}

/// The code generator that compiles policy modules to machine code. Every
/// choice meters fuel and canonicalizes NaNs, so all give the same results
/// (the differential tests check Winch too).
///
/// The trade-off, for a 200-rule policy over 500 keywords (docs/BENCHMARKS.md):
/// Cranelift takes about 18 ms to compile it and selects in 0.9 µs for a
/// 200-byte query; Winch takes about 3.5 ms and selects in about 3 µs. Winch
/// wins end to end for a compiled policy that answers fewer than about
/// 5,000 queries (a command-line run, an optimizer's candidate); Cranelift
/// for long-lived instances and for ahead-of-time compilation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Compiler {
    /// Cranelift with its optimizations (the default).
    #[default]
    Cranelift,
    /// Cranelift without optimizations: barely faster to compile (about
    /// 10%), a quarter slower to run; kept for measurements.
    CraneliftUnoptimized,
    /// Winch, wasmtime's single-pass baseline compiler (x86-64 only; on
    /// other hosts the runtime cannot be created).
    Winch,
}

/// A configured engine; loads policy modules.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    config: RuntimeConfig,
}

impl Runtime {
    /// A runtime with the default limits.
    pub fn new() -> Result<Runtime, RuntimeError> {
        Runtime::with_config(RuntimeConfig::default())
    }

    /// A runtime with the given limits.
    pub fn with_config(config: RuntimeConfig) -> Result<Runtime, RuntimeError> {
        let mut c = Config::new();
        match config.compiler {
            Compiler::Cranelift => c
                .strategy(Strategy::Cranelift)
                .cranelift_opt_level(OptLevel::Speed),
            Compiler::CraneliftUnoptimized => c
                .strategy(Strategy::Cranelift)
                .cranelift_opt_level(OptLevel::None),
            Compiler::Winch => c.strategy(Strategy::Winch),
        };
        c.cranelift_nan_canonicalization(true)
            .consume_fuel(true)
            .max_wasm_stack(512 * 1024);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_core_instances(config.max_instances)
            .total_memories(config.max_instances)
            .total_tables(config.max_instances)
            .max_memories_per_module(1)
            .max_tables_per_module(1)
            .max_memory_size((MAX_MEMORY_PAGES * 65536) as usize);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = Engine::new(&c).map_err(|e| RuntimeError::Engine(e.to_string()))?;
        Ok(Runtime { engine, config })
    }

    /// Validates and compiles a `.wasm` policy module.
    pub fn load(&self, wasm: &[u8]) -> Result<Policy, RuntimeError> {
        let section = prevalidate(wasm)?;
        let module = Module::new(&self.engine, wasm)
            .map_err(|e| RuntimeError::NotAModule(first_line(&e)))?;
        self.prepare(module, section.as_deref())
    }

    /// Compiles a `.wasm` policy ahead of time for this host (a `.cwasm`),
    /// after validating it.
    pub fn precompile(&self, wasm: &[u8]) -> Result<Vec<u8>, RuntimeError> {
        self.load(wasm)?;
        self.engine
            .precompile_module(wasm)
            .map_err(|e| RuntimeError::NotAModule(first_line(&e)))
    }

    /// Loads a `.cwasm` made by [`Runtime::precompile`] on a compatible host.
    ///
    /// Only load files you produced: a precompiled module is machine code,
    /// which wasmtime cannot verify. Its header is checked for this engine's
    /// version and settings, and the module is then validated like any other.
    pub fn load_precompiled(&self, cwasm: &[u8]) -> Result<Policy, RuntimeError> {
        if Engine::detect_precompiled(cwasm).is_none() {
            return Err(RuntimeError::NotAModule(
                "not a precompiled wasmtime module".into(),
            ));
        }
        // SAFETY: wasmtime requires that the bytes come from `precompile_module`
        // of a compatible engine; the header check above rejects other files
        // and engine or setting mismatches, and the documentation restricts
        // this to artifacts the user produced with `mesa compile --aot`.
        #[allow(unsafe_code)]
        let module = unsafe { Module::deserialize(&self.engine, cwasm) }
            .map_err(|e| RuntimeError::NotAModule(first_line(&e)))?;
        self.prepare(module, None)
    }

    /// Instantiates once to read the ABI version and the metadata. `section`
    /// is the `mesa.metadata` custom section when the module has one: the
    /// in-memory copy is the one every host can read, and a module whose two
    /// copies differ is refused rather than trusted either way.
    fn prepare(&self, module: Module, section: Option<&[u8]>) -> Result<Policy, RuntimeError> {
        validate_shape(&module)?;
        let linker: Linker<()> = Linker::new(&self.engine);
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| RuntimeError::Instantiate(format!("{e:#}")))?;
        let mut policy = Policy {
            pre,
            engine: self.engine.clone(),
            config: self.config.clone(),
            metadata: placeholder_metadata(),
        };
        // Read the version and metadata from a first instance; this runs no
        // policy code beyond constant getters, under a small fuel budget.
        let mut instance = policy.instantiate()?;
        let version = instance.abi_version()?;
        if version != i64::from(abi::ABI_VERSION) {
            return Err(RuntimeError::AbiVersion {
                found: version,
                expected: abi::ABI_VERSION,
            });
        }
        let bytes = instance.metadata_bytes()?;
        if section.is_some_and(|section| section != bytes.as_slice()) {
            return Err(RuntimeError::BadMetadata(format!(
                "given twice and the copies differ: the `{}` custom section is not the copy in memory",
                abi::METADATA_SECTION
            )));
        }
        let metadata: Metadata = serde_json::from_slice(&bytes)
            .map_err(|e| RuntimeError::BadMetadata(format!("not valid JSON: {e}")))?;
        if metadata.abi_version != abi::ABI_VERSION {
            return Err(RuntimeError::AbiVersion {
                found: i64::from(metadata.abi_version),
                expected: abi::ABI_VERSION,
            });
        }
        // A preview the host cannot name would silently read as 0.
        if let Some(bad) = metadata
            .features
            .previews
            .iter()
            .find(|p| mesa_core::parse_preview_key(p).is_err())
        {
            return Err(RuntimeError::BadMetadata(format!(
                "lists the preview `{bad}`, which is not `K.feature` with K one of S, T, G, V, R and feature one of tokens, top, hits"
            )));
        }
        policy.metadata = metadata;
        Ok(policy)
    }
}

/// An engine error's message without the multi-line detail some carry.
fn first_line(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    let line = text.lines().next().unwrap_or("");
    line.split(" - expected=")
        .next()
        .unwrap_or(line)
        .to_string()
}

fn placeholder_metadata() -> Metadata {
    Metadata {
        abi_version: abi::ABI_VERSION,
        name: String::new(),
        source_sha256: String::new(),
        rules: Vec::new(),
        keyword_sets: Vec::new(),
        patterns: Vec::new(),
        features: Default::default(),
        input_capacity: 0,
        memory_pages: 0,
        compiler: String::new(),
    }
}

/// Reads the raw module before compiling it: imports and memories get their
/// own errors rather than a compiler's, and the [`limits`] bound what
/// compiling may cost. Returns the `mesa.metadata` custom section, if any.
fn prevalidate(wasm: &[u8]) -> Result<Option<Vec<u8>>, RuntimeError> {
    use wasmparser::{Parser, Payload};
    let over = |what: &str, n: u32, limit: u32| {
        if n > limit {
            Err(RuntimeError::TooLarge(format!(
                "{n} {what}; the limit is {limit}"
            )))
        } else {
            Ok(())
        }
    };
    if wasm.len() > limits::MAX_MODULE_BYTES {
        return Err(RuntimeError::TooLarge(format!(
            "{} bytes; the limit is {} bytes",
            wasm.len(),
            limits::MAX_MODULE_BYTES
        )));
    }
    if !wasm.starts_with(b"\0asm") {
        return Err(RuntimeError::NotAModule(
            "the file does not start with the WebAssembly magic bytes `\\0asm`".into(),
        ));
    }
    let not_module = |e: wasmparser::BinaryReaderError| RuntimeError::NotAModule(e.to_string());
    let mut section = None;
    for payload in Parser::new(0).parse_all(wasm) {
        match payload.map_err(not_module)? {
            Payload::ImportSection(reader) => {
                let mut names = Vec::new();
                for import in reader.into_imports() {
                    let import = import.map_err(not_module)?;
                    names.push(format!("`{}::{}`", import.module, import.name));
                }
                if !names.is_empty() {
                    return Err(RuntimeError::HasImports(names.join(", ")));
                }
            }
            Payload::MemorySection(reader) => {
                for memory in reader {
                    let m = memory.map_err(not_module)?;
                    check_memory(m.memory64 || m.shared, m.initial, m.maximum)?;
                }
            }
            Payload::FunctionSection(r) => over("functions", r.count(), limits::MAX_FUNCTIONS)?,
            Payload::TypeSection(r) => over("types", r.count(), limits::MAX_ITEMS)?,
            Payload::GlobalSection(r) => over("globals", r.count(), limits::MAX_ITEMS)?,
            Payload::ExportSection(r) => over("exports", r.count(), limits::MAX_ITEMS)?,
            Payload::TableSection(r) => over("tables", r.count(), limits::MAX_ITEMS)?,
            Payload::ElementSection(r) => over("element segments", r.count(), limits::MAX_ITEMS)?,
            Payload::DataSection(r) => over("data segments", r.count(), limits::MAX_ITEMS)?,
            Payload::CodeSectionStart { size, .. } => {
                over("bytes of code", size, limits::MAX_CODE_BYTES)?
            }
            Payload::CodeSectionEntry(body) => {
                let size = body.range().len() as u32;
                over("bytes in one function", size, limits::MAX_FUNCTION_BYTES)?;
                let mut locals = 0u32;
                for group in body.get_locals_reader().map_err(not_module)? {
                    let (n, _) = group.map_err(not_module)?;
                    locals = locals.saturating_add(n);
                }
                over("locals in one function", locals, limits::MAX_LOCALS)?;
            }
            Payload::CustomSection(c) if c.name() == abi::METADATA_SECTION => {
                if section.is_some() {
                    return Err(RuntimeError::BadMetadata(format!(
                        "given in two `{}` custom sections",
                        abi::METADATA_SECTION
                    )));
                }
                section = Some(c.data().to_vec());
            }
            _ => {}
        }
    }
    Ok(section)
}

fn check_memory(unusual: bool, minimum: u64, maximum: Option<u64>) -> Result<(), RuntimeError> {
    if unusual {
        return Err(RuntimeError::BadMemory(
            "64-bit or shared; it must be a plain 32-bit memory".into(),
        ));
    }
    if maximum != Some(minimum) {
        return Err(RuntimeError::BadMemory(format!(
            "growable ({minimum} pages, maximum {maximum:?}); it must have a fixed size (maximum = minimum)"
        )));
    }
    if minimum > MAX_MEMORY_PAGES {
        return Err(RuntimeError::BadMemory(format!(
            "{minimum} pages ({} MiB); the limit is {MAX_MEMORY_PAGES} pages (16 MiB)",
            minimum / 16
        )));
    }
    Ok(())
}

/// Checks imports, exports and memory before anything is instantiated.
fn validate_shape(module: &Module) -> Result<(), RuntimeError> {
    let imports: Vec<String> = module
        .imports()
        .map(|i| format!("`{}::{}`", i.module(), i.name()))
        .collect();
    if !imports.is_empty() {
        return Err(RuntimeError::HasImports(imports.join(", ")));
    }
    let find = |name: &str| module.exports().find(|e| e.name() == name).map(|e| e.ty());
    let bad = |name: &str, problem: &str| RuntimeError::BadExport {
        name: name.to_string(),
        problem: problem.to_string(),
    };
    match find(exports::MEMORY) {
        Some(ExternType::Memory(m)) => {
            check_memory(m.is_64() || m.is_shared(), m.minimum(), m.maximum())?
        }
        Some(_) => return Err(bad(exports::MEMORY, "not a memory")),
        None => return Err(bad(exports::MEMORY, "missing")),
    }
    match find(exports::ABI_VERSION) {
        Some(ExternType::Global(g)) => {
            if !matches!(g.content(), ValType::I32) || g.mutability().is_var() {
                return Err(bad(exports::ABI_VERSION, "not an immutable i32 global"));
            }
        }
        Some(_) => return Err(bad(exports::ABI_VERSION, "not a global")),
        None => return Err(bad(exports::ABI_VERSION, "missing")),
    }
    for name in exports::FUNCTIONS {
        match find(name) {
            Some(ExternType::Func(f)) => {
                let params: Vec<ValType> = f.params().collect();
                let results: Vec<ValType> = f.results().collect();
                if !params.is_empty() || results.len() != 1 || !matches!(results[0], ValType::I32) {
                    return Err(bad(name, "not a function `() -> i32`"));
                }
            }
            Some(_) => return Err(bad(name, "not a function")),
            None => return Err(bad(name, "missing")),
        }
    }
    Ok(())
}

/// A validated, compiled policy module, ready to instantiate.
#[derive(Clone)]
pub struct Policy {
    pre: InstancePre<()>,
    engine: Engine,
    config: RuntimeConfig,
    metadata: Metadata,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("name", &self.metadata.name)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for PolicyInstance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyInstance")
            .field("name", &self.metadata.name)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Policy {
    /// The module's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// A fresh instance with its own store (cheap: the instance comes from
    /// the pool). Reuse it for many calls.
    pub fn instantiate(&self) -> Result<PolicyInstance, RuntimeError> {
        let mut store = Store::new(&self.engine, ());
        // Instantiation runs no start function in modules from this
        // compiler; a foreign module's start function is bounded by this fuel.
        store
            .set_fuel(self.config.fuel_base)
            .map_err(|e| RuntimeError::Instantiate(format!("{e:#}")))?;
        let instance =
            self.pre
                .instantiate(&mut store)
                .map_err(|e| match e.downcast_ref::<Trap>() {
                    Some(Trap::OutOfFuel) => RuntimeError::OutOfFuel(self.config.fuel_base),
                    _ => RuntimeError::Instantiate(format!("{e:#}")),
                })?;
        let memory = instance
            .get_memory(&mut store, exports::MEMORY)
            .ok_or_else(|| RuntimeError::BadExport {
                name: exports::MEMORY.into(),
                problem: "missing".into(),
            })?;
        let func = |store: &mut Store<()>, name: &str| {
            instance
                .get_typed_func::<(), i32>(&mut *store, name)
                .map_err(|e| RuntimeError::BadExport {
                    name: name.to_string(),
                    problem: format!("{e:#}"),
                })
        };
        let funcs = Funcs {
            input_ptr: func(&mut store, exports::INPUT_PTR)?,
            input_cap: func(&mut store, exports::INPUT_CAP)?,
            select: func(&mut store, exports::SELECT)?,
            trace_ptr: func(&mut store, exports::TRACE_PTR)?,
            trace_len: func(&mut store, exports::TRACE_LEN)?,
            metadata_ptr: func(&mut store, exports::METADATA_PTR)?,
            metadata_len: func(&mut store, exports::METADATA_LEN)?,
        };
        let version = instance.get_global(&mut store, exports::ABI_VERSION);
        let mut inst = PolicyInstance {
            store,
            memory,
            funcs,
            version,
            input_ptr: 0,
            input_cap: 0,
            config: self.config.clone(),
            slots: self.metadata.features.preview_slots(),
            metadata: self.metadata.clone(),
        };
        inst.input_ptr = inst.call_getter(Getter::InputPtr)?;
        inst.input_cap = inst.call_getter(Getter::InputCap)?;
        Ok(inst)
    }
}

struct Funcs {
    input_ptr: TypedFunc<(), i32>,
    input_cap: TypedFunc<(), i32>,
    select: TypedFunc<(), i32>,
    trace_ptr: TypedFunc<(), i32>,
    trace_len: TypedFunc<(), i32>,
    metadata_ptr: TypedFunc<(), i32>,
    metadata_len: TypedFunc<(), i32>,
}

#[derive(Clone, Copy)]
enum Getter {
    InputPtr,
    InputCap,
    TracePtr,
    TraceLen,
    MetadataPtr,
    MetadataLen,
}

/// A live instance: write an input, call `select`, read the result.
pub struct PolicyInstance {
    store: Store<()>,
    memory: Memory,
    funcs: Funcs,
    version: Option<wasmtime::Global>,
    input_ptr: u32,
    input_cap: u32,
    config: RuntimeConfig,
    metadata: Metadata,
    /// The feature array's slots, read once from the metadata.
    slots: Vec<Option<(mesa_compiler::Structure, mesa_compiler::ir::Feature)>>,
}

impl PolicyInstance {
    fn call(&mut self, f: &TypedFunc<(), i32>, fuel: u64) -> Result<i32, RuntimeError> {
        self.store
            .set_fuel(fuel)
            .map_err(|e| RuntimeError::Trap(format!("{e:#}")))?;
        f.call(&mut self.store, ())
            .map_err(|e| match e.downcast_ref::<Trap>() {
                Some(Trap::OutOfFuel) => RuntimeError::OutOfFuel(fuel),
                _ => RuntimeError::Trap(format!("{e:#}")),
            })
    }

    fn call_getter(&mut self, g: Getter) -> Result<u32, RuntimeError> {
        let f = match g {
            Getter::InputPtr => self.funcs.input_ptr.clone(),
            Getter::InputCap => self.funcs.input_cap.clone(),
            Getter::TracePtr => self.funcs.trace_ptr.clone(),
            Getter::TraceLen => self.funcs.trace_len.clone(),
            Getter::MetadataPtr => self.funcs.metadata_ptr.clone(),
            Getter::MetadataLen => self.funcs.metadata_len.clone(),
        };
        let v = self.call(&f, 10_000)?;
        u32::try_from(v).map_err(|_| RuntimeError::Trap(format!("a getter returned {v}")))
    }

    fn abi_version(&mut self) -> Result<i64, RuntimeError> {
        match self.version.map(|g| g.get(&mut self.store)) {
            Some(wasmtime::Val::I32(v)) => Ok(i64::from(v)),
            _ => Err(RuntimeError::BadExport {
                name: exports::ABI_VERSION.into(),
                problem: "unreadable".into(),
            }),
        }
    }

    /// Reads `len` bytes at `ptr`, failing cleanly when out of bounds.
    fn read(&self, ptr: u32, len: u32) -> Result<&[u8], RuntimeError> {
        let data = self.memory.data(&self.store);
        let (start, end) = (ptr as usize, ptr as usize + len as usize);
        data.get(start..end).ok_or_else(|| {
            RuntimeError::Trap(format!(
                "the module points outside its memory ({start}..{end})"
            ))
        })
    }

    /// The in-memory copy of the metadata JSON.
    fn metadata_bytes(&mut self) -> Result<Vec<u8>, RuntimeError> {
        let ptr = self.call_getter(Getter::MetadataPtr)?;
        let len = self.call_getter(Getter::MetadataLen)?;
        self.read(ptr, len)
            .map(<[u8]>::to_vec)
            .map_err(|_| RuntimeError::BadMetadata("outside the module's memory".into()))
    }

    /// The module's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Writes the input and runs `select`; returns the raw result.
    fn run(&mut self, input: &Input, trace: bool) -> Result<(Mask, Option<usize>), RuntimeError> {
        let start = self.input_ptr as usize;
        let cap = self.input_cap as usize;
        let data = self.memory.data_mut(&mut self.store);
        let dest = data.get_mut(start..start + cap).ok_or_else(|| {
            RuntimeError::Trap("the input buffer lies outside the module's memory".into())
        })?;
        let flags = if trace { abi::FLAG_TRACE } else { 0 };
        let written = abi::write_input(&self.slots, input, flags, dest)?;
        let fuel = self.config.fuel_base
            + self.config.fuel_per_byte * written as u64
            + self.config.fuel_per_rule * self.metadata.rules.len() as u64;
        let f = self.funcs.select.clone();
        let result = self.call(&f, fuel)?;
        let decoded = abi::decode_result(result)
            .ok_or_else(|| RuntimeError::Trap(format!("`select` returned error code {result}")))?;
        if decoded.mask.is_empty() {
            return Err(RuntimeError::Trap("`select` returned an empty mask".into()));
        }
        if let Some(rule) = decoded.rule {
            if rule >= self.metadata.rules.len() {
                return Err(RuntimeError::Trap(format!(
                    "`select` named rule {rule}, which does not exist"
                )));
            }
        }
        Ok((decoded.mask, decoded.rule))
    }

    /// Selects for one input: the mask and the deciding rule.
    pub fn select_mask(&mut self, input: &Input) -> Result<(Mask, Option<usize>), RuntimeError> {
        self.run(input, false)
    }

    /// Selects for one input, with the trace read back from the module.
    pub fn select(&mut self, input: &Input) -> Result<Outcome, RuntimeError> {
        let (mask, rule) = self.run(input, true)?;
        let ptr = self.call_getter(Getter::TracePtr)?;
        let len = self.call_getter(Getter::TraceLen)?;
        let bytes = self.read(ptr, len.saturating_mul(abi::TRACE_RECORD_BYTES))?;
        let trace = abi::decode_trace(bytes, len as usize)
            .ok_or_else(|| RuntimeError::Trap("the module's trace is malformed".into()))?;
        Ok(Outcome { mask, rule, trace })
    }
}
