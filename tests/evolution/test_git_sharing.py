"""A vault shared through git (README, "Sharing a vault with git"; issue 21): clones made with `git clone` and set up
with `brain init`, working at the same time through the real command line, merged with plain
`git merge` in every order. See tests/git_scenario.py for the scenario and the checks."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
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
    doctor = scenario.doctor(vault)
    named = {f["path"] for f in doctor["findings"] if "replay of its logged feedback" in f["message"]}
    assert named == set(unsettled), (named, unsettled)
    code, out, err = run_cli(*settle, "--vault", str(vault))
    assert code == 0, err
    assert scenario.disagreements(vault) == {}
    findings = scenario.doctor(vault)["findings"]
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


# ---------------------------------------------------------------------------- one rule at a time

def _pair(tmp_path: Path, setup=None) -> tuple[Path, Path, Path]:
    """A committed vault with two cards, a hand-written note and a candidate; two clones of it,
    each set up with `brain init`."""
    base = tmp_path / "base"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    for title in ("Kafka consumer lag", "ECS task timeout"):
        scenario.ok(base, "create", "--type", "troubleshooting", "--domain", "infra", "--title", title,
                    "--body", scenario.body_of(title))
    (base / "Playbooks" / "Hand.md").write_text("# Hand\n\nWritten by hand.\n", encoding="utf-8")
    if setup:
        setup(base)
    scenario.commit(base, "base")
    one, two = tmp_path / "one", tmp_path / "two"
    scenario.make_clone(base, one)
    scenario.make_clone(base, two)
    return base, one, two


def _merged(one: Path, two: Path) -> Path:
    scenario.commit(one, "one")
    scenario.commit(two, "two")
    assert scenario.merge(one, two) == []
    return one


KAFKA = "Playbooks/Troubleshooting_Kafka_consumer_lag.md"
ECS = "Playbooks/Troubleshooting_ECS_task_timeout.md"


def test_init_on_a_clone_registers_the_driver_once_and_says_so(tmp_path):
    base, one, _ = _pair(tmp_path)
    config = scenario.git(one, "config", "--get", "merge.brain.driver").stdout.strip()
    assert config.endswith(" merge-driver %O %A %B %P") and "playbook_api.py" in config
    code, out, err = run_cli("init", str(one))
    assert code == 0 and "merge driver `brain` already registered" in out and err == ""
    assert scenario.git(one, "status", "--porcelain").stdout == ""   # nothing versioned changed
    # A clone that never ran `brain init` has no driver: git's line merge would be used there.
    plain = tmp_path / "plain"
    scenario.git(tmp_path, "clone", "-q", str(base), str(plain))
    assert scenario.git(plain, "config", "--get", "merge.brain.driver", check=False).returncode == 1


def test_the_driver_runs_from_any_folder_for_a_vault_inside_a_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    scenario.git(repo, "init", "-q", "-b", "main")
    vault = repo / "notes" / "brain"
    scenario.ok(vault, "init", str(vault))
    card = scenario.ok(vault, "create", "--type", "pattern", "--domain", "dev", "--title", "Pool sizing",
                       "--tags", "db")["path"]
    scenario.commit(repo, "base")
    clones = []
    for name, tag in (("a", "alpha"), ("b", "beta")):
        clone = tmp_path / name
        scenario.git(tmp_path, "clone", "-q", str(repo), str(clone))
        scenario.ok(clone / "notes" / "brain", "init", str(clone / "notes" / "brain"))
        scenario.ok(clone / "notes" / "brain", "update", card, "--add-tag", tag)
        scenario.ok(clone / "notes" / "brain", "record", card, "used")
        scenario.commit(clone, name)
        clones.append(clone)
    assert scenario.merge(clones[0], clones[1]) == []
    text = (clones[0] / "notes" / "brain" / card).read_text(encoding="utf-8")
    assert "tags: [db, alpha, beta]" in text


def test_a_card_deleted_in_one_clone_and_edited_in_the_other_stays_deleted_and_undo_brings_the_edit(tmp_path):
    base, one, two = _pair(tmp_path)
    deleted = scenario.ok(one, "delete", KAFKA)
    scenario.ok(two, "update", KAFKA, "--body", scenario.body_of("Kafka").replace("Clone 2 note: nothing yet.",
                                                                             "Clone 2 note: raise max.poll.records."))
    scenario.ok(two, "record", KAFKA, "used")
    merged = _merged(one, two)
    assert not (merged / KAFKA).exists()                              # the delete wins
    copy = scenario.ok(merged, "history", deleted["id"])["entries"]
    assert copy and not scenario.ok(merged, "search", "Kafka consumer lag")["hits"]
    restored = scenario.ok(merged, "undo", deleted["event"])
    assert KAFKA in restored["files"]
    text = (merged / KAFKA).read_text(encoding="utf-8")
    assert "raise max.poll.records" in text                           # the other clone's edit came back with it
    assert scenario.disagreements(merged) == {}                       # with the confidence its feedback gives


def test_the_same_title_created_in_two_clones_gives_two_cards(tmp_path):
    base, one, two = _pair(tmp_path)
    first = scenario.ok(one, "create", "--type", "pattern", "--domain", "dev", "--title", "Retry budget",
                        "--body", "From one.")
    second = scenario.ok(two, "create", "--type", "pattern", "--domain", "dev", "--title", "Retry budget",
                         "--body", "From two.")
    assert first["path"] == second["path"] and first["id"] != second["id"]
    merged = _merged(one, two)
    merges = [f for f in scenario.doctor(merged)["findings"] if "same file name" in f["message"]]
    assert [(f["path"], f["message"].split(" (")[0]) for f in merges] == \
        [(first["path"], "holds 1 other card(s) that had the same file name in another clone")]
    scenario.ok(merged, "record", first["path"], "used")               # the next write moves it out
    ids = scenario.cards_in(merged)
    assert {first["id"], second["id"]} <= set(ids.values())
    hits = scenario.ok(merged, "search", "Retry budget")["hits"]
    assert {first["id"], second["id"]} <= {hit["id"] for hit in hits}


def test_promoting_one_candidate_in_two_clones_gives_one_card_and_one_miss_gives_one_candidate(tmp_path):
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(root, "search", "zorblax frobnicate"))
    candidate = "Inbox/Search_Miss_zorblax_frobnicate.md"
    for clone, misses in ((one, 1), (two, 2)):
        scenario.ok(clone, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Zorblax fix")
        for _ in range(misses):
            assert scenario.ok(clone, "search", "quibble wibblet")["miss_candidate"]
    merged = _merged(one, two)
    promoted = [rel for rel in scenario.cards_in(merged) if "Zorblax" in rel]
    assert promoted == ["Playbooks/Runbook_Zorblax_fix.md"]
    # The candidate stays, closed: the record of its promotion (one file, as in both clones).
    assert scenario.ok(merged, "get", candidate)["frontmatter"]["status"] == "promoted"
    assert scenario.candidates_per_query(merged) == {"quibble wibblet": 1, "zorblax frobnicate": 1}
    assert "misses: 3" in (merged / "Inbox/Search_Miss_quibble_wibblet.md").read_text(encoding="utf-8")
    assert [f["message"] for f in scenario.doctor(merged)["findings"]] == ["no id"]   # Hand.md, never written


def test_feedback_given_before_the_other_clones_promotion_of_one_candidate_counts_after_the_merge(tmp_path):
    # h13-review: a `promoted` started the card's replay again, and the same candidate promoted in the
    # other clone a little later is a second `promoted` of the one id: after the merge, the feedback the
    # first clone gave in between was dropped (3 x used -> 0.55 instead of 0.6355), and doctor said all good.
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(root, "search", "zorblax frobnicate"))
    candidate = "Inbox/Search_Miss_zorblax_frobnicate.md"
    card = scenario.ok(one, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Zorblax fix")
    for _ in range(3):
        scenario.ok(one, "record", card["path"], "used")
    time.sleep(1.1)   # the other clone's promotion comes later by the log's time
    assert scenario.ok(two, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title",
                       "Zorblax fix")["path"] == card["path"]
    scenario.ok(two, "record", card["path"], "used")
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    assert scenario.ok(merged, "get", card["path"])["frontmatter"]["confidence"] == 0.67195   # four `used` from 0.5
    assert scenario.replay_confidence(scenario.read_log(merged))[card["id"]] == 0.67195
    assert [f["message"] for f in scenario.doctor(merged)["findings"]] == ["no id"]   # Hand.md, never written
    _settle_alike(one, two)


def test_a_hand_written_note_gets_one_id_in_every_clone(tmp_path):
    base, one, two = _pair(tmp_path)
    ids = {scenario.ok(clone, "record", "Playbooks/Hand.md", outcome)["id"]
           for clone, outcome in ((one, "used"), (two, "rejected"))}
    assert len(ids) == 1
    merged = _merged(one, two)
    assert scenario.ids_per_note(merged, ["Playbooks/Hand.md"]) == {"Playbooks/Hand.md": ids}
    scenario.ok(merged, "doctor", "--fix")
    # 0.5 -> 0.55 / 0.45: both feedbacks count, in the order they were given
    assert scenario.disagreements(merged) == {}
    assert scenario.replay_confidence(scenario.read_log(merged))[ids.pop()] in (0.495, 0.505)


def test_a_real_body_conflict_names_only_that_card_and_it_stays_readable(tmp_path):
    base, one, two = _pair(tmp_path)
    for clone, words in ((one, "restart the consumer"), (two, "add partitions")):
        body = scenario.ok(clone, "get", KAFKA)["body"]
        scenario.ok(clone, "update", KAFKA, "--body", body.replace("what happened and what fixed it", words),
                    "--add-tag", clone.name)
        scenario.ok(clone, "record", ECS, "used")
    scenario.commit(one, "one")
    scenario.commit(two, "two")
    assert scenario.merge(one, two) == [KAFKA]                       # a real conflict: git stops on it alone
    code, data = scenario.brain(one, "get", KAFKA)
    assert code == 0 and data["frontmatter"]["tags"] == ["one", "two"]   # the frontmatter merged and parses
    errors = [f for f in scenario.doctor(one)["findings"] if f["level"] == "error"]
    assert len(errors) == 1 and errors[0]["path"].startswith(KAFKA + ":")
    assert "unresolved git merge conflict" in errors[0]["message"]


def test_working_memory_stays_per_machine(tmp_path):
    base, one, two = _pair(tmp_path)
    for clone in (one, two):
        scenario.ok(clone, "remember", "deploy-state", "--body", f"deploying from {clone.name}")
    merged = _merged(one, two)
    assert scenario.git(merged, "ls-files", "WorkingMemory").stdout.split() == \
        ["WorkingMemory/.gitignore", "WorkingMemory/.gitkeep"]
    assert scenario.ok(merged, "recall", "deploy-state")["body"] == "deploying from one"
    assert scenario.ok(two, "recall", "deploy-state")["body"] == "deploying from two"


def test_without_the_driver_doctor_names_every_card_the_merge_left_wrong_and_fix_repairs_them(tmp_path):
    base = tmp_path / "base"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    paths = [scenario.ok(base, "create", "--type", "pattern", "--domain", "dev", "--title", f"Card {n}")["path"]
             for n in range(3)]
    scenario.commit(base, "base")
    clones = []
    for name, outcome in (("one", "used"), ("two", "rejected")):
        clone = tmp_path / name
        scenario.git(tmp_path, "clone", "-q", str(base), str(clone))   # no `brain init`: no driver
        for path in paths[:2]:
            scenario.ok(clone, "record", path, outcome)
        scenario.commit(clone, name)
        clones.append(clone)
    one, two = clones
    scenario.git(one, "fetch", "-q", str(two), "main")
    assert scenario.git(one, "merge", "-q", "FETCH_HEAD", check=False).returncode == 1
    conflicted = scenario.git(one, "diff", "--name-only", "--diff-filter=U").stdout.split()
    assert sorted(conflicted) == sorted(paths[:2])                   # git's line merge: `confidence:` conflicts
    for path in conflicted:                                          # resolved in haste, as a web editor offers
        scenario.git(one, "checkout", "--ours", "--", path)
    scenario.commit(one, "resolved")
    wrong = scenario.disagreements(one)
    assert sorted(wrong) == sorted(paths[:2])
    named = {f["path"] for f in scenario.doctor(one)["findings"] if "replay" in f["message"]}
    assert named == set(wrong)
    fixed = scenario.ok(one, "doctor", "--fix")
    assert fixed["fixed"] and fixed["findings"] == [] and scenario.disagreements(one) == {}


def test_reads_after_a_merge_never_change_playbooks_and_a_miss_still_makes_its_candidate(tmp_path):
    base, one, two = _pair(tmp_path)
    scenario.ok(one, "record", KAFKA, "used")
    scenario.ok(two, "record", KAFKA, "rejected")
    merged = _merged(one, two)
    before = scenario.card_texts(merged)
    assert scenario.disagreements(merged)                             # a merge no write has settled yet
    for args in (("search", "kafka lag"), ("get", KAFKA), ("list",), ("brief", "kafka"), ("audit",)):
        scenario.ok(merged, *args)
    assert scenario.ok(merged, "search", "glorp snazzle")["miss_candidate"] == "Inbox/Search_Miss_glorp_snazzle.md"
    after = scenario.card_texts(merged)
    assert {k: v for k, v in after.items() if k.startswith("Playbooks/")} == \
        {k: v for k, v in before.items() if k.startswith("Playbooks/")}
    assert "Inbox/Search_Miss_glorp_snazzle.md" in after               # the miss's candidate stays
    scenario.ok(merged, "remember", "x", "--body", "a write")          # the next write settles
    assert scenario.disagreements(merged) == {}
    assert (merged / "Inbox/Search_Miss_glorp_snazzle.md").exists()


def test_a_candidate_promoted_in_two_clones_while_a_third_learned_it_again_merges_across_rounds(tmp_path):
    # The bench's last conflicts (issue 21, second round): one clone promotes a learned candidate,
    # another learns the same lesson again and merges that promotion, a third promotes it on its
    # own; then the second and third merge, their common ancestor still holding the candidate.
    lesson = ("learn", "--title", "Pin the node version in ci", "--type", "runbook", "--domain", "ops",
              "--tags", "ci", "--problem", "builds broke when the runner updated node")
    base = tmp_path / "base"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    for step in range(5):
        scenario.ok(base, *lesson, "--solution", f"pin it in .nvmrc (seen at step {step})")
    candidate = "Inbox/Learned_Pin_the_node_version_in_ci.md"
    scenario.commit(base, "base")
    one, two, three = (tmp_path / name for name in ("one", "two", "three"))
    for clone in (one, two, three):
        scenario.make_clone(base, clone)
    scenario.ok(two, "promote", candidate, "--type", "runbook", "--domain", "ops")
    scenario.commit(two, "two promotes")
    for step in range(3):
        scenario.ok(one, *lesson, "--solution", f"and pin the package manager too (step {step})")
    scenario.commit(one, "one learns it again")
    assert scenario.merge(one, two) == []
    scenario.ok(three, "promote", candidate, "--type", "runbook", "--domain", "ops")
    scenario.commit(three, "three promotes")
    other_order = scenario.copy_clone(three, tmp_path / "three_then_one")
    assert scenario.merge(one, three) == []
    assert scenario.merge(other_order, one) == []
    for merged in (one, other_order):
        scenario.ok(merged, "doctor", "--fix")
        cards = [rel for rel in scenario.cards_in(merged) if "Pin_the_node" in rel]
        assert cards == ["Playbooks/Runbook_Pin_the_node_version_in_ci.md"]
        assert scenario.doctor(merged)["findings"] == []
        # The candidate stays as the record of its promotion, with the evidence learned again.
        record = scenario.ok(merged, "get", candidate)
        assert record["frontmatter"]["status"] == "promoted"
        assert record["frontmatter"]["promoted_to"] == scenario.cards_in(merged)[cards[0]]
        assert "and pin the package manager too (step 2)" in record["body"]
    assert scenario.card_texts(one) == scenario.card_texts(other_order)


def test_git_pull_rebase_replays_one_clones_commits_onto_the_others_with_no_conflict(tmp_path):
    # A team on a shared remote: one clone pushes, the other pulls with --rebase (its own commits
    # replayed one by one onto the pushed ones: the driver and the union merge run per commit,
    # "ours" and "theirs" the other way round from a merge).
    work = tmp_path / "work"
    info = scenario.make_base(work)
    origin = tmp_path / "origin.git"
    scenario.git(tmp_path, "clone", "-q", "--bare", str(work), str(origin))
    one, two = tmp_path / "one", tmp_path / "two"
    for clone in (one, two):
        scenario.make_clone(origin, clone)
    logs = []
    for clone, number in ((one, 1), (two, 2)):
        for part in range(2):   # two commits each: a rebase replays them one at a time
            scenario.run_ops(clone, number, random.Random(number * 10 + part), 20, info["hand"], round_number=part)
            scenario.commit(clone, f"clone {number} part {part}")
        logs.append(scenario.read_log(clone))
    scenario.git(two, "push", "-q", "origin", "main")
    pulled = scenario.git(one, "pull", "-q", "--rebase", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    assert scenario.git(one, "status", "--porcelain").stdout == ""
    history = scenario.git(one, "log", "--format=%P", "HEAD").stdout.split("\n")
    assert all(len(parents.split()) <= 1 for parents in history)     # rebased: no merge commit
    _check_merged(one, info["hand"], logs, ("remember", "after-rebase", "--body", "rebased"))
    scenario.commit(one, "settled after the rebase")
    scenario.git(one, "push", "-q", "origin", "main")
    # The other clone fast-forwards to it, and its next write settles nothing more.
    scenario.git(two, "pull", "-q", "--rebase", "origin", "main")
    assert scenario.card_texts(two) == scenario.card_texts(one)
    scenario.ok(two, "doctor", "--fix")
    assert scenario.card_texts(two) == scenario.card_texts(one) and scenario.disagreements(two) == {}


RETRY = "Playbooks/Pattern_Retry_budget.md"


def _create_retry(clone: Path, body: str) -> dict:
    return scenario.ok(clone, "create", "--type", "pattern", "--domain", "dev", "--title", "Retry budget",
                       "--body", body)


@pytest.mark.parametrize("order", ["one_into_two", "two_into_one"])
def test_a_card_deleted_in_one_clone_while_it_hosts_another_in_the_other_loses_neither(tmp_path, order):
    # Two clones created the same title; the merge keeps the second card inside the first (until a
    # write moves it out). One clone deletes the first card meanwhile: git carries the file, guest
    # and all, to the delete's copy in .brain/deleted. The guest was deleted by no one.
    base, one, two = _pair(tmp_path)
    first = _create_retry(one, "From one: a budget of 3 retries.")
    scenario.commit(one, "one creates")
    second = _create_retry(two, "From two: retry with jitter.")
    scenario.commit(two, "two creates")
    assert scenario.merge(two, one) == []                 # two now hosts `second` inside `first`, unsettled
    scenario.ok(one, "delete", first["id"])
    scenario.commit(one, "one deletes the first card")
    into, other = (two, one) if order == "one_into_two" else (one, two)
    assert scenario.merge(into, other) == []
    scenario.ok(into, "doctor", "--fix")
    ids = scenario.cards_in(into)
    assert second["id"] in ids.values() and first["id"] not in ids.values()
    assert second["id"] in {hit["id"] for hit in scenario.ok(into, "search", "retry with jitter")["hits"]}
    assert scenario.doctor(into)["findings"] == [{"level": "warning", "path": "Playbooks/Hand.md", "message": "no id",
                                                  "fix": "the first write (e.g. `record`) adds one"}]


def test_git_pull_rebase_of_a_delete_never_takes_the_card_another_clone_put_at_that_path(tmp_path):
    # The rebase replays "create Y at F" onto a remote where F holds X (both kept: X hosts Y), then
    # "delete Y": git sends F, X included, to Y's copy. X was deleted by no one.
    base, one, two = _pair(tmp_path)
    origin = tmp_path / "origin.git"
    scenario.git(tmp_path, "clone", "-q", "--bare", str(base), str(origin))
    for clone in (one, two):
        scenario.git(clone, "remote", "set-url", "origin", str(origin))
    kept = _create_retry(one, "From one: a budget of 3 retries.")
    scenario.commit(one, "one creates")
    scenario.git(one, "push", "-q", "origin", "main")
    gone = _create_retry(two, "From two: retry with jitter.")
    scenario.commit(two, "two creates")
    scenario.ok(two, "delete", gone["id"])
    scenario.commit(two, "two deletes its card")
    pulled = scenario.git(two, "pull", "-q", "--rebase", "origin", "main", check=False)
    assert pulled.returncode == 0, pulled.stdout + pulled.stderr
    scenario.ok(two, "doctor", "--fix")
    ids = scenario.cards_in(two)
    assert kept["id"] in ids.values() and gone["id"] not in ids.values()
    assert (two / RETRY).is_file() and kept["id"] in (two / RETRY).read_text(encoding="utf-8")
    copy = (two / ".brain/deleted/Playbooks" / f"{gone['id']}.md").read_text(encoding="utf-8")
    assert gone["id"] in copy and kept["id"] not in copy


@pytest.mark.parametrize("order", ["renamer_merges", "deleter_merges"])
def test_a_card_renamed_in_one_clone_and_deleted_in_the_other_needs_one_git_add_and_keeps_the_card(tmp_path, order):
    # Both clones moved one file: `update --title` to its new name, `delete` to its copy in
    # .brain/deleted. git calls that rename/rename (no driver runs for it): the three paths are
    # conflicted, with no markers in any file, both moves' files in the work tree. `git add -A`
    # and a commit keep the renamed card (nothing lost); `doctor --fix` leaves the vault clean.
    base, one, two = _pair(tmp_path)
    card_id = scenario.cards_in(one)["Playbooks/Troubleshooting_Kafka_consumer_lag.md"]
    scenario.ok(one, "update", card_id, "--title", "Kafka lag on the orders topic")
    scenario.commit(one, "one renames")
    scenario.ok(two, "delete", card_id)
    scenario.commit(two, "two deletes")
    into, other = (one, two) if order == "renamer_merges" else (two, one)
    scenario.git(into, "fetch", "-q", str(other), "main")
    assert scenario.git(into, "merge", "-q", "--no-edit", "FETCH_HEAD", check=False).returncode != 0
    conflicted = set(scenario.git(into, "diff", "--name-only", "--diff-filter=U").stdout.split())
    assert conflicted == {"Playbooks/Troubleshooting_Kafka_consumer_lag.md",
                          "Playbooks/Troubleshooting_Kafka_lag_on_the_orders_topic.md",
                          f".brain/deleted/Playbooks/{card_id}.md"}
    assert scenario.conflict_markers(into) == []
    scenario.git(into, "add", "-A")
    scenario.git(into, "commit", "-q", "--no-edit")
    scenario.ok(into, "doctor", "--fix")
    assert scenario.cards_in(into)["Playbooks/Troubleshooting_Kafka_lag_on_the_orders_topic.md"] == card_id
    assert scenario.doctor(into)["findings"] == [{"level": "warning", "path": "Playbooks/Hand.md", "message": "no id",
                                                  "fix": "the first write (e.g. `record`) adds one"}]
    assert card_id in {hit["id"] for hit in scenario.ok(into, "search", "Kafka lag orders topic")["hits"]}


def test_copies_of_deleted_cards_are_pruned_after_90_days_except_those_whose_id_is_derived(tmp_path, monkeypatch):
    base, one, two = _pair(tmp_path)
    made = scenario.ok(one, "create", "--type", "pattern", "--domain", "dev", "--title", "Short lived",
                       "--body", "Made to be deleted.")
    scenario.ok(one, "record", "Playbooks/Hand.md", "used")          # the note gets its derived id
    hand_id = scenario.cards_in(one)["Playbooks/Hand.md"]
    deleted = scenario.ok(one, "delete", made["id"])
    scenario.ok(one, "delete", hand_id)
    scenario.commit(one, "one deletes")
    copy, hand_copy = (one / ".brain/deleted/Playbooks" / f"{i}.md" for i in (made["id"], hand_id))
    assert copy.is_file() and hand_copy.is_file()
    later = scenario.read_log(one)[-1]["ts"][:10]
    monkeypatch.setenv("BRAIN_NOW", _days_after(later, 89))
    scenario.ok(one, "doctor", "--fix")
    assert copy.is_file()                                               # 89 days: kept
    monkeypatch.setenv("BRAIN_NOW", _days_after(later, 91))
    fixed = scenario.ok(one, "doctor", "--fix")
    assert not copy.is_file() and hand_copy.is_file(), fixed            # the derived id's copy stays
    assert "pruned 1 copy" in " ".join(fixed["fixed"])
    assert scenario.ok(one, "search", "Short lived")["hits"] == []
    # The other clone merges the pruning (its copy goes too) with no conflict.
    scenario.commit(one, "pruned")
    assert scenario.merge(two, one) == []
    assert not (two / ".brain/deleted/Playbooks" / f"{made['id']}.md").exists()
    # undo of the delete still brings the card back: its text is in the delete's event.
    scenario.ok(one, "undo", deleted["event"]["eid"] if isinstance(deleted.get("event"), dict) else deleted["event"])
    assert made["id"] in scenario.cards_in(one).values()


def _days_after(day: str, days: int) -> str:
    from datetime import date, timedelta
    return (date.fromisoformat(day) + timedelta(days=days)).isoformat() + "T12:00:00+00:00"


def test_the_readmes_commit_pull_push_line_works_when_two_clones_diverged_on_a_plain_git(tmp_path):
    # review6: the README's `... && git pull && git push`, pasted as written in a clone whose remote
    # had moved on (the everyday case of sharing), stopped with git's "Need to specify how to
    # reconcile divergent branches" on any git >= 2.27 without `pull.rebase` set: nothing merged.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    line = next(line for line in readme.splitlines() if line.startswith("git add -A && git commit -m \"brain: "))
    line = line.split("  #")[0].strip()
    (tmp_path / "empty-gitconfig").write_text("")
    plain_git = {**os.environ, "GIT_CONFIG_GLOBAL": str(tmp_path / "empty-gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
                 "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                 "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    base = tmp_path / "base"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    scenario.commit(base, "the team's vault")
    scenario.git(tmp_path, "clone", "-q", "--bare", str(base), str(tmp_path / "origin.git"))
    one, two = tmp_path / "one", tmp_path / "two"
    for clone in (one, two):
        scenario.git(tmp_path, "clone", "-q", str(tmp_path / "origin.git"), str(clone))
        scenario.ok(clone, "init", str(clone))
    for clone, title in ((one, "Lesson from clone one"), (two, "Lesson from clone two")):
        scenario.ok(clone, "create", "--type", "insight", "--domain", "ops", "--title", title, "--body", title)
        done = subprocess.run(["bash", "-c", line], cwd=clone, env=plain_git, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, f"{line}\n{done.stdout}\n{done.stderr}"
    scenario.git(one, "pull", "-q", "--no-rebase")
    for clone in (one, two):
        assert sorted(p.name for p in (clone / "Playbooks").glob("*.md")) == [
            "Insight_Lesson_from_clone_one.md", "Insight_Lesson_from_clone_two.md"]


def test_doctor_names_a_merge_driver_git_can_no_longer_run_and_init_again_fixes_it(tmp_path):
    # review6: with the checkout that `brain init` registered moved or deleted, git printed
    # "...: not found" once per card, left the cards conflicted without markers, and doctor said nothing.
    base, clone = tmp_path / "base", tmp_path / "clone"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    scenario.commit(base, "the team's vault")
    scenario.make_clone(base, clone)
    assert [f for f in scenario.doctor(clone)["findings"] if "merge driver" in f["message"]] == []
    scenario.git(clone, "config", "merge.brain.driver", "/moved/away/python3 /moved/away/playbook_api.py "
                                                         "merge-driver %O %A %B %P")
    found = [f for f in scenario.doctor(clone)["findings"] if "merge driver" in f["message"]]
    assert [(f["level"], f["path"], f["message"], f["fix"]) for f in found] == [(
        "warning", None, "git's merge driver for cards runs /moved/away/python3, which is not there (the checkout "
        "or its Python moved?): a merge of cards both clones changed stops as a conflict",
        f"`brain init {clone}` registers this installation")]
    code, out, _ = run_cli("doctor", "--vault", str(clone))   # a finding of no file is not "None: ..."
    assert code == 0 and out.splitlines()[0].startswith("warning: git's merge driver for cards runs "), out
    scenario.ok(clone, "init", str(clone))
    assert [f for f in scenario.doctor(clone)["findings"] if "merge driver" in f["message"]] == []


def _ingest(vault: Path, text: str, moment: str) -> dict:
    source = vault.parent / f"statement-{vault.name}.txt"
    source.write_text(text + "\n", encoding="utf-8")
    return scenario.ok(vault, "ingest", str(source), "--event-time", moment)


def _facts(vault: Path) -> dict[str, dict]:
    """Each fact card's frontmatter, by title."""
    out = {}
    for rel in scenario.cards_in(vault):
        meta = scenario.ok(vault, "get", rel)["frontmatter"]
        if meta.get("type") == "fact":
            out[meta["title"]] = meta
    return out


def test_a_fact_superseded_in_two_clones_is_one_current_fact_after_the_merge(tmp_path):
    # h12-git: each clone ingested a new value of one subject, and each superseded the same old card.
    # The merge kept both new cards active: two "current truths" for one subject (SPEC: a fact is one
    # current truth per subject), shown side by side by search and brief, and doctor said all good.
    base = tmp_path / "base"
    scenario.ok(base, "init", str(base))
    scenario.git(base, "init", "-q", "-b", "main")
    _ingest(base, "The deploy region is us-east-1.", "2026-01-01T00:00:00+00:00")
    scenario.commit(base, "base")
    one, two = tmp_path / "one", tmp_path / "two"
    scenario.make_clone(base, one)
    scenario.make_clone(base, two)
    _ingest(one, "The deploy region is eu-west-1.", "2026-01-02T00:00:00+00:00")
    _ingest(two, "The deploy region is ap-south-1.", "2026-01-03T00:00:00+00:00")
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    facts = _facts(merged)
    old, first, latest = (facts[f"The deploy region is {region}"] for region in ("us-east-1", "eu-west-1", "ap-south-1"))
    assert [title for title, meta in facts.items() if meta.get("status", "active") == "active"] == \
        ["The deploy region is ap-south-1"]
    # The chain reads as if the two statements had arrived in one clone, in the order they hold.
    assert (old["superseded_by"], first["supersedes"]) == (first["id"], old["id"])
    assert (first["superseded_by"], latest["supersedes"]) == (latest["id"], first["id"])
    assert first["valid_to"] == latest["valid_from"] and old["valid_to"] == first["valid_from"]
    assert scenario.doctor(merged)["findings"] == []
    # The other clone, merging the first's work before it settled, settles to the same files:
    # merging back and forth stays clean.
    _settle_alike(one, two)


def test_one_candidate_promoted_under_two_titles_in_two_clones_is_not_two_cards_with_one_id(tmp_path):
    # h12-git: promote keeps the candidate's id (so that promoting it in two clones is one card), but
    # the file name comes from the title, so two clones promoting it under different titles made two
    # files that git merged side by side: two cards with one id, a doctor error nothing settles.
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(root, "search", "zorblax frobnicate"))
    candidate = "Inbox/Search_Miss_zorblax_frobnicate.md"
    first = scenario.ok(one, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Zorblax fix")
    time.sleep(1.1)   # promoted later, by the log's time: the first keeps the id in every clone
    again = scenario.ok(two, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Fixing zorblax")
    assert first["id"] == again["id"]
    scenario.ok(two, "record", again["path"], "used")   # feedback on the second file, by the shared id
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    assert [f["message"] for f in scenario.doctor(merged)["findings"] if "duplicate id" in f["message"]] == []
    kept = scenario.ok(merged, "get", first["path"])["frontmatter"]
    other = scenario.ok(merged, "get", again["path"])["frontmatter"]
    assert kept["id"] == first["id"] and kept.get("status", "active") == "active"
    assert kept["confidence"] == 0.55   # the feedback given on the other file counts for the card
    assert other["id"] != first["id"] and other["status"] == "superseded" and other["superseded_by"] == first["id"]
    assert scenario.ok(merged, "get", first["id"])["path"] == first["path"]
    _settle_alike(one, two)   # the other clone settles to the same files


def test_a_promoted_card_renamed_within_the_same_second_still_keeps_its_id_alone(tmp_path, monkeypatch):
    # h13-review: settling took the events of one second in the order of their ids (random): a rename
    # (`update --title` right after `promote`) taken before its promotion was not followed, the
    # renamed card was left out, and the merged clones kept two cards with one id.
    candidate = "Inbox/Search_Miss_zorblax_frobnicate.md"
    for attempt in range(30):   # a rename whose event id sorts before its promotion's (each try: one in two)
        monkeypatch.setenv("BRAIN_NOW", "2026-11-20T10:00:00+00:00")   # the log's time is to the second
        base, one, two = _pair(tmp_path / str(attempt), lambda root: scenario.ok(root, "search", "zorblax frobnicate"))
        first = scenario.ok(one, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Zorblax fix")
        promoted = [e for e in scenario.read_log(one) if e["event"] == "promoted"][-1]
        renamed = scenario.ok(one, "update", first["path"], "--title", "Zorblax fixed")
        if renamed["event"] < promoted["eid"]:
            break
    assert renamed["event"] < promoted["eid"]
    monkeypatch.setenv("BRAIN_NOW", "2026-11-20T10:00:05+00:00")
    again = scenario.ok(two, "promote", candidate, "--type", "runbook", "--domain", "ops", "--title", "Fixing zorblax")
    monkeypatch.delenv("BRAIN_NOW")
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    assert [f["message"] for f in scenario.doctor(merged)["findings"]] == ["no id"]   # Hand.md, never written
    kept = scenario.ok(merged, "get", renamed["path"])["frontmatter"]
    other = scenario.ok(merged, "get", again["path"])["frontmatter"]
    assert kept["id"] == first["id"] and kept.get("status", "active") == "active"
    assert other["id"] != first["id"] and other["superseded_by"] == first["id"]
    _settle_alike(one, two)


def test_a_link_made_in_one_clone_to_a_card_the_other_renamed_follows_the_rename(tmp_path):
    # h12-git: `update --title` relinks every wikilink to the card in its own clone (SPEC), but a link
    # another clone made meanwhile to the old name arrived by the merge as a dangling wikilink (in
    # `related` and in a body); doctor's advice was to unlink it, dropping the relation a person made.
    base, one, two = _pair(tmp_path)
    renamed = scenario.ok(one, "update", KAFKA, "--title", "Kafka consumer lag after deploys")["path"]
    scenario.ok(two, "link", ECS, KAFKA, "--rel", "depends_on")
    made = scenario.ok(two, "create", "--type", "insight", "--domain", "infra", "--title", "Lag alerts",
                       "--body", "See [[Troubleshooting_Kafka_consumer_lag]] first.")["path"]
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    new_link = f"[[{Path(renamed).stem}]]"
    assert scenario.ok(merged, "get", ECS)["frontmatter"]["related"] == [new_link]
    assert new_link in (merged / made).read_text(encoding="utf-8")
    assert [f["message"] for f in scenario.doctor(merged)["findings"]] == ["no id"]   # Hand.md, never written
    _settle_alike(one, two)   # the other clone settles to the same files


def test_a_card_git_merged_line_by_line_without_the_driver_is_named_as_a_conflict_with_the_way_back(tmp_path):
    # h12-git: in a clone that never ran `brain init`, feedback on one card in both clones conflicts
    # on the `confidence:` line; the card no longer parses and disappears from search. doctor called it
    # "bad frontmatter ... fix the file by hand", not a merge conflict, and never gave the way back:
    # `brain init` then `git checkout -m` merges the card again, key by key, while the merge is open.
    base, one, two = _pair(tmp_path)
    scenario.git(two, "config", "--remove-section", "merge.brain")   # a teammate who skipped the set-up
    scenario.ok(one, "record", KAFKA, "used")
    scenario.ok(two, "record", KAFKA, "rejected")
    scenario.commit(one, "one")
    scenario.commit(two, "two")
    scenario.git(two, "fetch", "-q", str(one), "main")
    assert scenario.git(two, "merge", "-q", "--no-edit", "FETCH_HEAD", check=False).returncode != 0
    errors = [f for f in scenario.doctor(two)["findings"] if f["level"] == "error"]
    assert [(f["path"].split(":")[0], f["message"].split(" (")[0], f["fix"]) for f in errors] == [(
        KAFKA, "unresolved git merge conflict in the frontmatter",
        f"`brain init {two}`, then `git -C {two} checkout -m {KAFKA}` merges it again key by key (before the merge is "
        "committed); or keep the right lines, delete the <<<<<<< ======= >>>>>>> lines, then `git add` the card")]
    # The way back works as written.
    scenario.ok(two, "init", str(two))
    scenario.git(two, "checkout", "-m", KAFKA)
    scenario.commit(two, "merged")
    scenario.ok(two, "doctor", "--fix")
    assert scenario.conflict_markers(two) == [] and scenario.disagreements(two) == {}
    assert [f["message"] for f in scenario.doctor(two)["findings"]] == ["no id"]   # Hand.md, never written


def _settle_alike(one: Path, two: Path) -> None:
    """`two` merges `one` (settled by a doctor --fix), settles, and merging back leaves the two clones
    holding the same cards, with no conflict either way."""
    assert scenario.merge(two, one) == []
    scenario.commit(one, "one settled")
    scenario.ok(two, "doctor", "--fix")
    scenario.commit(two, "two settled")
    assert scenario.merge(one, two) == []
    assert scenario.card_texts(one) == scenario.card_texts(two)


def test_text_added_in_one_clone_to_a_card_the_other_merged_away_is_carried_into_the_kept_card(tmp_path):
    # Clone one merged OTHER into KEEP while clone two appended a lesson to OTHER. git merged both edits
    # of OTHER cleanly, and the lesson stayed in OTHER, superseded now: search found it nowhere.
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(
        root, "create", "--type", "troubleshooting", "--domain", "infra", "--title", "Kafka lag on consumers",
        "--body", "Scale the consumer group."))
    other = "Playbooks/Troubleshooting_Kafka_lag_on_consumers.md"
    lesson = "Also check max.poll.records: a slow handler hits the poll timeout."
    scenario.ok(one, "merge", KAFKA, other)
    scenario.ok(two, "update", other, "--append", lesson)
    merged = _merged(one, two)
    scenario.ok(merged, "doctor", "--fix")
    kept = (merged / KAFKA).read_text(encoding="utf-8")
    section = kept.split("## Merged from: Kafka lag on consumers\n", 1)[1]
    assert section == f"\nScale the consumer group.\n\n{lesson}\n"   # at the end of the merged section, once
    assert lesson in (merged / other).read_text(encoding="utf-8")      # the superseded card keeps its text
    hits = scenario.ok(merged, "search", "max.poll.records")["hits"]
    assert [hit["path"] for hit in hits] == [KAFKA]
    _settle_alike(one, two)   # the other clone carries the same text: merging back is clean
    # Carried once: a person who removes the carried lesson from KEEP does not see it come back when
    # the clones next merge and settle.
    (one / KAFKA).write_text(kept.replace(f"\n{lesson}\n", ""), encoding="utf-8")
    scenario.commit(one, "lesson moved by hand")
    scenario.ok(two, "create", "--type", "pattern", "--domain", "infra", "--title", "Another lesson", "--body", "x")
    scenario.commit(two, "two again")
    assert scenario.merge(one, two) == []
    scenario.ok(one, "doctor", "--fix")
    assert lesson not in (one / KAFKA).read_text(encoding="utf-8")


def test_text_two_clones_added_to_a_merged_away_card_is_carried_once_by_a_third(tmp_path):
    # One clone merged OTHER into KEEP; two others each appended a lesson to OTHER. The first lesson
    # was carried when the merging clone took it; the second arrived later, next to it in one changed
    # block of OTHER, and the whole block was carried again: the first lesson twice in KEEP.
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(
        root, "create", "--type", "troubleshooting", "--domain", "infra", "--title", "Kafka lag on consumers",
        "--body", "Scale the consumer group."))
    three = tmp_path / "three"
    scenario.make_clone(base, three)
    other = "Playbooks/Troubleshooting_Kafka_lag_on_consumers.md"
    scenario.ok(one, "merge", KAFKA, other)
    scenario.ok(two, "update", other, "--append", "Lesson two.")
    scenario.ok(three, "update", other, "--append", "Lesson three.")
    scenario.commit(three, "three")
    scenario.commit(two, "two")
    assert scenario.merge(three, two) == []                # three takes the lesson of two, not the merge
    _merged(one, two)
    scenario.ok(one, "doctor", "--fix")                    # one carries the lesson of two
    scenario.commit(one, "one settled")
    assert scenario.merge(one, three) == []
    scenario.ok(one, "doctor", "--fix")                    # and now the lesson of three
    section = (one / KAFKA).read_text(encoding="utf-8").split("## Merged from: Kafka lag on consumers\n", 1)[1]
    assert section == "\nScale the consumer group.\n\nLesson two.\n\nLesson three.\n"


def test_a_lesson_that_is_only_part_of_a_line_of_the_kept_card_is_still_carried(tmp_path):
    # The carry left out text KEEP "held" as any substring: a short lesson appended to OTHER in one
    # clone, the start of a longer line of KEEP, stayed in the superseded card only.
    base, one, two = _pair(tmp_path, lambda root: scenario.ok(
        root, "create", "--type", "troubleshooting", "--domain", "infra", "--title", "Kafka lag on consumers",
        "--body", "Scale the consumer group."))
    other = "Playbooks/Troubleshooting_Kafka_lag_on_consumers.md"
    scenario.ok(one, "merge", KAFKA, other)
    scenario.ok(two, "update", other, "--append", "Clone 1 note")   # KEEP has "Clone 1 note: nothing yet."
    scenario.ok(_merged(one, two), "doctor", "--fix")
    section = (one / KAFKA).read_text(encoding="utf-8").split("## Merged from: Kafka lag on consumers\n", 1)[1]
    assert section == "\nScale the consumer group.\n\nClone 1 note\n"


def test_settling_after_a_merge_passes_over_log_lines_edited_into_other_shapes(tmp_path):
    # The carry above reads fields of `merged`, `updated` and `settled` events; a hand-edited line whose
    # fields are of other types (a list where an id goes, a number for `changed` or `files`) must not
    # stop the writes that settle (every write after a merge does).
    vault = tmp_path / "v"
    scenario.ok(vault, "init", str(vault))
    for title in ("Kafka consumer lag", "Kafka lag on consumers"):
        scenario.ok(vault, "create", "--type", "troubleshooting", "--domain", "infra", "--title", title, "--body", "x.")
    scenario.ok(vault, "merge", KAFKA, "Playbooks/Troubleshooting_Kafka_lag_on_consumers.md")
    odd = [{"eid": ["a"], "ts": "2026-01-01T00:00:00+00:00", "event": "updated", "id": "i", "changed": 5, "files": 3},
           {"eid": "b", "ts": "2026-01-01T00:00:00+00:00", "event": "updated", "id": "i", "changed": ["body"], "files": 3},
           {"eid": "c", "ts": 7, "event": "merged", "id": {"x": 1}, "merged": ["i"], "files": "f"},
           {"eid": "d", "ts": "2026-01-01T00:00:00+00:00", "event": "merged", "id": "k", "merged": "i", "files": [1, "f"]},
           {"eid": "e", "ts": "2026-01-01T00:00:00+00:00", "event": "settled", "carried_updates": [{"b": 1}, ["c"]]}]
    with open(vault / "logs" / "events.jsonl", "a", encoding="utf-8") as log:   # appended as a merge would
        log.writelines(json.dumps(event) + "\n" for event in odd)
    code, report = scenario.brain(vault, "doctor", "--fix")   # settles; names the line whose eid is a list
    assert code == 1 and [f["path"] for f in report["findings"]] == ["logs/events.jsonl:5"], report
    scenario.ok(vault, "record", KAFKA, "used")
