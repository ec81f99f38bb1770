#!/usr/bin/env python3
"""Paired A/B wall time of whole `search`, `hook prompt` and `brief` processes: this checkout
against another, on the same generated vault (one copy each, so neither sees the other's index).

    git archive main | tar -x -C /tmp/main
    python3 tests/bench/ab_latency.py /tmp/main                     # 10,000 cards, 21 pairs
    python3 tests/bench/ab_latency.py /tmp/main --cards 2000 --pairs 9

No embedding provider is configured (the default: keyword search, the path every agent pays).
Each pair runs the same command once per checkout, the order alternating pair by pair, after one
warm-up run each (index built, bytecode cached); reports the median of the per-pair ratios
this/other, which cancels most of a shared machine's drift. Queries rotate through a fixed list.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from gen_vault import generate  # noqa: E402

QUERIES = ["ECS task timeout", "database connection pool", "deploy rollback checklist",
           "cache invalidation", "デプロイ 失敗"]


def run(checkout: Path, vault: Path, argv: list[str], stdin: bytes | None = None) -> float:
    env = dict(os.environ, BRAIN_VAULT=str(vault))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(checkout / "runtime" / "playbook_api.py"), *argv], env=env,
                          input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{checkout}: {' '.join(argv)} failed: {proc.stderr.decode()[-300:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", type=Path, help="the other checkout (its root)")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eb-ab-") as tmp:
        generate(Path(tmp) / "gen", args.cards)
        sides = {}
        for name, checkout in (("this", ROOT), ("other", args.other.resolve())):
            shutil.copytree(Path(tmp) / "gen", Path(tmp) / name)
            sides[name] = (checkout, Path(tmp) / name)

        def commands(i: int):
            query = QUERIES[i % len(QUERIES)]
            prompt = json.dumps({"session_id": "ab", "transcript_path": "", "cwd": tmp,
                                 "hook_event_name": "UserPromptSubmit", "prompt": query}).encode()
            return {"search": (["search", query], None), "hook prompt": (["hook", "prompt"], prompt),
                    "brief": (["brief", query], None)}

        for checkout, vault in sides.values():   # warm-up: index, bytecode
            for argv, stdin in commands(0).values():
                run(checkout, vault, argv, stdin)
        ratios: dict[str, list[float]] = {name: [] for name in commands(0)}
        times: dict[str, dict[str, list[float]]] = {name: {"this": [], "other": []} for name in commands(0)}
        for i in range(args.pairs):
            order = ("this", "other") if i % 2 == 0 else ("other", "this")
            for name, (argv, stdin) in commands(i).items():
                took = {side: run(*sides[side], argv, stdin) for side in order}
                ratios[name].append(took["this"] / took["other"])
                for side in took:
                    times[name][side].append(took[side])
        load = os.getloadavg()[0]
        print(f"{args.cards} cards, {args.pairs} pairs, load {load:.1f}")
        for name, values in ratios.items():
            print(f"{name:12s} this/other {statistics.median(values):.3f}   medians "
                  f"{statistics.median(times[name]['this']) * 1000:.0f} ms / "
                  f"{statistics.median(times[name]['other']) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
