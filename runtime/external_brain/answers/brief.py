"""`brief`: a Markdown context block for an agent's prompt, within a token budget. One
implementation for the CLI `brief`, MCP `brief`, HTTP `/v1/context` and the session-start and
prompt hooks.

Promises:
- Fresh working memory first (live entries, newest first), then the cards that are about the
  query, each with what it says (`key_sentence`: the fix, the decision, the fact, not its title
  alone), one line on why it was picked (the query's words it matched, as typed) and its
  confidence action (docs/card-format.md, Confidence).
- Relevance is `search.relevance`'s judgement for context (`CONTEXT`): a card is shown only when
  it is clearly about the query and not far less likely to be than the likeliest card found, so
  a query nothing answers gives no cards, not filler. Without a
  query, the cards of `project` are the relevant ones, and without a project only cards marked
  important (4 or 5).
- Order: the asking agent's own cards first, then shared ones (docs/compatibility.md, Agents and scope: an agent's own
  memories take precedence over global ones), each group by rank (`rank_of`: relevance,
  confidence, importance, recency).
- States: a current state shows its age; a past one (its `valid_to` has passed, or it is older
  than `[brief] state_fresh_hours`, default 24; docs/compatibility.md, Agents and scope) is shown only for a query it
  answers, labelled as past; superseded or archived cards never are, and a status of the
  person's own (`in-progress`, `✅ done`) hides nothing (`search.keyword.in_service`, as search).
- The block never exceeds the budget by `estimate_tokens`. With a query, the cards about it are
  paid for first and working memory gets what is left; without one, working memory first.
  Whatever the budget had no room for (cards, working-memory notes) is counted in a last line
  ("+N more"), for which room is always kept. A brief with nothing to show says why in one line
  (nothing relevant; no card clearly about the query while search lists N weaker matches; a
  query with no words; a project with only past states), never nothing at all (`items` and
  `working_memory` are then empty: the hooks inject nothing).
- It only reads: no search miss is recorded, no `referenced` event, and working memory is not
  purged (docs/card-format.md: reads change nothing under the card folders).
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import BrainError, UsageError
from ..vault.confidence import action_for
from ..vault.valueclass import factory, valueclass
from ..vault.storage import Card, Vault, load_card, now, parse_time

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


@valueclass
class BriefItem:
    """One card in a brief and the reasons it is there."""

    card: Card
    confidence: float
    rank: float
    why: str
    snippet: str                    # what the card says: its key sentence (`key_sentence`)
    age: str | None = None          # for `state` cards: how old the state is
    past: bool = False              # a state that is no longer current (shown for a query it answers)
    own: bool = False               # the asking agent's own card (`scope: agent`)

    @property
    def action(self) -> str:
        return action_for(self.confidence)

    def bullet(self) -> str:
        """One line that carries the knowledge: "Title: key sentence", a past state so labelled."""
        label = f" (past state, as of {self.age})" if self.past else ""
        title = self.card.title
        if not self.snippet or self.snippet.casefold().startswith(title.casefold()):
            return f"{self.snippet or title}{label}"   # a card that is its title says it once
        return f"{title}{label}: {self.snippet}"

    def as_dict(self) -> dict[str, Any]:
        card = self.card
        return {"path": card.rel, "id": card.id, "title": card.title, "type": card.type,
                "domain": card.domain, "tags": card.tags, "confidence": round(self.confidence, 4),
                "action": self.action, "rank": round(self.rank, 4), "why": self.why,
                "snippet": self.snippet, "age": self.age, "past": self.past, "own": self.own}


@valueclass
class Brief:
    query: str | None
    budget: int
    markdown: str
    tokens: int
    working_memory: list = factory(list)                  # working_memory.Entry, as shown
    items: list[BriefItem] = factory(list)
    left_out: int = 0                                      # relevant cards the budget had no room for
    notes_left_out: int = 0                                # live working-memory notes it had no room for
    other_sessions: list = factory(list)                   # keys of other sessions' saved states, left out

    @property
    def empty(self) -> bool:
        """Nothing relevant: no working memory and no card (the markdown says so)."""
        return not self.items and not self.working_memory

    def summary(self) -> str:
        """Plain text for `/v1/context`: what the relevant memories say, the agent's own first,
        in one paragraph (the memory API's synthesis, docs/compatibility.md, without a model: the key sentences)."""
        if self.empty:
            return self.markdown
        parts = [f"{len(self.items)} relevant memor{'y' if len(self.items) == 1 else 'ies'}"
                 + (f" for \"{_one_line(self.query, 80)}\"" if self.query else "")
                 + (f", {self.left_out} more left out for the budget" if self.left_out else "") + "."]
        for item in self.items:
            kind = "past state" if item.past else item.card.type or "card"
            parts.append(f"[{kind}{', yours' if item.own else ''}] {item.bullet()}"
                         + ("" if item.bullet().endswith((".", "。", "!", "?")) else "."))
        if self.working_memory:
            parts.append(f"Working memory: {', '.join(e.key for e in self.working_memory)}.")
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "budget": self.budget, "tokens": self.tokens,
                "markdown": self.markdown, "working_memory": [e.as_dict() for e in self.working_memory],
                "cards": [i.as_dict() for i in self.items], "left_out": self.left_out,
                "notes_left_out": self.notes_left_out, "other_sessions": self.other_sessions}


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
          scope: str | None = None, session: str | None = None) -> Brief:
    """The brief for `query` (or for `project` when there is no query); see the module docstring.

    `working_memory=False` leaves working memory out (the prompt hook: session start already
    gave it). `limit` caps the cards considered. `scope` narrows the cards like `Filters.scope`
    ("agent": only `agent`'s own; "global": only shared ones). `session`: the Claude Code session
    asking (the session-start hook, `--session`, MCP `session`, HTTP `session_id`); its own saved
    state is working memory, every other session's is left out and named in `other_sessions`
    (`working_memory.split_by_session`: without a session, every saved state is another's).
    """
    if not 1 <= budget <= MAX_BUDGET:
        raise UsageError(f"--budget {budget} is out of range; give 1 to {MAX_BUDGET} tokens")
    if limit < 1:
        raise UsageError(f"limit {limit} must be at least 1")
    query = (query or "").strip() or None
    entries, others = [], []
    if working_memory:
        from ..working_memory import live, split_by_session

        # Trigger: another session's saved state is live (pre-compact keeps it 2 days). Why: it was
        # shown as the asker's own working memory ("Still failing: ...", another project's requests),
        # by the hook (review6) and by every door that names no session (review7). Outcome: only the
        # asking session's own, and people's notes; the others are named apart.
        entries, others = split_by_session(live(vault, agent), session)
    chosen = _candidates(vault, query, agent, project, limit, scope)
    shown = _assemble(query, budget, entries, chosen, project, vault.settings.state_fresh_hours)
    shown.other_sessions = [entry.key for entry in others]
    return shown


# ---------------------------------------------------------------------------- choosing cards

@valueclass
class _Chosen:
    """The cards a brief may show, best first, and what the reader is told when there are none."""

    items: list[BriefItem] = factory(list)
    searchable: bool = True     # the query has a word to search for (`analysis.has_search_words`)
    found: int = 0              # hits the search gave, relevant or not (no query: 0)
    past: int = 0               # no query: past states of the project left out (their titles below)


def _candidates(vault: Vault, query: str | None, agent: str | None, project: str | None,
                limit: int, scope: str | None = None) -> _Chosen:
    from ..search.keyword import Filters, in_service

    moment = now()
    fresh_seconds = vault.settings.state_fresh_hours * 3600
    found: list[tuple[Card, float, float, str | None]] = []   # card, relevance, confidence, why
    terms: list[str] = []
    searched = 0                                               # hits the search gave, relevant or not
    if query:
        from ..search.analysis import has_search_words, tokens
        from ..search import search
        from ..search.relevance import CONTEXT

        if not has_search_words(query):
            return _Chosen(searchable=False)  # nothing to search for is nothing relevant, not an error for a brief
        terms = tokens(query)
        result = search(vault, query, Filters(agent=agent, scope=scope), limit=limit, explain=True)
        searched = len(result.hits)
        best = result.hits[0].score if result.hits else 0.0
        likeliest = max((hit.odds for hit in result.hits), default=None)
        for hit in result.hits:
            if not hit.is_relevant(CONTEXT, likeliest):
                continue  # found by the search, not clearly about the query (relevance.py)
            words = ", ".join(list(hit.words)[:5])
            found.append((hit.card, hit.score / best if best > 0 else 0.0, hit.confidence,
                          f"matches {words}" if words else "close in meaning to the query"))
    else:
        from ..cards import list_cards

        if project:
            chosen = Filters(project=project, agent=agent, scope=scope)
            why = f"project {project}"
        else:
            chosen, why = Filters(agent=agent, scope=scope), None
        for shown in list_cards(vault, chosen, "title").cards:
            importance = shown.card.meta.get("importance")
            if not project and not (isinstance(importance, int) and importance >= 4):
                continue
            try:  # the list comes from the index, without bodies: the key sentence needs the file
                card = load_card(vault, shown.card.path)
            except (OSError, BrainError):
                continue  # gone or broken since it was indexed
            found.append((card, 1.0, shown.confidence, why))

    items = []
    past_left = 0
    for card, relevance, confidence, why in found:
        if not in_service(card.status):
            continue  # superseded or archived; a status of the person's own hides nothing (search.keyword)
        updated = parse_time(card.meta.get("updated")) or parse_time(card.meta.get("created"))
        seconds = (moment - updated).total_seconds() if updated else None
        age, past = None, False
        if card.type == "state":
            since = parse_time(card.meta.get("valid_from")) or updated
            ended = parse_time(card.meta.get("valid_to"))
            age = age_label(max(0.0, (moment - since).total_seconds())) if since else "an unknown time"
            # docs/compatibility.md, Agents and scope: a state whose valid_to has passed, or older than the freshness
            # window, is a past state. Trigger: such a state. Why: it may no longer be true.
            # Outcome: shown only for a query it answers (a question about it), labelled past;
            # a brief without a query (session start) leaves it out.
            past = (ended is not None and ended <= moment) or since is None \
                or (moment - since).total_seconds() > fresh_seconds
            if past and not query:
                past_left += 1
                continue
        importance = card.meta.get("importance")
        reasons = [why] if why else []
        if query and project and card.text_field("project").lower() == project.lower():
            relevance = min(1.0, relevance + 0.1)   # the project at hand breaks near-ties
            reasons.append(f"project {project}")
        if isinstance(importance, int) and not isinstance(importance, bool) and importance >= 4:
            reasons.append(f"importance {importance}")
        if seconds is not None:
            reasons.append(f"updated {age_label(max(0.0, seconds))}")
        own = agent is not None and card.text_field("scope").lower() == "agent" and card.text_field("agent") == agent
        if own:
            reasons.append("your own")
        rank = rank_of(relevance * (0.5 if past else 1.0), confidence,
                       importance if not isinstance(importance, bool) else None,
                       seconds / 86400 if seconds is not None else None)
        items.append(BriefItem(card, confidence, rank, "; ".join(reasons), key_sentence(card, terms), age, past, own))
    # docs/compatibility.md, Agents and scope: the agent's own memories before global ones, whatever their scores; each
    # group by rank.
    items.sort(key=lambda i: (not i.own, -round(i.rank, 6), i.card.rel))
    return _Chosen(items[:limit], True, searched, past_left)


# ---------------------------------------------------------------------------- what a card says

# The section that holds a card's knowledge, by card type, as headings are commonly written
# (English and Japanese); the first one present is read. Others: the lead paragraph.
_KEY_SECTIONS = {
    "troubleshooting": ("fix", "solution", "resolution", "workaround", "対処", "解決", "対応", "修正",
                        "cause", "原因"),
    "decision": ("decision", "決定", "結論"),
    "pattern": ("pattern", "solution", "パターン", "解決"),
    "fact": ("fact", "事実"),
    "insight": ("insight", "lesson", "知見", "学び"),
    "episode": ("summary", "what happened", "概要", "要約"),
    "state": ("where we are", "status", "current", "現状", "状態"),
}
_ANY_SECTION = ("summary", "tl;dr", "fix", "solution", "decision", "answer", "要約", "概要", "対処", "結論")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\[(\"'])|(?<=[。！？])")
_MARKUP = re.compile(r"\*\*|__|`|~~|\[\[|\]\]")
KEY_SENTENCE_CHARS = 200


def key_sentence(card: Card, terms: list[str] = ()) -> str:
    """What a card says, in one sentence: the first prose sentence of the section that holds its
    knowledge (a troubleshooting card's fix, a decision's decision, a fact's fact; see
    `_KEY_SECTIONS`), else of its lead paragraph, else of its body; markup removed, at most
    KEY_SENTENCE_CHARS characters. A lead-in ending in a colon takes the first sentence of the
    prose line after it, or ends as a sentence when code follows. "" for a card with no prose
    (a title and nothing else)."""
    sections = _sections(card.body)
    wanted = _KEY_SECTIONS.get(card.type, ()) + _ANY_SECTION
    chosen = None
    for name in wanted:
        chosen = next((lines for heading, lines in sections if heading and heading.startswith(name)), None)
        if chosen is not None and _first_prose(chosen):
            break
        chosen = None
    if chosen is None:
        lead = [lines for heading, lines in sections if heading is None]
        chosen = lead[0] if lead and _first_prose(lead[0]) else [line for _, lines in sections for line in lines]
    at, text = _first_prose_at(chosen)
    if not text:
        return ""
    sentence = _SENTENCE_END.split(text, 1)[0].strip()
    if sentence.endswith((":", "：")):
        # Trigger: a lead-in ("For the 502s, keep connections open longer than the ALB does:").
        # Why: alone it dangles, and a bullet or summary ending in ":" says the point is missing.
        # Outcome: the prose line right after it (a list's first item) completes it; when code or
        # nothing follows, the lead-in is the point and ends as a sentence ("does.").
        following = next((line for line in chosen[at + 1:] if line.strip()), "")
        after = "" if following.lstrip().startswith("```") else _first_prose([following])
        if after:
            sentence = f"{sentence} {_SENTENCE_END.split(after, 1)[0].strip()}"
        if sentence.endswith((":", "：")):
            sentence = sentence[:-1].rstrip() + ("。" if sentence.endswith("：") else ".")
    if len(sentence) > KEY_SENTENCE_CHARS:
        cut = sentence[:KEY_SENTENCE_CHARS - 1]
        sentence = (cut.rsplit(" ", 1)[0] if " " in cut[KEY_SENTENCE_CHARS // 2:] else cut).rstrip(",;: ") + "…"
    return sentence


def _sections(body: str) -> list[tuple[str | None, list[str]]]:
    """(heading, lines) of a Markdown body, `## ` and deeper headings case-folded; None for the
    lines before the first such heading. The `# title` line and fenced code are left out, but
    for one "```" line where each block starts (so a lead-in is known to be followed by code)."""
    out: list[tuple[str | None, list[str]]] = [(None, [])]
    fenced = False
    for line in body.splitlines():
        stripped = line.strip()
        if stripped.startswith("```") or stripped.startswith("~~~"):
            fenced = not fenced
            if fenced:
                out[-1][1].append("```")
            continue
        if fenced:
            continue
        if stripped.startswith("## ") or stripped.startswith("### "):
            out.append((stripped.lstrip("#").strip().casefold(), []))
        elif not stripped.startswith("# "):
            out[-1][1].append(line)
    return out


def _first_prose(lines: list[str]) -> str:
    return _first_prose_at(lines)[1]


def _first_prose_at(lines: list[str]) -> tuple[int, str]:
    """(index, text) of the first prose line (`keyword._prose`: no heading, code fence or table
    row), markup removed; (-1, "") when there is none."""
    from ..search.keyword import _prose

    for at, line in enumerate(lines):
        text = _prose(line)
        if text:
            return at, " ".join(_MARKUP.sub("", text).split())
    return -1, ""


# ---------------------------------------------------------------------------- the text

def _one_line(text: str | None, width: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 1].rstrip() + "…"


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
    if item.past:
        kind += f", past state as of {item.age}: may no longer hold"
    elif item.age:
        kind += f", state as of {item.age}"
    lines = [f"{number}. **{card.title}** ({kind}) `{card.rel}`"]
    if item.snippet:
        lines.append(f"   {item.snippet}")
    if full:
        lines.append(f"   why: {item.why}")
    lines.append(f"   confidence {item.confidence:.2f}: {item.action}")
    return "\n".join(lines) + "\n"


def _more_texts(cards: int, notes: int) -> list[str]:
    """The last line, for what the budget left out, longest first: the first that fits is shown,
    so even a budget of one token says that something was left out."""
    what = [f"{cards} more relevant card{'s' if cards != 1 else ''}"] if cards else []
    if notes:
        what.append(f"{notes} working-memory note{'s' if notes != 1 else ''}")
    total = cards + notes
    return [f"+{' and '.join(what)} left out for the token budget\n", f"+{total} more (token budget)\n",
            f"+{total} more\n", f"+{total}\n"]


def _nothing_texts(query: str | None, project: str | None, chosen: _Chosen, fresh_hours: float) -> list[str]:
    """The one line of a brief with nothing to show, longest first (as `_more_texts`): why
    there is nothing, and where to look when the vault has something all the same."""
    shown = _one_line(query, 80)
    if query and not chosen.searchable:
        first = f'The query "{shown}" has no words to search for.\n'
    elif query and chosen.found:
        # Trigger: the search found cards, none clearly about the query (relevance.CONTEXT is
        # stricter than the search floor). Why: "nothing is relevant" would deny what `search`
        # shows. Outcome: the line says none is clearly about it and how many `search` lists.
        many = chosen.found != 1
        first = (f'No card is clearly about "{shown}"; `brain search "{shown}"` lists {chosen.found} weaker '
                 f'match{"es" if many else ""}.\n')
    elif query:
        first = f'Nothing in the vault is relevant to "{shown}".\n'
    elif project and chosen.past:
        # Trigger: the project's only cards are past states, which a brief without a query leaves
        # out (docs/compatibility.md, Agents and scope). Why: "no cards of it" would be untrue.
        # Outcome: the line says they exist and how to see them.
        many = chosen.past != 1
        first = (f"Nothing current for project {project}: no live working memory, and its {chosen.past} "
                 f"card{'s are past states' if many else ' is a past state'} (ended, or older than "
                 f"{fresh_hours:g} h); `brain list --project {project}` lists {'them' if many else 'it'}, and a "
                 f"brief that asks about {'them' if many else 'it'} shows {'them' if many else 'it'} labelled past.\n")
    elif project:
        first = f"Nothing in the vault for project {project}: no live working memory and no cards of it.\n"
    else:
        first = "Nothing in the vault to brief: no live working memory and no cards marked important.\n"
    return [first, "Nothing relevant.\n", "None.\n", "-\n"]


def _assemble(query: str | None, budget: int, entries: list, chosen: _Chosen,
              project: str | None = None, fresh_hours: float = 24) -> Brief:
    """Greedy within the budget (see the module docstring for the order the parts are paid in):
    each card in full (key sentence and why) if it fits, else in short (title, key sentence,
    confidence), else left out; each working-memory note whole or left out. What was left out
    is counted in a last line ("+N more"), made room for by taking back the part paid for last;
    a section header is paid for only when something goes under it, and the gap between the two
    sections by the cards' header whenever there are notes. A brief never prints nothing: with
    nothing to show it says why, in the longest form the budget holds."""
    moment = now()
    items = chosen.items
    cards_header = (f'## Cards for "{_one_line(query, 80)}"\n' if query else "## Cards\n")
    if entries:
        cards_header = "\n" + cards_header   # paid even when no note is shown: a bound, never an overrun
    note_texts = [_entry_text(entry, moment) for entry in entries]

    def allocate(room: int) -> list[tuple[str, Any, str, int]]:
        """(kind, entry or item, text, tokens) of what `room` tokens hold, in the order paid."""
        paid: list[tuple[str, Any, str, int]] = []
        used = 0

        def pay_notes() -> None:
            nonlocal used
            for entry, body in zip(entries, note_texts):
                text = ("## Working memory\n" if not any(k == "note" for k, *_ in paid) else "") + body
                cost = estimate_tokens(text)
                if used + cost <= room:
                    paid.append(("note", entry, text, cost))
                    used += cost

        def pay_cards() -> None:
            nonlocal used
            number = 0
            for item in items:
                for full in (True, False):
                    text = (cards_header if not number else "") + _item_text(number + 1, item, full)
                    cost = estimate_tokens(text)
                    if used + cost <= room:
                        paid.append(("card", item, text, cost))
                        used += cost
                        number += 1
                        break

        # docs/decisions/0031 (Search misses, statuses and context): with a query, the cards
        # about it are paid for first, and working memory, which says nothing of the query, gets
        # what is left; without one (session start), working memory first, as it is what the
        # session was doing. Either way working memory is shown first.
        for pay in ((pay_cards, pay_notes) if query else (pay_notes, pay_cards)):
            pay()
        return paid

    def left(paid) -> tuple[int, int]:
        return (len(items) - sum(k == "card" for k, *_ in paid), len(entries) - sum(k == "note" for k, *_ in paid))

    def last_line(paid) -> str | None:
        """The "+N more" line for what `paid` leaves out, in the longest form the whole budget
        holds; None when nothing is left out."""
        if not any(left(paid)):
            return None
        return next((t for t in _more_texts(*left(paid)) if estimate_tokens(t) <= budget), None)

    # Trigger: cards or notes the budget has no room for. Why: a reader must know the block is
    # not all there is. Outcome: room is kept for a "+N more" line and the parts are paid for
    # again in what is left, until the line they leave out fits (the room only grows, so this
    # ends; with no room left nothing is paid for and the line fits by its choice).
    reserve = 0
    while True:
        paid = allocate(budget - reserve)
        more = last_line(paid)
        need = estimate_tokens(more) if more else 0
        if sum(cost for *_, cost in paid) + need <= budget:
            break
        reserve = max(reserve + 1, need)
    shown_entries = [e for kind, e, _, _ in paid if kind == "note"]
    shown_items = [i for kind, i, _, _ in paid if kind == "card"]
    parts = [text for kind, _, text, _ in paid if kind == "note"]
    card_parts = [text for kind, _, text, _ in paid if kind == "card"]
    if card_parts and not shown_entries and cards_header.startswith("\n"):
        card_parts[0] = card_parts[0][1:]   # no note above: no gap (one character less than paid for)
    parts += card_parts
    if more:
        parts.append(more)
    if not parts:
        parts = [next((t for t in _nothing_texts(query, project, chosen, fresh_hours)
                       if estimate_tokens(t) <= budget), "")]
    markdown = "".join(parts)
    left_cards, left_notes = left(paid)
    return Brief(query, budget, markdown, estimate_tokens(markdown), shown_entries, shown_items, left_cards,
                 left_notes)
