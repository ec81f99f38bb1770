"""A person's save that lands while a logged write is under way is kept (journal._still_as_read).

A write reads its files under the vault's write lock, but a person (an editor's save, a `git
checkout`) never takes that lock. Each test stops a real CLI process just before it changes a
file (`BRAIN_FAILPOINT=applying:stop`, a SIGSTOP), saves the file as a person would, lets the
process go on (SIGCONT), and checks that the save is still there, that the write was refused as a
conflict, and that nothing of it was done: no event, no file of it left, no journal to roll forward.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from helpers import CHILD_PYTHON, ROOT, SCRIPT, events, ok_data, pending_journal, replay_problems, temp_files


def stopped_before_a_file_changes(*argv: str, vault: Path, nth: int = 1) -> subprocess.Popen:
    """A CLI process running `argv`, stopped just before the `nth` file of its write changes."""
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test",
           "BRAIN_FAILPOINT": f"applying@{nth}:stop" if nth > 1 else "applying:stop"}
    process = subprocess.Popen([*CHILD_PYTHON, str(SCRIPT), *argv, "--json"], env=env, cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            state = "?"
        if state == "T":
            return process
        if process.poll() is not None:
            raise AssertionError(f"{argv} ended before it stopped: {process.communicate()}")
        time.sleep(0.01)
    process.kill()
    raise AssertionError(f"{argv} did not stop within 60 s")


def go_on(process: subprocess.Popen) -> tuple[int, dict, str]:
    os.kill(process.pid, signal.SIGCONT)
    out, err = process.communicate(timeout=60)
    return process.returncode, json.loads(out), err


def journaled_paths(vault: Path) -> list[str]:
    """The files the stopped write's journal line names, in its order."""
    lines = (vault / ".brain" / "journal.json").read_text(encoding="utf-8").splitlines()
    return [item["path"] for item in json.loads(lines[-1])["files"]]


def assert_refused_and_undone(code: int, envelope: dict, vault: Path, events_before: list[str]) -> None:
    assert code == 1 and envelope["error"]["code"] == "CONFLICT", envelope
    assert "while this write was being made" in envelope["error"]["message"]
    assert "run the command again" in envelope["error"]["message"]
    assert [e["event"] for e in events(vault)] == events_before
    assert pending_journal(vault) == [] and temp_files(vault) == []
    assert replay_problems(vault) == []


def test_a_save_while_a_record_is_being_written_is_kept(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Saved Meanwhile")
    path = vault / card["path"]
    process = stopped_before_a_file_changes("record", card["id"], "used", vault=vault)
    saved = path.read_text(encoding="utf-8") + "\nA line a person added while the record was written.\n"
    path.write_text(saved, encoding="utf-8")
    code, envelope, _ = go_on(process)
    assert_refused_and_undone(code, envelope, vault, ["created"])
    assert path.read_text(encoding="utf-8") == saved
    # Run again, as the message says: it reads the person's text and keeps it.
    ok_data("record", card["id"], "used")
    assert "A line a person added while the record was written." in path.read_text(encoding="utf-8")
    assert [e["event"] for e in events(vault)] == ["created", "used"]


def test_a_file_a_person_made_at_a_new_cards_name_meanwhile_is_kept(vault):
    process = stopped_before_a_file_changes("create", "--type", "pattern", "--domain", "dev",
                                            "--title", "Named Meanwhile", vault=vault)
    [rel] = journaled_paths(vault)
    mine = "# My own note\n\nWritten by hand under the name the create chose.\n"
    (vault / rel).write_text(mine, encoding="utf-8")
    code, envelope, _ = go_on(process)
    assert_refused_and_undone(code, envelope, vault, [])
    assert (vault / rel).read_text(encoding="utf-8") == mine


def test_a_save_to_the_second_file_of_a_write_undoes_the_first(vault):
    """A promote writes the new card, then closes the Inbox candidate: the person's save of the
    candidate, found at the second file, takes the new card back out too."""
    learned = ok_data("learn", "--title", "Promoted Meanwhile", "--type", "troubleshooting", "--domain", "dev",
                      "--tags", "save", "--problem", "p", "--solution", "s")
    candidate = vault / learned["path"]
    process = stopped_before_a_file_changes("promote", learned["path"], vault=vault, nth=2)
    target, second = journaled_paths(vault)
    assert second == learned["path"] and (vault / target).exists()   # the first file is written
    saved = candidate.read_text(encoding="utf-8").replace("s\n", "s, and a detail a person added\n")
    candidate.write_text(saved, encoding="utf-8")
    code, envelope, _ = go_on(process)
    assert_refused_and_undone(code, envelope, vault, ["learned"])
    assert candidate.read_text(encoding="utf-8") == saved
    assert not (vault / target).exists()
    assert ok_data("promote", learned["path"])["path"] == target   # run again: done
