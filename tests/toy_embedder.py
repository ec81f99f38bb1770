#!/usr/bin/env python3
"""A deterministic toy embedding model for the tests, spoken through the `command` provider.

Reads one JSON string per line on stdin, writes one JSON array per line on stdout. A text's
vector is the normalised sum of one pseudo-random vector per *concept* of its words, where a
small synonym table maps words about the same thing to one concept ("hangs" and "timeout",
"database" and "rds", and a few Japanese words: データベース): so it finds meaning that shares no
word, even across languages, like a real model, only smaller.

TOY_EMBED_FAIL in the environment makes it misbehave: exit, nan, dim (wrong length), json (not
JSON), count (one vector too few), sleep (never answers in time), zero (an all-zero vector).
TOY_EMBED_LOG names a file that gets one line per text embedded (to count provider calls).
"""
import hashlib
import json
import math
import os
import re
import sys
import time

DIM = 48
CONCEPTS = {
    "hang": "wait", "hangs": "wait", "hanging": "wait", "waiting": "wait", "wait": "wait", "stuck": "wait",
    "timeout": "wait", "timeouts": "wait", "slow": "wait",
    "database": "db", "db": "db", "rds": "db", "postgres": "db", "postgresql": "db", "mysql": "db",
    "pool": "conn", "connection": "conn", "connections": "conn", "exhausted": "conn",
    "deploy": "release", "deployment": "release", "release": "release", "rollout": "release",
}
# Japanese words (found as substrings: Japanese has no spaces) and the concept each is about, so
# a Japanese card and an English one can be near, as with a multilingual model.
CONCEPTS_JA = {"データベース": "db", "接続": "conn", "プール": "conn", "枯渇": "conn", "タイムアウト": "wait",
               "待たされる": "wait", "デプロイ": "release"}


def concept_vector(word: str) -> list[float]:
    seed = hashlib.sha256(CONCEPTS.get(word, word).encode()).digest()
    return [(seed[i % 32] ^ (i * 37 % 251)) / 255.0 - 0.5 for i in range(DIM)]


def embed(text: str) -> list[float]:
    total = [0.0] * DIM
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in ("passage", "query"):
            continue
        total = [a + b for a, b in zip(total, concept_vector(word))]
    for word, concept in CONCEPTS_JA.items():
        for _ in range(text.count(word)):
            total = [a + b for a, b in zip(total, concept_vector(concept))]
    norm = math.sqrt(sum(x * x for x in total)) or 1.0
    return [round(x / norm, 6) for x in total]


def main() -> None:
    fail = os.environ.get("TOY_EMBED_FAIL", "")
    texts = [json.loads(line) for line in sys.stdin if line.strip()]
    if os.environ.get("TOY_EMBED_LOG"):
        with open(os.environ["TOY_EMBED_LOG"], "a", encoding="utf-8") as log:
            for text in texts:
                log.write(os.environ.get("BRAIN_EMBED_INPUT", "?") + "\t" + text[:60].replace("\n", " ") + "\n")
    if fail == "exit":
        sys.exit("toy embedder: model file missing")
    if fail == "sleep":
        time.sleep(60)
    if fail == "json":
        print("this is not json")
        return
    vectors = [embed(text) for text in texts]
    if fail == "nan":
        vectors[0][0] = float("nan")
    if fail == "dim":
        vectors = [v[:-1] for v in vectors]
    if fail == "count":
        vectors = vectors[:-1]
    if fail == "zero":
        vectors[0] = [0.0] * DIM
    for vector in vectors:
        print(json.dumps(vector).replace("NaN", "NaN"))


if __name__ == "__main__":
    main()
