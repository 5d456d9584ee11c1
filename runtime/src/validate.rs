//! Validation of foreign modules before anything in them runs: the raw
//! bytes against the [`limits`] (compiling is the one cost fuel cannot
//! bound), then the compiled module's imports, exports and memory.

use crate::error::LoadError;
use mesa_compiler::wasm::abi::{self, exports};
use wasmtime::{ExternType, Module, ValType};

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

/// Reads the raw module before compiling it: imports and memories get their
/// own errors rather than a compiler's, and the [`limits`] bound what
/// compiling may cost. Returns the `mesa.metadata` custom section, if any.
pub(crate) fn prevalidate(wasm: &[u8]) -> Result<Option<Vec<u8>>, LoadError> {
    use wasmparser::{Parser, Payload};
    let over = |what: &'static str, n: u32, limit: u32| {
        if n > limit {
            Err(LoadError::TooLarge {
                what,
                found: n.into(),
                limit: limit.into(),
            })
        } else {
            Ok(())
        }
    };
    if wasm.len() > limits::MAX_MODULE_BYTES {
        return Err(LoadError::TooLarge {
            what: "bytes",
            found: wasm.len() as u64,
            limit: limits::MAX_MODULE_BYTES as u64,
        });
    }
    if !wasm.starts_with(b"\0asm") {
        return Err(LoadError::NotWasm);
    }
    let not_module = |e: wasmparser::BinaryReaderError| LoadError::Invalid(Box::new(e));
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
                    return Err(LoadError::HasImports(names.join(", ")));
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
                    return Err(LoadError::BadMetadata(format!(
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

pub(crate) fn check_memory(
    unusual: bool,
    minimum: u64,
    maximum: Option<u64>,
) -> Result<(), LoadError> {
    if unusual {
        return Err(LoadError::BadMemory(
            "64-bit or shared; it must be a plain 32-bit memory".into(),
        ));
    }
    if maximum != Some(minimum) {
        return Err(LoadError::BadMemory(format!(
            "growable ({minimum} pages, maximum {maximum:?}); it must have a fixed size (maximum = minimum)"
        )));
    }
    if minimum > MAX_MEMORY_PAGES {
        return Err(LoadError::BadMemory(format!(
            "{minimum} pages ({} MiB); the limit is {MAX_MEMORY_PAGES} pages (16 MiB)",
            minimum / 16
        )));
    }
    Ok(())
}

/// Checks imports, exports and memory before anything is instantiated.
pub(crate) fn validate_shape(module: &Module) -> Result<(), LoadError> {
    let imports: Vec<String> = module
        .imports()
        .map(|i| format!("`{}::{}`", i.module(), i.name()))
        .collect();
    if !imports.is_empty() {
        return Err(LoadError::HasImports(imports.join(", ")));
    }
    let find = |name: &str| module.exports().find(|e| e.name() == name).map(|e| e.ty());
    let bad = |name: &str, problem: &'static str| LoadError::BadExport {
        name: name.to_string(),
        problem,
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
