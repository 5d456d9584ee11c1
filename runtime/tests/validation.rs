//! Modules from outside are validated before they run; each failure is a
//! clear error, never a panic or a hang.

use mesa_compiler::wasm::abi::exports;
use mesa_compiler::{check, wasm, Input};
use mesa_runtime::{LoadError, Runtime, SelectError};
use wasm_encoder::{
    CodeSection, ConstExpr, DataSection, EntityType, ExportKind, ExportSection, Function,
    FunctionSection, GlobalSection, GlobalType, ImportSection, Instruction as I, MemorySection,
    MemoryType, Module, TypeSection, ValType,
};

/// How to build a foreign module.
struct Foreign {
    pages: u64,
    max: Option<u64>,
    version: i32,
    import: bool,
    skip_export: Option<&'static str>,
    select_loops: bool,
    metadata: Vec<u8>,
    metadata_ptr: i32,
    /// Functions added beside the ABI's, each `() -> i32`.
    extra_functions: u32,
    /// A `mesa.metadata` custom section.
    custom_metadata: Option<Vec<u8>>,
}

impl Default for Foreign {
    fn default() -> Self {
        let metadata = br#"{"abi_version":1,"name":"foreign","source_sha256":"","rules":[],"keyword_sets":[],"patterns":[],"features":{"query":false,"task":false,"domain":false,"qtype":false,"previews":[]},"input_capacity":1024,"memory_pages":1,"compiler":"test"}"#.to_vec();
        Foreign {
            pages: 1,
            max: Some(1),
            version: 1,
            import: false,
            skip_export: None,
            select_loops: false,
            metadata,
            metadata_ptr: 2048,
            extra_functions: 0,
            custom_metadata: None,
        }
    }
}

impl Foreign {
    fn build(&self) -> Vec<u8> {
        let mut types = TypeSection::new();
        types.ty().function([], [ValType::I32]);
        let mut imports = ImportSection::new();
        if self.import {
            imports.import("env", "clock", EntityType::Function(0));
        }
        let base = u32::from(self.import);
        let mut funcs = FunctionSection::new();
        let mut code = CodeSection::new();
        let mut exps = ExportSection::new();
        let bodies: [(&str, Vec<I<'static>>); 7] = [
            (exports::INPUT_PTR, vec![I::I32Const(4096)]),
            (exports::INPUT_CAP, vec![I::I32Const(1024)]),
            (
                exports::SELECT,
                if self.select_loops {
                    vec![
                        I::Loop(wasm_encoder::BlockType::Empty),
                        I::Br(0),
                        I::End,
                        I::I32Const(1),
                    ]
                } else {
                    vec![I::I32Const(1)]
                },
            ),
            (exports::TRACE_PTR, vec![I::I32Const(0)]),
            (exports::TRACE_LEN, vec![I::I32Const(0)]),
            (exports::METADATA_PTR, vec![I::I32Const(self.metadata_ptr)]),
            (
                exports::METADATA_LEN,
                vec![I::I32Const(self.metadata.len() as i32)],
            ),
        ];
        for (i, (name, body)) in bodies.iter().enumerate() {
            funcs.function(0);
            let mut f = Function::new([]);
            for ins in body {
                f.instruction(ins);
            }
            f.instruction(&I::End);
            code.function(&f);
            if self.skip_export != Some(*name) {
                exps.export(name, ExportKind::Func, base + i as u32);
            }
        }
        for _ in 0..self.extra_functions {
            funcs.function(0);
            let mut f = Function::new([]);
            f.instruction(&I::I32Const(0));
            f.instruction(&I::End);
            code.function(&f);
        }
        let mut mems = MemorySection::new();
        mems.memory(MemoryType {
            minimum: self.pages,
            maximum: self.max,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        exps.export(exports::MEMORY, ExportKind::Memory, 0);
        let mut globals = GlobalSection::new();
        globals.global(
            GlobalType {
                val_type: ValType::I32,
                mutable: false,
                shared: false,
            },
            &ConstExpr::i32_const(self.version),
        );
        exps.export(exports::ABI_VERSION, ExportKind::Global, 0);
        let mut data = DataSection::new();
        data.active(
            0,
            &ConstExpr::i32_const(2048),
            self.metadata.iter().copied(),
        );
        let mut m = Module::new();
        m.section(&types);
        if self.import {
            m.section(&imports);
        }
        m.section(&funcs)
            .section(&mems)
            .section(&globals)
            .section(&exps)
            .section(&code)
            .section(&data);
        if let Some(bytes) = &self.custom_metadata {
            m.section(&wasm_encoder::CustomSection {
                name: mesa_compiler::wasm::abi::METADATA_SECTION.into(),
                data: bytes.as_slice().into(),
            });
        }
        m.finish()
    }
}

fn load(f: Foreign) -> Result<mesa_runtime::Policy, LoadError> {
    Runtime::new().expect("runtime").load(&f.build())
}

#[test]
fn a_well_formed_foreign_module_loads() {
    let policy = load(Foreign::default()).expect("loads");
    assert_eq!(policy.metadata().name, "foreign");
    let mut inst = policy.instantiate().expect("instance");
    assert_eq!(
        inst.select_mask(&Input::query("x")).expect("runs").0.bits(),
        1
    );
}

#[test]
fn not_a_module() {
    let rt = Runtime::new().expect("runtime");
    assert!(matches!(rt.load(b"hello, world"), Err(LoadError::NotWasm)));
    assert!(matches!(rt.load(b""), Err(LoadError::NotWasm)));
    assert!(matches!(
        rt.load(b"\0asm\x01\0\0\0\x05"),
        Err(LoadError::Invalid(_))
    ));
    assert!(matches!(
        rt.load_precompiled(b"\0asm\x01\0\0\0"),
        Err(LoadError::NotPrecompiled)
    ));
}

#[test]
fn imports_are_rejected() {
    let err = load(Foreign {
        import: true,
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(
        matches!(err, LoadError::HasImports(ref s) if s.contains("env::clock")),
        "{err}"
    );
}

#[test]
fn wrong_abi_version() {
    let err = load(Foreign {
        version: 2,
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(
        matches!(
            err,
            LoadError::AbiVersion {
                found: 2,
                expected: 1
            }
        ),
        "{err}"
    );
}

#[test]
fn huge_or_growable_memory() {
    let err = load(Foreign {
        pages: 1000,
        max: Some(1000),
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(
        matches!(err, LoadError::BadMemory(ref s) if s.contains("1000 pages")),
        "{err}"
    );
    let err = load(Foreign {
        max: None,
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(
        matches!(err, LoadError::BadMemory(ref s) if s.contains("growable")),
        "{err}"
    );
}

#[test]
fn missing_export() {
    let err = load(Foreign {
        skip_export: Some(exports::SELECT),
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(
        matches!(err, LoadError::BadExport { ref name, .. } if name == "select"),
        "{err}"
    );
}

#[test]
fn bad_metadata() {
    let err = load(Foreign {
        metadata_ptr: 70_000,
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(matches!(err, LoadError::BadMetadata(_)), "{err}");
    let err = load(Foreign {
        metadata: b"{not json".to_vec(),
        ..Foreign::default()
    })
    .expect_err("rejected");
    assert!(matches!(err, LoadError::MetadataJson(_)), "{err}");
}

#[test]
fn an_endless_loop_runs_out_of_fuel() {
    let policy = load(Foreign {
        select_loops: true,
        ..Foreign::default()
    })
    .expect("loads");
    let mut inst = policy.instantiate().expect("instance");
    let err = inst.select_mask(&Input::query("x")).expect_err("stopped");
    assert!(matches!(err, SelectError::OutOfFuel(_)), "{err}");
    // The instance is still usable for the error path; nothing hangs.
    assert!(matches!(
        inst.select_mask(&Input::query("x")),
        Err(SelectError::OutOfFuel(_))
    ));
}

#[test]
fn input_larger_than_the_buffer() {
    let src = "policy \"p\"\nuse std\nrule r when query has std.causal -> add {R}\ndefault {S}\n";
    let program = check(src).program.expect("checks");
    let bytes = wasm::compile(&program, src).expect("compiles");
    let policy = Runtime::new()
        .expect("runtime")
        .load(&bytes)
        .expect("loads");
    let mut inst = policy.instantiate().expect("instance");
    let err = inst
        .select_mask(&Input::query("why ".repeat(40_000)))
        .expect_err("too large");
    assert!(matches!(err, SelectError::Input(_)), "{err}");
    assert!(err.to_string().contains("does not fit"), "{err}");
    // A query of 64 KiB fits.
    let (mask, rule) = inst
        .select_mask(&Input::query("why ".repeat(16_000)))
        .expect("fits");
    assert_eq!((mask.to_string().as_str(), rule), ("{S, R}", Some(0)));
}

#[test]
fn module_level_guards_reject_bad_headers() {
    // Write a header whose lengths overflow the buffer straight into memory:
    // the module itself answers with an error code rather than reading out
    // of bounds. Checked through the raw ABI, as a foreign host would call it.
    let src = "policy \"p\"\nrule r when query.words > 1 -> add {R}\ndefault {S}\n";
    let program = check(src).program.expect("checks");
    let bytes = wasm::compile(&program, src).expect("compiles");
    let engine = wasmtime::Engine::default();
    let module = wasmtime::Module::new(&engine, &bytes).expect("module");
    let mut store = wasmtime::Store::new(&engine, ());
    let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("instance");
    let memory = instance.get_memory(&mut store, "memory").expect("memory");
    let ptr = instance
        .get_typed_func::<(), i32>(&mut store, "input_ptr")
        .expect("f")
        .call(&mut store, ())
        .expect("call") as usize;
    let select = instance
        .get_typed_func::<(), i32>(&mut store, "select")
        .expect("f");
    let header = |q: u32, t: u32, fc: u32| {
        let mut h = Vec::new();
        for v in [q, t, u32::MAX, u32::MAX, fc, 0] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        h
    };
    memory.data_mut(&mut store)[ptr..ptr + 24].copy_from_slice(&header(u32::MAX, u32::MAX, 0));
    assert_eq!(
        select.call(&mut store, ()).expect("call"),
        -1,
        "absent query"
    );
    memory.data_mut(&mut store)[ptr..ptr + 24].copy_from_slice(&header(200_000, u32::MAX, 0));
    assert_eq!(select.call(&mut store, ()).expect("call"), -1, "too long");
    memory.data_mut(&mut store)[ptr..ptr + 24].copy_from_slice(&header(10, 0xFFFF_FFF0, 0));
    assert_eq!(
        select.call(&mut store, ()).expect("call"),
        -1,
        "lengths that wrap in 32 bits"
    );
    memory.data_mut(&mut store)[ptr..ptr + 24].copy_from_slice(&header(0, u32::MAX, 3));
    assert_eq!(
        select.call(&mut store, ()).expect("call"),
        -2,
        "feature count"
    );
    memory.data_mut(&mut store)[ptr..ptr + 24].copy_from_slice(&header(0, u32::MAX, 0));
    assert_eq!(
        select.call(&mut store, ()).expect("call") & 0x1f,
        1,
        "empty query selects the default"
    );
}

/// A module of 100,000 trivial functions took 11-19 s and 600 MB to
/// compile; the function count is refused before compiling.
#[test]
fn a_module_with_too_many_functions_is_refused_before_compiling() {
    let module = Foreign {
        extra_functions: 100_000,
        ..Foreign::default()
    };
    let bytes = module.build();
    assert!(bytes.len() > 500_000);
    match Runtime::new().expect("runtime").load(&bytes) {
        Err(LoadError::TooLarge { what, found, limit }) => {
            assert_eq!((what, found, limit), ("functions", 100_007, 128))
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // Just under the limit still loads.
    let fine = Foreign {
        extra_functions: mesa_runtime::limits::MAX_FUNCTIONS - 7,
        ..Foreign::default()
    };
    load(fine).expect("loads");
}

#[test]
fn the_two_metadata_copies_must_agree() {
    let same = Foreign::default().metadata;
    load(Foreign {
        custom_metadata: Some(same.clone()),
        ..Foreign::default()
    })
    .expect("identical copies load");
    let mut other = same.clone();
    let at = other.iter().position(|&b| b == b'f').expect("an f");
    other[at] = b'g';
    match load(Foreign {
        custom_metadata: Some(other),
        ..Foreign::default()
    }) {
        Err(LoadError::BadMetadata(m)) => assert!(m.contains("differ"), "{m}"),
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// A module that writes no trace records would otherwise print a trace
/// whose default mask is empty.
#[test]
fn a_trace_without_its_start_record_is_refused() {
    let policy = load(Foreign::default()).expect("loads");
    let mut inst = policy.instantiate().expect("instance");
    match inst.select(&Input::query("x")) {
        Err(e @ SelectError::MalformedTrace) => assert!(e.to_string().contains("trace"), "{e}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_unknown_preview_name_in_the_metadata_is_refused() {
    let metadata = br#"{"abi_version":1,"name":"foreign","source_sha256":"","rules":[],"keyword_sets":[],"patterns":[],"features":{"query":false,"task":false,"domain":false,"qtype":false,"previews":["R.tokenz"]},"input_capacity":1024,"memory_pages":1,"compiler":"test"}"#.to_vec();
    match load(Foreign {
        metadata,
        ..Foreign::default()
    }) {
        Err(e @ LoadError::MetadataJson(_)) => {
            assert!(e.to_string().contains("`R.tokenz`"), "{e}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}
