"""The persistent, incremental search index in `.brain/cache/index.sqlite`: `Index`, the read
side every search uses, the write-through that writers hand their cards to, and `rebuild`.

What it promises:
- It is derived data. The cards are the truth: a missing, stale or foreign index is rebuilt, a
  damaged one (SQLite says SQLITE_CORRUPT or SQLITE_NOTADB) is replaced, never trusted, and
  deleting it loses nothing.
- A search reads only what the query needs: the posting rows of the query's terms (a B-tree
  range each) and the rows of the documents it shows, not every card or a whole index file.
- Concurrent readers and writers are safe: SQLite in WAL mode; a look at what changed reads one
  snapshot (a read transaction), and refreshes take the write lock (`BEGIN IMMEDIATE`) before
  they re-check what changed, so two processes never index twice.
- No file is pulled from under another process: every process holds a shared `flock` on
  `index.lock` beside the index while its connection is open (a connection a long-lived process
  keeps between uses, `keep_connections`, while it is in use, and it is checked to be the file at
  the path again before each use), and a damaged file is deleted only under the exclusive lock,
  taken without waiting. `reindex` rebuilds in place, in one write
  transaction, so readers see the old index until the new one is committed.
- An index that cannot be used (a directory in its place, a read-only vault or cache, a full
  disk, a damaged file others still hold) never fails a command: `Index.open` then builds a
  private index in memory for this call and says why in `trouble` (no other SQLite error is
  taken for damage: the file is left alone).

Where the parts live: `store` holds the file (schema, row shapes, posting codes, connection,
locks, damage); `refresh` notices what changed in the vault and applies it (see its docstring for
how, without reading or even stat-ing every card); `build` makes the rows of the cards to index,
and is imported only when there is something to index. Writers pass the cards they wrote on to
the index (`Index.wrote_files`, called by the one write path, `writes.commit_operation`), so the
next search does not list the folder again for a change the index already holds.

SQLite ships with Python's standard library; the ranking itself is ours (see `search`), the
database is only the posting store.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from array import array
from bisect import bisect_left, bisect_right
from math import ceil
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..errors import BrainError, IndexUnavailable
from ..vault.valueclass import valueclass
from ..vault.storage import FOLDS_TO_ASCII, Card, Problem, Vault, card_from_text, numbered_forms_start
from .analysis import card_fields, field_texts
from .refresh import Shared, _file_stamp, _Refresher
from .store import (_BUSY_TIMEOUT, _VERSION, Changes, Trouble, _connect, _Damaged, _damaged, _ensure_schema,
                    _inode, _replace_damaged, _rollback, _share, _Snapshot, _trouble_with, _version)

DEFAULT_SWEEP = 1000


@valueclass(frozen=True)
class Stamps:
    """A card's folder mtime and the card's (size, mtime_ns, inode), before a write."""

    folder: int | None
    file: tuple[int, int, int] | None


@valueclass
class Stats:
    doc_count: int
    avg_lengths: tuple[float, ...]


class Postings:
    """One term's postings: parallel arrays of docids (ascending) and their codes; `distinct`,
    when not None, is the set of those codes (known without a pass over them when the rows were
    kept, `_KeptPostings`). `Index.postings_of` may leave some apart in `more` (docids ascending,
    their codes; none of them in `docids`): its reader (`keyword.best_scores`) takes both lists,
    and `merged` gives the one list `Index.postings` gives."""

    __slots__ = ("docids", "codes", "distinct", "more")

    def __init__(self, docids: array, codes: array, distinct: set[int] | None = None,
                 more: tuple[list[int], list[int]] | None = None) -> None:
        self.docids = docids
        self.codes = codes
        self.distinct = distinct
        self.more = more

    def __len__(self) -> int:
        return len(self.docids) if self.more is None else len(self.docids) + len(self.more[0])

    def code(self, docid: int) -> int | None:
        """This document's code, or None when it does not contain the term."""
        at = bisect_left(self.docids, docid)
        if at < len(self.docids) and self.docids[at] == docid:
            return self.codes[at]
        if self.more is not None:
            ids, codes = self.more
            at = bisect_left(ids, docid)
            if at < len(ids) and ids[at] == docid:
                return codes[at]
        return None

    def merged(self) -> tuple[array, array]:
        """Every posting in one pair of arrays, docids ascending (`more` merged in)."""
        if self.more is None:
            return self.docids, self.codes
        return _with(array("I", self.docids), array("Q", self.codes), list(zip(*self.more)))


class _Unusable(Exception):
    """The index file cannot be used for this call (see `Trouble`)."""

    def __init__(self, trouble: Trouble) -> None:
        super().__init__(trouble.problem)
        self.trouble = trouble


class Index:
    """An open index. Use `Index.open(vault, analyse)`; it is refreshed before it is returned."""

    def __init__(self, vault: Vault, db: sqlite3.Connection, analyse, changes: Changes,
                 lock: int | None = None, inode: int | None = None, trouble: Trouble | None = None,
                 kept: "_Kept | None" = None) -> None:
        self.vault = vault
        self.db = db
        self.analyse = analyse
        self.changes = changes
        self.lock = lock          # descriptor holding `index.lock` shared; None for an index in memory
        self.inode = inode        # of the file opened, to replace only that file if it is damaged
        self.trouble = trouble    # why this is a private index in memory; None when it is the file
        self._stale: tuple[int, int, list[tuple[int]]] | None = None   # `_waiting`'s last answer
        self.kept = kept          # this thread's kept connection (`keep_connections`), given back by `close`
        self._given_back = False
        self.closed = False

    @classmethod
    def open(cls, vault: Vault, analyse: Callable[[Card], dict[str, list[str]]],
             progress: Callable[[int, int], None] | None = None, full: bool = False,
             sweep: int | None = DEFAULT_SWEEP) -> "Index":
        """Open and refresh the index. `full` checks every file (reindex, doctor); otherwise
        folder mtimes and a sweep of `sweep` files decide what is re-read (module docstring):
        0 checks every file, None none (folders only: for callers that only want candidates).
        Never fails because of the index file: see `trouble`."""
        def refresh(refresher: _Refresher, fresh: bool) -> Changes:
            caught_up(vault, refresher.db, analyse)
            if full or fresh or sweep is None:
                return refresher.run(full or fresh, sweep)
            # Trigger: a search-like open (a sweep) in a process where other threads may be
            # refreshing the same index (`serve`). Why: a refresh each costs ~5 ms of CPU,
            # mostly the sweep's stats. Outcome: it shares the next refresh that starts after
            # this call (refresh.Shared), which sweeps `sweep` files for each caller it serves,
            # but no more than `sweep` per 0.1 s of this process's searching, whatever the
            # vault's size (refresh's module docstring).
            pacing = Shared.of((str(vault.cache_dir), sweep))
            shared = pacing.refresh(lambda share: refresher.run(False, sweep and max(1, ceil(sweep * share)), pacing))
            return refresher.run(False, sweep) if shared is None else shared

        try:
            return cls._on_disk(vault, analyse, progress, refresh, keep=_KEEPING)
        except _Unusable as exc:
            # Trigger: the file cannot be opened or written (a directory in its place, a
            # read-only vault or cache, a full disk), or it is damaged while other processes
            # still hold it. Why: the cards are the truth and the index only a cache. Outcome:
            # this call indexes the cards in memory; `trouble` says why, for a warning.
            return cls.in_memory(vault, analyse, progress, exc.trouble)

    @classmethod
    def in_memory(cls, vault: Vault, analyse, progress, trouble: Trouble) -> "Index":
        """A private index of every card, in memory, for this call only."""
        db = sqlite3.connect(":memory:", isolation_level=None)
        _ensure_schema(db)
        changes = _Refresher(vault, db, analyse, progress).run(True, 0)
        return cls(vault, db, analyse, changes, trouble=trouble)

    @classmethod
    def _on_disk(cls, vault: Vault, analyse, progress, work: Callable[["_Refresher", bool], Changes],
                 wait: float = 0.0, keep: bool = False) -> "Index":
        """The index file, opened under the shared lock and brought up to date by `work`
        (given the refresher, and whether the file is new). A damaged file is replaced once,
        when no other process holds it (waiting up to `wait` seconds for them); anything else
        that keeps the file from use raises `_Unusable`. With `keep`, the connection is this
        thread's kept one (`keep_connections`) when it has one for this file, and the one
        opened becomes it otherwise; `close` gives it back instead of closing it."""
        path = vault.cache_dir / "index.sqlite"
        slot = _Kept.take(path) if keep else None
        if slot is not None:
            try:
                changes = work(_Refresher(vault, slot.db, analyse, progress), _ensure_schema(slot.db))
                return cls(vault, slot.db, analyse, changes, lock=slot.lock, inode=slot.inode, kept=slot)
            except (sqlite3.DatabaseError, _Damaged):
                # Trigger: the kept connection failed (the file damaged, the disk full). Why: what
                # to do about an index that fails is decided for a connection opened now, below.
                # Outcome: the kept one is closed, and the file opened as any process opens it.
                slot.discard()
            except BaseException:
                slot.discard()
                raise
        try:
            vault.cache_dir.mkdir(parents=True, exist_ok=True)
            lock = _share(vault.cache_dir)
        except OSError as exc:
            raise _Unusable(_trouble_with(vault, exc)) from exc
        for attempt in (1, 2):
            db = None
            inode = _inode(path)  # before opening: the file found damaged is this one, or newer
            try:
                db = _connect(path)
                fresh = _ensure_schema(db)
                changes = work(_Refresher(vault, db, analyse, progress), fresh)
                inode = _inode(path) if inode is None else inode
                return cls(vault, db, analyse, changes, lock=lock, inode=inode,
                           kept=_Kept.keep(path, db, lock, inode) if keep else None)
            except (sqlite3.DatabaseError, _Damaged) as exc:
                if db is not None:
                    db.close()
                damaged = _damaged(exc)
                # Trigger: SQLite found the file damaged. Why: a cache is never trusted, but
                # other processes may be reading it. Outcome: it is deleted and built again
                # (second attempt) only when no other process holds it; else `_Unusable`.
                if attempt == 1 and damaged and _replace_damaged(path, lock, inode, wait):
                    continue
                os.close(lock)
                if isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError)):
                    raise  # our own bug, not the file's: keep the traceback
                raise _Unusable(_trouble_with(vault, exc, in_use=damaged and attempt == 1)) from exc
            except BaseException:
                if db is not None:
                    db.close()
                os.close(lock)
                raise
        raise AssertionError("unreachable")

    @classmethod
    def existing(cls, vault: Vault, analyse: Callable[[Card], dict[str, list[str]]]) -> "Index | None":
        """The index as it is, not refreshed, for a writer to pass its own change to (`wrote`);
        None when there is no usable index at once (the next search builds or mends it)."""
        path = vault.cache_dir / "index.sqlite"
        if _KEEPING:
            # Trigger: a serving process (`keep_connections`), where every create and PATCH
            # opens the index here (and the upkeep thread each look). Why: a connection each
            # cost its open and SQLite's parse of the schema (~0.3-0.5 ms of CPU at 10,000
            # cards), and when it was the process's last one its close checkpointed and
            # deleted the WAL, which the next open made again. Outcome: the thread's kept
            # connection, checked as `Index.open` checks it (`_Kept.take`), never waiting
            # for the lock; a thread without one keeps the one opened below.
            try:
                slot = _Kept.take(path, wait=False)
            except BlockingIOError:
                return None   # a damaged file is being replaced: no usable index at once
            if slot is not None:
                try:
                    if _version(slot.db) == _VERSION:
                        # A writer's transaction (a PATCH's pass-on dirties ~160 pages) spilled
                        # the kept connection's small page cache (KEPT_CACHE_KB) into the WAL
                        # before its commit, writing pages twice (~160 more `pwrite`s a PATCH):
                        # for this use, the cache a connection opened here has (SQLite's default),
                        # put back by `give_back`.
                        slot.db.execute(f"PRAGMA cache_size = {WRITER_CACHE_SIZE}")
                        return cls(vault, slot.db, analyse, Changes(), lock=slot.lock, inode=slot.inode, kept=slot)
                except sqlite3.Error:
                    pass
                slot.discard()   # another version's file, or it failed: opened afresh below
        if not path.is_file():
            return None
        lock = db = None
        try:
            lock = _share(vault.cache_dir, wait=False)
            inode = _inode(path)   # before opening, as `_on_disk` (a kept one is checked against it)
            db = _connect(path, wal_wait=0.25)
            if _version(db) == _VERSION:
                return cls(vault, db, analyse, Changes(), lock=lock, inode=inode,
                           kept=_Kept.keep(path, db, lock, inode) if _KEEPING else None)
        except (OSError, sqlite3.Error):
            pass  # unusable now: this optional step is skipped
        if db is not None:
            db.close()
        if lock is not None:
            os.close(lock)
        return None

    def refreshed(self) -> "Index":
        """This open index brought up to date as `Index.open(sweep=None)` brings the file it opens:
        its folders checked and what changed in them indexed (`changes`). For a writer that opened
        it (`existing`) before the write lock and goes on with it under the lock: one connection,
        not two (a new one reads the schema, ~0.3-0.5 ms of CPU at 10,000 cards)."""
        caught_up(self.vault, self.db, self.analyse)
        self.changes = _Refresher(self.vault, self.db, self.analyse, None).run(False, None)
        return self

    def reopen(self, exc: BaseException, sweep: int | None = DEFAULT_SWEEP) -> "Index":
        """Close this index after `exc` was raised while using it, and return one to go on
        with: the file built again when it was damaged and no other process holds it, else a
        private index in memory. `exc` is raised again when it is a bug (an integrity or
        programming error) or this index is already the one in memory."""
        if self.kept is not None:
            self.kept.forget()   # closed here, not given back
            self.kept = None
        self.db.close()
        lock, self.lock = self.lock, None
        if lock is None or not isinstance(exc, sqlite3.DatabaseError) \
                or isinstance(exc, (sqlite3.IntegrityError, sqlite3.ProgrammingError)):
            if lock is not None:
                os.close(lock)
            raise exc
        try:
            replaced = _damaged(exc) and _replace_damaged(self.vault.cache_dir / "index.sqlite", lock, self.inode, 0.0)
        finally:
            os.close(lock)
        if replaced:
            return Index.open(self.vault, self.analyse, sweep=sweep)
        return Index.in_memory(self.vault, self.analyse, None, _trouble_with(self.vault, exc, in_use=_damaged(exc)))

    def close(self) -> None:
        """Close the connection, then let go of the shared lock; closing twice is harmless. A
        kept connection (`keep_connections`) is given back to its thread instead, lock released."""
        self.closed = True
        if self.kept is not None:
            kept, self.kept, self.lock, self._given_back = self.kept, None, None, True
            kept.give_back()
            return
        if self._given_back:
            return   # the connection is the thread's again: closing twice is harmless
        self.db.close()
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None

    def reading(self):
        """A context in which every read sees one snapshot of the index (a read transaction)."""
        return _Snapshot(self.db)

    # ------------------------------------------------------------------ reading

    def stats(self) -> Stats:
        info = dict(self.db.execute("SELECT key, value FROM info WHERE key IN ('doc_count', 'field_totals')"))
        count = int(info.get("doc_count", 0))
        totals = json.loads(info.get("field_totals", "[0,0,0,0,0]"))
        return Stats(count, tuple(t / count if count else 0.0 for t in totals))

    def postings(self, term: str) -> Postings:
        """Every document containing `term`, with its code (see `decode_code`): its rows in
        `postings`, less the cards `stale` says they hold out of date, with those cards'
        current postings from `fresh` (`build._DeltaEdits`), read from one snapshot."""
        docids, codes = array("I"), array("Q")
        outer = self.db.in_transaction   # a transaction of the caller's, which may yet roll back
        with _Snapshot(self.db):
            for ids, packed in self.db.execute("SELECT docids, codes FROM postings WHERE term = ? ORDER BY chunk",
                                               (term,)):
                docids.frombytes(ids)
                codes.frombytes(packed)
            stale = self.db.execute("SELECT docid FROM stale").fetchall() if outer else self._waiting()
            fresh = self.db.execute("SELECT docid, code FROM fresh WHERE term = ? ORDER BY docid",
                                    (term,)).fetchall() if stale else []
        if stale:
            docids, codes, fresh = _renewed(docids, codes, stale, fresh)
        if fresh:
            docids, codes = _with(docids, codes, fresh)
        return Postings(docids, codes)

    def postings_of(self, terms: Iterable[str]) -> dict[str, Postings]:
        """`postings` of each of `terms`, all read from one snapshot with one look at `stale`
        (a create's candidate search asks for a title's ~15 terms at once: five statements
        each, one at a time). The same postings `postings` gives for each term (`merged`),
        with the waiting cards below a term's last folded docid left apart (`Postings.more`)."""
        wanted = list(dict.fromkeys(terms))
        found = {term: (array("I"), array("Q")) for term in wanted}
        distinct: dict[str, frozenset[int]] = {}   # a term's codes as a set, when its rows were kept
        shared: set[str] = set()   # the terms whose arrays in `found` are a kept term's, never to be changed
        fresh: dict[str, tuple[list[int], list[int]]] = {}
        fresh_codes: dict[str, frozenset[int]] = {}   # the set of a term's codes in `fresh`, when kept
        kept = _KEPT_POSTINGS if _KEEPING and self.trouble is None and self.inode is not None else None
        outer = self.db.in_transaction   # a transaction of the caller's, which may yet roll back
        with _Snapshot(self.db):
            clock = kept.clock(self) if kept is not None else None
            if clock is not None:
                # Trigger: a long-lived process (`keep_connections`: `serve`'s workers). Why: a
                # term's rows, read and decoded for every create's candidate search, change only
                # when their chunk is folded or the index rebuilt. Outcome: the rows kept are used
                # while their chunk's and the file's counters are those they were read at.
                for term, entry in kept.rows(self.db, wanted, clock, keep=not outer).items():
                    found[term] = entry.docids, entry.codes
                    distinct[term] = entry.distinct
                    shared.add(term)
            for start in range(0, len(wanted), 500) if clock is None else ():
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                for term, ids, packed in self.db.execute(
                        f"SELECT term, docids, codes FROM postings WHERE term IN ({marks}) ORDER BY term, chunk", chunk):
                    found[term][0].frombytes(ids)
                    found[term][1].frombytes(packed)
            waiting = self.db.execute("SELECT EXISTS (SELECT 1 FROM stale)").fetchone()[0]
            # Only the waiting cards that `postings` still holds rows of (`stale.terms` names
            # them; a card created since the fold has none: '') can be among a term's rows.
            stale = [docid for (docid,) in self.db.execute("SELECT docid FROM stale WHERE terms != '' ORDER BY docid")
                     ] if waiting else []
            for start in range(0, len(wanted), 500) if waiting else ():
                chunk = wanted[start:start + 500]
                marks = ",".join("?" * len(chunk))
                # A term's rows of `fresh` as two lists of numbers in one text each: a server's
                # waiting cards are ~770 rows a create's query, which as Python rows cost ~0.6 ms
                # (read as JSON arrays: the same integers, ~40% less CPU than int() of each).
                for term, ids, codes in self.db.execute(
                        f"SELECT term, group_concat(docid), group_concat(code) FROM fresh WHERE term IN ({marks}) "
                        "GROUP BY term", chunk):
                    if _KEEPING:
                        ids_read, codes_read, fresh_codes[term] = _waiting_postings(term, ids, codes)
                        fresh[term] = ids_read, codes_read
                    else:
                        fresh[term] = _ascending(json.loads(f"[{ids}]"), json.loads(f"[{codes}]"))
        out: dict[str, Postings] = {}
        more: dict[str, tuple[list[int], list[int]]] = {}
        for term in wanted:
            docids, codes = found[term]
            if stale and docids:
                # Only the stale docids within the term's range can be among its rows (most are
                # cards created since the fold, past every row).
                within = stale[bisect_left(stale, docids[0]):bisect_right(stale, docids[-1])]
                if within:
                    before = len(docids)
                    docids, codes = _without(docids, codes, within)
                    if len(docids) != before:
                        distinct.pop(term, None)   # codes may be gone with the cards left out
            if term in fresh:
                added_ids, added_codes = fresh[term]
                if term in distinct:
                    distinct[term] = distinct[term].union(fresh_codes.get(term, added_codes))
                if term in shared and docids is found[term][0]:
                    # Trigger: the term's arrays are a kept term's (unchanged by `_without`). Why:
                    # they are shared by every query, and copying them to append the waiting cards
                    # cost more than the waiting cards' own merge. Outcome: all of the waiting
                    # cards' postings left apart, in `more` (ascending, none of them in `docids`).
                    more[term] = (added_ids, added_codes)
                elif not docids or added_ids[0] > docids[-1]:   # the usual case: cards created since the fold
                    docids.extend(added_ids)
                    codes.extend(added_codes)
                else:
                    # Trigger: waiting cards below the term's last folded docid (a server's partial
                    # folds leave them: ~130 of `bench`'s ~750 postings in its bench). Why: merged
                    # in, one insertion each (`_with`), they were ~0.25 ms of a create's search.
                    # Outcome: left apart, ascending, in `more`; those past the end appended.
                    head = bisect_left(added_ids, docids[-1] + 1)
                    docids.extend(added_ids[head:])
                    codes.extend(added_codes[head:])
                    more[term] = (added_ids[:head], added_codes[:head])
            out[term] = Postings(docids, codes, distinct.get(term), more.get(term))
        return out

    def _waiting(self) -> list[tuple[int]]:
        """The docids in `stale`, in the caller's read snapshot (begun by `postings`): read again
        only when something changed since the last read, by this connection (`total_changes`:
        every change of `stale` moves it, a fold's truncating DELETE too, through the count of
        `build.postings_moved` in the same transaction) or by another (`PRAGMA data_version`
        moves when another connection commits). A search reads them for each of its terms; with
        the cards a server's upkeep lets wait (up to FOLD_BACKLOG), reading them each time cost
        ~0.1 ms a term."""
        version = (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)
        if self._stale is None or self._stale[:2] != version:
            self._stale = (*version, self.db.execute("SELECT docid FROM stale").fetchall())
        return self._stale[2]

    def docs(self, docids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Stored metadata, path, size and mtime of these documents."""
        ids = list(docids)
        out: dict[int, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for docid, folder, name, size, mtime, meta in self.db.execute(
                    "SELECT docid, folder, name, size, mtime_ns, meta FROM docs JOIN doc_data USING (docid) "
                    f"WHERE docid IN ({marks})", chunk):
                out[docid] = {"path": f"{folder}/{name}", "size": size, "mtime_ns": mtime, **json.loads(meta)}
        return out

    def paths(self, docids: Iterable[int]) -> dict[int, str]:
        """The vault-relative paths of these documents: what orders ties, read without the
        metadata (a tie of thousands of documents then costs one light read)."""
        ids = list(docids)
        out: dict[int, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for docid, folder, name in self.db.execute(
                    f"SELECT docid, folder, name FROM docs WHERE docid IN ({','.join('?' * len(chunk))})", chunk):
                out[docid] = f"{folder}/{name}"
        return out

    def scoped_paths(self, docids: Iterable[int]) -> dict[int, tuple[str, str, str]]:
        """(path, scope, agent) of these cards: what a create's candidate search needs of each
        (`keyword._first_shown`), read from the narrow `docs` and `facets` rows (`scope` and
        `agent` as `card_meta` has them) without decoding each card's stored JSON."""
        ids = list(docids)
        out: dict[int, tuple[str, str, str]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for docid, folder, name, scope, agent in self.db.execute(
                    "SELECT docid, folder, name, scope, agent FROM docs JOIN facets USING (docid) "
                    f"WHERE docid IN ({','.join('?' * len(chunk))})", chunk):
                out[docid] = (f"{folder}/{name}", scope, agent)
        return out

    def agent_scoped(self, docids: Iterable[int]) -> list[int]:
        """Those of these documents that may be `scope: agent` cards, found without decoding
        each row: the stored JSON holds `"scope": "agent"` (LIKE ignores ASCII case, as the
        scope check does). A superset: the caller checks the rows it gets back."""
        ids = list(docids)
        out: list[int] = []
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            out += [docid for (docid,) in self.db.execute(
                f"SELECT docid FROM doc_data WHERE docid IN ({','.join('?' * len(chunk))}) "
                """AND meta LIKE '%"scope": "agent"%'""", chunk)]
        return out

    def problems(self) -> list[Problem]:
        return [Problem(f"{folder}/{name}", line, problem) for folder, name, line, problem in self.db.execute(
            "SELECT folder, name, line, problem FROM docs WHERE problem IS NOT NULL ORDER BY folder, name")]

    # ------------------------------------------------------------------ relations

    def cards_by_id(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The stored metadata (as `docs`) of the cards with these ids, by id."""
        wanted = [i for i in dict.fromkeys(ids) if i]
        found: dict[str, int] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            found.update(self.db.execute(f"SELECT id, docid FROM card_keys WHERE id IN ({','.join('?' * len(chunk))})",
                                         chunk).fetchall())
        rows = self.docs(found.values())
        return {card_id: {**rows[docid], "docid": docid} for card_id, docid in found.items() if docid in rows}

    def paths_with_id(self, card_id: str) -> list[str]:
        """The vault-relative paths of the indexed cards whose `id` is exactly `card_id`."""
        return [f"{folder}/{name}" for folder, name in self.db.execute(
            "SELECT folder, name FROM card_keys JOIN docs USING (docid) WHERE card_keys.id = ?", (card_id,))]

    def cards_by_name(self, names: Iterable[str]) -> dict[str, dict[str, Any]]:
        """The cards these case-folded wikilink names resolve to, by name: a file stem first,
        then a title (Obsidian resolves by file name; titles help hand-written links)."""
        out: dict[str, dict[str, Any]] = {}
        for name in dict.fromkeys(n for n in names if n):
            row = self.db.execute("SELECT docid FROM card_keys WHERE stem = ? ORDER BY docid LIMIT 1",
                                  (name,)).fetchone() or self.db.execute(
                "SELECT docid FROM card_keys WHERE title = ? ORDER BY docid LIMIT 1", (name,)).fetchone()
            if row:
                meta = self.docs([row[0]]).get(row[0])
                if meta:
                    out[name] = {**meta, "docid": row[0]}
        return out

    def names_like(self, folder: str, filename: str) -> list[str]:
        """The names of the files indexed in `folder` (its own, not its subfolders') that may
        differ from `filename`, or from a numbered form of it (`X_2.md`, cut to fit), only in case
        or Unicode normalisation: those that start in any case with the ASCII start of the part
        of its stem all those forms hold (`storage.numbered_forms_start`: the whole stem unless it
        is near the name limit), or with such a start spelt with a character past ASCII whose key
        is ASCII (`Straße` for `Strasse`, `ﬁ` for `fi`: `storage.FOLDS_TO_ASCII`). For
        `storage.unique_path(known=...)`."""
        stem = numbered_forms_start(filename)
        prefix = stem[: next((at for at, char in enumerate(stem) if not char.isascii()), len(stem))]
        if not prefix:
            return [name for (name,) in self.db.execute("SELECT name FROM docs WHERE folder = ?", (folder,))]
        upper, lower = prefix.upper(), prefix.lower()   # ASCII: one character for one
        # Trigger: a place of the prefix where a character past ASCII may stand for its letters
        # (`ß` where `ss` is). Why: APFS and Linux's case-folding directories fold case fully, as
        # `name_key` does: `Straße` is `Strasse`'s file there, and no spelling of the ASCII prefix
        # starts it (a folder listing made `_2`, the index a second file; decision 0028).
        # Outcome: such a character is a spelling there too, and a name holding it is offered
        # with every name sharing its start that far (about one seek more a call; decision 0028).
        folds: dict[int, tuple[str, ...]] = {}
        for letter, pairs in FOLDS_TO_ASCII.items():   # a search for each letter: no loop over the prefix
            at = lower.find(letter)
            while at >= 0:
                chars = tuple(fold for fold, key in pairs if lower.startswith(key, at) or key.startswith(lower[at:]))
                if chars:
                    folds[at] = chars
                at = lower.find(letter, at + 1)
        # Trigger: a create looking for the names its new file could collide with, under the
        # write lock. Why: SQLite's LIKE ignores ASCII case, so it cannot use the (folder, name)
        # index: it read every name of the folder (~1-1.7 ms at 10,000 cards), and then every
        # name of the range of the prefix's first 12 characters' spellings (~0.8 ms when a
        # server's ~1,200 creates share `Insight_Bench_no`). Outcome: the same names (those
        # LIKE 'prefix%' takes, and those spelling it with a folding character), found by seeks
        # in the (folder, name) index: the least name from a bound on; one that starts with a
        # spelling of the prefix is taken, one that does not moves the bound past every name
        # sharing its start up to where it differs.
        # A few statements a call, in one read snapshot (`_Snapshot`): each a read transaction
        # of its own otherwise, with SQLite's locks on the WAL index, under the write lock.
        seek = "SELECT name FROM docs WHERE folder = ? AND name >= ? AND name < ? ORDER BY name LIMIT 1"
        # Past every spelling: the greatest up to its first place that may hold a folding
        # character (a name holding one there goes on with anything), plus one.
        first = min(folds, default=len(lower) - 1)
        end = _after_prefix(lower[:first] + (folds[first][-1] if folds else lower[first]))
        found: list[str] = []
        with _Snapshot(self.db):
            bound = upper                # ... and at least the upper-case one
            while True:
                row = self.db.execute(seek, (folder, bound, end)).fetchone()
                if row is None:
                    return found
                name = row[0]
                differs = next((at for at, (char, up, low) in enumerate(zip(name, upper, lower))
                                if char != up and char != low), min(len(name), len(prefix)))
                if differs == len(prefix) or differs < len(name) and name[differs] in folds.get(differs, ()):
                    # A spelling some name starts with (whole, or up to a folding character):
                    # every name of its range, in one read.
                    spelling = name[:differs + (differs < len(prefix))]
                    found.extend(name for (name,) in self.db.execute(
                        "SELECT name FROM docs WHERE folder = ? AND name >= ? AND name < ?",
                        (folder, spelling, _after_prefix(spelling))))
                    differs = len(spelling) - 1   # the next spelling: past this one's range
                    name = _after_prefix(spelling)
                bound = _next_spelling(name, differs, upper, lower, folds)
                if bound is None:
                    return found

    def cards_named(self, name: str) -> dict[int, dict[str, Any]]:
        """The stored metadata of the cards whose title or one of whose aliases is `name` (a
        case-folded wikilink name, `wikilinks.link_name`), by docid: what `get Wolverine` finds
        when no file, stem or id is Wolverine. Titles are looked up in `card_keys`; aliases are
        read from the stored metadata of the cards that have any (a reference that names no
        card pays this, no other)."""
        from ..vault.wikilinks import link_name

        self.db.create_function("link_name", 1, link_name, deterministic=True)
        docids = {docid for (docid,) in self.db.execute("SELECT docid FROM card_keys WHERE title = ?", (name,))}
        docids.update(docid for (docid,) in self.db.execute(
            "SELECT docid FROM doc_data, json_each(doc_data.meta, '$.aliases') "
            "WHERE instr(doc_data.meta, '\"aliases\": []') = 0 AND link_name(json_each.value) = ?", (name,)))
        return self.docs(docids)

    def incoming(self, card_id: str | None, names: Iterable[str]) -> list[dict[str, Any]]:
        """Every relation pointing at a card, by its id or by one of its wikilink names, with
        the source card's stored metadata under `source`."""
        names = [n for n in dict.fromkeys(names) if n]
        clauses, params = [], []
        if card_id:
            clauses.append("target_id = ?")
            params.append(card_id)
        if names:
            clauses.append(f"target_name IN ({','.join('?' * len(names))})")
            params += names
        if not clauses:
            return []
        rows = self.db.execute("SELECT source, target_id, target_name, rel, weight, reason, version, created, updated "
                               f"FROM links WHERE {' OR '.join(clauses)}", params).fetchall()
        return self._with_sources(rows)

    def superseded_paths(self, card_id: str) -> list[str]:
        """The paths of the cards held as superseded (or archived) whose stored metadata names
        `card_id`: the cards its `superseded_by` may name, for the caller to read and check."""
        return [path for (path,) in self.db.execute(
            "SELECT path FROM facets JOIN doc_data USING (docid) WHERE status IN ('superseded', 'archived') "
            "AND instr(meta, ?) > 0 ORDER BY path", (card_id,))]

    def outgoing(self, docid: int) -> list[dict[str, Any]]:
        """The relations one indexed card holds (as `incoming` rows)."""
        return self._with_sources(self.db.execute(
            "SELECT source, target_id, target_name, rel, weight, reason, version, created, updated FROM links "
            "WHERE source = ? ORDER BY rowid", (docid,)).fetchall())

    def all_links(self) -> list[dict[str, Any]]:
        """Every relation in the index (for `graph`), with its source's metadata."""
        return self._with_sources(self.db.execute(
            "SELECT source, target_id, target_name, rel, weight, reason, version, created, updated FROM links "
            "ORDER BY source, rowid").fetchall())

    def all_cards(self) -> list[dict[str, Any]]:
        """The stored metadata and stamps of every indexed card (not the unparseable files), by
        docid order."""
        loads = json.loads
        return [{"docid": docid, "path": f"{folder}/{name}", "size": size, "mtime_ns": mtime, "inode": inode,
                 **loads(meta)} for docid, folder, name, size, mtime, inode, meta in
                self.db.execute("SELECT docid, folder, name, size, mtime_ns, inode, meta FROM docs "
                                "JOIN doc_data USING (docid) ORDER BY docid")]

    def facet_counts(self) -> list[tuple[str, str, str, str, str, str, int]]:
        """How many cards have each (type, domain, project, scope, agent, status), as
        `card_meta` holds them: one pass over a narrow table, for `stats`."""
        return self.db.execute("SELECT type, domain, project, scope, agent, status, count(*) FROM facets "
                               "GROUP BY type, domain, project, scope, agent, status").fetchall()

    def card_clocks(self) -> list[tuple]:
        """(docid, path, id, type, domain, confidence, stated, ctime_s) of every card (`facets`):
        what `audit` needs to count the cards and to pick the few whose confidence or decay
        clock needs a closer look, from one narrow table, with no JSON to decode."""
        return self.db.execute("SELECT docid, path, card_id, type, domain, confidence, stated, ctime_s "
                               "FROM facets").fetchall()

    def listed_rows(self) -> list[tuple]:
        """(path, docid, id, title, type, domain, project, scope, agent, status, confidence, stated,
        ctime_s, since, valid_to) of every card (`facets`), ordered by title case-folded, then by
        path: what a `list` line shows and filters on, and what says whether its confidence may
        have decayed (as `card_clocks`). One scan of the covering index `facets_listing`, which
        holds them in that order: no JSON to decode, no sort (fetching the table's rows and
        sorting them twice in Python cost ~40% more). Empty project, scope, agent and valid_to
        come as None: most cards have none, and None costs no object per row."""
        return self.db.execute("SELECT path, docid, card_id, title, type, domain, NULLIF(project, ''), "
                               "NULLIF(scope, ''), NULLIF(agent, ''), status, confidence, stated, ctime_s, since, "
                               "NULLIF(valid_to, '') FROM facets ORDER BY sort_key, path").fetchall()

    def stored_cards(self, docids: list[int]) -> list[tuple[str, str, int, int, int, str]]:
        """(folder, name, size, mtime_ns, inode, meta JSON) of the cards with these docids."""
        rows = []
        for start in range(0, len(docids), 500):
            chunk = docids[start:start + 500]
            rows += self.db.execute("SELECT folder, name, size, mtime_ns, inode, meta FROM docs JOIN doc_data "
                                    f"USING (docid) WHERE docid IN ({','.join('?' * len(chunk))})", chunk)
        return rows

    def scoped_cards(self) -> list[tuple[int, str, str]]:
        """(docid, scope, agent) of every card with a `scope`: the only ones that can be private."""
        return self.db.execute("SELECT docid, scope, agent FROM facets WHERE scope != ''").fetchall()

    def scoped_count(self) -> int:
        """How many cards have a `scope` (`scoped_cards`), counted on the partial index."""
        return self.db.execute("SELECT count(*) FROM facets WHERE scope != ''").fetchone()[0]

    def change_stamp(self) -> str | None:
        """A stamp of what the index holds of the cards: moved by every commit that indexes,
        re-indexes, restamps or removes a card (SQLite triggers on `docs`, `store._TRIGGERS`),
        by any process, from a random start in each file made; None for a private index in
        memory. Two equal stamps of the same file: no card's rows changed in between."""
        if self.trouble is not None:
            return None
        row = self.db.execute("SELECT value FROM info WHERE key = 'changes'").fetchone()
        return f"{self.inode}:{row[0]}" if row else None

    def tag_counts(self, leave_out: Iterable[int] = (), tags: Iterable[str] | None = None) -> dict[str, int]:
        """How many cards have each tag (each of `tags` when given), leaving out the cards
        `leave_out` (docids)."""
        # The counts `tags` holds (kept by SQLite's triggers on `card_tags`: store._TRIGGERS),
        # not a count of `card_tags`' rows (~4 ms at 10,000 cards for every tag).
        if tags is None:
            counts = dict(self.db.execute("SELECT tag, cards FROM tags ORDER BY tag"))
        else:
            counts, wanted = {}, list(dict.fromkeys(tags))
            for start in range(0, len(wanted), 500):
                chunk = wanted[start:start + 500]
                counts.update(self.db.execute("SELECT tag, cards FROM tags "
                                              f"WHERE tag IN ({','.join('?' * len(chunk))}) ORDER BY tag", chunk))
        ids = list(leave_out)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for (tag,) in self.db.execute(f"SELECT tag FROM card_tags WHERE docid IN ({','.join('?' * len(chunk))})",
                                          chunk):
                if tag in counts:
                    counts[tag] -= 1
        return {tag: n for tag, n in counts.items() if n}

    def tags_filed(self, terms: Iterable[str]) -> list[tuple[str, list[str]]]:
        """The tags some card has whose first index term is one of `terms`, each with all its
        terms (`store.tag_terms`): the only tags a text with these terms can name whole. The
        terms are the ones the index's writers stored (`store.analyse_new_tags`); a tag they left
        without is analysed here, so the answer never depends on a writer having done it."""
        from .store import tag_terms

        wanted = list(dict.fromkeys(terms))
        rows: list[tuple[str, list[str]]] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            rows.extend((tag, json.loads(stored)) for tag, stored in self.db.execute(
                f"SELECT tag, terms FROM tags WHERE first_term IN ({','.join('?' * len(chunk))})", chunk))
        known = set(wanted)
        for (tag,) in self.db.execute("SELECT tag FROM tags WHERE first_term IS NULL").fetchall():
            analysed = tag_terms(tag)
            if analysed and analysed[0] in known:
                rows.append((tag, analysed))
        return rows

    def cards_in_path_order(self, after: str | None = None, **equal: str) -> Iterator[dict[str, Any]]:
        """The stored metadata of the indexed cards after path `after`, ordered by folder, then
        file name (the `docs` key, so rows are read in order, never sorted), and decoded only as
        far as they are read. `equal` (`type="fact"`, `domain="infra"`) keeps only cards whose
        stored field is exactly that, in SQL: file names start with the type, so a filter by
        type would otherwise decode every card of the types before it."""
        folder, _, name = (after or "").rpartition("/")
        conditions = "".join(f" AND json_extract(meta, '$.{key}') = ?" for key in equal)
        for folder, name, meta in self.db.execute(
                "SELECT folder, name, meta FROM docs JOIN doc_data USING (docid) "
                f"WHERE (folder, name) > (?, ?){conditions} ORDER BY folder, name",
                (folder, name, *equal.values())):
            yield {"path": f"{folder}/{name}", **json.loads(meta)}

    def _with_sources(self, rows: list[tuple]) -> list[dict[str, Any]]:
        sources = self.docs({row[0] for row in rows})
        keys = ("source_docid", "to", "name", "rel", "weight", "reason", "version", "created", "updated")
        return [{**dict(zip(keys, row)), "source": sources[row[0]]} for row in rows if row[0] in sources]

    # ------------------------------------------------------------------ writing

    def update(self, rels: Iterable[str]) -> None:
        """Re-index these vault-relative card paths now (a file that is gone is dropped)."""
        _Refresher(self.vault, self.db, self.analyse, None).reindex_paths(list(rels))

    def stamps(self, rel: str) -> Stamps:
        """`file_stamps` of this index's vault."""
        return file_stamps(self.vault, rel)

    def wrote(self, rel: str, before: Stamps, after: Stamps, texts: tuple[str | bytes | None, str | None] = (None, None)
              ) -> None:
        """Pass on a card file this process has just written (write-through), so the next search
        does not list its folder again for a change the index already holds. `before` and
        `after` are `stamps(rel)` taken just before and just after the write; `texts` the file's
        text before and after it, when known. See `wrote_files`."""
        self.wrote_files({rel: (before, after)}, {rel: texts})

    def _restamped(self, path: Path, old: str | bytes, new: str, made: Card | None = None,
                   was: Card | None = None) -> tuple[Card | None, bool]:
        """The card `new` makes (None when it makes none), and whether its terms are those of
        `old` (see `wrote_files`). For `card_fields`, the texts it analyses are compared (no
        tokenising); for any other analyser, its results. `made` and `was`: the writer's cards
        of `new` and of `old` at `path`, taken when they are (their text and path; `made` is
        copied, so the writer's card is left as it was)."""
        try:
            if made is not None and made.path == path and made.text == new:
                after = Card(made.vault, made.path, made.text, made.meta, made.body)
            else:
                after = card_from_text(self.vault, path, new)
            if was is not None and was.path == path and was.text == old:
                before = was
            else:
                before = card_from_text(self.vault, path, old.decode("utf-8") if isinstance(old, bytes) else old)
        except (BrainError, UnicodeDecodeError):
            return None, False  # re-indexed, which records whatever the file is
        if self.analyse is card_fields:
            same = field_texts(before) == field_texts(after)
        else:
            same = self.analyse(before) == self.analyse(after)
        return after, same

    def wrote_files(self, stamps: dict[str, tuple[Stamps, Stamps]],
                    texts: dict[str, tuple[str | bytes | None, str | None]] | None = None,
                    fold: bool = True, made: dict[str, Card] | None = None,
                    terms: dict[str, Any] | None = None, was: dict[str, Card] | None = None) -> int:
        """`wrote` for the card files one operation wrote or removed (an update that renames,
        a delete and its cascade, a link): `stamps` maps each vault-relative path in Playbooks/
        to its (before, after) `stamps`, `texts` to its (before, after) texts when known. A
        removed file is dropped from the index; a written one is re-indexed, or only restamped
        (`_Refresher.restamp`: its postings stand) when the index held it as it was before the
        write, it still holds the text written, and that text gives the same terms as the text
        before (`record`, `link`, the cards a delete's cascade rewrites: only fields the
        postings do not hold changed). Its size, mtime and inode are then taken before the
        file is read back, so a change made meanwhile shows at the next look.

        When every `before` stamp of a folder equals the stamp the index holds, the folder had
        not changed since the index last looked, and its stamp moves to the mtime after the
        writes (when every `after` agrees). A change another program made between the stamps
        would then go unseen by the mtime check; the listing of every folder when the sweep
        wraps bounds that (module docstring). The stored listing is left as it was: a later
        relist sees these files as changed and re-reads them once more.

        This step is optional (the next search would find the change anyway), so it waits for
        the index at most briefly and gives up quietly rather than hold up or fail the write.

        `fold=False`: no card waiting in `stale` is folded here; returns how many wait there
        once it re-indexed some (0 when it re-indexed none or gave up), for the caller to have
        them folded later, outside its own lock (`fold_excess`, or a process's `FoldUpkeep`).

        `made`: the cards the operation made from the texts it wrote (a create's new card, an
        update's card, each parsed from its text as written), by path: a file that holds that
        text is indexed from that card, not read and parsed again; `was`: the cards it parsed
        from the texts before (an update's card as read), by path, for the comparison of terms.

        `terms`: for some of the written cards, their terms analysed before the write lock
        (`build.analysed`, by path), taken when the card indexed has the texts analysed
        (`build.Analysed.of`): the card is then not tokenised under the lock.
        """
        if not write_begun(self.db):
            return 0   # busy past the short wait: the next search finds the change by the folders' mtimes
        return self.passed_on_together([(stamps, texts, made, was, terms)], fold=fold)

    def passed_on_together(self, pass_ons: list[tuple], fold: bool = False) -> int:
        """Each of `pass_ons` (`wrote_files`' stamps, texts, made, was, terms) made in the write
        transaction the caller began (`write_begun`), which is then committed; how many cards wait
        in `stale` then (0 when none was re-indexed or `fold` folded them, and on giving up)."""
        try:
            reindexed = False
            for stamps, texts, made, was, terms in pass_ons:
                reindexed = self.passed_on(stamps, texts, fold=fold, made=made, terms=terms, was=was) or reindexed
            waiting = self.db.execute("SELECT count(*) FROM stale").fetchone()[0] if reindexed and not fold else 0
            self.db.execute("COMMIT")
            return waiting
        except BaseException as exc:
            _rollback(self.db)
            # Trigger: the index is damaged, the disk full, a card unreadable. Why: the cards are
            # already written, and the index is a cache. Outcome: nothing is stored; the next
            # search sees the folders' new mtimes and indexes the cards then.
            if not isinstance(exc, (sqlite3.Error, OSError)):
                raise
            return 0

    def passed_on(self, stamps: dict[str, tuple[Stamps, Stamps]],
                  texts: dict[str, tuple[str | bytes | None, str | None]] | None = None,
                  fold: bool = True, made: dict[str, Card] | None = None,
                  terms: dict[str, Any] | None = None, was: dict[str, Card] | None = None) -> bool:
        """`wrote_files`' work, inside a write transaction the caller holds, commits or rolls
        back (errors are raised to it); True when some card was re-indexed, not only restamped
        (cards may then wait in `stale` for a fold)."""
        texts, made, terms, was = texts or {}, made or {}, terms or {}, was or {}
        root = str(self.vault.root)
        reindex, restamp, folders, read = [], [], {}, {}
        for rel, (before, after) in stamps.items():
            folder, _, name = rel.rpartition("/")
            folders.setdefault(folder, []).append((before.folder, after.folder))
            path = os.path.join(root, rel)
            old, new = texts.get(rel, (None, None))
            held = self.db.execute("SELECT size, mtime_ns, inode FROM docs WHERE folder = ? AND name = ? "
                                   "AND problem IS NULL", (folder, name)).fetchone()
            # One `stat` for the stamp and the ctime of a card indexed from the writer's text
            # (it was a second `stat` after the read-back, under the write lock).
            st = _stat_or_none(path)
            now = (st.st_size, st.st_mtime_ns, st.st_ino) if st is not None else None
            card, same = None, False
            if old is not None and new is not None and held is not None and before.file == held and now \
                    and _reads(path, new):
                card, same = self._restamped(Path(path), old, new, made.get(rel), was.get(rel))
                if card is not None:
                    card.ctime_ns = st.st_ctime_ns
            elif old is None and new is not None and now and rel in made and made[rel].text == new \
                    and _reads(path, new):
                # Trigger: a new file (a create) that holds the text written, stamped `now`
                # before it was read back. Why: the writer parsed that very text into the
                # card it made; reading and parsing it again held the write lock longer.
                # Outcome: it is indexed from that card, with the file's own ctime, as
                # `load_card` would have given it (the caller's card is left as it was).
                given = made[rel]
                card = Card(given.vault, given.path, given.text, given.meta, given.body,
                            st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
            if not same:
                reindex.append(rel)
                if card is not None:
                    # Trigger: the file holds the text written, stamped `now` before it was
                    # read back, and its terms changed (a PATCH). Why: reading and parsing it
                    # again under the write lock cost every writer ~0.5-1 ms. Outcome: it is
                    # indexed from the card just parsed from that text, with that stamp.
                    read[rel] = (now, card, terms.get(rel))
            else:
                restamp.append((rel, now, card))
        refresher = _Refresher(self.vault, self.db, self.analyse, None)
        for rel, now, card in restamp:
            refresher.restamp(rel, now, card)
        if reindex:
            refresher.reindex_paths(reindex, in_transaction=True, fold=fold, read=read)
        for folder, pairs in folders.items():
            row = self.db.execute("SELECT mtime_ns FROM folders WHERE path = ?", (folder,)).fetchone()
            befores, afters = {b for b, _ in pairs}, {a for _, a in pairs}
            if row and befores == {row[0]} and len(afters) == 1 and None not in afters:
                self.db.execute("UPDATE folders SET mtime_ns = ? WHERE path = ?", (afters.pop(), folder))
        return bool(reindex)

    def fold_excess(self, most: int | None = None) -> None:
        """Fold the cards past DELTA_CARDS in `stale` into `postings`, the fullest chunk's first (what
        `wrote_files(fold=False)` left), at most `most` of them, in a transaction of its own.
        Readers see the same postings before and after. Optional like `wrote_files`: a busy or
        damaged index is left as it is, and the next write folds the excess."""
        from . import build

        self.fold_waiting(most, keep=build.DELTA_CARDS)

    def fold_waiting(self, most: int | None, keep: int = 0, planned: bool = False,
                     crash_test: bool = False) -> int | None:
        """Fold the cards waiting in `stale` past the first `keep`, at most `most` of them (None:
        all), the fullest chunk's first (`build._fold_group`), in a transaction of its own;
        returns how many then wait, or None when nothing was done: the index was busy past a
        short wait or could not be used, or (`planned`) it changed under the plan. `planned`:
        the fold is worked out from a read snapshot before the write lock is taken
        (`build.plan_fold`), and written under it only if the rows it read are still the
        index's (`_FoldPlan.still_holds`): the lock is held for the writes, not the reads and
        merges (`FoldUpkeep`, in a process whose request threads would otherwise keep the lock
        holder waiting for the interpreter).
        `crash_test`: `BRAIN_FAILPOINT=folded` kills the process with the fold written but not
        committed (an upkeep fold: tests/search/test_fold_upkeep.py)."""
        from . import build

        cache = None
        try:
            self.db.execute("PRAGMA busy_timeout = 250")
            plan = None
            if planned:
                # Trigger: a fold planned before the index's write lock. Why: the plan reads its
                # group's rows (~3 MB for 16 cards at 10,000 cards), more than SQLite's default
                # 2 MB page cache, so the write under the lock read most pages again: ~95 ms
                # there for 16 cards, against ~30 ms with them kept. Outcome: a page cache of
                # FOLD_CACHE_KB while it folds (pages are kept only as read), the caller's after.
                (cache,) = self.db.execute("PRAGMA cache_size").fetchone()
                self.db.execute(f"PRAGMA cache_size = -{FOLD_CACHE_KB}")
                with _Snapshot(self.db):
                    waiting = self.db.execute("SELECT count(*) FROM stale").fetchone()[0]
                    cards = waiting - keep if most is None else min(most, waiting - keep)
                    if cards <= 0:
                        return waiting
                    plan = build.plan_fold(self.db, cards)
            self.db.execute("BEGIN IMMEDIATE")
            waiting = self.db.execute("SELECT count(*) FROM stale").fetchone()[0]
            if plan is not None:
                if not plan.still_holds(self.db):
                    _rollback(self.db)
                    return None
                build.apply_fold(self.db, plan)
                cards = len(plan.stale)
            else:
                cards = waiting - keep if most is None else min(most, waiting - keep)
                if cards > 0:
                    build.fold(self.db, cards=cards)
            if cards > 0:
                waiting -= cards
                if crash_test:
                    from ..vault.journal import _failpoint

                    _failpoint("folded")
            self.db.execute("COMMIT")
            return waiting
        except BaseException as exc:
            _rollback(self.db)
            if not isinstance(exc, (sqlite3.Error, OSError)):
                raise
            return None
        finally:
            if cache is not None:
                try:
                    self.db.execute(f"PRAGMA cache_size = {int(cache)}")
                except sqlite3.Error:
                    pass   # a connection that cannot take a pragma is closed by its owner anyway


_KEEPING = False   # whether this process keeps a connection per thread (`keep_connections`)
KEPT_CACHE_KB = 256   # SQLite's page cache of a kept connection
WRITER_CACHE_SIZE = -2000   # ... while `Index.existing` lends it to a writer: SQLite's default (~2 MB)


def keep_connections(on: bool = True) -> None:
    """Keep one connection to each index file per thread of this process between `Index.open`s
    (`brain serve`'s workers turn it on after the fork): a search then pays neither a connection
    (~0.2-0.4 ms of CPU; ~3 ms of wall time when it was the process's last one, SQLite deleting
    and creating the WAL again), nor SQLite's parse of the schema, the lock file's open or the cache
    folder's `mkdir`. Every open of the index file goes through `Index._on_disk` or
    `Index.existing` (a create's and a PATCH's, the upkeep thread's), so a writer gets the same
    connection. A CLI process, one command each, leaves it off: it opens and closes as before.
    `_Kept` says what keeps it safe."""
    global _KEEPING
    _KEEPING = on


def keeping_connections() -> bool:
    """Whether this process keeps its connections (`keep_connections`): a serving process."""
    return _KEEPING


KEPT_POSTINGS_BYTES = 8_000_000   # what `_KeptPostings` may hold in a process, as it counts it (~8 MB)


class _KeptTerm:
    """One term's kept rows of `postings`, joined: every row's docids and codes in one pair of
    arrays (ascending by chunk, so by docid), `postings_of` hands them out as they are (never
    changed: the waiting cards go apart, `Postings.more`; copying every row's arrays for every
    query was ~8% of a server's candidate search); `parts` says where each row is in them:
    (chunk, start, end); the set of all their codes (`distinct`) and of the codes of every row
    but the last (`head`); and the `_KeptPostings.clock` they hold as of.

    After a fold, a term is `renewed`: the rows of the chunks the fold did not write are kept as
    they were, the others read again. A server's folds take its newest cards, so most move only a
    term's last row (or add a row past it): the rows kept are then the arrays' beginning, one
    slice of each, and the codes of all but the last row are `head` as it was (or `distinct`),
    so the new sets cost one copy and the new row's codes (joining every row again, and a union
    of every row's set, was ~3% of a server's candidate search in instructions: decision 0038,
    h10-cands). A fold of an older chunk (an edited card's) joins the rows kept and makes both
    sets from the arrays."""

    __slots__ = ("clock", "docids", "codes", "parts", "head", "distinct", "size")

    def __init__(self, clock: tuple, docids: array, codes: array, parts: list[tuple[int, int, int]],
                 head: frozenset[int] | None = None, distinct: frozenset[int] | None = None) -> None:
        self.clock = clock
        self.docids, self.codes, self.parts = docids, codes, parts
        last = parts[-1][1] if parts else 0
        self.head = frozenset(codes[:last]) if head is None else head
        self.distinct = self.head.union(codes[last:]) if distinct is None else distinct
        # Bytes it holds, roughly: 12 a posting, 64 a code in each set (a set's slot and an int).
        self.size = 12 * len(docids) + 64 * (len(self.head) + len(self.distinct)) + 40 * len(parts) + 200

    @classmethod
    def joined(cls, clock: tuple, rows: list[tuple[int, array, array]],
               docids: array | None = None, codes: array | None = None,
               parts: list[tuple[int, int, int]] | None = None, **sets: frozenset[int]) -> "_KeptTerm":
        """The term of `rows` ((chunk, docids, codes), ascending by chunk) joined after the
        `docids`, `codes` and `parts` given (rows of lower chunks), if any."""
        docids = array("I") if docids is None else docids
        codes = array("Q") if codes is None else codes
        parts = [] if parts is None else parts
        for chunk, row_ids, row_codes in rows:
            parts.append((chunk, len(docids), len(docids) + len(row_ids)))
            docids += row_ids
            codes += row_codes
        return cls(clock, docids, codes, parts, **sets)

    def renewed(self, clock: tuple, moved: frozenset[int], rows: list[tuple[int, array, array]]) -> "_KeptTerm":
        """This term as of `clock`: its rows of the chunks not `moved` kept, with `rows` (those
        of the moved chunks, read again: (chunk, docids, codes), ascending by chunk)."""
        parts = self.parts
        kept = 0   # the rows before the first moved one
        while kept < len(parts) and parts[kept][0] not in moved:
            kept += 1
        if any(chunk not in moved for chunk, _, _ in parts[kept:]) or (rows and kept and rows[0][0] < parts[kept - 1][0]):
            # Trigger: a fold of a chunk before some of the term's rows kept (an edited card's).
            # Outcome: the rows kept and those read again joined in chunk order, both sets made
            # from the arrays.
            rows = sorted([(chunk, self.docids[start:end], self.codes[start:end])
                           for chunk, start, end in parts if chunk not in moved] + rows, key=itemgetter(0))
            return _KeptTerm.joined(clock, rows)
        # Trigger: the rows kept are the first `kept` (a fold of the term's last chunks, or of a
        # chunk past them). Outcome: their arrays' beginning, one slice each, and the rows read
        # again after them; the codes of the rows kept are a set already when they are every
        # row (`distinct`) or all but the last (`head`).
        if kept == len(parts) and not rows:
            return _KeptTerm(clock, self.docids, self.codes, parts, self.head, self.distinct)   # none of its rows moved
        end = parts[kept - 1][2] if kept else 0
        known = self.distinct if kept == len(parts) else self.head if kept == len(parts) - 1 else None
        if known is None or not rows:
            return _KeptTerm.joined(clock, rows, self.docids[:end], self.codes[:end], parts[:kept])
        if len(rows) == 1:
            head = known
        else:
            head = known.union(*(row_codes for _, _, row_codes in rows[:-1]))
        return _KeptTerm.joined(clock, rows, self.docids[:end], self.codes[:end], parts[:kept],
                                head=head, distinct=head.union(rows[-1][2]))


class _KeptPostings:
    """The rows of `postings` a long-lived process read for its candidate searches
    (`Index.postings_of`, in a process that `keep_connections`), decoded, by term and chunk.

    Why a kept row is never served stale: every statement that changes `postings` is followed,
    in its transaction, by `build.postings_moved`, which counts the change per chunk written
    (`info` 'postings_chunk:N') or, for a build or `reindex`, for the whole table
    ('postings_epoch', from a random start in each file). A term's rows are served only for the
    same index file (its path and inode) and epoch, and only the rows of the chunks whose counter
    is the one read with them (in the same read snapshot); a chunk whose counter moved (a fold of
    its cards: a new row of the term there, a row changed or gone) is read again. A file without
    an epoch (no build or fold since this version), or changed by a process of an earlier
    version since the last change this version counted (which then moves the epoch), is read
    as before. Rows are kept only from a read snapshot, never from inside a transaction that may
    yet roll back.

    Bound: KEPT_POSTINGS_BYTES as `_KeptTerm.size` counts, least recently used term out first
    (at 10,000 cards, 300 of the bench's create queries leave ~1.2 MB). Only `brain serve`'s workers
    keep rows; a CLI call and the MCP server read them each time."""

    def __init__(self) -> None:
        import threading
        from collections import OrderedDict

        self._terms: OrderedDict[str, _KeptTerm] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @staticmethod
    def clock(index: "Index") -> tuple | None:
        """(file, epoch, {chunk: counter}) of this index, read in the caller's snapshot; None
        when it has no epoch yet."""
        from .store import POSTINGS_CHUNK_KEY

        marks, counters = {}, {}
        for key, value in index.db.execute(
                "SELECT key, value FROM info WHERE key IN ('postings_epoch', 'postings_moved', 'postings_counted') "
                "OR (key >= ? AND key < ?)", (POSTINGS_CHUNK_KEY, _after_prefix(POSTINGS_CHUNK_KEY))):
            if key.startswith(POSTINGS_CHUNK_KEY):
                counters[int(key[len(POSTINGS_CHUNK_KEY):])] = value
            else:
                marks[key] = value
        epoch = marks.get("postings_epoch")
        if epoch is None or marks.get("postings_moved") != marks.get("postings_counted"):
            return None   # no epoch yet, or a change counted by an earlier version since (`build.postings_moved`)
        # The file: its vault's root (the file is always the root's `.brain/cache/index.sqlite`,
        # so the root names it as well, without ~13 us of pathlib a query) and its inode.
        return (str(index.vault.root), index.inode), epoch, counters

    def rows(self, db: sqlite3.Connection, wanted: list[str], clock: tuple, keep: bool) -> dict[str, _KeptTerm]:
        """The rows of `postings` of each of `wanted` as the snapshot whose `clock` this is
        holds them: kept ones while their chunk's counter is unchanged, the others read now
        (and kept, with `keep`)."""
        found: dict[str, _KeptTerm] = {}
        read: dict[str, list[tuple[int, array, array]]] = {}
        renew: dict[str, tuple[_KeptTerm, frozenset[int]]] = {}   # a term kept before a fold -> the chunks moved
        missing: list[str] = []
        again: dict[frozenset[int], list[str]] = {}   # chunks moved since a term's rows were read -> terms
        moved: dict[int, frozenset[int]] = {}         # by the counters a term's rows were read at
        now = clock[2]
        with self._lock:
            entries = {term: self._terms.get(term) for term in wanted}
        for term in wanted:
            entry = entries[term]
            if entry is None or entry.clock[:2] != clock[:2]:
                read[term] = []
                missing.append(term)
                continue
            then = entry.clock[2]
            chunks = moved.get(id(then))
            if chunks is None:
                chunks = moved[id(then)] = frozenset(chunk for chunk in then.keys() | now.keys()
                                                     if then.get(chunk) != now.get(chunk))
            if chunks:
                again.setdefault(chunks, []).append(term)
                read[term] = []
                renew[term] = entry, chunks
            else:
                found[term] = entry
        for start in range(0, len(missing), 500):
            batch = missing[start:start + 500]
            self._read(db, f"term IN ({','.join('?' * len(batch))})", batch, read)
        for chunks, terms in again.items():
            for start in range(0, len(terms), 500):
                batch = terms[start:start + 500]
                self._read(db, f"term IN ({','.join('?' * len(batch))}) AND chunk IN ({','.join('?' * len(chunks))})",
                           [*batch, *sorted(chunks)], read)
        for term, rows in read.items():
            renewing = renew.get(term)
            found[term] = _KeptTerm.joined(clock, rows) if renewing is None else renewing[0].renewed(clock, renewing[1], rows)
        if keep:
            self._keep({term: found[term] for term in read}, [term for term in wanted if term not in read])
        return found

    @staticmethod
    def _read(db: sqlite3.Connection, where: str, params: list, into: dict[str, list[tuple[int, array, array]]]) -> None:
        """(chunk, docids, codes) of each row `where` holds, by term, ascending by chunk."""
        for term, chunk, ids, packed in db.execute(
                f"SELECT term, chunk, docids, codes FROM postings WHERE {where} ORDER BY term, chunk", params):
            docids, codes = array("I"), array("Q")
            docids.frombytes(ids)
            codes.frombytes(packed)
            into[term].append((chunk, docids, codes))

    def _keep(self, renewed: dict[str, _KeptTerm], used: list[str]) -> None:
        """Keep `renewed` terms' rows, mark `used` ones as recently used, and let the least
        recently used go past the bound."""
        with self._lock:
            for term, entry in renewed.items():
                old = self._terms.pop(term, None)
                if old is not None:
                    self._size -= old.size
                if entry.size <= KEPT_POSTINGS_BYTES // 4:   # a term too large for the bound is read each time
                    self._terms[term] = entry
                    self._size += entry.size
            for term in used:
                if term in self._terms:
                    self._terms.move_to_end(term)
            while self._size > KEPT_POSTINGS_BYTES:
                _, entry = self._terms.popitem(last=False)
                self._size -= entry.size


_KEPT_POSTINGS = _KeptPostings()


class _Kept:
    """One thread's kept connection to one index file, with its `index.lock` descriptor.

    What keeps it safe, the same promises as a connection opened for each use:
    - The shared lock is held while it is in use, from `take` to `give_back`, and not between
      uses: a damaged file can still be replaced (`_replace_damaged` needs the lock exclusive)
      while a server runs, and `reindex`, which rebuilds in place in one transaction, is seen by
      the next use as by a new connection (SQLite checks the WAL's header at every read).
    - `take` checks, under the shared lock, that the file at the index's path is still the one
      it opened (its inode: a file deleted and built again is another file, and no file is
      replaced while the lock is held shared) and that `index.lock` was not deleted; if not,
      the kept connection is closed and the file opened afresh. SQLite does not checkpoint or
      delete the WAL when it closes a connection to a file that was deleted (it checks), so
      closing one cannot touch the new file's WAL.
    - A transaction left open by a use is rolled back when it is given back; statements left
      unfinished hold nothing once their cursors are gone (CPython frees them at once).
    - One per thread (SQLite connections are used by the thread that made them), used by one
      `Index` at a time: an open while the kept one is in use (a nested open) gets a connection
      of its own, closed as before.
    - Never used or closed in a forked child (the process id is checked): a child forgets its
      parent's and opens its own."""

    __slots__ = ("key", "db", "lock", "inode", "pid", "busy", "cache_size")
    _local = None   # threading.local: key -> _Kept, made on first use
    _orphans: list = []   # a parent's connections met in a forked child: never closed there

    def __init__(self, key: str, db: sqlite3.Connection, lock: int, inode: int | None) -> None:
        self.key, self.db, self.lock, self.inode, self.pid, self.busy = key, db, lock, inode, os.getpid(), True
        # Trigger: a connection kept for a thread's life. Why: SQLite's page cache (2 MB a
        # connection by default) filled up in each kept one (~2 MB a request thread, ~15 MB for
        # 8 clients), and a search reads a few dozen pages, the others cached by the system.
        # Outcome: KEPT_CACHE_KB a kept connection (no CPU measured either way, decision 0038).
        db.execute(f"PRAGMA cache_size = -{KEPT_CACHE_KB}")
        self.cache_size = -KEPT_CACHE_KB

    @classmethod
    def _slots(cls) -> dict[str, "_Kept"]:
        local = cls._local
        if local is None:
            import threading

            local = cls._local = threading.local()
        slots = getattr(local, "slots", None)
        if slots is None:
            slots = local.slots = {}
        return slots

    @classmethod
    def take(cls, path: Path, wait: bool = True) -> "_Kept | None":
        """This thread's kept connection to the index at `path`, locked shared and checked to be
        the file there now; None when it has none free (open one, then `keep` it). With `wait`
        off, raises BlockingIOError instead of waiting while a damaged file is replaced."""
        import fcntl

        slots = cls._slots()
        slot = slots.get(str(path))
        if slot is None or slot.busy:
            return None
        if slot.pid != os.getpid():
            # Trigger: this process was forked from one that kept it. Why: a connection or a
            # lock's descriptor shared with the parent must not be used or closed here (closing
            # could checkpoint the parent's WAL; unlocking would unlock the parent's). Outcome:
            # left alone for good; this process opens its own.
            cls._orphans.append(slots.pop(slot.key))
            return None
        try:
            # Waits only while a damaged file is replaced.
            fcntl.flock(slot.lock, fcntl.LOCK_SH if wait else fcntl.LOCK_SH | fcntl.LOCK_NB)
            same = _inode(path) == slot.inode and slot.inode is not None and os.fstat(slot.lock).st_nlink > 0
        except BlockingIOError:
            if not wait:
                raise   # the connection stays the thread's, free, for its next use
            same = False
        except OSError:
            same = False
        if not same:
            # Trigger: the file was deleted or replaced since this thread's last use (a damaged
            # index replaced by another process, the cache folder removed). Why: the kept
            # connection reads the old file. Outcome: closed; the caller opens the file anew.
            slot.discard()
            return None
        slot.busy = True
        return slot

    @classmethod
    def keep(cls, path: Path, db: sqlite3.Connection, lock: int, inode: int | None) -> "_Kept | None":
        """Keep a connection just opened as this thread's for `path` (in use until `give_back`);
        None when the thread's kept one for it is in use (a nested open closes its own)."""
        slots = cls._slots()
        old = slots.get(str(path))
        if old is not None:
            if old.busy and old.pid == os.getpid():
                return None
            if old.pid == os.getpid():
                old.discard()
            else:
                cls._orphans.append(slots.pop(old.key))
        slot = slots[str(path)] = cls(str(path), db, lock, inode)
        return slot

    def give_back(self) -> None:
        """End a use: roll back a transaction left open, put back the settings a use may change
        (a writer's short busy timeout, a vector search's small page cache), so the next use
        starts as on a new connection, and release the shared lock."""
        import fcntl

        try:
            _rollback(self.db)
            self.db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT * 1000}")
            self.db.execute(f"PRAGMA cache_size = {int(self.cache_size)}")
            fcntl.flock(self.lock, fcntl.LOCK_UN)
        except (OSError, sqlite3.Error):
            self.discard()
            return
        self.busy = False

    def forget(self) -> None:
        """No longer this thread's kept connection: the caller closes it and its lock."""
        self.lock = -1
        slots = self._slots()
        if slots.get(self.key) is self:
            del slots[self.key]

    def discard(self) -> None:
        """Close it and its lock, and forget it."""
        lock = self.lock
        self.forget()
        try:
            self.db.close()
        finally:
            if lock >= 0:
                os.close(lock)

    def __del__(self) -> None:
        # Trigger: its thread ended (a client's connection closed: `serve` runs a thread per
        # connection), and with it the thread's slots. Why: a descriptor is not closed when
        # freed, and a connection (in a reference cycle with its statement cache) only when
        # the collector next runs: ~2.5 MB and four descriptors left per client that went away.
        # Outcome: both closed now, in the thread that made them, in the process that opened them.
        try:
            if self.lock >= 0 and self.pid == os.getpid():
                lock, self.lock = self.lock, -1
                try:
                    self.db.close()
                finally:
                    os.close(lock)
        except Exception:  # noqa: BLE001 - at interpreter exit, or another thread (the collector closes it)
            pass


def _renewed(docids: array, codes: array, stale: list[tuple[int]], fresh: list[tuple[int, int]]
             ) -> tuple[array, array, list[tuple[int, int]]]:
    """The postings (ascending `docids`, their `codes`, both this call's own arrays) with the
    cards `stale` holds out of date brought up to date from their `fresh` (docid, code) pairs:
    a card with the term before and after has its code replaced in place (most of a card
    written again: `_without` and `_with` made two slices a card, ~2 us each, on every term of
    every search while a server's upkeep lets cards wait); returns the pairs left to insert."""
    now = dict(fresh)
    end = len(docids)
    gone = []
    for (docid,) in stale:
        at = bisect_left(docids, docid)
        if at < end and docids[at] == docid:
            code = now.pop(docid, None)
            if code is None:
                gone.append(docid)
            else:
                codes[at] = code
    if gone:
        docids, codes = _without(docids, codes, gone)
    return docids, codes, sorted(now.items()) if len(now) < len(fresh) else fresh


def _without(docids: array, codes: array, leave_out: list[int]) -> tuple[array, array]:
    """The postings (ascending `docids`, their `codes`) less those of the docids `leave_out`."""
    if len(leave_out) * 16 < len(docids):
        cut = []
        for docid in leave_out:
            at = bisect_left(docids, docid)
            if at < len(docids) and docids[at] == docid:
                cut.append(at)
    else:
        # Trigger: many docids to leave out next to the list's length (a server's waiting cards
        # within a term's range, ~130 for ~500 postings at 10,000 cards, most of them in no row
        # of `postings`: created since the fold). Why: a bisection each cost ~0.5 us, ~30 us a
        # term of every create's candidate search. Outcome: the same positions, those of the
        # docids found by one pass of the list through a set (~30 ns a posting).
        cut = [bisect_left(docids, docid) for docid in set(leave_out).intersection(docids)]
    if not cut:
        return docids, codes
    kept_ids, kept_codes = array("I"), array("Q")
    start = 0
    for at in sorted(cut):
        kept_ids += docids[start:at]
        kept_codes += codes[start:at]
        start = at + 1
    kept_ids += docids[start:]
    kept_codes += codes[start:]
    return kept_ids, kept_codes


def _ascending(docids: list[int], codes: list[int]) -> tuple[list[int], list[int]]:
    """Parallel lists of docids and their codes, in ascending docid order (SQLite aggregates a
    group's rows in the order it reads them, the primary key's here, but does not promise it)."""
    if docids == sorted(docids):
        return docids, codes
    pairs = sorted(zip(docids, codes))
    return [docid for docid, _ in pairs], [code for _, code in pairs]


_WAITING_READ: dict[str, tuple[str, str, tuple[list[int], list[int], frozenset[int]]]] = {}   # by term (`_waiting_postings`)
_WAITING_READ_TERMS = 1_024   # terms `_WAITING_READ` holds at most, emptied when full


def _waiting_postings(term: str, ids: str, codes: str) -> tuple[list[int], list[int], frozenset[int]]:
    """`_ascending` of the numbers in `ids` and `codes` (a term's `fresh` rows, as
    `group_concat` gives them), and the set of those codes, in a serving process: the texts it
    was last given for `term` and what they gave are kept, and when the new texts are those
    texts with more numbers after them, only the numbers after them are parsed. A pure function
    of the texts, whoever wrote the rows: a create's waiting cards are the last create's plus the
    cards written since (new docids, past the others in `fresh`'s (term, docid) order), so their
    texts grow at the end; a fold or an edit of a waiting card changes them otherwise, and they
    are parsed whole. What it gives is shared with later calls: never to be changed."""
    last = _WAITING_READ.get(term)
    if last is not None and last[0] == ids and last[1] == codes:
        return last[2]
    if last is not None and len(ids) > len(last[0]) and ids.startswith(last[0]) and ids[len(last[0])] == "," \
            and len(codes) > len(last[1]) and codes.startswith(last[1]) and codes[len(last[1])] == ",":
        # Trigger: the texts are the last ones with more numbers after a comma. Why: parsing a
        # common term's ~250 waiting postings again for every create was most of their read.
        # Outcome: the same lists as parsing the whole texts (each text's numbers are the last
        # text's followed by the rest's, so each position pairs the same docid and code).
        more_ids = json.loads(f"[{ids[len(last[0]) + 1:]}]")
        more_codes = json.loads(f"[{codes[len(last[1]) + 1:]}]")
        last_ids, last_codes, last_set = last[2]
        if more_ids and more_ids[0] > last_ids[-1] and (len(more_ids) == 1 or more_ids == sorted(more_ids)):
            # The new numbers ascending past the last list's (a create's card: a new docid), which
            # is ascending: the two joined are what sorting the pairs of the whole texts gives.
            read = last_ids + more_ids, last_codes + more_codes, last_set.union(more_codes)
        else:
            ids_read, codes_read = _ascending(last_ids + more_ids, last_codes + more_codes)
            read = ids_read, codes_read, last_set.union(more_codes)
    else:
        ids_read, codes_read = _ascending(json.loads(f"[{ids}]"), json.loads(f"[{codes}]"))
        read = ids_read, codes_read, frozenset(codes_read)
    if len(_WAITING_READ) >= _WAITING_READ_TERMS:
        _WAITING_READ.clear()
    _WAITING_READ[term] = (ids, codes, read)
    return read


def _with(docids: array, codes: array, added: list[tuple[int, int]]) -> tuple[array, array]:
    """The postings with (docid, code) pairs `added` (ascending, none of them already there);
    `docids` and `codes` are the caller's own arrays, and may be the ones returned."""
    if not docids or added[0][0] > docids[-1]:  # the usual case: cards created since the fold
        docids.extend([docid for docid, _ in added])
        codes.extend([code for _, code in added])
        return docids, codes
    # The pairs past the last posting are appended; only those before it are merged in.
    head = bisect_left(added, (docids[-1] + 1,))
    if len(docids) <= _INSERTED_WITHIN:
        # Trigger: a short list (a server's partial folds leave waiting cards below the docids
        # folded, ~35 of a term's ~500 postings at 10,000 cards). Why: an insertion moves a few
        # KB in C; the slices of a merge cost ~1 us a pair. Outcome: the same arrays.
        start = 0
        for docid, code in added[:head]:
            start = bisect_left(docids, docid, start)
            docids.insert(start, docid)
            codes.insert(start, code)
            start += 1
        merged_ids, merged_codes = docids, codes
    else:
        merged_ids, merged_codes = array("I"), array("Q")
        start = 0
        for docid, code in added[:head]:
            at = bisect_left(docids, docid, start)
            merged_ids += docids[start:at]
            merged_codes += codes[start:at]
            merged_ids.append(docid)
            merged_codes.append(code)
            start = at
        merged_ids += docids[start:]
        merged_codes += codes[start:]
    merged_ids.extend([docid for docid, _ in added[head:]])
    merged_codes.extend([code for _, code in added[head:]])
    return merged_ids, merged_codes


_INSERTED_WITHIN = 4096   # postings up to which `_with` inserts a pair in place rather than merging slices


def _next_spelling(name: str, differs: int, upper: str, lower: str, folds: dict[int, tuple[str, ...]]) -> str | None:
    """The least text after `name` that starts with a start of a spelling of the prefix
    (`upper` and `lower` its two cases, `folds` the characters past ASCII a place may hold
    besides, in order), given that `name[:differs]` is one and `name` holds no spelling of the
    next character there (or ends there); None when no spelling is left. The next character may
    be a greater spelling of that one; else a greater spelling of an earlier character, the
    latest such, which is where the names greater than `name` can match again."""
    for at in range(differs, -1, -1):
        char = name[at] if at < len(name) else ""
        if upper[at] > char:   # ASCII: the upper case sorts first
            return name[:at] + upper[at]
        if lower[at] > char:
            return name[:at] + lower[at]
        greater = next((fold for fold in folds.get(at, ()) if fold > char), None) if folds else None
        if greater is not None:
            return name[:at] + greater
    return None


def _after_prefix(prefix: str) -> str:
    """The least text greater than every text that starts with `prefix` (its last character
    plus one), in SQLite's BINARY order (code point order, as UTF-8's bytes sort): `name >=
    prefix AND name < this` holds exactly for the names that start with it."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def file_stamps(vault: Vault, rel: str) -> Stamps:
    """The card's folder mtime and the card's own (size, mtime, inode), taken just before a
    write and just after it, for its pass-on (`Index.wrote_files`). No index is needed."""
    root = str(vault.root)
    try:
        folder = os.stat(os.path.join(root, rel.rpartition("/")[0])).st_mtime_ns
    except OSError:
        folder = None
    return Stamps(folder, _file_stamp(os.path.join(root, rel)))


def caught_up(vault: Vault, db: sqlite3.Connection, analyse) -> None:
    """Before a thread that holds the vault's write lock reads the index (`Index.open`,
    `Index.refreshed`): the index holds every write made before it reads (search/pass_on.py).
    Its batch's queued pass-ons are made in `db` first; with none queued, an earlier batch's
    (any process's) have committed: SQLite's write lock taken and let go at once. A wait past
    PASS_ON_WAIT_MS goes on without: the reader's own refresh then finds the cards by their
    folders' mtimes. A process that never loaded the journal holds no write lock: nothing here."""
    if sys.modules.get(_JOURNAL) is None:
        return
    from ..vault.journal import held_batch

    holding, parts = held_batch(vault)
    if not holding:
        return
    pass_ons = parts.get(PASS_ONS) if parts else None
    if pass_ons is not None and pass_ons.queued:
        pass_ons.apply_now(Index(vault, db, analyse, Changes()))
    elif write_begun(db):
        db.execute("ROLLBACK")


def write_begun(db: sqlite3.Connection) -> bool:
    """A write transaction begun on `db`, waiting up to PASS_ON_WAIT_MS for the index's write lock.
    The connection's own wait is put back after: a reader under the vault's lock (`caught_up`)
    goes on to refresh with it, and with the short wait a refresh that met another process's
    transaction (a fold, a reindex) gave up on the file for a private index in memory."""
    try:
        (wait,) = db.execute("PRAGMA busy_timeout").fetchone()
        db.execute(f"PRAGMA busy_timeout = {PASS_ON_WAIT_MS}")
    except sqlite3.Error:
        return False
    try:
        db.execute("BEGIN IMMEDIATE")
        return True
    except sqlite3.Error:
        return False
    finally:
        try:
            db.execute(f"PRAGMA busy_timeout = {int(wait)}")
        except sqlite3.Error:
            pass   # a connection that cannot take a pragma fails its next statement anyway


_JOURNAL = __name__.rsplit(".", 2)[0] + ".vault.journal"
PASS_ONS = "search index pass-ons"   # a batch's part that passes its cards on (`Writer.part`, search/pass_on.py)


def _stat_or_none(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _reads(path: str, text: str) -> bool:
    """Whether the file holds exactly `text`."""
    try:
        with open(path, "rb") as handle:
            return handle.read() == text.encode("utf-8")
    except OSError:
        return False


PASS_ON_WAIT_MS = 250  # how long a pass-on waits for the index's write lock (another writer's, a fold's), at most
FOLD_BACKLOG = 256     # cards waiting in `stale` past which `FoldUpkeep` folds while writes go on
FOLD_GROUP = 32        # cards it folds in one transaction when the index is quiet (~70 ms of CPU at 10,000 cards)
FOLD_GROUP_BUSY = 16   # ... while writes go on (~46 ms of CPU, ~24 of them under the index's write lock)
FOLD_LIMIT = 4 * FOLD_BACKLOG   # cards waiting past which writers fold again themselves (the upkeep lags)
FOLD_QUIET = 0.25      # seconds without a change to the index file after which it folds them all
FOLD_LOOK = 0.1        # seconds between its looks while cards wait
FOLD_CACHE_KB = 16384  # page cache of a planned fold: its plan's pages kept for its writes (a group reads ~1-4 MB)


class FoldUpkeep:
    """Folding for a process that lives on (`brain serve`'s workers): its writes leave every
    card they index waiting in `stale` (`wrote_files(fold=False)`, then `nudge`), and this
    thread folds them into `postings`, so no request pays for a fold.

    What it promises:
    - A search sees every acknowledged write whether or not it is folded: readers merge `fresh`
      and `stale` with `postings` (`Index.postings`), and a fold changes nothing they see.
    - It folds when the index is quiet (its file and WAL unchanged for FOLD_QUIET seconds: no
      writer of any process; and no thread of this one holding or waiting for the vault's write
      lock), every waiting card, FOLD_GROUP at a time, one group a look, stopping as soon as
      another writer shows; and while writes go on, only once more than FOLD_BACKLOG wait, one
      group of FOLD_GROUP_BUSY per look (FOLD_LOOK), down to FOLD_BACKLOG less a group. Folding
      a group together shares the rows its cards' terms have in common, most when they are of
      one chunk (`build._fold_group`): ~2.9 ms a card for 16 at 10,000 cards, ~6 ms for one
      alone. A group is planned from a read snapshot and written under the index's write lock
      only if what it read still holds (`fold_waiting(planned=)`), its plan's pages kept for
      the writes (FOLD_CACHE_KB), so a write that meets a fold waits for its writes (~24 ms of
      CPU for 16 cards), not its reads.
    - Writers fold for themselves again (as the CLI) if the thread is gone or FOLD_LIMIT wait.
    - A card written again while it waits costs its rows in `fresh` again, not a fold.
    - A fold is one SQLite transaction: a process killed in it leaves the cards waiting, and
      the next process folds them (docs/decisions/0038-server-throughput.md).
    - Upkeep only: an index that is busy, missing or damaged is left to the next look or the
      next search; nothing here fails a request.

    A process without one (the CLI, one call each) folds the excess over DELTA_CARDS after its
    write lock (`fold_excess`), no more cards than its operation wrote."""

    _current: "FoldUpkeep | None" = None

    def __init__(self) -> None:
        import threading

        self._wake = threading.Condition()
        self._waiting: dict[str, tuple[Vault, int]] = {}   # cache folder -> (vault, cards waiting when told)
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="brain-index-upkeep", daemon=True)

    @classmethod
    def start(cls, vaults: Iterable[Vault] = ()) -> "FoldUpkeep":
        """Start this process's upkeep thread; the writes of this process then hand it their folds.
        `vaults` are looked at as if written to: cards a killed process left waiting are folded
        once the index is quiet, without waiting for a write of this one."""
        upkeep = cls._current = cls()
        for vault in vaults:
            upkeep._waiting[str(vault.cache_dir)] = (vault, 1)
        upkeep._thread.start()
        return upkeep

    @classmethod
    def current(cls) -> "FoldUpkeep | None":
        return cls._current

    def stop(self) -> None:
        """Stop after the group being folded, if any; this process's writes fold for themselves again."""
        if FoldUpkeep._current is self:
            FoldUpkeep._current = None
        with self._wake:
            self._stopping = True
            self._wake.notify()
        self._thread.join()

    def nudge(self, vault: Vault, waiting: int) -> bool:
        """A write of this process left `waiting` cards in `stale` of `vault`'s index. False when
        the thread cannot be relied on to fold them (it is gone, or more than FOLD_LIMIT wait):
        the writer then folds its own excess, as a process without upkeep does."""
        if waiting > FOLD_LIMIT or not self._thread.is_alive():
            return False
        with self._wake:
            told = self._waiting.get(str(vault.cache_dir))
            self._waiting[str(vault.cache_dir)] = (vault, waiting)
            if told is None or waiting > FOLD_BACKLOG:
                self._wake.notify()
        return True

    def _run(self) -> None:
        seen: dict[str, tuple[tuple, float]] = {}   # cache folder -> (index files' stamp, when first seen)
        said: set[type] = set()                     # kinds of error already told on stderr
        while True:
            with self._wake:
                if not self._stopping:
                    self._wake.wait(FOLD_LOOK if self._waiting else None)
                if self._stopping:
                    return
                todo = list(self._waiting.items())
            for key, told in todo:
                try:
                    left = self._tend(key, *told, seen)
                except Exception as error:  # noqa: BLE001 - upkeep: the next write tells it again
                    # (Trigger: a fold failed (a damaged index, a full disk). Why: nothing here may
                    # fail a request, but a server's owner should learn why its index stopped being
                    # folded. Outcome: one line on stderr per kind of error; writers fold for themselves
                    # once FOLD_LIMIT cards wait.)
                    if type(error) not in said:
                        said.add(type(error))
                        print(f"brain serve: folding the search index of {told[0].root} failed: {error}; "
                              "searches still see every card, `brain reindex` rebuilds the index",
                              file=sys.stderr, flush=True)
                    left = 0
                with self._wake:
                    if self._waiting.get(key) is told:   # not told of another write meanwhile
                        if left:
                            self._waiting[key] = (told[0], left)
                        else:
                            del self._waiting[key]
                            seen.pop(key, None)

    def _tend(self, key: str, vault: Vault, told: int, seen: dict[str, tuple[tuple, float]]) -> int:
        """One look at a vault's index: fold one group when due; returns the cards left waiting
        (0: nothing more to do until the next write)."""
        import time

        from ..vault.journal import writers_busy

        now = time.monotonic()
        stamp = _index_stamp(vault)
        if key not in seen or seen[key][0] != stamp:
            seen[key] = (stamp, now)
        quiet = now - seen[key][1] >= FOLD_QUIET and not writers_busy(vault)
        if not quiet and told <= FOLD_BACKLOG:
            return told
        index = Index.existing(vault, card_fields)
        if index is None:
            return 0
        try:
            # Trigger: writes go on (the index changed within FOLD_QUIET) and more than
            # FOLD_BACKLOG cards wait. Why: each waiting card costs every search ~0.6 us a
            # term (`_renewed`). Outcome: a group of FOLD_GROUP_BUSY, planned before the write
            # lock (a writer waits for its writes only), one a look, so writers get the index
            # between groups; once the index is quiet, all of them, FOLD_GROUP at a time.
            group = FOLD_GROUP if quiet else FOLD_GROUP_BUSY
            left = index.fold_waiting(group, keep=0 if quiet else FOLD_BACKLOG - group, planned=True, crash_test=True)
        finally:
            index.close()
        # This process's own fold (and the checkpoint a close may make) is not another writer.
        seen[key] = (_index_stamp(vault), seen[key][1])
        return told if left is None else left


def _index_stamp(vault: Vault) -> tuple:
    """The index file's and its WAL's (size, mtime): they move with every commit to the index."""
    stamps = []
    for name in ("index.sqlite", "index.sqlite-wal"):
        try:
            st = os.stat(vault.cache_dir / name)
            stamps.append((st.st_size, st.st_mtime_ns))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def rebuild(vault: Vault, analyse, progress=None, workers: int | None = None) -> Changes:
    """Build the index again from every card (`brain reindex`), in place and in one write
    transaction: other processes go on reading the old index until the new one is committed,
    and no file is deleted under them. A damaged file is replaced, waiting a few seconds for
    other processes to let go of it. Raises IndexUnavailable when the file cannot be used.
    `workers`: processes that read and analyse the cards (None: one per core for a large
    vault, else this one); the index is the same whatever the number."""
    try:
        index = Index._on_disk(vault, analyse, progress, lambda refresher, fresh: refresher.rebuild(workers),
                               wait=10.0)
    except _Unusable as exc:
        raise IndexUnavailable(f"{exc.trouble.problem}; {exc.trouble.fix}") from None
    index.close()
    return index.changes
