"""Editing and deleting cards: `update` and `delete`, each one logged, undoable operation.

What it promises:
- `update` changes only the frontmatter keys it is given and, when asked, the body; every other
  byte of the file survives. `updated` moves when anything changed; nothing changes, nothing is
  written or logged. A new title renames the file (same id), and every card in Playbooks and
  Inbox holding a wikilink to it by a name it no longer answers to (in its body, `[[Name]]`,
  `[[Name|x]]`, `[[Name#H]]`, `![[Name]]`, or in any property) is rewritten to the new name in
  the same operation, as Obsidian relinks.
- `delete` removes the file and every link pointing at it from its source cards (the cascade),
  in the same operation.
- A door serving an agent passes `agent`: another agent's private card (`scope: agent`) is then
  refused as if it did not exist, and the other cards a rename or cascade rewrites are listed
  only when that agent may see them. The command line (the default, `ANYONE`) may change any card.
- With `expect_hash`, a card whose content hash (`journal.fingerprint` of the file, shown by
  `get --json` as `hash`) differs is refused with `Conflict` and nothing is written.
- Every event carries `files` (each file's whole earlier text and the fingerprint of its later
  one), which is all `evolution.history.undo` needs to reverse it.
"""

from __future__ import annotations

import re
from typing import Any

from ..cards import (
    card_path_hint, check_body, check_domain, check_project, check_title, check_type, expand_body, load_card_for_write,
    memory_type_of, parse_tags, write_index,
)
from ..errors import BrainError, Conflict, UsageError
from ..vault.events import new_event
from ..vault.journal import Effect, fingerprint, undo_files, writing
from ..vault.valueclass import factory, valueclass
from ..writes import commit_operation
from ..vault.storage import (
    ANYONE, Card, Vault, card_filename, card_from_text, check_scope, check_text, iso, name_key, now, private_to,
    scope_admits, unique_path, updated_text,
)

MAX_STATUS_CHARS = 60


def version_hash(card: Card) -> str:
    """The hash `get --json` shows and `--expect-hash` compares: the file's fingerprint."""
    return fingerprint(card.text)


def check_expected(card: Card, expect_hash: str | None) -> None:
    if expect_hash is not None and expect_hash.strip() != version_hash(card):
        raise Conflict(f"{card.rel} changed since hash {expect_hash.strip()} (now {version_hash(card)}); "
                       "`brain get` it again, redo the change, and pass the new hash with --expect-hash",
                       path=card.rel, expected=expect_hash.strip(), actual=version_hash(card))


# ---------------------------------------------------------------------------- update

@valueclass
class UpdateResult:
    card: Card
    previous_path: str
    changed: list[str]
    event: dict | None = None
    relinked: list[str] = factory(list)  # cards whose wikilinks followed a rename

    @property
    def renamed(self) -> bool:
        return self.previous_path != self.card.rel

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.card.rel, "id": self.card.id, "hash": version_hash(self.card), "changed": self.changed,
                "renamed_from": self.previous_path if self.renamed else None, "relinked": self.relinked,
                "event": self.event["eid"] if self.event else None}


def update_card(vault: Vault, ref: str, *, title: str | None = None, body: str | None = None,
                append: str | None = None, tags: str | list[str] | None = None,
                add_tags: list[str] | None = None, remove_tags: list[str] | None = None,
                card_type: str | None = None, domain: str | None = None, project: str | None = None,
                importance: int | None = None, status: str | None = None,
                expect_hash: str | None = None, memory_type: str | None = None,
                agent: str | None = ANYONE) -> UpdateResult:
    """Change the named keys (and the body) of one card; see the module docstring.
    `memory_type` is a client's label (docs/compatibility.md, Memory types; MCP `update_memory`): a card type, or success/failure/note,
    which set the card type and are kept in the card's `memory_type` key.

    Three steps: the request is checked before anything is read (`check_update`), the change is
    planned on the card as read under the write lock (`plan_update`), and committed. A change
    that renames nothing is planned before the lock too (`_planned_ahead`), and that plan is the
    one taken when the file still holds the very text it was made from (`_taken_ahead`)."""
    asked = check_update(vault, title=title, body=body, append=append, tags=tags, add_tags=add_tags,
                         remove_tags=remove_tags, card_type=card_type, domain=domain, project=project,
                         importance=importance, status=status, memory_type=memory_type)
    with write_index(vault, ref) as index:   # one connection for the lookup and the pass-on
        near = card_path_hint(vault, ref, index=index)   # the index lookup, outside the lock
        ahead = _planned_ahead(vault, ref, near, asked, agent, index)
        with writing(vault) as writer:
            card = _taken_ahead(vault, near, ahead) or load_card_for_write(vault, ref, near=near)
            check_scope(card, ref, agent)
            check_expected(card, expect_hash)
            if ahead is not None and card is ahead.card:
                plan = ahead.plan
                if plan is not None:
                    plan.event = _updated_event(vault, plan, card)   # made now: the log's events stay in time order
            else:
                plan, ahead = plan_update(vault, card, asked, agent), None
            if plan is None:
                return UpdateResult(card, card.rel, [])
            commit_operation(writer, plan.effects, [plan.event], index=index,
                             **({"made": [plan.written], "was": [card], "terms": ahead.terms} if ahead else {}))
    return UpdateResult(plan.written, card.rel, plan.changed, plan.event, plan.relinked)


@valueclass
class UpdateAhead:
    """An update planned before the write lock (`_planned_ahead`): the card as read then, the
    plan made from it (None: it changes nothing), and the written card's analysed terms for the
    index, by path (`search.build.analysed`; empty when its searchable texts did not change)."""

    card: Card
    plan: UpdatePlan | None
    terms: dict[str, Any] = factory(dict)


def _planned_ahead(vault: Vault, ref: str, near, asked: UpdateRequest, agent: str | None, index) -> UpdateAhead | None:
    """The update of the card at `near` (where `card_path_hint` found `ref`), planned before the
    write lock; None when there is nothing to plan from (no hint, a file that is no longer that
    card, a new title: a rename is planned under the lock, where the names it takes and the cards
    it relinks are settled) or when planning failed (it fails again under the lock, and says why).

    Trigger: an update by id that renames nothing (every HTTP PATCH of a body, tags or fields).
    Why: reading and parsing the card, rendering and parsing the new text, parsing both again for
    the index and tokenising the new one held the vault's write lock, which every writer of every
    process waits on (issue 22: ~4 ms of CPU under the lock a PATCH). Outcome: that work is done
    here; under the lock the file is read (not parsed) and compared, and the plan is taken when
    it holds the text planned from (`_taken_ahead`), else planned again there."""
    if near is None or "title" in asked.changes:
        return None
    from ..vault.storage import CARD_FOLDERS, load_card

    try:
        card = load_card(vault, near)
        if card.id != ref.strip() or vault.rel(near).split("/", 1)[0] not in CARD_FOLDERS:
            return None   # what `load_card_for_write` would not take either
        plan = plan_update(vault, card, asked, agent)
    except (OSError, BrainError):
        return None
    if plan is not None and plan.written.path != card.path:
        return None
    terms = {}
    analyse = getattr(index, "analyse", None)
    if plan is not None and analyse is not None:
        from ..search.analysis import field_texts

        if field_texts(plan.written) != field_texts(card):
            from ..search.build import analysed

            terms[plan.written.rel] = analysed(plan.written, analyse)
    return UpdateAhead(card, plan, terms)


def _taken_ahead(vault: Vault, near, ahead: UpdateAhead | None) -> Card | None:
    """The card the update was planned on before the lock (`ahead.card`) when its file, read now
    under the lock, still holds exactly that text; else None (the caller reads the card again)."""
    if ahead is None:
        return None
    from ..vault.storage import read_card_text

    try:
        text = read_card_text(vault, near)[0]
    except (OSError, BrainError):
        return None
    return ahead.card if text == ahead.card.text else None


def _updated_event(vault: Vault, plan: UpdatePlan, card: Card) -> dict[str, Any]:
    """The `updated` event of `plan` made from `card` (`plan_update`'s), made anew."""
    return new_event("updated", plan.written.rel, plan.written.id, changed=plan.changed,
                     renamed_from=card.rel if plan.written.path != card.path else None,
                     files=undo_files(vault, plan.effects))


@valueclass
class UpdateRequest:
    """An update's checked values (`check_update`), before the card is read: the keys to set and
    to remove, the tags (a new list, and tags to add and drop), the new body and the text to append."""

    changes: dict[str, Any]
    removals: list[str]
    tags: list[str] | None
    added: list[str]
    dropped: list[str]
    body: str | None
    append: str | None


def check_update(vault: Vault, *, title: str | None = None, body: str | None = None, append: str | None = None,
                 tags: str | list[str] | None = None, add_tags: list[str] | None = None,
                 remove_tags: list[str] | None = None, card_type: str | None = None, domain: str | None = None,
                 project: str | None = None, importance: int | None = None, status: str | None = None,
                 memory_type: str | None = None) -> UpdateRequest:
    """`update_card`'s arguments checked and normalised (UsageError on the first bad one, or when
    none asks for a change)."""
    changes: dict[str, Any] = {}
    removals: list[str] = []
    if memory_type is not None:
        if card_type is not None:
            raise UsageError("give a card type or a memory type, not both")
        card_type, kept = memory_type_of(memory_type)
        if kept:
            changes["memory_type"] = kept
        else:
            removals.append("memory_type")  # a plain card type now: the old label would mislead
    if title is not None:
        changes["title"] = check_title(title)
    if card_type is not None:
        changes["type"] = check_type(vault, card_type)
    if domain is not None:
        changes["domain"] = check_domain(vault, domain)
    if project is not None:
        value = check_project(project)
        if value:
            changes["project"] = value
        else:
            removals.append("project")  # `--project ""` clears it
    if importance is not None:
        if not 1 <= importance <= 5:
            raise UsageError(f"--importance {importance} is out of range; give 1 to 5", field="importance")
        changes["importance"] = importance
    if status is not None:
        value = status.strip()
        if not value or "\n" in value or len(value) > MAX_STATUS_CHARS:
            raise UsageError(f"--status must be one line of 1 to {MAX_STATUS_CHARS} characters, "
                             "e.g. active, archived or superseded", field="status")
        # A carriage return or escape sequence is no status either (`list` printed it as it is).
        changes["status"] = check_text(value, "--status", one_line=True, field="status")
    new_tags = parse_tags(tags) if tags is not None else None
    added, dropped = parse_tags(",".join(add_tags or []), "add_tags"), parse_tags(",".join(remove_tags or []), "remove_tags")
    if body is not None:
        body = check_body(expand_body(body))
    if append is not None:
        append = check_body(expand_body(append), "append")
        if not append.strip():
            raise UsageError("--append is empty; give the text to add at the end of the body", field="append")
    if not (changes or removals or new_tags is not None or added or dropped or body is not None
            or append is not None):
        raise UsageError("nothing to update; give --title, --body, --append, --tags, --add-tag, --remove-tag, "
                         "--type, --domain, --project, --importance or --status")
    return UpdateRequest(changes, removals, new_tags, added, dropped, body, append)


@valueclass
class UpdatePlan:
    """What an update writes: the card as written, the file effects (a rename's and its
    relinked cards' too), the event, the fields that changed, and the relinked cards shown."""

    written: Card
    effects: list[Effect]
    event: dict[str, Any]
    changed: list[str]
    relinked: list[str]


def plan_update(vault: Vault, card: Card, asked: UpdateRequest, agent: str | None = ANYONE) -> UpdatePlan | None:
    """The update `asked` makes of `card` (read under the write lock), or None when it changes
    nothing. A new title renames the file and relinks the cards that name it (module docstring)."""
    changes = dict(asked.changes)
    removals = asked.removals
    if asked.tags is not None or asked.added or asked.dropped:
        current = asked.tags if asked.tags is not None else card.tags
        changes["tags"] = [t for t in dict.fromkeys([*current, *asked.added]) if t not in asked.dropped]
    text = _with_body(card, asked.body, asked.append, changes.get("title"))
    staged = card_from_text(vault, card.path, text) if text != card.text else card
    changed_keys = [k for k in changes if staged.meta.get(k) != changes[k] or k not in staged.meta]
    changed_keys += [k for k in removals if k in staged.meta]
    body_changed = text != card.text
    if not changed_keys and not body_changed:
        return None
    changes["updated"] = iso(now())
    new_text = updated_text(staged, changes, tuple(removals))
    target = card.path
    if "title" in changed_keys:
        # A private card renamed takes a private card's name (`card_filename`): one named before
        # private names were made is given one now, when its name changes anyway.
        name = card_filename(changes.get("type") or card.type or "note", changes["title"],
                             private_to(card.text_field("scope"), card.text_field("agent")))
        # A name that differs from the card's own only in case or normalisation is the same
        # file on macOS and Windows: writing it and removing the old one would remove the
        # card there. The card keeps its file.
        if name_key(name) != name_key(card.path.name):
            target = unique_path(card.path.parent, name)
    written = card_from_text(vault, target, new_text)
    relinked = []
    if target != card.path:
        from ..vault.markdown import relinked_card_text
        from .relations import follow_rename, rename_names  # only renames need them

        # Its own links to itself follow too, as Obsidian does.
        new_text = relinked_card_text(written, rename_names(card, written), target.stem)
        written = card_from_text(vault, target, new_text)
    effects = [Effect(card.path, card.text, None), Effect(target, None, new_text)] \
        if target != card.path else [Effect(card.path, card.text, new_text)]
    if target != card.path:
        extra = follow_rename(vault, card, written)
        effects += extra
        relinked = _shown(vault, extra, agent)
    fields = [*changed_keys, *(["body"] if body_changed else [])]
    event = new_event("updated", written.rel, written.id, changed=fields,
                      renamed_from=card.rel if target != card.path else None,
                      files=undo_files(vault, effects))
    return UpdatePlan(written, effects, event, fields, relinked)


def _shown(vault: Vault, effects: list[Effect], agent: str | None) -> list[str]:
    """The paths of the other cards `effects` rewrite that `agent` may see: an agent is never
    told the name of another agent's private card that linked to the one it changed."""
    if agent is ANYONE:
        return [vault.rel(e.path) for e in effects]
    shown = []
    for effect in effects:
        other = card_from_text(vault, effect.path, effect.before)
        if scope_admits(other.text_field("scope"), other.text_field("agent"), agent or None):
            shown.append(vault.rel(effect.path))
    return shown


def _with_body(card: Card, body: str | None, append: str | None, new_title: str | None) -> str:
    """The card's text with its body replaced and/or appended to; the frontmatter bytes stay.
    A new title also replaces the body's first `# ` heading when that heading was the old title
    (the heading create wrote), so Obsidian shows the same name as the frontmatter."""
    prefix = card.text[:len(card.text) - len(card.body)]
    newline = "\r\n" if "\r\n" in (prefix or card.body[:200]) else "\n"
    old = card.body
    if body is None and append is None and new_title is None:
        return card.text
    if prefix and not prefix.endswith("\n"):
        # Trigger: a card that ends in its closing `---` with no newline (a note of properties
        # only). Why: every reader takes that line as the closing fence; a body written right
        # after it made `---Now...`, no fence at all. Outcome: the fence line is ended first.
        prefix += newline
    if body is not None:
        lead = re.match(r"(?:\r?\n)*", old).group() if prefix else ""
        new = lead + body.lstrip("\r\n").replace("\r\n", "\n").replace("\n", newline)
        if not new.endswith(newline):
            new += newline
    else:
        new = old
        if new_title is not None:
            heading = re.search(r"^(?:\r?\n)*# (.*?)\r?$", old, re.MULTILINE)
            if heading and heading.start() == 0 and heading.group(1).strip() == card.title:
                start, end = heading.span(1)
                new = old[:start] + new_title + old[end:]
    if append is not None:
        addition = append.strip("\r\n").replace("\r\n", "\n").replace("\n", newline)
        new = new.rstrip("\r\n") + newline + newline + addition + newline if new.strip() else addition + newline
    return prefix + new


# ---------------------------------------------------------------------------- delete

@valueclass
class DeleteResult:
    path: str
    id: str | None
    title: str
    cascaded: list[str]
    dry_run: bool
    event: dict | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "id": self.id, "title": self.title, "cascaded": self.cascaded,
                "dry_run": self.dry_run, "event": self.event["eid"] if self.event else None}


def delete_card(vault: Vault, ref: str, dry_run: bool = False, expect_hash: str | None = None,
                agent: str | None = ANYONE) -> DeleteResult:
    """Remove a card and every link pointing at it from its source cards, in one operation.
    The event keeps the whole deleted file and each source's earlier text, so `undo` restores
    them byte for byte. `dry_run` shows what would happen and writes nothing."""
    from .relations import cascade_effects

    with writing(vault) as writer:
        card = load_card_for_write(vault, ref)
        check_scope(card, ref, agent)
        check_expected(card, expect_hash)
        cascade = cascade_effects(vault, card)
        cascaded = _shown(vault, cascade, agent)
        if dry_run:
            return DeleteResult(card.rel, card.id, card.title, cascaded, True)
        effects = [Effect(card.path, card.text, None), *cascade]
        event = new_event("deleted", card.rel, card.id, title=card.title,
                          cascaded=[vault.rel(e.path) for e in cascade] or None,
                          files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    return DeleteResult(card.rel, card.id, card.title, cascaded, False, event)
