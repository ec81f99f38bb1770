#!/usr/bin/env python3
"""Recall@10 against exact cosine of candidate-selection codes for the vector prefilter: which
code, which query form, how many candidates to rescore. A design tool (NumPy), not the product.

    python3 tests/bench/eval_codes.py --vault /tmp/brain-sem/vault10000   # a vault's cached vectors
    python3 tests/bench/eval_codes.py --e5 /tmp/eb-e5                     # cached SciFact/JSQuAD e5 vectors
    python3 tests/bench/eval_codes.py --e5 /tmp/eb-e5 --product           # the product's own search

With --vault, the queries are 200 cached card vectors (each excluded from its own ranking); with
--e5, the real e5 query vectors of SciFact and 300 of JSQuAD. Codes compared:
- hamming: 1 bit a dimension, sign(x - mean), ranked by Hamming distance to the query's code
  (the product today, vectors.py);
- asym1: the same codes ranked by their dot product with the float, centred query;
- asym2/qB: 2 bits a dimension (x - mean in 4 levels over +-2.5 standard deviations of that
  dimension), ranked by their dot product with the centred query quantised to B bits (B bit
  planes: 2 x B `int.bit_count`s a card in pure Python) plus a per-card constant (the levels
  against the mean).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sqlite3
from pathlib import Path

import numpy as np


def from_vault(vault: Path, queries: int = 200):
    db = sqlite3.connect(f"file:{vault / '.brain/cache/vectors.sqlite'}?mode=ro", uri=True)
    cards = np.array([np.frombuffer(b, dtype=np.float32) for (b,) in db.execute("SELECT vec FROM vectors")],
                     dtype=np.float64)
    picked = np.random.default_rng(7).choice(len(cards), size=min(queries, len(cards)), replace=False)
    return cards, cards[picked], picked


def from_e5(folder: Path):
    db = sqlite3.connect(f"file:{folder / 'cache.sqlite'}?mode=ro", uri=True)
    vectors = {k: np.frombuffer(b, dtype=np.float32) for k, b in db.execute("SELECT k, vec FROM v")}

    def read(name, limit=None):
        lines = (folder / name).read_text(encoding="utf-8").splitlines()[:limit]
        found = (vectors.get(hashlib.sha1(json.loads(line).encode()).digest()) for line in lines)
        return [v for v in found if v is not None]

    cards = np.array(read("scifact.passages.jsonl") + read("jsquad.passages.jsonl"), dtype=np.float64)
    queries = np.array(read("scifact.queries.jsonl") + read("jsquad.queries.jsonl", 300), dtype=np.float64)
    return cards, queries, None


def product_recall(cards, queries, rescore: int) -> None:
    """Recall@10 of the product's nearest-neighbour search against exact cosine."""
    import sys
    import tempfile
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))
    from external_brain.storage import Vault
    from external_brain.vectors import VectorStore, text_hash

    with tempfile.TemporaryDirectory() as tmp:
        store = VectorStore.open(Vault(Path(tmp)), "eval")
        rows = [[float(x) for x in card] for card in cards]
        hashes = [text_hash(str(i)) for i in range(len(rows))]
        store.store([(f"c{i:06d}", 1, 1, h) for i, h in enumerate(hashes)], dict(zip(hashes, rows)))
        store.finish("eval")
        found, seconds = 0, []
        for q in queries:
            exact = {f"c{i:06d}" for i in np.argsort(-(cards @ q), kind="stable")[:10]}
            start = time.perf_counter()
            near = store.nearest([float(x) for x in q], rescore, use_numpy=False)
            seconds.append(time.perf_counter() - start)
            found += len(exact & {n.path for n in near[:10]})
        store.close()
    print(f"{len(cards)} cards, {len(queries)} queries, {rescore} rescored: product recall@10 {found / (10 * len(queries)):.3f}, "
          f"median {1000 * sorted(seconds)[len(seconds) // 2]:.1f} ms a query")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vault", type=Path)
    parser.add_argument("--e5", type=Path)
    parser.add_argument("--product", action="store_true", help="measure the product's search instead")
    parser.add_argument("--rescore", type=int, default=400, help="--product: candidates ranked by exact cosine")
    args = parser.parse_args()
    cards, queries, self_rows = from_vault(args.vault) if args.vault else from_e5(args.e5)
    cards /= np.linalg.norm(cards, axis=1, keepdims=True)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    if args.product:
        product_recall(cards, queries, args.rescore)
        return
    mean = cards[:256].mean(0)
    centred = cards - mean
    signs = np.where(centred > 0, 1.0, -1.0)
    sd = centred[:256].std(0) + 1e-9
    levels = (np.clip(np.floor((centred / (2.5 * sd) + 1) * 2), 0, 3) + 0.5) / 2 - 1

    # The query is quantised centred (a model's vectors share one large common direction that
    # would take all the levels); what the mean part of the query adds is a per-card constant.
    bias = levels @ (mean * 2.5 * sd)

    def quantised(q, bits):
        step = np.abs(q).max() / (2 ** (bits - 1) - 0.5)
        return np.round(q / step) * step

    scorers = {
        "hamming": lambda q: signs @ np.where(q - mean > 0, 1.0, -1.0),
        "asym1": lambda q: signs @ (q - mean),
        "asym2/q4": lambda q: levels @ quantised((q - mean) * 2.5 * sd, 4) + bias,
        "asym2/q3": lambda q: levels @ quantised((q - mean) * 2.5 * sd, 3) + bias,
    }
    print(f"{len(cards)} cards, {len(queries)} queries; recall@10 by candidates rescored exactly")
    for name, score in scorers.items():
        row = []
        for rescore in (100, 200, 400, 1000):
            found = 0
            for n, q in enumerate(queries):
                exact_scores = cards @ q
                if self_rows is not None:
                    exact_scores[self_rows[n]] = -np.inf
                exact = set(np.argsort(-exact_scores, kind="stable")[:10])
                approx = score(q)
                if self_rows is not None:
                    approx[self_rows[n]] = -np.inf
                candidates = np.argsort(-approx, kind="stable")[:rescore]
                top = candidates[np.argsort(-exact_scores[candidates], kind="stable")[:10]]
                found += len(exact & set(top))
            row.append(f"{rescore}: {found / (10 * len(queries)):.3f}")
        print(f"  {name:<9} " + "  ".join(row), flush=True)


if __name__ == "__main__":
    main()
