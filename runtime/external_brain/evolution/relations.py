"""Typed, weighted, versioned links between cards (docs/card-format.md, Frontmatter keys), stored in the source card.

What it promises:
- A link lives in its source card's frontmatter `links:` (to = the target's id, rel, weight,
  reason, created, updated, version). Linking the same (source, target, rel) again updates
  weight and reason and bumps `version`; the same values again change nothing.
- `related:` holds Obsidian wikilinks `[[Target_Stem]]`, kept in step with `links` on every
  write: an entry for each linked card, plus the wikilinks a person added, which are kept where
  they are and count as `related` links of weight 0.5.
- Reading links (in, out, explore, graph) is `graph`'s. A write made for an agent (`agent=`, the
  MCP and HTTP doors) refuses another agent's private card as if it did not exist; the command
  line (`ANYONE`, the default) may link any card.
- Relation commands address cards in `Playbooks/` (the index holds only those).
- A write with bad input (unknown rel, weight outside 0..1, a self-link) changes nothing.
- A private card's id and name are never written into a card its owner does not own alone:
  `link` to a `scope: agent` card is refused (`PrivateLink`) unless the source is private to the
  same agent, and a rename of a private card does not rewrite the wikilinks of such cards.
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

from ..cards import check_setting, load_card_for_write
from ..errors import BadLinks, BrainError, CardNotFound, LinkNotFound, PrivateLink, UsageError
from .graph import FOLDERS, open_index
from ..writes import commit_operation
from ..vault.config import relation_too_long
from ..vault.events import new_event
from ..vault.journal import Effect, undo_files, writing
from ..vault.valueclass import valueclass
from ..vault.storage import (
    ANYONE, CARD_FOLDERS, Card, Vault, card_from_text, check_scope, iso, load_card, now,
    read_text, updated_text,
)
from ..vault.markdown import relinked_card_text
from ..vault.wikilinks import (
    DEFAULT_WEIGHT, WIKILINK_WEIGHT, card_names, clamp_weight, link_name, wikilink_target,
)

MAX_REASON_CHARS = 1000


def _writable_links(card: Card) -> list[Any]:
    """The card's `links` list as written, refusing a shape we could only rewrite by guessing.

    Trigger: a `links:` a person wrote for their own meaning, a list of wikilinks (`- "[[A]]"`).
    Why: `link` failed with BAD_LINKS on it, and taking the key over would drop what they wrote.
    Outcome: their strings are kept where they are (read as wikilinks, `card_links`), and the
    tool's entries (mappings) go after them. Anything else there is refused, as before."""
    links = card.meta.get("links")
    if links is None:
        return []
    if not isinstance(links, list) or not all(isinstance(e, (dict, str)) for e in links):
        raise BadLinks(f"{card.rel}: `links` is not a list of mappings and wikilinks; fix or remove it by hand, "
                       "then retry", path=card.rel)
    return [dict(e) if isinstance(e, dict) else e for e in links]


def _entries(links: list[Any]) -> list[dict[str, Any]]:
    """The tool's own entries of a `links` list (mappings), without a person's wikilinks."""
    return [e for e in links if isinstance(e, dict)]


def _writable_related(card: Card) -> list[Any]:
    related = card.meta.get("related")
    if related is None:
        return []
    if isinstance(related, str):
        return [related]
    if not isinstance(related, list):
        raise BadLinks(f"{card.rel}: `related` is not a list of wikilinks; fix or remove it by hand, then retry",
                       path=card.rel)
    return list(related)


# ---------------------------------------------------------------------------- index access

def _relinked_related(index, related: list[Any], old_links: list[dict], new_links: list[dict],
                      known: dict[str, str]) -> list[Any]:
    """`related` kept in step with `links`: entries for targets no longer linked go, entries for
    newly linked targets are added at the end, a person's own wikilinks stay where they are.
    `known` maps ids to file stems the caller already has (the cards it just read)."""
    old_links, new_links = _entries(old_links), _entries(new_links)
    ids = [str(e.get("to")) for e in (*old_links, *new_links) if e.get("to")]
    stems = dict(known)
    missing = [i for i in ids if i not in stems]
    if missing:
        stems.update({i: meta["path"].rsplit("/", 1)[-1][:-3] for i, meta in index.cards_by_id(missing).items()})
    new_ids = list(dict.fromkeys(str(e.get("to")) for e in new_links if e.get("to")))
    new_names = {link_name(stems[i]) for i in new_ids if i in stems}
    old_names = {link_name(stems[str(e.get("to"))]) for e in old_links if str(e.get("to")) in stems} - new_names
    out, seen = [], set()
    for entry in related:
        name = wikilink_target(entry)
        if name in old_names or (name and name in seen):
            continue  # unlinked now, or a repeat
        out.append(entry)
        if name:
            seen.add(name)
    for card_id in new_ids:
        if card_id in stems and link_name(stems[card_id]) not in seen:
            out.append(f"[[{stems[card_id]}]]")
            seen.add(link_name(stems[card_id]))
    return out


# ---------------------------------------------------------------------------- link / unlink

@valueclass
class LinkResult:
    source: Card
    target: Card
    link: dict[str, Any]
    changed: bool
    event: dict | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source.rel, "source_id": self.source.id, "target": self.target.rel,
                "target_id": self.target.id, "rel": self.link["rel"], "weight": self.link["weight"],
                "reason": self.link.get("reason"), "version": self.link.get("version"), "changed": self.changed,
                "event": self.event["eid"] if self.event else None}


def check_rel(vault: Vault, rel: str) -> str:
    """`rel` lowercased when the vault allows it; a name over 64 characters (docs/compatibility.md, Relations) is refused
    before the list is looked at, whatever the config says."""
    problem = relation_too_long((rel or "").strip())
    if problem:
        raise UsageError(f"relation {problem}")
    return check_setting(rel, vault.settings.relations, "relation", "relations")


def check_weight(weight: float | None) -> float | None:
    if weight is not None and (math.isnan(weight) or not 0.0 <= weight <= 1.0):
        raise UsageError(f"--weight {weight} is out of range; give a number from 0 to 1")
    return None if weight is None else float(weight)  # JSON's 1 is written as the CLI's 1.0


def _pair(vault: Vault, source_ref: str, target_ref: str, verb: str = "link") -> tuple[Card, Card]:
    """Both cards, looked up and read under the write lock (see `cards.load_card_for_write`);
    one card named twice is refused in the words of `verb` (link, merge)."""
    source = load_card_for_write(vault, source_ref, FOLDERS)
    try:
        target = load_card_for_write(vault, target_ref, FOLDERS)
    except CardNotFound as exc:   # which of the two names none (HTTP's merge_id: `details.field`)
        exc.details.setdefault("field", "other" if verb == "merge" else "target")
        raise
    if source.path == target.path:
        if verb == "merge":
            raise UsageError(f"cannot merge {source.rel} into itself; give the card to keep and another card "
                             "to fold into it")
        raise UsageError(f"{source.rel} cannot link to itself; give two different cards")
    return source, target


def private_owner(card: Card) -> str | None:
    """The agent a `scope: agent` card is private to ("" when it names none), or None for a
    card everyone may read (the rule of `storage.scope_admits`)."""
    if card.text_field("scope").strip().lower() != "agent":
        return None
    return card.text_field("agent")


def may_name(source: Card, target: Card) -> bool:
    """Whether `source` may hold `target`'s id and name: everyone who can read the source can
    read the target (a global target, or both private to one agent)."""
    owner = private_owner(target)
    return owner is None or private_owner(source) == owner


def link(vault: Vault, source_ref: str, target_ref: str, rel: str, weight: float | None = None,
         reason: str | None = None, agent: str | None = ANYONE) -> LinkResult:
    """Upsert the link (source, target, rel): see the module docstring."""
    rel = check_rel(vault, rel)
    weight = check_weight(weight)
    if reason is not None and len(reason) > MAX_REASON_CHARS:
        raise UsageError(f"--reason is over {MAX_REASON_CHARS} characters; keep it to a sentence or two")
    with writing(vault) as writer:
        source, target = _pair(vault, source_ref, target_ref)
        check_scope(source, source_ref, agent)
        check_scope(target, target_ref, agent)
        effects: list[Effect] = []
        if target.id is None:
            # A hand-written target gets its id in the same operation (docs/card-format.md: the first write adds one).
            original = target.text
            target = card_from_text(vault, target.path, updated_text(target, {}))
            effects.append(Effect(target.path, original, target.text))
        if source.id is not None and source.id == target.id:
            raise UsageError(f"{source.rel} and {target.rel} are the same card (id {source.id}); cannot self-link")
        if not may_name(source, target):
            # Trigger: a global card (or another agent's) linking to an agent-private card. Why:
            # the link writes the private card's id and file name into a card every agent can
            # read (docs/card-format.md: other agents never see it). Outcome: refused before anything is written.
            raise PrivateLink(f"{target.rel} is private to agent {private_owner(target)!r} and {source.rel} is not; "
                              "link the other way (from the private card) or make the source private to that agent too",
                              source=source.rel, target=target.rel)
        old_links = _writable_links(source)
        related = _writable_related(source)
        moment = iso(now())
        new_links = [dict(e) if isinstance(e, dict) else e for e in old_links]
        entry = next((e for e in _entries(new_links)
                      if str(e.get("to")) == target.id and str(e.get("rel", "related")) == rel), None)
        kept_wikilink = entry is None and _own_wikilink(related, old_links, target) and rel != "related"
        if kept_wikilink:
            # Trigger: the source already holds a person's `[[target]]` and no link to it yet.
            # Why: once `links` names the target, that wikilink reads as the new link's mirror,
            # and unlinking the new link (`--rel extends`) would drop what the person wrote.
            # Outcome: the wikilink's own meaning (docs/card-format.md: `related`, weight 0.5) is written as
            # a link too, so it outlives the new one; `unlink` without --rel removes both.
            new_links.append({"to": target.id, "rel": "related", "weight": WIKILINK_WEIGHT, "created": moment,
                              "updated": moment, "version": 1})
        if entry is None:
            entry = {"to": target.id, "rel": rel, "weight": DEFAULT_WEIGHT if weight is None else weight}
            if reason:
                entry["reason"] = reason
            entry.update(created=moment, updated=moment, version=1)
            new_links.append(entry)
        else:
            wanted_weight = clamp_weight(entry.get("weight"), DEFAULT_WEIGHT) if weight is None else weight
            wanted_reason = entry.get("reason") if reason is None else (reason or None)
            if wanted_weight == entry.get("weight") and wanted_reason == entry.get("reason") and not effects:
                return LinkResult(source, target, entry, False)
            entry["weight"] = wanted_weight
            if wanted_reason is None:
                entry.pop("reason", None)
            else:
                entry["reason"] = wanted_reason
            version = entry.get("version")
            entry["version"] = (version if isinstance(version, int) and not isinstance(version, bool) else 1) + 1
            entry["updated"] = moment
        index = open_index(vault, None)
        try:
            new_related = _relinked_related(index, related, old_links, new_links, {target.id: target.path.stem})
        finally:
            index.close()
        text = updated_text(source, {"links": new_links, "related": new_related, "updated": moment})
        effects.append(Effect(source.path, source.text, text))
        written = card_from_text(vault, source.path, text)
        event = new_event("linked", written.rel, written.id, target=target.id, target_path=target.rel, rel=rel,
                          weight=entry["weight"], reason=entry.get("reason"), version=entry["version"],
                          kept_wikilink=kept_wikilink or None, files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    return LinkResult(written, target, entry, True, event)


def _own_wikilink(related: list[Any], links: list[dict[str, Any]], target: Card) -> bool:
    """Whether `related` holds a wikilink to `target` that is a person's own: no link in
    `links` points at the target, so it is nobody's mirror."""
    if any(target.id and str(e.get("to")) == target.id for e in _entries(links)):
        return False
    names = set(card_names(target))
    return any(wikilink_target(e) in names for e in related)  # (one in `links` stays there whatever happens)


@valueclass
class UnlinkResult:
    source: Card
    target: Card | None        # None: the link led to a card that no longer exists
    removed: list[dict[str, Any]]
    event: dict
    target_ref: str = ""       # what the caller named the target by

    def as_dict(self) -> dict[str, Any]:
        out = {"source": self.source.rel, "target": self.target.rel if self.target else self.target_ref,
               "removed": self.removed, "event": self.event["eid"]}
        if self.target is None:
            out["missing"] = True
        return out

    @property
    def target_label(self) -> str:
        return self.target.rel if self.target is not None else f"missing card {self.target_ref}"


def unlink(vault: Vault, source_ref: str, target_ref: str, rel: str | None = None,
           agent: str | None = ANYONE) -> UnlinkResult:
    """Remove the source's links to the target (only those of `rel` when given; without `rel`,
    or with `related`, a person's own wikilink to the target goes too).

    The target may be a card that no longer exists (deleted in another clone and merged, removed
    outside the tool): named by the id its `links` entry holds, or by the name its `related`
    wikilink holds (`Name` or `[[Name]]`), its links go the same way, logged and undoable. This is
    the fix `doctor` names for a broken link."""
    if rel is not None:
        rel = check_rel(vault, rel)
    with writing(vault) as writer:
        source = load_card_for_write(vault, source_ref, FOLDERS)
        check_scope(source, source_ref, agent)
        try:
            target: Card | None = load_card_for_write(vault, target_ref, FOLDERS)
        except CardNotFound:
            # Trigger: no card has that path, name or id. Why: a link to a card that is gone is
            # exactly what `doctor` asks to remove, and only `unlink` removes links. Outcome:
            # the reference is matched against the source's own links and wikilinks instead.
            target = None
        if target is not None:
            if source.path == target.path:
                raise UsageError(f"{source.rel} cannot link to itself; give two different cards")
            check_scope(target, target_ref, agent)
            target_id, names = target.id, set(card_names(target))
            known = {target.id: target.path.stem} if target.id else {}
        else:
            target_id, names, known = _missing_target(vault, target_ref)
        old_links = _writable_links(source)
        related = _writable_related(source)
        removed = [e for e in _entries(old_links) if target_id and str(e.get("to")) == target_id
                   and (rel is None or str(e.get("rel", "related")) == rel)]
        own_in_links = [e for e in old_links if rel in (None, "related") and wikilink_target(e) in names]
        new_links = [e for e in old_links if not any(e is r for r in removed) and e not in own_in_links]
        kept_related = related
        if rel in (None, "related"):
            kept_related = [e for e in related if wikilink_target(e) not in names]
            mirrored = any(target_id and str(e.get("to")) == target_id for e in _entries(old_links))
            if not mirrored:  # a person's own wikilink, not the mirror of a link removed above
                removed += [{"wikilink": e, "rel": "related"} for e in (*related, *own_in_links)
                            if wikilink_target(e) in names]
        if not removed:
            named = target.rel if target is not None else f"{target_ref} (no card has that name or id either)"
            raise LinkNotFound(f"{source.rel} has no {rel + ' ' if rel else ''}link to {named}; "
                               f"`links {source.rel}` shows its links")
        index = open_index(vault, None)
        try:
            new_related = _relinked_related(index, kept_related, old_links, new_links, known)
        finally:
            index.close()
        changes: dict[str, Any] = {"links": new_links, "related": new_related, "updated": iso(now())}
        remove = tuple(k for k in ("links", "related") if not changes[k] and k in source.meta)
        for key in remove:
            del changes[key]
        text = updated_text(source, changes, remove)
        effects = [Effect(source.path, source.text, text)]
        written = card_from_text(vault, source.path, text)
        matched_id = target_id if any("to" in e for e in removed) else None
        event = new_event("unlinked", written.rel, written.id, target=target.id if target is not None else matched_id,
                          target_path=target.rel if target is not None else None,
                          target_name=None if target is not None or matched_id else min(names), rel=rel,
                          removed=len(removed), files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    return UnlinkResult(written, target, removed, event, target_ref)


def _missing_target(vault: Vault, ref: str) -> tuple[str, set[str], dict[str, str]]:
    """For a target no card answers to: the id its links would hold (the reference as given), the
    wikilink names that named it (the reference as a name, and the card's last names the log
    knows when the reference is the id of a card it logged), and that id's last file stem (so
    the `related` mirror of a removed link goes with it)."""
    from ..vault.events import read_events

    ref = ref.strip()
    name = wikilink_target(ref) or link_name(ref)
    names = {name} if name else set()
    stems: dict[str, str] = {}
    for event in read_events(vault):
        if event.get("id") == ref and isinstance(event.get("card"), str) and event["card"].endswith(".md"):
            stems[ref] = event["card"].rsplit("/", 1)[-1][:-3]
    if ref in stems:
        names.add(link_name(stems[ref]))
    return ref, names, stems


# ---------------------------------------------------------------------------- merge

@valueclass
class MergeResult:
    card: Card                 # the card kept, as written
    merged: Card               # the other, superseded, as written
    tags_added: list[str]
    links_added: list[dict[str, Any]]
    event: dict

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.card.rel, "id": self.card.id, "merged_path": self.merged.rel,
                "merged_id": self.merged.id, "tags": self.card.tags, "tags_added": self.tags_added,
                "links_added": [{"to": e.get("to"), "rel": e.get("rel", "related")} for e in self.links_added],
                "event": self.event["eid"]}


def merge(vault: Vault, keep_ref: str, merge_ref: str, agent: str | None = ANYONE) -> MergeResult:
    """MCP merge_memories (docs/compatibility.md): fold the card `merge_ref` into `keep_ref`, one logged operation.

    The kept card gets the union of both cards' tags, the other card's links (its typed links and
    its `related` wikilinks, except those to the kept card itself) and a `supersedes` link to it,
    and the other card's body after its own, under `## Merged from: <title>`. The other card is
    not deleted: it becomes `status: superseded`, `superseded_by` the kept card, `valid_to` now,
    so links that point at it still resolve and say where its knowledge went. Both files are in
    the `merged` event, so `undo` restores them. Two cards of different visibility (one private
    to an agent, the other global or another agent's) are refused: merging would either show
    private text to everyone or hide shared knowledge behind a private card."""
    with writing(vault) as writer:
        keep, other = _pair(vault, keep_ref, merge_ref, "merge")
        check_scope(keep, keep_ref, agent)
        check_scope(other, merge_ref, agent)
        if private_owner(keep) != private_owner(other):
            raise UsageError(f"{keep.rel} and {other.rel} are not visible to the same agents (one is private); "
                             "merge only cards of the same scope")
        for card in (keep, other):
            if card.status in ("superseded", "archived"):
                raise UsageError(f"{card.rel} is already {card.status}; merge only active cards")
        effects: list[Effect] = []
        if other.id is None:   # a hand-written card gets its id, to be named by the link and superseded_by
            original = other.text
            other = card_from_text(vault, other.path, updated_text(other, {}))
            effects.append(Effect(other.path, original, other.text))
        old_links = _writable_links(keep)
        related = _writable_related(keep)
        new_links = [dict(e) if isinstance(e, dict) else e for e in old_links]
        have = {(str(e.get("to")), str(e.get("rel", "related"))) for e in _entries(new_links)}
        moment = iso(now())
        added: list[dict[str, Any]] = []
        keep_names = set(card_names(keep))
        for entry in _entries(_writable_links(other)):
            key = (str(entry.get("to")), str(entry.get("rel", "related")))
            if entry.get("to") and key[0] != keep.id and key not in have:
                added.append(dict(entry))
                have.add(key)
        supersede = {"to": other.id, "rel": "supersedes", "weight": DEFAULT_WEIGHT,
                     "reason": "merged into this card", "created": moment, "updated": moment, "version": 1}
        if (other.id, "supersedes") not in have:
            added.append(supersede)
        new_links += added
        their_related = [e for e in _writable_related(other) if wikilink_target(e) not in keep_names]
        index = open_index(vault, None)
        try:
            new_related = _relinked_related(index, [*related, *their_related], old_links, new_links,
                                            {other.id: other.path.stem})
        finally:
            index.close()
        tags_added = [t for t in other.tags if t.casefold() not in {k.casefold() for k in keep.tags}]
        from ..cards import memory_content

        their_body = memory_content(other.body.replace("\r\n", "\n"), other.title)   # without create's heading
        prefix = keep.text[:len(keep.text) - len(keep.body)]
        newline = "\r\n" if "\r\n" in keep.text[:400] else "\n"
        if prefix and not prefix.endswith("\n"):
            prefix += newline   # a card ending in its closing fence: the fence line is ended first
        addition = f"## Merged from: {other.title}\n\n{their_body}".replace("\n", newline)
        body = (keep.body.rstrip("\r\n") + newline * 2 if keep.body.strip() else newline) + addition + newline
        changes: dict[str, Any] = {"links": new_links, "related": new_related, "updated": moment}
        if tags_added:
            changes["tags"] = [*keep.tags, *tags_added]
        staged = card_from_text(vault, keep.path, prefix + body)
        kept_text = updated_text(staged, changes)
        written = card_from_text(vault, keep.path, kept_text)   # a hand-written card got its id just now
        merged_text = updated_text(other, {"status": "superseded", "superseded_by": written.id, "valid_to": moment,
                                           "updated": moment})
        superseded = card_from_text(vault, other.path, merged_text)
        if effects:   # the other card's id was added above: one change of that file, from its text on disk
            effects = [Effect(other.path, effects[0].before, merged_text)]
        else:
            effects = [Effect(other.path, other.text, merged_text)]
        effects.insert(0, Effect(keep.path, keep.text, kept_text))
        events = [new_event("merged", written.rel, written.id, merged=superseded.id, merged_path=superseded.rel,
                            tags_added=tags_added or None, links_added=len(added), files=undo_files(vault, effects)),
                  new_event("superseded", superseded.rel, superseded.id, superseded_by=written.id)]
        commit_operation(writer, effects, events)
    return MergeResult(written, superseded, tags_added, added, events[0])


# ---------------------------------------------------------------------------- rename and delete

def _sources(vault: Vault, card: Card) -> list[Card]:
    """The cards holding a link to `card` (by id or wikilink), as they are on disk now."""
    index = open_index(vault, vault.settings.search.freshness_sweep)
    try:
        paths = sorted({row["source"]["path"] for row in index.incoming(card.id, card_names(card))})
    finally:
        index.close()
    out = []
    for rel in paths:
        if rel == card.rel:
            continue
        try:
            out.append(load_card(vault, vault.root / rel))
        except (OSError, BrainError):
            continue  # gone or unparseable since indexed: never rewritten, and never in the way
    return out


def rename_names(old: Card, new: Card) -> set[str]:
    """The wikilink names that named `old` and will not name `new`: its old stem and title,
    unless the new card still answers to them (its new stem, title or an alias)."""
    kept = set(card_names(new)) | {link_name(alias) for alias in new.aliases}
    return set(card_names(old)) - kept


def _card_files(vault: Vault) -> list[tuple[str, str]]:
    """(vault-relative path, file name) of every card file in Playbooks and Inbox, sorted: what
    `storage.card_paths` lists, as strings (10,000 `Path`s and their sort cost ~0.4 s)."""
    found = []
    for folder in CARD_FOLDERS:
        base = os.path.join(str(vault.root), folder)
        if vault.leads_outside(folder) is not None or not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and _utf8(d)]
            prefix = os.path.relpath(dirpath, vault.root).replace(os.sep, "/")
            found += [(f"{prefix}/{name}", name) for name in filenames
                      if name.endswith(".md") and not name.startswith(".") and _utf8(name)]
    found.sort(key=lambda entry: entry[0].split("/"))
    return found


def _utf8(name: str) -> bool:
    """Whether a file name is UTF-8 (no command can name one that is not; `doctor` reports it)."""
    return name.isascii() or not any("\udc80" <= char <= "\udcff" for char in name)


def follow_rename(vault: Vault, old: Card, new: Card) -> list[Effect]:
    """The rewrites of every card in Playbooks and Inbox holding a wikilink to `old` by a name
    the renamed card no longer answers to (`rename_names`), so that it names `new` (what Obsidian
    does on a rename): in the body, `[[Name]]`, `[[Name|x]]`, `[[Name#H]]`, `![[Name]]`, and in
    every property. Links by id need nothing. Every card file is read (a rename is rare; the
    index does not hold body links), and only those that name it are parsed and rewritten."""
    names = rename_names(old, new)
    if not names:
        return []
    # A name that is also another card's file stem resolves to that card: it is not this one's link.
    skip = {old.rel, new.rel}
    files = [(rel, name) for rel, name in _card_files(vault) if rel not in skip]
    # (An ASCII stem's link name is its lower case: no call per stem for 10,000 stems.)
    names -= {name[:-3].lower() if name.isascii() else link_name(name[:-3]) for _, name in files}
    if not names:
        return []
    pattern = re.compile(r"\[\[(?:[^\[\]|#^\n]*/)?\s*(?:" + "|".join(re.escape(n) for n in sorted(names)) +
                         r")(?:\.md)?\s*(?:[\]|#^])", re.IGNORECASE)
    effects = []
    root = str(vault.root)
    for rel, _ in files:
        try:
            text = read_text(os.path.join(root, rel), rel)
        except (OSError, BrainError):
            continue  # not a card (doctor reports it): never rewritten, and never in the way
        if "[[" not in text or not pattern.search(text):
            continue
        path = vault.root / rel
        try:
            source = load_card(vault, path)
        except (OSError, BrainError):
            continue
        if not may_name(source, new):
            # Trigger: a private card renamed while a card others can read holds a wikilink to
            # it (written by hand). Why: following the rename would publish the private card's
            # new title. Outcome: that wikilink keeps the old name (doctor reports it missing).
            continue
        text = relinked_card_text(source, names, new.path.stem)
        if text != source.text:
            if source.id is None:  # a write like any other: a note without an id gets one (docs/card-format.md)
                text = updated_text(card_from_text(vault, source.path, text), {})
            effects.append(Effect(source.path, source.text, text))
    return effects


def cascade_effects(vault: Vault, card: Card) -> list[Effect]:
    """The rewrites of the cards that link to `card`, removing those links and wikilinks (for
    delete). A source whose links cannot be rewritten safely is left as it is (doctor will
    report its link to a missing card)."""
    names = set(card_names(card))
    effects = []
    for source in _sources(vault, card):
        links_value, related = source.meta.get("links"), source.meta.get("related")
        changes: dict[str, Any] = {}
        if isinstance(links_value, list):
            kept = [e for e in links_value if not (isinstance(e, dict) and card.id and str(e.get("to")) == card.id)
                    and wikilink_target(e) not in names]
            if len(kept) != len(links_value):
                changes["links"] = kept
        if isinstance(related, list):
            kept_related = [e for e in related if wikilink_target(e) not in names]
            if len(kept_related) != len(related):
                changes["related"] = kept_related
        if changes:
            remove = tuple(k for k, v in changes.items() if not v)
            text = updated_text(source, {k: v for k, v in changes.items() if v}, remove)
            effects.append(Effect(source.path, source.text, text))
    return effects
