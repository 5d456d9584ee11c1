#!/usr/bin/env bash
# Writes docs/PRICE_STUDY.md: selection by what a subset shows for its
# price (scripts/price_study.py), judged on val only; test is not read.
# Builds the store, sweeps the three offline utilities (each record carries
# `words` and `steps`, what each subset shows) and runs the study on each:
# answer coverage counts distinct content words, the two evidence recalls
# count distinct steps.
#
# Usage: scripts/price_study.sh [MESA] [DATA] [WORK] [OUT]
set -euo pipefail
MESA=${1:-target/release/mesa}
DATA=${2:-../shared/data/ama-bench/open_end_qa_set.jsonl}
WORK=${3:-target/price-study}
OUT=${4:-docs/PRICE_STUDY.md}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$WORK"
started=$(date +%s)
"$MESA" build "$DATA" -o "$WORK/store" --quiet
{
  echo "# Selection by what a subset shows for its price (val only)"
  echo
  echo "Written by \`scripts/price_study.sh\`; every figure below is printed by the command above it."
  echo "A development study: the price is chosen on train and the policy scored on val; test is not"
  echo "read, and nothing here is a default of \`mesa\` yet."
  echo
  echo "\`mesa sweep\` records, per question and per subset of the five structures, the distinct"
  echo "content words and the distinct steps the subset's evidence shows (\`words\`, \`steps\`;"
  echo "memory/src/coverage.rs). Each question reads the subset with the highest"
  echo "\`count(M) / count(all five) - price * tokens(M) / tokens(all five)\`, one price for every"
  echo "question, chosen on train (the highest price that keeps 99% of all five's J, and the lowest"
  echo "that reads at most half of its tokens, each by one standard error). The best fixed subset"
  echo "and the oracle are fitted on the same val questions in hindsight, so they favour the"
  echo "fixed subset. Shares are of all five's J and tokens over each seed's labelled val questions."
  echo
  echo "A policy says this with \`trade words at PRICE\` (or \`steps\`; docs/LANGUAGE.md, \"Trade\"):"
  echo "previews of single structures (and pairs' overlaps) cannot, since what a subset shows"
  echo "together is not a sum of them. \`mesa stratify\` chooses such a trade's unit and price by"
  echo "cross-validation among its candidates (docs/RESULTS.md); this study chose the price by hand."
  echo "Answer coverage counts answer words in the evidence, so counting the evidence's distinct"
  echo "words is close to what it measures: the gain here may not carry over to an answer judged"
  echo "by a model, which these offline utilities cannot tell."
  for spec in answer-coverage:words evidence-recall:steps answer-only-recall:steps; do
    u=${spec%%:*}
    count=${spec##*:}
    "$MESA" sweep "$WORK/store" "$DATA" --utility "$u" -o "$WORK/sweep-$u.jsonl" \
      --items "$WORK/items-$u.jsonl" --quiet
    echo
    echo "## $u, counting $count"
    echo
    echo "\`scripts/price_study.py $WORK/sweep-$u.jsonl --count $count\`"
    echo
    python3 "$HERE/price_study.py" "$WORK/sweep-$u.jsonl" --count "$count"
  done
  echo
  echo "## A finer choice: R's first window alone"
  echo
  echo "R costs more than half of all five's tokens, in windows of which the first is the best"
  echo "scored. Could a selector that may also read R's first window alone (47 options: each"
  echo "subset of S, T, G, V with no R, R's first window or all of R) do much better? The same"
  echo "trade and the same choice of the price, over the 31 subsets (\"31\", the figures above)"
  echo "and over the 47 options (\"47\"), each against the best fixed option and the oracle over"
  echo "its own options; from the sweeps' items (\`mesa sweep --items\`), which recompute the"
  echo "sweeps' 31 subsets exactly. No policy can say this yet (a policy chooses whole structures)."
  for spec in answer-coverage:words evidence-recall:steps; do
    u=${spec%%:*}
    count=${spec##*:}
    echo
    echo "### $u, counting $count"
    echo
    echo "\`scripts/depth_study.py $WORK/sweep-$u.jsonl $WORK/items-$u.jsonl --count $count\`"
    echo
    python3 "$HERE/depth_study.py" "$WORK/sweep-$u.jsonl" "$WORK/items-$u.jsonl" --count "$count"
  done
  echo
  echo "## Weighted words"
  echo
  echo "Whether the word trade would do better weighing each word by which of the five structures"
  echo "show it, by the rank or the score of the items that show it, or by whether those items share"
  echo "a word with the question (answer coverage; the weights and the protocol are in the script's doc):"
  echo
  echo "\`scripts/weight_study.py $WORK/sweep-answer-coverage.jsonl $WORK/items-answer-coverage.jsonl\`"
  echo
  python3 "$HERE/weight_study.py" "$WORK/sweep-answer-coverage.jsonl" "$WORK/items-answer-coverage.jsonl"
  echo
  echo "## The command"
  echo
  echo '```'
  echo "cargo build --release -p mesa"
  echo "scripts/price_study.sh"
  echo '```'
  echo
  echo "This run took $(($(date +%s) - started)) s on a machine with $(nproc) cores."
} > "$OUT"
echo "wrote $OUT"
