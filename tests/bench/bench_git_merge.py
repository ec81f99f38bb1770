#!/usr/bin/env python3
"""Issue 21: a team sharing a vault through git, in bigger randomised rounds than the CI test.

    python3 tests/bench/bench_git_merge.py                       # 3 clones, 3 rounds, seeds 1-5
    python3 tests/bench/bench_git_merge.py --clones 4 --rounds 4 --ops 50 --seeds 1 2 3 --appends

Each seed: a committed vault (20 cards, 4 Inbox candidates, 2 hand-written notes), `--clones`
clones made with `git clone` + `brain init`. Each round, every clone runs `--ops` operations
(tests/git_scenario.py: create, record, update tags/body/status, link, delete, learn, promote,
remember, search misses, feedback on the hand-written notes; `--appends` adds `update --append`,
which two clones may make to one card) and commits; then every clone merges every other's main
with plain `git merge`, in a random order, and about half of them settle by a write before the
next round (the others merge again unsettled). At the end every clone merges every other once
more and settles by `doctor --fix`. Printed per seed and in total:
- conflicted: files git left conflicted over all merges (what needed a person);
- markers: cards holding conflict markers at the end;
- lost: feedback events of some clone missing from a final log;
- disagree: cards whose stored confidence is not the replay of the log after settling
  (tests/git_scenario.py's own replay), summed over the clones;
- ids: hand-written notes with more than one id in a final log;
- missing: cards created in some clone and deleted nowhere, absent from a final vault or not
  found by `search "<title>"`;
- dup_cand: a missed query with more than one Inbox candidate;
- findings: `doctor` findings after settling, summed over the clones;
- diverged: clones whose cards differ from clone 1's at the end (all merged the same commits).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[1]), str(HERE.parents[2] / "runtime")]
os.environ.setdefault("BRAIN_ACTOR", "bench")

import git_scenario as scenario  # noqa: E402
from helpers import run_cli  # noqa: E402

VERBOSE = "--verbose" in sys.argv
COLUMNS = ("conflicted", "markers", "lost", "disagree", "ids", "missing", "dup_cand", "findings", "diverged")


def one_seed(work: Path, seed: int, clones: int, rounds: int, ops: int, appends: bool) -> dict[str, int]:
    rng = random.Random(seed)
    base = work / "base"
    info = scenario.make_base(base)
    paths = []
    for number in range(1, clones + 1):
        scenario.make_clone(base, work / f"clone{number}")
        paths.append(work / f"clone{number}")
    counts = dict.fromkeys(COLUMNS, 0)
    logs: list[list] = []
    for round_number in range(rounds):
        for number, clone in enumerate(paths, start=1):
            scenario.run_ops(clone, number, random.Random(rng.random()), ops, info["hand"], appends=appends,
                              round_number=round_number)
            scenario.commit(clone, f"round {round_number} clone {number}")
            logs.append(scenario.read_log(clone))
        for clone in paths:
            others = [other for other in paths if other != clone]
            rng.shuffle(others)
            for other in others:
                conflicted = scenario.merge(clone, other)
                counts["conflicted"] += len(conflicted)
                if conflicted and VERBOSE:
                    print(f"  round {round_number}: {other.name} into {clone.name}: {conflicted}", file=sys.stderr)
            if rng.random() < 0.5:   # settled by its next write; the others merge on unsettled
                code, _, err = run_cli("remember", "round", "--body", str(round_number), "--vault", str(clone))
                assert code == 0, err
                scenario.commit(clone, f"settled after round {round_number}")
    for clone in paths:   # everyone merges everyone once more, then settles
        for other in paths:
            if other != clone:
                counts["conflicted"] += len(scenario.merge(clone, other))
    for clone in paths:
        for other in paths:
            if other != clone:
                counts["conflicted"] += len(scenario.merge(clone, other))
        code, _, err = run_cli("doctor", "--fix", "--vault", str(clone))
        assert code == 0, err
    made, deleted = scenario.created_ids(logs)
    every_eid = {event["eid"] for log in logs for event in log}
    first_cards = scenario.card_texts(paths[0])
    for clone in paths:
        final = scenario.read_log(clone)
        counts["markers"] += len(scenario.conflict_markers(clone))
        counts["lost"] += len(every_eid - {event["eid"] for event in final})
        counts["disagree"] += len(scenario.disagreements(clone))
        counts["ids"] += sum(1 for found in scenario.ids_per_note(clone, info["hand"]).values() if len(found) > 1)
        counts["missing"] += len(scenario.missing_or_unfound(clone, made, deleted))
        counts["dup_cand"] += sum(1 for count in scenario.candidates_per_query(clone).values() if count > 1)
        counts["findings"] += len(scenario.doctor(clone)["findings"])
        counts["diverged"] += scenario.card_texts(clone) != first_cards
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clones", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ops", type=int, default=40)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--appends", action="store_true", help="also `update --append` (may meet another clone's)")
    parser.add_argument("--verbose", action="store_true", help="name each conflicted file on stderr")
    args = parser.parse_args()
    total = dict.fromkeys(COLUMNS, 0)
    print(f"{'seed':>4}  " + "  ".join(f"{c:>10}" for c in COLUMNS) + "   seconds")
    for seed in args.seeds:
        start = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix="brain-git-bench-") as work:
            counts = one_seed(Path(work), seed, args.clones, args.rounds, args.ops, args.appends)
        for key in COLUMNS:
            total[key] += counts[key]
        print(f"{seed:>4}  " + "  ".join(f"{counts[c]:>10}" for c in COLUMNS) + f"   {time.perf_counter() - start:7.1f}")
    print(f"{'all':>4}  " + "  ".join(f"{total[c]:>10}" for c in COLUMNS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
