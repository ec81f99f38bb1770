"""What a search miss is (docs/decisions/0031, "Search misses, statuses and context"): a query the
vault does not answer. A search its filters emptied is not one: it says so and keeps nothing. A query
with no word to search for (stop words, a lone letter, a Japanese particle alone) is refused like
"!!!", and keeps nothing either. Each door runs as a real process."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from helpers import events, ok_data, subprocess_cli
from test_hooks import hook, payload
from test_http import start, stop
from test_mcp import Server, data_of


def misses(vault) -> tuple[list[str], list[dict]]:
    return (sorted(p.name for p in (vault / "Inbox").glob("Search_Miss*.md")),
            [e for e in events(vault) if e["event"] == "search_miss"])


@pytest.fixture
def alb_card(vault):
    return ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "alb,timeout",
                   "--title", "ALB 504 from idle timeout",
                   "--body", "## Fix\nKeep the backend keep-alive longer than the ALB idle timeout.")


@pytest.mark.parametrize("flags", [("--domain", "security"), ("--type", "decision"), ("--tag", "nosuchtag"),
                                   ("--status", "archived"), ("--project", "elsewhere")])
def test_a_search_its_filters_emptied_says_so_and_keeps_no_miss(vault, alb_card, flags):
    done = subprocess_cli("search", "ALB 504", *flags, vault=vault)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ('No card matches "ALB 504" with these filters; 1 card matches without them '
                           "(search again without the filters to see it).\n"), done.stdout
    data = json.loads(subprocess_cli("search", "ALB 504", *flags, "--json", vault=vault).stdout)["data"]
    assert (data["hits"], data["miss_candidate"], data["unfiltered"]) == ([], None, 1)
    assert misses(vault) == ([], [])


def test_filters_emptied_keep_no_miss_through_mcp_and_http_either(vault, alb_card):
    server = Server(vault)
    try:
        server.initialize()
        recalled = data_of(server.call("recall_memories", {"query": "ALB 504", "domain_filter": "security"}),
                           "recall_memories")
        assert (recalled["memories"], recalled["miss_candidate"], recalled["unfiltered"]) == ([], None, 1)
    finally:
        assert server.close()[0] == 0
    api = start(vault)
    try:
        status, _, data = api.call("GET", f"/v1/memories?q={quote('ALB 504')}&domain=security")
        assert status == 200 and (data["memories"], data["miss_candidate"], data["unfiltered"]) == ([], None, 1), data
    finally:
        stop(api.process)
    assert misses(vault) == ([], [])


def test_a_query_the_vault_does_not_answer_is_one_miss_whatever_the_filters(vault, alb_card):
    for flags in (("--domain", "security"), (), ("--type", "decision"), ("--tag", "kafka")):
        done = subprocess_cli("search", "kafka consumer lag", *flags, vault=vault)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith('No cards match "kafka consumer lag". Logged as a search miss: '
                                      "Inbox/Search_Miss_kafka_consumer_lag.md"), done.stdout
    names, logged = misses(vault)
    assert names == ["Search_Miss_kafka_consumer_lag.md"] and len(logged) == 4
    text = (vault / "Inbox" / names[0]).read_text(encoding="utf-8")
    assert "\nmisses: 4\n" in text and "filters" not in text   # the query's miss, not the first filter's


@pytest.mark.parametrize("query", ["a", "the", "x", "of the", "の", "は", "が", "を", "です", "のは", "ですか"])
def test_a_query_of_stop_words_a_letter_or_a_particle_alone_is_refused_and_keeps_no_miss(vault, alb_card, query):
    done = subprocess_cli("search", query, vault=vault)
    assert (done.returncode, done.stdout) == (2, ""), (done.stdout, done.stderr)
    assert done.stderr.startswith(f"brain: error: the query {query!r} has no words to search for"), done.stderr
    assert misses(vault) == ([], [])


def test_a_query_without_words_is_no_miss_through_mcp_brief_and_the_hook(vault, alb_card):
    server = Server(vault)
    try:
        server.initialize()
        for query in ("the", "の"):
            result = server.call("recall_memories", {"query": query})
            assert result["isError"] is True and "has no words to search for" in result["content"][0]["text"]
            briefed = data_of(server.call("brief", {"query": query}), "brief")
            assert briefed["cards"] == []
    finally:
        assert server.close()[0] == 0
    for prompt in ("a", "です"):
        assert hook(vault, "prompt", payload("UserPromptSubmit", prompt=prompt))[0] is None
    assert misses(vault) == ([], [])


def test_words_that_are_more_than_particles_are_searched(vault, alb_card):
    ok_data("create", "--type", "fact", "--domain", "dev", "--tags", "c", "--title", "C++ needs a compiler",
            "--body", "C++ code is compiled; 鍵 は金庫にある。")
    for query in ("C++", "504", "鍵", "ALB"):
        assert ok_data("search", query)["hits"], query
