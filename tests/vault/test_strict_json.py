"""Strict JSON out of every door (docs/decisions.md, "Installs, strict JSON and small rules": no NaN or Infinity), each door run as a real process.

A person's note may hold YAML's own spellings of the floats JSON has no words for (`score: .nan`,
`ratio: .inf`). Python's `json` writes those as the bare tokens NaN / Infinity, which
JavaScript's `JSON.parse` (and every strict parser) refuses, failing the whole message. Every
output is read here with a parser that refuses those tokens too. The rule
(docs/decisions.md, "Installs, strict JSON and small rules"): such a value is written as the
string "NaN", "Infinity" or "-Infinity".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT, write_card
from test_http import KEY, start, stop
from test_mcp import Server

NOTE = """---
title: Odd Numbers Note
tags: [numbers]
score: .nan
ratio: .inf
floor: -.Inf
nested:
  - weight: .NaN
---
# Odd Numbers Note
What the odd numbers measure.
"""
# What every door shows for the frontmatter above.
FRONTMATTER = {"title": "Odd Numbers Note", "tags": ["numbers"], "score": "NaN", "ratio": "Infinity",
               "floor": "-Infinity", "nested": [{"weight": "NaN"}]}


def strict_loads(text: str | bytes):
    """`json.loads` that refuses NaN, Infinity and -Infinity, as JSON.parse does."""
    def refuse(token: str):
        raise AssertionError(f"{token} is not JSON: {text[:300]!r}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture
def note(vault: Path) -> Path:
    return write_card(vault, "Playbooks/Odd_Numbers_Note.md", NOTE)


def brain(vault: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    return subprocess.run([sys.executable, str(SCRIPT), *argv], env=env, capture_output=True, text=True,
                          timeout=60)


def test_cli_get_json_is_strict_json(vault, note):
    result = brain(vault, "get", "Odd_Numbers_Note", "--json")
    assert result.returncode == 0, result.stderr
    data = strict_loads(result.stdout)["data"]
    assert data["frontmatter"] == FRONTMATTER
    assert data["confidence"] == 0.5


def test_cli_export_to_stdout_and_to_a_file_is_strict_json(vault, note, tmp_path):
    result = brain(vault, "export")
    assert result.returncode == 0, result.stderr
    records = [strict_loads(line) for line in result.stdout.splitlines()]
    [card] = [r for r in records if r["kind"] == "card"]
    assert card["frontmatter"] == FRONTMATTER and card["text"] == NOTE
    out = tmp_path / "dump.jsonl"
    result = brain(vault, "export", "--output", str(out), "--json")
    assert result.returncode == 0, result.stderr
    strict_loads(result.stdout)
    [card] = [r for r in map(strict_loads, out.read_text().splitlines()) if r["kind"] == "card"]
    assert card["frontmatter"] == FRONTMATTER


def test_an_export_with_such_values_imports_back_byte_for_byte(vault, note, tmp_path):
    out = tmp_path / "dump.jsonl"
    assert brain(vault, "export", "--output", str(out)).returncode == 0
    note.unlink()
    result = brain(vault, "import", str(out))
    assert result.returncode == 0, result.stderr
    assert note.read_text() == NOTE


def test_cli_history_and_graph_are_strict_json(vault, note):
    assert brain(vault, "record", "Odd_Numbers_Note", "used").returncode == 0
    for argv in (("history", "Odd_Numbers_Note", "--json"), ("graph",), ("graph", "--json"),
                 ("list", "--json"), ("search", "odd numbers", "--json")):
        result = brain(vault, *argv)
        assert result.returncode == 0, (argv, result.stderr)
        strict_loads(result.stdout)


def test_mcp_get_memory_is_strict_json(vault, note):
    server = Server(vault)
    try:
        server.initialize()
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                     "params": {"name": "get_memory", "arguments": {"memory_id": "Odd_Numbers_Note"}}})
        line = server.lines.get(timeout=20)
        response = strict_loads(line)
        result = response["result"]
        assert result["isError"] is False, result
        assert result["structuredContent"]["frontmatter"] == FRONTMATTER
        assert strict_loads(result["content"][0]["text"]) == result["structuredContent"]
    finally:
        code, stderr = server.close()
    assert code == 0, stderr


def test_http_get_and_dump_are_strict_json(vault, note):
    import http.client

    api = start(vault)
    try:
        for path in ("/v1/memories/Odd_Numbers_Note", "/v1/dump", "/v1/memories?q=odd+numbers"):
            connection = http.client.HTTPConnection("127.0.0.1", api.port, timeout=10)
            try:
                connection.request("GET", path, headers={"X-API-KEY": KEY})
                response = connection.getresponse()
                body = response.read().decode("utf-8")
            finally:
                connection.close()
            assert response.status == 200, body
            if path == "/v1/dump":
                [card] = [r for r in map(strict_loads, body.splitlines()) if r["kind"] == "card"]
                assert card["frontmatter"] == FRONTMATTER
            elif path.startswith("/v1/memories/"):
                assert strict_loads(body)["frontmatter"] == FRONTMATTER
            else:
                strict_loads(body)
    finally:
        stop(api.process)


def test_the_encoder_writes_each_non_finite_float_as_its_string():
    from external_brain.vault.strict_json import dumps

    value = {"a": float("nan"), "b": [float("inf"), -float("inf"), 1.5], float("inf"): (2, float("nan"))}
    assert strict_loads(dumps(value)) == {"a": "NaN", "b": ["Infinity", "-Infinity", 1.5],
                                          "Infinity": [2, "NaN"]}
    # The common case is json.dumps itself, byte for byte.
    plain = {"x": [1, 2.5, "é", None, True], "y": {"z": "ü"}}
    assert dumps(plain) == json.dumps(plain, ensure_ascii=False)
    assert dumps(plain, separators=(",", ":")) == json.dumps(plain, ensure_ascii=False, separators=(",", ":"))
