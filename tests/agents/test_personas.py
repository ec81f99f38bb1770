"""Personas (issue 23, part 4; docs/compatibility.md, Personas): `X-Persona` (HTTP, /mcp) and `--persona` (CLI, stdio
MCP) select one of the vaults `[personas]` names, each fully isolated; an unknown persona is a
clear error that writes nothing anywhere; each persona has its own context document."""

from __future__ import annotations

import json

import pytest

import os
import subprocess
import sys

from helpers import SCRIPT, events, ok_data, run_cli, run_json, vault_hashes
from test_http import KEY, configure, start, stop
from test_jobs import wait_for
from test_mcp_http import Mcp


@pytest.fixture
def personas(vault, tmp_path):
    for name in ("work", "home"):
        assert run_cli("init", str(tmp_path / name))[0] == 0
    configure(vault, '[personas]\nwork = "../work"\nhome = "../home"\n')
    return {"work": tmp_path / "work", "home": tmp_path / "home"}


def test_each_persona_is_a_vault_of_its_own_over_http_and_mcp(vault, personas):
    server = start(vault)
    try:
        work, home = {"X-Persona": "work"}, {"X-Persona": "home"}
        status, _, card = server.call("POST", "/v1/memories", {"content": "The quarterly review is on Friday",
                                                               "memory_type": "fact", "tags": ["review"]}, headers=work)
        assert status == 201 and (personas["work"] / card["path"]).is_file()
        assert not (vault / card["path"]).exists() and not (personas["home"] / card["path"]).exists()
        assert server.call("GET", f"/v1/memories/{card['id']}", headers=work)[0] == 200
        for headers in (home, {}):
            assert server.call("GET", f"/v1/memories/{card['id']}", headers=headers)[0] == 404
            status, _, found = server.call("GET", "/v1/memories?q=quarterly+review", headers=headers)
            assert status == 200 and found["memories"] == []
        # An unknown persona is a clear error, and nothing is written anywhere.
        before = {name: vault_hashes(path) for name, path in {**personas, "served": vault}.items()}
        status, _, data = server.call("POST", "/v1/memories", {"content": "x", "memory_type": "fact"},
                                      headers={"X-Persona": "wrok"})
        assert (status, data["error"]["code"]) == (400, "UNKNOWN_PERSONA")
        assert data["error"]["message"].startswith("no persona 'wrok' in ") and "known: home, work" in \
            data["error"]["message"]
        # The server's own path is no business of a key holder's: the config is named within the vault.
        assert "in .brain/config.toml [personas]" in data["error"]["message"]
        assert str(vault) not in json.dumps(data) and str(vault.parent) not in json.dumps(data)
        assert server.call("GET", "/v1/health", headers={"X-Persona": "../work"})[0] == 400
        assert {name: vault_hashes(path) for name, path in {**personas, "served": vault}.items()} == before
        # The persona context: one document per persona.
        status, _, changed = server.call("PATCH", "/v1/persona", {"current_emotion": "focused",
                                                                  "user_info": {"name": "Taro"}}, headers=work)
        assert status == 200 and changed["changed"] == ["current_emotion", "user_info.name"]
        assert changed["persona"] == "work" and changed["persona_context"]["user_info"]["nickname"] == "User"
        assert server.call("GET", "/v1/persona", headers=work)[2]["persona_context"]["current_emotion"] == "focused"
        assert server.call("GET", "/v1/persona", headers=home)[2]["persona_context"]["current_emotion"] == "neutral"
        status, _, data = server.call("PATCH", "/v1/persona", {"mood": "x"}, headers=work)
        assert (status, data["error"]["code"]) == (400, "INVALID_ARGUMENT")
        assert [e["changed"] for e in events(personas["work"]) if e["event"] == "persona_updated"] == [
            ["current_emotion", "user_info.name"]]
        # /mcp: a session is its persona's.
        mcp = Mcp(server.port)
        at_work, at_home = mcp.open(headers=work), mcp.open(headers=home)
        stored = mcp.tool(at_work, "store_memory", {"content": "Standup moved to 10:00", "context_name": "team",
                                                    "tags": ["standup"]}, headers=work)["structuredContent"]
        assert (personas["work"] / stored["path"]).is_file()
        assert mcp.tool(at_home, "recall_memories", {"query": "standup"}, headers=home)["structuredContent"][
            "memories"] == []
        assert mcp.tool(at_work, "get_persona_context", {}, headers=work)["structuredContent"][
            "persona_context"]["user_info"]["name"] == "Taro"
        status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"}, session=at_work,
                                   headers=home)
        assert status == 400 and "persona" in data["error"]["message"]
        status, _, data = mcp.send("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                                   headers={"X-Persona": "nope"})
        assert status == 400 and data["error"]["data"]["code"] == "UNKNOWN_PERSONA"
        # An async ingest under a persona runs in that persona's vault.
        status, _, accepted = server.call("POST", "/v1/ingest", {"text": "I moved to Kyoto.", "async": True},
                                          headers=work)
        assert status == 202
        deadline_job = wait_for_persona(server, accepted["job_id"], work)
        assert deadline_job["status"] == "done"
        assert server.call("GET", f"/v1/jobs/{accepted['job_id']}")[0] == 404   # not the served vault's job
    finally:
        stop(server.process)


def wait_for_persona(server, job_id, headers):
    import time

    deadline = time.monotonic() + 120
    while True:
        status, _, data = server.call("GET", f"/v1/jobs/{job_id}", headers=headers)
        assert status == 200, data
        if data["status"] in ("done", "failed", "lost") or time.monotonic() > deadline:
            return data
        time.sleep(0.05)


def as_persona(persona: str, *argv: str) -> dict:
    code, envelope, err = run_json(*argv, "--persona", persona)
    assert code == 0 and envelope["ok"], (envelope, err)
    return envelope["data"]


def test_persona_on_the_command_line_and_on_stdio_mcp(vault, personas):
    made = as_persona("home", "create", "--type", "fact", "--domain", "general", "--title",
                   "The cat eats at seven", "--body", "cat food at 19:00")
    assert (personas["home"] / made["path"]).is_file() and not (vault / made["path"]).exists()
    assert [h["id"] for h in as_persona("home", "search", "cat food")["hits"]] == [made["id"]]
    assert as_persona("work", "search", "cat food")["hits"] == []
    assert ok_data("search", "cat food")["hits"] == []
    code, envelope, _ = run_json("--persona", "nope", "search", "cat")
    assert (code, envelope["error"]["code"]) == (2, "UNKNOWN_PERSONA")
    as_persona("home", "persona", "--set", "environment=kitchen")
    assert ok_data("persona", "--persona", "home")["persona_context"]["environment"] == "kitchen"
    assert ok_data("persona")["persona_context"]["environment"] == "unknown"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}}
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "recall_memories",
                                                                         "arguments": {"query": "cat food"}}}
    for persona, expected in (("home", [made["id"]]), ("work", [])):
        result = subprocess.run([sys.executable, str(SCRIPT), "--persona", persona, "mcp"], capture_output=True,
                                text=True, timeout=60, env={**os.environ, "BRAIN_VAULT": str(vault)},
                                input=json.dumps(init) + "\n" + json.dumps(call) + "\n")
        answer = json.loads(result.stdout.splitlines()[1])
        assert [m["id"] for m in answer["result"]["structuredContent"]["memories"]] == expected


def test_a_persona_whose_vault_is_missing_is_named_to_an_http_client_without_the_servers_path(vault, personas,
                                                                                              tmp_path):
    # Before: the client got VaultNotFound's message, "persona 'gone''s vault /tmp/.../gone is not a vault; create
    # it with `brain init /tmp/.../gone`": where the server keeps its vaults, told to any key holder.
    configure(vault, '[personas]\nwork = "../work"\ngone = "../gone"\n')
    missing = str(tmp_path / "gone")
    server = start(vault)
    try:
        for method, path, body in (("GET", "/v1/health", None), ("POST", "/v1/memories",
                                                                 {"content": "x", "memory_type": "fact"})):
            status, _, data = server.call(method, path, body, headers={"X-Persona": "gone"})
            assert (status, data["error"]["code"]) == (500, "VAULT_NOT_FOUND"), data
            message = data["error"]["message"]
            assert "persona 'gone'" in message and "brain init" in message and "[personas]" in message, message
            assert str(tmp_path) not in json.dumps(data), data
            assert data["error"]["details"] == {"persona": "gone"}
        mcp_status, _, answer = Mcp(server.port).send("POST", {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                               "params": {}}, headers={"X-Persona": "gone"})
        assert mcp_status == 500 and answer["error"]["data"]["code"] == "VAULT_NOT_FOUND", answer
        assert "persona 'gone'" in answer["error"]["message"] and str(tmp_path) not in json.dumps(answer)
    finally:
        stop(server.process)
    assert missing in server.stderr.read_text()   # the server's owner is told where
    # On the command line the user is the owner: the path and the command that fixes it.
    code, envelope, _ = run_json("--persona", "gone", "search", "cat")
    assert (code, envelope["error"]["code"]) == (1, "VAULT_NOT_FOUND")
    assert f"brain init {missing}" in envelope["error"]["message"]


def test_a_broken_config_is_told_to_an_http_client_relative_to_the_vault(vault, personas, tmp_path):
    # Before: 500 CONFIG_ERROR "/srv/.../vault/.brain/config.toml:4: search.bogus: unknown setting ..." and
    # details.path the same: the server's file system, told to any key holder.
    server = start(vault)
    try:
        configure(vault, '[personas]\nwork = "../work"\n\n[search]\nbogus = 1\n')
        status, _, data = server.call("GET", "/v1/memories?q=ecs")
        mcp = Mcp(server.port)
        tool = mcp.send("POST", {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                 "params": {"name": "recall_memories", "arguments": {"query": "ecs"}}},
                        session=mcp.open())[2]
        configure(vault, '[personas]\nwork = "../work"\n')
        (personas["work"] / ".brain" / "config.toml").write_text("[search]\nwrong = 2\n")
        at_work = server.call("GET", "/v1/memories?q=ecs", headers={"X-Persona": "work"})
    finally:
        stop(server.process)
    assert (status, data["error"]["code"]) == (500, "CONFIG_ERROR"), data
    assert data["error"]["message"].startswith(".brain/config.toml:5: search.bogus: unknown setting"), data
    assert data["error"]["details"]["path"] == ".brain/config.toml"
    assert str(tmp_path) not in json.dumps(data)
    # /mcp's tools too: the same words as /v1, the vault's files named inside it.
    (text,) = [block["text"] for block in tool["result"]["content"]]
    assert text.startswith("recall_memories: CONFIG_ERROR: .brain/config.toml:5: search.bogus"), tool
    assert at_work[0] == 500 and at_work[2]["error"]["message"].startswith(".brain/config.toml:2: search.wrong"), \
        at_work
    assert str(tmp_path) not in json.dumps(at_work[2])
    assert f"{vault}/.brain/config.toml:5: search.bogus" in server.stderr.read_text()   # the owner's log has it
