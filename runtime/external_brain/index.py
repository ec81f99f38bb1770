"""The persistent, incremental search index in `.brain/cache/index.sqlite`.

What it promises:
- It is derived data. The cards are the truth: a missing, stale, corrupt or foreign index file is
  deleted and rebuilt, never trusted, and deleting it loses nothing.
- A search reads only what the query needs: the posting lists of the query's terms (a B-tree
  lookup each) and the rows of the documents it scores, not every card or a whole index file.
- It is brought up to date on every open by comparing the card files' sizes and mtimes with what
  it indexed, like zk: added, modified and removed cards are re-indexed, the rest untouched.
- Concurrent readers and writers are safe: SQLite in WAL mode, and refreshes take the write lock
  (`BEGIN IMMEDIATE`) before they re-check what changed, so two processes never index twice.

SQLite ships with Python's standard library; the ranking itself is ours (see `search`), the
database is only the posting store.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from .analysis import ANALYSER_VERSION
from .errors import BadFrontmatter, NotACard, UnsafePath
from .storage import Card, Problem, Vault, inside_vault, load_card

SCHEMA_VERSION = 1
FIELDS = ("title", "aliases", "tags", "meta", "body")
_SCHEMA = """
CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (
    docid INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    lengths TEXT NOT NULL,          -- JSON list of the field lengths, in FIELDS order
    meta TEXT NOT NULL              -- JSON of what filters and hits need
);
CREATE TABLE postings (
    term TEXT NOT NULL,
    docid INTEGER NOT NULL,
    tfs TEXT NOT NULL,              -- tf per field, then field lengths: see decode_posting
    PRIMARY KEY (term, docid)
) WITHOUT ROWID;
CREATE INDEX postings_doc ON postings (docid);
CREATE TABLE problems (
    path TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    line INTEGER,
    message TEXT NOT NULL
);
"""


@dataclass
class Changes:
    """What a refresh found: vault-relative paths added, modified and removed."""

    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.modified or self.removed)


@dataclass
class Stats:
    doc_count: int
    avg_lengths: tuple[float, ...]


def scan(vault: Vault, folders: Iterable[str] = ("Playbooks",)) -> dict[str, tuple[int, int]]:
    """Every card file under `folders`: vault-relative path -> (size, mtime_ns)."""
    found: dict[str, tuple[int, int]] = {}
    root_len = len(str(vault.root)) + 1
    stack = [str(vault.folder(f)) for f in folders]
    while stack:
        folder = stack.pop()
        try:
            entries = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        with entries:
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif name.endswith(".md"):
                    try:
                        st = entry.stat()
                    except OSError:
                        continue
                    found[entry.path[root_len:].replace(os.sep, "/")] = (st.st_size, st.st_mtime_ns)
    return found


def card_meta(card: Card) -> dict[str, Any]:
    """The per-document fields search filters on and hits show, stored with the postings."""
    return {
        "id": card.id, "title": card.title, "type": card.type, "domain": card.domain,
        "tags": card.tags, "project": card.text_field("project"), "status": card.status,
        "scope": card.text_field("scope"), "agent": card.text_field("agent"),
    }


def decode_posting(value: str) -> tuple[list[int], list[int]]:
    """A posting's per-field term frequencies and field lengths."""
    tfs, lengths = value.split(";")
    return [int(x) for x in tfs.split(",")], [int(x) for x in lengths.split(",")]


class Index:
    """An open index. Use `Index.open(vault)`; it is refreshed before it is returned."""

    def __init__(self, vault: Vault, db: sqlite3.Connection, changes: Changes) -> None:
        self.vault = vault
        self.db = db
        self.changes = changes

    # ------------------------------------------------------------------ opening

    @classmethod
    def open(cls, vault: Vault, analyse: Callable[[Card], dict[str, list[str]]],
             progress: Callable[[int, int], None] | None = None) -> "Index":
        path = vault.cache_dir / "index.sqlite"
        vault.cache_dir.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            try:
                db = _connect(path)
                _ensure_schema(db)
                changes = _refresh(vault, db, analyse, progress)
                return cls(vault, db, changes)
            except sqlite3.DatabaseError:
                # Trigger: a corrupt, truncated or foreign file. Why: a cache is never trusted.
                # Outcome: it is deleted and rebuilt from the cards (second attempt).
                if attempt == 2:
                    raise
                _delete(path)
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ reading

    def stats(self) -> Stats:
        info = dict(self.db.execute("SELECT key, value FROM info"))
        count = int(info.get("doc_count", 0))
        totals = json.loads(info.get("field_totals", "[0,0,0,0,0]"))
        return Stats(count, tuple(t / count if count else 0.0 for t in totals))

    def postings(self, term: str) -> list[tuple[int, str]]:
        """(docid, "tfs;lengths") for every document containing `term`; see `decode_posting`."""
        return self.db.execute("SELECT docid, tfs FROM postings WHERE term = ?", (term,)).fetchall()

    def docs(self, docids: Iterable[int]) -> dict[int, dict[str, Any]]:
        ids = list(docids)
        out: dict[int, dict[str, Any]] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for docid, path, lengths, meta in self.db.execute(
                    f"SELECT docid, path, lengths, meta FROM docs WHERE docid IN ({marks})", chunk):
                out[docid] = {"path": path, "lengths": json.loads(lengths), **json.loads(meta)}
        return out

    def problems(self) -> list[Problem]:
        return [Problem(p, line, message) for p, line, message in
                self.db.execute("SELECT path, line, message FROM problems ORDER BY path")]


def _connect(path) -> sqlite3.Connection:
    db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    return db


def _delete(path) -> None:
    for suffix in ("", "-wal", "-shm"):
        try:
            os.unlink(f"{path}{suffix}")
        except FileNotFoundError:
            pass


def _ensure_schema(db: sqlite3.Connection) -> None:
    version = f"{SCHEMA_VERSION}/{ANALYSER_VERSION}"
    if _version(db) == version:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if _version(db) != version:  # re-checked under the write lock: another process may have built it
            for table in ("info", "docs", "postings", "problems"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            # One statement at a time: executescript() would COMMIT and drop our write lock.
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.execute("INSERT INTO info VALUES ('version', ?), ('doc_count', '0'), "
                       "('field_totals', '[0,0,0,0,0]')", (version,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _version(db: sqlite3.Connection) -> str | None:
    try:
        row = db.execute("SELECT value FROM info WHERE key = 'version'").fetchone()
    except sqlite3.OperationalError:
        return None
    return row[0] if row else None


def _diff(on_disk: dict[str, tuple[int, int]], known: dict[str, tuple[int, int]]) -> Changes:
    changes = Changes()
    for rel, stamp in on_disk.items():
        seen = known.get(rel)
        if seen is None:
            changes.added.append(rel)
        elif seen != stamp:
            changes.modified.append(rel)
    changes.removed = [rel for rel in known if rel not in on_disk]
    return changes


def _known(db: sqlite3.Connection) -> dict[str, tuple[int, int]]:
    known = {path: (size, mtime) for path, size, mtime in db.execute("SELECT path, size, mtime_ns FROM docs")}
    known.update({path: (size, mtime) for path, size, mtime in
                  db.execute("SELECT path, size, mtime_ns FROM problems")})
    return known


def _refresh(vault: Vault, db: sqlite3.Connection, analyse, progress) -> Changes:
    on_disk = scan(vault)
    if not _diff(on_disk, _known(db)):
        return Changes()
    db.execute("BEGIN IMMEDIATE")
    try:
        changes = _diff(scan(vault), _known(db))  # again under the lock: the truth may have moved
        info = dict(db.execute("SELECT key, value FROM info"))
        count = int(info["doc_count"])
        totals = json.loads(info["field_totals"])
        for rel in changes.removed + changes.modified:
            count, totals = _remove(db, rel, count, totals)
        todo = changes.added + changes.modified
        for number, rel in enumerate(todo, start=1):
            count, totals = _add(vault, db, rel, count, totals, analyse)
            if progress and (number % 500 == 0 or number == len(todo)):
                progress(number, len(todo))
        db.execute("UPDATE info SET value = ? WHERE key = 'doc_count'", (str(count),))
        db.execute("UPDATE info SET value = ? WHERE key = 'field_totals'", (json.dumps(totals),))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return changes


def _remove(db: sqlite3.Connection, rel: str, count: int, totals: list[int]) -> tuple[int, list[int]]:
    row = db.execute("SELECT docid, lengths FROM docs WHERE path = ?", (rel,)).fetchone()
    if row:
        docid, lengths = row
        totals = [t - n for t, n in zip(totals, json.loads(lengths))]
        db.execute("DELETE FROM postings WHERE docid = ?", (docid,))
        db.execute("DELETE FROM docs WHERE docid = ?", (docid,))
        count -= 1
    db.execute("DELETE FROM problems WHERE path = ?", (rel,))
    return count, totals


def _add(vault: Vault, db: sqlite3.Connection, rel: str, count: int, totals: list[int],
         analyse) -> tuple[int, list[int]]:
    path = vault.root / rel
    try:
        stat = path.stat()
        if path.is_symlink():
            inside_vault(vault, path)
        card = load_card(vault, path)
    except FileNotFoundError:
        return count, totals  # deleted since the scan; the next refresh agrees
    except BadFrontmatter as exc:
        db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?, ?)",
                   (rel, stat.st_size, stat.st_mtime_ns, exc.line, f"bad frontmatter: {exc.problem}"))
        return count, totals
    except (NotACard, UnsafePath) as exc:
        db.execute("INSERT OR REPLACE INTO problems VALUES (?, ?, ?, ?, ?)",
                   (rel, stat.st_size, stat.st_mtime_ns, None, exc.message))
        return count, totals
    fields = analyse(card)
    lengths = [len(fields[name]) for name in FIELDS]
    cursor = db.execute("INSERT INTO docs (path, size, mtime_ns, lengths, meta) VALUES (?, ?, ?, ?, ?)",
                        (rel, stat.st_size, stat.st_mtime_ns, json.dumps(lengths),
                         json.dumps(card_meta(card), ensure_ascii=False)))
    docid = cursor.lastrowid
    per_term: dict[str, list[int]] = {}
    for position, name in enumerate(FIELDS):
        for term in fields[name]:
            tfs = per_term.get(term)
            if tfs is None:
                tfs = per_term[term] = [0, 0, 0, 0, 0]
            tfs[position] += 1
    # Field lengths ride along in every posting so scoring never needs a second lookup per doc.
    suffix = ";" + ",".join(map(str, lengths))
    db.executemany("INSERT INTO postings VALUES (?, ?, ?)",
                   ((term, docid, ",".join(map(str, tfs)) + suffix) for term, tfs in per_term.items()))
    return count + 1, [t + n for t, n in zip(totals, lengths)]


def rebuild(vault: Vault, analyse, progress=None) -> Changes:
    """Delete the index and build it again from the cards (`brain reindex`)."""
    _delete(vault.cache_dir / "index.sqlite")
    index = Index.open(vault, analyse, progress)
    try:
        return index.changes
    finally:
        index.close()
