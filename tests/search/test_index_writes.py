"""How the index stays equal to a rebuild while it is changed piece by piece: postings packed
per (term, chunk of docids) and edited in place, folder listings compared with the stored ones,
and write-through from `create` and `record` (index.py's docstring and `Index.wrote`)."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import sqlite3
import time
import unicodedata
from array import array
from pathlib import Path

import pytest

from external_brain.search import build as build_module
from external_brain.search import refresh as refresh_module
from external_brain.search.index import Index, rebuild
from external_brain.search.analysis import card_fields
from external_brain.vault.storage import (MAX_NAME_BYTES, Vault, card_filename, fit_name, name_key,
                                          numbered_forms_start, unique_path)
from helpers import ok_data
from test_index_freshness import found, make_cards, save_by_rename, save_in_place, set_sweep

INDEX = Path(".brain/cache/index.sqlite")
WORDS = "amber basalt cobalt dune ember fjord glacier harbor iris jasper kelp lagoon".split()


def write_card(path: Path, title: str, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {title}\ntype: pattern\ndomain: dev\ntags: [t{len(title) % 3}]\n---\n"
                    f"# {title}\n\n{body}\n", encoding="utf-8")


def snapshot(vault: Vault) -> tuple[dict[str, dict[str, int]], int, tuple[float, ...]]:
    """Every term's postings as {path: code}, the document count and average field lengths,
    after checking every posting row holds sorted docids of its own chunk."""
    index = Index.open(vault, card_fields, sweep=0)
    try:
        paths = {docid: f"{folder}/{name}" for docid, folder, name in
                 index.db.execute("SELECT docid, folder, name FROM docs WHERE problem IS NULL")}
        for chunk, packed in index.db.execute("SELECT chunk, docids FROM postings"):
            docids = array("I", packed)
            assert list(docids) == sorted(set(docids)) and docids
            assert {docid >> build_module.CHUNK_BITS for docid in docids} == {chunk}
        terms = {}
        for (term,) in index.db.execute("SELECT term FROM postings UNION SELECT term FROM fresh"):
            postings = index.postings(term)
            if postings:  # a term only cards in `stale` had: none, as far as readers go
                terms[term] = {paths[docid]: code for docid, code in zip(postings.docids, postings.codes)}
        # The tag list the triggers keep (`store._TRIGGERS`) is `card_tags`' tags and counts.
        assert index.db.execute("SELECT tag, cards FROM tags ORDER BY tag").fetchall() == \
            index.db.execute("SELECT tag, count(*) FROM card_tags GROUP BY tag ORDER BY tag").fetchall()
        stats = index.stats()
        return terms, stats.doc_count, tuple(round(n, 9) for n in stats.avg_lengths)
    finally:
        index.close()


# (cards indexed at once that go to `fresh`, cards in `stale` past which it is folded): as
# shipped; folded after nearly every change; and batches of more than one card edited in
# `postings` itself, after a fold.
@pytest.mark.parametrize("delta_batch, delta_cards", [(build_module.DELTA_BATCH, build_module.DELTA_CARDS),
                                                      (64, 1), (1, 256)])
def test_an_index_changed_piece_by_piece_equals_a_rebuild(tmp_path: Path, monkeypatch, delta_batch: int,
                                                          delta_cards: int) -> None:
    # Two docids per posting row, so adds, edits and deletes cross many rows.
    monkeypatch.setattr(build_module, "CHUNK_BITS", 1)
    monkeypatch.setattr(build_module, "DELTA_BATCH", delta_batch)
    monkeypatch.setattr(build_module, "DELTA_CARDS", delta_cards)
    rng = random.Random(7)
    vault = Vault(tmp_path / "incremental")
    folders = ["Playbooks", "Playbooks/team", "Playbooks/team/deep"]
    live: list[Path] = []
    for n in range(14):
        live.append(vault.root / rng.choice(folders) / f"Card_{n}.md")
        write_card(live[-1], f"Card {WORDS[n % 12]} {n}", " ".join(rng.choices(WORDS, k=rng.randint(3, 30))))
    snapshot(vault)
    for round_ in range(6):
        for _ in range(5):
            action = rng.choice(["add", "edit in place", "edit by rename", "delete", "rename"])
            if action == "add" or not live:
                live.append(vault.root / rng.choice(folders) / f"New_{round_}_{len(live)}.md")
                write_card(live[-1], f"New {rng.choice(WORDS)}", " ".join(rng.choices(WORDS, k=9)))
            elif action == "delete":
                live.pop(rng.randrange(len(live))).unlink()
            elif action == "rename":
                at = rng.randrange(len(live))
                target = vault.root / rng.choice(folders) / f"Moved_{round_}_{at}.md"
                if not target.exists():
                    os.replace(live[at], target)
                    live[at] = target
            else:
                path = rng.choice(live)
                text = path.read_text(encoding="utf-8") + " ".join(rng.choices(WORDS, k=rng.randint(1, 40)))
                if action == "edit in place":
                    path.write_text(text, encoding="utf-8")
                else:
                    path.with_name(".tmp").write_text(text, encoding="utf-8")
                    os.replace(path.with_name(".tmp"), path)
        incremental = snapshot(vault)
        fresh = Vault(tmp_path / f"fresh{round_}")
        shutil.copytree(vault.root / "Playbooks", fresh.root / "Playbooks")
        rebuild(fresh, card_fields)
        assert incremental == snapshot(fresh), f"round {round_}"
        assert incremental[1] == len(live)


def folder_stamp(vault: Path, folder: str = "Playbooks") -> int:
    with sqlite3.connect(vault / INDEX) as db:
        return db.execute("SELECT mtime_ns FROM folders WHERE path = ?", (folder,)).fetchone()[0]


def indexed_stamp(vault: Path, rel: str) -> tuple[int, int, int]:
    folder, _, name = rel.rpartition("/")
    with sqlite3.connect(vault / INDEX) as db:
        return db.execute("SELECT size, mtime_ns, inode FROM docs WHERE folder = ? AND name = ?",
                          (folder, name)).fetchone()


def test_create_indexes_its_card_and_moves_the_folder_stamp_past_its_own_write(vault: Path) -> None:
    make_cards(3)
    rel = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Written through",
                  "--body", "The quasar note.")["path"]
    assert folder_stamp(vault) == (vault / "Playbooks").stat().st_mtime_ns
    stat = (vault / rel).stat()
    assert indexed_stamp(vault, rel) == (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    assert found("quasar") == [rel]


def test_record_restamps_a_card_the_index_held_as_it_was(vault: Path) -> None:
    paths = make_cards(3)
    found("widget")
    ok_data("record", paths[1], "used")
    stat = (vault / paths[1]).stat()
    assert indexed_stamp(vault, paths[1]) == (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    assert folder_stamp(vault) == (vault / "Playbooks").stat().st_mtime_ns
    assert found("bravo") == [paths[1]]


def test_record_stats_its_card_once_as_the_index_takes_it(vault: Path, monkeypatch) -> None:
    # The pass-on (`passed_on`) takes the stamp it stores and the ctime it stores from one `stat` of the card
    # (there was a second one after the read-back, under the write lock), and they agree.
    import external_brain.search.index as index_module

    paths = make_cards(3)
    found("widget")
    stats: list[str] = []
    real_stat = os.stat

    def counted(path, *args, **kwargs):
        if str(path).endswith(paths[1]):
            stats.append(str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(index_module.os, "stat", counted)
    real_passed_on = Index.passed_on

    def passed_on(self, *args, **kwargs):
        stats.clear()   # the `stamps` taken before and after the write are not this step's
        return real_passed_on(self, *args, **kwargs)

    monkeypatch.setattr(Index, "passed_on", passed_on)
    ok_data("record", paths[1], "used")
    assert len(stats) == 1
    stat = (vault / paths[1]).stat()
    assert indexed_stamp(vault, paths[1]) == (stat.st_size, stat.st_mtime_ns, stat.st_ino)
    db = sqlite3.connect(vault / INDEX)
    try:
        (meta,) = db.execute("SELECT meta FROM doc_data JOIN docs USING (docid) WHERE name = ?",
                             (paths[1].rpartition("/")[2],)).fetchone()
    finally:
        db.close()
    assert json.loads(meta)["ctime_ns"] == stat.st_ctime_ns
    assert found("bravo") == [paths[1]]


def test_record_reindexes_a_card_edited_since_the_index_read_it(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 1)
    found("widget")  # index everything, start the sweep
    save_in_place(vault, paths[3], "shared widget", "shared zeppelin")  # unseen by the index
    ok_data("record", paths[3], "used")
    # Had record only restamped the card, the index would hold the old text as current.
    assert found("zeppelin") == [paths[3]]


def test_record_leaves_a_vault_without_an_index_without_one(vault: Path) -> None:
    paths = make_cards(2)
    shutil.rmtree(vault / ".brain" / "cache")
    ok_data("record", paths[0], "used")
    assert not (vault / INDEX).exists()
    assert found("alpha") == [paths[0]]


def test_a_card_added_in_the_instant_of_our_own_write_is_found_when_the_sweep_wraps(vault: Path) -> None:
    paths = make_cards(4)
    set_sweep(vault, 1)
    found("widget")
    local = Vault(vault)
    index = Index.existing(local, card_fields)
    before = index.stamps(paths[0])
    write_card(vault / "Playbooks" / "Foreign.md", "Foreign note", "A stray platypus.")  # another program
    save_by_rename(vault, paths[0], "shared widget", "shared gadget")                   # our own write
    index.wrote(paths[0], before, index.stamps(paths[0]))
    index.close()
    assert folder_stamp(vault) == (vault / "Playbooks").stat().st_mtime_ns  # mtime shows nothing new
    bound = math.ceil(4 / 1)  # four cards indexed, one checked per search
    searches = 1
    while found("platypus") != ["Playbooks/Foreign.md"]:
        searches += 1
        assert searches <= bound, f"not found within {bound} searches"


def test_a_card_renamed_by_hand_is_found_under_its_new_name(vault: Path) -> None:
    paths = make_cards(4)
    set_sweep(vault, 1)
    found("widget")
    os.replace(vault / paths[2], vault / "Playbooks" / "Renamed.md")
    assert found("charlie") == ["Playbooks/Renamed.md"]
    assert sorted(found("widget")) == sorted([*paths[:2], paths[3], "Playbooks/Renamed.md"])


def test_a_folder_replaced_by_another_directory_is_read_again(vault: Path) -> None:
    make_cards(1)
    team = vault / "Playbooks" / "team"
    write_card(team / "Old.md", "Old note", "About the walrus.")
    assert found("walrus") == ["Playbooks/team/Old.md"]
    other = vault / "other"
    write_card(other / "New.md", "New note", "About the narwhal.")
    shutil.rmtree(team)
    os.replace(other, team)
    assert found("walrus") == []
    assert found("narwhal") == ["Playbooks/team/New.md"]


@pytest.mark.parametrize("name", ["Tab\tname.md", "Ünïcode 名前.md"])
def test_unusual_file_names_survive_the_stored_listing(vault: Path, name: str) -> None:
    make_cards(1)
    found("widget")
    write_card(vault / "Playbooks" / name, "Odd name", "The ocelot.")
    assert found("ocelot") == [f"Playbooks/{name}"]
    save_by_rename(vault, f"Playbooks/{name}", "ocelot", "jaguarundi")
    assert found("jaguarundi") == [f"Playbooks/{name}"]


@pytest.mark.parametrize("changes", [0, 1, 2, 63, 64, 65, 500])
def test_differing_finds_every_changed_position(changes: int) -> None:
    rng = random.Random(changes)
    old = array("Q", rng.sample(range(10**12), 5000))
    new = array("Q", old)
    positions = sorted(rng.sample(range(5000), changes))
    for at in positions:
        new[at] += 1
    assert refresh_module._differing(new, old) == positions


def test_a_card_moved_away_and_back_while_it_is_read_is_not_lost(vault: Path) -> None:
    paths = make_cards(3)
    found("widget")
    card, aside = vault / paths[1], vault / "aside.md"
    save_by_rename(vault, paths[1], "shared widget", "shared kiwi")
    read = refresh_module._Refresher._add

    def moved_away_first(self, rel, docid):
        if rel == paths[1] and card.exists():
            os.replace(card, aside)  # gone between the listing and the read
        return read(self, rel, docid)

    refresh_module._Refresher._add = moved_away_first
    try:
        assert found("kiwi") == []
    finally:
        refresh_module._Refresher._add = read
    os.replace(aside, card)  # back under its name, with the inode the stored listing saw
    assert found("kiwi") == [paths[1]]


def test_a_file_name_that_is_not_utf8_is_left_out_not_fatal(vault: Path) -> None:
    paths = make_cards(2)
    found("widget")
    with open(os.path.join(os.fsencode(vault / "Playbooks"), b"bad\xff.md"), "w") as handle:
        handle.write("---\ntitle: Bad name\n---\nA lost lemur.\n")
    assert sorted(found("widget")) == sorted(paths)
    assert found("lemur") == []


def read_by_next_search(monkeypatch, query: str) -> tuple[list[str], list[str]]:
    """The hits of the next search, and the card files the index read to answer it."""
    read = []
    real = build_module.load_card

    def spy(vault, path):
        read.append(vault.rel(path))
        return real(vault, path)

    with monkeypatch.context() as patched:
        patched.setattr(build_module, "load_card", spy)
        hits = found(query)
    return hits, read


def test_the_read_spy_sees_a_card_the_next_search_reads_again(vault: Path, monkeypatch) -> None:
    # The tests below show that a write leaves nothing for the next search to read; this one
    # shows that their spy would see it if it did (a hand edit is read again).
    paths = make_cards(3)
    found("widget")
    (vault / paths[2]).write_text((vault / paths[2]).read_text(encoding="utf-8") + "\nA narwhal.\n",
                                  encoding="utf-8")
    hits, read = read_by_next_search(monkeypatch, "narwhal")
    assert hits == [paths[2]] and read == [paths[2]]


def assert_written_through(vault: Path, rels: list[str]) -> None:
    """The index holds each file as it is now (or not at all when it is gone), and the folder's
    stamp moved past the write, so the next search does not list the folder again."""
    assert folder_stamp(vault) == (vault / "Playbooks").stat().st_mtime_ns
    for rel in rels:
        if (vault / rel).exists():
            stat = (vault / rel).stat()
            assert indexed_stamp(vault, rel) == (stat.st_size, stat.st_mtime_ns, stat.st_ino), rel
        else:
            assert indexed_stamp(vault, rel) is None, rel


def test_update_passes_its_card_to_the_index(vault: Path, monkeypatch) -> None:
    paths = make_cards(4)
    found("widget")
    ok_data("update", paths[1], "--append", "A quokka appears.")
    assert_written_through(vault, [paths[1]])
    hits, read = read_by_next_search(monkeypatch, "quokka")
    assert hits == [paths[1]]
    assert set(read) <= {paths[1]}  # the other cards are not read again


def test_an_update_that_renames_passes_both_names_to_the_index(vault: Path, monkeypatch) -> None:
    paths = make_cards(3)
    found("widget")
    new = ok_data("update", paths[0], "--title", "Card renamed walrus")["path"]
    assert_written_through(vault, [paths[0], new])
    hits, read = read_by_next_search(monkeypatch, "walrus")
    assert hits == [new] and set(read) <= {new}


def test_link_unlink_and_delete_pass_their_cards_to_the_index(vault: Path, monkeypatch) -> None:
    paths = make_cards(4)
    found("widget")
    ok_data("link", paths[0], paths[1], "--rel", "extends")
    assert_written_through(vault, [paths[0], paths[1]])
    ok_data("link", paths[2], paths[1], "--rel", "related")
    ok_data("unlink", paths[0], paths[1])
    assert_written_through(vault, [paths[0]])
    ok_data("delete", paths[1])  # and its cascade: paths[2] loses its link
    assert_written_through(vault, [paths[1], paths[2]])
    hits, read = read_by_next_search(monkeypatch, "widget")
    assert sorted(hits) == sorted([paths[0], paths[2], paths[3]])
    assert set(read) <= {paths[2]}
    assert ok_data("links", paths[2])["outgoing"] == []


def test_undo_passes_what_it_restores_to_the_index(vault: Path, monkeypatch) -> None:
    paths = make_cards(4)
    ok_data("link", paths[2], paths[1], "--rel", "related")
    deleted = ok_data("delete", paths[1])   # and its cascade: paths[2] loses its link
    found("widget")
    ok_data("undo", deleted["event"])
    assert_written_through(vault, [paths[1], paths[2]])
    hits, read = read_by_next_search(monkeypatch, "widget")
    assert sorted(hits) == sorted(paths)
    assert set(read) <= {paths[1], paths[2]}


def stored_rows(vault: Path) -> dict[str, tuple]:
    """Every row the index stores of each card besides its postings, by path, without docids."""
    rows: dict[str, tuple] = {}
    with sqlite3.connect(vault / INDEX) as db:
        for docid, folder, name, size, mtime, inode in db.execute(
                "SELECT docid, folder, name, size, mtime_ns, inode FROM docs WHERE problem IS NULL"):
            one = lambda sql: db.execute(sql, (docid,)).fetchall()  # noqa: E731
            rows[f"{folder}/{name}"] = (
                (size, mtime, inode),
                one("SELECT lengths, meta, terms FROM doc_data WHERE docid = ?"),
                one("SELECT id, stem, title FROM card_keys WHERE docid = ?"),
                one("SELECT target_id, target_name, rel, weight, reason, version, created, updated FROM links "
                    "WHERE source = ? ORDER BY rowid"),
                [row[1:] for row in one("SELECT * FROM facets WHERE docid = ?")],
                one("SELECT tag FROM card_tags WHERE docid = ? ORDER BY tag"))
    return rows


def test_writes_that_change_no_term_leave_an_index_equal_to_a_rebuild(vault: Path, monkeypatch) -> None:
    # link, unlink, record, a status change, a delete's cascade and their undos change fields no
    # posting holds: the index keeps its postings and restamps the rest (`Index.wrote_files`).
    paths = make_cards(4)
    found("widget")
    edits = []
    with monkeypatch.context() as patched:
        for kind in (build_module._PostingEdits, build_module._DeltaEdits):
            patched.setattr(kind, "drop", lambda self, docid, terms: edits.append(docid))
            patched.setattr(kind, "add", lambda self, docid, codes: edits.append(docid))
        ok_data("link", paths[0], paths[1], "--rel", "extends", "--reason", "the widget")
        ok_data("link", paths[2], paths[1], "--rel", "related")
        ok_data("record", paths[0], "used")
        ok_data("update", paths[3], "--status", "archived")
        ok_data("undo", ok_data("unlink", paths[0], paths[1])["event"])
    assert edits == []  # not one posting row was read or written
    deleted = ok_data("delete", paths[1])["event"]  # the cascade rewrites paths[0] and [2]: their postings stand
    ok_data("undo", deleted)
    assert_written_through(vault, paths)
    incremental = snapshot(Vault(vault)), stored_rows(vault)
    incoming = ok_data("links", paths[1], "--direction", "in")["incoming"]
    assert sorted(link["path"] for link in incoming) == [paths[0], paths[2]]
    rebuild(Vault(vault), card_fields)  # the same files, so the same ctimes and stamps
    assert incremental == (snapshot(Vault(vault)), stored_rows(vault))


def test_a_link_to_a_card_edited_since_the_index_read_it_indexes_the_edit(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 1)
    found("widget")  # index everything, start the sweep
    save_in_place(vault, paths[3], "shared widget", "shared zeppelin")  # unseen by the index
    ok_data("link", paths[3], paths[0], "--rel", "related")
    # Had the link only restamped the card, the index would hold the old text as current.
    assert found("zeppelin") == [paths[3]]


def posting_rows(vault: Path) -> list[tuple]:
    with sqlite3.connect(vault / INDEX) as db:
        return db.execute("SELECT * FROM postings ORDER BY term, chunk").fetchall()


def test_a_few_cards_written_wait_in_fresh_and_stale_until_the_fold(vault: Path, monkeypatch) -> None:
    # An update, a create and a delete leave the big `postings` table as it was (`_DeltaEdits`);
    # searches see the cards as they are now; the fold then moves them over, as a rebuild has them.
    paths = make_cards(5)
    ok_data("reindex")  # every card in `postings`
    before = posting_rows(vault)
    ok_data("update", paths[1], "--body", "Now about a quokka.")   # "widget" and "bravo" gone from its body
    ok_data("delete", paths[3])
    created = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Card quokka two",
                      "--body", "Another quokka and the shared widget.")["path"]
    assert posting_rows(vault) == before
    assert sorted(found("quokka")) == sorted([paths[1], created])
    assert sorted(found("widget")) == sorted([paths[0], paths[2], paths[4], created])
    assert found("delta") == []  # the deleted card's own word
    incremental = snapshot(Vault(vault))
    local = Vault(vault)
    index = Index.existing(local, card_fields)
    with index.db:
        index.db.execute("BEGIN IMMEDIATE")
        build_module.fold(index.db)
    index.close()
    assert posting_rows(vault) != before
    with sqlite3.connect(vault / INDEX) as db:
        assert db.execute("SELECT (SELECT count(*) FROM fresh) + (SELECT count(*) FROM stale)").fetchone() == (0,)
    assert snapshot(Vault(vault)) == incremental
    rebuild(Vault(vault), card_fields)
    assert snapshot(Vault(vault)) == incremental


def stale_docids(vault: Path) -> list[int]:
    with sqlite3.connect(vault / INDEX) as db:
        return [docid for (docid,) in db.execute("SELECT docid FROM stale ORDER BY docid")]


def test_a_write_past_the_delta_folds_only_as_many_cards_as_it_adds(vault: Path, monkeypatch) -> None:
    """Issue 22: the write that took `stale` past DELTA_CARDS folded every waiting card at once
    (0.2-0.4 s at 10,000 cards, one write in 64). Now each change folds the excess alone, lowest
    docids first, so a one-card write folds one card; readers and a rebuild see the same index."""
    monkeypatch.setattr(build_module, "DELTA_CARDS", 3)
    paths = make_cards(6)
    ok_data("reindex")
    assert stale_docids(vault) == []
    for n, path in enumerate(paths):
        ok_data("update", path, "--append", f"Quokka number {n}.")
        waiting = stale_docids(vault)
        assert len(waiting) == min(n + 1, 3), (n, waiting)
    with sqlite3.connect(vault / INDEX) as db:
        held = dict(db.execute("SELECT folder || '/' || name, docid FROM docs"))
        rows = db.execute("SELECT count(*) FROM postings").fetchone()[0]
    assert set(stale_docids(vault)) <= {held[path] for path in paths} and rows
    incremental = snapshot(Vault(vault))
    rebuild(Vault(vault), card_fields)
    assert snapshot(Vault(vault)) == incremental


def test_a_writes_fold_runs_after_the_write_lock_is_let_go(vault: Path, monkeypatch) -> None:
    """The fold a write calls for (~3-15 ms at 10,000 cards) ran under the vault's write lock,
    holding up every other writer for upkeep the write does not need: it now runs once the
    write is durable and the lock free (`Writer.afterwards`), and still keeps `stale` at
    DELTA_CARDS cards, the index equal to a rebuild."""
    import fcntl

    monkeypatch.setattr(build_module, "DELTA_CARDS", 3)
    paths = make_cards(6)
    ok_data("reindex")
    folds: list[bool] = []
    real_fold = build_module.fold

    def fold(db, at_least=1, cards=None):
        fd = os.open(vault / ".brain" / "locks" / "write.lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)   # fails while a writer holds the lock
            fcntl.flock(fd, fcntl.LOCK_UN)
            folds.append(True)
        except BlockingIOError:
            folds.append(False)
        finally:
            os.close(fd)
        return real_fold(db, at_least, cards)

    monkeypatch.setattr(build_module, "fold", fold)
    for n, path in enumerate(paths):
        ok_data("update", path, "--append", f"Numbat number {n}.")
        assert len(stale_docids(vault)) == min(n + 1, 3), n
    assert folds and all(folds), folds
    incremental = snapshot(Vault(vault))
    rebuild(Vault(vault), card_fields)
    assert snapshot(Vault(vault)) == incremental


def test_promote_passes_its_card_to_the_index(vault: Path, monkeypatch) -> None:
    # Every write goes through one commit (writes.commit_operation), promote's too: its new
    # card in Playbooks is in the index at once, and the folder is not listed again for it.
    make_cards(3)
    found("widget")
    made = ok_data("learn", "--title", "Pin the okapi version", "--type", "troubleshooting", "--domain", "dev",
                   "--problem", "CI broke on the okapi upgrade", "--solution", "pin okapi 2",
                   "--evidence", "session 1 line 4")
    promoted = ok_data("promote", made["path"])["path"]
    assert promoted.startswith("Playbooks/")
    assert_written_through(vault, [promoted])
    hits, read = read_by_next_search(monkeypatch, "okapi")
    assert hits == [promoted] and set(read) <= {promoted}


def test_a_create_that_supersedes_passes_both_cards_to_the_index(vault: Path, monkeypatch) -> None:
    make_cards(2)
    old = ok_data("create", "--type", "state", "--domain", "dev", "--title", "The staging DB is at version 14")
    found("widget")
    new = ok_data("create", "--type", "state", "--domain", "dev", "--title", "The staging DB is at version 15")
    assert [s["path"] for s in new["insights"]["supersedes"]] == [old["path"]]
    assert_written_through(vault, [old["path"], new["path"]])
    hits, read = read_by_next_search(monkeypatch, "staging")
    assert hits == [new["path"]] and set(read) <= {old["path"], new["path"]}   # a superseded card is not shown


def test_a_small_ingest_passes_its_cards_to_the_index(vault: Path, tmp_path: Path) -> None:
    paths = make_cards(2)
    found("widget")
    text = tmp_path / "input.txt"
    text.write_text("Postgres is a relational database. My name is Taro.", encoding="utf-8")
    assert ok_data("ingest", str(text))["created"] == 2
    written = sorted({f"Playbooks/{p.name}" for p in (vault / "Playbooks").glob("*.md")} - set(paths))
    assert len(written) == 2
    assert_written_through(vault, written)


def test_names_like_gives_exactly_the_names_a_case_blind_scan_of_the_folder_gives(vault):
    """`Index.names_like` (a create's names that may collide with its new file) reads the
    index's ranges of the spellings of a prefix instead of every name of the folder: the same
    names as SQLite's case-blind LIKE over the whole folder, for names that differ from the
    prefix in case anywhere, in a numbered form, past ASCII, or in a character LIKE would
    treat as a wildcard."""
    stems = ["Pattern_Retry_policy", "pattern_retry_POLICY_2", "PATTERN_RETRY_Policy_notes", "Pattern_Retry",
             "Pattern_Retr", "Pattern_RetryXpolicy", "Pattern_Retry%policy", "Pattern_Retry_pölicy",
             "Pattern_Rétry_policy", "Insight_Bench_note_1-7_a1b2", "insight_bench_NOTE_1-7_a1b2_x", "Insight_Bench",
             "Fact_東京", "Fact_東京_2", "Pattern_Retry_policy_with_a_long_tail_of_words_2", "Pattern_Retrö_policy",
             "pattern_retr\x7f_odd"]
    for stem in stems:
        write_card(vault / "Playbooks" / f"{stem}.md", stem.replace("_", " "), "Body.")
    write_card(vault / "Playbooks" / "sub" / "Pattern_Retry_policy.md", "Nested", "Body.")   # another folder
    ok_data("reindex")
    index = Index.existing(Vault(vault), card_fields)
    try:
        for filename in [f"{stem}.md" for stem in stems] + [
                "Pattern_Retry_policy_with_a_long_tail.md", "PATTERN_retry_policy.md", "Pattern_Rx.md",
                "Zebra_stripes_and_more_words_here.md", "東京.md", "P.md", "Insight_Bench_note_1-7_a1b2_more_words.md",
                "Pattern_Retr_abcdefghijk.md"]:
            stem = numbered_forms_start(filename)
            prefix = stem[: next((at for at, char in enumerate(stem) if not char.isascii()), len(stem))]
            pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            scanned = {name for (name,) in index.db.execute(
                "SELECT name FROM docs WHERE folder = ? AND name LIKE ? ESCAPE '\\'", ("Playbooks", pattern))}
            got = index.names_like("Playbooks", filename)
            assert sorted(got) == sorted(scanned), filename
            assert len(got) == len(set(got))
    finally:
        index.close()


def test_names_like_seeks_the_same_names_as_a_case_blind_scan_for_random_names(vault):
    """`Index.names_like` finds the names by seeks in the (folder, name) index, skipping past
    each name that no spelling of the prefix starts; for random names over letters in both
    cases, digits, `_`, `%`, `\\` and a letter past ASCII, it gives exactly the names SQLite's
    case-blind LIKE of the prefix takes over the whole folder, each once."""
    rng = random.Random(7)
    alphabet = "aAbB1_%\\é"
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(400)}
    names = {name for name in names if name.strip("._-") == name}   # names a card may have
    for at, stem in enumerate(sorted(names)):
        write_card(vault / "Playbooks" / f"{stem}.md", f"Card {at}", "Body.")
    ok_data("reindex")
    index = Index.existing(Vault(vault), card_fields)
    try:
        assert index.db.execute("SELECT count(*) FROM docs WHERE folder = 'Playbooks'").fetchone()[0] == len(names)
        for _ in range(300):
            filename = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 5))) + ".md"
            stem = numbered_forms_start(filename)
            prefix = stem[: next((at for at, char in enumerate(stem) if not char.isascii()), len(stem))]
            pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            scanned = sorted(name for (name,) in index.db.execute(
                "SELECT name FROM docs WHERE folder = ? AND name LIKE ? ESCAPE '\\'", ("Playbooks", pattern)))
            got = index.names_like("Playbooks", filename)
            assert sorted(got) == scanned, filename
    finally:
        index.close()


def test_names_like_offers_every_name_spelling_the_prefix_with_a_character_that_folds_to_it(vault):
    """A name that `name_key` takes for the prefix through `ß`, `ẞ`, `ſ`, `ﬁ` or `ﬅ` (APFS and
    Linux's case-folding directories fold fully) is offered, for random names over those and the
    letters they fold to: every name whose key starts with the prefix's key (decision 0028)."""
    from external_brain.vault.storage import name_key

    rng = random.Random(11)
    alphabet = "sSßẞſfFiIﬁtﬅa_"
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))) for _ in range(300)}
    names = {name for name in names if name.strip("._-") == name}
    for at, stem in enumerate(sorted(names)):
        write_card(vault / "Playbooks" / f"{stem}.md", f"Card {at}", "Body.")
    ok_data("reindex")
    index = Index.existing(Vault(vault), card_fields)
    try:
        listed = index.db.execute("SELECT name FROM docs WHERE folder = 'Playbooks'").fetchall()
        assert len(listed) == len(names)
        for _ in range(300):
            filename = "".join(rng.choice("sSfFiItTa_") for _ in range(rng.randint(1, 5))) + ".md"
            key = name_key(numbered_forms_start(filename))
            wanted = sorted(name for (name,) in listed if name_key(name).startswith(key))
            got = index.names_like("Playbooks", filename)
            assert sorted(set(got) & set(wanted)) == wanted, filename
            assert len(got) == len(set(got))
    finally:
        index.close()


def test_names_like_keeps_the_whole_stem_unless_a_numbered_form_is_cut_and_unique_path_agrees(vault):
    """`Index.names_like` takes names by the ASCII start of the whole stem when every numbered form
    of the file keeps it whole (`storage.numbered_forms_start`), so a bench's `Insight_Bench_note_3-12_...`
    does not read every `Insight_Bench_note_3-1...`; near the name limit, where `_2` cuts the stem,
    by what the longest number's cut leaves of it. Whatever it takes: a part of what the 12-character cut
    took, holding every name whose key (case, Unicode normalisation) is the file's or a numbered
    form's, and `unique_path` picks the same name from it as from a listing of the folder."""
    def numbered(filename: str, count: int) -> list[str]:   # the names `unique_path` tries, in order
        stem, _, ext = unicodedata.normalize("NFC", filename).rpartition(".")
        return [filename] + [f"{fit_name(stem, MAX_NAME_BYTES - len(f'_{n}') - len(ext) - 1)}_{n}.{ext}"
                             for n in range(2, count + 2)]

    bench = "Insight_Bench_note_3-12_abcd1234"
    cafe = "Insight_Café_au_lait"
    long_ascii = ("Insight_" + "long_words_" * 25)[: MAX_NAME_BYTES - len(".md")]   # the limit exactly
    near = ("Insight_" + "near_words_" * 25)[: MAX_NAME_BYTES - len(".md") - 11]    # `_2` fits, 11 digits would not
    long_mixed = "Fact_Tokyo_" + "東京" * 37                                     # 233 bytes: cut in its non-ASCII end
    names = [
        f"{bench}.md", f"{bench.upper()}_2.md", f"{bench.lower()}_3.md", f"{bench}_4_more.md", f"{bench}5.md",
        "Insight_Bench_note_3-1.md", "insight_bench_note_3-10_ffff0000.md", "Insight_Bench_note_3-12_abcd123.md",
        f"{cafe}.md", unicodedata.normalize("NFD", f"{cafe.upper()}_2.md"), "Insight_Cafe_au_lait.md", "Insight_Caf.md",
        f"{long_ascii}.md", f"{long_ascii[:-2].upper()}_2.md", f"{long_ascii[:-2].lower()}_3.md",
        f"{long_ascii[:-4]}.md", f"{long_ascii[:-12]}_x.md",
        f"{near}.md", f"{near.swapcase()}_2.md", f"{near[:-1]}.md",
        f"{long_mixed}.md", f"{long_mixed[:-1]}_2.md", f"{long_mixed.lower()[:-2]}_3.md", "fact_tokyo_東.md",
    ]
    for name in names:
        write_card(vault / "Playbooks" / name, name[:-3].replace("_", " "), "Body.")
    ok_data("reindex")
    on_disk = os.listdir(vault / "Playbooks")
    index = Index.existing(Vault(vault), card_fields)
    try:
        for filename in [f"{bench}.md", f"{bench.lower()}.md", f"{bench}_2.md", f"{cafe}.md",
                         unicodedata.normalize("NFD", f"{cafe}.md"), "Insight_CAFE_AU_LAIT.md", f"{long_ascii}.md",
                         f"{long_ascii.lower()}.md", f"{near}.md", f"{long_mixed}.md", f"{long_mixed.upper()}.md",
                         "Insight_Bench_note_3-1.md", "Insight_New_one.md"]:
            got = index.names_like("Playbooks", filename)
            stem = unicodedata.normalize("NFC", filename)[:-3]
            cut = stem[: max(1, len(stem) - 12)]
            cut = cut[: next((at for at, char in enumerate(cut) if not char.isascii()), len(cut))]
            assert set(got) <= {name for name in on_disk if name.lower().startswith(cut.lower())}, filename
            keys = {name_key(name) for name in numbered(filename, len(on_disk) + 1)}
            assert {name for name in on_disk if name_key(name) in keys} <= set(got), filename
            folder = vault / "Playbooks"
            assert unique_path(folder, filename, known=got) == unique_path(folder, filename), filename
        # The whole stem where it fits: a name sharing only its first part is not read.
        assert sorted(index.names_like("Playbooks", f"{bench}.md")) == sorted(
            [f"{bench}.md", f"{bench.upper()}_2.md", f"{bench.lower()}_3.md", f"{bench}_4_more.md", f"{bench}5.md"])
        assert unique_path(vault / "Playbooks", f"{bench}.md", known=index.names_like("Playbooks", f"{bench}.md")) == (
            vault / "Playbooks" / f"{bench}_4.md")
        # Near the limit the cut stays: the numbered forms there lose the stem's end.
        assert f"{long_ascii[:-2].upper()}_2.md" in index.names_like("Playbooks", f"{long_ascii}.md")
        assert unique_path(vault / "Playbooks", f"{long_ascii}.md", known=index.names_like("Playbooks", f"{long_ascii}.md")) == (
            vault / "Playbooks" / f"{long_ascii[:-2]}_4.md")
    finally:
        index.close()


def test_a_create_whose_name_ends_in_a_long_cluster_at_the_limit_keeps_clear_of_a_numbered_name_in_another_case(vault):
    """Near the name limit a numbered form is cut between whole characters (`fit_name`), and a
    character that continues the one before it (a combining mark, an emoji joined by a ZWJ)
    goes with it: a stem ending in a cluster of more than 12 characters loses the whole
    cluster and its base letter. `numbered_forms_start` took the stem less 12 characters, which
    the `_2` form then did not begin with, so `Index.names_like` left out a name differing from
    it only in case, and the third create wrote `Pattern_aaaaaaaaaaaaaa_3.md`... beside it: here
    `Pattern_aaaaaaaaaaaaaa_2.md` next to `Pattern_AAAAAAAAAAAAAA_2.md`, one file on macOS and Windows."""
    title = "a" * 14 + "x" + "\u20d0" * 70   # 236 bytes with `Pattern_` and `.md`: `_2` cuts into the marks
    create = ("create", "--type", "pattern", "--domain", "dev", "--title")
    first = ok_data(*create, title, "--body", "One.")["path"]
    other = ok_data(*create, "A" * 14 + " 2", "--body", "Two.")["path"]
    again = ok_data(*create, title, "--body", "Three, about something else.")["path"]
    assert first.endswith("x" + "\u20d0" * 70 + ".md") and other == "Playbooks/Pattern_AAAAAAAAAAAAAA_2.md"
    names = os.listdir(vault / "Playbooks")
    assert len({name_key(name) for name in names}) == len(names), sorted(names)
    assert again == "Playbooks/Pattern_aaaaaaaaaaaaaa_3.md"


def test_names_like_gives_unique_path_the_listings_answer_for_names_ending_in_long_clusters(vault):
    """For random titles of ASCII words in both cases ending in a cluster of characters that
    continue one another (combining marks, emoji joined by ZWJs: cut whole by `fit_name`), some
    near the name limit, with numbered forms of them in other cases and normalisations in the
    folder: `unique_path` picks from `Index.names_like`'s names the name it picks from a listing."""
    rng = random.Random(12)
    words = ["alpha", "Beta", "GAMMA", "delta", "e", "x"]
    folder = vault / "Playbooks"
    keys, filenames = set(), []
    for _ in range(200):
        head = "_".join(rng.choice(words) for _ in range(rng.randint(1, 6)))
        room = MAX_NAME_BYTES - 1 - len(f"Pattern_{head}.md") - rng.choice([0, 0, 1, 2, 6])   # bytes left for the cluster
        mark, size = rng.choice([("\u20d0", 3), ("\u0301", 2), ("\u200d\U0001F44D", 7)])
        tail = rng.choice(["x", "x", "\U0001F44D"]) + mark * max(1, (room - 1) // size) if rng.random() < 0.8 else "é"
        filename = card_filename("pattern", head + tail)
        filenames.append(filename)
        stem = filename[:-3]
        for number in range(1, rng.randint(1, 4) + 1):
            form = filename if number == 1 else f"{fit_name(stem, MAX_NAME_BYTES - len(f'_{number}') - 3)}_{number}.md"
            if number > 1:   # the file itself as named, its numbered forms in another case or normalisation
                form = rng.choice([form[:-3].upper() + ".md", form[:-3].swapcase() + ".md",
                                   unicodedata.normalize("NFD", form)])
            if name_key(form) not in keys and len(form.encode()) <= MAX_NAME_BYTES:
                keys.add(name_key(form))
                write_card(folder / form, f"Card {len(keys)}", "Body.")
    ok_data("reindex")
    index = Index.existing(Vault(vault), card_fields)
    try:
        for filename in filenames:
            known = index.names_like("Playbooks", filename)
            assert unique_path(folder, filename, known=known) == unique_path(folder, filename), filename
    finally:
        index.close()


def test_cards_written_again_and_again_while_they_wait_leave_the_index_equal_to_a_rebuild(vault: Path) -> None:
    """`build._DeltaEdits` writes a waiting card's `fresh` rows over in place and deletes only
    the terms it lost: random writes through the CLI (a new body, new tags, a new title that
    renames, a create, a delete, a feedback) and saves by hand, each dropping words, to a few
    cards again and again while they wait in `stale`, leave every term's postings, the count and
    the lengths equal to a rebuild of the same files: no card found by a word it lost, none
    missed by one it has."""
    rng = random.Random(22)
    create = ("create", "--type", "pattern", "--domain", "dev")
    paths = [ok_data(*create, "--title", f"Card {WORDS[n]} {n}", "--tags", ",".join(rng.sample(WORDS, 2)),
                     "--body", " ".join(rng.choices(WORDS, k=rng.randint(3, 20))))["path"] for n in range(8)]
    stamp = time.time_ns()
    for round_ in range(8):
        for _ in range(6):
            at = rng.randrange(len(paths))
            action = rng.choice(["body", "tags", "title", "record", "by hand", "by hand", "create", "delete"])
            words = " ".join(rng.choices(WORDS, k=rng.randint(1, 12)))   # mostly other words than before
            if action == "body":
                ok_data("update", paths[at], "--body", words)
            elif action == "tags":
                ok_data("update", paths[at], "--tags", ",".join(rng.sample(WORDS, rng.randint(0, 3))))
            elif action == "title":
                paths[at] = ok_data("update", paths[at], "--title", f"{rng.choice(WORDS)} {round_} {at}")["path"]
            elif action == "record":
                ok_data("record", paths[at], rng.choice(["used", "rejected"]))
            elif action == "by hand":
                path = vault / paths[at]
                head, _, _ = path.read_text(encoding="utf-8").partition("\n---\n")
                path.write_text(f"{head}\n---\n# {rng.choice(WORDS)}\n\n{words}\n", encoding="utf-8")
                stamp += 10_000_000   # each save its own mtime, as a person's saves a moment apart have
                os.utime(path, ns=(stamp, stamp))
            elif action == "create":
                paths.append(ok_data(*create, "--title", f"New {words}", "--body", words)["path"])
            elif len(paths) > 3:
                ok_data("delete", paths.pop(at))
            ok_data("search", rng.choice(WORDS))   # a reader's refresh between the writes
        incremental = snapshot(Vault(vault))
        with sqlite3.connect(vault / INDEX) as db:
            assert db.execute("SELECT count(*) FROM stale").fetchone()[0] > 0   # the cards did wait in `fresh`
        fresh = Vault(vault.parent / f"rebuilt{round_}")
        shutil.copytree(vault / "Playbooks", fresh.root / "Playbooks")
        rebuild(fresh, card_fields)
        assert incremental == snapshot(fresh), f"round {round_}"


def test_a_partial_fold_takes_the_fullest_chunk_first_and_equals_a_rebuild(tmp_path: Path, monkeypatch) -> None:
    """Issue 22: a fold's cost is per posting row, and a card's terms are rows of its chunk, so a
    partial fold (the upkeep's groups, a write's excess) takes the waiting cards of the chunk
    with the most of them first, where their common terms share rows; lowest docids first took
    cards from every chunk. Whatever it takes, readers see the same postings and what is left
    waiting folds to the index a rebuild makes."""
    monkeypatch.setattr(build_module, "CHUNK_BITS", 2)   # four docids a posting row
    vault = Vault(tmp_path / "vault")
    for n in range(12):
        write_card(vault.root / "Playbooks" / f"Card_{n}.md", f"Card {WORDS[n]}", f"Shared widget notes {WORDS[n]}.")
    snapshot(vault)
    with sqlite3.connect(vault.root / INDEX) as db:
        docid_of = {name: docid for name, docid in db.execute("SELECT name, docid FROM docs")}
    by_chunk: dict[int, list[str]] = {}
    for name in sorted(docid_of, key=docid_of.get):
        by_chunk.setdefault(docid_of[name] >> 2, []).append(name)
    low, full, mid = sorted(by_chunk)[:3]
    edited = by_chunk[low][:1] + by_chunk[full][:3] + by_chunk[mid][:2]   # 1, 3 and 2 cards of three chunks
    for name in edited:
        path = vault.root / "Playbooks" / name
        path.write_text(path.read_text(encoding="utf-8") + "\nA quokka line.\n", encoding="utf-8")
    index = Index.existing(vault, card_fields)
    try:
        index.update([f"Playbooks/{name}" for name in edited])
        waiting = lambda: sorted(docid for (docid,) in index.db.execute("SELECT docid FROM stale"))  # noqa: E731
        assert waiting() == sorted(docid_of[name] for name in edited)
        before = snapshot(vault)
        assert index.fold_waiting(3, planned=True) == 3
        assert waiting() == sorted(docid_of[name] for name in by_chunk[low][:1] + by_chunk[mid][:2])
        assert snapshot(vault) == before
        assert index.fold_waiting(1, planned=True) == 2
        assert waiting() == sorted(docid_of[name] for name in by_chunk[low][:1] + by_chunk[mid][1:2])
        assert index.fold_waiting(None, planned=True) == 0
    finally:
        index.close()
    folded = snapshot(vault)
    assert folded == before
    fresh = Vault(tmp_path / "fresh")
    shutil.copytree(vault.root / "Playbooks", fresh.root / "Playbooks")
    rebuild(fresh, card_fields)
    assert folded == snapshot(fresh)


def test_a_waiting_card_written_again_keeps_exactly_its_new_fresh_rows() -> None:
    # `_DeltaEdits` writes a waiting card's rows over in place and deletes only the terms it lost
    # (a PATCH of a hot card); a card dropped and not added again loses them all at `flush`.
    from external_brain.search.build import _DeltaEdits
    from external_brain.search.store import _ensure_schema

    db = sqlite3.connect(":memory:", isolation_level=None)
    _ensure_schema(db)
    edits = _DeltaEdits(db)
    edits.add(7, {"alpha": 1, "bravo": 2, "charlie": 3})
    edits.add(8, {"alpha": 4, "delta": 5})
    edits.flush()
    edits = _DeltaEdits(db)
    edits.drop(7, ["alpha", "bravo", "charlie"])
    edits.drop(8, ["alpha", "delta"])
    edits.add(7, {"alpha": 11, "charlie": 3, "echo": 12})
    assert sorted(db.execute("SELECT term, docid, code FROM fresh WHERE docid = 8")) == [("alpha", 8, 4), ("delta", 8, 5)]
    edits.flush()
    assert sorted(db.execute("SELECT term, docid, code FROM fresh")) == [("alpha", 7, 11), ("charlie", 7, 3), ("echo", 7, 12)]
    assert sorted(db.execute("SELECT docid FROM stale")) == [(7,), (8,)]
