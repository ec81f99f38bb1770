"""How the vault's knowledge is doing over time: the confidence distribution and the feedback
agents gave, day by day (the Memory Gardener's Health page; any door may show them).

Promises:
- `trends` counts only the cards a reader may see (`search.keyword.visible_to` through
  `cards.list_lines`, the listing every door uses): another agent's private cards and the
  feedback on them are in no count.
- Confidence is the effective value as of now (decayed, as `list` and `get` show it), in ten
  bins of width 0.1 (1.0 falls in the last), and by the action an agent takes at it
  (`confidence.action_for`).
- Feedback is the `used` and `rejected` events of the log, per day (the day of the event's own
  time stamp, as written), for the last `days` days that have any; feedback on a card that is no
  longer in Playbooks (deleted, renamed since) counts under the path the event names only when
  that path is still visible, so a deleted private card leaks nothing.
- It only reads: the whole log once (`events.read_events`), not a hot path.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from typing import Any

from ..vault.valueclass import valueclass
from ..vault.storage import Vault, now

BINS = 10
FEEDBACK_EVENTS = ("used", "rejected")


@valueclass
class Trends:
    cards: int
    confidence_bins: list[dict[str, Any]]      # [{"low", "high", "count"}] x BINS
    by_action: dict[str, int]                  # apply / verify / reference -> count
    feedback: list[dict[str, Any]]             # [{"day": "YYYY-MM-DD", "used", "rejected"}], oldest first
    feedback_total: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def confidence_bin(confidence: float) -> int:
    """The bin (0..BINS-1) of a confidence in [0, 1]: width 1/BINS, 1.0 in the last."""
    return min(BINS - 1, max(0, int(confidence * BINS)))


def action_key(confidence: float) -> str:
    """The action at this confidence (docs/card-format.md, Confidence), as one word: apply, verify or reference."""
    from ..vault.confidence import action_for

    action = action_for(confidence)
    return "apply" if action == "apply" else ("verify" if action.startswith("apply and") else "reference")


def trends(vault: Vault, agent: str | None = None, days: int = 180) -> Trends:
    """See the module docstring. `days`: how far back the feedback goes (1..3650)."""
    from ..cards import LINE_KEYS, list_lines
    from ..errors import UsageError
    from ..search.keyword import Filters
    from ..vault.events import read_events

    if not 1 <= days <= 3650:
        raise UsageError(f"days {days} is out of range; give 1 to 3650")
    place, path_at = LINE_KEYS.index("confidence"), LINE_KEYS.index("path")
    rows = list_lines(vault, Filters(status="any", agent=agent)).rows
    bins = Counter(confidence_bin(row[place]) for row in rows)
    actions = Counter(action_key(row[place]) for row in rows)
    visible = {row[path_at] for row in rows}
    first_day = (now() - timedelta(days=days - 1)).date().isoformat()
    per_day: dict[str, Counter] = {}
    for event in read_events(vault):
        kind = event.get("event")
        if kind not in FEEDBACK_EVENTS or event.get("card") not in visible:
            continue
        day = str(event.get("ts", ""))[:10]
        if len(day) == 10 and day >= first_day:
            per_day.setdefault(day, Counter())[kind] += 1
    feedback = [{"day": day, "used": counts["used"], "rejected": counts["rejected"]}
                for day, counts in sorted(per_day.items())]
    return Trends(
        cards=len(rows),
        confidence_bins=[{"low": round(b / BINS, 2), "high": round((b + 1) / BINS, 2), "count": bins[b]}
                         for b in range(BINS)],
        by_action={key: actions[key] for key in ("apply", "verify", "reference")},
        feedback=feedback,
        feedback_total={kind: sum(day[kind] for day in feedback) for kind in FEEDBACK_EVENTS},
    )
