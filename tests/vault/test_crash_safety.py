"""A logged write killed at any instant leaves the log and the cards agreeing (journal.py).

Two kinds of kill, both real SIGKILLs of real `playbook_api.py` processes:
- at each step of a write, chosen with the `BRAIN_FAILPOINT` hook (deterministic): after the
  journal is written, after each file is written, after the events are logged;
- at random instants while processes record, create, promote, learn and remember in a loop.
Afterwards the next write (or `doctor`) finishes the operation, and for every card the stored
confidence equals a replay of its logged feedback; nothing is done twice, and no write a process
acknowledged is missing from the log. A write's append cut short leaves a torn line: the log is
read here as the product reads it (a torn line is skipped), the roll-forward never takes a torn
line for its event, and `doctor` reports a torn line left in the middle of the log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import (
    ROOT, SCRIPT, acknowledged, card_meta as meta, doctor_report, events, missing_acknowledged, ok_data,
    pending_journal, replay_problems, run_cli, run_json, storm, temp_files, whole_events, write_card,
)

STEPS = ("journaled", "applied", "logged")


def killed_at(step: str, *argv: str, vault: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test", "BRAIN_FAILPOINT": step}
    result = subprocess.run([sys.executable, str(SCRIPT), *argv], env=env, cwd=ROOT, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, (step, argv, result.returncode, result.stderr)
    return result


# ---------------------------------------------------------------------------- at each step

@pytest.mark.parametrize("step", STEPS)
def test_record_killed_at_each_step_is_finished_by_the_next_write(vault, step):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Crash Record")
    killed_at(step, "record", card["id"], "used", vault=vault)
    # Reads do not repair (they never write cards), but they work.
    assert ok_data("search", "crash record")["hits"][0]["path"] == card["path"]
    data = ok_data("record", card["id"], "used")      # the next write rolls the first one forward
    assert data["before"] == 0.55 and data["after"] == 0.595
    assert [e["event"] for e in events(vault)] == ["created", "used", "used"]
    assert replay_problems(vault) == []
    assert pending_journal(vault) == []


@pytest.mark.parametrize("step", STEPS)
def test_record_killed_at_each_step_is_finished_by_doctor(vault, step):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Crash Doctor")
    killed_at(step, "record", card["id"], "rejected", "wrong fix", vault=vault)
    report = doctor_report()
    assert meta(vault / card["path"])["confidence"] == 0.45
    assert [e["event"] for e in events(vault)] == ["created", "rejected"]
    assert events(vault)[-1]["note"] == "wrong fix"
    assert replay_problems(vault) == [] and temp_files(vault) == []
    assert report["errors"] == 0
    assert doctor_report()["findings"] == []  # repaired once, then nothing left to say


@pytest.mark.parametrize("step", STEPS)
def test_promote_killed_half_way_then_promoted_again_leaves_one_card(vault, step):
    """Issue 8 defect 14: killed between writing the new card and removing the candidate, then
    promoted again, it left two cards with the same id."""
    learned = ok_data("learn", "--title", "Half Promoted", "--type", "troubleshooting", "--domain", "dev",
                      "--tags", "crash", "--problem", "p", "--solution", "s")
    killed_at(step, "promote", learned["path"], vault=vault)
    code, envelope, _ = run_json("promote", learned["path"])
    assert code == 2 and envelope["error"]["code"] == "INVALID_ARGUMENT"  # finished, not repeated
    assert "was promoted already" in envelope["error"]["message"]
    cards = list((vault / "Playbooks").glob("*.md"))
    assert [meta(p)["id"] for p in cards] == [learned["id"]]
    assert meta(vault / learned["path"])["status"] == "promoted"   # the candidate stays, closed
    assert [e["event"] for e in events(vault)] == ["learned", "promoted"]


@pytest.mark.parametrize("step", STEPS)
def test_create_that_supersedes_is_one_operation(vault, step):
    old = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "db",
                  "--title", "Primary database is db1", "--body", "The primary database host is db1.")
    killed_at(step, "create", "--type", "fact", "--domain", "infra", "--tags", "db",
              "--title", "Primary database is db2", "--body", "The primary database host is db2.", vault=vault)
    doctor_report()
    new = [p for p in (vault / "Playbooks").glob("*.md") if p.name != Path(old["path"]).name]
    assert len(new) == 1
    assert meta(vault / old["path"])["superseded_by"] == meta(new[0])["id"]
    assert [e["event"] for e in events(vault)] == ["created", "created", "superseded"]


@pytest.mark.parametrize("argv,event", [
    (("learn", "--title", "Lesson", "--type", "pattern", "--domain", "dev", "--problem", "p", "--solution", "s"),
     "learned"),
    (("remember", "task", "--body", "deploying"), "remembered"),
    (("search", "nothing matches zebra"), "search_miss"),
])
@pytest.mark.parametrize("step", STEPS)
def test_other_logged_writes_killed_at_each_step(vault, argv, event, step):
    killed_at(step, *argv, vault=vault)
    doctor_report()
    assert [e["event"] for e in events(vault)] == [event]
    folder = {"learned": "Inbox", "remembered": "WorkingMemory", "search_miss": "Inbox"}[event]
    assert len(list((vault / folder).glob("*.md"))) == 1
    assert temp_files(vault) == []


def pending_line(vault: Path) -> bytes:
    """The log line the killed writer was about to append: its journaled event, encoded as the
    log encodes events (compact JSON, `eid` first, one newline)."""
    (entry,) = pending_journal(vault)
    (event,) = entry["events"]
    line = json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
    assert line.startswith(b'{"eid":"' + event["eid"].encode() + b'"')
    return line


def copy_again(snapshot: Path, copy: Path) -> None:
    """Make `copy` what `shutil.copytree(snapshot, copy)` makes of a new folder (every file's bytes,
    mode and modification time, by `shutil.copy2`), touching only what differs from it: a file or
    folder `snapshot` lacks is removed, a file that differs in any of those is copied again.

    Trigger: a test that starts each of hundreds of rounds from one vault's state. Why: a new copy
    and its removal per round made and removed every folder and file of the vault (~200 rounds:
    13.5 ms CPU and ~120 ms wall a round on the loaded machine), where a round changes a few files.
    Outcome: the same state each round (folders' times too, which the index keeps, as copytree
    copies them); the vault's files keep their inode from round to round, as
    its cache (stamped with the inodes of the vault it was made in) sees new inodes either way."""
    if not copy.exists():
        shutil.copytree(snapshot, copy)
        return
    for path in sorted(copy.rglob("*"), reverse=True):   # children before their folder
        if not (snapshot / path.relative_to(copy)).exists():
            path.rmdir() if path.is_dir() and not path.is_symlink() else path.unlink()
    folders = [snapshot]
    for source in sorted(snapshot.rglob("*")):          # folders before their children
        target = copy / source.relative_to(snapshot)
        if source.is_dir():
            target.mkdir(exist_ok=True)
            folders.append(source)
            continue
        was, now = source.stat(), target.stat() if target.exists() else None
        if now is None or (was.st_size, was.st_mtime_ns, was.st_mode) != (now.st_size, now.st_mtime_ns, now.st_mode) \
                or source.read_bytes() != target.read_bytes():
            shutil.copy2(source, target)
    for source in folders:   # last: a file made or removed in a folder changes the folder's time
        shutil.copystat(source, copy / source.relative_to(snapshot))


def test_a_torn_fragment_of_the_pending_event_is_never_taken_for_the_event(vault, tmp_path, monkeypatch):
    """Issue 19: a torn fragment of the journaled event (the writer's append cut short: a kill in
    the middle of its write, power loss, a full disk) counted as logged once it held the event's
    `{"eid":"..."` (45 bytes), so the event was never appended and the card kept the value it
    gave. Every length from 1 byte to the whole line but its newline (which already parses as
    the event): the recovery (doctor, or the next write) finishes the torn line, so the event is
    logged whole exactly once, no fragment is left, and the card equals a replay of the log."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Torn Pending")
    killed_at("journaled", "record", card["id"], "used", vault=vault)
    line = pending_line(vault)
    eid = json.loads(line)["eid"]
    snapshot = tmp_path / "snapshot"
    shutil.copytree(vault, snapshot)
    copy = tmp_path / "torn-0"
    for length in range(1, len(line)):
        copy_again(snapshot, copy)
        copy = copy.rename(tmp_path / f"torn-{length}")   # a vault at a new path each round, as before
        with open(copy / "logs" / "events.jsonl", "ab") as log:
            log.write(line[:length])
        monkeypatch.setenv("BRAIN_VAULT", str(copy))
        by_doctor = length % 2 == 0
        if by_doctor:
            doctor_report()
        else:
            assert ok_data("record", card["id"], "used")["before"] == 0.55, length
        logged = events(copy)
        assert [e["event"] for e in logged] == ["created", "used"] + ([] if by_doctor else ["used"]), length
        assert [e["eid"] for e in logged].count(eid) == 1, length
        assert meta(copy / card["path"])["confidence"] == (0.55 if by_doctor else 0.595), length
        assert replay_problems(copy) == [], length
        assert len(whole_events(copy)) == len(logged), length  # the torn line was finished, not left
        assert pending_journal(copy) == []


def log_findings(report: dict) -> list[dict]:
    return [f for f in report["findings"] if f["path"].startswith("logs/events.jsonl")]


def test_a_torn_fragment_a_read_appended_after_is_reported_by_doctor_with_its_event_logged_whole(vault):
    """The torn line of a killed `record` is no longer the log's last line when a read (`get`,
    which logs `referenced` and never rolls forward) appends before the next write: the roll-
    forward then logs the event whole after it, and doctor reports the fragment as an error at
    its line and byte, saying that its event is also logged whole."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Torn Then Read")
    killed_at("journaled", "record", card["id"], "used", vault=vault)
    line = pending_line(vault)
    eid = json.loads(line)["eid"]
    log = vault / "logs" / "events.jsonl"
    offset = log.stat().st_size
    with open(log, "ab") as handle:
        handle.write(line[:60])   # the reproduction: 60 bytes, the eid whole
    ok_data("get", card["id"])
    report = doctor_report()
    assert meta(vault / card["path"])["confidence"] == 0.55 and replay_problems(vault) == []
    assert [e["event"] for e in events(vault)] == ["created", "referenced", "used"]
    (finding,) = log_findings(report)
    assert finding["level"] == "error" and finding["path"] == "logs/events.jsonl:2"
    assert f"byte {offset} " in finding["message"] and eid in finding["message"]
    assert "also logged whole" in finding["message"] and "delete line 2" in finding["fix"]


def test_doctor_says_when_a_torn_fragment_names_an_event_the_log_lacks(vault):
    """A read killed mid-append (its `referenced` event is logged without a journal, best effort)
    leaves a fragment that a later write moves off the end: doctor names the missing event."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Torn Read")
    log = vault / "logs" / "events.jsonl"
    ok_data("get", card["id"])
    referenced = log.read_bytes().splitlines(keepends=True)[-1]
    eid = json.loads(referenced)["eid"]
    cut = referenced.index(b',"id":')   # cut after its `card`
    log.write_bytes(log.read_bytes()[:-len(referenced)] + referenced[:cut])
    offset = log.stat().st_size - cut
    warned = log_findings(doctor_report())
    assert [(f["level"], f["path"]) for f in warned] == [("warning", "logs/events.jsonl:2")]
    assert "last line" in warned[0]["message"] and eid in warned[0]["message"]
    ok_data("record", card["id"], "used")
    (finding,) = log_findings(doctor_report())
    assert finding["level"] == "error" and finding["path"] == "logs/events.jsonl:2"
    assert f"byte {offset} " in finding["message"] and eid in finding["message"]
    assert "not logged whole" in finding["message"]
    assert f"(referenced, {card['path']})" in finding["message"]
    assert f"`brain history {card['path']}`" in finding["fix"]
    assert [e["event"] for e in events(vault)] == ["created", "used"]


@pytest.mark.parametrize("fragment,what", [
    (b'{"eid":"12', "cut before its id"),
    (b'{"ei', "cut before its id"),
    (b'a note someone typed', "not an event of this tool"),
])
def test_doctor_reports_a_line_in_the_middle_of_the_log_that_names_no_event(vault, fragment, what):
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Odd Line")
    log = vault / "logs" / "events.jsonl"
    offset = log.stat().st_size
    with open(log, "ab") as handle:
        handle.write(fragment)
    assert [f["level"] for f in log_findings(doctor_report())] == ["warning"]   # the last line
    ok_data("remember", "later", "--body", "a write after it")
    (finding,) = log_findings(doctor_report())
    assert (finding["level"], finding["path"]) == ("error", "logs/events.jsonl:2")
    assert f"byte {offset} ({len(fragment)} bytes)" in finding["message"] and what in finding["message"]


def test_a_person_edit_after_the_crash_is_kept(vault):
    """The roll-forward never overwrites what a person wrote since: the file stays as edited,
    the operation is not logged for it, and doctor names the kept journal."""
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Edited After Crash")
    killed_at("journaled", "record", card["id"], "used", vault=vault)
    path = vault / card["path"]
    edited = path.read_text(encoding="utf-8") + "\nA line a person added.\n"
    path.write_text(edited, encoding="utf-8")
    report = doctor_report()
    assert path.read_text(encoding="utf-8") == edited
    assert [e["event"] for e in events(vault)] == ["created"]
    assert any("journal-conflict" in f["path"] for f in report["findings"] if f["level"] == "error")


def test_doctor_reports_a_confidence_the_log_does_not_explain(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Hand Set")
    ok_data("record", card["id"], "used")
    path = vault / card["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("confidence: 0.55", "confidence: 0.9"), encoding="utf-8")
    findings = doctor_report()["findings"]
    assert any(f["path"] == card["path"] and "0.55" in f["message"] for f in findings)


def test_doctor_removes_temp_files_left_in_every_folder(vault):
    for rel in ("Playbooks/.X.md.0123456789ab.tmp", "Inbox/.Y.md.0123456789ab.tmp",
                "WorkingMemory/.k.md.0123456789ab.tmp", ".brain/.journal.json.0123456789ab.tmp"):
        write_card(vault, rel, "partial")
    write_card(vault, "Playbooks/.obsidian-keep.tmp", "not ours")  # not our name pattern: kept
    report = doctor_report()
    assert temp_files(vault) == ["Playbooks/.obsidian-keep.tmp"]
    assert sum("temporary file" in f["message"] for f in report["findings"]) == 4


# ---------------------------------------------------------------------------- at random instants

def test_processes_killed_at_random_instants_leave_log_and_cards_agreeing(vault):
    target = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Storm Target")
    storm(vault, target["id"], kills=24, seed=8)
    report = doctor_report()
    # No acknowledged write is missing its event (the log read as the product reads it: a line a
    # kill tore is skipped), and the roll-forward finished any torn line a killed write left.
    assert missing_acknowledged(vault) == []
    assert any(ack["command"] == "record" for ack in acknowledged(vault))
    assert [f for f in report["findings"] if f["level"] == "error"] == []
    assert replay_problems(vault) == []
    assert temp_files(vault) == []
    ids = [meta(p)["id"] for p in (vault / "Playbooks").glob("*.md")]
    assert len(ids) == len(set(ids))
    created = {e["id"] for e in events(vault) if e["event"] in ("created", "promoted")}
    assert set(ids) <= created  # every card has its event
    assert sum(1 for e in events(vault) if e["event"] in ("used", "rejected")) >= 5
    code, out, err = run_cli("record", target["id"], "used")
    assert code == 0, err


def test_the_settle_mark_is_written_over_in_place_never_cut(vault):
    """Every write moves the settle mark (`settle.mark_settled`) under the write lock. Cutting the
    file to nothing and writing it again made ext4 flush it on close, ~5 ms of every write held
    under the lock; it is written over from its start instead, so a mark shorter than the one
    before must still read as itself, with no byte of the old one after it."""
    from external_brain.vault.settle import MARK, mark_settled, settle_due
    from external_brain.vault.storage import Vault

    ok_data("create", "--type", "insight", "--domain", "infra", "--title", "Settle mark", "--body", "x")
    v = Vault(vault)
    path = v.cache_dir / MARK
    longer = json.dumps({"ino": 10 ** 18, "size": 10 ** 18, "tail": 4294967295, "note": "z" * 150})
    path.write_text(longer, encoding="utf-8")
    assert settle_due(v)
    mark_settled(v)
    assert path.stat().st_size >= len(longer)          # written over, not cut
    assert not settle_due(v)                            # and it reads as the mark just written
    stat = os.stat(v.log_path)
    assert json.loads(path.read_text(encoding="utf-8"))["size"] == stat.st_size
    ok_data("record", "Settle mark", "used")            # the next write finds nothing to settle
    assert not [e for e in events(vault) if e["event"] == "settled"]
