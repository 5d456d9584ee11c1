#!/usr/bin/env python3
"""How far the key sets of `mesa stratify` can go: per seed, each key set's
strata fitted on the test questions themselves (in hindsight, as the best
fixed subset and the oracle are), one subset per stratum at the token price
that best meets each target, over a dense grid of prices. No policy is
chosen this way; it bounds what any fit of these strata can reach out of
sample.

The keys are those of optimizer/src/strata/fit.rs: the domain, and per
structure K whether the question names no step (`preview.K.named` < -0.5),
K shows every step it names (== 1) or only some (between). Shares are of
all five's J and tokens over the seed's labelled test questions.

With a frontier report of the same sweep on test (`mesa frontier ... --format
json`), it also prints what the aim of closing a third of the token gap
between the best fixed subset and the oracle at 99% of J asks for, per seed.

Usage: scripts/strata_ceiling.py SWEEP [--frontier REPORT.json]
"""
import json
import statistics
import sys

from oracle_study import FEATURES, LETTERS, splits
from results_aims import ms

KEY_SETS = [[], ["domain"], ["T"], ["domain", "T"], ["domain", "T", "G"], ["domain", "T", "S"]]
LAMBDAS = [10 ** (-8 + 4 * n / 400) for n in range(401)]
ALL = 30


def bucket(v):
    if v < -0.5:
        return "none"
    if v == 1.0:
        return "all"
    if -0.5 < v < 1.0:
        return "some"
    return None


def stratum(r, keys):
    out = []
    for k in keys:
        if k in ("domain", "question_id"):
            out.append(r[k])
        else:
            out.append(bucket(r["previews"][k][FEATURES.index("named")]))
    return tuple(out)


def ceiling(recs, keys, lambdas=LAMBDAS):
    """The fewest tokens keeping 99% of J, and the highest J within 50% of
    the tokens, over the price grid; shares of all five's. With the key
    `question_id` each question is a stratum: the oracle."""
    groups = {}
    for r in recs:
        s = stratum(r, keys)
        g = groups.setdefault(s, ([0.0] * 31, [0.0] * 31))
        for m in range(31):
            g[0][m] += r["utility"][m]
            g[1][m] += r["tokens"][m]
    j5 = sum(g[0][ALL] for g in groups.values())
    c5 = sum(g[1][ALL] for g in groups.values())
    keep, within = None, None
    for lam in lambdas:
        j = c = 0.0
        for u, t in groups.values():
            m = max(range(31), key=lambda m: (u[m] - lam * t[m], -t[m]))
            j += u[m]
            c += t[m]
        j, c = j / j5, c / c5
        if j >= 0.99 and (keep is None or c < keep):
            keep = c
        if c <= 0.5 and (within is None or j > within):
            within = j
    return keep, within, len(groups)


def main():
    sweep = sys.argv[1]
    frontier = None
    if len(sys.argv) > 3 and sys.argv[2] == "--frontier":
        with open(sys.argv[3]) as f:
            frontier = json.load(f)
    seeds = [s["seed"] for s in frontier["seeds"]] if frontier else [0, 1, 2, 3, 4]
    with open(sweep) as f:
        f.readline()
        records = [json.loads(line) for line in f if line.strip()]
    rows = {tuple(k): ([], [], []) for k in KEY_SETS}
    for seed in seeds:
        sp = splits([r["episode"] for r in records], seed)
        test = [r for r in records if r["labelled"] and sp[r["episode"]] == "test"]
        for keys in KEY_SETS:
            keep, within, n = ceiling(test, keys)
            row = rows[tuple(keys)]
            row[0].append(keep)
            row[1].append(within)
            row[2].append(n)

    print("| key set | strata | tokens for 99% of J | J with at most 50% of the tokens |")
    print("| --- | --- | --- | --- |")
    for keys in KEY_SETS:
        keep, within, n = rows[tuple(keys)]
        name = "+".join(k if k == "domain" else f"{k}.named" for k in keys) or "none (one fixed subset)"
        print(f"| {name} | {statistics.mean(n):.0f} | {ms(keep)} | {ms(within)} |")
    if frontier:
        aims = []
        for s in frontier["seeds"]:
            fixed = s["fixed_headline"]["tokens_for_keep"]
            oracle = s["oracle_headline"]["tokens_for_keep"]
            aims.append(fixed - (fixed - oracle) / 3)
        print()
        print(f"Closing a third of the gap to the oracle at 99% of J asks for at most {ms(aims)} of the tokens "
              f"(per seed: {', '.join(f'{100 * a:.1f}%' for a in aims)}).")


if __name__ == "__main__":
    main()
