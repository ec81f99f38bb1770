"""`brain mcp`: the Model Context Protocol door, JSON-RPC 2.0 over stdio (README, "Wiring it into your agent"; docs/compatibility.md, MCP tools).

Promises:
- One JSON message per line in, one per line out; stdout carries protocol only (anything else
  that writes to `sys.stdout` while a tool runs goes to stderr), logs go to stderr.
- Lifecycle of the 2025-11-25 revision: `initialize` answers the client's protocol version when
  it is one of `PROTOCOL_VERSIONS`, else the latest; `notifications/initialized`, `ping`,
  `tools/list`, `tools/call`. Unknown methods get -32601 at once (clients of later revisions
  probe `server/discover` and fall back on it), a line that is not JSON gets -32700, a message
  that is not a request -32600, and the server reads on. Notifications get no response.
- Each tool is one `Tool` entry (`doors.mcp.schemas`): name, description, inputSchema,
  outputSchema and a function that calls one library operation and shapes its result. The tools
  live by group (`memories`, `links`, `answers`, `context`); `TOOLS` here is the one registry. A result carries `structuredContent`
  and the same JSON as a text block. Arguments are checked against the inputSchema (required
  keys, types, ranges, unknown keys) and a bad one, like any `BrainError`, comes back as an
  `isError` result naming the problem.
- Long-lived but stateless between calls: every call builds a fresh `Vault` (settings re-read),
  opens the index inside the operation and closes it, caches no card and holds no lock, so it
  sees what other processes changed. A bug in one call is logged with its traceback and
  answered with -32603; the server goes on.
- No request takes the server down. A lone surrogate (`"\ud800"`, valid JSON but no Unicode
  character) is refused where it stands: in an argument as an `isError` result naming it, in the
  id as -32600 with a null id (it cannot be written back); an operating-system error (a read-only
  vault) is the CLI's one line, IO_ERROR, as an `isError` result, never -32603.
"""

from __future__ import annotations

import json
import sys
import traceback
from typing import Any, BinaryIO

from ... import __version__
from ...errors import BrainError, in_door_terms, within_vaults
from ...vault import strict_json
from ...vault.events import acting_as
from ...vault.storage import Vault, lone_surrogate, printable
from ..access import bind_agent
from . import answers, context, links, memories
from .arguments import check_arguments
from .schemas import Tool

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")   # newest first
MAX_LINE_BYTES = 16 * 1024 * 1024

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)

INSTRUCTIONS = (
    "External Brain is a knowledge base of Markdown cards. Before non-trivial work call "
    "recall_memories (or brief); read a hit with get_memory; after applying a card call "
    "record_feedback with used or rejected. Confidence >= 0.8: apply; 0.5-0.79: apply and verify; "
    "< 0.5: reference only. Store new lessons with store_memory.")


# ---------------------------------------------------------------------------- the registry

# The order of `tools/list` (tests/test_mcp.py pins it). A tool of a group left out here stops the
# import with a ValueError, so none can go missing from the listing.
LISTED = ("store_memory", "recall_memories", "list_memories", "get_memory", "update_memory", "delete_memory",
          "get_stats", "link_memories", "unlink_memories", "explore_related", "get_memory_links",
          "analyze_knowledge", "merge_memories", "get_persona_context", "update_persona_context",
          "record_feedback", "brief", "remember", "recall", "forget", "context")
TOOLS: tuple[Tool, ...] = tuple(sorted((*memories.TOOLS, *links.TOOLS, *answers.TOOLS, *context.TOOLS),
                                       key=lambda tool: LISTED.index(tool.name)))
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


# ---------------------------------------------------------------------------- the protocol

class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def tool_result(data: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": strict_json.dumps(data, default=str)}],
            "structuredContent": data, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def call_tool(root, params: dict[str, Any], caller=None) -> dict[str, Any]:
    """One `tools/call`: unknown tool -> RpcError -32602; bad arguments or a BrainError -> an
    `isError` result; otherwise the tool's data as structuredContent and text.

    `caller` (an `access.Identity`, from the served transport; None on stdio, where the process
    is the person's own) binds the tool's `agent` argument the way `access.bind_agent` says and
    logs the call's writes as that caller's."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name, the name of a tool (a string); "
                                       "tools/list names them")
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"unknown tool {name!r}; tools/list names them")
    args = params.get("arguments")
    args = {} if args is None else args
    with acting_as(caller.actor if caller is not None else None):
        problem = check_arguments(tool.input_schema, args)
        if problem:
            _log_failure(root, tool, args, "INVALID_ARGUMENT", problem, caller)
            return tool_error(f"{tool.name}: {problem}")
        try:
            try:
                if caller is not None and "agent" in tool.input_schema["properties"]:
                    args = bind_agent(caller, args, "agent")
                # A fresh Vault per call: settings are re-read and nothing about the cards is kept.
                return tool_result(tool.run(Vault(root), args))
            except OSError as exc:
                # Trigger: an operating-system error no layer below turned into a BrainError (the
                # write lock on a read-only vault). Why: that is the world, not a bug. Outcome: the
                # CLI's one line (path and cause) as an isError result, not -32603.
                from ...vault.storage import io_problem

                raise io_problem(exc) from exc
        except BrainError as exc:
            message = in_door_terms(exc.message, lambda name: argument_name(name, tool), _TOOL_COMMANDS.get)
            if caller is not None and within_vaults(message, [root]) != message:
                # Trigger: a tool called over /mcp names a file by its path. Why: the server's file
                # system is no business of a key holder's. Outcome: named inside the vault; the
                # server's stderr keeps the whole message for its owner.
                print(f"brain serve: {tool.name}: {message}", file=sys.stderr, flush=True)
                message = within_vaults(message, [root])
            _log_failure(root, tool, args, exc.code, message, caller)
            return tool_error(f"{tool.name}: {exc.code}: {message}")


# A CLI command an error names as the way to do something -> the tool that does it.
_TOOL_COMMANDS = {"search": "recall_memories", "list": "list_memories", "get": "get_memory", "context": "context",
                  "update": "update_memory"}
# The library's name for an argument -> the names tools give it, in order (seed 000's names first).
_TOOL_NAMES = {"type": ("memory_type", "type"), "body": ("content", "body"), "project": ("context_name", "project")}


def argument_name(name: str, tool: Tool) -> str:
    """How an error message names the argument the library calls `name` (`errors.in_door_terms`):
    the tool's argument, a boolean one as `"force": true`; "" when the tool has none (a CLI option
    no MCP client can give is left out)."""
    properties = tool.input_schema["properties"]
    found = next((n for n in _TOOL_NAMES.get(name, (name,)) if n in properties), None)
    if found is None:
        return ""
    return f'"{found}": true' if properties[found].get("type") == "boolean" else found


# Tools that change the vault: a call that fails is logged (`failed`), like the CLI's writes.
WRITE_TOOLS = frozenset({"store_memory", "update_memory", "delete_memory", "link_memories", "unlink_memories",
                         "merge_memories", "record_feedback", "remember", "forget", "update_persona_context"})


def _log_failure(root, tool: Tool, args: Any, code: str, message: str, caller) -> None:
    if tool.name not in WRITE_TOOLS:
        return
    from ...vault.events import log_failure

    named = next((args[k] for k in ("memory_id", "keep_id", "source_id", "key")
                  if isinstance(args, dict) and isinstance(args.get(k), str)), None)
    log_failure(Vault(root), tool.name, code, message, named, via="mcp-http" if caller is not None else "mcp")


def handle(root, message: Any, caller=None) -> dict[str, Any] | None:
    """The response to one decoded message, or None (notifications and stray responses).
    `caller`: see `call_tool`."""
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "a message must be a JSON object")
    method = message.get("method")
    has_id = "id" in message
    request_id = message.get("id")
    if method is None and ("result" in message or "error" in message):
        return None  # a response to a request we never send; nothing to answer
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(request_id if _valid_id(request_id) else None, INVALID_REQUEST,
                      'not a JSON-RPC 2.0 request: "jsonrpc": "2.0" and a string "method" are required')
    if not has_id:
        return None  # a notification (initialized, cancelled, ...): never answered
    if not _valid_id(request_id):
        return _error(None, INVALID_REQUEST, "the id must be a string (of Unicode text) or an integer")
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "params must be an object")
    try:
        if method == "initialize":
            result = _initialize(params)
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [tool.listing() for tool in TOOLS]}
        elif method == "tools/call":
            result = call_tool(root, params, caller)
        else:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {printable(method)}")
    except RpcError as exc:
        return _error(request_id, exc.code, exc.message)
    except Exception as exc:  # noqa: BLE001 - a bug: logged in full, answered, and the server goes on
        traceback.print_exc(file=sys.stderr)
        return _error(request_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _initialize(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "external-brain", "version": __version__}, "instructions": INSTRUCTIONS}


def _valid_id(value: Any) -> bool:
    """A string of Unicode text (an id holding a lone surrogate cannot be written back: it is
    answered as an id that cannot be read, null) or an integer."""
    if isinstance(value, str):
        return lone_surrogate(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def utf8_json(value: Any) -> bytes:
    """`value` as JSON in UTF-8, for the MCP and HTTP doors. Input that is not Unicode text is
    refused before it gets here; should some still reach an answer (a bug's message), it goes out
    as its escape rather than take the server down (UnicodeEncodeError) or drop the connection."""
    text = strict_json.dumps(value, default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(strict_json.finite(value), ensure_ascii=True, allow_nan=False, default=str).encode("ascii")


def serve(vault: Vault, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer messages from `stdin` until it closes."""
    root = vault.root
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr   # stdout is the protocol's: a stray print must not corrupt it
    print(f"brain mcp: serving {root} on stdio", file=sys.stderr, flush=True)
    try:
        while True:
            line = stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):   # drop the rest of the oversized line
                    line = stdin.readline(MAX_LINE_BYTES)
                response = _error(None, PARSE_ERROR, f"message over {MAX_LINE_BYTES} bytes")
            elif not line.strip():
                continue
            else:
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError) as exc:   # bad JSON, bad UTF-8, absurd nesting
                    response = _error(None, PARSE_ERROR, f"parse error: {exc}")
                else:
                    response = handle(root, message)
            if response is not None:
                stdout.write(utf8_json(response) + b"\n")
                stdout.flush()
    except (KeyboardInterrupt, BrokenPipeError):
        return
    finally:
        sys.stdout = saved_stdout
