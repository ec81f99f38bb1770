"""Semantic and hybrid search, and keeping the vector cache in step with the cards.

Imported only when an embedding provider is configured and the search mode is not keyword.

What it promises:
- `search_vectors` embeds only the query. If the provider fails in any way (refused, timeout,
  HTTP error, bad reply), or no vectors are cached yet, it returns the keyword results with one
  warning line saying why; it never fails and never waits past the provider's `timeout`.
- When the cards moved on since the vector cache was last brought up to date (new, edited,
  deleted cards: the keyword index's fingerprint differs) and the provider answers, the search
  starts `reindex --embeddings --background` as a detached process (one at a time, and not
  again for a minute after one failed), so cards written while the provider was down get their
  vectors with no manual step. Until then they are found by keyword.
- `sync_vectors` (reindex --embeddings) embeds every card without a current vector, committing
  each provider request's vectors before it sends the next, so an interrupted run loses at most
  the request in flight and the next one resumes where it stopped. It brings the keyword index
  up to date as a search would, and never rebuilds it.
- A vector search always has a nearest card; it still counts as a search miss (`missed`) when
  no card passes the keyword floors and the best cosine is under `link_similarity`.
- `card_vectors` / `cosines_with` give `create` and `analyze` cosines to judge links and
  duplicates by; any provider failure makes them return nothing, never raise.
"""

from __future__ import annotations

import heapq
import json
import os
import sys
import time
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Iterator

from ..errors import BadFrontmatter, BrainError, ConfigError, EmbeddingUnavailable, NotACard
from ..vault.valueclass import valueclass
from ..vault.storage import Vault, load_card, load_kept_card, locked
from .analysis import analyse_query
from .embeddings import embed, model_key, passage_text, provider_name
from .fusion import DEPTH, VaultScale, fuse
from .relevance import MIN_BACKGROUND, Background, answers_search
from .index import Index
from .vectors import RESCORE, SyncResult, VectorStore, cosine, keyword_digest, text_hash, unit
from .vectors import VERSION as VECTORS_VERSION

RETRY_AFTER = 60.0   # seconds between background catch-ups after one failed
UNIT = 256           # cards whose vectors are cached already, recorded a step at a time by a sync
READ_PAGES = 64      # SQLite's page cache of a search's connections, in pages (`_rank`)
_LOCK = "embeddings"


def require_provider(vault: Vault, searching: bool = True):
    """The vault's embedding settings, or ConfigError naming the setting; for a search
    (`searching`), also the keyword mode that needs none (`reindex --embeddings` has no mode)."""
    settings = vault.settings.embeddings
    if not settings.provider:
        raise ConfigError(f"no embedding provider is configured; set [embeddings] provider in "
                          f"{vault.brain_dir / 'config.toml'} (README: Semantic search)"
                          + (", or use --mode keyword" if searching else ""))
    return settings


# ---------------------------------------------------------------------------- search

def search_vectors(vault: Vault, query: str, filters, limit: int | None, explain: bool, mode: str):
    """Ranked hits by `mode` ("semantic": cosine only; "hybrid": fused with keyword), or the
    keyword result with a warning when vectors cannot be used."""
    from .keyword import SearchResult, _search

    settings = require_provider(vault)
    limit = vault.settings.search.limit if limit is None else limit

    def keyword_instead(reason: str) -> SearchResult:
        result = _search(vault, query, filters, limit, explain)
        result.warnings.append(f"{reason}; showing keyword results")
        return result

    store = VectorStore.open(vault, model_key(settings), create=False)
    if store is None or store.count() == 0:
        if store is not None:
            store.close()
        started = start_catch_up(vault)
        return keyword_instead("no card vectors are cached yet for this embedding model ("
                               + ("being built in the background" if started else "run `brain reindex --embeddings`")
                               + ")")
    try:
        try:
            query_vector, source = query_vector_of(vault, settings, query, len(store.mean or ()))
        except EmbeddingUnavailable as exc:
            if exc.details.get("reason") == "dimensions":
                # Trigger: the query's vector has another length than the cached ones, under
                # an unchanged configuration. Why: the provider may serve another model now
                # (a model pulled again, another server at the URL), and then no query matches
                # the cache again. Outcome: noted for the catch-up, which asks the provider for
                # one card's vector and rebuilds the cache if that differs too (`sync_vectors`).
                store.note_query_dimensions(exc.details["dimensions"])
                start_catch_up(vault, store)
            return keyword_instead(exc.message)
        ranked = _rank(vault, store, query, query_vector, filters, limit, explain, mode, source)
        # Trigger: a hit's file changed since the index saw it (a save in place the sweep had
        # not reached); `_rank` re-indexed it and gave nothing. Why: it was ranked by its old
        # text's vector and keyword rows, as if they were its text now. Outcome: ranked once
        # more, where its vector (of the old text) no longer matches its stamps and is left out.
        if ranked is None:
            ranked = _rank(vault, store, query, query_vector, filters, limit, explain, mode, source, recheck=False)
        return ranked
    finally:
        store.close()


def query_vector_of(vault: Vault, settings, query: str, dimensions: int) -> tuple[list[float], str]:
    """The query's unit vector and where it came from: "cache" (a search of the same text under
    the same embedding configuration kept it, `query_vectors`) or "provider" (one call, whose
    answer is then kept). Raises EmbeddingUnavailable when the provider fails or answers with
    another number of `dimensions` than the cached card vectors."""
    from .query_vectors import cached_query_vector, keep_query_vector, query_key

    key = query_key(model_key(settings), query)
    kept = cached_query_vector(vault, key, dimensions)
    if kept is not None:
        return unit(kept), "cache"
    vector = embed(settings, [query], "query")[0]
    if len(vector) != dimensions:
        raise EmbeddingUnavailable(f"{provider_name(settings)} returned a vector of {len(vector)} "
                                   f"dimensions, expected {dimensions} (as the cached vectors; if its model "
                                   "changed, `brain reindex --embeddings` embeds the cards again)",
                                   reason="dimensions", dimensions=len(vector))
    keep_query_vector(vault, key, vector)
    return unit(vector), "provider"


def vault_scale(store: VectorStore, query_vector: list[float]) -> VaultScale | None:
    """Where this query's cosines sit in the vault (`fusion.VaultScale`): its cosine with the
    centre of the cached cards, and the cards' typical cosine with their nearest neighbour."""
    mean, resolution = store.mean, store.resolution
    if mean is None or resolution is None or len(mean) != len(query_vector):
        return None
    return VaultScale(cosine(query_vector, mean), resolution)


def _rank(vault: Vault, store: VectorStore, query: str, query_vector: list[float], filters, limit: int,
          explain: bool, mode: str, source: str = "provider", recheck: bool = True):
    """The search's result; None, with the changed files re-indexed, when `recheck` is on and a
    hit chosen was ranked from an older version of its file than the one on disk."""
    from .analysis import card_fields
    from .keyword import SearchResult, _Scoring, _stamp

    params = vault.settings.search
    index = Index.open(vault, card_fields, sweep=params.freshness_sweep)
    try:
        # Trigger: the cards moved on, or the cache predates the vault's resolution (kept by
        # every sync since) or its packed PATHS and LOW rows (issue 22: written by every
        # `finish` since, no provider call needed). Why: all are the background sync's to bring
        # up to date. Outcome: one detached catch-up; this search ranks with what is cached.
        if (_index_digest(vault, index) != store.digest or (store.resolution is None and store.count() > 1)
                or not store.refined):
            start_catch_up(vault, store)
        rows: dict[str, tuple] = {}   # path -> (docid, size, mtime_ns, meta) of cards seen so far
        # Trigger: filters on what `facets` holds only (the usual case). Why: decoding each
        # candidate's stored JSON was a fifth of the vector side's time at 100,000 cards (issue
        # 22). Outcome: candidates are judged on their `facets` columns, no JSON decoded.
        light = not (filters.tags or filters.as_of is not None or filters.since or filters.until)

        def admit(paths: list[str], docids: dict[str, int] | None = None) -> dict[str, tuple[int, int]]:
            rows.update(_rows_by_path(index, [p for p in paths if p not in rows], light, docids))
            return {p: rows[p][1:3] for p in paths if p in rows and filters.admits(rows[p][3])}

        # Trigger: a search. Why: it reads a few hundred scattered rows of each file once (the
        # candidates' keyword rows, their floats), and SQLite's page cache (2 MB a connection by
        # default) only made a cold process touch fresh memory for them: ~1-4 ms of a CLI
        # search at 100,000 cards (issue 22). Outcome: READ_PAGES pages a connection, which
        # keep the B-trees' inner pages, the only ones read again.
        for db in (index.db, store.db):
            db.execute(f"PRAGMA cache_size = {READ_PAGES}")
        vector = dict(store.similarities(query_vector, RESCORE, admit))
        keyword: dict[str, float] = {}
        scoring = None
        analysed = analyse_query(query)
        terms = list(analysed.terms)
        if terms:
            # Scored in semantic mode too: the judgement of relevance weighs keyword evidence.
            scoring = _Scoring.of(index, analysed)
        if mode == "hybrid" and terms:
            top = heapq.nlargest(DEPTH * 2, scoring.scores.items(), key=itemgetter(1))
            # The head's metadata is read a slice at a time until DEPTH cards pass (most do, so
            # one slice is the usual read, not the whole head; each is parsed JSON), and not
            # at all for cards the vector candidates already read.
            known = {row[0]: row[3] for row in rows.values()}
            step = DEPTH + DEPTH // 4
            for start in range(0, len(top), step):
                chunk = top[start:start + step]
                by_docid = (_facet_docs if light else Index.docs)(index, [d for d, _ in chunk if d not in known])
                for docid, score in chunk:
                    meta = known.get(docid) or by_docid.get(docid)
                    if (meta is None or not filters.admits(meta)
                            or scoring.coverage(docid) < params.min_coverage - 1e-12):
                        continue
                    keyword[meta["path"]] = score
                    rows.setdefault(meta["path"], (docid, meta["size"], meta["mtime_ns"], meta))
                    if len(keyword) == DEPTH:
                        break
                if len(keyword) == DEPTH:
                    break
            # Cards only the vectors found still have their keyword score (0 when no word matches).
            for path in vector.keys() - keyword.keys():
                keyword[path] = scoring.scores.get(rows[path][0], 0.0) if path in rows else 0.0
            # And cards only keyword search found have their cosine, when their vector is current.
            missing = [p for p in keyword if p not in vector]
            for path, (size, mtime_ns, similarity) in store.similarities_of(query_vector, missing).items():
                if rows[path][1:3] == (size, mtime_ns):
                    vector[path] = similarity
        if mode == "hybrid":
            fused = fuse(keyword, vector, vault_scale(store, query_vector))
            ranked = sorted(fused.scores.items(), key=lambda item: (-round(item[1], 9), item[0]))
            weight = fused.weight
        else:
            fused = None
            ranked = sorted(vector.items(), key=lambda item: (-item[1], item[0]))
            weight = None
        chosen = []
        if ranked:
            floor = params.relative_floor * ranked[0][1] if mode == "hybrid" else float("-inf")
            chosen = [(path, score) for path, score in ranked[:limit] if score >= floor and score > 0]
        # The evidence of relevance of each hit (relevance.py): its keyword strength and how far
        # its cosine stands above this query's cosine with the vault at large.
        background = Background(query_vector, store.mean, store.spread) \
            if store.spread and store.count() >= MIN_BACKGROUND else None
        close = vault.settings.embeddings.link_similarity
        evidence = {path: (scoring.strength(rows[path][0]) if scoring is not None and path in rows else 0.0,
                           background.lift(vector[path]) if background and path in vector else None,
                           vector.get(path, float("-inf")) >= close)
                    for path, _ in chosen}
        # Vectors always have a nearest card, so hits alone cannot tell a miss (issue 10): the
        # search floor's judgement does, as for keyword search (`relevance.answers_search`: a
        # vector only ever lowers its bar). Outcome: no hits, kept as a miss.
        missed = not any(answers_search(strength, lift, near) for strength, lift, near in evidence.values())
        if missed:
            chosen = []
        problems = index.problems()
        stale = [path for path, _ in chosen if _stamp(vault, path) != rows[path][1:3]]
        if stale:
            index.update(stale)
            if recheck:
                return None   # ranked again by the caller, from the rows just read
        hits = _hits(vault, chosen, rows, analysed, keyword, vector, fused, scoring, explain, evidence)
    finally:
        index.close()
    summary = None
    if fused is not None:
        summary = {"trusted": fused.trusted, "weight": round(fused.weight, 4), "why": fused.why,
                   "keyword_z": round(fused.confidence[0], 3), "closeness": round(fused.confidence[1], 3)}
    return SearchResult(query, hits, problems, cut=max(0, len(ranked) - len(hits)), mode=mode, weight=weight,
                        missed=missed, query_vector=source, fusion=summary)


def _hits(vault, chosen, rows, analysed, keyword, vector, fused, scoring, explain, evidence):
    from ..vault.confidence import References, effective_confidence
    from .keyword import Hit, card_scripts, shown_words, snippet_for
    from ..vault.storage import now

    refs = References(vault)
    moment = now()
    hits = []
    for path, score in chosen:
        try:
            card = load_kept_card(vault, vault.root / path)
        except (OSError, BrainError):
            continue  # deleted under us; the next search drops it
        confidence = effective_confidence(card, refs, moment, vault.settings.confidence)
        parts = None
        if explain:
            parts = {"vector": vector.get(path), "keyword": round(keyword.get(path, 0.0), 4)}
            if fused is not None:
                z, near = fused.keyword_z.get(path), fused.closeness.get(path)
                parts.update(keyword_z=None if z is None else round(z, 3),
                             keyword_likelihood=round(fused.keyword.get(path, 0.0), 4),
                             closeness=None if near is None else round(near, 3),
                             vector_likelihood=round(fused.vector.get(path, 0.0), 4))
        matched = scoring.explain(rows[path][0]) if explain and scoring is not None else {}
        strength, lift, close = evidence[path]
        support = scoring.support(rows[path][0], card_scripts(card)) if scoring is not None else float("-inf")
        held = scoring.held(rows[path][0]) if scoring is not None else 0
        hits.append(Hit(card, score, confidence, snippet_for(card, list(analysed.terms)), matched, fusion=parts,
                        words=shown_words(analysed, matched), strength=strength, lift=lift, close=close,
                        support=support, held=held))
    return hits


_MEMO = "vectors.digest"   # in the cache folder: the keyword index's stamps and its digest then
_MEMO_WIDTH = 256
_SETTLED_NS = 2_000_000_000


def _index_digest(vault: Vault, index: Index) -> str:
    """`keyword_digest` of the index, remembered against the stamp (inode, size, mtime) of the
    index file: saves a pass over every card's row (~40 ms at 100,000 cards) on each search.
    Trigger: the write-ahead log is empty or absent. Why: then the file holds every committed
    write, and the next write either lands in the log (no memo while it holds any) or is copied
    into the file, which changes its stamp. Outcome: while the stamp is as remembered, so is the
    digest. The stamp is taken before the digest, so a write in between makes the memo miss
    next time, never lie; and it is kept only once the file is two seconds old, so a write in
    the same tick of a coarse clock cannot hide behind it."""
    path = vault.cache_dir / "index.sqlite"
    try:
        st = os.stat(path)
        stamp = [st.st_ino, st.st_size, st.st_mtime_ns]
        logged = os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        logged = 0
    except OSError:
        return keyword_digest(index.db)
    if logged:
        return keyword_digest(index.db)
    memo = vault.cache_dir / _MEMO
    try:
        with open(memo, "rb") as f:
            kept, digest = json.loads(f.read(_MEMO_WIDTH))
        if kept == stamp and isinstance(digest, str):
            return digest
    except (OSError, ValueError, TypeError):
        pass   # none yet, or unreadable: computed again below
    digest = keyword_digest(index.db)
    text = json.dumps([stamp, digest]).encode("utf-8")
    if time.time_ns() - stamp[2] > _SETTLED_NS and len(text) <= _MEMO_WIDTH:
        try:
            # One write of a fixed width in place (as the index's sweep hint): concurrent
            # searches each write a whole, true pair, and no truncation leaves a tail.
            fd = os.open(memo, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.pwrite(fd, text.ljust(_MEMO_WIDTH), 0)
            finally:
                os.close(fd)
        except OSError:
            pass
    return digest


_FACETS = ("type", "domain", "project", "scope", "agent", "status")   # what `Filters.admits` reads, bar tags and times


def _rows_by_path(index: Index, paths: list[str], light: bool = False,
                  docids: dict[str, int] | None = None) -> dict[str, tuple]:
    """path -> (docid, size, mtime_ns, meta) from the keyword index, for searchable cards; with
    `light`, meta holds only the path, stamps and the `facets` columns (`_FACETS`). `docids`:
    path -> the docid the card is thought to have (`vectors.DOCIDS`), looked up first by rowid,
    kept only where that row is the card's (the same folder and name: the one row the card
    has); the others are looked up by name."""
    out = {}
    loads = json.loads
    if docids:
        hinted = {docids[p]: p for p in paths if p in docids}
        columns = f"{', '.join(_FACETS)} FROM docs JOIN facets" if light else "meta FROM docs JOIN doc_data"
        found = list(hinted)
        for start in range(0, len(found), 500):
            chunk = found[start:start + 500]
            for docid, folder, name, size, mtime, *rest in index.db.execute(
                    f"SELECT docid, folder, name, size, mtime_ns, {columns} USING (docid) "
                    f"WHERE docid IN ({','.join('?' * len(chunk))})", chunk):
                path = f"{folder}/{name}"
                if hinted[docid] != path:
                    continue   # another card's row now: looked up by name below
                meta = dict(zip(_FACETS, rest)) if light else loads(rest[0])
                out[path] = (docid, size, mtime, {"path": path, "size": size, "mtime_ns": mtime, **meta})
        paths = [p for p in paths if p not in out]
    for start in range(0, len(paths), 400):
        chunk = paths[start:start + 400]
        keys = [part for path in chunk for part in path.rpartition("/")[::2]]
        # A join with the wanted rows, not `(folder, name) IN (VALUES ...)`: SQLite answers that
        # IN by scanning every card (~25 ms at 100,000), the join by the unique index.
        want = f"WITH want(folder, name) AS (VALUES {','.join(['(?, ?)'] * len(chunk))}) "
        if light:
            for docid, folder, name, size, mtime, *facets in index.db.execute(
                    want + f"SELECT docid, folder, name, size, mtime_ns, {', '.join(_FACETS)} FROM want "
                    "JOIN docs USING (folder, name) JOIN facets USING (docid)", keys):
                path = f"{folder}/{name}"
                out[path] = (docid, size, mtime, {"path": path, "size": size, "mtime_ns": mtime,
                                                  **dict(zip(_FACETS, facets))})
            continue
        for docid, folder, name, size, mtime, meta in index.db.execute(
                want + "SELECT docid, folder, name, size, mtime_ns, meta FROM want JOIN docs USING (folder, name) "
                "JOIN doc_data USING (docid)", keys):
            path = f"{folder}/{name}"
            out[path] = (docid, size, mtime, {"path": path, "size": size, "mtime_ns": mtime, **loads(meta)})
    return out


def _facet_docs(index: Index, docids: list[int]) -> dict[int, dict]:
    """`Index.docs` as `_rows_by_path(light=True)` gives its metadata: the `facets` columns."""
    out = {}
    for start in range(0, len(docids), 500):
        chunk = docids[start:start + 500]
        for docid, folder, name, size, mtime, *facets in index.db.execute(
                f"SELECT docid, folder, name, size, mtime_ns, {', '.join(_FACETS)} FROM docs JOIN facets "
                f"USING (docid) WHERE docid IN ({','.join('?' * len(chunk))})", chunk):
            out[docid] = {"path": f"{folder}/{name}", "size": size, "mtime_ns": mtime, **dict(zip(_FACETS, facets))}
    return out


# ---------------------------------------------------------------------------- store-time insights

@valueclass
class CardVectors:
    """A card's vector and the cached cards nearest to it, for `create`'s insights."""

    vector: list[float]
    near: dict          # path -> cosine, the nearest cached cards (at most NEAR)
    link_floor: float   # suggested links need at least this cosine (`link_similarity`)

    @property
    def duplicate_floor(self) -> float:
        """Halfway from the link floor to 1 (0.925 for the default 0.85): closer than a link."""
        return (1.0 + self.link_floor) / 2


NEAR = 10


def card_vectors(vault: Vault, title: str, tags: list[str], body: str) -> CardVectors | None:
    """The vector of a card about to be written and its nearest cached cards, or None when no
    provider is configured or it fails in any way: `create` then judges by keyword alone, as
    without a provider (it never fails or waits past the provider's timeout because of this)."""
    import sqlite3

    settings = vault.settings.embeddings
    if not settings.provider:
        return None
    try:
        vector = unit(embed(settings, [passage_text(title, tags, body)], "passage")[0])
    except EmbeddingUnavailable:
        return None
    near: dict[str, float] = {}
    try:
        store = VectorStore.open(vault, model_key(settings), create=False)
        if store is not None:
            try:
                if len(store.mean or ()) == len(vector):
                    near = {n.path: n.similarity for n in store.nearest(vector, NEAR * 5)[:NEAR]}
            finally:
                store.close()
    except sqlite3.Error:
        pass  # an unreadable cache: the keyword candidates still get judged
    return CardVectors(vector, near, settings.link_similarity)


def cosines_with(vault: Vault, vector: list[float], paths: list[str]) -> dict[str, float]:
    """path -> cosine of `vector` with that card's cached vector, for the cards that have one
    for their text as it is now (a stale or missing one is left out)."""
    return {path: round(cosine(vector, vec), 6) for path, vec in current_vectors(vault, paths).items()
            if len(vec) == len(vector)}


def current_vectors(vault: Vault, paths: list[str], as_list: bool = True) -> dict:
    """path -> the cached vector of that card's text as it is now, for the cards that have one:
    a vector embedded at another size or mtime than the file's is stale and left out, and so is
    every vector when the cache is missing or unreadable (nothing is embedded here)."""
    import sqlite3

    try:
        store = VectorStore.open(vault, model_key(vault.settings.embeddings), create=False)
        if store is None:
            return {}
        try:
            found = store.vectors_of(paths, as_list=as_list)
        finally:
            store.close()
    except sqlite3.Error:
        return {}
    out = {}
    for path, (size, mtime_ns, vec) in found.items():
        try:
            st = os.stat(vault.root / path)
        except OSError:
            continue
        if (st.st_size, st.st_mtime_ns) == (size, mtime_ns):
            out[path] = vec
    return out


# ---------------------------------------------------------------------------- keeping vectors fresh

def sync_vectors(vault: Vault, progress=None, background: bool = False, waiting=None) -> SyncResult:
    """Embed every card whose text has no cached vector for the configured model, drop the
    vectors of cards that are gone, and record the keyword index state this matches. Touches
    the keyword index only as a search does (it brings it up to date: every card is checked,
    or, for the background catch-up, what a search checks), never rebuilds it.

    The passages go to the provider in requests of `[embeddings] batch` (`PassageBatches`:
    cut smaller when one times out), and each request's vectors are committed before the next
    is sent, so an interruption (a kill, a provider failure) loses at most the request in
    flight and the next run goes on from there. `progress(done, total)` is called before the
    first request (done 0) and after each, with the cards done so far in this run. Only one process embeds at a time: a
    background catch-up finding another at work returns at once; another run waits for it,
    calling `waiting()` first when given. A provider failure stops the run with
    `EmbeddingUnavailable` after saving what was done."""
    from .analysis import card_fields
    from .embeddings import PassageBatches

    settings = require_provider(vault, searching=False)
    with (_try_lock(vault) if background else _held(vault, waiting)) as held:
        if not held:
            return SyncResult()
        store = VectorStore.open(vault, model_key(settings), create=False)
        if store is None and VectorStore.holds_vectors(vault):
            # Trigger: the cache holds another configuration's vectors (its url, model or a
            # prefix changed, or the cache's format). Why: opening it for this one empties it;
            # a mistyped url or a provider not started yet cost every vector (hours of a real
            # provider's time), and putting the old configuration back found none. Outcome:
            # this configuration's provider must embed one passage first; until then the
            # cache is kept as it is.
            try:
                PassageBatches(settings).embed(["provider check"], lambda start, vectors: None)
            except EmbeddingUnavailable as exc:
                raise EmbeddingUnavailable(f"{exc.message}; the vectors cached under another [embeddings] "
                                           "configuration are kept until this one answers", **exc.details) from None
        store = store or VectorStore.open(vault, model_key(settings))
        try:
            try:
                return _sync(vault, store, settings, progress, card_fields, full=not background)
            except _ModelChanged as changed:
                # Trigger: the provider's vectors have another length than the cached ones,
                # under the same configuration (`model_key`). Why: it serves another model
                # now; its vectors and the cached ones cannot be compared, and mixed in one
                # cache they would be (truncated cosines). Outcome: the cache is emptied and
                # every card embedded again, as a change of configuration does.
                store.empty()
                result = _sync(vault, store, settings, progress, card_fields, full=not background)
                result.rebuilt_from = changed.cached
                return result
        except EmbeddingUnavailable:
            store.set_failed(time.time())
            raise
        finally:
            store.close()


class _ModelChanged(Exception):
    """The provider answered a sync with vectors of another length than the cached ones."""

    def __init__(self, cached: int, now: int) -> None:
        super().__init__(f"{now} dimensions, the cache's {cached}")
        self.cached = cached


def _sync(vault: Vault, store: VectorStore, settings, progress, card_fields, full: bool) -> SyncResult:
    from .embeddings import PassageBatches

    index = Index.open(vault, card_fields, full=full)
    try:
        index.db.execute("BEGIN")  # one snapshot: the rows and their digest agree
        current, docids = {}, {}
        for docid, folder, name, size, mtime in index.db.execute(
                "SELECT docid, folder, name, size, mtime_ns FROM docs WHERE problem IS NULL"):
            current[f"{folder}/{name}"] = (size, mtime)
            docids[f"{folder}/{name}"] = docid
        digest = keyword_digest(index.db)
        index.db.execute("COMMIT")
    finally:
        index.close()
    known = store.stamps()
    removed = [path for path in known if path not in current]
    todo = sorted(path for path, stamp in current.items() if known.get(path, (None, None))[:2] != stamp)
    cached = store.dimensions()
    probe = None   # a card embedded again though its vector is cached, to compare the lengths
    if cached and store.query_dimensions:
        # Trigger: a search's query vector had another length (noted by `search_vectors`).
        # Why: a query alone is not proof enough to throw a cache away; a passage of the same
        # length is. Outcome: one card with a cached vector is sent with this run's first request.
        probe = next((path for path in sorted(known) if path in current and known[path][2] is not None), None)
        if probe is not None and probe not in todo:
            todo = sorted([*todo, probe])
    result = SyncResult(removed=len(removed))
    if progress and todo:
        progress(0, len(todo))   # the total at once, and where the rate is counted from
    batches = PassageBatches(settings)
    waiting: dict[bytes, str] = {}             # text hash -> text, to embed
    held: dict[bytes, list[tuple]] = {}        # text hash -> the entries of the cards holding it
    ready: list[tuple] = []                    # entries to record with the next commit
    done = 0                                   # cards of `todo` committed

    def stored(hashes: list[bytes], vectors: list[list[float]]) -> None:
        nonlocal done
        if vectors and cached and len(vectors[0]) != cached:
            raise _ModelChanged(cached, len(vectors[0]))
        entries = ready + [entry for h in hashes for entry in held.pop(h)]
        store.store(entries, {h: unit(v) for h, v in zip(hashes, vectors)})
        ready.clear()
        for h in hashes:
            del waiting[h]
        result.embedded += len(hashes)
        done += len(entries)
        if progress:
            progress(done, len(todo))

    def send() -> None:
        hashes = list(waiting)
        batches.embed([waiting[h] for h in hashes],
                      lambda start, vectors: stored(hashes[start:start + len(vectors)], vectors))

    try:
        for path in todo:
            try:
                card = load_card(vault, vault.root / path)
            except (OSError, BadFrontmatter, NotACard):
                ready.append((path, *current[path], None))  # not a card now; the index says why
                result.reused += 1
                continue
            text = passage_text(card.title, card.tags, card.body)
            digest_of_text = text_hash(text)
            entry = (path, *current[path], digest_of_text)
            if digest_of_text in waiting:
                held[digest_of_text].append(entry)
            elif store.has(digest_of_text) and path != probe:
                ready.append(entry)
                result.reused += 1
            else:
                waiting[digest_of_text] = text
                held[digest_of_text] = [entry]
                if len(waiting) >= batches.size:
                    send()
            if len(ready) >= UNIT:   # cards whose vectors are cached already, kept in steps too
                stored([], [])
        if waiting:
            send()
        if ready:
            stored([], [])
        store.forget(removed)
    except _ModelChanged:
        raise   # nothing of this run is kept: the caller empties the cache
    except BaseException as exc:
        result.pending = len(todo) - done
        store.finish("", docids)  # what was done is searchable; an empty digest asks for the rest later
        if isinstance(exc, EmbeddingUnavailable):
            raise EmbeddingUnavailable(f"{exc.message}; {done} of {len(todo)} cards done, "
                                       f"{_remedy(exc)}run `brain reindex --embeddings` again to go on",
                                       **exc.details) from None
        raise
    finally:
        result.batch, result.requests = batches.size, batches.requests
        result.provider_seconds = round(batches.seconds, 3)
    result.total = store.finish(digest, docids)
    if store.query_dimensions:
        store.note_query_dimensions(0, wait=True)   # the provider's passages have the cache's length
    store.measure_resolution()
    return result


def _remedy(exc: EmbeddingUnavailable) -> str:
    """What to change before running a sync again that stopped on `exc`."""
    return {"timeout": "raise [embeddings] batch_timeout (or lower batch) and ",
            "too_large": "lower [embeddings] batch and "}.get(exc.details.get("reason"), "")


def store_card_vector(vault: Vault, card, vector: list[float]) -> None:
    """Keep the vector `create` computed for its new card, so no catch-up embeds it again."""
    settings = vault.settings.embeddings
    try:
        st = os.stat(card.path)
        store = VectorStore.open(vault, model_key(settings))
        try:
            if store.dimensions() not in (0, len(vector)):
                return   # the provider's model changed: the next sync rebuilds the cache (`sync_vectors`)
            text = passage_text(card.title, card.tags, card.body)
            store.store([(card.rel, st.st_size, st.st_mtime_ns, text_hash(text))], {text_hash(text): unit(vector)})
        finally:
            store.close()
    except (OSError, Exception) as exc:  # noqa: BLE001 - a cache write must never fail a create
        import sqlite3

        if not isinstance(exc, (OSError, sqlite3.Error)):
            raise


def start_catch_up(vault: Vault, store: VectorStore | None = None) -> bool:
    """Start `reindex --embeddings --background` as a detached process, unless one is running
    or one failed less than RETRY_AFTER seconds ago. Returns whether it started one."""
    import subprocess

    if store is not None and time.time() - store.failed_at() < RETRY_AFTER:
        return False
    with _try_lock(vault) as free:
        if not free:
            return False  # one is at work; it takes the latest state when it reads the index
    runtime = str(Path(__file__).resolve().parents[2])
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from external_brain.doors.cli import main; "
            "sys.exit(main(sys.argv[2:]))")
    try:
        subprocess.Popen([sys.executable, "-c", code, runtime, "reindex", "--embeddings", "--background",
                          "--vault", str(vault.root)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
    except OSError:
        return False
    return True


@contextmanager
def _held(vault: Vault, waiting=None) -> Iterator[bool]:
    """The embedding lock, waited for. Trigger: another process holds it (a search's catch-up
    embedding thousands of cards, another reindex) and `waiting` is given. Why: the wait can
    last hours, and a command that shows nothing looks hung. Outcome: `waiting()` first."""
    if waiting is not None:
        with _try_lock(vault) as free:
            if free:
                yield True
                return
        waiting()
    with locked(vault, _LOCK):
        yield True


@contextmanager
def _try_lock(vault: Vault) -> Iterator[bool]:
    """The embedding lock if it is free now (True), else nothing (False); never waits."""
    import fcntl

    lock_dir = vault.brain_dir / "locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_dir / f"{_LOCK}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- doctor

@valueclass
class VectorCacheStatus:
    """How the vector cache stands against the cards (for `doctor`)."""

    model: str                     # the configured model (or provider, when no model is named)
    foreign: str | None = None     # the cache holds another configuration's vectors (its model)
    dimensions: int = 0            # length of the cached vectors (0: none cached)
    cards: int = 0                 # cards the keyword index holds
    current: int = 0               # with a vector of their text as it is now, searchable
    stale: int = 0                 # with a vector of an older text of theirs
    missing: int = 0               # with no vector at all
    failed_at: float = 0.0         # when the last sync stopped on a provider failure (0: never)
    damaged: str | None = None     # why the cache file cannot be read, when it cannot


def vector_cache_status(vault: Vault) -> VectorCacheStatus:
    """Compare the vector cache with the keyword index's cards, reading both and writing neither
    (the cache file is opened read-only, so a vault without one still has none afterwards)."""
    import sqlite3

    from .analysis import card_fields

    settings = require_provider(vault)
    status = VectorCacheStatus(settings.model or provider_name(settings))
    index = Index.open(vault, card_fields)
    try:
        cards = {f"{folder}/{name}": (size, mtime) for folder, name, size, mtime in index.db.execute(
            "SELECT folder, name, size, mtime_ns FROM docs WHERE problem IS NULL")}
    finally:
        index.close()
    status.cards = status.missing = len(cards)
    try:
        db = VectorStore.read_only(vault)
        if db is None:
            return status
        try:
            info = dict(db.execute("SELECT key, value FROM info"))
            if info.get("model") != model_key(settings):
                # Another provider, model, URL, prefix or dimensions: the next sync empties it.
                status.foreign = (json.loads(info["model"]).get("model") or "unnamed") if info.get("model") else "unknown"
                return status
            # An older cache format is rebuilt by the next sync: until then nothing in it is searchable.
            searchable = ({path for (path,) in db.execute("SELECT path FROM slots")}
                          if info.get("version") == VECTORS_VERSION else set())
            stamps = {p: (size, mtime) for p, size, mtime in db.execute(
                "SELECT path, size, mtime_ns FROM docs WHERE hash IS NOT NULL")}
        finally:
            db.close()
    except (sqlite3.Error, ValueError, KeyError) as exc:
        status.damaged = str(exc) or type(exc).__name__
        return status
    status.dimensions = len(json.loads(info["mean"])) if info.get("mean") else 0
    status.failed_at = float(info.get("failed_at", "0") or 0)
    status.current = sum(1 for p, stamp in cards.items() if stamps.get(p) == stamp and p in searchable)
    status.missing = sum(1 for p in cards if p not in stamps)
    status.stale = status.cards - status.current - status.missing
    return status
