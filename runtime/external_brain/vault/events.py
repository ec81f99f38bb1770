"""The append-only event log, `logs/events.jsonl` (SPEC 5).

One JSON object per line, appended under an exclusive `fcntl` lock on the log itself (the log is
only ever appended to, never replaced, so its inode is stable and can carry the lock).
A crash can leave a torn last line: readers skip any line that is not a whole JSON object, and
the next append first ends the torn line so it never glues onto a new event.
Writes that change files log through `journal.Writer.commit`, which makes the files and their
events one operation; `append_event` is for events that change no file (`referenced`).
The events of reads (`referenced`) are best effort: when the log cannot be written
(a read-only vault, a full disk) the read still answers, with a warning in `vault.notices`.
"""

from __future__ import annotations

import fcntl
import json
import os
from typing import Any, Iterator

from .storage import Vault, io_problem, iso, new_id, now

READ_EVENTS = ("referenced",)


def actor() -> str:
    """Who is acting: `$BRAIN_ACTOR` (set it per agent), else the login name."""
    return os.environ.get("BRAIN_ACTOR") or os.environ.get("USER") or "unknown"


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


def encode(record: dict[str, Any]) -> bytes:
    """One event as its log line. `eid` comes first, so `logged` can find it as bytes."""
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def append_records(vault: Vault, records: list[dict[str, Any]]) -> None:
    """Append these events in one write, under the log's lock, and fsync."""
    data = b"".join(map(encode, records))
    vault.log_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(vault.log_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            # Trigger: a writer died mid-line. Why: appending now would glue this event onto the
            # torn fragment and lose both. Outcome: the fragment stays alone on its own line.
            data = b"\n" + data
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def log_size(vault: Vault) -> int:
    try:
        return os.stat(vault.log_path).st_size
    except FileNotFoundError:
        return 0


def logged(vault: Vault, eid: str, since: int = 0) -> bool:
    """Whether the event `eid` is in the log, looking from byte `since` on (from the start when
    the log is now shorter than that: it was replaced)."""
    try:
        with open(vault.log_path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(since if 0 <= since <= size else 0)
            data = handle.read()
    except FileNotFoundError:
        return False
    return b'{"eid":"' + eid.encode("utf-8") + b'"' in data


def parse_lines(data: bytes) -> Iterator[dict[str, Any]]:
    """The whole JSON objects in `data`; torn or foreign lines are skipped."""
    for raw in data.split(b"\n"):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (ValueError, RecursionError):   # torn, foreign, or nested thousands deep by hand
            continue
        if isinstance(record, dict) and "event" in record:
            yield record


def read_events(vault: Vault) -> Iterator[dict[str, Any]]:
    """Every whole event in the log, oldest first (used by history/audit, never on hot paths)."""
    try:
        data = vault.log_path.read_bytes()
    except FileNotFoundError:
        return iter(())
    return parse_lines(data)


def count_torn_lines(vault: Vault) -> int:
    """How many non-empty lines of the log are not whole events (for `doctor`)."""
    try:
        data = vault.log_path.read_bytes()
    except FileNotFoundError:
        return 0
    lines = [raw for raw in data.split(b"\n") if raw.strip()]
    return len(lines) - sum(1 for _ in parse_lines(data))
