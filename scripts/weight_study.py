#!/usr/bin/env python3
"""Whether weighting the words a subset shows predicts answer coverage
better than counting them, judged on val.

The word trade (docs/LANGUAGE.md, "Trade") counts every distinct content
word a subset shows once. On the train split, a word that more of the five
structures show is far more often an answer word, and the words only R
shows rarely are. This study weighs each word by which of the five
structures show it (its pattern, 31 kinds), reads per question the subset
with the highest

    weight(M) / weight(all five) - price * tokens(M) / tokens(all five)

and chooses the price on train and scores on val as scripts/price_study.py
does. Weights: "count" (1: the trade as it is), "agreement" (the number of
the five structures that show the word), "learned" (the share of answer
words among the train questions' words of that pattern, smoothed toward
the overall share by 5 pseudo-words; fitted per seed on train only), and
two that weigh a word by the items that show it rather than by its
pattern: "rank" (1 / (1 + r) for the best rank r, from 0, of an item that
shows it in each structure, the subset taking the highest over its
structures: the retrievers' best items first) and "score" (the same with
the item's score over the best score of its structure), and three that
weigh a word by whether the items showing it share a word with the
question (`question_hits`: the question's own content words an item
shows): "asked" (1 when some item showing it shares one, else 0: the words
of the items about what was asked), "asked-hits" (the most question words
an item showing it shares) and "asked-half" (1 when some item shares one,
else 0.5). It prints, per weight, the answer-word share of the train words by how many
structures show them (seed 0) and the figures over five seeds. Test is not
read.

Usage: scripts/weight_study.py SWEEP ITEMS   (an answer-coverage sweep and
its `mesa sweep --items`)
"""
import collections
import json
import statistics
import sys

from depth_study import PRICES, pct
from oracle_study import splits
from results_aims import ms

ALL = 30


def patterns(items):
    """Each content word's pattern: bit i when the i-th of S T G V R shows it."""
    bits = collections.defaultdict(int)
    for i, sec in enumerate(items["sections"]):
        for it in sec["items"]:
            for w in it["words"]:
                bits[w] |= 1 << i
    return bits


def weighted(bits, weight):
    per = collections.Counter(bits.values())
    return [sum(n * weight[p] for p, n in per.items() if p & (k + 1)) for k in range(31)]


def choose(r, c, price):
    t = r["tokens"]
    if c[ALL] <= 0 or t[ALL] == 0:
        return ALL
    return max(range(31), key=lambda m: (c[m] / c[ALL] - price * t[m] / t[ALL], -t[m]))


def shares(rows, price):
    j = t = j5 = t5 = 0.0
    for r, c in rows:
        m = choose(r, c, price)
        j += r["utility"][m]
        t += r["tokens"][m]
        j5 += r["utility"][ALL]
        t5 += r["tokens"][ALL]
    return j / j5, t / t5


def holds(rows, price, target):
    xs = []
    for r, c in rows:
        m = choose(r, c, price)
        xs.append(r["utility"][m] - 0.99 * r["utility"][ALL] if target == "keep"
                  else 0.5 * r["tokens"][ALL] - r["tokens"][m])
    return sum(xs) - statistics.stdev(xs) * len(xs) ** 0.5 >= 0


def by_items(items, weigh):
    """Per subset (bit order), the sum over the words it shows of the
    highest weight an item of its structures gives the word, where
    `weigh(rank, score share, question hits)` weighs one item."""
    best = []
    for sec in items["sections"]:
        top = max((it["score"] for it in sec["items"]), default=0.0) or 1.0
        w = {}
        for rank, it in enumerate(sec["items"]):
            x = weigh(rank, it["score"] / top, it.get("question_hits", 0))
            for word in it["words"]:
                w[word] = max(w.get(word, 0.0), x)
        best.append(w)
    words = set().union(*best)
    return [sum(max(best[k].get(word, 0.0) for k in range(5) if (m + 1) >> k & 1) for word in words)
            for m in range(31)]


ITEM_WEIGHTS = {
    "rank": lambda rank, share, hits: 1.0 / (1 + rank),
    "score": lambda rank, share, hits: share,
    "asked": lambda rank, share, hits: 1.0 if hits else 0.0,
    "asked-hits": lambda rank, share, hits: float(hits),
    "asked-half": lambda rank, share, hits: 1.0 if hits else 0.5,
}


def learned(train):
    seen, hits = collections.Counter(), collections.Counter()
    for r, bits, wanted in train:
        for w, p in bits.items():
            seen[p] += 1
            hits[p] += w in wanted
    base = sum(hits.values()) / max(sum(seen.values()), 1)
    return [(hits[p] + 5 * base) / (seen[p] + 5) for p in range(32)], seen, hits


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/weight_study.py SWEEP ITEMS")
    with open(sys.argv[1]) as f:
        f.readline()
        records = [json.loads(line) for line in f if line.strip()]
    with open(sys.argv[2]) as f:
        items = {i["question_id"]: i for i in map(json.loads, f)}
    if any("answer_words" not in i for i in items.values()):
        sys.exit(f"{sys.argv[2]}: not an answer-coverage sweep's items")
    labelled = [(r, patterns(items[r["question_id"]]), set(items[r["question_id"]]["answer_words"]))
                for r in records if r["labelled"]]
    by_item = {name: {r["question_id"]: by_items(items[r["question_id"]], f) for r, _, _ in labelled}
               for name, f in ITEM_WEIGHTS.items()}
    results = collections.defaultdict(list)
    for seed in range(5):
        sp = splits([r["episode"] for r in records], seed)
        train = [x for x in labelled if sp[x[0]["episode"]] == "train"]
        val = [x for x in labelled if sp[x[0]["episode"]] == "val"]
        table, seen, hits = learned(train)
        if seed == 0:
            print("Seed 0's train words, by how many of the five structures show them:")
            print()
            print("| structures | words | answer words among them |")
            print("| --- | --- | --- |")
            for k in range(1, 6):
                n = sum(seen[p] for p in range(32) if bin(p).count("1") == k)
                a = sum(hits[p] for p in range(32) if bin(p).count("1") == k)
                print(f"| {k} | {n} | {pct(a / n if n else None)} |")
            print()
        weights = {
            "count": [1.0] * 32,
            "agreement": [float(bin(p).count("1")) for p in range(32)],
            "learned": table,
        }
        counts = {name: (lambda r, b, w=w: weighted(b, w)) for name, w in weights.items()}
        for name, table_of in by_item.items():
            counts[name] = lambda r, b, t=table_of: t[r["question_id"]]
        for name, count in counts.items():
            tr = [(r, count(r, b)) for r, b, _ in train]
            va = [(r, count(r, b)) for r, b, _ in val]
            # The weighted counts' scale differs: a finer grid near 0.
            prices = sorted(set(PRICES + [round(p / 10, 3) for p in PRICES]))
            keeps = [p for p in prices if holds(tr, p, "keep")]
            halves = [p for p in prices if holds(tr, p, "within")]
            kj, kc = shares(va, max(keeps) if keeps else prices[0])
            wj, wc = shares(va, min(halves) if halves else prices[-1])
            results[name].append((kj, kc, wj, wc))
    print("| weight | keep: J, tokens on val | kept 99% | within: J, tokens on val |")
    print("| --- | --- | --- | --- |")
    for name, rows in results.items():
        col = list(zip(*rows))
        kept = sum(1 for x in rows if x[0] >= 0.99)
        print(f"| {name} | {ms(col[0])}, {ms(col[1])} | {kept} of 5 | {ms(col[2])}, {ms(col[3])} |")


if __name__ == "__main__":
    main()
