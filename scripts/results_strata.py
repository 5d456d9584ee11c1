#!/usr/bin/env python3
"""Prints, for docs/RESULTS.md, issue 16's aims for the stratified policies
(`mesa stratify`), from the JSON `mesa frontier` wrote for each target alone
(WORK/PREFIX-keep-UTILITY.json, WORK/PREFIX-within-UTILITY.json): each seed's
one policy per target, scored once on SPLIT, against the best fixed subset
(in hindsight on SPLIT) and the oracle, with the paired bootstrap interval
over SPLIT's episodes. RESULTS.md reads it twice: the policies fitted on
train and val, scored on test; and the design study's, fitted on train,
scored on val.

Usage: scripts/results_strata.py WORK PREFIX SPLIT UTILITY...
       scripts/results_strata.py --variants WORK SPLIT LABEL:PREFIX,LABEL:PREFIX... UTILITY...
(the second prints one compact row per variant and utility: the design study's variants)
"""
import json
import statistics
import sys

from results_aims import header, ms


# The utilities a design-study variant must do better on to replace the default.
RULE = ("evidence-recall", "answer-coverage")


def iv(i):
    return "-" if not i else f"{100 * i['mean']:+.1f} [{100 * i['lo']:+.1f}, {100 * i['hi']:+.1f}]"


def keep_stats(seeds):
    """The keep target's figures per seed, from one policy's frontier seeds."""
    j = [s["policies"][0]["j"] / s["all_five"]["j"] for s in seeds]
    c = [s["policies"][0]["c"] / s["all_five"]["c"] for s in seeds]
    fixed = [s["fixed_headline"]["tokens_for_keep"] for s in seeds]
    oracle = [s["oracle_headline"]["tokens_for_keep"] for s in seeds]
    keeps = [x >= 0.99 for x in j]
    beats = [k and f is not None and t < f for k, t, f in zip(keeps, c, fixed)]
    diffs = [(s["against_fixed"] or {}).get("tokens_for_keep") for s in seeds]
    # Only a seed that beats fixed on the point figures counts (the bootstrap
    # can find draws that keep 99% for a policy whose J on the split does not).
    outside = sum(1 for b, d in zip(beats, diffs) if b and d and d["hi"] < 0)
    gaps = [(f - t) / (f - o) for k, t, f, o in zip(keeps, c, fixed, oracle) if k and f > o]
    return dict(j=j, c=c, fixed=fixed, oracle=oracle, keeps=sum(keeps), beats=sum(beats), diffs=diffs,
                outside=outside, gaps=gaps, n=len(seeds))


def within_stats(seeds):
    """The within target's figures per seed, from one policy's frontier seeds."""
    j = [s["policies"][0]["j"] / s["all_five"]["j"] for s in seeds]
    c = [s["policies"][0]["c"] / s["all_five"]["c"] for s in seeds]
    fixed = [s["fixed_headline"]["j_at_half"] for s in seeds]
    within = [t <= 0.5 for t in c]
    beats = [w and f is not None and x > f for w, x, f in zip(within, j, fixed)]
    diffs = [(s["against_fixed"] or {}).get("j_at_half") for s in seeds]
    outside = sum(1 for b, d in zip(beats, diffs) if b and d and d["lo"] > 0)
    return dict(j=j, c=c, fixed=fixed, within=sum(within), beats=sum(beats), diffs=diffs, outside=outside,
                n=len(seeds))


def seeds_of(work, prefix, target, u):
    return json.load(open(f"{work}/{prefix}-{target}-{u}.json"))["seeds"]


def variants(work, split, names, utilities):
    """One row per variant and utility: both targets' figures side by side."""
    rows = {}
    header("variant", "utility", "keep: J, tokens", "keeps", "beats fixed (outside)", "gap closed",
           "within: J, tokens", "beats fixed (outside)")
    for name in names:
        label, prefix = name.split(":", 1)
        for u in utilities:
            k = keep_stats(seeds_of(work, prefix, "keep", u))
            w = within_stats(seeds_of(work, prefix, "within", u))
            n = k["n"]
            print(f"| {label} | {u} | {ms(k['j'])}, {ms(k['c'])} | {k['keeps']} of {n} | "
                  f"{k['beats']} ({k['outside']}) | {ms(k['gaps'])} ({len(k['gaps'])} of {n}) | "
                  f"{ms(w['j'])}, {ms(w['c'])} | {w['beats']} ({w['outside']}) |")
            rows.setdefault(label, {})[u] = (k["keeps"], k["beats"], w["beats"])
    base, *others = list(rows)
    adopt = []
    print()
    for label in others:
        better = [u for u in utilities if rows[label][u] != rows[base][u]
                  and all(a >= b for a, b in zip(rows[label][u], rows[base][u]))]
        worse = [u for u in utilities if any(a < b for a, b in zip(rows[label][u], rows[base][u]))]
        print(f"- {label}, against {base} (seeds that keep 99%, beat fixed keeping it, beat fixed within half): "
              f"better on {', '.join(better) or 'none'}; worse on some count for {', '.join(worse) or 'none'}.")
        if all(u in better for u in RULE if u in utilities) and not worse:
            adopt.append(label)
    print()
    print(f"A variant replaces {base} only if it is better on {' and '.join(RULE)} (the issue's two offline "
          f"utilities) and worse on none. Variants that are: {', '.join(adopt) or 'none'}.")


def main():
    if sys.argv[1] == "--variants":
        work, split, names = sys.argv[2], sys.argv[3], sys.argv[4].split(",")
        variants(work, split, names, sys.argv[5:])
        return
    work, prefix, split, utilities = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    print(f"Keep 99% of all five's J (`--target keep`): per seed, the policy's J and tokens on {split} as")
    print("shares of all five's; \"keeps\" counts the seeds where it keeps 99% of J; \"beats fixed\" those")
    print(f"where it also spends fewer tokens than the best fixed subset keeping 99% (in hindsight on {split});")
    print("\"outside\" those whose 95% paired bootstrap interval of that difference excludes 0. The gap")
    print("closed is (fixed - policy) / (fixed - oracle) over the seeds where the policy keeps 99%.")
    print()
    header("utility", "policy: J, tokens", "fixed / oracle: tokens for 99%", "keeps", "beats fixed", "outside",
           "policy - fixed, per seed [interval]", "aim: <= 40% of tokens", "gap to the oracle closed")
    for u in utilities:
        k = keep_stats(seeds_of(work, prefix, "keep", u))
        n = k["n"]
        forty = "met" if k["keeps"] == n and statistics.mean(k["c"]) <= 0.40 else "**not met**"
        third = "met" if len(k["gaps"]) == n and statistics.mean(k["gaps"]) >= 1 / 3 else "**not met**"
        print(f"| {u} | {ms(k['j'])}, {ms(k['c'])} | {ms(k['fixed'])} / {ms(k['oracle'])} | {k['keeps']} of {n} | "
              f"{k['beats']} of {n} | {k['outside']} of {n} | {'; '.join(iv(d) for d in k['diffs'])} | {forty} | "
              f"{ms(k['gaps'])} ({len(k['gaps'])} of {n}) {third} |")
    print()
    print("The best J within 50% of all five's tokens (`--target within`): \"within\" counts the seeds where")
    print(f"the policy spends at most 50% on {split}; \"beats fixed\" those where its J is also higher than the")
    print(f"best fixed subset's within 50% (in hindsight on {split}); \"outside\" those whose interval of that")
    print("difference excludes 0.")
    print()
    header("utility", "policy: J, tokens", "fixed: J within 50%", "within", "beats fixed", "outside",
           "policy - fixed, per seed [interval]")
    for u in utilities:
        w = within_stats(seeds_of(work, prefix, "within", u))
        n = w["n"]
        print(f"| {u} | {ms(w['j'])}, {ms(w['c'])} | {ms(w['fixed'])} | {w['within']} of {n} | {w['beats']} of {n} | "
              f"{w['outside']} of {n} | {'; '.join(iv(d) for d in w['diffs'])} |")


if __name__ == "__main__":
    main()
