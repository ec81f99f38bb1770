"""How the search index notices changes without stat-ing every card on every search
(search/refresh.py's docstring): folder mtimes and inodes for added, deleted, renamed and atomically
replaced files; a round-robin sweep of `freshness_sweep` files for saves that rewrite a file in
place; a re-check of the hits' own files; and the posting codes that carry tf and lengths."""

from __future__ import annotations

import math
import multiprocessing
import os
from pathlib import Path

import pytest

from external_brain.search.store import decode_code, encode_code
from helpers import ok_data, quiet_main, run_json

WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]


def set_sweep(vault: Path, files: int) -> None:
    (vault / ".brain" / "config.toml").write_text(f"[search]\nfreshness_sweep = {files}\n", encoding="utf-8")


def make_cards(count: int) -> list[str]:
    return [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Card {WORDS[n]}",
                    "--tags", "fresh", "--body", f"Notes about {WORDS[n]} and the shared widget.")["path"]
            for n in range(count)]


def found(query: str) -> list[str]:
    return [hit["path"] for hit in ok_data("search", query)["hits"]]


def save_in_place(vault: Path, rel: str, old: str, new: str) -> None:
    """Rewrite a card in place (same inode), as VS Code or Obsidian save, and put the folder's
    mtime back so only the file itself shows the change."""
    path = vault / rel
    folder_stat = path.parent.stat()
    inode = path.stat().st_ino
    text = path.read_text(encoding="utf-8")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace(old, new))
    os.utime(path.parent, ns=(folder_stat.st_atime_ns, folder_stat.st_mtime_ns))
    assert path.stat().st_ino == inode


def save_by_rename(vault: Path, rel: str, old: str, new: str) -> None:
    """Write a new file and rename it over the card, as this tool, git and vim do."""
    path = vault / rel
    temp = path.with_name(".save.tmp")
    temp.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    os.replace(temp, path)


def test_an_in_place_save_is_found_within_cards_over_sweep_searches(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 2)
    found("widget")  # index everything, start the sweep
    save_in_place(vault, paths[3], "shared widget", "shared zeppelin")
    bound = math.ceil(5 / 2)
    rounds = 0
    while not found("zeppelin"):
        rounds += 1
        assert rounds < bound, f"not found within {bound} searches"
    assert found("zeppelin") == [paths[3]]


def test_a_sweep_of_zero_checks_every_card_on_every_search(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 0)
    found("widget")
    for rel in paths:
        save_in_place(vault, rel, "shared widget", "shared zeppelin")
        assert rel in found("zeppelin")


def test_a_save_by_rename_is_found_by_the_next_search_whatever_the_sweep(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 1)
    found("widget")
    for rel in paths:
        save_by_rename(vault, rel, "shared widget", "shared zeppelin")
        assert rel in found("zeppelin")


def test_a_hit_edited_in_place_is_rechecked_before_it_is_shown(vault: Path) -> None:
    paths = make_cards(5)
    set_sweep(vault, 1)
    found("widget")
    save_in_place(vault, paths[2], "charlie", "kilo12")
    # The stale index still says the card mentions charlie; its file says otherwise.
    assert found("charlie") == []
    assert found("kilo12") == [paths[2]]


def test_folders_added_and_removed_by_hand_are_seen_by_the_next_search(vault: Path) -> None:
    make_cards(2)
    set_sweep(vault, 1)
    found("widget")
    sub = vault / "Playbooks" / "team" / "deep"
    sub.mkdir(parents=True)
    card = vault / make_cards(3)[2]
    moved = sub / card.name
    os.replace(card, moved)
    assert found("charlie") == [f"Playbooks/team/deep/{card.name}"]
    os.replace(moved, vault / "Playbooks" / card.name)
    (vault / "Playbooks" / "team" / "deep").rmdir()
    (vault / "Playbooks" / "team").rmdir()
    assert found("charlie") == [f"Playbooks/{card.name}"]


def _create_cards(searched, done, count: int) -> int:
    """Create `count` cards once every searcher has searched once, so the creates overlap the
    searches whatever the scheduler does."""
    for _ in range(SEARCHERS):
        searched.acquire(timeout=60)
    try:
        return sum(quiet_main(["create", "--type", "pattern", "--domain", "dev", "--title", f"Parallel card {n}",
                               "--tags", "race", "--body", "racing quokka"]) != 0 for n in range(count))
    finally:
        done.set()


def _search_until_done(searched, done, most: int) -> int:
    """Search until the creator is done (at most `most` times, at least twice: once before it
    starts and once after it finished)."""
    failures = quiet_main(["search", "quokka"]) != 0
    searched.release()
    for _ in range(most):
        finished = done.is_set()
        failures += quiet_main(["search", "quokka"]) != 0
        if finished:
            break
    return failures


def _run(start, target, args) -> None:
    start.wait(60)
    os._exit(1 if target(*args) else 0)


SEARCHERS = 3


def test_searches_run_safely_while_another_process_creates_cards(vault: Path) -> None:
    make_cards(1)
    fork = multiprocessing.get_context("fork")
    start, done, searched = fork.Event(), fork.Event(), fork.Semaphore(0)
    jobs = [(_create_cards, (searched, done, 15))] + [(_search_until_done, (searched, done, 400))] * SEARCHERS
    processes = [fork.Process(target=_run, args=(start, target, args)) for target, args in jobs]
    for process in processes:
        process.start()
    start.set()
    for process in processes:
        process.join(timeout=240)
    assert [process.exitcode for process in processes] == [0] * len(processes)
    data = ok_data("search", "quokka", "--limit", "50")
    assert len(data["hits"]) == 15


@pytest.mark.parametrize("tfs, lengths", [
    ([1, 0, 0, 0, 0], [5, 0, 0, 0, 0]),
    ([0, 0, 0, 0, 3], [4, 1, 2, 3, 150]),
    ([2, 1, 1, 1, 7], [9, 4, 3, 2, 300]),
])
def test_posting_codes_round_trip_tf_and_lengths_of_the_fields_a_term_is_in(tfs, lengths) -> None:
    got_tfs, got_lengths = decode_code(encode_code(tfs, lengths))
    assert got_tfs == tfs
    assert got_lengths == [n if tf else 0 for tf, n in zip(tfs, lengths)]


def test_posting_codes_cap_what_does_not_fit() -> None:
    # title tf 4 bits, title length 6 bits; body tf 8 bits, body length 16 bits (store._LAYOUT)
    tfs, lengths = decode_code(encode_code([40, 0, 0, 0, 999], [200, 0, 0, 0, 70_000]))
    assert tfs == [15, 0, 0, 0, 255]
    assert lengths == [63, 0, 0, 0, 65_535]


def test_get_by_id_after_the_card_was_renamed_or_its_id_changed_by_hand_still_finds_the_truth(vault):
    # `get ID` asks the search index first (cards.card_path); a stale index must never win.
    first = ok_data("create", "--type", "fact", "--domain", "infra", "--title", "Renamed by hand", "--body", "x")
    second = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Id edited by hand", "--body", "y")
    ok_data("search", "renamed hand")                      # the index now holds both ids
    moved = vault / "Playbooks" / "Moved_Elsewhere.md"
    (vault / first["path"]).rename(moved)
    assert ok_data("get", first["id"])["path"] == "Playbooks/Moved_Elsewhere.md"
    path = vault / second["path"]
    path.write_text(path.read_text().replace(second["id"], "0123456789abcdef-edited"))
    code, envelope, _ = run_json("get", second["id"])
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    assert ok_data("get", "0123456789abcdef-edited")["path"] == second["path"]


def test_a_relisted_folder_re_reads_only_the_cards_the_index_does_not_hold_as_they_are(vault: Path) -> None:
    # A writer's pass-on indexes the cards it writes but leaves the stored listing as it was; the
    # next listing of the folder (here: a file dropped in by hand, no pass-on) re-read every card
    # written since as new (8 CLI writers: ~80 cards, then a fold and every term's postings).
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault.storage import Vault

    for n in range(5):
        ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Retry policy {n}",
                "--body", f"Back off {n} times.")
    (vault / "Playbooks" / "By hand.md").write_text("---\ntitle: By hand\ntype: pattern\n---\nWritten in an editor.\n",
                                                   encoding="utf-8")
    index = Index.open(Vault(vault), card_fields, sweep=None)
    try:
        assert sorted(index.changes.added + index.changes.modified) == ["Playbooks/By hand.md"]
    finally:
        index.close()
