//! Workspace-level end-to-end tests live in `tests/*.rs`; this crate has no library code.
