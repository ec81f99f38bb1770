"""Merging two clones' versions of one card file, for git's merge driver (`brain merge-driver`).

Given the common ancestor (empty when both clones added the file), ours and theirs, `merge_files`
returns the merged text and how many real conflicts it left. What it promises:
- The frontmatter is merged key by key, never as lines: a key one side changed takes that
  side's value; derived keys are recomputed (`updated` the later moment, `created`, `promoted`
  and `first_seen` the earlier, `last_seen` the later, counters such as `misses` and
  `evidence_count` add up both sides' increments); lists of plain values (`tags`, `aliases`,
  `related`, a person's own lists) are merged as sets, three-way (an item one side removed goes,
  an item either side added comes); `links` per (target, rel), the entry with the higher
  `version`, then the later `updated`, winning. A key both sides changed to different values
  takes the value of the side whose card was updated later. `confidence` that both sides moved
  is provisional (the lower of the two): the log holds both sides' feedback, and the next write,
  `reindex` or `doctor --fix` replays it (vault/settle.py).
- Only the keys whose merged value differs from ours are rewritten in our text
  (`frontmatter.update`), so a person's formatting survives.
- The body is merged as git merges text (`git merge-file`): changes to different lines both
  land; where both sides only inserted lines at the same place, both insertions are kept, in an
  order that does not depend on which side merges which; where both changed the same lines of a
  card in Playbooks/ that is a real conflict, marked in the body only, so the frontmatter still
  parses and `doctor` names the card. In Inbox/ (candidates the tool writes) both sides' lines
  are kept instead.
- Two different cards at one path (two clones created the same title; their ids differ): both
  survive. The one created first keeps the path; the other is kept whole inside it, in a block
  (`with_guest`) that the next write moves to a file of its own (vault/settle.py). Inbox
  candidates at one path (the same search miss, the same learned title) are one candidate.
- A working-memory note (when a vault tracks them) is taken whole from the side that wrote it last.
- A side that cannot be parsed (a person's broken YAML) gets git's plain text merge: never a guess.
- Both merge orders give the same text whenever ours and theirs are formatted alike.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ..errors import BrainError
from . import frontmatter
from .storage import parse_time

# Keys only a candidate has: `promote` removes them (intake/inbox.py), and a merge that
# meets the promoted card keeps them removed.
CANDIDATE_KEYS = ("query", "query_key", "misses", "first_seen", "last_seen", "evidence_count", "filters",
                  "closed", "closed_reason", "merged_into", "promoted_to")
LATEST_KEYS = ("updated", "last_seen", "expires")
EARLIEST_KEYS = ("created", "promoted", "first_seen")
COUNTER_KEYS = ("misses", "evidence_count")
SET_LIST_KEYS = ("tags", "aliases", "related")

GUEST_INFO = "brain-merged-card"
_GUEST_OPEN = re.compile(r"^(~{3,}) " + GUEST_INFO + r"\n", re.MULTILINE)
_GUEST_NOTE = ("<!-- brain: another card with this file name arrived in a git merge; it is kept whole below, "
               "and the next brain write moves it to a file of its own -->\n")


class Merged:
    """The merged text, the number of real conflicts left in it, and notes for the person."""

    def __init__(self, text: str, conflicts: int = 0, notes: list[str] | None = None) -> None:
        self.text = text
        self.conflicts = conflicts
        self.notes = notes or []


class _Side:
    """One side's card: its whole text, frontmatter and body (guests taken out)."""

    def __init__(self, text: str) -> None:
        self.text, self.guests = split_guests(text)
        doc = frontmatter.parse(self.text)
        self.meta: dict[str, Any] = doc.data
        self.body = doc.body
        self.head = self.text[:len(self.text) - len(doc.body)]

    @property
    def id(self) -> str | None:
        value = self.meta.get("id")
        return str(value) if value not in (None, "") and not isinstance(value, (list, dict)) else None


# ---------------------------------------------------------------------------- entry point

def merge_files(base: str, ours: str, theirs: str, folder: str) -> Merged:
    """Merge one file of the card folder `folder` (`Playbooks`, `Inbox`, `WorkingMemory`): see
    the module docstring. `base` is "" when both sides added the file."""
    if ours == theirs or theirs == base:
        return Merged(ours)
    if ours == base:
        return Merged(theirs)
    try:
        sides = [_Side(text) if text else None for text in (base, ours, theirs)]
    except BrainError:
        # Trigger: a side whose frontmatter does not parse (a person's broken YAML, old
        # conflict markers). Why: merging keys we cannot read would be a guess. Outcome: git's
        # own text merge, conflicts marked as git marks them.
        merged, conflicts = merge_text(base, ours, theirs, union=False)
        return Merged(merged, conflicts)
    o, a, b = sides
    if a is None or b is None:  # pragma: no cover - git never hands an empty side to a driver
        return Merged(ours or theirs)
    if folder == "WorkingMemory":
        return Merged(a.text if _newer_side(a, b) else b.text)
    return _merge_cards(o, a, b, folder)


def _merge_cards(o: _Side | None, a: _Side, b: _Side, folder: str) -> Merged:
    notes: list[str] = []
    guests = _merged_guests(o, a, b, folder)
    if not _same_card(o, a, b, folder):
        # Two different cards at one path: the one created first keeps it (the same one
        # whichever side merges), the other is kept whole as a guest.
        first, second = (a, b) if _created_first(a, b, o) else (b, a)
        guests.append(second.text)
        notes.append(f"two different cards had this file name; card {second.id or '(no id)'} is kept inside "
                     "it and the next brain write moves it to a file of its own")
        text = first.text
        conflicts = 0
    else:
        text, conflicts = _merge_one(o, a, b, folder)
    guests = sorted(dict.fromkeys(guests))
    for guest in guests:
        text = with_guest(text, guest)
    return Merged(text, conflicts, notes)


def _same_card(o: _Side | None, a: _Side, b: _Side, folder: str) -> bool:
    """Whether ours and theirs are one card: the same id, or no id on one side (a note that
    only one clone has written to yet), or, in the Inbox, the same candidate (the same missed
    query; a learned candidate is its file name)."""
    if a.id is None or b.id is None or a.id == b.id:
        return True
    if folder == "Inbox":
        key_a, key_b = a.meta.get("query_key"), b.meta.get("query_key")
        return key_a == key_b
    # Both sides gave the note an id of their own (a person edited it before its first write
    # in one clone): still one note when it was one in the ancestor.
    return o is not None and o.id is None


def _created_first(a: _Side, b: _Side, o: _Side | None) -> bool:
    """Whether ours is the card that keeps the path: the one that continues the ancestor's
    card, else the one created first (then the smaller id), whichever side merges."""
    if o is not None and o.id is not None and (a.id == o.id) != (b.id == o.id):
        return a.id == o.id
    return _moment_key(a.meta.get("created"), a.id) <= _moment_key(b.meta.get("created"), b.id)


def _moment_key(value: Any, tie: Any) -> tuple[float, str]:
    moment = parse_time(value) if value is not None else None
    return (moment.timestamp() if moment else float("inf"), str(tie or ""))


# ---------------------------------------------------------------------------- one card

def _merge_one(o: _Side | None, a: _Side, b: _Side, folder: str) -> tuple[str, int]:
    base_meta = o.meta if o is not None else _agreed(a.meta, b.meta)
    newer_b = not _newer_side(a, b)
    merged: dict[str, Any] = {}
    for key in list(dict.fromkeys([*a.meta, *b.meta, *base_meta])):
        value = merge_value(key, base_meta.get(key, _MISSING), a.meta.get(key, _MISSING),
                            b.meta.get(key, _MISSING), newer_b, folder)
        if value is not _MISSING:
            merged[key] = value
    # Trigger: both sides added the file and theirs holds every key of ours and more (the
    # same search miss in two clones, promoted in one: its record has `closed`, `promoted_to`).
    # Why: from ours, theirs' keys would be added at the end, sorted, while from theirs nothing
    # moves, so the two merge orders differed. Outcome: theirs' text is the one changed.
    template = b if o is None and set(a.meta) < set(b.meta) and set(merged) <= set(b.meta) else a
    changes = {key: value for key, value in merged.items()
               if key not in template.meta or not _same(template.meta[key], value)}
    removed = tuple(key for key in template.meta if key not in merged)
    head_text = frontmatter.update(template.head, changes, removed) if (changes or removed) else template.head
    new_a = [key for key in a.meta if key not in base_meta and key in merged]
    new_b = [key for key in b.meta if key not in base_meta and key in merged and key not in a.meta]
    if new_a and new_b and template is a:
        # Trigger: both sides added keys. Why: each side's own would stand first, so the two merge
        # orders would differ. Outcome: every added key at the end, in sorted order.
        added = sorted([*new_a, *new_b])
        head_text = frontmatter.update(frontmatter.update(head_text, {}, added), {key: merged[key] for key in added})
    if o is not None:
        base_body = o.body
    else:
        base_body = _common_lines(a.body, b.body)
    body, conflicts = _merge_body(base_body, a.body, b.body, union=folder != "Playbooks")
    return head_text + body, conflicts


def _agreed(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A stand-in ancestor for two sides that both added the file: what they agree on (but no
    count: each side counted its own sightings from none)."""
    return {key: value for key, value in a.items() if key in b and _same(value, b[key]) and key not in COUNTER_KEYS}


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


_MISSING: Any = _Missing()


def merge_value(key: str, o: Any, a: Any, b: Any, newer_b: bool, folder: str) -> Any:
    """The merged value of frontmatter `key` (`_MISSING`: the key goes), from the ancestor's,
    ours and theirs (`_MISSING` where a side has no such key); `newer_b`: theirs was updated
    later. See the module docstring for the rules."""
    if folder == "Playbooks" and key in CANDIDATE_KEYS and (a is _MISSING or b is _MISSING):
        return _MISSING   # promoted on one side: the candidate's keys stay gone
    if key in COUNTER_KEYS and _counts(a, b, o):
        # Sightings add up, equal or not: each side counted its own (a miss in each clone is two).
        start = o if _count(o) else 0
        return start + (a - start) + (b - start)
    if _same(a, b):
        return a
    if _same(a, o):
        return b
    if _same(b, o):
        return a
    # Both sides changed the key, differently.
    if key in LATEST_KEYS or key in EARLIEST_KEYS:
        moments = [(parse_time(v), v) for v in (a, b) if v is not _MISSING and parse_time(v) is not None]
        if len(moments) == 2:
            pick = max if key in LATEST_KEYS else min
            return pick(moments, key=lambda m: (m[0].timestamp(), str(m[1])))[1]
    if key == "confidence" and _number(a) and _number(b):
        return min(a, b)  # provisional: the replay of the merged log decides (vault/settle.py)
    if key == "links" and _mappings(a) and _mappings(b) and (o is _MISSING or _mappings(o)):
        return _merge_links(o if o is not _MISSING else [], a, b)
    if (key in SET_LIST_KEYS or (_scalars(a) and _scalars(b))) and all(
            v is _MISSING or _scalars(v) for v in (o, a, b)):
        items = _merge_sets(*(v if v is not _MISSING else [] for v in (o, a, b)))
        # A side that dropped the key and left nothing the other side added: the key goes.
        return _MISSING if not items and (a is _MISSING or b is _MISSING) else items
    return b if newer_b else a


def _merge_sets(o: list, a: list, b: list) -> list:
    """Three-way set merge of two lists of plain values that both sides changed: the ancestor's
    items that neither side removed, in its order, then every item either side added, sorted
    (so any order of merging gives the same list)."""
    kept = [item for item in o if _contains(a, item) and _contains(b, item)]
    added: list = []
    for item in [*a, *b]:
        if not _contains(o, item) and not _contains(added, item):
            added.append(item)
    return kept + sorted(added, key=_sort_key)


def _sort_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True, default=str)


def _merge_links(o: list, a: list, b: list) -> list:
    """`links` merged per (to, rel): an entry both sides hold takes the higher `version`, then the
    later `updated`; one side removed an entry the other did not touch: it goes; one side
    removed an entry the other changed: the change stays."""
    def keyed(entries: list) -> dict[tuple[str, str], dict]:
        return {(str(e.get("to")), str(e.get("rel", "related"))): e for e in entries}

    base, ours, theirs = keyed(o), keyed(a), keyed(b)
    out = []
    # The ancestor's entries in its order, then new ones sorted: any order of merging agrees.
    for key in [*(k for k in base if k in ours or k in theirs), *sorted(k for k in {**ours, **theirs} if k not in base)]:
        eo, ea, eb = base.get(key), ours.get(key), theirs.get(key)
        if ea is not None and eb is not None:
            out.append(ea if _same(ea, eb) or _link_rank(ea) >= _link_rank(eb) else eb)
        elif ea is not None:
            if eo is None or not _same(ea, eo):
                out.append(ea)   # new on our side, or changed there while theirs removed it
        elif eb is not None:
            if eo is None or not _same(eb, eo):
                out.append(eb)
    return out


def _link_rank(entry: dict) -> tuple:
    version = entry.get("version")
    moment = parse_time(entry.get("updated")) if entry.get("updated") is not None else None
    return (version if isinstance(version, int) and not isinstance(version, bool) else 0,
            moment.timestamp() if moment else 0.0, json.dumps(entry, sort_keys=True, default=str))


def _newer_side(a: _Side, b: _Side) -> bool:
    """Whether ours was written last (its `updated` is the later moment; ties go to the greater
    text, so both merge orders agree)."""
    ka = _moment_key(a.meta.get("updated"), None)
    kb = _moment_key(b.meta.get("updated"), None)
    if ka[0] == float("inf"):
        ka = (float("-inf"), "")
    if kb[0] == float("inf"):
        kb = (float("-inf"), "")
    return (ka[0], a.text) >= (kb[0], b.text)


def _same(x: Any, y: Any) -> bool:
    """Equal values, telling True from 1 and 1 from 1.0 (as `frontmatter.update` does)."""
    if isinstance(x, dict):
        return isinstance(y, dict) and list(x) == list(y) and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return isinstance(y, list) and len(x) == len(y) and all(map(_same, x, y))
    return type(x) is type(y) and x == y


def _contains(items: list, item: Any) -> bool:
    return any(_same(item, other) for other in items)


def _scalars(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, (str, int, float, bool)) or v is None for v in value)


def _mappings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _counts(a: Any, b: Any, o: Any) -> bool:
    return _count(a) and _count(b) and (o is _MISSING or _count(o))


# ---------------------------------------------------------------------------- bodies

def _merge_body(base: str, ours: str, theirs: str, union: bool) -> tuple[str, int]:
    if ours == theirs or theirs == base:
        return ours, 0
    if ours == base:
        return theirs, 0
    return merge_text(base, ours, theirs, union)


def _common_lines(a: str, b: str) -> str:
    """A stand-in ancestor for two texts added on both sides: the lines they share, in order
    (so each side's own lines read as its insertions)."""
    import difflib

    left, right = a.splitlines(keepends=True), b.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    return "".join(line for block in matcher.get_matching_blocks() for line in left[block.a:block.a + block.size])


def merge_text(base: str, ours: str, theirs: str, union: bool) -> tuple[str, int]:
    """`git merge-file` of three texts: (merged text, real conflicts left). A conflict where
    both sides only inserted lines keeps both insertions (in sorted order, so the result does not
    depend on which side is ours); with `union`, every conflict does."""
    import subprocess
    import tempfile   # only a merge pays their imports

    label = "brain-" + os.urandom(6).hex()
    with tempfile.TemporaryDirectory(prefix="brain-merge-") as folder:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(folder, name)
            with open(path, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            paths.append(path)
        result = subprocess.run(["git", "merge-file", "-p", "--diff3", "-L", f"{label}-ours", "-L", f"{label}-base",
                                 "-L", f"{label}-theirs", *paths], capture_output=True)
    if result.returncode < 0 or result.returncode > 127:
        raise OSError(f"git merge-file failed: {result.stderr.decode('utf-8', 'replace').strip()}")
    merged = result.stdout.decode("utf-8")
    if result.returncode == 0:
        return merged, 0
    return _resolve_hunks(merged, label, union)


def _resolve_hunks(text: str, label: str, union: bool) -> tuple[str, int]:
    """`git merge-file --diff3` output with each conflict hunk resolved where the rules allow."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    conflicts = 0
    i = 0
    opening = f"<<<<<<< {label}-ours"
    while i < len(lines):
        if not lines[i].rstrip("\r\n") == opening:
            out.append(lines[i])
            i += 1
            continue
        parts: dict[str, list[str]] = {"ours": [], "base": [], "theirs": []}
        part = "ours"
        i += 1
        while i < len(lines):
            bare = lines[i].rstrip("\r\n")
            if bare == f"||||||| {label}-base":
                part = "base"
            elif bare == "=======" and part == "base":
                part = "theirs"
            elif bare == f">>>>>>> {label}-theirs":
                i += 1
                break
            else:
                parts[part].append(lines[i])
            i += 1
        if union or not "".join(parts["base"]).strip():
            # Both sides inserted at one place (or a candidate the tool writes): both kept,
            # in sorted order so that A-into-B and B-into-A give the same text.
            for chunk in sorted(("".join(parts["ours"]), "".join(parts["theirs"]))):
                out.append(chunk if chunk.endswith("\n") or not chunk else chunk + "\n")
        else:
            conflicts += 1
            out.append("<<<<<<< ours\n")
            out.extend(parts["ours"])
            out.append("=======\n")
            out.extend(parts["theirs"])
            out.append(">>>>>>> theirs\n")
    return "".join(out), conflicts


_CONFLICT = re.compile(r"^<{7}(?: [^\n]*)?\r?\n(?:.*\n)*?={7}\r?\n(?:.*\n)*?>{7}(?: [^\n]*)?$", re.MULTILINE)


def conflict_lines(text: str) -> list[int]:
    """The 1-based first line of each git conflict left in `text` (`<<<<<<<`, then `=======`,
    then `>>>>>>>`, each a line of its own; a lone `=======` is a Markdown heading underline)."""
    if "<<<<<<<" not in text:
        return []
    return [text.count("\n", 0, m.start()) + 1 for m in _CONFLICT.finditer(text)]


# ---------------------------------------------------------------------------- guests

def with_guest(text: str, guest: str) -> str:
    """`text` with the whole card `guest` kept at its end, in a fence no line of it can close."""
    longest = max((len(run) for run in re.findall(r"~+", guest)), default=0)
    fence = "~" * max(3, longest + 1)
    head = text if text.endswith("\n") else text + "\n"
    body = guest if guest.endswith("\n") else guest + "\n"
    return f"{head}\n{_GUEST_NOTE}{fence} {GUEST_INFO}\n{body}{fence}\n"


def split_guests(text: str) -> tuple[str, list[str]]:
    """(the card without the guests a merge kept in it, the guests' whole texts)."""
    if GUEST_INFO not in text:
        return text, []
    guests: list[str] = []
    while True:
        match = _GUEST_OPEN.search(text)
        if match is None:
            return text, guests
        fence = match.group(1)
        close = text.find(f"\n{fence}\n", match.end() - 1)
        if close < 0:
            return text, guests   # not a block we wrote: left as it is
        guests.append(text[match.end():close + 1])
        start = match.start()
        note_at = text.rfind(_GUEST_NOTE, 0, start)
        if note_at >= 0 and note_at + len(_GUEST_NOTE) == start:
            start = note_at
        if start > 0 and text[start - 1] == "\n" and text[:start - 1].endswith("\n"):
            start -= 1   # the blank line `with_guest` put before the block
        text = text[:start] + text[close + len(fence) + 2:]


def _merged_guests(o: _Side | None, a: _Side, b: _Side, folder: str) -> list[str]:
    """The guests either side holds, one per card: a guest both hold (the same id) merged."""
    by_id: dict[str, list[str]] = {}
    for side in (a, b):
        for guest in side.guests:
            by_id.setdefault(_guest_id(guest), []).append(guest)
    out = []
    base_guests = {_guest_id(g): g for g in (o.guests if o is not None else [])}
    for guest_id, texts in by_id.items():
        if len(texts) == 2 and texts[0] != texts[1]:
            out.append(merge_files(base_guests.get(guest_id, ""), texts[0], texts[1], folder).text)
        else:
            out.append(texts[0])
    return out


def _guest_id(text: str) -> str:
    """A guest's id, or its whole text when it has none (or does not parse)."""
    try:
        return _Side(text).id or text
    except BrainError:
        return text
