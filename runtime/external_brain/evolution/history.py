"""The audit trail of a card (`history`) and one generic `undo` for every logged operation.

What it promises:
- `history CARD` lists every event about the card, newest first, following it by `id` across
  renames, promotion and deletion (a deleted or renamed card is still found by its id, or by
  any path or file stem the log knew it by), with the files' text changes as a short unified
  diff where the log holds both sides.

- `undo EVENT_ID` reverses any event that carries `files` (update, delete with its cascade,
  link, unlink, create with what it superseded, promote, and undo itself): each file goes back
  to its whole earlier text (or is removed when it did not exist). A file changed since that
  event is refused with `Conflict`, naming it, unless `force`. The undo is one logged operation
  (`undone`) that carries `files` itself, so undoing an undo redoes. An undo that gives a card
  back its earlier file name (a rename undone) relinks the other cards' wikilinks to the name
  it leaves, as the rename did; one that removes a card from Playbooks (a create undone) takes
  the other cards' links to it away, as `delete` does (`_links_followed`). An undo never
  writes over another card (another id) nor puts a card back at a file name while it lives
  under another, --force or not (`_check_same_card`, `_check_not_living_elsewhere`).
- Another agent's private card (`scope: agent`) has no history to show, and no other card's
  history names it: an event done to it (a link from it) is left out, and its path (its title)
  is left out of an event that touched it too (a delete's cascade), as every read does.
- Both read the card through the one safe reader: a FIFO or device named like a card is refused
  at once (NotACard), as by `get`, never waited for or read.
- Both read the whole log; neither is on a hot path (events.read_events).
"""

from __future__ import annotations

from typing import Any

from ..errors import BrainError, CardNotFound, Conflict, NotUndoable, UnsafePath, UsageError
from ..writes import commit_operation
from ..vault.events import last_known_as, new_event, read_events
from ..vault.journal import Effect, fingerprint, undo_files, writing
from ..vault.valueclass import factory, valueclass
from ..vault.storage import (
    CARD_FOLDERS, DELETED, Vault, card_from_text, card_not_found, check_relative, current_bytes, scan_card_path, load_card,
    private_owner_in_text, read_card_text, scope_admits,
)

MAX_DIFF_LINES = 40
_SHOWN_ELSEWHERE = {"eid", "ts", "event", "actor", "card", "id", "files"}


def find_event(vault: Vault, eid: str) -> dict[str, Any]:
    """The logged event with this id (or a unique prefix of 8+ characters)."""
    ref = (eid or "").strip()
    if len(ref) < 8:
        raise UsageError(f"event id {eid!r} is too short; give the `eid` (or its first 8+ characters) "
                         "that `history CARD` shows")
    matches = [e for e in read_events(vault) if str(e.get("eid", "")).startswith(ref)]
    exact = [e for e in matches if e.get("eid") == ref]
    if exact or len(matches) == 1:
        return (exact or matches)[0]
    if matches:
        raise UsageError(f"event id {ref} matches {len(matches)} events; give more of it")
    raise CardNotFound(f"no event {ref} in the log; `history CARD` shows a card's events")


# ---------------------------------------------------------------------------- undo

@valueclass
class UndoResult:
    undone: dict[str, Any]
    files: list[str]
    event: dict[str, Any] | None          # the `undone` event logged; None when nothing was left to undo
    forced: list[str] = factory(list)
    already_undone_by: str | None = None  # the undo that did it, when the files are already as before
    removed: list[str] = factory(list)    # those of `files` the undo removed (no text before the event)
    relinked: list[str] = factory(list)   # those of `files` not in the event: their links followed a card


def undo(vault: Vault, eid: str, force: bool = False) -> UndoResult:
    """Restore every file of event `eid` to its text before that event: see the module docstring."""
    target = find_event(vault, eid)
    files = target.get("files")
    if not isinstance(files, list) or not files:
        raise NotUndoable(f"event {target['eid']} ({target.get('event')}) changed no file the log kept, so it cannot "
                          "be undone; only events that changed cards can (create, update, delete, link, unlink, "
                          "merge, promote, ingest, import, an Inbox reject or merge, undo): `history CARD` shows "
                          "`(undo ID)` beside each")
    planned = []
    for item in files:
        if not isinstance(item, dict) or not isinstance(item.get("path"), str):
            raise NotUndoable(f"event {target['eid']} has a malformed `files` list; it cannot be undone")
        path = check_relative(vault, item["path"])
        if not any(vault.folder(f) in path.parents for f in CARD_FOLDERS) and vault.root / DELETED not in path.parents:
            raise UnsafePath(f"event {target['eid']} names {item['path']}, outside the card folders; not undoing it")
        planned.append((path, item))
    planned = _one_item_a_file(planned)
    kept = _kept_copies(target, planned)
    with writing(vault) as writer:
        if all(_read(vault, path) == item.get("before") for path, item in planned):
            # Trigger: every file is already at its text from before the event (undone once
            # already, or put back by hand). Why: undoing again restored nothing, yet was a
            # CONFLICT, and with --force logged an `undone` event that did nothing.
            # Outcome: nothing written, nothing logged; the result says which undo did it.
            by = next((e.get("eid") for e in reversed(list(read_events(vault)))
                       if e.get("event") == "undone" and e.get("undoes") == target["eid"]), None)
            return UndoResult(target, [], None, already_undone_by=by or "")
        effects, forced = [], []
        _check_not_living_elsewhere(vault, target, planned, kept)
        for path, item in planned:
            current = _read(vault, path)
            before = item.get("before")
            if any(item is copy_item for copy_item in kept.values()):
                # The copy of a removed card, which a merge may have brought an edit to (see
                # below), or which was pruned since (vault/settle.py): nothing to check.
                pass
            elif fingerprint(current) != item.get("after"):
                _check_same_card(vault, path, current, before, target)
                if not force:
                    raise Conflict(f"{item['path']} changed since event {target['eid']}; look at `history` and "
                                   "undo the later events first, or pass --force to overwrite it",
                                   path=item["path"], event=target["eid"])
                forced.append(item["path"])
            if item["path"] in kept and isinstance(before, str):
                copy_item = kept[item["path"]]
                copy = _read(vault, check_relative(vault, copy_item["path"]))
                if copy is not None and fingerprint(copy) != copy_item.get("after"):
                    # Trigger: the card's copy in .brain/deleted/ changed since the event. Why:
                    # git carried another clone's edit of the card there when the clones merged.
                    # Outcome: the card comes back with that edit, not without it.
                    before = copy
            if current == before or (current is None and before is None):
                continue
            effects.append(Effect(path, _as_read(vault, path, current), before))
        followed = _links_followed(vault, effects)
        effects += followed
        effects = _with_logged_confidence(vault, effects)
        card_id = target.get("id")
        event = new_event("undone", target.get("card"), card_id, undoes=target["eid"], undoes_event=target.get("event"),
                          forced=forced or None, files=undo_files(vault, effects))
        commit_operation(writer, effects, [event])
    followed_paths = {e.path for e in followed}
    return UndoResult(target, [vault.rel(e.path) for e in effects], event, forced,
                      removed=[vault.rel(e.path) for e in effects if e.after is None],
                      relinked=[vault.rel(e.path) for e in effects if e.path in followed_paths])


def _check_same_card(vault: Vault, path, current: str | None, before: Any, target: dict[str, Any]) -> None:
    """Raise Conflict, even with --force, when the file the undo would put a card's earlier text
    in holds another card now (another id).

    Trigger: a card deleted (or renamed), and a new card given its file name since; then its
    delete (or rename) undone. Why: the refusal said the file "changed" and offered --force,
    which wrote the old card over the new one: that card left the vault with no copy in
    `.brain/deleted/` (every other removal keeps one, for git). Outcome: refused, naming the
    card there now, so that it is renamed or deleted first (a delete keeps it)."""
    if current is None or not isinstance(before, str):
        return
    try:
        there, wanted = card_from_text(vault, path, current).id, card_from_text(vault, path, before).id
    except BrainError:
        return
    if there and wanted and there != wanted:
        rel = vault.rel(path)
        raise Conflict(f"{rel} holds another card now (id {there}); undoing event {target['eid']} would write card "
                       f"{wanted} over it (refused, --force too): rename or delete {rel} first, then undo again",
                       path=rel, event=target["eid"], holds=there)


def _check_not_living_elsewhere(vault: Vault, target: dict[str, Any], planned: list, kept: dict) -> None:
    """Raise Conflict, even with --force, when a card the undo would put back at a file name that
    is empty now lives under another name in Playbooks (the search index's paths for its id,
    refreshed like a search), which the undo does not touch.

    Trigger: `undo --force` of an edit made before the card was renamed (or of a delete after the
    card came back under another name). Why: the card's earlier text was written at its old file
    name beside the renamed one: two files with one id, which `doctor` reports as an error and
    `get` by id refuses. Outcome: refused, naming where the card is now and what to undo first."""
    wanted = []
    for path, item in planned:
        before = item.get("before")
        if (not isinstance(before, str) or any(item is copy for copy in kept.values())
                or vault.rel(path).split("/", 1)[0] != "Playbooks" or _read(vault, path) is not None):
            continue
        try:
            card_id = card_from_text(vault, path, before).id
        except BrainError:
            continue
        if card_id:
            wanted.append((item["path"], card_id))
    if not wanted:
        return
    from .graph import open_index

    ours = {vault.rel(path) for path, _ in planned}
    index = open_index(vault, vault.settings.search.freshness_sweep)
    try:
        for rel, card_id in wanted:
            elsewhere = [p for p in index.paths_with_id(card_id) if p not in ours]
            if elsewhere:
                raise Conflict(f"{rel} is gone: card {card_id} is {elsewhere[0]} now, and undoing event "
                               f"{target['eid']} would put a second file with that id beside it (refused, --force "
                               f"too); undo what moved it first (`brain history {card_id}`), or edit {elsewhere[0]}",
                               path=rel, event=target["eid"], now=elsewhere[0])
    finally:
        index.close()


def _links_followed(vault: Vault, effects: list[Effect]) -> list[Effect]:
    """The rewrites of the other cards that link to a card whose file the undo removes, as the
    operation that removes a card that way does: a card removed and written again under another
    name in the same folder (the same id) is a rename made back, and the wikilinks to the name it
    leaves follow it (`relations.follow_rename`, as `update --title` relinks); a card removed
    from Playbooks for good (the undo of a create or a promote, or of the undo of a delete) takes
    the links to it away (`relations.cascade_effects`, as `delete` does). The other cards the
    event itself changed go back to their own earlier text, and are not rewritten here.

    Trigger: an undo that removes a card file after another card was written or linked to it
    (a `[[New_Name]]` in a body, the `related` mirror and `links` entry of a `link` made since).
    Why: that card is not in the event's files, so the undo left it linking to the file it had
    just removed: a broken link, and one in a body that `doctor` does not see. Outcome: the links
    follow the card, or go with it, in the same operation and the undo's own `files` (an undo of
    the undo takes them back too)."""
    def card_of(path, text) -> Any:
        if not isinstance(text, str) or vault.rel(path).split("/", 1)[0] not in CARD_FOLDERS:
            return None
        try:
            card = card_from_text(vault, path, text)
        except BrainError:
            return None
        return card if card.id else None

    left, taken = {}, {}
    for effect in effects:
        if effect.after is None:
            card = card_of(effect.path, effect.before)
            if card is not None:
                left[(vault.rel(effect.path).split("/", 1)[0], card.id)] = card
        else:
            card = card_of(effect.path, effect.after)
            if card is not None:
                taken[(vault.rel(effect.path).split("/", 1)[0], card.id)] = card
    if not left:
        return []
    from .relations import cascade_effects, follow_rename   # only an undo that removes a card needs them

    written = {effect.path for effect in effects}
    out: list[Effect] = []
    index = None   # one for every card removed (an import's undo removes up to 500)
    try:
        for key, old in left.items():
            if key in taken:
                followed = follow_rename(vault, old, taken[key])
            elif key[0] == "Playbooks":
                index = index or _index_as_it_is(vault)
                followed = cascade_effects(vault, old, index)
            else:
                continue   # an Inbox card: nothing links to it through the index
            for effect in followed:
                if effect.path not in written:
                    written.add(effect.path)
                    out.append(effect)
    finally:
        if index is not None:
            index.close()
    return out


def _index_as_it_is(vault: Vault):
    """The search index without a refresh (built when there is none), for the links to the cards
    an undo removes.

    Trigger: the undo of an import (up to 500 new cards, which `import` does not pass to the
    index). Why: a refresh indexed every one of them only for the undo to remove them (~1 s of CPU
    a batch). Outcome: the links every command wrote are there (each passes its cards on); a
    link a person typed since and no read has indexed yet may stay, which `doctor` reports, as
    after `delete`."""
    from ..search.analysis import card_fields
    from ..search.index import Index
    from .graph import open_index

    return Index.existing(vault, card_fields) or open_index(vault, vault.settings.search.freshness_sweep)


def _one_item_a_file(planned: list) -> list:
    """`planned` with one item for each file: its text before the event (the first item's) and its
    fingerprint after it (the last item's).

    Trigger: an event whose `files` name one file twice (an ingest whose two statements each
    replaced one card logged both rewrites, each with the card's text before the ingest). Why: the
    file was compared with the first item's text after and refused as changed since; with
    --force, the second item's write found the first one's and was refused as a save made
    meanwhile. Outcome: the file goes back to its text before the event, once."""
    items: dict[Any, tuple[Any, dict[str, Any]]] = {}
    for path, item in planned:
        first = items.get(path)
        items[path] = (path, item) if first is None else (path, {**first[1], "after": item.get("after")})
    return list(items.values())


def _kept_copies(target: dict[str, Any], planned: list) -> dict[str, dict[str, Any]]:
    """For an event that removed cards and kept them in `.brain/deleted/` (journal.py: its
    `kept_in`): each removed card's path -> the `files` item of its copy."""
    kept_in = target.get("kept_in")
    if not isinstance(kept_in, dict):
        return {}
    items = {item["path"]: item for _, item in planned}
    return {path: items[copy] for path, copy in kept_in.items() if path in items and copy in items}


def _with_logged_confidence(vault: Vault, effects: list[Effect]) -> list[Effect]:
    """`effects` with each card they bring back holding the confidence its logged feedback gives
    (an earlier text holds the confidence of its day; the feedback since still counts)."""
    from ..vault.confidence import replay_feedback, replayed_for
    from ..vault.storage import updated_text

    restored = []
    for effect in effects:
        if effect.after is None or vault.rel(effect.path).split("/", 1)[0] not in CARD_FOLDERS:
            continue
        try:
            restored.append((effect, card_from_text(vault, effect.path, effect.after)))
        except BrainError:
            continue
    if not restored:
        return effects
    replayed = replay_feedback(read_events(vault), vault.settings.confidence)
    out = {id(effect): effect for effect in effects}
    for effect, card in restored:
        want = replayed_for(card, replayed)
        have = card.meta.get("confidence")
        if want is not None and isinstance(have, (int, float)) and not isinstance(have, bool) and have != want:
            out[id(effect)] = Effect(effect.path, effect.before, updated_text(card, {"confidence": want}))
    # An effect the confidence made a no-op (the undo of a settle) is no change at all.
    return [out[id(effect)] for effect in effects if out[id(effect)].after != out[id(effect)].before]


def _as_read(vault: Vault, path, text: str | None) -> str | bytes | None:
    """What the file at `path` holds, as a write compares it (`Effect.before`): `text` (`_read`'s),
    or its very bytes when they are not UTF-8. Trigger: a card a person re-saved in another
    encoding, put back with `--force`. Why: `_read`'s text has the odd bytes replaced, and the
    write's check (`journal._still_as_read`) took that difference for a save made meanwhile, a
    CONFLICT at every run. Outcome: the file is compared as it is; the event keeps its text with
    the odd bytes replaced (`undo_files`: a log line holds text only)."""
    if text is None or "\ufffd" not in text:
        return text
    data = current_bytes(vault, path)
    return text if data is None or data == text.encode("utf-8") else data


def _read(vault: Vault, path) -> str | None:
    """The file's text for `undo` to compare and replace (None when there is none): through the
    writers' safe reader, so a FIFO or device in its place is refused, not waited for or read."""
    data = current_bytes(vault, path)
    return None if data is None else data.decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------- history

@valueclass
class HistoryResult:
    card: dict[str, Any]
    entries: list[dict[str, Any]]


def history(vault: Vault, ref: str, agent: str | None = None) -> HistoryResult:
    """Every event about the card, newest first, with what changed."""
    log = list(read_events(vault))
    current_text, path_rel, card_id, old_paths = None, None, None, set()
    try:
        path = scan_card_path(vault, ref)
        path_rel = vault.rel(path)
        try:
            current_text = read_card_text(vault, path)[0]   # NotACard for a FIFO or device
        except FileNotFoundError:
            current_text = None
        try:
            card_id = load_card(vault, path).id
        except (BrainError, FileNotFoundError):
            card_id = None  # unparseable: its events are found by path
    except CardNotFound:
        # Trigger: a reference that names no card now. Why: a deleted or renamed card is still
        # known to the log by its id, and by every path and stem it had. Outcome: the newest
        # event that knew it so; the card's events (and, renamed, its file now) as for any card.
        known = last_known_as(log, ref)
        if known is None:
            raise
        event, name = known
        card_id = event.get("id") or None
        now = _path_now(vault, card_id)
        if now is not None:
            path_rel, current_text = vault.rel(now), _read(vault, now)
        elif card_id is None:
            old_paths = {name}   # a card that never had an id: its events are found by path
    paths = {path_rel} if path_rel else old_paths
    for event in log:
        if card_id and event.get("id") == card_id:
            paths.update(p for p in (event.get("card"), event.get("renamed_from"), event.get("source")) if p)
    mine = [e for e in log if (card_id and (e.get("id") == card_id or e.get("target") == card_id))
            or (not e.get("id") and e.get("card") in paths)
            or any(isinstance(f, dict) and f.get("path") in paths and _holds_card(e, f, card_id)
                   for f in e.get("files") or ())]
    _check_visible(vault, current_text or _last_text(mine, paths), agent, ref)
    hidden = _hidden_paths(vault, mine, paths, agent)
    if hidden:
        mine = [e for e in mine if e.get("card") not in hidden]   # what was done to a card it may not see
    entries = _with_diffs(vault, mine, paths, current_text, path_rel)
    for entry in entries if hidden else ():
        entry["files"] = [f for f in entry["files"] if f not in hidden]
        entry["details"] = _without(entry["details"], hidden)
    title = None
    if current_text is not None and path_rel:
        try:
            title = card_from_text(vault, vault.root / path_rel, current_text).title
        except BrainError:
            title = None
    return HistoryResult({"id": card_id, "path": path_rel, "title": title, "deleted": path_rel is None}, entries)


def _holds_card(event: dict[str, Any], item: dict[str, Any], card_id: str | None) -> bool:
    """Whether an event's `files` item, at a path the card has had, is about the card: the text
    it held before the event is the card's (by its id), or, for a file the event made, the event
    is the card's. Unsure (no id to go by, a text that does not parse) counts as the card's.

    Trigger: another card that held the same path, before or after this one (a new card given
    the name a renamed or deleted one left). Why: events were matched by path alone, so the
    history of a card renamed from `Alpha` listed the creation and edits of the new `Alpha`,
    with their diffs, and the new card's history listed the old one's. Outcome: an event of
    another card at that path is left out; one that changed this card's text there (a delete's
    cascade, a relink, a settle) stays."""
    if not card_id:
        return True
    before = item.get("before")
    if not isinstance(before, str):
        return not event.get("id") or event.get("id") == card_id
    from ..vault import frontmatter

    try:
        held = frontmatter.parse(before).data.get("id")
    except BrainError:
        return True
    return held is None or str(held) == card_id


def _path_now(vault: Vault, card_id: str | None):
    """Where the card with this id is now, or None (deleted, or no id to follow)."""
    if not card_id:
        return None
    from ..cards import card_path

    try:
        return card_path(vault, card_id)
    except BrainError:
        return None


def _last_text(events: list[dict], paths: set[str]) -> str | None:
    for event in reversed(events):
        for item in event.get("files") or ():
            if isinstance(item, dict) and item.get("path") in paths and isinstance(item.get("before"), str):
                return item["before"]
    return None


def _check_visible(vault: Vault, text: str | None, agent: str | None, ref: str) -> None:
    if text is None:
        return
    from ..vault import frontmatter
    from ..search.keyword import visible_to

    try:
        meta = frontmatter.parse(text).data
    except BrainError:
        # An unparseable card is judged by its `scope: agent` / `agent:` lines read leniently
        # (as `get` does): its history holds its whole earlier texts.
        private = private_owner_in_text(text)
        meta = {} if private is None else {"scope": "agent", "agent": private}
    scope = meta.get("scope")
    owner = meta.get("agent")
    if not visible_to({"scope": str(scope or ""), "agent": str(owner or "")}, agent):
        raise card_not_found(ref)   # worded as a missing one, a path as a path: no oracle


def _without(details: dict[str, Any], hidden: set[str]) -> dict[str, Any]:
    """An event's details without the hidden paths: a value naming one goes, and so does a list
    (a delete's `cascaded`) that named only such."""
    out = {}
    for key, value in details.items():
        if isinstance(value, str) and value in hidden:
            continue
        if isinstance(value, list):
            kept = [v for v in value if not (isinstance(v, str) and v in hidden)]
            if value and not kept:
                continue
            value = kept
        out[key] = value
    return out


def _hidden_paths(vault: Vault, events: list[dict], own: set[str], agent: str | None) -> set[str]:
    """The other cards these events name that `agent` may not see: private to another agent by
    any text the log holds of them or by the file there now (read leniently, as `get` reads a
    broken card: hiding one wrongly is safe, showing one wrongly is not)."""
    texts: dict[str, list[str]] = {}
    for event in events:
        named = [event.get("card"), event.get("renamed_from"), event.get("source"), event.get("target_path")]
        for item in event.get("files") or ():
            if isinstance(item, dict):
                named.append(item.get("path"))
                if isinstance(item.get("path"), str) and isinstance(item.get("before"), str):
                    texts.setdefault(item["path"], []).append(item["before"])
        for value in event.values():
            if isinstance(value, list):
                named.extend(value)
        for path in named:
            if isinstance(path, str) and path.endswith(".md") and path not in own:
                texts.setdefault(path, [])
    hidden = set()
    for path, known in texts.items():
        try:
            known = [*known, read_card_text(vault, check_relative(vault, path))[0]]
        except (OSError, BrainError):
            pass   # gone, odd or outside the vault: what the log holds decides
        owners = {private_owner_in_text(text) for text in known} - {None}
        if any(not scope_admits("agent", owner, agent) for owner in owners):
            hidden.add(path)
    return hidden


def _with_diffs(vault: Vault, events: list[dict], paths: set[str], current: str | None,
                current_path: str | None) -> list[dict[str, Any]]:
    """The events newest first, each with a unified diff of the card's text where the log holds
    both sides: the earlier text is in the event; the later one is the next event's earlier
    text (or the file now), trusted only when its fingerprint is the one the event logged."""
    import difflib  # only history pays for it

    later: dict[str, str | None] = {current_path: current} if current_path else {}
    out = []
    for event in reversed(events):
        entry = {"eid": event.get("eid"), "ts": event.get("ts"), "event": event.get("event"),
                 "actor": event.get("actor"), "card": event.get("card"),
                 "details": {k: v for k, v in event.items() if k not in _SHOWN_ELSEWHERE}}
        mine = [f for f in event.get("files") or () if isinstance(f, dict) and f.get("path") in paths]
        before = next((f["before"] for f in mine if isinstance(f.get("before"), str)), None)
        after_item = next((f for f in mine if f.get("after") is not None), None)
        diff = None
        if before is not None and after_item is not None:
            after = later.get(after_item["path"])
            if after is not None and fingerprint(after) == after_item["after"]:
                lines = list(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                                  "before", "after", n=1))
                if len(lines) > MAX_DIFF_LINES:
                    lines = lines[:MAX_DIFF_LINES] + [f"... ({len(lines) - MAX_DIFF_LINES} more lines)\n"]
                diff = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
        entry["diff"] = diff
        entry["files"] = [f.get("path") for f in event.get("files") or () if isinstance(f, dict)]
        out.append(entry)
        for item in mine:
            later[item["path"]] = item.get("before")
        if event.get("event") in ("used", "rejected"):
            # Feedback rewrote the card without keeping its text: the chain of known texts breaks here.
            for path in paths:
                later[path] = None
    return out
