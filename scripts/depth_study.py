#!/usr/bin/env python3
"""What reading only R's first window would give a selector, judged on val.

R (the raw episodic windows) costs more than half of all five's tokens on
AMA-Bench, in three windows of which the first is the best scored. A policy
chooses whole structures today. This study measures, from a sweep's items
(`mesa sweep --items`), what a selector could gain if it could also choose
R's first window alone: 47 options per question (each subset of S, T, G, V
with no R, with R's first window, or with all of R) instead of 31.

Each question reads the option with the highest

    count(M) / count(all five) - price * tokens(M) / tokens(all five)

(the trade of docs/LANGUAGE.md, over 31 or 47 options; ties: fewer tokens),
one price for every question, chosen on train as scripts/price_study.py
chooses it (the highest price that keeps 99% of all five's J and the lowest
that reads at most half of its tokens, each by one standard error) and
scored on val. Against it: the best fixed option and the oracle over the
same options, fitted on the val questions in hindsight. Test is not read.

The items recompute the sweep's own 31 subsets exactly (the script checks
it on every question, as cli/tests/sweep_items.rs does on a small store), so
the 31-option figures are the sweep's.

Usage: scripts/depth_study.py SWEEP ITEMS --count words|steps
"""
import json
import statistics
import sys

from oracle_study import splits
from results_aims import ms

# An option: bits 0-3 for S, T, G, V, and R's depth: 0 none, 1 first window, 2 all.
OPTIONS = [(b, d) for d in range(3) for b in range(16) if b or d]
FULL = [(b & 15, 2 if b & 16 else 0) for b in range(1, 32)]
ALL = OPTIONS.index((15, 2))
PRICES = [round(0.01 * k, 2) for k in range(1, 101)]
LAMBDAS = [10 ** (-8 + 4 * n / 200) for n in range(201)]


def options_of(rec, items, count):
    """Per option: utility, tokens and the count, from the items."""
    sections = items["sections"]
    labels = items.get("labels")
    wanted = set(items.get("answer_words") or [])
    out = []
    for bits, depth in OPTIONS:
        tokens, non_empty, words, steps = 0, 0, set(), set()
        for i, sec in enumerate(sections):
            chosen = sec["items"] if (i < 4 and bits >> i & 1) else []
            if i == 4:
                chosen = sec["items"][: {0: 0, 1: 1, 2: len(sec["items"])}[depth]]
            if not chosen:
                continue
            non_empty += 1
            tokens += sec["header_tokens"] + sum(it["tokens"] + 1 for it in chosen)
            for it in chosen:
                words.update(it["words"])
                steps.update(it["steps"])
        tokens += max(non_empty - 1, 0)
        if labels is not None:
            u = sum(1 for l in labels if l in steps) / len(labels) if labels else 0.0
        else:
            u = len(wanted & words) / len(wanted) if wanted else 0.0
        out.append((u, float(tokens), len(words) if count == "words" else len(steps)))
    # The 31 whole-structure options are the sweep's own.
    for k, (bits, depth) in enumerate(FULL):
        u, t, c = out[OPTIONS.index((bits, depth))]
        if abs(u - rec["utility"][k]) > 1e-9 or t != rec["tokens"][k] or c != rec[count][k]:
            sys.exit(f"{rec['question_id']}: the items do not recompute the sweep's subset {k}; "
                     "sweep again with --items from the same mesa")
    return out


def choose(opts, allowed, price):
    c5, t5 = opts[ALL][2], opts[ALL][1]
    if c5 == 0 or t5 == 0:
        return ALL
    return max(allowed, key=lambda m: (opts[m][2] / c5 - price * opts[m][1] / t5, -opts[m][1]))


def shares(recs, picks):
    j = sum(r[m][0] for r, m in zip(recs, picks))
    t = sum(r[m][1] for r, m in zip(recs, picks))
    j5 = sum(r[ALL][0] for r in recs)
    t5 = sum(r[ALL][1] for r in recs)
    return j / j5, t / t5


def holds(recs, allowed, price, target):
    xs = []
    for r in recs:
        m = choose(r, allowed, price)
        xs.append(r[m][0] - 0.99 * r[ALL][0] if target == "keep" else 0.5 * r[ALL][1] - r[m][1])
    se = statistics.stdev(xs) * len(xs) ** 0.5 if len(xs) > 1 else 0.0
    return sum(xs) - se >= 0


def hindsight(recs, allowed):
    """Best fixed option and oracle on `recs`: (tokens for 99%, J within 50%)."""
    fixed_keep, fixed_within = None, None
    for m in allowed:
        j, t = shares(recs, [m] * len(recs))
        if j >= 0.99 and (fixed_keep is None or t < fixed_keep):
            fixed_keep = t
        if t <= 0.5 and (fixed_within is None or j > fixed_within):
            fixed_within = j
    oracle_keep, oracle_within = None, None
    for lam in LAMBDAS:
        picks = [max(allowed, key=lambda m: (r[m][0] - lam * r[m][1], -r[m][1])) for r in recs]
        j, t = shares(recs, picks)
        if j >= 0.99 and (oracle_keep is None or t < oracle_keep):
            oracle_keep = t
        if t <= 0.5 and (oracle_within is None or j > oracle_within):
            oracle_within = j
    return fixed_keep, fixed_within, oracle_keep, oracle_within


def pct(x):
    return "-" if x is None else f"{100 * x:.1f}%"


def main():
    if len(sys.argv) != 5 or sys.argv[3] != "--count" or sys.argv[4] not in ("words", "steps"):
        sys.exit("usage: scripts/depth_study.py SWEEP ITEMS --count words|steps")
    sweep, items_path, count = sys.argv[1], sys.argv[2], sys.argv[4]
    with open(sweep) as f:
        f.readline()
        records = [json.loads(line) for line in f if line.strip()]
    with open(items_path) as f:
        items = {i["question_id"]: i for i in map(json.loads, f)}
    missing = [r["question_id"] for r in records if r["question_id"] not in items]
    if missing:
        sys.exit(f"{items_path}: no items for {len(missing)} question(s) of {sweep}, "
                 f"for example `{missing[0]}`; write both with one `mesa sweep --items`")
    labelled = [r for r in records if r["labelled"]]
    opts = {r["question_id"]: options_of(r, items[r["question_id"]], count) for r in labelled}
    r_only = OPTIONS.index((0, 2))
    r1_only = OPTIONS.index((0, 1))
    total = sum(o[ALL][1] for o in opts.values())
    print(f"Over the {len(opts)} labelled questions, R costs "
          f"{pct(sum(o[r_only][1] for o in opts.values()) / total)} of all five's tokens and its "
          f"first window alone {pct(sum(o[r1_only][1] for o in opts.values()) / total)}.")
    print()
    whole = [OPTIONS.index(o) for o in FULL]
    every = list(range(len(OPTIONS)))
    print("| seed | options | keep: J, tokens on val | fixed: tokens for 99% | oracle | "
          "within: J, tokens on val | fixed: J within 50% | oracle |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rows = {"31": [], "47": []}
    for seed in range(5):
        sp = splits([r["episode"] for r in records], seed)
        train = [opts[r["question_id"]] for r in labelled if sp[r["episode"]] == "train"]
        val = [opts[r["question_id"]] for r in labelled if sp[r["episode"]] == "val"]
        for name, allowed in (("31", whole), ("47", every)):
            keeps = [p for p in PRICES if holds(train, allowed, p, "keep")]
            keep_price = max(keeps) if keeps else PRICES[0]
            halves = [p for p in PRICES if holds(train, allowed, p, "within")]
            within_price = min(halves) if halves else PRICES[-1]
            kj, kc = shares(val, [choose(r, allowed, keep_price) for r in val])
            wj, wc = shares(val, [choose(r, allowed, within_price) for r in val])
            fk, fw, ok, ow = hindsight(val, allowed)
            rows[name].append((kj, kc, fk, ok, wj, wc, fw, ow))
            print(f"| {seed} | {name} | {pct(kj)}, {pct(kc)} | {pct(fk)} | {pct(ok)} | "
                  f"{pct(wj)}, {pct(wc)} | {pct(fw)} | {pct(ow)} |")
    for name in ("31", "47"):
        col = list(zip(*rows[name]))
        print(f"| mean ± sd | {name} | {ms(col[0])}, {ms(col[1])} | {ms(col[2])} | {ms(col[3])} | "
              f"{ms(col[4])}, {ms(col[5])} | {ms(col[6])} | {ms(col[7])} |")
    print()
    for name in ("31", "47"):
        r = rows[name]
        kept = sum(1 for x in r if x[0] >= 0.99)
        within = sum(1 for x in r if x[5] <= 0.5)
        print(f"With {name} options, the price chosen on train keeps 99% of all five's J on val on "
              f"{kept} of 5 seeds and reads at most half of its tokens at the within price on "
              f"{within} of 5.")


if __name__ == "__main__":
    main()
