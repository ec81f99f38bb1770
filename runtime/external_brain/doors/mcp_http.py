"""MCP over Streamable HTTP (revision 2025-11-25) at `/mcp` on `brain serve`, beside `/v1`.

Promises:
- The same tools as `brain mcp` on stdio, through the same dispatch (`mcp.handle`): one
  implementation, two transports. The served door adds what the network needs: the gate every
  request of `brain serve` passes first (Host, Origin, then the key: `access.Gate`), the caller's
  identity (an agent's key binds each tool's `agent` argument, `access.bind_agent`), `X-Persona`,
  and sessions.
- POST carries one JSON-RPC message. A request is answered with `application/json` (one
  response; the tools never stream); a notification or a response is 202 Accepted with no
  body. A body that is not JSON is 400 with -32700; a batch (an array) is 400 with -32600.
- `initialize` opens a session: the answer carries `Mcp-Session-Id` (256 random bits, visible
  ASCII), bound to the key that opened it and to its `X-Persona`. Every later request must send
  it (none: 400); an unknown, ended or expired session, or one opened with another key, is 404,
  so the client starts a new one, as the specification says. DELETE ends a session. A session
  idle for a day expires.
- `MCP-Protocol-Version`: a version this server does not speak is 400 (the SDK's probe of
  `server/discover` at a newer revision falls back to `initialize` on it).
- GET is 405 (the server sends no messages of its own, so it offers no SSE stream).
- Sessions are small files in a private folder that the serving processes share (`--workers`
  forks them after it is made), so any worker answers any session; the folder goes when the
  server stops (clients then get 404 and start again).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .access import Identity
from .mcp import INVALID_REQUEST, PARSE_ERROR, PROTOCOL_VERSIONS, handle

MCP_PATH = "/mcp"
SESSION_HEADER = "Mcp-Session-Id"
VERSION_HEADER = "MCP-Protocol-Version"
SESSION_IDLE_SECONDS = 24 * 3600
TOUCH_EVERY_SECONDS = 60
# JSON-RPC codes of the door's own refusals (the implementation-defined server-error range).
DOOR_REFUSED = -32001


@dataclass
class Answer:
    status: int
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)


def rpc_error(request_id: Any, code: int, message: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def refusal(code: str, message: str) -> dict[str, Any]:
    """A refusal of the door (Host, Origin, key, size, media type) as a JSON-RPC error without
    an id, the way the specification lets an HTTP error status carry one; `data.code` is the
    code `/v1` gives the same refusal."""
    return rpc_error(None, DOOR_REFUSED, message, {"code": code})


class Sessions:
    """The open sessions: one file each, named by the hash of the id (the id itself is nowhere
    on disk), holding who opened it (the key's identity), its persona and protocol version."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _file(self, session_id: str) -> Path:
        return self.folder / hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()

    def open(self, caller: Identity, persona: str, version: str) -> str:
        self.prune()
        session_id = secrets.token_urlsafe(32)
        record = {"caller": caller.name, "owner": caller.owner, "persona": persona, "version": version,
                  "opened": time.time()}
        path = self._file(session_id)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(record, handle)
        return session_id

    def find(self, session_id: str) -> dict[str, Any] | None:
        path = self._file(session_id)
        try:
            with open(path, encoding="utf-8") as handle:
                record = json.load(handle)
                idle = time.time() - os.fstat(handle.fileno()).st_mtime
        except (OSError, ValueError):   # no such session (or one being removed)
            return None
        if idle > SESSION_IDLE_SECONDS:
            self.close(session_id)
            return None
        if idle > TOUCH_EVERY_SECONDS:
            try:
                os.utime(path)   # in use: its idle clock starts again
            except OSError:
                pass
        return record

    def close(self, session_id: str) -> bool:
        try:
            os.unlink(self._file(session_id))
            return True
        except FileNotFoundError:
            return False

    def prune(self) -> None:
        """Remove sessions idle for over a day (run when one opens: no thread of its own)."""
        limit = time.time() - SESSION_IDLE_SECONDS
        try:
            names = os.listdir(self.folder)
        except FileNotFoundError:
            return
        for name in names:
            path = self.folder / name
            try:
                if os.stat(path).st_mtime < limit:
                    os.unlink(path)
            except FileNotFoundError:
                pass


def _header(headers: Any, name: str) -> str | None:
    values = headers.get_all(name) or []
    return values[0].strip() if len(values) == 1 else ("" if values else None)


def answer(method: str, headers: Any, body: bytes | None, caller: Identity, vault_for: Callable[[], Any],
           sessions: Sessions) -> Answer:
    """The answer to one HTTP request on the MCP endpoint. `vault_for()` is the vault of the
    request's `X-Persona` (raising UNKNOWN_PERSONA for a name the config does not hold)."""
    persona = (_header(headers, "X-Persona") or "")
    if method == "GET":
        return Answer(405, rpc_error(None, INVALID_REQUEST, "this server offers no SSE stream on GET; "
                                     "POST JSON-RPC messages to /mcp"), {"Allow": "POST, DELETE"})
    if method == "DELETE":
        session_id = _header(headers, SESSION_HEADER)
        if not session_id:
            return Answer(400, rpc_error(None, INVALID_REQUEST, f"DELETE /mcp needs the {SESSION_HEADER} header"))
        record = sessions.find(session_id)
        if record is None or record["caller"] != caller.name:
            return Answer(404, rpc_error(None, INVALID_REQUEST, "no such session (ended or expired)"))
        sessions.close(session_id)
        return Answer(204)
    if method != "POST":
        return Answer(405, rpc_error(None, INVALID_REQUEST, f"{method} is not allowed on /mcp; use POST"),
                      {"Allow": "POST, DELETE"})
    try:
        message = json.loads((body or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return Answer(400, rpc_error(None, PARSE_ERROR, f"parse error: {exc}"))
    if isinstance(message, list):
        return Answer(400, rpc_error(None, INVALID_REQUEST, "send one JSON-RPC message per POST (no batches)"))
    request_id = message.get("id") if isinstance(message, dict) else None
    request_id = request_id if isinstance(request_id, (str, int)) and not isinstance(request_id, bool) else None
    version = _header(headers, VERSION_HEADER)
    if version is not None and version not in PROTOCOL_VERSIONS:
        return Answer(400, rpc_error(request_id, INVALID_REQUEST,
                                     f"unsupported {VERSION_HEADER} {version!r}; this server speaks "
                                     f"{', '.join(PROTOCOL_VERSIONS)}"))
    is_request = isinstance(message, dict) and "method" in message and "id" in message
    if is_request and message.get("method") == "initialize":
        vault = vault_for()   # an unknown persona is refused before a session opens for it
        response = handle(vault.root, message, caller)
        if response is None or "error" in response:
            return Answer(200, response)
        session_id = sessions.open(caller, persona, response["result"].get("protocolVersion", ""))
        return Answer(200, response, {SESSION_HEADER: session_id})
    session_id = _header(headers, SESSION_HEADER)
    if not session_id:
        return Answer(400, rpc_error(request_id, INVALID_REQUEST,
                                     f"no {SESSION_HEADER} header: send `initialize` first and then its session id"))
    record = sessions.find(session_id)
    if record is None or record["caller"] != caller.name:
        # Trigger: a session that ended, expired, belongs to a server that restarted, or was opened
        # with another key. Why: a session is its opener's; another key learns nothing of it.
        # Outcome: 404, which tells the client to initialize a new session (specification).
        return Answer(404, rpc_error(request_id, INVALID_REQUEST, "no such session (ended, expired, or the server "
                                     "restarted); send `initialize` again"))
    if record.get("persona", "") != persona:
        return Answer(400, rpc_error(request_id, INVALID_REQUEST,
                                     f"this session is for persona {record.get('persona') or '(none)'!r}; send the "
                                     "same X-Persona on every request of a session, or initialize a new one"))
    if not is_request:
        return Answer(202)   # a notification, or a response to a request we never send: accepted
    response = handle(vault_for().root, message, caller)
    return Answer(200, response) if response is not None else Answer(202)
