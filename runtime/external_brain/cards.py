"""Card operations: get, record, create and list (docs/api.md), one function each.

Finding a card, one name per way: `card_path` is the lookup every reader uses (a path, stem or
id, the id through the index first, then a title or alias); `vault.storage.scan_card_path` is the
same without the index (reads files only); `load_card_for_write` reads the card under the write
lock, for writers; `card_path_hint` is a writer's index lookup before the lock, checked again
under it; `get_card` is the `get` operation (scope checked, `referenced` logged).

Each takes a `Vault` and plain values and returns a result object; the CLI, hooks and MCP all
call these. Writes hold the vault's write lock and commit their files and events as one
operation (`journal.writing`, `writes.commit_operation`); reads log at most a `referenced` event
and never touch a card file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from .errors import AmbiguousCard, BadFrontmatter, BrainError, CardNotFound, UsageError
from .vault import frontmatter
from .vault.confidence import (
    SIGNALS, References, action_for, clocks_after, decay_since, decayed, days_between, effective_confidence, ewa,
    own_confidence, stored_or_initial,
)
from .vault.config import MEMORY_TYPES  # docs/compatibility.md, Memory types
from .vault.events import append_event, log_size, new_event
from .vault.journal import Effect, fingerprint, step_aside, undo_files, writing
from .vault.storage import (
    ANYONE, CARD_FOLDERS, Card, Problem, Vault, card_filename, card_from_text, card_not_found, check_scope, check_text, derived_id, scan_card_path, iso,
    keep_written_parse, load_card, load_cards, looks_like_id, name_key, new_id, now, parse_time, private_to,
    scope_admits, unique_path, updated_text,
)
from .vault.valueclass import factory, valueclass
from .writes import commit_operation

if TYPE_CHECKING:
    from datetime import datetime

    from .search.keyword import Filters

MAX_TITLE_CHARS = 200
MAX_BODY_CHARS = 500_000


# ---------------------------------------------------------------------------- validation

def check_setting(value: str, allowed: tuple[str, ...], noun: str, setting: str) -> str:
    """`value` lowercased when the vault's `setting` list allows it, else a usage error that
    lists the allowed values and says where to add one (its `field` is `noun`: type, domain, relation)."""
    chosen = (value or "").strip().lower()
    if chosen not in allowed:
        raise UsageError(f"unknown {noun} {value!r}; use one of: {', '.join(allowed)} "
                         f"(or add it to `{setting}` in .brain/config.toml)", field=noun)
    return chosen


def check_type(vault: Vault, card_type: str) -> str:
    return check_setting(card_type, vault.settings.types, "type", "types")




def memory_type_of(memory_type: str) -> tuple[str, str | None]:
    """A client's `memory_type` (docs/compatibility.md, Memory types; MCP `store_memory`, `update_memory`) as (the card type, the
    value kept in the card's `memory_type` key, or None when it names a card type itself)."""
    key = memory_type.strip().lower()
    if key in MEMORY_TYPES:
        return MEMORY_TYPES[key], key
    return memory_type, None


def check_domain(vault: Vault, domain: str) -> str:
    return check_setting(domain, vault.settings.domains, "domain", "domains")


def default_domain(vault: Vault) -> str:
    """The domain of a card whose caller gave none (MCP, HTTP): `general`, else the first allowed."""
    domains = vault.settings.domains
    return "general" if "general" in domains else domains[0]


def check_title(title: str) -> str:
    value = (title or "").strip()
    if not value:
        raise UsageError("empty title; give --title \"what the card is about\"", field="title")
    if "\n" in value or len(value) > MAX_TITLE_CHARS:
        raise UsageError(f"title must be one line of at most {MAX_TITLE_CHARS} characters", field="title")
    return check_text(value, "title", one_line=True, field="title")


MAX_PROJECT_CHARS = 200


def check_project(value: str) -> str:
    """A card's `project`, the one rule for `create` and `update` (and their MCP and HTTP forms):
    one line (a newline, tab or other control character is refused, never stripped away), at
    most 200 characters, spaces around it dropped. "" means no project."""
    value = check_text(value, "--project", one_line=True, field="project").strip()
    if len(value) > MAX_PROJECT_CHARS:
        raise UsageError(f"--project is {len(value)} characters, over {MAX_PROJECT_CHARS}; give a shorter name",
                         field="project")
    return value


def parse_tags(raw: str | list[str] | None, field: str = "tags") -> list[str]:
    """Tags from `"a, b c"` or a list: lowercase, `#` dropped, duplicates removed, order kept
    (`field`: the argument they came in, named in the error)."""
    items = raw if isinstance(raw, list) else re.split(r"[,\s]+", raw or "")
    tags: list[str] = []
    for item in items:
        tag = item.strip().lstrip("#").lower()
        if not tag:
            continue
        check_text(tag, f"tag {tag!r}", name=True, field=field)
        if not re.fullmatch(r"[^\s,\[\]{}\"'#]+", tag):
            raise UsageError(f"bad tag {item!r}; tags are single words like ecs or react-native", field=field)
        if tag not in tags:
            tags.append(tag)
    return tags


def check_body(body: str, field: str = "body") -> str:
    if len(body) > MAX_BODY_CHARS:
        raise UsageError(f"body is {len(body)} characters, over {MAX_BODY_CHARS}; split the card", field=field)
    return check_text(body, "body", field=field)


# ---------------------------------------------------------------------------- get

@valueclass
class CardView:
    """A card as reads show it: the parsed card plus its effective confidence and action."""

    card: Card
    confidence: float
    stored_confidence: float
    last_referenced: str | None

    @property
    def action(self) -> str:
        return action_for(self.confidence)

    def summary(self) -> dict[str, Any]:
        card = self.card
        return {
            "path": card.rel, "id": card.id, "title": card.title, "type": card.type,
            "domain": card.domain, "tags": card.tags, "confidence": round(self.confidence, 4),
            "status": card.status, "updated": card.text_field("updated") or None,
            **_state_fields(card),
        }

    def details(self) -> dict[str, Any]:
        """Everything `get` shows: the summary, the action, and the whole frontmatter and body."""
        return {**self.summary(), "hash": fingerprint(self.card.text),
                "stored_confidence": round(self.stored_confidence, 4),
                "action": self.action, "last_referenced": self.last_referenced,
                "frontmatter": self.card.meta, "body": self.card.body}


def _state_fields(card: Card) -> dict[str, Any]:
    if card.type != "state":
        return {}
    from .vault.kinds import state_fields

    return state_fields(card, now())


def view(card: Card, refs: References, moment=None) -> CardView:
    settings = card.vault.settings.confidence
    last = refs.last_referenced(card)
    # Made as `IndexedCard.from_row` makes its cards (lists make one per card): the generic
    # record constructor checks its arguments by name, which costs more than the rest of a view.
    shown = CardView.__new__(CardView)
    shown.__dict__.update(card=card, confidence=effective_confidence(card, refs, moment or now(), settings),
                          stored_confidence=stored_or_initial(card, settings),
                          last_referenced=iso(last) if last else None)
    return shown


def card_path(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS, index=None,
              agent: str | None = ANYONE) -> Path:
    """`storage.scan_card_path`, with an `id` looked up in the search index first (`index`: the
    caller's open one, `write_index`, else the existing one is opened for the lookup); a title or
    alias names only the cards `agent` may see (`_card_named`; ANYONE: every card).

    Trigger: a reference that is a whole id (no path, no file stem). Why: without the index an
    id is found by reading the head of every card, ~0.2 s per 1,000 cards, which every `get` or
    `record` by id through MCP or HTTP paid. Outcome: the index's one path for that id, used only
    when the file there still holds that id (the index may be behind); anything else, and every
    other reference, goes the way `scan_card_path` always went.
    """
    return _card_found(vault, ref, folders, index, agent)[0]


def _card_found(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS, index=None,
                agent: str | None = ANYONE) -> tuple[Path, Card | None]:
    """`card_path`, and the card it read there to check the index's path for an id (None when it
    read none): `record` reads that card again under the write lock, and takes this parse of it
    when the text is the same (`load_card(parsed=)`)."""
    stripped = ref.strip()
    if looks_like_id(stripped) and not any(
            os.path.lexists(vault.folder(folder) / f"{stripped}.md") for folder in folders):
        import sqlite3

        from .search.index import Index
        from .search.analysis import card_fields

        opened = None if index is not None else Index.existing(vault, card_fields)
        index = index or opened
        if index is not None:
            try:
                paths = index.paths_with_id(stripped)
            except sqlite3.Error:
                paths = []
            finally:
                if opened is not None:
                    opened.close()
            if len(paths) == 1 and paths[0].split("/", 1)[0] in folders:
                try:
                    found = load_card(vault, vault.root / paths[0], layout=True)
                    if found.id == stripped:
                        return vault.root / paths[0], found
                except (OSError, BrainError):
                    pass   # gone or unreadable since it was indexed: the slow way decides
    try:
        return scan_card_path(vault, ref, folders), None
    except CardNotFound:
        named = _card_named(vault, stripped, agent) if "Playbooks" in folders else None
        if named is None:
            _raise_if_a_candidate(vault, ref, folders)
            raise
        return named, None


def _raise_if_a_candidate(vault: Vault, ref: str, folders: tuple[str, ...]) -> None:
    """Trigger: a lookup confined to Playbooks (`link`, `merge`, `explore`) names an Inbox
    candidate. Why: "no card with path, stem or id" sent the user to `search`, which finds the
    candidate and does not say why it was refused. Outcome: the error names the Inbox and the
    command that makes the candidate a card. A private candidate is not named (it could be another
    agent's: `card_not_found`'s rule)."""
    if "Inbox" in folders:
        return
    try:
        path = scan_card_path(vault, ref, ("Inbox",))
        scope = str(load_card(vault, path).meta.get("scope") or "")
    except (OSError, BrainError):
        return
    if scope.strip().lower() != "agent":
        raise CardNotFound(f"{vault.rel(path)} is an Inbox candidate, not a card yet; `brain promote "
                           f"{path.stem}` makes it one")


def _card_named(vault: Vault, ref: str, agent: str | None = ANYONE) -> Path | None:
    """The Playbooks card whose title or alias is `ref` (case-folded), or else, for a `ref` without
    a `/`, whose title or alias ends in `/ref` (as wikilinks resolve), or None; of the cards
    `agent` may see (ANYONE: all of them). Trigger: a reference that is no path, stem or id. Why: Obsidian finds a note by its
    aliases (`aliases: [Wolverine]`), and search did, but `get Wolverine` was NOT_FOUND.
    Outcome: that card; several are AmbiguousCard, naming only the cards that are not private
    (with ANYONE any agent may be asking; the caller's scope check hides a private one found alone)."""
    import sqlite3

    from .search.index import Index
    from .search.analysis import card_fields
    from .vault.storage import surely_a_path
    from .vault.wikilinks import link_name

    name = link_name(ref)
    if not name or surely_a_path(ref.strip()):
        return None
    try:
        index = Index.open(vault, card_fields, sweep=vault.settings.search.freshness_sweep)
        try:
            found = sorted(index.cards_named(name).values(), key=lambda meta: meta["path"])
        finally:
            index.close()
    except sqlite3.Error:
        return None
    if agent is not ANYONE:
        # Trigger: another agent's private card has the name whole, and a card the asker may see
        # has it as its title's end. Why: the whole name came first, and the caller's scope check
        # then hid the private card found: "no card", though the asker's own wikilink finds the
        # other. Outcome: the cards the asker may not see are no candidates at all.
        found = [meta for meta in found
                 if scope_admits(str(meta.get("scope") or ""), str(meta.get("agent") or ""), agent)]
    # Trigger: a title or alias with a `/` (`CI/CD pipeline timeout`). Why: names are matched
    # as wikilinks are, by the part after the last `/` ("cd pipeline timeout"), which "QA/CD
    # pipeline timeout" has too. Outcome: a card whose whole title or alias is `ref` (case-folded,
    # NFC) comes first; a reference with a `/` names no other.
    whole = _whole_name(ref)
    exact = [meta for meta in found if whole in map(_whole_name, [meta.get("title") or "", *(meta.get("aliases") or ())])]
    # Trigger: "CD pipeline timeout", the part of "CI/CD pipeline timeout" after its `/`, and no
    # card has it whole. Why: `[[CD pipeline timeout]]` links to that card (`links` and the graph
    # say so), yet `get` of the same name answered "no card" (decision 0004, "The end of a title
    # after its slash"). Outcome: the card(s) whose title or alias ends so, as a wikilink finds them.
    tail = not exact and "/" not in ref and "\\" not in ref
    found = found if tail else exact
    if len(found) == 1:
        return vault.root / found[0]["path"]
    if not found:
        return None
    named = [meta["path"] for meta in found if meta["scope"].strip().lower() != "agent"]
    hidden = len(found) - len(named)
    shown = ", ".join(named[:5]) + (f"{', ' if named else ''}{hidden} private" if hidden else "")
    if tail:
        raise AmbiguousCard(f"{ref} is the end of the title or alias of {len(found)} cards ({shown}); give the "
                            "whole title, the path or the id")
    raise AmbiguousCard(f"{ref} is the title or alias of {len(found)} cards ({shown}); give the path or id")


def _whole_name(text: Any) -> str:
    """A title, alias or reference as `_card_named` compares them: stripped, case-folded, NFC."""
    import unicodedata

    return unicodedata.normalize("NFC", str(text).strip().casefold())


def load_card_for_write(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS, near: Path | None = None) -> Card:
    """The card `ref` names, looked up and read under the write lock, after `writing` rolled
    forward what a killed writer left.
    Trigger: every logged write that addresses cards. Why: looked up before the lock, a card
    addressed by id could be missed while another writer renamed it (its old file removed,
    the new one not yet written) or after a writer was killed in between, until the roll-forward;
    8 racing writers met NOT_FOUND for cards that existed. Outcome: a writer sees every other
    writer's operation whole.
    `near`: where `card_path_hint` found the card before the lock. Read under the lock, it is
    taken when it still holds the card with the id `ref`; anything else is looked up again here,
    so only the index lookup (a connection and a query, most of an update's time under the
    lock) moves out of the lock, never the decision."""
    if near is not None:
        try:
            card = load_card(vault, near)
            if card.id and card.id == ref.strip() and vault.rel(near).split("/", 1)[0] in folders:
                return card
        except (OSError, BrainError):
            pass   # gone, renamed or unreadable since: looked up under the lock below
    path = card_path(vault, ref, folders)
    try:
        return load_card(vault, path)
    except FileNotFoundError:  # removed by hand between the lookup and the read
        raise CardNotFound(f"{ref} was deleted or renamed meanwhile; `brain search` finds it again") from None


def card_path_hint(vault: Vault, ref: str, folders: tuple[str, ...] = CARD_FOLDERS, index=None) -> Path | None:
    """Where the card with the id `ref` is now, looked up without the write lock (`card_path`,
    in `index` when given), for `load_card_for_write(near=)` to check under it; None for a
    reference that is no id, or not found."""
    if not looks_like_id(ref.strip()):
        return None
    try:
        return card_path(vault, ref, folders, index=index)
    except (OSError, BrainError):
        return None


@contextlib.contextmanager
def write_index(vault: Vault, ref: str, every_ref: bool = False) -> Iterator[Any]:
    """The existing search index, opened once for a write to one card named by `ref`: its id is
    looked up there before the write lock (`card_path`), and the written card passed on to it
    under the lock (`commit_operation(index=)`); None when `ref` is no id (no lookup: the write
    opens the index itself, if it needs it) or there is no usable index. Closed at the end.

    Trigger: `record` and `update` by id, which every HTTP feedback and PATCH is. Why: each
    opened the index twice, before the lock and under it (~0.3-0.5 ms of CPU each at 10,000
    cards: a connection reads the schema), and under the lock every writer waits. Outcome: one
    connection, opened outside the lock. No transaction is held between the two uses.
    `every_ref`: opened whatever `ref` is (`record`, which also asks it who else holds the id)."""
    index = None
    if every_ref or looks_like_id(ref.strip()):
        from .search.analysis import card_fields
        from .search.index import Index

        index = Index.existing(vault, card_fields)
    try:
        yield index
    finally:
        if index is not None:
            index.close()


@valueclass
class UnparsedCard:
    """A card whose frontmatter does not parse, as `get` shows it in every door (SPEC: its raw
    text and a warning; it is never rewritten): its path, its whole text, and the problem."""

    path: str
    raw: str
    problem: BadFrontmatter

    @property
    def warning(self) -> str:
        """The problem (file, line, what) and the fix, in one line, the same in every door."""
        return (f"{self.problem.message}; showing the raw file: fix the frontmatter by hand "
                "(the tool never rewrites a card it cannot parse)")

    def details(self) -> dict[str, Any]:
        """What every door's `get` gives for it: path, raw text, warning."""
        return {"path": self.path, "raw": self.raw, "warning": self.warning}


def get_card(vault: Vault, ref: str, agent: str | None = None) -> CardView | UnparsedCard:
    """The card and its confidence action; logs `referenced` (which also stops its decay).

    Another agent's private card (`scope: agent`) is not found, with the very error a missing
    card gives, so `get` never tells that it exists.

    Trigger: the card's frontmatter does not parse. Why: SPEC, "`get` on it prints the raw file
    and a warning", and no card may stop a command: the CLI showed the text while MCP and HTTP
    answered BAD_FRONTMATTER (422) for the same card. Outcome: an `UnparsedCard` (path, text,
    warning naming the line and the fix), through every door; found by path, stem or id as any
    card is (its id read leniently from its head), and hidden from other agents as a private
    card is (`raw_card`). Decision 0022, "One answer for a card that does not parse".
    """
    try:
        path = card_path(vault, ref, agent=agent)
    except CardNotFound as exc:
        # Trigger: a reference to a card that was renamed or deleted since. Why: an agent's
        # notes keep old names; "no card" alone sends it searching. Outcome: the same NOT_FOUND,
        # saying where the card went (never for another agent's private card).
        raise whereabouts(vault, ref, agent) or exc
    try:
        card = load_card(vault, path)
    except BadFrontmatter as exc:
        rel, raw = raw_card(vault, path, ref, agent)
        return UnparsedCard(rel, raw, exc)
    if not scope_admits(card.text_field("scope"), card.text_field("agent"), agent):
        raise card_not_found(ref)
    shown = view(card, References(vault))
    append_event(vault, "referenced", card.rel, card.id)
    return shown


def whereabouts(vault: Vault, ref: str, agent: str | None = None) -> CardNotFound | None:
    """The error for a reference that names no card now but did once, by the log: renamed (to
    which path) or deleted (by which event, and how to bring it back). None when the log never
    knew it, or when the card is private to another agent: then it must read exactly as a card
    that never existed. Reads only the log lines that hold the reference."""
    from .vault.events import events_holding, last_known_as
    from .vault.storage import private_owner_in_text, read_text

    wanted = ref.strip()
    needle = wanted.removesuffix(".md").rpartition("/")[2]
    known = last_known_as(events_holding(vault, needle.encode("utf-8")), wanted) if needle else None
    card_id = known[0].get("id") if known else None
    if not isinstance(card_id, str) or not card_id:
        return None   # never known, or a card that never had an id: nothing to follow it by

    def private(text: str | None) -> bool:   # read leniently, as for a broken card: hiding is the safe side
        owner = private_owner_in_text(text or "")
        return owner is not None and not scope_admits("agent", owner, agent)

    try:
        now = card_path(vault, card_id)
    except BrainError:
        now = None
    if now is not None:
        try:
            text = read_text(now, vault.rel(now))
        except (OSError, BrainError):
            return None
        if private(text):
            return None
        rel = vault.rel(now)
        return CardNotFound(f"no card {wanted!r}: it was renamed to {rel} (id {card_id}); get it by that path or id",
                            renamed_to=rel, id=card_id)
    mine = [e for e in events_holding(vault, card_id.encode("utf-8")) if e.get("id") == card_id]
    deleted = next((e for e in reversed(mine) if e.get("event") == "deleted"), None)
    if deleted is None:
        return None
    texts = [f.get("before") for f in deleted.get("files") or () if isinstance(f, dict)
             and f.get("path") == deleted.get("card")]
    if not texts or private(texts[0] if isinstance(texts[0], str) else None):
        return None
    eid = deleted.get("eid")
    return CardNotFound(f"no card {wanted!r}: it was deleted (event {eid}); `brain undo {eid}` brings it back, "
                        f"`brain history {card_id}` shows it", deleted_by=eid, id=card_id)


def raw_card(vault: Vault, path: Path, ref: str, agent: str | None = None) -> tuple[str, str]:
    """(path, raw text) of the card file at `path`, which `ref` named and whose frontmatter
    cannot be parsed, for `get_card` (docs/card-format.md: it is still readable as raw text);
    logs `referenced`.
    Trigger: its raw text marks it `scope: agent` for another agent (read leniently: it does not
    parse). Why: showing it would hand a private card to everyone the moment its YAML breaks.
    Outcome: not found, with the error a missing card gives."""
    from .vault.storage import private_owner_in_text, read_text

    raw = read_text(path, vault.rel(path))
    owner = private_owner_in_text(raw)
    if owner is not None and not scope_admits("agent", owner, agent):
        raise card_not_found(ref)
    append_event(vault, "referenced", vault.rel(path))
    return vault.rel(path), raw


# ---------------------------------------------------------------------------- record

@valueclass
class RecordResult:
    card: Card
    outcome: str
    before: float
    decayed: float
    after: float
    event: dict
    replaced: dict[str, Any] | None = None   # a person's own value the write replaced (`own_confidence`)

    def as_dict(self) -> dict[str, Any]:
        data = {"path": self.card.rel, "id": self.card.id, "outcome": self.outcome, "before": self.before,
                "decayed": self.decayed, "after": self.after, "event": self.event["eid"]}
        if self.replaced:
            data["replaced"] = self.replaced
        return data


def record(vault: Vault, ref: str, outcome: str, note: str | None = None, agent: str | None = ANYONE) -> RecordResult:
    """EWA update from feedback: decay the stored value to now, then apply the signal.
    With `agent` (a name, or None/"" for an anonymous agent), another agent's private card is not
    found, as in `get`; `ANYONE` (the CLI) may give feedback on any card.

    The card is re-read, updated and written under its lock, and the event appended before the
    lock is released, so concurrent records never lose an update and the log replays exactly.
    """
    if outcome not in SIGNALS:
        raise UsageError(f"unknown outcome {outcome!r}; use `used` or `rejected`")
    if note is not None and len(note) > 2000:
        raise UsageError("note is over 2000 characters; keep it to a sentence")
    if note is not None:
        check_text(note, "note")
    with write_index(vault, ref, every_ref=True) as index:
        return _record(vault, ref, outcome, note, agent, index)


def _record(vault: Vault, ref: str, outcome: str, note: str | None, agent: str | None, index) -> RecordResult:
    from .search.index import keeping_connections

    if not keeping_connections():
        # Trigger: a process of one command (the CLI, a hook, MCP on stdio). Why: a copy of the
        # card made a moment ago must be in the index for `refuse_a_shared_id`. Outcome: the index
        # brought up to date by its folders before the lock (a search's refresh, without the
        # sweep). A server's worker does not: each of its writes moves the folder's time, so each
        # feedback listed the folder again (16 clients at 10,000 cards: 0.16x the durable-write
        # floor, against 0.82x); its index is brought up to date by its searches and its upkeep's
        # sweep, so a hand copy is refused there once either has seen it (decision 0008).
        index = _refreshed(index)
    path, seen = _card_found(vault, ref, index=index, agent=agent)
    params = vault.settings.confidence
    with writing(vault) as writer:
        card = _recorded_card(vault, ref, path, seen, index, agent)
        path, rel = card.path, card.rel
        check_scope(card, ref, agent)
        refuse_a_shared_id(vault, card, index, agent)
        refs = References(vault)
        since = decay_since(card, refs)  # the clock reads use, so record agrees with them
        idle = days_between(since, now()) if since else None
        stored = stored_or_initial(card, params)
        faded = decayed(stored, idle, params) if idle is not None else stored
        after = ewa(faded, SIGNALS[outcome], params.alpha)
        card_id = card.id or derived_id(card)
        own = own_confidence(card)
        # Trigger: `confidence: high`, a person's own rating under the key the tool keeps its
        # number in. Why: it was overwritten with 0.55 without a word. Outcome: still replaced
        # (the feedback must count), but the result and the event say what was replaced, and the
        # event keeps the file's earlier text, so `undo` puts it back; `doctor` warns beforehand.
        replaced = {"confidence": own} if own is not None else None
        event = new_event(outcome, rel, card_id, note=note, before=stored,
                          decayed=faded if faded != stored else None,
                          idle_days=idle if idle is not None and idle > params.decay_after_days else None,
                          after=after, ts_ns=time.time_ns(), replaced=replaced)
        after = event["after"] = _after_in_log_order(vault, card, refs, event, after)
        written = card_from_text(vault, path, updated_text(card, {"confidence": after}))
        if replaced:
            event["files"] = undo_files(vault, [Effect(path, card.text, written.text)])
        # The card as read and as written go to the index with the texts (`wrote_files(made=,
        # was=)`), which otherwise parsed both again under the lock to see that no term changed.
        commit_operation(writer, [Effect(path, card.text, written.text)], [event], index=index,
                         made=[written], was=[card])
    return RecordResult(written, outcome, stored, faded, after, event, replaced)


def _recorded_card(vault: Vault, ref: str, path: Path, seen: Card | None, index, agent: str | None) -> Card:
    """The card `_record` found before the write lock at `path` (`seen`: as read then), read again
    under the lock (the parse taken when the text is the same: `load_card(parsed=)`).

    Trigger: a reference by id whose file, read under the lock, is gone or holds another card.
    Why: a rename (a person's, another writer's new title) between the look-up and the lock left
    the path naming another note, or none: the feedback was written into whatever was saved under
    the old name (its id and confidence added, the event naming it), or failed with "no such
    file" for a card that exists. Outcome: the id is looked up again under the lock; a reference
    by path or name stands as before."""
    stripped = ref.strip()
    try:
        card = load_card(vault, path, parsed=seen)
    except FileNotFoundError:
        if not looks_like_id(stripped):
            raise
        card = None
    if card is not None and (not looks_like_id(stripped) or _named_by(card, stripped)):
        return card
    path, seen = _card_found(vault, ref, index=index, agent=agent)
    return load_card(vault, path, parsed=seen)


def _named_by(card: Card, ref: str) -> bool:
    """Whether `ref`, a reference that could be an id, names `card` as `scan_card_path` finds it:
    its file's stem (in any case or normalisation), its id, or a prefix of 8 or more of its id."""
    if card.id is not None and (card.id == ref or (len(ref) >= 8 and card.id.startswith(ref))):
        return True
    return name_key(card.path.stem) == name_key(ref)


def refuse_a_shared_id(vault: Vault, card: Card, index, agent: str | None = ANYONE) -> None:
    """Refuse feedback on `card` when another Playbooks file holds its id too.

    Trigger: a card copied by hand, id and all. Why: feedback is logged, and replayed after a
    merge or by `doctor --fix`/`reindex` (`confidence.replay_feedback`), by id, so a record on one
    file moved both once the vault settled: a record must change the one card it names. Outcome:
    AmbiguousCard naming both files and `doctor`'s fix for duplicate ids; nothing is written or
    logged. The other files are found in the search index (`index`, the record's own: in a
    process of one command `_record` brought it up to date by its folders before the lock, so a
    copy made a moment ago counts; a server's is as its searches and sweep left it); with no
    usable index, by reading the cards' heads, as an id lookup without the index does. Another agent's private card is counted, never named (`card_not_found`'s rule)."""
    if not card.id:
        return
    import sqlite3

    from .vault.storage import _paths_with_id, private_owner_in_text, read_text, symlink_alias

    held = None
    if index is not None:
        try:
            held = index.paths_with_id(card.id)
        except sqlite3.Error:
            held = None   # busy or damaged now: the files decide
    if held is None:
        held = [vault.rel(path) for path, _ in _paths_with_id(vault, card.id, ("Playbooks",))]
        others = sorted(rel for rel in held if rel != card.rel)
    else:
        # Trigger: a path the index gives for the id whose file holds another card now (the card
        # renamed since the index looked, another note saved under its old name). Why: counted
        # as a copy, it refused the feedback on the one card with the id. Outcome: a file the
        # index names counts when it still holds the id (or cannot be read to say it does not).
        others = sorted(rel for rel in held if rel != card.rel and _still_holds_id(vault, rel, card.id))
    if not others:
        return
    alias = symlink_alias(vault, card.rel, others[0]) if len(others) == 1 else None
    if alias is not None:
        link, target = alias
        raise AmbiguousCard(f"{link} is a symlink to {target}: one card under two names, both holding its id "
                            f"{card.id}, which feedback (kept by id) cannot tell apart; delete the link "
                            f"(`rm {link}`), then record {target}", path=card.rel, id=card.id)
    named, hidden = [], 0
    for rel in others:
        try:
            owner = private_owner_in_text(read_text(vault.root / rel, rel))
        except (OSError, BrainError):
            owner = None
        if owner is not None and agent is not ANYONE and not scope_admits("agent", owner, agent or None):
            hidden += 1
        else:
            named.append(rel)
    shown = ", ".join(named) + (f"{', ' if named else ''}{hidden} private card{'s' if hidden > 1 else ''}"
                               if hidden else "")
    raise AmbiguousCard(f"{card.rel} shares its id {card.id} with {shown}: feedback is kept by id and would move "
                        f"{'both' if len(others) == 1 else 'all of them'}; delete the `id:` line of the one that "
                        "is a copy (its next write gives it an id of its own), then record again",
                        path=card.rel, id=card.id)


def _still_holds_id(vault: Vault, rel: str, card_id: str) -> bool:
    """Whether the file at `rel` is there and holds the card with `card_id` (`refuse_a_shared_id`);
    a file that cannot be read as a card counts, as any file there did."""
    try:
        return load_card(vault, vault.root / rel).id == card_id
    except FileNotFoundError:
        return os.path.lexists(vault.root / rel)   # a dangling link counts, as it did
    except (OSError, BrainError):
        return True


def _after_in_log_order(vault: Vault, card: Card, refs: References, event: dict[str, Any], after: float) -> float:
    """The card's confidence once `event` joins the log: `after` (EWA on what the card holds),
    unless the log holds feedback on the card from a later moment (a clone whose clock runs
    ahead, merged in through git). Then the event does not come last in the replay order, and
    the value is the replay of the card's whole logged feedback with it (`replay_feedback`).
    Trigger: such a later event. Why: the stored value must equal the replay in its one order,
    whatever the clocks. Outcome: the log is read whole, which only this rare case pays."""
    from .vault.confidence import replay_feedback, replay_order

    latest = refs.latest_feedback(card.id, card.rel)
    if latest is None:
        return after
    logged = {"ts": latest[0], **({"ts_ns": latest[1]} if latest[1] >= 0 else {})}
    if replay_order(logged)[:2] < replay_order(event)[:2]:
        return after
    from .vault.events import read_events

    mine = [e for e in read_events(vault) if e.get("id") == event["id"] or (not e.get("id") and e.get("card") == card.rel)]
    replayed = replay_feedback([*mine, event], vault.settings.confidence)
    return replayed.get(f"id:{event['id']}", after)


# ---------------------------------------------------------------------------- create

@valueclass
class CreateResult:
    card: Card | None
    created: bool
    insights: dict[str, list[dict[str, Any]]] = factory(dict)
    skipped_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        card = self.card
        return {"created": self.created, "path": card.rel if card else None, "id": card.id if card else None,
                "insights": self.insights, "skipped_reason": self.skipped_reason}


SUMMARY_CHARS = 200   # docs/compatibility.md, A memory's fields: the first 200 characters of its content
SUGGESTED_TAGS = 5


def memory_content(body: str, title: str | None = None) -> str:
    """The content of a memory (docs/compatibility.md, A memory's fields): the card's body without the first `# ` heading when it only
    repeats the title (the heading `create` writes above what was stored)."""
    text = body.strip("\r\n")
    first, _, rest = text.partition("\n")
    if title and first.startswith("# ") and first[2:].strip() == title.strip():
        text = rest.strip("\r\n")
    return text


def memory_summary(body: str, title: str | None = None) -> str:
    """The summary of a memory (docs/compatibility.md, A memory's fields): its content's first 200 characters, whitespace folded,
    without the lines git leaves around an unresolved merge conflict (`markdown.is_conflict_marker`)."""
    from .vault.markdown import is_conflict_marker

    content = memory_content(body, title)
    if "<<<<<<<" in content or ">>>>>>>" in content:
        content = "\n".join(line for line in content.splitlines() if not is_conflict_marker(line))
    return " ".join(content.split())[:SUMMARY_CHARS]


def summaries(vault: Vault, paths: list[str]) -> dict[str, str]:
    """`memory_summary` of each card at these vault-relative paths (read for it: the index holds
    no bodies); a card that cannot be read has none."""
    out: dict[str, str] = {}
    for rel in dict.fromkeys(p for p in paths if p):
        try:
            card = load_card(vault, vault.root / rel)
        except (OSError, BrainError):
            continue
        out[rel] = memory_summary(card.body, card.title)
    return out


def suggested_tags(index, title: str, body: str, tags: list[str], agent: str | None = None) -> list[dict[str, Any]]:
    """Tags the vault already uses that a new card's text names but its tags do not (docs/compatibility.md, A memory's fields;
    automatic tag suggestion), as `{"name", "count"}` (count: the cards that carry it), best
    first: the tags whose words the text repeats most, then the most used, at most five. A tag
    matches when every index term of it is a term of the text (so `react-native-screens`,
    `SG egress` and Japanese tags match as search would). Tags only other agents' private cards
    carry are never named. No index (a vault being built): none."""
    from .search.analysis import tokens

    terms: dict[str, int] = {}
    for term in tokens(f"{title}\n{body}"):
        terms[term] = terms.get(term, 0) + 1
    have = {t.casefold() for t in tags}
    # Trigger: every create. Why: filing every tag of the vault under its first term, in each
    # process, cost a CLI create at 10,000 cards ~20 M instructions (~2,800 tags loaded from a
    # cache file, or analysed). Outcome: the index gives the tags filed under the text's terms,
    # with their terms (`Index.tags_filed`, written once per tag by the indexing writer); a tag
    # only other agents' private cards carry counts none below and is passed over.
    # Trigger: the few tags the text names. Why: counting every tag's cards (a GROUP BY over
    # all of `card_tags`) cost ~4 ms a create at 10,000 cards. Outcome: only these are counted,
    # in the snapshot that filed them (one snapshot: its start and end cost more than either
    # query), the other agents' private cards left out (a tag only they carry counts none and
    # is passed over).
    try:
        with index.reading():
            wanted_terms = dict(index.tags_filed(terms))
            named = [tag for tag, wanted in wanted_terms.items()
                     if tag.casefold() not in have and all(term in terms for term in wanted)]
            if not named:
                return []
            hidden = [docid for docid, scope, owner in index.scoped_cards()
                      if not scope_admits(scope, owner, agent)]
            counts = index.tag_counts(hidden, named)
    except Exception:  # noqa: BLE001 - a suggestion is never worth failing a create for
        return []
    scored = []
    for tag in named:
        count = counts.get(tag)
        if not count:
            continue
        wanted = wanted_terms[tag]
        scored.append((-min(terms[term] for term in wanted), -count, tag))
    return [{"name": tag, "count": -count} for _, count, tag in sorted(scored)[:SUGGESTED_TAGS]]


def content_hash(title: str, body: str) -> str:
    """Hash of the normalised content (case and whitespace folded) for exact-duplicate checks."""
    normal = re.sub(r"\s+", " ", f"{title}\n{body}".casefold()).strip()
    import hashlib  # 1.8 ms of start-up that only create pays

    return hashlib.sha256(normal.encode("utf-8")).hexdigest()[:16]


def title_from_body(body: str, width: int = 80) -> str:
    """A title for content that came without one (MCP `store_memory`; docs/compatibility.md): the first `# `
    heading, else the first line with words, Markdown markers dropped, cut at a word near `width`.
    Content with no text is a UsageError naming the body."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    heading = next((line[2:].strip() for line in lines if line.startswith("# ")), None)
    # A section heading (`## Fix`) names a part, not the whole: prose comes before it.
    prose = [re.sub(r"^(?:[-*+>]|\d+[.)])\s*", "", line) for line in lines if not line.startswith("#")]
    text = heading or next((line for line in prose if re.search(r"\w", line)), "") or \
        next((line.lstrip("#").strip() for line in lines), "")
    text = " ".join(text.split())
    if not text:
        # Trigger: content with nothing to title it by (blank, or Markdown markers alone). Why: the
        # content is the memory; "empty title" named an argument the caller did not leave out.
        # Outcome: the content is named (each door in its own words: HTTP and MCP `content`).
        raise UsageError("--body has no text; give what the memory says", field="body")
    if len(text) > width:
        cut = text[:width]
        text = (cut.rsplit(" ", 1)[0] if " " in cut[width // 2:] else cut).rstrip(" ,.;:-")
    return text


def expand_body(body: str) -> str:
    """Shell callers pass `\\n` literally (the README's tour does); turn those into newlines
    when the body has no real newline."""
    if "\n" not in body and "\\n" in body:
        return body.replace("\\n", "\n")
    return body


# One create's plan before the write lock at a time in this process (`_plan_ahead`).
_PLANNING = threading.Lock()


def create_card(
    vault: Vault, *, card_type: str, domain: str, title: str, body: str = "", tags: list[str] | str = "",
    project: str | None = None, importance: int | None = None, scope: str | None = None,
    agent: str | None = None, no_duplicates: bool = False, extra: dict[str, Any] | None = None,
    insights: bool = True,
) -> CreateResult:
    """A new Playbooks card with id, confidence at the initial value and timestamps.

    Before writing, the card is compared with the existing ones: an `episode` that is an exact
    duplicate is skipped; a `fact` or `state` that closely matches an active one of the same
    domain and tags supersedes it (nothing is deleted); any other near duplicate is reported and
    created anyway unless `no_duplicates`.

    Three steps: the draft's embedding, when a provider is configured (outside the write lock:
    the provider may take up to its timeout); the plan made before the lock (`_plan_ahead`: the
    candidates, and with no provider their judging and the new card made); the plan made and
    committed under the lock (`_plan_and_commit`), which takes what the early plan found while
    it still holds.

    `insights=False`: the caller will not read the insights (a bulk writer over HTTP). Trigger:
    no `no_duplicates` (which refuses by them). Why: the candidates' search and their judging are
    ~60% of a create's CPU (~12 of ~20 ms at 10,000 cards), and a server's creates are bound by
    it. Outcome: the candidates are not judged, and only a fact or state (which supersedes the
    card of its subject) or an episode (skipped as an exact copy) searches for them; the result's
    insights hold only `supersedes`, so no caller takes "not looked for" for "none found".
    """
    draft = check_new_card(vault, card_type=card_type, domain=domain, title=title, body=body, tags=tags,
                           project=project, importance=importance, scope=scope, agent=agent)
    report = insights or no_duplicates
    compare = report or draft.card_type in SUBJECT_KINDS or draft.card_type == "episode"
    vectors = None
    if vault.settings.embeddings.provider:
        from .search.semantic import card_vectors

        vectors = card_vectors(vault, draft.title, draft.tags, draft.body)
    early = _plan_ahead(vault, draft, no_duplicates=no_duplicates, extra=extra, judge=vectors is None,
                        compare=compare, report=report)
    plan = _plan_and_commit(vault, draft, early, no_duplicates=no_duplicates, extra=extra,
                            vectors=vectors if compare else None, compare=compare, report=report)
    if not report:
        plan.result.insights = {"supersedes": plan.result.insights["supersedes"]}
    if vectors is not None and plan.effects:
        from .search.semantic import store_card_vector

        store_card_vector(vault, plan.result.card, vectors.vector)  # so no catch-up embeds it again
    return plan.result


@valueclass
class EarlyPlan:
    """What a create found before the write lock (`_plan_ahead`): the open `index` it searched
    (kept for the lock, None when there is none or the search failed), the log's size when its
    turn came (`mark`), the index's change stamp before the search, the `candidates` found
    (None: search under the lock), the judgement made of them (`prejudged`, None with a provider
    or after a failure) and the new card made (`ahead`)."""

    mark: int
    index: Any = None
    stamp: Any = None
    candidates: list[tuple[float, Card]] | None = None
    prejudged: DraftJudgement | None = None
    ahead: NewCardAhead | None = None


def _plan_ahead(vault: Vault, draft: CardDraft, *, no_duplicates: bool, extra: dict[str, Any] | None,
                judge: bool, compare: bool = True, report: bool = True) -> EarlyPlan:
    """The cards most like the new one, and with `judge` its judging against them and the new
    card made, before the write lock, in the index as it is. Without `compare` (`create_card`'s
    `insights=False`), no candidates (an empty list: none is searched for under the lock);
    without `report`, no judging, only the new card made.

    Trigger: every create. Why: the candidates' search and their judging were most of the time
    a create held the vault's write lock, which every writer of the vault waits on; refreshing
    the index here would race every other writer's folder changes. Outcome: under the lock the
    candidates are brought up to date (`still_related`), or searched for again when the index
    missed a change, and only a change since to one of them makes the draft judged again.

    Trigger: a process whose threads create at once (`serve`: 16 clients, a thread each). Why:
    the interpreter runs one thread at a time, so planning side by side gains no CPU; it only
    makes the thread holding the write lock wait for the interpreter after each file or index
    call. Outcome: this process plans one create at a time (`_PLANNING`), and not while it holds
    the write lock itself (`journal.step_aside`); the lock holder competes with one planner."""
    from .search.analysis import card_fields
    from .search.index import Index
    from .search.keyword import related

    with _PLANNING:
        step_aside(vault)
        early = EarlyPlan(log_size(vault))   # once its turn came: a write from now on is one `still_related` sees
        index = Index.existing(vault, card_fields)
        if index is None:
            return early
        import sqlite3

        try:
            early.stamp = index.change_stamp()   # before the search: a commit during it moves the stamp
            early.candidates = related(index, f"{draft.title} {' '.join(draft.tags)}", draft.agent) \
                if compare else []
            step_aside(vault)
            if judge:
                planned = plan_card(vault, index, draft, no_duplicates=no_duplicates, extra=extra,
                                    candidates=early.candidates, judge_only=True, report=report)
                early.prejudged, early.ahead = planned.judgement, planned.ahead
            early.index, index = index, None
        except (sqlite3.Error, OSError, BrainError):
            early.prejudged = early.ahead = None   # searched for and judged under the lock
        finally:
            if index is not None:
                index.close()
        return early


def _plan_and_commit(vault: Vault, draft: CardDraft, early: EarlyPlan, *, no_duplicates: bool,
                     extra: dict[str, Any] | None, vectors, compare: bool = True, report: bool = True) -> CardPlan:
    """Under the write lock: the early plan's candidates brought up to now, the draft planned
    (taking the early judgement and card where they still hold) and committed. Without
    `compare`, the draft is compared with no card; without `report`, not judged
    (`create_card`'s `insights=False`)."""
    from .search.analysis import card_fields
    from .search.index import Index

    index = None
    try:
        # The index stays open until the batch has ended: its end passes the cards on through
        # the last operation's own index (search/pass_on.py).
        with _until_taken(early.index) as held, writing(vault) as writer:
            index = _refreshed(held.pop()) or Index.open(vault, card_fields, sweep=None)
            candidates = early.candidates if compare else []
            if candidates is not None and compare:
                candidates = None if index.changes else still_related(vault, candidates, early.mark, draft.agent)
            prejudged = early.prejudged if candidates is not None else None
            plan = plan_card(vault, index, draft, no_duplicates=no_duplicates, extra=extra, vectors=vectors,
                             candidates=candidates, prejudged=prejudged, report=report,
                             supersede=_superseded_as_judged(index, early, candidates), ahead=early.ahead)
            if plan.effects:
                commit_operation(writer, plan.effects, plan.events, index=index, made=[plan.result.card],
                                 terms=plan.terms)
    finally:
        if index is not None:
            index.close()
    if plan.effects:
        keep_written_parse(plan.result.card)   # the next creates like it compare it (after the lock)
    return plan


def _superseded_as_judged(index, early: EarlyPlan, candidates: list[tuple[float, Card]] | None) -> list[Card] | None:
    """The cards the early judgement found the draft replaces, when that still holds under the
    lock; None to search for them again (`same_subject_cards`).

    Trigger: a fact or state judged before the lock, and since then no logged write
    (`still_related` kept the very list), no card indexed, re-indexed or removed by any process
    (the index's change stamp), no folder changed (`index.changes`), and every card its subject
    search weighed (those it replaces among them) still holds the text read: a person's save in
    place, unseen by the index, is caught here. Why: the search for the cards of its subject ran
    then over the same index and cards; again under the lock it cost ~10 M instructions and held
    every other writer. Outcome: its answer is taken."""
    prejudged = early.prejudged
    if prejudged is None or candidates is None or candidates is not early.candidates or early.stamp is None:
        return None
    if index.change_stamp() != early.stamp or not _unchanged(prejudged.subject_read):
        return None
    return prejudged.superseded


@contextlib.contextmanager
def _until_taken(index) -> Iterator[list]:
    """`[index]`, closed at the end unless the caller took it out of the list (an error before
    it could be used: the write lock not taken)."""
    held = [index]
    try:
        yield held
    finally:
        for left in held:
            if left is not None:
                left.close()


def _refreshed(index):
    """`index`, opened before the write lock, brought up to date under it (`Index.refreshed`);
    None when there is none or that fails (closed then): the caller opens the index afresh."""
    if index is None:
        return None
    import sqlite3

    try:
        return index.refreshed()
    except (sqlite3.Error, OSError):
        index.close()
        return None


def _as_it_is_now(vault: Vault, card: Card) -> Card | None:
    """`card` as its file holds it now (the caller holds the write lock), so a rewrite made from
    it keeps a person's save in place since it was read (before the lock, by the candidates'
    search); None when the file is gone or is no longer a card (nothing to mark)."""
    from .vault.storage import read_card_text

    try:
        text = read_card_text(vault, card.path)[0]
        return card if text == card.text else card_from_text(vault, card.path, text)
    except (OSError, BrainError):
        return None


def _unchanged(cards: list[Card]) -> bool:
    """Whether each card's file still holds the text it was read with (so a rewrite of it made
    from that text loses no edit made since)."""
    return all(_as_it_is_now(card.vault, card) is card for card in cards)


@valueclass
class CardDraft:
    """A new card's checked values (`check_new_card`), not yet compared or written."""

    card_type: str
    domain: str
    title: str
    body: str
    tags: list[str]
    project: str | None = None
    importance: int | None = None
    scope: str | None = None
    agent: str | None = None


@valueclass
class NewCardAhead:
    """A new card made before the write lock (`_made_ahead`): its id and creation moment, the
    frontmatter mapping, the card parsed from its rendered text at the path its name has when
    no other card holds it, and that card's analysed terms for the index (None without one)."""

    card_id: str
    moment: str
    meta: dict[str, Any]
    card: Card
    terms: Any = None


@valueclass
class CardPlan:
    """What creating one card would do: the result to report, and the file effects and events
    to commit as one operation (both empty when the card is skipped); `judgement`, what judging
    it found (None when no report was asked for), for a later plan of the same draft."""

    result: CreateResult
    effects: list[Effect] = factory(list)
    events: list[dict[str, Any]] = factory(list)
    judgement: DraftJudgement | None = None
    ahead: NewCardAhead | None = None   # the new card made before the lock (`judge_only`), for the plan under it
    terms: dict[str, Any] = factory(dict)   # the new card's analysed terms, by path, when made ahead


def still_related(vault: Vault, candidates: list[tuple[float, Card]], mark: int,
                  agent: str | None) -> list[tuple[float, Card]] | None:
    """The candidates `related` found before the write lock was taken (`mark`: the log's size
    then), brought up to now under it: a card a logged write changed since is read again (and
    left out when it is gone), and one it wrote that was not among them joins them (with no
    search score: it can be a duplicate, superseded or contradicted, not a suggested link).
    So a card created a moment earlier by a concurrent writer is compared with, as it would
    have been had the search waited for the lock. None (search again, under the lock) when the
    log was replaced meanwhile.

    Trigger: a server's creates, each reading under the lock the ~5-10 cards written since its
    search, most of them read by the previous creates of the same process too (their windows
    overlap). Why: parsing them was most of the ~0.8 ms of CPU this step held every writer for.
    Outcome: they are read as the candidates are (`load_compared_card`: the file read every
    time, its parse kept by the process for the same text)."""
    from .vault.events import READ_EVENTS, events_since

    since = events_since(vault, mark)
    if since is None:
        return None
    touched: dict[str, None] = {}
    for event in since:
        if event.get("event") in READ_EVENTS:
            continue
        for key in ("card", "renamed_from"):
            rel = event.get(key)
            if isinstance(rel, str) and rel.startswith("Playbooks/"):
                touched[rel] = None
    if not touched:
        return candidates
    from .vault.storage import load_compared_card

    out = []
    for score, card in candidates:
        if card.rel in touched:
            try:
                card = load_compared_card(vault, card.path)
            except (OSError, BrainError):
                continue   # removed (or renamed) meanwhile
        out.append((score, card))
    known = {card.rel for _, card in candidates}
    for rel in touched:
        if rel in known:
            continue
        try:
            card = load_compared_card(vault, vault.root / rel)
        except (OSError, BrainError):
            continue
        if scope_admits(card.text_field("scope"), card.text_field("agent"), agent):
            out.append((0.0, card))
    return out


def check_new_card(
    vault: Vault, *, card_type: str, domain: str, title: str, body: str = "", tags: list[str] | str = "",
    project: str | None = None, importance: int | None = None, scope: str | None = None,
    agent: str | None = None,
) -> CardDraft:
    """The arguments of a new card checked and normalised (UsageError on the first bad one);
    the body gets the title as its `# ` heading when it has none."""
    card_type = check_type(vault, card_type)
    domain = check_domain(vault, domain)
    title = check_title(title)
    tags = parse_tags(tags)
    body = check_body(expand_body(body or ""))
    if importance is not None and not 1 <= importance <= 5:
        raise UsageError(f"--importance {importance} is out of range; give 1 to 5")
    if scope not in (None, "global", "agent"):
        raise UsageError(f"--scope {scope!r} is not allowed; use global or agent")
    if scope == "agent" and not agent:
        raise UsageError("--scope agent needs --agent NAME")
    if agent and not scope:
        scope = "agent"
    if agent is not None:
        # Trigger: an agent name of blanks or of characters that show nothing (zero width, bidi
        # controls). Why: the card became private to an agent no one can name, listed as `(agent)`.
        # Outcome: bad usage naming the character, or the blank name; "" stays "no agent".
        check_text(agent, "--agent", name=True, field="agent")
        if agent and not agent.strip():
            raise UsageError("--agent is blank; give the agent's name, or leave --agent out for a shared card",
                             field="agent")
    if project is not None:
        project = check_project(project) or None
    if not body.lstrip().startswith("# "):
        body = f"# {title}\n\n{body}".rstrip("\n") + "\n"
    elif not body.endswith("\n"):
        body += "\n"
    return CardDraft(card_type, domain, title, body, tags, project, importance, scope, agent)


@valueclass
class DraftJudgement:
    """What judging a draft against the cards most like it found (`plan_card`): the cards judged
    (score, card), with the memory type and subject they were judged for, the insights and the
    suggested tags. A plan made before the write lock hands it to the plan made under it."""

    judged_on: list[tuple[float, Card]]
    memory_type: str | None
    subject: str
    insights: dict[str, list[dict[str, Any]]]
    suggested_tags: list[dict[str, Any]]
    superseded: list[Card] = factory(list)   # the cards it replaces (`same_subject_cards`, or the caller's)
    subject_read: list[Card] = factory(list)  # every card `same_subject_cards` weighed for them, as read
    state: Any = None   # where judging ended (`judgements.JudgeState`), for cards to judge after these

    def holds_for(self, judged_on: list[tuple[float, Card]], memory_type: str | None, subject: str) -> bool:
        """Whether these are the judgements of `judged_on` now: the very same cards (the same
        objects, scores), memory type and subject."""
        return (self.memory_type, self.subject) == (memory_type, subject) and len(self.judged_on) == len(judged_on) \
            and all(a is c and s == t for (s, a), (t, c) in zip(self.judged_on, judged_on))


def plan_card(vault: Vault, index, draft: CardDraft, *, no_duplicates: bool = False,
              extra: dict[str, Any] | None = None, supersede: list[Card] | None = None,
              skip_exact: bool = False, taken: set | None = None,
              candidates: list[tuple[float, Card]] | None = None, report: bool = True,
              vectors=None, valid_from: datetime | None = None, prejudged: DraftJudgement | None = None,
              judge_only: bool = False, ahead: NewCardAhead | None = None) -> CardPlan:
    """Compare `draft` with the cards most like it (through the open search `index`) and plan
    its creation; the caller holds the write lock and commits the plan (create one card,
    ingest many in one operation). Four steps: the cards to compare with, the cards it
    supersedes, the judgements (`_judge_draft`), then a skip (`_skipped`) or the new card's
    files and events (`_creation`).

    `supersede`: the cards the new one replaces, when the caller has decided (ingest does, for
    a statement placed in history); None leaves it to `same_subject_cards` (a fact or state
    replaces the active fact or state of the same subject key).
    `skip_exact`: skip an exact duplicate of an active card of any kind, not only an episode.
    `taken`: paths planned but not yet written in the same operation, so no two collide.
    `candidates`: the cards to compare with, when the caller has found them already (else the
    index is asked); `report=False` skips the insights (links, duplicates...) nobody will read.
    `vectors`: the draft's embedding (`semantic.card_vectors`), when a provider is configured:
    the cards nearest by vector join the candidates and the insights use cosines.
    `valid_from`: when the new card's statement came to hold (ingest's event time), if not at
    its creation: written as its `valid_from`, and the `valid_to` of the cards it supersedes.
    `prejudged`: the `judgement` of a plan of the same draft made before the write lock
    (`create_card`): its judgements are taken when they were made on the very cards this plan
    compares with, and its suggested tags always.
    `judge_only`: stop at the judgements (the plan before the lock, which only hands them on):
    the result holds no card and the plan no effects; its `ahead` is the new card made then
    (`_made_ahead`), when it would be created and supersedes nothing.
    `ahead`: that card, which `_creation` takes when the card it makes is the same (`_creation`).
    """
    from .search.keyword import related

    weighed: list[Card] | None = None   # the cards `same_subject_cards` weighed, when it ran
    # The cards most like the new one, through the search index: an exact duplicate
    # shares the title, so it ranks at the top of this title-and-tags query.
    if candidates is None:
        candidates = related(index, f"{draft.title} {' '.join(draft.tags)}", draft.agent)
    if vectors is not None:
        candidates = _with_vector_candidates(vault, vectors, candidates, draft.agent)
    extra = dict(extra or {})
    subject = ""
    if draft.card_type in SUBJECT_KINDS:
        from .judging.subjects import subject_of

        subject = extra.get("subject") if isinstance(extra.get("subject"), str) else subject_of(draft.title, draft.card_type)
        if subject:
            extra.setdefault("subject", subject)
        if supersede is None:
            weighed = []
            supersede = same_subject_cards(vault, index, draft, subject, candidates, weighed)
    supersede = supersede or []
    judgement = _judge_draft(vault, index, draft, candidates, supersede, extra.get("memory_type"), subject,
                             vectors, prejudged) if report else None
    if judgement is not None and weighed is not None:
        judgement.subject_read = weighed
    insights = {key: list(value) for key, value in judgement.insights.items()} if judgement is not None \
        else {key: [] for key in INSIGHT_KEYS}
    insights["suggested_tags"] = judgement.suggested_tags if judgement is not None else []
    insights["supersedes"] = [{"path": c.rel, "id": c.id, "title": c.title,
                               **({"subject": subject} if subject else {})} for c in supersede]
    skipped = _skipped(draft, candidates, insights, skip_exact, no_duplicates)
    if judge_only:
        made = _made_ahead(vault, index, draft, extra) if skipped is None and not supersede and valid_from is None \
            else None
        return CardPlan(CreateResult(None, False, insights), judgement=judgement, ahead=made)
    if skipped is not None:
        return CardPlan(skipped, judgement=judgement)
    plan = _creation(vault, index, draft, extra, supersede, taken, valid_from, ahead)
    plan.result.insights = insights
    plan.judgement = judgement
    return plan


def _judge_draft(vault: Vault, index, draft: CardDraft, candidates: list[tuple[float, Card]], supersede: list[Card],
                 memory_type: str | None, subject: str, vectors, prejudged: DraftJudgement | None) -> DraftJudgement:
    """The judgements of `draft` against the candidates it does not supersede (`_insights`) and
    its suggested tags, or those of `prejudged` when they still hold (`DraftJudgement.holds_for`)."""
    replaced = {card.rel for card in supersede}
    judged_on = [(score, card) for score, card in candidates if card.rel not in replaced]
    state: list = []
    if prejudged is not None and prejudged.holds_for(judged_on, memory_type, subject):
        # Trigger: the cards judged before the lock are the ones this plan compares with
        # (no write since changed, removed or added one). Why: judging them is most of a
        # create's time, and under the lock it serialises every writer. Outcome: the
        # judgements made then are the ones these cards get now.
        insights = prejudged.insights
    else:
        insights = _insights_after(vault, prejudged, judged_on, draft, memory_type, subject) \
            if prejudged is not None and vectors is None else None
        if insights is None:
            insights = _insights(vault, judged_on, draft, vectors, memory_type, subject, keep=state)
    if prejudged is not None:
        tags = prejudged.suggested_tags   # a suggestion: the index a moment earlier will do
    else:
        tags = suggested_tags(index, draft.title, draft.body, draft.tags, draft.agent) \
            if hasattr(index, "tag_counts") else []
    return DraftJudgement(judged_on, memory_type, subject, insights, tags, list(supersede),
                          state=state[0] if state else None)


def _insights_after(vault: Vault, prejudged: DraftJudgement, judged_on: list[tuple[float, Card]], draft: CardDraft,
                    memory_type: str | None, subject: str) -> dict[str, list[dict[str, Any]]] | None:
    """The insights of `judged_on` when it is the very list judged before the lock (the same
    cards, scores, memory type and subject) followed by cards written since (`still_related`
    puts them last), judging only those (`judgements.judge_more`), or, when they change which
    cards are the closest few, judging all again with the verdicts that still hold kept
    (`judgements.judge_again`); None when that cannot give what judging them all gives.

    Trigger: creates side by side (`serve`'s clients): nearly every create found cards another
    writer made between its search and the write lock, and judged all its candidates again
    under the lock. Why: that held every writer of the vault for the whole judging. Outcome:
    the verdicts of the cards judged before are kept, as judging them again would give them."""
    from .judging.judgements import judge_again, judge_more

    before = prejudged.judged_on
    if prejudged.state is None or (prejudged.memory_type, prejudged.subject) != (memory_type, subject) \
            or len(judged_on) < len(before) \
            or not all(a is c and s == t for (s, a), (t, c) in zip(before, judged_on)):
        return None
    after = judged_on[len(before):]
    more = _judged_candidates(after, subject, None)
    insights = judge_more(prejudged.state, more, last_feedback=_last_feedback_of(vault, after))
    if insights is None:
        # Trigger: a card written since is among the closest few now, where a judged one was.
        # Why: only the verdicts whose inputs changed (`judge_again`) differ from those found
        # before the lock. Outcome: those judged again, under the lock; the others kept.
        insights = judge_again(prejudged.state, more, last_feedback=_last_feedback_of(vault, judged_on))
    return insights


def _skipped(draft: CardDraft, candidates: list[tuple[float, Card]], insights: dict[str, list[dict[str, Any]]],
             skip_exact: bool, no_duplicates: bool) -> CreateResult | None:
    """Why the draft is not created, as the result to report, or None: an exact duplicate of an
    episode (of any active card with `skip_exact`), or a near duplicate with `no_duplicates`."""
    from .search.keyword import in_service

    if draft.card_type == "episode" or skip_exact:
        digest = content_hash(draft.title, draft.body)
        for _, card in candidates:
            if card.type == draft.card_type and (draft.card_type == "episode" or in_service(card.status)) \
                    and content_hash(card.title, card.body) == digest:
                return CreateResult(card, False, insights, f"exact duplicate of {card.rel}")
    if no_duplicates and insights["potential_duplicates"]:
        dup = insights["potential_duplicates"][0]
        why = dup.get("reason") or f"similarity {dup['similarity']}"
        return CreateResult(None, False, insights, f"near duplicate of {dup['path']} ({why}); "
                            "edit that card instead, or drop --no-duplicates")
    return None


def _new_card_meta(vault: Vault, draft: CardDraft, extra: dict[str, Any], superseded: list[Card], card_id: str,
                   moment: str, start: str, valid_from: datetime | None) -> dict[str, Any]:
    """The new card's frontmatter mapping (`_creation`)."""
    meta: dict[str, Any] = {
        "id": card_id, "title": draft.title, "type": draft.card_type, "domain": draft.domain, "tags": draft.tags,
        "confidence": vault.settings.confidence.initial, "created": moment, "updated": moment,
    }
    for key, value in (("project", draft.project), ("importance", draft.importance), ("scope", draft.scope),
                       ("agent", draft.agent)):
        if value is not None:
            meta[key] = value
    if superseded:
        meta["supersedes"] = superseded[0].id
    if superseded or valid_from is not None:
        meta["valid_from"] = start
    meta.update(extra)
    return meta


def _new_card_text(meta: dict[str, Any], body: str) -> str:
    return frontmatter.render(meta, "\n" + body if not body.startswith("\n") else body)


def _made_ahead(vault: Vault, index, draft: CardDraft, extra: dict[str, Any]) -> NewCardAhead:
    """The new card of a create that supersedes nothing, made before the write lock: its id and
    moment, its text rendered and parsed, its terms analysed for the index (`_creation` takes
    them under the lock when the card it makes there is the same)."""
    moment, card_id = iso(now()), new_id()
    meta = _new_card_meta(vault, draft, extra, [], card_id, moment, moment, None)
    card = card_from_text(vault, vault.folder("Playbooks") / _draft_filename(draft), _new_card_text(meta, draft.body))
    terms = None
    if getattr(index, "analyse", None) is not None:
        from .search.build import analysed

        terms = analysed(card, index.analyse)
    return NewCardAhead(card_id, moment, meta, card, terms)


def _creation(vault: Vault, index, draft: CardDraft, extra: dict[str, Any], superseded: list[Card],
              taken: set | None, valid_from: datetime | None, ahead: NewCardAhead | None = None) -> CardPlan:
    """The new card's file and `created` event, and each superseded card's rewrite and
    `superseded` event: one operation (its insights are filled in by `plan_card`).

    `ahead`: the card made before the write lock (`_made_ahead`). Trigger: this plan supersedes
    nothing and makes the very mapping made then (its id and moment taken from it). Why:
    rendering, parsing and tokenising the new card under the lock held every writer of the
    vault for ~1 ms a create (issue 22). Outcome: its text, card and terms are taken; only the
    file's name (a name another card took meanwhile gets a number) is settled here. The card's
    `created` is then the moment it was made, before it waited for the lock."""
    # (The name made ahead is the draft's (`_draft_filename`), which no path joined to it
    # changes. Made again here, it held every writer for ~0.1 ms.)
    filename = ahead.card.path.name if ahead is not None else _draft_filename(draft)
    if ahead is not None and not superseded and valid_from is None:
        moment, card_id = ahead.moment, ahead.card_id
    else:
        moment, card_id, ahead = iso(now()), new_id(), None
    start = iso(valid_from) if valid_from is not None else moment   # where the new card's validity begins and the old ones' ends
    meta = _new_card_meta(vault, draft, extra, superseded, card_id, moment, start, valid_from)
    path = unique_path(vault.folder("Playbooks"), filename, taken or (), known=_names_like(index, filename))
    rel = vault.rel(path)
    terms = {}
    if ahead is not None and meta == ahead.meta:
        made = ahead.card
        card = made if made.path == path else Card(vault, path, made.text, made.meta, made.body)
        if ahead.terms is not None:
            terms[rel] = ahead.terms
    else:
        card = card_from_text(vault, path, _new_card_text(meta, draft.body))
    effects = [Effect(path, None, card.text)]
    events = [new_event("created", rel, card_id, type=draft.card_type, domain=draft.domain, title=draft.title)]
    # Superseding an older fact or state is part of the same operation: both cards and
    # both events, or neither (docs/card-format.md, Kinds in time).
    for old in filter(None, (_as_it_is_now(vault, card) for card in superseded)):
        marked = updated_text(old, {"status": "superseded", "valid_to": start,
                                    "superseded_by": card_id, "updated": moment})
        effects.append(Effect(old.path, old.text, marked))
        events.append(new_event("superseded", old.rel, card_from_text(vault, old.path, marked).id,
                                superseded_by=card_id, files=undo_files(vault, effects[-1:])))
    # The whole operation (the new card and what it superseded) is what undoing `created` reverses.
    events[0]["files"] = undo_files(vault, effects)
    return CardPlan(CreateResult(card, True), effects, events, terms=terms)


def _draft_filename(draft: CardDraft) -> str:
    """The new card's file name: its type and title, and for a private card its agent's name
    (`storage.card_filename`), so a shared card's name never tells of a private one."""
    return card_filename(draft.card_type, draft.title, private_to(draft.scope, draft.agent))


def _names_like(index, filename: str) -> list[str] | None:
    """The Playbooks names the open search index knows that may collide with `filename` without
    regard to case (`Index.names_like`), or None to list the folder (no index, or an error)."""
    import sqlite3

    try:
        return index.names_like("Playbooks", filename) if hasattr(index, "names_like") else None
    except sqlite3.Error:
        return None


def _with_vector_candidates(vault: Vault, vectors, candidates: list[tuple[float, Card]],
                            agent: str | None) -> list[tuple[float, Card]]:
    """The keyword candidates plus the cards nearest by vector (keyword score 0 when the
    keyword search did not rank them), each given its cosine in `vectors.near`."""
    from .search.semantic import cosines_with

    known = {card.rel for _, card in candidates}
    out = list(candidates)
    for path in vectors.near:
        if path in known:
            continue
        try:
            card = load_card(vault, vault.root / path)
        except (OSError, BrainError):
            continue  # gone since it was embedded
        if scope_admits(card.text_field("scope"), card.text_field("agent"), agent):
            out.append((0.0, card))
    vectors.near.update(cosines_with(vault, vectors.vector, [c.rel for _, c in out if c.rel not in vectors.near]))
    return out


SUBJECT_KINDS = ("fact", "state")
INSIGHT_KEYS = ("suggested_links", "potential_duplicates", "supersedes", "contradictions", "success_after_failure")
MAX_SUPERSEDED = 3


def card_subject(card: Card) -> tuple[str, ...]:
    """The subject keys a fact or state card answers to: the `subject` written in it (by ingest,
    create, a model or a person) and the key of its title (`judging.subjects.subject_of`), so a card
    written by hand or before keys existed is found by its subject too."""
    from .judging.subjects import subject_of

    written = card.text_field("subject")
    derived = subject_of(card.title, card.type)
    return tuple(dict.fromkeys(key for key in (written, derived) if key))


def same_subject_cards(vault: Vault, index, draft: CardDraft, subject: str,
                       candidates: list[tuple[float, Card]], weighed: list[Card] | None = None) -> list[Card]:
    """The active facts and states a new fact or state with subject key `subject` replaces:
    the same subject (`judging.subjects.same_subject` on the keys, else `one_thing_one_kind_of_value` on
    the titles), scope, owner and project, among `candidates` and
    the cards a search for the subject's words finds (a title need not share words with the
    subject: "I moved to Kyoto" replaces "I live in Tokyo"). One judgement for create and ingest.
    `weighed`, when given, receives every card weighed (as read), whatever the answer."""
    from .search.keyword import in_service, related
    from .judging.subjects import one_thing_one_kind_of_value, same_subject, search_words

    if not subject or draft.card_type not in SUBJECT_KINDS:
        return []
    pool = list(candidates)
    words = search_words(subject)
    if words:
        seen = {card.rel for _, card in pool}
        pool += [(score, card) for score, card in related(index, f"{draft.title} {words}", draft.agent, limit=12)
                 if card.rel not in seen]
    if _short_subject(subject):
        pool += _cards_of_subject(vault, index, subject, {card.rel for _, card in pool})
    if weighed is not None:
        weighed += [card for _, card in pool]
    out: list[Card] = []
    for _, card in pool:
        if card.type not in SUBJECT_KINDS or not in_service(card.status) or card.rel in {c.rel for c in out}:
            continue
        if (card.text_field("scope") or "global") != (draft.scope or "global") \
                or (card.text_field("agent") or None) != (draft.agent or None) \
                or (card.text_field("project") or None) != (draft.project or None):
            continue   # an agent's memory never replaces a global one, nor one project's another's
        if any(same_subject(subject, key) for key in card_subject(card)) \
                or one_thing_one_kind_of_value(card.title, draft.title):
            # (Trigger: keys that differ, for statements that name one thing and a value of one kind:
            # "The api-gateway service runs on Node 18" / "api-gateway is on Node 20 now". Why: the
            # predicates vary endlessly, the thing and the kind of its value do not (blind11).
            # Outcome: the later statement replaces the earlier.)
            out.append(card)
            if len(out) == MAX_SUPERSEDED:
                break
    return out


def _short_subject(subject: str) -> bool:
    """A subject the index's bigrams cannot find: the end of a condition (`腰|*`: 腰が治った shares
    no bigram with 腰が痛い) or a Japanese entity of one or two characters (肩, 熱)."""
    entity = subject.split("|")[0]
    # (An ASCII entity is none: the kana and kanji class takes ~1.5 ms to compile, in every fact's create.)
    return subject.endswith("|*") or (not entity.isascii() and bool(re.search(r"[\u3040-\u9fff]", entity))
                                      and len(entity) <= 2)


def _cards_of_subject(vault: Vault, index, subject: str, seen: set[str]) -> list[tuple[float, Card]]:
    """The active facts and states whose title has a key of this subject, found from the index's
    listing rows (titles and types, no card read) and read only when they match. For the
    subjects `_short_subject` names, which are rare: a scan of the titles costs ~25 ms at 10,000."""
    from .judging.subjects import same_subject, subject_of

    out = []
    for row in index.listed_rows():
        path, title, card_type, status = row[0], row[3], row[4], row[9]
        if card_type not in SUBJECT_KINDS or status in ("superseded", "archived") or path in seen:
            continue
        if same_subject(subject, subject_of(title, card_type)):
            try:
                out.append((0.0, load_card(vault, vault.root / path)))
            except (OSError, BrainError):
                continue   # gone since it was indexed
    return out


def _insights(vault: Vault, scored: list[tuple[float, Card]], draft: CardDraft, vectors=None,
              memory_type: str | None = None, subject: str = "", keep: list | None = None
              ) -> dict[str, list[dict[str, Any]]]:
    """What a new card relates to (`judging.judgements.judge`: contradictions, success after failure,
    duplicates, typed links), against the active cards among `scored`. With `vectors`
    (semantic.CardVectors: a provider is configured and answered), a candidate's cosine confirms
    the keyword judgements; candidates without a vector are judged by keyword alone. `keep`
    receives where judging ended (`judgements.judge`)."""
    from .judging.judgements import CardText, judge

    settings = vault.settings
    new = CardText(draft.title, draft.body, list(draft.tags), draft.card_type, (memory_type or "").lower(),
                   subject=subject)
    out = judge(new, _judged_candidates(scored, subject, vectors), duplicate_bar=settings.promote.duplicate_similarity,
                duplicate_floor=vectors.duplicate_floor if vectors is not None else None,
                last_feedback=_last_feedback_of(vault, scored), keep=keep)
    return out


def _judged_candidates(scored: list[tuple[float, Card]], subject: str, vectors) -> list[tuple[dict[str, Any], Any, float | None]]:
    """The active cards among `scored` as `judgements.judge` takes them (entry, card text, cosine)."""
    from .judging.judgements import card_text
    from .search.keyword import in_service

    candidates = []
    for _, card in scored:
        if not in_service(card.status):
            continue
        cos = vectors.near.get(card.rel) if vectors is not None else None
        # A candidate's subject key is compared only with the new card's: none, none needed.
        candidates.append(({"path": card.rel, "id": card.id, "title": card.title},
                           card_text(card, with_subject=bool(subject)), cos))
    return candidates


def _last_feedback_of(vault: Vault, scored: list[tuple[float, Card]]) -> Callable[[dict[str, Any]], str | None]:
    """`judge`'s `last_feedback` for the cards of `scored`: read from the log when first asked."""
    refs = None

    def last_feedback(entry: dict[str, Any]) -> str | None:
        nonlocal refs
        refs = refs or References(vault)
        card = next(card for _, card in scored if card.rel == entry["path"])
        return refs.last_outcome(card)

    return last_feedback


# ---------------------------------------------------------------------------- list

SORTS = ("confidence", "updated", "title")


@valueclass
class ListResult:
    cards: list[CardView]
    problems: list[Problem]


@valueclass
class CardPage:
    """One page of a listing by folder and file name; `next_after` is the last path shown when more follow."""

    cards: list[CardView]
    next_after: str | None
    problems: list[Problem]


def _moment_key(value: Any) -> tuple[int, float]:
    moment = parse_time(value)
    return (1, moment.timestamp()) if moment else (0, 0.0)


def list_cards(vault: Vault, filters: Filters | None = None, sort: str = "title",
               folders: tuple[str, ...] = ("Playbooks",)) -> ListResult:
    """The cards of `folders` that pass `filters`, with their confidence as of now, sorted.
    Playbooks are read from the search index (`indexed_cards`), the Inbox from its files."""
    if sort not in SORTS:
        raise UsageError(f"unknown sort {sort!r}; use one of: {', '.join(SORTS)}")
    from .search.keyword import Filters, resolve_filters

    filters = resolve_filters(vault, filters or Filters(status="any"))
    with paused_gc():
        cards, problems = listed_cards(vault, folders, filters.admits)
        refs = References(vault)
        moment = now()
        views = [view(c, refs, moment) for c in cards]
    if sort == "confidence":
        views.sort(key=lambda v: (-v.confidence, v.card.title.casefold()))
    elif sort == "updated":
        # Trigger: `updated` written with different UTC offsets (clones in several time zones, hand
        # edits). Why: as text, 10:00+09:00 sorts after 05:00+00:00 though it is four hours earlier.
        # Outcome: newest first by the moment itself; a card without a readable `updated` goes last.
        views.sort(key=lambda v: _moment_key(v.card.meta.get("updated")), reverse=True)
    else:
        views.sort(key=lambda v: v.card.title.casefold())
    return ListResult(views, problems)


@valueclass
class LineList:
    """`list_lines`' result: per card, the fields of its `CardView.summary` that its line in a
    listing shows, as a tuple in `LINE_KEYS` order, in `list_cards`' order; and the files skipped."""

    rows: list[tuple]
    problems: list[Problem]


# What a listing's line shows of a card's summary (`age` and `valid_to`: None but for a state card).
LINE_KEYS = ("confidence", "type", "domain", "title", "status", "path", "age", "valid_to")


def _line_of(summary: dict[str, Any]) -> tuple:
    return tuple(summary.get(key) for key in LINE_KEYS)


def list_lines(vault: Vault, filters: Filters | None = None, sort: str = "title",
               folders: tuple[str, ...] = ("Playbooks",)) -> LineList:
    """`list_cards`, as one line per card shows it: the same cards in the same order, each as
    the `LINE_KEYS` of its summary, holding the very values `list_cards` gives.

    Trigger: Playbooks sorted by title or confidence, filtered on what the index's `facets`
    columns hold (type, domain, project, status, scope and agent). Why: at 10,000 cards, decoding
    each card's stored JSON and making a view and a summary of it was most of `list`. Outcome: a
    card is read from its columns (a state card's age too: `kinds.state_of`), its stored
    confidence shown as is when its decay clock surely started within the decay threshold
    (`confidence.clocks_after`); only a card whose confidence may have decayed is made into a view
    as `list_cards` makes it. Anything else (the Inbox, a sort by `updated`, a filter by tag or
    time) is `list_cards`."""
    from .search.keyword import Filters, resolve_filters

    filters = resolve_filters(vault, filters or Filters(status="any"))
    if not _listed_from_columns(vault, filters, sort, folders):
        result = list_cards(vault, filters, sort, folders)
        return LineList([_line_of(v.summary()) for v in result.cards], result.problems)
    from itertools import repeat
    from operator import itemgetter

    from .search.index import Index
    from .search.analysis import card_fields
    from .vault.kinds import state_of

    settings = vault.settings
    refs = References(vault)
    moment = now()
    horizon = moment.timestamp() - (settings.confidence.decay_after_days + 1) * 86_400  # see health.audit
    initial = settings.confidence.initial
    # With no filter but the scope rule (the default), only a card with a `scope` can be left out.
    every = filters == Filters(status="any", agent=filters.agent)
    admits = filters.admits
    index = Index.open(vault, card_fields, sweep=settings.search.freshness_sweep)
    try:
        with index.reading():
            rows = index.listed_rows()
            problems = index.problems()
            if not every or any(map(itemgetter(7), rows)):
                rows = [row for row in rows if (every and not row[7]) or admits(
                    {"type": row[4], "domain": row[5], "project": row[6] or "", "scope": row[7] or "",
                     "agent": row[8] or "", "status": row[9]})]
            # Rows come by title case-folded, then path: `list_cards`' order, but for cards in subfolders (below).
            # Column by column, so the lines are made by zip and map, not a Python loop over 10,000 rows.
            paths, docids, ids, titles, types, domains, _, _, _, statuses, confidences, stated, ctimes, sinces, \
                valid_tos = zip(*rows) if rows else [()] * 15
            confidences = [initial if stored is None else stored for stored in confidences]
            ages, valid_until = [None] * len(rows), [None] * len(rows)
            for place in [place for place, card_type in enumerate(types) if card_type == "state"]:
                state = state_of(sinces[place], valid_tos[place] or "", moment)
                ages[place], valid_until[place] = state.get("age"), state["valid_to"]
            shown = list(zip(confidences, zip(map(round, confidences, repeat(4)), types, domains, titles, statuses,
                                              paths, ages, valid_until)))   # (confidence, line), in row order
            # A card whose confidence may have decayed is looked at as `list_cards` does.
            closer = {paths[place]: place for place, sure in
                      enumerate(clocks_after(zip(ids, paths, stated, ctimes), refs, horizon)) if not sure}
            stored_rows = index.stored_cards([docids[place] for place in closer.values()])
    finally:
        index.close()
    with paused_gc():  # an object or three per card looked at closely: see paused_gc
        for folder, name, size, mtime, inode, meta in stored_rows:
            rel = f"{folder}/{name}"
            card = view(IndexedCard.from_row(vault, rel, (size, mtime, inode), json.loads(meta)), refs, moment)
            shown[closer[rel]] = (card.confidence, _line_of(card.summary()))
    if max(map(str.count, paths, repeat("/")), default=0) > 1:
        # Cards in subfolders: equal titles in load_cards' order, paths compared part by part
        # (`a/b.md` before `a-c.md`, unlike the strings), as `indexed_cards` gives them.
        shown.sort(key=lambda entry: entry[1][5].split("/"))
        shown.sort(key=lambda entry: entry[1][3].casefold())
    problems.sort(key=lambda problem: problem.path.split("/"))
    if sort == "confidence":  # stable: equal confidences stay in title order, as in `list_cards`
        shown.sort(key=lambda entry: -entry[0])
    return LineList([entry[1] for entry in shown], problems)


def _listed_from_columns(vault: Vault, filters: Filters, sort: str, folders: tuple[str, ...]) -> bool:
    """Whether `list_lines` reads this listing from the index's columns (see there)."""
    return (sort in ("title", "confidence") and folders == ("Playbooks",) and not vault.leads_outside("Playbooks")
            and not (filters.tags or filters.as_of or filters.since or filters.until or filters.memory_type))


@valueclass
class ListPage:
    """`list_page`'s result: the cards of one page of a listing, how many the listing holds,
    and the files skipped (their frontmatter does not parse, ...)."""

    cards: list[CardView]
    total: int
    problems: list[Problem] = factory(list)

    def has_more(self, offset: int) -> bool:
        """Whether cards follow this page (which began at `offset`)."""
        return offset + len(self.cards) < self.total


def list_page(vault: Vault, filters: Filters | None, sort: str, offset: int, limit: int | None,
              folders: tuple[str, ...] = ("Playbooks",)) -> ListPage:
    """`list_cards(vault, filters, sort, folders).cards[offset:offset + limit]` (`limit` None: to
    the end), and the length of the whole list: the one paged listing, for MCP `list_memories`
    and the CLI's `list --limit/--offset` (HTTP pages by cursor: `page_cards`).

    Trigger: a listing `list_lines` reads from the index's columns. Why: a page of 20 made a
    view of every card (at 10,000 cards ~38 MB of objects at once, for one call), and a
    long-lived server kept that peak as resident memory it did not give back (issue 22: 11-14 MB
    of growth over 1,000 MCP calls). Outcome: the order and the count come from `list_lines`'
    rows (a tuple a card), and only the page's cards are read, from their files, as a `get` reads
    them; a card deleted in between is left out of the page. Any other listing is `list_cards`
    sliced."""
    if limit is not None and limit < 1:
        raise UsageError(f"--limit {limit} must be at least 1", field="limit")
    if offset < 0:
        raise UsageError(f"--offset {offset} must be 0 or more", field="offset")
    from .search.keyword import Filters, resolve_filters

    filters = resolve_filters(vault, filters or Filters(status="any"))
    end = None if limit is None else offset + limit
    if not _listed_from_columns(vault, filters, sort, folders):
        result = list_cards(vault, filters, sort, folders)
        return ListPage(result.cards[offset:end], len(result.cards), result.problems)
    lines = list_lines(vault, filters, sort, folders)
    path_at = LINE_KEYS.index("path")
    refs = References(vault)
    moment = now()
    page = []
    for row in lines.rows[offset:end]:
        try:
            page.append(view(load_card(vault, vault.root / row[path_at]), refs, moment))
        except (OSError, BrainError):
            continue   # deleted or broken since the index saw it; the next refresh drops it
    return ListPage(page, len(lines.rows), lines.problems)


def page_cards(vault: Vault, filters: Filters | None, limit: int, after: str | None = None) -> CardPage:
    """Up to `limit` Playbooks cards that pass `filters`, ordered by folder then file name,
    starting after path `after`.

    That order is total and a card's path is its own, so a page boundary is stable: cards
    created or deleted meanwhile neither repeat nor shift the cards of the next page. The cards
    are chosen from the search index (refreshed as a search refreshes it), and only the page's
    own cards are read: a page of 50 out of 10,000 cards costs what 50 `get`s do.
    """
    if limit < 1:
        raise UsageError(f"limit {limit} must be at least 1")
    import sqlite3

    from .search.index import Index
    from .search.analysis import card_fields
    from .search.keyword import Filters, resolve_filters

    filters = resolve_filters(vault, filters or Filters(status="any"))
    sweep = vault.settings.search.freshness_sweep

    def choose(index: Index) -> tuple[list[str], list[Problem]]:
        chosen = []
        # `Filters.admits` compares type and domain lowercased; the index stores them so.
        exact = {key: value.lower() for key, value in (("type", filters.type), ("domain", filters.domain)) if value}
        for meta in index.cards_in_path_order(after, **exact):
            if filters.admits(meta):
                chosen.append(meta["path"])
                if len(chosen) > limit:   # one more than the page: there is a next page
                    break
        return chosen, index.problems()

    index = Index.open(vault, card_fields, sweep=sweep)
    try:
        try:
            chosen, problems = choose(index)
        except sqlite3.DatabaseError as exc:
            index = index.reopen(exc, sweep)   # damaged or gone under us: as search does
            chosen, problems = choose(index)
    finally:
        index.close()
    refs = References(vault)
    moment = now()
    page: list[CardView] = []
    for rel in chosen[:limit]:
        try:
            card = load_card(vault, vault.root / rel)
        except (OSError, BrainError):
            continue   # deleted or broken since the index saw it; the next refresh drops it
        if filters.admits_card(card):   # the file may have changed since it was indexed
            page.append(view(card, refs, moment))
    return CardPage(page, chosen[limit - 1] if len(chosen) > limit else None, problems)


class IndexedCard(Card):
    """A Playbooks card as the search index holds it (`store.card_meta`): the frontmatter keys
    lists show (`store.LISTED_KEYS`, as written) and the file's stamps, without its text or
    body. Every property reads as the file's own card would, so the same functions serve both
    (confidence and its decay, `CardView.summary`, kinds); what needs the body loads the file.
    Made by `from_row`, which sets the fields directly: at 10,000 cards the generic record
    constructor and a `Path` per card cost more than the rest of `list`."""

    @classmethod
    def from_row(cls, vault: Vault, rel: str, stamps: tuple[int, int, int], meta: dict[str, Any]) -> "IndexedCard":
        """The card at `rel` from its (size, mtime_ns, inode) and its stored `card_meta`."""
        card = cls.__new__(cls)
        card.__dict__.update(vault=vault, text="", meta=meta["front"], body="", size=stamps[0],
                             mtime_ns=stamps[1], inode=stamps[2], ctime_ns=meta["ctime_ns"], stored=meta,
                             stored_rel=rel)
        return card

    # What `card_meta` stored is what these properties computed from the file.
    path = property(lambda self: self.vault.root / self.stored_rel)  # made when asked: lists rarely need it
    rel = property(lambda self: self.stored_rel)
    id = property(lambda self: self.stored["id"])
    title = property(lambda self: self.stored["title"])
    type = property(lambda self: self.stored["type"])
    domain = property(lambda self: self.stored["domain"])
    status = property(lambda self: self.stored["status"])
    tags = property(lambda self: self.stored["tags"])


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector paused for a block that builds an object or three per
    card. Trigger: a list, audit or analyze of a whole vault. Why: the collector runs every 700
    new objects and walks every one that survived so far, none of which is garbage; at 10,000
    cards that was ~40% of `list`. Outcome: it runs again when the block ends."""
    import gc

    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def listed_cards(vault: Vault, folders: tuple[str, ...] = ("Playbooks",),
                 admits: Callable[[dict[str, Any]], bool] | None = None) -> tuple[list[Card], list[Problem]]:
    """The cards of `folders` whose `store.card_meta` `admits` passes, and the files skipped,
    as `load_cards` gives them: Playbooks from the search index (`indexed_cards`)."""
    if folders == ("Playbooks",) and vault.leads_outside("Playbooks") is None:
        return indexed_cards(vault, admits)
    # Trigger: the Inbox (not indexed), or a Playbooks folder that leads outside the vault.
    # Why: the index covers Playbooks only; it skips a folder that leads out, as load_cards
    # does, but only load_cards says so. Outcome: the files are read, as before the index.
    from .search.store import card_meta

    cards, problems = load_cards(vault, folders)
    return [c for c in cards if admits is None or admits(card_meta(c))], problems


def indexed_cards(vault: Vault, admits: Callable[[dict[str, Any]], bool] | None = None) -> tuple[list[Card], list[Problem]]:
    """Every Playbooks card the index holds that `admits(meta)` passes (`Filters.admits`), as
    `IndexedCard`s, and the files that are no cards, both in the order `load_cards` gives
    (sorted paths). The index is refreshed first, as a search refreshes it (index.py), so a
    card edited or added by hand is read again, not every card."""
    from .search.index import Index
    from .search.analysis import card_fields

    index = Index.open(vault, card_fields, sweep=vault.settings.search.freshness_sweep)
    try:
        with index.reading():
            rows = index.db.execute("SELECT folder, name, size, mtime_ns, inode, meta FROM docs "
                                    "JOIN doc_data USING (docid)").fetchall()
            problems = index.problems()
    finally:
        index.close()
    rows.sort()  # by folder and name: cheaper here than an ORDER BY that visits rows in index order
    loads, cards, make = json.loads, [], IndexedCard.from_row
    for folder, name, size, mtime, inode, stored in rows:
        meta = loads(stored)
        if admits is None or admits(meta):
            cards.append(make(vault, f"{folder}/{name}", (size, mtime, inode), meta))
    # In load_cards' order: paths compared part by part (`a/b.md` before `a-c.md`, unlike the
    # strings). Within one folder, the order of names sorted above is already that order.
    if len({row[0] for row in rows}) > 1:
        cards.sort(key=lambda card: card.stored_rel.split("/"))
    problems.sort(key=lambda problem: problem.path.split("/"))
    return cards, problems
