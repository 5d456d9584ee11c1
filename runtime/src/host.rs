//! The host proper: a [`Runtime`] (one wasmtime engine and its instance
//! pool) loads modules into [`Policy`] values (validated, compiled, ready to
//! instantiate), and a [`PolicyInstance`] selects: write the input into the
//! module's buffer, call `select` under fuel, read the mask, the rule and
//! the trace back.

use crate::config::{Compiler, RuntimeConfig};
use crate::error::{boxed, LoadError, SelectError};
use crate::validate::{prevalidate, validate_shape, MAX_MEMORY_PAGES};
use mesa_compiler::interp::{Input, Outcome};
use mesa_compiler::wasm::abi::{self, exports, Metadata};
use mesa_compiler::Mask;
use wasmtime::{
    Config, Engine, InstanceAllocationStrategy, InstancePre, Linker, Memory, Module, OptLevel,
    PoolingAllocationConfig, Store, Strategy, Trap, TypedFunc,
};

/// A configured engine; loads policy modules.
#[derive(Clone)]
pub struct Runtime {
    engine: Engine,
    config: RuntimeConfig,
}

impl Runtime {
    /// A runtime with the default limits.
    pub fn new() -> Result<Runtime, LoadError> {
        Runtime::with_config(RuntimeConfig::default())
    }

    /// A runtime with the given limits.
    pub fn with_config(config: RuntimeConfig) -> Result<Runtime, LoadError> {
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
        let engine = Engine::new(&c).map_err(|e| LoadError::Engine(boxed(e)))?;
        Ok(Runtime { engine, config })
    }

    /// The settings this runtime was made with.
    pub fn config(&self) -> &RuntimeConfig {
        &self.config
    }

    /// Validates and compiles a `.wasm` policy module.
    pub fn load(&self, wasm: &[u8]) -> Result<Policy, LoadError> {
        let section = prevalidate(wasm)?;
        let module = Module::new(&self.engine, wasm).map_err(|e| LoadError::Invalid(boxed(e)))?;
        self.prepare(module, section.as_deref())
    }

    /// Compiles a `.wasm` policy ahead of time for this host (a `.cwasm`),
    /// after validating it.
    pub fn precompile(&self, wasm: &[u8]) -> Result<Vec<u8>, LoadError> {
        self.load(wasm)?;
        self.engine
            .precompile_module(wasm)
            .map_err(|e| LoadError::Invalid(boxed(e)))
    }

    /// Loads a `.cwasm` made by [`Runtime::precompile`] on a compatible host.
    ///
    /// Only load files you produced: a precompiled module is machine code,
    /// which wasmtime cannot verify. Its header is checked for this engine's
    /// version and settings, and the module is then validated like any other.
    pub fn load_precompiled(&self, cwasm: &[u8]) -> Result<Policy, LoadError> {
        if Engine::detect_precompiled(cwasm).is_none() {
            return Err(LoadError::NotPrecompiled);
        }
        // SAFETY: wasmtime requires that the bytes come from `precompile_module`
        // of a compatible engine; the header check above rejects other files
        // and engine or setting mismatches, and the documentation restricts
        // this to artifacts the user produced with `mesa compile --aot`.
        #[allow(unsafe_code)]
        let module = unsafe { Module::deserialize(&self.engine, cwasm) }
            .map_err(|e| LoadError::Invalid(boxed(e)))?;
        self.prepare(module, None)
    }

    /// Instantiates once to read the ABI version and the metadata. `section`
    /// is the `mesa.metadata` custom section when the module has one: the
    /// in-memory copy is the one every host can read, and a module whose two
    /// copies differ is refused rather than trusted either way.
    fn prepare(&self, module: Module, section: Option<&[u8]>) -> Result<Policy, LoadError> {
        validate_shape(&module)?;
        let linker: Linker<()> = Linker::new(&self.engine);
        let pre = linker
            .instantiate_pre(&module)
            .map_err(|e| LoadError::Instantiate(boxed(e)))?;
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
            return Err(LoadError::AbiVersion {
                found: version,
                expected: abi::ABI_VERSION,
            });
        }
        let bytes = instance.metadata_bytes()?;
        if section.is_some_and(|section| section != bytes.as_slice()) {
            return Err(LoadError::BadMetadata(format!(
                "given twice and the copies differ: the `{}` custom section is not the copy in memory",
                abi::METADATA_SECTION
            )));
        }
        let metadata: Metadata = serde_json::from_slice(&bytes).map_err(LoadError::MetadataJson)?;
        if metadata.abi_version != abi::ABI_VERSION {
            return Err(LoadError::AbiVersion {
                found: i64::from(metadata.abi_version),
                expected: abi::ABI_VERSION,
            });
        }
        // A preview the host cannot name fails to deserialize (a
        // `PreviewKey`), rather than silently reading as 0.
        policy.metadata = metadata;
        Ok(policy)
    }
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
    pub fn instantiate(&self) -> Result<PolicyInstance, LoadError> {
        let mut store = Store::new(&self.engine, ());
        // Instantiation runs no start function in modules from this
        // compiler; a foreign module's start function is bounded by this fuel.
        store
            .set_fuel(self.config.fuel_base)
            .map_err(|e| LoadError::Instantiate(boxed(e)))?;
        let instance =
            self.pre
                .instantiate(&mut store)
                .map_err(|e| match e.downcast_ref::<Trap>() {
                    Some(Trap::OutOfFuel) => LoadError::OutOfFuel(self.config.fuel_base),
                    _ => LoadError::Instantiate(boxed(e)),
                })?;
        let memory = instance
            .get_memory(&mut store, exports::MEMORY)
            .ok_or_else(|| LoadError::BadExport {
                name: exports::MEMORY.into(),
                problem: "missing",
            })?;
        let func = |store: &mut Store<()>, name: &str| {
            instance
                .get_typed_func::<(), i32>(&mut *store, name)
                .map_err(|e| LoadError::ExportType {
                    name: name.to_string(),
                    source: boxed(e),
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
            metadata: self.metadata.clone(),
        };
        inst.input_ptr = inst
            .call_getter(Getter::InputPtr)
            .map_err(LoadError::Getter)?;
        inst.input_cap = inst
            .call_getter(Getter::InputCap)
            .map_err(LoadError::Getter)?;
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
}

impl PolicyInstance {
    fn call(&mut self, f: &TypedFunc<(), i32>, fuel: u64) -> Result<i32, SelectError> {
        self.store
            .set_fuel(fuel)
            .map_err(|e| SelectError::Trap(boxed(e)))?;
        f.call(&mut self.store, ())
            .map_err(|e| match e.downcast_ref::<Trap>() {
                Some(Trap::OutOfFuel) => SelectError::OutOfFuel(fuel),
                _ => SelectError::Trap(boxed(e)),
            })
    }

    fn call_getter(&mut self, g: Getter) -> Result<u32, SelectError> {
        let f = match g {
            Getter::InputPtr => self.funcs.input_ptr.clone(),
            Getter::InputCap => self.funcs.input_cap.clone(),
            Getter::TracePtr => self.funcs.trace_ptr.clone(),
            Getter::TraceLen => self.funcs.trace_len.clone(),
            Getter::MetadataPtr => self.funcs.metadata_ptr.clone(),
            Getter::MetadataLen => self.funcs.metadata_len.clone(),
        };
        let v = self.call(&f, 10_000)?;
        u32::try_from(v).map_err(|_| SelectError::BadGetter(v))
    }

    fn abi_version(&mut self) -> Result<i64, LoadError> {
        match self.version.map(|g| g.get(&mut self.store)) {
            Some(wasmtime::Val::I32(v)) => Ok(i64::from(v)),
            _ => Err(LoadError::BadExport {
                name: exports::ABI_VERSION.into(),
                problem: "unreadable",
            }),
        }
    }

    /// Reads `len` bytes at `ptr`, failing cleanly when out of bounds.
    fn read(&self, ptr: u32, len: u32) -> Result<&[u8], SelectError> {
        let data = self.memory.data(&self.store);
        let (start, end) = (ptr as usize, ptr as usize + len as usize);
        data.get(start..end)
            .ok_or(SelectError::OutOfBounds { start, end })
    }

    /// The in-memory copy of the metadata JSON.
    fn metadata_bytes(&mut self) -> Result<Vec<u8>, LoadError> {
        let ptr = self
            .call_getter(Getter::MetadataPtr)
            .map_err(LoadError::Getter)?;
        let len = self
            .call_getter(Getter::MetadataLen)
            .map_err(LoadError::Getter)?;
        self.read(ptr, len)
            .map(<[u8]>::to_vec)
            .map_err(|_| LoadError::BadMetadata("outside the module's memory".into()))
    }

    /// The module's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// Writes the input and runs `select`; returns the raw result.
    fn run(&mut self, input: &Input, trace: bool) -> Result<(Mask, Option<usize>), SelectError> {
        let start = self.input_ptr as usize;
        let cap = self.input_cap as usize;
        let data = self.memory.data_mut(&mut self.store);
        let dest = data
            .get_mut(start..start + cap)
            .ok_or(SelectError::OutOfBounds {
                start,
                end: start + cap,
            })?;
        let flags = if trace { abi::FLAG_TRACE } else { 0 };
        let written = abi::write_input(&self.metadata.features, input, flags, dest)?;
        let fuel = self.config.fuel_base
            + self.config.fuel_per_byte * written as u64
            + self.config.fuel_per_rule * self.metadata.rules.len() as u64;
        let f = self.funcs.select.clone();
        let result = self.call(&f, fuel)?;
        let decoded = abi::decode_result(result).ok_or(SelectError::ErrorCode(result))?;
        if decoded.mask.is_empty() {
            return Err(SelectError::EmptyMask);
        }
        if let Some(rule) = decoded.rule {
            if rule >= self.metadata.rules.len() {
                return Err(SelectError::UnknownRule(rule));
            }
        }
        Ok((decoded.mask, decoded.rule))
    }

    /// Selects for one input: the mask and the deciding rule.
    pub fn select_mask(&mut self, input: &Input) -> Result<(Mask, Option<usize>), SelectError> {
        self.run(input, false)
    }

    /// Selects for one input, with the trace read back from the module.
    pub fn select(&mut self, input: &Input) -> Result<Outcome, SelectError> {
        let (mask, rule) = self.run(input, true)?;
        let ptr = self.call_getter(Getter::TracePtr)?;
        let len = self.call_getter(Getter::TraceLen)?;
        let bytes = self.read(ptr, len.saturating_mul(abi::TRACE_RECORD_BYTES))?;
        let trace = abi::decode_trace(bytes, len as usize).ok_or(SelectError::MalformedTrace)?;
        Ok(Outcome { mask, rule, trace })
    }
}
