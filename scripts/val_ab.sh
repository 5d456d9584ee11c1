#!/usr/bin/env bash
# A/B of two `mesa` binaries on the val split only: for each utility, token
# price and split seed, runs the offline optimizer with each binary and
# prints the best val objective's difference (B minus A), per seed and its
# mean. It reads no test figure, so a development choice made from it is
# not shaped by the test split.
#
# Usage: scripts/val_ab.sh MESA_A MESA_B SWEEP_DIR [WORK] [-- B_FLAGS...]
#   SWEEP_DIR holds sweep-evidence-recall.jsonl and sweep-answer-coverage.jsonl
#   (scripts/results.sh writes them into target/results).
#   B_FLAGS are extra `mesa optimize` flags for B only, so one binary can be
#   A/B-tested against itself with an option (e.g. `-- --trade-price 0.01,0.05`).
set -euo pipefail
A=$1
B=$2
SWEEPS=$3
WORK=target/val-ab
shift 3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then WORK=$1; shift; fi
if [ $# -gt 0 ]; then shift; fi
B_FLAGS="$*"
mkdir -p "$WORK"
for u in evidence-recall answer-coverage; do
  for l in 1e-6 2e-6 3e-6; do
    for s in 0 1 2 3 4; do
      echo "$A $u $l $s A"
      echo "$B $u $l $s B $B_FLAGS"
    done
  done
done | xargs -P 2 -L 1 bash -c 'rm -rf "$1/$3-$4-$5-$6"; "$2" optimize --sweep "$0/sweep-$3.jsonl" --proposer offline --iterations 30 --lambda "$4" --seed "$5" --choose best-val --no-qtype --out "$1/$3-$4-$5-$6" --quiet "${@:7}" >/dev/null' "$SWEEPS" "$WORK"
python3 - "$WORK" <<'EOF'
import json, statistics, sys
work = sys.argv[1]
def val(u, l, s, side):
    with open(f"{work}/{u}-{l}-{s}-{side}/report.json") as f:
        return json.load(f)["best"]["val"]["objective"]
print("| utility | lambda | B - A, per seed | mean |")
print("| --- | --- | --- | --- |")
for u in ("evidence-recall", "answer-coverage"):
    for l in ("1e-6", "2e-6", "3e-6"):
        d = [val(u, l, s, "B") - val(u, l, s, "A") for s in range(5)]
        print(f"| {u} | {l} | {' '.join(f'{x:+.4f}' for x in d)} | {statistics.mean(d):+.4f} |")
EOF
