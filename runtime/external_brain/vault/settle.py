"""Settling a vault after a git merge: the cards made to agree with the merged log again.

Clones that share a vault through git merge each other's events into `logs/events.jsonl` (a
union merge) and their cards through `brain merge-driver` (vault/merge.py), which cannot read the
log: git merges files in an order of its own. What the merge leaves for afterwards, `plan_settle`
plans as one logged operation (`settled`, undoable):
- every card's `confidence` made equal to the replay of the merged log (`confidence.replay_feedback`),
  so feedback given in every clone counts, in one order whatever the merge order;
- a card the driver kept inside another (two different cards that had one file name) moved to a
  file of its own (`unique_path`, the same name in every clone with the same files);
- links and `related` wikilinks to a card another clone deleted removed, as `delete` removes
  them in its own clone (its cascade);
- an Inbox candidate whose card another clone promoted (the id is in Playbooks/ now; a clone that
  missed the same query or learned the same title made the same candidate) removed, as `promote`
  removes it (kept in `.brain/deleted/`).
- a card that git carried into another card's copy in `.brain/deleted/` (one clone removed a file
  that the other's merge had put a second card in, or a `git pull --rebase` replayed a delete
  onto a file that holds another clone's card now) put back where the removed card was: a copy
  `.brain/deleted/<folder>/<id>.md` keeps only the card `<id>`; any other card in it that no
  file holds and that was not removed in its own right (no copy of its own) was removed by no
  one (`_misplaced_in_copies`).
- a copy in `.brain/deleted/` pruned once its removal is older than KEEP_DELETED_DAYS, when
  its card was made with a random id (`create`, `learn`): every clone has merged the removal by
  then, the removed text stays in the removal's event (for `undo`) and in git's history. A copy
  of a card whose id is derived (`derived_id`, `stable_id`: a hand-written note, a candidate) is
  kept: its file is what stops that id from being given again (`_prunable_copies`).
- two active cards of one type that supersede the same card (each clone stated a new value of one
  subject, a `fact` or `state`, and each superseded the card it saw) chained as if the statements had
  come in one clone, in the order they hold (`valid_from`, else `created`, then id): the earlier is
  superseded by the later, which supersedes it, and the old card names the first as its successor
  (`_forked_supersessions`). Otherwise both would stay current truths of one subject.
- a wikilink (in a body or a property) to the name a card had before another clone renamed it
  (`update --title`, which relinked only its own clone's links) pointed at the card's file now,
  as the rename would have (`_renamed_elsewhere`); a name a card answers to now is left alone.
- one Inbox candidate promoted under two titles in two clones (two files with the candidate's one
  id, side by side after the merge): the first promoted keeps the id; the other gets an id of its
  own and is superseded by it (`_promoted_twice`).
- text another clone added to a card while this one merged it into another (`merge KEEP OTHER`
  here, `update OTHER --append` there: git keeps the addition in OTHER, superseded now, where search
  no longer looks) carried into KEEP, at the end of its `## Merged from: <title>` section
  (`_carried_after_merges`). Carried once: the event names the updates it carried, and text a
  person later removes from KEEP is not carried again.
A card with unresolved conflict markers is left alone until a person resolves it.

When: `journal.writing` runs it before a write when the log changed since this clone last
settled by more than reads append (`settle_due`: a merge, a pull, a checkout); `doctor --fix` and
`reindex` run it always. Reads never do (docs/card-format.md): between a merge and the next write, reads show
the cards as merged, and `doctor` names each card that disagrees with the log.
The mark of what was settled lives in `.brain/cache/settled.json` (per clone, disposable: without
it the next write settles, which finds nothing to do on a vault that agrees).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any

from ..errors import BrainError
from .valueclass import factory, valueclass
from .storage import Card, Vault, atomic_write, read_from

MARK = "settled.json"
MARK_BYTES = 128   # its JSON padded to this many bytes (`mark_settled`)
_TAIL = 256   # bytes before the mark whose checksum tells the log still begins as it did
# An event other than a read's `referenced`: reads append those without the write lock, and they
# change no card; anything else appended since the mark came from elsewhere (a merge).
# How long a removed card's copy stays in `.brain/deleted/` (see the module docstring):
# longer than any clone of a team goes without merging.
KEEP_DELETED_DAYS = 90
_FOREIGN_EVENT = re.compile(rb'"event"\s*:\s*"(?!referenced")')


@valueclass
class SettlePlan:
    """What settling would change: each file as (path, text before or None, text after), and for
    the event and the report: confidences re-derived (path -> [stored, replayed]), cards moved
    out of another, cards whose links to deleted cards went, and cards left alone (conflicts)."""

    changes: list[tuple[Path, str | None, str | None]] = factory(list)
    confidence: dict[str, list[float | None]] = factory(dict)
    split: list[str] = factory(list)
    unlinked: list[str] = factory(list)
    promoted: list[str] = factory(list)
    restored: list[str] = factory(list)
    pruned: list[str] = factory(list)
    skipped: list[str] = factory(list)
    resuperseded: list[str] = factory(list)
    relinked: list[str] = factory(list)
    promoted_twice: list[str] = factory(list)
    carried: list[str] = factory(list)
    carried_updates: list[str] = factory(list)   # the eids of the updates whose text was carried

    def summary(self) -> str:
        # (the cards a change was made to, what was done to "{n}" of them, whether their paths are named)
        done = (
            (self.confidence, "re-derived the confidence of {n} card(s) from the log", False),
            (self.split, "moved {n} merged card(s) to files of their own", True),
            (self.unlinked, "removed links to deleted cards from {n} card(s)", False),
            (self.promoted, "removed {n} Inbox candidate(s) promoted in another clone", True),
            (self.restored, "put back {n} card(s) a merge had carried into a deleted card's copy", True),
            (self.pruned, f"pruned {{n}} copy(ies) of cards deleted over {KEEP_DELETED_DAYS} days ago from .brain/deleted",
             False),
            (self.resuperseded, "chained {n} card(s) that superseded one card in two clones", True),
            (self.relinked, "relinked {n} card(s) to cards renamed in another clone", True),
            (self.promoted_twice, "gave {n} card(s) promoted again under another title in another clone an id of "
             "their own, superseded by the first", True),
            (self.carried, "carried into {n} card(s) what another clone added to a card merged into them", True),
            (self.skipped, "left {n} card(s) with merge conflicts alone", True),
        )
        return "; ".join(what.format(n=len(cards)) + (f" ({', '.join(cards)})" if named else "")
                         for cards, what, named in done if cards)


# ---------------------------------------------------------------------------- when

def _log_state(vault: Vault) -> dict[str, int] | None:
    """The log's inode, size and a checksum of its last bytes; None when there is no log."""
    try:
        fd = os.open(vault.log_path, os.O_RDONLY | os.O_CLOEXEC)   # not `open`: fewer system calls, under the lock
    except FileNotFoundError:
        return None
    try:
        st = os.fstat(fd)
        tail = os.pread(fd, _TAIL, max(0, st.st_size - _TAIL))
    finally:
        os.close(fd)
    return {"ino": st.st_ino, "size": st.st_size, "tail": zlib.crc32(tail)}


def settle_due(vault: Vault) -> bool:
    """Whether the log changed since this clone last settled by more than reads append: replaced
    or cut (a merge, pull or checkout writes a new file), or grown by events no writer of this
    clone logged. Without a mark (a fresh clone, a deleted cache) it is due."""
    # Both files read with the system's own calls (`read_from`), not `open`: this runs under
    # the write lock before every write.
    try:
        mark = json.loads(read_from(vault.cache_dir / MARK)[1].decode("utf-8"))
        ino, size, tail = mark["ino"], mark["size"], mark["tail"]
    except (OSError, ValueError, KeyError, TypeError):
        return True
    try:
        start = max(0, size - _TAIL) if isinstance(size, int) and size >= 0 else 0
        st, data = read_from(vault.log_path, start)
    except FileNotFoundError:
        return size != 0
    if st.st_ino != ino or st.st_size < size:
        return True
    if zlib.crc32(data[:size - start]) != tail:
        return True
    return bool(_FOREIGN_EVENT.search(data[size - start:]))


def mark_settled(vault: Vault) -> None:
    """Note that the cards agree with the log as it is now (best effort: a cache that cannot be
    written only makes the next write settle again).

    Written in place, not renamed over: every write does this under the write lock, where no one
    reads it half written, and a rename costs ~1 ms (ext4 flushes a file renamed over another).
    Nor truncated: ext4 also flushes a file cut to nothing and written again when it is closed
    (~5 ms a write, under the lock); the JSON is written over the old one from its start, padded
    with spaces (which JSON ignores) to at least the old length, so no byte of the old mark is
    left after it. A write killed half way leaves a mark that does not parse, which only makes
    the next write settle (and find nothing to do)."""
    state = _log_state(vault) or {"ino": 0, "size": 0, "tail": 0}
    try:
        fd = os.open(vault.cache_dir / MARK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            data = json.dumps(state).encode("utf-8")
            os.pwrite(fd, data.ljust(max(MARK_BYTES, os.fstat(fd).st_size)), 0)
        finally:
            os.close(fd)
    except FileNotFoundError:
        try:
            atomic_write(vault.cache_dir / MARK, json.dumps(state), durable=False)   # makes the folder
        except OSError:
            pass
    except OSError:
        pass


# ---------------------------------------------------------------------------- what

def plan_settle(vault: Vault) -> SettlePlan:
    """What the cards need to agree with the log (see the module docstring); writes nothing.
    The caller holds the write lock and commits the changes as one operation."""
    # Imported here: every write checks `settle_due`, few settle.
    from .confidence import replay_feedback
    from .events import read_events
    from .merge import conflict_lines, split_guests
    from .frontmatter import update
    from .storage import CARD_FOLDERS, card_from_text, load_cards, unique_path

    plan = SettlePlan()
    events = list(read_events(vault))
    replayed = replay_feedback(events, vault.settings.confidence)
    cards, _ = load_cards(vault, CARD_FOLDERS)
    taken: set[Path] = set()
    staged: list[tuple[Card, str | None]] = []   # (card as it will be, text on disk before or None: new file)
    for card in cards:
        if conflict_lines(card.text):
            plan.skipped.append(card.rel)
            continue
        primary, guests = split_guests(card.text)
        if not guests:
            staged.append((card, card.text))
            continue
        staged.append((card_from_text(vault, card.path, primary), card.text))
        for guest in guests:
            target = unique_path(card.path.parent, card.path.name, taken)
            taken.add(target)
            staged.append((card_from_text(vault, target, guest), None))
            plan.split.append(vault.rel(target))
    for card, before in _misplaced_in_copies(vault, events, staged, taken, plan):
        staged.append((card, before))
    gone_ids, gone_names = _deleted_elsewhere(events, [card for card, _ in staged])
    in_playbooks = {card.id for card, _ in staged if card.id and card.rel.startswith("Playbooks/")}
    chained = _forked_supersessions([card for card, _ in staged], plan)
    renamed = _renamed_elsewhere(events, [card for card, _ in staged])
    twice = _promoted_twice(vault, events, [card for card, _ in staged], plan)
    carried = _carried_after_merges(vault, events, [card for card, _ in staged], plan)
    for card, before in staged:
        if card.rel.startswith("Inbox/") and card.id in in_playbooks and before is not None:
            plan.changes.append((card.path, before, None))
            plan.promoted.append(card.rel)
            continue
        if card.path in carried:
            card = card_from_text(vault, card.path, carried[card.path])
        card = _relinked(vault, card, renamed, plan)
        if card.path in twice:   # before the confidence is replayed: by its own id now
            card = card_from_text(vault, card.path, update(card.text, twice[card.path], (), source=card.rel))
        changes, remove = _agreeing(card, replayed, gone_ids, gone_names, plan)
        changes.update(chained.get(card.path, {}))
        after = update(card.text, changes, remove, source=card.rel) if (changes or remove) else card.text
        if after != before:
            plan.changes.append((card.path, before, after))
    for copy, text in _prunable_copies(vault, events, {card.id for card, _ in staged if card.id}, plan):
        plan.changes.append((copy, text, None))
        plan.pruned.append(vault.rel(copy))
    return plan


def _forked_supersessions(cards: list[Card], plan: SettlePlan) -> dict[Path, dict[str, Any]]:
    """The frontmatter changes (by file) that turn a fork of supersessions into a chain (see the
    module docstring). Trigger: two clones each superseded one active card (a new value of one
    subject), and the merge kept both new cards, both active and both naming it in `supersedes`.
    Why: a fact or state is one current truth per subject; and every clone must settle to the same
    files, so the order is read from the cards alone. Outcome: the latest stays current."""
    from .storage import parse_time

    def active(card: Card) -> bool:
        status = card.meta.get("status")
        return status in (None, "", "active")

    def start(card: Card) -> str:
        for key in ("valid_from", "created"):
            value = card.meta.get(key)
            if isinstance(value, str) and parse_time(value) is not None:
                return value
        return ""

    def order(card: Card) -> tuple[float, str]:
        moment = parse_time(start(card)) if start(card) else None
        return (moment.timestamp() if moment else float("-inf"), str(card.id))

    forks: dict[tuple[str, str], list[Card]] = {}
    by_id: dict[str, Card] = {}
    for card in cards:
        if not card.rel.startswith("Playbooks/") or not card.id:
            continue
        by_id.setdefault(str(card.id), card)
        old = card.meta.get("supersedes")
        if isinstance(old, str) and old and active(card):
            forks.setdefault((str(card.meta.get("type")), old), []).append(card)
    changes: dict[Path, dict[str, Any]] = {}
    for (_, old_id), forked in sorted(forks.items()):
        if len(forked) < 2:
            continue
        forked.sort(key=order)
        old = by_id.get(old_id)
        if old is not None:
            changes.setdefault(old.path, {})["superseded_by"] = forked[0].id
            if start(forked[0]):
                changes[old.path]["valid_to"] = start(forked[0])
        for earlier, later in zip(forked, forked[1:]):
            mine = changes.setdefault(earlier.path, {})
            mine.update(status="superseded", superseded_by=later.id)
            if start(later):
                mine["valid_to"] = start(later)
            changes.setdefault(later.path, {})["supersedes"] = earlier.id
        plan.resuperseded.extend(card.rel for card in forked[:-1])
    # Only what differs: a clone that already holds the chain changes nothing.
    meta_of = {card.path: card.meta for card in cards}
    return {path: {key: value for key, value in wanted.items() if meta_of[path].get(key) != value}
            for path, wanted in changes.items()}


def _promoted_twice(vault: Vault, events: list[dict[str, Any]], cards: list[Card],
                    plan: SettlePlan) -> dict[Path, dict[str, Any]]:
    """The frontmatter changes (by file) that give each card one candidate's second promotion made
    an id of its own (see the module docstring). Trigger: files in Playbooks/ that hold one id, two
    or more of which the log names as where that id was promoted (followed through renames). Why:
    promote keeps the candidate's id, so that the candidate promoted in two clones is one card; but
    the file name comes from the title, and under two titles git merged two files side by side:
    two cards with one id, whose feedback the log cannot tell apart. A file no promotion names (a
    person's copy) is left to `doctor`. Outcome: the first promoted (by the log's time, then event
    id: the same in every clone) keeps the id and the feedback; each other gets an id derived from
    the shared id and its own path, and is superseded by the first, its text kept where it is."""
    from .storage import stable_id

    by_id: dict[str, list[Card]] = {}
    for card in cards:
        if card.id and card.rel.startswith("Playbooks/"):
            by_id.setdefault(str(card.id), []).append(card)
    shared = {card_id: group for card_id, group in by_id.items() if len(group) > 1}
    if not shared:
        return {}

    promoted_at: dict[str, dict[str, tuple[float, str]]] = {}   # id -> path it is at now -> its promotion
    ordered = sorted((e for e in events if isinstance(e.get("id"), str) and e["id"] in shared
                      and isinstance(e.get("card"), str)), key=_log_order)
    for _, same in itertools.groupby(ordered, key=lambda event: _log_order(event)[0]):
        # Trigger: a promotion and a rename of its card logged within one second (`update --title`
        # right after `promote`: the log's time is to the second). Why: within a second, events
        # were taken in the order of their ids, which is no order, and a rename taken first found
        # no promotion to follow: the renamed card was left out, and the two files kept one id.
        # Outcome: a second's promotions first, then each of its renames once its old path is
        # known (a chain of renames in that second in its own order).
        same = list(same)
        for event in same:
            at = promoted_at.setdefault(event["id"], {})
            if event.get("event") == "promoted" and not isinstance(event.get("renamed_from"), str) \
                    and event["card"] not in at:
                at[event["card"]] = _log_order(event)
        renames = [event for event in same if isinstance(event.get("renamed_from"), str)]
        while renames:
            ready = next((event for event in renames if event["renamed_from"] in promoted_at[event["id"]]), None)
            if ready is None:
                break
            at = promoted_at[ready["id"]]
            at[ready["card"]] = at.pop(ready["renamed_from"])
            renames.remove(ready)
    changes: dict[Path, dict[str, Any]] = {}
    for card_id, group in sorted(shared.items()):
        at = promoted_at.get(card_id, {})
        promoted = sorted((at[card.rel], card.rel, card.path) for card in group if card.rel in at)
        for _, rel, path in promoted[1:]:
            changes[path] = {"id": stable_id(vault, "promoted again", card_id, rel), "status": "superseded",
                             "superseded_by": card_id}
            plan.promoted_twice.append(rel)
    return changes


def _carried_after_merges(vault: Vault, events: list[dict[str, Any]], cards: list[Card],
                          plan: SettlePlan) -> dict[Path, str]:
    """The new text (by file) of each card that another card was merged into while another clone
    added to that other card (see the module docstring). Trigger: a `merged` event (KEEP, OTHER) and
    an `updated` event of OTHER's body that did not see the merge (the text it changed was not
    superseded by KEEP), not carried by an earlier settling; OTHER's body now holds lines that it
    did not hold when it was merged. Why: git merged the two edits of OTHER cleanly, and the
    addition stayed in a superseded card, which search and brief leave out: a lesson written in
    one clone could no longer be found in any. Outcome: the blocks OTHER gained since the merge,
    less those KEEP holds already, go at the end of KEEP's `## Merged from: <title>` section (a new
    section of that name when a person removed it); OTHER keeps its text. Every clone computes the
    same text from the same files and log, so clones that each settle merge again cleanly."""
    import difflib

    from .storage import card_from_text

    # (Every field checked for its type: a hand-edited log line must not stop the writes that settle.)
    done = {eid for event in events if event.get("event") == "settled"
            and isinstance(event.get("carried_updates"), list) for eid in event["carried_updates"] if isinstance(eid, str)}
    updates: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event.get("event") == "updated" and isinstance(event.get("id"), str) and isinstance(event.get("eid"), str) \
                and event["eid"] not in done and isinstance(event.get("changed"), list) and "body" in event["changed"]:
            updates.setdefault(event["id"], []).append(event)
    by_id: dict[str, Card | None] = {}
    for card in cards:
        if card.id and card.rel.startswith("Playbooks/"):   # an id two files hold is left to doctor
            by_id[str(card.id)] = None if str(card.id) in by_id else card
    texts: dict[Path, str] = {}
    merges = [event for event in events if event.get("event") == "merged" and isinstance(event.get("merged"), str)
              and isinstance(event.get("id"), str) and event["merged"] in updates]
    for merge in sorted(merges, key=_log_order):   # the log's lines come in another order in each clone
        keep, other = by_id.get(merge["id"]), by_id.get(merge["merged"])
        merged_before = next((f.get("before") for f in _files(merge) if f.get("path") == merge.get("merged_path")), None)
        if not keep or not other or not isinstance(merged_before, str) or other.meta.get("superseded_by") != keep.id:
            continue
        unseen = [update for update in updates[merge["merged"]] if not _saw_merge(vault, update, other, keep)]
        if not unseen:
            continue
        was = card_from_text(vault, other.path, merged_before)
        keep_text = texts.get(keep.path, keep.text)
        keep_body = card_from_text(vault, keep.path, keep_text).body
        old, new = _content_lines(was), _content_lines(other)
        added = ["\n".join(new[j1:j2]) for tag, _, _, j1, j2
                 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes() if tag in ("insert", "replace")]
        # Each paragraph on its own, as whole lines: text an earlier settling carried sits next to
        # text another clone added since in one changed block (three clones), and a paragraph that
        # is only part of a line of KEEP is not there yet.
        kept_lines = "\n" + keep_body.replace("\r\n", "\n") + "\n"
        blocks = [paragraph for paragraph in _paragraphs(added) if f"\n{paragraph}\n" not in kept_lines]
        plan.carried_updates.extend(update["eid"] for update in unseen)
        if not blocks:
            continue
        texts[keep.path] = _added_to_section(keep_text, keep_body, f"## Merged from: {was.title}", blocks)
        plan.carried.append(keep.rel)
    return texts


def _paragraphs(blocks: list[str]) -> list[str]:
    """The paragraphs (runs of lines between blank lines) of `blocks`, each stripped of the blank
    lines around it, in order."""
    return [paragraph.strip("\n") for block in blocks for paragraph in re.split(r"\n[ \t]*\n", block)
            if paragraph.strip()]


def _log_order(event: dict[str, Any]) -> tuple[float, str]:
    """An event's place in the log's one order, the same in every clone: its time, then its id."""
    from .storage import parse_time

    moment = parse_time(event["ts"]) if isinstance(event.get("ts"), str) else None
    return (moment.timestamp() if moment else float("-inf"), str(event.get("eid", "")))


def _saw_merge(vault: Vault, update: dict[str, Any], other: Card, keep: Card) -> bool:
    """Whether an update of `other` was made after it was merged into `keep`: the text it changed
    was superseded by `keep` already."""
    from .storage import card_from_text

    before = next((f.get("before") for f in _files(update)), None)
    return not isinstance(before, str) or card_from_text(vault, other.path, before).meta.get("superseded_by") == keep.id


def _files(event: dict[str, Any]) -> list[dict[str, Any]]:
    """The files an event names for `undo` (`journal.undo_files`), each a dict; none when a hand
    edit made the field something else."""
    files = event.get("files")
    return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []


def _content_lines(card: Card) -> list[str]:
    """A card's body as lines, without the first `# ` heading when it repeats the title (the
    heading `create` writes, which a rename rewrites: not text to carry)."""
    lines = card.body.replace("\r\n", "\n").strip("\n").split("\n")
    if lines and lines[0].startswith("# ") and lines[0][2:].strip() == str(card.title or "").strip():
        return lines[1:]
    return lines


def _added_to_section(text: str, body: str, heading: str, blocks: list[str]) -> str:
    """`text` (whose body is `body`) with `blocks` added at the end of the section under `heading`
    (before the next heading of its level or above), or under a new such heading at the end."""
    newline = "\r\n" if "\r\n" in text[:400] else "\n"
    prefix = text[:len(text) - len(body)]
    lines = body.replace("\r\n", "\n").split("\n")
    addition = "\n\n".join(blocks).split("\n")
    start = next((n for n, line in enumerate(lines) if line.rstrip() == heading), None)
    if start is None:
        head, tail = lines, []
        addition = [heading, "", *addition]
    else:
        end = next((n for n in range(start + 1, len(lines)) if re.match(r"#{1,2} ", lines[n])), len(lines))
        head, tail = lines[:end], lines[end:]
    while head and not head[-1].strip():
        head.pop()
    joined = [*head, "", *addition, *([""] + tail if tail else [""])]
    return prefix + newline.join(joined)


def _renamed_elsewhere(events: list[dict[str, Any]], cards: list[Card]) -> dict[str, str]:
    """Old wikilink name -> the file stem its card has now, for every card renamed (`renamed_from`
    in the log) whose old name no card answers to any more. Trigger: a rename relinks the links of
    its own clone only; another clone may have linked the old name meanwhile (`link`, a body).
    Why: the link was made to that card, which the log names by id. Outcome: see `_relinked`."""
    from .confidence import replay_order
    from .wikilinks import card_names, link_name

    live = {str(card.id): card for card in cards if card.id and card.rel.startswith("Playbooks/")}
    answered = {name for card in cards for name in (*card_names(card), *map(link_name, card.aliases))}
    old_names: dict[str, str] = {}
    for event in sorted(events, key=replay_order):
        old = event.get("renamed_from")
        if isinstance(old, str) and event.get("id"):
            old_names[link_name(Path(old).stem)] = str(event["id"])
    return {name: live[card_id].path.stem for name, card_id in sorted(old_names.items())
            if card_id in live and name not in answered}


def _relinked(vault: Vault, card: Card, renamed: dict[str, str], plan: SettlePlan) -> Card:
    """`card` with its wikilinks to old names of renamed cards pointing at their files now."""
    if not renamed or "[[" not in card.text:
        return card
    from .markdown import relinked_card_text
    from .storage import card_from_text

    by_stem: dict[str, set[str]] = {}
    for name, stem in renamed.items():
        by_stem.setdefault(stem, set()).add(name)
    text = card.text
    for stem, names in sorted(by_stem.items()):
        text = relinked_card_text(card_from_text(vault, card.path, text), names, stem)
    if text == card.text:
        return card
    plan.relinked.append(card.rel)
    return card_from_text(vault, card.path, text)


def _prunable_copies(vault: Vault, events: list[dict[str, Any]], live: set[str],
                     plan: SettlePlan) -> list[tuple[Path, str]]:
    """The copies in `.brain/deleted/` to prune now, with their texts (see the module docstring).

    Trigger: a copy whose removal (the event whose `kept_in` names it; the latest, when a path
    was used again) is older than KEEP_DELETED_DAYS. Why: every removal adds a file for good,
    and the copy's work (letting git follow a concurrent edit as a rename) is done once every
    clone has merged the removal. Outcome: removed, in the `settled` operation (undoable), unless
    its card has a derived id (a version 8 UUID: the file keeps that id from being given again),
    a file holds its id again, it holds conflict markers or this settle rewrote it."""
    from datetime import timedelta

    from .merge import conflict_lines
    from .storage import DELETED, now, parse_time

    root = vault.root / DELETED
    if not root.is_dir():
        return []
    removed_at: dict[str, Any] = {}
    for event in events:
        if isinstance(event.get("kept_in"), dict):
            moment = parse_time(event.get("ts"))
            for copy in event["kept_in"].values():
                if moment is not None and isinstance(copy, str):
                    removed_at[copy] = max(moment, removed_at.get(copy, moment))
    cutoff = now() - timedelta(days=KEEP_DELETED_DAYS)
    touched = {path for path, _, _ in plan.changes}
    out = []
    for rel, moment in sorted(removed_at.items()):
        copy = vault.root / rel
        card_id = re.sub(r"_\d+$", "", copy.stem)
        if (moment >= cutoff or copy in touched or card_id in live or not rel.startswith(DELETED + "/")
                or re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", card_id)):
            continue
        try:
            text = copy.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue   # gone already (another clone pruned it), or not ours to judge
        if not conflict_lines(text):
            out.append((copy, text))
    return out


def _misplaced_in_copies(vault: Vault, events: list[dict[str, Any]], staged: list[tuple[Card, str | None]],
                         taken: set[Path], plan: SettlePlan) -> list[tuple[Card, str | None]]:
    """The cards to put back from `.brain/deleted/` (see the module docstring), each with None
    (a new file); the copies that held them are rewritten to their own card in `plan.changes`.

    Trigger: a copy that holds a card other than the one it is named for. Why: a removal is a
    rename for git (journal.py), and git carries the other side's changes of the file along:
    another card a merge kept inside it (a guest), or, replayed by a rebase onto a file that
    holds another clone's card at that path, the whole file. Nobody removed that card.
    Outcome: it gets a file of its own again, at the removed card's name (from the event that
    kept the copy) when that is free; the copy keeps its own card only."""
    from . import frontmatter
    from .merge import conflict_lines, split_guests
    from .storage import CARD_FOLDERS, DELETED, card_filename, card_from_text, private_to, unique_path

    root = vault.root / DELETED
    if not root.is_dir():
        return []
    live = {card.id for card, _ in staged if card.id}
    kept_from = {}   # copy's rel path -> the removed card's rel path
    for event in events:
        if isinstance(event.get("kept_in"), dict):
            for removed, copy in event["kept_in"].items():
                if isinstance(removed, str) and isinstance(copy, str):
                    kept_from[copy] = removed
    out: list[tuple[Card, str | None]] = []
    for folder in CARD_FOLDERS:
        copies = sorted((root / folder).glob("*.md")) if (root / folder).is_dir() else []
        own_copies = {re.sub(r"_\d+$", "", copy.stem) for copy in copies}
        for copy in copies:
            try:
                text = copy.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if conflict_lines(text):
                continue
            primary, guests = split_guests(text)
            named = re.sub(r"_\d+$", "", copy.stem)
            own, strays = None, []
            for whole in (primary, *guests):
                try:
                    value = frontmatter.parse(whole).data.get("id")
                except BrainError:   # a person's broken text: left as it is
                    value = None
                card_id = str(value) if isinstance(value, (str, int)) and value != "" else None
                if card_id == named and own is None:
                    own = whole
                elif card_id and card_id not in live and card_id not in own_copies:
                    strays.append((card_id, whole))
            if own is None or not strays:
                continue
            plan.changes.append((copy, text, own))
            removed = kept_from.get(vault.rel(copy))
            for card_id, whole in strays:
                try:
                    meta = frontmatter.parse(whole).data
                except BrainError:
                    continue
                if removed and Path(removed).parent.name == folder:
                    name = Path(removed).name
                elif meta.get("type") and meta.get("title"):
                    name = card_filename(str(meta["type"]), str(meta["title"]),
                                         private_to(str(meta.get("scope") or ""), str(meta.get("agent") or "")))
                else:
                    name = f"{card_id}.md"
                target = unique_path(vault.root / folder, name, taken)
                taken.add(target)
                live.add(card_id)
                out.append((card_from_text(vault, target, whole if whole.endswith("\n") else whole + "\n"), None))
                plan.restored.append(vault.rel(target))
    return out


def _deleted_elsewhere(events: list[dict[str, Any]], cards: list[Card]) -> tuple[set[str], set[str]]:
    """The ids of cards the log says were deleted and no card holds now, and the wikilink names
    (file stem, title) that were theirs and name no card now."""
    from .wikilinks import link_name

    ids = {card.id for card in cards if card.id}
    names = {name for card in cards for name in (link_name(card.path.stem), link_name(card.title))}
    gone_ids, gone_names = set(), set()
    for event in events:
        if event.get("event") != "deleted" or not isinstance(event.get("id"), str) or event["id"] in ids:
            continue
        gone_ids.add(event["id"])
        for name in (event.get("card"), event.get("title")):
            if isinstance(name, str) and link_name(name) not in names:
                gone_names.add(link_name(name))
    return gone_ids, gone_names


def _agreeing(card: Card, replayed: dict[str, float], gone_ids: set[str], gone_names: set[str],
              plan: SettlePlan) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The frontmatter changes that make `card` agree with the log."""
    from .confidence import replayed_for
    from .wikilinks import wikilink_target

    changes: dict[str, Any] = {}
    remove: list[str] = []
    want = replayed_for(card, replayed)
    have = card.meta.get("confidence")
    numeric = isinstance(have, (int, float)) and not isinstance(have, bool)
    # A `confidence` that is not a number is a person's own value (`high`): never overwritten here.
    if want is not None and (numeric or have is None) and (have is None or abs(float(have) - want) > 1e-9):
        changes["confidence"] = want
        plan.confidence[card.rel] = [float(have) if numeric else None, want]
    links, related = card.meta.get("links"), card.meta.get("related")
    dropped = False
    if gone_ids and isinstance(links, list):
        kept = [e for e in links if not (isinstance(e, dict) and str(e.get("to")) in gone_ids)]
        if len(kept) != len(links):
            dropped = True
            if kept:
                changes["links"] = kept
            else:
                remove.append("links")
    if gone_names and isinstance(related, list):
        kept_related = [e for e in related if wikilink_target(e) not in gone_names]
        if len(kept_related) != len(related):
            dropped = True
            if kept_related:
                changes["related"] = kept_related
            else:
                remove.append("related")
    if dropped:
        plan.unlinked.append(card.rel)
    return changes, tuple(remove)
