"""Inbox triage (inbox.candidates / reject_candidate / merge_candidate) and the vault's trends
(trends.trends): the library operations the Memory Gardener's Inbox and Health pages call."""

from __future__ import annotations

from pathlib import Path

import pytest

from external_brain.errors import UsageError
from external_brain.evolution.history import undo
from external_brain.intake.inbox import auto_promote, candidates, merge_candidate, reject_candidate
from external_brain.answers.trends import confidence_bin, trends
from external_brain.vault.storage import Vault
from helpers import events, ok_data, run_cli


def learn(title="Pin Node in CI", evidence="session 1 line 4", key=None):
    args = ["learn", "--title", title, "--type", "troubleshooting", "--domain", "dev", "--tags", "ci,node",
            "--problem", "CI broke on Node 22", "--solution", "pin node 20", "--evidence", evidence]
    return ok_data(*args)


def test_reject_closes_the_candidate_in_its_file_logged_and_undoable(vault):
    made = learn()
    path = vault / made["path"]
    before = path.read_bytes()
    result = reject_candidate(Vault(vault), made["path"], "not a real lesson")
    text = path.read_text()
    assert result.status == "rejected" and "status: rejected" in text and "closed_reason: not a real lesson" in text
    logged = events(vault)[-1]
    assert logged["event"] == "rejected_candidate" and logged["reason"] == "not a real lesson"
    with pytest.raises(UsageError, match="already rejected"):
        reject_candidate(Vault(vault), made["path"])
    undo(Vault(vault), logged["eid"])
    assert path.read_bytes() == before


def test_a_rejected_lesson_is_not_proposed_again_nor_promoted_automatically(vault):
    made = learn(evidence="session 1 line 4")
    reject_candidate(Vault(vault), made["path"])
    # The same lesson seen twice more: its evidence grows in the same file, which stays rejected.
    learn(evidence="session 2 line 9")
    learn(evidence="session 3 line 2")
    files = sorted(p.name for p in (vault / "Inbox").glob("*.md"))
    assert files == [Path(made["path"]).name]
    text = (vault / made["path"]).read_text()
    assert "status: rejected" in text and "session 3 line 2" in text and "evidence_count: 3" in text
    # Three sightings and complete would pass `promote --auto`; a person's rejection outranks it.
    results = auto_promote(Vault(vault))
    assert [(r.score, r.promoted_to) for r in results] == [(0.0, None)]
    assert "rejected by a person" in results[0].reasons
    assert not list((vault / "Playbooks").glob("*.md"))


def test_a_rejected_search_miss_counts_misses_but_stays_closed(vault):
    miss = ok_data("search", "kubernetes ingress 502")["miss_candidate"]
    reject_candidate(Vault(vault), miss)
    ok_data("search", "kubernetes ingress 502")
    text = (vault / miss).read_text()
    assert "misses: 2" in text and "status: rejected" in text
    listed = candidates(Vault(vault))
    assert (listed.candidates, listed.closed) == ([], 1)


def test_merge_folds_the_candidate_into_a_card_in_one_undoable_operation(vault):
    target = ok_data("create", "--type", "troubleshooting", "--domain", "dev", "--tags", "ci", "--title",
                     "Node versions in CI", "--body", "## Fix\nPin the version.")
    made = learn()
    target_file, candidate_file = vault / target["path"], vault / made["path"]
    before = (target_file.read_bytes(), candidate_file.read_bytes())
    result = merge_candidate(Vault(vault), made["id"], target["id"])
    text = target_file.read_text()
    assert result.into.rel == target["path"]
    assert text.endswith("## From the Inbox: Pin Node in CI\n\n## Problem\nCI broke on Node 22\n\n"
                         "## Solution\npin node 20\n\n## Evidence\n" + text.split("## Evidence\n")[1])
    assert "tags: [ci, node]" in text
    closed = candidate_file.read_text()
    assert "status: merged" in closed and f"merged_into: {target['id']}" in closed
    logged = events(vault)[-1]
    assert logged["event"] == "merged_candidate" and logged["source"] == made["path"]
    undo(Vault(vault), logged["eid"])
    assert (target_file.read_bytes(), candidate_file.read_bytes()) == before


def test_merge_into_a_missing_card_changes_nothing(vault):
    made = learn()
    before = (vault / made["path"]).read_bytes()
    with pytest.raises(Exception, match="no card"):
        merge_candidate(Vault(vault), made["path"], "Playbooks/Nothing_Here.md")
    assert (vault / made["path"]).read_bytes() == before


def test_candidates_list_open_ones_first_with_their_evidence_and_audit_counts_only_open_ones(vault):
    learn("Lesson A", "session 1 line 1")
    learn("Lesson A", "session 2 line 1")
    b = learn("Lesson B", "session 3 line 1")
    reject_candidate(Vault(vault), b["path"])
    listed = candidates(Vault(vault))
    assert [c.card.title for c in listed.candidates] == ["Lesson A"] and listed.closed == 1
    shown = listed.candidates[0].as_dict()
    assert shown["seen"] == 2 and len(shown["evidence"]) == 2 and shown["evidence"][1].endswith("session 2 line 1")
    every = candidates(Vault(vault), include_closed=True)
    assert [c.card.title for c in every.candidates] == ["Lesson A", "Lesson B"]
    inbox = ok_data("audit")["inbox"]
    assert (inbox["candidates"], inbox["learned"], inbox["closed"]) == (1, 1, 1)


# ---------------------------------------------------------------------------- trends

def test_confidence_bins_are_tenths_with_one_in_the_last():
    assert [confidence_bin(c) for c in (0.0, 0.05, 0.1, 0.5, 0.79, 0.8, 0.99, 1.0)] == [0, 0, 1, 5, 7, 8, 9, 9]


def test_trends_count_what_the_reader_may_see(vault):
    shared = ok_data("create", "--type", "fact", "--domain", "general", "--tags", "a", "--title", "Shared fact",
                     "--body", "x")
    private = ok_data("create", "--type", "fact", "--domain", "general", "--tags", "b", "--title", "Alice fact",
                      "--body", "y", "--scope", "agent", "--agent", "alice")
    for outcome in ("used", "used", "rejected"):
        ok_data("record", shared["path"], outcome)
    assert run_cli("record", private["path"], "used")[0] == 0
    owner = trends(Vault(vault))
    assert owner.cards == 1 and owner.feedback_total == {"used": 2, "rejected": 1}
    assert len(owner.feedback) == 1 and owner.feedback[0]["used"] == 2
    alice = trends(Vault(vault), "alice")
    assert alice.cards == 2 and alice.feedback_total == {"used": 3, "rejected": 1}
    assert sum(b["count"] for b in alice.confidence_bins) == 2
    assert sum(alice.by_action.values()) == 2
    with pytest.raises(UsageError):
        trends(Vault(vault), days=0)
