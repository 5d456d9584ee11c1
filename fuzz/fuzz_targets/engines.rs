//! Fuzz target: source text -> check -> compile to Wasm -> run both engines.
//! Properties: nothing panics; every checked program compiles (or reports a
//! DFA/pattern limit); the interpreter and the Wasm module agree on the mask,
//! the deciding rule and the trace for inputs taken from the fuzz data
//! (one with previews and shown counts, for budgets and trades).

#![no_main]

use libfuzzer_sys::fuzz_target;
use mesa_compiler::{check_bytes, wasm, Input, Selector};
use mesa_runtime::Runtime;
use std::sync::OnceLock;

fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| Runtime::new().expect("runtime"))
}

fuzz_target!(|data: &[u8]| {
    // The first line is the query; the rest is the policy.
    let split = data.iter().position(|&b| b == b'\n').unwrap_or(0);
    let (query, source) = data.split_at(split);
    let checked = check_bytes(source);
    let Some(program) = checked.program else { return };
    let text = std::str::from_utf8(source).expect("checked, so UTF-8");
    let bytes = match wasm::compile(&program, text) {
        Ok(b) => b,
        Err(wasm::CompileError::DfaTooBig { .. } | wasm::CompileError::TooManyPatterns { .. }) => return,
        Err(e) => panic!("a checked program failed to compile: {e}"),
    };
    let selector = Selector::new(program).expect("checked programs prepare");
    let policy = runtime().load(&bytes).expect("compiled modules validate");
    let mut instance = policy.instantiate().expect("instance");
    let query = String::from_utf8_lossy(query).into_owned();
    // Previews and what each subset shows, from the query's bytes, so a
    // budget and a trade have something to weigh in the third input.
    let bytes = query.as_bytes();
    let byte = |i: usize| f64::from(bytes.get(i % bytes.len().max(1)).copied().unwrap_or(0));
    for (n, (domain, task)) in [(None, None), (Some("text2sql"), Some(query.as_str())), (None, None)]
        .into_iter()
        .enumerate()
    {
        let mut input = Input::query(query.clone());
        input.domain = domain.map(String::from);
        input.task = task.map(String::from);
        if n == 2 {
            for s in mesa_core::Structure::ALL {
                input.previews.set(s, mesa_core::Feature::Tokens, 10.0 * byte(s.index()));
            }
            for unit in mesa_core::Shown::ALL {
                let counts = std::array::from_fn(|k| byte(5 + k + 31 * unit.index()) % 7.0);
                input.previews.set_shown(unit, counts);
            }
        }
        let want = selector.select(&input);
        let got = instance.select(&input).expect("runs");
        assert_eq!(got, want, "engines disagree");
    }
});
