"""A long-lived process keeps the `postings` rows its candidate searches read (`index._KeptPostings`,
on where `keep_connections` is: `brain serve`'s workers), and must give exactly what reading them
again gives, whatever changed in between: cards created, edited in place, deleted, folded (all of
them, or a group of one chunk: only that chunk's rows are read again), the index rebuilt. After each
change, every query's `postings_of` equals the arrays read without the kept rows, and `best_scores`
equals `heapq.nlargest` over `_Scoring` of every card (the same documents, floats and order), on the
same connection and on a new one. Rows are small here (16 docids a chunk), so a vault of a few
hundred cards has many. A real `brain serve` finds, as a create's candidates, a card folded by its
own upkeep and one another process's `reindex` indexed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from external_brain.search import build, keyword
from external_brain.search import index as index_module
from external_brain.search.analysis import card_fields, tokens
from external_brain.search.index import Index
from external_brain.vault.storage import Vault
from test_best_scores import COMMON, RARE, full_tops, make_cards


def queries(rng: random.Random) -> list[list[str]]:
    out = []
    for _ in range(12):
        words = [rng.choice(COMMON if rng.random() < 0.6 else RARE) for _ in range(rng.randint(1, 6))]
        out.append(tokens(" ".join(words), drop_stop_words=True))
    return out


def unkept_postings(index: Index, terms: list[str], monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as patch:
        patch.setattr(index_module, "_KEEPING", False)
        return index.postings_of(terms)


def check(index: Index, asked: list[list[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    for terms in asked:
        kept = index.postings_of(terms)
        plain = unkept_postings(index, terms, monkeypatch)
        assert kept.keys() == plain.keys()
        for term, postings in kept.items():
            assert postings.merged() == plain[term].merged(), term
            assert postings.distinct is None or postings.distinct == set(postings.merged()[1]), term
        for n, full in full_tops(index, terms, (1, 5, 30)).items():
            assert keyword.best_scores(index, terms, n) == full, (terms, n)


def test_kept_rows_give_what_reading_them_again_gives_after_every_change(vault: Path, monkeypatch) -> None:
    monkeypatch.setattr(build, "CHUNK_BITS", 4)   # 16 docids a row: a fold of one chunk leaves the others
    rng = random.Random(38)
    playbooks = vault / "Playbooks"
    make_cards(rng, 0, 240, playbooks)
    Index.open(Vault(vault), card_fields).close()   # built; the kept rows are turned on after it
    monkeypatch.setattr(index_module, "_KEPT_POSTINGS", index_module._KeptPostings())
    monkeypatch.setattr(index_module, "_KEEPING", True)
    reads: list[str] = []
    read = index_module._KeptPostings._read
    monkeypatch.setattr(index_module._KeptPostings, "_read",
                        staticmethod(lambda db, where, params, into: (reads.append(where), read(db, where, params, into))))
    asked = queries(rng)
    index = Index.existing(Vault(vault), card_fields)
    try:
        check(index, asked, monkeypatch)
        assert reads and index_module._KEPT_POSTINGS._terms
        before = len(reads)
        check(index, asked, monkeypatch)
        assert len(reads) == before   # nothing changed: every row served as kept
        number = 240
        for step in range(14):
            kind = ("create", "edit", "fold group", "delete", "fold", "edit", "rebuild")[step % 7]
            if kind == "create":
                make_cards(rng, number, 12, playbooks)
                number += 12
                index.refreshed()
            elif kind == "edit":
                names = rng.sample(sorted(path.name for path in playbooks.glob("Pattern_card_*.md")), 8)
                for name in names:
                    path = playbooks / name
                    path.write_text(path.read_text(encoding="utf-8").replace("# ", f"# queue {rng.choice(RARE)} ", 1),
                                    encoding="utf-8")
                index.update([f"Playbooks/{name}" for name in names])
            elif kind == "delete":
                for name in rng.sample(sorted(path.name for path in playbooks.glob("Pattern_card_*.md")), 6):
                    (playbooks / name).unlink()
                index.refreshed()
            elif kind == "fold":
                assert index.fold_waiting(None) == 0
            elif kind == "fold group":
                waiting = index.db.execute("SELECT count(*) FROM stale").fetchone()[0]
                assert waiting > 4, waiting
                assert index.fold_waiting(4) == waiting - 4
            else:
                index.close()
                index_module.rebuild(Vault(vault), card_fields, workers=1)
                index = Index.existing(Vault(vault), card_fields)
            check(index, asked, monkeypatch)
            other = Index.existing(Vault(vault), card_fields)   # a create's own connection
            try:
                check(other, queries(rng), monkeypatch)
            finally:
                other.close()
        # A fold of a group re-read only the chunks it wrote, not every row of the terms.
        assert any("chunk IN" in where for where in reads)
    finally:
        index.close()


def test_rows_are_not_kept_outside_a_server_or_from_a_transaction_that_may_roll_back(vault: Path, monkeypatch) -> None:
    rng = random.Random(39)
    make_cards(rng, 0, 60, vault / "Playbooks")
    Index.open(Vault(vault), card_fields).close()
    monkeypatch.setattr(index_module, "_KEPT_POSTINGS", index_module._KeptPostings())
    index = Index.existing(Vault(vault), card_fields)
    try:
        index.postings_of(["deploy", "cache"])   # a CLI process (no `keep_connections`)
        assert not index_module._KEPT_POSTINGS._terms
        monkeypatch.setattr(index_module, "_KEEPING", True)
        index.db.execute("BEGIN IMMEDIATE")
        try:
            index.postings_of(["deploy", "cache"])
            assert not index_module._KEPT_POSTINGS._terms
        finally:
            index.db.execute("ROLLBACK")
        index.postings_of(["deploy", "cache"])
        assert set(index_module._KEPT_POSTINGS._terms) == {"deploy", "cache"}
    finally:
        index.close()


def test_kept_rows_are_bounded(vault: Path, monkeypatch) -> None:
    rng = random.Random(40)
    make_cards(rng, 0, 120, vault / "Playbooks")
    Index.open(Vault(vault), card_fields).close()
    kept = index_module._KeptPostings()
    monkeypatch.setattr(index_module, "_KEPT_POSTINGS", kept)
    monkeypatch.setattr(index_module, "_KEEPING", True)
    index = Index.existing(Vault(vault), card_fields)
    try:
        index.postings_of(COMMON + RARE)
        whole = kept._size
        assert whole == sum(entry.size for entry in kept._terms.values()) > 0
        monkeypatch.setattr(index_module, "KEPT_POSTINGS_BYTES", whole // 2)
        index.postings_of(["zorax"])
        assert 0 < kept._size <= whole // 2
        assert "zorax" in kept._terms   # the one used last stays
    finally:
        index.close()


def test_a_change_counted_by_an_earlier_version_is_seen(vault: Path, monkeypatch) -> None:
    """A process of an earlier version (same index schema) changes `postings` and moves only
    'postings_moved': the rows kept before are not served, then or after a later fold of this
    version in another chunk."""
    monkeypatch.setattr(build, "CHUNK_BITS", 4)
    rng = random.Random(41)
    playbooks = vault / "Playbooks"
    make_cards(rng, 0, 80, playbooks)
    Index.open(Vault(vault), card_fields).close()
    monkeypatch.setattr(index_module, "_KEPT_POSTINGS", index_module._KeptPostings())
    monkeypatch.setattr(index_module, "_KEEPING", True)
    index = Index.existing(Vault(vault), card_fields)
    try:
        index.postings_of(COMMON)
        assert set(index_module._KEPT_POSTINGS._terms) == set(COMMON)
        # The earlier version's change: the first card left out of a term's first row.
        term = max(COMMON, key=lambda word: len(index.postings(word)))
        chunk, ids, packed = index.db.execute("SELECT chunk, docids, codes FROM postings WHERE term = ? "
                                              "ORDER BY chunk LIMIT 1", (term,)).fetchone()
        index.db.execute("BEGIN IMMEDIATE")
        index.db.execute("UPDATE postings SET docids = ?, codes = ? WHERE term = ? AND chunk = ?",
                         (ids[4:], packed[8:], term, chunk))
        index.db.execute("UPDATE info SET value = value + 1 WHERE key = 'postings_moved'")
        index.db.execute("COMMIT")
        check(index, [[term], COMMON], monkeypatch)
        # This version's next change, a fold of a new card (the last chunk only).
        make_cards(rng, 80, 1, playbooks)
        index.refreshed()
        assert index.fold_waiting(None) == 0
        check(index, [[term], COMMON], monkeypatch)
        assert index.postings_of([term])[term].docids == unkept_postings(index, [term], monkeypatch)[term].docids
    finally:
        index.close()


def test_a_servers_candidates_follow_its_own_folds_and_another_processs_reindex(vault: Path) -> None:
    """A real `brain serve` (whose worker keeps rows): the card its previous create made, folded
    since by its upkeep into `postings`, is among the next create's potential duplicates; so is a
    card another process wrote and indexed with `reindex`."""
    import os
    import signal
    import sqlite3

    from helpers import ok_data, subprocess_cli, write_card
    from test_server_throughput import post_memory, start_server, wait_until

    ok_data("create", "--type", "insight", "--domain", "infra", "--title", "Harbor crane hydraulic leaks",
            "--body", "Harbor crane hydraulic leaks show as oil under the cab.")
    process, port = start_server(vault, workers=1)

    def waiting() -> int:
        with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite", timeout=60) as db:
            return db.execute("SELECT count(*) FROM stale").fetchone()[0]

    def duplicates(content: str) -> set[str]:
        insights = post_memory(port, content)["insights"]
        return {found["title"] for found in insights["potential_duplicates"] + insights["suggested_links"]}

    try:
        first = duplicates("Harbor crane hydraulic leaks show as oil under the cab, again.")
        assert "Harbor crane hydraulic leaks" in first, first
        wait_until(lambda: waiting() == 0, "the server's upkeep to fold its card", 60)
        second = duplicates("Harbor crane hydraulic leaks show as oil under the cab, once more.")
        assert any(title.endswith("again.") for title in second), second
        write_card(vault, "Playbooks/Insight_Harbor_crane_cab_oil.md",
                   "---\ntitle: Harbor crane cab oil\ntype: insight\ndomain: infra\n---\n"
                   "# Harbor crane cab oil\n\nHydraulic oil under the harbor crane cab means a leak.\n")
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        third = duplicates("Harbor crane cab oil: hydraulic oil under the harbor crane cab means a leak.")
        assert "Harbor crane cab oil" in third, third
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(60)
    errors = "".join(path.read_text() for path in vault.parent.glob("serve-*.err"))
    assert "Traceback" not in errors, errors
