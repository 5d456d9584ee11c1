//! What the differential test files share: one runtime, the keyword
//! schemes a module can be compiled with, and the comparison of the
//! interpreter with each compiled module.
#![allow(dead_code)] // each test file uses its own part of these

use mesa_compiler::{check, wasm, Input, Selector};
use mesa_runtime::Runtime;
use std::sync::OnceLock;

pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::new().expect("runtime"))
}

/// The keyword schemes a module can be compiled with: word hashing (with
/// the automaton for keywords with a non-word byte at either end) or the
/// automaton alone, each with a dense or a sparse automaton table.
pub const SCHEMES: [wasm::CompileOptions; 4] = [
    wasm::CompileOptions {
        dense_keyword_table_limit: usize::MAX,
        word_hash: true,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: 0,
        word_hash: true,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: usize::MAX,
        word_hash: false,
    },
    wasm::CompileOptions {
        dense_keyword_table_limit: 0,
        word_hash: false,
    },
];

/// Compares the engines on one policy for the given queries, with every
/// keyword scheme.
pub fn agree_on(src: &str, queries: &[String]) {
    agree_on_inputs(
        src,
        &queries
            .iter()
            .map(|q| Input::query(q.clone()))
            .collect::<Vec<_>>(),
        &SCHEMES,
    );
}

/// Compares the engines on one policy for the given inputs (mask, rule and
/// trace), with each of `schemes`.
pub fn agree_on_inputs(src: &str, inputs: &[Input], schemes: &[wasm::CompileOptions]) {
    agree_with(runtime(), src, inputs, schemes);
}

/// [`agree_on_inputs`] on a given runtime.
pub fn agree_with(
    runtime: &Runtime,
    src: &str,
    inputs: &[Input],
    schemes: &[wasm::CompileOptions],
) {
    let program = check(src)
        .program
        .unwrap_or_else(|| panic!("checks: {:?}", check(src).diagnostics));
    let selector = Selector::new(program.clone()).expect("prepares");
    for options in schemes {
        let bytes = wasm::compile_with(&program, src, options).expect("compiles");
        let mut instance = runtime
            .load(&bytes)
            .expect("loads")
            .instantiate()
            .expect("instance");
        for input in inputs {
            assert_eq!(
                instance.select(input).expect("runs"),
                selector.select(input),
                "{options:?}, input {input:?}\npolicy:\n{src}"
            );
        }
    }
}

/// How many random policies a property tries: `MESA_DIFF_POLICIES`, 300
/// unless set.
pub fn policies() -> u32 {
    std::env::var("MESA_DIFF_POLICIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}
