"""Fusion of the keyword and vector rankings of one query into one (hybrid search).

Method (after Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM
TOIS 2023): a convex combination of normalised scores, `alpha * keyword + (1 - alpha) * vector`,
which they found better than rank fusion (RRF) and robust across domains. Its weakness is the
fixed `alpha`: a model that does not know a language, or a query whose words no card uses,
makes one side noise for that query. So `alpha` is chosen per query from how confident each
ranking is — how far its best scores stand out from the rest of its own candidates (a standard
query-performance signal; a ranking with no standout head has nothing to say about this query).

- Normalisation: each side's scores are mapped to [0, 1] by min-max over that side's own top
  `DEPTH` candidates (its best score -> 1, its `DEPTH`-th -> 0, lower clipped at 0), so a
  document the side did not rank highly gets 0 from it.
- Confidence: `standout(scores)` = (best - mean) / standard deviation of the side's top `DEPTH`
  raw scores, a z-score, which needs no knowledge of the score's scale (BM25 or cosine).
- Weight: alpha = standout_keyword / (standout_keyword + standout_vector); a side with no
  scores gets weight 0.
Nothing here is tuned on an evaluation set; the only constant is DEPTH, the size of the head
each side is judged on.
"""

from __future__ import annotations

import heapq
import math
from typing import Hashable

from ..vault.records import record

DEPTH = 100


@record
class Fused:
    scores: dict            # key -> fused score in [0, 1]
    weight: float           # alpha: the keyword side's weight
    keyword: dict           # key -> normalised keyword score
    vector: dict            # key -> normalised vector score
    confidence: tuple[float, float]


def head(scores: dict[Hashable, float], depth: int = DEPTH) -> list[float]:
    """The `depth` best scores, best first."""
    return heapq.nlargest(depth, scores.values())


def standout(top: list[float]) -> float:
    """How far the best score stands out from the head it leads, in standard deviations of
    that head; 0 for fewer than two scores or a flat head."""
    if len(top) < 2 or max(top) == min(top):
        return 0.0
    # math.fsum, not `statistics` (whose import is ~3 ms of every hybrid search's start).
    mean = math.fsum(top) / len(top)
    spread = math.sqrt(math.fsum((x - mean) ** 2 for x in top) / len(top))
    return (top[0] - mean) / spread if spread > 0 else 0.0


def normalise(scores: dict[Hashable, float], top: list[float]) -> dict[Hashable, float]:
    """Min-max over the head: its best -> 1, its last -> 0, anything lower clipped at 0. A head
    whose best score is not above 0 has found nothing: every score maps to 0."""
    if not top:
        return {}
    # Trigger: no card matches a word of the query, so every keyword score is 0 (the cards only
    # the vectors found), or a lone negative cosine. Why: min-max of a flat head maps all of it
    # to 1, so "matches nothing" read as a perfect match (score 1.00 in --explain and when
    # vaults are merged). Outcome: that side contributes 0.
    if top[0] <= 0:
        return {key: 0.0 for key in scores}
    high, low = top[0], top[-1] if len(top) > 1 else 0.0
    span = high - low
    if span <= 0:
        return {key: 1.0 if value >= high else 0.0 for key, value in scores.items()}
    return {key: max(0.0, (value - low) / span) for key, value in scores.items()}


def fuse(keyword: dict[Hashable, float], vector: dict[Hashable, float]) -> Fused:
    """Fuse the raw scores of one query: `keyword` (BM25F, every matching card) and `vector`
    (cosine of the nearest cards). The fused score of a card is
    alpha * its normalised keyword score + (1 - alpha) * its normalised vector score."""
    keyword_top, vector_top = head(keyword), head(vector)
    confidence = (standout(keyword_top), standout(vector_top))
    total = confidence[0] + confidence[1]
    if not keyword_top:
        alpha = 0.0
    elif not vector_top:
        alpha = 1.0
    else:
        alpha = confidence[0] / total if total > 0 else 0.5
    keyword_norm = normalise(keyword, keyword_top)
    vector_norm = normalise(vector, vector_top)
    fused = {}
    for key in keyword_norm.keys() | vector_norm.keys():
        fused[key] = alpha * keyword_norm.get(key, 0.0) + (1 - alpha) * vector_norm.get(key, 0.0)
    return Fused(fused, alpha, keyword_norm, vector_norm, confidence)
