#!/usr/bin/env bash
# Builds the `mesa` command (dev profile) and prints its path, wherever
# cargo puts its target directory (CARGO_TARGET_DIR may move it).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked -p mesa >&2
target_dir=$(cargo metadata --format-version 1 --no-deps --locked |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
echo "$target_dir/debug/mesa"
