#!/usr/bin/env python3
"""Recall@10 of the product's pure-Python vector stages against exact cosine, on three seeded
query sets drawn from `bench_scale.py`'s words (issue 22, decision 0038, h22-hybrid4):

    HASH_EMBED_CACHE=<dir>/query-vectors.json python3 tests/bench/vector_recall_sets.py <vault100000> [<checkout>]

- bench: the 50 queries `bench_scale.py` reports recall on (Random(3), after its 3 timed ones);
- other: 60 queries of Random(11), used to compare settings (as decision 0036's "60 others");
- held: 100 queries of Random(17), looked at only for the final settings.
The query vectors are the stand-in model's (`hash_embed.py`, NumPy), rounded as its `command`
answers are; exact cosine by NumPy (the reference), the product's stages with NumPy blocked.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORDS = "timeout connection deploy rollback cache redis postgres migration lock memory dns tls proxy".split()


def queries(seed: int, skip: int, count: int) -> list[str]:
    rng = random.Random(seed)
    for _ in range(skip):
        rng.sample(WORDS, 3)
    return [" ".join(rng.sample(WORDS, 3)) for _ in range(count)]


def main() -> None:
    vault = Path(sys.argv[1])
    root = Path(sys.argv[2]) if len(sys.argv) > 2 else HERE.parents[1]
    sys.path.insert(0, str(root / "runtime"))
    sys.path.insert(0, str(HERE))
    import numpy as np

    import hash_embed
    from external_brain.search.embeddings import model_key
    from external_brain.search.vectors import VectorStore, unit
    from external_brain.vault.storage import Vault

    v = Vault(vault)
    store = VectorStore.open(v, model_key(v.settings.embeddings), create=False)
    paths, blobs = zip(*store.db.execute("SELECT path, vec FROM docs JOIN vectors USING (hash)"))
    matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).astype(np.float64)
    for name, texts in {"bench": queries(3, 3, 50), "other": queries(11, 0, 60), "held": queries(17, 0, 100)}.items():
        found = 0
        for text in texts:
            query = unit([round(float(x), 6) for x in hash_embed.embed(text)])
            exact = {paths[i] for i in np.argsort(-(matrix @ np.array(query)), kind="stable")[:10]}
            found += len(exact & {n.path for n in store.nearest(query, use_numpy=False)[:10]})
        print(f"{root}: {name} ({len(texts)} queries) recall@10 {found / (10 * len(texts)):.3f}", flush=True)
    store.close()


if __name__ == "__main__":
    main()
