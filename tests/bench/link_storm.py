"""Link storm: many real processes linking, unlinking, re-linking and updating the same few
cards at once (issue 9's done-when, bigger than the suite's `tests/evolution/test_link_storm.py`). Then:
no journal or temporary file is left, `doctor` is clean, and the cards equal an independent
replay of the log (tests/replay.py).

    python3 tests/bench/link_storm.py --workers 8 --steps 150 --cards 4 --seed 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "runtime")]

from helpers import doctor_report, events, ok_data, run_cli, temp_files  # noqa: E402
from replay import replay_all  # noqa: E402
from test_link_storm import make_cards, run_storm  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--steps", type=int, default=150, help="operations per worker")
    parser.add_argument("--cards", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        assert run_cli("init", str(vault))[0] == 0
        os.environ["BRAIN_VAULT"] = str(vault)
        os.environ["BRAIN_ACTOR"] = "storm"
        ids = make_cards(args.cards)
        start = time.perf_counter()
        try:
            results = run_storm(vault, ids, args.workers, args.steps, args.seed)
        except AssertionError as exc:
            print(f"a worker met an unexpected error: {exc}")
            return 1
        took = time.perf_counter() - start
        log = events(vault)
        counts = {k: sum(1 for e in log if e["event"] == k) for k in ("linked", "unlinked", "updated")}
        problems = replay_all(vault)
        if (vault / ".brain" / "journal.json").exists():
            problems.append("a journal was left")
        problems += [f"temporary file left: {p}" for p in temp_files(vault)]
        report = doctor_report()
        print(f"{args.workers} workers x {args.steps} operations in {took:.1f} s; logged {counts}; "
              f"refused (stale --expect-hash, unlink of a link already gone): {sum(r['refused'] for r in results)}")
        print(f"doctor: {report['errors']} errors, {report['warnings']} warnings")
        print("problems: " + ("none" if not problems else "\n  " + "\n  ".join(problems)))
        return 1 if problems or report["errors"] or report["warnings"] else 0


if __name__ == "__main__":
    sys.exit(main())
