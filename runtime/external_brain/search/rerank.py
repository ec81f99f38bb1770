"""Reranking a search's best hits with a reranker model (docs/compatibility.md): optional, off by default.

Imported only when `[rerank] provider` is set. A reranker reads the query beside each card's text
(a cross-encoder), which neither BM25F nor an embedding does; it is slower, so it only reorders
the `top_k` best hits of the search (keyword, semantic or hybrid) and never finds new ones.

What it promises:
- Two providers, standard library only: `http` (POST {url}/rerank with `{"model", "query",
  "documents", "top_n"}`, the shape Cohere, Jina and Hugging Face TEI-compatible servers share;
  the reply's `results` list of `{"index", "relevance_score"}`, or a bare list of `{"index",
  "score"}`; key from the variable `api_key_env` names) and `command` (a program reading one JSON
  object `{"query", "documents"}` on stdin and writing one JSON list of numbers, a score per
  document, on stdout).
- One deadline, `timeout`, for the whole call, separate from the embedding provider's. Any
  failure (refused, timed out, HTTP error, bad JSON, a score missing, not a number) is one
  `RerankUnavailable` with a one-line message; the search then keeps its own order and says so
  in a warning. It never fails a search.
- The reranked hits keep their search score; their order follows the reranker's score (ties:
  the search's order), and `--explain` shows it.
"""

from __future__ import annotations

import json
import math
import os
import time

from ..errors import EmbeddingUnavailable, RerankUnavailable
from ..vault.config import RerankSettings


def reranker_name(settings: RerankSettings) -> str:
    if settings.provider == "command":
        return f"rerank command {settings.command[0]!r}"
    return f"reranker at {settings.url.rstrip('/')}/rerank"


def rerank_scores(settings: RerankSettings, query: str, documents: list[str]) -> list[float]:
    """A score per document (higher: more relevant), in the documents' order."""
    deadline = time.monotonic() + settings.timeout
    if settings.provider == "command":
        reply = _command(settings, {"query": query, "documents": documents}, deadline)
    else:
        reply = _http(settings, query, documents, deadline)
    return _scores(settings, reply, len(documents))


def rerank_hits(vault, query: str, result, limit: int) -> None:
    """Reorder `result.hits` by the reranker, then keep `limit` of them; on RerankUnavailable,
    keep the search's order and add a warning."""
    settings = vault.settings.rerank
    hits = result.hits
    documents = [f"{hit.card.title}\n{hit.card.body}"[:settings.max_chars] for hit in hits]
    try:
        scores = rerank_scores(settings, query, documents)
    except RerankUnavailable as exc:
        # Trigger: the reranker is down, slow or wrong. Why: it only refines an order the search
        # already has. Outcome: that order, cut to the limit, with one warning line.
        result.warnings.append(f"{exc.message}; showing the {result.mode} order")
    else:
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))
        for i in order:
            hits[i].rerank = scores[i]
        hits = [hits[i] for i in order]
        result.reranked = settings.model or reranker_name(settings)
    result.cut += max(0, len(hits) - limit)
    result.hits = hits[:limit]


def _scores(settings: RerankSettings, reply, count: int) -> list[float]:
    name = reranker_name(settings)
    items = reply.get("results") if isinstance(reply, dict) else reply
    if isinstance(items, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
        scores = [float(x) for x in items]          # the command's plain list, in order
    elif isinstance(items, list) and all(isinstance(x, dict) for x in items):
        scores = [math.nan] * count
        for item in items:
            index = item.get("index")
            score = item.get("relevance_score", item.get("score"))
            if not isinstance(index, int) or not 0 <= index < count or isinstance(score, bool) \
                    or not isinstance(score, (int, float)):
                raise RerankUnavailable(f"{name} replied with a result that is not an index and a score")
            scores[index] = float(score)
    else:
        raise RerankUnavailable(f"{name} replied without a list of scores")
    if len(scores) != count or not all(math.isfinite(s) for s in scores):
        raise RerankUnavailable(f"{name} scored {sum(math.isfinite(s) for s in scores)} of {count} documents")
    return scores


def _http(settings: RerankSettings, query: str, documents: list[str], deadline: float):
    from .embeddings import _post

    headers = {}
    if settings.api_key_env:
        key = os.environ.get(settings.api_key_env)
        if not key:
            raise RerankUnavailable(f"the environment variable {settings.api_key_env} (api_key_env) is not set; "
                                    "export the reranker's API key there")
        headers["Authorization"] = f"Bearer {key}"
    payload = {"model": settings.model, "query": query, "documents": documents, "top_n": len(documents)}
    try:
        return _post(settings, settings.url.rstrip("/") + "/rerank", payload, headers, deadline,
                     name=reranker_name(settings), section="rerank")
    except EmbeddingUnavailable as exc:   # _post's one error, for whichever service it calls
        raise RerankUnavailable(exc.message) from None


def _command(settings: RerankSettings, request: dict, deadline: float):
    import subprocess

    from .embeddings import _kill, _reason

    name = reranker_name(settings)
    try:
        # Its own session, so a timeout kills the program and anything it started.
        process = subprocess.Popen(list(settings.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise RerankUnavailable(f"{name} cannot be started: {_reason(exc)}") from None
    try:
        out, err = process.communicate(json.dumps(request, ensure_ascii=False).encode("utf-8"),
                                       timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(process)
        raise RerankUnavailable(f"{name} did not answer within {settings.timeout:g} s ([rerank] timeout)") from None
    if process.returncode != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise RerankUnavailable(f"{name} failed (exit {process.returncode})" + (f": {last[0][:200]}" if last[0] else ""))
    try:
        return json.loads(out.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        raise RerankUnavailable(f"{name} wrote something that is not JSON") from None
