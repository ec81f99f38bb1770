"""Embedding providers: turn texts into vectors by asking the program or server `[embeddings]`
names (README, "Semantic search (optional)"). Imported only when a provider is configured.

What it promises:
- Three providers, standard library only: `openai` (POST {url}/embeddings, any OpenAI-compatible
  server; key from the environment variable `api_key_env` names), `ollama` (POST {url}/api/embed)
  and `command` (a program reading one JSON string per line on stdin and writing one JSON array
  of numbers per line on stdout; `BRAIN_EMBED_INPUT` in its environment says `query` or
  `passage`).
- Every call is bounded by `timeout` (the whole request, not just each socket read) and every
  way it can go wrong — refused, timed out, HTTP error, bad JSON, wrong count, wrong or changing
  dimension, NaN or infinity, an all-zero vector — is one `EmbeddingUnavailable` with a one-line
  message. Callers fall back to keyword search on it; nothing here retries or sleeps.
- Vectors come back as lists of floats, one per text, in order, all of one length.
"""

from __future__ import annotations

import json
import math
import os
import time

from ..errors import EmbeddingUnavailable
from ..vault.config import EmbeddingSettings

PASSAGE_CHARS = 4000   # a model reads ~512 tokens; more text only costs transfer time
_READ_CHUNK = 1 << 16


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
    `deadline`, a `time.monotonic()` value, when given)."""
    prefix = settings.query_prefix if kind == "query" else settings.passage_prefix
    call = {"openai": _openai, "ollama": _ollama, "command": _command}[settings.provider]
    out: list[list[float]] = []
    for start in range(0, len(texts), settings.batch):
        batch = [prefix + text for text in texts[start:start + settings.batch]]
        limit = time.monotonic() + settings.timeout
        if deadline is not None:
            limit = min(limit, deadline)
        vectors = call(settings, batch, kind, limit)
        out += _checked(settings, vectors, len(batch), out[0] if out else None)
    return out


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

def _openai(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float):
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
    reply = _post(settings, settings.default_url().rstrip("/") + "/embeddings", payload, headers, deadline)
    data = reply.get("data") if isinstance(reply, dict) else None
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise EmbeddingUnavailable(f"{provider_name(settings)} replied without a `data` list of embeddings")
    # The API says `data` is in input order, but each item carries its index: trust the index.
    ordered = sorted(data, key=lambda item: item.get("index", 0) if isinstance(item.get("index"), int) else 0)
    return [item.get("embedding") for item in ordered]


def _ollama(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float):
    reply = _post(settings, settings.default_url().rstrip("/") + "/api/embed",
                  {"model": settings.model, "input": texts}, {}, deadline)
    vectors = reply.get("embeddings") if isinstance(reply, dict) else None
    if not isinstance(vectors, list):
        raise EmbeddingUnavailable(f"{provider_name(settings)} replied without an `embeddings` list")
    return vectors


def _post(settings: EmbeddingSettings, url: str, payload: dict, headers: dict, deadline: float,
          name: str | None = None):
    """POST JSON and parse the JSON reply, all within `deadline` (also for the ingest chat model,
    which passes its own `name` for the messages)."""
    import urllib.error
    import urllib.request

    name = name or provider_name(settings)
    request = urllib.request.Request(url, data=json.dumps(payload, ensure_ascii=False).encode("utf-8"),
                                     headers={"Content-Type": "application/json", **headers}, method="POST")
    try:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        with urllib.request.urlopen(request, timeout=remaining) as response:
            # Read in chunks against the deadline: the socket timeout alone bounds each read,
            # so a server trickling bytes could otherwise hold a search for minutes.
            chunks = []
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                _set_timeout(response, remaining)
                chunk = response.read(_READ_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
    except urllib.error.HTTPError as exc:
        hint = {401: "; check the API key", 403: "; check the API key", 404: "; check [embeddings] url and model"}
        raise EmbeddingUnavailable(f"{name} answered HTTP {exc.code} {exc.reason}{hint.get(exc.code, '')}") from None
    except (TimeoutError, OSError) as exc:
        # URLError and socket.timeout are OSErrors; a timeout inside urlopen arrives as either.
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError) or "timed out" in str(reason):
            raise EmbeddingUnavailable(f"{name} did not answer within {settings.timeout:g} s (timeout)") from None
        raise EmbeddingUnavailable(f"{name} is unreachable: {_reason(reason)}") from None
    except Exception as exc:  # http.client's protocol errors (BadStatusLine, IncompleteRead...)
        import http.client

        if isinstance(exc, http.client.HTTPException):
            raise EmbeddingUnavailable(f"{name} broke the HTTP protocol: {type(exc).__name__}") from None
        raise
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise EmbeddingUnavailable(f"{name} replied with something that is not JSON") from None


def _set_timeout(response, seconds: float) -> None:
    sock = getattr(getattr(getattr(response, "fp", None), "raw", None), "_sock", None)
    if sock is not None:
        sock.settimeout(seconds)


def _reason(reason) -> str:
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason)


# ---------------------------------------------------------------------------- command

def _command(settings: EmbeddingSettings, texts: list[str], kind: str, deadline: float):
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
        raise EmbeddingUnavailable(f"{name} did not answer within {settings.timeout:g} s (timeout)") from None
    if process.returncode != 0:
        last = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        raise EmbeddingUnavailable(f"{name} failed (exit {process.returncode})"
                                   + (f": {last[0][:200]}" if last[0] else ""))
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
