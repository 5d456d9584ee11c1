//! Inputs at and past the Wasm engines' 128 KiB input buffer: at the limit
//! both engines agree; one byte past it the module refuses with a clear
//! error and the interpreter still answers.

use mesa_compiler::wasm::abi::{HEADER_BYTES, INPUT_CAPACITY};
use mesa_compiler::{check, wasm, Input, Selector};
use mesa_runtime::{Runtime, SelectError};
use proptest::prelude::*;

const POLICY: &str =
    "policy \"p\"\nuse std\nrule why when query has std.causal -> select {S, T, R}\n\
                      rule big when query.words > 1000 -> add {V}\n\
                      rule tail when query matches pattern r\"end$\" -> add {G}\ndefault {S}\n";

/// A query of exactly `len` bytes, with words and a marker at its end.
fn query(len: usize, tail: &str) -> String {
    let mut q = String::with_capacity(len);
    while q.len() + 6 + tail.len() <= len {
        q.push_str("why x ");
    }
    while q.len() + tail.len() < len {
        q.push(' ');
    }
    q.push_str(tail);
    assert_eq!(q.len(), len);
    q
}

fn engines() -> (Selector, mesa_runtime::PolicyInstance) {
    let program = check(POLICY).program.expect("checks");
    assert!(program.features.previews.is_empty());
    let bytes = wasm::compile(&program, POLICY).expect("compiles");
    let instance = Runtime::new()
        .expect("runtime")
        .load(&bytes)
        .and_then(|p| p.instantiate())
        .expect("instance");
    (Selector::new(program).expect("selector"), instance)
}

#[test]
fn at_the_limit_both_agree_past_it_the_module_refuses() {
    let (interp, mut module) = engines();
    // The policy reads only the query: the header and the query fill the buffer.
    let room = (INPUT_CAPACITY - HEADER_BYTES) as usize;
    let at = Input::query(query(room, "end"));
    let a = module.select(&at).expect("fits exactly");
    assert_eq!(a, interp.select(&at));
    assert_eq!(a.mask.to_string(), "{S, T, R}");
    let past = Input::query(query(room + 1, "end"));
    match module.select(&past) {
        Err(SelectError::Input(e)) => {
            let m = e.to_string();
            assert!(m.contains("does not fit") && m.contains("131072"), "{m}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(interp.select(&past).mask.to_string(), "{S, T, R}");
    // The instance is still usable after a refused input.
    let small = Input::query("why end");
    assert_eq!(module.select(&small).expect("small"), interp.select(&small));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Around the limit, with the other texts taking part of the room.
    #[test]
    fn near_the_limit(task_len in 0usize..64, delta in -3i64..3) {
        let (interp, mut module) = engines();
        let room = (INPUT_CAPACITY - HEADER_BYTES) as i64 - task_len as i64;
        let len = (room + delta).max(4) as usize;
        let mut input = Input::query(query(len, "end"));
        input.task = Some("t".repeat(task_len));
        input.domain = Some(String::new());
        let fits = len as i64 <= room;
        match module.select(&input) {
            Ok(out) => {
                prop_assert!(fits, "accepted {} bytes past the limit", len as i64 - room);
                prop_assert_eq!(out, interp.select(&input));
            }
            Err(SelectError::Input(_)) => prop_assert!(!fits, "refused an input that fits"),
            Err(e) => prop_assert!(false, "{}", e),
        }
    }
}
