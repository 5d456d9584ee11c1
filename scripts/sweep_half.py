#!/usr/bin/env python3
"""Writes the records of one half of a seed's val split (the optimizer's
`search` or `choice` half, optimizer/src/split.rs) as a sweep of their own,
with the header's counts made to match, so that `mesa frontier --split all`
scores a policy on that half alone.

Usage: scripts/sweep_half.py SWEEP SEED search|choice OUT
"""
import json
import sys

from oracle_study import val_half


def main():
    src, seed, half, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    if half not in ("search", "choice"):
        sys.exit("the half is `search` or `choice`")
    with open(src) as f:
        header = json.loads(f.readline())
        lines = [line for line in f if line.strip()]
    recs = [json.loads(line) for line in lines]
    keep = val_half([r["episode"] for r in recs], seed, half)
    kept = [(line, r) for line, r in zip(lines, recs) if r["episode"] in keep]
    header["questions"] = len(kept)
    header["labelled"] = sum(1 for _, r in kept if r["labelled"])
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        for line, _ in kept:
            f.write(line if line.endswith("\n") else line + "\n")


if __name__ == "__main__":
    main()
