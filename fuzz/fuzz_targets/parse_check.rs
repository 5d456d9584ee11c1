//! Fuzz target: arbitrary bytes through parse, check, format and the
//! interpreter. Properties: nothing panics or overflows the stack; a source
//! that parses formats to text that parses to the same tree, and formatting
//! that text again changes nothing; a program that checks runs.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mesa_compiler::{check_bytes, Input, Selector};

fuzz_target!(|data: &[u8]| {
    if let Ok(mut file) = mesa_grammar::parse_bytes(data) {
        let source = std::str::from_utf8(data).expect("parsed, so UTF-8");
        let formatted = mesa_grammar::format_file(&file, source);
        let mut again = mesa_grammar::parse(&formatted).expect("formatted text parses");
        file.erase_spans();
        again.erase_spans();
        assert_eq!(file, again, "formatting changed the tree");
        assert_eq!(mesa_grammar::format_source(&formatted).ok().as_deref(), Some(formatted.as_str()));
    }
    let checked = check_bytes(data);
    if let Some(program) = checked.program {
        let selector = Selector::new(program).expect("checked programs prepare");
        let text = String::from_utf8_lossy(data);
        for query in ["", "why did step 12 fail?", text.as_ref()] {
            let mut input = Input::query(query);
            input.domain = Some("text2sql".into());
            let outcome = selector.select(&input);
            assert!(!outcome.mask.is_empty(), "the checker proved the mask non-empty");
            assert_eq!(selector.select_mask(&input), (outcome.mask, outcome.rule));
        }
    }
});
