"""Bringing the search index up to date with the vault: `_Refresher` looks at what changed on
disk (a `_Plan`) and applies it. Refreshes take the write lock (`BEGIN IMMEDIATE`) before they
re-check what changed, so two processes never index twice; the look itself reads one snapshot.
The rows of the cards to index are made by `build`, imported only when there is something to
index: a search over an unchanged vault does not load it.

How it notices changes without reading every card, or even stat-ing every card (at 100,000 cards
a stat of each file costs ~0.1 s on its own, more than the whole search budget):
- Folder mtimes. Adding, deleting or renaming a card, and every save that writes a new file and
  renames it over the old one (this tool, git, vim, sed -i, most atomic-save editors) changes
  its folder's mtime. Only such folders are listed again, and the listing (names and inodes, in
  the order the OS gives them) is compared with the one stored at the last look: a new name or a
  new inode is a file to re-read. Folders are few, so this costs a handful of stats per search.
- A rolling sweep for saves that rewrite a file in place (same inode, same folder mtime): every
  open compares the size and mtime of the next `sweep` indexed files, round-robin, so a vault of
  N cards is checked within ceil(N / sweep) searches (a vault of up to `sweep` cards, 1,000 by
  default, by every search), paced by time in a process that searches again and again (below).
  When the sweep reaches the last file, every folder is
  listed too, whatever its mtime says, so a change that left no mtime behind (one made in the
  instant of our own write-through, or within one tick of a filesystem with coarse timestamps)
  is found within that same bound. Search also checks the files of the hits it shows and
  re-ranks if one changed, so a hit is never shown from stale text. `reindex` checks everything.
- Write-through: `create` and `record` hand the card they wrote to the index (`Index.wrote`),
  so the next search does not list the folder again for a change the index already holds.
- Shared refreshes (`Shared`): in a process whose threads search at once (`serve`), the
  searches that arrive while a refresh of the same index runs wait for the NEXT one, which
  starts after they all arrived, and share it: one look for many searches. Every change
  complete before a search began (a write acknowledged, a save returned) that a folder's mtime
  shows is seen by it.
- The sweep of a process that searches again and again is paced by time (`Shared`,
  `SWEEP_PERIOD`): a refresh sweeps `sweep` files for each search it serves, as above, but no
  more than `sweep` files per `SWEEP_PERIOD` (0.1 s) since this process's previous refresh of
  the index began. A search after a pause of 0.1 s or more sweeps a full `sweep`, so a process
  searched now and then (mcp, a quiet server) keeps the bound counted in searches, and checks a
  vault of up to `sweep` cards completely on every search; a busy one sweeps `sweep` files per
  0.1 s however many searches share them, so a vault of N cards is checked within
  N / `sweep` x 0.1 s of searching (1 s at 10,000 cards), where a pause between two refreshes
  counts as at most 0.1 s. For a vault of up to `sweep` cards, whatever the load: a save in
  place is seen by every search that begins 0.1 s or more after it (the refreshes begun since
  the save owe at least one whole `sweep`, or one of them, after a pause, is a whole one). The
  first refresh of a process (every CLI search) sweeps `sweep` files per search. A process's
  paced sweep goes on from where its own previous refresh stopped (`Shared.position`), so these
  bounds hold in each worker of a server whatever the others do. Decision 0038,
  "Freshness paced by time" and "A small vault's sweep paced too".
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from array import array
from itertools import compress
from operator import ne
from typing import Callable, Iterable

from ..vault.valueclass import factory, valueclass
from ..vault.storage import Vault
from .store import (_INSERT_FACETS, ROOT_FOLDER, Changes, _Damaged, _is_dir, _rollback, _Snapshot, analyse_new_tags,
                    card_rows)

_FLUSH_AT = 200_000            # buffered postings before a bulk (re)index writes them out
_BUILD_CACHE_KB = -65536       # SQLite's page cache while a build writes (negative: in KiB, so 64 MB)
SWEEP_PERIOD = 0.1             # seconds of a process's searching worth one `sweep` of files (module docstring)


@valueclass
class _Plan:
    """What a look at the disk found to do."""

    changes: Changes = factory(Changes)
    stamps: dict[str, int] = factory(dict)                      # folder -> mtime to store
    listings: dict[str, tuple[bytes, bytes]] = factory(dict)    # folder -> new (names, inodes)
    inode_patches: dict[str, list[tuple[int, int]]] = factory(dict)  # folder -> [(position, inode)]
    gone_folders: list[str] = factory(list)
    listed_gone: set[str] = factory(set)  # removed because the listing no longer has them
    sweep_next: int | None = None


class Shared:
    """The refreshes of one index by the threads of this process, shared (module docstring).

    A caller of `refresh` needs a refresh that STARTS after it called: one already running may
    have looked at a file before the caller's write to it was acknowledged. So it waits for the
    running one to end, and the first waiter then runs the next refresh for every caller that
    was waiting when it started (they all called before it started); callers that arrive
    meanwhile wait for the one after. A refresh that fails is not shared: each of its waiters
    then runs its own, and sees its own error."""

    _all: dict[tuple[str, int | None], "Shared"] = {}
    _guard = threading.Lock()

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.turn = threading.Condition(threading.Lock())
        self.clock = clock
        self.began: float | None = None  # when this process's previous refresh began; None: none yet
        self.started = 0           # refreshes started (the number of the last one)
        self.finished = 0          # refreshes finished, in the order they started (one at a time)
        self.running = False
        self.wanting: dict[int, int] = {}     # refresh number -> callers waiting for it
        self.outcome: dict[int, list] = {}    # refresh number -> [Changes or None (failed), callers yet to read]
        # Where this process's sweep goes on from (the docid its previous refresh reached); None:
        # from the position in the cache's `sweep` file. Its own, not that file's, once it has
        # swept: another process writing the file (a worker of the same server, a CLI search)
        # may move it past files it checked before a save this process's bound counts from.
        self.position: int | None = None

    @classmethod
    def of(cls, key: tuple[str, int | None]) -> "Shared":
        """The one `Shared` of this process for `key` (the index file, the sweep)."""
        with cls._guard:
            shared = cls._all.get(key)
            if shared is None:
                shared = cls._all[key] = cls()
            return shared

    def refresh(self, work: Callable[[float], Changes]) -> Changes | None:
        """The changes found by a refresh that started after this call: `work(share)` run here
        for the callers waiting for it, or run by another caller for this one too. None when
        that refresh failed in another caller: this caller then refreshes on its own.

        `share` is how many searches' worth of sweep the refresh owes (module docstring): the
        number of callers it serves, but no more than the `SWEEP_PERIOD`s since this process's
        previous refresh began (never less than 1 / 1,000,000: some files are always swept)."""
        with self.turn:
            number = self.started + 1      # the first refresh to start from now on
            self.wanting[number] = self.wanting.get(number, 0) + 1
            while self.started < number and self.running:
                self.turn.wait()
            if self.started < number:      # nobody started it yet: this caller does
                self.running = True
                self.started = number
                callers = self.wanting.pop(number)
                # Trigger: this process refreshed the index before (a server, mcp, a caller
                # that searches in a loop). Why: a sweep of `sweep` files per search was most
                # of a busy server's search CPU at 10,000 cards (1,000 stats each, ~4 ms).
                # Outcome: at most one `sweep` per SWEEP_PERIOD of searching; a search after a
                # pause still gets a whole one. At 1,000 cards too: a whole sweep per refresh
                # (1,000 stats and a listing of every folder, each giving the GIL away) made a
                # refresh ~26 ms of wall time in 8 searching threads, and searches wait for one;
                # paced, ~15 ms, and a save in place is seen 0.1 s after it (decision 0038).
                now, before = self.clock(), self.began
                share = float(callers) if before is None else \
                    max(1e-6, min(callers, (now - before) / SWEEP_PERIOD))
                self.began = now
            else:                          # started by another caller: wait for it to end
                while self.finished < number:
                    self.turn.wait()
                result = self.outcome[number]
                result[1] -= 1
                if not result[1]:
                    del self.outcome[number]
                return result[0]
        changes = None
        try:
            changes = work(share)
            return changes
        finally:
            with self.turn:
                if changes is None:        # failed: it swept nothing, so the next one owes its share too
                    self.began = before
                self.running = False
                self.finished = number
                if callers > 1:
                    self.outcome[number] = [changes, callers - 1]
                self.turn.notify_all()


class _Refresher:
    def __init__(self, vault: Vault, db: sqlite3.Connection, analyse, progress) -> None:
        self.vault = vault
        self.db = db
        self.analyse = analyse
        self.progress = progress
        self.root = str(vault.root)
        self.workers: int | None = None  # processes for a build (`_built`); None: decided by its size

    def run(self, full: bool, sweep: int | None, paced: Shared | None = None) -> Changes:
        """Look for changes and apply them: every file when `full`; else changed folders and a
        sweep of `sweep` files (0: every file; None: none), going on from `paced.position` when
        it has one (and leaving the next one there), else from the cache's `sweep` file."""
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        # The look reads several statements (folders, listings by rowid, blobs, docs): one
        # snapshot, or a commit between two of them (another process's refresh) breaks it. It
        # is a separate read transaction, ended before the write lock is taken: a WAL snapshot
        # cannot be upgraded to a write once another process has committed.
        with _Snapshot(self.db):
            plan = self.look(full, sweep, paced)
        if plan.changes or plan.stamps or plan.gone_folders:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied the same changes while we looked: then look
                # again under the lock (data_version moves when another connection commits).
                if self.db.execute("PRAGMA data_version").fetchone()[0] != version:
                    plan = self.look(full, sweep, paced)
                self.apply(plan)
                self.db.execute("COMMIT")
            except BaseException:
                _rollback(self.db)
                raise
        if plan.sweep_next is not None:
            _write_hint(self.vault.cache_dir / "sweep", plan.sweep_next)   # for the next process
            if paced is not None:
                paced.position = plan.sweep_next
        return plan.changes

    def rebuild(self, workers: int | None = None) -> Changes:
        """Empty every table and index every card again, in one write transaction, with
        `workers` processes (None: as `_built` decides). SQLite's own check runs first:
        emptying a damaged file could leave it damaged."""
        self.workers = workers
        if [row[0] for row in self.db.execute("PRAGMA quick_check(1)")] != ["ok"]:
            raise _Damaged("PRAGMA quick_check found damage")
        self.db.execute("BEGIN IMMEDIATE")
        try:
            tables = [row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:  # every table the schema has, whatever later versions add
                if table != "info":
                    self.db.execute(f'DELETE FROM "{table}"')
            from .build import postings_moved

            postings_moved(self.db)   # a fold planned before this rebuild is not applied after it
            self.db.execute("UPDATE info SET value = '0' WHERE key = 'doc_count'")
            self.db.execute("UPDATE info SET value = '[0,0,0,0,0]' WHERE key = 'field_totals'")
            plan = self.look(True, None)
            self.apply(plan)
            self.db.execute("COMMIT")
        except BaseException:
            _rollback(self.db)
            raise
        return plan.changes

    # ------------------------------------------------------------------ finding changes

    def look(self, full: bool, sweep: int | None, paced: Shared | None = None) -> _Plan:
        plan = _Plan()
        known_folders = dict(self.db.execute("SELECT path, mtime_ns FROM folders"))
        # The files the sweep checks this time. When it wraps around to the start, every folder
        # is listed too, whatever its mtime says: that bounds how long a change that left no
        # mtime behind can go unseen (one made in the same instant as our own write, or within
        # one tick of a filesystem with coarse timestamps) by the sweep's own bound.
        swept, list_all = [], full or sweep == 0
        if full or sweep == 0:
            swept = self.db.execute("SELECT folder, name, size, mtime_ns FROM docs").fetchall()
        elif sweep is not None:
            start = paced.position if paced is not None else None
            swept, plan.sweep_next, list_all = self._sweep_rows(sweep, start)
        todo = [ROOT_FOLDER] if full or ROOT_FOLDER not in known_folders else []
        for folder, mtime in known_folders.items():
            try:
                current = os.stat(os.path.join(self.root, folder)).st_mtime_ns
            except (FileNotFoundError, NotADirectoryError):
                plan.gone_folders.append(folder)
                continue
            if (current != mtime or list_all) and folder not in todo:
                todo.append(folder)
        listed: set[str] = set()
        relist: set[str] = set()  # folders replaced by another directory: compared with the docs
        while todo:
            folder = todo.pop()
            if folder in listed and folder not in relist:
                continue
            listed.add(folder)
            self._list_folder(folder, known_folders, todo, plan, full or folder in relist, relist)
            relist.discard(folder)
        self._check_files(swept, plan)
        return plan

    def _list_folder(self, folder: str, known_folders: dict[str, int], todo: list[str], plan: _Plan,
                     full: bool, relist: set[str]) -> None:
        """Compare a changed (or new) folder's entries with the listing stored at the last look,
        or, for a new folder or a full check, with the documents indexed from it."""
        path = os.path.join(self.root, folder)
        try:
            mtime = os.stat(path).st_mtime_ns  # before listing: a change during it shows next time
            names, inodes = _scan(path)
        except (FileNotFoundError, NotADirectoryError):
            if folder in known_folders:
                plan.gone_folders.append(folder)
            return
        stored = None if full else self.db.execute(
            "SELECT rowid, length(names), inodes FROM listings WHERE path = ?", (folder,)).fetchone()
        plan.stamps[folder] = mtime
        if stored is None:
            plan.listings[folder] = (_join(names), inodes.tobytes())
            self._compare_with_docs(folder, names, inodes, known_folders, todo, plan)
            return
        rowid, names_size = stored[0], stored[1]
        old_inodes = array("Q")
        old_inodes.frombytes(stored[2])
        if len(names) == len(old_inodes) and self._same_names(rowid, names_size, names):
            # The same entries in the same order: only inodes can differ.
            if inodes == old_inodes and mtime == known_folders.get(folder):
                del plan.stamps[folder]
                return  # listed only because the sweep wrapped, and nothing changed
            positions = _differing(inodes, old_inodes)
            plan.inode_patches[folder] = [(at, inodes[at]) for at in positions]
            changed = [names[at] for at in positions]
            was_there: Callable[[bytes], bool] = lambda name: True
            gone: list[bytes] = []
        else:
            plan.listings[folder] = (_join(names), inodes.tobytes())
            (old_joined,) = self.db.execute("SELECT names FROM listings WHERE rowid = ?", (rowid,)).fetchone()
            before = dict(zip(old_joined.split(b"\0") if old_joined else [], old_inodes))
            changed = [name for name, inode in zip(names, inodes) if before.get(name) != inode]
            was_there = before.__contains__
            now_there = set(names)
            gone = [name for name in before if name not in now_there]
        indexed = self._indexed_stamps(folder, changed)
        for raw in changed:
            name, existed = _decode(raw), was_there(raw)
            if name is None or name[0] == ".":
                continue
            rel = f"{folder}/{name}"
            if _is_dir(f"{path}/{name}"):
                if rel in known_folders:
                    relist.add(rel)  # another directory now has this path: trust nothing stored
                todo.append(rel)
            elif name.endswith(".md"):
                # Trigger: a file the stored listing does not show as it is, which the index holds
                # with the file's own size, mtime and inode. Why: a writer's pass-on indexes the
                # cards it writes but leaves the stored listing as it was (`Index.wrote_files`), so
                # every card written since the last listing looked new here; with 8 CLI writers
                # each refresh re-read ~80 of them, a fold and every term's postings rewritten
                # (~27 s, every other writer waiting). Outcome: only what the index does not hold
                # as it is now is re-read (the criterion every other freshness check uses).
                if indexed.get(name) is not None and indexed[name] == _file_stamp(f"{path}/{name}"):
                    continue
                (plan.changes.modified if existed else plan.changes.added).append(rel)
        for name in filter(None, map(_decode, gone)):
            rel = f"{folder}/{name}"
            if rel in known_folders:
                plan.gone_folders.append(rel)
            elif name[0] != "." and name.endswith(".md"):
                plan.changes.removed.append(rel)
                plan.listed_gone.add(rel)

    def _indexed_stamps(self, folder: str, raws: list[bytes]) -> dict[str, tuple[int, int, int]]:
        """The (size, mtime, inode) the index holds for those of these entries of `folder` it has
        indexed, by name."""
        names = [name for name in map(_decode, raws) if name is not None and name.endswith(".md")]
        found: dict[str, tuple[int, int, int]] = {}
        for start in range(0, len(names), 500):
            part = names[start:start + 500]
            found.update((name, (size, mtime, inode)) for name, size, mtime, inode in self.db.execute(
                f"SELECT name, size, mtime_ns, inode FROM docs WHERE folder = ? AND name IN ({','.join('?' * len(part))})",
                (folder, *part)))
        return found

    def _same_names(self, rowid: int, size: int, names: list[bytes]) -> bool:
        """Whether the stored listing `rowid` (`size` bytes) holds exactly `names`, read and
        compared a slice at a time: fetching and joining 7 MB of names for 100,000 entries costs
        ~10 ms, mostly page faults in fresh memory; slices reuse a little."""
        read = 0
        with self.db.blobopen("listings", "names", rowid, readonly=True) as stored:
            for start in range(0, len(names), 1024):
                piece = _join(names[start:start + 1024])
                if start + 1024 < len(names):
                    piece += b"\0"
                if stored.read(len(piece)) != piece:
                    return False
                read += len(piece)
        return read == size

    def _compare_with_docs(self, folder: str, names: list[bytes], inodes: array,
                           known_folders: dict[str, int], todo: list[str], plan: _Plan) -> None:
        """Plan a re-index of every card file whose name or inode the index does not have."""
        path = os.path.join(self.root, folder)
        indexed = dict(self.db.execute("SELECT name, inode FROM docs WHERE folder = ?", (folder,)))
        subfolders = set()
        for name, inode in zip(map(_decode, names), inodes):
            if name is None or name[0] == ".":
                continue
            rel = f"{folder}/{name}"
            if _is_dir(f"{path}/{name}"):
                subfolders.add(rel)
                if rel not in known_folders:
                    todo.append(rel)
            elif name.endswith(".md"):
                seen = indexed.pop(name, None)
                if seen is None:
                    plan.changes.added.append(rel)
                elif seen != inode:
                    plan.changes.modified.append(rel)
        plan.changes.removed += [f"{folder}/{name}" for name in indexed]
        plan.listed_gone.update(f"{folder}/{name}" for name in indexed)
        plan.gone_folders += [sub for sub in known_folders
                              if sub.rpartition("/")[0] == folder and sub not in subfolders]

    def _check_files(self, rows: list[tuple[str, str, int, int]], plan: _Plan) -> None:
        """Stat each (folder, name, size, mtime) and plan a re-index of those that differ."""
        planned = set(plan.changes.modified) | set(plan.changes.removed)
        root, stat = self.root, os.stat
        # Each file is stat-ed by its name relative to its folder's descriptor, opened once per
        # folder: the kernel then walks one name instead of the whole path (and no path string
        # is built), ~10-25% of the sweep's CPU. A folder that cannot be opened falls back to
        # paths, which report what is wrong with each file as before.
        folders: dict[str, int | None] = {}
        try:
            for folder, name, size, mtime in rows:
                if planned and f"{folder}/{name}" in planned:
                    continue
                fd = folders.get(folder, -1)
                if fd == -1:
                    fd = folders[folder] = _open_folder(f"{root}/{folder}")
                try:
                    st = stat(name, dir_fd=fd) if fd is not None else None
                except OSError:
                    st = None
                if st is None or st.st_size != size or st.st_mtime_ns != mtime:
                    self._check_file(f"{folder}/{name}", size, mtime, plan)
        finally:
            for fd in folders.values():
                if fd is not None:
                    os.close(fd)

    def _check_file(self, rel: str, size: int, mtime: int, plan: _Plan) -> None:
        """Stat one file by its whole path and plan its re-index when it differs from the (size,
        mtime) indexed: how each file was checked before the descriptors (`_check_files`), for a
        file whose quick stat failed or differed."""
        try:
            st = os.stat(f"{self.root}/{rel}")
        except OSError:
            try:  # a link that cannot be followed (a loop) is stored with its own stamp
                st = os.lstat(f"{self.root}/{rel}")
            except OSError:
                plan.changes.removed.append(rel)
                return
        if st.st_size != size or st.st_mtime_ns != mtime:
            plan.changes.modified.append(rel)

    def _sweep_rows(self, count: int, start: int | None = None) -> tuple[list[tuple[str, str, int, int]], int, bool]:
        """The next `count` indexed files after docid `start` (None: the one remembered in the
        cache), where to go on next time, and whether this sweep wrapped around to the start."""
        if start is None:
            start = _read_hint(self.vault.cache_dir / "sweep")
        rows = self.db.execute("SELECT docid, folder, name, size, mtime_ns FROM docs WHERE docid > ? "
                               "ORDER BY docid LIMIT ?", (start, count + 1)).fetchall()
        wrapped = 0 < len(rows) <= count  # this sweep reaches the last file
        del rows[count:]
        if len(rows) < count:  # and goes on from the first
            rows += self.db.execute("SELECT docid, folder, name, size, mtime_ns FROM docs WHERE docid <= ? "
                                    "ORDER BY docid LIMIT ?", (start, count - len(rows))).fetchall()
        return [row[1:] for row in rows], rows[-1][0] if rows else 0, wrapped

    # ------------------------------------------------------------------ applying them

    def apply(self, plan: _Plan) -> None:
        for folder in plan.gone_folders:
            inside = (folder, len(folder) + 1, folder + "/")
            for sub, name in self.db.execute("SELECT folder, name FROM docs WHERE folder = ? OR "
                                             "substr(folder, 1, ?) = ?", inside).fetchall():
                plan.changes.removed.append(f"{sub}/{name}")
                plan.listed_gone.add(f"{sub}/{name}")
            self.db.execute("DELETE FROM folders WHERE path = ? OR substr(path, 1, ?) = ?", inside)
            self.db.execute("DELETE FROM listings WHERE path = ? OR substr(path, 1, ?) = ?", inside)
        changes = plan.changes
        vanished = self.reindex_paths(changes.removed + changes.modified + changes.added, in_transaction=True)
        # A file the listing shows but that was gone when read (moved away and back, say) must
        # not stay in a stored listing with no document: that folder is compared with the
        # documents at its next look instead.
        unsure = {rel.rpartition("/")[0] for rel in vanished if rel not in plan.listed_gone}
        gone = set(plan.gone_folders)
        for folder, mtime in plan.stamps.items():
            if folder in gone or folder.rpartition("/")[0] in gone:
                continue
            if folder in unsure:
                pass  # its listing is dropped below; the stamp, taken before the scan, still holds
            elif folder in plan.listings:
                self.db.execute("INSERT OR REPLACE INTO listings VALUES (?, ?, ?)", (folder, *plan.listings[folder]))
            elif not _patch_inodes(self.db, folder, plan.inode_patches.get(folder, ())):
                continue  # no stored listing to patch: the folder is listed afresh next time
            self.db.execute("INSERT OR REPLACE INTO folders VALUES (?, ?)", (folder, mtime))
        self.db.executemany("DELETE FROM listings WHERE path = ?", ((folder,) for folder in unsure))

    def reindex_paths(self, rels: list[str], in_transaction: bool = False, fold: bool = True,
                      read: dict | None = None) -> list[str]:
        """Re-index these paths; returns those whose file was gone when read. `fold=False`
        leaves the excess of `stale` to the caller (`Index.fold_excess`). `read`: for some of
        them, the file's stamp and the card its text makes, already read (`Index.wrote_files`)."""
        if not rels:
            return []
        from . import build  # only a refresh that indexes something loads the build

        if not in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
        try:
            info = dict(self.db.execute("SELECT key, value FROM info"))
            self.count = int(info["doc_count"])
            self.totals = json.loads(info["field_totals"])
            unique = list(dict.fromkeys(rels))
            # A few cards into an index that has postings; a first build writes them whole (`_build`).
            few = len(unique) <= build.DELTA_BATCH and \
                self.db.execute("SELECT 1 FROM postings LIMIT 1").fetchone() is not None
            if few:
                self.edits = build._DeltaEdits(self.db)
            else:  # edited in `postings` itself, which must first hold every card's postings
                build.fold(self.db)
                self.edits = build._PostingEdits(self.db)
            # Trigger: no document is stored (a first build, `reindex`). Why: there is nothing
            # to remove, and asking for each path cost ~40 us a path (0.4 s at 10,000 cards).
            # Outcome: every path is new.
            stored = self.db.execute("SELECT 1 FROM docs LIMIT 1").fetchone() is not None
            docids = {rel: self._remove(rel) if stored else None for rel in unique}
            # Documents that keep their docid go back first: a new one is given the highest
            # docid + 1, which, while a removed document with the highest docid is still out,
            # is that document's docid (UNIQUE constraint failed: docs.docid).
            unique.sort(key=lambda rel: docids[rel] is None)
            if self.edits.unwritten_from == 0 and all(docids[rel] is None for rel in unique):
                # Trigger: no posting is stored yet (a first build, `reindex`, an index in
                # memory) and every path is new. Why: then each posting row is written once,
                # whole, so rows can be made away from the database, on every core. Outcome:
                # `_build`, which stores what this loop would.
                vanished = self._build(unique)
            else:
                vanished = []
                read = read or {}
                for number, rel in enumerate(unique, start=1):
                    if not (self._add(rel, docids[rel], read[rel]) if rel in read else self._add(rel, docids[rel])):
                        vanished.append(rel)
                    if self.edits.size >= _FLUSH_AT:
                        self.edits.flush()
                    if self.progress and (number % 500 == 0 or number == len(unique)):
                        self.progress(number, len(unique))
                self.edits.flush()
            if few and fold:
                # Trigger: more than DELTA_CARDS cards wait in `stale`. Why: folding all of them
                # at once made one write in 64 pay 0.2-2 s (issue 22). Outcome: this change folds
                # the excess, the fullest chunk's first, but no more cards than it indexed itself (one
                # for a one-card write), even when a server's upkeep left more waiting
                # (`index.FoldUpkeep`, which lets up to FOLD_BACKLOG wait while writes go on).
                waiting = self.db.execute("SELECT count(*) FROM stale").fetchone()[0]
                if waiting > build.DELTA_CARDS:
                    build.fold(self.db, cards=min(waiting - build.DELTA_CARDS, len(unique)))
            analyse_new_tags(self.db)   # the terms of the tags the cards just indexed brought
            self.db.execute("UPDATE info SET value = ? WHERE key = 'doc_count'", (str(self.count),))
            self.db.execute("UPDATE info SET value = ? WHERE key = 'field_totals'", (json.dumps(self.totals),))
            if not in_transaction:
                self.db.execute("COMMIT")
        except BaseException:
            if not in_transaction:
                _rollback(self.db)
            raise
        return vanished

    def _remove(self, rel: str) -> int | None:
        """Drop a document; returns its docid, which the file keeps if it is indexed again."""
        folder, _, name = rel.rpartition("/")
        row = self.db.execute("SELECT docid, lengths, terms FROM docs LEFT JOIN doc_data USING (docid) "
                              "WHERE folder = ? AND name = ?", (folder, name)).fetchone()
        if not row:
            return None
        docid, lengths, terms = row
        if lengths is not None:
            self.totals = [t - n for t, n in zip(self.totals, json.loads(lengths))]
            self.count -= 1
            self.edits.drop(docid, terms.split("\n"))
            self.db.execute("DELETE FROM doc_data WHERE docid = ?", (docid,))
            self.db.execute("DELETE FROM card_keys WHERE docid = ?", (docid,))
            self.db.execute("DELETE FROM links WHERE source = ?", (docid,))
            self.db.execute("DELETE FROM facets WHERE docid = ?", (docid,))
            self.db.execute("DELETE FROM card_tags WHERE docid = ?", (docid,))
        self.db.execute("DELETE FROM docs WHERE docid = ?", (docid,))
        return docid

    def _add(self, rel: str, docid: int | None, read=None) -> bool:
        """Index the file (or record why it is not a card); False when there is no file.
        `read`: the file's stamp and card, already read (`reindex_paths`)."""
        from .build import _read_entry  # loaded already: `reindex_paths` imported the module

        entry = _read_entry(self.vault, self.analyse, rel, read=read)
        if entry is None:
            return False  # gone since it was listed (or not a file)
        docid = self.db.execute("INSERT INTO docs (docid, folder, name, size, mtime_ns, inode, problem, line) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", (docid, *entry.doc)).lastrowid
        if entry.codes is None:
            return True  # not a card: the row says why
        self.db.execute("INSERT INTO doc_data VALUES (?, ?, ?, ?)", (docid, *entry.data))
        self.db.execute("INSERT INTO card_keys VALUES (?, ?, ?, ?)", (docid, *entry.key))
        if entry.links:
            self.db.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                [(docid, *link) for link in entry.links])
        self.db.execute(_INSERT_FACETS, (docid, *entry.facets))
        self.db.executemany("INSERT OR IGNORE INTO card_tags VALUES (?, ?)", ((tag, docid) for tag in entry.tags))
        self.edits.add(docid, entry.codes)
        self.count += 1
        self.totals = [t + n for t, n in zip(self.totals, entry.lengths)]
        return True

    def restamp(self, rel: str, stamp: tuple[int, int, int], card) -> None:
        """Store the indexed file `rel` as `card` with the file's `stamp` (size, mtime, inode),
        when its terms are the ones the index holds (a written card whose change no field
        `analyse` reads saw: its confidence, links, status): every row but its postings, which
        stand as they are (a link costs a few rows, not a rewrite of each of its terms' rows)."""
        folder, _, name = rel.rpartition("/")
        (docid,) = self.db.execute("SELECT docid FROM docs WHERE folder = ? AND name = ?", (folder, name)).fetchone()
        meta, key, links, facets, tags = card_rows(card)
        self.db.execute("UPDATE docs SET size = ?, mtime_ns = ?, inode = ? WHERE docid = ?", (*stamp, docid))
        self.db.execute("UPDATE doc_data SET meta = ? WHERE docid = ?", (meta, docid))
        self.db.execute("UPDATE card_keys SET (id, stem, title) = (?, ?, ?) WHERE docid = ?", (*key, docid))
        self.db.execute("DELETE FROM links WHERE source = ?", (docid,))
        self.db.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", [(docid, *link) for link in links])
        self.db.execute("DELETE FROM facets WHERE docid = ?", (docid,))
        self.db.execute(_INSERT_FACETS, (docid, *facets))
        # Trigger: the card's tags as they were (a record, a link, a status: most restamps change
        # none). Why: all of them were deleted and inserted again, and a tag no other card has
        # left the vault's tag list (`tags`, kept by `_TRIGGERS`) and came back without its terms,
        # tokenised again under the write lock. Outcome: only the tags the card dropped are
        # deleted; the rows of `card_tags` and `tags` end the same.
        kept = set(tags)
        dropped = [(tag, docid) for (tag,) in self.db.execute("SELECT tag FROM card_tags WHERE docid = ?", (docid,))
                   if tag not in kept]
        self.db.executemany("DELETE FROM card_tags WHERE tag = ? AND docid = ?", dropped)
        self.db.executemany("INSERT OR IGNORE INTO card_tags VALUES (?, ?)", ((tag, docid) for tag in tags))
        analyse_new_tags(self.db)

    def _build(self, rels: list[str]) -> list[str]:
        """Index these new paths into an index with no postings yet; returns those whose file
        was gone when read. The cards are read and analysed a chunk of docids at a time (the
        docids a posting row holds), so each chunk's posting rows are made whole apart from the
        database: by worker processes for a large build (`_built`), else here. Docids are given in
        the order of `rels` (a file found gone leaves its docid unused), and the chunks are
        stored in that order, so the index is the same whatever the number of processes."""
        from . import build

        chunk_bits = build.CHUNK_BITS  # defined once, in build, and read at call time like every use
        base = self.db.execute("SELECT coalesce(max(docid), 0) + 1 FROM docs").fetchone()[0]
        batches: list[list[tuple[int, str]]] = []
        for docid, rel in enumerate(rels, start=base):
            if not batches or docid >> chunk_bits != batches[-1][0][0] >> chunk_bits:
                batches.append([])
            batches[-1].append((docid, rel))
        vanished: list[str] = []
        done = 0
        results = build._built(self.vault, self.analyse, batches, self.workers)
        # Each chunk's rows land all over the postings B-tree: a larger page cache for the
        # build keeps SQLite from writing pages out and reading them back (~30% of its time).
        (cache_size,) = self.db.execute("PRAGMA cache_size").fetchone()
        self.db.execute(f"PRAGMA cache_size = {_BUILD_CACHE_KB}")
        try:
            for batch, built in zip(batches, results):
                self._store(built)
                vanished += built[-1]
                done += len(batch)
                if self.progress:
                    self.progress(done, len(rels))
        finally:
            results.close()  # on an error: stops the workers before the transaction is rolled back
            self.db.execute(f"PRAGMA cache_size = {int(cache_size)}")
        return vanished

    def _store(self, built) -> None:
        """Insert one chunk's rows made by `_build_batch`."""
        from .build import _posting_rows, postings_moved  # loaded already: `_build` imported the module

        docs, data, keys, links, facets, tags, postings, lengths, _ = built
        self.db.executemany("INSERT INTO docs (docid, folder, name, size, mtime_ns, inode, problem, line) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", docs)
        self.db.executemany("INSERT INTO doc_data VALUES (?, ?, ?, ?)", data)
        self.db.executemany("INSERT INTO card_keys VALUES (?, ?, ?, ?)", keys)
        self.db.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", links)
        self.db.executemany(_INSERT_FACETS, facets)  # what `stats` counts
        self.db.executemany("INSERT OR IGNORE INTO card_tags VALUES (?, ?)", tags)
        self.db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?)", _posting_rows(postings))
        postings_moved(self.db)
        self.count += len(data)
        self.totals = [t + n for t, n in zip(self.totals, lengths)]


def _scan(path: str) -> tuple[list[bytes], array]:
    """The names (as bytes: no decoding, and they compare with the stored listing as they are)
    and inodes of a folder's entries, in the order the OS lists them. One pass that keeps no
    DirEntry: at 100,000 entries, holding them all costs ~15 ms more, decoding names ~6 ms."""
    names: list[bytes] = []
    inodes = array("Q")
    add_name, add_inode = names.append, inodes.append
    with os.scandir(os.fsencode(path)) as listing:
        for entry in listing:
            add_name(entry.name)
            add_inode(entry.inode())
    return names, inodes


def _open_folder(path: str) -> int | None:
    """A descriptor of the folder at `path` to stat its files by name; None when it cannot be
    opened (gone, not a folder, no descriptors left) or the system cannot stat by descriptor
    (Windows): its files are then stat-ed by path."""
    if not _STAT_BY_FOLDER:
        return None
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None


_STAT_BY_FOLDER = os.stat in os.supports_dir_fd and hasattr(os, "O_DIRECTORY")


def _decode(name: bytes) -> str | None:
    """A file name as text; None for one that is not UTF-8 (it cannot be stored or addressed,
    so it is left out, as a hidden file is)."""
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _patch_inodes(db: sqlite3.Connection, folder: str, patches: Iterable[tuple[int, int]]) -> bool:
    """Write these (position, inode) pairs into the folder's stored listing, in place; False
    when the folder has no stored listing."""
    row = db.execute("SELECT rowid FROM listings WHERE path = ?", (folder,)).fetchone()
    if row is None:
        return False
    with db.blobopen("listings", "inodes", row[0], readonly=False) as blob:
        for position, inode in patches:
            blob.seek(position * 8)
            blob.write(array("Q", [inode]).tobytes())
    return True


def _join(names: list[bytes]) -> bytes:
    return b"\0".join(names)  # NUL is the one byte no file name has


def _differing(new: array, old: array) -> list[int]:
    """The positions where two arrays of the same length differ. Halving with slice comparisons
    done in C finds the few changes a save makes among 100,000 entries in ~1 ms, where a
    Python step per entry takes ~3 ms; past 64 changes that plain scan is used."""
    a, b = memoryview(new).cast("B"), memoryview(old).cast("B")
    size = new.itemsize
    found: list[int] = []
    pending = [(0, len(new))]
    while pending:
        if len(found) + len(pending) > 64:
            return list(compress(range(len(new)), map(ne, new, old)))
        low, high = pending.pop()
        if a[low * size:high * size] == b[low * size:high * size]:
            continue
        if high - low == 1:
            found.append(low)
            continue
        middle = (low + high) // 2
        pending += [(middle, high), (low, middle)]
    return sorted(found)


def _read_hint(path) -> int:
    """A small integer kept in a file (the sweep position); anything unreadable is 0."""
    try:
        with open(path, "rb") as f:
            return int(f.read(32) or 0)
    except (OSError, ValueError):
        return 0


def _write_hint(path, value: int) -> None:
    """Best effort and unsynchronised: the sweep position is a hint, losing it costs nothing.
    Written in place at a fixed width: truncating a file costs ~1 ms on ext4, a write 1 us."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, b"%20d" % value, 0)
        finally:
            os.close(fd)
    except OSError:
        pass


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    """A file's (size, mtime, inode) as the index stores it, or None when it cannot be had."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino
