#!/usr/bin/env python3
"""How many cards each vector stage needs for recall@10 against exact cosine: a NumPy replica of
the product's three stages (vectors.py) over a vault's cached vectors, for choosing LOW_FROM,
REFINED_SHARE and RESCORE (issue 22, decision 0038, h22-hybrid4). A design tool, not the product:

    python3 tests/bench/eval_stage_widths.py <vault100000>

Stage 1 with the signs alone (LOW_FROM "-") or with the low level bit where the query weight is
at least LOW_FROM; stage 2 with a 4-bit query (the "-" rows are the signs-only stage 1 with it,
not main's 3-bit stage 2: 0.986 / 0.992 / 0.984 at 5,000 / 400); stage 3 exact on the best R. Query sets as
`vector_recall_sets.py` (bench / other / held); the replica's figures for the product's settings
match the product's own (`vector_recall_sets.py`), e.g. 0.988 / 0.993 / 0.985 at LOW_FROM 3,
2,000 cards, R 250 on the bench's 100,000-card vault.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import hash_embed  # noqa: E402
from vector_recall_sets import queries  # noqa: E402


def main() -> None:
    vault = Path(sys.argv[1])
    db = sqlite3.connect(f"file:{vault / '.brain/cache/vectors.sqlite'}?mode=ro", uri=True)
    info = dict(db.execute("SELECT key, value FROM info"))
    mean, spread = np.array(json.loads(info["mean"])), np.array(json.loads(info["spread"]))
    rows = db.execute("SELECT vec FROM slots JOIN docs USING (path) JOIN vectors USING (hash) ORDER BY slots.pos")
    X = np.array([np.frombuffer(b, dtype=np.float32) for (b,) in rows], dtype=np.float64)
    level = np.clip(np.floor((X - mean) / (1.25 * spread)) + 2, 0, 3)
    hi, lo = level >= 2, (level % 2).astype(bool)
    bias = X @ mean

    def rank_by(score):   # best first, ties by position
        return np.lexsort((np.arange(len(score)), -score))

    def second(q, cand, bits=4):
        w = spread * (q - mean)
        half = 1 << (bits - 1)
        step = np.abs(w).max() / half
        qq = (np.clip(np.floor(w / step) + half, 0, 2 * half - 1) - half + 0.5) * step
        return 1.25 * ((-1.5 + 2 * hi[cand] + lo[cand]) @ qq) + bias[cand]

    for name, texts in {"bench": queries(3, 3, 50), "other": queries(11, 0, 60), "held": queries(17, 0, 100)}.items():
        found: dict[tuple, int] = {}
        for text in texts:
            v = np.array([round(float(x), 6) for x in hash_embed.embed(text)])
            q = v / np.sqrt(v @ v)
            exact = X @ q
            true = set(rank_by(np.round(exact, 12))[:10].tolist())
            c = q - mean
            w = np.round(np.abs(c) / np.abs(c).max() * 7)
            agree_h = np.where(c > 0, hi, ~hi).astype(np.int64)
            agree_l = np.where(c > 0, lo, ~lo).astype(np.int64)
            for low_from in (None, 4, 3, 2):
                refined = (w >= low_from) if low_from else np.zeros_like(w, dtype=bool)
                score = agree_h @ np.where(refined, 2 * w, w).astype(np.int64) + \
                    agree_l @ np.where(refined, w, 0).astype(np.int64)
                order = rank_by(score)
                for width in (1500, 2000, 2500, 5000):
                    cand = np.sort(order[:width])
                    ranked = cand[rank_by(second(q, cand))]
                    for rescore in (200, 250, 300, 400):
                        best = ranked[:rescore]
                        top = set(best[np.argsort(-exact[best], kind="stable")][:10].tolist())
                        key = (low_from or "-", width, rescore)
                        found[key] = found.get(key, 0) + len(top & true)
        for (low_from, width, rescore), hits in found.items():
            print(f"{name}: LOW_FROM {low_from}, stage 1 keeps {width}, stage 3 rescores {rescore}: "
                  f"recall@10 {hits / (10 * len(texts)):.3f}", flush=True)


if __name__ == "__main__":
    main()
