"""No input takes a long-lived door down (issue 18; docs/architecture.md, "The doors": "the MCP server and the HTTP server
answer every request (an error where it is bad) and go on; hooks always exit 0 with valid UTF-8
JSON or nothing"). Each door runs as a real process: `brain mcp` on pipes, `brain serve` on
127.0.0.1 spoken to with raw sockets, `brain hook EVENT` with bytes on stdin.

Found before: a lone surrogate (`"\\ud800"`, legal JSON escape, not Unicode text) anywhere in an
MCP request killed the server with UnicodeEncodeError; `get_memory` with one answered -32603;
`store_memory` on a read-only vault answered -32603 with an OSError; over HTTP a lone surrogate
dropped the connection, `Content-Length: ²` and a body shorter than its length were 500, and a
cursor of 5,000 nested arrays was a RecursionError 500; `hook prompt` exited 1 with a traceback
on a lone surrogate and copied bytes that were not UTF-8 to its stdout."""

from __future__ import annotations

import base64
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from helpers import ROOT, SCRIPT, namespaces_work, vault_hashes, write_card

KEY = "test-key-0123456789abcdef"
GOOD = ("---\ntitle: Alpha pooling\ntype: pattern\ndomain: dev\ntags: [pooling]\nconfidence: 0.5\n---\n"
        "# Alpha pooling\n\nUse pgbouncer for alpha pooling.\n")
LONE = "\ud800"


@pytest.fixture
def card(vault):
    write_card(vault, "Playbooks/Pattern_Alpha_pooling.md", GOOD)
    return vault


needs_namespaces = pytest.mark.skipif(not namespaces_work(), reason="needs `unshare -rm` (user namespaces)")


def door_command(vault: Path, *argv: str, read_only: bool = False) -> list[str]:
    """The door's command line; `read_only` runs it in a private mount namespace where the vault
    is a real read-only bind mount (EROFS for root too)."""
    command = [sys.executable, str(SCRIPT), *argv]
    if not read_only:
        return command
    mounts = f"mount --bind {vault} {vault} && mount -o remount,bind,ro {vault}"
    return ["unshare", "-rm", "sh", "-c", f'{mounts} && exec "$0" "$@"', *command]


# ---------------------------------------------------------------------------- MCP

def mcp_exchange(vault: Path, lines: list[bytes], read_only: bool = False) -> tuple[list[dict], str, int]:
    """Send every line, close stdin, and return the answers (each a whole UTF-8 JSON line)."""
    done = subprocess.run(door_command(vault, "mcp", read_only=read_only), input=b"".join(l + b"\n" for l in lines),
                          capture_output=True, timeout=120, env={**os.environ, "BRAIN_VAULT": str(vault)})
    answers = []
    for line in done.stdout.splitlines():
        answers.append(json.loads(line.decode("utf-8")))   # strict UTF-8: a lone surrogate never goes out
    return answers, done.stderr.decode("utf-8", "replace"), done.returncode


def request(number: int, method: str, params: Any = None, raw_id: str | None = None) -> bytes:
    message = {"jsonrpc": "2.0", "id": number, "method": method}
    if params is not None:
        message["params"] = params
    text = json.dumps(message)   # ensure_ascii: a lone surrogate travels as the escape \ud800
    if raw_id is not None:
        text = text.replace(f'"id": {number}', f'"id": {raw_id}', 1)
    return text.encode("ascii")


def call(number: int, tool: str, arguments: Any) -> bytes:
    return request(number, "tools/call", {"name": tool, "arguments": arguments})


def sample(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if "enum" in schema:
        return schema["enum"][0]
    return {"string": "fact", "integer": schema.get("minimum", 1), "number": 1, "boolean": True,
            "array": ["x"], "object": {}}.get(kind, "x")


def test_a_lone_surrogate_anywhere_in_an_mcp_request_gets_an_answer_and_the_server_goes_on(card):
    lines = [
        request(1, LONE),                                                   # the method
        request(2, "ping", raw_id='"\\ud800"'),                             # the id
        request(3, "tools/call", {"name": LONE}),                           # the tool's name
        call(4, "get_memory", {"memory_id": LONE}),                         # a tool argument
        call(5, "get_memory", {"memory_id": "Playbooks/" + LONE + ".md"}),
        call(6, "recall_memories", {"query": "alpha \udc80 pooling"}),
        call(7, "store_memory", {"content": "ok", "context_name": "p", "tags": ["a", "b\udfff"]}),
        call(8, "recall_memories", {"query": "alpha", LONE: 1}),           # an argument's name
        call(9, "brief", {"query": "pooling", "agent": "\udbff"}),
        request(10, "initialize", {"protocolVersion": LONE, "clientInfo": {"name": LONE, "version": "1"},
                                   "capabilities": {}}),
        json.dumps({"jsonrpc": LONE, "id": 11, "method": "ping"}).encode(),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/" + LONE}).encode(),   # never answered
        request(12, "ping"),
    ]
    answers, stderr, code = mcp_exchange(card, lines)
    assert code == 0 and "Traceback" not in stderr, stderr
    by_id = {a["id"]: a for a in answers}
    assert len(answers) == 12 and set(by_id) == {None, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, answers
    assert by_id[1]["error"]["code"] == -32601 and "\\ud800" in by_id[1]["error"]["message"]
    assert by_id[None]["error"]["code"] == -32600        # the id itself is not text: JSON-RPC answers null
    assert by_id[3]["error"]["code"] == -32602 and "unknown tool" in by_id[3]["error"]["message"]
    for number, argument in ((4, "memory_id"), (5, "memory_id"), (6, "query"), (7, "tags"), (8, "\\ud800"),
                             (9, "agent")):
        result = by_id[number]["result"]
        assert result["isError"] is True, result
        text = result["content"][0]["text"]
        assert "lone surrogate" in text or "unknown argument" in text, text
        assert argument in text and "internal error" not in text, text
    assert by_id[10]["result"]["protocolVersion"] == "2025-11-25"
    assert by_id[11]["error"]["code"] == -32600
    assert by_id[12]["result"] == {}
    assert list((card / "Playbooks").glob("*.md")) == [card / "Playbooks" / "Pattern_Alpha_pooling.md"]


def test_every_mcp_tool_refuses_a_lone_surrogate_in_every_text_argument(card):
    from external_brain.doors.mcp import TOOLS

    before = vault_hashes(card)
    lines, expected = [], {}
    number = 100
    for tool in TOOLS:
        properties = tool.input_schema["properties"]
        base = {key: sample(properties[key]) for key in tool.input_schema.get("required", ())}
        for key, schema in properties.items():
            kinds = schema.get("type")
            kinds = kinds if isinstance(kinds, list) else [kinds]
            if "string" in kinds:
                value: Any = "a" + LONE
            elif "array" in kinds:
                value = ["a" + LONE]
            else:
                continue
            number += 1
            lines.append(call(number, tool.name, {**base, key: value}))
            expected[number] = (tool.name, key)
    lines.append(request(99, "ping"))
    answers, stderr, code = mcp_exchange(card, lines)
    assert code == 0 and "Traceback" not in stderr, stderr
    assert len(answers) == len(lines)
    for answer in answers[:-1]:
        tool, key = expected[answer["id"]]
        result = answer["result"]
        assert result["isError"] is True, (tool, key, answer)
        assert result["content"][0]["text"].startswith(f"{tool}: argument {key!r} holds a lone surrogate"), result
    assert answers[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}
    assert vault_hashes(card) == before


@needs_namespaces
def test_store_memory_on_a_read_only_vault_is_the_clis_io_error_not_32603(card):
    lines = [call(1, "store_memory", {"content": "Use a pool", "context_name": "p", "tags": ["pool"]}),
             call(2, "record_feedback", {"memory_id": "Pattern_Alpha_pooling", "outcome": "used"}),
             call(3, "remember", {"key": "task", "body": "deploy"}),
             call(4, "get_memory", {"memory_id": "Pattern_Alpha_pooling"}),
             request(5, "ping")]
    before = vault_hashes(card)
    answers, stderr, code = mcp_exchange(card, lines, read_only=True)
    assert code == 0 and "Traceback" not in stderr, stderr
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5]
    for answer, tool in zip(answers[:3], ("store_memory", "record_feedback", "remember")):
        assert "error" not in answer, answer   # not -32603: the vault's trouble, said like the CLI says it
        text = answer["result"]["content"][0]["text"]
        assert answer["result"]["isError"] is True
        assert text.startswith(f"{tool}: IO_ERROR: {card}/") and "read-only file system; run the command" in text
        assert "Errno" not in text and "Traceback" not in text
    assert answers[3]["result"]["isError"] is False   # reads still answer
    assert vault_hashes(card) == before


# ---------------------------------------------------------------------------- HTTP

class Served:
    def __init__(self, vault: Path, read_only: bool = False) -> None:
        self.log = vault.parent / f"serve-{time.monotonic_ns()}.err"
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_API_KEY": KEY}
        with open(self.log, "wb") as err:
            self.process = subprocess.Popen(door_command(vault, "serve", "--port", "0", read_only=read_only),
                                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log.read_text())
            if found:
                self.port = int(found.group(1))
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise AssertionError(f"the server did not start: {self.log.read_text()}")

    def raw(self, data: bytes) -> tuple[int, dict[str, str], Any]:
        """Send `data` on a new connection and read the one answer until the server closes."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as sock:
            sock.sendall(data)
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        assert reply, "the server dropped the connection without an answer"
        head, _, body = reply.partition(b"\r\n\r\n")
        status = int(head.split(b" ", 2)[1])
        headers = dict(line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])
        return status, headers, json.loads(body.decode("utf-8"))

    def post(self, path: str, body: bytes, method: str = "POST", extra: bytes = b"") -> tuple[int, dict, Any]:
        return self.raw(f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\nConnection: close\r\n"
                        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n".encode() + extra
                        + b"\r\n" + body)

    def get(self, path: str) -> tuple[int, dict, Any]:
        return self.raw(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\nConnection: close\r\n\r\n".encode())

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text()


def error_of(answer: tuple[int, dict, Any], status: int, code: str) -> str:
    got, _, data = answer
    assert got == status and set(data) == {"error"} and data["error"]["code"] == code, answer
    assert "Traceback" not in data["error"]["message"] and "internal error" not in data["error"]["message"]
    return data["error"]["message"]


def test_hostile_http_requests_get_their_documented_4xx_and_the_server_goes_on(card):
    (card / ".brain" / "config.toml").write_text("[http]\nrequest_timeout = 1\n")
    served = Served(card)
    try:
        assert served.get("/v1/health")[0] == 200
        before = vault_hashes(card)
        message = error_of(served.post("/v1/context", json.dumps({"query": "alpha " + LONE}).encode()),
                           400, "INVALID_ARGUMENT")
        assert message.startswith("field 'query' holds a lone surrogate"), message
        # `²` is a digit to str.isdigit, not to int(); sent as the one Latin-1 byte a header holds.
        head = (f"POST /v1/context HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\nContent-Type: application/json\r\n"
                "Content-Length: \u00b2\r\n\r\n").encode("latin-1")
        assert "Content-Length" in error_of(served.raw(head), 400, "INVALID_ARGUMENT")
        for length in ("\u0663", "1\u00b9", "-1", "+5", "0x10", " 1 2"):
            head = (f"POST /v1/context HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {length}\r\n\r\n").encode("utf-8")
            error_of(served.raw(head), 400, "INVALID_ARGUMENT")
        # A body shorter than its Content-Length: 408 once request_timeout (1 s) has passed.
        short = (f"POST /v1/context HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\nContent-Type: application/json\r\n"
                 "Content-Length: 100\r\n\r\n{\"query\":").encode()
        error_of(served.raw(short), 408, "REQUEST_TIMEOUT")
        # A cursor that decodes to 5,000 nested arrays, and one of 900 (decodable, not a cursor).
        for depth in (5000, 900):
            cursor = base64.urlsafe_b64encode(("[" * depth + "]" * depth).encode()).decode().rstrip("=")
            for query in (f"cursor={cursor}", f"q=alpha&cursor={cursor}"):
                assert "cursor" in error_of(served.get(f"/v1/memories?{query}"), 400, "INVALID_ARGUMENT")
        assert served.get("/v1/health")[0] == 200
        assert vault_hashes(card) == before
    finally:
        log = served.stop()
    assert "Traceback" not in log, log


def test_every_http_body_field_refuses_a_lone_surrogate(card):
    from external_brain.doors.http_api import ROUTES

    served = Served(card)
    before = vault_hashes(card)
    try:
        for route in ROUTES:
            if route.body is None:
                continue
            path = route.path.replace("{id}", "Pattern_Alpha_pooling")
            properties = route.body["properties"]
            base = {key: sample(properties[key]) for key in route.body.get("required", ())}
            for key, schema in properties.items():
                kind = schema.get("type")
                value = {"string": "a" + LONE, "array": ["a" + LONE], "object": {"project": LONE}}.get(kind)
                if value is None:
                    continue
                body = json.dumps({**base, key: value}).encode()
                message = error_of(served.post(path, body, route.method), 400, "INVALID_ARGUMENT")
                assert message.startswith(f"field {key!r} holds a lone surrogate"), (route.path, key, message)
        # A key that is not text either.
        message = error_of(served.post("/v1/context", json.dumps({"query": "x", LONE: 1}).encode()),
                           400, "INVALID_ARGUMENT")
        assert "\\ud800" in message
        assert served.get("/v1/health")[0] == 200
    finally:
        log = served.stop()
    assert "Traceback" not in log, log
    assert vault_hashes(card) == before


@needs_namespaces
def test_a_write_to_a_read_only_vault_over_http_is_io_error_not_internal(card):
    served = Served(card, read_only=True)
    try:
        body = json.dumps({"content": "Use a pool", "memory_type": "fact"}).encode()
        message = error_of(served.post("/v1/memories", body), 500, "IO_ERROR")
        # Named inside the vault: the server's own path is its owner's (decision 0033, h20-doors3).
        assert message.startswith(".brain/") and "read-only file system; run the command" in message, message
        assert str(card) not in message
        assert served.get("/v1/memories/Pattern_Alpha_pooling")[0] == 200
    finally:
        log = served.stop()
    assert "Traceback" not in log, log


# ---------------------------------------------------------------------------- hooks

HOOK_EVENTS = ("session-start", "prompt", "stop", "session-end", "pre-compact")


def run_hook(vault: Path, event: str, stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "hook", event], input=stdin, capture_output=True,
                          timeout=60, env={**os.environ, "BRAIN_VAULT": str(vault)})


def hook_output(done: subprocess.CompletedProcess) -> dict | None:
    """A hook's promise: exit 0, and stdout empty or one JSON object in valid UTF-8."""
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr, done.stderr
    if not done.stdout:
        return None
    value = json.loads(done.stdout.decode("utf-8"))   # strict: bytes that are not UTF-8 fail here
    assert isinstance(value, dict)
    return value


@pytest.mark.parametrize("event", HOOK_EVENTS)
def test_every_hook_exits_0_with_utf8_json_or_nothing_whatever_its_stdin(card, tmp_path, event):
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "alpha pooling"}})
                          + "\n")
    fields = {"session_id": "s1", "transcript_path": str(transcript), "cwd": str(tmp_path),
              "hook_event_name": "x", "prompt": "alpha pooling pgbouncer", "source": "startup",
              "trigger": "manual", "reason": "exit", "stop_hook_active": False}
    inputs = [json.dumps({**fields, "prompt": "alpha pooling " + LONE + " pgbouncer"}).encode()]
    for key in fields:   # a lone surrogate in each field in turn
        if isinstance(fields[key], str):
            inputs.append(json.dumps({**fields, key: fields[key] + "\udc80"}).encode())
    inputs += [json.dumps(fields).encode().replace(b"pgbouncer", b"pgbouncer \xff\xfe"),   # not UTF-8 in a string
               b"\xff" + json.dumps(fields).encode(),                                    # not UTF-8 outside
               b"[" * 100_000 + b"]" * 100_000,                                          # absurd nesting
               json.dumps({**fields, "x": json.loads("[" * 900 + "]" * 900)}).encode()]
    for stdin in inputs:
        hook_output(run_hook(card, event, stdin))


def test_the_prompt_hook_still_answers_a_prompt_with_a_broken_character(card):
    """A prompt cut inside a surrogate pair (a client that cut an emoji) or holding bytes that
    are not UTF-8 is still a prompt: the hook injects the relevant card, in valid UTF-8."""
    for stdin in (json.dumps({"prompt": "alpha pooling pgbouncer \ud83d", "session_id": "s"}).encode(),
                  b'{"prompt": "alpha pooling pgbouncer \xf0\x9f", "session_id": "s"}'):
        output = hook_output(run_hook(card, "prompt", stdin))
        assert output is not None, stdin
        assert "Alpha pooling" in output["hookSpecificOutput"]["additionalContext"]


def test_a_url_over_the_limit_is_414_with_a_message_that_says_what_to_do_and_is_documented(card):
    served = Served(card)
    try:
        head = f"GET /v1/memories?q={'a' * 80_000} HTTP/1.1\r\nHost: 127.0.0.1\r\nX-API-KEY: {KEY}\r\n\r\n"
        message = error_of(served.raw(head.encode()), 414, "URI_TOO_LONG")
        assert message == "the URL is longer than 65,536 bytes; shorten it (a query is at most 2,000 characters)"
        assert served.get("/v1/health")[0] == 200
    finally:
        served.stop()
    # Every code the server's own HTTP parsing answers with is in docs/http-api.md's table of codes.
    from external_brain.doors.http_api import _HTTP_CODES

    doc = (ROOT / "docs" / "http-api.md").read_text(encoding="utf-8")
    table = doc[doc.index("| status | codes |"):].split("\n\n", 1)[0]
    assert [code for code in _HTTP_CODES.values() if code not in table] == []
