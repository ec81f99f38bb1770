"""Keyword search over the cards: BM25F ranking, filters, a low-score cut and search misses.

Ranking is BM25F (Robertson, Zaragoza & Taylor, "Simple BM25 extension to multiple weighted
fields", CIKM 2004): each field's term frequency is length-normalised with its own `b`, the
fields are summed with their weights, and the sum is saturated once with `k1`. Effective
confidence only breaks ties between equal scores; it never lifts a weak match over a strong one.
Reads never write a card: decay is computed, not stored.
"""

from __future__ import annotations

import functools
import heapq
import math
from bisect import bisect_left
import os
import re
import sqlite3
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..errors import BrainError
from ..vault.confidence import References, effective_confidence
from ..vault.markdown import has_tag, is_conflict_marker
from ..vault.valueclass import factory, valueclass
from ..vault.storage import Card, Problem, Vault, load_compared_card, load_kept_card, now, parse_time, scope_admits
from .analysis import (Query, analyse_query, card_fields, field_texts, katakana_words, matched_words, mentions,
                       query_weight, scripts, tokens, word_script)
from .index import Index, Postings
from .relevance import CONTEXT, answers_search, is_general, is_relevant, keyword_odds, odds, prompt_shape
from .store import FIELDS, card_meta, decode_code
from ..vault.regex_programs import compile_pattern   # programs kept across processes

# Field weights and length normalisation (b) per field, in `store.FIELDS` order (title,
# aliases, tags, meta = type/domain/project, body). The title and aliases name the problem, tags
# are curated keywords, the body is long and noisy.
FIELD_WEIGHTS = (3.0, 2.5, 2.0, 1.0, 1.0)
FIELD_B = (0.5, 0.5, 0.3, 0.0, 0.75)
K1 = 1.2


def idf(doc_count: int, doc_freq: int) -> float:
    """BM25 inverse document frequency, the non-negative form used by Lucene:
    ln(1 + (N - df + 0.5) / (df + 0.5))."""
    return math.log(1.0 + (doc_count - doc_freq + 0.5) / (doc_freq + 0.5))


def field_tf(tf: int, length: int, avg_length: float, b: float) -> float:
    """One field's length-normalised term frequency: tf / (1 - b + b * len / avg_len)."""
    if tf == 0:
        return 0.0
    norm = 1.0 - b + b * (length / avg_length if avg_length > 0 else 1.0)
    return tf / norm


def saturate(weighted_tf: float, k1: float) -> float:
    """BM25 saturation of the weighted term frequency: tf / (k1 + tf)."""
    return weighted_tf / (k1 + weighted_tf) if weighted_tf > 0 else 0.0


def term_saturation(tfs: list[int], lengths: list[int], avg_lengths: tuple[float, ...]) -> float:
    """How fully a document matches one term, 0..1, whatever the term's idf: W / (k1 + W), W the
    fields' weighted, length-normalised term frequency (bm25f_term without idf and k1 + 1)."""
    weighted = 0.0
    for position, tf in enumerate(tfs):
        if tf:
            weighted += FIELD_WEIGHTS[position] * field_tf(tf, lengths[position], avg_lengths[position],
                                                            FIELD_B[position])
    return saturate(weighted, K1)


def bm25f_term(tfs: list[int], lengths: list[int], avg_lengths: tuple[float, ...], term_idf: float,
               parts: dict[str, float] | None = None) -> float:
    """One query term's BM25F contribution to one document:
    idf * (k1 + 1) * W / (k1 + W), W = sum over fields of weight * field_tf.
    When `parts` is given, it receives each field's weighted tf (for --explain)."""
    weighted = 0.0
    for position, tf in enumerate(tfs):
        if tf:
            value = FIELD_WEIGHTS[position] * field_tf(tf, lengths[position], avg_lengths[position],
                                                        FIELD_B[position])
            weighted += value
            if parts is not None:
                parts[FIELDS[position]] = value
    return term_idf * saturate(weighted, K1) * (K1 + 1)


# The statuses this tool writes to take a card out of service (docs/card-format.md). Any other value, such as
# Obsidian's own `status: in-progress` or `status: "✅ done"`, is the person's and hides nothing.
HIDDEN_STATUSES = frozenset({"superseded", "archived"})


def in_service(status: str) -> bool:
    """Whether a card with this (lower-cased) status is shown by default: all but superseded
    and archived ones."""
    return status not in HIDDEN_STATUSES


@valueclass
class Filters:
    domain: str | None = None
    type: str | None = None
    tags: tuple[str, ...] = ()
    project: str | None = None
    status: str | None = None       # None: every card in service (the default); "any"; or exactly one status
    agent: str | None = None
    as_of: str | None = None        # ISO time: only cards valid then (kinds.valid_at), superseded ones too
    scope: str | None = None        # "global": only shared cards; "agent": only `agent`'s private ones
    since: str | None = None        # ISO times: only cards whose start (`valid_from`, else `created`)
    until: str | None = None        #   lies in [since, until); a card with no readable start is left out
    memory_type: str | None = None  # success/failure/note (docs/compatibility.md) (`resolve_filters` sets it with `type`)

    def admits(self, meta: dict[str, Any]) -> bool:
        """Whether a document passes, judged on its `store.card_meta` fields."""
        if self.domain and meta["domain"] != self.domain.lower():
            return False
        if self.type and meta["type"] != self.type.lower():
            return False
        if self.project and meta["project"].lower() != self.project.lower():
            return False
        if self.memory_type is not None and not _is_memory_type(meta, self.memory_type):
            return False
        if self.tags:
            # The frontmatter's tags and the body's `#tags`, nested ones matched by their parents.
            have = [*meta["tags"], *meta.get("inline_tags", ())]
            if not all(has_tag(have, wanted) for wanted in self.tags):
                return False
        if self.as_of is not None:
            from ..vault.kinds import valid_at  # only time-travelling reads need it

            # Trigger: --as-of / --valid-at. Why: a superseded fact was the truth in its time.
            # Outcome: validity at that moment replaces the in-service rule (archived stays out).
            if not valid_at(meta, parse_time(self.as_of)):
                return False
            if self.status not in (None, "any") and meta["status"] != self.status.strip().lower():
                return False
        elif self.status is None:
            if not in_service(meta["status"]):
                return False
        elif self.status != "any" and meta["status"] != self.status.strip().lower():
            return False
        if self.scope is not None and (meta["scope"].strip().lower() == "agent") != (self.scope == "agent"):
            return False
        if self.since is not None or self.until is not None:
            start = parse_time(meta.get("valid_from") or None)
            if start is None or (self.since is not None and start < parse_time(self.since)) \
                    or (self.until is not None and start >= parse_time(self.until)):
                return False
        return visible_to(meta, self.agent)

    def admits_card(self, card: Card) -> bool:
        return self.admits(card_meta(card))

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, ())}


def _is_memory_type(meta: dict[str, Any], memory_type: str) -> bool:
    """Whether a card (its `store.card_meta`) is of the memory type `memory_type` (docs/compatibility.md), by the
    `memory_type` key `store_memory` keeps: `failure` and `note` only when it says so; `success`
    unless it says `failure` (its card type, troubleshooting, is a problem and the fix that
    worked). `resolve_filters` has already required the card type (troubleshooting, insight)."""
    label = str(meta.get("front", {}).get("memory_type") or "").strip().lower()
    return label != "failure" if memory_type == "success" else label == memory_type


def resolve_filters(vault: Vault, filters: Filters | None) -> Filters:
    """`filters` as the library applies them: a type that is one of the memory types (docs/compatibility.md) but
    no card type (`config.MEMORY_TYPES`: success, failure, note) becomes its card type plus the
    memory type (`Filters.memory_type`), so `list --type success` and MCP `type_filter: success`
    find what `store_memory` stored as success.

    A type or domain that is neither in the vault's settings nor on any indexed card is a
    `UsageError` (exit 2, MCP isError, HTTP 400) naming the ones there are: a typo is not an
    empty result, and not a search miss to keep."""
    from ..errors import UsageError
    from ..vault.config import MEMORY_TYPES

    filters = filters or Filters()
    settings = vault.settings
    changes: dict[str, Any] = {}
    if filters.type:
        key = filters.type.strip().lower()
        if key in MEMORY_TYPES and key not in settings.types:
            changes = {"type": MEMORY_TYPES[key], "memory_type": key}
        elif key not in settings.types and not _on_some_card(vault, "type", key):
            raise UsageError(f"unknown type {filters.type!r}; use one of: {', '.join(settings.types)} "
                             f"(or a memory type: {', '.join(MEMORY_TYPES)})", field="type")
    if filters.domain:
        key = filters.domain.strip().lower()
        if key not in settings.domains and not _on_some_card(vault, "domain", key):
            raise UsageError(f"unknown domain {filters.domain!r}; use one of: {', '.join(settings.domains)}",
                             field="domain")
    if not changes:
        return filters
    return Filters(**{**filters.__dict__, **changes})


def _on_some_card(vault: Vault, column: str, value: str) -> bool:
    """Whether some indexed card has this (lower-cased) `type` or `domain`: a vault of notes
    written by hand may use types its settings do not list, and filtering by them is fine."""
    index = Index.open(vault, card_fields, sweep=None)
    try:
        return index.db.execute(f"SELECT 1 FROM facets WHERE {column} = ? LIMIT 1", (value,)).fetchone() is not None
    except sqlite3.DatabaseError:
        return True   # an index that cannot answer is no reason to refuse a filter
    finally:
        index.close()


def visible_to(meta: dict[str, Any], agent: str | None) -> bool:
    """Agent-scoped cards (`scope: agent`) are visible only to their own agent (docs/card-format.md)."""
    return scope_admits(meta["scope"], meta["agent"], agent)


@valueclass
class Hit:
    card: Card
    score: float
    confidence: float
    snippet: str
    matched: dict[str, dict[str, float]] = factory(dict)  # term -> part -> value
    fusion: dict[str, Any] | None = None  # hybrid/semantic --explain: both parts and the weight
    vault: str | None = None              # the vault's name, when several are searched
    vault_score: float | None = None      # several vaults: the score within its own vault
    rerank: float | None = None           # [rerank]: the reranker's score, which ordered this hit
    words: dict[str, tuple[str, ...]] = factory(dict)  # --explain: query words it matched, as typed -> terms
    strength: float = 0.0                 # keyword evidence of relevance (relevance.py), 0..1
    lift: float | None = None             # vector evidence: cosine over the vault's, in spreads
    close: bool = False                   # vector evidence: cosine >= [embeddings] link_similarity
    support: float = -math.inf            # keyword log-odds of relevance (relevance.keyword_odds)
    held: int = 0                         # how many of the query's words it holds (relevance.is_relevant)

    @property
    def odds(self) -> float:
        """relevance.odds of this hit's evidence: its log-odds for context."""
        return odds(self.support, self.lift)

    def is_relevant(self, use: str, best: float | None = None) -> bool:
        """relevance.is_relevant of this hit's evidence, for `use` (SEARCH or CONTEXT), with
        `best` the highest `odds` among the hits considered with it (context)."""
        return is_relevant(self.strength, self.lift, use, self.close, self.support, best, self.held)

    def as_dict(self, explain: bool = False) -> dict[str, Any]:
        data = {
            "path": self.card.rel,
            "id": self.card.id,
            "title": self.card.title,
            "type": self.card.type,
            "domain": self.card.domain,
            "tags": self.card.tags,
            "confidence": round(self.confidence, 4),
            "score": round(self.score, 4),
            "snippet": self.snippet,
        }
        if self.card.type == "state":
            from ..vault.kinds import state_fields

            data.update(state_fields(self.card, now()))
        if self.vault is not None:
            data["vault"] = self.vault
            if explain and self.vault_score is not None:
                data["vault_score"] = round(self.vault_score, 4)
        if explain:
            data["explain"] = {t: {k: round(v, 4) for k, v in parts.items()} for t, parts in self.matched.items()}
            data["matched_words"] = {word: _word_parts(terms, self.matched) for word, terms in self.words.items()}
            data["relevance"] = {"keyword": round(self.strength, 4),
                                 "support": None if math.isinf(self.support) else round(self.support, 3),
                                 "lift": None if self.lift is None else round(self.lift, 3),
                                 "words_held": self.held,
                                 "context": self.is_relevant(CONTEXT)}
            if self.fusion is not None:
                data["fusion"] = self.fusion
            if self.rerank is not None:
                data["rerank"] = round(self.rerank, 4)
        return data


@valueclass
class SearchResult:
    query: str
    hits: list[Hit]
    problems: list[Problem]
    cut: int = 0                  # matching cards not shown: filtered, under the floors, past the limit
    miss_candidate: str | None = None
    mode: str = "keyword"         # the ranking used (keyword when vectors could not be)
    weight: float | None = None   # hybrid: the keyword side's weight for this query
    missed: bool = False          # vector modes: hits shown, yet nothing close enough: kept as a miss
    query_vector: str | None = None   # vector modes: where the query's vector came from, "cache" or "provider"
    fusion: dict | None = None    # hybrid: which half the fusion trusted for this query and why (`fusion.Fused.why`)
    reranked: str | None = None   # [rerank]: the reranker (model) that ordered the hits
    warnings: list[str] = factory(list)
    vaults: list[str] = factory(list)  # several vaults searched: their names, the first vault first
    # What the scores are out of, so rankings of different vaults can be merged (multivault):
    # keyword, the score a card matching every query term without bound would approach
    # (sum of idf x (k1 + 1)); hybrid and semantic scores are already on a 0..1 scale.
    scale: float = 1.0
    unfiltered: int | None = None      # no hits for the filters: the hits without them (answers.searching)

    def all_warnings(self) -> list[str]:
        """What every door shows beside the hits: the search's own warnings (a provider it fell
        back from, ...) and a line for each file it skipped (`Problem.warning`)."""
        return [*self.warnings, *(problem.warning() for problem in self.problems)]

    def similarity(self, hit: Hit) -> float:
        """The `similarity` of a hit (docs/compatibility.md), 0..1: its score over what the scores are out of
        (`scale`), the measure multivault merges by."""
        return round(min(1.0, max(0.0, hit.score / self.scale)), 4) if self.scale > 0 else 0.0


def snippet_for(card: Card, query_terms: list[str], width: int = 160) -> str:
    """The first body line that mentions a query term (else the first prose line), trimmed.
    A body of one prose line (an abstract, a paragraph) is that line either way: it is not
    analysed, which for a cold process's stemmer was ~2 ms a hit."""
    prose = _prose_lines(card.body)
    lines = prose.lines
    if len(lines) > 1:
        wanted = set(query_terms)
        for at, line in enumerate(lines):
            if prose.mentions(at, wanted):
                return _trim(line, width)
    return _trim(lines[0] if lines else "", width)


class _ProseLines:
    """A body's prose lines as `snippet_for` reads them (`_prose`, blank ones left out), with the
    terms of each line once searches have asked about it twice: a server shows the same cards
    again and again, and analysing their lines was ~0.5 ms of a search at 1,000 cards. The first
    time, a line is read word by word up to the first query term (`analysis.mentions`), as a
    cold CLI process reads it; `tokens` of a whole line, kept, answers every later query. The
    same answers either way (`mentions` is whether `tokens` holds a term)."""

    __slots__ = ("lines", "_terms")

    def __init__(self, body: str) -> None:
        self.lines = [line for line in map(_prose, body.splitlines()) if line]
        self._terms: list[frozenset[str] | bool | None] = [None] * len(self.lines)

    def mentions(self, at: int, wanted: set[str]) -> bool:
        terms = self._terms[at]
        if terms is None:   # one slot written at a time: threads may race here harmlessly
            self._terms[at] = False
            return mentions(self.lines[at], wanted)
        if terms is False:
            terms = self._terms[at] = frozenset(tokens(self.lines[at]))
        return not wanted.isdisjoint(terms)


KEPT_PROSE_CHARS = 4_000   # a longer body's lines are read again each time (a bound on what is kept)


def _prose_lines(body: str) -> _ProseLines:
    return _kept_prose_lines(body) if len(body) <= KEPT_PROSE_CHARS else _ProseLines(body)


@functools.lru_cache(maxsize=512)
def _kept_prose_lines(body: str) -> _ProseLines:
    # Keyed by the body's text: a card edited since is other text. ~5 KB a card (its lines and
    # the terms of those asked about twice): 512 bodies of at most KEPT_PROSE_CHARS, a few MB,
    # as many as `load_kept_card` keeps (issue 22's bound: an MCP server grows < 10 MB over
    # 1,000 calls).
    return _ProseLines(body)


def _prose(line: str) -> str:
    """A body line as a snippet shows it: "" for a heading, code fence, table row or a git
    conflict marker (`<<<<<<< ours`: `markdown.is_conflict_marker`)."""
    if line.lstrip().startswith(("#", "```", "|")) or is_conflict_marker(line):
        return ""
    return _LIST_MARKER.sub("", line).strip()


_LIST_MARKER = compile_pattern(r"^\s*(?:[-*+>]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


def _trim(text: str, width: int) -> str:
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def _word_parts(terms: tuple[str, ...], matched: dict[str, dict[str, float]]) -> dict[str, Any]:
    """--explain for one query word: its terms' idf (mean), each field's weighted tf and the
    score, summed over the terms the card matched, and those terms."""
    found = [matched[t] for t in terms if t in matched]
    parts: dict[str, Any] = {"idf": round(sum(p["idf"] for p in found) / len(found), 4) if found else 0.0}
    for field in FIELDS:
        if any(field in p for p in found):
            parts[field] = round(sum(p.get(field, 0.0) for p in found), 4)
    parts["score"] = round(sum(p["score"] for p in found), 4)
    parts["terms"] = [t for t in terms if t in matched]
    return parts


def shown_words(query: Query, matched) -> dict[str, tuple[str, ...]]:
    """The query's words a hit matched, as typed, with their matched terms: general words
    (relevance.GENERAL_WORDS: "still", "make") only when no other word matched."""
    found = matched_words(query.words, matched)
    telling = [(word, terms) for word, terms in found if not is_general(word)]
    return {word.text: terms for word, terms in (telling or found)}


def _search(vault: Vault, query: str, filters: Filters, limit: int | None, explain: bool) -> SearchResult:
    settings = vault.settings
    limit = settings.search.limit if limit is None else limit
    analysed = analyse_query(query)
    query_terms = list(analysed.terms)
    sweep = settings.search.freshness_sweep
    index = Index.open(vault, card_fields, sweep=sweep)
    try:
        try:
            problems, chosen, cut, scoring = _rank_fresh(index, analysed, filters, settings.search, limit)
        except sqlite3.DatabaseError as exc:
            # Trigger: the index failed while it was read or a stale hit re-indexed (damage in
            # pages the refresh did not touch, a full disk, the file deleted by hand). Why: the
            # cards are the truth. Outcome: ranked again on the file built anew (when damaged
            # and no other process holds it) or on a private index in memory.
            index = index.reopen(exc, sweep)
            problems, chosen, cut, scoring = _rank_fresh(index, analysed, filters, settings.search, limit)
        warnings = [index.trouble.warning()] if index.trouble else []
    finally:
        index.close()
    # The search floor's judgement (relevance.py): a query none of whose hits is about it gets
    # none, however well a common word ranks them. Cards under the best relevant one keep
    # their places: a ranked list may go on to weaker matches; the doors that inject cards
    # into a prompt (brief, hooks) take only the relevant ones.
    strengths = {docid: scoring.strength(docid) for docid, *_ in chosen}
    if not any(answers_search(value) for value in strengths.values()):
        return SearchResult(query, [], problems, cut=cut + len(chosen), warnings=warnings)
    refs = References(vault)
    moment = now()
    ranked = []
    for docid, score, path, _, own in chosen:
        try:
            card = load_kept_card(vault, vault.root / path)   # kept parsed while the file is unchanged
        except (OSError, BrainError):
            continue  # deleted under us since the refresh; the next search drops it
        confidence = effective_confidence(card, refs, moment, settings.confidence)
        # Score first (rounded, so float noise does not decide), then the agent's own cards,
        # then confidence, then path: never the index's docid order, which is its history.
        ranked.append(((-round(score, 6), not own, -confidence, card.rel), docid, score, card, confidence))
    ranked.sort(key=itemgetter(0))
    hits = []
    for _, docid, score, card, confidence in ranked[:limit]:
        matched = scoring.explain(docid) if explain else {}
        hits.append(Hit(card, score, confidence, snippet_for(card, query_terms), matched,
                        words=shown_words(analysed, matched), strength=strengths[docid],
                        support=scoring.support(docid, card_scripts(card)), held=scoring.held(docid)))
    return SearchResult(query, hits, problems, cut=cut + len(ranked) - len(hits), warnings=warnings,
                        scale=scoring.query_idf * (K1 + 1))


def _rank_fresh(index: Index, query: Query, filters: Filters, params, limit: int):
    """The index's problems and `_rank_indexed`, read from one snapshot of the index. The hits'
    files are checked next: one changed since the index saw it (an in-place save the sweep has
    not reached) is re-indexed and the query ranked again, once."""
    for attempt in (1, 2):
        with index.reading():
            problems = index.problems()
            chosen, cut, scoring = _rank_indexed(index, query, filters, params, limit)
        stale = [path for _, _, path, stamp, _ in chosen if _stamp(index.vault, path) != stamp]
        if not stale or attempt == 2:
            break
        index.update(stale)
    return problems, chosen, cut, scoring


def related(index: Index, text: str, agent: str | None = None, limit: int = 10) -> list[tuple[float, Card]]:
    """The cards (any status) that best match `text` by BM25F, best first: the candidates
    `create` compares a new card with, without reading every card. Open the index with
    `sweep=None`: candidates for a comparison need the folder check, not the sweep."""
    query_terms = tokens(text, drop_stop_words=True)
    if not query_terms:
        return []
    katakana = katakana_words(text)
    if katakana:
        # Trigger: the text has a katakana word long enough to share bigrams by accident. Why:
        # its bigrams are taken back from the cards holding too few of them (`_Scoring`'s
        # `void`), which no bound per term foresees. Outcome: every matching card is scored.
        top = heapq.nlargest(limit * 3, _Scoring(index, query_terms, katakana).scores.items(), key=itemgetter(1))
        return _first_shown(index, top, agent, limit)
    # The n best are the first n of the 3 x limit best (the same total order), and most creates
    # show the first `limit` of them: a few more than `limit` are ranked first, a higher n-th
    # best that lets `best_scores` skip more of the common terms' postings. Only when hidden or
    # unreadable cards leave fewer than `limit` are the 3 x limit ranked, and picked again.
    for n in dict.fromkeys((limit + 2, limit * 3)):
        top = best_scores(index, query_terms, n)
        out = _first_shown(index, top, agent, limit)
        if len(out) == limit or len(top) < n:
            break
    return out


def _first_shown(index: Index, top: list[tuple[int, float]], agent: str | None,
                 limit: int) -> list[tuple[float, Card]]:
    """The first `limit` of the ranked `top` that `agent` may see and that read as cards."""
    rows: dict[int, tuple[str, str, str]] = {}
    read = 0   # rows are read a few at a time, in rank order: most creates need the first `limit`
    out: list[tuple[float, Card]] = []
    for docid, score in top:
        if docid not in rows and read < len(top):
            rows.update(index.scoped_paths(docid for docid, _ in top[read:read + limit + 2]))
            read += limit + 2
        row = rows.get(docid)
        if row is None or not scope_admits(row[1], row[2], agent):
            continue
        try:
            out.append((score, load_compared_card(index.vault, _card_path(index.vault.root, row[0]))))
        except (OSError, BrainError):
            continue  # changed or gone since it was indexed; not worth failing a create for
        if len(out) == limit:
            break
    return out


_CARD_PATHS: dict[tuple[str, str], Path] = {}   # (vault root, card's path in it) -> the joined path (`_card_path`)
_CARD_PATHS_KEPT = 4_096   # paths `_CARD_PATHS` holds at most, emptied when full


def _card_path(root: Path, rel: str) -> Path:
    """`root / rel`, the same path object for the same texts in a process: a server's creates
    show the same cards create after create, and pathlib's join (and the text of the joined
    path, which `load_compared_card` keys its cards by) was ~10 us a card. A pure function of
    the two texts: a path object never changes."""
    key = (str(root), rel)
    path = _CARD_PATHS.get(key)
    if path is None:
        if len(_CARD_PATHS) >= _CARD_PATHS_KEPT:
            _CARD_PATHS.clear()
        path = _CARD_PATHS[key] = root / rel
    return path


def best_scores(index: Index, query_terms: list[str], n: int) -> list[tuple[int, float]]:
    """The `n` best (docid, BM25F score) for `query_terms`, exactly what
    `heapq.nlargest(n, _Scoring(index, query_terms).scores.items(), key=itemgetter(1))` gives
    (no katakana words): the same documents, the same floats, ties in the same order (the order
    `_Scoring` first meets them: by the longest list a document is in, then by docid), without
    adding up every posting of every term.

    A bound per term (MaxScore: Turtle & Flood, "Query evaluation: strategies and
    optimizations", IP&M 1995): a term adds at most its best contribution to any card. Whole
    lists are added, highest bound first, until the bounds of the terms left sum below the n-th
    best score so far: a card in none of the lists added cannot reach the top. The terms left
    (the long, common ones) are then looked up only for the cards whose score so far plus the
    bounds left still reaches it. The sums are made in `_Scoring`'s order for the final few,
    since float addition depends on its order; a margin far above rounding keeps every
    comparison on the safe side."""
    if n <= 0:
        return []
    stats = index.stats()
    terms = []
    for term, postings in index.postings_of(query_terms).items():
        size = len(postings)
        if size:
            terms.append((idf(stats.doc_count, size) * query_weight(term), postings, size))
    if not terms:
        return []
    terms.sort(key=lambda t: -t[2])   # `_Scoring`'s order of addition (a stable sort)
    sizes = [size for _, _, size in terms]
    # Each term's postings as one or two ascending lists of (docids, codes), no docid in both:
    # `postings_of` leaves waiting cards apart (`more`) below a term's last folded docid, or all
    # of them when the term's rows were kept.
    pieces = [[(postings.docids, postings.codes)] if postings.more is None
              else [(postings.docids, postings.codes), postings.more] for _, postings, _ in terms]
    # A term's contribution is idf * saturation * (k1 + 1) (`bm25f_term`, the same product in
    # the same order); the saturation depends on the code alone, and a card's codes repeat
    # across its terms (same field lengths, most tfs 1): each is worked out once.
    saturation: dict[int, float] = {}
    tables = []
    for term_idf, postings, _ in terms:
        codes = postings.distinct
        if codes is None:
            codes = set(postings.codes) if postings.more is None else set(postings.codes).union(postings.more[1])
        new = codes.difference(saturation)
        if new:
            saturation.update(_saturations(new, stats.avg_lengths))
        tables.append({code: term_idf * saturation[code] * (K1 + 1) for code in codes})
    bounds = [max(table.values()) for table in tables]
    slack = 1e-9 * (1.0 + sum(bounds))   # far above the rounding of any of these sums
    pending = sorted(range(len(terms)), key=lambda at: -bounds[at])
    scores: dict[int, float] = {}   # docid -> the sum of the terms added for it so far
    floor = 0.0                     # the n-th best of `scores`: the top's scores are at least this
    while pending:
        # Only worth a look at the n-th best when the lists left are long next to the table.
        if len(scores) >= n and sum(sizes[at] for at in pending) > len(scores):
            left = sum(bounds[at] for at in pending)
            # Scores only grow and the table only gains cards, so the n-th best never falls:
            # the values below the last floor cannot be among the n best.
            floor = heapq.nlargest(n, [value for value in scores.values() if value >= floor])[-1]
            if left + slack < floor - slack:
                break
        at = pending.pop(0)
        table = tables[at]
        get = scores.get
        for docids, codes in pieces[at]:
            for docid, code in zip(docids, codes):
                scores[docid] = get(docid, 0.0) + table[code]
    if pending:
        # Trigger: the terms left cannot lift a card that has none of the terms added into the
        # top. Outcome: they are looked up only for the cards that can still reach it, fewer
        # after each term (their scores grow, the bound of what is left shrinks).
        # (A card within the slack of the bar is kept alive either way: the bar's rounding moves it
        # by far less than the margins, which only ever keep more cards than can reach the top.)
        bar = floor - 2 * slack - left
        alive = {docid for docid, value in scores.items() if value >= bar}
        while pending:
            at = pending.pop(0)
            table = tables[at]
            for docids, codes in pieces[at]:
                if len(alive) * 16 < len(docids):
                    for docid in alive:
                        where = bisect_left(docids, docid)
                        if where < len(docids) and docids[where] == docid:
                            scores[docid] += table[codes[where]]
                else:
                    # The cards of the list still alive, each found in it by bisection: cheaper than
                    # a table of the whole list (~1,000-5,000 postings) for a few hundred of them.
                    for docid in alive.intersection(docids):
                        scores[docid] += table[codes[bisect_left(docids, docid)]]
            if pending and len(alive) > n:
                left = sum(bounds[at] for at in pending)
                floor = heapq.nlargest(n, [value for value in map(scores.__getitem__, alive) if value >= floor])[-1]
                bar = floor - 2 * slack - left
                alive = {docid for docid in alive if scores[docid] >= bar}
    else:
        alive = scores
    near = heapq.nlargest(n, [scores[docid] for docid in alive])[-1] - 2 * slack
    exact = []
    for docid in alive:
        if scores[docid] < near:
            continue
        total = first = None
        for at, table in enumerate(tables):
            for docids, codes in pieces[at]:
                where = bisect_left(docids, docid)
                if where < len(docids) and docids[where] == docid:
                    value = table[codes[where]]
                    if total is None:
                        total, first = value, at
                    else:
                        total = total + value
                    break
        exact.append((-total, first, docid))
    exact.sort()
    return [(docid, -negative) for negative, _, docid in exact[:n]]


def _saturations(codes, avg_lengths: tuple[float, ...]):
    """(code, term_saturation of its decoded tfs and lengths) for each of `codes`: the same
    operations on the same numbers, in the same order, as `term_saturation(*decode_code(code),
    avg_lengths)`, with each code's fields kept decoded (`_fields_of`) and the per-field constants
    looked up once (a create's candidate search works out ~85 a query)."""
    fields = _FIELDS_OF
    norms = [(FIELD_WEIGHTS[at], 1.0 - FIELD_B[at], FIELD_B[at], avg_lengths[at], avg_lengths[at] > 0)
             for at in range(len(FIELD_WEIGHTS))]
    for code in codes:
        parts = fields.get(code)
        if parts is None:
            parts = _fields_of(code)
        weighted = 0.0
        for at, tf, length in parts:
            weight, rest, b, avg, positive = norms[at]
            weighted += weight * (tf / (rest + b * (length / avg if positive else 1.0)))
        yield code, (weighted / (K1 + weighted) if weighted > 0 else 0.0)


_FIELDS_OF: dict[int, tuple[tuple[int, int, int], ...]] = {}   # code -> its fields (`_fields_of`)
_FIELDS_KEPT = 8_192   # codes `_FIELDS_OF` holds at most (~400 bytes each; 300 bench creates met 210), emptied when full


def _fields_of(code: int) -> tuple[tuple[int, int, int], ...]:
    """(field position, tf, length) of each field a code's term is in, in FIELDS order: a pure
    function of the code, kept per process (`_FIELDS_OF`)."""
    tfs, lengths = decode_code(code)
    parts = tuple((at, tf, lengths[at]) for at, tf in enumerate(tfs) if tf)
    if len(_FIELDS_OF) >= _FIELDS_KEPT:
        _FIELDS_OF.clear()
    _FIELDS_OF[code] = parts
    return parts


def card_scripts(card: Card) -> frozenset[str]:
    """The scripts a card is written in (analysis.scripts of its searchable texts): a query
    word in another script is no evidence either way about it (`_Scoring.support`). Its type,
    domain and project are labels, not its writing, and are left out."""
    title, aliases, tags, _, body = field_texts(card)
    return scripts(title, aliases, tags, body)


def _stamp(vault: Vault, rel: str) -> tuple[int, int] | None:
    try:
        st = os.stat(vault.root / rel)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


class _Scoring:
    """Per-term postings and BM25F scores of one query against the index.

    `katakana` (analysis.katakana_words of the query): a card's bigrams of such a word count only
    when it has enough of them (`need`), so バックアップ does not match ロールバック through
    their two shared bigrams; a bigram of the word that another of its words needs stays.
    """

    def __init__(self, index: Index, query_terms: list[str], katakana=(), words=(), shape: float = 0.0) -> None:
        stats = index.stats()
        self.avg_lengths = stats.avg_lengths
        self.terms: list[tuple[str, float, Postings]] = []   # (term, idf, postings)
        self.query_idf = 0.0
        for term in dict.fromkeys(query_terms):
            postings = index.postings(term)
            # A Japanese bigram that joins a word to its grammar counts for less (query_weight).
            term_idf = idf(stats.doc_count, len(postings)) * query_weight(term)
            self.query_idf += term_idf  # a term no card has weighs most: nothing covers it
            self.terms.append((term, term_idf, postings))
        # The longest list is turned into the score table in one C-level step; only the others
        # are added to it one posting at a time.
        self.scores: dict[int, float] = {}
        for _, term_idf, postings in sorted(self.terms, key=lambda t: -len(t[2])):
            self._accumulate(term_idf, postings)
        self.void: dict[int, frozenset[str]] = {}   # docid -> terms that do not count for it
        if katakana:
            self._void_partial_words(katakana)
        # The query's words that have terms of their own and are not general words, each with
        # its weight: what `strength` measures a card against. The weight is the mean idf of the
        # word's terms in the vault plus PRIOR_CARDS cards that hold none of them: a vault is a
        # sample of what its people know, and in a vault of a few cards every word it has is in
        # most of them, so a plain idf would weigh any word the vault lacks several times over.
        self.cards = stats.doc_count + PRIOR_CARDS
        self.shape = shape   # relevance.prompt_shape of the query: what its shape takes from the odds
        weight = {term: idf(self.cards, len(postings)) * query_weight(term) for term, _, postings in self.terms}
        self.words = [(word.core, math.fsum(weight[t] for t in word.core) / len(word.core), word.every,
                       word_script(word))
                      for word in words if word.core and all(t in weight for t in word.core)
                      and not is_general(word)]
        self._word_memo: dict[int, list[tuple[float, float, str]]] = {}   # `_word_matches`

    @classmethod
    def of(cls, index: Index, query: Query) -> "_Scoring":
        return cls(index, list(query.terms), query.katakana, query.words, prompt_shape(query.text))

    def _accumulate(self, term_idf: float, postings: Postings) -> None:
        # Codes repeat (same tf, same field lengths), so each distinct one is scored once.
        by_code = {}
        for code in set(postings.codes):
            tfs, lengths = decode_code(code)
            by_code[code] = bm25f_term(tfs, lengths, self.avg_lengths, term_idf)
        contributions = map(by_code.__getitem__, postings.codes)
        scores = self.scores
        if not scores:
            scores.update(zip(postings.docids, contributions))
            return
        get = scores.get
        for docid, contribution in zip(postings.docids, contributions):
            scores[docid] = get(docid, 0.0) + contribution

    def _void_partial_words(self, katakana) -> None:
        """Take back the bigrams of a katakana word from the cards that hold fewer than `need`
        of its core bigrams (and no other query word justifies them)."""
        by_term = {term: (term_idf, postings) for term, term_idf, postings in self.terms}
        kept: dict[int, set[str]] = {}
        dropped: dict[int, set[str]] = {}
        for word in katakana:
            counts: dict[int, int] = {}
            for bigram in word.bigrams:
                in_core = bigram in word.core
                for docid in by_term[bigram][1].docids if bigram in by_term else ():
                    counts[docid] = counts.get(docid, 0) + in_core
            for docid, count in counts.items():
                (kept if count >= word.need else dropped).setdefault(docid, set()).update(word.bigrams)
        for docid, terms in dropped.items():
            void = frozenset(terms - kept.get(docid, set()))
            if not void:
                continue
            self.void[docid] = void
            for term in void:
                term_idf, postings = by_term[term]
                code = postings.code(docid)
                if code is not None:
                    tfs, lengths = decode_code(code)
                    self.scores[docid] -= bm25f_term(tfs, lengths, self.avg_lengths, term_idf)
            if self.scores[docid] <= 1e-9:
                del self.scores[docid]   # it matched nothing but parts of a word

    def _matches(self, docid: int):
        void = self.void.get(docid, ())
        for term, term_idf, postings in self.terms:
            if term not in void:
                code = postings.code(docid)
                if code is not None:
                    yield term, term_idf, code

    def coverage(self, docid: int) -> float:
        """The share of the query's idf weight that this document matches."""
        matched = sum(term_idf for _, term_idf, _ in self._matches(docid))
        return matched / self.query_idf if self.query_idf else 0.0

    def strength(self, docid: int) -> float:
        """The share of the query that this document matches, 0..1 (`relevance.is_relevant`
        judges it for the search floor): the query's words weighted by idf, each counting by
        how fully the document matches it (`term_saturation`: once in a long body is about half,
        the title or tags nearly all); a CJK word by the mean over its bigrams, a Latin word by
        its best term. A word no card has counts against every card at its full weight; a
        bigram that joins a Japanese word to its grammar (ら外 in から外部) is no word's own and
        counts neither way, and neither does a katakana word's bigram taken back by `void`."""
        total = weight = 0.0
        for word_idf, value, _ in self._word_matches(docid):
            total += word_idf * value
            weight += word_idf
        return total / weight if weight > 0 else 0.0

    def support(self, docid: int, written_in: frozenset[str] | None = None) -> float:
        """The keyword log-odds that this document is the one the query is about
        (`relevance.keyword_odds`, which `relevance.is_relevant` judges for context): the
        information of the query's words it matches (idf times how fully, as `strength`), the
        words it leaves unmatched (partly matched ones in part), against the prior of one card
        among the vault's. A word in a script the card is not written in (`written_in`,
        analysis.scripts of its texts; None: every script) is left out: the card could not
        have held it, so it is no evidence either way."""
        information = unmatched = 0.0
        for word_idf, value, script in self._word_matches(docid):
            if written_in is not None and script not in written_in:
                continue
            information += word_idf * value
            unmatched += 1.0 - value
        return keyword_odds(information, unmatched, self.cards, self.shape)

    def held(self, docid: int) -> int:
        """How many of the query's words that count (`words`) this document holds at all: the
        independent pieces of evidence its `strength` rests on (`relevance.is_relevant`)."""
        return sum(1 for _, value, _ in self._word_matches(docid) if value > 0.0)

    def _word_matches(self, docid: int) -> list[tuple[float, float, str]]:
        """(weight, how fully the document matches it 0..1, script) for each of the query's
        words that counts (`words`): a CJK word by the mean over its bigrams, a Latin word by
        its best term, each term by `term_saturation`. Worked out once per document (a hit's
        `strength`, `support` and `held` each ask)."""
        found = self._word_memo.get(docid)
        if found is None:
            found = self._word_memo[docid] = list(self._word_values(docid))
        return found

    def _word_values(self, docid: int):
        if not self.words:
            return
        full = {term: term_saturation(*decode_code(code), self.avg_lengths)
                for term, _, code in self._matches(docid)}
        for core, word_idf, every, script in self.words:
            values = [full.get(term, 0.0) for term in core]
            yield word_idf, (math.fsum(values) / len(values) if every else max(values)), script

    def explain(self, docid: int) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for term, term_idf, code in self._matches(docid):
            parts: dict[str, float] = {}
            tfs, lengths = decode_code(code)
            contribution = bm25f_term(tfs, lengths, self.avg_lengths, term_idf, parts)
            out[term] = {"idf": term_idf, **parts, "score": contribution}
        return out


def _rank_indexed(index: Index, query: Query, filters: Filters, params, limit: int):
    """The best `limit` documents that pass the coverage floor, the filters and the score floors,
    as (docid, score, path, (size, mtime_ns) indexed, own card), with how many matching cards
    were not shown, and the scoring (for --explain).

    Corpus statistics come from every card; filters only pick among the scored hits (ranking a
    filtered subset would change idf and let the floors cut good hits). Document rows are read
    in small batches from the top, so a common term does not load every matching row.
    Floors: kept when coverage >= min_coverage and score >= max(min_score, relative_floor x the
    best admitted score).

    Ties never depend on docids (the order the index happened to see the cards in): documents
    are taken by score rounded to 6 places, then the agent's own cards first, then path, and a
    batch always holds the whole group of equal scores it reaches. When the limit cuts through
    such a group, up to `_TIED_PAST_LIMIT` more of it are returned, for the caller to choose
    among by effective confidence, which only the card files hold.
    """
    scoring = _Scoring.of(index, query)
    scores = scoring.scores
    chosen: list[tuple[int, float, str, tuple[int, int], bool]] = []
    floor = None
    # The top of the ranking first (cheap); the full sort only when filters reject that much.
    # nlargest(n) is sorted(...)[:n], so positions agree when the full sort takes over.
    ranked = heapq.nlargest(max(limit * 4, 40), scores.items(), key=itemgetter(1))
    start = 0
    while start < len(scores) and len(chosen) < limit:  # batches end with a group: a new one is not tied
        end = start + 20
        last = None
        while True:  # extend the batch to the end of its last group of equal scores
            if end >= len(ranked) and len(ranked) < len(scores):
                ranked = sorted(scores.items(), key=itemgetter(1), reverse=True)
            if end >= len(ranked):
                break
            if last is None:
                last = round(ranked[end - 1][1], 6)
            if round(ranked[end][1], 6) != last:
                break
            end += 1
        batch = ranked[start:end]
        start += len(batch)
        for docid, score, meta, own in _in_tie_order(index, batch, filters.agent):
            if meta is None or scoring.coverage(docid) < params.min_coverage - 1e-12 or not filters.admits(meta):
                continue
            rounded = round(score, 6)
            if floor is None:
                floor = round(max(params.min_score, params.relative_floor * score), 6)
            past_limit = len(chosen) - limit
            if rounded < floor or (past_limit >= 0 and (rounded != round(chosen[-1][1], 6)
                                                         or past_limit == _TIED_PAST_LIMIT)):
                return chosen, _cut(index, scores, len(chosen), filters.agent), scoring
            chosen.append((docid, score, meta["path"], (meta["size"], meta["mtime_ns"]), own))
    return chosen, _cut(index, scores, len(chosen), filters.agent), scoring


def _cut(index: Index, scores: dict[int, float], shown: int, agent: str | None) -> int:
    """How many scored documents `agent` may see are not among the `shown` ones.
    Trigger: a search's `cut`, the matching cards it does not show. Why: another agent's private
    cards counted there told any caller whether some private card holds a word (h12-ident).
    Outcome: they are not counted. Their scope is read from the narrow facets rows, whichever
    are fewer: every card with a scope (`Index.scoped_cards`, a partial index: none or a few in
    most vaults) or the scored documents' (a search of two common words scores thousands; looked
    up one by one they cost ~7 ms a search at 10,000 cards)."""
    if len(scores) == shown:
        return 0
    if index.scoped_count() <= len(scores):
        rows = [(scope, owner) for docid, scope, owner in index.scoped_cards() if docid in scores]
    else:
        rows = [(scope, owner) for _, scope, owner in index.scoped_paths(scores).values()]
    return len(scores) - shown - sum(1 for scope, owner in rows if not scope_admits(scope, owner, agent))


_TIED_PAST_LIMIT = 20  # tied documents past the limit whose cards are read to compare confidence
PRIOR_CARDS = 50       # cards without the query's words added to the count for word weights (strength)


def _in_tie_order(index: Index, batch: list[tuple[int, float]], agent: str | None):
    """(docid, score, stored row or None, own card) for a batch of scored documents, in tie
    order: score rounded to 6 places, `agent`'s own cards first, path. Rows are read 20 at a
    time in that order, as the caller takes them: a tie of thousands of documents costs one
    light read of their paths (and, with an agent, of the few agent-scoped rows), not every row."""
    paths = index.paths(docid for docid, _ in batch)
    own = set()
    if agent is not None:
        scoped = index.docs(index.agent_scoped(docid for docid, _ in batch))
        own = {docid for docid, meta in scoped.items() if _own(meta, agent)}
    order = sorted((-round(score, 6), docid not in own, paths.get(docid, ""), docid, score) for docid, score in batch)
    for at in range(0, len(order), 20):
        piece = order[at:at + 20]
        rows = index.docs(docid for _, _, _, docid, _ in piece)
        for _, not_own, _, docid, score in piece:
            yield docid, score, rows.get(docid), not not_own


def _own(meta: dict[str, Any], agent: str | None) -> bool:
    """Whether a document is the searching agent's own card (`scope: agent`, `agent: A`)."""
    return agent is not None and meta["scope"].lower() == "agent" and meta["agent"] == agent
