"""What a long-lived process keeps between searches (decision 0038, "A server's searches keep
their hits' cards and their index connection"):

- The hits' cards, read and parsed (`storage.load_kept_card`): served again only while the file's
  device, inode, size, mtime and ctime are those it had when read, so a card edited in place
  with its size kept and its mtime put back (`os.utime`) is read again by the next search; the
  number of cards and characters kept is bounded; a create's candidates' parses are kept by their
  text only up to a length (`storage.KEPT_PARSE_CHARS`).
- One index connection per thread (`index.keep_connections`, which `brain serve` turns on): the
  same connection serves the thread's next search; a `reindex` run by another process, and the
  cache folder deleted and built again, are seen by the next search (the file there is checked
  to be the one the connection has open); a forked child never uses its parent's.
- A real `brain serve` answers searches across an edit by hand (size and mtime kept) and a
  `reindex`, and a deleted index, run by another process; the threads of clients that went away
  leave no connection or descriptor of `index.lock` open.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import sqlite3
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import ok_data, subprocess_cli, write_card
from test_shared_refresh import KEY, card, start_server, stop_server, wait_until


def settled(*paths: Path) -> None:
    """Wait until the files' ctimes are older than `SETTLED_NS` (a file changed more recently is
    not kept: storage._KeptCards): a bounded wait for the clock, racing no process."""
    from external_brain.vault.config import SETTLED_NS

    newest = max(os.stat(path).st_ctime_ns for path in paths)
    deadline = time.monotonic() + 30
    while time.time_ns() <= newest + SETTLED_NS + 50_000_000:
        assert time.monotonic() < deadline, "the clock did not move"
        time.sleep(0.05)


def edit_keeping_size_and_mtime(path: Path, old: str, new: str) -> None:
    """An edit in place by hand that keeps the file's size and puts its mtime back."""
    assert len(old.encode()) == len(new.encode())
    before = os.stat(path)
    text = path.read_text(encoding="utf-8")
    assert old in text
    with open(path, "r+", encoding="utf-8") as handle:
        handle.write(text.replace(old, new))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)


def test_a_card_edited_with_its_size_and_mtime_kept_is_read_again_by_the_next_search(vault: Path) -> None:
    from external_brain.answers.searching import search_cards
    from external_brain.vault.storage import Vault

    path = write_card(vault, "Playbooks/Pattern_Kept_Lantern.md",
                      card("Kept lantern", "The lantern glows amber after midnight."))
    ok_data("search", "lantern")   # indexed
    settled(path)
    first = search_cards(Vault(vault), "lantern")
    assert "amber" in first.hits[0].snippet
    again = search_cards(Vault(vault), "lantern")   # served from what the process kept
    assert "amber" in again.hits[0].snippet
    edit_keeping_size_and_mtime(path, "amber", "green")
    later = search_cards(Vault(vault), "lantern")
    assert "green" in later.hits[0].snippet and "amber" not in later.hits[0].card.text


def test_a_kept_card_is_served_without_reading_the_file_and_the_bound_holds(vault: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from external_brain.vault import storage

    paths = [write_card(vault, f"Playbooks/Pattern_Bound_{n}.md", card(f"Bound card {n}", "x" * (100 + n)))
             for n in range(6)]
    settled(*paths)
    kept = storage._KeptCards()
    monkeypatch.setattr(storage, "_KEPT", kept)
    monkeypatch.setattr(storage, "KEPT_CARDS", 3)
    reads = []
    real = storage._read_named_card
    monkeypatch.setattr(storage, "_read_named_card", lambda *a: reads.append(a[2]) or real(*a))
    the_vault = storage.Vault(vault)
    for path in paths:
        card_read = storage.load_kept_card(the_vault, path)
        assert card_read.text == path.read_text(encoding="utf-8")
        assert len(kept) <= 3
    assert len(reads) == 6
    # The three most recent are kept: read again without opening the file, each its own mapping.
    again = storage.load_kept_card(the_vault, paths[5])
    assert len(reads) == 6 and again.text == paths[5].read_text(encoding="utf-8")
    again.meta["title"] = "changed by a caller"
    assert storage.load_kept_card(the_vault, paths[5]).title == "Bound card 5"
    storage.load_kept_card(the_vault, paths[0])   # evicted: read again
    assert len(reads) == 7 and len(kept) == 3
    # The characters bound: a card over it is never kept, and the total stays under it.
    kept.clear()
    monkeypatch.setattr(storage, "KEPT_CARDS", 100)
    monkeypatch.setattr(storage, "KEPT_CARD_CHARS", 2 * len(paths[5].read_text(encoding="utf-8")))
    for path in paths:
        storage.load_kept_card(the_vault, path)
        assert kept.chars <= storage.KEPT_CARD_CHARS
    assert len(kept) == 2
    # A file changed less than SETTLED_NS ago is not kept at all.
    fresh = write_card(vault, "Playbooks/Pattern_Bound_Fresh.md", card("Fresh card", "new"))
    storage.load_kept_card(the_vault, fresh)
    storage.load_kept_card(the_vault, fresh)
    assert reads.count("Playbooks/Pattern_Bound_Fresh.md") == 2


def test_a_compared_cards_parse_is_kept_only_up_to_its_length_bound(vault: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A create's candidates (`load_compared_card`): the parse of a card just written (not yet
    settled, so not a kept card) is kept by its text, unless the text is longer than
    KEPT_PARSE_CHARS: 512 kept texts of 500,000 characters would be half a gigabyte."""
    from external_brain.vault import storage

    monkeypatch.setattr(storage, "settled", lambda *_: False)   # never a kept card, however slow the run

    short = write_card(vault, "Playbooks/Pattern_Short.md", card("Short card", "A short body."))
    long = write_card(vault, "Playbooks/Pattern_Long.md", card("Long card", "word " * (storage.KEPT_PARSE_CHARS // 5)))
    assert len(long.read_text(encoding="utf-8")) > storage.KEPT_PARSE_CHARS
    storage._parsed_card_text.cache_clear()
    the_vault = storage.Vault(vault)
    for path in (short, long, short, long):
        read = storage.load_compared_card(the_vault, path)
        assert (read.text, read.meta, read.body) == (path.read_text(encoding="utf-8"), storage.load_card(the_vault, path).meta,
                                                      storage.load_card(the_vault, path).body)
    kept = storage._parsed_card_text.cache_info()
    assert (kept.currsize, kept.hits) == (1, 1)   # the short card's parse, met twice; the long one's never kept

def test_a_card_this_process_created_is_compared_without_a_parse_and_read_anew_after_an_edit(
        vault: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A create keeps the parse of the card it wrote (`storage.keep_written_parse`): the next
    create like it compares that card without parsing its text again. The parse is kept by the
    text, as any compared card's: the file is still read, and once a person has edited it (in
    place, its size and mtime kept) the next create compares the new text, parsed anew."""
    from external_brain import cards
    from external_brain.search import keyword
    from external_brain.vault import frontmatter, storage

    monkeypatch.setattr(storage, "settled", lambda *_: False)   # never a kept card: the parses alone
    storage._parsed_card_text.cache_clear()
    the_vault = storage.Vault(vault)

    def create(title: str) -> str:
        body = "Moor the zeppelin to a mast at least forty metres high, upwind of the hangar."
        return cards.create_card(the_vault, card_type="insight", domain="infra", title=title, body=body).card.rel

    parsed: list[str] = []
    compared: dict[str, storage.Card] = {}
    parse, load_compared_card = frontmatter.parse, keyword.load_compared_card
    monkeypatch.setattr(frontmatter, "parse", lambda text, source="<string>": parsed.append(source) or parse(text, source))
    monkeypatch.setattr(keyword, "load_compared_card", lambda v, path: compared.setdefault(
        v.rel(path), load_compared_card(v, path)))

    first = create("Zeppelin mooring mast height")
    assert first not in compared
    parsed.clear()
    create("Zeppelin mooring mast height in wind")
    assert first in compared and first not in parsed
    as_read = storage.load_card(the_vault, vault / first)
    assert (compared[first].text, compared[first].meta, compared[first].body) == (as_read.text, as_read.meta, as_read.body)

    edit_keeping_size_and_mtime(vault / first, "forty metres", "fifty metres")
    parsed.clear()
    compared.clear()
    create("Zeppelin mooring mast height at dusk")
    assert parsed.count(first) == 1
    assert "fifty metres" in compared[first].body and compared[first].text == (vault / first).read_text(encoding="utf-8")


def test_a_kept_connection_is_reused_and_follows_a_reindex_and_an_index_built_anew(vault: Path) -> None:
    from external_brain.answers.searching import search_cards
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index, keep_connections
    from external_brain.vault.storage import Vault

    write_card(vault, "Playbooks/Pattern_Kept_Harbor.md", card("Kept harbor", "Boats rest in the harbor."))
    ok_data("search", "harbor")
    keep_connections()
    try:
        first = Index.open(Vault(vault), card_fields)
        db = first.db
        first.close()
        first.close()   # twice: harmless, the connection stays the thread's
        second = Index.open(Vault(vault), card_fields)
        assert second.db is db
        # What a use changes (a writer's short busy timeout, a vector search's page cache) is
        # put back: the next use starts as on a new connection.
        second.db.execute("PRAGMA busy_timeout = 250")
        second.db.execute("PRAGMA cache_size = 16")
        second.close()
        second = Index.open(Vault(vault), card_fields)
        assert second.db is db
        assert second.db.execute("PRAGMA busy_timeout").fetchone()[0] == 60_000
        assert second.db.execute("PRAGMA cache_size").fetchone()[0] != 16
        nested = Index.open(Vault(vault), card_fields)   # while the kept one is in use: its own
        assert nested.db is not db
        nested.close()
        second.close()
        # `reindex` by another process, in place, with a card added meanwhile.
        write_card(vault, "Playbooks/Pattern_Kept_Lighthouse.md", card("Kept lighthouse", "A harbor light."))
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        assert {h.card.rel for h in search_cards(Vault(vault), "harbor").hits} == {
            "Playbooks/Pattern_Kept_Harbor.md", "Playbooks/Pattern_Kept_Lighthouse.md"}
        # The cache folder deleted and the index built anew by another process: the next open
        # reads the new file, not the one its kept connection had open.
        shutil.rmtree(vault / ".brain" / "cache")
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        path = vault / ".brain" / "cache" / "index.sqlite"
        with sqlite3.connect(path) as marker:
            marker.execute("INSERT INTO info VALUES ('kept-test', 'new file')")
        third = Index.open(Vault(vault), card_fields)
        try:
            assert third.db is not db and third.inode == os.stat(path).st_ino
            assert third.db.execute("SELECT value FROM info WHERE key = 'kept-test'").fetchone() == ("new file",)
        finally:
            third.close()
        # Deleted and not built by anyone: the next search builds it again.
        shutil.rmtree(vault / ".brain" / "cache")
        assert len(search_cards(Vault(vault), "lighthouse").hits) == 1
        assert path.exists()
        # A forked child never uses its parent's kept connection.
        kept = Index.open(Vault(vault), card_fields)
        kept_db = kept.db
        kept.close()
        child = os.fork()
        if child == 0:
            code = 1
            try:
                index = Index.open(Vault(vault), card_fields)
                code = 0 if index.db is not kept_db else 3
                index.close()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        again = Index.open(Vault(vault), card_fields)
        assert again.db is kept_db   # the parent's is still its own
        again.close()
    finally:
        keep_connections(False)


def lock_descriptors(pid: int) -> int:
    """How many descriptors of `index.lock` the process holds open: one per index connection."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").endswith("index.lock")
        except OSError:
            continue   # closed meanwhile
    return count


def http_search(connection: http.client.HTTPConnection, query: str) -> list[dict]:
    connection.request("GET", f"/v1/memories?q={quote(query)}&limit=5", headers={"X-API-KEY": KEY})
    response = connection.getresponse()
    body = response.read()
    assert response.status == 200, body
    return json.loads(body)["memories"]


def test_a_server_answers_across_an_edit_by_hand_and_a_reindex_by_another_process(vault: Path) -> None:
    path = write_card(vault, "Playbooks/Pattern_Kept_Meadow.md",
                      card("Kept meadow", "The meadow flowers are violet in spring."))
    ok_data("search", "meadow")
    settled(path)
    process, port = start_server(vault)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)   # one kept-alive client: one thread
        for _ in range(3):
            hits = http_search(connection, "meadow")
            assert "violet" in hits[0]["snippet"]
        edit_keeping_size_and_mtime(path, "violet", "yellow")
        hits = http_search(connection, "meadow")
        assert "yellow" in hits[0]["snippet"]
        # `reindex` by another process, in place, with a card added by hand before it.
        write_card(vault, "Playbooks/Pattern_Kept_Orchard.md", card("Kept orchard", "Beside the meadow."))
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        assert {h["path"] for h in http_search(connection, "meadow")} == {
            "Playbooks/Pattern_Kept_Meadow.md", "Playbooks/Pattern_Kept_Orchard.md"}
        # The index deleted by hand, then built anew by another process; then deleted again.
        shutil.rmtree(vault / ".brain" / "cache")
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        assert len(http_search(connection, "orchard")) == 1
        shutil.rmtree(vault / ".brain" / "cache")
        assert len(http_search(connection, "orchard")) == 1
        assert (vault / ".brain" / "cache" / "index.sqlite").exists()   # the server built it again
        connection.close()
        # A thread per client connection: each keeps a connection and a lock descriptor while
        # it lives, and none is left behind by the threads of clients that went away: at most
        # two stay, those of the worker's threads that live as long as it does (the index
        # upkeep's keeps its own too, since its looks take their thread's kept connection).
        for _ in range(20):
            once = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            assert len(http_search(once, "meadow")) == 2
            once.close()
        if os.path.isdir(f"/proc/{process.pid}/fd"):
            wait_until(lambda: lock_descriptors(process.pid) <= 2, "the ended threads' connections to close", 30)
    finally:
        stop_server(process)
    errors = (vault.parent / "serve.err").read_text()
    assert "Traceback" not in errors, errors


def test_a_serving_process_writes_through_its_threads_kept_connection(vault: Path) -> None:
    """`Index.existing` (a create's and a PATCH's index, the upkeep thread's) takes the thread's
    kept connection as `Index.open` does (decision 0038, "The kernel's share of a server's
    writes"): the same connection each time, its own while the kept one is in use, and none at
    once, without waiting, while another process holds the lock to replace a damaged file."""
    import fcntl

    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index, keep_connections
    from external_brain.vault.storage import Vault

    write_card(vault, "Playbooks/Pattern_Kept_Quay.md", card("Kept quay", "Ships moor at the quay."))
    ok_data("search", "quay")
    keep_connections()
    try:
        first = Index.existing(Vault(vault), card_fields)
        db = first.db
        first.close()
        second = Index.existing(Vault(vault), card_fields)
        assert second.db is db
        nested = Index.existing(Vault(vault), card_fields)   # while the kept one is in use: its own
        assert nested.db is not db
        nested.close()
        second.close()
        opened = Index.open(Vault(vault), card_fields)
        assert opened.db is db   # one connection per thread, whichever way it is opened
        opened.close()
        # Another process replacing a damaged file holds `index.lock` exclusively: no index at
        # once (the write goes on without it), and the kept connection stays the thread's.
        locked, locked_w = os.pipe()      # child -> parent: the lock is held
        release, release_w = os.pipe()    # parent -> child: let it go (closed by the parent)
        child = os.fork()
        if child == 0:
            try:
                os.close(locked)
                os.close(release_w)
                fd = os.open(vault / ".brain" / "cache" / "index.lock", os.O_RDWR)
                fcntl.flock(fd, fcntl.LOCK_EX)
                os.write(locked_w, b"x")
                os.read(release, 1)   # until the parent closes its end
            finally:
                os._exit(0)
        os.close(locked_w)
        os.close(release)
        try:
            assert os.read(locked, 1) == b"x"   # the child holds the lock exclusively
            assert Index.existing(Vault(vault), card_fields) is None
        finally:
            os.close(release_w)
            os.waitpid(child, 0)
            os.close(locked)
        again = Index.existing(Vault(vault), card_fields)
        assert again.db is db
        again.close()
    finally:
        keep_connections(False)


def test_a_servers_creates_keep_the_index_log_in_place(vault: Path) -> None:
    """A server's creates use their threads' kept index connections, so the index's WAL is not
    deleted and made again after each create (what closing the process's last connection did:
    SQLite checkpoints and deletes it)."""
    write_card(vault, "Playbooks/Pattern_Kept_Dock.md", card("Kept dock", "The dock holds three cranes."))
    ok_data("search", "dock")
    wal = vault / ".brain" / "cache" / "index.sqlite-wal"
    process, port = start_server(vault)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        inodes = []
        for number in range(4):
            connection.request("POST", "/v1/memories", body=json.dumps(
                {"content": f"Crane {number} lifts containers at the dock", "memory_type": "insight"}),
                headers={"X-API-KEY": KEY, "Content-Type": "application/json"})
            response = connection.getresponse()
            body = response.read()
            assert response.status in (200, 201), body
            inodes.append(os.stat(wal).st_ino if wal.exists() else None)
        assert None not in inodes and len(set(inodes)) == 1, inodes
        connection.close()
    finally:
        stop_server(process)
    errors = (vault.parent / "serve.err").read_text()
    assert "Traceback" not in errors, errors


def test_settings_kept_by_their_files_stamps_see_an_edit_that_keeps_size_and_mtime(vault: Path) -> None:
    """`load_settings` serves a config file's bytes again only while its (device, inode, size,
    mtime, ctime) are unchanged, and keeps them only once the file is SETTLED_NS old: an edit by
    hand that keeps the size and puts the mtime back is seen by the next load."""
    from external_brain.vault.config import load_settings

    path = vault / ".brain" / "config.toml"
    path.write_text('domains = ["infra", "dev", "pondd"]\n', encoding="utf-8")
    settled(path)
    assert "pondd" in load_settings(path).domains
    assert "pondd" in load_settings(path).domains   # served from what was kept
    edit_keeping_size_and_mtime(path, "pondd", "lakee")
    assert "lakee" in load_settings(path).domains
    path.unlink()
    assert "lakee" not in load_settings(path).domains   # gone: the defaults
