"""A batch's cards are passed on to the search index once the vault's write lock is let go
(search/pass_on.py): the batch's parts end under the lock and then after it, before the
operations return; a reader of the index under the lock finds the batch's queued pass-ons made;
and writers in several processes leave the index agreeing with every file and folder."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, file_stamp, indexed_stamp, ok_data

from external_brain.search.analysis import card_fields
from external_brain.search.index import Index
from external_brain.vault.events import new_event
from external_brain.vault.journal import Effect, writing
from external_brain.vault.storage import Vault, load_card
from external_brain.writes import commit_operation


def write_lock_held(vault: Path) -> bool:
    fd = os.open(vault / ".brain" / "locks" / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def folder_row(vault: Path, folder: str) -> int:
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        return db.execute("SELECT mtime_ns FROM folders WHERE path = ?", (folder,)).fetchone()[0]


def test_a_batch_part_ends_under_the_lock_then_after_it_before_the_operation_returns(vault: Path) -> None:
    seen = []

    class Part:
        def locked_end(self) -> None:
            seen.append(("locked_end", write_lock_held(vault)))

        def unlocked_end(self) -> None:
            seen.append(("unlocked_end", write_lock_held(vault)))

    with writing(Vault(vault)) as writer:
        assert writer.part(Part, Part) is writer.part(Part, lambda: None)   # one a batch
        assert seen == []
    assert seen == [("locked_end", True), ("unlocked_end", False)]


def test_a_reader_under_the_lock_finds_the_batch_s_queued_pass_on_made(vault: Path) -> None:
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    v = Vault(vault)
    card = load_card(v, vault / made["path"])
    new_text = card.text.replace("with jitter.", "with jitter and a cap of thirty seconds (marmalade).")
    with writing(v) as writer:
        index = Index.existing(v, card_fields)
        try:
            commit_operation(writer, [Effect(card.path, card.text, new_text)],
                             [new_event("updated", made["path"], made["id"])], index=index)
        finally:
            index.close()
        # Still in the batch, under the lock: the pass-on is queued, not yet made.
        assert indexed_stamp(vault, made["path"]) != file_stamp(vault, made["path"])
        reader = Index.open(v, card_fields, sweep=None)
        try:
            assert not reader.changes   # nothing left for its refresh to find: the pass-on was made first
            assert indexed_stamp(vault, made["path"]) == file_stamp(vault, made["path"])
            assert folder_row(vault, "Playbooks") == os.stat(vault / "Playbooks").st_mtime_ns
        finally:
            reader.close()
    assert indexed_stamp(vault, made["path"]) == file_stamp(vault, made["path"])


WRITER = """
import sys
sys.path.insert(0, {runtime!r})
from external_brain.doors.cli import main
for n in range(int(sys.argv[2])):
    for card in sys.argv[3:]:
        if main(["update", card, "--append", f"marker {{sys.argv[1]}} {{n}}", "--json"]) != 0:
            sys.exit(1)
"""


def test_writers_in_two_processes_leave_the_index_agreeing_with_every_file_and_folder(vault: Path) -> None:
    ids, rels = [], []
    for title in ("Retry with jitter", "Pin the base image", "Drain before deploy"):
        made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", f"{title}.")
        ids.append(made["id"])
        rels.append(made["path"])
    ok_data("search", "jitter")
    code = WRITER.format(runtime=str(ROOT / "runtime"))
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    writers = [subprocess.Popen([sys.executable, "-c", code, name, "6", *ids], env=env, cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for name in ("a", "b")]
    for process in writers:
        _, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
    for rel in rels:
        assert indexed_stamp(vault, rel) == file_stamp(vault, rel)
    assert folder_row(vault, "Playbooks") == os.stat(vault / "Playbooks").st_mtime_ns
    index = Index.open(Vault(vault), card_fields, sweep=None)
    try:
        assert not index.changes   # the next search lists nothing again
    finally:
        index.close()


HOLDER = """
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
db.execute("COMMIT")
"""


def test_a_reader_under_the_lock_waits_for_the_index_as_long_as_any_reader(vault: Path) -> None:
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    path = vault / made["path"]
    # A person's save (a new file, the folder's mtime moved): the refresh has a change to store.
    text = path.read_text(encoding="utf-8").replace("with jitter.", "with jitter and a cap (marmalade).")
    spare = path.with_name("saved-by-hand.tmp")
    spare.write_text(text, encoding="utf-8")
    os.replace(spare, path)
    # Another process holds the index's write lock for a second (a reindex, a fold, a big refresh).
    index_file = vault / ".brain" / "cache" / "index.sqlite"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(index_file), "1.5"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        v = Vault(vault)
        with writing(v):
            reader = Index.open(v, card_fields, sweep=None)
            try:
                # As outside the lock: it waits for the index (_BUSY_TIMEOUT), not a private one in memory.
                assert reader.trouble is None, reader.trouble
                assert indexed_stamp(vault, made["path"]) == file_stamp(vault, made["path"])
            finally:
                reader.close()
    finally:
        holder.communicate(timeout=30)


def test_a_part_s_locked_end_failing_still_ends_the_parts_ended_before_it(vault: Path) -> None:
    seen = []

    class Holds:
        """Takes something under the lock (as the pass-on's `BEGIN IMMEDIATE`) and lets it go after."""

        def locked_end(self) -> None:
            seen.append("taken")

        def unlocked_end(self) -> None:
            seen.append("let go")

    class Fails:
        def locked_end(self) -> None:
            raise RuntimeError("a bug in a part")

        def unlocked_end(self) -> None:
            seen.append("never")

    with pytest.raises(RuntimeError, match="a bug in a part"):
        with writing(Vault(vault)) as writer:
            writer.commit([], [new_event("note", None, None)])
            writer.part(Holds, Holds)
            writer.part(Fails, Fails)
    assert seen == ["taken", "let go"]
