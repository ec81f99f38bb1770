"""`brain serve`: the memory API's HTTP JSON API, a door beside the CLI and MCP (docs/http-api.md).

Promises:
- Binds to 127.0.0.1 unless told otherwise, and refuses to start (NO_API_KEY) without an API key
  from `$BRAIN_API_KEY` or the file `[http] api_key_file` names.
- Every request passes `access.Gate` first: its `Host` and `Origin` (403 when foreign, before
  the key is looked at), then its key, the owner's (`X-API-KEY`, compared in constant time) or
  an agent's (`brain keys`): a missing or wrong key gets 401 before the route is looked up or
  anything is read from the vault. An agent's key acts as its agent on every route
  (`access.bind_agent`); its writes are logged with `actor: agent:NAME`.
- `X-Persona: NAME` serves the request from that persona's vault (`[personas]`); an unknown
  name is 400 UNKNOWN_PERSONA. `/mcp` is MCP's Streamable HTTP transport (`mcp_http`).
- JSON in and out. Every error has the memory API's unified shape (docs/compatibility.md, HTTP API)
  `{"error": {"code", "message", "details"}}` with the CLI's codes (`BrainError.code`:
  INVALID_ARGUMENT, NOT_FOUND, CONFLICT, ...) and a few of HTTP's own (UNAUTHENTICATED,
  PAYLOAD_TOO_LARGE, UNSUPPORTED_MEDIA_TYPE, ...); `STATUS` maps codes to status lines.
- Limits: a body over `[http] max_body_bytes` gets 413 without being read; a request (the wait
  for it on a kept-alive connection, its head and its body) must arrive within `[http]
  request_timeout` seconds, else the connection is closed, so a slow or half-open client holds a
  worker no longer than that.
- The door holds no logic: each route is one `Route` entry that checks its arguments (with the
  MCP door's schema checker) and calls one library operation, the one the CLI calls, on a fresh
  `Vault` per request (settings re-read, nothing cached, no lock held between requests). Each
  serving process runs one thread of upkeep besides: folding the search index's waiting cards
  (`index.FoldUpkeep`), which no request then pays for.
- SIGTERM or SIGINT: stop accepting, let requests in flight finish, close the port, return.
- No request takes the server down or goes unanswered: a lone surrogate in a field, a
  Content-Length that is not ASCII digits, a body shorter than its length, a cursor nested
  thousands deep each get their 4xx (400, 400, 408, 400); an operating-system error is IO_ERROR.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import struct
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs, unquote, urlsplit

from .. import __version__
from ..errors import BrainError, CannotListen, NoApiKey, UsageError, in_door_terms, within_vaults
from ..vault import strict_json
from ..vault.events import acting_as
from ..vault.storage import Vault
from .access import OWNER, Gate, Identity, bind_agent
from .mcp import utf8_json
from .mcp.arguments import argument_problem
from .mcp.schemas import _integer, _object, _string, _strings
from .mcp_http import MCP_PATH

API_KEY_ENV = "BRAIN_API_KEY"
MIN_KEY_CHARS = 16
MAX_LIST_LIMIT = 1000
MAX_SEARCH_OFFSET = 10_000
DUMP_CHUNK_BYTES = 64 * 1024
MAX_DEFAULT_WORKERS = 8   # `serve` without --workers: one process per core, up to this many (~30 MB each)

# Status line for each error code. Codes the CLI exits 2 for (bad usage) are 400; the rest say
# what the world is like: missing, in conflict, unreadable as a card, or the server's own trouble.
STATUS = {
    "INVALID_ARGUMENT": 400, "UNSAFE_PATH": 400, "BAD_IMPORT": 400,
    "UNAUTHENTICATED": 401, "UNKNOWN_PERSONA": 400,
    "FORBIDDEN": 403, "HOST_NOT_ALLOWED": 403, "ORIGIN_NOT_ALLOWED": 403,
    "NOT_FOUND": 404, "METHOD_NOT_ALLOWED": 405, "REQUEST_TIMEOUT": 408,
    "AMBIGUOUS": 409, "CONFLICT": 409, "NOT_UNDOABLE": 409,
    "LENGTH_REQUIRED": 411, "PRECONDITION_FAILED": 412, "PAYLOAD_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "BAD_FRONTMATTER": 422, "NOT_A_CARD": 422, "BAD_LINKS": 422,
    "INTERNAL": 500, "CONFIG_ERROR": 500, "VAULT_NOT_FOUND": 500, "IO_ERROR": 500,
    "NOT_IMPLEMENTED": 501,
    "INDEX_UNAVAILABLE": 503, "EMBEDDINGS_UNAVAILABLE": 503,
}
# The codes of the errors `http.server` itself sends (a request line or header it cannot parse).
_HTTP_CODES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 408: "REQUEST_TIMEOUT", 414: "URI_TOO_LONG",
               431: "HEADERS_TOO_LARGE", 501: "NOT_IMPLEMENTED", 505: "HTTP_VERSION_NOT_SUPPORTED"}
# ... and a message for those it sends without one (`http.server` caps the request line at 65,536 bytes).
_HTTP_MESSAGES = {414: "the URL is longer than 65,536 bytes; shorten it (a query is at most 2,000 characters)"}


class RequestRefused(BrainError):
    """The request itself is refused by the door (no key, too large, not JSON, no such route)."""

    def __init__(self, status: int, code: str, message: str, close: bool = False, **details: Any) -> None:
        super().__init__(message, **details)
        self.code = code
        self.status = status
        self.close = close   # the body was left unread: the connection cannot carry another request


def status_of(exc: BrainError) -> int:
    if isinstance(exc, RequestRefused):
        return exc.status
    return STATUS.get(exc.code, 400 if exc.exit_code == 2 else 500)


def told_to_client(exc: BrainError, roots: Iterable[Path] = ()) -> BrainError:
    """`exc` as an HTTP client is told it: where the server keeps its vaults is no business of a
    key holder's. A vault the server cannot find (VAULT_NOT_FOUND) is named by its persona, never
    by its path; any other error names a file of the vault it was served from (`roots`: the served
    vault, the persona's) relative to that vault (".brain/config.toml:5: ..."). The whole message,
    path and all, goes to the server's stderr for its owner."""
    if exc.code != "VAULT_NOT_FOUND":
        relative = within_vaults(exc.message, roots)
        if relative != exc.message:
            # Trigger: a broken config, an unreadable file. Why: the path is the server's file
            # system. Outcome: the same words with the path inside the vault; the owner's log has all.
            print(f"brain serve: {exc.message}", file=sys.stderr, flush=True)
            exc.message = relative
        exc.details = {key: within_vaults(value, roots) if isinstance(value, str) else value
                       for key, value in exc.details.items()}
        return exc
    # Trigger: the served vault or a persona's is missing. Why: the client cannot fix it, and the
    # path would tell it the server's file system. Outcome: who to ask and what they must do; the
    # owner reads the path in the server's log.
    print(f"brain serve: {exc.message}", file=sys.stderr, flush=True)
    persona = exc.details.get("persona")
    if persona is None:
        message = ("the served vault is missing on the server; its owner should check the server's log "
                   "and restart `brain serve` with a vault")
    else:
        message = (f"persona {persona!r} has no vault on the server: the path .brain/config.toml [personas] gives "
                   f"for it is not a vault; ask the server's owner to create it with `brain init` or fix the "
                   f"path (the server's log names it)")
    told = BrainError(message, **({"persona": persona} if persona is not None else {}))
    told.code = exc.code
    return told


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    """The memory API's one error shape (docs/compatibility.md, HTTP API)."""
    return {"error": {"code": code, "message": message, "details": details or {}}}


# ---------------------------------------------------------------------------- the API key

def load_api_key(vault: Vault) -> str:
    """The key every request must carry: `$BRAIN_API_KEY`, else the first line of the file
    `[http] api_key_file` names (relative to the vault's folder, `~` expanded). NoApiKey when
    neither gives one of at least MIN_KEY_CHARS characters."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    source = f"${API_KEY_ENV}"
    if not key:
        name = vault.settings.http.api_key_file
        if not name:
            raise NoApiKey(f"serve needs an API key: set {API_KEY_ENV}, or `api_key_file` under [http] in "
                           ".brain/config.toml naming a file that holds one")
        path = Path(os.path.expanduser(name))
        path = path if path.is_absolute() else vault.root / path
        try:
            key = path.read_text(encoding="utf-8").strip().splitlines()[0].strip() if path.stat().st_size else ""
        except (OSError, UnicodeDecodeError, IndexError) as exc:
            raise NoApiKey(f"cannot read the API key file {path} ([http] api_key_file): "
                           f"{getattr(exc, 'strerror', None) or exc}; write the key in it") from None
        source = str(path)
    if len(key) < MIN_KEY_CHARS or any(ord(c) < 33 or ord(c) > 126 for c in key):
        raise NoApiKey(f"the API key from {source} must be at least {MIN_KEY_CHARS} printable ASCII characters "
                       "without spaces; e.g. `python3 -c \"import secrets; print(secrets.token_urlsafe(32))\"`")
    return key


# ---------------------------------------------------------------------------- routes

@dataclass
class Call:
    """One request as a route sees it: its checked arguments, the `{id}` of the path, and the
    headers some routes honour (`If-Match`, `Idempotency-Key`)."""

    args: dict[str, Any]
    ref: str | None = None
    if_match: str | None = None
    idempotency_key: str | None = None
    caller: Identity = OWNER
    prefer: str = ""                                # the `Prefer` header (respond-async)
    persona: str | None = None                      # the `X-Persona` the request is served under


@dataclass
class Reply:
    status: int
    data: dict[str, Any] | None = None
    stream: Iterable[bytes] | None = None          # a JSONL body, sent in chunks
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Route:
    method: str
    path: str                                      # "/v1/memories/{id}": `{id}` is one path segment
    summary: str
    run: Callable[[Vault, Call], Reply]
    body: dict[str, Any] | None = None             # JSON schema of the body; None: no body
    query: dict[str, Any] = field(default_factory=lambda: _object({}))

    @property
    def writes(self) -> bool:
        """Whether the route changes the vault (its failures are logged); `/v1/context` only reads."""
        return self.method in ("POST", "PATCH", "DELETE") and self.path != "/v1/context"

    def matches(self, segments: list[str]) -> str | None | bool:
        """False when the path is not this route's; else the `{id}` segment (None without one)."""
        own = self.path.strip("/").split("/")
        if len(own) != len(segments):
            return False
        ref = None
        for mine, theirs in zip(own, segments):
            if mine == "{id}":
                ref = theirs
            elif mine != theirs:
                return False
        return ref


_AGENT = _string("the calling agent: also see (and only then touch) its private memories", minLength=1)
_SCOPE = _string("global, or agent (private to agent_id)", enum=["global", "agent"])
_USER = _string("accepted for compatibility with other memory APIs; not used (one vault is one user)")
_BOOL = {"type": "boolean"}


def _etag(value: str) -> dict[str, str]:
    return {"ETag": f'"{value}"'}


def _health(vault: Vault, call: Call) -> Reply:
    return Reply(200, {"status": "ok", "version": __version__, "vault": vault.root.name})


def _create_memory(vault: Vault, call: Call) -> Reply:
    from ..cards import create_card, default_domain, memory_type_of, title_from_body

    args = call.args
    content = args["content"]
    card_type, kept = memory_type_of(args["memory_type"].lower())   # success/failure/note too (docs/compatibility.md)
    result = create_card(
        vault, card_type=card_type, domain=args.get("domain") or default_domain(vault),
        title=args.get("title") or title_from_body(content), body=content, tags=args.get("tags", []),
        project=args.get("project"), importance=args.get("importance"), scope=args.get("scope"),
        agent=args.get("agent_id"), extra={"memory_type": kept} if kept else None,
        insights=args.get("insights", True))
    data = {**result.as_dict(), "memory_id": result.card.id if result.card else None}
    if not result.created:
        return Reply(200, data)
    return Reply(201, data, headers={"Location": f"/v1/memories/{result.card.id}"})


def _filters(args: dict[str, Any], status: str | None):
    from ..vault.kinds import check_moment
    from ..search.keyword import Filters

    moments = {name: check_moment(args[key], key) if key in args else None
               for name, key in (("as_of", "valid_at"), ("since", "from"), ("until", "to"))}
    return Filters(domain=args.get("domain"), type=args.get("memory_type"), tags=tuple(args.get("tags", ())),
                   project=args.get("project"), status=args.get("status") or status, agent=args.get("agent_id"),
                   scope=args.get("scope"), **moments)


def _encode_cursor(value: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, kind: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(value, dict) or value.get("k") != kind:
            raise ValueError
        return value
    except (ValueError, RecursionError):   # not base64, not JSON, absurdly nested (5,000 `[`)
        raise UsageError("cursor is not one this listing gave; pass `next_cursor` from the previous page "
                         "with the same q", field="cursor") from None


def _list_memories(vault: Vault, call: Call) -> Reply:
    args = call.args
    limit = args.get("limit", 50)
    if "q" in args:
        return _search_memories(vault, args, limit)
    from ..cards import page_cards

    after = _decode_cursor(args["cursor"], "list").get("after") if "cursor" in args else None
    if after is not None and not isinstance(after, str):
        raise UsageError("cursor is damaged; start again without it", field="cursor")
    page = page_cards(vault, _filters(args, "any"), limit, after)
    cursor = _encode_cursor({"k": "list", "after": page.next_after}) if page.next_after else None
    skipped = [problem.warning() for problem in page.problems]
    return Reply(200, {"memories": [v.summary() for v in page.cards], "count": len(page.cards),
                       "next_cursor": cursor, **({"warnings": skipped} if skipped else {})})


def _search_memories(vault: Vault, args: dict[str, Any], limit: int) -> Reply:
    from ..vault.journal import fingerprint
    from ..answers.searching import search_cards

    query = args["q"]
    offset = 0
    if "cursor" in args:
        position = _decode_cursor(args["cursor"], "search")
        offset = position.get("offset")
        if position.get("q") != fingerprint(query) or not isinstance(offset, int) \
                or not 0 < offset <= MAX_SEARCH_OFFSET:
            raise UsageError("cursor belongs to another query; pass `next_cursor` from the previous page "
                             "with the same q", field="cursor")
    explain = args.get("explain", False)
    result = search_cards(vault, query, _filters(args, None), offset + limit + 1, explain,
                          record_miss=args.get("keep_miss", True))
    hits = result.hits[offset:offset + limit]
    more = len(result.hits) > offset + limit and offset + limit <= MAX_SEARCH_OFFSET
    cursor = _encode_cursor({"k": "search", "q": fingerprint(query), "offset": offset + limit}) if more else None
    warnings = result.all_warnings()
    return Reply(200, {"query": query, "mode": result.mode, "memories": [h.as_dict(explain) for h in hits],
                       "count": len(hits), "next_cursor": cursor, "miss_candidate": result.miss_candidate,
                       "unfiltered": result.unfiltered, **({"warnings": warnings} if warnings else {})})


def _get_memory(vault: Vault, call: Call) -> Reply:
    from ..cards import UnparsedCard, get_card

    shown = get_card(vault, call.ref, call.args.get("agent_id"))
    if isinstance(shown, UnparsedCard):   # its frontmatter does not parse: its text, and the warning
        return Reply(200, shown.details())
    data = shown.details()
    return Reply(200, data, headers=_etag(data["hash"]))


def _patch_memory(vault: Vault, call: Call) -> Reply:
    from ..evolution.lifecycle import version_hash, update_card

    args = call.args
    result = update_card(
        vault, call.ref, title=args.get("title"), body=args.get("content"), append=args.get("append"),
        tags=args.get("tags"), add_tags=args.get("add_tags"), remove_tags=args.get("remove_tags"),
        memory_type=args.get("memory_type"), domain=args.get("domain"), project=args.get("project"),
        importance=args.get("importance"), status=args.get("status"), expect_hash=call.if_match,
        agent=args.get("agent_id", ""))
    card = result.card
    data = {"memory_id": card.id, "path": card.rel, "hash": version_hash(card), "changed": result.changed,
            "renamed_from": result.previous_path if result.renamed else None, "relinked": result.relinked,
            "event": result.event["eid"] if result.event else None}
    return Reply(200, data, headers=_etag(data["hash"]))


def _delete_memory(vault: Vault, call: Call) -> Reply:
    from ..evolution.lifecycle import delete_card

    result = delete_card(vault, call.ref, call.args.get("dry_run", False), call.if_match,
                         agent=call.args.get("agent_id", ""))
    return Reply(200, {"memory_id": result.id, "path": result.path, "title": result.title,
                       "cascaded": result.cascaded, "dry_run": result.dry_run,
                       "event": result.event["eid"] if result.event else None})


def _feedback(vault: Vault, call: Call) -> Reply:
    from ..cards import record

    args = call.args
    result = record(vault, call.ref, args["outcome"], args.get("note"), agent=args.get("agent_id", ""))
    return Reply(200, {**result.as_dict(), "memory_id": result.card.id})


def _context(vault: Vault, call: Call) -> Reply:
    from ..answers.brief import brief

    args = call.args
    scope = args.get("scope")
    if scope == "agent" and args.get("include_global", True):
        scope = None   # the agent's own memories first, then the global ones (docs/compatibility.md)
    app_context = args.get("app_context") or {}
    project = app_context.get("project") if isinstance(app_context.get("project"), str) else None
    result = brief(vault, args["query"], budget=args.get("budget", 800), agent=args.get("agent_id"),
                   project=project, limit=args.get("k", 5), scope=scope, session=args.get("session_id"))
    data: dict[str, Any] = {"query": result.query,
                            "context": {"summary": result.summary(), "bullets": [i.bullet() for i in result.items],
                                        "markdown": result.markdown},
                            "tokens": result.tokens, "left_out": result.left_out,
                            "other_sessions": result.other_sessions}
    if args.get("return_evidence", True):
        data["evidence"] = [{"memory_id": item.card.id, "path": item.card.rel, "title": item.card.title,
                             "score": round(item.rank, 4), "confidence": round(item.confidence, 4),
                             "why": item.why, "own": item.own, "past": item.past} for item in result.items]
    return Reply(200, data)


def _ingest(vault: Vault, call: Call) -> Reply:
    try:
        from ..intake.ingest import ingest_text
    except ModuleNotFoundError:
        raise RequestRefused(501, "NOT_IMPLEMENTED", "ingest is not part of this build; "
                                                     "POST /v1/memories stores a memory as given") from None
    args = call.args
    request = {"text": args["text"], "source": args.get("source"), "agent": args.get("agent_id"),
               "scope": args.get("scope"), "event_time": args.get("event_time"), "metadata": args.get("metadata"),
               "idempotency_key": call.idempotency_key}
    asked_async = "respond-async" in [p.strip().lower() for p in call.prefer.replace(";", ",").split(",")]
    if args.get("async") or asked_async:
        from ..intake.jobs import submit_ingest

        job = submit_ingest(vault, request, call.caller.name, call.caller.actor)
        location = f"/v1/jobs/{job['job_id']}"
        headers = {"Location": location, **({"Preference-Applied": "respond-async"} if asked_async else {})}
        return Reply(202, {"job_id": job["job_id"], "status": job["status"], "location": location}, headers=headers)
    result = ingest_text(vault, request.pop("text"), **request)
    return Reply(200, result.to_dict())


def _job(vault: Vault, call: Call) -> Reply:
    from ..intake.jobs import read_job

    return Reply(200, read_job(vault, call.ref, None if call.caller.owner else call.caller.name))


def _merge(vault: Vault, call: Call) -> Reply:
    from ..evolution.relations import merge

    result = merge(vault, call.ref, call.args["merge_id"], agent=call.args.get("agent_id", ""))
    return Reply(200, {"memory_id": result.card.id, **result.as_dict()})


def _persona(vault: Vault, call: Call) -> Reply:
    from ..agents.personas import read_context

    return Reply(200, {"persona": call.persona, "persona_context": read_context(vault)})


def _update_persona(vault: Vault, call: Call) -> Reply:
    from ..agents.personas import update_context

    context, changed = update_context(vault, call.args)
    return Reply(200, {"persona": call.persona, "persona_context": context, "changed": changed})


def _dump(vault: Vault, call: Call) -> Reply:
    from ..evolution.portability import export_vault

    args = call.args
    result = export_vault(vault, events=args.get("events", False), agent=args.get("agent_id"),
                          include_private=args.get("include_private", False))

    def lines() -> Iterable[bytes]:
        chunk: list[bytes] = []
        size = 0
        for item in result.records:
            line = (strict_json.dumps(item, default=str) + "\n").encode("utf-8")
            chunk.append(line)
            size += len(line)
            if size >= DUMP_CHUNK_BYTES:
                yield b"".join(chunk)
                chunk, size = [], 0
        if chunk:
            yield b"".join(chunk)

    return Reply(200, stream=lines(), headers={"Content-Type": "application/x-ndjson; charset=utf-8"})


_MEMORY_ARGS = {
    "memory_type": _string("card type: fact, state, episode, or any type the vault allows; or the memory "
                           "types success, failure, note (stored as troubleshooting, troubleshooting, insight)"),
    "tags": _strings("keywords"),
    "domain": _string("domain (default general)"),
    "project": _string("project it belongs to"),
}
_LIST_FILTERS = {
    "scope": _SCOPE, "agent_id": _AGENT, "memory_type": _MEMORY_ARGS["memory_type"],
    "tags": _strings("only memories with all of these tags (comma-separated)"),
    "domain": _MEMORY_ARGS["domain"], "project": _MEMORY_ARGS["project"],
    "status": _string("active, superseded, archived, a note's own, or any"),
    "q": _string("full-text query: ranked search instead of a listing", minLength=1),
    "valid_at": _string("only memories valid at this ISO 8601 time"),
    "from": _string("only memories whose valid_from (else created) is at or after this time"),
    "to": _string("... and before this time"),
    "limit": _integer("page size", 1, MAX_LIST_LIMIT, 50),
    "cursor": _string("next_cursor of the previous page"),
    "explain": {"type": "boolean", "description": "with q: why each hit ranks (matched terms, each score part)"},
    "keep_miss": {"type": "boolean", "description": "with q: false keeps no search miss in the Inbox (a search "
                  "nobody asked: suggestions while typing, a page opened from a link)"},
    "user_id": _USER,
}

ROUTES: tuple[Route, ...] = (
    Route("GET", "/v1/health", "liveness: version and vault name; reads no card, writes nothing", _health),
    Route("POST", "/v1/memories", "store one memory exactly as given (force ingest)", _create_memory,
          body=_object({"content": _string("the memory, Markdown", minLength=1), **_MEMORY_ARGS,
                        "title": _string("one-line title (default: the content's heading or first line)"),
                        "scope": _SCOPE, "agent_id": _AGENT, "importance": _integer("1 to 5", 1, 5),
                        "insights": {"type": "boolean", "description": "false: no insights (no cards compared "
                                     "but those a fact, state or episode needs); the store is then ~2x cheaper"},
                        "user_id": _USER}, ("content", "memory_type"))),
    Route("GET", "/v1/memories", "list memories (or search them with q), a page at a time", _list_memories,
          query=_object(_LIST_FILTERS)),
    Route("GET", "/v1/memories/{id}", "one memory in full; ETag is its content hash", _get_memory,
          query=_object({"agent_id": _AGENT})),
    Route("PATCH", "/v1/memories/{id}", "edit a memory (If-Match: its hash)", _patch_memory,
          body=_object({"content": _string("new body"), "append": _string("text added at the end", minLength=1),
                        "title": _string("new title (renames the file; the id stays)"),
                        "tags": _strings("replace the tags"), "add_tags": _strings("tags to add"),
                        "remove_tags": _strings("tags to remove"), **{k: v for k, v in _MEMORY_ARGS.items()
                                                                        if k != "tags"},
                        "importance": _integer("1 to 5", 1, 5), "status": _string("active, archived, ..."),
                        "agent_id": _AGENT, "user_id": _USER})),
    Route("DELETE", "/v1/memories/{id}", "delete a memory and the links to it (If-Match: its hash)",
          _delete_memory, query=_object({"agent_id": _AGENT, "dry_run": _BOOL})),
    Route("POST", "/v1/memories/{id}/feedback", "used or rejected: moves the memory's confidence", _feedback,
          body=_object({"outcome": _string("did it help?", enum=["used", "rejected"]),
                        "note": _string("one sentence on why", maxLength=2000), "agent_id": _AGENT},
                       ("outcome",))),
    Route("POST", "/v1/context", "a synthesised context for a query: summary, bullets, evidence", _context,
          body=_object({"query": _string("the question at hand", minLength=1),
                        "app_context": {"type": "object", "description": "caller state; `project` is used"},
                        "agent_id": _AGENT, "scope": _SCOPE, "include_global": _BOOL,
                        "k": _integer("most memories", 1, 50, 5), "return_evidence": _BOOL,
                        "budget": _integer("most tokens", 1, 100_000, 800), "user_id": _USER,
                        "session_id": _string("the Claude Code session asking: its own saved state (pre-compact) "
                                              "is working memory, another session's never is",
                                              minLength=1, maxLength=200)}, ("query",))),
    Route("POST", "/v1/ingest", "raw text to atomic fact/state/episode memories (Idempotency-Key honoured)",
          _ingest,
          body=_object({"text": _string("the raw text", minLength=1), "source": _string("chat, manual, api, ..."),
                        "agent_id": _AGENT, "scope": _SCOPE, "event_time": _string("ISO 8601 time"),
                        "metadata": {"type": "object"}, "user_id": _USER,
                        "async": {"type": "boolean", "description": "answer 202 with a job id at once"}}, ("text",))),
    Route("GET", "/v1/jobs/{id}", "an async ingest's job: status (queued, running, done, failed, lost) and result",
          _job),
    Route("POST", "/v1/memories/{id}/merge", "merge another memory into this one (as MCP merge_memories)",
          _merge, body=_object({"merge_id": _string("the memory folded into this one (then superseded)", minLength=1),
                                "agent_id": _AGENT}, ("merge_id",))),
    Route("GET", "/v1/persona", "the persona context of the vault X-Persona chooses", _persona),
    Route("PATCH", "/v1/persona", "change fields of the persona context", _update_persona,
          body=_object({"user_info": {"type": "object", "description": "name, nickname, preferred_address"},
                        "persona_info": {"type": "object", "description": "name, nickname, preferred_address"},
                        **{name: _string(name.replace("_", " ")) for name in
                           ("current_emotion", "physical_state", "mental_state", "environment",
                            "relationship_status")},
                        "last_conversation_time": _string("ISO 8601 time")})),
    Route("GET", "/v1/dump", "every visible memory as JSONL (export format), streamed", _dump,
          query=_object({"agent_id": _AGENT, "include_private": _BOOL, "events": _BOOL,
                         "format": _string("jsonl", enum=["jsonl"]), "user_id": _USER})),
)


# ---------------------------------------------------------------------------- arguments

def query_arguments(schema: dict[str, Any], raw: str) -> dict[str, Any]:
    """The query string as typed arguments for `schema`: integers and booleans parsed, arrays
    comma-separated (or repeated); any other key given twice is an error."""
    try:
        pairs = parse_qs(raw, keep_blank_values=True, strict_parsing=False, errors="strict")
    except UnicodeDecodeError:
        raise UsageError("the query string is not UTF-8; percent-encode UTF-8 text") from None
    properties = schema["properties"]
    args: dict[str, Any] = {}
    for key, values in pairs.items():
        kind = properties.get(key, {}).get("type")
        if kind == "array":
            args[key] = [item for value in values for item in value.split(",") if item.strip()]
            continue
        if len(values) > 1:
            raise UsageError(f"query parameter {key!r} is given {len(values)} times; give it once", field=key)
        value = values[0]
        if kind == "integer":
            try:
                args[key] = int(value)
            except ValueError:
                raise UsageError(f"query parameter {key!r} must be an integer, got {value!r}", field=key) from None
        elif kind == "boolean":
            if value.lower() not in ("true", "false", "1", "0"):
                raise UsageError(f"query parameter {key!r} must be true or false, got {value!r}", field=key)
            args[key] = value.lower() in ("true", "1")
        else:
            if _SPACED_OFFSET.fullmatch(value):
                # Trigger: a time whose offset's '+' came as a space. Why: form encoding makes '+'
                # a space, so `valid_at=...T14:10:00+09:00` pasted into a URL is not the time sent.
                # Outcome: the message says so and shows the value encoded, not "is not a time".
                encoded = value[:-6] + "%2B" + value[-5:] if value[-3] == ":" else value[:-5] + "%2B" + value[-4:]
                raise UsageError(f"query parameter {key!r} is {value!r}: a '+' in a query string reads as a space; "
                                 f"send it as %2B ({encoded})", field=key)
            args[key] = value
    return args


_SPACED_OFFSET = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)? \d{2}:?\d{2}")


# The library names a bad argument by its own name (`UsageError(..., field="type")`); a route
# may call it something else. Each library name -> the route fields it can come from, in order.
_WIRE_NAMES = {"type": ("memory_type",), "body": ("content",), "agent": ("agent_id",), "query": ("q",),
               "other": ("merge_id",),   # merge's card folded into the kept one
               "title": ("content",)}   # no title given: it is made from the content


def wire_field(name: str, route: Route, given: dict[str, Any]) -> str:
    """The route's name for the argument the library named `name` in an error: the first of its
    names the route has and the request gave, else the first the route has, else `name` itself
    (a name the request gave that the route does not take is not the field at fault: /v1/context
    sent `q` is missing its `query`)."""
    names = (name, *_WIRE_NAMES.get(name, ()))
    schema = route.body if route.body is not None else route.query
    properties = schema["properties"] if schema is not None else {}
    return next((n for n in names if n in given and n in properties), next((n for n in names if n in properties), name))


# A CLI command an error names as the way to do something -> the route that does it (`errors.in_door_terms`).
_ROUTE_COMMANDS = {"search": "GET /v1/memories?q=...", "list": "GET /v1/memories", "get": "GET /v1/memories/{id}"}
# Arguments a route takes as a header, not a field.
_ROUTE_HEADERS = {"expect_hash": "If-Match"}


def route_name(name: str, route: Route, given: dict[str, Any]) -> str:
    """How an error message names the argument the library calls `name` (`errors.in_door_terms`):
    the route's field or query parameter (`wire_field`), a boolean one as `"force": true`; "" when
    the route has none (a CLI option no HTTP caller can give is left out)."""
    if name in _ROUTE_HEADERS:
        return _ROUTE_HEADERS[name]
    schema = route.body if route.body is not None else route.query
    properties = schema["properties"] if schema is not None else {}
    wire = wire_field(name, route, given)
    if wire not in properties:
        return ""
    return f'"{wire}": true' if properties[wire].get("type") == "boolean" else wire


def check_call(route: Route, args: dict[str, Any]) -> None:
    problem = argument_problem(route.body if route.method in ("POST", "PATCH") else route.query, args)
    if problem:
        field, message = problem
        details = {"field": field} if field is not None else {}   # a body that is no object has no field
        raise UsageError(message.replace("argument", "field" if route.body else "query parameter", 1), **details)
    if args.get("scope") == "agent" and not args.get("agent_id"):
        raise UsageError("agent_id is required when scope=agent", field="agent_id")


# ---------------------------------------------------------------------------- the server

class Watchdog:
    """Closes the reading side of connections whose request has not fully arrived by its
    deadline. A socket timeout alone bounds each read, not the request: a client sending a
    byte every few seconds would keep a worker forever."""

    def __init__(self) -> None:
        self._deadlines: dict[socket.socket, float] = {}
        self._expired: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="brain-serve-watchdog", daemon=True)
        self._thread.start()

    def arm(self, sock: socket.socket, seconds: float) -> None:
        with self._lock:
            if self._stop.is_set():
                # Trigger: a kept-alive connection starts its next request after `cut_all` (it
                # was between two requests, so not armed, when the shutdown cut the others).
                # Why: unarmed, its read would wait out the socket timeout and hold the
                # shutdown that long. Outcome: it is cut at once, like the others.
                self._cut(sock)
                return
            self._deadlines[sock] = time.monotonic() + seconds

    def disarm(self, sock: socket.socket) -> None:
        with self._lock:
            self._deadlines.pop(sock, None)
            self._expired.discard(sock)

    def expired(self, sock: socket.socket) -> bool:
        with self._lock:
            return sock in self._expired

    def cut_all(self) -> None:
        """Shutdown: every connection still waiting for (or reading) a request is cut now."""
        with self._lock:
            for sock in self._deadlines:
                self._cut(sock)
            self._deadlines.clear()
            self._stop.set()   # under the lock: an `arm` after this cuts its connection itself

    def _cut(self, sock: socket.socket) -> None:
        self._expired.add(sock)
        try:
            sock.shutdown(socket.SHUT_RD)   # a blocked read returns at once; the reply can still go out
        except OSError:
            pass

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self._lock:
                for sock in [s for s, deadline in self._deadlines.items() if deadline <= now]:
                    del self._deadlines[sock]
                    self._cut(sock)


class Balance:
    """How `serve`'s worker processes share the connections of their one listening socket.

    A connection wakes every worker's select and the first to call accept gets it, so the
    workers do not share clients evenly: 16 clients connecting at once were held 13 and 3, 12
    and 4 (tests/bench/serve_cpu.py), and the worker with 3 sat idle while the other's threads
    queued for its one interpreter. Each worker keeps, in a page shared by all (an anonymous
    shared mmap made before the fork), its count of open connections and a heartbeat (the
    monotonic clock, set on every turn of its accept loop). A worker leaves a waiting
    connection to another that holds fewer and is alive (its heartbeat younger than FRESH_S):
    clients connecting one after another are spread so that no worker holds more than one
    connection more than another. The worker holding the fewest never waits, so every connection is taken; a dead or
    stopped worker stops beating and is no longer waited for."""

    FRESH_S = 2.0
    _SLOT = struct.Struct("qd")   # open connections, heartbeat

    def __init__(self, workers: int) -> None:
        import mmap

        self.page = mmap.mmap(-1, self._SLOT.size * workers)   # MAP_SHARED: one page for every forked worker
        self.workers = workers
        self.slot = 0
        self.open = 0
        self.left = False
        self._lock = threading.Lock()
        for slot in range(workers):   # alive from the start: a worker not yet beating is waited for too
            self._SLOT.pack_into(self.page, slot * self._SLOT.size, 0, time.monotonic())

    def take(self, slot: int) -> None:
        """This process is worker `slot` (called in the forked child)."""
        self.slot = slot
        self.open = 0
        self.beat()

    def _write(self, beat: float | None = None) -> None:
        at = self.slot * self._SLOT.size
        if beat is None:
            beat = self._SLOT.unpack_from(self.page, at)[1]
        self._SLOT.pack_into(self.page, at, self.open, beat)

    def beat(self) -> None:
        with self._lock:
            if not self.left:   # the accept loop turns until the shutdown ends: it beats no more
                self._write(time.monotonic())

    def leave(self) -> None:
        """This worker takes no more connections (shutdown): none is left to it."""
        with self._lock:
            self.left = True
            self._write(0.0)

    def opened(self, change: int) -> None:
        with self._lock:
            self.open += change
            self._write()

    def defers(self) -> bool:
        """Whether another live worker holds fewer connections than this one."""
        now = time.monotonic()
        for slot in range(self.workers):
            if slot != self.slot:
                count, beat = self._SLOT.unpack_from(self.page, slot * self._SLOT.size)
                if count < self.open and now - beat < self.FRESH_S:
                    return True
        return False


class Server(ThreadingHTTPServer):
    daemon_threads = False    # server_close waits for requests in flight
    request_queue_size = 128
    balance: Balance | None = None   # shared by `serve`'s worker processes (`Balance`), when there are several

    def get_request(self):
        if self.balance is not None and self.balance.defers():
            # Trigger: a connection waits, and another live worker holds fewer connections.
            # Why: that worker has the idle interpreter (`Balance`). Outcome: this one leaves
            # the connection to it (a short sleep, so that its select, ready again at once,
            # does not spin), and socketserver skips the BlockingIOError.
            time.sleep(0.001)
            raise BlockingIOError
        request = super().get_request()
        if self.balance is not None:
            self.balance.opened(+1)
        return request

    def shutdown_request(self, request) -> None:
        if self.balance is not None:
            self.balance.opened(-1)   # counted out as it closes: no longer one this worker serves
        super().shutdown_request(request)

    def service_actions(self) -> None:
        if self.balance is not None:
            self.balance.beat()

    def __init__(self, address: tuple[str, int], root: Path, api_key: str, max_body: int, timeout: float) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.root = root
        self.api_key = api_key.encode("utf-8")
        self.max_body = max_body
        self.request_timeout = timeout
        self.watchdog: Watchdog | None = None   # a thread: started by each serving process, after any fork
        self.gate: Gate | None = None           # Host, Origin and keys (`serve` sets it)
        self.mcp_sessions = None                # /mcp's sessions (`serve` sets it)
        self.page = None                        # the web page's door (`doors.web`), when `serve` is given one
        super().__init__(address, Handler)
        # Trigger: `--workers` processes share this listening socket. Why: a connection wakes
        # every process's select, one accepts it, and a blocking accept in the others would wait
        # for the next connection, so their shutdown (which waits for that loop) hung until one
        # came. Outcome: accept fails at once with BlockingIOError, which socketserver skips.
        self.socket.setblocking(False)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = f"external-brain/{__version__}"
    sys_version = ""

    def version_string(self) -> str:
        return self.server_version   # http.server joins it to sys_version with a space
    server: Server
    # Trigger: every answer. Why: http.server sends the headers and then the body in two writes;
    # with Nagle's algorithm the body waits for the client's ACK of the headers, which Linux
    # delays up to 40 ms, so a search that took 10 ms of CPU answered in ~60 ms. Outcome:
    # TCP_NODELAY on each connection (socketserver's own switch): both writes go out at once.
    disable_nagle_algorithm = True

    def setup(self) -> None:
        self.timeout = self.server.request_timeout   # bounds each read and each write as well
        super().setup()

    def handle_one_request(self) -> None:
        self.server.watchdog.arm(self.connection, self.server.request_timeout)
        try:
            super().handle_one_request()
        finally:
            self.server.watchdog.disarm(self.connection)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass   # one line per request would cost the server more than the request; errors are answered

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own errors (a request line or header it cannot parse) in the unified format."""
        if self.server.watchdog.expired(self.connection):
            code, message = 408, "the request did not arrive in time"
        self.close_connection = True
        message = message or _HTTP_MESSAGES.get(code, "bad request")
        self._send(Reply(code, error_body(_HTTP_CODES.get(code, "INVALID_ARGUMENT"), message)))

    def do_GET(self) -> None:
        self._dispatch()

    do_POST = do_PATCH = do_DELETE = do_PUT = do_GET

    # ------------------------------------------------------------------------ one request

    def _dispatch(self) -> None:
        page = self.server.page
        # The page's own headers (CSP, nosniff, ...) go on each of its answers, errors too.
        self.page_headers = page.headers if page is not None and page.owns(urlsplit(self.path).path) else None
        try:
            reply = self._answer()
        except (BrainError, OSError) as exc:
            if not isinstance(exc, BrainError):
                # Trigger: an operating-system error no layer below turned into a BrainError (the
                # write lock on a read-only vault). Why: the world, not a bug. Outcome: the CLI's
                # one line as IO_ERROR, not INTERNAL with a traceback.
                from ..vault.storage import io_problem

                exc = io_problem(exc)
            if getattr(exc, "close", False):
                self.close_connection = True
            exc = told_to_client(exc, self._roots())
            status = status_of(exc)
            if exc.code == "CONFLICT" and self.headers.get("If-Match"):
                status = 412   # RFC 9110: a failed If-Match is 412; the code stays the CLI's CONFLICT
            reply = Reply(status, error_body(exc.code, exc.message, exc.details))
            if urlsplit(self.path).path == MCP_PATH:   # an MCP client reads JSON-RPC errors
                from .mcp_http import refusal

                reply = Reply(status, refusal(exc.code, exc.message))
            if status == 405:
                reply.headers["Allow"] = ", ".join(exc.details["allowed"])
        except Exception as exc:  # noqa: BLE001 - a bug: logged in full, answered, the server goes on
            traceback.print_exc(file=sys.stderr)
            reply = Reply(500, error_body("INTERNAL", f"internal error: {type(exc).__name__}: {exc}"))
        self._send(reply)

    def _answer(self) -> Reply:
        if self.server.watchdog.expired(self.connection):
            raise RequestRefused(408, "REQUEST_TIMEOUT", "the request did not arrive in time", close=True)
        split = urlsplit(self.path)
        if self.page_headers is not None:   # the web page: its own sessions, after the same gate (doors/web)
            return self.server.page.answer(self, split)
        caller = self._admit()
        if split.path == MCP_PATH:
            return self._mcp(caller)
        route, ref = self._route(split.path)
        return self.run_route(route, ref, caller, split.query, self._vault)

    def run_route(self, route: Route, ref: str | None, caller: Identity, query: str,
                  vault_for: Callable[[], Vault]) -> Reply:
        """The rest of a request once its caller is known: the body read and checked, the route
        run on a fresh vault (`vault_for()`) as `caller`, a failed write logged. The web page runs
        /v1's routes here too."""
        with acting_as(caller.actor):
            try:
                return self._run(route, ref, query, caller, vault_for)
            except BrainError as exc:
                given = getattr(self, "_given", {})
                if "field" in exc.details:
                    exc.details["field"] = wire_field(exc.details["field"], route, given)
                exc.message = in_door_terms(exc.message, lambda name: route_name(name, route, given),
                                            _ROUTE_COMMANDS.get)
                if route.writes:
                    self._log_failure(route, ref, exc, vault_for)
                raise

    def _run(self, route: Route, ref: str | None, query: str, caller: Identity,
             vault_for: Callable[[], Vault]) -> Reply:
        self._given: dict[str, Any] = {}
        body = self._read_body(route)
        self.server.watchdog.disarm(self.connection)   # the request is in: the work is ours, not bounded
        if route.body is not None:
            args = body if body is not None else {}
            if query:
                raise UsageError(f"{route.method} {route.path} takes its fields in the JSON body, not the query string")
        else:
            args = query_arguments(route.query, query)
        if "agent_id" in (route.body or route.query)["properties"]:
            args = bind_agent(caller, args, "agent_id", "include_private")
        self._given = args if isinstance(args, dict) else {}
        check_call(route, args)
        call = Call(args, ref, _if_match(self.headers.get("If-Match")), self._idempotency_key(), caller,
                    self.headers.get("Prefer", ""), (self.headers.get("X-Persona") or "").strip() or None)
        vault = vault_for()   # fresh per request: settings re-read, nothing kept
        reply = route.run(vault, call)
        if vault.notices and reply.data is not None:
            reply.data.setdefault("warnings", []).extend(vault.notices)
        return reply

    def _log_failure(self, route: Route, ref: str | None, exc: BrainError, vault_for: Callable[[], Vault]) -> None:
        """A write route that failed once its caller was known: logged as `failed` in the vault it
        was for (not when that vault is the problem: an unknown persona)."""
        from ..vault.events import log_failure

        try:
            vault = vault_for()
        except BrainError:
            return
        log_failure(vault, f"{route.method} {route.path}", exc.code, exc.message, ref, via="http")

    def _admit(self) -> Identity:
        # Trigger: any request. Why: a page of another origin (DNS rebinding) learns nothing, and
        # nothing, not even which routes exist, is told to a caller without a key. Outcome: 403
        # or 401 before the route or the vault is looked at; the body is left unread, so the
        # connection closes.
        try:
            return self.server.gate.admit(self.headers)
        except BrainError as exc:
            exc.close = self._has_body()
            raise

    def _mcp(self, caller: Identity) -> Reply:
        """MCP's Streamable HTTP transport (`mcp_http`), after the same gate as every route."""
        from .mcp_http import answer

        body = self._read_bytes(True, f"{self.command} /mcp") if self.command == "POST" else None
        self.server.watchdog.disarm(self.connection)   # the request is in
        reply = answer(self.command, self.headers, body, caller, self._vault, self.server.mcp_sessions)
        return Reply(reply.status, reply.body, headers=reply.headers)

    def _roots(self) -> list[Path]:
        """The folders of the vaults this request may name files of: the served vault's, and
        `X-Persona`'s when it can be found (`told_to_client`)."""
        roots = [Path(self.server.root).absolute()]
        try:
            if self.headers.get("X-Persona"):
                roots.append(self._vault().root)
        except BrainError:
            pass
        return roots

    def _vault(self) -> Vault:
        """The vault this request is served from: the served one, or `X-Persona`'s."""
        persona = self.headers.get_all("X-Persona") or []
        if not persona:
            return Vault(self.server.root)
        from ..agents.personas import persona_vault

        if len(persona) > 1:
            raise UsageError("X-Persona is given more than once; give one persona", field="X-Persona")
        return persona_vault(Vault(self.server.root), persona[0].strip())

    def _route(self, path: str, routes: Iterable[Route] = ROUTES) -> tuple[Route, str | None]:
        segments = path.strip("/").split("/") if path != "/" else []
        allowed = []
        for route in routes:
            ref = route.matches(segments)
            if ref is False:
                continue
            if route.method != self.command:
                allowed.append(route.method)
                continue
            if ref is not None:
                try:
                    ref = unquote(ref, errors="strict")
                except UnicodeDecodeError:
                    raise UsageError("the memory id is not UTF-8; percent-encode UTF-8 text", field="id") from None
            return route, ref
        if allowed:
            raise RequestRefused(405, "METHOD_NOT_ALLOWED", f"{self.command} is not allowed on {path}; "
                                 f"use {', '.join(allowed)}", close=self._has_body(), allowed=allowed)
        raise RequestRefused(404, "NOT_FOUND", f"no route {self.command} {path}; the routes are in docs/http-api.md",
                             close=self._has_body())

    def _has_body(self) -> bool:
        return "Transfer-Encoding" in self.headers or self.headers.get("Content-Length", "0").strip() not in ("", "0")

    def _read_body(self, route: Route) -> dict[str, Any] | None:
        data = self._read_bytes(route.body is not None, f"{route.method} {route.path}")
        if data is None:
            return None
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise UsageError(f"the body is not valid JSON: {exc}") from None
        if not isinstance(body, dict):
            raise UsageError(f"the body must be a JSON object, got {type(body).__name__}")
        return body

    def _read_bytes(self, takes_body: bool, what: str) -> bytes | None:
        """The request's JSON body as bytes (None for none), after the checks of its framing:
        no chunks, a length that is a number and within `max_body_bytes`, a JSON media type."""
        if "Transfer-Encoding" in self.headers:
            raise RequestRefused(411, "LENGTH_REQUIRED", "chunked request bodies are not accepted; send Content-Length",
                                 close=True)
        raw_length = self.headers.get("Content-Length", "0").strip() or "0"
        if not (raw_length.isascii() and raw_length.isdigit()):   # `²` is a digit to isdigit, not to int
            raise RequestRefused(400, "INVALID_ARGUMENT", f"Content-Length {raw_length!r} is not a number", close=True)
        length = int(raw_length)
        if length == 0:
            return None
        if length > self.server.max_body:
            raise RequestRefused(413, "PAYLOAD_TOO_LARGE", f"the body is {length} bytes, over the "
                                 f"{self.server.max_body}-byte limit ([http] max_body_bytes)", close=True,
                                 limit=self.server.max_body)
        if not takes_body:
            raise RequestRefused(400, "INVALID_ARGUMENT", f"{what} takes no body", close=True)
        media = self.headers.get("Content-Type", "")
        kind, _, params = media.partition(";")
        charset = params.strip().lower()
        if kind.strip().lower() != "application/json" or charset not in ("", "charset=utf-8", 'charset="utf-8"'):
            raise RequestRefused(415, "UNSUPPORTED_MEDIA_TYPE", f"the body must be JSON (Content-Type: "
                                 f"application/json), got {media or 'no Content-Type'!r}", close=True)
        try:
            data = self.rfile.read(length)
        except OSError:   # the socket's own timeout (request_timeout per read) can beat the watchdog
            data = b""
        if len(data) < length:
            raise RequestRefused(408, "REQUEST_TIMEOUT", "the body did not arrive in time", close=True)
        return data

    def _idempotency_key(self) -> str | None:
        key = self.headers.get("Idempotency-Key")
        if key is None:
            return None
        key = key.strip()
        if not key or len(key) > 255 or any(ord(c) < 33 or ord(c) > 126 for c in key):
            raise UsageError("Idempotency-Key must be 1 to 255 printable ASCII characters", field="Idempotency-Key")
        return key

    def _send(self, reply: Reply) -> None:
        try:
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            for name, value in (getattr(self, "page_headers", None) or {}).items():
                if name not in reply.headers:
                    self.send_header(name, value)
            if self.close_connection:
                self.send_header("Connection", "close")
            if reply.status == 401:
                self.send_header("WWW-Authenticate", 'ApiKey header="X-API-KEY"')
            if reply.data is None and reply.stream is None:   # 202 Accepted, 204: no body
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if reply.stream is not None:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in reply.stream:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
                return
            payload = utf8_json(reply.data)
            if "Content-Type" not in reply.headers:
                self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            self.close_connection = True   # the client went away or stopped reading; nothing to answer


def _if_match(value: str | None) -> str | None:
    """The hash an `If-Match` header names (`"h"`, `W/"h"` or `h`); None for none or `*`."""
    if value is None or value.strip() == "*":
        return None
    value = value.strip()
    if value.startswith("W/"):
        value = value[2:]
    return value.strip('"')


def make_server(root: Path, host: str, port: int, api_key: str, max_body: int, timeout: float) -> Server:
    try:
        return Server((host, port), root, api_key, max_body, timeout)
    except OSError as exc:
        raise CannotListen(f"cannot listen on {host}:{port}: {exc.strerror or exc}; "
                           "give another --port (0 picks a free one) or --host") from None
    except (OverflowError, ValueError) as exc:  # a port outside 0..65535
        raise CannotListen(f"cannot listen on {host}:{port}: {exc}; give --port 0 to 65535") from None
    except (TypeError, UnicodeError) as exc:
        # Trigger: a --host the resolver cannot even encode (an RTL override, a label over 63
        # characters: "encoding of hostname failed"). Why: it was a traceback. Outcome: the same
        # one line as any host that does not resolve.
        raise CannotListen(f"cannot listen on {host!r}: not a host name or address ({exc}); give --host "
                           "127.0.0.1, 0.0.0.0 or a name of this machine") from None


def default_workers() -> int:
    """One worker process per core this process may run on, at most MAX_DEFAULT_WORKERS."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, MAX_DEFAULT_WORKERS))


def serve(vault: Vault, host: str = "127.0.0.1", port: int = 8765, workers: int | None = None, page=None) -> None:
    """Serve until SIGTERM or SIGINT; the listening URL and the number of worker processes go
    to stderr once the port is bound.

    The bound socket is shared by `workers` processes (this one and forked children; None: one
    per core, `default_workers`), each with its own threads: Python runs one thread at a time
    per process, so one process uses one core however many clients wait. The library is safe
    across processes (the CLI's guarantee), so nothing else is shared but a page of connection
    counts, by which the workers take the clients in turn (`Balance`); the writes of each
    process's threads are committed in batches (`journal.writing`). SIGTERM to this process
    stops them all.

    `page` makes the door of a web page served beside the API (`doors.web.Page`, given by the
    CLI): called once with the server before the workers fork; it answers the paths it `owns`.
    """
    if workers is None:
        workers = default_workers()
    if not 1 <= workers <= 64:
        raise UsageError(f"--workers {workers} is out of range; give 1 to 64")
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is out of range; give 0 to 65535 (0 picks a free one)")
    if not host.strip():
        # Trigger: `--host ""` (`--host "$HOST"` with the variable unset). Why: an empty address
        # binds every network interface, which 127.0.0.1, the default, was chosen to avoid.
        # Outcome: bad usage; every interface must be asked for by name (0.0.0.0).
        raise UsageError("--host is empty, which would listen on every network interface; give 127.0.0.1 "
                         "(this machine only) or 0.0.0.0 (every interface)", field="host")
    api_key = load_api_key(vault)
    settings = vault.settings.http
    server = make_server(vault.root, host, port, api_key, settings.max_body_bytes, settings.request_timeout)
    from .access import gate_for

    server.gate = gate_for(vault, host, server.server_address[1], api_key)
    import tempfile
    from .mcp_http import Sessions

    server.mcp_sessions = Sessions(Path(tempfile.mkdtemp(prefix="brain-mcp-sessions-")))
    server.page = page(server) if page is not None else None
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    children = []
    parent = os.getpid()
    server.balance = Balance(workers) if workers > 1 else None
    for slot in range(1, workers):
        child = os.fork()
        if child == 0:   # a worker: serve until told to stop, then leave without returning to the CLI
            code = 0
            try:
                server.balance.take(slot)
                _run(server, stop, parent)
            except BaseException:  # noqa: BLE001 - a worker's bug is printed; its exit code says so
                traceback.print_exc(file=sys.stderr)
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        children.append(child)
    shown = f"[{host}]" if ":" in host else host
    print(f"brain serve: listening on http://{shown}:{server.server_address[1]} (vault {vault.root}, "
          f"{workers} worker process{'es' if workers > 1 else ''})", file=sys.stderr, flush=True)
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"brain serve: warning: {host} is reachable from other machines; the key travels in clear "
              "text unless a TLS proxy is in front", file=sys.stderr, flush=True)
    from ..agents.keys import read_keys, refused_keys

    keys_file = server.gate.keyring.path
    for name, why in refused_keys(read_keys(keys_file)).items():
        print(f"brain serve: warning: {keys_file}: the key of agent {name!r} admits nobody: {why}; "
              f"`brain keys revoke {name}` removes it", file=sys.stderr, flush=True)
    failed = []
    try:
        _run(server, stop)
    finally:
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGTERM)
        for child in children:
            _, status = os.waitpid(child, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                failed.append(child)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        import shutil

        shutil.rmtree(server.mcp_sessions.folder, ignore_errors=True)
        if server.page is not None:
            server.page.close()
        print("brain serve: stopped", file=sys.stderr, flush=True)
    if failed:
        raise CannotListen(f"{len(failed)} worker process(es) failed; their tracebacks are above")


def _run(server: Server, stop: threading.Event, parent: int | None = None) -> None:
    """Serve on `server` in a thread until `stop` is set (by SIGTERM or SIGINT) or, in a worker,
    until `parent` (the `serve` process that forked it) is gone, then shut down cleanly: no new
    requests, idle kept-alive connections cut, requests in flight finished."""
    server.watchdog = Watchdog()
    from ..intake.jobs import runner_for

    jobs = runner_for(Vault(server.root)).start()   # async ingests: pending ones first (after any restart)
    from ..search.index import FoldUpkeep, keep_connections

    upkeep = FoldUpkeep.start([Vault(server.root)])   # folds the index's waiting cards off the requests' path (search/index.py)
    keep_connections()   # each request thread keeps its index connection between requests (search/index.py)
    worker = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="brain-serve")
    worker.start()
    try:
        while not stop.wait(1.0):   # a timed wait: signal handlers run between waits on every platform
            # Trigger: this worker was handed to another parent. Why: its `serve` process was
            # killed outright (SIGKILL, OOM) and cannot pass SIGTERM on; left running, the
            # worker would serve the port and run jobs with nobody to stop it. Outcome: it
            # stops as if told to.
            if parent is not None and os.getppid() != parent:
                break
    finally:
        if server.balance is not None:
            server.balance.leave()   # no connection is left to this worker any more
        server.shutdown()            # no new requests
        server.watchdog.cut_all()    # idle kept-alive connections stop waiting
        server.server_close()        # the socket closes once requests in flight have finished
        worker.join()
        upkeep.stop()                # after the group it is folding, if any
        jobs.stop()                  # a job still running is run again by the next start (intake/jobs.py)
