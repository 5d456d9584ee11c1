#!/usr/bin/env bash
# `mesa mcp` against the official Python MCP client: installs `mcp` from the
# package index into a fresh venv and runs server/tests/mcp/test_mcp_client.py,
# which spawns the server on stdio.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/mcp-venv
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "mcp>=1.9,<2"
MESA_BIN=$(bash scripts/mesa-bin.sh) "$venv/bin/python" server/tests/mcp/test_mcp_client.py
