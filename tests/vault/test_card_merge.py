"""The merge of two clones' versions of one card file (vault/merge.py, what `brain merge-driver`
writes for git), rule by rule, and the replay of confidence from a merged log
(confidence.replay_feedback): worked out by hand, in both merge orders."""

from __future__ import annotations

import random
import shutil

import pytest

from external_brain.vault import frontmatter
from external_brain.vault.config import ConfidenceSettings
from external_brain.vault.confidence import replay_feedback
from external_brain.vault.merge import conflict_lines, merge_files, split_guests

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="bodies merge with `git merge-file`")

BODY = "\n# Kafka lag\n\nIntro.\n\nClone 1 note: none.\n\nClone 2 note: none.\n"


def card(body: str = BODY, **meta) -> str:
    data = {"id": "c-1", "title": "Kafka lag", "type": "troubleshooting", "domain": "infra",
            "tags": ["kafka", "lag"], "confidence": 0.5, "created": "2026-01-01T10:00:00+00:00",
            "updated": "2026-01-01T10:00:00+00:00"}
    data.update(meta)
    return frontmatter.render({k: v for k, v in data.items() if v is not None}, body)


def both_orders(base: str, ours: str, theirs: str, folder: str = "Playbooks") -> tuple[str, int]:
    """The merged text, checked to be the same whichever side merges which."""
    one, two = merge_files(base, ours, theirs, folder), merge_files(base, theirs, ours, folder)
    assert one.text == two.text and one.conflicts == two.conflicts
    return one.text, one.conflicts


def meta_of(text: str) -> dict:
    return frontmatter.parse(text).data


def test_keys_merge_one_by_one_and_updated_is_the_later():
    base = card()
    ours = card(status="archived", updated="2026-01-02T10:00:00+00:00")
    theirs = card(project="payments", updated="2026-01-02T18:00:00+09:00")   # 09:00 UTC: earlier than ours
    text, conflicts = both_orders(base, ours, theirs)
    meta = meta_of(text)
    assert conflicts == 0
    assert meta["status"] == "archived" and meta["project"] == "payments"
    assert meta["updated"] == "2026-01-02T10:00:00+00:00"


def test_tags_merge_three_way_as_sets():
    base = card(tags=["kafka", "lag", "old"])
    ours = card(tags=["kafka", "old", "consumer"])      # removed lag, added consumer
    theirs = card(tags=["kafka", "lag", "ops"])          # removed old, added ops
    text, _ = both_orders(base, ours, theirs)
    assert meta_of(text)["tags"] == ["kafka", "consumer", "ops"]


def test_a_key_both_changed_takes_the_side_updated_last():
    base = card()
    ours = card(status="archived", updated="2026-01-02T10:00:00+00:00")
    theirs = card(status="in-progress", updated="2026-01-02T11:00:00+00:00")
    assert meta_of(both_orders(base, ours, theirs)[0])["status"] == "in-progress"


def link(to: str, version: int, weight: float, updated: str = "2026-01-02T10:00:00+00:00") -> dict:
    return {"to": to, "rel": "extends", "weight": weight, "created": "2026-01-01T10:00:00+00:00",
            "updated": updated, "version": version}


def test_links_merge_per_target_the_higher_version_winning():
    base = card(links=[link("a", 1, 0.5), link("b", 1, 0.5), link("gone", 1, 0.5)])
    ours = card(links=[link("a", 2, 0.9), link("b", 1, 0.5)])                       # a re-weighted, gone unlinked
    theirs = card(links=[link("a", 1, 0.5), link("b", 3, 0.2), link("gone", 1, 0.5), link("new", 1, 1.0)])
    links = meta_of(both_orders(base, ours, theirs)[0])["links"]
    assert [(e["to"], e["version"], e["weight"]) for e in links] == [("a", 2, 0.9), ("b", 3, 0.2), ("new", 1, 1.0)]


def test_confidence_both_moved_is_provisional_and_one_side_moved_is_taken():
    base = card()
    assert meta_of(both_orders(base, card(confidence=0.55), card(status="archived"))[0])["confidence"] == 0.55
    # Both gave feedback: the lower value until the merged log is replayed (settle).
    assert meta_of(both_orders(base, card(confidence=0.55), card(confidence=0.45))[0])["confidence"] == 0.45


def test_bodies_merge_as_git_merges_text():
    base = card()
    ours = card(BODY.replace("Clone 1 note: none.", "Clone 1 note: restart the consumer."))
    theirs = card(BODY.replace("Clone 2 note: none.", "Clone 2 note: raise max.poll.records."), status="active")
    text, conflicts = both_orders(base, ours, theirs)
    assert conflicts == 0 and "restart the consumer" in text and "raise max.poll.records" in text


def test_lines_both_sides_appended_are_both_kept_in_one_order():
    base = card()
    ours = card(BODY + "\nAppended by one.\n")
    theirs = card(BODY + "\nAppended by two.\n")
    text, conflicts = both_orders(base, ours, theirs)
    assert conflicts == 0 and text.index("Appended by one.") < text.index("Appended by two.")


def test_the_same_lines_changed_twice_is_a_conflict_in_the_body_only():
    base = card()
    ours = card(BODY.replace("Intro.", "Intro, as we saw it."), confidence=0.55)
    theirs = card(BODY.replace("Intro.", "Intro, as they saw it."), confidence=0.45)
    merged = merge_files(base, ours, theirs, "Playbooks")
    assert merged.conflicts == 1
    document = frontmatter.parse(merged.text)   # the frontmatter still parses: the card stays readable
    assert document.data["confidence"] == 0.45
    assert "<<<<<<< ours\nIntro, as we saw it.\n=======\nIntro, as they saw it.\n>>>>>>> theirs\n" in document.body
    assert conflict_lines(merged.text) == [merged.text.splitlines().index("<<<<<<< ours") + 1]
    # In the Inbox (what the tool writes for itself), both sides' lines are kept instead.
    assert merge_files(base, ours, theirs, "Inbox").conflicts == 0


def test_two_different_cards_at_one_path_both_survive():
    ours = card(BODY, id="c-ours", created="2026-01-02T10:00:00+00:00")
    theirs = card(BODY.replace("Intro.", "Their intro."), id="c-theirs", created="2026-01-01T10:00:00+00:00")
    text, conflicts = both_orders("", ours, theirs)
    kept, guests = split_guests(text)
    assert conflicts == 0 and kept == theirs and guests == [ours]   # the older keeps the path
    # Merged again with a third card of that name: all three, none nested.
    third = card(BODY, id="c-third", created="2026-01-03T10:00:00+00:00")
    again, _ = both_orders("", text, third)
    assert split_guests(again) == (theirs, [ours, third])


def test_the_same_candidate_added_in_two_clones_is_one_and_its_sightings_add_up():
    def miss(seen: str, misses: int) -> str:
        return frontmatter.render({"id": "m-1", "title": "Search miss: kafka lag", "status": "candidate",
                                   "query_key": "kafka lag", "misses": misses, "first_seen": seen,
                                   "last_seen": seen, "updated": seen}, "\n# Search miss\n")
    text, _ = both_orders("", miss("2026-01-02T10:00:00+00:00", 1), miss("2026-01-01T10:00:00+00:00", 2), "Inbox")
    meta = meta_of(text)
    assert (meta["misses"], meta["first_seen"], meta["last_seen"]) == \
        (3, "2026-01-01T10:00:00+00:00", "2026-01-02T10:00:00+00:00")
    # With an ancestor: each side's own sightings since it.
    base = miss("2026-01-01T10:00:00+00:00", 2)
    assert meta_of(both_orders(base, miss("2026-01-01T10:00:00+00:00", 3), miss("2026-01-01T10:00:00+00:00", 5),
                               "Inbox")[0])["misses"] == 6


def test_the_same_miss_in_two_clones_promoted_in_one_merges_to_one_record_in_either_order():
    # Clone 1 missed the query (a candidate); clone 2 missed it too and promoted it: its file is the
    # promotion's record, with an id of its own and keys the candidate lacks (`closed`, `promoted_to`).
    candidate = frontmatter.render({"id": "m-1", "title": "Search miss: kafka lag", "status": "candidate",
                                    "query_key": "kafka lag", "misses": 1, "first_seen": "2026-01-01T10:00:00+00:00",
                                    "updated": "2026-01-01T10:00:00+00:00"}, "\n# Search miss\n")
    record = frontmatter.render({"id": "r-1", "title": "Search miss: kafka lag", "status": "promoted",
                                 "query_key": "kafka lag", "misses": 1, "first_seen": "2026-01-01T11:00:00+00:00",
                                 "updated": "2026-01-01T12:00:00+00:00", "closed": "2026-01-01T12:00:00+00:00",
                                 "promoted_to": "m-1"}, "\n# Search miss\n")
    text, conflicts = both_orders("", candidate, record, "Inbox")
    meta = meta_of(text)
    assert conflicts == 0 and (meta["id"], meta["status"], meta["promoted_to"], meta["misses"]) == \
        ("r-1", "promoted", "m-1", 2)
    assert list(meta)[:3] == ["id", "title", "status"]          # the record's own order, nothing moved


def test_a_promoted_candidate_keeps_its_candidate_keys_gone():
    base = card(status="candidate", misses=2, query_key="kafka lag")
    promoted = card(status="active", misses=None, query_key=None, updated="2026-01-02T10:00:00+00:00")
    bumped = card(status="candidate", misses=3, query_key="kafka lag", updated="2026-01-03T10:00:00+00:00")
    meta = meta_of(both_orders(base, promoted, bumped)[0])
    assert "misses" not in meta and "query_key" not in meta and meta["status"] == "active"


def test_a_side_that_does_not_parse_gets_gits_text_merge():
    base = card()
    broken = "---\ntitle: [unclosed\n---\nbody\n"
    merged = merge_files(base, broken, card(status="archived"), "Playbooks")
    assert merged.conflicts >= 1 and "<<<<<<<" in merged.text


def test_working_memory_is_taken_whole_from_the_side_written_last():
    def note(body: str, updated: str) -> str:
        return frontmatter.render({"key": "deploy", "updated": updated, "expires": "2026-02-01T00:00:00+00:00"},
                                  f"\n{body}\n")
    base = note("old", "2026-01-01T10:00:00+00:00")
    newer = note("from two", "2026-01-02T11:00:00+00:00")
    assert both_orders(base, note("from one", "2026-01-02T10:00:00+00:00"), newer, "WorkingMemory")[0] == newer


# ---------------------------------------------------------------------------- replay

PARAMS = ConfidenceSettings()


def feedback(eid: str, ts: str, outcome: str, before: float, ns: int | None = None, **more) -> dict:
    event = {"eid": eid, "ts": ts, "event": outcome, "id": "c-1", "card": "Playbooks/X.md", "before": before, **more}
    if ns is not None:
        event["ts_ns"] = ns
    return event


def test_the_replay_is_one_order_whatever_order_the_log_holds():
    events = [feedback("e3", "2026-01-01T10:00:02+00:00", "used", 0.5),
              feedback("e1", "2026-01-01T19:00:00+09:00", "used", 0.5),         # 10:00:00 UTC: first
              feedback("e2", "2026-01-01T10:00:01+00:00", "rejected", 0.55)]
    # 0.5 -> used 0.55 -> rejected 0.495 -> used 0.5455, by hand
    for _ in range(5):
        random.shuffle(events)
        assert replay_feedback(events, PARAMS) == {"id:c-1": 0.5455}


def test_feedback_within_one_second_replays_in_the_order_it_was_given():
    second = "2026-01-01T10:00:00+00:00"
    events = [feedback("zzz", second, "used", 0.5, ns=1_767_261_600_100_000_000),
              feedback("aaa", second, "rejected", 0.55, ns=1_767_261_600_200_000_000)]
    assert replay_feedback(events, PARAMS) == {"id:c-1": 0.495}           # used, then rejected
    assert replay_feedback(events[::-1], PARAMS) == {"id:c-1": 0.495}


def test_the_replay_applies_the_decay_record_applied_and_restarts_at_a_promotion():
    decayed = feedback("e1", "2026-06-01T10:00:00+00:00", "used", 0.5, idle_days=150, decayed=0.4, after=0.46)
    assert replay_feedback([decayed], PARAMS) == {"id:c-1": 0.46}          # 0.5 - 0.05 * 2 = 0.4, then EWA
    old_style = {**decayed, "eid": "e0"}
    del old_style["idle_days"]                                             # logged before idle_days was
    assert replay_feedback([old_style], PARAMS) == {"id:c-1": 0.46}
    promoted = {"eid": "p", "ts": "2026-06-02T10:00:00+00:00", "event": "promoted", "id": "c-1"}
    later = feedback("e2", "2026-06-03T10:00:00+00:00", "rejected", 0.5)
    assert replay_feedback([decayed, promoted, later], PARAMS) == {"id:c-1": 0.45}
    assert replay_feedback([decayed, promoted], PARAMS) == {}              # nothing since the fresh start
