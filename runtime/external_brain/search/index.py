"""The persistent, incremental search index in `.brain/cache/index.sqlite`.

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
  `index.lock` beside the index while its connection is open, and a damaged file is deleted only
  under the exclusive lock, taken without waiting. `reindex` rebuilds in place, in one write
  transaction, so readers see the old index until the new one is committed.
- An index that cannot be used (a directory in its place, a read-only vault or cache, a full
  disk, a damaged file others still hold) never fails a command: `Index.open` then builds a
  private index in memory for this call and says why in `trouble` (no other SQLite error is
  taken for damage: the file is left alone).

How it notices changes without reading every card, or even stat-ing every card (at 100,000 cards
a stat of each file costs ~0.1 s on its own, more than the whole search budget):
- Folder mtimes. Adding, deleting or renaming a card, and every save that writes a new file and
  renames it over the old one (this tool, git, vim, sed -i, most atomic-save editors) changes
  its folder's mtime. Only such folders are listed again, and the listing (names and inodes, in
  the order the OS gives them) is compared with the one stored at the last look: a new name or a
  new inode is a file to re-read. Folders are few, so this costs a handful of stats per search.
- A rolling sweep for saves that rewrite a file in place (same inode, same folder mtime): every
  open compares the size and mtime of the next `sweep` indexed files, round-robin. A vault of up
  to `sweep` cards (1,000 by default) is therefore checked completely on every search; a larger
  one within ceil(cards / sweep) searches. When the sweep reaches the last file, every folder is
  listed too, whatever its mtime says, so a change that left no mtime behind (one made in the
  instant of our own write-through, or within one tick of a filesystem with coarse timestamps)
  is found within that same bound. Search also checks the files of the hits it shows and
  re-ranks if one changed, so a hit is never shown from stale text. `reindex` checks everything.
- Write-through: `create` and `record` hand the card they wrote to the index (`Index.wrote`),
  so the next search does not list the folder again for a change the index already holds.

Postings: one row per (term, chunk of 512 docids) holding two packed arrays, the sorted docids
and their posting codes, so a term with 6,000 documents is a dozen rows, not 6,000. A code packs
the term's frequency in each field and the length of each field it occurs in (`encode_code`), so
scoring needs no second lookup. Frequencies and lengths are capped (`_LAYOUT`); the caps are far
above what a card holds except a body over 65,535 terms, which then counts as that long. A
changed document keeps its docid, so re-indexing it rewrites one chunk row per term.

The index is a cache, so it runs with `synchronous=OFF`: a process crash loses nothing (SQLite's
WAL is still atomic), and after an OS crash or power cut a damaged file is detected (corruption
raises, and the file is rebuilt) or, at worst, a few cards are stale until `reindex`.

SQLite ships with Python's standard library; the ranking itself is ours (see `search`), the
database is only the posting store.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import sqlite3
import sys
from array import array
from bisect import bisect_left
from collections import Counter
from itertools import compress
from operator import ne
from pathlib import Path
from stat import S_ISDIR
from typing import Any, Callable, Iterable, Iterator

from ..errors import BadFrontmatter, IndexUnavailable, IOProblem, NotACard, UnsafePath, UnsafeVault
from ..vault.records import factory, record
from ..vault.storage import Card, Problem, Vault, card_from_text, load_card, parse_time, problem_of
from .analysis import ANALYSER_VERSION

SCHEMA_VERSION = 12  # 9: meta holds what list and audit show (`front`, `ctime_ns`); 10: facets, card_tags;
# 11: facets hold the numbers `audit` starts from (confidence, stated date, ctime); 12: and what a `list` line shows
_VERSION = f"{SCHEMA_VERSION}/{ANALYSER_VERSION}/{sys.byteorder}"  # the arrays are in native byte order
FIELDS = ("title", "aliases", "tags", "meta", "body")  # the body last: `_file_postings` counts on it
DEFAULT_SWEEP = 1000
ROOT_FOLDER = "Playbooks"
CHUNK_BITS = 9                 # 512 docids per posting row
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 13, 11, 26
_SQLITE_IOERR_SHMSIZE = 4874   # an extended code: SQLITE_IOERR | (19 << 8)
_BUSY_TIMEOUT = 60             # seconds a statement waits for another process's write lock
_WAL_SWITCH_WAIT = 10.0        # seconds to retry switching a new index to WAL while others race
_FLUSH_AT = 200_000            # buffered postings before a bulk (re)index writes them out
_PARALLEL_FROM = 2000          # new cards in one build from which it is spread over every core
_BUILD_CACHE_KB = -65536       # SQLite's page cache while a build writes (negative: in KiB, so 64 MB)

# Bits of (term frequency, field length) per field, in FIELDS order. The body comes first in the
# code so the common body-only posting is a small integer.
_LAYOUT = {"body": (8, 16), "title": (4, 6), "aliases": (4, 6), "tags": (4, 6), "meta": (4, 4)}
_SLOTS: list[tuple[int, int, int, int, int]] = []  # (field position, shift, tf bits, length bits)
_shift = 0
for _name in ("body", "title", "aliases", "tags", "meta"):
    _tf_bits, _len_bits = _LAYOUT[_name]
    _SLOTS.append((FIELDS.index(_name), _shift, _tf_bits, _len_bits))
    _shift += _tf_bits + _len_bits
del _shift, _name, _tf_bits, _len_bits
# Per field, in FIELDS order: (shift of its tf, the tf cap, (the length cap, the length's shift)).
_FIELD_PARTS = [next((shift, (1 << tf_bits) - 1, ((1 << len_bits) - 1, shift + tf_bits))
                     for position, shift, tf_bits, len_bits in _SLOTS if position == at) for at in range(len(FIELDS))]

_SCHEMA = """
CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE folders (path TEXT PRIMARY KEY, mtime_ns INTEGER NOT NULL);
CREATE TABLE listings (             -- apart from folders: updating a row rewrites all of it
    path TEXT PRIMARY KEY,
    names BLOB NOT NULL,            -- the folder's entries, NUL-separated, in the OS's order
    inodes BLOB NOT NULL            -- their inodes, an array of uint64 in the same order
);
CREATE TABLE docs (                 -- narrow: the sweep and the freshness checks read these rows
    docid INTEGER PRIMARY KEY,
    folder TEXT NOT NULL,
    name TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    inode INTEGER NOT NULL,
    problem TEXT,                   -- why the file is not a searchable card (then no postings)
    line INTEGER,
    UNIQUE (folder, name)
);
CREATE INDEX docs_problems ON docs (folder, name) WHERE problem IS NOT NULL;
CREATE TABLE doc_data (
    docid INTEGER PRIMARY KEY,
    lengths TEXT NOT NULL,          -- JSON list of the field lengths, in FIELDS order
    meta TEXT NOT NULL,             -- JSON of what filters and hits need
    terms TEXT NOT NULL             -- the distinct terms, newline-separated, to remove its postings
);
CREATE TABLE postings (
    term TEXT NOT NULL,
    chunk INTEGER NOT NULL,         -- docid >> CHUNK_BITS
    docids BLOB NOT NULL,           -- sorted docids, an array of uint32
    codes BLOB NOT NULL,            -- their codes, an array of uint64: see decode_code
    PRIMARY KEY (term, chunk)
) WITHOUT ROWID;
CREATE TABLE card_keys (            -- how a link finds its card: id, file stem, title (case-folded)
    docid INTEGER PRIMARY KEY,
    id TEXT,
    stem TEXT NOT NULL,
    title TEXT NOT NULL
);
CREATE INDEX card_keys_id ON card_keys (id);
CREATE INDEX card_keys_stem ON card_keys (stem);
CREATE INDEX card_keys_title ON card_keys (title);
CREATE TABLE links (                -- every relation a card holds: `links` entries and `related` wikilinks
    source INTEGER NOT NULL,        -- docid of the card that holds it
    target_id TEXT,                 -- `links[].to`
    target_name TEXT,               -- a `related` [[wikilink]]'s name, case-folded (see wikilinks.link_name)
    rel TEXT NOT NULL,
    weight REAL NOT NULL,
    reason TEXT,
    version INTEGER,
    created TEXT,
    updated TEXT
);
CREATE INDEX links_source ON links (source);
CREATE INDEX links_target_id ON links (target_id) WHERE target_id IS NOT NULL;
CREATE INDEX links_target_name ON links (target_name) WHERE target_name IS NOT NULL;
CREATE TABLE facets (               -- what `stats` counts, one narrow row per card: no JSON to decode
    docid INTEGER PRIMARY KEY,
    type TEXT NOT NULL,             -- as `card_meta` has them
    domain TEXT NOT NULL,
    project TEXT NOT NULL,
    scope TEXT NOT NULL,
    agent TEXT NOT NULL,
    status TEXT NOT NULL,
    confidence REAL,                -- `Card.stored_confidence` (NULL: none written)
    stated REAL,                    -- `updated`, else `created`, as seconds since the epoch (NULL: none
                                    -- readable). A date without an offset is read in the zone of the
                                    -- process that indexed it, so readers allow a day either side
    ctime_s INTEGER NOT NULL,       -- the file's ctime in whole seconds (0: unknown)
    path TEXT NOT NULL,             -- what a `list` line shows besides, so a listing reads this table
    card_id TEXT,                   --   alone and decodes no JSON: `Card.rel`, `Card.id`, `Card.title`,
    title TEXT NOT NULL,            --   and a state card's age start as written (`kinds.state_since`,
    since TEXT,                     --   NULL: none, or not a state) and `valid_to` (text_field)
    valid_to TEXT NOT NULL
);
CREATE INDEX facets_all ON facets (type, domain, project, scope, agent, status);  -- GROUP BY without a sort
CREATE INDEX facets_scoped ON facets (scope) WHERE scope != '';
CREATE TABLE card_tags (            -- each card's distinct tags (`card_meta` tags)
    tag TEXT NOT NULL,
    docid INTEGER NOT NULL,
    PRIMARY KEY (tag, docid)
) WITHOUT ROWID;
CREATE INDEX card_tags_docid ON card_tags (docid);
"""
_INSERT_FACETS = f"INSERT INTO facets VALUES ({', '.join('?' * 15)})"   # docid and `card_facets`


def encode_code(tfs: list[int], lengths: list[int]) -> int:
    """Pack a posting's per-field term frequencies, and the lengths of the fields it occurs in."""
    code = 0
    for position, shift, tf_bits, len_bits in _SLOTS:
        tf = tfs[position]
        if tf:
            code |= min(tf, (1 << tf_bits) - 1) << shift
            code |= min(lengths[position], (1 << len_bits) - 1) << (shift + tf_bits)
    return code


def decode_code(code: int) -> tuple[list[int], list[int]]:
    """The (term frequencies, field lengths) packed by `encode_code`; a field the term is not in
    has tf 0 and length 0."""
    tfs = [0] * len(FIELDS)
    lengths = [0] * len(FIELDS)
    for position, shift, tf_bits, len_bits in _SLOTS:
        tfs[position] = (code >> shift) & ((1 << tf_bits) - 1)
        lengths[position] = (code >> (shift + tf_bits)) & ((1 << len_bits) - 1)
    return tfs, lengths


@record
class Changes:
    """What a refresh found: vault-relative paths added, modified and removed."""

    added: list[str] = factory(list)
    modified: list[str] = factory(list)
    removed: list[str] = factory(list)

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)


@record(frozen=True)
class Stamps:
    """A card's folder mtime and the card's (size, mtime_ns, inode), before a write."""

    folder: int | None
    file: tuple[int, int, int] | None


@record
class Stats:
    doc_count: int
    avg_lengths: tuple[float, ...]


# The frontmatter keys `list` and `audit` read besides the fields above (confidence and its
# decay, dates, kind and scope fields), stored as written so that a card rebuilt from the index
# (`cards.IndexedCard`) gives every reader the very values the file would.
LISTED_KEYS = ("confidence", "created", "updated", "valid_from", "valid_to", "scope", "agent", "project",
               "importance", "supersedes", "superseded_by")


def card_meta(card: Card) -> dict[str, Any]:
    """The per-document fields search filters on and hits show, stored with the postings;
    `front` and `ctime_ns` are what lists need besides (LISTED_KEYS)."""
    meta = card.meta
    return {
        "id": card.id, "title": card.title, "type": card.type, "domain": card.domain,
        "tags": card.tags, "project": card.text_field("project"), "status": card.status,
        "scope": card.text_field("scope"), "agent": card.text_field("agent"),
        "valid_from": card.text_field("valid_from") or card.text_field("created"),
        "valid_to": card.text_field("valid_to"),
        "front": {key: meta[key] for key in LISTED_KEYS if key in meta}, "ctime_ns": card.ctime_ns,
    }


class Postings:
    """One term's postings: parallel arrays of docids (ascending) and their codes."""

    __slots__ = ("docids", "codes")

    def __init__(self, docids: array, codes: array) -> None:
        self.docids = docids
        self.codes = codes

    def __len__(self) -> int:
        return len(self.docids)

    def code(self, docid: int) -> int | None:
        """This document's code, or None when it does not contain the term."""
        at = bisect_left(self.docids, docid)
        return self.codes[at] if at < len(self.docids) and self.docids[at] == docid else None


@record(frozen=True)
class Trouble:
    """Why the index file cannot be used, in one line, and what fixes it."""

    problem: str
    fix: str

    def warning(self) -> str:
        return f"{self.problem}; this call used a temporary index in memory ({self.fix})"


class _Unusable(Exception):
    """The index file cannot be used for this call (see `Trouble`)."""

    def __init__(self, trouble: Trouble) -> None:
        super().__init__(trouble.problem)
        self.trouble = trouble


class _Damaged(Exception):
    """SQLite's own check found the file damaged (an error would have said SQLITE_CORRUPT)."""


class Index:
    """An open index. Use `Index.open(vault, analyse)`; it is refreshed before it is returned."""

    def __init__(self, vault: Vault, db: sqlite3.Connection, analyse, changes: Changes,
                 lock: int | None = None, inode: int | None = None, trouble: Trouble | None = None) -> None:
        self.vault = vault
        self.db = db
        self.analyse = analyse
        self.changes = changes
        self.lock = lock          # descriptor holding `index.lock` shared; None for an index in memory
        self.inode = inode        # of the file opened, to replace only that file if it is damaged
        self.trouble = trouble    # why this is a private index in memory; None when it is the file

    @classmethod
    def open(cls, vault: Vault, analyse: Callable[[Card], dict[str, list[str]]],
             progress: Callable[[int, int], None] | None = None, full: bool = False,
             sweep: int | None = DEFAULT_SWEEP) -> "Index":
        """Open and refresh the index. `full` checks every file (reindex, doctor); otherwise
        folder mtimes and a sweep of `sweep` files decide what is re-read (module docstring):
        0 checks every file, None none (folders only: for callers that only want candidates).
        Never fails because of the index file: see `trouble`."""
        try:
            return cls._on_disk(vault, analyse, progress, lambda refresher, fresh: refresher.run(full or fresh, sweep))
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
                 wait: float = 0.0) -> "Index":
        """The index file, opened under the shared lock and brought up to date by `work`
        (given the refresher, and whether the file is new). A damaged file is replaced once,
        when no other process holds it (waiting up to `wait` seconds for them); anything else
        that keeps the file from use raises `_Unusable`."""
        path = vault.cache_dir / "index.sqlite"
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
                return cls(vault, db, analyse, changes, lock=lock, inode=_inode(path) if inode is None else inode)
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
        if not path.is_file():
            return None
        lock = db = None
        try:
            lock = _share(vault.cache_dir, wait=False)
            db = _connect(path, wal_wait=0.25)
            if _version(db) == _VERSION:
                return cls(vault, db, analyse, Changes(), lock=lock, inode=_inode(path))
        except (OSError, sqlite3.Error):
            pass  # unusable now: this optional step is skipped
        if db is not None:
            db.close()
        if lock is not None:
            os.close(lock)
        return None

    def reopen(self, exc: BaseException, sweep: int | None = DEFAULT_SWEEP) -> "Index":
        """Close this index after `exc` was raised while using it, and return one to go on
        with: the file built again when it was damaged and no other process holds it, else a
        private index in memory. `exc` is raised again when it is a bug (an integrity or
        programming error) or this index is already the one in memory."""
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
        """Close the connection, then let go of the shared lock; closing twice is harmless."""
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
        """Every document containing `term`, with its code (see `decode_code`)."""
        docids, codes = array("I"), array("Q")
        for ids, packed in self.db.execute("SELECT docids, codes FROM postings WHERE term = ? ORDER BY chunk",
                                           (term,)):
            docids.frombytes(ids)
            codes.frombytes(packed)
        return Postings(docids, codes)

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
        ctime_s, since, valid_to) of every card (`facets`): what a `list` line shows and filters
        on, and what says whether its confidence may have decayed (as `card_clocks`), read from
        one narrow table with no JSON to decode (a scan and a sort in Python cost less than reading
        them through an index in title order). Empty project, scope, agent and valid_to come as None:
        most cards have none, and None costs no object per row (10,000 rows read ~40% faster)."""
        return self.db.execute("SELECT path, docid, card_id, title, type, domain, NULLIF(project, ''), "
                               "NULLIF(scope, ''), NULLIF(agent, ''), status, confidence, stated, ctime_s, since, "
                               "NULLIF(valid_to, '') FROM facets").fetchall()

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

    def tag_counts(self, leave_out: Iterable[int] = ()) -> dict[str, int]:
        """How many cards have each tag, leaving out the cards `leave_out` (docids)."""
        counts = dict(self.db.execute("SELECT tag, count(*) FROM card_tags GROUP BY tag"))
        ids = list(leave_out)
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            for (tag,) in self.db.execute(f"SELECT tag FROM card_tags WHERE docid IN ({','.join('?' * len(chunk))})",
                                          chunk):
                counts[tag] -= 1
        return {tag: n for tag, n in counts.items() if n}

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
        """The card's folder mtime and the card's own (size, mtime, inode), taken just before a
        write and passed to `wrote` after it."""
        root = str(self.vault.root)
        try:
            folder = os.stat(os.path.join(root, rel.rpartition("/")[0])).st_mtime_ns
        except OSError:
            folder = None
        return Stamps(folder, _file_stamp(os.path.join(root, rel)))

    def wrote(self, rel: str, before: Stamps, after: Stamps, unchanged_text: str | None = None) -> None:
        """Pass on a card file this process has just written (write-through), so the next search
        does not list its folder again for a change the index already holds. `before` and
        `after` are `stamps(rel)` taken just before and just after the write.

        The card is re-indexed; or, when `unchanged_text` is the text just written and nothing
        the postings hold changed (`record` only moves `confidence`), and the index held the file
        as it was before the write, only its stamp and stored fields are updated: if the file on
        disk is still that text, its size, mtime and inode are stored (taken before the read, so
        a later change shows) with its `card_meta`. See `wrote_files` for the folder's stamp.
        """
        self.wrote_files({rel: (before, after)}, {rel: unchanged_text} if unchanged_text is not None else None)

    def wrote_files(self, stamps: dict[str, tuple[Stamps, Stamps]],
                    unchanged: dict[str, str] | None = None) -> None:
        """`wrote` for the card files one operation wrote or removed (an update that renames,
        a delete and its cascade, a link): `stamps` maps each vault-relative path in Playbooks/
        to its (before, after) `stamps`; `unchanged` maps a path to its text when only fields
        outside the postings changed (see `wrote`). A removed file is dropped from the index.

        When every `before` stamp of a folder equals the stamp the index holds, the folder had
        not changed since the index last looked, and its stamp moves to the mtime after the
        writes (when every `after` agrees). A change another program made between the stamps
        would then go unseen by the mtime check; the listing of every folder when the sweep
        wraps bounds that (module docstring). The stored listing is left as it was: a later
        relist sees these files as changed and re-reads them once more.

        This step is optional (the next search would find the change anyway), so it waits for
        the index at most briefly and gives up quietly rather than hold up or fail the write.
        """
        unchanged = unchanged or {}
        root = str(self.vault.root)
        try:
            self.db.execute("PRAGMA busy_timeout = 250")
            self.db.execute("BEGIN IMMEDIATE")
            reindex, folders = [], {}
            for rel, (before, after) in stamps.items():
                folder, _, name = rel.rpartition("/")
                folders.setdefault(folder, []).append((before.folder, after.folder))
                path = os.path.join(root, rel)
                text = unchanged.get(rel)
                held = self.db.execute("SELECT size, mtime_ns, inode FROM docs WHERE folder = ? AND name = ? "
                                       "AND problem IS NULL", (folder, name)).fetchone()
                now = _file_stamp(path)
                if not (text is not None and held is not None and before.file == held and now
                        and _reads(path, text)):
                    reindex.append(rel)
                    continue
                self.db.execute("UPDATE docs SET size = ?, mtime_ns = ?, inode = ? WHERE folder = ? AND name = ?",
                                (*now, folder, name))
                # The postings stand, but the stored fields lists show (the confidence) moved.
                card = card_from_text(self.vault, Path(path), text)
                card.ctime_ns = os.stat(path).st_ctime_ns
                self.db.execute("UPDATE doc_data SET meta = ? WHERE docid = (SELECT docid FROM docs WHERE folder = ? "
                                "AND name = ?)", (json.dumps(card_meta(card), ensure_ascii=False), folder, name))
                self.db.execute("UPDATE facets SET (type, domain, project, scope, agent, status, confidence, stated, "
                                "ctime_s, path, card_id, title, since, valid_to) = "
                                f"({', '.join('?' * 14)}) WHERE docid = (SELECT docid FROM docs "
                                "WHERE folder = ? AND name = ?)", (*card_facets(card), folder, name))
            if reindex:
                _Refresher(self.vault, self.db, self.analyse, None).reindex_paths(reindex, in_transaction=True)
            for folder, pairs in folders.items():
                row = self.db.execute("SELECT mtime_ns FROM folders WHERE path = ?", (folder,)).fetchone()
                befores, afters = {b for b, _ in pairs}, {a for _, a in pairs}
                if row and befores == {row[0]} and len(afters) == 1 and None not in afters:
                    self.db.execute("UPDATE folders SET mtime_ns = ? WHERE path = ?", (afters.pop(), folder))
            self.db.execute("COMMIT")
        except BaseException as exc:
            _rollback(self.db)
            # Trigger: the index is busy past the short wait, damaged, or a card unreadable.
            # Why: the cards are already written, and the index is a cache. Outcome: nothing is
            # stored; the next search sees the folders' new mtimes and indexes the cards then.
            if not isinstance(exc, (sqlite3.Error, OSError)):
                raise


def commit_written_through(writer, effects: list, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`writer.commit(effects, events)` (journal.Writer), then the card files it wrote or
    removed in Playbooks/ passed to the index when there is one (`Index.wrote_files`), so the
    next read does not list their folders again. Returns the events."""
    from .analysis import card_fields

    vault = writer.vault
    rels = [rel for rel in dict.fromkeys(vault.rel(effect.path) for effect in effects)
            if rel.startswith(ROOT_FOLDER + "/")]
    index = Index.existing(vault, card_fields) if rels else None
    if index is None:
        return writer.commit(effects, events)
    try:
        before = {rel: index.stamps(rel) for rel in rels}
        done = writer.commit(effects, events)
        index.wrote_files({rel: (before[rel], index.stamps(rel)) for rel in rels})
    finally:
        index.close()
    return done


def _connect(path, wal_wait: float = _WAL_SWITCH_WAIT) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=_BUSY_TIMEOUT, isolation_level=None)
    try:
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            _switch_to_wal(db, wal_wait)
        db.execute("PRAGMA synchronous=OFF")  # a cache: see the module docstring
    except BaseException:
        db.close()
        raise
    return db


def _switch_to_wal(db: sqlite3.Connection, wait: float) -> None:
    """Switch a new index file to WAL. The switch needs the file to itself, and SQLite answers
    "database is locked" at once instead of waiting when several processes open a new index
    together, so it is retried for up to `wait` seconds."""
    import time

    deadline = time.monotonic() + wait
    db.execute("PRAGMA busy_timeout = 100")  # short waits, retried: no 60 s wait on one holder
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL").fetchone()
            break
        except sqlite3.OperationalError as exc:
            if _code(exc) not in (_SQLITE_BUSY, _SQLITE_LOCKED) or time.monotonic() >= deadline:
                raise
        time.sleep(0.01)
    db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT * 1000}")  # back to what `_connect` set


def _rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction without hiding the error that failed it: after some errors (a
    full disk, an I/O error) SQLite has already rolled back, and a ROLLBACK would raise "cannot
    rollback - no transaction is active" in place of the real error."""
    if db.in_transaction:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass  # the transaction is gone either way; the caller raises the first error


class _Snapshot:
    """Every read inside sees one snapshot of the database: a read transaction (`BEGIN`, which
    takes its snapshot at the first read), unless a transaction is already open. Separate
    statements would each see the latest commit, so a row read by one could be gone (or moved
    to another rowid by `INSERT OR REPLACE`) by the next."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.began = False

    def __enter__(self) -> None:
        if not self.db.in_transaction:
            self.db.execute("BEGIN")
            self.began = True

    def __exit__(self, exc_type, exc, traceback) -> None:
        if not (self.began and self.db.in_transaction):
            return
        if exc_type is None:
            self.db.execute("COMMIT")  # it only read: this just ends the snapshot
        else:
            _rollback(self.db)  # quietly: the error that ended the block is the one to see


def _code(exc: BaseException) -> int:
    """SQLite's primary result code of an error (0 when it has none)."""
    return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF


def _damaged(exc: BaseException) -> bool:
    """Whether an error says the file is damaged or not a database at all (the only errors
    that may replace it: a busy, full, read-only or racing database is not damage)."""
    return isinstance(exc, _Damaged) or (isinstance(exc, sqlite3.DatabaseError)
                                         and _code(exc) in (_SQLITE_CORRUPT, _SQLITE_NOTADB))


def _inode(path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


def _share(cache_dir, wait: bool = True) -> int:
    """Open `index.lock` beside the index and hold it shared: every process holds it while its
    connection is open, so no one deletes the file under it. The descriptor holds the lock until
    it is closed. Waits only while another process replaces a damaged file (an unlink or three);
    with `wait` off, raises BlockingIOError then."""
    fd = os.open(os.path.join(cache_dir, "index.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH if wait else fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _replace_damaged(path, lock: int, inode: int | None, wait: float) -> bool:
    """Delete the damaged index file (`inode`), if no other process holds it, so that it is
    built again; waits up to `wait` seconds for the others. Returns whether it may be built
    again now (also when another process already replaced it). `lock` is held shared again on
    return, whatever happened."""
    import time

    deadline = time.monotonic() + wait
    # flock cannot turn a shared lock into an exclusive one atomically; it is dropped first,
    # which is harmless: the file is deleted only under the exclusive lock and when it is
    # still the damaged one.
    fcntl.flock(lock, fcntl.LOCK_UN)
    try:
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
            time.sleep(0.05)
        if inode is not None and _inode(path) == inode:
            _delete(path)
        return True
    finally:
        fcntl.flock(lock, fcntl.LOCK_SH)


def _trouble_with(vault: Vault, exc: BaseException, in_use: bool = False) -> Trouble:
    """What is wrong with the index file, from the error that kept it from use, and the fix."""
    rel = ".brain/cache/index.sqlite"
    reindex = "run `brain reindex`"
    if in_use:
        return Trouble(f"the search index {rel} is damaged and other processes still have it open",
                       f"{reindex} once they have finished")
    for folder in (vault.brain_dir, vault.cache_dir):
        if os.path.lexists(folder) and not os.path.isdir(folder):
            return Trouble(f"{vault.rel(folder)} is not a folder, so the search index cannot be kept",
                           f"move {folder} away, then {reindex}")
    path = vault.cache_dir / "index.sqlite"
    if _is_dir(str(path)):
        return Trouble(f"{rel} is a directory, not the search index", f"remove it (rm -r {path}), then {reindex}")
    if _damaged(exc):
        return Trouble(f"the search index {rel} is damaged ({exc})", reindex)
    # SQLITE_FULL; SQLITE_IOERR_SHMSIZE, when there is no room to grow the `-shm` file; ENOSPC, EDQUOT.
    if _code(exc) == _SQLITE_FULL or getattr(exc, "sqlite_errorcode", None) == _SQLITE_IOERR_SHMSIZE \
            or getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT):
        return Trouble(f"cannot write the search index {rel}: the disk is full", f"free some space, then {reindex}")
    if _code(exc) in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return Trouble(f"the search index {rel} stayed locked by another process", f"try again, or {reindex}")
    if isinstance(exc, OSError):
        cause = f"{_vault_rel(vault, exc.filename) or rel}: {exc.strerror or exc}"
    else:
        cause = f"{rel}: {exc}"
    return Trouble(f"cannot use the search index ({cause})",
                   f"make .brain/cache/ writable, or delete it, then {reindex}")


def _vault_rel(vault: Vault, filename) -> str | None:
    """A file name from an OSError as a vault-relative path; None when it is not inside."""
    try:
        return Path(os.fsdecode(filename)).relative_to(vault.root).as_posix()
    except (TypeError, ValueError):
        return None


def _delete(path) -> None:
    """Delete an index file and its WAL files: only under the exclusive lock (`_replace_damaged`)."""
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def _ensure_schema(db: sqlite3.Connection) -> bool:
    """Create the tables when the file is new or of another version; True when it did."""
    version = _VERSION
    if _version(db) == version:
        return False
    db.execute("BEGIN IMMEDIATE")
    try:
        created = _version(db) != version  # re-checked under the write lock: another process may have built it
        if created:
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                db.execute(f'DROP TABLE IF EXISTS "{table}"')
            # One statement at a time: executescript() would COMMIT and drop our write lock.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO info VALUES ('version', ?), ('doc_count', '0'), "
                       "('field_totals', '[0,0,0,0,0]')", (version,))
        db.execute("COMMIT")
    except BaseException:
        _rollback(db)
        raise
    return created


def _version(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


@record
class _Plan:
    """What a look at the disk found to do."""

    changes: Changes = factory(Changes)
    stamps: dict[str, int] = factory(dict)                      # folder -> mtime to store
    listings: dict[str, tuple[bytes, bytes]] = factory(dict)    # folder -> new (names, inodes)
    inode_patches: dict[str, list[tuple[int, int]]] = factory(dict)  # folder -> [(position, inode)]
    gone_folders: list[str] = factory(list)
    listed_gone: set[str] = factory(set)  # removed because the listing no longer has them
    sweep_next: int | None = None


class _Refresher:
    def __init__(self, vault: Vault, db: sqlite3.Connection, analyse, progress) -> None:
        self.vault = vault
        self.db = db
        self.analyse = analyse
        self.progress = progress
        self.root = str(vault.root)
        self.workers: int | None = None  # processes for a build (`_built`); None: decided by its size

    def run(self, full: bool, sweep: int | None) -> Changes:
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        # The look reads several statements (folders, listings by rowid, blobs, docs): one
        # snapshot, or a commit between two of them (another process's refresh) breaks it. It
        # is a separate read transaction, ended before the write lock is taken: a WAL snapshot
        # cannot be upgraded to a write once another process has committed.
        with _Snapshot(self.db):
            plan = self.look(full, sweep)
        if plan.changes or plan.stamps or plan.gone_folders:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                # Another process may have applied the same changes while we looked: then look
                # again under the lock (data_version moves when another connection commits).
                if self.db.execute("PRAGMA data_version").fetchone()[0] != version:
                    plan = self.look(full, sweep)
                self.apply(plan)
                self.db.execute("COMMIT")
            except BaseException:
                _rollback(self.db)
                raise
        if plan.sweep_next is not None:
            _write_hint(self.vault.cache_dir / "sweep", plan.sweep_next)
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

    def look(self, full: bool, sweep: int | None) -> _Plan:
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
            swept, plan.sweep_next, list_all = self._sweep_rows(sweep)
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
                (plan.changes.modified if existed else plan.changes.added).append(rel)
        for name in filter(None, map(_decode, gone)):
            rel = f"{folder}/{name}"
            if rel in known_folders:
                plan.gone_folders.append(rel)
            elif name[0] != "." and name.endswith(".md"):
                plan.changes.removed.append(rel)
                plan.listed_gone.add(rel)

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
        for folder, name, size, mtime in rows:
            rel = f"{folder}/{name}"
            if rel in planned:
                continue
            try:
                st = stat(f"{root}/{rel}")
            except OSError:
                try:  # a link that cannot be followed (a loop) is stored with its own stamp
                    st = os.lstat(f"{root}/{rel}")
                except OSError:
                    plan.changes.removed.append(rel)
                    continue
            if st.st_size != size or st.st_mtime_ns != mtime:
                plan.changes.modified.append(rel)

    def _sweep_rows(self, count: int) -> tuple[list[tuple[str, str, int, int]], int, bool]:
        """The next `count` indexed files after the remembered docid, where to go on next time,
        and whether this sweep wrapped around to the start."""
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

    def reindex_paths(self, rels: list[str], in_transaction: bool = False) -> list[str]:
        """Re-index these paths; returns those whose file was gone when read."""
        if not rels:
            return []
        if not in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
        try:
            info = dict(self.db.execute("SELECT key, value FROM info"))
            self.count = int(info["doc_count"])
            self.totals = json.loads(info["field_totals"])
            self.edits = _PostingEdits(self.db)
            unique = list(dict.fromkeys(rels))
            docids = {rel: self._remove(rel) for rel in unique}
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
                for number, rel in enumerate(unique, start=1):
                    if not self._add(rel, docids[rel]):
                        vanished.append(rel)
                    if self.edits.size >= _FLUSH_AT:
                        self.edits.flush()
                    if self.progress and (number % 500 == 0 or number == len(unique)):
                        self.progress(number, len(unique))
                self.edits.flush()
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

    def _add(self, rel: str, docid: int | None) -> bool:
        """Index the file (or record why it is not a card); False when there is no file."""
        entry = _read_entry(self.vault, self.analyse, rel)
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

    def _build(self, rels: list[str]) -> list[str]:
        """Index these new paths into an index with no postings yet; returns those whose file
        was gone when read. The cards are read and analysed a chunk of docids at a time (the
        docids a posting row holds), so each chunk's posting rows are made whole apart from the
        database: by worker processes for a large build (`_built`), else here. Docids are given in
        the order of `rels` (a file found gone leaves its docid unused), and the chunks are
        stored in that order, so the index is the same whatever the number of processes."""
        base = self.db.execute("SELECT coalesce(max(docid), 0) + 1 FROM docs").fetchone()[0]
        batches: list[list[tuple[int, str]]] = []
        for docid, rel in enumerate(rels, start=base):
            if not batches or docid >> CHUNK_BITS != batches[-1][0][0] >> CHUNK_BITS:
                batches.append([])
            batches[-1].append((docid, rel))
        vanished: list[str] = []
        done = 0
        results = _built(self.vault, self.analyse, batches, self.workers)
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
        docs, data, keys, links, facets, tags, postings, lengths, _ = built
        self.db.executemany("INSERT INTO docs (docid, folder, name, size, mtime_ns, inode, problem, line) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", docs)
        self.db.executemany("INSERT INTO doc_data VALUES (?, ?, ?, ?)", data)
        self.db.executemany("INSERT INTO card_keys VALUES (?, ?, ?, ?)", keys)
        self.db.executemany("INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", links)
        self.db.executemany(_INSERT_FACETS, facets)  # what `stats` counts
        self.db.executemany("INSERT OR IGNORE INTO card_tags VALUES (?, ?)", tags)
        self.db.executemany("INSERT INTO postings VALUES (?, ?, ?, ?)", postings)
        self.count += len(data)
        self.totals = [t + n for t, n in zip(self.totals, lengths)]


class _Entry:
    """What indexing one file stores, before it has a docid: its `docs` row; for a card also
    its `doc_data`, `card_keys`, `links`, `facets` and `card_tags` rows (what `stats` counts),
    field lengths and posting codes (term ->
    code, terms in the order the fields first hold them; in a bulk build, where the postings went
    straight into the chunk's rows, just those terms). `codes` is None for a file that is
    not a card (`doc` then says why)."""

    __slots__ = ("doc", "data", "key", "links", "facets", "tags", "lengths", "codes")

    def __init__(self, doc: tuple, data=None, key=None, links=(), facets=None, tags=(), lengths=None,
                 codes=None) -> None:
        self.doc, self.data, self.key, self.links = doc, data, key, links
        self.facets, self.tags, self.lengths, self.codes = facets, tags, lengths, codes


def _read_entry(vault: Vault, analyse, rel: str, codes=None) -> _Entry | None:
    """Read and analyse one file for the index; None when there is no file (gone since it was
    listed, or not a file). Touches no database: builds call it in worker processes.
    `codes(fields, lengths)` makes the entry's `codes` (default `_codes`): whatever it returns,
    iterated, gives the distinct terms in first-held order (`doc_data.terms`)."""
    folder, _, name = rel.rpartition("/")
    path = vault.root / rel
    try:
        stat = _stat_or_link(path)
        card = load_card(vault, path)  # the one safe reader: no FIFO, device or link out of the vault
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except (BadFrontmatter, NotACard, UnsafePath, IOProblem) as exc:
        line = exc.line if isinstance(exc, BadFrontmatter) else None
        # A folder of the vault that leads outside it is the vault's fault, not the file's:
        # stored with a size no file has, so the sweep reads it again once the link is fixed.
        size = -1 if isinstance(exc, UnsafeVault) else stat.st_size
        return _Entry((folder, name, size, stat.st_mtime_ns, stat.st_ino, problem_of(exc), line))
    from ..vault.wikilinks import card_links, link_name  # only indexing pays for it

    fields = analyse(card)
    lengths = [len(fields[field]) for field in FIELDS]
    codes = (codes or _codes)(fields, lengths)
    data = (json.dumps(lengths), json.dumps(card_meta(card), ensure_ascii=False), "\n".join(codes))
    key = (card.id, link_name(card.path.stem), link_name(card.title))
    links = [(link.get("to"), link.get("name"), link["rel"], link["weight"], link.get("reason"),
              link.get("version"), link.get("created"), link.get("updated")) for link in card_links(card)]
    return _Entry((folder, name, stat.st_size, stat.st_mtime_ns, stat.st_ino, None, None),
                  data, key, links, card_facets(card), list(dict.fromkeys(card.tags)), lengths, codes)


def card_facets(card: Card) -> tuple:
    """The card's `facets` row after its docid: what `stats` counts, `audit` starts from and a
    `list` line shows."""
    from ..vault.kinds import state_since  # only indexing pays for it

    text = card.text_field
    stated = parse_time(card.meta.get("updated")) or parse_time(card.meta.get("created"))
    return (card.type, card.domain, text("project"), text("scope"), text("agent"), card.status,
            card.stored_confidence, stated.timestamp() if stated else None, card.ctime_ns // 1_000_000_000,
            card.rel, card.id, card.title, state_since(card), text("valid_to"))


def _codes(fields: dict[str, list[str]], lengths: list[int]) -> dict[str, int]:
    """Each distinct term's posting code (`encode_code` of its per-field frequencies), terms in
    the order the fields (FIELDS order) first hold them. Fields take disjoint bits of a code, so
    a field's part is OR-ed in: counting is done in C (Counter), and the few terms of the small
    fields are merged with the body's in one pass, not a list of five counts per term."""
    from collections import Counter

    codes: dict[str, int] = {}
    for position, field in enumerate(FIELDS):
        if not fields[field]:
            continue
        counts = Counter(fields[field])
        tf_shift, tf_cap, (length_cap, length_shift) = _FIELD_PARTS[position]
        fixed = min(lengths[position], length_cap) << length_shift  # the same for every term of the field
        if max(counts.values()) > tf_cap:
            counts = {term: min(count, tf_cap) for term, count in counts.items()}
        known = codes.get
        codes.update({term: known(term, 0) | fixed | (count << tf_shift) for term, count in counts.items()})
    return codes


def _built(vault: Vault, analyse, batches: list[list[tuple[int, str]]], workers: int | None):
    """`_build_batch` of each batch, in order: across a pool of `workers` processes (None: one
    per core when the build is large, `_PARALLEL_FROM` cards), else in this process."""
    cards = sum(map(len, batches))
    if workers is None:
        workers = (os.cpu_count() or 1) if cards >= _PARALLEL_FROM else 1
    workers = min(workers, len(batches))
    if workers <= 1:
        for batch in batches:
            yield _build_batch(vault, analyse, batch, CHUNK_BITS)
        return
    # Imported here: only a large build pays for it, not every search's start-up.
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    done = 0
    # Workers are forked: they start at once, and share what this process has loaded. A pipe
    # only this process can write to tells them when it dies (`_worker_setup`).
    alive = os.pipe()
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"),
                                 initializer=_worker_setup, initargs=(vault, analyse, alive)) as pool:
            pending: deque = deque()  # a few batches ahead of the one stored, not all: memory stays flat
            for batch in batches:
                pending.append(pool.submit(_worker_batch, batch, CHUNK_BITS))  # this process's value
                # Four per worker: on real text a store takes most of a worker's batch time,
                # and with two queued a worker sat idle until this process asked for more.
                if len(pending) > 4 * workers:
                    yield pending.popleft().result()
                    done += 1
            while pending:
                yield pending.popleft().result()
                done += 1
    except BrokenProcessPool:
        # Trigger: a worker process died (killed, out of memory). Why: the cards are not at
        # fault, and the build must finish. Outcome: the chunks not yet stored are built here.
        for batch in batches[done:]:
            yield _build_batch(vault, analyse, batch, CHUNK_BITS)
    finally:
        os.close(alive[0])
        os.close(alive[1])


_WORKER: tuple[Vault, Any] | None = None  # a build worker's vault and analyser (`_worker_setup`)


def _worker_setup(vault: Vault, analyse, alive: tuple[int, int]) -> None:
    global _WORKER
    _WORKER = (vault, analyse)
    # Trigger: the building process is killed. Why: a worker waits for work forever, and it
    # holds what it inherited, `index.lock` included, which would keep a damaged index from
    # ever being replaced. Outcome: the read end of `alive` sees end-of-file once no writer is
    # left (each worker closes its copy), and the worker exits.
    import threading

    os.close(alive[1])
    threading.Thread(target=_exit_with_parent, args=(alive[0],), daemon=True).start()
    # A worker only makes rows and hands them back: what it allocates holds no cycles, and
    # the collector's passes over its growing caches cost ~10% of its time.
    import gc

    gc.disable()


def _exit_with_parent(fd: int) -> None:
    os.read(fd, 1)  # nothing is ever written: returns only at end-of-file
    os._exit(1)


def _worker_batch(batch: list[tuple[int, str]], chunk_bits: int):
    return _build_batch(*_WORKER, batch, chunk_bits)


def _build_batch(vault: Vault, analyse, batch: list[tuple[int, str]], chunk_bits: int):
    """The rows of one chunk of new documents (`_Refresher._build`): (docs, doc_data,
    card_keys, links, facets, card_tags, postings rows, summed field lengths, paths gone when read). Each posting
    row is whole: every document of the chunk that holds the term, docids ascending."""
    docs, data, keys, links, facets, tags, gone = [], [], [], [], [], [], []
    totals = [0] * len(FIELDS)
    by_term: dict[str, list[int]] = {}  # term -> docid, code, docid, code, ... (docids ascending)
    for docid, rel in batch:
        # The postings go straight into `by_term` (`_file_postings`): no dict of codes per card.
        entry = _read_entry(vault, analyse, rel,
                            lambda fields, lengths: _file_postings(by_term, docid, fields, lengths))
        if entry is None:
            gone.append(rel)
            continue
        docs.append((docid, *entry.doc))
        if entry.codes is None:
            continue
        data.append((docid, *entry.data))
        keys.append((docid, *entry.key))
        links += [(docid, *link) for link in entry.links]
        facets.append((docid, *entry.facets))
        tags += [(tag, docid) for tag in entry.tags]
        totals = [t + n for t, n in zip(totals, entry.lengths)]
    return docs, data, keys, links, facets, tags, _posting_rows(by_term, batch[0][0] >> chunk_bits), totals, gone


def _posting_rows(by_term: dict[str, list[int]], chunk: int) -> list[tuple[str, int, bytes, bytes]]:
    """The chunk's `postings` rows, in term order (SQLite then inserts into neighbouring pages of
    its B-tree). The chunk's docids and codes are packed into two arrays at once, and each row
    takes a slice of their bytes: a chunk of real text has ~30,000 rows, mostly of one or two
    postings, for which making two small arrays each cost more than the rows' data."""
    terms = sorted(by_term)
    flat: list[int] = []  # docid, code, docid, code, ... of every row in turn
    ends = []
    for term in terms:
        flat += by_term[term]
        ends.append(len(flat) >> 1)
    docids, codes = array("I", flat[0::2]), array("Q", flat[1::2])
    size, wide = docids.itemsize, codes.itemsize
    docids, codes = docids.tobytes(), codes.tobytes()
    rows = []
    start = 0
    for term, end in zip(terms, ends):
        rows.append((term, chunk, docids[start * size:end * size], codes[start * wide:end * wide]))
        start = end
    return rows


def _file_postings(by_term: dict[str, list[int]], docid: int, fields: dict[str, list[str]],
                   lengths: list[int]) -> list[str]:
    """Add one document's postings to `by_term` (term -> docid, code, docid, code, ...), the
    codes `_codes` gives, in one Python step per posting rather than two (a dict of codes, then
    a pass over it): the body's terms, most of a build's ~300 postings per card, go straight in,
    and only the few terms of the other fields are merged first. Returns the distinct terms in
    first-held order, as `_codes` holds them."""
    small = _codes({**fields, "body": []}, lengths)  # every field but the body (FIELDS' last)
    tf_shift, tf_cap, (length_cap, length_shift) = _FIELD_PARTS[-1]
    fixed = min(lengths[-1], length_cap) << length_shift
    counts = Counter(fields["body"])
    if counts and max(counts.values()) > tf_cap:
        counts = Counter({term: min(count, tf_cap) for term, count in counts.items()})
    known = by_term.get
    for term, code in small.items():
        tf = counts.pop(term, 0)
        if tf:
            code |= fixed | (tf << tf_shift)
        pairs = known(term)
        if pairs is None:
            by_term[term] = [docid, code]
        else:
            pairs += docid, code
    for term, tf in counts.items():  # the one step per posting: kept to the bone
        pairs = known(term)
        if pairs is None:
            by_term[term] = [docid, fixed | (tf << tf_shift)]
        else:
            pairs += docid, fixed | (tf << tf_shift)
    return [*small, *counts]


class _PostingEdits:
    """Posting changes gathered in memory, then written with one read and one write per
    (term, chunk) row they touch."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.drops: dict[tuple[str, int], set[int]] = {}
        self.adds: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.size = 0
        # Chunks from this one on have no row yet: no need to read them. Known only when the
        # table starts empty (a first build or `reindex`), where it saves a lookup per row.
        self.unwritten_from = 0 if db.execute("SELECT 1 FROM postings LIMIT 1").fetchone() is None else None

    def drop(self, docid: int, terms: Iterable[str]) -> None:
        chunk = docid >> CHUNK_BITS
        for term in terms:
            if term:
                self.drops.setdefault((term, chunk), set()).add(docid)

    def add(self, docid: int, codes: dict[str, int]) -> None:
        chunk = docid >> CHUNK_BITS
        adds = self.adds
        for term, code in codes.items():
            key = (term, chunk)
            pending = adds.get(key)
            if pending is None:
                adds[key] = [(docid, code)]
            else:
                pending.append((docid, code))
        self.size += len(codes)

    def flush(self) -> None:
        writes, deletes = [], []
        unwritten_from = self.unwritten_from
        keys = sorted(self.adds.keys() | self.drops.keys())
        stored = self._read([key for key in keys if unwritten_from is None or key[1] < unwritten_from])
        for key in keys:
            docids, codes = array("I"), array("Q")
            row = stored.get(key)
            if row:
                docids.frombytes(row[0])
                codes.frombytes(row[1])
            for docid in self.drops.get(key, ()):
                at = bisect_left(docids, docid)
                if at < len(docids) and docids[at] == docid:
                    del docids[at], codes[at]
            new = self.adds.get(key)
            if new:
                new.sort()
                if not docids or new[0][0] > docids[-1]:  # the usual case: newer docids go last
                    docids.extend([docid for docid, _ in new])
                    codes.extend([code for _, code in new])
                else:
                    for docid, code in new:
                        at = bisect_left(docids, docid)
                        docids.insert(at, docid)
                        codes.insert(at, code)
            if docids:
                writes.append((*key, docids.tobytes(), codes.tobytes()))
            else:
                deletes.append(key)
        self.db.executemany("INSERT OR REPLACE INTO postings VALUES (?, ?, ?, ?)", writes)
        self.db.executemany("DELETE FROM postings WHERE term = ? AND chunk = ?", deletes)
        if unwritten_from is not None and writes:
            self.unwritten_from = max(unwritten_from, max(chunk for _, chunk, _, _ in writes) + 1)
        self.drops.clear()
        self.adds.clear()
        self.size = 0

    def _read(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], tuple[bytes, bytes]]:
        """The stored rows of these (term, chunk) keys: one query per chunk and 500 terms."""
        by_chunk: dict[int, list[str]] = {}
        for term, chunk in keys:
            by_chunk.setdefault(chunk, []).append(term)
        found = {}
        for chunk, terms in by_chunk.items():
            for start in range(0, len(terms), 500):
                batch = terms[start:start + 500]
                for term, docids, codes in self.db.execute(
                        f"SELECT term, docids, codes FROM postings WHERE chunk = ? AND term IN "
                        f"({','.join('?' * len(batch))})", (chunk, *batch)):
                    found[term, chunk] = (docids, codes)
        return found


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


def _file_stamp(path: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns, st.st_ino


def _reads(path: str, text: str) -> bool:
    """Whether the file holds exactly `text`."""
    try:
        with open(path, "rb") as handle:
            return handle.read() == text.encode("utf-8")
    except OSError:
        return False


def _stat_or_link(path) -> os.stat_result:
    """The file's stamp; for a link that cannot be followed (a loop, a missing target: stored as
    a problem), the link's own."""
    try:
        return os.stat(path)
    except OSError:
        return os.lstat(path)


def _is_dir(path: str) -> bool:
    try:
        return S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


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
