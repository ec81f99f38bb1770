"""The search index under faults (index.py's docstring): another process changing it between two
reads of one look, SQLite errors that are not damage, a damaged file another process still holds,
a new index that several processes open at once, and a cache that cannot be written (a directory
in its place, a read-only mount, a full disk). Search always answers from the cards; the index
file is only replaced when it is really damaged and no other process holds it."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import external_brain.search.refresh as refresh_module
import external_brain.search.store as store_module
from external_brain.search.index import Index
from external_brain.search.analysis import card_fields
from external_brain.vault.storage import Vault
from helpers import SCRIPT, doctor_report, namespaces_work, ok_data, quiet_main, run_cli, run_json, write_card

INDEX = Path(".brain") / "cache" / "index.sqlite"
FORK = multiprocessing.get_context("fork")
REAL_CONNECT = sqlite3.connect


def create(title: str, body: str = "Notes about the shared widget.") -> str:
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--tags", "faults",
                   "--body", body)["path"]


def found(*argv: str) -> list[str]:
    return [hit["path"] for hit in ok_data("search", *argv)["hits"]]


def hand_written(title: str, body: str) -> str:
    return f"---\ntitle: {title}\ntype: pattern\ndomain: dev\n---\n# {title}\n\n{body}\n"


class SameFile:
    """Whether the index file is still the one it was: a descriptor held open on it keeps its
    inode from being reused, so a file deleted and built again cannot pass for it."""

    def __init__(self, vault: Path) -> None:
        self.path = vault / INDEX
        self.fd = os.open(self.path, os.O_RDONLY)

    def __bool__(self) -> bool:
        held = os.fstat(self.fd)
        return held.st_nlink > 0 and os.stat(self.path).st_ino == held.st_ino


@pytest.fixture
def same_file(vault):
    """`same_file()` starts watching the index file. The descriptors are closed only after the
    test: closing one drops every POSIX lock this process holds on the file, SQLite's included."""
    watching: list[SameFile] = []
    yield lambda: watching.append(SameFile(vault)) or watching[-1]
    for watched in watching:
        os.close(watched.fd)


def hook_connections(monkeypatch, on_open=None, on_statement=None) -> None:
    """Watch every connection this process opens to an index file: `on_open(db)` right after
    it is opened, `on_statement(sql, db)` before each statement it runs (SQLite's trace
    callback fires before the statement reads anything)."""

    def connect(database, *args, **kwargs):
        db = REAL_CONNECT(database, *args, **kwargs)
        if str(database).endswith("index.sqlite"):
            if on_statement:
                db.set_trace_callback(lambda sql: on_statement(sql, db))
            if on_open:
                on_open(db)
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


def replace_listing_row(vault: Path) -> None:
    """What another process's refresh does to the stored listing of Playbooks/: `INSERT OR
    REPLACE` writes the row anew, under a new rowid."""
    other = REAL_CONNECT(str(vault / INDEX), isolation_level=None)
    try:
        other.execute("INSERT OR REPLACE INTO listings (path, names, inodes) "
                      "SELECT path, names, inodes FROM listings WHERE path = 'Playbooks'")
    finally:
        other.close()


# ---------------------------------------------------------------------------- one look, one snapshot

def test_a_listing_replaced_between_two_reads_of_one_look_is_harmless(vault, monkeypatch):
    create("Card alpha")
    create("Card bravo")
    assert found("widget")  # the index holds the listing of Playbooks/
    write_card(vault, "Playbooks/Pattern_Card_charlie.md", hand_written("Card charlie", "The quokka widget."))
    replaced = []

    def between_reads(sql: str, db) -> None:
        # Just before this look reads the stored names by the rowid it read first.
        if "FROM listings WHERE rowid" in sql and not replaced:
            replaced.append(sql)
            replace_listing_row(vault)

    hook_connections(monkeypatch, on_statement=between_reads)
    assert found("quokka") == ["Playbooks/Pattern_Card_charlie.md"]
    assert replaced, "the look did not read the stored names: the race was not exercised"


def test_a_listing_replaced_before_its_names_are_compared_keeps_the_index_file(vault, monkeypatch, same_file):
    paths = [create("Card alpha"), create("Card bravo")]
    assert found("widget")
    same = same_file()
    # A save by rename: the same names, one new inode, so the stored names are compared in place
    # (an incremental blob read by rowid).
    card = vault / paths[0]
    temp = card.with_name(".save.tmp")
    temp.write_text(card.read_text(encoding="utf-8").replace("shared widget", "shared quokka"), encoding="utf-8")
    os.replace(temp, card)
    compare = refresh_module._Refresher._same_names
    replaced = []

    def same_names(self, *args):
        if not replaced:
            replaced.append(True)
            replace_listing_row(vault)
        return compare(self, *args)

    monkeypatch.setattr(refresh_module._Refresher, "_same_names", same_names)
    assert found("quokka") == [paths[0]]
    assert replaced
    assert same  # read from its own snapshot: no error, so nothing was deleted


def test_a_new_card_never_takes_the_docid_of_a_card_being_reindexed(vault):
    create("Card alpha")
    last = create("Card bravo")  # the highest docid
    assert found("widget")
    index = Index.open(Vault(vault), card_fields, sweep=None)
    try:
        write_card(vault, "Playbooks/Pattern_Card_charlie.md", hand_written("Card charlie", "The quokka widget."))
        # The new card is re-indexed first: it must not be given the docid that `last` (taken
        # out to be re-indexed too) still needs.
        index.update(["Playbooks/Pattern_Card_charlie.md", last])
    finally:
        index.close()
    assert sorted(found("widget", "--limit", "9")) == sorted(
        [f"Playbooks/Pattern_Card_alpha.md", last, "Playbooks/Pattern_Card_charlie.md"])


# ---------------------------------------------------------------------------- errors that are not damage

def test_a_full_disk_gives_a_warning_and_answers_without_deleting_the_index(vault, monkeypatch, same_file):
    create("Card alpha")
    assert found("widget")
    same = same_file()
    for number in range(40):  # enough new text that indexing it needs new pages
        write_card(vault, f"Playbooks/Pattern_Bulk_{number}.md",
                   hand_written(f"Bulk {number}", f"quokka {number} " + " ".join(f"w{number}x{n}" for n in range(200))))

    def disk_full(db) -> None:
        # SQLite's own limit gives what a full disk gives: SQLITE_FULL, "database or disk is
        # full", after which SQLite may already have rolled the transaction back.
        db.execute("PRAGMA max_page_count = 1")  # clamped to the pages the file has now

    hook_connections(monkeypatch, on_open=disk_full)
    code, out, err = run_cli("search", "quokka", "--limit", "50")
    assert code == 0, err
    assert out.startswith("40 cards for")
    assert err.count("brain: warning: ") == 1, err
    assert "cannot write the search index .brain/cache/index.sqlite: the disk is full" in err
    assert "this call used a temporary index in memory (free some space, then run `brain reindex`)" in err
    assert "Traceback" not in err and "cannot rollback" not in err
    assert same


def test_a_rollback_after_a_full_disk_does_not_hide_the_real_error(vault):
    create("Card alpha")
    assert found("widget")
    db = store_module._connect(vault / INDEX)
    try:
        db.execute("PRAGMA max_page_count = 1")
        db.execute("BEGIN IMMEDIATE")
        with pytest.raises(sqlite3.OperationalError, match="database or disk is full"):
            try:
                db.execute("INSERT INTO info VALUES ('filler', ?)", ("x" * 100_000,))
            except sqlite3.Error:
                store_module._rollback(db)
                raise
        assert not db.in_transaction
    finally:
        db.close()


def test_a_new_index_that_another_connection_is_reading_is_switched_to_wal(vault, monkeypatch):
    create("Card alpha")
    shutil.rmtree(vault / ".brain" / "cache")
    (vault / ".brain" / "cache").mkdir()
    # A new index file in rollback-journal mode, read by another connection: the switch to WAL
    # needs the file to itself, so the first try fails as it does when processes race.
    reader = REAL_CONNECT(str(vault / INDEX), isolation_level=None)
    reader.execute("CREATE TABLE early (x)")
    reader.execute("BEGIN")
    reader.execute("SELECT * FROM early").fetchall()
    tries = []

    def let_go_on_retry(sql: str, db) -> None:
        if sql.upper().startswith("PRAGMA JOURNAL_MODE=WAL"):
            tries.append(sql)
            if len(tries) == 2:
                reader.execute("COMMIT")

    hook_connections(monkeypatch, on_statement=let_go_on_retry)
    try:
        assert found("widget") == ["Playbooks/Pattern_Card_alpha.md"]
    finally:
        reader.close()
    assert len(tries) >= 2
    with REAL_CONNECT(str(vault / INDEX)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


# ---------------------------------------------------------------------------- real damage

def test_a_damaged_index_another_process_holds_is_left_to_it_and_rebuilt_after(vault, same_file):
    create("Card alpha", "The quokka widget.")
    assert found("quokka")
    holder = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys\n"
            f"sys.path.insert(0, {str(Path(SCRIPT).parent)!r})\n"
            "from external_brain.search.index import Index\n"
            "from external_brain.search.analysis import card_fields\n"
            "from pathlib import Path\nfrom external_brain.vault.storage import Vault\n"
            f"index = Index.open(Vault(Path({str(vault)!r})), card_fields)\n"
            "print('holding', flush=True)\n"
            "sys.stdin.readline()\n"
            "index.close()\n")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline() == "holding\n"
        same = same_file()
        with open(vault / INDEX, "r+b") as f:  # damaged in place: the holder's file
            f.write(b"\xde\xad\xbe\xef not an index " * 100)
        code, out, err = run_cli("search", "quokka")
        assert code == 0 and "Pattern_Card_alpha.md" in out, err
        assert ("brain: warning: the search index .brain/cache/index.sqlite is damaged and other processes "
                "still have it open; this call used a temporary index in memory (run `brain reindex` once "
                "they have finished)\n") in err
        assert same  # not pulled from under the holder
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=30) == 0
    code, out, err = run_cli("search", "quokka")
    assert code == 0 and "Pattern_Card_alpha.md" in out and "warning" not in err
    with REAL_CONNECT(str(vault / INDEX)) as db:
        assert db.execute("PRAGMA quick_check").fetchall() == [("ok",)]


def test_reindex_rebuilds_in_place_and_mends_a_damaged_file(vault, same_file):
    create("Card alpha", "The quokka widget.")
    assert found("quokka")
    same = same_file()
    assert ok_data("reindex")["indexed"] == 1
    assert same  # cleared and refilled in one transaction, not deleted
    (vault / INDEX).write_bytes(b"\xde\xad\xbe\xef not an index " * 100)
    assert ok_data("reindex")["indexed"] == 1
    assert found("quokka") == ["Playbooks/Pattern_Card_alpha.md"]


# ---------------------------------------------------------------------------- a cache that cannot be written

def test_an_index_path_that_is_a_directory_still_answers_and_doctor_names_it(vault):
    create("Card alpha", "The quokka widget.")
    shutil.rmtree(vault / ".brain" / "cache")
    (vault / INDEX).mkdir(parents=True)
    code, out, err = run_cli("search", "quokka")
    assert code == 0 and "Pattern_Card_alpha.md" in out
    assert err == (f"brain: warning: .brain/cache/index.sqlite is a directory, not the search index; this call "
                   f"used a temporary index in memory (remove it (rm -r {vault / INDEX}), then run "
                   "`brain reindex`)\n")
    data = doctor_report()
    assert [f for f in data["findings"] if f["path"] == ".brain/cache/index.sqlite"] == [{
        "level": "error", "path": ".brain/cache/index.sqlite",
        "message": ".brain/cache/index.sqlite is a directory, not the search index",
        "fix": f"remove it (rm -r {vault / INDEX}), then run `brain reindex`"}]
    code, envelope, err = run_json("reindex")
    assert code == 1 and envelope["error"]["code"] == "INDEX_UNAVAILABLE"
    assert (vault / INDEX).is_dir()  # a directory is the person's: never removed by the tool


def test_a_cache_folder_that_is_a_file_still_answers(vault):
    create("Card alpha", "The quokka widget.")
    shutil.rmtree(vault / ".brain" / "cache")
    (vault / ".brain" / "cache").write_text("not a folder\n")
    code, out, err = run_cli("search", "quokka")
    assert code == 0 and "Pattern_Card_alpha.md" in out
    assert err == ("brain: warning: .brain/cache is not a folder, so the search index cannot be kept; this call "
                   f"used a temporary index in memory (move {vault / '.brain' / 'cache'} away, then run "
                   "`brain reindex`)\n")
    assert (vault / ".brain" / "cache").read_text() == "not a folder\n"


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="needs `unshare -rm` (user namespaces)")


def run_with_mounts(vault: Path, mounts: str, *argv: str) -> subprocess.CompletedProcess:
    """Run the CLI in a private mount namespace after the shell commands `mounts`: the mounts
    are real (a read-only bind, a small tmpfs) and vanish with the process."""
    command = f'{mounts} && exec "$0" "$@"'
    return subprocess.run(["unshare", "-rm", "sh", "-c", command, sys.executable, str(SCRIPT), *argv],
                          env={**os.environ, "BRAIN_VAULT": str(vault)}, capture_output=True, text=True,
                          timeout=60)


@needs_namespaces
def test_a_vault_on_a_read_only_mount_still_answers_search(vault):
    create("Card alpha", "The quokka widget.")
    shutil.rmtree(vault / ".brain" / "cache")
    result = run_with_mounts(vault, f"mount --bind {vault} {vault} && mount -o remount,bind,ro {vault}",
                             "search", "quokka")
    assert result.returncode == 0, result.stderr
    assert "Pattern_Card_alpha.md" in result.stdout
    assert result.stderr == ("brain: warning: cannot use the search index (.brain/cache: Read-only file system); "
                             "this call used a temporary index in memory (make .brain/cache/ writable, or delete "
                             "it, then run `brain reindex`)\n")


@needs_namespaces
@pytest.mark.parametrize("filled_kib", [10, 40])  # SQLite says SQLITE_FULL; no room for the -shm file
def test_a_full_disk_under_the_cache_still_answers_search(vault, filled_kib):
    create("Card alpha", "The quokka widget.")
    for number in range(30):
        write_card(vault, f"Playbooks/Pattern_Bulk_{number}.md",
                   hand_written(f"Bulk {number}", f"quokka {number} " + " ".join(f"w{number}x{n}" for n in range(300))))
    cache = vault / ".brain" / "cache"
    shutil.rmtree(cache)
    cache.mkdir()
    # A 64 KiB tmpfs, partly filled: the index does not fit.
    fill = f"dd if=/dev/zero of={cache}/filler bs=1k count={filled_kib} 2>/dev/null"
    result = run_with_mounts(vault, f"mount -t tmpfs -o size=64k tmpfs {cache} && {fill}",
                             "search", "quokka", "--limit", "50")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("31 cards for")
    assert result.stderr == ("brain: warning: cannot write the search index .brain/cache/index.sqlite: the disk is "
                             "full; this call used a temporary index in memory (free some space, then run "
                             "`brain reindex`)\n")


# ---------------------------------------------------------------------------- many processes at once

def _search_loop(times: int) -> int:
    return sum(quiet_main(["search", "quokka"]) != 0 for _ in range(times))


def _create_loop(worker: int, times: int) -> int:
    return sum(quiet_main(["create", "--type", "pattern", "--domain", "dev", "--title", f"Race {worker} {n}",
                           "--tags", "race", "--body", "racing quokka"]) != 0 for n in range(times))


def _record_loop(card: str, times: int) -> int:
    return sum(quiet_main(["record", card, "used"]) != 0 for _ in range(times))


def _delete_loop(vault: str, times: int) -> int:
    failures = 0
    for _ in range(times):
        for suffix in ("", "-wal", "-shm"):  # as a person clearing the cache would
            try:
                os.unlink(f"{vault}/{INDEX}{suffix}")
            except FileNotFoundError:
                pass
        failures += quiet_main(["search", "quokka"]) != 0
    return failures


def _worker(start, target, args) -> None:
    start.wait(30)
    os._exit(1 if target(*args) else 0)


def run_together(jobs: list[tuple]) -> list[int]:
    start = FORK.Event()
    processes = [FORK.Process(target=_worker, args=(start, target, args)) for target, args in jobs]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=240)
    return [process.exitcode for process in processes]


def test_many_processes_search_create_and_record_and_the_index_file_stays(vault, same_file):
    target = create("Hot card", "The quokka widget.")
    assert found("quokka")
    same = same_file()
    jobs = [(_search_loop, (12,))] * 3 + [(_create_loop, (w, 5)) for w in range(2)] + [(_record_loop, (target, 8))]
    assert run_together(jobs) == [0] * len(jobs)
    assert same  # no error was taken for damage, nothing was deleted
    assert len(found("quokka", "--limit", "50")) == 11


def test_searches_answer_while_the_index_files_are_deleted_under_them(vault):
    create("Hot card", "The quokka widget.")
    assert found("quokka")
    jobs = [(_search_loop, (12,))] * 3 + [(_create_loop, (0, 5)), (_delete_loop, (str(vault), 6))]
    assert run_together(jobs) == [0] * len(jobs)
    assert len(found("quokka", "--limit", "50")) == 6
