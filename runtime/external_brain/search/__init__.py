"""Search: keyword ranking over a cached index, embeddings and vectors, and their fusion.

Modules, bottom up: `stemmer` and `analysis` (text to terms), `index` (the SQLite cache of
terms and links, kept fresh from the files), `keyword` (BM25F ranking and its floors),
`embeddings` (the providers), `vectors` (the vector cache and its prefilter), `fusion`
(combining two rankings), `semantic` (vector and hybrid ranking), `multivault` (several vaults
at once). It builds on the vault layer only.

The one entry is `search`; it only ranks and never writes a card or the log (keeping a search
miss is the `recall` operation's). This module imports nothing at start-up: a command pays
for what its search mode uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..vault.storage import Vault
    from .keyword import Filters, SearchResult

# The longest query a search takes, on every door: ~300 words, more than any question (an error
# line, a title) needs, and the most a search miss ever kept. A longer one (a pasted log, a file)
# is refused, so it is neither echoed back whole nor kept as an Inbox candidate; the prompt hook
# cuts the prompt to this itself (it may not refuse). docs/decisions.md, "Input".
MAX_QUERY_CHARS = 2000


def check_query(query: str) -> str:
    """`query`, or UsageError when it is over `MAX_QUERY_CHARS` or has no word to search for
    (the message shows at most its first 80 characters)."""
    from ..errors import UsageError
    from .analysis import has_search_words

    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(f"the query is {len(query):,} characters, over {MAX_QUERY_CHARS:,}; search with the words "
                         "that matter (an error line, a title)", field="query")
    if not has_search_words(query):
        shown = query if len(query) <= 80 else query[:79] + "…"
        raise UsageError(f"the query {shown!r} has no words to search for (stop words, a lone letter or a "
                         'particle alone are not searched); give one, e.g. search "ECS task timeout"', field="query")
    return query


def search(vault: Vault, query: str, filters: Filters | None = None, limit: int | None = None,
           explain: bool = False, mode: str | None = None) -> SearchResult:
    """Ranked hits for `query` among the Playbooks cards that pass `filters`.

    Hits matching under `min_coverage` of the query's idf weight, under the absolute floor
    (`min_score`) or under `relative_floor` x the best score are cut, so a query with nothing
    relevant returns nothing rather than noise.

    `mode`: "keyword", "semantic" or "hybrid"; None is hybrid when an embedding provider is
    configured, else keyword. Vector modes live in `semantic` (imported only for them) and fall
    back to keyword results, with a warning, whenever vectors cannot be used. With `[rerank]`
    set, the best `top_k` hits are reordered by the reranker (`rerank`), or kept in the
    search's order, with a warning, when it fails.
    """
    from ..errors import UsageError
    from .keyword import Filters, _search

    check_query(query)
    if mode is None:
        mode = "hybrid" if vault.settings.embeddings.provider else "keyword"
    if mode not in ("keyword", "semantic", "hybrid"):
        raise UsageError(f"unknown search mode {mode!r}; use keyword, semantic or hybrid")
    reranker = vault.settings.rerank
    wanted = vault.settings.search.limit if limit is None else limit
    # Trigger: a reranker is configured. Why: it reorders the best `top_k`, so the search must
    # hand it that many. Outcome: the search ranks a pool of max(limit, top_k), the reranker
    # orders it, and `limit` of it is shown.
    pool = max(wanted, reranker.top_k) if reranker.provider else wanted
    if mode == "keyword":
        result = _search(vault, query, filters or Filters(), pool, explain)
    else:
        from .semantic import search_vectors

        result = search_vectors(vault, query, filters or Filters(), pool, explain, mode)
    if reranker.provider and result.hits:
        from .rerank import rerank_hits

        rerank_hits(vault, query, result, wanted)
    return result
