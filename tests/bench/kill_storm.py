"""Kill storm: random SIGKILLs of real processes writing to one vault, then check that nothing
was lost or half done (issue 8's done-when).

A worker process records feedback, creates facts (some superseding others), learns lessons,
auto-promotes them, remembers notes and reindexes, in a loop; it is SIGKILLed at a random
instant, `--kills` times. Then `doctor` runs once, and the script checks, independently of the
product's own code: every card and note parses, no temporary file is left, every card has its
`created`/`promoted` event, no two cards share an id, and for every card the stored confidence
equals a replay of its logged feedback.

    python3 tests/bench/kill_storm.py --kills 500
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "runtime")]

from helpers import card_meta, events, ok_data, replay_problems, run_cli, storm, temp_files  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        assert run_cli("init", str(vault))[0] == 0
        import os

        os.environ["BRAIN_VAULT"] = str(vault)
        os.environ["BRAIN_ACTOR"] = "storm"
        target = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Storm Target")
        start = time.perf_counter()

        def progress(done: int) -> None:
            if done % 50 == 0:
                print(f"  {done} kills, {time.perf_counter() - start:.0f} s", flush=True)

        storm(vault, target["id"], args.kills, args.seed, reindex_share=0.05, progress=progress)
        leftovers_before = temp_files(vault)
        report = ok_data("doctor")
        repaired = [f for f in report["findings"] if "repaired" in f["fix"]]
        log = events(vault)
        counts = {name: sum(1 for e in log if e["event"] == name)
                  for name in ("used", "rejected", "created", "superseded", "learned", "promoted", "remembered")}
        problems = replay_problems(vault)
        for folder in ("Playbooks", "Inbox", "WorkingMemory"):
            for path in (vault / folder).glob("*.md"):
                card_meta(path)  # raises if a file is partial
        ids = [card_meta(p).get("id") for p in (vault / "Playbooks").glob("*.md")]
        logged = {e.get("id") for e in log if e["event"] in ("created", "promoted")}
        problems += [f"duplicate id {i}" for i in set(ids) if ids.count(i) > 1]
        problems += [f"card {i} has no created/promoted event" for i in ids if i not in logged]
        problems += [f"temporary file left: {p}" for p in temp_files(vault)]
        print(f"kills: {args.kills} in {time.perf_counter() - start:.0f} s; events logged: {counts}")
        print(f"cards: {len(ids)}; temp files before doctor: {len(leftovers_before)}; doctor repairs: {len(repaired)}")
        print(f"doctor errors after the storm: {report['errors']}")
        print("problems: " + ("none" if not problems else "\n  " + "\n  ".join(problems)))
        return 1 if problems or report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
