"""Kinds in time and private scopes through the real CLI: `search --as-of` and `list --valid-at`
show what was valid at a moment (docs/card-format.md, Kinds in time), state cards carry their age, and another
agent never sees an agent-private card in any read command."""

from __future__ import annotations

import json

from helpers import ok_data, run_cli, run_json, write_card

OLD_FACT = """---
id: 0f0f0f0f-1111-4222-8333-444444444444
title: Orders DB max connections
type: fact
domain: infra
tags: [postgresql, orders, connections]
confidence: 0.5
created: 2026-01-01T09:00:00+00:00
updated: 2026-01-01T09:00:00+00:00
---
# Orders DB max connections

The orders database allows 100 connections.
"""


def titles(hits) -> list[str]:
    return [h["path"] for h in hits]


def test_a_newer_fact_supersedes_and_as_of_a_moment_before_shows_the_old_one(vault):
    old_path = "Playbooks/Fact_Orders_DB_max_connections.md"
    write_card(vault, old_path, OLD_FACT)
    new = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "postgresql,orders,connections",
                  "--title", "Orders DB max connections", "--body", "The orders database allows 200 connections.")
    assert new["insights"]["supersedes"][0]["path"] == old_path

    now_hits = ok_data("search", "orders database connections")["hits"]
    assert titles(now_hits) == [new["path"]]
    before = ok_data("search", "orders database connections", "--as-of", "2026-06-01T00:00:00+00:00")["hits"]
    assert titles(before) == [old_path]
    assert ok_data("search", "orders database connections", "--as-of", "2025-12-01")["hits"] == []

    listed = ok_data("list", "--valid-at", "2026-06-01T00:00:00+00:00")["cards"]
    assert [c["path"] for c in listed] == [old_path] and listed[0]["status"] == "superseded"
    assert [c["path"] for c in ok_data("list", "--valid-at", "2100-01-01")["cards"]] == [new["path"]]


def test_a_bad_as_of_time_is_a_usage_error(vault):
    code, envelope, _ = run_json("search", "x", "--as-of", "yesterday-ish")
    assert code == 2 and envelope["error"]["message"].startswith("--as-of 'yesterday-ish' is not a time")
    code, _, err = run_cli("list", "--valid-at", "soon")
    assert code == 2 and err.startswith("brain: error: --valid-at 'soon' is not a time")


def test_state_cards_carry_their_age_and_valid_to(vault):
    write_card(vault, "Playbooks/State_Deploy_Freeze.md", "---\nid: 5a5a5a5a-1111-4222-8333-444444444444\n"
               "title: Deploy freeze\ntype: state\ndomain: ops\ntags: [deploy, freeze]\n"
               "created: 2026-01-01T00:00:00+00:00\nvalid_from: 2026-01-01T00:00:00+00:00\n"
               "valid_to: 2026-01-03T00:00:00+00:00\n---\nDeploys are frozen.\n")
    hit = ok_data("search", "deploy freeze", "--status", "any")["hits"][0]
    assert hit["valid_to"] == "2026-01-03T00:00:00+00:00" and hit["age_seconds"] > 300 * 86400
    assert hit["age"].endswith("d")
    card = ok_data("list")["cards"][0]
    assert card["valid_to"] == hit["valid_to"] and card["age"] == hit["age"]
    code, out, _ = run_cli("list")
    assert f"(state, {hit['age']} old, valid to 2026-01-03T00:00:00+00:00)" in out


def test_another_agent_never_sees_an_agent_private_card_in_any_read_command(vault):
    shared = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Shared Zanzibar Guide",
                     "--tags", "zanzibar", "--body", "Public notes about zanzibar.")
    private = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Secret Zanzibar Plan",
                      "--tags", "zanzibar", "--body", "Private zanzibar plan of agent alice.",
                      "--scope", "agent", "--agent", "alice")
    # The private card links to the shared one: the shared card's incoming links, its explore
    # walk and the graph must still not show it. (A link the other way would be written into
    # the shared card's own text, which `get` and `export` show as it is.)
    ok_data("link", private["id"], shared["id"], "--rel", "related")
    secret = (private["id"], private["path"], "Secret Zanzibar Plan")

    reads = [
        ("search", "zanzibar"), ("get", private["id"]), ("list",), ("links", shared["id"]),
        ("explore", shared["id"], "--depth", "2"), ("graph",), ("stats",), ("analyze",), ("export",),
        ("history", private["id"]),
    ]
    for argv in reads:
        for who in ((), ("--agent", "bob")):
            code, out, err = run_cli(*argv, *who)
            assert code in (0, 1), (argv, who, err)
            # `get ID`/`history ID` may echo the id the caller gave; nothing else about the card.
            shown = secret[1:] if private["id"] in argv else secret
            leaked = [s for s in shown if s in out or s in err]
            assert leaked == [], (argv, who, leaked)
    assert ok_data("stats", "--agent", "bob")["total"] == 1

    # The owner sees it: the loop above would pass vacuously if the card were hidden from everyone.
    for argv in (("search", "zanzibar"), ("get", private["id"]), ("list",), ("links", shared["id"]),
                 ("graph",), ("export",), ("history", private["id"])):
        code, out, _ = run_cli(*argv, "--agent", "alice")
        assert code == 0 and private["id"] in out or private["path"] in out, argv
    assert ok_data("stats", "--agent", "alice")["by_scope"] == {"agent": 1, "global": 1}
    exported = [json.loads(line) for line in run_cli("export", "--include-private")[1].splitlines()]
    assert private["path"] in [r.get("path") for r in exported]
