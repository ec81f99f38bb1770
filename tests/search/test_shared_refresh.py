"""Shared refreshes (search/refresh.py, `Shared`): in a long-lived process, the searches that
arrive while a refresh of the index runs share the NEXT one, which starts after they arrived.

- A change complete before a search began (a save in place, which only the sweep can find, with
  `freshness_sweep = 0`: every file checked by every refresh) is seen by that search, while
  other clients keep refreshes running and shared: a real `brain serve` process, the saves made
  by this process.
- A refresh already running when a caller arrives is never the one it gets; the callers waiting
  when the next one starts share it, and it runs with their number (the sweep then covers
  `freshness_sweep` files per search, as before); a failed refresh is not shared.
- The sweep, which stats files by name from their folder's descriptor, finds saves in place and
  removals in every folder.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from external_brain.search.refresh import Shared
from helpers import SCRIPT, ok_data, write_card

KEY = "shared-refresh-test-key-0123456789"


def wait_until(condition, what: str, seconds: float = 60.0) -> None:
    """A bounded wait for a state another thread reaches (never a sleep that races it)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def search_busily(port: int, word: str, number: int, stop: threading.Event, errors: list[str]) -> None:
    """A client searching the server back to back until `stop` (three queries in turn, starting
    at `number`), so refreshes keep running; a failed search is written to `errors`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    words = [f"{word}+widget", "widget+notes", f"number+{word}"]
    sequence = 0
    while not stop.is_set():
        sequence += 1
        connection.request("GET", f"/v1/memories?q={words[(number + sequence) % 3]}&limit=5",
                           headers={"X-API-KEY": KEY})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            errors.append(f"busy client got {response.status}")
            return


def start_server(vault: Path) -> tuple[subprocess.Popen, int]:
    """`brain serve` with one worker process (its threads share refreshes), on a free port."""
    log = vault.parent / "serve.err"
    with open(log, "wb") as err:
        process = subprocess.Popen([sys.executable, str(SCRIPT), "serve", "--port", "0", "--workers", "1"],
                                   env={**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_API_KEY": KEY},
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                   start_new_session=True)
    found = None

    def listening() -> bool:
        nonlocal found
        if process.poll() is not None:
            raise AssertionError(f"the server did not start: {log.read_text()}")
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text())
        return bool(found)

    wait_until(listening, "the server to listen", 30)
    return process, int(found.group(1))


def stop_server(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(60)


def card(title: str, body: str) -> str:
    return f"---\ntitle: {title}\ntype: pattern\ndomain: dev\ntags: [shared]\n---\n# {title}\n\n{body}\n"


def save_in_place(path: Path, text: str) -> None:
    """Rewrite the file in place (same inode, the folder's mtime untouched), as Obsidian and VS
    Code save: only the sweep can see it."""
    with open(path, "r+", encoding="utf-8") as f:
        f.write(text)
        f.truncate()



def indexed_widgets(vault: Path, kind: str, count: int) -> list[Path]:
    """`count` cards "<Kind> widget N" (Playbooks/Pattern_<Kind>_NNN.md), indexed and the sweep begun."""
    paths = [write_card(vault, f"Playbooks/Pattern_{kind.title()}_{n:03d}.md",
                        card(f"{kind.title()} widget {n}", f"Notes on the {kind} widget number {n}."))
             for n in range(count)]
    ok_data("search", "widget")   # index everything
    ok_data("search", "widget")   # and start the sweep
    return paths


@contextlib.contextmanager
def busy_clients(port: int, word: str, count: int) -> Iterator[None]:
    """`count` clients searching the server back to back (`search_busily`) while the block runs;
    none of their searches may fail."""
    stop = threading.Event()
    errors: list[str] = []
    clients = [threading.Thread(target=search_busily, args=(port, word, n, stop, errors)) for n in range(count)]
    for client in clients:
        client.start()
    try:
        yield
    finally:
        stop.set()
        for client in clients:
            client.join(60)
    assert not errors, errors

def test_a_save_made_before_a_search_began_is_seen_while_other_searches_share_refreshes(vault: Path) -> None:
    # Every file checked by every refresh (`freshness_sweep = 0`: not paced), so a refresh that
    # started after the save must see it, and one that started before it may not.
    (vault / ".brain" / "config.toml").write_text("[search]\nfreshness_sweep = 0\n", encoding="utf-8")
    indexed_widgets(vault, "shared", 600)
    # The card a refresh checks first: a refresh that started before the save has most of its
    # work still to do after it looked at that card, so a search that wrongly joined it would
    # miss the save often.
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        (name,) = db.execute("SELECT name FROM docs ORDER BY docid LIMIT 1").fetchone()
    target = vault / "Playbooks" / name
    number = int(name.rpartition("_")[2].removesuffix(".md"))
    process, port = start_server(vault)
    try:
        with busy_clients(port, "shared", 6):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            for round_ in range(40):
                word = f"quasar{round_:03d}x"
                save_in_place(target, card(f"Shared widget {number}", f"Notes on the {word} widget number {number}."))
                # The save has returned: a search that begins now must see it.
                connection.request("GET", f"/v1/memories?q={quote(word)}&limit=5", headers={"X-API-KEY": KEY})
                response = connection.getresponse()
                data = json.loads(response.read())
                assert response.status == 200, data
                assert [m["path"] for m in data["memories"]] == [target.relative_to(vault).as_posix()], (round_, data)
    finally:
        stop_server(process)


def test_a_running_refresh_is_not_shared_with_a_caller_that_arrived_during_it() -> None:
    times = iter([100.0, 110.0])   # the second refresh begins 10 s after the first: not paced
    shared = Shared(clock=lambda: next(times))
    release = threading.Event()
    calls: list[float] = []
    results: dict[str, object] = {}

    def first_work(callers: float):
        calls.append(callers)
        release.wait(60)
        return "first"

    def later_work(callers: float):
        calls.append(callers)
        return "second"

    def call(name: str, work) -> None:
        results[name] = shared.refresh(work)

    first = threading.Thread(target=call, args=("a", first_work))
    first.start()
    wait_until(lambda: shared.running, "the first refresh to start")
    later = [threading.Thread(target=call, args=(name, later_work)) for name in ("b", "c")]
    for thread in later:
        thread.start()
    wait_until(lambda: shared.wanting.get(2) == 2, "both later callers to wait for the next refresh")
    assert "b" not in results and "c" not in results   # they do not take the running one
    release.set()
    for thread in (first, *later):
        thread.join(60)
    assert results == {"a": "first", "b": "second", "c": "second"}
    assert calls == [1, 2]   # the second refresh ran once, for both, with their number
    assert shared.outcome == {} and shared.wanting == {}


def test_a_failed_refresh_is_not_shared() -> None:
    shared = Shared()
    release = threading.Event()
    results: dict[str, object] = {}

    def blocking(callers: int):
        release.wait(60)
        return "first"

    def failing(callers: int):
        raise OSError("the disk went away")

    def call(name: str, work) -> None:
        try:
            results[name] = shared.refresh(work)
        except OSError as exc:
            results[name] = exc

    first = threading.Thread(target=call, args=("a", blocking))
    first.start()
    wait_until(lambda: shared.running, "the first refresh to start")
    later = [threading.Thread(target=call, args=(name, failing)) for name in ("b", "c")]
    for thread in later:
        thread.start()
    wait_until(lambda: shared.wanting.get(2) == 2, "both later callers to wait")
    release.set()
    for thread in (first, *later):
        thread.join(60)
    outcomes = sorted(map(repr, (results["b"], results["c"])))
    # The one that ran it sees its error; the other is told to refresh on its own (None).
    assert outcomes == sorted(["None", repr(OSError("the disk went away"))])
    assert shared.outcome == {}


def test_a_shared_refresh_sweeps_freshness_sweep_files_for_each_caller(vault: Path) -> None:
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault.storage import Vault

    (vault / ".brain" / "config.toml").write_text("[search]\nfreshness_sweep = 10\n", encoding="utf-8")
    for n in range(50):
        write_card(vault, f"Playbooks/Pattern_Sweep_{n:03d}.md", card(f"Sweep card {n}", "Body."))
    ok_data("search", "sweep")   # index everything
    ok_data("search", "sweep")   # and start the sweep, which goes on from here
    hint = vault / ".brain" / "cache" / "sweep"
    start = int(hint.read_bytes())
    the_vault = Vault(vault)
    shared = Shared.of((str(the_vault.cache_dir), 10))
    release = threading.Event()
    holder = threading.Thread(target=shared.refresh, args=(lambda callers: release.wait(60),))
    holder.start()
    wait_until(lambda: shared.running, "a refresh to be running")
    opened: list[bool] = []

    def search() -> None:
        index = Index.open(the_vault, card_fields, sweep=10)
        index.close()
        opened.append(index.trouble is None)

    searchers = [threading.Thread(target=search) for _ in range(3)]
    for thread in searchers:
        thread.start()
    wait_until(lambda: shared.wanting.get(shared.started + 1) == 3, "three searches to wait for the next refresh")
    shared.began -= 60   # the held refresh began a minute ago: the next one is not paced
    release.set()
    for thread in (holder, *searchers):
        thread.join(60)
    assert opened == [True, True, True]
    assert int(hint.read_bytes()) == (start + 30 - 1) % 50 + 1   # 10 files for each of the 3 searches


def test_the_sweep_sees_saves_in_place_and_removals_in_every_folder(vault: Path) -> None:
    """The sweep stats files by name from each folder's descriptor: a save in place and a file
    gone (its folder's mtime put back, so only the sweep can tell) are found in the top folder
    and in its subfolders alike."""
    paths = {}
    for folder in ("Playbooks", "Playbooks/infra", "Playbooks/infra/deep"):
        for n in range(3):
            rel = f"{folder}/Pattern_Sweep_{n}.md"
            write_card(vault, rel, card(f"Sweep {folder.count('/')} {n}", "The widget notes."))
            paths[(folder, n)] = vault / rel
    ok_data("search", "widget")
    ok_data("search", "widget")

    def quietly(change, folder: Path) -> None:
        stamp = folder.stat()
        change()
        os.utime(folder, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))

    for folder in ("Playbooks", "Playbooks/infra", "Playbooks/infra/deep"):
        target = paths[(folder, 1)]
        quietly(lambda: save_in_place(target, card(target.stem, "The zeppelin notes.")), target.parent)
        gone = paths[(folder, 2)]
        quietly(gone.unlink, gone.parent)
    found = sorted(hit["path"] for hit in ok_data("search", "zeppelin")["hits"])
    assert found == sorted(f"{folder}/Pattern_Sweep_1.md"
                           for folder in ("Playbooks", "Playbooks/infra", "Playbooks/infra/deep"))
    # The removals, as the index holds them after that one search (a search for them would
    # also drop them through its hits' own check: the sweep's work is read from the index).
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        indexed = {f"{folder}/{name}" for folder, name in db.execute("SELECT folder, name FROM docs")}
    assert not {rel for rel in indexed if rel.endswith("Pattern_Sweep_2.md")}, indexed
    assert len(indexed) == 6
