#!/usr/bin/env python3
"""Wall time of every command through the real CLI, beside `python3 -c pass` in the same run.

    python3 tests/bench/bench_cli.py            # the example vault and a generated 10,000-card vault
    python3 tests/bench/bench_cli.py --cards 1000 --runs 3

Each figure is the median of several whole-process runs (start-up and imports included, as an
agent pays them). Write commands run on a copy of the vault so the example vault stays clean.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = [sys.executable, str(ROOT / "runtime" / "playbook_api.py")]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vault import generate  # noqa: E402


def timed(argv: list[str], env: dict[str, str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        samples.append(time.perf_counter() - start)
        if proc.returncode not in (0,):
            raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.decode()[-300:]}")
    return statistics.median(samples)


def commands(card: str) -> list[tuple[str, list[str]]]:
    counter = iter(range(10**6))
    return [
        ("search", ["search", "timeout connection"]),
        ("search --domain", ["search", "timeout", "--domain", "infra"]),
        ("search (miss)", ["search", "zzqx nothing here"]),
        ("get", ["get", card]),
        ("record", ["record", card, "used"]),
        ("create", ["create", "--type", "pattern", "--domain", "dev", "--title", f"Bench card {next(counter)}",
                    "--tags", "bench", "--body", "benchmark body"]),
        ("list", ["list"]),
        ("audit", ["audit"]),
        ("learn", ["learn", "--title", "Bench lesson", "--type", "pattern", "--domain", "dev",
                   "--problem", "p", "--solution", "s"]),
        ("remember", ["remember", "bench-key", "--body", "x"]),
        ("recall", ["recall", "bench-key"]),
        ("context", ["context"]),
        ("doctor", ["doctor"]),
    ]


def bench_vault(label: str, vault: Path, runs: int) -> None:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "bench"}
    card = sorted((vault / "Playbooks").glob("*.md"))[0].stem
    baseline = timed([sys.executable, "-c", "pass"], env, runs)
    print(f"\n{label}: {len(list((vault / 'Playbooks').glob('*.md')))} cards, median of {runs} runs")
    print(f"{'command':<18}{'seconds':>9}{'x python -c pass':>18}")
    print(f"{'python3 -c pass':<18}{baseline:>9.3f}{1.0:>18.1f}")
    for name, argv in commands(card):
        seconds = timed(ENTRY + argv, env, runs)
        print(f"{name:<18}{seconds:>9.3f}{seconds / baseline:>18.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        example = Path(tmp) / "example"
        shutil.copytree(ROOT, example, ignore=shutil.ignore_patterns(".git", "runtime", "tests", ".brain"))
        bench_vault("example vault", example, args.runs)
        generated = Path(tmp) / "generated"
        start = time.perf_counter()
        generate(generated, args.cards)
        print(f"\n(generated {args.cards} cards in {time.perf_counter() - start:.1f} s)")
        bench_vault("generated vault", generated, args.runs)


if __name__ == "__main__":
    main()
