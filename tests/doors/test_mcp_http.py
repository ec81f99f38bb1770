"""MCP over Streamable HTTP at `/mcp` on a real `brain serve` process (issue 23, part 1): the
official SDK's client in 8 concurrent sessions, the transport's rules spoken raw, and agent keys
on every tool."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT, SCRIPT, events, ok_data, vault_hashes
from test_http import KEY, start, stop

SDK_PYTHONS = (os.environ.get("BRAIN_MCP_PYTHON", ""), "/work/venvs/mcp/bin/python")
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}


def sdk_python() -> str:
    for candidate in SDK_PYTHONS:
        if candidate and Path(candidate).is_file():
            probe = subprocess.run([candidate, "-c", "import mcp, jsonschema"], capture_output=True, timeout=60)
            if probe.returncode == 0:
                return candidate
    pytest.skip("the official MCP SDK is not available: set BRAIN_MCP_PYTHON to a Python with `pip install mcp` "
                "(.ci/run makes one in ~/.cache/external-brain-ci), or create /work/venvs/mcp")


class Mcp:
    """Raw HTTP to /mcp: `post` returns (status, headers, parsed JSON or None)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def send(self, method: str, body=None, *, key: str | None = KEY, session: str | None = None,
             headers: dict | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        sent = {"Accept": "application/json, text/event-stream", **(headers or {})}
        if key is not None:
            sent["X-API-KEY"] = key
        if session is not None:
            sent["Mcp-Session-Id"] = session
        payload = None
        if body is not None:
            payload = body if isinstance(body, bytes) else json.dumps(body).encode()
            sent["Content-Type"] = "application/json"
        try:
            connection.request(method, "/mcp", body=payload, headers=sent)
            response = connection.getresponse()
            data = response.read()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, \
                json.loads(data) if data else None
        finally:
            connection.close()

    def open(self, key: str = KEY, headers: dict | None = None) -> str:
        status, got, data = self.send("POST", INIT, key=key, headers=headers)
        assert status == 200 and "result" in data, data
        session = got["mcp-session-id"]
        assert self.send("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, key=key,
                         session=session, headers=headers)[0] == 202
        return session

    def tool(self, session: str, name: str, arguments: dict, key: str = KEY, headers: dict | None = None) -> dict:
        status, _, data = self.send("POST", {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                                             "params": {"name": name, "arguments": arguments}},
                                    key=key, session=session, headers=headers)
        assert status == 200 and "result" in data, (name, data)
        return data["result"]


@pytest.fixture
def served(vault):
    server = start(vault)
    yield server
    stop(server.process)


@pytest.fixture
def two_agents(vault, tmp_path, monkeypatch):
    """A server with agent keys for alice and bob: (its `Mcp` client, the tokens by name)."""
    keys_file = tmp_path / "keys.toml"
    monkeypatch.setenv("BRAIN_KEYS_FILE", str(keys_file))
    tokens = {name: ok_data("keys", "add", name)["token"] for name in ("alice", "bob")}
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    yield Mcp(server.port), tokens
    stop(server.process)


def test_the_official_sdk_client_lists_and_calls_every_tool_in_8_concurrent_sessions(served, vault):
    python = sdk_python()
    result = subprocess.run([python, str(ROOT / "tests" / "sdk_streamable_client.py"),
                             f"http://127.0.0.1:{served.port}/mcp", KEY, "8"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["errors"] == [], summary["errors"]
    assert len(summary["sessions"]) == 8
    from external_brain.doors.mcp import TOOLS

    every = sorted(tool.name for tool in TOOLS)
    for outcome in summary["sessions"]:
        assert outcome["failures"] == [], outcome
        assert outcome["protocol"] == "2025-11-25"
        assert outcome["tools"] == every and outcome["called"] == every
    # Each session stored its three memories, merged one into another and deleted one.
    stored = [e for e in events(vault) if e["event"] == "created"]
    assert len(stored) == 24
    assert len([e for e in events(vault) if e["event"] == "merged"]) == 8


def test_the_transport_rules(served, vault):
    mcp = Mcp(served.port)
    status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
    assert status == 400 and data["error"]["code"] == -32600 and "Mcp-Session-Id" in data["error"]["message"]
    status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 3, "method": "tools/list"}, session="made-up")
    assert status == 404 and data["id"] == 3
    session = mcp.open()
    other = mcp.open()
    assert session != other and len(session) >= 40 and all(33 <= ord(c) <= 126 for c in session)
    status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": "a", "method": "tools/list"}, session=session)
    assert status == 200 and data["id"] == "a"
    from external_brain.doors.mcp import TOOLS

    assert [t["name"] for t in data["result"]["tools"]] == [t.name for t in TOOLS]
    # The same listing as stdio: one implementation.
    stdio = subprocess.run([os.sys.executable, str(SCRIPT), "--vault", str(vault), "mcp"], capture_output=True,
                           text=True, timeout=60, input=json.dumps(INIT) + "\n" + json.dumps(
                               {"jsonrpc": "2.0", "id": "a", "method": "tools/list"}) + "\n")
    assert json.loads(stdio.stdout.splitlines()[1]) == data
    assert mcp.send("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, session=session)[2]["result"] == {}
    assert mcp.send("POST", {"jsonrpc": "2.0", "id": 5, "method": "server/discover"}, session=session)[2][
        "error"]["code"] == -32601
    status, _, data = mcp.send("POST", b"{not json", session=session)
    assert status == 400 and data["error"]["code"] == -32700
    status, _, data = mcp.send("POST", [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], session=session)
    assert status == 400 and data["error"]["code"] == -32600
    status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, session=session,
                               headers={"MCP-Protocol-Version": "1999-01-01"})
    assert status == 400 and data["id"] == 6
    assert mcp.send("POST", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, session=session,
                    headers={"MCP-Protocol-Version": "2025-06-18"})[0] == 200
    status, got, data = mcp.send("GET", session=session)
    assert status == 405 and got["allow"] == "POST, DELETE"
    # A session is its key's: another key's request with it is 404, as if it did not exist.
    status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 8, "method": "ping"}, session=session, key=None)
    assert status == 401 and data["error"]["data"]["code"] == "UNAUTHENTICATED" and "jsonrpc" in data
    # DELETE ends it; the other session goes on.
    assert mcp.send("DELETE", session=session)[0] == 204
    assert mcp.send("POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"}, session=session)[0] == 404
    assert mcp.send("DELETE", session=session)[0] == 404
    assert mcp.send("POST", {"jsonrpc": "2.0", "id": 9, "method": "ping"}, session=other)[0] == 200
    # A tool's bad arguments are an isError result, as on stdio.
    result = mcp.tool(other, "get_memory", {"memory_id": "nope"})
    assert result["isError"] is True and "NOT_FOUND" in result["content"][0]["text"]


def test_sessions_survive_across_worker_processes(vault):
    server = start(vault, extra=("--workers", "3"))
    try:
        mcp = Mcp(server.port)
        sessions = [mcp.open() for _ in range(6)]
        for round_ in range(4):   # new connections: the kernel hands them to any of the 3 workers
            for session in sessions:
                status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": round_, "method": "ping"},
                                           session=session)
                assert status == 200, data
    finally:
        stop(server.process)


def test_another_agents_private_card_named_by_its_path_reads_as_a_missing_one(vault, two_agents):
    """h12-ident: get_memory_links and explore_related told a path to another agent's private
    card ("no card with path, stem or id ...") apart from a path to nothing ("no card at ..."),
    so any key could test which file names exist."""
    mcp, tokens = two_agents
    alice, bob = mcp.open(tokens["alice"]), mcp.open(tokens["bob"])
    stored = mcp.tool(alice, "store_memory", {"content": "Merger talks with Kestrel start in May",
                                              "title": "Kestrel merger", "context_name": "deals",
                                              "tags": ["deals"], "memory_type": "fact"}, key=tokens["alice"])
    path = stored["structuredContent"]["path"]
    missing = path.replace("Kestrel", "Nothing")
    assert (vault / path).is_file() and not (vault / missing).exists()
    for name in ("get_memory_links", "explore_related", "get_memory"):
        told = [mcp.tool(bob, name, {"memory_id": ref}, key=tokens["bob"]) for ref in (path, missing)]
        assert all(t["isError"] for t in told), (name, told)
        assert told[0]["content"][0]["text"] == told[1]["content"][0]["text"].replace(missing, path), name


def test_a_search_does_not_count_another_agents_private_cards_among_those_it_cut(vault, two_agents):
    """h12-ident: recall_memories' `cut` (matching cards not shown) counted another agent's private
    cards, so a search for one word told any key whether some private card holds it."""
    mcp, tokens = two_agents
    alice, bob = mcp.open(tokens["alice"]), mcp.open(tokens["bob"])
    mcp.tool(alice, "store_memory", {"content": "Merger talks with Kestrel start in May", "title": "Kestrel merger",
                                     "context_name": "deals", "tags": ["deals"], "memory_type": "fact"},
             key=tokens["alice"])
    mcp.tool(bob, "store_memory", {"content": "Deploy with the blue green switch", "title": "Deploy runbook",
                                   "context_name": "ops", "tags": ["deploy"], "memory_type": "fact"},
             key=tokens["bob"])
    for query, hits in (("Kestrel", []), ("Zebrafinch", []), ("Kestrel deploy", ["Deploy runbook"]),
                        ("Zebrafinch deploy", ["Deploy runbook"])):
        found = mcp.tool(bob, "recall_memories", {"query": query}, key=tokens["bob"])["structuredContent"]
        assert ([m["title"] for m in found["memories"]], found["cut"]) == (hits, 0), (query, found)
    found = mcp.tool(alice, "recall_memories", {"query": "Kestrel"}, key=tokens["alice"])["structuredContent"]
    assert [m["title"] for m in found["memories"]] == ["Kestrel merger"]
    found = mcp.tool(mcp.open(), "recall_memories", {"query": "Kestrel"})["structuredContent"]
    assert (found["memories"], found["cut"]) == ([], 0)   # the owner without an agent sees no private card either


def test_every_tool_keeps_each_agents_private_memories_its_own(vault, two_agents):
    mcp, tokens = two_agents
    sessions = {who: mcp.open(tokens[who]) for who in tokens}
    marks = {"alice": "ALICEMARK-m1", "bob": "BOBMARK-m2"}
    own = {}
    for who in tokens:
        stored = mcp.tool(sessions[who], "store_memory", {
            "content": f"{who}'s vault token rotation runbook {marks[who]}", "context_name": "ops",
            "tags": ["rotation", "vault"], "memory_type": "runbook"}, key=tokens[who])
        own[who] = stored["structuredContent"]
        assert mcp.tool(sessions[who], "remember", {"key": "task", "body": f"rotating {marks[who]}"},
                        key=tokens[who])["isError"] is False
    shared = mcp.tool(mcp.open(), "store_memory", {"content": "Token rotation happens on Fridays",
                                                   "context_name": "ops", "tags": ["rotation", "vault"]})
    shared_id = shared["structuredContent"]["memory_id"]
    for who, other in (("alice", "bob"), ("bob", "alice")):
        session, key = sessions[who], tokens[who]
        theirs, secret = own[other]["memory_id"], marks[other]
        their_text = (vault / own[other]["path"]).read_text()
        reads = [("recall_memories", {"query": "vault token rotation runbook", "limit": 20}),
                 ("recall_memories", {"query": f"{other} rotation runbook"}),
                 ("list_memories", {"limit": 1000}), ("list_memories", {"tag_filter": ["rotation"]}),
                 ("get_stats", {}), ("analyze_knowledge", {}), ("brief", {"query": "token rotation", "limit": 50}),
                 ("context", {}), ("recall", {"key": "task"}),
                 ("explore_related", {"memory_id": shared_id, "depth": 3}),
                 ("get_memory_links", {"memory_id": shared_id}), ("get_persona_context", {})]
        for name, arguments in reads:
            result = mcp.tool(session, name, arguments, key=key)
            assert result["isError"] is False, (who, name, result)
            shown = json.dumps({k: v for k, v in result["structuredContent"].items() if k != "query"})
            assert secret not in shown and theirs not in shown, (who, name)
        assert mcp.tool(session, "recall", {"key": "task"}, key=key)["structuredContent"]["body"].endswith(
            marks[who])
        touching = [("get_memory", {"memory_id": theirs}),
                    ("update_memory", {"memory_id": theirs, "title": "mine now"}),
                    ("delete_memory", {"memory_id": theirs}),
                    ("record_feedback", {"memory_id": theirs, "outcome": "rejected"}),
                    ("link_memories", {"source_id": own[who]["memory_id"], "target_id": theirs,
                                       "relation_type": "related"}),
                    ("link_memories", {"source_id": theirs, "target_id": shared_id, "relation_type": "related"}),
                    ("unlink_memories", {"source_id": theirs, "target_id": shared_id}),
                    ("explore_related", {"memory_id": theirs}), ("get_memory_links", {"memory_id": theirs}),
                    ("merge_memories", {"keep_id": own[who]["memory_id"], "merge_id": theirs}),
                    ("merge_memories", {"keep_id": theirs, "merge_id": shared_id}),
                    ("forget", {"key": "task-of-" + other})]
        for name, arguments in touching:
            result = mcp.tool(session, name, arguments, key=key)
            assert result["isError"] is True and "NOT_FOUND" in result["content"][0]["text"], (who, name, result)
            assert secret not in result["content"][0]["text"]
        # Every tool that takes `agent`: naming the other agent is refused, whatever the tool.
        from external_brain.doors.mcp import TOOLS

        minimal = {"store_memory": {"content": "planted", "context_name": "x", "tags": ["x"]},
                   "recall_memories": {"query": "rotation"}, "remember": {"key": "task", "body": "planted"},
                   "recall": {"key": "task"}, "forget": {"key": "task"},
                   "record_feedback": {"memory_id": theirs, "outcome": "used"},
                   "link_memories": {"source_id": theirs, "target_id": shared_id, "relation_type": "related"},
                   "unlink_memories": {"source_id": theirs, "target_id": shared_id},
                   "merge_memories": {"keep_id": theirs, "merge_id": shared_id}}
        with_agent = [t.name for t in TOOLS if "agent" in t.input_schema["properties"]]
        assert len(with_agent) == 19
        for name in with_agent:
            needs = next(t for t in TOOLS if t.name == name).input_schema.get("required", [])
            arguments = {**minimal.get(name, {"memory_id": theirs} if "memory_id" in needs else {}), "agent": other}
            result = mcp.tool(session, name, arguments, key=key)
            assert result["isError"] is True and "FORBIDDEN" in result["content"][0]["text"], (who, name, result)
            assert secret not in result["content"][0]["text"]
        assert (vault / own[other]["path"]).read_text() == their_text
    assert {e["actor"] for e in events(vault) if e["event"] == "remembered"} == {"agent:alice", "agent:bob"}
    before = vault_hashes(vault)
    assert before == vault_hashes(vault)
