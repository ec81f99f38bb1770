"""`brain mcp` driven as a real subprocess with raw JSON-RPC lines (standard library only)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers import SCRIPT, events, ok_data, run_cli, write_card

TIMEOUT = 20  # seconds for one answer; a healthy server answers in milliseconds


class Server:
    """`python3 runtime/playbook_api.py mcp` with a reader thread, so every read is bounded."""

    def __init__(self, vault: Path) -> None:
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
        self.process = subprocess.Popen([sys.executable, str(SCRIPT), "mcp"], env=env, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 100

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(b"")

    def send_raw(self, line: bytes) -> None:
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_raw(json.dumps(message).encode())

    def receive(self) -> dict[str, Any]:
        line = self.lines.get(timeout=TIMEOUT)
        assert line, f"the server closed stdout; stderr: {self.process.stderr.read().decode()}"
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        return json.loads(line)

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        response = self.receive()
        assert response["id"] == self.next_id and response["jsonrpc"] == "2.0", response
        return response

    def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        response = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                               "clientInfo": {"name": "pytest", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return response

    def call(self, tool: str, arguments: Any = None) -> dict[str, Any]:
        params = {"name": tool} if arguments is None else {"name": tool, "arguments": arguments}
        return self.request("tools/call", params)["result"]

    def close(self) -> tuple[int, str]:
        self.process.stdin.close()
        code = self.process.wait(timeout=TIMEOUT)
        stderr = self.process.stderr.read().decode()
        self.process.stdout.close()
        self.process.stderr.close()
        return code, stderr


@pytest.fixture
def server(vault):
    running = Server(vault)
    running.initialize()
    yield running
    if running.process.poll() is None:
        code, _ = running.close()
        assert code == 0


def data_of(result: dict[str, Any], tool: str) -> dict[str, Any]:
    """A successful tool result: structuredContent, the same JSON as text, valid against the
    tool's outputSchema (with jsonschema when it is importable)."""
    assert result["isError"] is False, result
    data = result["structuredContent"]
    assert result["content"] == [{"type": "text", "text": json.dumps(data, ensure_ascii=False)}]
    from external_brain.mcp import TOOLS_BY_NAME

    schema = TOOLS_BY_NAME[tool].output_schema
    assert set(schema.get("required", ())) <= set(data), (tool, data)
    try:
        import jsonschema
    except ImportError:
        return data
    jsonschema.validate(data, schema)
    return data


def error_text(result: dict[str, Any]) -> str:
    assert result["isError"] is True and "structuredContent" not in result, result
    (block,) = result["content"]
    assert block["type"] == "text"
    return block["text"]


# ---------------------------------------------------------------------------- the lifecycle

@pytest.mark.parametrize("asked, answered", [("2025-11-25", "2025-11-25"), ("2025-06-18", "2025-06-18"),
                                             ("2024-11-05", "2024-11-05"), ("1999-01-01", "2025-11-25")])
def test_the_handshake_negotiates_the_protocol_version(vault, asked, answered):
    running = Server(vault)
    result = running.initialize(asked)["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "external-brain"
    # The initialized notification got no answer: the next line answers the ping.
    assert running.request("ping")["result"] == {}
    code, stderr = running.close()
    assert code == 0 and "brain mcp: serving" in stderr


def test_unknown_methods_get_32601_at_once(server):
    for method in ("server/discover", "resources/list", "nonsense"):
        response = server.request(method)
        assert response["error"]["code"] == -32601 and method in response["error"]["message"]
    # An unknown notification is not answered either.
    server.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    assert server.request("ping")["result"] == {}


def test_a_malformed_line_gets_32700_and_the_server_goes_on(server):
    server.send_raw(b'{"jsonrpc": "2.0", "id": 7, "method": ')
    response = server.receive()
    assert (response["id"], response["error"]["code"]) == (None, -32700)
    assert response["error"]["message"].startswith("parse error: Expecting value")
    server.send_raw(b"\xff\xfe not utf-8")
    assert server.receive()["error"]["code"] == -32700
    for bad in (b"[1, 2]", b'"text"', b'{"id": 3, "method": "ping"}', b'{"jsonrpc": "2.0", "id": true, "method": "ping"}'):
        server.send_raw(bad)
        assert server.receive()["error"]["code"] == -32600, bad
    assert server.request("tools/list")["result"]["tools"]


def test_tools_list_names_every_tool_with_both_schemas(server):
    tools = server.request("tools/list")["result"]["tools"]
    names = [t["name"] for t in tools]
    assert names == ["store_memory", "recall_memories", "list_memories", "get_memory", "record_feedback", "brief",
                     "remember", "recall", "forget", "context"]
    for tool in tools:
        assert tool["description"]
        assert tool["inputSchema"]["type"] == "object" and tool["outputSchema"]["type"] == "object"


def test_an_unknown_tool_is_an_invalid_params_error(server):
    response = server.request("tools/call", {"name": "delete_everything", "arguments": {}})
    assert response["error"] == {"code": -32602, "message": "unknown tool 'delete_everything'; tools/list names them"}


# ---------------------------------------------------------------------------- every tool

def test_store_recall_get_record_list_with_good_arguments(server, vault):
    stored = data_of(server.call("store_memory", {
        "content": "Calls to an external API time out after 30 s.\n\n## Fix\nAllow egress 443 in the SG.",
        "context_name": "api", "tags": ["ecs", "timeout"], "memory_type": "success", "domain": "infra"}), "store_memory")
    assert stored["success"] is True and stored["memory_id"] == stored["id"]
    assert stored["path"] == "Playbooks/Troubleshooting_Calls_to_an_external_API_time_out_after_30_s.md"
    meta = ok_data("get", stored["memory_id"])["frontmatter"]
    assert (meta["type"], meta["project"], meta["memory_type"], meta["tags"]) == ("troubleshooting", "api",
                                                                                  "success", ["ecs", "timeout"])

    recalled = data_of(server.call("recall_memories", {"query": "ecs timeout", "limit": 3}), "recall_memories")
    assert [m["id"] for m in recalled["memories"]] == [stored["memory_id"]] and recalled["total_found"] == 1
    filtered = data_of(server.call("recall_memories", {"query": "ecs timeout", "context_filter": "other"}),
                       "recall_memories")
    assert filtered["memories"] == []

    got = data_of(server.call("get_memory", {"memory_id": stored["memory_id"]}), "get_memory")
    assert got["action"] == "apply and verify" and "Allow egress 443" in got["body"]
    assert events(vault)[-1]["event"] == "referenced"

    recorded = data_of(server.call("record_feedback", {"memory_id": stored["path"], "outcome": "used",
                                                       "note": "fixed it"}), "record_feedback")
    assert (recorded["before"], recorded["after"]) == (0.5, 0.55)

    listed = data_of(server.call("list_memories", {"limit": 1, "tag_filter": ["ecs"]}), "list_memories")
    assert listed["total_count"] == 1 and listed["has_more"] is False
    assert listed["memories"][0]["confidence"] == 0.55
    assert data_of(server.call("list_memories", {"offset": 1}), "list_memories")["memories"] == []


def test_brief_and_the_working_memory_tools_with_good_arguments(server):
    entry = data_of(server.call("remember", {"key": "current-task", "body": "ECS deploy", "ttl_days": 1}), "remember")
    assert entry["key"] == "current-task"
    assert data_of(server.call("recall", {"key": "current-task"}), "recall")["body"] == "ECS deploy"
    assert [e["key"] for e in data_of(server.call("context"), "context")["entries"]] == ["current-task"]
    shown = data_of(server.call("brief", {"budget": 200}), "brief")
    assert shown["markdown"] == "## Working memory\n- current-task (updated just now): ECS deploy\n"
    assert data_of(server.call("brief", {"query": "kafka lag"}), "brief")["cards"] == []
    assert data_of(server.call("forget", {"key": "current-task"}), "forget") == {"key": "current-task",
                                                                                "forgotten": True}
    assert data_of(server.call("context", {}), "context")["entries"] == []


BAD_ARGUMENTS = [
    ("store_memory", {"content": "x", "tags": ["a"]}, "store_memory: missing required argument: context_name"),
    ("store_memory", {"content": "x", "context_name": "p", "tags": "a,b"},
     "store_memory: argument 'tags' must be an array, got \"a,b\""),
    ("store_memory", {"content": "x", "context_name": "p", "tags": [1]},
     "store_memory: argument 'tags' item 0 must be a string, got 1"),
    ("store_memory", {"content": "x", "context_name": "p", "tags": [], "memory_type": "poem"},
     "store_memory: INVALID_ARGUMENT: unknown type 'poem'"),
    ("store_memory", {"content": "x", "context_name": "p", "tags": [], "importance": 9},
     "store_memory: argument 'importance' must be at most 5, got 9"),
    ("recall_memories", {"query": ""}, "recall_memories: argument 'query' must not be empty"),
    ("recall_memories", {"query": "x", "limit": 50}, "recall_memories: argument 'limit' must be at most 20, got 50"),
    ("recall_memories", {"query": "x", "limit": True}, "recall_memories: argument 'limit' must be an integer, got true"),
    ("recall_memories", {"query": "...."}, "recall_memories: INVALID_ARGUMENT: the query '....' has no words"),
    ("list_memories", {"sort": "size"}, "list_memories: argument 'sort' must be one of title, confidence, updated"),
    ("list_memories", {"offset": -1}, "list_memories: argument 'offset' must be at least 0, got -1"),
    ("get_memory", {}, "get_memory: missing required argument: memory_id"),
    ("get_memory", {"memory_id": "no-such-card"}, "get_memory: NOT_FOUND: "),
    ("get_memory", {"memory_id": "../etc/passwd"}, "get_memory: UNSAFE_PATH: "),
    ("record_feedback", {"memory_id": "x", "outcome": "maybe"},
     "record_feedback: argument 'outcome' must be one of used, rejected, got \"maybe\""),
    ("brief", {"budget": 0}, "brief: argument 'budget' must be at least 1, got 0"),
    ("brief", {"query": "x", "verbose": True}, "brief: unknown argument 'verbose'; known: query, budget"),
    ("remember", {"key": "a/b", "body": "x"}, "remember: INVALID_ARGUMENT: bad working-memory key 'a/b'"),
    ("remember", {"key": "k", "body": "x", "ttl_days": 0}, "remember: argument 'ttl_days' must be more than 0"),
    ("recall", {"key": "never-set"}, "recall: NOT_FOUND: no working memory 'never-set'"),
    ("forget", {"key": 3}, "forget: argument 'key' must be a string, got 3"),
    ("context", {"all": True}, "context: unknown argument 'all'; known: none"),
    ("context", [1], "context: arguments must be an object, got [1]"),
]


@pytest.mark.parametrize("tool, arguments, message", BAD_ARGUMENTS, ids=[f"{t}-{i}" for i, (t, _, _) in
                                                                           enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_are_error_results_naming_the_problem_and_change_nothing(server, vault, tool, arguments,
                                                                               message):
    from helpers import vault_hashes

    before = vault_hashes(vault)
    assert error_text(server.call(tool, arguments)).startswith(message)
    assert vault_hashes(vault) == before
    assert server.request("ping")["result"] == {}   # the server is still there


def test_a_card_changed_on_disk_between_two_calls_is_seen_by_the_second(server, vault):
    stored = data_of(server.call("store_memory", {"content": "Use connection pooling for Postgres.",
                                                  "context_name": "api", "tags": ["postgres"]}), "store_memory")
    assert "pgbouncer" not in data_of(server.call("get_memory", {"memory_id": stored["id"]}), "get_memory")["body"]
    assert data_of(server.call("recall_memories", {"query": "pgbouncer"}), "recall_memories")["memories"] == []
    path = vault / stored["path"]
    path.write_text(path.read_text(encoding="utf-8") + "\nRun pgbouncer in transaction mode.\n", encoding="utf-8")
    assert "pgbouncer" in data_of(server.call("get_memory", {"memory_id": stored["id"]}), "get_memory")["body"]
    hits = data_of(server.call("recall_memories", {"query": "pgbouncer"}), "recall_memories")["memories"]
    assert [h["id"] for h in hits] == [stored["id"]]
    # A card another process creates is seen too.
    run_cli("create", "--type", "fact", "--domain", "data", "--title", "Kafka retention is 7 days",
            "--body", "Topic retention is seven days.")
    assert data_of(server.call("list_memories"), "list_memories")["total_count"] == 2


def test_a_broken_card_does_not_stop_the_other_calls(server, vault):
    write_card(vault, "Playbooks/Broken.md", "---\ntitle: [unclosed\n---\nbody\n")
    assert error_text(server.call("get_memory", {"memory_id": "Broken"})).startswith("get_memory: BAD_FRONTMATTER: ")
    data_of(server.call("store_memory", {"content": "Fine card", "context_name": "p", "tags": []}), "store_memory")
    assert data_of(server.call("list_memories"), "list_memories")["total_count"] == 1
