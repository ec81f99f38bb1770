"""Failed writes are in the operations log (issue 23, part 7; docs/compatibility.md, The operations log): the
command, the error code, a short message, the card it named and the actor, never the body, a
key or a payload; reads that fail and requests refused before a caller is known are not logged."""

from __future__ import annotations

import json

from helpers import events, log_lines, ok_data, run_cli, run_json
from test_http import KEY, start, stop
from test_mcp import Server


def failed(vault) -> list[dict]:
    return [e for e in events(vault, failures=True) if e["event"] == "failed"]


def test_a_failed_cli_write_is_logged_and_a_failed_read_is_not(vault):
    code, _, _ = run_cli("update", "No_Such_Card", "--title", "x")
    assert code == 1
    [entry] = failed(vault)
    assert {k: entry[k] for k in ("command", "code", "ref", "via", "actor")} == {
        "command": "update", "code": "NOT_FOUND", "ref": "No_Such_Card", "via": "cli", "actor": "test"}
    assert entry["message"].startswith("no card with path, stem or id 'No_Such_Card'")
    run_cli("create", "--type", "nonsense", "--domain", "infra", "--title", "T", "--body", "b")
    assert [(e["command"], e["code"]) for e in failed(vault)][1:] == [("create", "INVALID_ARGUMENT")]
    before = len(failed(vault))
    assert run_cli("get", "No_Such_Card")[0] == 1          # a read
    assert run_cli("search", "--limit", "0", "x")[0] == 2  # a read, refused
    assert run_cli("update")[0] == 2                       # refused by argparse: no vault, nothing to log
    assert len(failed(vault)) == before


def test_a_failed_write_logs_no_payload(vault):
    secret_body = "SECRET-" + "x" * 200_000
    code, envelope, _ = run_json("remember", "k", "--body", secret_body)
    assert code == 2 and envelope["error"]["code"] == "INVALID_ARGUMENT"
    [entry] = failed(vault)
    assert entry["command"] == "remember" and entry["ref"] == "k"
    line = log_lines(vault)[-1]
    assert b"SECRET-" not in line and len(line) < 1000


def test_mcp_writes_that_fail_are_logged(vault):
    server = Server(vault)
    try:
        server.initialize()
        assert server.call("update_memory", {"memory_id": "nope", "title": "x"})["isError"] is True
        assert server.call("store_memory", {"content": "x", "tags": ["a"]})["isError"] is True   # no context_name
        assert server.call("get_memory", {"memory_id": "nope"})["isError"] is True             # a read
    finally:
        server.close()
    assert [(e["command"], e["code"], e.get("ref"), e["via"]) for e in failed(vault)] == [
        ("update_memory", "NOT_FOUND", "nope", "mcp"), ("store_memory", "INVALID_ARGUMENT", None, "mcp")]


def test_http_writes_that_fail_are_logged_and_refusals_before_the_key_are_not(vault):
    (vault / ".brain" / "config.toml").write_text("[http]\nmax_body_bytes = 2000\n")
    server = start(vault)
    try:
        assert server.call("PATCH", "/v1/memories/nope", {"title": "x"})[0] == 404
        big = {"content": "PAYLOAD-" + "y" * 5000, "memory_type": "fact"}
        assert server.call("POST", "/v1/memories", big)[0] == 413
        assert server.call("POST", "/v1/memories", {"content": "x"})[0] == 400          # no memory_type
        assert server.call("GET", "/v1/memories/nope")[0] == 404                        # a read
        assert server.call("POST", "/v1/memories", {"content": "x", "memory_type": "fact"}, key="wrong-" * 4)[0] == 401
        assert server.call("POST", "/v1/memories", {"content": "x", "memory_type": "fact"},
                           headers={"Host": "evil.example"})[0] == 403
    finally:
        stop(server.process)
    assert [(e["command"], e["code"], e.get("ref"), e["via"]) for e in failed(vault)] == [
        ("PATCH /v1/memories/{id}", "NOT_FOUND", "nope", "http"),
        ("POST /v1/memories", "PAYLOAD_TOO_LARGE", None, "http"),
        ("POST /v1/memories", "INVALID_ARGUMENT", None, "http")]
    assert b"PAYLOAD-" not in b"".join(log_lines(vault)) and KEY.encode() not in b"".join(log_lines(vault))
    # A filtered export leaves failures out: what was tried may name what the reader may not see.
    code, out, _ = run_cli("export", "--events")
    assert code == 0 and '"failed"' not in out
    code, out, _ = run_cli("export", "--events", "--include-private")
    assert out.count('"event": "failed"') == 3
