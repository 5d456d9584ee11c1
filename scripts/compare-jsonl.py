#!/usr/bin/env python3
"""Compare JSONL result files line by line (as parsed JSON, not text).

Usage: compare-jsonl.py REFERENCE OTHER [OTHER ...]
Exits 1 and prints the first differing line of each file that differs.
"""
import json
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


reference = load(sys.argv[1])
failed = False
for other_path in sys.argv[2:]:
    other = load(other_path)
    if len(other) != len(reference):
        print(f"{other_path}: {len(other)} lines, {sys.argv[1]}: {len(reference)}")
        failed = True
        continue
    for n, (a, b) in enumerate(zip(reference, other), 1):
        if a != b:
            print(f"{other_path}:{n}: {b}\n{sys.argv[1]}:{n}: {a}")
            failed = True
            break
sys.exit(1 if failed else 0)
