"""What a call costs through Python, against the same call in Rust
(`cargo run --release -p mesa-query --example call_cost`), on the same
workload: AMA-Bench's steps in file order, 1,000 of them appended as one
batch, then 200 single appends and 400 questions (all five structures) on
the grown episode, and 2,000 questions on a one-step episode (fixed costs).

    python python/bench/call_cost.py ../shared/data/ama-bench/open_end_qa_set.jsonl
"""

import json
import sys
import tempfile
import time

import mesa_memory as mesa


def workload(path):
    steps, questions = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            steps += [(t["action"], t["observation"]) for t in r["trajectory"]]
            questions += [q["question"] for q in r["qa_pairs"]]
    return steps, questions


def p50(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main(path):
    steps, questions = workload(path)
    with tempfile.TemporaryDirectory() as tmp, mesa.Memory(tmp + "/m", "bench") as m:
        m.create_episode("long", task="AMA-Bench steps", domain="MIXED")
        m.append_many("long", [{"action": a, "observation": o} for a, o in steps[:1000]])
        appends = []
        for a, o in steps[1000:1200]:
            t0 = time.perf_counter()
            m.append("long", a, o)
            appends.append(time.perf_counter() - t0)
        m.query("long", questions[0], structures="all")
        queries, inner = [], []
        for q in questions[:400]:
            t0 = time.perf_counter()
            a = m.query("long", q, structures="all")
            queries.append(time.perf_counter() - t0)
            inner.append(queries[-1] - a.micros["total"] / 1e6)
        m.create_episode("tiny", task="one step", domain="MIXED")
        m.append("tiny", steps[0][0], steps[0][1])
        m.query("tiny", questions[0], structures="S")
        tiny = []
        for q in (questions * 10)[:2000]:
            t0 = time.perf_counter()
            m.query("tiny", q, structures="S")
            tiny.append(time.perf_counter() - t0)
    us = 1e6
    print(f"python: append p50 {p50(appends) * us:.1f} us; query (all five, 1,200 steps) p50 "
          f"{p50(queries) * us:.1f} us (outside the answer's stages: {p50(inner) * us:.1f} us); "
          f"query (S, one step) p50 {p50(tiny) * us:.1f} us")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/ama-bench/open_end_qa_set.jsonl")
