//! The nesting pre-check bounds the parser's recursion: the deepest nesting
//! it lets through parses on a spawned thread's default stack (2 MiB; it
//! needs between 512 KiB and 1 MiB in a debug build), and one level more is
//! refused with E0003 before the parser runs. (pest's own stack probe stays
//! on: without it, a stack smaller than that would abort the process, where
//! the probe makes it an error; it costs about a tenth of a parse.)

use mesa_grammar::{parse, MAX_NESTING};

/// A rule whose condition is `pairs` brackets, each holding an `if` whose
/// condition is the next: two levels a pair.
fn nested(pairs: usize) -> String {
    let mut expr = String::from("size > 1");
    for _ in 0..pairs {
        expr = format!("(if {expr} then true else false)");
    }
    format!("policy \"p\"\nrule r when {expr} -> select {{S}}\ndefault {{T}}\n")
}

#[test]
fn the_deepest_allowed_nesting_parses_on_a_default_thread_stack() {
    let deepest = nested(MAX_NESTING / 2);
    // Exactly one level more: the deepest wrapped in one more bracket.
    let too_deep = nested(MAX_NESTING / 2)
        .replace("when (", "when ((")
        .replace(" -> ", ") -> ");
    let worker = std::thread::Builder::new()
        // The smallest stack the front ends parse on (tokio's blocking
        // threads and Rust's spawned threads get 2 MiB).
        .stack_size(2048 << 10)
        .spawn(move || (parse(&deepest).map(|_| ()), parse(&too_deep).err()))
        .expect("a thread");
    let (ok, refused) = worker.join().expect("no stack overflow");
    assert!(ok.is_ok(), "{MAX_NESTING} levels parse: {ok:?}");
    let refused = refused.expect("one level more is refused");
    assert!(
        refused.iter().any(|d| d.code == mesa_grammar::Code::E0003),
        "{refused:?}"
    );
}
