#!/usr/bin/env bash
# The Python package's tests: builds the wheel from this checkout with
# maturin, installs it into a fresh virtual environment (maturin and pytest
# come from the package index), and runs python/tests there, including the
# worked example (examples/agent_loop.py) and the comparison with the `mesa`
# command's JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/python-venv
wheels=target/python-wheels
rm -rf "$venv" "$wheels"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.9,<2" "pytest>=7"
# A dev-profile wheel shares the dependencies `cargo test` already built.
"$venv/bin/maturin" build --quiet --locked --profile dev -m python/Cargo.toml -o "$wheels"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$wheels"/mesa_memory-*.whl
mesa_bin=$(bash scripts/mesa-bin.sh)
# Run from outside the source tree, so `import mesa_memory` is the wheel.
cd python/tests
MESA_BIN="$mesa_bin" "$OLDPWD/$venv/bin/python" -m pytest -q -p no:cacheprovider .
