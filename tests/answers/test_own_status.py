"""A status of a person's own (`in-progress`, `✅ done`) hides nothing, through every door: CLI
`search` and `brief`, the prompt hook, HTTP `/v1/context` and `/v1/memories?q=`, MCP
`recall_memories` and `brief`; only `superseded` and `archived` hide a card (SPEC, Obsidian). Each
door runs as a real process."""

from __future__ import annotations

from urllib.parse import quote

import pytest

from helpers import events, ok_data, run_cli
from test_hooks import context_of, hook, payload
from test_http import start, stop
from test_mcp import Server, data_of

QUERY = "partner API egress timeout"


@pytest.fixture
def cards(vault):
    made = {}
    for status in ("in-progress", "✅ done", "archived"):
        made[status] = ok_data(
            "create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ecs,egress",
            "--title", f"Partner API egress timeout ({status.strip('✅ ')})",
            "--body", "## Symptoms\nCalls to the partner API time out after 30 s.\n\n"
                      f"## Fix\nAllow egress 443 in the security group ({status.strip('✅ ')}).")
        code, _, err = run_cli("update", made[status]["path"], "--status", status)
        assert code == 0, err
    return {status: card["path"] for status, card in made.items()}


def test_every_door_shows_a_card_of_a_status_of_your_own_and_hides_an_archived_one(vault, cards):
    shown = {cards["in-progress"], cards["✅ done"]}
    searched = {hit["path"] for hit in ok_data("search", QUERY)["hits"]}
    assert searched == shown
    assert {c["path"] for c in ok_data("brief", QUERY)["cards"]} == shown
    logged = len(events(vault))

    output, _ = hook(vault, "prompt", payload("UserPromptSubmit", prompt="Why does the partner API egress time out?"))
    text = context_of(output, "UserPromptSubmit")
    assert all(f"`{path}`" in text for path in shown) and cards["archived"] not in text

    api = start(vault)
    try:
        status, _, data = api.call("POST", "/v1/context", {"query": QUERY})
        assert status == 200 and {e["path"] for e in data["evidence"]} == shown, data
        status, _, data = api.call("GET", f"/v1/memories?q={quote(QUERY)}")
        assert status == 200 and {m["path"] for m in data["memories"]} == shown, data
    finally:
        stop(api.process)

    server = Server(vault)
    try:
        server.initialize()
        recalled = data_of(server.call("recall_memories", {"query": QUERY}), "recall_memories")
        assert {m["path"] for m in recalled["memories"]} == shown, recalled
        assert recalled["miss_candidate"] is None
        briefed = data_of(server.call("brief", {"query": QUERY}), "brief")
        assert {c["path"] for c in briefed["cards"]} == shown
    finally:
        assert server.close()[0] == 0
    # Every door found the cards: no search miss was kept, no candidate written.
    assert not list((vault / "Inbox").glob("Search_Miss_*.md"))
    assert [e["event"] for e in events(vault)[logged:] if e["event"] == "search_miss"] == []


def test_doctor_says_every_door_shows_a_card_of_a_status_of_your_own(vault, cards):
    data = ok_data("doctor")
    [finding] = [f for f in data["findings"] if "'in-progress'" in f["message"]]
    assert finding["message"].endswith("search, brief, the hooks and every door show it like an active card"), finding
