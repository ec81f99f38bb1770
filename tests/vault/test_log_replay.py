"""The log is the truth for feedback (docs/card-format.md, The event log; issue 21): a card's stored confidence is the
replay of its logged feedback in one order, whatever order the events reached the log in, and
every writer keeps it so; `doctor` names every card that disagrees. The replay checked here is
tests/git_scenario.py's own, written from the rule, not the product's code."""

from __future__ import annotations

import json
from datetime import timedelta

from external_brain.vault import frontmatter
from external_brain.vault.storage import iso, now
from git_scenario import replay_confidence
from helpers import events, ok_data, run_cli, write_card


def _stored(vault, rel: str) -> float:
    return frontmatter.parse((vault / rel).read_text(encoding="utf-8")).data["confidence"]


def _append(vault, *records: dict) -> None:
    with open(vault / "logs" / "events.jsonl", "a", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def test_record_agrees_with_the_replay_when_the_log_holds_later_feedback_from_another_clone(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Clock skew")
    ok_data("record", card["path"], "used")                              # 0.5 -> 0.55
    ahead = iso(now() + timedelta(minutes=5))                            # a clone whose clock runs ahead
    _append(vault, {"eid": "ffff0000-0000-4000-8000-000000000001", "ts": ahead, "event": "rejected",
                    "card": card["path"], "id": card["id"], "actor": "other", "before": 0.5, "after": 0.45})
    ok_data("doctor", "--fix")                                           # the merged event, replayed in
    assert _stored(vault, card["path"]) == 0.495                         # 0.5 -> used 0.55 -> rejected 0.495
    ok_data("record", card["path"], "used")
    # The new feedback comes before the other clone's in the replay order: 0.55 -> 0.595 -> 0.5355
    want = replay_confidence(events(vault))[card["id"]]
    assert want == 0.5355 and _stored(vault, card["path"]) == want


def test_feedback_given_within_one_second_stays_in_its_order(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Rapid fire")
    for outcome in ("used", "rejected", "rejected", "used", "used", "rejected"):
        ok_data("record", card["path"], outcome)
    assert _stored(vault, card["path"]) == replay_confidence(events(vault))[card["id"]]
    assert [e["ts_ns"] for e in events(vault) if "ts_ns" in e] == sorted(e["ts_ns"] for e in events(vault) if "ts_ns" in e)


def test_doctor_names_every_card_whose_confidence_is_not_the_replay(vault):
    # Two clones each recorded once, from 0.5; the merged card holds one side's value, which is
    # also the `after` of the last event in the log: the check of the last event alone saw nothing.
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Merged feedback")
    path = vault / card["path"]
    moment = now()
    _append(vault,
            {"eid": "aaaa0000-0000-4000-8000-000000000001", "ts": iso(moment - timedelta(seconds=2)), "event": "used",
             "card": card["path"], "id": card["id"], "actor": "one", "before": 0.5, "after": 0.55},
            {"eid": "bbbb0000-0000-4000-8000-000000000002", "ts": iso(moment - timedelta(seconds=1)),
             "event": "rejected", "card": card["path"], "id": card["id"], "actor": "two", "before": 0.5, "after": 0.45})
    path.write_text(path.read_text(encoding="utf-8").replace("confidence: 0.5", "confidence: 0.45"), encoding="utf-8")
    findings = ok_data("doctor")["findings"]
    assert [(f["path"], f["message"].split(",")[0]) for f in findings] == \
        [(card["path"], "confidence 0.45 differs from 0.495")]            # 0.5 -> 0.55 -> 0.495
    fixed = ok_data("doctor", "--fix")
    assert fixed["findings"] == [] and _stored(vault, card["path"]) == 0.495
    settled = [e for e in events(vault) if e["event"] == "settled"]
    assert len(settled) == 1 and settled[0]["confidence"] == {card["path"]: [0.45, 0.495]}
    # Undone, the settle gives back nothing the log disagrees with: the log is the truth.
    assert ok_data("undo", settled[0]["eid"])["files"] == [] and _stored(vault, card["path"]) == 0.495


def test_undo_of_an_edit_keeps_the_confidence_feedback_gave_since(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Edited then used")
    edit = ok_data("update", card["path"], "--append", "A detail.")
    ok_data("record", card["path"], "used")
    ok_data("undo", edit["event"], "--force")
    assert "A detail." not in (vault / card["path"]).read_text(encoding="utf-8")
    assert _stored(vault, card["path"]) == 0.55 and ok_data("doctor")["findings"] == []


def test_a_note_without_an_id_gets_the_same_id_wherever_it_is_first_written(tmp_path):
    ids = []
    for name in ("one", "two"):
        root = tmp_path / name
        assert run_cli("init", str(root))[0] == 0
        write_card(root, "Playbooks/Note.md", "# Note\r\n\r\nWritten by hand.\r\n" if name == "two" else
                   "# Note\n\nWritten by hand.\n")                        # a Windows checkout has CRLF
        ids.append(ok_data("record", "Playbooks/Note.md", "used", "--vault", str(root))["id"])
    assert ids[0] == ids[1]
    assert ids[0][14] == "8"                                              # a UUID of version 8 (derived)


def test_a_write_settles_only_after_the_log_changed_elsewhere_not_after_a_search_miss(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Set by hand")
    ok_data("record", card["path"], "used")
    path = vault / card["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("confidence: 0.55", "confidence: 0.9"), encoding="utf-8")
    assert ok_data("search", "xylophone quagmire")["miss_candidate"]     # a read that logs and writes the Inbox
    ok_data("get", card["path"])                                          # a read that logs `referenced`
    ok_data("remember", "k", "--body", "an unrelated write")
    assert _stored(vault, card["path"]) == 0.9                            # no merge happened: nothing settled
    assert [e["event"] for e in events(vault)].count("settled") == 0
    found = ok_data("doctor")["findings"]
    assert [f["message"].split(",")[0] for f in found] == ["confidence 0.9 differs from 0.55"]
    # review6: the fix said "`brain doctor --fix` (or any write)", and the write above did not.
    assert found[0]["fix"] == "`brain doctor --fix` sets it to the logged value (after a git merge, any write does too)"
    # The log changed by more than this clone wrote (a merge brought another clone's feedback).
    _append(vault, {"eid": "cccc0000-0000-4000-8000-000000000003", "ts": iso(now()), "event": "used",
                    "card": card["path"], "id": card["id"], "actor": "other", "before": 0.5, "after": 0.55})
    ok_data("remember", "k", "--body", "the next write")
    assert _stored(vault, card["path"]) == replay_confidence(events(vault))[card["id"]]
