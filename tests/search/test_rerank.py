"""`[rerank]` (seed 001): off by default; with a provider, the best `top_k` hits are reordered by it
(a real HTTP server on 127.0.0.1 speaking the Cohere/Jina `/rerank` shape, and a `command`);
every failure keeps the search's own order with one warning line, within the reranker's own
timeout."""

from __future__ import annotations

import json
import sys
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from helpers import LoopbackServer, ok_data, reply_json, run_cli, run_json, subprocess_cli

CARDS = [
    ("Rotate the signing keys", "Generate a new key, publish it, retire the old key after a day.", "keys"),
    ("Signing service timeout", "The signing service times out when the key store is slow.", "keys,timeout"),
    ("Key store backup", "Back up the signing key store nightly; test a restore every month.", "keys,backup"),
]


class Reranker(LoopbackServer):
    """A `/rerank` server: a document scores the number of times it says "restore", so the
    backup card, last by keyword for "signing key", comes first once reranked."""

    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[tuple[str, dict]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((self.path, body))
                if server.mode == "500":
                    return reply_json(self, 500, b'{"error": "overloaded"}')
                if server.mode == "slow":
                    time.sleep(3)
                results = [{"index": i, "relevance_score": doc.lower().count("restore") + 0.01 * i}
                           for i, doc in enumerate(body["documents"])]
                if server.mode == "missing":
                    results = results[1:]
                raw = b"<html>" if server.mode == "badjson" else json.dumps({"results": results[::-1]}).encode()
                reply_json(self, 200, raw)

        super().__init__(Handler)


@pytest.fixture
def reranker():
    server = Reranker()
    yield server
    server.stop()


def make_cards() -> None:
    for title, body, tags in CARDS:
        code, _, err = run_cli("create", "--type", "runbook", "--domain", "security", "--title", title,
                               "--body", body, "--tags", tags)
        assert code == 0, err


def configure(vault: Path, **settings) -> None:
    lines = ["[rerank]"] + [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    (vault / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def paths(data: dict) -> list[str]:
    return [hit["path"].split("/")[-1] for hit in data["hits"]]


def test_off_by_default_and_on_it_reorders_the_best_hits(vault, reranker):
    make_cards()
    before = ok_data("search", "signing key", "--limit", "2")
    assert "reranked" not in before and not reranker.requests
    configure(vault, provider="http", url=f"http://127.0.0.1:{reranker.port}/v1", model="toy-reranker", top_k=10)
    proc = subprocess_cli("search", "signing key", "--limit", "2", "--json", "--explain", vault=vault)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    data = json.loads(proc.stdout)["data"]
    assert paths(data)[0] == "Runbook_Key_store_backup.md" and data["reranked"] == "toy-reranker"
    assert len(data["hits"]) == 2 and data["hits"][0]["rerank"] > data["hits"][1]["rerank"]
    [(path, body)] = reranker.requests
    # The search handed over its best top_k (all three cards match), not just --limit of them.
    assert path == "/v1/rerank" and body["query"] == "signing key" and body["model"] == "toy-reranker"
    assert len(body["documents"]) == 3 == body["top_n"]
    assert any(doc.startswith("Key store backup\n") for doc in body["documents"])
    code, out, _ = run_cli("search", "signing key", "--explain")
    assert code == 0 and "order: reranked by toy-reranker" in out and "rerank score" in out


@pytest.mark.parametrize("mode, message", [
    ("500", "answered HTTP 500"),
    ("badjson", "replied with something that is not JSON"),
    ("missing", "scored 2 of 3 documents"),
    ("slow", "did not answer within 0.5 s ([rerank] timeout)"),
    ("refused", "is unreachable"),
])
def test_every_failure_keeps_the_search_order_with_one_warning(vault, reranker, mode, message):
    make_cards()
    keyword = paths(ok_data("search", "signing key"))
    configure(vault, provider="http", url=f"http://127.0.0.1:{reranker.port}/v1", timeout=0.5)
    reranker.mode = mode
    if mode == "refused":
        reranker.stop()
    started = time.monotonic()
    code, envelope, err = run_json("search", "signing key")
    assert time.monotonic() - started < (2.5 if mode == "slow" else 30)
    assert code == 0 and paths(envelope["data"]) == keyword and "reranked" not in envelope["data"]
    lines = err.splitlines()
    assert len(lines) == 1 and message in lines[0] and lines[0].endswith("; showing the keyword order"), err
    if mode == "refused":
        reranker.__init__()  # the fixture stops it again


RERANK_COMMAND = """
import json, sys
request = json.load(sys.stdin)
print(json.dumps([-len(doc) for doc in request["documents"]]))   # the shortest card first
"""


def test_a_command_reranker(vault):
    make_cards()
    configure(vault, provider="command", command=[sys.executable, "-c", RERANK_COMMAND])
    data = ok_data("search", "signing key")
    assert data["reranked"].startswith("rerank command") and len(data["hits"]) == 3
    assert paths(data)[0] == "Runbook_Key_store_backup.md"
    configure(vault, provider="command", command=[sys.executable, "-c", "import sys; sys.exit(3)"])
    code, envelope, err = run_json("search", "signing key")
    assert code == 0 and len(envelope["data"]["hits"]) == 3 and "failed (exit 3)" in err


@pytest.mark.parametrize("text, message", [
    ('[rerank]\nprovider = "cohere"\n', "rerank.provider: must be one of http, command, got 'cohere'"),
    ('[rerank]\nprovider = "http"\n', 'rerank.url: must be set for provider "http"'),
    ('[rerank]\nmodel = "x"\n', "rerank.provider: must be set when [rerank] sets anything"),
    ('[rerank]\nprovider = "command"\ncommand = ["x"]\ntop_k = 0\n', "rerank.top_k: must be a whole number in [1, 1000]"),
])
def test_bad_rerank_settings_are_clear_errors(vault, text, message):
    (vault / ".brain" / "config.toml").write_text(text, encoding="utf-8")
    code, _, err = run_cli("search", "x")
    assert code == 1 and message in err, err
