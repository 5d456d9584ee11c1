#!/usr/bin/env python3
"""Where an opening from a persisted state spends its time: reads
`perf script` output of `live_bench` (docs/BENCHMARKS.md, "Live memory")
and counts, per part, the samples of the openings (a fresh reader's
`Tenant::memory` that reopens a state, not the rebuilds or the writer's
persisting) on the calling thread and on the decoding threads.

Usage:
  MESA_BENCH_LENGTHS=15000 perf record -F 2000 --call-graph dwarf,32768 -o perf.data \\
      target/release/examples/live_bench DATA
  perf script -i perf.data > perf.txt
  scripts/opening_profile.py perf.txt OPENINGS FREQ

OPENINGS is how many openings from a state the run made (live_bench: 11
per length), FREQ the sampling rate (2000).
"""
import re
import sys


def samples(path):
    cur = None
    for line in open(path, errors="replace"):
        if not line.strip():
            if cur:
                yield cur
            cur = None
            continue
        if cur is None:
            cur = {"comm": line.split()[0], "frames": []}
        else:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                f = re.sub(r"\+0x[0-9a-f]+", "", parts[1])
                cur["frames"].append(re.sub(r" \(.*\)$", "", f))
    if cur:
        yield cur


def has(s, pat):
    return any(pat in f for f in s["frames"])


def main():
    path, openings, freq = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    ms = 1000.0 / freq / openings
    caller = []
    decoding = []
    for s in samples(path):
        if s["comm"].startswith("mesa-state"):
            decoding.append(s)
        elif has(s, "Tenant::memory") and not (
            has(s, "from_parts")
            or has(s, "persist")
            or has(s, "EpisodeMemory::build")
            # An opening without a state (live_bench's first reader).
            or has(s, "Tenant>::rebuild")
        ):
            caller.append(s)
    print("| thread | part | ms per opening |")
    print("| --- | --- | --- |")
    print(f"| calling | all | {len(caller) * ms:.1f} |")
    for pat, name in [
        ("db::steps", "read the step rows"),
        ("has_step", "check the state's last step"),
        ("StateBlob::next", "read the state's G and rest sections"),
        ("sqlite3_blob_read", "copy the state's bytes out of SQLite (all sections)"),
        ("StateBlob::rest", "read the state's text section"),
        ("render_parts", "render the steps"),
    ]:
        print(f"| calling | {name} | {sum(has(s, pat) for s in caller) * ms:.1f} |")
    print(f"| decoding | all | {len(decoding) * ms:.1f} |")
    for pat, name in [
        ("decode<mesa_memory::structures::graph", "G"),
        ("decode<mesa_memory::structures::raw", "R"),
        ("decode<mesa_memory::structures::temporal", "T"),
        ("decode<mesa_memory::structures::summary", "S"),
        ("summary::Candidates", "S's per-step candidates (within S)"),
        ("u32s_from_le", "little-endian words of G's and other arrays"),
        ("f32s_from_le", "V's rows"),
        ("Codes::from_bytes", "V's codes"),
        ("StoredSteps::open", "the steps' renderings"),
    ]:
        print(f"| decoding | {name} | {sum(has(s, pat) for s in decoding) * ms:.1f} |")


if __name__ == "__main__":
    main()
