"""Embedding providers: turn texts into vectors by asking the program or server `[embeddings]`
names (README, "Semantic search (optional)"). Imported only when a provider is configured.

What it promises:
- Three providers, standard library only: `openai` (POST {url}/embeddings, any OpenAI-compatible
  server; key from the environment variable `api_key_env` names), `ollama` (POST {url}/api/embed)
  and `command` (a program reading one JSON string per line on stdin and writing one JSON array
  of numbers per line on stdout; `BRAIN_EMBED_INPUT` in its environment says `query` or
  `passage`).
- Two bounds, each on the whole request (every read and send of its connection, `_Bounded`),
  and a bound on the size of its reply (`TEXT_REPLY_BYTES` a text): `embed`, for the one text
  a search or `create` waits for, by `timeout`; `PassageBatches`, for indexing, by
  `batch_timeout` a request of at most `batch` passages. Every way a request can go wrong —
  refused, timed out, HTTP error, bad JSON, wrong count, wrong or changing dimension, NaN or
  infinity, an all-zero vector — is one `EmbeddingUnavailable` with a one-line message naming
  the setting to change when a setting can help. `embed` never retries or sleeps (callers fall
  back to keyword search); `PassageBatches` cuts a request that timed out (or was too large for
  the server) in half and sends the halves, down to one passage, and sends once more, after a
  pause (the server's Retry-After when it gives one), a request that met a passing failure
  (HTTP 429 or 5xx, a dropped connection, a command that exited with an error). A redirect is
  not followed (it would take the API key where it points): it is an error naming its target.
- Vectors come back as lists of floats, one per text, in order (by the OpenAI reply's `index`,
  refused unless each of 0 .. n-1 once), all of one length.
"""

from __future__ import annotations

import json
import math
import os
import time
from typing import Callable

from ..errors import EmbeddingUnavailable
from ..vault.config import EmbeddingSettings

PASSAGE_CHARS = 4000   # a model reads ~512 tokens; more text only costs transfer time
_READ_CHUNK = 1 << 16
RETRY_PAUSE = 1.0      # seconds before an indexing request that met a passing failure is sent again ...
RETRY_AFTER_MOST = 60.0   # ... or longer when the server asks (Retry-After), up to this
REPLY_BYTES = 16 << 20   # the most a reply may hold (a chat model's, a reranker's) ...
TEXT_REPLY_BYTES = 1 << 20   # ... an embedding reply: this a text and once more (~40,000 dimensions as JSON)


def passage_text(title: str, tags: list[str], body: str) -> str:
    """The text embedded for a card: its title, tags and body, whitespace collapsed. A leading
    `# heading` equal to the title is dropped (most cards repeat their title there)."""
    lines = body.lstrip().splitlines()
    if lines and lines[0].startswith("# ") and lines[0][2:].strip() == title:
        lines = lines[1:]
    parts = [title, " ".join(f"#{tag}" for tag in tags), "\n".join(lines)]
    return " ".join(" ".join(parts).split())[:PASSAGE_CHARS]


def model_key(settings: EmbeddingSettings) -> str:
    """What identifies the vectors a configuration produces: a change of any of these makes
    every cached vector foreign (the cache is then emptied and rebuilt)."""
    # Trigger: a `command` provider whose `model` is named. Why: the command holds paths (a
    # virtual environment, a script in a clone); moving them changes how the model is run, not
    # which model it is, and must not embed 100,000 cards again. Outcome: the model name
    # identifies its vectors; an unnamed command is identified by the command itself.
    command = [] if settings.provider == "command" and settings.model.strip() else list(settings.command)
    parts = {"provider": settings.provider, "model": settings.model, "url": settings.default_url(),
             "command": command, "input_type": settings.input_type,
             "passage_prefix": settings.passage_prefix, "query_prefix": settings.query_prefix,
             "dimensions": settings.dimensions}
    return json.dumps(parts, sort_keys=True, ensure_ascii=False)


def embed(settings: EmbeddingSettings, texts: list[str], kind: str,
          deadline: float | None = None) -> list[list[float]]:
    """Vectors for `texts`, embedded as `kind` ("query" or "passage"), in batches of
    `settings.batch`, each request bounded by `settings.timeout` (and all of them by
    `deadline`, a `time.monotonic()` value, when given): the bound for a text someone is
    waiting for. Indexing goes through `PassageBatches` instead."""
    out: list[list[float]] = []
    for start in range(0, len(texts), settings.batch):
        limit = time.monotonic() + settings.timeout
        if deadline is not None:
            limit = min(limit, deadline)
        out += _request(settings, texts[start:start + settings.batch], kind, limit, "timeout",
                        out[0] if out else None)
    return out


def _request(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float, bound: str,
             first: list[float] | None) -> list[list[float]]:
    """One request's checked vectors; `bound` names the setting that gave `deadline`."""
    prefix = settings.query_prefix if kind == "query" else settings.passage_prefix
    call = {"openai": _openai, "ollama": _ollama, "command": _command}[settings.provider]
    vectors = call(settings, [prefix + text for text in texts], kind, deadline, bound)
    return _checked(settings, vectors, len(texts), first)


class PassageBatches:
    """Embeds passages for indexing (`reindex --embeddings`, the background catch-up): requests
    of at most `size` passages (`[embeddings] batch` to begin with), each bounded by
    `batch_timeout`. `size` only shrinks, and stays shrunk for the rest of the run:
    - a request that times out (or that the server refuses as too large, HTTP 413) is sent
      again as its first half, and so on down to one passage; one passage timing out stops the
      run, with a message naming `batch_timeout`;
    - a request that succeeds but took more than half of `batch_timeout` halves the next one,
      so a provider slowing down (a loaded machine) is met before it times out and its work is
      thrown away;
    - a request that meets a passing failure (`reason` "transient") is sent once more after
      RETRY_PAUSE seconds, or the longer pause the server asked for (Retry-After, up to
      RETRY_AFTER_MOST); a second failure stops the run.
    `seconds` is the time spent in requests (waiting for the provider), for the benchmarks."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        self.settings = settings
        self.size = settings.batch
        self.seconds = 0.0
        self.requests = 0
        self._first: list[float] | None = None   # the first vector: every later one has its length

    def embed(self, texts: list[str], stored: Callable[[int, list[list[float]]], None]) -> None:
        """Embed `texts` as passages in order, calling `stored(start, vectors)` after each
        request that succeeded with the vectors of `texts[start:start + len(vectors)]` (so a
        caller keeps them before the next request is sent). Raises EmbeddingUnavailable."""
        start = 0
        while start < len(texts):
            piece = texts[start:start + self.size]
            began = time.monotonic()
            try:
                vectors = self._send(piece)
            except EmbeddingUnavailable as exc:
                # Trigger: a request of several passages timed out or was too large. Why: the
                # provider may be slow (a CPU model on a loaded machine), not down; one bound
                # cannot suit both one query and a big batch. Outcome: the same passages go
                # again in a request half the size, and later requests keep that size.
                if exc.details.get("reason") in ("timeout", "too_large") and len(piece) > 1:
                    self.size = len(piece) // 2
                    continue
                raise self._explained(exc) from None
            took = time.monotonic() - began
            if took > self.settings.batch_timeout / 2 and len(piece) > 1:
                self.size = min(self.size, len(piece) // 2)
            stored(start, vectors)
            start += len(piece)

    def _send(self, texts: list[str]) -> list[list[float]]:
        for attempt in (1, 2):
            began = time.monotonic()
            try:
                vectors = _request(self.settings, texts, "passage", began + self.settings.batch_timeout,
                                   "batch_timeout", self._first)
                self._first = self._first or vectors[0]
                return vectors
            except EmbeddingUnavailable as exc:
                # Trigger: a passing failure (HTTP 429 or 5xx, a dropped connection, a command
                # that failed). Why: a long run meets one now and then, and stopping would ask
                # for a manual restart. Outcome: sent once more after a pause; twice is an error.
                if exc.details.get("reason") != "transient" or attempt == 2:
                    raise
                # Trigger: the server said when to come back (Retry-After, a rate limit). Why:
                # sent again sooner, the request meets the same limit and the run stops.
                # Outcome: that pause, up to RETRY_AFTER_MOST; a longer one stops the run now.
                pause = max(RETRY_PAUSE, exc.details.get("retry_after", 0.0))
                if pause > RETRY_AFTER_MOST:
                    raise
            finally:
                self.seconds += time.monotonic() - began
                self.requests += 1
            time.sleep(pause)
        raise AssertionError("unreachable")

    def _explained(self, exc: EmbeddingUnavailable) -> EmbeddingUnavailable:
        """`exc` with what the run already tried, when it cut the requests."""
        if self.size < self.settings.batch:
            return EmbeddingUnavailable(f"{exc.message} (requests cut from {self.settings.batch} to {self.size} "
                                        "passages)", **exc.details)
        return exc


def _checked(settings: EmbeddingSettings, vectors, count: int, first: list[float] | None) -> list[list[float]]:
    """The reply's vectors, or EmbeddingUnavailable naming what is wrong with them."""
    name = provider_name(settings)
    if not isinstance(vectors, list) or len(vectors) != count:
        got = len(vectors) if isinstance(vectors, list) else type(vectors).__name__
        raise EmbeddingUnavailable(f"{name} returned {got} vectors for {count} texts")
    want = settings.dimensions or (len(first) if first else 0)
    checked = []
    for vector in vectors:
        if not isinstance(vector, list) or not vector or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in vector):
            raise EmbeddingUnavailable(f"{name} returned something that is not a list of numbers")
        want = want or len(vector)
        if len(vector) != want:
            raise EmbeddingUnavailable(f"{name} returned a vector of {len(vector)} dimensions, expected {want}"
                                       f"{'' if settings.dimensions else ' (as the first reply)'}; check "
                                       "[embeddings] model and dimensions")
        floats = [float(x) for x in vector]
        norm = math.fsum(x * x for x in floats)
        if not math.isfinite(norm):
            raise EmbeddingUnavailable(f"{name} returned a vector with NaN or infinite values")
        if norm == 0.0:
            raise EmbeddingUnavailable(f"{name} returned an all-zero vector")
        checked.append(floats)
    return checked


def provider_name(settings: EmbeddingSettings) -> str:
    if settings.provider == "command":
        return f"embedding command {settings.command[0]!r}"
    return f"embedding provider {settings.provider} at {settings.default_url()}"


# ---------------------------------------------------------------------------- HTTP

def _openai(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float, bound: str):
    payload = {"model": settings.model, "input": texts}
    if settings.input_type:
        payload["input_type"] = kind
    headers = {}
    if settings.api_key_env:
        key = os.environ.get(settings.api_key_env)
        if not key:
            raise EmbeddingUnavailable(f"the environment variable {settings.api_key_env} (api_key_env) is not "
                                       "set; export the API key there")
        headers["Authorization"] = f"Bearer {key}"
    reply = _post(settings, settings.default_url().rstrip("/") + "/embeddings", payload, headers, deadline,
                  bound=bound, most=(len(texts) + 1) * TEXT_REPLY_BYTES)
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise EmbeddingUnavailable(f"{provider_name(settings)} replied without a `data` list of embeddings")
    # The API says `data` is in input order, but each item carries its index: trust the index.
    indices = [item.get("index") for item in data]
    if all(index is None for index in indices):
        return [item.get("embedding") for item in data]
    # Trigger: indices that are not each of 0 .. n-1 once (repeated, missing on some, not
    # numbers). Why: sorted by them, vectors would go to other texts' cards, unseen. Outcome: an error.
    if not all(type(index) is int for index in indices) or sorted(indices) != list(range(len(data))):
        raise EmbeddingUnavailable(f"{provider_name(settings)} replied with embeddings whose `index` values are "
                                   f"not each of 0 to {len(data) - 1} once")
    return [item.get("embedding") for item in sorted(data, key=lambda item: item["index"])]


def _ollama(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float, bound: str):
    reply = _post(settings, settings.default_url().rstrip("/") + "/api/embed",
                  {"model": settings.model, "input": texts}, {}, deadline, bound=bound,
                  most=(len(texts) + 1) * TEXT_REPLY_BYTES)
    vectors = reply.get("embeddings") if isinstance(reply, dict) else None
    if not isinstance(vectors, list):
        raise EmbeddingUnavailable(f"{provider_name(settings)} replied without an `embeddings` list")
    return vectors


def _post(settings: EmbeddingSettings, url: str, payload: dict, headers: dict, deadline: float,
          name: str | None = None, bound: str = "timeout", section: str | None = None, most: int = REPLY_BYTES):
    """POST JSON and parse the JSON reply, all within `deadline` and `most` bytes (also for the
    ingest chat model, which passes its own `name` for the messages). `bound` is the setting `deadline` came from,
    named when it passes, as `[section] bound` (`section`: the config section it is set in;
    by default [embeddings] or [ingest] by the kind of settings). A failure's `reason` (in its details) says what a retry could do:
    "timeout", "too_large" (HTTP 413), "transient" (HTTP 429 or 5xx, a refused or dropped
    connection, a broken reply), or "failed"."""
    import urllib.error
    import urllib.request

    name = name or provider_name(settings)
    section = section or ("embeddings" if isinstance(settings, EmbeddingSettings) else "ingest")
    request = urllib.request.Request(url, data=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
                                     headers={"Content-Type": "application/json", **headers}, method="POST")
    request.deadline = deadline   # every read and send of its connection is bounded by it (`_Bounded`)
    try:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        with _opener().open(request, timeout=remaining) as response:
            chunks, size = [], 0
            while True:
                chunk = response.read(_READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                if size > most:
                    # Trigger: a reply larger than any answer to this request can be (a wrong
                    # URL streaming a file, a broken server). Why: read whole, then parsed, it
                    # would take gigabytes of memory within the time bound. Outcome: cut off.
                    raise EmbeddingUnavailable(f"{name} replied with more than {most >> 20} MB, more than "
                                               f"this request's answer can be; check [{section}] url",
                                               reason="failed")
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            # Trigger: a redirect (a URL without its trailing path, http moved to https). Why:
            # urllib would follow it as a GET without the body, sending the API key to wherever
            # it points (another host too), and the reply would be an unrelated error. Outcome:
            # not followed; the message names where it points, for the url setting.
            where = exc.headers.get("Location", "") if exc.headers else ""
            raise EmbeddingUnavailable(f"{name} answered HTTP {exc.code} {exc.reason}, a redirect to "
                                       f"{where[:200] or 'nowhere'}; not followed: check [{section}] url",
                                       reason="failed") from None
        hint = {401: "; check the API key", 403: "; check the API key", 404: f"; check [{section}] url and model",
                413: f"; lower [{section}] batch"}
        reason = ("too_large" if exc.code == 413 else "transient" if exc.code == 429 or exc.code >= 500
                  else "failed")
        wait = _retry_after(exc.headers) if reason == "transient" else None
        asked = {} if wait is None else {"retry_after": wait}
        raise EmbeddingUnavailable(f"{name} answered HTTP {exc.code} {exc.reason}{hint.get(exc.code, '')}"
                                   + ("" if wait is None else f" (Retry-After {wait:g} s)"),
                                   reason=reason, **asked) from None
    except (TimeoutError, OSError) as exc:
        # URLError and socket.timeout are OSErrors; a timeout inside urlopen arrives as either.
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError) or "timed out" in str(reason):
            raise EmbeddingUnavailable(f"{name} did not answer within {getattr(settings, bound):g} s "
                                       f"([{section}] {bound})", reason="timeout") from None
        raise EmbeddingUnavailable(f"{name} is unreachable: {_reason(reason)}", reason="transient") from None
    except Exception as exc:  # http.client's protocol errors (BadStatusLine, IncompleteRead...)
        import http.client

        if isinstance(exc, http.client.HTTPException):
            raise EmbeddingUnavailable(f"{name} broke the HTTP protocol: {type(exc).__name__}",
                                       reason="transient") from None
        raise
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise EmbeddingUnavailable(f"{name} replied with something that is not JSON", reason="failed") from None


def _retry_after(headers) -> float | None:
    """The seconds a `Retry-After` header asks a client to wait (a number, or an HTTP date), or None."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, OverflowError):
            return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


_OPENER = None


def _opener():
    """urllib's opener for `_post` (made once a process, as `urlopen` makes its own): redirects
    are not followed, and each request's connection reads and sends within its `deadline`."""
    global _OPENER
    if _OPENER is None:
        import urllib.request

        class Unfollowed(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args, **kwargs):
                return None   # urllib then raises the 3xx as an HTTPError

        class BoundedHTTP(urllib.request.HTTPHandler):
            def do_open(self, http_class, req, **kwargs):
                return super().do_open(_bounded(http_class, req.deadline), req, **kwargs)

        handlers = [Unfollowed, BoundedHTTP]
        if hasattr(urllib.request, "HTTPSHandler"):   # Python built with ssl
            class BoundedHTTPS(urllib.request.HTTPSHandler):
                def do_open(self, http_class, req, **kwargs):
                    return super().do_open(_bounded(http_class, req.deadline), req, **kwargs)
            handlers.append(BoundedHTTPS)
        _OPENER = urllib.request.build_opener(*handlers)
    return _OPENER


def _bounded(http_class, deadline: float):
    """`http_class` (an http.client connection) whose socket, once connected, is `_Bounded`."""
    def connection(host, **kwargs):
        made = http_class(host, **kwargs)
        connect = made.connect

        def bounded_connect():
            connect()
            made.sock = _Bounded(made.sock, deadline)
        made.connect = bounded_connect
        return made
    return connection


class _Bounded:
    """A connected socket each of whose reads and sends may take only what is left until
    `deadline`. Trigger: every request `_post` sends. Why: a socket's timeout bounds each
    read alone, so a server trickling its status line, headers or body a byte at a time held
    a search with a 2 s `timeout` for 30 s and more. Outcome: the whole exchange ends by the
    deadline with a TimeoutError."""

    def __init__(self, sock, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline

    def _bound(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        self._sock.settimeout(remaining)

    def recv_into(self, buffer, nbytes: int = 0, flags: int = 0) -> int:
        self._bound()
        return self._sock.recv_into(buffer, nbytes, flags)

    def sendall(self, data, flags: int = 0) -> None:
        self._bound()
        self._sock.sendall(data, flags)

    def makefile(self, mode: str = "rb", buffering: int | None = None, **kwargs):
        """A buffered binary reader reading through `recv_into` (http.client reads replies so)."""
        import io
        import socket

        self._sock._io_refs += 1   # as `socket.makefile` counts it: closed with the reader
        return io.BufferedReader(socket.SocketIO(self, "rb"))

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


def _reason(reason) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason)


# ---------------------------------------------------------------------------- command

def _command(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float, bound: str):
    import subprocess

    name = provider_name(settings)
    stdin = "".join(json.dumps(text, ensure_ascii=False) + "\n" for text in texts).encode("utf-8")
    try:
        # Its own session, so a timeout kills the program and anything it started: a child left
        # holding the pipe open would otherwise keep us waiting for end of file.
        process = subprocess.Popen(list(settings.command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True,
                                   env={**os.environ, "BRAIN_EMBED_INPUT": kind})
    except OSError as exc:
        raise EmbeddingUnavailable(f"{name} cannot be started: {_reason(exc)}") from None
    try:
        out, err = process.communicate(stdin, timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(process)
        raise EmbeddingUnavailable(f"{name} did not answer within {getattr(settings, bound):g} s "
                                   f"([embeddings] {bound})", reason="timeout") from None
    if process.returncode != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise EmbeddingUnavailable(f"{name} failed (exit {process.returncode})"
                                   + (f": {last[0][:200]}" if last[0] else ""), reason="transient")
    try:
        return [json.loads(line) for line in out.decode("utf-8").splitlines() if line.strip()]
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise EmbeddingUnavailable(f"{name} wrote something that is not JSON lines of vectors") from None


def _kill(process) -> None:
    import signal

    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    process.communicate()
