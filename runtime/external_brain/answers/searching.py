"""The search operation every door calls: rank one vault or several, then keep a miss.

What it promises:
- `search_cards` ranks with `search.search` over the vault in use, or with
  `multivault.search_vaults` when the vault includes others (`[vaults] include`) or the caller
  names more; the ranking itself never writes.
- A search with no hits is a search miss (docs/card-format.md), and so is a vector search whose hits are
  none of them close (`SearchResult.missed`): logged and kept as an Inbox candidate of the first
  vault only, unless `record_miss` is off (readers that search on someone's behalf: the
  prompt hook, brief, auto-learn). An agent's miss is kept private to that agent (docs/card-format.md: it
  stays in that agent's scope). A miss that cannot be written is a warning on the answer,
  never a failed search.
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
    the miss kept when there are none. A type or domain the vault does not know is a
    `UsageError` before anything is searched or kept (`resolve_filters`)."""
    filters = resolve_filters(vault, filters)
    if extra or vault.settings.include_vaults:
        from ..search.multivault import search_vaults  # only multi-vault searches pay for it

        result = search_vaults(vault, query, filters, limit, explain, mode, extra)
    else:
        result = search(vault, query, filters, limit, explain, mode=mode)
    if (not result.hits or result.missed) and record_miss:
        from ..intake.inbox import record_search_miss  # only a miss pays for the Inbox

        vault.check_inside("logs/events.jsonl")  # refused like every logging command, before the Inbox write
        try:
            result.miss_candidate = record_search_miss(vault, query, filters.as_dict(), agent=filters.agent)
        except (OSError, UnsafePath) as exc:
            # Trigger: the Inbox or log cannot be written (a read-only vault, an Inbox/ that leads
            # out of the vault). Why: keeping the miss is a side effect of a read. Outcome: the
            # answer (no hits) stands, with a warning that the miss was not kept.
            problem = exc if isinstance(exc, UnsafePath) else io_problem(exc, "write")
            vault.notices.append(f"search miss not kept: {problem.message}")
    return result
