"""A fact's or state's create searches for the cards of its subject (`cards.same_subject_cards`)
before the write lock, and takes that answer under the lock only when provably nothing was
written in between: no logged write, no card indexed, re-indexed or removed by any process
(`Index.change_stamp`), no folder changed, and every card weighed still holding the text read.
Otherwise it searches again, and supersedes what a search under the lock finds.

Each test runs the real `create` in a process of its own while the test holds the vault's
write lock, so a write can be made at the instant between the two searches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from external_brain.vault.storage import Vault, take_lock
from helpers import ROOT, ok_data

CREATE = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'runtime')!r})
from external_brain import cards
from external_brain.doors.cli import main
searched = []
search = cards.same_subject_cards
def counted(*args, **kwargs):
    searched.append(1)
    return search(*args, **kwargs)
cards.same_subject_cards = counted
code = main(["create", "--type", "fact", "--domain", "infra", "--title", "The payments API timeout is 60 seconds",
             "--json"])
print(json.dumps({{"searches": len(searched)}}), file=sys.stderr)
sys.exit(code)
"""


def blocked_on_a_lock(pid: int) -> bool:
    """Whether process `pid` waits for a lock (a `->` line of /proc/locks names it)."""
    with open("/proc/locks", encoding="ascii") as locks:
        return any("->" in line and line.split()[5 if line.split()[1] == "->" else 4] == str(pid) for line in locks)


def create_with_a_write_between(vault: Path, between) -> tuple[list[str], int]:
    """Run the fact's create; once it has searched and waits for the write lock the test holds,
    call `between()`, then let it go. The paths it superseded, and how many subject searches."""
    lock = take_lock(Vault(vault), "write")
    try:
        process = subprocess.Popen([sys.executable, "-c", CREATE], env={**os.environ, "BRAIN_ACTOR": "test"},
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not blocked_on_a_lock(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, "the create never waited for the lock"
            time.sleep(0.005)
        between()
    finally:
        os.close(lock)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    made = json.loads(out)["data"]
    return sorted(c["path"] for c in made["insights"]["supersedes"]), json.loads(err.strip().splitlines()[-1])["searches"]


def fact(title: str) -> str:
    return ok_data("create", "--type", "fact", "--domain", "infra", "--title", title)["path"]


def test_with_nothing_written_between_the_subject_search_before_the_lock_is_taken(vault: Path) -> None:
    old = fact("The payments API timeout is 30 seconds")
    ok_data("search", "payments")
    assert create_with_a_write_between(vault, lambda: None) == ([old], 1)


def test_a_persons_save_in_place_between_the_searches_is_seen(vault: Path) -> None:
    # The index never sees it (the folder is unchanged, the create's refresh reads folders only):
    # only the texts of the cards weighed tell. The search again supersedes what main's does: the
    # card as the candidates search read it before the lock (archived), as `still_related` keeps
    # a candidate no logged write touched.
    old = fact("The payments API timeout is 30 seconds")
    archived = fact("The payments API timeout is 45 seconds")   # supersedes `old`: make it active again
    ok_data("update", old, "--status", "active")
    ok_data("update", archived, "--status", "archived")
    ok_data("search", "payments")
    path = vault / archived

    def unarchive() -> None:
        text = path.read_text(encoding="utf-8")
        assert "status: archived" in text
        with open(path, "r+", encoding="utf-8") as file:   # in place: the same inode, the folder untouched
            file.write(text.replace("status: archived", "status: active  "))

    assert create_with_a_write_between(vault, unarchive) == ([old], 2)


def test_a_card_another_process_indexed_between_the_searches_is_seen(vault: Path) -> None:
    # A person's new card, indexed by another process's search: no logged write, and by the time
    # the create opens the index under the lock its folder is known. Only the change stamp tells.
    old = fact("The payments API timeout is 30 seconds")
    ok_data("search", "payments")
    new = "Playbooks/Fact_payments_timeout_by_hand.md"

    def written_by_hand_and_indexed() -> None:
        (vault / "Playbooks" / ".by_hand.tmp").write_text(
            "---\nid: 5d7c4c34-5cf4-4b8e-9a53-0a3c29d7a001\ntitle: The payments API timeout is 45 seconds\n"
            "type: fact\ndomain: infra\nstatus: active\n---\n\n# The payments API timeout is 45 seconds\n",
            encoding="utf-8")
        os.replace(vault / "Playbooks" / ".by_hand.tmp", vault / new)
        ok_data("search", "payments")   # another process: indexes it

    assert create_with_a_write_between(vault, written_by_hand_and_indexed) == (sorted([old, new]), 2)



def test_the_change_stamp_moves_with_every_write_of_a_cards_rows_and_only_then(vault: Path) -> None:
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index

    def stamp() -> str:
        index = Index.existing(Vault(vault), card_fields)
        try:
            return index.change_stamp()
        finally:
            index.close()

    old = fact("The payments API timeout is 30 seconds")
    ok_data("search", "payments")
    seen = [stamp()]
    ok_data("search", "timeout")                  # nothing changed: nothing written
    assert stamp() == seen[-1]
    for write in (lambda: ok_data("record", old, "used"),                   # a restamp
                  lambda: fact("The billing API timeout is 5 seconds"),     # a card indexed
                  lambda: ok_data("delete", old),                           # one removed
                  lambda: ok_data("reindex")):                              # all of them again
        write()
        ok_data("search", "payments")
        assert stamp() not in seen
        seen.append(stamp())
    for suffix in ("", "-wal", "-shm"):               # a new file: a stamp of its own, not the old one's
        (vault / f".brain/cache/index.sqlite{suffix}").unlink(missing_ok=True)
    ok_data("search", "payments")
    assert stamp() not in seen


def test_a_persons_save_in_place_of_the_card_superseded_is_kept_in_its_rewrite(vault: Path) -> None:
    # The card a fact replaces was read before the write lock; a person adds a line to it in place
    # (Obsidian) before the create takes the lock. Marking it superseded rewrites it: from its
    # text as it is then, never from the text read before (which would drop the person's line).
    old = fact("The payments API timeout is 30 seconds")
    ok_data("search", "payments")
    path = vault / old

    def a_person_adds_a_line() -> None:
        with open(path, "a", encoding="utf-8") as file:   # in place: the same inode, the folder untouched
            file.write("\nMeasured by Aiko on the staging cluster.\n")

    superseded, _ = create_with_a_write_between(vault, a_person_adds_a_line)
    assert superseded == [old]
    text = path.read_text(encoding="utf-8")
    assert "Measured by Aiko on the staging cluster." in text
    assert "status: superseded" in text
