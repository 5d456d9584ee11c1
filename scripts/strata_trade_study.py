#!/usr/bin/env python3
"""Strata and trades together, a study on train and val only (test is not
read). The stratified policies (`mesa stratify`) give each stratum of
questions one fixed subset, and choose between that and a policy that reads
all five and trades (`trade words|steps at P`) for all questions. Two ways
to combine them, each compared with the same study's plain strata:

- "strata": the questions split by domain and by whether T shows every step
  the question names, some, or the question names none (`preview.T.named`);
  each stratum reads the fixed subset with the best J minus lambda times
  tokens on its train questions, its sums shrunk toward the pooled train
  questions' by 10 pseudo-questions of their mean (as `mesa stratify
  --prior 10`). The plain strata of this study: one key set, no bound.
- "trade per stratum": each stratum chooses among the 31 fixed subsets and
  40 trades over all five (`words` and `steps`, P from 0.05 to 1 in steps of
  0.05): a trade price per stratum, which the language cannot say today (a
  policy has one `trade` line).
- "strata, then trade": each stratum chooses a mask, and one trade at a
  price P common to all strata then picks the mask's subset worth its
  tokens; P among 0.1, 0.2, 0.3 and 0.5, in `words` or `steps`. The
  language can say this: the strata's rules, then `trade UNIT at P`.
- "trade alone": all five and one trade (`words` or `steps`, P from 0.05
  to 1), the candidate `mesa stratify` already weighs against its strata.

Lambda (15 prices from 0 to 5e-5), and P where the variant has one, are
chosen by 5-fold cross-validation over train's episodes: the fewest
out-of-fold tokens keeping 99% of all five's J. The fit on all of train
with that choice is then scored on val unchanged. "in hindsight" fits on
val itself (no prior) at each lambda and P and takes the fewest tokens
keeping 99% of J on val: what the variant could reach with a perfect fit.

The sweeps are `mesa sweep STORE DATA --utility U` over AMA-Bench, as
scripts/price_study.sh writes them to target/price-study.

Usage: scripts/strata_trade_study.py SWEEP... > docs/STRATA_TRADE_STUDY.md
"""
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oracle_study import FEATURES, splits  # noqa: E402

PRICES = [i / 20 for i in range(1, 21)]
THEN_PRICES = (0.1, 0.2, 0.3, 0.5)
UNITS = ("words", "steps")
LAMBDAS = [x * 1e-6 for x in (0, 0.1, 0.25, 0.5, 0.7, 1, 1.5, 2, 3, 5, 8, 12, 20, 30, 50)]
NAMED = FEATURES.index("named")
PRIOR = 10
FOLDS = 5
SEEDS = range(5)


def trade(r, unit, price, mask=31):
    """The subset (0-based) of `mask` that `trade UNIT at P` picks
    (docs/LANGUAGE.md, "Trade")."""
    shown, tokens = r[unit], r["tokens"]
    if shown[30] == 0 or tokens[30] == 0:
        return mask - 1
    best = None
    for m in range(1, 32):
        if m & ~mask:
            continue
        v = shown[m - 1] / shown[30] - price * tokens[m - 1] / tokens[30]
        if best is None or v > best[0] or (v == best[0] and tokens[m - 1] < best[1]):
            best = (v, tokens[m - 1], m)
    return best[2] - 1


def stratum(r):
    named = r["previews"]["T"][NAMED]
    return r["domain"], "none" if named < 0 else "all" if named >= 1 else "some"


def one(r):
    return 0


def fit(recs, key, acts, lam, prior):
    """Per stratum, the action (an index into each record's `acts`) with the
    best shrunk objective; and the pooled best for an unseen stratum."""
    n = len(recs)
    pooled = [sum(r["utility"][r["acts"][a]] - lam * r["tokens"][r["acts"][a]] for r in recs) / n for a in acts]
    groups = {}
    for r in recs:
        groups.setdefault(key(r), []).append(r)
    choice = {}
    for k, rs in groups.items():
        choice[k] = max(
            range(len(acts)),
            key=lambda i: sum(r["utility"][r["acts"][acts[i]]] - lam * r["tokens"][r["acts"][acts[i]]] for r in rs)
            + prior * pooled[i],
        )
    default = max(range(len(acts)), key=lambda i: pooled[i])
    return {k: acts[i] for k, i in choice.items()}, acts[default]


def sums(recs, key, fitted):
    choice, default = fitted
    j = c = 0.0
    for r in recs:
        s = r["acts"][choice.get(key(r), default)]
        j += r["utility"][s]
        c += r["tokens"][s]
    return j, c


def total(recs):
    return sum(r["utility"][30] for r in recs), sum(r["tokens"][30] for r in recs)


def cross_validated(train, key, acts):
    """The lambda whose out-of-fold choices keep 99% of J with the fewest
    tokens, and those tokens as a share; None when none keeps it."""
    episodes = sorted({r["episode"] for r in train})
    random.Random(0).shuffle(episodes)
    fold = {e: i % FOLDS for i, e in enumerate(episodes)}
    j5, c5 = total(train)
    best = None
    for lam in LAMBDAS:
        j = c = 0.0
        for f in range(FOLDS):
            inside = [r for r in train if fold[r["episode"]] != f]
            out = [r for r in train if fold[r["episode"]] == f]
            dj, dc = sums(out, key, fit(inside, key, acts, lam, PRIOR))
            j, c = j + dj, c + dc
        if j >= 0.99 * j5 and (best is None or c / c5 < best[0]):
            best = (c / c5, lam)
    return best


def hindsight(val, key, acts):
    j5, c5 = total(val)
    best = None
    for lam in LAMBDAS:
        j, c = sums(val, key, fit(val, key, acts, lam, 0))
        if j >= 0.99 * j5 and (best is None or c / c5 < best):
            best = c / c5
    return best


def with_acts(recs, make):
    for r in recs:
        r["acts"] = make(r)


def variants(recs):
    """Each variant: its name, its key, and per setting (a price, or none)
    how to make each record's actions and which of them a stratum may take."""
    fixed = list(range(31))
    yield "strata", stratum, [(None, lambda r: list(range(31)), fixed)]
    per = lambda r: list(range(31)) + [trade(r, u, p) for u in ("words", "steps") for p in PRICES]  # noqa: E731
    yield "trade per stratum", stratum, [(None, per, list(range(31 + 2 * len(PRICES))))]
    yield "strata, then trade", stratum, [
        (f"{u} at {p:g}", (lambda u, p: lambda r: [trade(r, u, p, m) for m in range(1, 32)])(u, p), fixed)
        for u in UNITS
        for p in THEN_PRICES
    ]
    yield "trade alone", one, [
        (f"{u} at {p:g}", (lambda u, p: lambda r: [trade(r, u, p)] * 31)(u, p), [30]) for u in UNITS for p in PRICES
    ]


def study(recs, rows):
    table = {}
    for name, key, settings in variants(recs):
        for seed in SEEDS:
            sp = splits([r["episode"] for r in rows], seed)
            train = [r for r in recs if sp[r["episode"]] == "train"]
            val = [r for r in recs if sp[r["episode"]] == "val"]
            chosen, ceiling = None, None
            for price, make, acts in settings:
                with_acts(recs, make)
                cv = cross_validated(train, key, acts)
                if cv and (chosen is None or cv[0] < chosen[0]):
                    j, c = sums(val, key, fit(train, key, acts, cv[1], PRIOR))
                    j5, c5 = total(val)
                    chosen = (cv[0], price, j / j5, c / c5)
                h = hindsight(val, key, acts)
                if h is not None and (ceiling is None or h < ceiling):
                    ceiling = h
            table.setdefault(name, []).append((chosen, ceiling))
    return table


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def report(path):
    with open(path) as f:
        header = json.loads(f.readline())
        rows = [json.loads(line) for line in f if line.strip()]
    recs = [r for r in rows if r["labelled"]]
    print(f"## {header['utility']}")
    print()
    print("Per seed: the cross-validated choice scored on val (J, tokens as shares of all five's on val;")
    print("the chosen price in brackets), and the fewest tokens in hindsight on val.")
    print()
    print("| variant | seed 0 | seed 1 | seed 2 | seed 3 | seed 4 | keeps 99% on val | tokens on val, mean | in hindsight, mean |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, per_seed in study(recs, rows).items():
        cells, keeps, tokens = [], 0, []
        for chosen, _ in per_seed:
            if chosen is None:
                cells.append("none keeps 99% out of fold")
                continue
            _, price, j, c = chosen
            keeps += j >= 0.99
            tokens.append(c)
            at = "" if price is None else f" [{price}]"
            cells.append(f"{pct(j)}, {pct(c)}{at}")
        ceil = mean([h for _, h in per_seed])
        print(f"| {name} | " + " | ".join(cells) + f" | {keeps} of 5 | {pct(mean(tokens))} | {pct(ceil)} |")
    print()


def main():
    print("# Strata and trades together (val only)")
    print()
    print(__doc__.split("Usage:")[0].strip())
    print()
    print("Not adopted. A trade price per stratum, which the language cannot say today, keeps 99% of")
    print("J on val on fewer seeds than the plain strata for evidence recall, and for answer coverage")
    print("spends about what one trade for all questions does; neither is worth a new form of the")
    print("language. The strata followed by one trade are `mesa stratify --trade-after`, studied with")
    print("the prior and the bound as \"tradeafter\" in docs/RESULTS.md, \"The variants\", and not")
    print("adopted there either. This study's plain strata have no bound and one key set, so compare")
    print("its rows with each other, not with RESULTS.md's.")
    print()
    print("`scripts/strata_trade_study.py " + " ".join(sys.argv[1:]) + " > docs/STRATA_TRADE_STUDY.md`")
    print()
    for path in sys.argv[1:]:
        report(path)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
