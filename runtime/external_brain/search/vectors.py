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
- Nearest neighbours without reading every float, in three stages, each ranking the best of
  the one before more exactly (Charikar 2002 for the sign codes; the asymmetric and multi-bit
  codes as in Gordo et al. 2014 and Jégou et al. 2011). Every code is taken against a centre (the
  mean of up to 256 cached vectors; E5-like models put every vector in one narrow cone, so raw
  signs barely differ) and a per-dimension spread.
  1. All cards: one sign bit a dimension, kept as one big int per dimension across all cards
     ("bit planes"), so a query adds 384 ints of n bits instead of touching n codes. The
     score is asymmetric: the sum, over the dimensions where a card's sign agrees with the
     centred query's, of that dimension's query weight quantised to 0..7, each plane added
     into the sum as it is read (`_PlaneSum`); where the weight is LOW_FROM or more (~100
     dimensions), the card's whole two-bit level counts instead of its sign (the LOW planes,
     twice the weight for the sign, once for the low bit). The best `first_stage(n)` go on:
     one in 50 (one in 20 on a cache without LOW, whose stage 1 reads the signs alone).
  2. Those: two bits a dimension (four levels over +-1.25 spreads), scored against the centred
     query quantised to `QUERY_BITS` (4) bits with five `int.bit_count`s a card, plus the
     card's exact dot product with the centre.
  3. The best `RESCORE`: exact cosine of the stored float vectors, read for them alone.
  A search reads what it scores and nothing more: the bit planes whole (the LOW ones of the
  dimensions it refines), the two-bit codes of its candidates only, the paths of the few hundred
  it rescores (PATHS, or `slots`) and the keyword docids the sync
  read for them (hints its caller checks, DOCIDS) (blob slices of the `packed` rows,
  `similarities`), all from one committed sync; each float vector's cosine is taken as it is
  read.
  A process keeps what stages 1 and 2 read of the packed rows (the bit planes and the two-bit
  codes as ints, the centre products, the code weights; `_HELD`) for its next search while the
  cache's `packed` token is unchanged: every `finish` writes a new token in the transaction that rewrites the rows, and a
  search reads the token in the transaction it reads the rows in, so a process never ranks with
  rows another process has replaced. A CLI search pays the reads as before; a server pays them
  once a sync.
  Stage 1 is integer arithmetic, so NumPy (used for it when already imported, or at
  `NUMPY_FROM` cards) picks the same candidates, in the same order of ties; stages 2 and 3 are
  the same Python sums either way, so the ranking is identical with or without it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from array import array
from itertools import islice
from operator import mul
from pathlib import Path
from typing import Callable, Iterable, Iterator

from ..vault.valueclass import valueclass
from ..vault.storage import Vault

VERSION = "3"
RESCORE = 250            # candidates ranked by exact cosine (stage 3; 400 before issue 22's LOW and QUERY_BITS)
QUERY_BITS = 4           # stage 2's centred query levels 0 .. 2 ** QUERY_BITS - 1 (3 before issue 22)
FIRST_STAGE = 2000       # stage 1 keeps at least this many cards for stage 2 ...
FIRST_SHARE = 20         # ... or one in FIRST_SHARE of them, when that is more (docs/decisions.md)
REFINED_SHARE = 50       # ... one in REFINED_SHARE when stage 1 reads the LOW planes too (issue 22)
LOW_FROM = 3             # stage 1 query weights from which a dimension's LOW plane is added too
WEIGHT_BITS = 3          # stage 1 query weights 0 .. 2 ** WEIGHT_BITS - 1
SPREAD = 1.25            # two-bit levels split at centre +- SPREAD standard deviations
MEAN_SAMPLE = 256        # vectors that fix the centre and spread of the codes
RESOLUTION_SAMPLE = 32   # cards whose nearest neighbours measure the vault's resolution
RESOLUTION_DRIFT = 0.1   # measured again once the number of cards moved by this share
# Importing NumPy costs ~90 ms; the pure-Python Hamming pass ~0.3 us a vector. So NumPy is used
# when a process has already paid for it, or when the cache is big enough for it to pay.
NUMPY_FROM = 300_000
MMAP_SIZE = 1 << 30      # bytes of the cache file mapped into memory (address space, not RAM)

# `vectors` is a rowid table: a row (~1.8 KB) is larger than a WITHOUT ROWID page keeps inline,
# and reading the few hundred candidates' floats from overflow pages cost ~15x more.
# `packed` holds what a search reads for every card, one blob a row (PLANES, FINE, BIAS): a blob
# sits in a chain of overflow pages, and reading one column of a many-blob row walked the chains
# of the columns before it (format 2 read ~27 MB at 100,000 cards for 5 MB of bit planes). The
# packed position of each card's path is its rowid in `slots`, so a search looks up the names of
# its few hundred candidates instead of reading and splitting every path.
_SCHEMA = """
CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE vectors (hash BLOB PRIMARY KEY, vec BLOB NOT NULL, code BLOB, fine BLOB, bias REAL);
CREATE TABLE docs (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, hash BLOB);
CREATE TABLE packed (id INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE slots (pos INTEGER PRIMARY KEY, path TEXT NOT NULL);
"""
PLANES, FINE, BIAS = 1, 2, 3   # rows of `packed`
# Rows `packed` gained later (no new format: a cache without them is searched as before, and
# the next sync's `finish` adds them, `reindex --embeddings` included, without the provider):
# WEIGHTS, each card's code weight (the popcounts stage 2 subtracts), one uint32 a card; SOURCES,
# per card the rowid of its float vector in `vectors`, the (size, mtime_ns) it was embedded at
# and its text hash (`_SOURCE`), so stage 3 reads its few hundred vectors by rowid (one B-tree
# descent each) instead of by path (`docs`, then `vectors` by hash: four).
WEIGHTS, SOURCES = 4, 5
# DOCIDS (issue 22, later still): per card, the keyword index's docid it had when the sync read
# the index (int64, -1: not known), so a search looks up its candidates' keyword rows by docid
# (`docs` and `facets` by rowid) instead of by (folder, name) through the index of names: half
# the time at 100,000 cards. A hint, checked: a row whose folder and name are not the card's
# (the keyword index rebuilt since, the card moved) sends that card to the lookup by name.
DOCIDS = 6
# PATHS (issue 22, h22-hybrid4): every card's path by packed position, in one blob: the `packed`
# token of the `finish` that wrote it (16 ASCII bytes), the byte offsets of the paths (count + 1
# uint32s), then the paths in UTF-8. A search reads its few hundred candidates' names as blob
# slices (~1 us each) instead of as `slots` rows (~4 us each). Used only when its token is the
# cache's current one: a `finish` of code from before this row rewrites `slots` and the token
# but leaves PATHS as it was, and a stale name would be a wrong answer, not a slower one; such a
# row (or none) sends the search to `slots`, as before.
PATHS = 7
_PATHS_HEAD = 16
# LOW (issue 22, h22-hybrid4): the low bit of every card's two-bit level as bit planes (PLANES'
# layout), after the same 16-byte token as PATHS and checked the same way. Stage 1 adds, for the
# dimensions where the query weighs most (weight >= LOW_FROM, ~100 of 384), the card's whole
# two-bit level instead of its sign: ~100 planes more to add, and a first stage so much closer to
# the second that it keeps one card in REFINED_SHARE (2,000 at 100,000) instead of one in
# FIRST_SHARE (5,000) for a better recall (docs/decisions/0038-server-throughput.md).
LOW = 8
_SOURCE = "<qqq16s"      # vector rowid, size, mtime_ns, text hash (16 bytes)
_SOURCE_SIZE = 40


@valueclass
class _Held:
    """What a process keeps of one cache's packed rows between searches (module docstring)."""
    token: str               # the `packed` token of the rows these came from
    bias: memoryview         # BIAS, as read (floats)
    weights: memoryview | None   # WEIGHTS, as read (uints; None: the cache has none, or not from this sync)
    dims: int                # of the centre the rows were coded against
    # Bit plane d, and card i's two-bit code, as an int once a search has read it, else None.
    # Both lists are made by the second search of these rows: a CLI's one search keeps nothing
    # alive (holding ~5 MB of planes cost a single search ~3% more CPU in fresh memory).
    planes: list | None = None
    codes: list | None = None
    low: list | None = None   # LOW plane d as an int, as `planes`


# cache file -> what its last search read, while its token is current (a dict: at most one entry
# a vector cache this process searched; an entry is replaced, not grown, when the token moves).
_HELD: dict[str, _Held] = {}


@valueclass
class SyncResult:
    embedded: int = 0        # texts sent to the provider
    reused: int = 0          # cards whose text already had a vector
    removed: int = 0
    total: int = 0           # cards with a current vector after the sync
    pending: int = 0         # cards still without one (only when stopped early)
    requests: int = 0        # requests sent to the provider (retries included)
    provider_seconds: float = 0.0   # spent in those requests, waiting for the provider
    batch: int = 0           # passages a request held at the end (less than `batch` once cut)
    rebuilt_from: int = 0    # the dimensions of the vectors thrown away when the provider's changed (0: none)


@valueclass
class Neighbour:
    path: str
    similarity: float


def text_hash(text: str) -> bytes:
    import hashlib  # here, not at the top: ~3 ms a search would pay for nothing (only syncs hash)

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


def fine_code(vector: list[float], mean: list[float], spread: list[float]) -> tuple[bytes, float]:
    """The two-bit code of stage 2 and its bias. Each dimension gets a level 0..3 (split at
    mean - SPREAD * spread, mean, mean + SPREAD * spread); the code is the high bits then the low
    bits, two ints of one bit a dimension laid end to end (`_second_stage` counts the high half
    twice; format 2 stored it twice, and a search reads its candidates' codes: a third more
    bytes cost more than the extra `bit_count`s). The bias is the card's exact dot product with
    the centre: a query's dot product is that plus the card's with the centred query, and only
    the second is approximated (quantising the first too swamps the differences between cards
    when, as with E5-like models, every vector lies close to the centre's direction)."""
    high = low = 0
    for x, m, s in zip(vector, mean, spread):
        level = min(3, max(0, int((x - m) // (SPREAD * s)) + 2))
        high = (high << 1) | (level >> 1)
        low = (low << 1) | (level & 1)
    bias = sum(map(mul, vector, mean))
    size = (len(mean) + 7) // 8
    return b"".join(part.to_bytes(size, "big") for part in (high, low)), bias


def code_weight(fine: bytes | None, dims: int) -> int:
    """The part of stage 2's score that depends on the card alone: its code's set bits, those
    of the high half counted twice (as `_second_stage` takes them; 0 for a card without codes)."""
    if not fine:
        return 0
    code = int.from_bytes(fine, "big")
    return code.bit_count() + (code & ((1 << dims) - 1) << dims).bit_count()


def keyword_digest(db: sqlite3.Connection) -> str:
    """A fingerprint of the keyword index's documents (paths, sizes, mtimes), taken in one SQL
    pass: when it differs from the one stored at the last sync, some card may need a vector."""
    row = db.execute("SELECT count(*), sum(size), sum(mtime_ns % 1000000007), sum(length(folder) * 31 + "
                     "length(name) + unicode(name) + inode % 65521) FROM docs").fetchone()
    return ",".join(str(x or 0) for x in row)


class VectorStore:
    """An open vector cache for one embedding configuration (`model_key`)."""

    def __init__(self, db: sqlite3.Connection, key: str, info: dict[str, str], path: Path) -> None:
        self.db = db
        self.key = key
        self.info = info
        self.path = path
        self._parsed: dict[str, tuple[str, list[float]]] = {}   # info key -> (its text, parsed)

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
                return cls(db, key, info, path)
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

    @staticmethod
    def read_only(vault: Vault) -> sqlite3.Connection | None:
        """The cache file opened read-only (None when there is none: opening never makes one);
        raises sqlite3.Error as `connect` does. For readers that must write nothing."""
        path = vault.cache_dir / "vectors.sqlite"
        if not path.exists():
            return None
        return sqlite3.connect(f"file:{path}?mode=ro", uri=True)

    @staticmethod
    def holds_vectors(vault: Vault) -> bool:
        """Whether the cache file holds any card's vector, of whatever configuration or format
        (read only; False when there is no file or it cannot be read)."""
        try:
            db = VectorStore.read_only(vault)
            if db is None:
                return False
            try:
                return db.execute("SELECT 1 FROM docs WHERE hash IS NOT NULL LIMIT 1").fetchone() is not None
            finally:
                db.close()
        except sqlite3.Error:
            return False

    # ------------------------------------------------------------------ reading

    @property
    def mean(self) -> list[float] | None:
        return self._floats_of("mean")

    @property
    def spread(self) -> list[float] | None:
        return self._floats_of("spread")

    def _floats_of(self, key: str) -> list[float] | None:
        """`info[key]` (a JSON list) parsed once for each value it takes: a search reads the
        centre and spread ~9 times (~0.5 ms of JSON at 384 dimensions)."""
        raw = self.info.get(key)
        if not raw:
            return None
        parsed = self._parsed.get(key)
        if parsed is None or parsed[0] is not raw:
            parsed = self._parsed[key] = (raw, json.loads(raw))
        return parsed[1]

    @property
    def resolution(self) -> float | None:
        """The cosine the cached cards typically have with their nearest other card (the
        median over a sample, `measure_resolution`): the vault's own measure of "about the same
        thing", which hybrid fusion places a query's cosines against. None until measured."""
        raw = self.info.get("resolution")
        return float(raw) if raw else None

    @property
    def digest(self) -> str:
        return self.info.get("digest", "")

    @property
    def refined(self) -> bool:
        """Whether the last `finish` wrote PATHS and LOW (code from before them rewrites the
        token, not this key): a search on a cache without them ranks with the signs alone."""
        return bool(self.info.get("packed")) and self.info.get("refined") == self.info.get("packed")

    def failed_at(self) -> float:
        """When the last sync stopped on a provider failure (0: never)."""
        return float(self.info.get("failed_at", "0"))

    def has(self, digest: bytes) -> bool:
        return self.db.execute("SELECT 1 FROM vectors WHERE hash = ?", (digest,)).fetchone() is not None

    def count(self) -> int:
        return int(self.info.get("count", "0"))

    def dimensions(self) -> int:
        """The length of the cached vectors (0: none cached)."""
        row = self.db.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
        return row[0] // 4 if row else 0

    @property
    def query_dimensions(self) -> int:
        """The length of a query vector a search got that the cached vectors do not have (0:
        none seen since the last sync), noted by `note_query_dimensions`."""
        return int(self.info.get("query_dimensions", "0") or 0)

    def note_query_dimensions(self, dims: int, wait: bool = False) -> None:
        """Keep `query_dimensions` (0 clears it). A search does not wait for the write lock
        (`wait` off): the note is a hint, and the next search gives it again."""
        if not wait:
            self.db.execute("PRAGMA busy_timeout = 0")
        try:
            self._set("query_dimensions", str(dims))
        except sqlite3.OperationalError:
            if wait:
                raise

    def empty(self) -> None:
        """Drop every vector and what was measured of them, keeping the configuration's key."""
        self.info = _reset(self.db, self.key, always=True)

    def stamps(self) -> dict[str, tuple[int, int, bytes | None]]:
        return {path: (size, mtime, h) for path, size, mtime, h in self.db.execute("SELECT * FROM docs")}

    def _stored(self, paths: Iterable[str]) -> Iterator[tuple[str, int, int, bytes]]:
        """(path, size, mtime_ns it was embedded at, vector blob) of those of `paths` that have one."""
        wanted = list(paths)
        for start in range(0, len(wanted), 500):
            chunk = wanted[start:start + 500]
            yield from self.db.execute("SELECT path, size, mtime_ns, vec FROM docs JOIN vectors USING (hash) "
                                       f"WHERE path IN ({','.join('?' * len(chunk))})", chunk)

    def vectors_of(self, paths: Iterable[str], as_list: bool = True) -> dict[str, tuple[int, int, list[float]]]:
        """path -> (size, mtime_ns it was embedded at, unit vector) for those that have one (an
        `array('f')` rather than a list when `as_list` is off: a quarter of the memory)."""
        out = {}
        for path, size, mtime, blob in self._stored(paths):
            vec = array("f")
            vec.frombytes(blob)
            out[path] = (size, mtime, vec.tolist() if as_list else vec)
        return out

    def similarities_of(self, query: list[float], paths: Iterable[str]) -> dict[str, tuple[int, int, float]]:
        """path -> (size, mtime_ns it was embedded at, its cosine with the unit vector `query`,
        rounded to 9 places) for those that have one: `vectors_of` with each vector's cosine
        taken as it is read (its floats as stored, the same sum), so no vector is kept."""
        return {path: (size, mtime, round(cosine(query, memoryview(blob).cast("f")), 9))
                for path, size, mtime, blob in self._stored(paths)}

    def nearest(self, query: list[float], candidates: int = RESCORE,
                admit: Callable[[list[str]], dict[str, tuple[int, int]]] | None = None,
                use_numpy: bool | None = None) -> list[Neighbour]:
        """`similarities` as `Neighbour`s."""
        return [Neighbour(path, similarity) for path, similarity in
                self.similarities(query, candidates, admit, use_numpy)]

    def similarities(self, query: list[float], candidates: int = RESCORE,
                     admit: Callable[[list[str]], dict[str, tuple[int, int]]] | None = None,
                     use_numpy: bool | None = None) -> list[tuple[str, float]]:
        """(path, cosine) of cached cards with the unit vector `query`, best first: the `candidates`
        best by the two code stages (module docstring), ranked by exact cosine. `admit`, given
        the candidate paths, returns those to keep as a dict path -> the (size, mtime_ns) the
        card has now (a vector cached at another stamp is stale and left out); when it keeps
        fewer than a tenth of them, the next candidates are tried too. When the cache holds
        DOCIDS, `admit` is given a second argument: path -> the keyword docid the sync packed
        for it (a hint that may be out of date)."""
        mean, spread = self.mean, self.spread
        if mean is None or spread is None:
            return []
        # The packed rows are read through blob handles, each slice as it is needed (the fine
        # codes of the candidates alone), on a connection of their own with the file mapped
        # into memory: ~10 ms at 100,000 cards instead of ~35 ms for reading whole blobs as
        # values. Their own connection, because a mapped page counts in the process's memory
        # with the pages around it: the float vectors' lookups scattered over the file
        # (`vectors_of`, on `self.db`) mapped would add ~50 MB. The blobs and the packed
        # positions' paths are read in one transaction, so they come from the same sync.
        packed = sqlite3.connect(str(self.path), timeout=60, isolation_level=None)
        blobs = []
        try:
            packed.execute(f"PRAGMA mmap_size={MMAP_SIZE}")
            packed.execute("BEGIN")
            try:
                for row in (PLANES, FINE, BIAS):
                    blobs.append(packed.blobopen("packed", "data", row, readonly=True))
            except sqlite3.OperationalError:  # not packed yet: no sync has finished
                return []
            extra = []
            for row in (WEIGHTS, SOURCES, DOCIDS, PATHS, LOW):
                try:
                    extra.append(packed.blobopen("packed", "data", row, readonly=True))
                    blobs.append(extra[-1])
                except sqlite3.OperationalError:
                    # Trigger: a cache packed before these rows existed. Why: they are derived
                    # and the next sync adds them. Outcome: this search computes the weights
                    # and reads the vectors by path, as that cache's code did (same ranking).
                    extra.append(None)
            # In this transaction: the token of the rows the blobs read (None before caches had it).
            token = packed.execute("SELECT value FROM info WHERE key = 'packed'").fetchone()
            return self._nearest(query, candidates, admit, use_numpy, packed, *blobs[:3], *extra,
                                 token=token and token[0])
        finally:
            for blob in blobs:
                blob.close()
            packed.close()

    def _nearest(self, query: list[float], candidates: int, admit, use_numpy: bool | None,
                 packed: sqlite3.Connection, planes: sqlite3.Blob, fine: sqlite3.Blob,
                 bias_blob: sqlite3.Blob, weights_blob: sqlite3.Blob | None = None,
                 sources: sqlite3.Blob | None = None, docids: sqlite3.Blob | None = None,
                 paths: sqlite3.Blob | None = None, low: sqlite3.Blob | None = None,
                 token: str | None = None) -> list[tuple[str, float]]:
        mean, spread = self.mean, self.spread
        key = str(self.path)
        held = _HELD.get(key)
        if held is None or token is None or held.token != token or held.dims != len(mean):
            # Trigger: this process has not searched these rows yet (another process's sync
            # wrote a new token, or the cache predates tokens). Why: what it kept is another
            # sync's. Outcome: read afresh, and kept for the next search when the rows have a token.
            # Viewed as floats and ints where they were read (the same values as an `array`
            # of them): a copy of 0.8 MB at 100,000 cards was ~200 pages of fresh memory.
            bias = memoryview(bias_blob.read()).cast("f")
            code_weights = None
            if weights_blob is not None:
                code_weights = memoryview(weights_blob.read()).cast("I")
                if len(code_weights) != len(bias):   # not from the same sync: computed instead
                    code_weights = None
            held = _Held(token or "", bias, code_weights, len(mean))
            if token is not None:
                _HELD[key] = held
        elif held.codes is None:
            held.planes, held.codes = [None] * held.dims, [None] * len(held.bias)
            held.low = [None] * held.dims
        bias, code_weights = held.bias, held.weights
        count = len(bias)
        if not count:
            return []
        if sources is not None and len(sources) != count * _SOURCE_SIZE:
            sources = None
        if docids is not None and len(docids) != count * 8:
            docids = None
        names = _PackedPaths.of(paths, token, count)
        if not _current(low, token, _PATHS_HEAD + len(mean) * ((count + 7) // 8)):
            # Trigger: no LOW row, or one another `finish` wrote (code from before it rewrote the
            # rest). Why: its bits would be other cards'. Outcome: stage 1 on the signs alone,
            # keeping one card in FIRST_SHARE, as before LOW.
            low = None
        first = _first_stage(planes, count, query, mean, use_numpy, held.planes, low, held.low)
        out: list[tuple[str, float]] = []
        start, need, wide = 0, min(candidates, count), first_stage(count, low is not None)
        order = self._second_stage(first(wide), query, mean, spread, bias, fine, code_weights, held.codes)
        while start < count:
            if need > len(order) and wide < count:
                wide = min(count, need * FIRST_SHARE // 4)
                order = self._second_stage(first(wide), query, mean, spread, bias, fine, code_weights, held.codes)
            chosen = order[start:need]
            batch = names.at(chosen) if names is not None else _paths_at(packed, chosen)
            start, need = need, min(need * 4, count)
            if admit is None:
                kept = None
            elif docids is None:
                kept = admit(batch)
            else:   # the keyword docids the sync packed, as hints (DOCIDS)
                hints = memoryview(b"".join(docids[pos * 8:pos * 8 + 8] for pos in chosen)).cast("q")
                kept = admit(batch, {path: docid for path, docid in zip(batch, hints) if docid >= 0})
            wanted = batch if kept is None else [p for p in batch if p in kept]
            if sources is not None:
                found = self._similarities_by_source(query, sources, dict(zip(batch, chosen)), wanted, kept)
            else:
                found = self.similarities_of(query, wanted)
            out += [(path, similarity) for path, (size, mtime_ns, similarity) in found.items()
                    if kept is None or kept[path] == (size, mtime_ns)]
            if admit is None or len(out) * 10 >= candidates:
                break
        out.sort(key=lambda n: (-n[1], n[0]))
        return out

    def _similarities_by_source(self, query: list[float], sources: sqlite3.Blob, position: dict[str, int],
                                wanted: list[str], kept: dict[str, tuple[int, int]] | None
                                ) -> dict[str, tuple[int, int, float]]:
        """`similarities_of(query, wanted)` read by the rowids the packed `sources` row holds
        (one B-tree descent a vector). Trigger: a card whose current stamps differ from the ones
        it was packed with (a `create` stored its new vector since the last sync), or whose row
        no longer holds the packed text's vector (a sync committed between the two reads).
        Why: the packed row is older than `docs` then. Outcome: those are read by path, as
        before, so the result is what `similarities_of` gives."""
        from struct import unpack_from

        by_rowid: dict[int, tuple[str, int, int, bytes]] = {}
        by_path = []
        for path in wanted:
            at = position[path] * _SOURCE_SIZE
            rowid, size, mtime_ns, digest = unpack_from(_SOURCE, sources[at:at + _SOURCE_SIZE])
            if kept is not None and kept[path] != (size, mtime_ns):
                by_path.append(path)
            else:
                by_rowid[rowid] = (path, size, mtime_ns, digest)
        out = {}
        rowids = list(by_rowid)
        for begin in range(0, len(rowids), 500):
            chunk = rowids[begin:begin + 500]
            for rowid, digest, blob in self.db.execute(
                    f"SELECT rowid, hash, vec FROM vectors WHERE rowid IN ({','.join('?' * len(chunk))})", chunk):
                path, size, mtime_ns, packed_digest = by_rowid.pop(rowid)
                if bytes(digest).ljust(16, b"\0")[:16] != packed_digest:
                    by_path.append(path)
                    continue
                out[path] = (size, mtime_ns, round(cosine(query, memoryview(blob).cast("f")), 9))
        by_path += [path for path, *_ in by_rowid.values()]   # rowids gone since
        if by_path:
            out.update(self.similarities_of(query, by_path))
        return {path: out[path] for path in wanted if path in out}

    def _second_stage(self, positions: list[int], query: list[float], mean: list[float], spread: list[float],
                      bias: array, fine: sqlite3.Blob | bytes, code_weights: array | None = None,
                      held: list | None = None) -> list[int]:
        """`positions` ranked by their approximate dot product with the query, best first (ties
        by position): exact with the centre, from the two-bit codes with the centred query.
        `held`, one entry a card, holds the codes as ints that earlier searches of the same rows
        read (None where none did); those this search reads are put there."""
        dims = len(mean)
        weights = [s * (q - m) for q, m, s in zip(query, mean, spread)]
        half = 1 << (QUERY_BITS - 1)
        step = max(map(abs, weights)) / half or 1.0
        # Query levels 0..15 stand for (level - 7.5) * step; p[j] is their bit plane j. A card's
        # level is 2 * high + low, so its product with the query's is the sum of 2 ** k over
        # the code's set bits in q[k]: bit j of the query's level, one place up for the high
        # half (q[k] = p[k - 1] over the high half | p[k] over the low half). Four query bits,
        # not three (issue 22): the order of the best few hundred is closer to the exact one's
        # for one `bit_count` more a card, so stage 3 rescores fewer (RESCORE) for the same
        # recall (docs/decisions/0038-server-throughput.md).
        p = [0] * (QUERY_BITS + 1)   # p[QUERY_BITS] stays 0: the low half has no bit that high
        for w in weights:
            level = min(2 * half - 1, max(0, int(w // step) + half))
            for j in range(QUERY_BITS):
                p[j] = (p[j] << 1) | ((level >> j) & 1)
        q0, q1, q2, q3, q4 = (p[k - 1] << dims | p[k] for k in range(QUERY_BITS + 1))   # p[-1] is the 0 at the end
        centre = half - 0.5   # the level that stands for 0
        top_half = ((1 << dims) - 1) << dims
        size = 2 * ((dims + 7) // 8)
        from_bytes = int.from_bytes
        scale = SPREAD * step
        if held is None:   # read as they are scored (below): no list of them made, nothing kept
            codes = None
        elif all(held[pos] is not None for pos in positions):   # a later search of the same rows
            codes = [held[pos] for pos in positions]
        else:
            codes = [held[pos] or from_bytes(fine[pos * size:(pos + 1) * size], "big") for pos in positions]
            for pos, code in zip(positions, codes):
                held[pos] = code
        # A level stands for centre + (level - 1.5) * SPREAD * spread; the - 1.5 part is the same
        # for every card and left out. The card's own part, 7.5 * its code weight (`code_weight`),
        # is read from the packed WEIGHTS row when the cache has it: the same ints, the same floats.
        if code_weights is None:
            keys = []
            if codes is None:
                codes = (from_bytes(fine[pos * size:(pos + 1) * size], "big") for pos in positions)
            for pos, code in zip(positions, codes):
                dot = ((code & q0).bit_count() + 2 * (code & q1).bit_count() + 4 * (code & q2).bit_count()
                       + 8 * (code & q3).bit_count() + 16 * (code & q4).bit_count()
                       - centre * (code.bit_count() + (code & top_half).bit_count()))
                keys.append(-(scale * dot + bias[pos]))
        elif codes is None:   # each code read where it is scored (`for code in [...]` is an assignment)
            keys = [-(scale * ((code & q0).bit_count() + 2 * (code & q1).bit_count() + 4 * (code & q2).bit_count()
                               + 8 * (code & q3).bit_count() + 16 * (code & q4).bit_count()
                               - centre * code_weights[pos]) + bias[pos])
                    for pos in positions for code in [from_bytes(fine[pos * size:pos * size + size], "big")]]
        else:
            keys = [-(scale * ((code & q0).bit_count() + 2 * (code & q1).bit_count() + 4 * (code & q2).bit_count()
                               + 8 * (code & q3).bit_count() + 16 * (code & q4).bit_count()
                               - centre * code_weights[pos]) + bias[pos])
                    for pos, code in zip(positions, codes)]
        # `positions` come in increasing order (`_first_stage`), so a stable sort on the key
        # alone leaves ties by position, as sorting (key, position) pairs did.
        ranked = sorted(range(len(positions)), key=keys.__getitem__)
        return [positions[i] for i in ranked]

    # ------------------------------------------------------------------ writing

    def store(self, entries: list[tuple[str, int, int, bytes | None]], new: dict[bytes, list[float]]) -> None:
        """Record (path, size, mtime_ns, text hash) for each card and the new vectors by hash,
        in one transaction. Their codes are computed by `finish`, which the search waits for."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany("INSERT OR REPLACE INTO vectors (hash, vec) VALUES (?, ?)",
                                [(h, array("f", v).tobytes()) for h, v in new.items()])
            self.db.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)", entries)
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def forget(self, paths: list[str]) -> None:
        self.db.executemany("DELETE FROM docs WHERE path = ?", ((p,) for p in paths))

    def finish(self, digest: str, docids: dict[str, int] | None = None) -> int:
        """Drop vectors no card uses, code the new ones, rebuild the packed codes the search
        reads in one row, and store the keyword index digest this state matches. `docids`:
        path -> the keyword index docid the sync read (the packed DOCIDS hints; none kept
        without it). Returns the number of cards packed."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute("DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM docs WHERE hash IS NOT NULL)")
            self._code()
            rows = self.db.execute("SELECT path, code, fine, bias, vectors.rowid, size, mtime_ns, hash "
                                   "FROM docs JOIN vectors USING (hash) ORDER BY path").fetchall()
            dims = len(self.mean or ())
            from struct import pack
            token = os.urandom(8).hex()   # what a process that kept the old rows checks (`_HELD`), PATHS and LOW
            self.db.execute("DELETE FROM slots")
            self.db.executemany("INSERT INTO slots VALUES (?, ?)", ((pos, path) for pos, (path, *_) in enumerate(rows)))
            self.db.executemany("INSERT OR REPLACE INTO packed VALUES (?, ?)", [
                (PLANES, _planes([row[1] for row in rows], dims)),
                (FINE, b"".join(row[2] for row in rows)),
                (BIAS, array("f", [row[3] for row in rows]).tobytes()),
                (WEIGHTS, array("I", [code_weight(row[2], dims) for row in rows]).tobytes()),
                (SOURCES, b"".join(pack(_SOURCE, rowid, size, mtime_ns, bytes(h).ljust(16, b"\0")[:16])
                                   for *_, rowid, size, mtime_ns, h in rows)),
                (PATHS, _PackedPaths.pack(token, [row[0] for row in rows])),
                (LOW, token.encode("ascii") + _planes([row[2][(dims + 7) // 8:] for row in rows], dims))])
            if docids is None:
                self.db.execute("DELETE FROM packed WHERE id = ?", (DOCIDS,))
            else:
                self.db.execute("INSERT OR REPLACE INTO packed VALUES (?, ?)",
                                (DOCIDS, array("q", [docids.get(row[0], -1) for row in rows]).tobytes()))
            self._set("count", str(len(rows)))
            self._set("digest", digest)
            self._set("packed", token)
            self._set("refined", token)   # PATHS and LOW are this finish's (`refined`)
            if digest:
                self._set("failed_at", "0")
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        return len(rows)

    def measure_resolution(self) -> None:
        """Measure `resolution` again when the number of cards moved by RESOLUTION_DRIFT or more
        since it was measured (or never was): the median, over the first RESOLUTION_SAMPLE
        vectors by hash, of the cosine with the nearest other card, found by `nearest` (~50 ms
        a card at 100,000 cards, so ~1.5 s of a sync, and only when the vault has changed that
        much). A card whose text another card repeats has that card at cosine 1."""
        count = self.count()
        measured = int(self.info.get("resolution_count", "0") or 0)
        if count < 2 or (self.resolution is not None and abs(count - measured) < RESOLUTION_DRIFT * measured):
            return
        sample = [_floats(blob) for (blob,) in self.db.execute(
            "SELECT vec FROM vectors ORDER BY hash LIMIT ?", (RESOLUTION_SAMPLE,))]
        nearest = []
        for vector in sample:
            found = self.nearest(unit(vector), candidates=4)
            # The card itself comes first (cosine 1, or a copy of it); the next is its neighbour.
            if len(found) >= 2:
                nearest.append(found[1].similarity)
        if not nearest:
            return
        nearest.sort()
        middle = len(nearest) // 2
        median = nearest[middle] if len(nearest) % 2 else (nearest[middle - 1] + nearest[middle]) / 2
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self._set("resolution", repr(round(median, 6)))
            self._set("resolution_count", str(count))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _code(self) -> None:
        """Give every vector its codes. The centre and spread come from the first MEAN_SAMPLE
        vectors (by hash); while the cache holds fewer than that, they are taken again as it
        grows and every code is redone (a few hundred vectors at most), so a cache started
        from one `create` does not keep one card as its centre."""
        sample = int(self.info.get("sampled", "0"))
        total = self.db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        recode = sample < MEAN_SAMPLE and total > sample
        if recode:
            vectors = [_floats(blob) for (blob,) in self.db.execute(
                "SELECT vec FROM vectors ORDER BY hash LIMIT ?", (MEAN_SAMPLE,))]
            mean = [sum(column) / len(vectors) for column in zip(*vectors)]
            spread = [max(1e-9, (sum((x - m) ** 2 for x in column) / len(vectors)) ** 0.5)
                      for column, m in zip(zip(*vectors), mean)]
            self._set("mean", json.dumps(mean))
            self._set("spread", json.dumps(spread))
            self._set("sampled", str(len(vectors)))
        mean, spread = self.mean, self.spread
        if mean is None or spread is None:
            return
        nbytes = (len(mean) + 7) // 8
        todo = self.db.execute("SELECT hash, vec FROM vectors" + ("" if recode else " WHERE code IS NULL")).fetchall()
        updates = []
        for h, blob in todo:
            vector = _floats(blob)
            fine, bias = fine_code(vector, mean, spread)
            updates.append((binary_code(vector, mean).to_bytes(nbytes, "big"), fine, bias, h))
        self.db.executemany("UPDATE vectors SET code = ?, fine = ?, bias = ? WHERE hash = ?", updates)

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


def _reset(db: sqlite3.Connection, key: str, always: bool = False) -> dict[str, str]:
    db.execute("BEGIN IMMEDIATE")
    try:
        info = _info(db)
        if always or info.get("version") != VERSION or info.get("model") != key:  # re-checked under the lock
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


def _current(blob: sqlite3.Blob | None, token: str | None, length: int) -> bool:
    """Whether a token-headed row (PATHS, LOW) is the current `finish`'s: it starts with the
    token read in the search's transaction and has the length the rows it goes with give."""
    return (blob is not None and token is not None and len(token) == _PATHS_HEAD and len(blob) == length
            and blob[:_PATHS_HEAD] == token.encode("ascii"))


class _PackedPaths:
    """The PATHS row of one search's transaction, when it is current (see PATHS)."""

    __slots__ = ("blob", "text")

    def __init__(self, blob: sqlite3.Blob, text: int) -> None:
        self.blob = blob
        self.text = text   # where the paths' text starts

    @staticmethod
    def pack(token: str, paths: list[str]) -> bytes:
        encoded = [path.encode("utf-8") for path in paths]
        offsets, at = array("I", [0]), 0
        for name in encoded:
            at += len(name)
            offsets.append(at)
        return token.encode("ascii") + offsets.tobytes() + b"".join(encoded)

    @classmethod
    def of(cls, blob: sqlite3.Blob | None, token: str | None, count: int) -> "_PackedPaths | None":
        """The row's reader, or None when it cannot be trusted. Trigger: no row, no token, or a
        row written by another `finish` than the one that wrote the current token (code from
        before PATHS rewrote the rest), or of another number of cards. Why: a name from it would
        be another card's. Outcome: None, and the search reads `slots`."""
        if blob is None or token is None or len(token) != _PATHS_HEAD:
            return None
        text = _PATHS_HEAD + 4 * (count + 1)
        if len(blob) < text or blob[:_PATHS_HEAD] != token.encode("ascii"):
            return None
        if len(blob) != text + memoryview(blob[text - 4:text]).cast("I")[0]:
            return None
        return cls(blob, text)

    def at(self, positions: list[int]) -> list[str]:
        """The paths of the cards at these packed positions, in that order (`_paths_at`)."""
        blob, text = self.blob, self.text
        out = []
        for pos in positions:
            at = _PATHS_HEAD + 4 * pos
            start, end = memoryview(blob[at:at + 8]).cast("I")
            out.append(blob[text + start:text + end].decode("utf-8"))
        return out


def _paths_at(db: sqlite3.Connection, positions: list[int]) -> list[str]:
    """The paths of the cards at these packed positions, in that order."""
    names: dict[int, str] = {}
    for start in range(0, len(positions), 500):
        chunk = positions[start:start + 500]
        names.update(db.execute(f"SELECT pos, path FROM slots WHERE pos IN ({','.join('?' * len(chunk))})", chunk))
    return [names[pos] for pos in positions]


def _floats(blob: bytes) -> list[float]:
    vec = array("f")
    vec.frombytes(blob)
    return vec.tolist()


def first_stage(count: int, refined: bool = False) -> int:
    """How many cards stage 1 keeps for stage 2 (`refined`: it read the LOW planes too)."""
    return min(count, max(FIRST_STAGE, count // (REFINED_SHARE if refined else FIRST_SHARE)))


def _planes(codes: list[bytes], dims: int) -> bytes:
    """The sign codes of all cards turned into one bit plane a dimension: plane d is an int
    whose bit i is card i's sign bit for dimension d, stored as `ceil(cards / 8)` little-endian
    bytes. The transposition goes through strings of '0'/'1' (C-level `zip`), a block of
    dimensions at a time so memory stays a few MB a block."""
    size = (len(codes) + 7) // 8
    text = [format(int.from_bytes(code, "big"), f"0{dims}b") for code in codes]
    out = []
    for start in range(0, dims, 32):
        columns = zip(*[bits[start:start + 32] for bits in text])
        out += [int("".join(reversed(column)) or "0", 2).to_bytes(size, "little") for column in columns]
    return b"".join(out)


def _first_stage(planes_blob: sqlite3.Blob | bytes, count: int, query: list[float], mean: list[float],
                 use_numpy: bool | None, held: list | None = None, low_blob: sqlite3.Blob | bytes | None = None,
                 held_low: list | None = None) -> Callable[[int], list[int]]:
    """A function giving the `k` best card positions by the stage 1 score (module docstring),
    ties by position, in position order. `held`, one entry a dimension, holds the planes as
    ints that earlier searches of the same rows read (None where none did); those this search
    reads are put there. With `low_blob` (the LOW row, a current one), a dimension of query
    weight w >= LOW_FROM counts 2w where the card's sign agrees with the query's and w more
    where its low bit does (its two-bit level: 3w at the level furthest on the query's side, 0
    at the one furthest from it); `held_low` keeps those planes as `held` does."""
    dims = len(mean)
    size = (count + 7) // 8
    centred = [q - m for q, m in zip(query, mean)]
    top = max(map(abs, centred)) or 1.0
    weights = [round(abs(c) / top * ((1 << WEIGHT_BITS) - 1)) for c in centred]
    refined = [low_blob is not None and w >= LOW_FROM for w in weights]
    if use_numpy is None:
        use_numpy = count >= NUMPY_FROM or "numpy" in sys.modules
    numpy = _numpy() if use_numpy else None
    if numpy is not None:
        def agreeing(blob, start: int):
            bits = numpy.unpackbits(numpy.frombuffer(blob[start:start + dims * size], dtype=numpy.uint8)
                                    .reshape(dims, size), axis=1, bitorder="little")[:, :count]
            return numpy.where(positive[:, None], bits, 1 - bits).astype(numpy.int64)

        positive = numpy.array([c > 0 for c in centred])
        high = [2 * w if r else w for w, r in zip(weights, refined)]
        scores = numpy.array(high, dtype=numpy.int64) @ agreeing(planes_blob, 0)
        if any(refined):
            lows = [w if r else 0 for w, r in zip(weights, refined)]
            scores += numpy.array(lows, dtype=numpy.int64) @ agreeing(low_blob, _PATHS_HEAD)

        def best(k: int) -> list[int]:
            order = numpy.lexsort((numpy.arange(count), -scores))[:k]
            return sorted(order.tolist())
        return best

    ones = (1 << count) - 1
    # Each dimension's plane of the cards whose sign agrees with the query's there goes in once
    # for every set bit of its weight, at that bit's place (one place up, 2w, for a refined
    # dimension, whose LOW plane then goes in at the weight's own places), added as it is read
    # (`_PlaneSum`).
    adder = _PlaneSum()
    from_bytes = int.from_bytes
    for d, weight in enumerate(weights):
        if not weight:
            continue
        for kind, up in ((0, 1), (1, 0)) if refined[d] else ((0, 0),):   # (PLANES or LOW, places up)
            kept = held if kind == 0 else held_low
            plane = kept[d] if kept is not None else None
            if plane is None:
                at = d * size if kind == 0 else _PATHS_HEAD + d * size
                plane = from_bytes((planes_blob if kind == 0 else low_blob)[at:at + size], "little")
                if kept is not None:
                    kept[d] = plane
            if centred[d] <= 0:
                plane ^= ones
            for place in range(WEIGHT_BITS):
                if weight >> place & 1:
                    adder.add(plane, place + up)
            plane = None
    score = adder.total()

    def best(k: int) -> list[int]:
        return _top_positions(score, ones, k)
    return best


def _sum_planes(places: list[list[int]]) -> list[int]:
    """The bit-sliced sum of planes given by place: `places[k]` holds planes worth 2 ** k each
    (bit i of a plane counts for card i). The result's entry k is bit k of every card's sum."""
    adder = _PlaneSum()
    for place, planes in enumerate(places):
        for plane in planes:
            adder.add(plane, place)
    return adder.total()


class _PlaneSum:
    """A bit-sliced sum of planes added one at a time (`add(plane, k)`: bit i of `plane` counts
    2 ** k for card i), by a carry-save adder tree (Wallace): three planes of one place become
    their sum at that place and their carry one place up, five big-int operations for one plane
    fewer, where a ripple-carry counter pays two operations for every counter bit (~8) on every
    plane. Each place holds at most two planes between calls, so a search's ~300 planes of
    12.5 KB (at 100,000 cards) are not all alive at once: a process reuses the memory of the
    ones added instead of touching ~4 MB of fresh pages (~3 ms of a CLI search, issue 22)."""

    __slots__ = ("places",)

    def __init__(self) -> None:
        self.places: list[list[int]] = []

    def add(self, plane: int, place: int) -> None:
        places = self.places
        while True:
            while len(places) <= place:
                places.append([])
            items = places[place]
            if len(items) < 2:
                items.append(plane)
                return
            a, b = items.pop(), items.pop()
            half = a ^ b
            items.append(half ^ plane)
            plane = (a & b) | (plane & half)
            place += 1

    def total(self) -> list[int]:
        """Bit k of every card's sum, for k = 0 up to the highest set (trailing zeros dropped)."""
        places = self.places
        out: list[int] = []
        k = 0
        while k < len(places):
            items = places[k]
            if len(items) == 2:
                a, b = items.pop(), items.pop()
                items.append(a ^ b)
                self.add(a & b, k + 1)
            out.append(items[0] if items else 0)
            k += 1
        while out and not out[-1]:
            out.pop()
        return out


def _top_positions(score: list[int], ones: int, k: int) -> list[int]:
    """The k cards of highest score, ties by position, in position order: the cut-off score
    (the largest with at least k cards at or above it) found a bit at a time from the highest,
    with the cards above it and those at it, then the set bits read off. A bit of the cut-off
    is 1 when the cards already above it and those that equal it so far and have that bit are
    at least k (a few big-int operations a bit, where a binary search on counts paid a whole
    `_at_least` a step: ~1 ms of a search at 100,000 cards, issue 22)."""
    above, equal = 0, ones   # cards whose score is above the cut-off / equal to it, so far
    for bit in reversed(score):
        both = equal & bit
        if (above | both).bit_count() >= k:
            equal = both
        else:
            above |= both
            equal &= ~bit
    return sorted(_set_bits(above) + _set_bits(equal, k - above.bit_count()))


def _set_bits(mask: int, limit: int | None = None) -> list[int]:
    """Positions of the set bits of `mask`, lowest first, at most `limit` of them (a C-level
    scan of its binary digits, reversed so that a digit's index is its position)."""
    import re

    found = re.finditer("1", bin(mask)[:1:-1])
    return [match.start() for match in (found if limit is None else islice(found, limit))]


def _numpy():
    try:
        import numpy
    except ImportError:
        return None
    return numpy
