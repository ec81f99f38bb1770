"""Issue 22: `brain serve` folds the search index's waiting cards in an upkeep thread per worker
(`index.FoldUpkeep`), not on a request's path. Real servers on 127.0.0.1, each stopped at the end:

- A PATCH's text is found by a search right after its 200, while the card still waits in `stale`
  (not folded): readers merge `fresh` and `stale` with `postings`.
- The upkeep's fold leaves the index a fold inline leaves (the CLI's), and a rebuild.
- A server killed inside an upkeep fold (`BRAIN_FAILPOINT=folded`: the fold written, not
  committed) leaves every card waiting and found; the next server folds them, as a rebuild has it.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import sqlite3
import uuid
from pathlib import Path

from external_brain.search import build as build_module
from external_brain.search.analysis import card_fields
from external_brain.search.index import FOLD_GROUP, Index, rebuild
from external_brain.vault.storage import Vault
from helpers import ok_data
from test_index_writes import snapshot
from test_server_throughput import KEY, start_server, wait_until

INDEX = Path(".brain/cache/index.sqlite")
CARDS = FOLD_GROUP + 8   # more than one group of the upkeep's fold


def write_cards(vault: Path, count: int) -> list[str]:
    """`count` cards written as files (ids known), then indexed whole by `reindex`; their ids."""
    ids = []
    for n in range(count):
        card_id = str(uuid.UUID(int=n + 1))
        (vault / "Playbooks" / f"pattern_upkeep_{n}.md").write_text(
            f"---\nid: {card_id}\ntitle: Upkeep card {n}\ntype: pattern\ndomain: dev\ntags: [upkeep]\n---\n"
            f"# Upkeep card {n}\n\nShared widget notes, number w{n}x and more words.\n", encoding="utf-8")
        ids.append(card_id)
    ok_data("reindex")
    return ids


def request(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body).encode(),
                           headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def waiting(vault: Path) -> set[int]:
    """The docids waiting in `stale`, read from its own connection."""
    with sqlite3.connect(vault / INDEX) as db:
        return {docid for (docid,) in db.execute("SELECT docid FROM stale")}


def docid_of(vault: Path, card_id: str) -> int:
    with sqlite3.connect(vault / INDEX) as db:
        return db.execute("SELECT docid FROM card_keys WHERE id = ?", (card_id,)).fetchone()[0]


def posting_rows(vault: Path) -> list[tuple]:
    with sqlite3.connect(vault / INDEX) as db:
        return db.execute("SELECT * FROM postings ORDER BY term, chunk").fetchall()


def stop(process) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(60) == 0


def search_paths(port: int, query: str) -> list[str]:
    status, data = request(port, "GET", f"/v1/memories?q={query}&limit=50")
    assert status == 200, data
    return [hit["path"] for hit in data["memories"]]


def test_a_patched_text_is_found_right_after_its_answer_while_its_card_waits_unfolded(vault):
    ids = write_cards(vault, 3)
    assert waiting(vault) == set()
    process, port = start_server(vault, workers=1)
    try:
        target = docid_of(vault, ids[1])
        # Bounded: an attempt counts only when the card waited unfolded both before and after the
        # search (a fold only takes cards out of `stale`, and nothing else writes); the upkeep
        # folds after 0.25 s of quiet, so the first attempt nearly always does.
        for attempt in range(20):
            marker = f"quokka{attempt}zebra"
            status, data = request(port, "PATCH", f"/v1/memories/{ids[1]}", {"append": f"A {marker} appears."})
            assert status == 200, data
            before = target in waiting(vault)
            hits = search_paths(port, marker)
            if before and target in waiting(vault):
                break
        else:
            raise AssertionError("the upkeep folded the card before every search")
        assert hits == [data["path"]]
    finally:
        stop(process)


def test_the_upkeeps_fold_leaves_the_index_an_inline_fold_and_a_rebuild_leave(vault, tmp_path):
    ids = write_cards(vault, CARDS)
    before = posting_rows(vault)
    process, port = start_server(vault, workers=1)
    try:
        for n, card_id in enumerate(ids):
            status, data = request(port, "PATCH", f"/v1/memories/{card_id}", {"append": f"Marker m{n}q kept."})
            assert status == 200, data
        # The upkeep folds every waiting card once the index is quiet, a group at a time.
        wait_until(lambda: not waiting(vault), "the upkeep to fold every waiting card")
        assert posting_rows(vault) != before
        assert search_paths(port, "m7q") == [f"Playbooks/pattern_upkeep_7.md"]
    finally:
        stop(process)
    upkept = snapshot(Vault(vault))
    # The same edits through the CLI (one process a call, no upkeep: its cards wait up to
    # DELTA_CARDS), then folded inline; the terms, codes and statistics are the same.
    other = tmp_path / "inline"
    assert ok_data("init", str(other))
    os.environ["BRAIN_VAULT"] = str(other)
    try:
        write_cards(other, CARDS)
        for n, card_id in enumerate(ids):
            ok_data("update", card_id, "--append", f"Marker m{n}q kept.")
        assert waiting(other)
        index = Index.existing(Vault(other), card_fields)
        with index.db:
            index.db.execute("BEGIN IMMEDIATE")
            build_module.fold(index.db)
        index.close()
        assert snapshot(Vault(other)) == upkept
    finally:
        os.environ["BRAIN_VAULT"] = str(vault)
    rebuild(Vault(vault), card_fields)
    assert snapshot(Vault(vault)) == upkept


def test_a_server_killed_inside_an_upkeep_fold_leaves_its_cards_waiting_for_the_next_to_fold(vault):
    ids = write_cards(vault, CARDS)
    before = posting_rows(vault)
    # The cards are made to wait before the server starts, through the CLI (no upkeep; CARDS is
    # under DELTA_CARDS, so none is folded): PATCHes to a server that dies at its first fold
    # raced its upkeep, which folds after FOLD_QUIET of quiet, so a client (or a loaded machine)
    # pausing between two PATCHes got the next one refused.
    for n, card_id in enumerate(ids):
        ok_data("update", card_id, "--append", f"Marker m{n}q kept.")
    assert len(waiting(vault)) == CARDS
    process, port = start_server(vault, env={"BRAIN_FAILPOINT": "folded"}, workers=1)
    try:
        # Killed by its own upkeep thread (its start-up look at the vault), the first group's
        # rows written but not committed.
        assert process.wait(60) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    with sqlite3.connect(vault / INDEX) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert len(waiting(vault)) == CARDS and posting_rows(vault) == before   # nothing of the fold stayed
    assert [hit["path"] for hit in ok_data("search", "m9q")["hits"]] == ["Playbooks/pattern_upkeep_9.md"]
    # The next server folds what the killed one left, though no write of its own asks it to.
    process, port = start_server(vault, workers=1)
    try:
        wait_until(lambda: not waiting(vault), "the next server to fold the cards left waiting")
        assert search_paths(port, "m9q") == ["Playbooks/pattern_upkeep_9.md"]
    finally:
        stop(process)
    folded = snapshot(Vault(vault))
    rebuild(Vault(vault), card_fields)
    assert snapshot(Vault(vault)) == folded


def test_a_fold_planned_before_the_lock_is_written_only_while_what_it_read_holds(vault):
    """`FoldUpkeep` plans a group's fold from a read snapshot and writes it under the lock only
    if nothing it read changed: a planned card written again, or another fold, voids the plan."""
    write_cards(vault, 6)
    local = Vault(vault)
    for n in range(6):
        ok_data("update", str(uuid.UUID(int=n + 1)), "--append", f"Marker m{n}q kept.")
    index = Index.existing(local, card_fields)
    try:
        def planned():
            with index.reading():
                return build_module.plan_fold(index.db, 2)

        def holds(plan) -> bool:
            index.db.execute("BEGIN IMMEDIATE")
            try:
                return plan.still_holds(index.db)
            finally:
                index.db.execute("ROLLBACK")

        plan = planned()
        assert holds(plan)
        # One of its cards written again (its rows in `fresh` replaced): the plan is void.
        first = index.db.execute("SELECT folder || '/' || name FROM docs WHERE docid = ?",
                                 (plan.stale[0][0],)).fetchone()[0]
        (vault / first).write_text((vault / first).read_text() + "\nA later quokka line.\n", encoding="utf-8")
        index.update([first])
        assert not holds(plan)
        # Another fold (of other cards) moved `postings` since the plan: void too.
        plan = planned()
        index.db.execute("BEGIN IMMEDIATE")
        build_module.fold(index.db, cards=1)
        index.db.execute("COMMIT")
        assert not holds(plan)
        # A plan that holds, written, leaves the index an inline fold leaves.
        assert index.fold_waiting(None, planned=True) == 0
    finally:
        index.close()
    folded = snapshot(local)
    assert [hit["path"] for hit in ok_data("search", "quokka")["hits"]] == [first]
    rebuild(local, card_fields)
    assert snapshot(local) == folded
