#!/usr/bin/env python3
"""Selection by what a subset shows for its price, judged on val.

A sweep records, per question and per subset of the five structures, the
distinct content words and the distinct steps the subset's evidence shows
(`words`, `steps`: memory/src/coverage.rs). This study reads each question's
subset as the one with the highest

    count(M) / count(all five) - price * tokens(M) / tokens(all five)

(ties: fewer tokens), one price for every question: a subset is worth its
tokens when it shows enough that the others do not. Per seed the price is
chosen on train (from a grid of 0.01 to 1: the highest that keeps 99% of all
five's J on train, and the lowest that reads at most half of all five's
tokens on train, each by one standard error over the questions) and the policy is scored on val, which chose nothing. It is set
against the best fixed subset and the oracle on the same val questions, in
hindsight (over 401 token prices from 1e-8 to 1e-4), as in
scripts/strata_ceiling.py. Test is not read.

Usage: scripts/price_study.py SWEEP --count words|steps
"""
import json
import statistics
import sys

from oracle_study import splits
from results_aims import ms
from strata_ceiling import LAMBDAS, ALL, ceiling

PRICES = [round(0.01 * k, 2) for k in range(1, 101)]


def choose(r, count, price):
    c, t = r[count], r["tokens"]
    c5, t5 = c[ALL], t[ALL]
    if c5 == 0 or t5 == 0:
        return ALL
    return max(range(31), key=lambda m: (c[m] / c5 - price * t[m] / t5, -t[m]))


def totals(recs, count, price):
    """The policy's J and tokens, and all five's, summed over `recs`."""
    j = c = j5 = c5 = 0.0
    for r in recs:
        m = choose(r, count, price)
        j += r["utility"][m]
        c += r["tokens"][m]
        j5 += r["utility"][ALL]
        c5 += r["tokens"][ALL]
    return j, c, j5, c5


def score(recs, count, price):
    j, c, j5, c5 = totals(recs, count, price)
    return j / j5, c / c5


def holds(recs, count, price, target):
    """Whether the target holds on `recs` by one standard error: the sum
    over questions of `u(M) - 0.99 u(all)` (keep) or of `0.5 t(all) -
    t(M)` (within) less its standard error is at least 0."""
    xs = []
    for r in recs:
        m = choose(r, count, price)
        if target == "keep":
            xs.append(r["utility"][m] - 0.99 * r["utility"][ALL])
        else:
            xs.append(0.5 * r["tokens"][ALL] - r["tokens"][m])
    se = statistics.stdev(xs) * len(xs) ** 0.5 if len(xs) > 1 else 0.0
    return sum(xs) - se >= 0


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def main():
    if len(sys.argv) != 4 or sys.argv[2] != "--count" or sys.argv[3] not in ("words", "steps"):
        sys.exit("usage: scripts/price_study.py SWEEP --count words|steps")
    sweep, count = sys.argv[1], sys.argv[3]
    with open(sweep) as f:
        f.readline()
        records = [json.loads(line) for line in f if line.strip()]
    if any(count not in r for r in records):
        sys.exit(f"{sweep}: a record has no `{count}`; sweep again with this version of mesa")
    labelled = [r for r in records if r["labelled"]]
    print("| seed | keep: price | keep: J, tokens on val | fixed: tokens for 99% | oracle | "
          "within: price | within: J, tokens on val | fixed: J at 50% | oracle |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = []
    for seed in range(5):
        sp = splits([r["episode"] for r in records], seed)
        train = [r for r in labelled if sp[r["episode"]] == "train"]
        val = [r for r in labelled if sp[r["episode"]] == "val"]
        keeps = [p for p in PRICES if holds(train, count, p, "keep")]
        keep_price = max(keeps) if keeps else PRICES[0]
        halves = [p for p in PRICES if holds(train, count, p, "within")]
        within_price = min(halves) if halves else PRICES[-1]
        kj, kc = score(val, count, keep_price)
        wj, wc = score(val, count, within_price)
        fixed_keep, fixed_within, _ = ceiling(val, [])
        o_keep, o_within, _ = ceiling(val, ["question_id"], LAMBDAS[::4])
        rows.append((kj, kc, fixed_keep, o_keep, wj, wc, fixed_within, o_within))
        print(f"| {seed} | {keep_price} | {pct(kj)}, {pct(kc)} | {pct(fixed_keep)} | {pct(o_keep)} | "
              f"{within_price} | {pct(wj)}, {pct(wc)} | {pct(fixed_within)} | {pct(o_within)} |")
    col = list(zip(*rows))
    print(f"| mean ± sd | | {ms(col[0])}, {ms(col[1])} | {ms(col[2])} | {ms(col[3])} | "
          f"| {ms(col[4])}, {ms(col[5])} | {ms(col[6])} | {ms(col[7])} |")
    kept = sum(1 for r in rows if r[0] >= 0.99)
    fewer = sum(1 for r in rows if r[0] >= 0.99 and r[2] is not None and r[1] < r[2])
    closed = [(r[2] - r[1]) / (r[2] - r[3]) for r in rows
              if r[0] >= 0.99 and None not in (r[2], r[3]) and r[2] > r[3]]
    higher = sum(1 for r in rows if r[5] <= 0.5 and r[6] is not None and r[4] > r[6])
    over = sum(1 for r in rows if r[5] > 0.5)
    print()
    print(f"On val the price chosen on train keeps 99% of all five's J on {kept} of 5 seeds, with fewer "
          f"tokens than the best fixed subset (in hindsight) on {fewer}; where it keeps 99% it closes "
          f"{ms(closed)} of the token gap between the best fixed subset and the oracle. At the "
          f"half-tokens price it reads at most half the tokens and has a higher J than the best fixed "
          f"subset within half on {higher} of 5 seeds; it reads more than half of the tokens on "
          f"{over} of 5.")

    leave_one_domain_out(records, labelled, count)


def leave_one_domain_out(records, labelled, count):
    """Per domain and seed, the keep price chosen on the other domains'
    train questions, scored on the domain's val questions; summed over the
    five seeds."""
    domains = sorted({r["domain"] for r in labelled})
    print()
    print("Left out of the price's choice (the keep price chosen on the other domains' train "
          "questions, scored on the domain's val questions, summed over the five seeds):")
    print()
    print("| domain | val questions | J | tokens |")
    print("| --- | --- | --- | --- |")
    for d in domains:
        j = c = j5 = c5 = 0.0
        n = 0
        for seed in range(5):
            sp = splits([r["episode"] for r in records], seed)
            train = [r for r in labelled if sp[r["episode"]] == "train" and r["domain"] != d]
            val = [r for r in labelled if sp[r["episode"]] == "val" and r["domain"] == d]
            keeps = [p for p in PRICES if holds(train, count, p, "keep")]
            price = max(keeps) if keeps else PRICES[0]
            sums = totals(val, count, price)
            j, c, j5, c5 = (a + b for a, b in zip((j, c, j5, c5), sums))
            n += len(val)
        print(f"| {d} | {n} | {pct(j / j5 if j5 else None)} | {pct(c / c5 if c5 else None)} |")


if __name__ == "__main__":
    main()
