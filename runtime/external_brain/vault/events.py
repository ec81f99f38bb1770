"""The append-only event log, `logs/events.jsonl` (docs/card-format.md, The event log).

One JSON object per line, appended under an exclusive `fcntl` lock on the log itself (the log is
only ever appended to, never replaced, so its inode is stable and can carry the lock).
A crash can leave a torn last line: readers skip any line that is not a whole JSON object, and
the next append first ends the torn line so it never glues onto a new event. An event is in the
log only as a whole line (one that ends in a newline and parses as the event): a torn fragment
of it is not the event, however much of it it holds (`logged`), and the recovery of a killed
write finishes its own torn line instead of leaving it beside a second copy (`append_records`).
`doctor` reports the unreadable lines (`unreadable_lines`): docs/decisions.md, "Torn log lines".
Writes that change files log through `journal.Writer.commit`, which makes the files and their
events one operation; `append_event` is for events that change no file (`referenced`).
The events of reads (`referenced`) are best effort: when the log cannot be written
(a read-only vault, a full disk) the read still answers, with a warning in `vault.notices`.
"""

from __future__ import annotations

import contextlib
import contextvars
import fcntl
import json
import os
from typing import Any, Iterator

from . import strict_json, valueclass
from .storage import Vault, io_problem, iso, new_id, now, read_from

READ_EVENTS = ("referenced",)


# Who a long-lived door is acting for in this thread (an HTTP request made with an agent's key):
# set only by `acting_as`, read by `actor`. Each request runs in its own thread, whose context
# starts empty, so one caller's name never leaks into another's events.
_ACTING: contextvars.ContextVar[str | None] = contextvars.ContextVar("brain_acting", default=None)


def actor() -> str:
    """Who is acting: the caller a door named with `acting_as` (an agent's key: `agent:NAME`),
    else `$BRAIN_ACTOR` (set it per agent), else the login name."""
    return _ACTING.get() or os.environ.get("BRAIN_ACTOR") or os.environ.get("USER") or "unknown"


@contextlib.contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """Log the events written inside this block (in this thread) as `name`'s; None changes nothing."""
    token = _ACTING.set(name) if name else None
    try:
        yield
    finally:
        if token is not None:
            _ACTING.reset(token)


def new_event(event: str, card: str | None = None, card_id: str | None = None, **fields: Any) -> dict[str, Any]:
    """An event record, not yet logged. `card` is the vault-relative path, `card_id` its id;
    fields that are None are left out."""
    record: dict[str, Any] = {"eid": new_id(), "ts": iso(now()), "event": event}
    if card is not None:
        record["card"] = card
    if card_id is not None:
        record["id"] = card_id
    record["actor"] = actor()
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def append_event(vault: Vault, event: str, card: str | None = None, card_id: str | None = None,
                 **fields: Any) -> dict[str, Any]:
    """Append one event and return it (for events that change no file: `referenced`; writes
    log theirs through `journal.Writer.commit`)."""
    record = new_event(event, card, card_id, **fields)
    try:
        append_records(vault, [record])
    except OSError as exc:
        problem = io_problem(exc, "append to the event log")
        if event not in READ_EVENTS:
            raise problem from exc
        # Trigger: a read (`get`) on a vault whose log cannot be written. Why: the event only
        # records that the read happened; failing the read for it helps no one.
        # Outcome: the answer stands, and the caller is warned that nothing was logged.
        vault.notices.append(f"{problem.message} (the {event} event was not logged)")
    return record


FAILED = "failed"
MAX_FAILURE_MESSAGE = 300


def log_failure(vault: Vault, command: str, code: str, message: str, ref: str | None = None,
                via: str | None = None) -> dict[str, Any] | None:
    """Log a write that was tried and failed (docs/compatibility.md, The operations log): `failed` with the command, the error code, a message cut to 300 characters and the card
    or key it named, never a body, a key or a token (docs/decisions.md, "Many agents"). Best
    effort: when the log cannot be written the failure being reported stands alone, so None."""
    from ..errors import BrainError

    try:
        record = new_event(FAILED, command=command, code=code, message=printable_cut(message),
                           ref=printable_cut(ref, 200) if ref else None, via=via)
        append_records(vault, [record])
    except (OSError, ValueError, BrainError):   # the log, or the clock ($BRAIN_NOW), is what failed
        return None
    return record


def printable_cut(text: str, limit: int = MAX_FAILURE_MESSAGE) -> str:
    """`text` cut to `limit` characters, lone surrogates replaced (a log line is strict UTF-8)."""
    text = text.encode("utf-8", "replace").decode("utf-8") if any("\ud800" <= c <= "\udfff" for c in text) else text
    return text if len(text) <= limit else text[: limit - 1] + "…"


EVENT_START = b'{"eid":"'  # how `encode` begins every line


def encode(record: dict[str, Any]) -> bytes:
    """One event as its log line. `eid` comes first, so `logged` can find it as bytes."""
    return strict_json.dumps(record, separators=(",", ":")).encode("utf-8") + b"\n"


def append_records(vault: Vault, records: list[dict[str, Any]], resume_from: int | None = None,
                   durable: bool = True) -> None:
    """Append these events in one write, under the log's lock, and fsync (`durable=False`: not
    yet; the caller fsyncs the log later, once for many appends: `journal`'s batches).

    `resume_from` (the recovery of a killed write, `journal.recover`: the log's size when the
    killed writer journaled): when the log ends in a torn line that starts there or later and is
    the start of these very bytes, only the rest is written, so the line becomes the events."""
    data = b"".join(map(encode, records))
    path = vault.log_path
    try:
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    except (FileNotFoundError, NotADirectoryError):
        # Trigger: no `logs/` folder yet (a new vault), or something else in its way. Why:
        # making it before every append cost a failing `mkdir` and a `stat` a write. Outcome:
        # made once it is missing (a file in its way raises there, as before), then opened.
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            torn = _torn_tail(fd, size, len(data)) if resume_from is not None else None
            if torn and torn[0] >= resume_from and data.startswith(torn[1]):
                # Trigger: recovery, and the log ends in the first bytes of the events it is
                # about to log, written after the killed writer journaled: its own append, cut
                # short (a kill inside the write, a full disk, power loss). Why: ending that line
                # and writing the events again would leave a fragment in the middle of the log
                # (which doctor must report), and when the fragment is the whole line but its
                # newline it already reads as the event, so a second copy would log it twice.
                # Outcome: the rest of the bytes are written; the line is the events, once.
                data = data[len(torn[1]):]
            else:
                # Trigger: a writer died mid-line. Why: appending now would glue this event onto
                # the torn fragment and lose both. Outcome: the fragment stays alone on its own line.
                data = b"\n" + data
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)



def _torn_tail(fd: int, size: int, limit: int) -> tuple[int, bytes] | None:
    """Where the log's last line (which has no newline) starts, and its bytes, when it is
    shorter than `limit` (None: longer, so it cannot be the start of `limit` bytes that end in a
    newline)."""
    start = max(0, size - limit)
    chunk = os.pread(fd, size - start, start)
    cut = chunk.rfind(b"\n")
    if cut >= 0:
        return start + cut + 1, chunk[cut + 1:]
    return (0, chunk) if start == 0 else None


def log_size(vault: Vault) -> int:
    try:
        return os.stat(vault.log_path).st_size
    except FileNotFoundError:
        return 0


def logged(vault: Vault, eid: str, since: int = 0) -> bool:
    """Whether the event `eid` is in the log as a whole line — one that starts a line, ends in a
    newline and parses as that event — looking from byte `since` on (from the start when the log
    is now shorter than that: it was replaced). A torn fragment of the event is not the event,
    however much of it it holds: readers skip it.

    Only `journal.recover` asks, once per event of a journal a killed writer left (rare), and
    `since` is the log's size when that journal was written: so this reads the few lines
    appended since, not the log, and parses only the lines that start with the event's id."""
    try:
        with open(vault.log_path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            start = since - 1 if 0 < since <= size else 0  # one byte back: does a line start at `since`?
            handle.seek(start)
            data = handle.read()
    except FileNotFoundError:
        return False
    head = EVENT_START + eid.encode("utf-8") + b'"'
    at = data.find(head)
    while at >= 0:
        end = data.find(b"\n", at)
        if end < 0:
            return False  # the last line, with no newline: torn (or still being written)
        starts_line = data[at - 1:at] == b"\n" if at else start == 0
        if starts_line and any(event.get("eid") == eid for event in parse_lines(data[at:end])):
            return True
        at = data.find(head, at + 1)
    return False


def parse_lines(data: bytes) -> Iterator[dict[str, Any]]:
    """The whole events in `data`: JSON objects whose `event` (and `eid`, when there) is text; torn
    or foreign lines are skipped (`unreadable_lines` names them), so that no reader meets an event
    kind or id it cannot compare, look up or print (a hand-edited `"event": {...}` stopped `history`
    and `doctor`, an `"eid": [...]` stopped `doctor`)."""
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):   # torn, foreign, or nested thousands deep by hand
            continue
        if isinstance(record, dict) and isinstance(record.get("event"), str) \
                and isinstance(record.get("eid", ""), str):
            yield record


def last_known_as(log: list[dict[str, Any]], ref: str) -> tuple[dict[str, Any], str] | None:
    """The newest event that knew a card by `ref` (its id or an 8+ character id prefix, a path
    it had, with or without `.md`, or that path's file stem), and the path it names (or None)."""
    wanted = ref.strip()
    if not wanted:
        return None
    as_path = wanted if wanted.endswith(".md") else wanted + ".md"
    is_path = "/" in wanted or "\\" in wanted or wanted.endswith(".md")
    for event in reversed(log):
        card_id = event.get("id")
        if isinstance(card_id, str) and card_id and (card_id == wanted or (len(wanted) >= 8
                                                                          and card_id.startswith(wanted))):
            return event, event.get("card") if isinstance(event.get("card"), str) else None
        for name in (event.get("card"), event.get("renamed_from"), event.get("source")):
            if not isinstance(name, str):
                continue
            if name == as_path or (not is_path and name.rpartition("/")[2] == as_path):
                return event, name
    return None


def events_holding(vault: Vault, needle: bytes) -> list[dict[str, Any]]:
    """The whole events whose log line holds `needle` (bytes as the log writes them: UTF-8),
    oldest first; only those lines are parsed (for error paths that must stay cheap)."""
    try:
        data = vault.log_path.read_bytes()
    except OSError:
        return []
    return list(parse_lines(b"\n".join(line for line in data.split(b"\n") if needle in line)))


def events_since(vault: Vault, offset: int) -> list[dict[str, Any]] | None:
    """The whole events appended after byte `offset` (a `log_size` taken earlier), oldest
    first; None when that cannot be said: the log is now shorter (it was replaced) or cannot be
    read (the write that asks then fails on it with the reason)."""
    try:
        st, data = read_from(vault.log_path, offset)
    except FileNotFoundError:
        return None if offset else []
    except OSError:
        return None
    if st.st_size < offset:
        return None
    return list(parse_lines(data))


def read_events(vault: Vault) -> Iterator[dict[str, Any]]:
    """Every whole event in the log, oldest first (used by history/audit, never on hot paths)."""
    try:
        data = vault.log_path.read_bytes()
    except FileNotFoundError:
        return iter(())
    return parse_lines(data)


@valueclass.valueclass
class UnreadableLine:
    """A non-empty line of the log that is not a whole event (for `doctor`): where it is, whether
    it is the log's last line, the event it names (the id in its `{"eid":"..."` start, when the
    fragment is long enough to hold it whole) and whether that event is also logged whole."""

    line: int               # its number in the file, from 1, as an editor shows it
    offset: int             # its first byte in the file
    size: int               # its bytes, without the newline
    last: bool              # no non-empty line follows it
    event_start: bool       # it begins as every event line does, `{"eid":"` (or a part of that): a torn event
    eid: str | None         # the event it names, when it holds the whole id
    whole: bool             # the event `eid` is also in the log as a whole line
    kind: str | None        # its `event` and `card`, when the fragment holds them whole
    card: str | None
    edited: bool = False    # whole JSON, only not an event (`event` missing or not text): a hand edit, not a kill


def unreadable_lines(vault: Vault) -> list[UnreadableLine]:
    """Every non-empty line of the log that is not a whole event, in file order. Read under the
    log's shared lock, so a line being appended right now is never taken for a torn one."""
    try:
        fd = os.open(vault.log_path, os.O_RDONLY)
    except FileNotFoundError:
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
        except OSError:
            pass  # a file system without locks: read anyway (appends are rare next to doctor)
        with open(fd, "rb", closefd=False) as handle:
            data = handle.read()
    finally:
        os.close(fd)
    import re  # (doctor only: compiled here, not on every command's start-up)

    # The fields a torn line names, when it holds them whole (up to their closing quote): the id
    # it starts with (`encode` puts it first), then the first `event` and `card` keys.
    fields = (re.compile(rb'^\{"eid":"([^"\\]{1,200})"'),
              *(re.compile(rb'[,{]"' + name + rb'":"((?:[^"\\]|\\.)*)"') for name in (b"event", b"card")))
    found, whole = [], set()
    offset = last = 0
    for number, raw in enumerate(data.split(b"\n"), 1):
        start, offset = offset, offset + len(raw) + 1
        if not raw.strip():
            continue
        last = number
        event = next(parse_lines(raw), None)
        if event is not None:
            whole.add(event.get("eid"))
            continue
        edited = _is_json(raw)
        torn = (raw.startswith(EVENT_START) or EVENT_START.startswith(raw)) and not edited
        found.append((number, start, len(raw), torn, edited, *(_field(raw, pattern) for pattern in fields)))
    return [UnreadableLine(line=line, offset=start, size=length, last=line == last, event_start=torn,
                           eid=eid, whole=eid is not None and eid in whole, kind=kind, card=card, edited=edited)
            for line, start, length, torn, edited, eid, kind, card in found]


def _is_json(raw: bytes) -> bool:
    """Whether a line is whole JSON (an event line edited by hand into something no reader takes:
    not cut short by a kill)."""
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def _field(raw: bytes, pattern) -> str | None:
    found = pattern.search(raw)
    if found is None:
        return None
    try:
        return json.loads(b'"' + found.group(1) + b'"')
    except ValueError:
        return None
