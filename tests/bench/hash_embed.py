#!/usr/bin/env python3
"""A fast deterministic stand-in for an embedding model, for bench_semantic.py (uses NumPy when
it is there; the benchmark's own helper, never the product's).

Speaks the `command` protocol: one JSON string per line in, one JSON array per line out. A
text's vector is the normalised sum of one seeded Gaussian vector per distinct word plus a
shared offset (real models put every vector in one narrow cone; the offset imitates that, so
the binary codes are tested on vectors that need centring). 384 dimensions, like e5-small.

With $HASH_EMBED_CACHE naming a JSON file, query vectors (BRAIN_EMBED_INPUT=query) are kept
there, and a call whose texts are all in it answers without importing NumPy, so the provider's
share of a measured search is a small, steady process start rather than NumPy's import.
"""
import hashlib
import json
import os
import re
import sys

DIM = 384
_cache = {}


def word_vector(word):
    import numpy as np

    vec = _cache.get(word)
    if vec is None:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec = _cache[word] = np.random.default_rng(seed).normal(size=DIM)
    return vec


def embed(text):
    import numpy as np

    offset = np.random.default_rng(1).normal(size=DIM) * 0.6
    words = set(re.findall(r"\w+", text.lower()))
    total = sum((word_vector(w) for w in words), np.zeros(DIM)) / max(1, len(words)) ** 0.5
    total = total / (np.linalg.norm(total) or 1.0) + offset
    return total / np.linalg.norm(total)


def main():
    texts = [json.loads(line) for line in sys.stdin if line.strip()]
    path = os.environ.get("HASH_EMBED_CACHE") if os.environ.get("BRAIN_EMBED_INPUT") == "query" else None
    known = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            known = json.load(f)
    missing = [t for t in texts if t not in known]
    for text in missing:
        known[text] = [round(float(x), 6) for x in embed(text)]
    if path and missing:
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(known, f)
        os.replace(path + ".tmp", path)
    sys.stdout.write("".join(json.dumps(known[t]) + "\n" for t in texts))


if __name__ == "__main__":
    main()
