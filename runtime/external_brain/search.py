"""Keyword search over the cards: BM25F ranking, filters, a low-score cut and search misses.

Ranking is BM25F (Robertson, Zaragoza & Taylor, "Simple BM25 extension to multiple weighted
fields", CIKM 2004): each field's term frequency is length-normalised with its own `b`, the
fields are summed with their weights, and the sum is saturated once with `k1`. Effective
confidence only breaks ties between equal scores; it never lifts a weak match over a strong one.
Reads never write a card: decay is computed, not stored.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .analysis import tokens
from .confidence import References, effective_confidence
from .errors import BrainError
from .index import FIELDS, Index, card_meta, decode_posting
from .storage import Card, Problem, Vault, load_card, now

# Field weights and length normalisation (b) per field, in `index.FIELDS` order (title,
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


def card_fields(card: Card) -> dict[str, list[str]]:
    """The analysed terms of each searchable field of a card."""
    meta_text = " ".join(filter(None, (card.type, card.domain, card.text_field("project"))))
    aliases = card.meta.get("aliases")
    alias_text = " ".join(map(str, aliases)) if isinstance(aliases, list) else str(aliases or "")
    return {
        "title": tokens(card.title),
        "aliases": tokens(alias_text),
        "tags": tokens(" ".join(card.tags)),
        "meta": tokens(meta_text),
        "body": tokens(card.body),
    }


@dataclass
class Filters:
    domain: str | None = None
    type: str | None = None
    tags: tuple[str, ...] = ()
    project: str | None = None
    status: str = "active"          # "active" (default), "any", or one status
    agent: str | None = None

    def admits(self, meta: dict[str, Any]) -> bool:
        """Whether a document passes, judged on its `index.card_meta` fields."""
        if self.domain and meta["domain"] != self.domain.lower():
            return False
        if self.type and meta["type"] != self.type.lower():
            return False
        if self.project and meta["project"].lower() != self.project.lower():
            return False
        if self.tags:
            have = {t.lower() for t in meta["tags"]}
            if not all(t.lower().lstrip("#") in have for t in self.tags):
                return False
        if self.status != "any" and meta["status"] != self.status:
            return False
        return visible_to(meta, self.agent)

    def admits_card(self, card: Card) -> bool:
        return self.admits(card_meta(card))

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, (), "active")}


def visible_to(meta: dict[str, Any], agent: str | None) -> bool:
    """Agent-scoped cards (`scope: agent`) are visible only to their own agent (SPEC 3)."""
    if meta["scope"].lower() != "agent":
        return True
    return agent is not None and meta["agent"] == agent


@dataclass
class Hit:
    card: Card
    score: float
    confidence: float
    snippet: str
    matched: dict[str, dict[str, float]] = field(default_factory=dict)  # term -> part -> value

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
        if explain:
            data["explain"] = {t: {k: round(v, 4) for k, v in parts.items()} for t, parts in self.matched.items()}
        return data


@dataclass
class SearchResult:
    query: str
    hits: list[Hit]
    problems: list[Problem]
    cut: int = 0                  # matching cards not shown: filtered, under the floors, past the limit
    miss_candidate: str | None = None


def rank(cards: list[Card], query_terms: list[str], explain: bool = False) -> list[tuple[float, Card, dict]]:
    """Score in memory every card that matches a query term (BM25F over `cards` alone).

    Used where the candidates are already loaded (create's insights); search uses the index.
    """
    if not cards or not query_terms:
        return []
    analysed = [card_fields(card) for card in cards]
    counts = [[Counter(fields[name]) for name in FIELDS] for fields in analysed]
    lengths = [[len(fields[name]) for name in FIELDS] for fields in analysed]
    avg = tuple(sum(doc[i] for doc in lengths) / len(cards) for i in range(len(FIELDS)))
    unique_terms = list(dict.fromkeys(query_terms))
    doc_freq = {t: sum(1 for c in counts if any(t in fc for fc in c)) for t in unique_terms}
    scored = []
    for card, field_counts, doc_lengths in zip(cards, counts, lengths):
        total = 0.0
        explained: dict[str, dict[str, float]] = {}
        for term in unique_terms:
            tfs = [fc.get(term, 0) for fc in field_counts]
            if any(tfs):
                parts: dict[str, float] | None = {} if explain else None
                term_idf = idf(len(cards), doc_freq[term])
                contribution = bm25f_term(tfs, doc_lengths, avg, term_idf, parts)
                total += contribution
                if parts is not None:
                    explained[term] = {"idf": term_idf, **parts, "score": contribution}
        if total > 0:
            scored.append((total, card, explained))
    return scored


def snippet_for(card: Card, query_terms: list[str], width: int = 160) -> str:
    """The first body line that mentions a query term (else the first prose line), trimmed."""
    wanted = set(query_terms)
    fallback = ""
    for line in card.body.splitlines():
        if line.lstrip().startswith(("#", "```", "|")):
            continue
        stripped = _LIST_MARKER.sub("", line).strip()
        if not stripped:
            continue
        if not fallback:
            fallback = stripped
        if wanted.intersection(tokens(stripped)):
            return _trim(stripped, width)
    return _trim(fallback, width)


_LIST_MARKER = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")


def _trim(text: str, width: int) -> str:
    text = re.sub(r"\s+", " ", text)
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def search(vault: Vault, query: str, filters: Filters | None = None, limit: int | None = None,
           explain: bool = False, record_miss: bool = True) -> SearchResult:
    """Ranked hits for `query` among the Playbooks cards that pass `filters`.

    Hits matching under `min_coverage` of the query's idf weight, under the absolute floor
    (`min_score`) or under `relative_floor` x the best score are cut, so a query with nothing relevant returns nothing rather than noise. A query with no
    hits is a search miss: logged, and kept as an Inbox candidate (unless `record_miss` is off,
    as for hooks that search on every prompt).
    """
    result = _search(vault, query, filters or Filters(), limit, explain)
    if not result.hits and record_miss:
        from .inbox import record_search_miss  # inbox builds on cards, which builds on search

        result.miss_candidate = record_search_miss(vault, query, (filters or Filters()).as_dict())
    return result


def _search(vault: Vault, query: str, filters: Filters, limit: int | None, explain: bool) -> SearchResult:
    settings = vault.settings
    limit = settings.search.limit if limit is None else limit
    query_terms = tokens(query, drop_stop_words=True) or tokens(query)
    index = Index.open(vault, card_fields)
    try:
        problems = index.problems()
        stats = index.stats()
        unique_terms = list(dict.fromkeys(query_terms))
        scores: dict[int, float] = {}
        matched_idf: dict[int, float] = {}
        query_idf = 0.0
        explained: dict[int, dict[str, dict[str, float]]] = {}
        # Corpus statistics come from every card; filters only pick among the scored hits
        # (ranking a filtered subset would change idf and let the floors cut good hits).
        for term in unique_terms:
            postings = index.postings(term)
            term_idf = idf(stats.doc_count, len(postings))
            query_idf += term_idf  # a term no card has weighs most: nothing covers it
            if not postings:
                continue
            for docid, encoded in postings:
                tfs, lengths = decode_posting(encoded)
                parts: dict[str, float] | None = {} if explain else None
                contribution = bm25f_term(tfs, lengths, stats.avg_lengths, term_idf, parts)
                scores[docid] = scores.get(docid, 0.0) + contribution
                matched_idf[docid] = matched_idf.get(docid, 0.0) + term_idf
                if parts is not None:
                    explained.setdefault(docid, {})[term] = {"idf": term_idf, **parts, "score": contribution}
        # Coverage floor: the share of the query's idf weight a card matches (see config).
        needed = settings.search.min_coverage * query_idf
        ranked = sorted(((d, sc) for d, sc in scores.items() if matched_idf[d] >= needed - 1e-12),
                        key=lambda item: -item[1])
        chosen, cut = _admitted(index, ranked, filters, settings.search, limit)
    finally:
        index.close()
    if not chosen:
        return SearchResult(query, [], problems, cut=cut)
    refs = References(vault)
    moment = now()
    hits = []
    for docid, score, path in chosen:
        try:
            card = load_card(vault, vault.root / path)
        except (OSError, BrainError):
            continue  # changed under us since the index refresh; the next search re-indexes it
        confidence = effective_confidence(card, refs.last_referenced(card), moment, settings.confidence)
        hits.append(Hit(card, score, confidence, snippet_for(card, query_terms), explained.get(docid, {})))
    # Score first (rounded, so float noise does not decide), then confidence, then path.
    hits.sort(key=lambda h: (-round(h.score, 6), -h.confidence, h.card.rel))
    return SearchResult(query, hits, problems, cut=cut)


def _admitted(index: Index, ranked: list[tuple[int, float]], filters: Filters, params, limit: int
              ) -> tuple[list[tuple[int, float, str]], int]:
    """The best `limit` hits that pass the filters and the floors, reading document rows in
    small batches from the top so a common term does not load every matching row.

    Floors: a hit is kept when its score >= max(min_score, relative_floor x best admitted score)
    (the coverage floor was applied before ranking).
    Returns (docid, score, path) of the kept hits and how many matching cards were not shown
    (filtered out, under the floors or past the limit).
    """
    chosen: list[tuple[int, float, str]] = []
    floor = None
    cut = len(ranked)
    batch = max(limit * 2, 20)
    for start in range(0, len(ranked), batch):
        window = ranked[start:start + batch]
        rows = index.docs(docid for docid, _ in window)
        for docid, score in window:
            meta = rows.get(docid)
            if meta is None or not filters.admits(meta):
                continue
            if floor is None:
                floor = max(params.min_score, params.relative_floor * score)
            if score < floor or len(chosen) == limit:
                return chosen, cut - len(chosen)
            chosen.append((docid, score, meta["path"]))
    return chosen, cut - len(chosen)
