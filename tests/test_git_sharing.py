"""A vault shared through git (SPEC 7, Git; issue 21): clones made with `git clone` and set up
with `brain init`, working at the same time through the real command line, merged with plain
`git merge` in every order. See tests/git_scenario.py for the scenario and the checks."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

import git_scenario as scenario
from helpers import run_cli

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _team(tmp_path: Path, clones: int, ops: int, seed: int) -> tuple[Path, list[Path], list[str], list[list]]:
    base = tmp_path / "base"
    info = scenario.make_base(base)
    paths = []
    for number in range(1, clones + 1):
        clone = tmp_path / f"clone{number}"
        scenario.make_clone(base, clone)
        rng = random.Random(seed * 100 + number)
        scenario.run_ops(clone, number, rng, ops + rng.randrange(0, 11), info["hand"])
        scenario.commit(clone, f"clone {number}")
        paths.append(clone)
    logs = [scenario.read_log(clone) for clone in paths]
    return base, paths, info["hand"], logs


def _check_merged(vault: Path, hand: list[str], logs: list[list], settle: tuple[str, ...]) -> dict:
    """The merged vault before and after the step that settles it (`settle`, a real command)."""
    assert scenario.conflict_markers(vault) == []
    # Feedback is never lost: every event of every clone is in the merged log, once.
    merged = scenario.read_log(vault)
    eids = [event["eid"] for event in merged]
    assert len(eids) == len(set(eids))
    assert {e["eid"] for log in logs for e in log} <= set(eids)
    # Before anything settles it, `doctor` names every card whose confidence is not the replay.
    unsettled = scenario.disagreements(vault)
    doctor = scenario.ok(vault, "doctor")
    named = {f["path"] for f in doctor["findings"] if "replay of its logged feedback" in f["message"]}
    assert named == set(unsettled), (named, unsettled)
    code, out, err = run_cli(*settle, "--vault", str(vault))
    assert code == 0, err
    assert scenario.disagreements(vault) == {}
    findings = scenario.ok(vault, "doctor")["findings"]
    assert findings == [], findings
    ids = scenario.ids_per_note(vault, hand)
    assert all(len(found) == 1 for found in ids.values()), ids
    made, deleted = scenario.created_ids(logs)
    assert scenario.missing_or_unfound(vault, made, deleted) == []
    assert all(count == 1 for count in scenario.candidates_per_query(vault).values())
    return {"unsettled": len(unsettled)}


def test_two_clones_merge_in_both_orders_with_no_conflict_and_no_lost_feedback(tmp_path):
    base, (one, two), hand, logs = _team(tmp_path, 2, 30, seed=21)
    first = scenario.copy_clone(one, tmp_path / "one_then_two")
    second = scenario.copy_clone(two, tmp_path / "two_then_one")
    assert scenario.merge(first, two) == []
    assert scenario.merge(second, one) == []
    # One order settled by `doctor --fix`, the other by the next write.
    report = _check_merged(first, hand, logs, ("doctor", "--fix"))
    _check_merged(second, hand, logs, ("remember", "after-merge", "--body", "merged"))
    assert report["unsettled"] > 0   # the scenario does make both clones give feedback on one card
    # Both orders end with the same cards, byte for byte.
    assert scenario.card_texts(first) == scenario.card_texts(second)


def test_three_clones_merge_in_any_order(tmp_path):
    base, (one, two, three), hand, logs = _team(tmp_path, 3, 30, seed=3)
    forward = scenario.copy_clone(one, tmp_path / "forward")
    backward = scenario.copy_clone(three, tmp_path / "backward")
    assert scenario.merge(forward, two) == [] and scenario.merge(forward, three) == []
    assert scenario.merge(backward, two) == [] and scenario.merge(backward, one) == []
    _check_merged(forward, hand, logs, ("reindex",))
    _check_merged(backward, hand, logs, ("doctor", "--fix"))
    assert scenario.card_texts(forward) == scenario.card_texts(backward)
