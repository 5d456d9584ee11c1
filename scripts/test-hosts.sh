#!/usr/bin/env bash
# The embedding hosts, end to end: installs what they need (the `wasmtime`
# package from PyPI into target/hosts-venv; Node's built-in WebAssembly needs
# nothing but Node), compiles every example policy, runs the Python and Node
# hosts and `mesa run` on the compiled module over two query sets, and
# compares every line with `mesa run --engine interp` (the reference). Then
# gives both hosts hostile modules (scripts/test-hostile-modules.py), each of
# which they must refuse with the expected message.
#
# MESA=path/to/mesa uses that binary instead of building target/debug/mesa.
set -euo pipefail
cd "$(dirname "$0")/.."

WASMTIME_PY=48.0.0
if [ -z "${MESA:-}" ]; then
  cargo build --locked --quiet -p mesa
  MESA="${CARGO_TARGET_DIR:-target}/debug/mesa"
fi
VENV=target/hosts-venv
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "wasmtime==$WASMTIME_PY"
if ! command -v node >/dev/null; then
  echo "installing Node.js (Debian package) for the Node host"
  apt-get install -y -qq nodejs >/dev/null
fi
echo "hosts: python $("$VENV/bin/python" --version 2>&1 | cut -d' ' -f2) with wasmtime $WASMTIME_PY, node $(node --version)"

OUT=target/hosts-test
rm -rf "$OUT"
mkdir -p "$OUT"
status=0
for policy in examples/*.mesa; do
  name=$(basename "$policy" .mesa)
  "$MESA" compile "$policy" -o "$OUT/$name.wasm" 2>/dev/null
  for queries in examples/queries.jsonl tests/corpora/host-queries.jsonl; do
    q=$(basename "$queries" .jsonl)
    base="$OUT/$name.$q"
    "$MESA" run "$policy" --engine interp --input "$queries" > "$base.interp.jsonl"
    "$MESA" run "$OUT/$name.wasm" --input "$queries" > "$base.wasm.jsonl"
    "$VENV/bin/python" examples/hosts/python/select.py "$OUT/$name.wasm" < "$queries" > "$base.python.jsonl"
    node examples/hosts/node/select.mjs "$OUT/$name.wasm" < "$queries" > "$base.node.jsonl"
    if python3 scripts/compare-jsonl.py "$base.interp.jsonl" "$base.wasm.jsonl" "$base.python.jsonl" "$base.node.jsonl"; then
      echo "ok: $name on $q ($(wc -l < "$base.interp.jsonl") lines): interpreter = mesa wasm = python = node"
    else
      status=1
    fi
  done
done
if ! "$VENV/bin/python" scripts/test-hostile-modules.py "$MESA" "$OUT/hostile"; then
  status=1
fi
exit $status
