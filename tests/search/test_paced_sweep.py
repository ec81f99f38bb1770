"""The sweep paced by time in a process that searches again and again (search/refresh.py, module
docstring; decision 0038, "Freshness paced by time"):

- A refresh sweeps `freshness_sweep` files for each search it serves, but no more than that per
  `SWEEP_PERIOD` (0.1 s) since the process's previous refresh began; a refresh after a pause
  gets a whole sweep, a process's first refresh (every CLI search) one per search; a refresh
  that failed does not count.
- A vault of up to `freshness_sweep` cards is paced the same way (decision 0038, "A small
  vault's sweep paced too"): a save in place there is seen by every search that begins 0.1 s
  after it, with a given clock and through a real `brain serve` kept busy by other clients.
- Edits made by another process, seen by a real `brain serve`, quiet and then kept busy by other
  clients: a save in place is seen within ceil(cards / sweep) + 1 searches made 0.1 s apart
  (each of them is worth a whole sweep, however many searches the busy clients add in
  between); a save by rename, a removal and a new file are seen by the very next search.
"""

from __future__ import annotations

import functools
import http.client
import json
import os
import sqlite3
import time
from math import ceil
from pathlib import Path
from urllib.parse import quote

import pytest

from external_brain.search.refresh import SWEEP_PERIOD, Shared
from helpers import ok_data, write_card
from test_shared_refresh import KEY, busy_clients, card, indexed_widgets, save_in_place, start_server, stop_server


def set_sweep(vault: Path, files: int) -> None:
    (vault / ".brain" / "config.toml").write_text(f"[search]\nfreshness_sweep = {files}\n", encoding="utf-8")


def test_a_busy_process_owes_one_sweep_per_period_however_many_searches_share_it() -> None:
    times = iter([50.0, 50.05, 60.05, 60.05, 60.35])
    shared = Shared(clock=lambda: next(times))
    shares = [shared.refresh(lambda share: share) for _ in range(5)]
    # The first refresh of a process: one sweep per search. Then 0.05 s after the previous one
    # began: half a sweep; after a pause: a whole one (not more: one search); at once: almost
    # nothing, but never nothing; 0.3 s later: one whole sweep for its one search.
    assert shares == pytest.approx([1.0, 0.5, 1.0, 1e-6, 1.0], rel=1e-9, abs=0)


def test_a_failed_refresh_leaves_its_share_to_the_next_one() -> None:
    times = iter([10.0, 10.05, 10.1])
    shared = Shared(clock=lambda: next(times))
    assert shared.refresh(lambda share: share) == 1.0

    def failing(share: float):
        raise OSError("the disk went away")

    with pytest.raises(OSError):
        shared.refresh(failing)
    # Counted from the refresh that did its work (0.1 s ago), not from the one that failed.
    assert shared.refresh(lambda share: share) == pytest.approx(1.0, rel=1e-9)


def fifty_cards_swept(vault: Path, word: str) -> Path:
    """50 cards titled "<word> card N", indexed, a sweep of 10 begun; the cache's sweep position file."""
    set_sweep(vault, 10)
    for n in range(50):
        write_card(vault, f"Playbooks/Pattern_{word}_{n:03d}.md", card(f"{word} card {n}", "Body."))
    ok_data("search", word.lower())   # index everything
    ok_data("search", word.lower())   # and start the sweep
    return vault / ".brain" / "cache" / "sweep"


def test_a_paced_refresh_sweeps_its_share_in_a_small_vault_too(vault: Path) -> None:
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault.storage import Vault

    hint = fifty_cards_swept(vault, "Paced")
    the_vault = Vault(vault)
    shared = Shared.of((str(the_vault.cache_dir), 10))
    now = [1000.0]
    shared.clock = lambda: now[0]
    shared.began = 1000.0 - 0.05   # this process's previous refresh began 0.05 s ago: half a sweep
    start = int(hint.read_bytes())
    Index.open(the_vault, card_fields, sweep=10).close()
    assert int(hint.read_bytes()) == (start + 5 - 1) % 50 + 1

    # A vault of up to `freshness_sweep` cards is paced the same way (it used to be checked
    # whole by every refresh): a refresh just after the previous one sweeps one file, and a
    # save in place is seen by the refresh that begins SWEEP_PERIOD after it, whichever
    # refreshes come between.
    for n in range(8, 50):
        (vault / f"Playbooks/Pattern_Paced_{n:03d}.md").unlink()
    now[0] += 10
    Index.open(the_vault, card_fields, sweep=10).close()   # the removals (the folder's mtime moved)
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        docids = [row[0] for row in db.execute("SELECT docid FROM docs ORDER BY docid")]
    position = int(hint.read_bytes())
    assert len(docids) == 8
    target = vault / "Playbooks/Pattern_Paced_003.md"
    save_in_place(target, card("Paced card 3", "The zeppelin body."))
    saved = now[0]
    seen = []
    for step in (0.001, 0.03, 0.03, 0.04):   # the last refresh begins SWEEP_PERIOD after the save
        now[0] += step
        index = Index.open(the_vault, card_fields, sweep=10)
        index.close()
        if step == 0.001:   # 0.01 of a period: one file of the 8, not all of them
            assert int(hint.read_bytes()) == next((d for d in docids if d > position), docids[0])
        seen += index.changes.modified
    assert now[0] - saved >= SWEEP_PERIOD - 1e-9
    assert seen == ["Playbooks/Pattern_Paced_003.md"], "a save in place unseen by a refresh that began 0.1 s after it"


def test_a_process_sweep_goes_on_from_its_own_position_whatever_another_process_writes(vault: Path) -> None:
    """Another process (a worker of the same server, a CLI search) may write the cache's sweep
    position while this one sweeps; a refresh that began before a save could so move this
    process past files it checked before the save. A process's paced sweep goes on from where
    its own previous refresh stopped, so its refreshes since a save check consecutive files."""
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault.storage import Vault

    hint = fifty_cards_swept(vault, "Own")
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        docids = [row[0] for row in db.execute("SELECT docid FROM docs ORDER BY docid")]
    the_vault = Vault(vault)
    shared = Shared.of((str(the_vault.cache_dir), 10))
    now = [1000.0]
    shared.clock = lambda: now[0]
    shared.began = 1000.0 - 0.05   # half a sweep: 5 files
    Index.open(the_vault, card_fields, sweep=10).close()
    reached = int(hint.read_bytes())
    assert shared.position == reached
    # Another process sweeps 20 files on from there and writes the file.
    hint.write_bytes(b"%20d" % docids[(docids.index(reached) + 20) % len(docids)])
    now[0] += 0.05
    Index.open(the_vault, card_fields, sweep=10).close()
    assert int(hint.read_bytes()) == docids[(docids.index(reached) + 5) % len(docids)]


def found_over_http(connection: http.client.HTTPConnection, word: str) -> list[str]:
    """The paths `GET /v1/memories?q=WORD` answers with (at most 5)."""
    connection.request("GET", f"/v1/memories?q={quote(word)}&limit=5", headers={"X-API-KEY": KEY})
    response = connection.getresponse()
    data = json.loads(response.read())
    assert response.status == 200, data
    return [memory["path"] for memory in data["memories"]]


def test_edits_by_another_process_are_seen_within_the_bound_while_the_server_is_busy(vault: Path) -> None:
    cards, sweep = 600, 100
    set_sweep(vault, sweep)
    paths = indexed_widgets(vault, "paced", cards)
    process, port = start_server(vault)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    hits = functools.partial(found_over_http, connection)

    def saved_in_place_is_seen(round_: int, number: int) -> None:
        word = f"nebula{round_}x"
        save_in_place(paths[number], card(f"Paced widget {number}", f"Notes on the {word} widget {number}."))
        # Saved in place (same inode, the folder's mtime untouched): only the sweep sees it.
        # Each search below begins SWEEP_PERIOD after the previous one was answered, so the
        # refreshes from one to the next owe at least one whole sweep of `sweep` files, however
        # many searches of the busy clients share them; the first search's own refresh may owe
        # almost nothing.
        bound = ceil(cards / sweep) + 1
        for searches in range(1, bound + 1):
            if hits(word) == [f"Playbooks/Pattern_Paced_{number:03d}.md"]:
                return
            time.sleep(SWEEP_PERIOD)
        raise AssertionError(f"a save in place unseen after {bound} searches")

    try:
        saved_in_place_is_seen(0, 7)          # a quiet server: each search sweeps `sweep` files
        with busy_clients(port, "paced", 3):
            for round_, number in enumerate((310, 523, 88), start=1):
                saved_in_place_is_seen(round_, number)
            # Saved by rename (a new inode, the folder's mtime moves): the next search sees it.
            temporary = paths[12].with_name(".Pattern_Paced_012.md.tmp")
            temporary.write_text(card("Paced widget 12", "Notes on the quasarx widget."), encoding="utf-8")
            os.replace(temporary, paths[12])
            assert hits("quasarx") == ["Playbooks/Pattern_Paced_012.md"]
            # A new file and a removal: the next search sees each.
            write_card(vault, "Playbooks/Pattern_Paced_new.md", card("Paced widget new", "The pulsarx notes."))
            assert hits("pulsarx") == ["Playbooks/Pattern_Paced_new.md"]
            paths[12].unlink()
            assert hits("quasarx") == []
    finally:
        stop_server(process)


def test_a_save_in_place_in_a_small_vault_is_seen_0_1_s_after_it_while_the_server_is_busy(vault: Path) -> None:
    """The bound for a vault of up to `freshness_sweep` cards (the default 1,000; 600 here),
    whatever the load: a search that begins SWEEP_PERIOD after a save in place finds it."""
    paths = indexed_widgets(vault, "small", 600)
    process, port = start_server(vault)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    hits = functools.partial(found_over_http, connection)

    try:
        with busy_clients(port, "small", 3):
            for round_, number in enumerate((5, 299, 598, 41)):
                word = f"comet{round_}x"
                save_in_place(paths[number], card(f"Small widget {number}", f"Notes on the {word} widget {number}."))
                saved = time.monotonic()
                # Saved in place (same inode, the folder's mtime untouched): only the sweep sees it.
                # A search at once may or may not (the busy clients' refreshes share the sweep).
                hits(word)
                time.sleep(max(0.0, saved + SWEEP_PERIOD - time.monotonic()))
                assert hits(word) == [f"Playbooks/Pattern_Small_{number:03d}.md"], round_
    finally:
        stop_server(process)
