"""The Memory Gardener ("記憶の庭師", the garden keeper; docs/compatibility.md, The web page): a web page served by
`brain serve` at `/`, beside `/v1` and `/mcp`, in the same process, with the same keys.

Promises:
- Every request to the page's paths (`/`, `/web/...`) passes the server's gate first
  (`access.Gate.check_host_origin`: a foreign `Host` or `Origin`, a DNS-rebinding page, is 403
  before anything else), exactly as `/v1` does.
- Logging in takes a key once, in the body of `POST /web/api/login` (never a URL, never logged):
  the owner's key or an agent's (`Gate.identify`, the same rule as `/v1`). It opens a session
  kept server-side as a file in a private folder that every `--workers` process shares (the MCP
  door's `mcp_http.Sessions`, whose file holds a hash of the session id, never the id); the
  browser holds only an HttpOnly, SameSite=Strict cookie scoped to `/web/api` that expires with
  the session (`SESSION_SECONDS`). An agent's session ends when its key is revoked. Logout ends
  it at once. Sessions end when the server stops.
- Every request of a session but `GET /web/api/session` (which hands the page its token) needs
  the session's CSRF token in `X-CSRF-Token`, GETs too: a GET writes as well (a search miss,
  `referenced`), and a page on another port of the same host is the same site to the cookie.
- Every answer of the page carries `HEADERS`: a Content-Security-Policy with no inline script
  and no other origin, `nosniff`, no referrer, no framing, no caching of data.
- No logic of its own: `/web/api/v1/...` runs `/v1`'s own routes (`http_api.ROUTES`, through
  `Handler.run_route`, with `bind_agent` and the schema checks), and the page's few other routes
  (`ROUTES` below) each call one library operation that `/v1` lacks (history, undo, links, the
  graph, analyze, trends, stats, Inbox triage). A session acts as its key's identity: an agent's
  sees and changes only what that agent may (`bind_agent`); undo and Inbox triage are the owner's.
- The page itself is static files shipped in the package (`static/`): plain HTML, CSS and
  JavaScript, nothing fetched from elsewhere, no build step. Card text is untrusted and is put
  on the page as text only (app.js builds nodes with `textContent`, never HTML).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import shutil
import tempfile
import time
from email.message import Message
from pathlib import Path
from typing import Any, Callable

from ...errors import BrainError, Forbidden, Unauthenticated, UsageError
from ...vault.storage import Vault, iso
from ..access import Identity
from ..http_api import Call, Reply, RequestRefused, Route, check_call
from ..mcp.schemas import _integer, _object, _string   # the schema helpers /v1 uses
from ..mcp_http import Sessions

STATIC = Path(__file__).resolve().parent / "static"
API = "/web/api"
STATIC_PREFIX = "/web/static/"
SESSION_SECONDS = 12 * 3600
CSRF_HEADER = "X-CSRF-Token"
CSP = ("default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; "
       "form-action 'self'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
MEDIA_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
               ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml",
               ".txt": "text/plain; charset=utf-8"}
_BOOLEAN = {"type": "boolean"}
_AGENT = _string("the agent to act as (an agent's session: always its own)", minLength=1)


# ---------------------------------------------------------------------------- sessions

class WebSessions(Sessions):
    """The page's sessions: `mcp_http.Sessions`' files (shared by the worker processes, the id
    only as a hash), each also holding its CSRF token, its hard expiry, and the hash of the key
    that opened it (so a revoked agent key ends its sessions)."""

    def open_session(self, caller: Identity, persona: str, key_digest: str) -> tuple[str, dict[str, Any]]:
        self.prune()
        session_id = secrets.token_urlsafe(32)
        moment = time.time()
        record = {"caller": caller.name, "owner": caller.owner, "persona": persona, "key": key_digest,
                  "csrf": secrets.token_urlsafe(32), "opened": moment, "expires": moment + SESSION_SECONDS}
        fd = os.open(self._file(session_id), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle)
        return session_id, record

    def find(self, session_id: str) -> dict[str, Any] | None:
        record = super().find(session_id)
        if record is None or not isinstance(record.get("expires"), (int, float)):
            return None
        if record["expires"] <= time.time():
            self.close(session_id)
            return None
        return record


def _cookie(headers: Any, name: str) -> str | None:
    """The value of cookie `name` in the request's `Cookie` header(s), or None."""
    for header in headers.get_all("Cookie") or ():
        for part in header.split(";"):
            key, _, value = part.strip().partition("=")
            if key == name and value:
                return value.strip('"')
    return None


def _key_headers(key: str) -> Message:
    headers = Message()
    headers["X-API-KEY"] = key
    return headers


# ---------------------------------------------------------------------------- the page's own routes

def _agent(call: Call) -> str | None:
    return call.args.get("agent_id")


def _links(vault: Vault, call: Call) -> Reply:
    from ...evolution.graph import links

    return Reply(200, links(vault, call.ref, "both", _agent(call)).as_dict())


def _history(vault: Vault, call: Call) -> Reply:
    from ...evolution.history import history

    result = history(vault, call.ref, _agent(call))
    return Reply(200, {"card": result.card, "entries": result.entries})


def _link(vault: Vault, call: Call) -> Reply:
    from ...evolution.relations import link

    args = call.args
    return Reply(200, link(vault, call.ref, args["to"], args["rel"], args.get("weight"), args.get("reason"),
                           agent=args.get("agent_id", "")).as_dict())


def _unlink(vault: Vault, call: Call) -> Reply:
    from ...evolution.relations import unlink

    args = call.args
    return Reply(200, unlink(vault, call.ref, args["to"], args.get("rel"), agent=args.get("agent_id", "")).as_dict())


def _undo(vault: Vault, call: Call) -> Reply:
    from ...evolution.history import undo

    result = undo(vault, call.ref, call.args.get("force", False))
    return Reply(200, {"undone": result.undone.get("eid"), "undone_event": result.undone.get("event"),
                       "files": result.files, "forced": result.forced, "removed": result.removed,
                       "relinked": result.relinked, "event": result.event["eid"] if result.event else None,
                       "already_undone_by": result.already_undone_by})


def _graph(vault: Vault, call: Call) -> Reply:
    from ...evolution.graph import graph

    result = graph(vault, agent=_agent(call))
    return Reply(200, {"nodes": result.nodes, "edges": result.edges})


def _analyze(vault: Vault, call: Call) -> Reply:
    from ...answers.insights import analyze

    return Reply(200, analyze(vault, _agent(call)).as_dict())


def _trends(vault: Vault, call: Call) -> Reply:
    from ...answers.trends import trends

    return Reply(200, trends(vault, _agent(call), call.args.get("days", 180)).as_dict())


def _stats(vault: Vault, call: Call) -> Reply:
    from ...answers.insights import stats

    settings = vault.settings
    return Reply(200, {**stats(vault, _agent(call)).as_dict(), "types": list(settings.types),
                       "domains": list(settings.domains), "relations": list(settings.relations)})


def _inbox(vault: Vault, call: Call) -> Reply:
    from ...intake.inbox import candidates

    return Reply(200, candidates(vault, call.args.get("include_closed", False)).as_dict())


def _promote(vault: Vault, call: Call) -> Reply:
    from ...intake.inbox import promote

    args = call.args
    result = promote(vault, call.ref, card_type=args.get("type"), domain=args.get("domain"), title=args.get("title"),
                     reason="promoted in the Memory Gardener")
    card = result.card
    return Reply(200, {"source": result.source, "path": card.rel, "id": card.id, "title": card.title})


def _merge(vault: Vault, call: Call) -> Reply:
    from ...intake.inbox import merge_candidate

    return Reply(200, merge_candidate(vault, call.ref, call.args["into"]).as_dict())


def _reject(vault: Vault, call: Call) -> Reply:
    from ...intake.inbox import reject_candidate

    return Reply(200, reject_candidate(vault, call.ref, call.args.get("reason")).as_dict())


_SCOPED = _object({"agent_id": _AGENT})
ROUTES: tuple[Route, ...] = (
    Route("GET", f"{API}/cards/{{id}}/links", "a card's links in and out (CLI `links`)", _links, query=_SCOPED),
    Route("GET", f"{API}/cards/{{id}}/history", "a card's events with diffs (CLI `history`)", _history,
          query=_SCOPED),
    Route("POST", f"{API}/cards/{{id}}/link", "link this card to another (CLI `link`)", _link,
          body=_object({"to": _string("the target: path, stem or id", minLength=1), "rel": _string("relation"),
                        "weight": {"type": "number", "minimum": 0, "maximum": 1},
                        "reason": _string("why, a sentence"), "agent_id": _AGENT}, ("to", "rel"))),
    Route("POST", f"{API}/cards/{{id}}/unlink", "remove this card's links to another (CLI `unlink`)", _unlink,
          body=_object({"to": _string("the target: path, stem or id", minLength=1), "rel": _string("relation"),
                        "agent_id": _AGENT}, ("to",))),
    Route("POST", f"{API}/events/{{id}}/undo", "undo one event (CLI `undo`); the owner's", _undo,
          body=_object({"force": _BOOLEAN})),
    Route("GET", f"{API}/graph", "every visible card and link, with confidence (CLI `graph`)", _graph,
          query=_SCOPED),
    Route("GET", f"{API}/analyze", "health score and issues (CLI `analyze`)", _analyze, query=_SCOPED),
    Route("GET", f"{API}/trends", "confidence distribution and feedback per day (`answers.trends.trends`)", _trends,
          query=_object({"agent_id": _AGENT, "days": _integer("how many days of feedback", 1, 3650, 180)})),
    Route("GET", f"{API}/stats", "counts, top tags, and the vault's types and domains (CLI `stats`)", _stats,
          query=_SCOPED),
    Route("GET", f"{API}/inbox", "Inbox candidates with evidence and assessment; the owner's", _inbox,
          query=_object({"include_closed": _BOOLEAN})),
    Route("POST", f"{API}/inbox/{{id}}/promote", "promote a candidate (CLI `promote`); the owner's", _promote,
          body=_object({"type": _string("card type"), "domain": _string("domain"), "title": _string("title")})),
    Route("POST", f"{API}/inbox/{{id}}/merge", "fold a candidate into a card (`intake.inbox.merge_candidate`); the owner's",
          _merge, body=_object({"into": _string("the card to merge into: path, stem or id", minLength=1)},
                               ("into",))),
    Route("POST", f"{API}/inbox/{{id}}/reject", "close a candidate as rejected (`intake.inbox.reject_candidate`); "
          "the owner's", _reject, body=_object({"reason": _string("why, one line", maxLength=500)})),
)
OWNER_ONLY = frozenset(route.path for route in ROUTES if route.path.startswith((f"{API}/events", f"{API}/inbox")))
_LOGIN = Route("POST", f"{API}/login", "open a session with a key", lambda vault, call: Reply(500),
               body=_object({"key": _string("the owner's key or an agent's", minLength=1, maxLength=4096),
                             "persona": _string("a persona of [personas] (optional)", maxLength=200)}, ("key",)))


# ---------------------------------------------------------------------------- the door

class Page:
    """The page's door on one server: made by `http_api.serve` (before the workers fork, so its
    session folder is theirs too), asked by each request whether it `owns` the path."""

    headers = HEADERS

    def __init__(self, server) -> None:
        self.server = server
        self.root: Path = server.root
        self.sessions = WebSessions(Path(tempfile.mkdtemp(prefix="brain-web-sessions-")))
        # Cookies are per host, not per port: a name per port keeps two servers' sessions apart.
        self.cookie = f"brain_session_{server.server_address[1]}"
        self.files = {p.name: p.read_bytes() for p in STATIC.iterdir() if p.is_file() and p.suffix in MEDIA_TYPES}

    @staticmethod
    def owns(path: str) -> bool:
        return path == "/" or path.startswith("/web/")

    def close(self) -> None:
        shutil.rmtree(self.sessions.folder, ignore_errors=True)

    # ------------------------------------------------------------------ one request

    def answer(self, handler, split) -> Reply:
        gate = self.server.gate
        # Trigger: any request for the page. Why: a page of another origin (DNS rebinding) must
        # reach nothing, the login form included. Outcome: 403 before anything else, as on /v1.
        try:
            gate.check_host_origin(handler.headers)
        except BrainError as exc:   # the body is left unread: the connection cannot carry another request
            exc.close = handler._has_body()
            raise
        path, method = split.path, handler.command
        if not path.startswith(API + "/"):
            return self._static(handler, path, method)
        if path == f"{API}/login":
            return self._login(handler, split)
        session_id = _cookie(handler.headers, self.cookie)
        record = self.sessions.find(session_id) if session_id else None
        if record is not None and not self._key_still_valid(record):
            self.sessions.close(session_id)
            record = None
        if record is None:
            raise RequestRefused(401, "UNAUTHENTICATED", "not logged in, or the session ended; log in with a key",
                                 close=handler._has_body())
        if not (path == f"{API}/session" and method == "GET") and not hmac.compare_digest(
                (handler.headers.get(CSRF_HEADER) or "").encode("utf-8", "replace"), record["csrf"].encode()):
            # Trigger: any request but the page's own look at its session (which hands it the
            # token) without the session's token, GETs included. Why: a cookie alone proves
            # nothing about which page sent the request, and GETs write too (a search miss is kept
            # in the Inbox, a card read logs `referenced`); SameSite=Strict does not stop a page
            # on another port of the same host (ports do not make another site), whose
            # `<img src=".../web/api/v1/memories?q=...">` carries no Origin. Outcome: 403,
            # nothing read or written.
            raise RequestRefused(403, "FORBIDDEN", f"a request needs the session's {CSRF_HEADER} header; reload the page",
                                 close=handler._has_body())
        caller = Identity(None if record["owner"] else record["caller"])
        if path == f"{API}/session" and method == "GET":
            handler.server.watchdog.disarm(handler.connection)
            return Reply(200, self._session_info(record))
        if path == f"{API}/logout" and method == "POST":
            handler.server.watchdog.disarm(handler.connection)
            self.sessions.close(session_id)
            return Reply(200, {"logged_out": True}, headers={"Set-Cookie": self._set_cookie("", 0)})
        persona = record.get("persona") or ""
        vault_for = self._vault_for(persona)
        if path.startswith(f"{API}/v1/"):
            route, ref = handler._route(path[len(API):])
        else:
            route, ref = handler._route(path, ROUTES)
            if route.path in OWNER_ONLY and not caller.owner:
                raise Forbidden(f"{route.summary.split(';')[0]} is for the owner's key only; log in with it",
                                field="session")
        return handler.run_route(route, ref, caller, split.query, vault_for)

    def _vault_for(self, persona: str) -> Callable[[], Vault]:
        if not persona:
            return lambda: Vault(self.root)
        from ...agents.personas import persona_vault

        return lambda: persona_vault(Vault(self.root), persona)

    def _key_still_valid(self, record: dict[str, Any]) -> bool:
        """An agent's session lives only as long as its key (`brain keys revoke` ends it)."""
        if record.get("owner"):
            return True
        keyring = self.server.gate.keyring
        if keyring is None:
            return False
        from ...agents.keys import read_keys

        try:
            entry = read_keys(keyring.path).get(record.get("caller"))
        except Exception:  # noqa: BLE001 - a keys file that cannot be read admits no agent
            return False
        return entry is not None and hmac.compare_digest(entry[0], str(record.get("key")))

    def _login(self, handler, split) -> Reply:
        if handler.command != "POST":
            raise RequestRefused(405, "METHOD_NOT_ALLOWED", f"{handler.command} is not allowed on {split.path}; use POST",
                                 close=handler._has_body(), allowed=["POST"])
        if split.query:
            raise UsageError("the key goes in the JSON body of the login, never in the URL")
        body = handler._read_body(_LOGIN)
        handler.server.watchdog.disarm(handler.connection)
        args = body if body is not None else {}
        check_call(_LOGIN, args)
        key = args["key"].strip()
        try:
            caller = self.server.gate.identify(_key_headers(key))
        except Unauthenticated:
            # Trigger: a wrong key typed into the login form. Why: the gate's words name the
            # X-API-KEY header, which a person at the page never sends. Outcome: 401 naming the key.
            raise Unauthenticated("wrong key; give the key `brain serve` was started with ($BRAIN_API_KEY or "
                                  "[http] api_key_file) or an agent's key (`brain keys add NAME`)") from None
        persona = (args.get("persona") or "").strip()
        if persona:
            self._vault_for(persona)()   # an unknown persona is refused before a session opens
        session_id, record = self.sessions.open_session(caller, persona, hashlib.sha256(key.encode()).hexdigest())
        return Reply(200, self._session_info(record), headers={"Set-Cookie": self._set_cookie(session_id,
                                                                                              SESSION_SECONDS)})

    def _set_cookie(self, value: str, max_age: int) -> str:
        return f"{self.cookie}={value}; Path={API}; HttpOnly; SameSite=Strict; Max-Age={max_age}"

    def _session_info(self, record: dict[str, Any]) -> dict[str, Any]:
        from datetime import datetime, timezone

        return {"identity": record["caller"], "owner": bool(record["owner"]),
                "agent": None if record["owner"] else record["caller"], "persona": record.get("persona") or None,
                "csrf": record["csrf"], "expires": iso(datetime.fromtimestamp(record["expires"], timezone.utc)),
                "vault": self.root.name}

    def _static(self, handler, path: str, method: str) -> Reply:
        if method != "GET":
            raise RequestRefused(405, "METHOD_NOT_ALLOWED", f"{method} is not allowed on {path}; use GET",
                                 close=handler._has_body(), allowed=["GET"])
        name = "index.html" if path in ("/", "/web/", "/web") else (
            path[len(STATIC_PREFIX):] if path.startswith(STATIC_PREFIX) else None)
        data = self.files.get(name) if name else None
        if data is None:
            raise RequestRefused(404, "NOT_FOUND", f"no page {path}; open /", close=handler._has_body())
        handler._read_bytes(False, f"GET {path}")   # a GET with a body is refused, as on /v1
        handler.server.watchdog.disarm(handler.connection)
        return Reply(200, stream=[data], headers={"Content-Type": MEDIA_TYPES[Path(name).suffix],
                                                  "Cache-Control": "no-cache"})
