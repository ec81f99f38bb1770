"""What a serving process keeps of the waiting cards' `fresh` rows (decision 0038, "A create's
candidate search: the kept rows shared, the waiting rows parsed from where the last read ended"):
`index._waiting_postings` keeps, per term, the `group_concat` texts it last parsed and what they
gave, and parses only the numbers after them when the new texts extend them; and a kept term's
joined arrays (`_KeptTerm.docids`/`codes`) are handed to every query as they are, the waiting
cards left apart (`Postings.more`). Neither may ever give what a fresh read would not: after
another process's create (the texts grow), its edit of a waiting card (they change in the middle),
a fold and a rebuild, every query's kept `postings_of` equals the arrays read without anything
kept, and `best_scores` equals scoring every card."""

from __future__ import annotations

import heapq
import json
import random
from operator import itemgetter
from pathlib import Path

from external_brain.search import keyword
from external_brain.search import index as index_module
from external_brain.search.analysis import card_fields, tokens
from external_brain.search.index import Index
from external_brain.vault.storage import Vault
from helpers import subprocess_cli
from test_best_scores import COMMON, RARE, make_cards


def whole(ids: str, codes: str) -> tuple[list[int], list[int], frozenset[int]]:
    docids, codes_read = index_module._ascending(json.loads(f"[{ids}]"), json.loads(f"[{codes}]"))
    return docids, codes_read, frozenset(codes_read)


def test_waiting_rows_parsed_after_the_last_texts_equal_the_whole_texts_parsed(monkeypatch) -> None:
    monkeypatch.setattr(index_module, "_WAITING_READ", {})
    steps = [
        ("5,9,12", "7,7,40"),
        ("5,9,12", "7,7,40"),               # the same texts
        ("5,9,12,30,31", "7,7,40,8,9"),     # grown: cards created since
        ("5,9,12,30,314", "7,7,40,8,91"),   # not grown after a comma: the last numbers longer
        ("5,9,12,30,314", "7,7,40,8,92"),   # the same docids, a code changed (an edit of a waiting card)
        ("5,9,12,30,314,400", "7,7,41,8,92,5"),   # a card more, and another's code changed
        ("5,9,12,30,314,400", "7,7,41,8,92,5"),
        ("9,12,30,314,400", "7,40,8,91,5"),  # a fold took the first card
        ("9,12,30,314,400,2", "7,40,8,91,5,6"),   # grown, but a docid below the others: sorted
        ("9,12,30,314,400,2,401", "7,40,8,91,5,6,6"),
        ("9,12,30,314,400,2,401,402", "7,40,8,91,5,6,6"),   # the docids grew, the codes did not
        ("9,12,30,314,400", "7,40,8,91,5"),
        ("9,12,30,314,400,500,450", "7,40,8,91,5,3,4"),   # grown past the end, but not ascending
        ("9,12,30,314,400,500,450,501,502", "7,40,8,91,5,3,4,2,2"),   # grown ascending past the end
    ]
    for ids, codes in steps:
        got = index_module._waiting_postings("bench", ids, codes)
        assert got == whole(ids, codes), (ids, codes)
        assert got[0] == sorted(got[0])
    # Another term's texts are its own.
    assert index_module._waiting_postings("note", "5,9", "1,2") == whole("5,9", "1,2")
    assert index_module._waiting_postings("bench", "5,9", "1,3") == whole("5,9", "1,3")


def check(index: Index, asked: list[list[str]], monkeypatch) -> None:
    for terms in asked:
        kept = index.postings_of(terms)
        with monkeypatch.context() as patch:
            patch.setattr(index_module, "_KEEPING", False)
            plain = index.postings_of(terms)
        assert kept.keys() == plain.keys()
        for term, postings in kept.items():
            assert postings.merged() == plain[term].merged(), term
            assert postings.distinct is None or postings.distinct == set(postings.merged()[1]), term
        for n in (1, 5, 30):
            full = heapq.nlargest(n, keyword._Scoring(index, terms).scores.items(), key=itemgetter(1))
            assert keyword.best_scores(index, terms, n) == full, (terms, n)


def test_kept_waiting_rows_follow_another_processs_creates_edits_folds_and_rebuilds(vault: Path, monkeypatch) -> None:
    rng = random.Random(41)
    playbooks = vault / "Playbooks"
    make_cards(rng, 0, 120, playbooks)
    assert subprocess_cli("reindex", vault=vault).returncode == 0   # every card folded into `postings`
    monkeypatch.setattr(index_module, "_KEPT_POSTINGS", index_module._KeptPostings())
    monkeypatch.setattr(index_module, "_WAITING_READ", {})
    monkeypatch.setattr(index_module, "_KEEPING", True)
    parsed: list[int] = []   # how many numbers each parse of waiting rows read
    loads = json.loads

    class Counting:
        @staticmethod
        def loads(text: str):
            out = loads(text)
            parsed.append(len(out))
            return out

    monkeypatch.setattr(index_module, "json", Counting)
    asked = [tokens(" ".join(rng.choice(COMMON if rng.random() < 0.7 else RARE) for _ in range(rng.randint(2, 6))),
                    drop_stop_words=True) for _ in range(10)] + [["deploy", "cache", "queue"], ["mulax", "solum", "deploy"]]

    def create(number: int) -> Path:
        body = " ".join(rng.choice(COMMON) for _ in range(12))
        made = subprocess_cli("create", "--type", "pattern", "--domain", "dev", "--title", f"Deploy cache {number}",
                              "--body", f"Deploy cache mulax {body}.", "--tags", "deploy", vault=vault)
        assert made.returncode == 0, made.stderr
        return next(path for path in playbooks.glob("*.md") if f"cache {number}" in path.read_text(encoding="utf-8"))

    index = Index.existing(Vault(vault), card_fields)
    try:
        made = [create(0), create(1)]   # waiting in `fresh` before the first read
        check(index, asked, monkeypatch)
        for number in range(2, 5):
            made.append(create(number))   # another process's create: every common term's texts grow
            parsed.clear()
            check(index, asked, monkeypatch)
            waiting = index.db.execute("SELECT count(*) FROM fresh WHERE term = 'deploy'").fetchone()[0]
            assert waiting == number + 1 and 1 in parsed   # a kept read parsed only the new card's number
        # Another process edits a waiting card (not the newest): its rows change in the middle of
        # the texts; its `search` indexes the edit.
        edited = made[1]
        edited.write_text(edited.read_text(encoding="utf-8").replace("Deploy cache mulax", "Deploy solum timeout"),
                          encoding="utf-8")
        assert subprocess_cli("search", "timeout", vault=vault).returncode == 0
        with monkeypatch.context() as patch:
            patch.setattr(index_module, "_KEEPING", False)
            held = {term: set(index.paths(postings.merged()[0]).values())
                    for term, postings in index.postings_of(["mulax", "solum"]).items()}
        assert f"Playbooks/{edited.name}" in held["solum"] and f"Playbooks/{edited.name}" not in held["mulax"]
        check(index, asked, monkeypatch)
        index.fold_waiting(2)   # a fold of some of them
        check(index, asked, monkeypatch)
        made.append(create(5))
        check(index, asked, monkeypatch)
        index.close()
        assert subprocess_cli("reindex", vault=vault).returncode == 0   # a rebuild by another process
        made.append(create(6))
        index = Index.existing(Vault(vault), card_fields)
        check(index, asked, monkeypatch)
        assert index_module._KEPT_POSTINGS._terms and index_module._WAITING_READ
    finally:
        index.close()
