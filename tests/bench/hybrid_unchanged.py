#!/usr/bin/env python3
"""Hybrid search ranks exactly as another checkout does, on the same vault with vectors:

    python3 tests/bench/hybrid_unchanged.py /tmp/base --vault /tmp/scale/vault100000

Queries: `bench_scale.py`'s three hybrid queries and twelve more drawn the same way (seeded).
Each checkout searches every query twice in one process of its own (the second time with
whatever that process kept from the first: `vectors._HELD`), NumPy blocked, limit 10, with
--explain's parts; path, score and fusion parts of every hit must be identical, query by query.
The vault's query vectors should be cached (HASH_EMBED_CACHE, as `bench_scale.py` sets it) or
its provider reachable. Prints how many hits were compared and every difference.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = "timeout connection deploy rollback cache redis postgres migration lock memory dns tls proxy".split()

CHILD = ("import sys, json; sys.modules['numpy'] = None; root, vault, *queries = sys.argv[1:]; "
         "sys.path.insert(0, root + '/runtime'); from pathlib import Path; "
         "from external_brain.vault.storage import Vault; from external_brain.search import search; "
         "v = Vault(Path(vault)); out = {}\n"
         "for number in range(2):\n    for q in queries:\n"
         "        r = search(v, q, limit=10, mode='hybrid', explain=True)\n"
         "        out[f'{number}:{q}'] = [[str(h.card.path), h.score, h.fusion] for h in r.hits] + [r.warnings]\n"
         "print(json.dumps(out, default=str))")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path)
    parser.add_argument("--vault", type=Path, required=True)
    args = parser.parse_args()
    rng = random.Random(3)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(15)]
    found = []
    for root in (ROOT, args.base):
        done = subprocess.run([sys.executable, "-c", CHILD, str(root), str(args.vault), *queries],
                              capture_output=True, text=True, check=True)
        found.append(json.loads(done.stdout))
    ours, theirs = found
    differ = [key for key in ours if ours[key] != theirs.get(key)]
    warned = [key for key in ours if ours[key][-1]]
    hits = sum(len(v) - 1 for v in ours.values())
    print(f"{len(ours)} searches, {hits} hits compared: {'identical' if not differ else f'{len(differ)} differ'}")
    for key in differ + warned:
        print(f"  {key}: ours {ours[key]}\n  {' ' * len(key)}  base {theirs.get(key)}")
    sys.exit(1 if differ or warned else 0)


if __name__ == "__main__":
    main()
