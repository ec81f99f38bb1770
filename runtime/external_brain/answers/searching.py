"""The search operation every door calls: rank one vault or several, then keep a miss.

What it promises:
- `search_cards` ranks with `search.search` over the vault in use, or with
  `multivault.search_vaults` when the vault includes others (`[vaults] include`) or the caller
  names more; the ranking itself never writes.
- A search miss (docs/card-format.md) is a query the vault does not answer: no hits, or a vector
  search whose hits are none of them close (`SearchResult.missed`). Logged and kept as an Inbox
  candidate of the first vault only, unless `record_miss` is off (readers that search on someone's
  behalf: the prompt hook, brief, auto-learn). An agent's miss is kept private to that agent
  (docs/card-format.md: it stays in that agent's scope). A miss that cannot be written is a
  warning on the answer, never a failed search.
- A search its filters emptied is not a miss: when the same query without the filters (the
  agent kept) has hits, `SearchResult.unfiltered` says how many, nothing is kept, and the doors
  say "no card matches with these filters" (`nothing_found`). So a miss is the query's, whatever
  filters it was asked with: its candidate records none, and the same query under other filters
  bumps the same candidate.
- A query with no word to search for (stop words, a lone letter, a particle alone:
  `search.analysis.has_search_words`) is refused by `search` (a `UsageError`), so it keeps nothing.
"""

from __future__ import annotations

from ..errors import UnsafePath
from ..search import search
from ..search.keyword import Filters, SearchResult, resolve_filters
from ..vault.storage import Vault, io_problem


def search_cards(vault: Vault, query: str, filters: Filters | None = None, limit: int | None = None,
           explain: bool = False, mode: str | None = None, extra: list[str] = (),
           record_miss: bool = True) -> SearchResult:
    """Ranked hits for `query` (see `search.search`; `extra` names more vaults to search), and
    the miss kept when the vault does not answer it (see the module docstring). A type or domain
    the vault does not know is a `UsageError` before anything is searched or kept
    (`resolve_filters`)."""
    filters = resolve_filters(vault, filters)
    result = _ranked(vault, query, filters, limit, explain, mode, extra)
    if result.hits and not result.missed:
        return result
    if _narrowing(filters):
        # Trigger: a filtered search with nothing (close) found. Why: a miss says the vault lacks
        # an answer to the query, and a filter that left the answer out says nothing of the kind
        # (three filters used to make three sightings of one candidate that named the first).
        # Outcome: the query is asked again without the filters; when that answers it, the result
        # says how many cards match without them and no miss is kept.
        wider = _ranked(vault, query, Filters(agent=filters.agent), limit, False, mode, extra)
        if wider.hits and not wider.missed:
            result.unfiltered = len(wider.hits)
            return result
    if record_miss:
        from ..intake.inbox import record_search_miss  # only a miss pays for the Inbox

        vault.check_inside("logs/events.jsonl")  # refused like every logging command, before the Inbox write
        try:
            result.miss_candidate = record_search_miss(vault, query, {"agent": filters.agent} if filters.agent else {},
                                                       agent=filters.agent)
        except (OSError, UnsafePath) as exc:
            # Trigger: the Inbox or log cannot be written (a read-only vault, an Inbox/ that leads
            # out of the vault). Why: keeping the miss is a side effect of a read. Outcome: the
            # answer (no hits) stands, with a warning that the miss was not kept.
            problem = exc if isinstance(exc, UnsafePath) else io_problem(exc, "write")
            vault.notices.append(f"search miss not kept: {problem.message}")
    return result


def nothing_found(query: str, result: SearchResult) -> str:
    """The one line a door shows for a search without hits: the filters emptied it (and how many
    cards match without them), or nothing matches and where the miss was kept."""
    if result.unfiltered:
        many = result.unfiltered != 1
        return (f'No card matches "{query}" with these filters; {result.unfiltered} card{"s" if many else ""} '
                f'match{"" if many else "es"} without them (search again without the filters to see '
                f'{"them" if many else "it"}).')
    text = f'No cards match "{query}".'
    if result.miss_candidate:
        text += f" Logged as a search miss: {result.miss_candidate}"
    return text


def _narrowing(filters: Filters) -> bool:
    """Whether `filters` leave out cards an unfiltered search (by the same agent) would rank."""
    return filters != Filters(agent=filters.agent)


def _ranked(vault: Vault, query: str, filters: Filters, limit: int | None, explain: bool, mode: str | None,
            extra: list[str]) -> SearchResult:
    if extra or vault.settings.include_vaults:
        from ..search.multivault import search_vaults  # only multi-vault searches pay for it

        return search_vaults(vault, query, filters, limit, explain, mode, extra)
    return search(vault, query, filters, limit, explain, mode=mode)
