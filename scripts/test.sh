#!/usr/bin/env bash
# The project's test command (README: "Run the tests").
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
