"""The embedding-provider path at its edges (decision 0036, "Provider edges"), through the real
CLI against real HTTP servers on 127.0.0.1: a redirect is not followed (nor the API key sent
where it points), a reply too large is cut off, a card saved in place is never ranked by its
old text's vector, a provider that changed its model behind an unchanged configuration gets its
cache rebuilt rather than mixed, embeddings whose indices repeat are refused, and a stopped
run's progress line is ended before the error."""

from __future__ import annotations

import json
import re
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from helpers import LoopbackServer, ok_data, reply_json, run_cli, run_json
import test_embedding_scale
from test_embedding_scale import configure, make_cards, run_on_a_terminal

import toy_embedder

serve = test_embedding_scale.serve   # the fixture of fake OpenAI-compatible providers (`Provider`)


class Recorder(LoopbackServer):
    """A server that keeps every request (method, path, headers, parsed body) and answers with
    `respond(handler, body)`, body being the request's parsed JSON (None without one)."""

    def __init__(self, respond) -> None:
        self.seen: list[tuple[str, str, dict, object]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                recorder.seen.append((self.command, self.path, dict(self.headers), body))
                respond(self, body)

            do_GET = do_POST = answer

        super().__init__(Handler)


@pytest.fixture
def recorders():
    started: list[Recorder] = []

    def start(respond) -> Recorder:
        started.append(Recorder(respond))
        return started[-1]
    yield start
    for server in started:
        server.stop()


def vector_lengths(vault: Path) -> list[int]:
    with sqlite3.connect(vault / ".brain" / "cache" / "vectors.sqlite") as db:
        return sorted(len(blob) // 4 for (blob,) in db.execute("SELECT vec FROM vectors"))


def embeddings_of(handler, body, dims: int = toy_embedder.DIM) -> None:
    """An OpenAI-compatible answer with the toy model's vectors (their first `dims` numbers)."""
    data = [{"object": "embedding", "index": i, "embedding": toy_embedder.embed(text)[:dims]}
            for i, text in enumerate(body["input"])]
    reply_json(handler, 200, json.dumps({"object": "list", "data": data}).encode())


def configure_url(vault: Path, port: int, **settings) -> None:
    values = {"provider": "openai", "model": "toy", "url": f"http://127.0.0.1:{port}/v1", "input_type": True,
              "timeout": 10, **settings}
    lines = ["[embeddings]"] + [f"{key} = {json.dumps(value)}" for key, value in values.items()]
    (vault / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------- redirects

def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(vault, recorders, monkeypatch):
    """A provider that moved and answers 302 to another host: urllib followed it as a GET with
    the Authorization header (the API key sent to that host) and reported "returned 0 vectors".
    Now the redirect is the error, named with where it points, and nothing is sent there."""
    elsewhere = recorders(lambda handler, body: reply_json(handler, 200, b'{"data": []}'))
    moved = threading.Event()

    def provider(handler, body):
        if not moved.is_set():
            return embeddings_of(handler, body)
        handler.send_response(302)
        handler.send_header("Location", f"http://127.0.0.1:{elsewhere.port}/v1/embeddings")
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    server = recorders(provider)
    make_cards(2)
    configure_url(vault, server.port, api_key_env="TEST_EMBED_KEY")
    monkeypatch.setenv("TEST_EMBED_KEY", "secret-key")
    assert ok_data("reindex", "--embeddings")["embeddings"]["total"] == 2
    moved.set()
    where = f"a redirect to http://127.0.0.1:{elsewhere.port}/v1/embeddings; not followed: check [embeddings] url"
    code, envelope, err = run_json("search", "topic 1")
    assert code == 0 and envelope["data"]["mode"] == "keyword"
    assert f"answered HTTP 302 Found, {where}; showing keyword results" in err, err
    path = vault / "Playbooks" / "Pattern_Fact_number_1.md"
    path.write_text(path.read_text() + "\nMore.\n")
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1 and where in err, err
    assert len(server.seen) >= 3 and elsewhere.seen == []


# ---------------------------------------------------------------------------- stale vectors

@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_card_saved_in_place_is_not_ranked_by_its_old_texts_vector(vault, recorders, mode):
    """A card rewritten in place (same inode, its folder's mtime unchanged) where the sweep has
    not reached it yet (`freshness_sweep = 1`): the search that finds it among its hits used to
    rank it by the vector and keyword rows of its old text, first for a query about that old
    text, while showing the new one. Now, as keyword search does, the hit's file is re-indexed
    and the query ranked again: the old text's vector no longer matches and is left out."""
    server = recorders(embeddings_of)
    make_cards(6)
    configure_url(vault, server.port)
    with open(vault / ".brain" / "config.toml", "a", encoding="utf-8") as config:
        config.write("[search]\nfreshness_sweep = 1\n")
    ok_data("reindex", "--embeddings")
    query = "Card 3 says something about topic 3"
    assert ok_data("search", query, "--mode", mode)["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_3.md"
    path = vault / "Playbooks" / "Pattern_Fact_number_3.md"
    text = path.read_text(encoding="utf-8")
    new = text.replace("Card 3 says something about topic 3 and nothing else.", "Zebras graze on the savanna.")
    assert new != text
    with open(path, "r+", encoding="utf-8") as handle:   # in place: the inode and the folder stay
        handle.write(new)
        handle.truncate()
    hits = ok_data("search", query, "--mode", mode, "--explain")["hits"]
    edited = [hit for hit in hits if hit["path"] == "Playbooks/Pattern_Fact_number_3.md"]
    if mode == "semantic":   # no current vector: not a semantic hit until the catch-up embeds it
        assert edited == [], hits
    else:   # found by its words as they are now ("3" in its title and body), with no cosine
        assert edited and edited[0]["fusion"]["vector"] is None and "topic" not in edited[0]["explain"], edited


# ---------------------------------------------------------------------------- indices

def test_embeddings_whose_indices_repeat_are_refused(vault, recorders):
    """An OpenAI-compatible server numbering every embedding 0, in reverse order: they were
    sorted by that index (a stable sort: the order kept) and each card got another card's
    vector, unseen. Now indices that are not each of 0 .. n-1 once are an error, and nothing
    is stored from that reply."""
    def numbered_zero(handler, body):
        data = [{"object": "embedding", "index": 0, "embedding": toy_embedder.embed(text)} for text in body["input"]]
        reply_json(handler, 200, json.dumps({"object": "list", "data": data[::-1]}).encode())
    server = recorders(numbered_zero)
    make_cards(3)
    configure_url(vault, server.port)
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1, err
    assert "replied with embeddings whose `index` values are not each of 0 to 2 once; 0 of 3 cards done" in err, err


# ---------------------------------------------------------------------------- replies too large

def test_a_reply_larger_than_any_answer_is_cut_off(vault, recorders):
    """A server streaming 200 MB as the answer to one query (a wrong URL serving a file): the
    search read it all into memory within its time bound (and twice over, joined), then failed
    to parse it. Now it stops reading past what vectors for one text can take, and says why."""
    total = 200 << 20
    sent: list[int] = []
    flooding = threading.Event()

    def provider(handler, body):
        if not flooding.is_set():
            return embeddings_of(handler, body)
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(total))
        handler.end_headers()
        chunk, done = b" " * (1 << 20), 0
        try:
            while done < total:
                handler.wfile.write(chunk)
                done += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        sent.append(done)
    server = recorders(provider)
    make_cards(2)
    configure_url(vault, server.port, timeout=60)
    ok_data("reindex", "--embeddings")
    flooding.set()
    code, envelope, err = run_json("search", "topic 1")
    assert code == 0 and envelope["data"]["mode"] == "keyword"
    assert "replied with more than 2 MB, more than this request's answer can be; check [embeddings] url; " \
           "showing keyword results" in err, err
    deadline = time.monotonic() + 30
    while not sent and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sent and sent[0] < total // 4, sent


# ---------------------------------------------------------------------------- another model behind the same configuration

def wait_for_embedding_lock(vault: Path) -> None:
    """Until no process embeds in this vault (a background catch-up a search started)."""
    import fcntl

    with open(vault / ".brain" / "locks" / "embeddings.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        fcntl.flock(handle, fcntl.LOCK_UN)


def test_a_provider_serving_another_model_gets_the_cache_rebuilt_not_mixed(vault, recorders):
    """The provider at the same URL, under the same model name, now answers with 24 numbers
    where the cache holds 48 (a model pulled again, another server on the port). `reindex
    --embeddings` stored the edited card's 24-number vector beside the 48-number ones and said
    all was well, and `create` did the same; every search then fell back to keyword. Now the
    sync sees the new length, empties the cache and embeds every card again, and `create`
    does not store a vector of another length."""
    dims = {"now": toy_embedder.DIM}
    server = recorders(lambda handler, body: embeddings_of(handler, body, dims["now"]))
    make_cards(4)
    configure_url(vault, server.port)
    ok_data("reindex", "--embeddings")
    dims["now"] = 24
    code, _, err = run_cli("create", "--type", "pattern", "--domain", "dev", "--title", "Fact number 9",
                           "--body", "Card 9 says something about topic 9 and nothing else.")
    assert code == 0, err
    assert vector_lengths(vault) == [48] * 4
    path = vault / "Playbooks" / "Pattern_Fact_number_1.md"
    path.write_text(path.read_text(encoding="utf-8") + "\nMore.\n", encoding="utf-8")
    wait_for_embedding_lock(vault)
    code, out, err = run_cli("reindex", "--embeddings")
    assert code == 0, err
    assert out.startswith("the provider's vectors no longer have the cached vectors' 48 dimensions (its model "
                          "changed): every card was embedded again\n"), out
    assert vector_lengths(vault) == [24] * 5
    assert ok_data("search", "topic 3", "--mode", "semantic")["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_3.md"


def test_a_query_of_another_length_has_the_cache_checked_and_rebuilt(vault, recorders):
    """No card changed since the provider's model did: a sync has nothing to send, so nothing
    showed it, and every search fell back to keyword for good. Now the search notes the length
    its query got, the next sync (the catch-up it starts, or `reindex --embeddings`) sends one
    cached card again, and rebuilds the cache when that answer has the new length too."""
    dims = {"now": toy_embedder.DIM}
    server = recorders(lambda handler, body: embeddings_of(handler, body, dims["now"]))
    make_cards(4)
    configure_url(vault, server.port)
    ok_data("reindex", "--embeddings")
    dims["now"] = 24
    code, envelope, err = run_json("search", "topic 3")
    assert code == 0 and envelope["data"]["mode"] == "keyword"
    assert "returned a vector of 24 dimensions, expected 48 (as the cached vectors; if its model changed, " \
           "`brain reindex --embeddings` embeds the cards again); showing keyword results" in err, err
    wait_for_embedding_lock(vault)
    ok_data("reindex", "--embeddings")   # the catch-up's work, if it has not done it already
    wait_for_embedding_lock(vault)
    assert vector_lengths(vault) == [24] * 4
    assert ok_data("search", "topic 3", "--mode", "semantic")["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_3.md"


def test_one_query_of_another_length_keeps_a_cache_the_passages_agree_with(vault, recorders):
    """A search's query vector of another length, once (a provider's glitch), while passages
    still have the cache's: the check sends one card again, finds the length unchanged and
    keeps every vector."""
    glitches = [24]   # the length of the next query's vector, once

    def provider(handler, body):
        glitch = glitches.pop() if glitches and body.get("input_type") == "query" else toy_embedder.DIM
        embeddings_of(handler, body, glitch)
    server = recorders(provider)
    make_cards(4)
    configure_url(vault, server.port)
    ok_data("reindex", "--embeddings")
    before = len(server.seen)
    code, envelope, err = run_json("search", "topic 3")
    assert envelope["data"]["mode"] == "keyword" and "returned a vector of 24 dimensions" in err, err
    wait_for_embedding_lock(vault)
    ok_data("reindex", "--embeddings")
    wait_for_embedding_lock(vault)
    sent = [body["input"] for *_, body in server.seen[before:] if body.get("input_type") == "passage"]
    assert len(sent) == 1 and len(sent[0]) == 1, sent   # one card, sent once, by the catch-up or the reindex
    assert vector_lengths(vault) == [48] * 4
    assert ok_data("search", "topic 3", "--mode", "semantic")["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_3.md"


# ---------------------------------------------------------------------------- progress

def test_a_stopped_runs_progress_line_is_ended_before_the_error(vault, serve):
    """On a terminal, a run stopped by the provider left its progress line open, and the error
    was written on it ("... ETA 1sbrain: error: ..."). Now the line is ended first."""
    provider = serve(lambda number, texts: "503" if number >= 2 else "ok")
    make_cards(4)
    configure(vault, provider, batch=1, timeout=10)
    code, shown = run_on_a_terminal(vault, "reindex", "--embeddings")
    assert code == 1, shown
    progress, error = shown.split("brain: error:")
    assert re.search(r"\rembedding 1/4 cards, [0-9.]+ cards/s, ETA \S+\x1b\[K\r?\n\Z", progress), shown
    assert error.strip().endswith("1 of 4 cards done, run `brain reindex --embeddings` again to go on"), shown


# ---------------------------------------------------------------------------- a trickling server

def test_a_reply_trickled_a_byte_at_a_time_ends_at_the_timeout(vault, recorders):
    """A server that sends its status line and headers a byte every 0.3 s: each read waited
    less than the socket's timeout, so a search with `timeout = 1` waited for all of them (15 s
    here, as long as the server liked) before it gave up. Now the whole exchange is bounded."""
    trickling = threading.Event()

    def provider(handler, body):
        if not trickling.is_set():
            return embeddings_of(handler, body)
        try:
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 48:
                handler.wfile.write(bytes([byte]))
                handler.wfile.flush()
                time.sleep(0.3)
        except OSError:
            pass
    server = recorders(provider)
    make_cards(2)
    configure_url(vault, server.port, timeout=1)
    ok_data("reindex", "--embeddings")
    trickling.set()
    began = time.monotonic()
    code, envelope, err = run_json("search", "topic 1")
    took = time.monotonic() - began
    assert code == 0 and envelope["data"]["mode"] == "keyword"
    assert "did not answer within 1 s ([embeddings] timeout); showing keyword results" in err, err
    assert took < 5, took


# ---------------------------------------------------------------------------- rate limits

def test_a_rate_limited_batch_waits_as_long_as_the_server_asks(vault, recorders):
    """A provider rate-limiting for 2.5 s after the first passage request, saying so in
    Retry-After (as OpenAI's API does): the request was sent again after 1 s, met the limit
    again, and the run stopped. Now it waits what the server asked and goes on."""
    limited_until: list[float] = []
    arrivals: list[float] = []

    def provider(handler, body):
        if body.get("input_type") != "passage":
            return embeddings_of(handler, body)
        arrivals.append(time.monotonic())
        if not limited_until:
            limited_until.append(time.monotonic() + 2.5)
        if time.monotonic() < limited_until[0]:
            handler.send_response(429)
            handler.send_header("Retry-After", "3")
            handler.send_header("Content-Length", "2")
            handler.end_headers()
            handler.wfile.write(b"{}")
            return
        embeddings_of(handler, body)
    server = recorders(provider)
    make_cards(3)
    configure_url(vault, server.port)
    data = ok_data("reindex", "--embeddings")["embeddings"]
    assert (data["total"], data["requests"]) == (3, 2), data
    assert arrivals[1] - arrivals[0] >= 2.9, arrivals


def test_a_rate_limit_longer_than_a_minute_stops_the_run_at_once(vault, recorders):
    """Retry-After of an hour: one more request a second later was bound to fail. Now the run
    stops at once and says how long the server asked to wait."""
    def provider(handler, body):
        handler.send_response(429)
        handler.send_header("Retry-After", "3600")
        handler.send_header("Content-Length", "2")
        handler.end_headers()
        handler.wfile.write(b"{}")
    server = recorders(provider)
    make_cards(2)
    configure_url(vault, server.port)
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1
    assert "answered HTTP 429 Too Many Requests (Retry-After 3600 s); 0 of 2 cards done" in err, err
    assert len(server.seen) == 1


# ---------------------------------------------------------------------------- another configuration

def test_a_mistyped_url_does_not_cost_the_cached_vectors(vault, recorders):
    """The url changed to one where nothing answers (a typo, a port the provider is not on
    yet): the sync opened the cache for the new configuration, which emptied it, before its
    first request failed; putting the url back found no vector, and every card was embedded
    again. Now the new configuration's provider must answer first; the cache is kept."""
    server = recorders(embeddings_of)
    make_cards(4)
    configure_url(vault, server.port)
    ok_data("reindex", "--embeddings")
    sent = len(server.seen)
    with socket.socket() as probe:   # a port where nothing listens
        probe.bind(("127.0.0.1", 0))
        nowhere = probe.getsockname()[1]
    configure_url(vault, nowhere)
    code, _, err = run_cli("reindex", "--embeddings")
    assert code == 1
    assert "is unreachable: connection refused; the vectors cached under another [embeddings] configuration are " \
           "kept until this one answers" in err, err
    assert vector_lengths(vault) == [48] * 4
    configure_url(vault, server.port)
    code, envelope, err = run_json("search", "topic 3", "--mode", "semantic")
    assert code == 0 and err == "" and envelope["data"]["hits"][0]["path"] == "Playbooks/Pattern_Fact_number_3.md"
    assert [body.get("input_type") for *_, body in server.seen[sent:]] == ["query"]   # no card embedded again


def test_a_run_waiting_for_another_says_so_on_a_terminal(vault, serve):
    """Another process embedding (a search's catch-up at work on thousands of cards, for
    hours): `reindex --embeddings` waited for its lock showing nothing, as if hung, and then
    counted the wait in its rate (and so its ETA). Now it says what it waits for, and counts
    the rate from when its own run began."""
    import fcntl

    provider = serve(lambda number, texts: "ok")
    make_cards(2)
    configure(vault, provider, timeout=10)
    (vault / ".brain" / "locks").mkdir(exist_ok=True)
    with open(vault / ".brain" / "locks" / "embeddings.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        timer = threading.Timer(3.0, fcntl.flock, (held, fcntl.LOCK_UN))
        timer.start()
        try:
            code, shown = run_on_a_terminal(vault, "reindex", "--embeddings")
        finally:
            timer.cancel()
    assert code == 0, shown
    assert shown.startswith("another process is embedding this vault's cards (a search's background catch-up, "
                            "or another reindex): waiting for it to finish\r\n"), shown
    # The rate counts from the end of the wait: two cards of a fast provider, not 2 / 3 s.
    rate = float(re.search(r"embedding 2/2 cards, ([0-9.]+) cards/s", shown).group(1))
    assert rate > 1.0, shown
