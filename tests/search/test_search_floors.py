"""The low-score cut: nothing relevant returns nothing, but a term every card shares still finds
them (the coverage floor is scale-free, unlike a fixed score floor on BM25's corpus-dependent scale)."""

from __future__ import annotations

import json

from helpers import run_cli


def create(title: str, body: str) -> None:
    code, _, err = run_cli("create", "--type", "runbook", "--domain", "ops", "--title", title,
                           "--tags", "deploy", "--body", body)
    assert code == 0, err


def hit_titles(*argv: str) -> list[str]:
    code, out, err = run_cli("search", *argv, "--json")
    assert code == 0, err
    return [hit["title"] for hit in json.loads(out)["data"]["hits"]]


def test_a_term_in_every_card_still_finds_them():
    for name in ("Blue green deploy", "Canary deploy", "Rollback a deploy", "Deploy freeze"):
        create(name, f"How to {name.lower()} safely.")
    assert len(hit_titles("deploy", "--limit", "10")) == 4


def test_a_one_card_vault_finds_its_only_card_by_a_body_word():
    create("Blue green deploy", "Switch the load balancer target group after smoke tests.")
    assert hit_titles("balancer") == ["Blue green deploy"]


def test_a_query_whose_rare_terms_match_nothing_returns_nothing(vault):
    create("Blue green deploy", "Switch the load balancer target group after smoke tests.")
    create("Canary deploy", "Send 5% of traffic to the new version first.")
    # "deploy" is in every card; the query's weight is in the terms no card has.
    assert hit_titles("kafka consumer rebalancing storm deploy") == []
    assert len(list((vault / "Inbox").glob("Search_Miss_*.md"))) == 1
