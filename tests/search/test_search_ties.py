"""Hits with equal scores are ordered by a stable key — score (rounded), the agent's own cards
first, effective confidence, path — and `--limit` keeps the first of that same order, never the
order in which the index happened to see the cards (its docids)."""

from __future__ import annotations


from helpers import ok_data, run_cli

WIDGET = "Notes on tuning the widget."


def create(title: str, *extra: str) -> str:
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--tags", "ties",
                   "--body", WIDGET, *extra)["path"]


def hits(*argv: str) -> list[tuple[str, float]]:
    return [(hit["path"], hit["score"]) for hit in ok_data("search", *argv)["hits"]]


def paths(*argv: str) -> list[str]:
    return [path for path, _ in hits(*argv)]


def test_the_same_cards_indexed_in_another_order_give_the_same_limited_hits(vault, tmp_path, monkeypatch):
    other = tmp_path / "other"
    assert run_cli("init", str(other))[0] == 0
    titles = ["Widget alpha", "Widget bravo", "Widget charlie"]
    for root, order in ((vault, titles), (other, titles[::-1])):
        monkeypatch.setenv("BRAIN_VAULT", str(root))
        for title in order:
            create(title)
    found = {}
    for root in (vault, other):
        monkeypatch.setenv("BRAIN_VAULT", str(root))
        every = hits("widget")
        assert len({score for _, score in every}) == 1, every  # all tied
        found[root] = [paths("widget", "--limit", str(limit)) for limit in (1, 2, 3)]
    assert found[vault] == found[other]
    assert found[vault][0] == ["Playbooks/Pattern_Widget_alpha.md"]
    assert found[vault][1] == ["Playbooks/Pattern_Widget_alpha.md", "Playbooks/Pattern_Widget_bravo.md"]


def test_confidence_decides_which_tied_hit_survives_the_limit(vault):
    create("Widget alpha")
    trusted = create("Widget bravo")
    ok_data("record", trusted, "used")  # 0.55 against 0.5, and a later path
    assert paths("widget") == [trusted, "Playbooks/Pattern_Widget_alpha.md"]
    assert paths("widget", "--limit", "1") == [trusted]


def test_a_tie_wider_than_the_first_look_at_the_ranking_is_cut_by_path(vault):
    # More tied cards than the first (cheap) look at the top of the ranking holds (40 at
    # --limit 1), created last name first, so docid order is the reverse of path order.
    names = [f"Widget {n:02d}" for n in range(44, -1, -1)]
    for title in names:
        create(title)
    assert paths("widget", "--limit", "1") == ["Playbooks/Pattern_Widget_00.md"]
    assert paths("widget", "--limit", "3") == [f"Playbooks/Pattern_Widget_{n:02d}.md" for n in range(3)]


def test_an_agent_sees_its_own_card_before_a_global_one_of_equal_relevance(vault):
    shared = create("Widget alpha")
    own = create("Widget bravo", "--scope", "agent", "--agent", "builder")
    better = create("Widget widget charlie")  # a higher score: own cards come first only among equals
    ranked = hits("widget", "--agent", "builder")
    assert [path for path, _ in ranked] == [better, own, shared]
    assert ranked[0][1] > ranked[1][1] == ranked[2][1]
    assert paths("widget", "--agent", "builder", "--limit", "2") == [better, own]
    assert paths("widget", "--agent", "reviewer") == [better, shared]
    assert paths("widget") == [better, shared]
