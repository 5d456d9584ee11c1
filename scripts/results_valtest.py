#!/usr/bin/env python3
"""Prints, for docs/RESULTS.md, how val objectives relate to test objectives
across each run's archive (`val_test` in WORK/run-UTILITY-SEED-LAMBDA/
report.json), mean ± sd over the seeds 0-4.

Usage: scripts/results_valtest.py WORK LAMBDA... -- UTILITY...
"""
import json
import statistics
import sys


def ms(xs, digits=3):
    # A correlation is null (NaN) when a run has fewer than two candidates
    # or constant objectives: left out.
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    s = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.{digits}f} ± {s:.{digits}f}"


def main():
    args = sys.argv[1:]
    work = args[0]
    cut = args.index("--")
    lambdas, utilities = args[1:cut], args[cut + 1:]
    print("| utility | lambda | candidates | Pearson r | Spearman rho | test rank of the best val candidate |")
    print("| --- | --- | --- | --- | --- | --- |")
    for u in utilities:
        for l in lambdas:
            vts = []
            for s in range(5):
                with open(f"{work}/run-{u}-{s}-{l}/report.json") as f:
                    v = json.load(f).get("val_test")
                if v:
                    vts.append(v)
            if not vts:
                continue
            print(f"| {u} | {l} | {ms([v['n'] for v in vts], 0)} | {ms([v['pearson'] for v in vts])} | "
                  f"{ms([v['spearman'] for v in vts])} | {ms([v['best_val_test_rank'] for v in vts], 1)} |")


if __name__ == "__main__":
    main()
