"""Confidence: EWA feedback and lazy time decay (docs/card-format.md, Confidence), and last references.

- `ewa`: new = alpha * signal + (1 - alpha) * old, signal 1.0 for `used` and 0.0 for `rejected`.
- `decayed`: max(floor, stored - rate * months_over), months_over = (days unreferenced - threshold)
  / 30 when positive. Reads compute it on the fly and never write it back; only `record` stores it.
- `decay_since`: when a card's decay clock starts, one rule for every reader and for `record`:
  the last reference; else, for a card the log has ever mentioned, `updated` then `created` (seed
  003 exactly); else (a note the vault never offered to an agent, e.g. an imported Obsidian vault)
  no earlier than the moment its file arrived on this filesystem (its ctime).
- `References`: when each card was last referenced (`referenced`, `used`, `rejected` events) and
  which cards any event has named, kept in a small derived file under `.brain/cache/` that is
  brought up to date by reading only the part of the log appended since the last call.
- `replay_feedback`: a card's stored confidence as the log gives it, whatever order the events
  reached the log in (clones merged through git append each other's events in any order): its
  feedback events taken in one defined order, by moment then `eid`, from the `before` of the
  first, each applying the decay its `record` applied (`idle_days`) and then EWA; a `promoted`
  starts the card again, unless the card lives already: promoted before and not undone (one
  candidate promoted in two clones). Every writer keeps cards equal to it; `doctor` checks every card.
"""

from __future__ import annotations

import functools
import json
import os
from datetime import datetime
from typing import Any, Iterable

from .config import ConfidenceSettings
from .events import parse_lines
from .storage import Card, Vault, atomic_write, parse_time

SIGNALS = {"used": 1.0, "rejected": 0.0}
REFERENCE_EVENTS = frozenset({"referenced", "used", "rejected"})
RESTART_EVENTS = frozenset({"promoted"})  # the card starts again at the confidence promote gave it
STORED_DIGITS = 6  # stored confidence is rounded so files stay readable and replays exact


def ewa(old: float, signal: float, alpha: float) -> float:
    """Exponentially weighted average: alpha * signal + (1 - alpha) * old, in [0, 1]."""
    value = alpha * signal + (1.0 - alpha) * old
    return round(min(1.0, max(0.0, value)), STORED_DIGITS)


def months_over(days_unreferenced: int, threshold_days: int) -> float:
    """How many 30-day months a card has gone unreferenced beyond the threshold (0 if within)."""
    return max(0, days_unreferenced - threshold_days) / 30.0


def decayed(stored: float, days_unreferenced: int, params: ConfidenceSettings) -> float:
    """Lazy time decay: max(floor, stored - rate * months_over)."""
    if days_unreferenced <= params.decay_after_days:
        return stored
    lowered = stored - params.decay_per_30_days * months_over(days_unreferenced, params.decay_after_days)
    # The floor never raises a card that feedback already put below it.
    return round(max(min(params.floor, stored), lowered), STORED_DIGITS)


def action_for(confidence: float) -> str:
    """What an agent should do with a card at this confidence (docs/card-format.md, Confidence)."""
    if confidence >= 0.8:
        return "apply"
    if confidence >= 0.5:
        return "apply and verify"
    return "reference only: verify by hand before applying"


def own_confidence(card: Card) -> Any:
    """A person's own value under `confidence` (`high`, `7/10`, `true`, a list): anything that is
    not a number, which is what the tool keeps there (a number outside 0..1 is read clamped).
    None when the key holds a number or nothing. Reads take such a card as having no stored
    confidence (the initial value); `record` replaces it, says so, and logs it for `undo`."""
    value = card.meta.get("confidence")
    if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
        return None
    return value


def stored_or_initial(card: Card, params: ConfidenceSettings) -> float:
    value = card.stored_confidence
    return params.initial if value is None else value


def days_between(earlier: datetime, later: datetime) -> int:
    return max(0, (later - earlier).days)


def decay_since(card: Card, refs: References) -> datetime | None:
    """When the card's decay clock starts; None when nothing dates it (it does not decay).

    - A referenced card: its last reference.
    - Otherwise its stated `updated`, else `created`, except that a card the log has
      never mentioned starts no earlier than the moment its file arrived here (its ctime).
      Trigger: an imported note dated years ago that no agent was ever offered. Why: decaying it
      for years it spent outside this vault shows 0.10 on its first search, so it can never earn
      feedback. Outcome: it has the full threshold from its arrival. A card the tool wrote or
      an agent saw is in the log, so for it docs/card-format.md, Confidence, holds exactly (a git clone, which gives
      every file a new ctime, changes nothing for it).
    """
    last = refs.last_referenced(card)
    if last is not None:
        return last
    stated = parse_time(card.meta.get("updated")) or parse_time(card.meta.get("created"))
    if not card.ctime_ns:
        return stated
    # The log is consulted only when the file is newer than its dates, which a card the tool just
    # wrote is not (its ctime falls in the second its `created` names). Compared as whole seconds
    # since the epoch first: making the aware datetime costs more than the rest (lists do 10,000).
    arrived_s = card.ctime_ns // 1_000_000_000
    if stated is not None and arrived_s <= stated.timestamp():
        return stated
    arrived = _local_moment(arrived_s)
    return stated if refs.mentioned(card) else arrived


# A stated date without an offset is read in the local zone, which may differ between the process
# that stored it as seconds (the index) and the one reading it: zones span 26 hours.
_ZONE_SLACK_S = 2 * 86_400


def clocks_after(cards: Iterable[tuple[str | None, str, float | None, int]], refs: References,
                 horizon_s: float) -> list[bool]:
    """For each card, (id, path, stated_s, ctime_s) in order: whether `decay_since` surely falls
    after `horizon_s` (seconds since the epoch), judged from numbers an index keeps: `stated_s`
    (`updated`, else `created`, as seconds) and the file's ctime in seconds. False when unsure:
    the caller then asks `decay_since` itself. Many at once: a listing asks for every card, and
    one call per card was a fifth of `list`.

    Unreferenced, the clock is never earlier than the stated date, and, for a card the log never
    mentioned, never earlier than its ctime (`decay_since`)."""
    # The log's keys (`id:...`, `path:...`) as bare ids and paths: no key to make per card.
    referenced_ids, referenced_paths = _bare_keys(refs.last)
    stated_after = horizon_s + _ZONE_SLACK_S
    seen: tuple[set[str], set[str]] | None = None
    out = []
    for card_id, rel, stated_s, ctime_s in cards:
        if card_id in referenced_ids or rel in referenced_paths:
            out.append(False)   # referenced: the clock may be any reference's time
        elif stated_s is not None and stated_s > stated_after:
            out.append(True)
        elif ctime_s > horizon_s:
            if seen is None:
                seen = _bare_keys(refs.mention_keys())
            out.append(not ((card_id and card_id in seen[0]) or (rel and rel in seen[1])))
        else:
            out.append(False)
    return out


def _bare_keys(keys: Iterable[str]) -> tuple[set[str], set[str]]:
    """The ids and the paths that `id:` and `path:` keys name."""
    ids, paths = set(), set()
    for key in keys:
        if key.startswith("id:"):
            ids.add(key[3:])
        elif key.startswith("path:"):
            paths.add(key[5:])
    return ids, paths


@functools.lru_cache(maxsize=1024)  # files arrive in bursts (a clone, an import): seconds repeat
def _local_moment(seconds: int) -> datetime:
    return datetime.fromtimestamp(seconds).astimezone()


def effective_confidence(card: Card, refs: References, at: datetime, params: ConfidenceSettings) -> float:
    """The confidence shown by reads: the stored value decayed since `decay_since`."""
    stored = stored_or_initial(card, params)
    since = decay_since(card, refs)
    if since is None:
        return stored
    return decayed(stored, days_between(since, at), params)


_CACHE_TAIL_BYTES = 16_384


class _Known:
    """What this process last read of a log (`References`): the log's inode, the offset read up
    to, the offset the cache file holds, and what was read. Shared by later calls, never changed
    (a call that reads more makes a new one)."""

    __slots__ = ("inode", "offset", "file_offset", "last", "outcomes", "seen_text", "recent")

    def __init__(self, inode: int, offset: int, file_offset: int, last: dict, outcomes: dict, seen_text: str,
                 recent: frozenset) -> None:
        self.inode, self.offset, self.file_offset = inode, offset, file_offset
        self.last, self.outcomes, self.seen_text, self.recent = last, outcomes, seen_text, recent


_KNOWN: dict[str, _Known] = {}


class References:
    """When each card was last referenced, and which cards the log has ever named.

    The cache file holds the log's inode and the byte offset read so far; a call reads only the
    bytes appended since. A log that was replaced or shrank (git checkout, manual edit) is read
    again from the start. Cards are keyed by id and by path, so hand-written cards without an id
    still count. A long-lived process (`serve`, `mcp`) keeps what it read in memory (`_Known`)
    and starts there instead of parsing the cache file again: that file is megabytes of JSON
    at 100,000 cards, and every search, record and create asks.
    """

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.path = vault.cache_dir / "last_referenced.json"
        self.last: dict[str, str] = {}
        # key -> [ts, "used" | "rejected", ts_ns (-1: not logged)] of the last feedback
        self.outcomes: dict[str, list] = {}
        # Every card any event named: one key per event (its id, else its path), kept in the cache
        # as one newline-separated string, which loads ~5x faster than a JSON list of 100,000
        # keys; it becomes a set only when a card is looked up in it (`mentioned`).
        self._seen_text = ""
        self._seen: set[str] | None = None
        self._recent: set[str] = set()      # keys named by the part of the log read by this call
        self._load()

    def _load(self) -> None:
        try:
            stat = os.stat(self.vault.log_path)
        except FileNotFoundError:
            return
        log_key = str(self.vault.log_path)
        known = _KNOWN.get(log_key)
        if known is not None and known.inode == stat.st_ino and known.offset <= stat.st_size:
            offset, file_offset = known.offset, known.file_offset
            self.last, self.outcomes, self._seen_text = known.last, known.outcomes, known.seen_text
            self._recent = set(known.recent)
        else:
            state = self._read_state()
            offset = 0
            if state and state.get("inode") == stat.st_ino and 0 <= state.get("offset", -1) <= stat.st_size:
                offset = state["offset"]
                self.last = state.get("last", {})
                self.outcomes = state.get("outcomes", {})
                self._seen_text = state["seen"]
            file_offset = offset
        if offset == stat.st_size:
            if known is None or known.inode != stat.st_ino or known.offset != offset:
                _KNOWN[log_key] = _Known(stat.st_ino, offset, file_offset, self.last, self.outcomes, self._seen_text,
                                     frozenset(self._recent))
            return
        with open(self.vault.log_path, "rb") as handle:
            handle.seek(offset)
            data = handle.read()
        # Only whole lines are consumed: a line still being written is read next time.
        end = data.rfind(b"\n") + 1
        if end:
            self.last, self.outcomes = dict(self.last), dict(self.outcomes)   # the known ones are shared
        for event in parse_lines(data[:end]):
            named = _keys(event.get("id"), event.get("card"))
            if named:
                self._recent.add(named[0])
            if event.get("event") in REFERENCE_EVENTS and isinstance(event.get("ts"), str):
                for key in named:
                    if event["ts"] > self.last.get(key, ""):
                        self.last[key] = event["ts"]
                    if event["event"] in SIGNALS:
                        fine = event.get("ts_ns")
                        fine = fine if isinstance(fine, int) and not isinstance(fine, bool) else -1
                        prior = self.outcomes.get(key)
                        if prior is None or (event["ts"], fine) >= (prior[0], prior[2] if len(prior) > 2 else -1):
                            self.outcomes[key] = [event["ts"], event["event"], fine]
        # Rewriting the cache costs a rename (~1 ms on ext4, which flushes a file renamed over
        # another), more than reading a few KB of new events again: so only a long tail, or a
        # log read from the start, is worth writing down.
        recent = frozenset(self._recent)
        seen_text = self._seen_text
        if end and (offset == 0 or offset + end - file_offset >= _CACHE_TAIL_BYTES):
            seen_text = "\n".join(sorted(self._seen_keys()))
            if self._write_state({"inode": stat.st_ino, "offset": offset + end, "last": self.last,
                                  "outcomes": self.outcomes, "seen": seen_text}):
                file_offset, recent = offset + end, frozenset()
            else:
                seen_text = self._seen_text
        _KNOWN[log_key] = _Known(stat.st_ino, offset + end, file_offset, self.last, self.outcomes, seen_text, recent)

    def _read_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None  # missing or corrupt cache: rebuilt from the log
        # A cache without `seen` was written before it was kept: read the log again once.
        if not isinstance(state, dict) or not isinstance(state.get("last"), dict) \
                or not isinstance(state.get("outcomes", {}), dict) or not isinstance(state.get("seen"), str):
            return None
        return state

    def _write_state(self, state: dict[str, Any]) -> bool:
        try:
            atomic_write(self.path, json.dumps(state, ensure_ascii=False, separators=(",", ":")), durable=False)
        except OSError:
            return False  # a read-only cache only costs speed, never correctness
        return True

    def last_referenced(self, card: Card) -> datetime | None:
        if not self.last:
            return None  # nothing referenced yet: no keys to make (lists ask for every card)
        stamps = [self.last[k] for k in _keys(card.id, card.rel) if k in self.last]
        return parse_time(max(stamps)) if stamps else None

    def mentioned(self, card: Card) -> bool:
        """Whether any event in the log names this card (by its id or its path)."""
        return self.mentions(card.id, card.rel)

    def mentions(self, card_id: str | None, rel: str) -> bool:
        """`mentioned`, for a card known by its id and path (lists ask for thousands: no key list)."""
        by_id = f"id:{card_id}" if card_id else None
        by_path = f"path:{rel}" if rel else None
        recent = self._recent
        if by_id in recent or by_path in recent:
            return True
        seen = _seen_set(self._seen_text)
        return by_id in seen or by_path in seen

    def mention_keys(self) -> set[str]:
        """`mentions`' keys (`id:ID` and `path:PATH` of every card an event named), for a caller
        that asks about thousands of cards."""
        return self._seen_keys()

    def _seen_keys(self) -> set[str]:
        if self._seen is None:
            self._seen = set(_seen_set(self._seen_text)) | self._recent
        return self._seen

    def latest_feedback(self, card_id: str | None, rel: str) -> tuple[str, int] | None:
        """(`ts`, `ts_ns` or -1) of the card's latest feedback in the log, None when it has none."""
        found = [self.outcomes[k] for k in _keys(card_id, rel) if k in self.outcomes]
        if not found:
            return None
        latest = max(found, key=lambda entry: (entry[0], entry[2] if len(entry) > 2 else -1))
        return latest[0], latest[2] if len(latest) > 2 else -1

    def last_outcome(self, card: Card) -> str | None:
        """`used` or `rejected`: the card's most recent feedback, None when it has none."""
        found = [self.outcomes[k] for k in _keys(card.id, card.rel) if k in self.outcomes]
        return max(found)[1] if found else None


_SEEN: tuple[str | None, frozenset] = (None, frozenset())


def _seen_set(text: str) -> frozenset:
    """The keys of a cache's `seen` text as a set, made once per text (`_Known` shares one text
    between the calls of a long-lived process; a set of 100,000 keys takes milliseconds)."""
    global _SEEN
    made = _SEEN
    if made[0] is not text:
        made = _SEEN = (text, frozenset(text.split("\n")) if text else frozenset())
    return made[1]


def card_keys(card_id: Any, rel: Any) -> list[str]:
    """The keys the log's readers know a card by: `id:ID` (when it has one), then `path:PATH`."""
    return _keys(card_id, rel)


def _keys(card_id: Any, rel: Any) -> list[str]:
    keys = []
    if card_id:
        keys.append(f"id:{card_id}")
    if rel:
        keys.append(f"path:{rel}")
    return keys


# ---------------------------------------------------------------------------- replay

def replay_order(event: dict[str, Any]) -> tuple[float, int, str]:
    """Where an event stands in the one order replays use: its moment (`ts` as seconds, so clones
    in different time zones agree), then the nanoseconds within that second (`ts_ns`, which
    `record` logs so that feedback given within one second replays in the order it was given),
    then its `eid`. An unreadable `ts` goes first; events without `ts_ns` (logged before it was)
    come first within their second and keep their order in the log (the sort is stable)."""
    moment = parse_time(event.get("ts")) if isinstance(event.get("ts"), str) else None
    fine = event.get("ts_ns")
    if not isinstance(fine, int) or isinstance(fine, bool):
        return (moment.timestamp() if moment else float("-inf"), -1, "")
    return (moment.timestamp() if moment else float("-inf"), fine % 1_000_000_000, str(event.get("eid", "")))


def replay_key(event: dict[str, Any]) -> str | None:
    """The card an event is about, as replays key it: `id:ID`, else `path:PATH`."""
    keys = _keys(event.get("id"), event.get("card"))
    return keys[0] if keys else None


def is_replayed(event: dict[str, Any]) -> bool:
    """Whether a replay of confidence reads this event (feedback, or a fresh start)."""
    return event.get("event") in SIGNALS or event.get("event") in RESTART_EVENTS


def replay_step(value: float, event: dict[str, Any], params: ConfidenceSettings) -> float:
    """What one `used`/`rejected` event makes of `value`: the decay its `record` applied, then EWA.

    The decay is the one decided when the feedback was recorded: `idle_days` (days unreferenced
    then), or, in events logged before `idle_days` was, the amount `before - decayed` it took
    off; replayed on another value, it takes off what `decayed` would (floor included)."""
    idle = event.get("idle_days")
    if isinstance(idle, int) and not isinstance(idle, bool):
        value = decayed(value, idle, params)
    else:
        before, faded = event.get("before"), event.get("decayed")
        if _number(before) and _number(faded) and faded < before:
            value = round(max(min(params.floor, value), value - (before - faded)), STORED_DIGITS)
    return ewa(value, SIGNALS[event["event"]], params.alpha)


def replay_feedback(events: Iterable[dict[str, Any]], params: ConfidenceSettings) -> dict[str, float]:
    """Each card's confidence as its logged feedback gives it (`replay_key` -> value), for the
    cards with feedback since their last fresh start. See the module docstring; the value before
    the first feedback is that event's `before` (what the card held then: the initial value, a
    person's own, or what promote set), so no setting read today changes the past."""
    by_card: dict[str, list[dict[str, Any]]] = {}
    undone: set[str] = set()
    for event in events:
        if is_replayed(event):
            key = replay_key(event)
            if key is not None:
                by_card.setdefault(key, []).append(event)
        elif event.get("event") == "undone" and isinstance(event.get("undoes"), str):
            undone.add(event["undoes"])
    out: dict[str, float] = {}
    for key, mine in by_card.items():
        value: float | None = None
        alive = False   # promoted by an event not undone: the card lives
        for event in sorted(mine, key=replay_order):
            if event["event"] in RESTART_EVENTS:
                if alive:
                    # Trigger: a promotion of a card that lives already. Why: one Inbox candidate
                    # promoted in two clones, merged by git (it keeps the candidate's id: one card,
                    # or two files settling gives one of them); restarting there dropped the feedback
                    # the earlier clone gave before the later promotion. Outcome: it goes on.
                    continue
                value = None
                alive = event.get("eid") not in undone
                continue
            if value is None:
                before = event.get("before")
                value = min(1.0, max(0.0, float(before))) if _number(before) else params.initial
            value = replay_step(value, event, params)
        if value is not None:
            out[key] = value
    return out


def replayed_for(card: Card, replayed: dict[str, float]) -> float | None:
    """The replayed confidence of `card` (by its id, else by its path), None when the log gives none."""
    for key in _keys(card.id, card.rel):
        if key in replayed:
            return replayed[key]
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
