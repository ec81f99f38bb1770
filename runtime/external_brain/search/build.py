"""Making the search index's rows from card files, for `refresh`: imported only when there is
something to index.

What it promises:
- `_read_entry` reads and analyses one file and touches no database; a file that is not a card
  gives a row that says why, never an error that stops the others.
- New documents are built a chunk of docids at a time (`CHUNK_BITS`: the docids one posting row
  holds, read from this module only): `_build_batch` makes each chunk's posting rows whole, in
  forked worker processes for a large build (`_built`; they run `_worker_batch` by module path
  and exit when the building process dies), else in this one. The index is the same whatever
  the number of processes; a worker that dies only moves its chunks back to this process.
- Changes to an index that already has postings are gathered (`_PostingEdits`) and written with
  one read and one write per (term, chunk) row they touch. A few cards at a time (a write, a
  refresh after an edit) go to the small `fresh` and `stale` tables instead (`_DeltaEdits`),
  which readers merge with `postings` (`Index.postings`), until `fold` moves them over once
  `DELTA_CARDS` cards wait there: a card's ~100 terms cost ~100 small rows, not ~100 reads and
  rewrites of rows spread over the whole postings table.
"""

from __future__ import annotations

import json
import os
import sqlite3
from array import array
from bisect import bisect_left
from collections import Counter, defaultdict, deque
from io import BytesIO
from itertools import chain, repeat
from operator import mul
from typing import Any, Iterable, Iterator

from ..errors import BadFrontmatter, IOProblem, NotACard, UnsafePath, UnsafeVault
from ..vault.storage import Vault, load_card, problem_of
from .store import _FIELD_PARTS, FIELDS, POSTINGS_CHUNK_KEY, card_rows

CHUNK_BITS = 10                # 1,024 docids per posting row (see docs/decisions.md, "Store")
DELTA_BATCH = 64               # cards indexed at once up to which their postings go to `fresh`
DELTA_CARDS = 64              # cards in `stale` past which a change folds the excess into `postings`
_PARALLEL_FROM = 2000          # new cards in one build from which it is spread over every core


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


class Analysed:
    """A card's analysed terms (`analyse`'s fields, their lengths and the posting codes), made by
    a writer before its write lock (`analysed`) so that indexing the card under the lock
    tokenises nothing: taken for a card whose searchable texts (`analysis.field_texts`) are the
    ones analysed, by the same `analyse`."""

    __slots__ = ("analyse", "texts", "lengths", "codes")

    def __init__(self, analyse, texts: tuple, lengths: list[int], codes: dict[str, int]) -> None:
        self.analyse, self.texts, self.lengths, self.codes = analyse, texts, lengths, codes

    def of(self, card, analyse) -> bool:
        """Whether these are the terms `analyse` gives `card` (its searchable texts compared)."""
        from .analysis import field_texts

        return analyse is self.analyse and field_texts(card) == self.texts


def analysed(card, analyse) -> Analysed:
    """`card`'s terms as `_card_entry` makes them, for a later `_read_entry(read=(..., card, them))`."""
    from .analysis import field_texts

    fields = analyse(card)
    lengths = [len(fields[field]) for field in FIELDS]
    return Analysed(analyse, field_texts(card), lengths, _codes(fields, lengths))


def _read_entry(vault: Vault, analyse, rel: str, codes=None, read=None) -> _Entry | None:
    """Read and analyse one file for the index; None when there is no file (gone since it was
    listed, or not a file). Touches no database: builds call it in worker processes.
    `codes(fields, lengths)` makes the entry's `codes` (default `_codes`): whatever it returns,
    iterated, gives the distinct terms in first-held order (`doc_data.terms`). `read`: the
    file's (size, mtime, inode) and the card its text makes, when a writer has them (the file
    is then not read again), and optionally that card's `Analysed` terms (taken when they are
    the card's: `Analysed.of`)."""
    folder, _, name = rel.rpartition("/")
    if read is not None:
        (size, mtime, inode), card, *ahead = read
        terms = ahead[0] if ahead and ahead[0] is not None and codes is None and ahead[0].of(card, analyse) else None
        return _card_entry(card, analyse, codes, (folder, name, size, mtime, inode, None, None), terms)
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
    return _card_entry(card, analyse, codes, (folder, name, stat.st_size, stat.st_mtime_ns, stat.st_ino, None, None))


def _card_entry(card, analyse, codes, doc: tuple, terms: Analysed | None = None) -> _Entry:
    """A card's `_Entry`, its `docs` row `doc` (`_read_entry`); `terms`: its terms, analysed already."""
    if terms is not None:
        lengths, codes = terms.lengths, terms.codes
    else:
        fields = analyse(card)
        lengths = [len(fields[field]) for field in FIELDS]
        codes = (codes or _codes)(fields, lengths)
    meta, key, links, facets, tags = card_rows(card)
    return _Entry(doc, (json.dumps(lengths), meta, "\n".join(codes)), key, links, facets, tags, lengths, codes)


def _codes(fields: dict[str, list[str]], lengths: list[int]) -> dict[str, int]:
    """Each distinct term's posting code (`encode_code` of its per-field frequencies), terms in
    the order the fields (FIELDS order) first hold them. Fields take disjoint bits of a code, so
    a field's part is OR-ed in: counting is done in C (Counter), and the few terms of the small
    fields are merged with the body's in one pass, not a list of five counts per term."""

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
    card_keys, links, facets, card_tags, the postings packed (`_packed_postings`; `_posting_rows`
    makes the rows), summed field lengths, paths gone when read). Each posting row is whole:
    every document of the chunk that holds the term, docids ascending."""
    docs, data, keys, links, facets, tags, gone = [], [], [], [], [], [], []
    totals = [0] * len(FIELDS)
    by_term: defaultdict[str, list[int]] = defaultdict(list)  # term -> docid, code, docid, code, ...
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
    return (docs, data, keys, links, facets, tags, (batch[0][0] >> chunk_bits, *_packed_postings(by_term)),
            totals, gone)


def _packed_postings(by_term: dict[str, list[int]]) -> tuple[str, array, bytes, bytes]:
    """A chunk's postings as four objects, not ~30,000 rows: its terms in order, newline-separated
    (no term holds a newline: `doc_data.terms` is stored so too); the length of each term's
    docid, code, docid, code, ... list; and all the docids (uint32) and codes (uint64) packed at
    once. A worker hands them to the building process in a few copies of memory, where a list
    of row tuples cost a pickling step per row and per bytes object. Terms are sorted: SQLite
    then inserts into neighbouring pages of its B-tree. Every step is a C loop (`map`,
    `chain`), none a Python one per row."""
    terms = sorted(by_term)
    pairs = list(map(by_term.__getitem__, terms))
    flat = list(chain.from_iterable(pairs))
    return ("\n".join(terms), array("I", map(len, pairs)),
            array("I", flat[0::2]).tobytes(), array("Q", flat[1::2]).tobytes())


def _posting_rows(packed: tuple[int, str, array, bytes, bytes]) -> Iterator[tuple[str, int, bytes, bytes]]:
    """The `postings` rows of a chunk packed by `_build_batch` (chunk, then `_packed_postings`),
    in term order, made lazily for `executemany`. Each row reads its docids and codes from the
    two packed arrays in turn: `read(n)` makes one bytes object where a slice would also make
    a slice object and its bounds (the same cost as unpickling the rows, ~0.3 us a row)."""
    chunk, terms, lengths, docids, codes = packed
    if not lengths:
        return iter(())
    # A length counts ints of the docid, code, ... list, two per posting: a row's docids
    # (4 bytes each) take twice that many bytes, its codes (8 bytes each) four times.
    return zip(terms.split("\n"), repeat(chunk),
               map(BytesIO(docids).read, map(mul, lengths, repeat(2))),
               map(BytesIO(codes).read, map(mul, lengths, repeat(4))))


def _file_postings(by_term: defaultdict[str, list[int]], docid: int, fields: dict[str, list[str]],
                   lengths: list[int]) -> list[str]:
    """Add one document's postings to `by_term` (term -> docid, code, docid, code, ...), the
    codes `_codes` gives: the few terms of the fields other than the body are merged with the
    body's first, then the body's terms, most of a build's ~300 postings per card, go in by C
    loops (`map`), not a Python step per posting: each term's list is looked up once, then
    given the docid, then the code, read from a table by the term's frequency. Returns the
    distinct terms in first-held order, as `_codes` holds them."""
    small = _codes({**fields, "body": []}, lengths)  # every field but the body (FIELDS' last)
    tf_shift, tf_cap, (length_cap, length_shift) = _FIELD_PARTS[-1]
    fixed = min(lengths[-1], length_cap) << length_shift
    counts = Counter(fields["body"])
    for term, code in small.items():
        tf = counts.pop(term, 0)
        if tf:
            code |= fixed | (min(tf, tf_cap) << tf_shift)
        by_term[term] += docid, code
    if counts:
        code_of_tf = [fixed | (min(tf, tf_cap) << tf_shift) for tf in range(max(counts.values()) + 1)]
        pairs = list(map(by_term.__getitem__, counts))  # a missing term gets its empty list
        # Each term occurs once per document, so its list takes this docid, then its code.
        # `deque(..., maxlen=0)` runs the appends and keeps nothing.
        deque(map(list.append, pairs, repeat(docid)), 0)
        deque(map(list.append, pairs, map(code_of_tf.__getitem__, counts.values())), 0)
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
        self.write(*self.rows())

    def rows(self) -> tuple[list[tuple[str, int, bytes, bytes]], list[tuple[str, int, bytes, bytes]],
                            list[tuple[str, int]]]:
        """The gathered changes as the stored rows to rewrite, the rows to add and the keys to
        delete (`write`), read from the stored rows they change; nothing is written, and nothing
        is left gathered."""
        updates, writes, deletes = [], [], []
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
                (updates if row else writes).append((*key, docids.tobytes(), codes.tobytes()))
            else:
                deletes.append(key)
        self.drops.clear()
        self.adds.clear()
        self.size = 0
        return updates, writes, deletes

    def write(self, updates: list[tuple[str, int, bytes, bytes]], writes: list[tuple[str, int, bytes, bytes]],
              deletes: list[tuple[str, int]]) -> None:
        """Write what `rows` made: `updates` are rows it read (still there: the caller's
        transaction, or a fold plan that still holds), `writes` rows it did not find."""
        # Trigger: a row that is stored already. Why: an UPDATE of it writes ~2/3 of the pages
        # an INSERT OR REPLACE (a delete, then an insert) does: a fold of 16 cards at 10,000
        # cards put 1,319 pages in the WAL instead of 2,013, ~12 -> ~8 ms of its commit under
        # the index's write lock. Outcome: the same rows.
        self.db.executemany("UPDATE postings SET docids = ?3, codes = ?4 WHERE term = ?1 AND chunk = ?2", updates)
        self.db.executemany("INSERT OR REPLACE INTO postings VALUES (?, ?, ?, ?)", writes)
        self.db.executemany("DELETE FROM postings WHERE term = ? AND chunk = ?", deletes)
        if self.unwritten_from is not None and (updates or writes):
            self.unwritten_from = max(self.unwritten_from, max(chunk for _, chunk, _, _ in chain(updates, writes)) + 1)
        postings_moved(self.db, {chunk for _, chunk, *_ in chain(updates, writes, deletes)})

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


def postings_moved(db: sqlite3.Connection, chunks: Iterable[int] | None = None) -> None:
    """Count a change to `postings` in `info`, in the caller's transaction; every statement that
    changes its rows is followed by this call. 'postings_moved' counts them all: a fold planned
    outside the write lock (`plan_fold`) is applied only if none came between. What changed, for
    the processes that keep rows they read (`index._KeptPostings`): the rows of `chunks`
    ('postings_chunk:N', one counter per chunk), or any row ('postings_epoch': None, a build or
    `reindex`; or a change counted by a process of an earlier version, which moved
    'postings_moved' only: then 'postings_counted', the count this call last saw, is behind). The
    epoch starts at a random number in each file, as `info.changes` does, so a value read from
    one file is never taken for another's."""
    moved, counted = db.execute("SELECT (SELECT value FROM info WHERE key = 'postings_moved'), "
                                "(SELECT value FROM info WHERE key = 'postings_counted')").fetchone()
    db.execute("INSERT INTO info VALUES ('postings_moved', '1') ON CONFLICT (key) DO UPDATE SET value = value + 1")
    if chunks is None or moved != counted:
        db.execute("INSERT INTO info VALUES ('postings_epoch', abs(random() % 1000000000000000)) "
                   "ON CONFLICT (key) DO UPDATE SET value = value + 1")
    else:
        db.execute("INSERT OR IGNORE INTO info VALUES ('postings_epoch', abs(random() % 1000000000000000))")
        db.executemany("INSERT INTO info VALUES (?, '1') ON CONFLICT (key) DO UPDATE SET value = value + 1",
                       [(f"{POSTINGS_CHUNK_KEY}{chunk}",) for chunk in sorted(chunks)])
    db.execute("INSERT INTO info SELECT 'postings_counted', value FROM info WHERE key = 'postings_moved' "
               "ON CONFLICT (key) DO UPDATE SET value = excluded.value")


def postings_moves(db: sqlite3.Connection) -> str | None:
    row = db.execute("SELECT value FROM info WHERE key = 'postings_moved'").fetchone()
    return row[0] if row else None


def _stat_or_link(path) -> os.stat_result:
    """The file's stamp; for a link that cannot be followed (a loop, a missing target: stored as
    a problem), the link's own."""
    try:
        return os.stat(path)
    except OSError:
        return os.lstat(path)


class _DeltaEdits:
    """`_PostingEdits`' calls, written at once to the `fresh` and `stale` tables (module
    docstring). A card in `stale` has its current postings, if any, in `fresh`; any other card
    has them in `postings`."""

    size = 0                  # nothing waits in memory: never worth an early flush
    unwritten_from = None     # never a bulk build

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.dropped: dict[int, list[str]] = {}   # docid -> its `fresh` terms to delete, unless `add` writes them again

    def drop(self, docid: int, terms: Iterable[str]) -> None:
        terms = [term for term in terms if term]
        if self.db.execute("SELECT 1 FROM stale WHERE docid = ?", (docid,)).fetchone():
            # Trigger: a waiting card written again (a server's PATCH of a hot card). Why: its
            # ~100 rows were deleted here and inserted again by `add`, nearly all under the same
            # terms (its codes change with its lengths). Outcome: the deletes wait for `add`, which
            # writes each term's row over in place and deletes only the terms it no longer has;
            # `flush` deletes them for a card not added again. The same rows in the end.
            self.dropped[docid] = terms
        else:  # its rows in `postings` hold these terms until the fold drops them
            self.db.execute("INSERT INTO stale VALUES (?, ?)", (docid, "\n".join(terms)))

    def add(self, docid: int, codes: dict[str, int]) -> None:
        # A new docid, or one reused from a removed card whose rows `stale` already covers.
        self.db.execute("INSERT OR IGNORE INTO stale VALUES (?, '')", (docid,))
        dropped = self.dropped.pop(docid, None)
        if dropped is None:
            self.db.executemany("INSERT INTO fresh VALUES (?, ?, ?)", ((term, docid, code) for term, code in codes.items()))
            return
        self.db.executemany("INSERT INTO fresh VALUES (?, ?, ?) ON CONFLICT (term, docid) DO UPDATE SET code = excluded.code",
                            ((term, docid, code) for term, code in codes.items()))
        self.db.executemany("DELETE FROM fresh WHERE term = ? AND docid = ?",
                            ((term, docid) for term in dropped if term not in codes))

    def flush(self) -> None:
        dropped, self.dropped = self.dropped, {}
        for docid, terms in dropped.items():
            self.db.executemany("DELETE FROM fresh WHERE term = ? AND docid = ?", ((term, docid) for term in terms))


def fold(db: sqlite3.Connection, at_least: int = 1, cards: int | None = None) -> None:
    """Move the postings waiting in `fresh` into `postings` and take their cards out of
    `stale`, inside the caller's write transaction, when at least `at_least` cards are in
    `stale`: all of them, or `cards` of them (`_fold_group`: the fullest chunk's first)."""
    if db.execute("SELECT count(*) FROM stale").fetchone()[0] < at_least:
        return
    apply_fold(db, plan_fold(db, cards))


class _FoldPlan:
    """What a fold of some waiting cards writes (`plan_fold`), and what it was made from: the
    cards' `stale` and `fresh` rows and the count of changes to `postings` (`postings_moved`)."""

    __slots__ = ("stale", "fresh", "moves", "edits", "rows", "whole")

    def __init__(self, stale, fresh, moves, edits, rows, whole) -> None:
        self.stale, self.fresh, self.moves, self.edits = stale, fresh, moves, edits
        self.rows, self.whole = rows, whole   # `_PostingEdits.rows`: updates, writes, deletes

    def still_holds(self, db: sqlite3.Connection) -> bool:
        """Whether the rows it was made from are still the index's (read in the caller's write
        transaction): no change to `postings` since, and its cards' `stale` and `fresh` rows the
        same (a card written again while it waits has new `fresh` rows)."""
        if postings_moves(db) != self.moves:
            return False
        docids = [docid for docid, _ in self.stale]
        marks = ",".join("?" * len(docids))
        return sorted(db.execute(f"SELECT docid, terms FROM stale WHERE docid IN ({marks})", docids)) == self.stale \
            and sorted(db.execute(f"SELECT term, docid, code FROM fresh WHERE docid IN ({marks})", docids)) == self.fresh


def _fold_group(db: sqlite3.Connection, cards: int) -> list[int]:
    """The `cards` waiting cards a partial fold takes: chunk by chunk (`CHUNK_BITS`), the chunk
    with the most waiting cards first (ties: the lower chunk), lowest docids first within one.

    Trigger: a fold of some of the waiting cards. Why: a card's ~100 terms are ~100 posting
    rows of its chunk, and the fold's cost is per row read and written, not per byte (16 cards
    of 256 waiting over 10 chunks at 10,000 cards: 1,816 rows by lowest docids, 1,196 from one
    chunk); cards of one chunk share the rows of their common terms. Outcome: fewer rows a card."""
    by_chunk: dict[int, list[int]] = {}
    for (docid,) in db.execute("SELECT docid FROM stale ORDER BY docid"):
        by_chunk.setdefault(docid >> CHUNK_BITS, []).append(docid)
    chosen: list[int] = []
    for chunk in sorted(by_chunk, key=lambda chunk: (-len(by_chunk[chunk]), chunk)):
        chosen += by_chunk[chunk][:cards - len(chosen)]
        if len(chosen) >= cards:
            break
    return chosen


def plan_fold(db: sqlite3.Connection, cards: int | None = None) -> _FoldPlan:
    """A fold of all the cards waiting in `stale`, or of `cards` of them (`_fold_group`), read
    from one snapshot (the caller's transaction) and written by `apply_fold`."""
    if cards is None:
        chosen = db.execute("SELECT docid, terms FROM stale").fetchall()
    else:
        group = _fold_group(db, cards)
        chosen = db.execute(f"SELECT docid, terms FROM stale WHERE docid IN ({','.join('?' * len(group))})",
                            group).fetchall()
    edits = _PostingEdits(db)
    for docid, terms in chosen:
        if terms:
            edits.drop(docid, terms.split("\n"))
    codes_of: dict[int, dict[str, int]] = {}
    docids = [docid for docid, _ in chosen]
    marks = ",".join("?" * len(docids))
    # `fresh` is keyed by term: for a piece, SQLite scans its few thousand rows for the docids.
    rows = db.execute("SELECT term, docid, code FROM fresh" + ("" if cards is None else f" WHERE docid IN ({marks})"),
                      () if cards is None else docids).fetchall()
    for term, docid, code in rows:
        codes_of.setdefault(docid, {})[term] = code
    for docid, codes in codes_of.items():
        edits.add(docid, codes)
    moves = postings_moves(db)
    return _FoldPlan(sorted(chosen), sorted(rows), moves, edits, edits.rows(), cards is None)


def apply_fold(db: sqlite3.Connection, plan: _FoldPlan) -> None:
    """Write a fold `plan_fold` made, in the caller's write transaction."""
    plan.edits.write(*plan.rows)
    if plan.whole:
        db.execute("DELETE FROM fresh")
        db.execute("DELETE FROM stale")
        return
    docids = [docid for docid, _ in plan.stale]
    marks = ",".join("?" * len(docids))
    db.execute(f"DELETE FROM fresh WHERE docid IN ({marks})", docids)
    db.execute(f"DELETE FROM stale WHERE docid IN ({marks})", docids)
