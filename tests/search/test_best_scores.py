"""A create's candidate search (`keyword.best_scores`, under `keyword.related`) scores only the
cards that can reach the top, by a bound per term, and must give exactly what scoring every
card gives (`_Scoring`, then `heapq.nlargest`): the same documents, the same float scores and
ties in the same order. Checked on a generated vault full of ties (cards with the same words),
with cards in the index's delta (`stale` / `fresh`: written since the last fold, some of them
edits of folded cards), for queries of common and rare words at several limits."""

from __future__ import annotations

import heapq
import random
import sqlite3
from operator import itemgetter
from pathlib import Path

from external_brain.search import keyword
from external_brain.search.analysis import card_fields, tokens
from external_brain.search.index import Index
from external_brain.vault.storage import Vault

# A few common words and many rare ones: the common words' long lists are what the bound skips.
COMMON = ["deploy", "timeout", "cache", "worker", "queue"]
RARE = [f"{a}{b}" for a in ("zor", "pik", "mul", "tav", "gren", "sol") for b in ("ax", "um", "ix", "on", "et")]


def card_text(number: int, title: str, body: str, tags: list[str]) -> str:
    return (f"---\nid: 00000000-0000-4000-8000-{number:012d}\ntitle: \"{title}\"\ntype: pattern\ndomain: dev\n"
            f"tags: [{', '.join(tags)}]\nconfidence: 0.5\ncreated: 2026-01-01T10:00:00+09:00\n"
            f"updated: 2026-01-01T10:00:00+09:00\n---\n# {title}\n\n{body}\n")


def make_cards(rng: random.Random, start: int, count: int, folder: Path) -> None:
    shapes = []   # texts written several times over: whole groups of equal scores
    for number in range(start, start + count):
        if shapes and rng.random() < 0.4:
            title, body, tags = rng.choice(shapes)
        else:
            title = " ".join(rng.choice(COMMON if rng.random() < 0.6 else RARE) for _ in range(rng.randint(1, 4)))
            body = " ".join(rng.choice(COMMON if rng.random() < 0.7 else RARE) for _ in range(rng.randint(0, 30)))
            tags = sorted({rng.choice(COMMON + RARE) for _ in range(rng.randint(0, 2))})
            shapes.append((title, body, tags))
        (folder / f"Pattern_card_{number:05d}.md").write_text(card_text(number, title, body, tags), encoding="utf-8")


def full_top(index: Index, terms: list[str], n: int) -> list[tuple[int, float]]:
    return full_tops(index, terms, (n,))[n]


def full_tops(index: Index, terms: list[str], ns: tuple[int, ...]) -> dict[int, list[tuple[int, float]]]:
    """For each n, the n best (docid, score) of scoring every card: the cards scored once for all n."""
    scores = keyword._Scoring(index, terms).scores.items()
    return {n: heapq.nlargest(n, scores, key=itemgetter(1)) for n in ns}


def test_the_bounded_search_gives_exactly_what_scoring_every_card_gives(vault: Path) -> None:
    rng = random.Random(22)
    playbooks = vault / "Playbooks"
    make_cards(rng, 0, 600, playbooks)
    Index.open(Vault(vault), card_fields).close()          # built: every card folded into `postings`
    make_cards(rng, 600, 30, playbooks)                     # new cards: the delta
    for number in rng.sample(range(600), 20):               # edits of folded cards: stale within the lists
        path = playbooks / f"Pattern_card_{number:05d}.md"
        path.write_text(path.read_text(encoding="utf-8").replace("# ", "# queue zorax ", 1), encoding="utf-8")
    index = Index.open(Vault(vault), card_fields, sweep=0)
    try:
        stale = index.db.execute("SELECT count(*) FROM stale").fetchone()[0]
        assert stale >= 20, stale   # the delta is read, not only `postings`
        checked = ties = 0
        for _ in range(150):
            words = [rng.choice(COMMON if rng.random() < 0.5 else RARE) for _ in range(rng.randint(1, 7))]
            if rng.random() < 0.2:
                words.append("nowhereword")
            terms = tokens(" ".join(words), drop_stop_words=True)
            assert index.postings_of(terms).keys() == dict.fromkeys(terms).keys()
            for term, postings in index.postings_of(terms).items():
                alone = index.postings(term)
                assert postings.merged() == (alone.docids, alone.codes), term
            for n, expected in full_tops(index, terms, (1, 3, 10, 30, 200)).items():
                assert keyword.best_scores(index, terms, n) == expected, (words, n)
                scores = [score for _, score in expected]
                ties += len(scores) - len(set(scores))
                checked += 1
        assert ties > 100, ties   # the order within groups of equal scores was checked, often
    finally:
        index.close()


def test_related_finds_the_same_candidates_as_scoring_every_card(vault: Path) -> None:
    rng = random.Random(5)
    make_cards(rng, 0, 300, vault / "Playbooks")
    index = Index.open(Vault(vault), card_fields, sweep=None)
    try:
        for text in ["deploy timeout zorax", "queue worker cache deploy", "solet gren", "timeout"]:
            terms = tokens(text, drop_stop_words=True)
            expected = full_top(index, terms, 30)
            rows = index.docs(docid for docid, _ in expected)
            paths = [rows[docid]["path"] for docid, _ in expected][:10]
            found = keyword.related(index, text)
            assert [str(card.path.relative_to(vault)) for _, card in found] == paths
            assert [score for score, _ in found] == [score for _, score in expected][:10]
    finally:
        index.close()


def test_related_past_the_first_ranks_when_the_best_cards_are_hidden(vault: Path) -> None:
    """`related` ranks a few more than `limit` first; when another agent's private cards fill
    those ranks, it ranks 3 x limit and finds what ranking 3 x limit at once found."""
    playbooks = vault / "Playbooks"
    for number in range(14):   # the best matches, each private to bob
        text = card_text(number, "deploy timeout zorax", "deploy timeout zorax worker", ["deploy"])
        text = text.replace("domain: dev\n", "domain: dev\nscope: agent\nagent: bob\n", 1)
        (playbooks / f"Private_card_{number:05d}.md").write_text(text, encoding="utf-8")
    make_cards(random.Random(9), 100, 200, playbooks)
    index = Index.open(Vault(vault), card_fields, sweep=None)
    try:
        text = "deploy timeout zorax"
        expected = full_top(index, tokens(text, drop_stop_words=True), 30)
        rows = index.docs(docid for docid, _ in expected)
        assert all(rows[docid]["path"].startswith("Playbooks/Private_card_") for docid, _ in expected[:12])
        shown = [(rows[docid]["path"], score) for docid, score in expected
                 if not rows[docid]["path"].startswith("Playbooks/Private_card_")][:10]
        assert len(shown) == 10
        for agent, wanted in (("alice", shown), (None, shown)):
            found = keyword.related(index, text, agent)
            assert [(card.path.relative_to(vault).as_posix(), score) for score, card in found] == wanted
        bobs = keyword.related(index, text, "bob")   # bob sees his own, the first ranks
        assert [card.path.name for _, card in bobs] == [Path(rows[docid]["path"]).name for docid, _ in expected[:10]]
    finally:
        index.close()


def test_an_empty_or_unknown_query_has_no_best_scores(vault: Path) -> None:
    make_cards(random.Random(1), 0, 20, vault / "Playbooks")
    index = Index.open(Vault(vault), card_fields)
    try:
        assert keyword.best_scores(index, [], 10) == []
        assert keyword.best_scores(index, ["nowhereword"], 10) == []
        with sqlite3.connect(vault / ".brain/cache/index.sqlite") as db:
            assert db.execute("SELECT count(*) FROM docs").fetchone()[0] == 20
            known = db.execute("SELECT term FROM postings LIMIT 1").fetchone()[0]
        assert keyword.best_scores(index, [known], 1)   # a known term has a best card
        assert keyword.best_scores(index, [known], 0) == []   # and none of zero wanted
    finally:
        index.close()


def test_a_servers_waiting_cards_give_the_same_best_scores_as_scoring_every_card(vault: Path) -> None:
    """As a server leaves its index: cards of its own waiting unfolded in `stale` /
    `fresh`, each holding the same few words (`bench`, `note`) and common ones, past every
    folded row, with edits of folded cards among them; queries like its creates' (every term a
    long list, so most terms are looked up card by card, and the n-th best is worked out again
    and again from the cards that can still reach it)."""
    rng = random.Random(38)
    playbooks = vault / "Playbooks"
    make_cards(rng, 0, 400, playbooks)
    Index.open(Vault(vault), card_fields).close()
    for number in range(400, 448):   # (a refresh folds past 64 waiting)
        words = " ".join(rng.choice(COMMON + RARE[:3]) for _ in range(8))
        (playbooks / f"Pattern_card_{number:05d}.md").write_text(
            card_text(number, f"Bench note {number % 4} {words}", words, ["bench", f"client{number % 4}"]),
            encoding="utf-8")
    for number in rng.sample(range(400), 10):
        path = playbooks / f"Pattern_card_{number:05d}.md"
        path.write_text(path.read_text(encoding="utf-8").replace("# ", "# bench note ", 1), encoding="utf-8")
    index = Index.open(Vault(vault), card_fields, sweep=0)
    try:
        assert index.db.execute("SELECT count(*) FROM stale").fetchone()[0] >= 55
        for number in range(60):
            words = " ".join(rng.choice(COMMON + RARE[:3]) for _ in range(8))
            terms = tokens(f"Bench note {number % 4} {words} bench client{number % 4}", drop_stop_words=True)
            for term, postings in index.postings_of(terms).items():
                alone = index.postings(term)
                assert postings.merged() == (alone.docids, alone.codes), term
            for n, expected in full_tops(index, terms, (3, 10, 30)).items():
                assert keyword.best_scores(index, terms, n) == expected, (terms, n)
    finally:
        index.close()


def test_a_terms_waiting_postings_are_put_in_docid_order_whatever_order_sqlite_gave() -> None:
    from external_brain.search.index import _ascending

    assert _ascending([3, 7, 9], [30, 70, 90]) == ([3, 7, 9], [30, 70, 90])
    assert _ascending([9, 3, 7], [90, 30, 70]) == ([3, 7, 9], [30, 70, 90])
    assert _ascending([5], [50]) == ([5], [50])
