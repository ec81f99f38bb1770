#!/usr/bin/env python3
"""What portable names and Obsidian's relinking cost: whole-process `create`, `record`, `get` and a
rename (`update --title`) on a generated vault, optionally beside another checkout on a copy of it.

    python3 tests/bench/bench_names.py                                  # 10,000 cards, 9 runs
    python3 tests/bench/bench_names.py --cards 1000 --runs 5
    python3 tests/bench/bench_names.py --against /path/to/other/checkout  # interleaved, same vault copy

`create` pays one listing of Playbooks/ (`storage.names_taken`: a new name must differ from every
existing one in more than case and Unicode normalisation); a rename reads every card file of
Playbooks/ and Inbox/ (`relations.follow_rename`: body and property wikilinks are not in the index).
Each figure is the median of several whole-process runs; with `--against`, both checkouts run in
turn on their own copy of one vault, so the machine's load falls on both alike.
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vault import generate  # noqa: E402


def run(checkout: Path, vault: Path, *argv: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, str(checkout / "runtime" / "playbook_api.py"), *argv],
                   env={**os.environ, "BRAIN_VAULT": str(vault)}, check=True, capture_output=True)
    return (time.perf_counter() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    parser.add_argument("--workdir", type=Path, help="where the vaults go (default: a temporary folder)")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-names-"))
    sides = {"this": (ROOT, work / "this")}
    if args.against:
        sides["other"] = (args.against.resolve(), work / "other")
    if not (work / "this").is_dir():
        generate(work / "this", args.cards)
    for name, (checkout, vault) in sides.items():
        if not vault.is_dir():
            shutil.copytree(work / "this", vault, symlinks=True)
        run(checkout, vault, "reindex")  # each checkout's own index (their schemas may differ)
    times: dict[tuple[str, str], list[float]] = {}
    for number in range(args.runs):
        # Step by step, each side in turn, the side going first alternating from run to run: the
        # one that follows another's step was seen to pay for it (up to 1.4x, this checkout
        # against itself), whatever it is.
        order = list(sides.items()) if number % 2 == 0 else list(reversed(sides.items()))
        cards = {name: sorted(p.stem for p in (vault / "Playbooks").glob("Runbook_*.md"))[number]
                 for name, (_, vault) in sides.items()}
        for step in ("create", "record", "get", "rename"):
            for name, (checkout, vault) in order:
                argv = {
                    "create": ("create", "--type", "pattern", "--domain", "dev", "--title", f"bench {name} {number}",
                               "--body", "x"),
                    "record": ("record", cards[name], "used"),
                    "get": ("get", cards[name]),
                    "rename": ("update", cards[name], "--title", f"renamed {name} {number}"),
                }[step]
                times.setdefault((name, step), []).append(run(checkout, vault, *argv))
    print(f"{args.cards} cards, median of {args.runs} whole-process runs (ms)")
    for step in ("create", "record", "get", "rename"):
        line = f"{step:7s} this {statistics.median(times['this', step]):7.1f}"
        if args.against:
            other = statistics.median(times["other", step])
            line += f"  other {other:7.1f}  ratio {statistics.median(times['this', step]) / other:.2f}"
        print(line)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
