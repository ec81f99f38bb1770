#!/usr/bin/env python3
"""A fast deterministic stand-in for an embedding model, for bench_semantic.py (uses NumPy when
it is there; the benchmark's own helper, never the product's).

Speaks the `command` protocol: one JSON string per line in, one JSON array per line out. A
text's vector is the normalised sum of one seeded Gaussian vector per distinct word plus a
shared offset (real models put every vector in one narrow cone; the offset imitates that, so
the binary codes are tested on vectors that need centring). 384 dimensions, like e5-small.
"""
import hashlib
import json
import re
import sys

import numpy as np

DIM = 384
_cache = {}
OFFSET = np.random.default_rng(1).normal(size=DIM) * 0.6


def word_vector(word):
    vec = _cache.get(word)
    if vec is None:
        seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "big")
        vec = _cache[word] = np.random.default_rng(seed).normal(size=DIM)
    return vec


def embed(text):
    words = set(re.findall(r"\w+", text.lower()))
    total = sum((word_vector(w) for w in words), np.zeros(DIM)) / max(1, len(words)) ** 0.5
    total = total / (np.linalg.norm(total) or 1.0) + OFFSET
    return total / np.linalg.norm(total)


def main():
    out = sys.stdout
    for line in sys.stdin:
        if line.strip():
            out.write(json.dumps([round(float(x), 6) for x in embed(json.loads(line))]) + "\n")


if __name__ == "__main__":
    main()
