#!/usr/bin/env python3
"""What an FTS5 word index costs an insert: the first 1,500 AMA-Bench steps,
each appended in its own transaction (WAL, synchronous=FULL) to a steps table
alone and beside contentless FTS5 tables of each variant; p50 and p99 per
insert. docs/BENCHMARKS.md, "Candidates from the word index".

Needs an SQLite with `contentless_delete` (3.43 or later); Python's own may be
older, so it takes pysqlite3-binary when installed:

    python3 -m venv target/fts-venv && target/fts-venv/bin/pip install pysqlite3-binary
    target/fts-venv/bin/python scripts/fts_insert_trial.py ../shared/data/ama-bench/open_end_qa_set.jsonl
"""
import json
import os
import sys
import tempfile
import time

try:
    import pysqlite3 as sqlite3
except ImportError:
    import sqlite3

STEPS = 1500

VARIANTS = [
    ("no index", None, None),
    ("fts5", "create virtual table w using fts5(text, content='', tokenize='porter unicode61')", None),
    ("contentless_delete", "create virtual table w using fts5(text, content='', contentless_delete=1, tokenize='porter unicode61')", None),
    ("contentless_delete + secure-delete", "create virtual table w using fts5(text, content='', contentless_delete=1, tokenize='porter unicode61')", "insert into w(w, rank) values('secure-delete', 1)"),
    ("contentless_delete, detail=none", "create virtual table w using fts5(text, content='', contentless_delete=1, detail=none, tokenize='porter unicode61')", None),
    ("contentless_delete, detail=column", "create virtual table w using fts5(text, content='', contentless_delete=1, detail=column, tokenize='porter unicode61')", None),
]


def steps_of(path):
    steps = []
    with open(path) as f:
        for line in f:
            for s in json.loads(line).get("trajectory", []):
                steps.append((str(s.get("action", "")), str(s.get("observation", ""))))
                if len(steps) == STEPS:
                    return steps
    return steps


def run(dir, name, ddl, option, steps):
    path = os.path.join(dir, f"{len(os.listdir(dir))}.db")
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("pragma journal_mode=wal")
    c.execute("pragma synchronous=full")
    c.execute("create table steps(ep text, idx int, a text, o text, primary key(ep, idx)) without rowid")
    if ddl:
        c.execute(ddl)
    if option:
        c.execute(option)
    took = []
    for i, (a, o) in enumerate(steps):
        start = time.perf_counter()
        c.execute("begin")
        c.execute("insert into steps values(?,?,?,?)", ("e", i, a, o))
        if ddl:
            c.execute("insert into w(rowid, text) values(?,?)", (i + 1, a + "\n" + o))
        c.execute("commit")
        took.append(time.perf_counter() - start)
    took.sort()
    p50, p99 = took[len(took) // 2] * 1e3, took[int(len(took) * 0.99)] * 1e3
    print(f"| {name} | {p50:.3f} ms | {p99:.3f} ms |")


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ama-bench/open_end_qa_set.jsonl"
    steps = steps_of(path)
    print(f"SQLite {sqlite3.sqlite_version}; {len(steps)} steps, {sum(len(a) + len(o) for a, o in steps) / len(steps):.0f} bytes each on average")
    print("\n| index | p50 | p99 |\n| --- | --- | --- |")
    with tempfile.TemporaryDirectory() as dir:
        for name, ddl, option in VARIANTS:
            run(dir, name, ddl, option, steps)


if __name__ == "__main__":
    main()
