"""The vector cache in `.brain/cache/vectors.sqlite` and nearest-neighbour search over it.

What it promises:
- Derived data, like the keyword index: deleting the file loses nothing, a damaged or foreign
  file is deleted and rebuilt, and a change of provider, model, URL, prefixes or dimensions
  (`embeddings.model_key`) empties it, so every card is embedded again under the new model.
- Vectors are keyed by the hash of the text embedded (`embeddings.passage_text`), so an edit that
  does not change that text, a rename, or two identical cards cost no new embedding; an edited
  card is embedded once. Which card holds which text is kept per path with the (size, mtime) it
  was read at, and compared with the keyword index's own stamps: the keyword index's change
  detection decides what is stale, this cache only follows it (`sync`).
- A search embeds only the query (`nearest`); cards are embedded by `sync` (`reindex
  --embeddings`, the background catch-up a search starts when the keyword index moved on, and
  `create` for its own card). A card whose vector is missing or stale is left out of the vector
  ranking, never shown with another text's vector.
- Nearest neighbours without reading every float: each vector also has a binary code, the signs
  of (vector - mean of the cached vectors), packed into an int (Charikar 2002; centering first
  matters: E5-like models put every vector in one narrow cone, so raw signs barely differ). A
  query ranks all codes by Hamming distance (`int.bit_count`), then the `rescore` best are
  ranked by exact cosine. NumPy, when importable and the cache is large, computes only the
  Hamming distances; candidates are chosen by the same integer distances and ties, and the
  exact cosines are the same Python sums, so the ranking is identical with or without it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import struct
import sys
from array import array
from collections import Counter
from itertools import compress, repeat
from operator import itemgetter, lt, mul, xor
from typing import Callable, Iterable

from ..vault.records import record
from ..vault.storage import Vault

VERSION = "1"
RESCORE = 400            # candidates ranked by exact cosine after the Hamming pass
MEAN_SAMPLE = 256        # vectors that fix the centre of the binary codes in a new cache
# Importing NumPy costs ~90 ms; the pure-Python Hamming pass ~0.3 us a vector. So NumPy is used
# when a process has already paid for it, or when the cache is big enough for it to pay.
NUMPY_FROM = 300_000
_UNIT = 256              # cards per committed step of `sync`: an interruption loses at most this

_SCHEMA = """
CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE vectors (hash BLOB PRIMARY KEY, vec BLOB NOT NULL, code BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE docs (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash BLOB);
CREATE TABLE packed (id INTEGER PRIMARY KEY, paths BLOB NOT NULL, codes BLOB NOT NULL);
"""


@record
class SyncResult:
    embedded: int = 0        # texts sent to the provider
    reused: int = 0          # cards whose text already had a vector
    removed: int = 0
    total: int = 0           # cards with a current vector after the sync
    pending: int = 0         # cards still without one (only when stopped early)


@record
class Neighbour:
    path: str
    similarity: float


def text_hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


def unit(vector: list[float]) -> list[float]:
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


def cosine(a: list[float], b: list[float]) -> float:
    """Cosine of two unit vectors: their dot product, summed left to right (the same float on
    every machine, with or without NumPy)."""
    return sum(map(mul, a, b))


def binary_code(vector: list[float], mean: list[float]) -> int:
    """Sign bits of (vector - mean), first dimension in the highest bit."""
    bits = 0
    for x, m in zip(vector, mean):
        bits = (bits << 1) | (x > m)
    return bits


def keyword_digest(db: sqlite3.Connection) -> str:
    """A fingerprint of the keyword index's documents (paths, sizes, mtimes), taken in one SQL
    pass: when it differs from the one stored at the last sync, some card may need a vector."""
    row = db.execute("SELECT count(*), sum(size), sum(mtime_ns % 1000000007), sum(length(folder) * 31 + "
                     "length(name) + unicode(name) + inode % 65521) FROM docs").fetchone()
    return ",".join(str(x or 0) for x in row)


class VectorStore:
    """An open vector cache for one embedding configuration (`model_key`)."""

    def __init__(self, db: sqlite3.Connection, key: str, info: dict[str, str]) -> None:
        self.db = db
        self.key = key
        self.info = info

    @classmethod
    def open(cls, vault: Vault, key: str, create: bool = True) -> "VectorStore | None":
        """The cache for `key`; a missing, damaged, older or other-model cache is replaced by an
        empty one (None instead when `create` is off and there is nothing usable)."""
        path = vault.cache_dir / "vectors.sqlite"
        if not create and not path.exists():
            return None
        vault.cache_dir.mkdir(parents=True, exist_ok=True)
        for attempt in (1, 2):
            db = None
            try:
                db = sqlite3.connect(str(path), timeout=60, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=OFF")  # a cache, as the keyword index
                info = _info(db)
                if info.get("version") != VERSION or info.get("model") != key:
                    if not create:
                        db.close()
                        return None
                    info = _reset(db, key)
                return cls(db, key, info)
            except sqlite3.DatabaseError as exc:
                # Trigger: a corrupt or foreign file. Why: a cache is never trusted. Outcome:
                # deleted and rebuilt empty (the next sync embeds the cards again).
                if db is not None:
                    db.close()
                if attempt == 2 or getattr(exc, "sqlite_errorcode", None) in (5, 6):
                    raise
                for suffix in ("", "-wal", "-shm"):
                    try:
                        os.unlink(f"{path}{suffix}")
                    except FileNotFoundError:
                        pass
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ reading

    @property
    def mean(self) -> list[float] | None:
        raw = self.info.get("mean")
        return json.loads(raw) if raw else None

    @property
    def digest(self) -> str:
        return self.info.get("digest", "")

    def failed_at(self) -> float:
        """When the last sync stopped on a provider failure (0: never)."""
        return float(self.info.get("failed_at", "0"))

    def has(self, digest: bytes) -> bool:
        return self.db.execute("SELECT 1 FROM vectors WHERE hash = ?", (digest,)).fetchone() is not None

    def count(self) -> int:
        return int(self.info.get("count", "0"))

    def stamps(self) -> dict[str, tuple[int, int, bytes | None]]:
        return {path: (size, mtime, h) for path, size, mtime, h in self.db.execute("SELECT * FROM docs")}

    def vectors_of(self, paths: Iterable[str]) -> dict[str, tuple[int, int, list[float]]]:
        """path -> (size, mtime_ns it was embedded at, unit vector) for those that have one."""
        wanted = list(paths)
        out = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            for path, size, mtime, blob in self.db.execute(
                    "SELECT path, size, mtime_ns, vec FROM docs JOIN vectors USING (hash) "
                    f"WHERE path IN ({','.join('?' * len(chunk))})", chunk):
                vec = array("f")
                vec.frombytes(blob)
                out[path] = (size, mtime, vec.tolist())
        return out

    def nearest(self, query: list[float], candidates: int = RESCORE,
                admit: Callable[[list[str]], dict[str, tuple[int, int]]] | None = None,
                use_numpy: bool | None = None) -> list[Neighbour]:
        """Cached cards by cosine with the unit vector `query`, best first: the `candidates`
        nearest by Hamming distance of the binary codes, ranked by exact cosine. `admit`, given
        the candidate paths, returns those to keep as a dict path -> the (size, mtime_ns) the
        card has now (a vector cached at another stamp is stale and left out); when it keeps
        fewer than a tenth of them, the next candidates by Hamming distance are tried too."""
        row = self.db.execute("SELECT paths, codes FROM packed WHERE id = 1").fetchone()
        mean = self.mean
        if row is None or not row[0] or mean is None:
            return []
        paths_blob, codes_blob = row
        code_size = (len(mean) + 7) // 8
        count = len(codes_blob) // code_size
        distances = _hamming(codes_blob, code_size, count, binary_code(query, mean), use_numpy)
        names = paths_blob.split(b"\0")
        out: list[Neighbour] = []
        start, need = 0, min(candidates, count)
        while start < count:
            order = _nearest_positions(distances, need)
            batch = [names[i].decode("utf-8") for i in order[start:need]]
            start, need = need, min(need * 4, count)
            kept = admit(batch) if admit is not None else None
            found = self.vectors_of(batch if kept is None else [path for path in batch if path in kept])
            out += [Neighbour(path, round(cosine(query, vec), 9)) for path, (size, mtime_ns, vec) in found.items()
                    if kept is None or kept[path] == (size, mtime_ns)]
            if admit is None or len(out) * 10 >= candidates:
                break
        out.sort(key=lambda n: (-n.similarity, n.path))
        return out

    # ------------------------------------------------------------------ writing

    def store(self, entries: list[tuple[str, int, int, bytes | None]], new: dict[bytes, list[float]]) -> None:
        """Record (path, size, mtime_ns, text hash) for each card and the new vectors by hash,
        in one transaction. A cache without a centre takes the mean of these vectors as its own."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            mean = self.mean
            if mean is None and new:
                vectors = list(new.values())[:MEAN_SAMPLE]
                mean = [sum(column) / len(vectors) for column in zip(*vectors)]
                self._set("mean", json.dumps(mean))
            nbytes = ((len(mean) if mean else 0) + 7) // 8
            self.db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)", [
                (h, array("f", v).tobytes(), binary_code(v, mean).to_bytes(nbytes, "big"))
                for h, v in new.items()])
            self.db.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)", entries)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def forget(self, paths: list[str]) -> None:
        self.db.executemany("DELETE FROM docs WHERE path = ?", ((p,) for p in paths))

    def finish(self, digest: str) -> int:
        """Drop vectors no card uses, rebuild the packed codes the search reads in one row, and
        store the keyword index digest this state matches. Returns the number of cards packed."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM docs WHERE hash IS NOT NULL)")
            rows = self.db.execute("SELECT path, code FROM docs JOIN vectors USING (hash) ORDER BY path").fetchall()
            paths = b"\0".join(path.encode("utf-8") for path, _ in rows)
            self.db.execute("INSERT OR REPLACE INTO packed VALUES (1, ?, ?)",
                            (paths, b"".join(code for _, code in rows)))
            self._set("count", str(len(rows)))
            self._set("digest", digest)
            if digest:
                self._set("failed_at", "0")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return len(rows)

    def set_failed(self, moment: float) -> None:
        self._set("failed_at", repr(moment))

    def _set(self, key: str, value: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO info VALUES (?, ?)", (key, value))
        self.info[key] = value


def _info(db: sqlite3.Connection) -> dict[str, str]:
    try:
        return dict(db.execute("SELECT key, value FROM info"))
    except sqlite3.OperationalError:
        return {}


def _reset(db: sqlite3.Connection, key: str) -> dict[str, str]:
    db.execute("BEGIN IMMEDIATE")
    try:
        info = _info(db)
        if info.get("version") != VERSION or info.get("model") != key:  # re-checked under the lock
            for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
                db.execute(f'DROP TABLE IF EXISTS "{table}"')
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            db.executemany("INSERT INTO info VALUES (?, ?)", [("version", VERSION), ("model", key)])
            info = {"version": VERSION, "model": key}
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return info


def _hamming(codes: bytes, size: int, count: int, qcode: int, use_numpy: bool | None) -> list[int]:
    """The Hamming distance of each packed code to `qcode`."""
    if use_numpy is None:
        use_numpy = count >= NUMPY_FROM or "numpy" in sys.modules
    numpy = _numpy() if use_numpy else None
    if numpy is not None:
        table = numpy.array([bin(i).count("1") for i in range(256)], dtype=numpy.uint16)
        matrix = numpy.frombuffer(codes, dtype=numpy.uint8).reshape(count, size)
        query = numpy.frombuffer(qcode.to_bytes(size, "big"), dtype=numpy.uint8)
        return table[numpy.bitwise_xor(matrix, query)].sum(axis=1).tolist()
    ints = map(int.from_bytes, map(itemgetter(0), struct.iter_unpack(f"{size}s", codes)))
    return list(map(int.bit_count, map(xor, repeat(qcode), ints)))


def _nearest_positions(distances: list[int], need: int) -> list[int]:
    """The `need` positions of smallest distance, ordered by distance then position. Distances
    are small integers, so the cut-off distance comes from their histogram and the positions
    from two C-level passes, not from sorting every distance."""
    counts = Counter(distances)
    cut, below = 0, 0
    for distance in sorted(counts):
        if below + counts[distance] >= need:
            cut = distance
            break
        below += counts[distance]
    positions = range(len(distances))
    closer = list(compress(positions, map(lt, distances, repeat(cut))))
    ties = list(compress(positions, map(int.__eq__, distances, repeat(cut))))[:need - len(closer)]
    closer.sort(key=distances.__getitem__)  # stable: ties stay in position order
    return closer + ties


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy
