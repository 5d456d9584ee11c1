#!/usr/bin/env bash
# The project's test command (README: "Run the tests"): the workspace's Rust
# tests, the embedding hosts (Python and Node) against the interpreter, and
# the Python package (built into a wheel, installed in a fresh venv), and
# `mesa mcp` against the official Python MCP client.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --locked
bash scripts/test-hosts.sh
bash scripts/test-python.sh
bash scripts/test-mcp.sh
