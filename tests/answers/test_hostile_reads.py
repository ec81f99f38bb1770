"""Hostile input to the CLI's reads (issue 18, "No input takes a door down"), each run as a real
process with a time and memory limit so that a defect fails the test instead of hanging or
swallowing the machine:
- `history` (and `undo`) on a FIFO named `*.md` hung, on a character device ate 4 GB in 10 s:
  they read the file with `Path.read_bytes`, not the one safe reader every other command uses.
- `history <global card> --agent bob` named another agent's private card (its path is its title).
- A card ending in `---` with no final newline was refused by `update --body` (it glued the body
  to the fence) but read by every other command.
- A JSON line nested 10,000 deep: a RecursionError traceback from `import`, and, in the event log,
  from every command that reads the log (search, history, audit).
- A relative date before year 1 ("99999999 days ago") took `ingest` down with an OverflowError."""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT, events, ok_data, vault_hashes, write_card

GOOD = "---\ntitle: Pooling\ntype: pattern\ndomain: dev\ntags: [pooling]\nconfidence: 0.5\n---\n# Pooling\n\nUse pgbouncer.\n"
MEMORY_CAP = 1 << 30   # the 4 GB read dies at 1 GB instead


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def cli(vault: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`brain ARGV` as a real process, bounded in time (a hang fails) and memory."""
    return subprocess.run([sys.executable, str(SCRIPT), *argv], input=stdin, capture_output=True, text=True,
                          timeout=60, preexec_fn=_capped,
                          env={**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"})


def one_line_error(done: subprocess.CompletedProcess, code: int = 1) -> str:
    assert (done.returncode, done.stdout) == (code, ""), (done.returncode, done.stdout, done.stderr)
    assert done.stderr.startswith("brain: error: ") and done.stderr.count("\n") == 1, done.stderr
    return done.stderr[len("brain: error: "):-1]


# ---------------------------------------------------------------------------- history of odd files

FIFO = "a named pipe (FIFO), not a regular file: only regular files are cards; move it out of the card folders"
DEVICE = "a character device, not a regular file: only regular files are cards; move it out of the card folders"


def test_history_of_a_fifo_named_like_a_card_is_refused_at_once(vault):
    os.mkfifo(vault / "Playbooks" / "F.md")
    for ref in ("Playbooks/F.md", "F"):
        assert one_line_error(cli(vault, "history", ref)) == f"Playbooks/F.md is {FIFO}"
    assert one_line_error(cli(vault, "get", "F")) == f"Playbooks/F.md is {FIFO}"   # the same rule


def test_history_of_a_device_named_like_a_card_is_refused_unread(vault):
    try:   # /dev/zero's numbers: a reader that reads it never stops
        os.mknod(vault / "Playbooks" / "Z.md", stat.S_IFCHR | 0o644, os.makedev(1, 5))
    except PermissionError:
        pytest.skip("making a device node needs root")
    for ref in ("Playbooks/Z.md", "Z"):
        assert one_line_error(cli(vault, "history", ref)) == f"Playbooks/Z.md is {DEVICE}"


def test_undo_refuses_a_card_that_became_a_fifo_before_writing(vault):
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    assert cli(vault, "update", "Pattern_Pooling", "--body", "Use pgcat.").returncode == 0
    eid = events(vault)[-1]["eid"]
    (vault / "Playbooks" / "Pattern_Pooling.md").unlink()
    os.mkfifo(vault / "Playbooks" / "Pattern_Pooling.md")
    before = vault_hashes(vault), len(events(vault))
    assert one_line_error(cli(vault, "undo", eid)) == f"Playbooks/Pattern_Pooling.md is {FIFO}"
    assert one_line_error(cli(vault, "undo", eid, "--force")) == f"Playbooks/Pattern_Pooling.md is {FIFO}"
    assert (vault_hashes(vault), len(events(vault))) == before
    assert stat.S_ISFIFO(os.lstat(vault / "Playbooks" / "Pattern_Pooling.md").st_mode)


# ---------------------------------------------------------------------------- history and privacy

def test_history_never_names_another_agents_private_card(vault):
    shared = ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "pool", "--title", "Shared pooling",
                     "--body", "Use a pool.")["id"]
    ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "pool", "--title", "Alice secret plan",
            "--body", "Only alice knows.", "--scope", "agent", "--agent", "alice")
    ok_data("link", "Pattern_Alice_secret_plan (alice)", shared, "--rel", "extends")
    ok_data("update", shared, "--body", "Use a pool, sized to the cores.")
    ok_data("delete", shared)   # cascades into alice's card: the event names it and holds its text

    for agent in ("bob", None):
        argv = ["history", shared, *(["--agent", agent] if agent else [])]
        text, data = cli(vault, *argv), cli(vault, *argv, "--json")
        assert text.returncode == 0 and data.returncode == 0, (text.stderr, data.stderr)
        for shown in (text.stdout, data.stdout):
            assert "Alice" not in shown and "alice" not in shown and "secret" not in shown, shown
        entries = json.loads(data.stdout)["data"]["entries"]
        assert [e["event"] for e in entries] == ["deleted", "updated", "created"]
        deleted = entries[0]
        # The card, and its copy kept for git (`.brain/deleted/`, named by id): nothing of alice's.
        assert deleted["files"] == ["Playbooks/Pattern_Shared_pooling.md", f".brain/deleted/Playbooks/{shared}.md"]
        assert deleted["details"].get("cascaded") in (None, []), deleted
    # The card's own agent sees her link, and the cascade into her card.
    entries = json.loads(cli(vault, "history", shared, "--agent", "alice", "--json").stdout)["data"]["entries"]
    assert [e["event"] for e in entries] == ["deleted", "updated", "linked", "created"]
    assert entries[0]["details"]["cascaded"] == ["Playbooks/Pattern_Alice_secret_plan (alice).md"]
    assert "Playbooks/Pattern_Alice_secret_plan (alice).md" in entries[0]["files"]


# ---------------------------------------------------------------------------- the closing fence at the end

@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_card_ending_in_its_closing_fence_is_read_the_same_by_every_command(vault, newline):
    head = newline.join(["---", "title: Ends", "type: pattern", "domain: dev", "tags: [fence]", "---"])
    path = write_card(vault, "Playbooks/Pattern_Ends.md", head)
    for argv in (("get", "Pattern_Ends"), ("search", "ends"), ("list",)):
        done = cli(vault, *argv)
        assert done.returncode == 0 and "Ends" in done.stdout and done.stderr == "", (argv, done.stderr)
    assert cli(vault, "update", "Pattern_Ends", "--body", "Now with a body.").returncode == 0
    text = path.read_bytes().decode()
    keys = head[:-len("---")]   # the person's lines stay; the tool adds `id` and `updated` after them
    assert text.startswith(keys) and text.endswith(f"{newline}---{newline}Now with a body.{newline}"), repr(text)
    assert ok_data("get", "Pattern_Ends")["body"].strip() == "Now with a body."
    write_card(vault, "Playbooks/Pattern_Ends.md", head)
    assert cli(vault, "update", "Pattern_Ends", "--append", "Appended.").returncode == 0
    assert path.read_bytes().decode().endswith(f"---{newline}Appended.{newline}")
    for argv in (("record", "Pattern_Ends", "used"), ("update", "Pattern_Ends", "--title", "Ends renamed"),
                 ("delete", "Pattern_Ends_renamed")):
        done = cli(vault, *argv)
        assert done.returncode == 0, (argv, done.stderr)


# ---------------------------------------------------------------------------- deep JSON

DEEP = "[" * 10_000 + "]" * 10_000


def test_import_of_a_line_nested_10000_deep_names_the_line(vault, tmp_path):
    export = tmp_path / "export.jsonl"
    assert cli(vault, "export", "--output", str(export)).returncode == 0
    with open(export, "a") as handle:
        handle.write(DEEP + "\n")
    lines = export.read_text().count("\n")
    message = one_line_error(cli(vault, "import", str(export)))
    assert message == (f"{export} line {lines}: is nested too deeply to be an export line (thousands of levels); "
                       "fix or delete the line; nothing was imported — fix the line or re-export"), message


def test_a_log_line_nested_10000_deep_is_skipped_by_every_reader(vault):
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    assert cli(vault, "record", "Pattern_Pooling", "used").returncode == 0
    with open(vault / "logs" / "events.jsonl", "a") as handle:
        handle.write('{"event": ' + DEEP + "}\n")
    for argv in (("search", "pgbouncer"), ("get", "Pattern_Pooling"), ("history", "Pattern_Pooling"), ("audit",),
                 ("record", "Pattern_Pooling", "used"), ("list", "--sort", "confidence")):
        done = cli(vault, *argv)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (argv, done.stderr)
    findings = json.loads(cli(vault, "doctor", "--json").stdout)["data"]["findings"]
    # The deep line is followed by the `record` above: an unreadable line in the middle of the log.
    assert [f["path"] for f in findings if "not a whole event" in f["message"]] == ["logs/events.jsonl:2"], findings


@pytest.mark.parametrize("kind", ['{"a": 1}', "null"])
def test_a_log_line_whose_event_is_not_text_is_skipped_by_every_reader_and_named_by_doctor(vault, kind):
    # h14-web: a hand-edited line `"event": {...}` stopped `history` (a TypeError formatting it) and
    # `doctor` (an unhashable dict looked up in a set of event kinds), each with a traceback.
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    assert cli(vault, "record", "Pattern_Pooling", "used").returncode == 0
    with open(vault / "logs" / "events.jsonl", "a") as handle:
        handle.write('{"eid": "e1", "ts": "2026-01-01T00:00:00+00:00", "event": ' + kind
                     + ', "card": "Playbooks/Pattern_Pooling.md"}\n')
    assert cli(vault, "record", "Pattern_Pooling", "used").returncode == 0
    for argv in (("history", "Pattern_Pooling"), ("audit",)):
        done = cli(vault, *argv)
        assert "Traceback" not in done.stderr and done.returncode == 0, (argv, done.stderr)
    doctor = cli(vault, "doctor", "--json")
    assert "Traceback" not in doctor.stderr, doctor.stderr
    findings = json.loads(doctor.stdout)["data"]["findings"]
    found = [f for f in findings if f["path"] == "logs/events.jsonl:2"]
    assert len(found) == 1 and "a hand edit" in found[0]["message"] and "torn" not in found[0]["message"], findings


def test_an_event_without_an_id_is_shown_by_history_without_an_undo_hint(vault):
    # A log line with no `eid` is an event for every reader (older logs, a hand edit); `history` put
    # its undo hint together from the missing id and stopped with a TypeError when it named files.
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    assert cli(vault, "record", "Pattern_Pooling", "used").returncode == 0
    with open(vault / "logs" / "events.jsonl", "a") as handle:
        handle.write('{"ts": "2026-01-01T00:00:00+00:00", "event": "updated", "card": "Playbooks/Pattern_Pooling.md",'
                     ' "changed": ["body"], "files": [{"path": "Playbooks/Pattern_Pooling.md", "before": "x",'
                     ' "after": "1:00000000"}]}\n')
    done = cli(vault, "history", "Pattern_Pooling")
    assert "Traceback" not in done.stderr and done.returncode == 0, done.stderr
    assert "updated" in done.stdout and "(undo None)" not in done.stdout, done.stdout


# ---------------------------------------------------------------------------- relative dates

def test_a_relative_date_before_year_one_stays_as_written(vault):
    for text in ("I fixed the deploy 99999999 days ago.", "デプロイを99999999日前に直した。"):
        done = cli(vault, "ingest", "-", "--dry-run", "--json", stdin=text)
        assert done.returncode == 0, done.stderr
        (item,) = json.loads(done.stdout)["data"]["items"]
        assert "99999999" in item["statement"], item
    done = cli(vault, "ingest", "-", "--dry-run", "--json", "--event-time", "0010-01-01",
               stdin="I fixed the deploy 3000 weeks ago.")
    assert done.returncode == 0 and "3000 weeks ago" in done.stdout, done.stderr
    message = one_line_error(cli(vault, "ingest", "-", "--event-time", "0001-01-01", stdin="The db is down."), 2)
    assert message.startswith("event time '0001-01-01' is outside the times the tool reads"), message


# ---------------------------------------------------------------------------- more of the same classes

def test_a_config_nested_thousands_deep_is_a_config_error(vault):
    with open(vault / ".brain" / "config.toml", "a") as handle:
        handle.write("x = " + "[" * 5000 + "]" * 5000 + "\n")
    message = one_line_error(cli(vault, "list"))
    assert message == (f"{vault}/.brain/config.toml: invalid TOML: a value nested thousands of levels deep; "
                       "fix the file or delete it for defaults"), message


def test_import_refuses_a_lone_surrogate_in_any_line_before_writing(vault, tmp_path):
    export = tmp_path / "export.jsonl"
    assert cli(vault, "export", "--output", str(export)).returncode == 0
    header = export.read_text()
    before = vault_hashes(vault), len(events(vault))
    for record in ({"kind": "event", "event": {"eid": "e1", "ts": "2026-01-01T00:00:00Z", "event": "used",
                                                "card": "Playbooks/\ud800.md"}},
                   {"kind": "card", "path": "Playbooks/Pattern_X.md", "text": "---\ntitle: X\n---\nbody \udc80\n"},
                   {"kind": "card", "path": "Playbooks/Pattern_\udc80.md", "text": "body\n"}):
        export.write_text(header + json.dumps(record) + "\n")
        message = one_line_error(cli(vault, "import", str(export)))
        assert message.startswith(f"{export} line 2: holds text that is not valid Unicode (a lone surrogate, "), message
    assert (vault_hashes(vault), len(events(vault))) == before


def transcript_with_cut_characters(path: Path) -> Path:
    """A Claude Code transcript whose tool output and messages were cut inside an emoji."""
    def line(kind: str, content) -> dict:
        return {"type": kind, "message": {"role": kind, "content": content}}

    lines = [line("user", "run the tests \ud83d"),
             line("assistant", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}]),
             line("user", [{"type": "tool_result", "tool_use_id": "t1", "is_error": True,
                            "content": "ImportError: no module named foo \ud83d"}]),
             line("assistant", [{"type": "tool_use", "id": "t2", "name": "Edit",
                                 "input": {"file_path": "a.py", "old_string": "x", "new_string": "y"}}]),
             line("user", [{"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]),
             line("assistant", [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "pytest -q"}}]),
             line("user", [{"type": "tool_result", "tool_use_id": "t3", "content": "3 passed \udc80"}]),
             line("user", "no, don't use pip \ud800 use uv instead")]
    path.write_text("".join(json.dumps(item) + "\n" for item in lines))
    return path


def test_a_transcript_cut_inside_a_character_is_still_learned_from(vault, tmp_path):
    transcript = transcript_with_cut_characters(tmp_path / "session.jsonl")
    done = cli(vault, "learn", "--from-transcript", str(transcript), "--json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert len(json.loads(done.stdout)["data"]["learned"]) == 2
    texts = [p.read_text(encoding="utf-8") for p in (vault / "Inbox").glob("*.md")]
    assert any("no module named foo \ufffd" in t for t in texts) and any("use uv instead" in t for t in texts)
    payload = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path)})
    done = cli(vault, "hook", "pre-compact", stdin=payload)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done.stderr
    assert "run the tests \ufffd" in (vault / "WorkingMemory" / "session-s1.md").read_text(encoding="utf-8")
