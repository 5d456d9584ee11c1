#!/usr/bin/env python3
"""Writes the part of a sweep file with (--only) or without (--without) one
domain's questions, with the header's counts made to match.

Usage: scripts/sweep_domain.py SWEEP DOMAIN --only|--without OUT
"""
import json
import sys


def read(src):
    """A sweep file's header and records."""
    with open(src) as f:
        header = json.loads(f.readline())
        return header, [json.loads(line) for line in f if line.strip()]


def write(out, header, records):
    """Writes `records` as a sweep under `header`, its counts made to match."""
    header = dict(header, questions=len(records), labelled=sum(1 for r in records if r["labelled"]))
    with open(out, "w") as f:
        f.write(json.dumps(header) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("--only", "--without"):
        sys.exit(__doc__)
    src, domain, mode, out = sys.argv[1:]
    header, records = read(src)
    keep = [r for r in records if (r["domain"] == domain) == (mode == "--only")]
    if not keep:
        sys.exit(f"no questions left in {src} {mode} domain {domain}")
    write(out, header, keep)


if __name__ == "__main__":
    main()
