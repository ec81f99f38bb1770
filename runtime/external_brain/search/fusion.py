"""Fusion of the keyword and vector rankings of one query into one (hybrid search).

Each half says of each candidate card how likely it is to be what the query asks for, on a
scale that half can calibrate by itself; a card's fused score is the mean of the two
likelihoods. So a half that is sure of a card lifts it, a half that cannot tell its cards apart
gives them all about the same (low) likelihood and leaves the order to the other half, and
two halves that agree add up. Nothing is weighed per vault or per set: which half leads is
decided card by card from what each half sees for this query.

- Keyword: a card's BM25F score in standard deviations above the mean of the query's best
  `DEPTH` matches (its z). Likelihood: logistic, 1/2 at KEYWORD_MID standard deviations, slope
  KEYWORD_SLOPE. A z-score needs no knowledge of BM25's scale, which changes with the query.
- Vector: a card's cosine placed on the vault's own scale (`closeness`): 0 at the query's
  mean cosine with the vault's cards (its cosine with their centre), 1 at the cosine the
  vault's cards have with their nearest neighbour (`VectorStore.resolution`). Cosines are not
  comparable across models or vaults (e5 puts every text above 0.7; a vault of near-identical
  long logs has every card within 0.02 of every query): this scale says whether the best card
  is as close to the query as cards that are about the same thing are to each other.
  Likelihood: logistic, 1/2 at VECTOR_MID, slope VECTOR_SLOPE.
- Fused: (keyword likelihood + vector likelihood) / 2, in [0, 1]. A card one half did not
  find gets 0 from it.

Why not a convex combination with a weight per query (the method before, after Bruch, Gai and
Ingber, ACM TOIS 2023): measured on four sets (docs/decisions/0037-fusion.md), the per-query
weight from each half's standout followed the wrong half on FAQ questions (covidfaq 0.660 against
its semantic half's 0.784) and on people's own paraphrases.

Measured leave-one-set-out on five sets (JSQuAD, covidfaq, SciFact and the bench's paraphrases
and conversations; docs/decisions/0037-fusion.md, "Per-query rules, five sets"), the held-out
fused ranking is within 0.005 of the better half on every set, and 0.006-0.008 below the best
fixed convex weight chosen on each set itself on four of them (above it on JSQuAD): not yet the
issue's whole goal. Per-query gates tried on top (the two halves' agreement at the top, a
weight from each half's confidence, a learned switch) did no better held out.

KEYWORD_MID and VECTOR_MID were chosen with tests/bench/fusion_lab.py (`loso`: the best worst
margin on all five sets, and the choice of four folds of five); the slopes were chosen before, on
four sets. They are the only tuned numbers here.
"""

from __future__ import annotations

import heapq
import math
from typing import Hashable

from ..vault.valueclass import valueclass

DEPTH = 100            # the keyword head the z-scores are taken over
KEYWORD_MID = 6.0      # z at which a keyword match is as likely right as not
KEYWORD_SLOPE = 0.4    # per standard deviation
VECTOR_MID = 0.5       # closeness at which a card is as likely right as not
VECTOR_SLOPE = 8.0     # per unit of closeness
TRUSTED = 2 / 3        # a half whose share of the best card's score is at least this "led"


@valueclass
class VaultScale:
    """Where the query's cosines sit in this vault: `centre` is its cosine with the centre of
    the cards (their mean cosine with it), `neighbour` the cosine the vault's cards typically
    have with their nearest other card."""

    centre: float
    neighbour: float


@valueclass
class Fused:
    scores: dict            # key -> fused score in [0, 1]
    weight: float           # the keyword half's share of the best card's fused score
    keyword: dict           # key -> keyword likelihood
    vector: dict            # key -> vector likelihood
    confidence: tuple[float, float]   # the best keyword z and the best vector closeness
    trusted: str = "both"   # "keyword", "vector" or "both": which half led the best card
    why: str = ""           # one line: what each half saw, for --explain
    keyword_z: dict | None = None       # key -> keyword z
    closeness: dict | None = None       # key -> vector closeness


def head(scores: dict[Hashable, float], depth: int = DEPTH) -> list[float]:
    """The `depth` best scores, best first."""
    return heapq.nlargest(depth, scores.values())


def logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def keyword_z(scores: dict[Hashable, float], depth: int = DEPTH) -> dict[Hashable, float]:
    """Each matching card's score in standard deviations above the mean of the best `depth`
    matches (scores of 0 are not matches and get no z). A lone match, or a head of equal
    scores, says nothing about how it stands out: its cards get KEYWORD_MID (likelihood 1/2)."""
    top = [s for s in head(scores, depth) if s > 0]
    # math.fsum, not `statistics` (whose import is ~3 ms of every hybrid search's start).
    mean = math.fsum(top) / len(top) if top else 0.0
    spread = math.sqrt(math.fsum((x - mean) ** 2 for x in top) / len(top)) if top else 0.0
    if spread <= 0:
        return {key: KEYWORD_MID for key, value in scores.items() if value > 0}
    return {key: (value - mean) / spread for key, value in scores.items() if value > 0}


def closeness(vector: dict[Hashable, float], scale: VaultScale | None) -> dict[Hashable, float]:
    """Each card's cosine on the vault's scale (module docstring). Without one (a cache from
    before it was kept, or a single card), the best candidate stands in for the neighbour
    cosine and the mean of the candidates for the centre: the best card is then at 1."""
    if not vector:
        return {}
    if scale is None or scale.neighbour <= scale.centre:
        best = max(vector.values())
        centre = math.fsum(vector.values()) / len(vector)
        scale = VaultScale(centre, best if best > centre else centre + 1.0)
    span = scale.neighbour - scale.centre
    return {key: (value - scale.centre) / span for key, value in vector.items()}


def fuse(keyword: dict[Hashable, float], vector: dict[Hashable, float],
         scale: VaultScale | None = None) -> Fused:
    """Fuse the raw scores of one query: `keyword` (BM25F; 0 for a card no query word
    matches) and `vector` (cosines), on the vault's `scale` (see `closeness`)."""
    zs = keyword_z(keyword)
    near = closeness(vector, scale)
    p_keyword = {key: logistic(KEYWORD_SLOPE * (z - KEYWORD_MID)) for key, z in zs.items()}
    p_vector = {key: logistic(VECTOR_SLOPE * (c - VECTOR_MID)) for key, c in near.items()}
    fused = {key: (p_keyword.get(key, 0.0) + p_vector.get(key, 0.0)) / 2
             for key in keyword.keys() | vector.keys()}
    confidence = (max(zs.values(), default=0.0), max(near.values(), default=0.0))
    weight, trusted, why = 0.5, "both", ""
    if fused:
        best = min(fused, key=lambda key: (-round(fused[key], 9), str(key)))
        pk, pv = p_keyword.get(best, 0.0), p_vector.get(best, 0.0)
        weight = pk / (pk + pv) if pk + pv > 0 else 0.5
        # Trigger: one half gives the best card most of its score. Why: --explain says which
        # half the ranking followed and what each half saw. Outcome: "keyword" / "vector".
        trusted = "keyword" if weight >= TRUSTED else "vector" if weight <= 1 - TRUSTED else "both"
        why = (f"keyword: best match {confidence[0]:.1f} sd above the query's other matches "
               f"(likelihood {max(p_keyword.values(), default=0.0):.2f}); vector: best card at "
               f"{confidence[1]:.2f} of the way from the vault's average to its neighbours' closeness "
               f"(likelihood {max(p_vector.values(), default=0.0):.2f})")
    return Fused(fused, weight, p_keyword, p_vector, confidence, trusted, why, zs, near)
