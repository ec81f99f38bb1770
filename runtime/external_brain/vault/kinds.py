"""Memory kinds in time (docs/card-format.md, Kinds in time): what was valid at a moment, and how old a state is.

A card is valid from its `valid_from` (else `created`) until its `valid_to` (open when absent):
`valid_from <= t < valid_to`. A card with no readable start counts as valid since always, so a
hand-written note is never hidden by a time filter for lack of dates. Superseded cards take part
(they were true in their time); archived ones do not (archiving says "no longer knowledge", not
"true until then").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ..errors import UsageError
from .storage import EARLIEST, LATEST, Card, iso, outside_window, parse_time


def check_moment(value: str, flag: str) -> str:
    """A time the caller typed (`--as-of`, `--valid-at`, `--since`, `--event-time`, HTTP `from`)
    as ISO 8601 text, or UsageError. Unlike a date in a file, which is clamped, a time outside the
    window every command can compute with is refused: the caller can type another."""
    field = flag.lstrip("-").replace("-", "_").replace(" ", "_")   # `--as-of` -> as_of, `event time` -> event_time
    moment = parse_time(value)
    if moment is None:
        raise UsageError(f"{flag} {value!r} is not a time; give ISO 8601 like 2026-11-21 or 2026-11-21T10:30",
                         field=field)
    if outside_window(value):
        raise UsageError(f"{flag} {value!r} is outside the times the tool reads ({EARLIEST.date()} to "
                         f"{LATEST.date()}); give a time between them", field=field)
    return iso(moment)


def valid_at(meta: dict[str, Any], moment: datetime) -> bool:
    """Whether a card with this index metadata (`valid_from`, `valid_to`, `status`) was valid at `moment`."""
    if meta.get("status") == "archived":
        return False
    start, end = parse_time(meta.get("valid_from") or None), parse_time(meta.get("valid_to") or None)
    return (start is None or start <= moment) and (end is None or moment < end)


def state_fields(card: Card, moment: datetime) -> dict[str, Any]:
    """For a `state` card: its age (since `valid_from`, else `updated`, else `created`) and its
    `valid_to`; nothing for other kinds. Latest wins for states, so their age is what a reader
    needs to judge them (docs/card-format.md, Kinds in time)."""
    if card.type != "state":
        return {}
    return state_of(state_since(card), card.text_field("valid_to"), moment)


def state_since(card: Card) -> str | None:
    """Where a state card's age starts, as written: the first of its `valid_from`, `updated` and
    `created` that reads as a time (None when none does, or the card is no state). The index
    keeps it, so a listing gives a state's age without the card (`state_of`)."""
    if card.type != "state":
        return None
    for key in ("valid_from", "updated", "created"):
        value = card.meta.get(key)
        if parse_time(value) is not None:
            return str(value)
    return None


def state_of(since_text: str | None, valid_to: str, moment: datetime) -> dict[str, Any]:
    """`state_fields` of a state card whose age starts at `since_text` (`state_since`) and whose
    `valid_to` text is `valid_to` ("" when none)."""
    since = parse_time(since_text)
    out: dict[str, Any] = {"valid_to": valid_to or None}
    if since is not None:
        seconds = max(0, int((moment - since).total_seconds()))
        out["age_seconds"] = seconds
        out["age"] = human_age(seconds)
    return out


def human_age(seconds: int) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
