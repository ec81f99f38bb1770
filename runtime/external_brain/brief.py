"""`brief`: a Markdown context block for an agent's prompt, within a token budget.

Promises:
- Fresh working memory first (live entries, newest first), then the most useful cards, best
  first, each with one line on why it was picked and its confidence action (SPEC 3).
- Cards are ranked by relevance (the BM25F score relative to the best hit), effective
  confidence, importance and recency (`rank_of`). With a query, the search floors decide what
  is relevant, so a query nothing answers gives no cards, not filler; without one, the cards of
  `project` are the relevant ones, and without a project only cards marked important (4 or 5).
- `state` cards are labelled with their age; superseded or archived cards and states older
  than `[brief] state_fresh_hours` (default 24) are left out.
- The block never exceeds the budget by `estimate_tokens`. A brief with nothing relevant is
  the empty string.
- It only reads: no search miss is recorded, no `referenced` event, and working memory is not
  purged (SPEC 3: reads change nothing under the card folders).
"""

from __future__ import annotations

import math
import re
from typing import Any

from .errors import BrainError, UsageError
from .vault.confidence import action_for
from .vault.records import factory, record
from .vault.storage import Card, Vault, load_card, now, parse_time

MAX_BUDGET = 100_000
WORKING_MEMORY_CHARS = 600   # one entry's body in a brief; the rest is a `recall` away
RECENCY_HALF_LIFE_DAYS = 90.0
# CJK ideographs, kana, hangul, CJK punctuation and full-width forms: about one token each.
# Left for `re` to compile on first use: ~6 ms that ASCII text, the common case, never pays.
_CJK_CHAR = r"[\u3000-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]"


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: each CJK character ~1 token, other text ~4 characters a token
    (the usual figure for English and code with BPE tokenizers). Rounded up, so it errs high."""
    cjk = 0 if text.isascii() else len(re.findall(_CJK_CHAR, text))
    return cjk + math.ceil((len(text) - cjk) / 4)


@record
class BriefItem:
    """One card in a brief and the reasons it is there."""

    card: Card
    confidence: float
    rank: float
    why: str
    snippet: str
    age: str | None = None          # for `state` cards: how old the state is

    @property
    def action(self) -> str:
        return action_for(self.confidence)

    def as_dict(self) -> dict[str, Any]:
        card = self.card
        return {"path": card.rel, "id": card.id, "title": card.title, "type": card.type,
                "domain": card.domain, "tags": card.tags, "confidence": round(self.confidence, 4),
                "action": self.action, "rank": round(self.rank, 4), "why": self.why,
                "snippet": self.snippet, "age": self.age}


@record
class Brief:
    query: str | None
    budget: int
    markdown: str
    tokens: int
    working_memory: list = factory(list)                  # working_memory.Entry, as shown
    items: list[BriefItem] = factory(list)
    left_out: int = 0                                      # relevant cards the budget had no room for

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "budget": self.budget, "tokens": self.tokens,
                "markdown": self.markdown, "working_memory": [e.as_dict() for e in self.working_memory],
                "cards": [i.as_dict() for i in self.items], "left_out": self.left_out}


def age_label(seconds: float) -> str:
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def rank_of(relevance: float, confidence: float, importance: int | None, age_days: float | None) -> float:
    """0..1: relevance weighs most (0.6), then confidence (0.2), importance (0.1; 3 when unset)
    and recency (0.1, halving every 90 days since `updated`; a date in the future counts as now,
    so a hand-written `updated: 2300-01-01` neither outranks every card nor overflows)."""
    level = importance if isinstance(importance, int) and 1 <= importance <= 5 else 3
    recency = 0.5 ** (max(0.0, age_days) / RECENCY_HALF_LIFE_DAYS) if age_days is not None else 0.5
    return 0.6 * relevance + 0.2 * confidence + 0.1 * (level - 1) / 4 + 0.1 * recency


def brief(vault: Vault, query: str | None = None, *, budget: int = 800, agent: str | None = None,
          project: str | None = None, limit: int = 5, working_memory: bool = True,
          scope: str | None = None) -> Brief:
    """The brief for `query` (or for `project` when there is no query); see the module docstring.

    `working_memory=False` leaves working memory out (the prompt hook: session start already
    gave it). `limit` caps the cards considered. `scope` narrows the cards like `Filters.scope`
    ("agent": only `agent`'s own; "global": only shared ones).
    """
    if not 1 <= budget <= MAX_BUDGET:
        raise UsageError(f"--budget {budget} is out of range; give 1 to {MAX_BUDGET} tokens")
    if limit < 1:
        raise UsageError(f"limit {limit} must be at least 1")
    query = (query or "").strip() or None
    entries = []
    if working_memory:
        from .working_memory import live

        entries = live(vault, agent)
    items = _candidates(vault, query, agent, project, limit, scope)
    return _assemble(query, budget, entries, items)


# ---------------------------------------------------------------------------- choosing cards

def _candidates(vault: Vault, query: str | None, agent: str | None, project: str | None,
                limit: int, scope: str | None = None) -> list[BriefItem]:
    from .search.keyword import Filters

    moment = now()
    fresh_seconds = vault.settings.state_fresh_hours * 3600
    found: list[tuple[Card, float, float, str | None, str]] = []   # card, relevance, confidence, why, snippet
    if query:
        from .search.analysis import tokens
        from .search import search

        if not tokens(query):
            return []  # nothing to search for is nothing relevant, not an error for a brief
        result = search(vault, query, Filters(agent=agent, scope=scope), limit=limit, explain=True)
        best = result.hits[0].score if result.hits else 0.0
        for hit in result.hits:
            terms = ", ".join(list(hit.matched)[:5])
            found.append((hit.card, hit.score / best if best > 0 else 0.0, hit.confidence,
                          f"matches {terms}" if terms else "matches the query", hit.snippet))
    else:
        from .cards import list_cards
        from .search.keyword import snippet_for

        if project:
            chosen = Filters(project=project, agent=agent, scope=scope)
            why = f"project {project}"
        else:
            chosen, why = Filters(agent=agent, scope=scope), None
        for shown in list_cards(vault, chosen, "title").cards:
            importance = shown.card.meta.get("importance")
            if not project and not (isinstance(importance, int) and importance >= 4):
                continue
            try:  # the list comes from the index, without bodies: the snippet needs the file
                card = load_card(vault, shown.card.path)
            except (OSError, BrainError):
                continue  # gone or broken since it was indexed
            found.append((card, 1.0, shown.confidence, why, snippet_for(card, [])))

    items = []
    for card, relevance, confidence, why, snippet in found:
        if card.status != "active":
            continue
        updated = parse_time(card.meta.get("updated")) or parse_time(card.meta.get("created"))
        seconds = (moment - updated).total_seconds() if updated else None
        age = None
        if card.type == "state":
            # SPEC 3: a state is only worth showing while it is current, and then with its age.
            if seconds is None or seconds > fresh_seconds:
                continue
            age = age_label(max(0.0, seconds))
        importance = card.meta.get("importance")
        reasons = [why] if why else []
        if query and project and card.text_field("project").lower() == project.lower():
            relevance = min(1.0, relevance + 0.1)   # the project at hand breaks near-ties
            reasons.append(f"project {project}")
        if isinstance(importance, int) and not isinstance(importance, bool) and importance >= 4:
            reasons.append(f"importance {importance}")
        if seconds is not None:
            reasons.append(f"updated {age_label(max(0.0, seconds))}")
        rank = rank_of(relevance, confidence, importance if not isinstance(importance, bool) else None,
                       seconds / 86400 if seconds is not None else None)
        items.append(BriefItem(card, confidence, rank, "; ".join(reasons), snippet, age))
    items.sort(key=lambda i: (-round(i.rank, 6), i.card.rel))
    return items[:limit]


# ---------------------------------------------------------------------------- the text

def _entry_text(entry, moment) -> str:
    updated = parse_time(entry.updated)
    when = age_label(max(0.0, (moment - updated).total_seconds())) if updated else "at an unknown time"
    body = entry.body.strip()
    if len(body) > WORKING_MEMORY_CHARS:
        body = body[:WORKING_MEMORY_CHARS - 1].rstrip() + "…"
    body = body.replace("\n", "\n  ")
    return f"- {entry.key} (updated {when}): {body}\n"


def _item_text(number: int, item: BriefItem, full: bool) -> str:
    card = item.card
    kind = "/".join(x for x in (card.type, card.domain) if x) or "card"
    if item.age:
        kind += f", state as of {item.age}"
    lines = [f"{number}. **{card.title}** ({kind}) `{card.rel}`",
             f"   confidence {item.confidence:.2f}: {item.action}"]
    if full:
        lines.insert(1, f"   why: {item.why}")
        if item.snippet:
            lines.append(f"   {item.snippet}")
    return "\n".join(lines) + "\n"


def _assemble(query: str | None, budget: int, entries: list, items: list[BriefItem]) -> Brief:
    """Greedy within the budget, in rank order: each card in full (why and snippet) if it fits,
    else in short, else left out; a section header is paid for only when something goes under it."""
    moment = now()
    parts: list[str] = []
    used = 0
    shown_entries: list = []
    shown_items: list[BriefItem] = []

    def fits(text: str) -> bool:
        return used + estimate_tokens(text) <= budget

    header = "## Working memory\n"
    for entry in entries:
        text = (header if not shown_entries else "") + _entry_text(entry, moment)
        if fits(text):
            parts.append(text)
            used += estimate_tokens(text)
            shown_entries.append(entry)
    shown_query = " ".join((query or "").split())
    if len(shown_query) > 80:
        shown_query = shown_query[:79].rstrip() + "…"
    header = f'## Cards for "{shown_query}"\n' if query else "## Cards\n"
    if shown_entries and items:
        header = "\n" + header
    left_out = 0
    for item in items:
        lead = header if not shown_items else ""
        for full in (True, False):
            text = lead + _item_text(len(shown_items) + 1, item, full)
            if fits(text):
                parts.append(text)
                used += estimate_tokens(text)
                shown_items.append(item)
                break
        else:
            left_out += 1
    markdown = "".join(parts)
    return Brief(query, budget, markdown, estimate_tokens(markdown), shown_entries, shown_items, left_out)
