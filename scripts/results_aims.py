#!/usr/bin/env python3
"""Prints, for docs/RESULTS.md, issue 16's aims per utility, computed from the
JSON that `mesa frontier` wrote (WORK/frontier-UTILITY.json and
WORK/choice-UTILITY.json): the learned policies together against the best
fixed subset and the oracle, per seed and as mean ± sd.

Usage: scripts/results_aims.py WORK UTILITY...
"""
import json
import statistics
import sys


def ms(xs, scale=100.0):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.mean(xs) * scale
    s = statistics.stdev(xs) * scale if len(xs) > 1 else 0.0
    return f"{m:.1f}% ± {s:.1f}"


def header(*cols):
    print("| " + " | ".join(cols) + " |")
    print("| " + " | ".join("---" for _ in cols) + " |")


def main():
    work, utilities = sys.argv[1], sys.argv[2:]
    print("Per utility, over the five seeds (shares of all five's J and tokens on test). \"outside\" counts")
    print("the seeds whose 95% paired bootstrap interval of the difference excludes 0 in the policies'")
    print("favour. The gap closed is (fixed - learned) / (fixed - oracle) in tokens for 99% of J.")
    print()
    header("utility", "tokens for 99% of J: fixed / learned / oracle", "learned fewer, outside",
           "aim <= 40%", "gap closed (aim >= 1/3)", "J at 50% of tokens: fixed / learned",
           "learned higher, outside", "chosen on val for 99%: test J, tokens")
    for u in utilities:
        seeds = json.load(open(f"{work}/frontier-{u}.json"))["seeds"]
        fixed = [s["fixed_headline"]["tokens_for_keep"] for s in seeds]
        learned = [s["policies_headline"]["tokens_for_keep"] for s in seeds]
        oracle = [s["oracle_headline"]["tokens_for_keep"] for s in seeds]
        fixed_half = [s["fixed_headline"]["j_at_half"] for s in seeds]
        learned_half = [s["policies_headline"]["j_at_half"] for s in seeds]
        keep_out = sum(1 for s in seeds if (s["against_fixed"] or {}).get("tokens_for_keep") and s["against_fixed"]["tokens_for_keep"]["hi"] < 0)
        half_out = sum(1 for s in seeds if (s["against_fixed"] or {}).get("j_at_half") and s["against_fixed"]["j_at_half"]["lo"] > 0)
        gaps = [(f - l) / (f - o) for f, l, o in zip(fixed, learned, oracle)
                if None not in (f, l, o) and f > o]
        defined = [x for x in learned if x is not None]
        forty = "met" if defined and len(defined) == len(seeds) and statistics.mean(defined) <= 0.40 else "**not met**"
        third = "met" if gaps and len(gaps) == len(seeds) and statistics.mean(gaps) >= 1 / 3 else "**not met**"
        chosen = [s["chosen_on_val"]["keep"] for s in seeds]
        cj = ms([c["j"] if c else None for c in chosen])
        cc = ms([c["c"] if c else None for c in chosen])
        n = len(seeds)
        print(f"| {u} | {ms(fixed)} / {ms(learned)} ({len(defined)} of {n}) / {ms(oracle)} | {keep_out} of {n} | {forty} | "
              f"{ms(gaps)} {third} | {ms(fixed_half)} / {ms(learned_half)} | {half_out} of {n} | {cj}, {cc} |")
    print()
    print("The choice rule (lambda 1e-6): tokens for 99% of J, best val objective against one standard error:")
    print()
    header("utility", "best val", "one standard error")
    for u in utilities:
        seeds = json.load(open(f"{work}/choice-{u}.json"))["seeds"]
        best = [s["policy_headlines"][0]["tokens_for_keep"] for s in seeds]
        one = [s["policy_headlines"][1]["tokens_for_keep"] for s in seeds]
        d = lambda xs: f"{ms(xs)} ({sum(x is not None for x in xs)} of {len(xs)} seeds reach 99%)"
        print(f"| {u} | {d(best)} | {d(one)} |")


if __name__ == "__main__":
    main()
