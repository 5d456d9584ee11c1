#!/usr/bin/env python3
"""Measures docs/RESULTS.md: on AMA-Bench, both offline utilities, five split
seeds, the test split, with and without the question type, the learned policy
against all five structures, the best fixed subset and the oracle.

Usage: python3 scripts/results.py [--mesa target/release/mesa] [--data PATH]
       [--work target/results] [--seeds 5] [--iterations 30] [--out docs/RESULTS.md]

Every number in the output comes from the report.json files of `mesa optimize`
runs this script starts; nothing is typed in.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

UTILITIES = ["evidence-recall", "answer-coverage"]


def run(cmd):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True)


def mean_std(xs):
    if len(xs) == 1:
        return xs[0], 0.0
    return statistics.mean(xs), statistics.stdev(xs)


def fmt(xs, digits=4):
    m, s = mean_std(xs)
    return f"{m:.{digits}f} ± {s:.{digits}f}"


def fmt_tokens(xs):
    m, s = mean_std(xs)
    return f"{m:,.0f} ± {s:,.0f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mesa", default="target/release/mesa")
    ap.add_argument("--data", default="../shared/data/ama-bench/open_end_qa_set.jsonl")
    ap.add_argument("--work", default="target/results")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--out", default="docs/RESULTS.md")
    a = ap.parse_args()

    os.makedirs(a.work, exist_ok=True)
    store = os.path.join(a.work, "store")
    started = time.time()
    run([a.mesa, "build", a.data, "-o", store, "--quiet"])
    rows = {}
    sweeps = {}
    for utility in UTILITIES:
        sweep = os.path.join(a.work, f"sweep-{utility}.jsonl")
        run([a.mesa, "sweep", store, a.data, "--utility", utility, "-o", sweep, "--quiet"])
        with open(sweep) as f:
            sweeps[utility] = json.loads(f.readline())
        for qtype in [True, False]:
            reports = []
            for seed in range(a.seeds):
                out = os.path.join(a.work, f"run-{utility}-{'qtype' if qtype else 'noqtype'}-{seed}")
                cmd = [a.mesa, "optimize", "--sweep", sweep, "--proposer", "offline",
                       "--iterations", str(a.iterations), "--seed", str(seed), "--out", out, "--quiet"]
                if not qtype:
                    cmd.append("--no-qtype")
                if os.path.exists(out):
                    subprocess.run(["rm", "-rf", out], check=True)
                run(cmd)
                with open(os.path.join(out, "report.json")) as f:
                    reports.append(json.load(f))
            rows[(utility, qtype)] = reports
    elapsed = time.time() - started

    lines = []
    lines.append("# Results on AMA-Bench")
    lines.append("")
    lines.append("Written by `python3 scripts/results.py` (it builds the store, sweeps both offline utilities, and")
    lines.append(f"runs `mesa optimize --proposer offline --iterations {a.iterations}` for split seeds 0-{a.seeds - 1}, with and")
    lines.append("without the question type); every figure below is read from the runs' `report.json`.")
    lines.append(f"Generated {time.strftime('%Y-%m-%d')} in {elapsed:.0f} s on the 2-core machine.")
    lines.append("")
    lines.append("Setting: the 2,496 AMA-Bench questions, evidence from the offline builders and the built-in")
    lines.append("embedder; episode-level 2:2:6 train/val/test splits; each run's best policy by val objective")
    lines.append("J - λC (λ = 1e-6) is frozen and scored once on test; mean ± std over the seeds. Only labelled")
    lines.append("questions count (see each utility). \"all five\" reads every structure, \"best fixed\" is the")
    lines.append("subset with the best val objective, \"oracle\" picks the best subset per question (an upper bound).")
    lines.append("")
    for utility in UTILITIES:
        h = sweeps[utility]
        lines.append(f"## {utility}")
        lines.append("")
        lines.append(f"{h['labelled']} of {h['questions']} questions labelled.")
        lines.append("")
        for qtype in [True, False]:
            reports = rows[(utility, qtype)]
            seen = ", ".join(reports[0]["inputs"]) if isinstance(reports[0]["inputs"], list) else \
                ", ".join(k for k, v in reports[0]["inputs"].items() if v)
            lines.append(f"### {'with' if qtype else 'without'} the question type (policies saw: {seen})")
            lines.append("")
            lines.append("| chooser | utility J | tokens C | structures | objective J - λC |")
            lines.append("| --- | --- | --- | --- | --- |")

            def base(r, name):
                for b in r["baselines_test"]:
                    if b["name"].startswith(name):
                        return b["metrics"]
                raise KeyError(name)

            series = {
                "learned policy": [r["best"]["test"] for r in reports],
                "all five": [base(r, "all five") for r in reports],
                "best fixed subset (val)": [base(r, "best fixed") for r in reports],
                "oracle": [base(r, "oracle") for r in reports],
            }
            for name, ms in series.items():
                lines.append(
                    f"| {name} | {fmt([m['j'] for m in ms])} | {fmt_tokens([m['c'] for m in ms])} | "
                    f"{fmt([m['structures'] for m in ms], 2)} | {fmt([m['objective'] for m in ms])} |"
                )
            lines.append("")
            learned, five = series["learned policy"], series["all five"]
            fixed, oracle = series["best fixed subset (val)"], series["oracle"]
            keep = [l["j"] / f["j"] for l, f in zip(learned, five)]
            tok = [l["c"] / f["c"] for l, f in zip(learned, five)]
            beat = [l["objective"] - b["objective"] for l, b in zip(learned, fixed)]
            gap = [
                (l["objective"] - b["objective"]) / (o["objective"] - b["objective"])
                if o["objective"] > b["objective"] else float("nan")
                for l, b, o in zip(learned, fixed, oracle)
            ]
            ok = lambda c: "met" if c else "**not met**"
            lines.append("| aim | measured | |")
            lines.append("| --- | --- | --- |")
            lines.append(f"| keep ≥ 99% of all five's utility | {fmt(keep)} | {ok(statistics.mean(keep) >= 0.99)} |")
            lines.append(f"| with ≤ 50% of its tokens | {fmt(tok)} | {ok(statistics.mean(tok) <= 0.5)} |")
            lines.append(f"| beat the best fixed subset on J - λC (difference) | {fmt(beat)} | {ok(statistics.mean(beat) > 0)} |")
            lines.append(f"| close ≥ half the gap from best fixed to oracle | {fmt(gap)} | {ok(statistics.mean(gap) >= 0.5)} |")
            lines.append("")
    lines.append("## Reproduce")
    lines.append("")
    lines.append("```")
    lines.append("cargo build --release -p mesa")
    lines.append(f"python3 scripts/results.py --seeds {a.seeds} --iterations {a.iterations}")
    lines.append("```")
    lines.append("")
    with open(a.out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
