//! `and` / `or` chains of three and more operands (flattened by the
//! checker) must mean the same in both engines. A chain of three `and`s once
//! compiled to `a and b`, ignoring the third operand.

use mesa_compiler::{check, wasm, Input, Selector};
use mesa_runtime::Runtime;

fn agree(src: &str, inputs: &[Input]) {
    let program = check(src).program.expect("checks");
    let bytes = wasm::compile(&program, src).expect("compiles");
    let mut module = Runtime::new()
        .expect("runtime")
        .load(&bytes)
        .and_then(|p| p.instantiate())
        .expect("instance");
    let interp = Selector::new(program).expect("selector");
    for input in inputs {
        assert_eq!(
            module.select(input).expect("selects"),
            interp.select(input),
            "{src}\n{input:?}"
        );
    }
}

#[test]
fn and_and_or_chains_of_every_length_agree() {
    let atoms = [
        "domain is a",
        "qtype is c",
        "query has words [\"x\"]",
        "task has words [\"y\"]",
    ];
    let mut inputs = Vec::new();
    for bits in 0..16u32 {
        let mut i = Input::query(if bits & 4 != 0 {
            "an x here"
        } else {
            "nothing"
        });
        i.domain = Some(if bits & 1 != 0 { "a" } else { "b" }.into());
        i.qtype = Some(if bits & 2 != 0 { "c" } else { "d" }.into());
        i.task = Some(if bits & 8 != 0 { "y" } else { "z" }.into());
        inputs.push(i);
    }
    for n in 2..=4 {
        for op in ["and", "or"] {
            let cond = atoms[..n].join(&format!(" {op} "));
            let src = format!("policy \"p\"\nrule r when {cond} -> select {{S}}\ndefault {{T}}\n");
            agree(&src, &inputs);
            let src =
                format!("policy \"p\"\nrule r when not ({cond}) -> select {{S}}\ndefault {{T}}\n");
            agree(&src, &inputs);
        }
    }
    // The reported policy.
    let src = "policy \"p\"\nlet drawer = words [\"drawer\"]\n\
               rule r when domain is EMBODIED_AI and qtype is C and query has drawer -> select {S, T, V, R}\n\
               rule c when qtype is C -> select {S, T, G, V}\ndefault {S, T, V, R}\n";
    let mut i = Input::query("Where is the room located now?");
    i.domain = Some("EMBODIED_AI".into());
    i.qtype = Some("C".into());
    agree(src, &[i]);
}
