#!/usr/bin/env python3
"""One durable write as one process, the reference for concurrent CLI writers in
`bench_throughput.py`: what `brain create` / `brain record` must at least do, and nothing else.

    python3 tests/bench/reference_writer.py VAULT create "text of the new card"
    python3 tests/bench/reference_writer.py VAULT record Playbooks/some-card.md

Under an exclusive `flock` on one lock file (as every logged write of `brain` holds the vault's
write lock): `create` writes a new card file, `record` rewrites a card's `confidence:` line;
either way the card file is written durably (a temporary file in the same folder, fsync,
rename) and one JSON line is appended to `logs/events.jsonl` with fsync. Python start-up and
this module's few imports are the rest of its cost. `reference_servers.py` uses the same
functions for the durable-write floor server.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
import time
from pathlib import Path

ID_LINE = re.compile(r"^id:\s*(\S+)", re.MULTILINE)
CONFIDENCE_LINE = re.compile(r"^confidence:.*$", re.MULTILINE)


def durable_write(path: Path, data: bytes) -> None:
    """Temporary file in the same folder, fsync, rename: what `brain` promises for a card."""
    temp = path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)


def append_line(log: Path, record: dict) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, json.dumps(record, separators=(",", ":")).encode() + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def new_card(content: str, memory_type: str, tags: list[str]) -> tuple[str, str, str]:
    """(id, file name, text) of a new card."""
    card_id = os.urandom(16).hex()
    title = content.splitlines()[0][:80] if content else "untitled"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-")[:60] or "card"
    moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    text = (f"---\nid: {card_id}\ntitle: {json.dumps(title)}\ntype: {memory_type}\ndomain: general\n"
            f"tags: [{', '.join(tags)}]\nconfidence: 0.5\ncreated: {moment}\nupdated: {moment}\n---\n\n"
            f"# {title}\n\n{content}\n")
    return card_id, f"{memory_type}-{slug}-{card_id[:8]}.md", text


def event(name: str, card: str, card_id: str, **fields) -> dict:
    return {"eid": os.urandom(16).hex(), "ts": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "event": name,
            "card": card, "id": card_id, **fields}


def write_once(vault: Path, mode: str, argument: str) -> None:
    lock = os.open(vault / ".reference-write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock, fcntl.LOCK_EX)
    log = vault / "logs" / "events.jsonl"
    if mode == "create":
        card_id, name, text = new_card(argument, "insight", ["bench"])
        durable_write(vault / "Playbooks" / name, text.encode())
        append_line(log, event("created", f"Playbooks/{name}", card_id))
    else:
        path = vault / argument
        text = path.read_text(encoding="utf-8")
        found = CONFIDENCE_LINE.search(text)
        before = float(found.group(0).split(":", 1)[1]) if found else 0.5
        after = round(before * 0.9 + 0.1, 6)
        text = CONFIDENCE_LINE.sub(f"confidence: {after}", text, count=1)
        durable_write(path, text.encode())
        append_line(log, event("used", argument, ID_LINE.search(text).group(1), before=before, after=after))
    os.close(lock)


if __name__ == "__main__":
    write_once(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
