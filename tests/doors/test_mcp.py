"""`brain mcp` driven as a real subprocess with raw JSON-RPC lines (standard library only)."""

from __future__ import annotations

import json
import os
import re
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from helpers import CHILD_PYTHON, SCRIPT, card_meta, events, ok_data, run_cli, write_card

TIMEOUT = 20  # seconds for one answer; a healthy server answers in milliseconds


class Server:
    """`python3 runtime/playbook_api.py mcp` with a reader thread, so every read is bounded."""

    def __init__(self, vault: Path) -> None:
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
        self.process = subprocess.Popen([*CHILD_PYTHON, str(SCRIPT), "mcp"], env=env, stdin=subprocess.PIPE,
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
    from external_brain.doors.mcp import TOOLS_BY_NAME

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
    assert names == ["store_memory", "recall_memories", "list_memories", "get_memory", "update_memory",
                     "delete_memory", "get_stats", "link_memories", "unlink_memories", "explore_related",
                     "get_memory_links", "analyze_knowledge", "merge_memories", "get_persona_context",
                     "update_persona_context", "record_feedback", "brief", "remember", "recall", "forget", "context"]
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
    ("context", {"all": True}, "context: unknown argument 'all'; known: agent"),
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


# The editing, link and insight tools: one server for all (a server per case costs ~0.5 s each).
EDIT_BAD_ARGUMENTS = [
    ("update_memory", {"content": "x"}, "update_memory: missing required argument: memory_id"),
    ("update_memory", {"memory_id": "no-such-card", "content": "x"}, "update_memory: NOT_FOUND: "),
    ("update_memory", {"memory_id": "x", "tags": "a"}, "update_memory: argument 'tags' must be an array"),
    ("update_memory", {"memory_id": "x", "importance": 0}, "update_memory: argument 'importance' must be at least 1"),
    ("delete_memory", {"memory_id": "no-such-card"}, "delete_memory: NOT_FOUND: "),
    ("delete_memory", {"memory_id": "x", "dry_run": "yes"}, "delete_memory: argument 'dry_run' must be true or false"),
    ("get_stats", {"verbose": True}, "get_stats: unknown argument 'verbose'; known: agent"),
    ("link_memories", {"source_id": "a", "target_id": "b"}, "link_memories: missing required argument: relation_type"),
    ("link_memories", {"source_id": "a", "target_id": "b", "relation_type": "related", "weight": 1.5},
     "link_memories: argument 'weight' must be at most 1, got 1.5"),
    ("link_memories", {"source_id": "a", "target_id": "b", "relation_type": "related", "weight": -0.1},
     "link_memories: argument 'weight' must be at least 0, got -0.1"),
    ("link_memories", {"source_id": "no-such-card", "target_id": "b", "relation_type": "related"},
     "link_memories: NOT_FOUND: "),
    ("unlink_memories", {"source_id": "no-such-card", "target_id": "b"}, "unlink_memories: NOT_FOUND: "),
    ("explore_related", {"memory_id": "x", "depth": 6}, "explore_related: argument 'depth' must be at most 5, got 6"),
    ("explore_related", {"memory_id": "no-such-card"}, "explore_related: NOT_FOUND: "),
    ("get_memory_links", {"memory_id": "x", "direction": "up"}, "get_memory_links: argument 'direction' must be one of"),
    ("get_memory_links", {"memory_id": "no-such-card"}, "get_memory_links: NOT_FOUND: "),
    ("analyze_knowledge", {"agent": 7}, "analyze_knowledge: argument 'agent' must be a string, got 7"),
]


def test_bad_arguments_to_the_editing_and_link_tools_are_error_results_and_change_nothing(server, vault):
    from helpers import vault_hashes

    before = vault_hashes(vault)
    for tool, arguments, message in EDIT_BAD_ARGUMENTS:
        text = error_text(server.call(tool, arguments))
        assert text.startswith(message), (tool, arguments, text)
    assert vault_hashes(vault) == before
    assert server.request("ping")["result"] == {}


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
    got = data_of(server.call("get_memory", {"memory_id": "Broken"}), "get_memory")   # its text, as the CLI shows it
    assert got["raw"] == "---\ntitle: [unclosed\n---\nbody\n" and "bad frontmatter" in got["warning"]
    data_of(server.call("store_memory", {"content": "Fine card", "context_name": "p", "tags": []}), "store_memory")
    assert data_of(server.call("list_memories"), "list_memories")["total_count"] == 1


# ---------------------------------------------------------------------------- editing, links, insights

def store(server, content: str, **extra: Any) -> dict[str, Any]:
    return data_of(server.call("store_memory", {"content": content, "context_name": "api", "tags": ["ecs"],
                                                **extra}), "store_memory")


def test_update_and_delete_memory_with_good_arguments_and_a_conflict(server, vault):
    stored = store(server, "ECS tasks stop with exit code 137.\n\nRaise the memory limit.", memory_type="failure")
    got = data_of(server.call("get_memory", {"memory_id": stored["id"]}), "get_memory")
    updated = data_of(server.call("update_memory", {
        "memory_id": stored["id"], "content": "ECS tasks stop with exit code 137 (OOM).\n\nSet memory to 1 GiB.",
        "tags": ["ecs", "oom"], "memory_type": "success", "context_name": "shop", "expect_hash": got["hash"]}),
        "update_memory")
    assert updated["success"] is True and updated["memory_id"] == stored["id"]
    assert updated["changes"] == updated["changed"] == ["memory_type", "project", "tags", "body"]
    meta = card_meta(vault / updated["path"])
    assert (meta["memory_type"], meta["type"], meta["project"], meta["tags"]) == ("success", "troubleshooting",
                                                                                  "shop", ["ecs", "oom"])
    assert events(vault)[-1]["event"] == "updated" and updated["hash"] == ok_data("get", stored["id"])["hash"]
    # A plain card type drops the memory_type label; the same values again change nothing.
    data_of(server.call("update_memory", {"memory_id": stored["id"], "memory_type": "decision"}), "update_memory")
    assert "memory_type" not in card_meta(vault / updated["path"])
    again = data_of(server.call("update_memory", {"memory_id": stored["id"], "memory_type": "decision"}),
                    "update_memory")
    assert (again["changed"], again["event"]) == ([], None)

    # The hash read before the edits is stale now: CONFLICT, and nothing is written.
    from helpers import vault_hashes

    before = vault_hashes(vault)
    for tool, arguments in (("update_memory", {"content": "lost update"}), ("delete_memory", {})):
        text = error_text(server.call(tool, {"memory_id": stored["id"], "expect_hash": got["hash"], **arguments}))
        assert text.startswith(f"{tool}: CONFLICT: {updated['path']} changed since hash {got['hash']}"), text
    assert vault_hashes(vault) == before

    dry = data_of(server.call("delete_memory", {"memory_id": stored["id"], "dry_run": True}), "delete_memory")
    assert (dry["dry_run"], dry["deleted_id"], dry["event"]) == (True, None, None) and (vault / dry["path"]).exists()
    current = data_of(server.call("get_memory", {"memory_id": stored["id"]}), "get_memory")["hash"]
    deleted = data_of(server.call("delete_memory", {"memory_id": stored["id"], "expect_hash": current}),
                      "delete_memory")
    assert (deleted["success"], deleted["deleted_id"], deleted["cascaded"]) == (True, stored["id"], [])
    assert not (vault / deleted["path"]).exists() and events(vault)[-1]["event"] == "deleted"
    ok_data("undo", deleted["event"])   # the MCP delete is undoable like the CLI's
    assert (vault / deleted["path"]).exists()


def test_link_unlink_links_explore_with_good_and_bad_arguments(server, vault):
    first = store(server, "Use pgbouncer in transaction mode.", tags=["postgres", "pool"])
    second = store(server, "Set max_client_conn to 1000 in pgbouncer.", tags=["postgres"])
    linked = data_of(server.call("link_memories", {"source_id": second["id"], "target_id": first["id"],
                                                   "relation_type": "extends", "reason": "a setting of it",
                                                   "weight": 1}), "link_memories")
    assert (linked["success"], linked["relation_type"], linked["weight"], linked["version"]) == (True, "extends",
                                                                                                 1.0, 1)
    assert (linked["source_id"], linked["target_id"], linked["changed"]) == (second["id"], first["id"], True)
    links = data_of(server.call("get_memory_links", {"memory_id": first["id"]}), "get_memory_links")
    assert links["memory_id"] == first["id"] and links["outgoing"] == []
    assert [(i["id"], i["rel"], i["reason"]) for i in links["incoming"]] == [(second["id"], "extends",
                                                                              "a setting of it")]
    assert data_of(server.call("get_memory_links", {"memory_id": first["id"], "direction": "out"}),
                   "get_memory_links")["incoming"] == []
    explored = data_of(server.call("explore_related", {"memory_id": first["id"]}), "explore_related")
    assert [(i["id"], i["direction"]) for i in explored["linked"]] == [(second["id"], "in")]
    assert [i["shared_tags"] for i in explored["by_tag"]] == [["postgres"]]
    assert [i["id"] for i in explored["by_project"]] == [second["id"]]
    narrow = data_of(server.call("explore_related", {"memory_id": first["id"], "include_tag_siblings": False,
                                                     "include_context_siblings": False}), "explore_related")
    assert (narrow["by_tag"], narrow["by_project"], len(narrow["linked"])) == ([], [], 1)

    for arguments, message in (
            ({"relation_type": "likes"}, "link_memories: INVALID_ARGUMENT: unknown relation 'likes'"),
            ({"target_id": second["id"], "relation_type": "related"}, "link_memories: INVALID_ARGUMENT: "),
            ({"target_id": "no-such-card", "relation_type": "related"}, "link_memories: NOT_FOUND: ")):
        text = error_text(server.call("link_memories", {"source_id": second["id"], "target_id": first["id"],
                                                        **arguments}))
        assert text.startswith(message), text
    assert "cannot link to itself" in error_text(server.call("link_memories", {
        "source_id": second["id"], "target_id": second["id"], "relation_type": "related"}))
    assert error_text(server.call("unlink_memories", {"source_id": first["id"], "target_id": second["id"]})
                      ).startswith(f"unlink_memories: NOT_FOUND: {first['path']} has no link to")

    unlinked = data_of(server.call("unlink_memories", {"source_id": second["id"], "target_id": first["id"],
                                                       "relation_type": "extends"}), "unlink_memories")
    assert unlinked["success"] is True and [r["rel"] for r in unlinked["removed"]] == ["extends"]
    assert "links" not in card_meta(vault / second["path"]) and events(vault)[-1]["event"] == "unlinked"


def test_get_stats_and_analyze_knowledge(server):
    stored = store(server, "Kafka consumer lag grows when the partition count is too low.", tags=[])
    store(server, "Redis eviction policy allkeys-lru for caches.", memory_type="decision")
    stats = data_of(server.call("get_stats"), "get_stats")
    assert (stats["total_memories"], stats["total"]) == (2, 2)
    assert stats["memories_by_type"] == stats["by_type"] == {"decision": 1, "insight": 1}
    assert stats["top_tags"] == [{"name": "ecs", "count": 1}]
    analysis = data_of(server.call("analyze_knowledge", {}), "analyze_knowledge")
    assert analysis["total_memories"] == 2 and 0 <= analysis["health_score"] < 100
    orphans = next(i for i in analysis["issues"] if i["type"] == "orphan_memories")
    assert orphans["affected_memory_ids"] == [stored["id"]]


def test_another_agents_private_memory_is_never_shown_or_changed(server, vault):
    from helpers import vault_hashes

    shared = store(server, "Shared lesson about ECS deploys.")
    secret = store(server, "Alice's private notes on ECS deploys.", agent="alice")
    assert card_meta(vault / secret["path"])["scope"] == "agent"
    ok_data("link", secret["id"], shared["id"], "--rel", "related")   # a person links them at the CLI
    before = vault_hashes(vault)
    for agent in ({}, {"agent": "bob"}):
        for tool, arguments in (
                ("get_memory", {"memory_id": secret["id"]}),
                ("update_memory", {"memory_id": secret["id"], "content": "bob was here"}),
                ("update_memory", {"memory_id": secret["path"], "status": "archived"}),
                ("delete_memory", {"memory_id": secret["id"]}),
                ("link_memories", {"source_id": shared["id"], "target_id": secret["id"], "relation_type": "related"}),
                ("unlink_memories", {"source_id": secret["id"], "target_id": shared["id"]}),
                ("get_memory_links", {"memory_id": secret["id"]}),
                ("explore_related", {"memory_id": secret["id"]})):
            text = error_text(server.call(tool, {**arguments, **agent}))
            assert text.startswith(f"{tool}: NOT_FOUND: no card"), (tool, text)
        links = data_of(server.call("get_memory_links", {"memory_id": shared["id"], **agent}), "get_memory_links")
        assert links["incoming"] == [] and links["outgoing"] == []
        explored = data_of(server.call("explore_related", {"memory_id": shared["id"], **agent}), "explore_related")
        assert explored["linked"] == [] and explored["by_tag"] == [] and explored["by_project"] == []
        assert data_of(server.call("get_stats", agent), "get_stats")["total"] == 1
        assert data_of(server.call("analyze_knowledge", agent), "analyze_knowledge")["total"] == 1
    assert vault_hashes(vault) == before
    # A rename or delete of the shared card rewrites the private one, without naming it to bob.
    renamed = data_of(server.call("update_memory", {"memory_id": shared["id"], "title": "ECS deploy lessons",
                                                    "agent": "bob"}), "update_memory")
    assert renamed["relinked"] == [] and card_meta(vault / secret["path"])["related"] == [
        f"[[{Path(renamed['path']).stem}]]"]
    dry = data_of(server.call("delete_memory", {"memory_id": shared["id"], "dry_run": True}), "delete_memory")
    assert dry["cascaded"] == []
    # Alice sees and changes her own card.
    assert data_of(server.call("get_memory", {"memory_id": secret["id"], "agent": "alice"}), "get_memory")["id"]
    mine = data_of(server.call("delete_memory", {"memory_id": shared["id"], "dry_run": True, "agent": "alice"}),
                   "delete_memory")
    assert mine["cascaded"] == [secret["path"]]
    data_of(server.call("update_memory", {"memory_id": secret["id"], "status": "archived", "agent": "alice"}),
            "update_memory")
    assert card_meta(vault / secret["path"])["status"] == "archived"


def _masked(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\dT[0-9:.]+(?:Z|[+-]\d\d:\d\d)?", "<time>", text)


def _event_core(event: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in event.items() if k not in ("ts", "eid", "files", "actor", "pid")}


@pytest.mark.parametrize("operation", ["update", "link", "unlink", "delete"])
def test_an_mcp_write_leaves_the_files_and_log_the_cli_would(server, vault, operation):
    """The MCP call, undone, then the same change at the CLI: the same files, the same event."""
    target = store(server, "Pin the base image digest.", title="Pin base images")
    source = store(server, "Rebuild images weekly for patches.", title="Rebuild images")
    ok_data("link", source["id"], target["id"], "--rel", "related", "--weight", "0.5")
    mcp_calls = {
        "update": ("update_memory", {"memory_id": target["id"], "title": "Pin base image digests",
                                     "tags": ["docker", "supply-chain"], "append": "Use `@sha256:`."}),
        "link": ("link_memories", {"source_id": source["id"], "target_id": target["id"], "relation_type": "extends",
                                   "weight": 1, "reason": "weekly rebuilds keep pins fresh"}),
        "unlink": ("unlink_memories", {"source_id": source["id"], "target_id": target["id"]}),
        "delete": ("delete_memory", {"memory_id": target["id"]}),
    }
    cli_calls = {
        "update": ("update", target["id"], "--title", "Pin base image digests", "--tags", "docker,supply-chain",
                   "--append", "Use `@sha256:`."),
        "link": ("link", source["id"], target["id"], "--rel", "extends", "--weight", "1",
                 "--reason", "weekly rebuilds keep pins fresh"),
        "unlink": ("unlink", source["id"], target["id"]),
        "delete": ("delete", target["id"]),
    }
    from helpers import file_hashes

    def snapshot() -> dict[str, str]:
        return {rel: _masked((vault / rel).read_text(encoding="utf-8")) for rel in file_hashes(vault, ("Playbooks",))}

    before = snapshot()
    tool, arguments = mcp_calls[operation]
    by_mcp = data_of(server.call(tool, arguments), tool)
    after_mcp, mcp_event = snapshot(), events(vault)[-1]
    assert after_mcp != before
    ok_data("undo", by_mcp["event"])
    assert snapshot() == before
    by_cli = ok_data(*cli_calls[operation])
    assert snapshot() == after_mcp
    assert _event_core(events(vault)[-1]) == _event_core(mcp_event)
    shared = set(by_cli) & set(by_mcp)
    assert {k: by_mcp[k] for k in shared if k not in ("event", "hash")} == \
           {k: by_cli[k] for k in shared if k not in ("event", "hash")}


def test_seed_000_memory_types_filter_recall_and_list_and_an_unknown_one_is_an_error(server, vault):
    stored = {}
    for kind, content in (("success", "Celery worker stuck: restart it with -Q reports."),
                          ("failure", "Raising the celery retry count made the backlog worse."),
                          ("note", "The celery dashboard lives on port 5555.")):
        stored[kind] = data_of(server.call("store_memory", {
            "content": content, "context_name": "jobs", "tags": ["celery"], "memory_type": kind}), "store_memory")
    for kind in ("success", "failure", "note"):
        recalled = data_of(server.call("recall_memories", {"query": "celery", "type_filter": kind}), "recall_memories")
        assert [m["id"] for m in recalled["memories"]] == [stored[kind]["memory_id"]], kind
        listed = data_of(server.call("list_memories", {"type_filter": kind}), "list_memories")
        assert [m["id"] for m in listed["memories"]] == [stored[kind]["memory_id"]], kind
    # The card type of success and failure holds both.
    listed = data_of(server.call("list_memories", {"type_filter": "troubleshooting"}), "list_memories")
    assert listed["total_count"] == 2
    result = server.call("recall_memories", {"query": "celery", "type_filter": "bogus"})
    assert result["isError"] is True
    assert result["content"][0]["text"].startswith("recall_memories: INVALID_ARGUMENT: unknown type 'bogus'")
    assert server.call("list_memories", {"domain_filter": "nope"})["isError"] is True
    assert not list((vault / "Inbox").glob("Search_Miss_*.md"))   # no miss candidate for a typo


def test_an_agents_recall_miss_is_kept_private_to_it(server, vault):
    recalled = data_of(server.call("recall_memories", {"query": "kafka consumer lag", "agent": "alice"}),
                       "recall_memories")
    candidate = recalled["miss_candidate"]
    assert "\nagent: alice\n" in (vault / candidate).read_text(encoding="utf-8")
    assert data_of(server.call("list_memories", {}), "list_memories")["total_count"] == 0


def test_a_query_over_2000_characters_is_refused_never_echoed_or_kept_as_a_miss(server, vault):
    import random
    import string

    picker = random.Random(8)
    words = " ".join("".join(picker.choice(string.ascii_lowercase) for _ in range(picker.randint(3, 9)))
                     for _ in range(6000))
    for query in (words[:45_000].strip(), ("ecs " * 50_000).strip()):
        for tool, arguments in (("recall_memories", {"query": query}), ("brief", {"query": query})):
            result = server.call(tool, arguments)
            text = error_text(result)
            assert f"the query is {len(query):,} characters, over 2,000" in text, text
            assert len(json.dumps(result)) < 1000    # the query is not echoed back
    assert not list((vault / "Inbox").glob("*.md"))   # nor kept as a search miss
    # At the bound, a search still runs, and its echo is the query it was given.
    assert data_of(server.call("recall_memories", {"query": words[:2000]}), "recall_memories")["query"] == words[:2000]


def test_a_query_with_no_words_is_shown_cut_in_the_error(server):
    text = error_text(server.call("recall_memories", {"query": "!" * 1500}))
    assert "has no words to search for" in text and len(text) < 300
