#!/usr/bin/env python3
"""Stress the search index with real processes and count what went wrong.

    python3 tests/bench/stress_index.py                 # both scenarios, default sizes
    python3 tests/bench/stress_index.py --race-rounds 180 --writers 8 --calls 100

Scenario "race": the index files are deleted, then `--searchers` processes search at once (they
race to create the new index and switch it to WAL); repeated `--race-rounds` times.
Scenario "writers": `--writers` processes each make `--calls` CLI calls (create, record, search
in turn) on one vault at once, while this script holds a descriptor on the index file to see
whether it was ever deleted (a deleted file keeps its inode while it is held, so a new file
cannot pass for it).

Every call is a whole `playbook_api.py` process. Prints the failed calls (exit code not 0, or a
traceback on stderr) with their first error line, and whether the index file was replaced.
Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runtime" / "playbook_api.py"


def call(vault: Path, *argv: str) -> tuple[int, str]:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "stress"}
    done = subprocess.run([sys.executable, str(SCRIPT), *argv], env=env, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stderr


def failed(code: int, stderr: str) -> str | None:
    if code == 0 and "Traceback" not in stderr:
        return None
    lines = [line for line in stderr.splitlines() if line.strip()]
    return lines[-1] if lines else f"exit {code}"


def new_vault(cards: int) -> Path:
    vault = Path(tempfile.mkdtemp(prefix="brain-stress-")) / "vault"
    assert call(vault, "init", str(vault))[0] == 0
    for number in range(cards):
        assert call(vault, "create", "--type", "pattern", "--domain", "dev", "--title", f"Seed card {number}",
                    "--tags", "stress", "--body", f"seed quokka {number}")[0] == 0
    return vault


def race(vault: Path, rounds: int, searchers: int) -> Counter:
    problems: Counter = Counter()
    index = vault / ".brain" / "cache" / "index.sqlite"
    with ThreadPoolExecutor(searchers) as pool:
        for _ in range(rounds):
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{index}{suffix}")
                except FileNotFoundError:
                    pass
            for code, stderr in pool.map(lambda _: call(vault, "search", "quokka"), range(searchers)):
                problem = failed(code, stderr)
                if problem:
                    problems[problem] += 1
    return problems


def writers(vault: Path, processes: int, calls: int) -> tuple[Counter, bool]:
    index = vault / ".brain" / "cache" / "index.sqlite"
    call(vault, "search", "quokka")  # the index exists before the watch starts
    held = os.open(index, os.O_RDONLY)
    problems: Counter = Counter()

    def worker(number: int) -> list[str]:
        out = []
        for n in range(calls):
            if n % 3 == 0:
                argv = ("create", "--type", "pattern", "--domain", "dev", "--title", f"Writer {number} {n}",
                        "--tags", "stress", "--body", "written quokka")
            elif n % 3 == 1:
                argv = ("record", "Pattern_Seed_card_0", "used")
            else:
                argv = ("search", "quokka")
            problem = failed(*call(vault, *argv))
            if problem:
                out.append(f"{argv[0]}: {problem}")
        return out

    try:
        with ThreadPoolExecutor(processes) as pool:
            for found in pool.map(worker, range(processes)):
                problems.update(found)
        stat = os.fstat(held)
        replaced = stat.st_nlink == 0 or os.stat(index).st_ino != stat.st_ino
    finally:
        os.close(held)
    return problems, replaced


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--race-rounds", type=int, default=60)
    parser.add_argument("--searchers", type=int, default=6)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    bad = False
    vault = new_vault(3)
    problems = race(vault, args.race_rounds, args.searchers)
    total = args.race_rounds * args.searchers
    print(f"race: {sum(problems.values())} of {total} searches failed")
    for problem, count in problems.most_common():
        print(f"  {count:4d}  {problem}")
    bad |= bool(problems)
    vault = new_vault(3)
    problems, replaced = writers(vault, args.writers, args.calls)
    total = args.writers * args.calls
    print(f"writers: {sum(problems.values())} of {total} calls failed; index file "
          f"{'REPLACED' if replaced else 'kept'}")
    for problem, count in problems.most_common():
        print(f"  {count:4d}  {problem}")
    bad |= bool(problems) or replaced
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
