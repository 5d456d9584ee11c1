#!/usr/bin/env python3
"""What predicts the oracle's choice, studied on one seed's train split only:
for each preview the sweep records (the twelve features of each structure,
each overlap once per pair) and a question-shape cue, the best one-threshold split of the
train questions into two groups, each reading its own best fixed subset, and
the tokens that split needs for 99% of all five's J on train. The val columns
apply the train fit (threshold, token price and each group's subset) to val
unchanged, and give its J and tokens there.

Usage: scripts/oracle_study.py SWEEP [SEED]
"""
import json
import re
import sys

M = (1 << 64) - 1


def fnv(b):
    h = 0xCBF29CE484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001B3) & M
    return h


def mix(z):
    z = (z + 0x9E3779B97F4A7C15) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def key_order(episodes, seed):
    """The distinct episodes in the optimizer's split key order, and how many
    go to train (as many go to val; optimizer/src/split.rs)."""
    ids = sorted(set(episodes))
    s = mix(seed)
    keyed = [i for _, i in sorted((mix(fnv(i.encode()) ^ s), i) for i in ids)]
    return keyed, (2 * len(ids) + 5) // 10


def splits(episodes, seed):
    """The optimizer's episode-level 2:2:6 split (optimizer/src/split.rs)."""
    keyed, nt = key_order(episodes, seed)
    return {i: ("train" if j < nt else "val" if j < 2 * nt else "test") for j, i in enumerate(keyed)}


def val_half(episodes, seed, half):
    """Val's `search` half (its first ceil(v / 2) episodes in key order) or
    its `choice` half, as a set."""
    keyed, nt = key_order(episodes, seed)
    val = keyed[nt:2 * nt]
    first = (len(val) + 1) // 2
    return set(val[:first] if half == "search" else val[first:])


# The sweep's preview row of each structure (optimizer/src/sweep/mod.rs).
FEATURES = ["tokens", "top", "hits", "steps", "gap", "share", "named",
            "overlap_S", "overlap_T", "overlap_G", "overlap_V", "overlap_R"]
LETTERS = "STGVR"

LAMBDAS = [x * 1e-6 for x in (0, 0.25, 0.5, 1, 1.5, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200, 400)]


def fit(recs, group):
    """Per group, per lambda, the subset with the best total objective."""
    out = {}
    groups = {}
    for r in recs:
        groups.setdefault(group(r), []).append(r)
    for lam in LAMBDAS:
        out[lam] = {
            g: max(range(31), key=lambda m: sum(r["utility"][m] - lam * r["tokens"][m] for r in rs))
            for g, rs in groups.items()
        }
    return out


def shares(recs, group, choice):
    """J and tokens of a fit's choices, as shares of all five's."""
    j5 = sum(r["utility"][30] for r in recs)
    c5 = sum(r["tokens"][30] for r in recs)
    j = sum(r["utility"][choice.get(group(r), 30)] for r in recs) / j5
    c = sum(r["tokens"][choice.get(group(r), 30)] for r in recs) / c5
    return j, c


def tokens_for_99(recs, group, fitted):
    """The fewest tokens among the fitted token prices keeping 99% of J, and
    the choices that give it."""
    best = None
    for choice in fitted.values():
        j, c = shares(recs, group, choice)
        if j >= 0.99 and (best is None or c < best[0]):
            best = (c, choice)
    return best


def main():
    sweep = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    with open(sweep) as f:
        f.readline()
        recs = [r for r in map(json.loads, f) if r["labelled"]]
    with open(sweep) as f:
        f.readline()
        # The optimizer splits every record's episode, labelled or not.
        sp = splits([json.loads(line)["episode"] for line in f if line.strip()], seed)
    train = [r for r in recs if sp[r["episode"]] == "train"]
    val = [r for r in recs if sp[r["episode"]] == "val"]
    stepref = re.compile(r"(?i)\b(steps?|turns?|actions?)\s*#?\s*\d+")
    value = {}
    for r in recs:
        v = {}
        for s, row in r["previews"].items():
            for name, x in zip(FEATURES, row):
                other = name[len("overlap_"):] if name.startswith("overlap_") else None
                if other is None or LETTERS.index(other) > LETTERS.index(s):
                    v[f"{s}.{name}"] = x
        v["std.stepref"] = 1.0 if stepref.search(r["query"]) else 0.0
        value[r["question_id"]] = v
    names = sorted(value[train[0]["question_id"]])
    rows = []
    for name in names:
        xs = sorted({value[r["question_id"]][name] for r in train})
        cuts = [xs[int(len(xs) * q)] for q in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)] if len(xs) > 10 else xs
        best = None
        for t in sorted(set(cuts)):
            g = lambda r, t=t: value[r["question_id"]][name] > t
            tr = tokens_for_99(train, g, fit(train, g))
            if tr is not None and (best is None or tr[0] < best[0]):
                best = (tr[0], t, shares(val, g, tr[1]))
        if best:
            rows.append((best[0], name, best[1], best[2]))
    rows.sort()
    print(f"Seed {seed}: {len(train)} train and {len(val)} val questions. One feature, one threshold, two groups:")
    print()
    print("| feature | threshold (group: value > it) | tokens for 99% of J, train | the train fit on val: J | on val: tokens |")
    print("| --- | --- | --- | --- | --- |")
    one = lambda r: 0
    none = tokens_for_99(train, one, fit(train, one))
    vj, vc = shares(val, one, none[1])
    print(f"| (none: one fixed subset) | - | {100 * none[0]:.1f}% | {100 * vj:.1f}% | {100 * vc:.1f}% |")
    for tr, name, t, (vj, vc) in rows[:15]:
        print(f"| {name} | {t:.3g} | {100 * tr:.1f}% | {100 * vj:.1f}% | {100 * vc:.1f}% |")


if __name__ == "__main__":
    main()
