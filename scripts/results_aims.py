#!/usr/bin/env python3
"""Prints, for docs/RESULTS.md, issue 16's aims per utility, computed from the
JSON that `mesa frontier` wrote (WORK/frontier-UTILITY.json and
WORK/choice-UTILITY.json): the learned policies together against the best
fixed subset and the oracle, per seed and as mean ± sd, and the policy chosen
on val against all five (paired bootstrap intervals over episodes).

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
    prices = len(json.load(open(f"{work}/frontier-{utilities[0]}.json"))["seeds"][0]["policies"])
    print("Per utility, over the five seeds, as shares of all five's J and tokens on test. \"learned, in")
    print(f"hindsight\" is the cheapest of the {prices} policies that keeps 99% of J on test (the same")
    print("hindsight as the best fixed subset's); \"learned, chosen on val\" is the policy the val split")
    print("picks for each target, scored once on test: the honest figure, and the one the verdicts use.")
    print("Three rules choose on val (the frontier reports above define them: `keep`, `keep-margin`,")
    print("`keep-bound`), and each seed's check on val alone picks one of them: the rule whose picks,")
    print("made on one half of val's episodes, most often kept 99% of J on the other half with fewer")
    print("tokens than that half's best fixed subset. That checked choice (\"checked on val\") is the")
    print("one the verdicts use; the rules' own rows show what each would have given. The allowance")
    print("column gives each rule's margin or standard error, mean ± sd over seeds, in points of share.")
    print("\"outside\" counts the seeds whose 95% paired bootstrap interval (over episodes) of the")
    print("hindsight difference excludes 0 in the policies' favour.")
    print()
    header("utility", "tokens for 99% of J: fixed / learned, in hindsight / oracle", "outside", "choice on val",
           "learned, chosen on val for 99%: J, tokens", "seeds where it keeps 99% with fewer tokens than fixed",
           "aim: <= 40% of tokens", "aim: closes >= 1/3 of the gap to the oracle")
    rows_half = []
    for u in utilities:
        seeds = json.load(open(f"{work}/frontier-{u}.json"))["seeds"]
        n = len(seeds)
        fixed = [s["fixed_headline"]["tokens_for_keep"] for s in seeds]
        hind = [s["policies_headline"]["tokens_for_keep"] for s in seeds]
        oracle = [s["oracle_headline"]["tokens_for_keep"] for s in seeds]
        outside = sum(1 for s in seeds
                      if ((s["against_fixed"] or {}).get("tokens_for_keep") or {}).get("hi", 0) < 0)
        def rule_rows(target):
            rules = {"keep": ["keep", "keep-margin", "keep-bound"], "half": ["half", "half-bound"]}[target]
            rows = []
            for r in rules:
                choices = [next(x for x in s["chosen_on_val"]["rules"] if x["rule"] == r) for s in seeds]
                allow = [c["allowance"] for c in choices]
                label = r if all(a is None for a in allow) else f"{r} ({ms(allow).replace('%', ' points')})"
                rows.append((label, [c["chosen"] for c in choices]))
            key = f"checked_{target}"
            picked = [s["chosen_on_val"][key] for s in seeds]
            checked = [None if k is None else next(x for x in s["chosen_on_val"]["rules"] if x["rule"] == k)["chosen"]
                       for s, k in zip(seeds, picked)]
            rows.append((f"**checked on val** ({', '.join(k or '-' for k in picked)})", checked))
            return rows
        for rule, chosen in rule_rows("keep"):
            kept = [c is not None and c["j"] >= 0.99 and f is not None and c["c"] < f
                    for c, f in zip(chosen, fixed)]
            tokens = [c["c"] for c in chosen if c is not None]
            forty = "met" if all(kept) and statistics.mean(tokens) <= 0.40 else "**not met**"
            gaps = [(f - c["c"]) / (f - o) for c, f, o in zip(chosen, fixed, oracle)
                    if c is not None and None not in (f, o) and f > o and c["j"] >= 0.99]
            third = "met" if len(gaps) == n and statistics.mean(gaps) >= 1 / 3 else "**not met**"
            picked = f"{ms([c['j'] for c in chosen if c])}, {ms(tokens)} ({len(tokens)} of {n})"
            print(f"| {u} | {ms(fixed)} / {ms(hind)} ({sum(x is not None for x in hind)} of {n}) / {ms(oracle)} | "
                  f"{outside} of {n} | {rule} | {picked} | {sum(kept)} of {n} | {forty} | {ms(gaps)} ({len(gaps)} of {n}) {third} |")
        fixed_half = [s["fixed_headline"]["j_at_half"] for s in seeds]
        out_half = sum(1 for s in seeds
                       if ((s["against_fixed"] or {}).get("j_at_half") or {}).get("lo", 0) > 0)
        for rule, half in rule_rows("half"):
            higher = [h is not None and fh is not None and h["c"] <= 0.5 and h["j"] > fh
                      for h, fh in zip(half, fixed_half)]
            rows_half.append(
                f"| {u} | {ms(fixed_half)} | {ms([s['policies_headline']['j_at_half'] for s in seeds])} | {out_half} of {n} | "
                f"{rule} | {ms([h['j'] for h in half if h])}, {ms([h['c'] for h in half if h])} ({sum(h is not None for h in half)} of {n}) | "
                f"{sum(higher)} of {n} |")
    print()
    print("J with at most 50% of all five's tokens:")
    print()
    header("utility", "fixed", "learned, in hindsight", "outside", "choice on val", "learned, chosen on val: J, tokens",
           "seeds where it spends <= 50% and beats fixed's J")
    for r in rows_half:
        print(r)
    print()
    print("The policy chosen on val for 99% of J (by the checked rule) against all five, per seed: its J and its tokens as")
    print("shares of all five's, minus 1, in points, mean [95% paired bootstrap interval over episodes].")
    print("\"J loss outside\" counts the seeds whose J interval lies wholly below 0 (a J loss that")
    print("resampling does not explain); \"saving outside\" those whose tokens interval lies wholly below 0.")
    print()
    header("utility", "J vs all five, per seed", "J loss outside", "tokens vs all five, per seed", "saving outside")
    for u in utilities:
        seeds = json.load(open(f"{work}/frontier-{u}.json"))["seeds"]
        pairs = [s["against_fixed"] or {} for s in seeds]
        iv = lambda i: "-" if not i else f"{100 * i['mean']:+.1f} [{100 * i['lo']:+.1f}, {100 * i['hi']:+.1f}]"
        js = [p.get("chosen_j") for p in pairs]
        cs = [p.get("chosen_tokens") for p in pairs]
        print(f"| {u} | {'; '.join(iv(j) for j in js)} | {sum(1 for j in js if j and j['hi'] < 0)} of {len(js)} | "
              f"{'; '.join(iv(c) for c in cs)} | {sum(1 for c in cs if c and c['hi'] < 0)} of {len(cs)} |")
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
