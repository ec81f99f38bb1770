"""A session's saved state (the note `hook pre-compact` keeps, `session: ID` in its frontmatter) is
that session's working memory, and no one else's, through every door (review7; decision 0022):
CLI `brief` / `context`, MCP `brief` / `context` over stdio, HTTP `/v1/context` of `brain serve`
and the session-start hook. A door that names the session (`--session ID`, `session`,
`session_id`) gets its own saved state as working memory; one that names none gets people's notes
as working memory and the other sessions' saved states only apart, under `other_sessions`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT
from test_hooks import SESSION, context_of, error_then_fix, hook, payload, write_transcript
from test_http import start, stop
from test_mcp import Server, data_of

SAVED = f"session-{SESSION}"
NOTHING_MATCHES = "zebra quartz flamingo"


@pytest.fixture
def saved(vault, tmp_path):
    """A vault holding a session's saved state (still failing: ModuleNotFoundError) and a person's note."""
    transcript = write_transcript(tmp_path / "t.jsonl", error_then_fix()[:4])
    output, err = hook(vault, "pre-compact", payload("PreCompact", transcript, trigger="auto", custom_instructions=""))
    assert output is None, err
    brain(vault, "remember", "current-task", "--body", "Migrating the checkout to ECS")
    assert ok_data(vault, "recall", SAVED)["session"] == SESSION
    return vault


def brain(vault: Path, *argv: str) -> str:
    """`brain ARGV` as a real process; its stdout (exit 0 asserted)."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), *argv], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "BRAIN_ACTOR": "test"})
    assert done.returncode == 0, done.stderr
    return done.stdout


def ok_data(vault: Path, *argv: str) -> dict:
    envelope = json.loads(brain(vault, *argv, "--json"))
    assert envelope["ok"] is True, envelope
    return envelope["data"]


def keys(entries: list[dict]) -> list[str]:
    return [entry["key"] for entry in entries]


def test_cli_brief_and_context_show_a_saved_state_only_to_its_session(saved):
    anyone = ok_data(saved, "brief")
    assert keys(anyone["working_memory"]) == ["current-task"]
    assert "ModuleNotFoundError" not in anyone["markdown"] and "Migrating the checkout" in anyone["markdown"]
    assert anyone["other_sessions"] == [SAVED]
    own = ok_data(saved, "brief", "--session", SESSION)
    assert sorted(keys(own["working_memory"])) == ["current-task", SAVED] and own["other_sessions"] == []
    assert "ModuleNotFoundError" in own["markdown"]
    other = ok_data(saved, "brief", "--session", "another-session-0001")
    assert keys(other["working_memory"]) == ["current-task"] and other["other_sessions"] == [SAVED]

    listed = ok_data(saved, "context")
    assert keys(listed["entries"]) == ["current-task"]
    assert keys(listed["other_sessions"]) == [SAVED] and listed["other_sessions"][0]["session"] == SESSION
    text = brain(saved, "context")
    assert f"## {SAVED} (saved state of session {SESSION}, not this one)" in text, text
    assert sorted(keys(ok_data(saved, "context", "--session", SESSION)["entries"])) == ["current-task", SAVED]


def test_mcp_brief_and_context_show_a_saved_state_only_to_its_session(saved):
    server = Server(saved)
    try:
        server.initialize()
        anyone = data_of(server.call("brief", {}), "brief")
        assert keys(anyone["working_memory"]) == ["current-task"] and anyone["other_sessions"] == [SAVED]
        assert "ModuleNotFoundError" not in anyone["markdown"]
        own = data_of(server.call("brief", {"session": SESSION}), "brief")
        assert "ModuleNotFoundError" in own["markdown"] and SAVED in keys(own["working_memory"])
        listed = data_of(server.call("context", {}), "context")
        assert keys(listed["entries"]) == ["current-task"] and keys(listed["other_sessions"]) == [SAVED]
        listed = data_of(server.call("context", {"session": SESSION}), "context")
        assert sorted(keys(listed["entries"])) == ["current-task", SAVED] and listed["other_sessions"] == []
    finally:
        code, stderr = server.close()
    assert code == 0, stderr


def test_http_context_shows_a_saved_state_only_to_its_session(saved):
    api = start(saved)
    try:
        status, _, anyone = api.call("POST", "/v1/context", {"query": NOTHING_MATCHES})
        assert status == 200, anyone
        assert "ModuleNotFoundError" not in anyone["context"]["markdown"]
        assert "Migrating the checkout" in anyone["context"]["markdown"] and anyone["other_sessions"] == [SAVED]
        status, _, own = api.call("POST", "/v1/context", {"query": NOTHING_MATCHES, "session_id": SESSION})
        assert status == 200, own
        assert "ModuleNotFoundError" in own["context"]["markdown"] and own["other_sessions"] == []
    finally:
        stop(api.process)


def test_the_session_start_hook_and_cli_brief_agree_for_one_session(saved):
    # One implementation: what the hook injects for the session is the CLI brief for it.
    injected = context_of(hook(saved, "session-start", payload("SessionStart", source="compact"))[0], "SessionStart")
    assert "ModuleNotFoundError" in injected
    assert ok_data(saved, "brief", "--session", SESSION, "--budget", "1200")["markdown"].strip() in injected


def test_stats_audit_and_the_web_page_count_working_memory_by_session(saved):
    """`stats`, `audit`, MCP `get_stats` and the web page's `/web/api/stats` count working memory with one
    function (`working_memory.counts`): every live note of all sessions (`entries`), split as
    `split_by_session` splits them: notes for every session (`notes`) and saved states (`saved_states`, of how
    many `sessions`). Before, the count was one number that mixed a session's saved state with people's notes."""
    from test_web import Browser

    counted = {"entries": 2, "expired": 0, "notes": 1, "saved_states": 1, "sessions": 1}
    assert ok_data(saved, "stats")["working_memory"] == counted
    assert ok_data(saved, "audit")["working_memory"] == counted
    line = "working memory: 2 live in all sessions (1 note for every session, 1 saved state of 1 session), 0 expired"
    assert line in brain(saved, "stats").splitlines()
    assert line + " (purged by `context`)" in brain(saved, "audit").splitlines()
    server = Server(saved)
    try:
        server.initialize()
        assert data_of(server.call("get_stats", {}), "get_stats")["working_memory"] == counted
    finally:
        server.close()
    api = start(saved)
    try:
        browser = Browser(api)
        assert browser.login()[0] == 200
        status, _, page = browser.call("GET", "/web/api/stats")
        assert (status, page["working_memory"]) == (200, counted)
    finally:
        stop(api.process)
