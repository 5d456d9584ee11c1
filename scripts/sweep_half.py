#!/usr/bin/env python3
"""Writes the records of one half of a seed's val split (the optimizer's
`search` or `choice` half, optimizer/src/split.rs) as a sweep of their own,
with the header's counts made to match, so that `mesa frontier --split all`
scores a policy on that half alone.

Usage: scripts/sweep_half.py SWEEP SEED search|choice OUT
"""
import sys

from oracle_study import val_half
from sweep_domain import read, write


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("search", "choice"):
        sys.exit(__doc__)
    src, seed, half, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    header, records = read(src)
    keep = val_half([r["episode"] for r in records], seed, half)
    part = [r for r in records if r["episode"] in keep]
    if not part:
        sys.exit(f"no questions in val's {half} half of {src} for seed {seed}")
    write(out, header, part)


if __name__ == "__main__":
    main()
