#!/usr/bin/env python3
"""Issue 8's done-when check: every hostile card of the fuzz corpus beside 100 good cards.

    python3 tests/bench/hostile_vault.py                 # the whole corpus, ~16,000 cards (~1 min)
    python3 tests/bench/hostile_vault.py --good 100 --keep /tmp/hostile-vault

Writes the whole corpus of `tests/vault/test_frontmatter_fuzz.py` (every mutated card, the hand-made
hostile inputs and the surrogate cases) into `Playbooks/` of a new vault beside `--good` good cards,
then runs search, list, audit, doctor, create, reindex and get, in text and `--json`, each as a real
process of `runtime/playbook_api.py` (the same checks as the unit test, which uses a sample in
process). Every command must exit 0, or 1 with a `brain: error:` line (`doctor`: 1 with its report
when it finds errors), never a traceback, and find every good card. Prints one line per command
and a summary; exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
sys.path[:0] = [str(ROOT / "runtime"), str(TESTS)]

from test_frontmatter_fuzz import check_hostile_vault, fill_hostile_vault, hostile_corpus  # noqa: E402

ENTRY = [sys.executable, str(ROOT / "runtime" / "playbook_api.py")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--good", type=int, default=100, help="good cards beside the hostile ones")
    parser.add_argument("--keep", type=Path, help="build the vault here and keep it (must not exist)")
    args = parser.parse_args()

    workdir = None
    if args.keep:
        root = args.keep
    else:
        workdir = tempfile.mkdtemp(prefix="hostile-vault-")
        root = Path(workdir) / "vault"
    env = {**os.environ, "BRAIN_VAULT": str(root), "BRAIN_ACTOR": "bench"}
    try:
        subprocess.run([*ENTRY, "init", str(root)], env=env, check=True, capture_output=True)
        hostile = hostile_corpus()
        good = fill_hostile_vault(root, hostile, args.good)
        print(f"vault {root}: {len(hostile)} hostile cards, {len(good)} good cards", flush=True)

        def run(*argv: str) -> tuple[int, str, str]:
            start = time.perf_counter()
            proc = subprocess.run([*ENTRY, *argv], env=env, capture_output=True, text=True, timeout=600)
            shown = " ".join(argv)
            print(f"{time.perf_counter() - start:7.2f} s  exit {proc.returncode}  {shown[:70]}", flush=True)
            return proc.returncode, proc.stdout, proc.stderr

        start = time.perf_counter()
        try:
            calls = check_hostile_vault(run, good)
        except AssertionError as failure:
            print(f"FAILED: {str(failure)[:3000]}")
            return 1
        doctor = json.loads(run("doctor", "--json")[1])["data"]
        unreadable = {finding["path"].split(":")[0] for finding in doctor["findings"]
                      if finding["level"] == "error" and "Hostile_" in finding["path"]}
        print(f"ok: {len(calls)} calls in {time.perf_counter() - start:.1f} s, exit codes "
              f"{sorted({code for _, code in calls})}, every good card found; doctor reports "
              f"{len(unreadable)} of {len(hostile)} hostile cards as unreadable, the rest are cards")
        return 0
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
