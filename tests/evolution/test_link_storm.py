"""Many real processes linking, unlinking, re-linking and updating the same few cards, and processes
doing so killed at random instants: the cards always equal a replay of the log (tests/replay.py),
and every logged operation can still be undone, newest first, back to the vault as it was.

The bigger versions are `tests/bench/kill_storm.py --lifecycle` and `tests/bench/link_storm.py`.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing
import os
import random
from pathlib import Path

import pytest

from helpers import card_meta, events, file_hashes, ok_data, pending_journal, temp_files
from test_crash_safety import killed_at
from replay import UNDOABLE, chain_problems, lifecycle_storm, replay_all

FORK = multiprocessing.get_context("fork")
RELS = ("related", "extends", "depends_on")


def make_cards(count: int = 4) -> list[str]:
    return [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Card {chr(65 + n)}",
                    "--tags", "storm", "--body", f"Body of card {chr(65 + n)}.")["id"] for n in range(count)]


def storm_call(rng: random.Random, ids: list[str], worker: int, step: int) -> list[list[str]]:
    """One random operation on the shared cards (by id: titles change), as the argv lists it runs."""
    source, target = rng.sample(ids, 2)
    letter = chr(65 + ids.index(source))
    choice = rng.random()
    if choice < 0.35:
        argv = ["link", source, target, "--rel", rng.choice(RELS), "--weight", str(rng.choice((0.2, 0.5, 0.8, 1.0)))]
        if rng.random() < 0.5:
            argv += ["--reason", f"w{worker} s{step}"]
        return [argv]
    if choice < 0.55:
        rel = rng.choice((None, *RELS))
        return [["unlink", source, target, *(["--rel", rel] if rel else [])]]
    if choice < 0.7:
        return [["update", source, "--title", f"Card {letter} {rng.randrange(3)}"]]
    if choice < 0.8:
        return [["update", source, rng.choice(("--add-tag", "--remove-tag")), f"t{rng.randrange(3)}"]]
    if choice < 0.9:
        return [["update", source, "--append", f"mark w{worker} s{step}"]]
    return [["get", source], ["update", source, "--append", f"checked w{worker} s{step}", "--expect-hash"]]


def run_quiet(argv: list[str]) -> dict:
    """`main(argv + --json)` in this process; its envelope."""
    from external_brain.doors.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        main([*argv, "--json"])
    return json.loads(out.getvalue())


def legitimate(argv: list[str], error: dict) -> bool:
    """The errors a racing writer may meet: a stale `--expect-hash` (CONFLICT) and an `unlink` of a
    link another process removed first. Anything else is a bug."""
    if argv[0] == "update" and "--expect-hash" in argv:
        return error["code"] == "CONFLICT"
    if argv[0] == "unlink":
        return error["code"] == "NOT_FOUND" and " has no " in error["message"] and "\n" not in error["message"]
    return False


def storm_worker(ids: list[str], worker: int, steps: int, seed: int, report: str) -> int:
    rng = random.Random(seed * 1000 + worker)
    unexpected, refused = [], 0
    for step in range(steps):
        calls = storm_call(rng, ids, worker, step)
        if calls[0][0] == "get":
            got = run_quiet(calls[0])
            calls = [[*calls[1], got["data"]["hash"]]] if got["ok"] else []
        for argv in calls:
            envelope = run_quiet(argv)
            if envelope["ok"]:
                continue
            if legitimate(argv, envelope["error"]):
                refused += 1
            else:
                unexpected.append({"argv": argv, "error": envelope["error"]})
    Path(report).write_text(json.dumps({"unexpected": unexpected, "refused": refused}))
    return len(unexpected)


def _gated(start, args) -> None:
    start.wait(60)
    failures = storm_worker(*args)
    os._exit(1 if failures else 0)


def run_storm(vault: Path, ids: list[str], workers: int, steps: int, seed: int) -> list[dict]:
    """`workers` forked processes, released together by one event, `steps` operations each."""
    start = FORK.Event()
    reports = [vault.parent / f"worker-{n}.json" for n in range(workers)]
    processes = [FORK.Process(target=_gated, args=(start, (ids, n, steps, seed, str(reports[n]))))
                 for n in range(workers)]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=300)
    results = [json.loads(r.read_text()) if r.exists() else {"missing": str(r)} for r in reports]
    unexpected = [u for r in results for u in r.get("unexpected", [r])]
    assert [p.exitcode for p in processes] == [0] * workers, unexpected[:5]
    return results


def check_storm_result(vault: Path) -> None:
    assert pending_journal(vault) == []
    assert temp_files(vault) == []
    assert replay_all(vault) == []
    report = ok_data("doctor")
    assert report["errors"] == 0 and report["warnings"] == 0, report["findings"]


# ---------------------------------------------------------------------------- concurrency

def test_eight_processes_linking_unlinking_and_updating_the_same_cards_equal_a_replay_of_the_log(vault):
    ids = make_cards(4)
    results = run_storm(vault, ids, workers=8, steps=20, seed=9)

    check_storm_result(vault)
    log = events(vault)
    kinds = {kind: sum(1 for e in log if e["event"] == kind) for kind in ("linked", "unlinked", "updated")}
    assert min(kinds.values()) >= 10, kinds  # every kind of write really happened, concurrently
    assert sum(r["refused"] for r in results) < 8 * 20 / 2


# ---------------------------------------------------------------------------- kill storm

def check_after_kill(vault: Path, attempt: int) -> None:
    """Every card whole after each kill; every other time `doctor` rolls forward at once (else the
    next worker's first write does), and then the log and the files agree."""
    for path in (vault / "Playbooks").glob("*.md"):
        card_meta(path)
    if attempt % 2:
        ok_data("doctor")
        assert pending_journal(vault) == [] and temp_files(vault) == []
        assert chain_problems(vault) == []


def undo_storm(vault: Path, since: int) -> int:
    """Undo every create, update, delete, link and unlink logged after the first `since` events,
    newest first. Returns how many."""
    storm = [e for e in events(vault)[since:] if e["event"] in UNDOABLE]
    for event in reversed(storm):
        ok_data("undo", event["eid"])
    return len(storm)


def test_writers_killed_at_random_instants_leave_cards_equal_to_the_log_and_every_event_undoable(vault):
    ids = make_cards(4)
    ok_data("link", ids[0], ids[1], "--rel", "extends")
    ok_data("link", ids[2], ids[1], "--rel", "related", "--weight", "0.4")
    before, since = file_hashes(vault, ("Playbooks",)), len(events(vault))

    lifecycle_storm(vault, kills=10, seed=2026, check_every_kill=check_after_kill, min_events=15)

    ok_data("doctor")  # the last kill may have left its journal or a temporary file
    check_storm_result(vault)
    assert undo_storm(vault, since) >= 15
    assert file_hashes(vault, ("Playbooks",)) == before


# ---------------------------------------------------------------------------- regressions found by the storms

@pytest.mark.parametrize("operation", ("link", "unlink", "update", "delete"))
def test_a_card_a_killed_rename_left_half_moved_is_found_by_id_by_the_next_write(vault, operation):
    """A rename removes the old file, then writes the new one: a writer killed in between (or
    one still between them) leaves no file with the card's id until the roll-forward. A write
    addressing the card by id used to look it up before taking the lock, and so before rolling
    forward, and failed NOT_FOUND (the link storm bench met it)."""
    a, b = make_cards(2)
    ok_data("link", a, b, "--rel", "extends")
    killed_at("applied", "update", a, "--title", "Card A Renamed", vault=vault)
    assert not any(a in p.read_text(encoding="utf-8") for p in (vault / "Playbooks").glob("Pattern_Card_A*.md"))

    argv = {"link": ("link", a, b, "--rel", "depends_on"), "unlink": ("unlink", a, b),
            "update": ("update", a, "--append", "more"), "delete": ("delete", a)}[operation]
    ok_data(*argv)

    assert [e["event"] for e in events(vault)][-2:] == ["updated", {"link": "linked", "unlink": "unlinked",
                                                                    "update": "updated", "delete": "deleted"}[operation]]
    renamed = vault / "Playbooks" / "Pattern_Card_A_Renamed.md"
    assert renamed.exists() == (operation != "delete")
    assert replay_all(vault) == []
