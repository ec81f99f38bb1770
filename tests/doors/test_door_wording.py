"""One error, each door's words: the library says what is wrong once, naming the argument as the
CLI takes it (`--type`), and each door names it as its callers pass it (HTTP's JSON field or query
parameter, MCP's tool argument), never a CLI option a caller of that door cannot give. Real
processes: the CLI, `mcp` on stdio, `serve` on 127.0.0.1 (with the web page's API)."""

from __future__ import annotations

import re
from urllib.parse import quote

from helpers import ok_data, run_json
from test_http import start, stop
from test_mcp import Server, error_text
from test_web import Browser

CLI_OPTION = re.compile(r"(?<![\w-])--[a-z]")


def made() -> dict:
    return ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ecs",
                   "--title", "ECS task stops with exit code 137", "--body", "## Fix\nRaise the task memory to 2 GB.")


def cli_error(*argv: str) -> dict:
    code, envelope, _ = run_json(*argv)
    assert code == 2 and envelope["ok"] is False, envelope
    return envelope["error"]


def test_an_update_that_changes_nothing_names_each_doors_fields(vault):
    card = made()
    said = cli_error("update", card["id"])["message"]
    assert said.startswith("nothing to update; give --title, --body, --append, --tags, --add-tag") and \
        "--type" in said and "--project" in said
    mcp = Server(vault)
    try:
        mcp.initialize()
        said = error_text(mcp.call("update_memory", {"memory_id": card["id"]}))
    finally:
        mcp.close()
    assert not CLI_OPTION.search(said), said
    # update_memory's own arguments: content, memory_type, context_name; it has no add/remove tags.
    assert "give title, content, append, tags, memory_type, domain, context_name, importance or status" in said, said
    server = start(vault)
    try:
        status, _, data = server.call("PATCH", f"/v1/memories/{card['id']}", {})
    finally:
        stop(server.process)
    assert (status, data["error"]["code"]) == (400, "INVALID_ARGUMENT")
    said = data["error"]["message"]
    assert not CLI_OPTION.search(said), said
    assert said == ("nothing to update; give title, content, append, tags, add_tags, remove_tags, memory_type, "
                    "domain, project, importance or status"), said


def test_a_bad_value_is_named_as_each_door_takes_it(vault):
    long = "p" * 201
    said = cli_error("create", "--type", "fact", "--domain", "infra", "--title", "x", "--body", "y",
                     "--project", long)
    assert said["message"].startswith("--project is 201 characters") and said["details"] == {"field": "project"}
    mcp = Server(vault)
    try:
        mcp.initialize()
        text = error_text(mcp.call("store_memory", {"content": "The VPN needs MFA", "tags": ["vpn"],
                                                   "context_name": long}))
    finally:
        mcp.close()
    assert "context_name is 201 characters" in text and not CLI_OPTION.search(text), text
    server = start(vault)
    try:
        status, _, data = server.call("POST", "/v1/memories", {"content": "The VPN needs MFA", "memory_type": "fact",
                                                               "project": long})
        card = made()
        status_line, _, line = server.call("PATCH", f"/v1/memories/{card['id']}", {"status": "a\nb"})
    finally:
        stop(server.process)
    assert (status, data["error"]["details"]) == (400, {"field": "project"})
    assert data["error"]["message"].startswith("project is 201 characters"), data
    assert status_line == 400 and line["error"]["message"].startswith("status must be one line"), line


def test_an_undo_over_a_later_change_names_the_pages_force_field(vault):
    card = made()
    server = start(vault)
    try:
        page = Browser(server)
        assert page.login()[0] == 200
        assert page.call("PATCH", f"/web/api/v1/memories/{card['id']}", {"append": "Seen on staging."})[0] == 200
        update = page.call("GET", f"/web/api/cards/{card['id']}/history")[2]["entries"][0]
        assert page.call("PATCH", f"/web/api/v1/memories/{card['id']}", {"append": "And on prod."})[0] == 200
        status, _, data = page.call("POST", f"/web/api/events/{update['eid']}/undo", {})
    finally:
        stop(server.process)
    assert (status, data["error"]["code"]) == (409, "CONFLICT"), data
    said = data["error"]["message"]
    assert not CLI_OPTION.search(said) and 'pass "force": true to overwrite it' in said, said
    code, envelope, _ = run_json("undo", update["eid"])
    assert code == 1 and "pass --force to overwrite it" in envelope["error"]["message"]


def test_a_candidate_without_a_type_names_the_pages_fields(vault):
    miss = ok_data("search", "kubernetes ingress 502")["miss_candidate"]
    said = cli_error("promote", miss)["message"]
    assert said.endswith("has no type or domain; give --type (e.g. troubleshooting) and --domain (e.g. infra)"), said
    server = start(vault)
    try:
        page = Browser(server)
        assert page.login()[0] == 200
        status, _, data = page.call("POST", f"/web/api/inbox/{quote(miss, safe='')}/promote", {"domain": "infra"})
        missing = page.call("POST", "/web/api/inbox/Nope/promote", {"domain": "infra"})
    finally:
        stop(server.process)
    assert (status, data["error"]["details"]) == (400, {"field": "type"}), data
    assert data["error"]["message"].endswith("has no type; give type (e.g. troubleshooting)"), data
    # A command given with its options is the owner's to run, and is kept whole.
    assert missing[0] == 404 and missing[2]["error"]["message"].endswith("`brain list --inbox` lists them"), missing


def test_a_missing_card_points_at_each_doors_own_way_to_find_it(vault):
    # Before: MCP and HTTP clients were told "`brain search` or `brain list` finds it", commands they cannot run.
    made()
    code, envelope, _ = run_json("get", "nope")
    assert code == 1 and envelope["error"]["message"] == \
        "no card with path, stem or id 'nope'; `brain search` or `brain list` finds it"
    mcp = Server(vault)
    try:
        mcp.initialize()
        text = error_text(mcp.call("get_memory", {"memory_id": "nope"}))
        context = error_text(mcp.call("recall", {"key": "nope"}))
    finally:
        mcp.close()
    assert text == "get_memory: NOT_FOUND: no card with path, stem or id 'nope'; `recall_memories` or " \
                   "`list_memories` finds it", text
    assert "`context` lists them" in context and "brain" not in context, context
    server = start(vault)
    try:
        status, _, data = server.call("GET", "/v1/memories/nope")
        feedback, _, other = server.call("POST", "/v1/memories/nope/feedback", {"outcome": "used"})
    finally:
        stop(server.process)
    assert (status, feedback) == (404, 404)
    for answer in (data, other):
        assert answer["error"]["message"] == ("no card with path, stem or id 'nope'; `GET /v1/memories?q=...` or "
                                              "`GET /v1/memories` finds it"), answer


def test_a_stale_hash_says_how_each_door_passes_the_new_one(vault):
    # Before: "`get` it again, redo the change, and pass the new hash" on every door, naming no way to pass it.
    card = made()
    code, envelope, _ = run_json("update", card["id"], "--append", "x", "--expect-hash", "1:deadbeef")
    assert code == 1 and envelope["error"]["message"].endswith(
        "`brain get` it again, redo the change, and pass the new hash with --expect-hash"), envelope
    mcp = Server(vault)
    try:
        mcp.initialize()
        text = error_text(mcp.call("update_memory", {"memory_id": card["id"], "append": "x",
                                                     "expect_hash": "1:deadbeef"}))
    finally:
        mcp.close()
    assert text.endswith("`get_memory` it again, redo the change, and pass the new hash with expect_hash"), text
    server = start(vault)
    try:
        status, _, data = server.call("PATCH", f"/v1/memories/{card['id']}", {"append": "x"},
                                      headers={"If-Match": '"1:deadbeef"'})
    finally:
        stop(server.process)
    assert (status, data["error"]["code"]) == (412, "CONFLICT")
    assert data["error"]["message"].endswith(
        "`GET /v1/memories/{id}` it again, redo the change, and pass the new hash with If-Match"), data


def test_blank_content_and_a_bad_agent_are_named_as_each_door_takes_them(vault):
    # Before: blank content was "empty title; give content \"what the card is about\"" (HTTP) and "give title" (MCP,
    # which had given no title because the content is the memory); a bad agent_id had no details.field.
    mcp = Server(vault)
    try:
        mcp.initialize()
        text = error_text(mcp.call("store_memory", {"content": "  \n ", "tags": ["x"], "context_name": "p"}))
    finally:
        mcp.close()
    assert text == "store_memory: INVALID_ARGUMENT: content has no text; give what the memory says", text
    server = start(vault)
    try:
        blank = server.call("POST", "/v1/memories", {"content": "  \n ", "memory_type": "fact"})
        agent = server.call("POST", "/v1/memories", {"content": "VPN needs MFA", "memory_type": "fact",
                                                     "agent_id": "a\nb"})
    finally:
        stop(server.process)
    assert blank[0] == 400 and blank[2]["error"]["details"] == {"field": "content"}
    assert blank[2]["error"]["message"] == "content has no text; give what the memory says", blank
    assert agent[0] == 400 and agent[2]["error"]["details"] == {"field": "agent_id"}, agent
    assert agent[2]["error"]["message"].startswith("agent_id holds the character U+000A"), agent
