"""The whole vault to one JSONL file and back: `export` and `import`.

The file (format `external-brain-export`, version 1) is one JSON object per line:
- a header `{"kind": "header", "format": "external-brain-export", "version": 1, ...}`;
- `{"kind": "card", "path", "id", "frontmatter", "body", "text"}` for every card in `Playbooks/`
  and `Inbox/` (`frontmatter` is null, with an `error`, for a card whose frontmatter cannot be
  parsed: it is exported as it is, never fixed);
- `{"kind": "memory", "path", "key", "text"}` for every working-memory file;
- with `events=True`, `{"kind": "event", "event": {...}}` for every logged event (without
  `include_private`, not those about a private card left out, deleted ones included).
`text` is the file byte for byte and is what import writes; `frontmatter` and `body` are there
for readers (jq, other tools). A line with no `text` but a `frontmatter` mapping and a `body`
is imported as a new card rendered from them.

What import promises:
- The whole file is checked before anything is written: a line that is not one JSON object of a
  known kind, a path outside `Playbooks/`, `Inbox/` or `WorkingMemory/`, a path twice, a text
  that is not a card (NUL bytes, too large) is reported with its line number (`BadImport`) and
  the vault is left untouched.
- A card that exists is skipped (`skip`, the default), replaced only when the file's
  `updated` (else `created`) is later (`newer`), or replaced (`overwrite`, and then each card
  that was newer than the imported one is listed as such). A card whose text is already the
  imported text is `unchanged`. An existing file that cannot be parsed is never replaced, and a
  card whose `id` another file of the vault holds is skipped: two cards never share an id.
- The writes go through `journal.writing` / `writes.commit_operation` in batches of `BATCH` files,
  each batch one `imported` event carrying `files`, so a kill leaves every card whole and
  `undo EVENT_ID` takes a batch back out. A batch is made durable by one `os.sync()`, not two
  fsyncs per file (`sync_once=True`), and the next search, not the import, indexes it.
- Exported events are appended once: an event whose `eid` the log already holds is left out.
- Events that arrive are events from elsewhere, as a git merge brings: after appending them the
  import settles the vault (vault/settle.py) in the same lock, so every card agrees with the log
  it leaves (feedback replayed, links to deleted cards removed), as one `settled` event.
- Reads never change the vault: `export` and `import --dry-run` write nothing in it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat as stat_kind
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from ..errors import BadFrontmatter, BadImport, NotACard, UnsafePath, UsageError
from ..vault import frontmatter, strict_json
from ..vault.valueclass import factory, valueclass
from ..writes import commit_operation
from ..vault.storage import (
    CARD_FOLDERS, MAX_CARD_BYTES, Vault, atomic_write, card_paths, check_relative, iso, lone_surrogate, now,
    parse_time, printable, read_text, scope_admits,
)

FORMAT = "external-brain-export"
VERSION = 1
BATCH = 500  # files per journaled commit: a journal of ~500 cards stays a few MB
MEMORY_FOLDER = "WorkingMemory"
POLICIES = ("skip", "newer", "overwrite")


# ---------------------------------------------------------------------------- export

@valueclass
class ExportResult:
    records: list[dict[str, Any]]
    cards: int = 0
    memories: int = 0
    events: int = 0
    skipped: list[str] = factory(list)  # files that are not cards (binary, too large)
    hidden: int = 0                     # agent-private cards left out

    def jsonl(self) -> str:
        return "".join(strict_json.dumps(r, default=str) + "\n" for r in self.records)


def export_vault(vault: Vault, *, events: bool = False, agent: str | None = None,
                 include_private: bool = False) -> ExportResult:
    """Every card and working-memory file of the vault as export records (see the module
    docstring). Agent-private cards (`scope: agent`) are left out unless they belong to `agent`
    or `include_private` asks for a full backup. Writes nothing."""
    header = {"kind": "header", "format": FORMAT, "version": VERSION, "exported": iso(now()),
              "vault": vault.root.name}
    result = ExportResult([header])
    hidden: set[str] = set()   # paths and ids of the private cards left out
    for path in card_paths(vault, CARD_FOLDERS):
        rel = vault.rel(path)
        try:
            text = read_text(path, rel)
        except NotACard as exc:
            result.skipped.append(f"{rel}: {exc.message}")
            continue
        except FileNotFoundError:
            continue  # deleted while we listed
        item: dict[str, Any] = {"kind": "card", "path": rel}
        try:
            doc = frontmatter.parse(text, source=rel)
            scope, owner = str(doc.data.get("scope") or ""), str(doc.data.get("agent") or "")
            item.update(id=_text_or_none(doc.data.get("id")), frontmatter=doc.data, body=doc.body)
        except BadFrontmatter as exc:
            # Trigger: a card we cannot parse. Why: its scope is unknown, yet a raw `scope:
            # agent` line must still keep it private. Outcome: exported raw, read by a regex.
            scope, owner = _raw_scope(text)
            item.update(id=None, frontmatter=None, body=None, error=exc.message)
        if not include_private and not scope_admits(scope, owner, agent):
            result.hidden += 1
            hidden.update(x for x in (rel, item.get("id")) if x)
            continue
        item["text"] = text
        result.records.append(item)
        result.cards += 1
    base = vault.folder(MEMORY_FOLDER)
    own = base / "agents"   # agents' own notes: theirs, or everyone's in a full backup
    memory_files = sorted(base.glob("*.md")) if base.is_dir() else []
    if own.is_dir():
        memory_files += sorted(p for p in own.glob("*/*.md") if include_private or p.parent.name == agent)
    for path in memory_files:
        if path.name.startswith("."):
            continue
        try:
            text = read_text(path, vault.rel(path))
        except (NotACard, FileNotFoundError):
            continue
        result.records.append({"kind": "memory", "path": vault.rel(path), "key": path.stem, "text": text})
        result.memories += 1
    if events:
        from ..vault.events import read_events

        logged = list(read_events(vault))
        if not include_private:
            # A deleted private card is no file now; its `deleted` event's earlier text says whose it was.
            for event in logged:
                if not _event_visible(event, set(), agent):
                    hidden.update(x for x in (event.get("id"), event.get("card")) if isinstance(x, str))
        for event in logged:
            if not include_private and not _event_visible(event, hidden, agent):
                continue
            result.records.append({"kind": "event", "event": event})
            result.events += 1
    return result


# The parts of a vault the tool owns: an export written there would replace or become a card,
# a note, the log or the settings.
_OWNED_FOLDERS = ("Playbooks", "Inbox", "WorkingMemory", "logs", ".brain")


def save_export(vault: Vault, result: ExportResult, output: Path) -> None:
    """Write the export file atomically (a killed export never leaves half a file), never into
    the vault's own folders; a device or named pipe (`/dev/null`, `/dev/stdout`, a FIFO) is
    written into, as a shell's `>` does, never replaced."""
    real = os.path.realpath(output)
    inside = os.path.relpath(real, vault.real_root).split(os.sep)[0]
    if inside in _OWNED_FOLDERS:
        # Trigger: --output naming a file in Playbooks/, Inbox/, WorkingMemory/, logs/ or .brain/
        # (directly or through a symlink). Why: export is a read; it replaced a card with the
        # JSONL, with no event to undo it. Outcome: bad usage, nothing written.
        raise UsageError(f"--output {printable(str(output))} is in the vault's {inside}/ folder, where the export "
                         f"would replace or add a file the vault reads; write it outside {inside}/ "
                         "(e.g. vault-export.jsonl)", path=str(output))
    try:
        kind = os.stat(real).st_mode
    except (FileNotFoundError, NotADirectoryError):
        kind = None
    try:
        if kind is not None and stat_kind.S_ISDIR(kind):
            raise UsageError(f"--output {printable(str(output))} is a folder; give a file path in it "
                             "(e.g. vault-export.jsonl)", path=str(output))
        if kind is not None and not stat_kind.S_ISREG(kind):
            # Trigger: a device or named pipe. Why: the atomic write's rename put a regular file
            # in its place (as root: /dev/null itself). Outcome: written into, as `>` would.
            with open(real, "w", encoding="utf-8") as stream:
                stream.write(result.jsonl())
            return
        atomic_write(Path(real), result.jsonl())
    except OSError as exc:
        raise UsageError(f"cannot write {printable(str(output))}: {exc.strerror}; give a writable --output path",
                         path=str(output)) from None


def _event_visible(event: dict[str, Any], hidden: set[str], agent: str | None) -> bool:
    """Whether an event may go into an export that leaves private cards out: not when it names
    one of them, or carries the earlier text of a card private to someone else (a deleted one);
    not an agent's own working-memory note or private ingest when it is another's; not a failed
    operation, unless it is the agent's own (what it tried may name what it may not see)."""
    if event.get("id") in hidden or event.get("card") in hidden or event.get("renamed_from") in hidden:
        return False
    kind = event.get("event")
    if kind == "failed":
        return agent is not None and event.get("actor") == f"agent:{agent}"
    if kind in ("remembered", "forgotten") and event.get("agent") not in (None, agent):
        return False
    if kind == "ingested" and str(event.get("scope") or "").lower() == "agent" and event.get("agent") != agent:
        return False
    for key in ("created", "updated", "ids"):
        listed = event.get(key)
        if isinstance(listed, list) and any(isinstance(i, str) and i in hidden for i in listed):
            return False
    files = event.get("files")
    for item in files if isinstance(files, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("path") in hidden:
            return False
        if isinstance(item.get("before"), str) and not scope_admits(*_raw_scope(item["before"]), agent):
            return False
    return True


def _text_or_none(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


_RAW_SCOPE = re.compile(r"^scope:\s*['\"]?(\w+)", re.MULTILINE)
_RAW_AGENT = re.compile(r"^agent:\s*['\"]?([^'\"\r\n#]+?)['\"]?\s*$", re.MULTILINE)


def _raw_scope(text: str) -> tuple[str, str]:
    scope, owner = _RAW_SCOPE.search(text), _RAW_AGENT.search(text)
    return (scope.group(1) if scope else ""), (owner.group(1).strip() if owner else "")


# ---------------------------------------------------------------------------- import

@valueclass
class Planned:
    """One file of the import file: where it goes and the text it gets."""

    line: int
    kind: str
    path: str
    text: str
    id: str | None
    stamp: Any  # the imported card's `updated` (else `created`), for `newer`


@valueclass
class ImportResult:
    source: str
    policy: str
    dry_run: bool
    created: list[str] = factory(list)
    overwritten: list[str] = factory(list)
    unchanged: list[str] = factory(list)
    skipped: list[dict[str, str]] = factory(list)   # {"path", "reason"}
    replaced_newer: list[str] = factory(list)       # overwritten although the vault's card was newer
    events_added: int = 0
    event_ids: list[str] = factory(list)            # the `imported` events, one per batch

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "on_conflict": self.policy, "dry_run": self.dry_run,
                "created": self.created, "overwritten": self.overwritten, "unchanged": self.unchanged,
                "skipped": self.skipped, "replaced_newer": self.replaced_newer,
                "events_added": self.events_added, "event_ids": self.event_ids}


def import_vault(vault: Vault, source: Path, *, on_conflict: str = "skip", dry_run: bool = False,
                 progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Bring an export file into the vault: see the module docstring. `progress(done, total)`
    is called after each batch (the CLI shows it on a terminal)."""
    if on_conflict not in POLICIES:
        raise UsageError(f"--on-conflict {on_conflict!r} is not one of {', '.join(POLICIES)}")
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read {source}: {exc.strerror}; give the file `brain export` wrote") from None
    planned, events = parse_export(vault, data, str(source))
    result = ImportResult(str(source), on_conflict, dry_run)
    ids = _ids_in_vault(vault) if any(p.id for p in planned) else {}
    for start in range(0, len(planned), BATCH):
        _import_batch(vault, planned[start:start + BATCH], ids, result, str(source))
        if progress:
            progress(min(start + BATCH, len(planned)), len(planned))
    if events:
        _import_events(vault, events, result)
    return result


def parse_export(vault: Vault, data: bytes, source: str) -> tuple[list[Planned], list[dict[str, Any]]]:
    """Every file and event of an export file, or BadImport naming each bad line (the first
    ten) before anything is written."""
    planned: list[Planned] = []
    events: list[dict[str, Any]] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        try:
            item = _check_line(vault, raw)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            if len(problems) >= 10:
                break
            continue
        if item is None:
            continue
        if isinstance(item, dict):
            events.append(item)
            continue
        item.line = number
        key = item.path.casefold()
        if key in seen:
            problems.append(f"line {number}: {item.path} is also on line {seen[key]}")
            continue
        seen[key] = number
        planned.append(item)
    if problems:
        raise BadImport(f"{source} {problems[0]}; nothing was imported — fix the line or re-export",
                        problems=problems)
    return planned, events


def _check_line(vault: Vault, raw: bytes) -> Planned | dict[str, Any] | None:
    """One line as a Planned file, an event (dict) or None (the header); ValueError says why not."""
    try:
        item = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ValueError("is not a JSON object (corrupted or cut?)") from None
    except RecursionError:
        raise ValueError("is nested too deeply to be an export line (thousands of levels); fix or delete "
                         "the line") from None
    if not isinstance(item, dict):
        raise ValueError("is not a JSON object")
    surrogate = lone_surrogate(item)
    if surrogate:
        # Trigger: a `"\ud800"` escape (valid JSON, no character). Why: no card or log line can
        # hold it; an event carrying one crashed the import after its check. Outcome: refused here.
        raise ValueError(f"holds text that is not valid Unicode (a lone surrogate, {surrogate})")
    kind = item.get("kind")
    if kind == "header":
        if item.get("format") != FORMAT or not isinstance(item.get("version"), int) or item["version"] > VERSION:
            raise ValueError(f"is not an {FORMAT} header of version {VERSION} or older")
        return None
    if kind == "event":
        event = item.get("event")
        if not isinstance(event, dict) or not isinstance(event.get("eid"), str) or not event["eid"]:
            raise ValueError("event line without an `event` object carrying an `eid`")
        return event
    if "kind" not in item:
        # Trigger: another JSONL file given by mistake (a transcript, a log). Why: "unknown kind
        # None" named neither that nor the file to give. Outcome: both.
        raise ValueError("has no `kind`, so it is not a line of an export; give the file `brain export` wrote")
    if kind not in ("card", "memory"):
        raise ValueError(f"unknown kind {kind!r}; expected header, card, memory or event")
    path = item.get("path")
    if not isinstance(path, str) or not path:
        raise ValueError("has no `path`")
    _check_path(vault, path, kind)
    text = item.get("text")
    if text is None and kind == "card" and isinstance(item.get("frontmatter"), dict) \
            and isinstance(item.get("body"), str):
        text = frontmatter.render(item["frontmatter"], item["body"])
    if not isinstance(text, str):
        raise ValueError(f"{path} has no `text` (nor `frontmatter` and `body`)")
    if "\x00" in text or len(text.encode("utf-8", "surrogatepass")) > MAX_CARD_BYTES:
        raise ValueError(f"{path} is not a card (NUL bytes or over {MAX_CARD_BYTES} bytes)")
    meta: dict[str, Any] = {}
    if kind == "card":
        try:
            meta = frontmatter.parse(text, source=path).data
        except BadFrontmatter:
            meta = {}  # exported as it was; restored as it was (the tool never fixes it)
    stamp = meta.get("updated") or meta.get("created")
    return Planned(0, kind, path, text, _text_or_none(meta.get("id")), stamp)


def _check_path(vault: Vault, path: str, kind: str) -> None:
    parts = PurePosixPath(path).parts
    folders = CARD_FOLDERS if kind == "card" else (MEMORY_FOLDER,)
    if "\\" in path or len(parts) < 2 or parts[0] not in folders or not path.endswith(".md") \
            or any(p.startswith(".") for p in parts) or PurePosixPath(path).is_absolute():
        raise ValueError(f"path {path!r} is not a {kind} path inside {' or '.join(f + '/' for f in folders)}")
    if kind == "memory" and len(parts) != 2 and not (len(parts) == 4 and parts[1] == "agents"):
        raise ValueError(f"path {path!r}: working memory has no subfolders but agents/<agent>/")
    try:
        check_relative(vault, path)
    except UnsafePath as exc:
        raise ValueError(exc.message) from None


_ID_LINE = re.compile(r"^id:\s*['\"]?([^'\"\s#]+)", re.MULTILINE)


def _ids_in_vault(vault: Vault) -> dict[str, str]:
    """id -> path of every card now in the vault (from each file's head, as `scan_card_path`)."""
    ids: dict[str, str] = {}
    for path in card_paths(vault, CARD_FOLDERS):
        try:
            with open(path, "rb") as handle:
                head = handle.read(4096).decode("utf-8", errors="replace")
        except OSError:
            continue
        match = _ID_LINE.search(head.replace("\r\n", "\n"))
        if match:
            ids.setdefault(match.group(1), vault.rel(path))
    return ids


def _import_batch(vault: Vault, batch: list[Planned], ids: dict[str, str], result: ImportResult,
                  source: str) -> None:
    from ..vault.events import new_event
    from ..vault.journal import Effect, undo_files, writing

    # A dry run takes no lock: taking it rolls a dead writer's journal forward, which writes.
    with (contextlib.nullcontext() if result.dry_run else writing(vault)) as writer:
        effects = []
        for item in batch:
            path = vault.root / item.path
            current = _current_text(path)
            holder = ids.get(item.id) if item.id else None
            if holder is not None and holder != item.path:
                result.skipped.append({"path": item.path, "reason": f"id {item.id} is held by {holder}"})
                continue
            if current is None:
                result.created.append(item.path)
            elif current == item.text:
                result.unchanged.append(item.path)
                continue
            else:
                reason = _keep_reason(vault, item, current, result.policy)
                if reason:
                    result.skipped.append({"path": item.path, "reason": reason})
                    continue
                if _newer(_existing_stamp(vault, item, current), item.stamp):
                    result.replaced_newer.append(item.path)
                result.overwritten.append(item.path)
            if item.id:
                ids[item.id] = item.path
            effects.append(Effect(path, current, item.text))
        if not effects or result.dry_run:
            return
        event = new_event("imported", None, None, source=Path(source).name, count=len(effects),
                          files=undo_files(vault, effects))
        commit_operation(writer, effects, [event], sync_once=True)
        result.event_ids.append(event["eid"])


def _keep_reason(vault: Vault, item: Planned, current: str | bytes, policy: str) -> str | None:
    """Why an existing file must stay as it is under `policy` (None: it may be replaced)."""
    if isinstance(current, bytes):
        return "the vault's file is not UTF-8 text; it is left alone"
    if item.kind == "card":
        try:
            frontmatter.parse(current, source=item.path)
        except BadFrontmatter:
            return "the vault's card has frontmatter that cannot be parsed; the tool never rewrites it"
    if policy == "skip":
        return "exists (use --on-conflict newer or overwrite)"
    if policy == "newer":
        mine = _existing_stamp(vault, item, current)
        if not _newer(item.stamp, mine):
            return "the vault's card is as new or newer (by updated/created)"
    return None


def _existing_stamp(vault: Vault, item: Planned, current: str) -> Any:
    try:
        meta = frontmatter.parse(current, source=item.path).data
    except BadFrontmatter:
        return None
    return meta.get("updated") or meta.get("created")


def _stamp(value: Any):
    return parse_time(value) if value is not None else None


def _newer(a: Any, b: Any) -> bool:
    """Whether timestamp `a` is strictly later than `b`; an unreadable or missing `a` never is,
    a readable `a` against a missing `b` is."""
    first, second = _stamp(a), _stamp(b)
    if first is None:
        return False
    return second is None or first > second


def _current_text(path: Path) -> str | bytes | None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def _import_events(vault: Vault, events: list[dict[str, Any]], result: ImportResult) -> None:
    from ..vault.events import read_events
    from ..vault.journal import writing

    with (contextlib.nullcontext() if result.dry_run else writing(vault)) as writer:
        known = {e.get("eid") for e in read_events(vault)}
        fresh = []
        for event in events:
            if event["eid"] not in known:
                known.add(event["eid"])
                fresh.append(event)
        result.events_added = len(fresh)
        if fresh and not result.dry_run:
            commit_operation(writer, [], fresh)
            # Trigger: events logged elsewhere were appended. Why: a `used` recorded in the
            # other vault moves a card's replayed confidence, but this writer began settled and
            # its commit moved the mark past them, so no later write would settle them (issue
            # 21). Outcome: settled now, in this lock.
            plan = writer.settle(force=True)
            if plan.changes:
                vault.notices.append(f"the imported events changed the log: {plan.summary()} (event `settled`)")
