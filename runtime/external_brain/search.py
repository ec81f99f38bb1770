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
from .storage import Card, Problem, Vault, load_cards, now

# Field weights and length normalisation (b) per field. The title and aliases name the problem,
# tags are curated keywords, the body is long and noisy.
FIELD_WEIGHTS = {"title": 3.0, "aliases": 2.5, "tags": 2.0, "meta": 1.0, "body": 1.0}
FIELD_B = {"title": 0.5, "aliases": 0.5, "tags": 0.3, "meta": 0.0, "body": 0.75}
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

    def admits(self, card: Card) -> bool:
        if self.domain and card.domain != self.domain.lower():
            return False
        if self.type and card.type != self.type.lower():
            return False
        if self.project and card.text_field("project").lower() != self.project.lower():
            return False
        if self.tags:
            have = {t.lower() for t in card.tags}
            if not all(t.lower().lstrip("#") in have for t in self.tags):
                return False
        if self.status != "any" and card.status != self.status:
            return False
        return visible_to(card, self.agent)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, (), "active")}


def visible_to(card: Card, agent: str | None) -> bool:
    """Agent-scoped cards (`scope: agent`) are visible only to their own agent (SPEC 3)."""
    if card.text_field("scope").lower() != "agent":
        return True
    return agent is not None and card.text_field("agent") == agent


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
    cut: int = 0                  # hits removed by the low-score floors
    miss_candidate: str | None = None


def rank(cards: list[Card], query_terms: list[str], explain: bool = False) -> list[tuple[float, Card, dict]]:
    """Score every card that matches at least one query term; best first (BM25F)."""
    if not cards or not query_terms:
        return []
    analysed = [card_fields(card) for card in cards]
    counts = [{name: Counter(terms) for name, terms in fields.items()} for fields in analysed]
    avg = {
        name: sum(len(fields[name]) for fields in analysed) / len(analysed) for name in FIELD_WEIGHTS
    }
    unique_terms = list(dict.fromkeys(query_terms))
    doc_freq = {t: sum(1 for c in counts if any(t in fc for fc in c.values())) for t in unique_terms}
    scored = []
    for card, fields, field_counts in zip(cards, analysed, counts):
        total = 0.0
        parts: dict[str, dict[str, float]] = {}
        for term in unique_terms:
            weighted = 0.0
            per_field: dict[str, float] = {}
            for name, weight in FIELD_WEIGHTS.items():
                tf = field_counts[name].get(term, 0)
                if tf:
                    value = weight * field_tf(tf, len(fields[name]), avg[name], FIELD_B[name])
                    weighted += value
                    per_field[name] = value
            if weighted:
                term_idf = idf(len(cards), doc_freq[term])
                contribution = term_idf * saturate(weighted, K1) * (K1 + 1)
                total += contribution
                if explain:
                    parts[term] = {"idf": term_idf, **per_field, "score": contribution}
        if total > 0:
            scored.append((total, card, parts))
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

    Hits under the absolute floor (`search.min_score`) or under `relative_floor` x the best score
    are cut, so a query with nothing relevant returns nothing rather than noise. A query with no
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
    cards, problems = load_cards(vault)
    cards = [c for c in cards if filters.admits(c)]
    query_terms = tokens(query, drop_stop_words=True) or tokens(query)
    scored = rank(cards, query_terms, explain)
    if not scored:
        return SearchResult(query, [], problems)

    refs = References(vault)
    moment = now()
    best = max(score for score, _, _ in scored)
    floor = max(settings.search.min_score, settings.search.relative_floor * best)
    kept = [(s, c, p) for s, c, p in scored if s >= floor]
    hits = [
        Hit(card, score, effective_confidence(card, refs.last_referenced(card), moment, settings.confidence),
            "", parts)
        for score, card, parts in kept
    ]
    # Score first (rounded, so float noise does not decide), then confidence, then path.
    hits.sort(key=lambda h: (-round(h.score, 6), -h.confidence, h.card.rel))
    hits = hits[:limit]
    for hit in hits:
        hit.snippet = snippet_for(hit.card, query_terms)
    return SearchResult(query, hits, problems, cut=len(scored) - len(kept))
