//! The standard cue sets, checked once and cached.

use crate::check::{check_module, Export};
use std::sync::OnceLock;

type Table = Vec<(String, Export)>;

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut all = Vec::new();
        for module in mesa_stdlib::MODULES {
            // A module that fails to check exports nothing; the stdlib tests
            // make sure every embedded module checks cleanly.
            if let Ok(exports) = check_module(module.source) {
                all.extend(exports);
            }
        }
        all
    })
}

/// The standard set or pattern named `name` (without `std.`).
pub(crate) fn lookup(name: &str) -> Option<Export> {
    table()
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, e)| e.clone())
}

/// Every standard name, in module order.
pub fn names() -> Vec<String> {
    table().iter().map(|(n, _)| n.clone()).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_module_checks_cleanly() {
        for m in mesa_stdlib::MODULES {
            let checked = crate::check(m.source);
            assert!(
                checked.diagnostics.is_empty(),
                "{}: {:?}",
                m.name,
                checked.diagnostics
            );
            assert!(super::check_module(m.source).is_ok(), "{}", m.name);
            let formatted = mesa_grammar::format_source(m.source).expect("parses");
            assert_eq!(
                formatted, m.source,
                "std/{}.mesa is not in the canonical layout",
                m.name
            );
        }
        for name in [
            "temporal",
            "causal",
            "state",
            "abstraction",
            "counting",
            "identifiers",
            "entities",
            "stepref",
            "steprange",
            "recent",
        ] {
            assert!(super::lookup(name).is_some(), "std.{name}");
        }
    }
}
