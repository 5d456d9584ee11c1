//! The MESA standard library: cue sets written as `.mesa` modules.
//!
//! Each module is a `module "name"` file of `let`s; a policy that says
//! `use std` refers to them as `std.<let name>` (`std.causal`,
//! `std.stepref`, ...). The modules' text is embedded here; `mesa-compiler`
//! parses and checks them. See docs/LANGUAGE.md for the list.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

/// One embedded module: its name and its source text.
#[derive(Debug, Clone, Copy)]
pub struct Module {
    /// The module's name (its file stem).
    pub name: &'static str,
    /// Its `.mesa` source.
    pub source: &'static str,
}

macro_rules! modules {
    ($($name:literal),* $(,)?) => {
        /// Every standard module, in a fixed order.
        pub const MODULES: &[Module] = &[
            $(Module { name: $name, source: include_str!(concat!("../std/", $name, ".mesa")) },)*
        ];
    };
}

modules!(
    "temporal",
    "causal",
    "state",
    "abstraction",
    "counting",
    "identifiers",
    "stepref"
);

/// The module with this name, if any.
pub fn module(name: &str) -> Option<&'static Module> {
    MODULES.iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_module_declares_its_own_name() {
        for m in super::MODULES {
            let header = format!("module \"{}\"", m.name);
            assert!(m.source.starts_with(&header), "{}", m.name);
        }
    }
}
