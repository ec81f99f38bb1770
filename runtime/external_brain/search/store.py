"""The search index's file (`.brain/cache/index.sqlite`): its schema, what its rows hold, and
the SQLite connection to it. Everything the other index modules (`index`, `refresh`, `build`)
share lives here, below them all, so none of them imports another back.

What it promises:
- A file is used only when its version (`_VERSION`: the schema, the analyser, the byte order)
  is ours; any other is emptied and made again (`_ensure_schema`), never read.
- Concurrent readers and writers are safe: SQLite in WAL mode (`_connect`); `_Snapshot` makes a
  run of reads see one snapshot, and `_rollback` ends a failed transaction without hiding the
  error that failed it.
- No file is pulled from under another process: every process holds a shared `flock` on
  `index.lock` beside the index while its connection is open (`_share`), and a damaged file
  (SQLite says SQLITE_CORRUPT or SQLITE_NOTADB: `_damaged`; no other error is taken for damage)
  is deleted only under the exclusive lock, taken without waiting (`_replace_damaged`).
- Why a file cannot be used is told in one line with its fix (`_trouble_with`, `Trouble`).

Postings: one row per (term, chunk of 1,024 docids) holding two packed arrays, the sorted docids
and their posting codes, so a term with 6,000 documents is a dozen rows, not 6,000. A code packs
the term's frequency in each field and the length of each field it occurs in (`encode_code`), so
scoring needs no second lookup. Frequencies and lengths are capped (`_LAYOUT`); the caps are far
above what a card holds except a body over 65,535 terms, which then counts as that long. A
changed document keeps its docid, so re-indexing it rewrites one chunk row per term.

The index is a cache, so it runs with `synchronous=OFF`: a process crash loses nothing (SQLite's
WAL is still atomic), and after an OS crash or power cut a damaged file is detected (corruption
raises, and the file is rebuilt) or, at worst, a few cards are stale until `reindex`.
"""

from __future__ import annotations

import errno
import json
import fcntl
import os
import sqlite3
import sys
from pathlib import Path
from stat import S_ISDIR
from typing import Any

from ..vault.valueclass import factory, valueclass
from ..vault.storage import Card, Vault, parse_time
from .analysis import ANALYSER_VERSION

SCHEMA_VERSION = 19  # 9: meta holds what list and audit show (`front`, `ctime_ns`); 10: facets, card_tags;
# 11: facets hold the numbers `audit` starts from (confidence, stated date, ctime); 12: and what a `list` line shows;
# 13: 1,024 docids a posting row (`build.CHUNK_BITS`), not 512; 14: `fresh` and `stale` (`build._DeltaEdits`);
# 15: `facets.sort_key` and `facets_listing`, which give a listing's rows in its order; 16: `doc_data.meta` holds
# `inline_tags` and `aliases`, and link names (`card_keys`, `links.target_name`) are in NFC;
# 17: `front` holds `memory_type` (success/failure/note, docs/compatibility.md; type filters read it);
# 18: `tags`, each tag's card count, kept by triggers on `card_tags` (`_TRIGGERS`), and `info.changes`, a stamp
# every write of a `docs` row moves (`Index.change_stamp`); 19: `tags.first_term` and `tags.terms`, each tag's
# index terms (`analyse_new_tags`), so a create reads only the tags its text names
_VERSION = f"{SCHEMA_VERSION}/{ANALYSER_VERSION}/{sys.byteorder}"  # the arrays are in native byte order
FIELDS = ("title", "aliases", "tags", "meta", "body")  # the body last: `_file_postings` counts on it
ROOT_FOLDER = "Playbooks"
_SQLITE_BUSY, _SQLITE_LOCKED, _SQLITE_FULL, _SQLITE_CORRUPT, _SQLITE_NOTADB = 5, 6, 13, 11, 26
_SQLITE_IOERR_SHMSIZE = 4874   # an extended code: SQLITE_IOERR | (19 << 8)
POSTINGS_CHUNK_KEY = "postings_chunk:"   # `info` keys counting the changes to each chunk's rows (`build.postings_moved`)
_BUSY_TIMEOUT = 60             # seconds a statement waits for another process's write lock
_WAL_SWITCH_WAIT = 10.0        # seconds to retry switching a new index to WAL while others race

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
CREATE TABLE fresh (                -- the postings of the cards written since the last fold, a row each
    term TEXT NOT NULL,             -- (`build._DeltaEdits`): a card written costs a row a term here, not
    docid INTEGER NOT NULL,         -- a read and a write of each of its terms' rows in `postings`
    code INTEGER NOT NULL,
    PRIMARY KEY (term, docid)
) WITHOUT ROWID;
CREATE TABLE stale (                -- the cards whose rows in `postings` are out of date: left out of
    docid INTEGER PRIMARY KEY,      -- them by readers: the postings it has now, if any, are in `fresh`
    terms TEXT NOT NULL             -- the terms `postings` still holds it under, for the fold to drop
);
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
    valid_to TEXT NOT NULL,
    sort_key TEXT NOT NULL          -- the title case-folded: `list` orders by it, then by path
);
CREATE INDEX facets_all ON facets (type, domain, project, scope, agent, status);  -- GROUP BY without a sort
CREATE INDEX facets_listing ON facets (sort_key, path, docid, card_id, title, type, domain, project, scope, agent,
    status, confidence, stated, ctime_s, since, valid_to);  -- every column `Index.listed_rows` reads, in order
CREATE INDEX facets_scoped ON facets (scope) WHERE scope != '';
CREATE TABLE card_tags (            -- each card's distinct tags (`card_meta` tags)
    tag TEXT NOT NULL,
    docid INTEGER NOT NULL,
    PRIMARY KEY (tag, docid)
) WITHOUT ROWID;
CREATE INDEX card_tags_docid ON card_tags (docid);
CREATE TABLE tags (                 -- each tag at least one card has, and how many: what a create's suggested
    tag TEXT PRIMARY KEY,           -- tags read instead of a DISTINCT over every row of `card_tags`. Rows added
    cards INTEGER NOT NULL,         -- and removed only by `_TRIGGERS`, in the statement that writes `card_tags`:
    first_term TEXT,                -- the tag's first index term ('' when it has none or is one character),
    terms TEXT                      -- and all of them as a JSON list: NULL until `analyse_new_tags` writes them
) WITHOUT ROWID;
CREATE INDEX tags_first_term ON tags (first_term);  -- the tags a text names, and those not analysed yet
"""
# Trigger: a row of `card_tags` inserted, deleted or changed, by any writer (a refresh, a
# restamp, a build, a rebuild's emptying). Why: `tags` must hold exactly the tags `card_tags`
# has, whatever process wrote it and whatever instant it died at. Outcome: SQLite updates `tags`
# inside the same statement, so in the same transaction: both are committed, or neither.
# (`INSERT OR IGNORE` of a row already there inserts nothing and fires nothing.)
_TRIGGERS = (
    """CREATE TRIGGER card_tag_added AFTER INSERT ON card_tags BEGIN
    INSERT INTO tags (tag, cards) VALUES (new.tag, 1) ON CONFLICT (tag) DO UPDATE SET cards = cards + 1;
END""",
    """CREATE TRIGGER card_tag_removed AFTER DELETE ON card_tags BEGIN
    UPDATE tags SET cards = cards - 1 WHERE tag = old.tag;
    DELETE FROM tags WHERE tag = old.tag AND cards <= 0;
END""",
    """CREATE TRIGGER card_tag_changed AFTER UPDATE OF tag ON card_tags BEGIN
    UPDATE tags SET cards = cards - 1 WHERE tag = old.tag;
    DELETE FROM tags WHERE tag = old.tag AND cards <= 0;
    INSERT INTO tags (tag, cards) VALUES (new.tag, 1) ON CONFLICT (tag) DO UPDATE SET cards = cards + 1;
END""",
    # Every change to what the index holds of a card writes its `docs` row (indexed, re-indexed,
    # restamped, removed, a rebuild's emptying): each moves `info.changes` (`Index.change_stamp`).
    """CREATE TRIGGER doc_added AFTER INSERT ON docs BEGIN
    UPDATE info SET value = value + 1 WHERE key = 'changes';
END""",
    """CREATE TRIGGER doc_removed AFTER DELETE ON docs BEGIN
    UPDATE info SET value = value + 1 WHERE key = 'changes';
END""",
    """CREATE TRIGGER doc_changed AFTER UPDATE ON docs BEGIN
    UPDATE info SET value = value + 1 WHERE key = 'changes';
END""",
)


def tag_terms(tag: str) -> list[str]:
    """The index terms a tag is suggested by (`cards.suggested_tags`): `analysis.tokens(tag)`,
    none for a one-character tag (never suggested)."""
    from .analysis import tokens

    return tokens(tag) if len(tag) >= 2 else []


def analyse_new_tags(db: sqlite3.Connection) -> None:
    """Write the index terms (`tag_terms`) of each tag of `tags` that has none yet (a tag new to
    the index: the triggers add it without them), in the caller's transaction.

    Trigger: any write of `card_tags` (a refresh, a restamp, a build). Why: a create's suggested
    tags need each tag's terms, and analysing or loading the vault's ~2,800 tags (10,000 cards)
    cost every CLI create ~20 M instructions. Outcome: each tag is analysed once, by the writer
    that first gives a card that tag; a create reads the few its text names (`Index.tags_filed`),
    and analyses itself any a writer left without terms (none of ours does)."""
    new = [tag for (tag,) in db.execute("SELECT tag FROM tags WHERE first_term IS NULL")]
    if new:
        rows = []
        for tag in new:
            terms = tag_terms(tag)
            rows.append((terms[0] if terms else "", json.dumps(terms, ensure_ascii=False), tag))
        db.executemany("UPDATE tags SET first_term = ?, terms = ? WHERE tag = ?", rows)


_INSERT_FACETS = f"INSERT INTO facets VALUES ({', '.join('?' * 16)})"   # docid and `card_facets`


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


@valueclass
class Changes:
    """What a refresh found: vault-relative paths added, modified and removed."""

    added: list[str] = factory(list)
    modified: list[str] = factory(list)
    removed: list[str] = factory(list)

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)


# The frontmatter keys `list` and `audit` read besides the fields above (confidence and its
# decay, dates, kind and scope fields), stored as written so that a card rebuilt from the index
# (`cards.IndexedCard`) gives every reader the very values the file would.
LISTED_KEYS = ("confidence", "created", "updated", "valid_from", "valid_to", "scope", "agent", "project",
               "importance", "supersedes", "superseded_by", "memory_type")


def card_meta(card: Card) -> dict[str, Any]:
    """The per-document fields search filters on and hits show, stored with the postings;
    `front` and `ctime_ns` are what lists need besides (LISTED_KEYS). `inline_tags` (the body's
    `#tags`) count for `--tag` beside `tags`; `aliases` name the card for `get`."""
    from ..vault.markdown import inline_tags  # only indexing pays for it

    meta = card.meta
    return {
        "id": card.id, "title": card.title, "type": card.type, "domain": card.domain,
        "tags": card.tags, "inline_tags": inline_tags(card.body), "aliases": card.aliases,
        "project": card.text_field("project"), "status": card.status,
        "scope": card.text_field("scope"), "agent": card.text_field("agent"),
        "valid_from": card.text_field("valid_from") or card.text_field("created"),
        "valid_to": card.text_field("valid_to"),
        "front": {key: meta[key] for key in LISTED_KEYS if key in meta}, "ctime_ns": card.ctime_ns,
    }


def card_facets(card: Card) -> tuple:
    """The card's `facets` row after its docid: what `stats` counts, `audit` starts from and a
    `list` line shows."""
    from ..vault.kinds import state_since  # only indexing pays for it

    text = card.text_field
    stated = parse_time(card.meta.get("updated")) or parse_time(card.meta.get("created"))
    return (card.type, card.domain, text("project"), text("scope"), text("agent"), card.status,
            card.stored_confidence, stated.timestamp() if stated else None, card.ctime_ns // 1_000_000_000,
            card.rel, card.id, card.title, state_since(card), text("valid_to"), card.title.casefold())


def card_rows(card: Card) -> tuple[str, tuple, list[tuple], tuple, list[str]]:
    """A card's rows besides its postings, without its docid: `doc_data.meta` (JSON), `card_keys`,
    `links`, `facets` and `card_tags`: what indexing a card and restamping it both store."""
    from ..vault.wikilinks import card_links, link_name  # only a write to the index pays for it

    key = (card.id, link_name(card.path.stem), link_name(card.title))
    links = [(link.get("to"), link.get("name"), link["rel"], link["weight"], link.get("reason"),
              link.get("version"), link.get("created"), link.get("updated")) for link in card_links(card)]
    return (json.dumps(card_meta(card), ensure_ascii=False), key, links, card_facets(card),
            list(dict.fromkeys(card.tags)))


@valueclass(frozen=True)
class Trouble:
    """Why the index file cannot be used, in one line, and what fixes it."""

    problem: str
    fix: str

    def warning(self) -> str:
        return f"{self.problem}; this call used a temporary index in memory ({self.fix})"


class _Damaged(Exception):
    """SQLite's own check found the file damaged (an error would have said SQLITE_CORRUPT)."""


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
            for trigger in _TRIGGERS:   # their bodies hold `;`: one statement each
                db.execute(trigger)
            # `changes` starts at a random number in each file made, so a stamp read from one
            # file is never taken for another's (a file deleted and built again meanwhile).
            db.execute("INSERT INTO info VALUES ('version', ?), ('doc_count', '0'), "
                       "('field_totals', '[0,0,0,0,0]'), ('changes', abs(random() % 1000000000000000))", (version,))
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


def _is_dir(path: str) -> bool:
    try:
        return S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False
