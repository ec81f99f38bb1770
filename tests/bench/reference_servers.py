#!/usr/bin/env python3
"""The references `bench_throughput.py` holds `brain serve` against: servers in the same framework
(the standard library's `ThreadingHTTPServer`, HTTP/1.1 kept-alive connections, an `X-API-KEY`
header checked in constant time, JSON in and out) that do the least a durable store must do.

    python3 tests/bench/reference_servers.py floor VAULT     # the durable-write floor
    python3 tests/bench/reference_servers.py fts5 VAULT      # an SQLite FTS5 bm25 search server
    python3 tests/bench/reference_servers.py fts5-nodelay VAULT   # the same with TCP_NODELAY

`floor` answers the write routes of `brain serve` on a copy of a vault: POST /v1/memories (a new
card file), PATCH /v1/memories/{id} (`append`) and POST /v1/memories/{id}/feedback (a new
`confidence:` line). Each write, under ONE lock for the whole server, reads the card (PATCH,
feedback), writes the card file durably (a temporary file in the same folder, fsync, rename),
and appends one JSON line to `logs/events.jsonl` with fsync; only then is it answered. There is
no journal, no index, no duplicate check: the floor is what the two fsyncs and the HTTP framework
cost. Ids are found in a dictionary built at start from the cards' `id:` lines.

`fts5` answers GET /v1/memories?q=...&limit=N: the cards' title, tags and body in an FTS5 table
(built at start into a temporary file; each thread opens its own connection), the query the OR
of its words, ranked by `bm25()` (title weighted 3, tags 2, body 1), with a snippet, as JSON.
SQLite runs the query with the interpreter lock released, so one process uses both cores.
`fts5-nodelay` is the same server with TCP_NODELAY on each connection, as `brain serve` has since
issue 22's search work: http.server writes an answer's headers and body apart, and with Nagle's
algorithm on the body waits for the client's delayed ACK (up to 40 ms), so `fts5`'s p50 is
mostly that wait (~1 ms of CPU a search), and varies between runs with the ACK timing.

`reference_writer.py` is the same durable write as one process (the reference for CLI writers).

Every server prints `listening on http://127.0.0.1:PORT` on stderr and stops on SIGTERM.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference_writer import CONFIDENCE_LINE, ID_LINE, append_line, durable_write, event, new_card  # noqa: E402

TITLE_LINE = re.compile(r'^title: "?(.*?)"?$', re.MULTILINE)
TAGS_LINE = re.compile(r"^tags: \[(.*)\]$", re.MULTILINE)


class Floor:
    """The write routes, each one durable card write and one durable log line under one lock."""

    def __init__(self, vault: Path) -> None:
        self.vault = vault
        self.folder = vault / "Playbooks"
        self.log = vault / "logs" / "events.jsonl"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.lock = threading.Lock()
        self.paths: dict[str, Path] = {}
        for path in self.folder.glob("*.md"):
            found = ID_LINE.search(path.read_text(encoding="utf-8")[:2000])
            if found:
                self.paths[found.group(1)] = path

    def create(self, body: dict) -> tuple[int, dict]:
        card_id, name, text = new_card(body["content"], body["memory_type"], body.get("tags", []))
        path = self.folder / name
        with self.lock:
            durable_write(path, text.encode())
            append_line(self.log, event("created", f"Playbooks/{name}", card_id))
            self.paths[card_id] = path
        return 201, {"memory_id": card_id, "path": f"Playbooks/{name}"}

    def patch(self, card_id: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            path = self.paths.get(card_id)
            if path is None:
                return 404, {"error": {"code": "NOT_FOUND", "message": card_id, "details": {}}}
            text = path.read_text(encoding="utf-8").rstrip("\n") + "\n\n" + body["append"] + "\n"
            durable_write(path, text.encode())
            append_line(self.log, event("updated", f"Playbooks/{path.name}", card_id))
        return 200, {"memory_id": card_id, "changed": True}

    def feedback(self, card_id: str, body: dict) -> tuple[int, dict]:
        with self.lock:
            path = self.paths.get(card_id)
            if path is None:
                return 404, {"error": {"code": "NOT_FOUND", "message": card_id, "details": {}}}
            text = path.read_text(encoding="utf-8")
            found = CONFIDENCE_LINE.search(text)
            before = float(found.group(0).split(":", 1)[1]) if found else 0.5
            after = round(before * 0.9 + (0.1 if body["outcome"] == "used" else 0.0), 6)
            text = CONFIDENCE_LINE.sub(f"confidence: {after}", text, count=1)
            durable_write(path, text.encode())
            append_line(self.log, event(body["outcome"], f"Playbooks/{path.name}", card_id, before=before, after=after))
        return 200, {"memory_id": card_id, "before": before, "after": after}


class Search:
    """FTS5 over the cards' title, tags and body, one connection per thread."""

    def __init__(self, vault: Path) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="fts5-ref-")) / "docs.db"
        db = sqlite3.connect(self.path, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, tags, body)")
        db.execute("BEGIN")
        for path in sorted((vault / "Playbooks").glob("*.md")):
            text = path.read_text(encoding="utf-8")
            head, _, body = text[4:].partition("\n---\n")
            title, tags = TITLE_LINE.search(head), TAGS_LINE.search(head)
            db.execute("INSERT INTO docs VALUES (?, ?, ?, ?)", (f"Playbooks/{path.name}",
                       title.group(1) if title else "", tags.group(1) if tags else "", body))
        db.execute("COMMIT")
        db.close()
        self.local = threading.local()

    def search(self, query: str, limit: int) -> tuple[int, dict]:
        db = getattr(self.local, "db", None)
        if db is None:
            db = self.local.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        words = re.findall(r"\w+", query)
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = db.execute("SELECT path, title, snippet(docs, 3, '', '', '...', 12), bm25(docs, 0, 3.0, 2.0, 1.0) "
                          "FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 0, 3.0, 2.0, 1.0) LIMIT ?",
                          (match, limit)).fetchall() if match else []
        memories = [{"path": p, "title": t, "snippet": s, "score": -score} for p, t, s, score in rows]
        return 200, {"query": query, "memories": memories, "count": len(memories)}


def serve(kind: str, vault: Path) -> None:
    key = os.environ["BRAIN_API_KEY"].encode()
    backend = Floor(vault) if kind == "floor" else Search(vault)   # fts5, fts5-nodelay

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # `fts5-nodelay`: TCP_NODELAY as `brain serve` sets it (http.server writes the headers and
        # the body apart; with Nagle on, the body waits for the client's delayed ACK, ~40 ms).
        disable_nagle_algorithm = kind.endswith("-nodelay")

        def log_message(self, *args) -> None:
            pass

        def answer(self) -> tuple[int, dict]:
            given = self.headers.get("X-API-KEY", "")
            if not hmac.compare_digest(given.encode("latin-1"), key):
                return 401, {"error": {"code": "UNAUTHENTICATED", "message": "key", "details": {}}}
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length)) if length else {}
            split = urlsplit(self.path)
            parts = split.path.strip("/").split("/")
            if isinstance(backend, Search) and self.command == "GET" and parts == ["v1", "memories"]:
                args = {k: v[0] for k, v in parse_qs(split.query).items()}
                return backend.search(args.get("q", ""), int(args.get("limit", 10)))
            if isinstance(backend, Floor):
                if self.command == "POST" and parts == ["v1", "memories"]:
                    return backend.create(body)
                if self.command == "PATCH" and len(parts) == 3 and parts[:2] == ["v1", "memories"]:
                    return backend.patch(parts[2], body)
                if self.command == "POST" and len(parts) == 4 and parts[3] == "feedback":
                    return backend.feedback(parts[2], body)
            return 404, {"error": {"code": "NOT_FOUND", "message": self.path, "details": {}}}

        def do_GET(self) -> None:
            status, data = self.answer()
            payload = json.dumps(data, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_POST = do_PATCH = do_GET

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"{kind}: listening on http://127.0.0.1:{server.server_address[1]}", file=sys.stderr, flush=True)
    server.serve_forever(poll_interval=0.2)


if __name__ == "__main__":
    serve(sys.argv[1], Path(sys.argv[2]))
