#!/usr/bin/env python3
"""What R adds, and whether a question tells when: a study on train and val
only (test is not read). R (the raw episodic windows) costs more than half
of all five's tokens; without it ({S, T, G, V}) a question keeps most of its
J. Per seed, on val: the questions R adds J to, and the tokens a choice
that knows each question's gain ("perfect": the questions read R in order
of their gain per extra token, the others {S, T, G, V}) needs to keep 99%
of all five's J. Then three scores rank the questions for R, each
read two ways: "in hindsight", the fewest val tokens any threshold of the
score keeps 99% with (what the score could reach with a perfect choice of
its threshold), and "threshold from train", the score's threshold that
keeps 99% on train applied to val unchanged:

- `novelty`: the share of all five's distinct content words that only R
  shows (the sweep's `words` counts: all five's less {S, T, G, V}'s), no fit;
- `previews`: a logistic regression on train predicting whether R adds J,
  on the sweep's previews (twelve per structure, counts as log(1 + x),
  standardized on train), the domain, and the novelty;
- `previews+words`: the same with the question's words (lower-cased, three
  letters or more, not stopwords, in at least 10 train questions) as
  indicators. L2 0.01, 300 steps of gradient descent, as
  scripts/linear_study.py.

Usage: scripts/r_study.py SWEEP > docs/R_STUDY.md
"""
import collections
import json
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from linear_study import features, pct, sigmoid  # noqa: E402
from oracle_study import splits  # noqa: E402

SEEDS = range(5)
ALL, STGV, R = 30, 14, 15  # utility and tokens indices of {S,T,G,V,R}, {S,T,G,V}, {R}
STOP = set(
    "the and for with was were been are its this that these those what which who whom how why "
    "when where did does has have had from after before into than then there their they them "
    "his her she you your our not yes would could should will can may must about over under".split()
)
MIN_QUESTIONS = 10


def gain(r):
    return r["utility"][ALL] - r["utility"][STGV]


def novelty(r):
    w = r["words"]
    return (w[ALL] - w[STGV]) / max(w[ALL], 1)


def words(r):
    return {w for w in re.findall(r"[a-z]+", r["query"].lower()) if len(w) >= 3 and w not in STOP}


def sparse(dense):
    return [(j, x) for j, x in enumerate(dense) if x]


def fit(X, y, d, l2=1e-2, steps=300, rate=0.5):
    """Logistic regression on sparse rows (lists of (index, value))."""
    w = [0.0] * (d + 1)
    n = len(X)
    for _ in range(steps):
        g = [0.0] * (d + 1)
        for x, t in zip(X, y):
            e = sigmoid(w[d] + sum(w[j] * v for j, v in x)) - t
            for j, v in x:
                g[j] += e * v
            g[d] += e
        for j in range(d):
            w[j] -= rate * (g[j] / n + l2 * w[j])
        w[d] -= rate * g[d] / n
    return lambda x: sigmoid(w[d] + sum(w[j] * v for j, v in x))


def learned(train, val, with_words):
    domains = sorted({r["domain"] for r in train})
    vocab = []
    if with_words:
        counts = collections.Counter(w for r in train for w in words(r))
        vocab = sorted(w for w, n in counts.items() if n >= MIN_QUESTIONS)
    index = {w: i for i, w in enumerate(vocab)}

    def dense(r):
        return features(r) + [novelty(r)] + [float(r["domain"] == d) for d in domains]

    base = [dense(r) for r in train]
    k = len(base[0])
    mean = [sum(col) / len(base) for col in zip(*base)]
    sd = [math.sqrt(sum((x - m) ** 2 for x in col) / len(base)) or 1.0 for col, m in zip(zip(*base), mean)]

    def row(r):
        x = sparse([(v - m) / s for v, m, s in zip(dense(r), mean, sd)])
        return x + [(k + index[w], 1.0) for w in words(r) if w in index]

    score = fit([row(r) for r in train], [float(gain(r) > 0) for r in train], k + len(vocab))
    return [score(row(r)) for r in train], [score(row(r)) for r in val]


def curve(recs, scores):
    """The fewest tokens (share of all five's) keeping 99% of all five's J
    when the questions scoring highest read all five, and the lowest score
    that reads it then."""
    j5 = sum(r["utility"][ALL] for r in recs)
    c5 = sum(r["tokens"][ALL] for r in recs)
    j = sum(r["utility"][STGV] for r in recs)
    c = sum(r["tokens"][STGV] for r in recs)
    if j >= 0.99 * j5:
        return c / c5, math.inf
    for s, r in sorted(zip(scores, recs), key=lambda p: -p[0]):
        j += gain(r)
        c += r["tokens"][ALL] - r["tokens"][STGV]
        if j >= 0.99 * j5:
            return c / c5, s
    return 1.0, -math.inf


def applied(recs, scores, threshold):
    j5 = sum(r["utility"][ALL] for r in recs)
    c5 = sum(r["tokens"][ALL] for r in recs)
    j = sum(r["utility"][ALL if s >= threshold else STGV] for s, r in zip(scores, recs))
    c = sum(r["tokens"][ALL if s >= threshold else STGV] for s, r in zip(scores, recs))
    return j / j5, c / c5


def seed_rows(rows, seed):
    side = splits([r["episode"] for r in rows], seed)
    train = [r for r in rows if side[r["episode"]] == "train"]
    val = [r for r in rows if side[r["episode"]] == "val"]
    j5 = sum(r["utility"][ALL] for r in val)
    c5 = sum(r["tokens"][ALL] for r in val)
    helped = sum(gain(r) > 0 for r in val)
    # Knowing each question's gain: the most gain for its extra tokens first.
    perfect, _ = curve(val, [gain(r) / max(r["tokens"][ALL] - r["tokens"][STGV], 1) for r in val])
    summary = (
        f"| {seed} | {len(val)} | {pct(sum(r['utility'][STGV] for r in val) / j5)}, "
        f"{pct(sum(r['tokens'][STGV] for r in val) / c5)} | {helped} ({pct(helped / len(val))}) | {pct(perfect)} |"
    )
    scored = []
    for name, scorer in SCORERS.items():
        on_train, on_val = scorer(train, val)
        _, threshold = curve(train, on_train)
        hindsight, _ = curve(val, on_val)
        j, c = applied(val, on_val, threshold)
        scored.append((name, seed, hindsight, j, c))
    return summary, perfect, scored


SCORERS = {
    "novelty": lambda train, val: ([novelty(r) for r in train], [novelty(r) for r in val]),
    "previews": lambda train, val: learned(train, val, False),
    "previews+words": lambda train, val: learned(train, val, True),
}


def main():
    path = sys.argv[1]
    with open(path) as f:
        head = json.loads(f.readline())
        rows = [r for r in (json.loads(line) for line in f if line.strip()) if r["labelled"]]
    print("# What R adds (train and val only)")
    print()
    print(__doc__.split("Usage:")[0].strip())
    print()
    print(f"`scripts/r_study.py {path} > docs/R_STUDY.md` ({head['utility']})")
    print()
    print("| seed | val questions | {S, T, G, V}: J, tokens | questions R adds J to | a perfect choice of R's questions: tokens for 99% |")
    print("| --- | --- | --- | --- | --- |")
    scored, perfects = [], []
    for seed in SEEDS:
        summary, perfect, seed_scores = seed_rows(rows, seed)
        print(summary)
        perfects.append((seed, perfect))
        scored.extend(seed_scores)
        sys.stdout.flush()
    scored.sort(key=lambda s: (list(SCORERS).index(s[0]), s[1]))
    print()
    print("| score | seed | in hindsight on val: tokens for 99% | threshold from train, on val: J, tokens |")
    print("| --- | --- | --- | --- |")
    for name, seed, hindsight, j, c in scored:
        print(f"| {name} | {seed} | {pct(hindsight)} | {pct(j)}, {pct(c)} |")
    print()
    perfect = [p for _, p in perfects]
    print(
        f"A perfect choice of the questions that read R keeps 99% of all five's J on val with "
        f"{pct(min(perfect))} to {pct(max(perfect))} of the tokens. The scores, in hindsight on val, need:"
    )
    print()
    for name in dict.fromkeys(s[0] for s in scored):
        mine = [s for s in scored if s[0] == name]
        hind = [s[2] for s in mine]
        kept = sum(s[3] >= 0.99 for s in mine)
        print(
            f"- `{name}`: {pct(min(hind))} to {pct(max(hind))}; with the threshold from train, it keeps "
            f"99% on val on {kept} of {len(mine)} seeds."
        )
    mean = {name: sum(x[2] for x in scored if x[0] == name) / len(SEEDS) for name in SCORERS}
    best = min(mean, key=mean.get)
    known = sum(perfect) / len(perfect)
    print()
    print(
        f"Over the seeds, the closest score in hindsight, `{best}`, needs {pct(mean[best])} of the "
        f"tokens on average, {100 * (mean[best] - known):.1f} points more than the perfect choice "
        f"({pct(known)})"
        + ("" if best == "novelty" else f"; the share of words only R shows needs {pct(mean['novelty'])}")
        + ". Compare docs/RESULTS.md, \"The design study\"."
    )


if __name__ == "__main__":
    main()
