"""Kill storm: random SIGKILLs of real processes writing to one vault, then check that nothing
was lost or half done (issue 8's done-when).

A worker process records feedback, creates facts (some superseding others), learns lessons,
auto-promotes them, remembers notes and reindexes, in a loop; it is SIGKILLed at a random
instant, `--kills` times. Then `doctor` runs once, and the script checks, independently of the
product's own code: every card and note parses, no temporary file is left, every card has its
`created`/`promoted` event, no two cards share an id, for every card the stored confidence
equals a replay of its logged feedback, and every write a worker acknowledged (a `record`, a
`create`) has its event in the log, whole, once.

With `--lifecycle` (issue 9) the worker instead creates, updates, deletes, links and unlinks
cards; after every kill `doctor` (or, every other time, the next worker's first write) rolls the
journal forward. At the end the cards must equal a replay of the log (tests/replay.py), and
undoing every logged create/update/delete/link/unlink, newest first, must give back the cards as
they were before the storm, byte for byte.

    python3 tests/bench/kill_storm.py --kills 500
    python3 tests/bench/kill_storm.py --lifecycle --kills 300 --seed 7
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parents[1] / "runtime")]

from helpers import (  # noqa: E402
    acknowledged, card_meta, doctor_report, events, missing_acknowledged, ok_data, pending_journal, replay_problems,
    run_cli, storm, temp_files,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--lifecycle", action="store_true", help="update/delete/link/unlink storm (issue 9)")
    args = parser.parse_args()
    if args.lifecycle:
        return lifecycle_main(args.kills, args.seed)
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
        report = doctor_report()
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
        problems += missing_acknowledged(vault)
        print(f"kills: {args.kills} in {time.perf_counter() - start:.0f} s; events logged: {counts}")
        print(f"cards: {len(ids)}; temp files before doctor: {len(leftovers_before)}; doctor repairs: {len(repaired)}")
        print(f"acknowledged writes checked against the log: {len(acknowledged(vault))}")
        print(f"doctor errors after the storm: {report['errors']}")
        print("problems: " + ("none" if not problems else "\n  " + "\n  ".join(problems)))
        return 1 if problems or report["errors"] else 0


def lifecycle_main(kills: int, seed: int) -> int:
    import os

    from helpers import file_hashes
    from replay import UNDOABLE, chain_problems, lifecycle_storm, replay_all

    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        assert run_cli("init", str(vault))[0] == 0
        os.environ["BRAIN_VAULT"] = str(vault)
        os.environ["BRAIN_ACTOR"] = "storm"
        ids = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Card {n}", "--tags", "storm")["id"]
               for n in range(6)]
        for n in range(5):
            ok_data("link", ids[n], ids[n + 1], "--rel", "extends", "--weight", "0.7")
        before, since = file_hashes(vault, ("Playbooks",)), len(events(vault))
        start = time.perf_counter()
        problems: list[str] = []

        def after_kill(vault: Path, attempt: int) -> None:
            for path in (vault / "Playbooks").glob("*.md"):
                card_meta(path)  # raises if a file is partial
            if attempt % 2:
                doctor_report()
                if pending_journal(vault) or temp_files(vault):
                    problems.append(f"kill {attempt}: doctor left a journal or temporary files")
                problems.extend(f"kill {attempt}: {p}" for p in chain_problems(vault))
            if attempt % 50 == 0:
                print(f"  {attempt} kills, {time.perf_counter() - start:.0f} s", flush=True)

        killed = lifecycle_storm(vault, kills, seed, check_every_kill=after_kill, min_events=kills)
        report = doctor_report()
        problems += replay_all(vault)
        storm = [e for e in events(vault)[since:] if e["event"] in UNDOABLE]
        counts = {kind: sum(1 for e in storm if e["event"] == kind) for kind in UNDOABLE}
        print(f"kills: {killed} in {time.perf_counter() - start:.0f} s; events logged: {counts}")
        print(f"doctor after the storm: {report['errors']} errors, {report['warnings']} warnings")
        for finding in report["findings"]:
            print(f"  {finding}")
        undo_start = time.perf_counter()
        for event in reversed(storm):
            code, out, err = run_cli("undo", event["eid"])
            if code != 0:
                problems.append(f"undo {event['event']} {event['eid']}: {err.strip()}")
                break
        after = file_hashes(vault, ("Playbooks",))
        if after != before:
            changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
            problems.append(f"after undoing the storm these cards differ from before it: {changed[:10]}")
        print(f"undid {len(storm)} events in {time.perf_counter() - undo_start:.0f} s")
        print("problems: " + ("none" if not problems else "\n  " + "\n  ".join(problems)))
        return 1 if problems or report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
