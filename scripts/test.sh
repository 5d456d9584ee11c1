#!/usr/bin/env bash
# The project's test command (README: "Run the tests"): the workspace's Rust
# tests, then the embedding hosts (Python and Node) against the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
bash scripts/test-hosts.sh
