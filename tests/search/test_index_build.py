"""A build of the search index spread over worker processes (refresh._Refresher._build, issue 10 item 7):
the index is the same, row for row, whatever the number of workers; it ranks exactly as an index
built card by card; hostile cards are reported as in a single-process build; a worker that dies
does not fail the build; and a killed build leaves no worker behind holding `index.lock`."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import external_brain.search.build as build_module
from external_brain.search.index import Index, rebuild
from external_brain.search.analysis import card_fields
from external_brain.vault.storage import Vault
from helpers import ROOT, run_json, write_card

TABLES = ("info", "folders", "listings", "docs", "doc_data", "postings", "card_keys", "links", "facets", "card_tags",
          "tags")
WORDS = "amber basalt cobalt dune ember fjord glacier harbor iris jasper kelp lagoon binding binds".split()
JAPANESE = ["接続がタイムアウトした", "証明書の更新を忘れた", "データベースの再起動", "梅雨は北海道にない"]


def card(number: int) -> str:
    words = " ".join(WORDS[(number * 7 + k) % len(WORDS)] for k in range(5 + number % 9))
    link = f"\nlinks:\n  - {{to: id-{number - 1}, rel: depends_on}}" if number % 5 == 1 else ""
    return (f"---\nid: id-{number}\ntitle: Card {WORDS[number % len(WORDS)]} {number}\ntype: pattern\n"
            f"domain: dev\ntags: [{WORDS[number % 4]}]{link}\n---\n{words}. {JAPANESE[number % 4]}。\n"
            f"related: [[Card {WORDS[(number + 1) % len(WORDS)]} {number + 1}]]\n")


def hostile(root: Path) -> None:
    """Files that are not cards, each reported as a problem by any build."""
    write_card(root, "Playbooks/Bad_frontmatter.md", "---\ntitle: [unclosed\n---\nbody\n")
    write_card(root, "Playbooks/Not_utf8.md", b"---\ntitle: x\n---\n\xff\xfe broken\n")
    os.mkfifo(root / "Playbooks" / "Fifo.md")
    (root / "Playbooks" / "Loop.md").symlink_to("Loop.md")
    (root / "Playbooks" / "Outside.md").symlink_to("/etc/hostname")


def make_vault(root: Path, cards: int) -> Vault:
    for number in range(cards):
        folder = "Playbooks" if number % 3 else "Playbooks/team"
        write_card(root, f"{folder}/Card_{number:03d}.md", card(number))
    hostile(root)
    return Vault(root)


def rows(root: Path) -> dict[str, list[tuple]]:
    index = Index.open(Vault(root), card_fields, sweep=None)
    try:
        # Not `info.changes` nor the counts of `build.postings_moved`: the change stamp moves with every
        # write of a card's rows, the counts with every write of posting rows, a rebuild's too, and
        # the epoch starts at a random number in each file.
        return {table: sorted(index.db.execute(f"SELECT * FROM {table}" + (
                    " WHERE key NOT IN ('changes', 'postings_moved', 'postings_counted', 'postings_epoch') "
                    "AND key NOT LIKE 'postings_chunk:%'" if table == "info" else "")).fetchall(), key=repr)
                for table in TABLES}
    finally:
        index.close()


@pytest.fixture
def small_chunks(monkeypatch):
    # 8 docids a posting row: a vault of 60 cards makes 8 chunks, so 2 workers share many.
    monkeypatch.setattr(build_module, "CHUNK_BITS", 3)


def test_a_build_with_two_workers_stores_the_same_rows_as_with_one(tmp_path: Path, small_chunks) -> None:
    vault = make_vault(tmp_path / "v", 60)
    rebuild(vault, card_fields, workers=1)
    one = rows(vault.root)
    rebuild(vault, card_fields, workers=2)
    two = rows(vault.root)
    assert one == two
    assert len({chunk for _, chunk, _, _ in two["postings"]}) == 9
    assert len(two["docs"]) == 65 and sum(1 for row in two["docs"] if row[6] is not None) == 5
    assert len(two["links"]) == 12


def test_a_parallel_build_ranks_exactly_as_an_index_built_card_by_card(tmp_path: Path, vault: Path,
                                                                       small_chunks) -> None:
    # The example vault of the repository, and a generated one, each indexed both ways.
    for name, fill in (("example", lambda root: shutil.copytree(ROOT / "Playbooks", root / "Playbooks")),
                       ("generated", lambda root: make_vault(root, 60))):
        bulk, by_card = tmp_path / f"{name}-bulk", tmp_path / f"{name}-by-card"
        for root in (bulk, by_card):
            shutil.copytree(vault, root, ignore=shutil.ignore_patterns("Playbooks"))
            fill(root)
        rebuild(Vault(bulk), card_fields, workers=2)
        # Card by card: an index holding one card, then every other card re-indexed into it.
        cards = sorted(p.relative_to(by_card).as_posix() for p in (by_card / "Playbooks").rglob("*.md"))
        aside = tmp_path / f"{name}-aside"
        shutil.move(by_card / "Playbooks", aside)
        write_card(by_card, cards[0], (aside / Path(cards[0]).relative_to("Playbooks")).read_bytes())
        Index.open(Vault(by_card), card_fields).close()
        shutil.rmtree(by_card / "Playbooks")
        shutil.move(aside, by_card / "Playbooks")
        index = Index.open(Vault(by_card), card_fields, sweep=None)
        index.update(cards)
        index.close()
        shown = 0
        for query in ("amber binding", "接続 タイムアウト", "ECS deploy checklist", "SQL injection", "証明書"):
            hits = []
            for root in (bulk, by_card):
                data = run_json("--vault", str(root), "search", query, "--limit", "50")[1]["data"]
                hits.append([(hit["path"], hit["score"]) for hit in data["hits"]])
            assert hits[0] == hits[1], (name, query)
            shown += len(hits[0])
        assert shown >= 10, name
        # What stats counts (facets, tags) is stored alike by both ways of indexing.
        stats = [run_json("--vault", str(root), "stats")[1]["data"] for root in (bulk, by_card)]
        assert stats[0] == stats[1] and stats[0]["total"] > 0, name


def test_hostile_cards_in_a_parallel_build_are_reported_as_in_one_process(tmp_path: Path, small_chunks) -> None:
    vault = make_vault(tmp_path / "v", 40)
    rebuild(vault, card_fields, workers=2)
    index = Index.open(vault, card_fields)
    problems = sorted((p.path, p.message) for p in index.problems())
    index.close()
    assert [path for path, _ in problems] == [f"Playbooks/{name}.md" for name in
                                              ("Bad_frontmatter", "Fifo", "Loop", "Not_utf8", "Outside")]
    rebuild(vault, card_fields, workers=1)
    index = Index.open(vault, card_fields)
    assert sorted((p.path, p.message) for p in index.problems()) == problems
    index.close()
    code, envelope, err = run_json("--vault", str(vault.root), "search", "amber")
    assert code == 0 and envelope["data"]["hits"]
    assert sorted(line.split(":")[2].split()[-1] for line in err.splitlines() if "skipped" in line) == \
        [path for path, _ in problems]


def die(batch, chunk_bits):
    os._exit(9)  # as a worker killed for memory would


def test_a_worker_that_dies_does_not_fail_the_build(tmp_path: Path, small_chunks, monkeypatch) -> None:
    vault = make_vault(tmp_path / "v", 40)
    rebuild(vault, card_fields, workers=1)
    expected = rows(vault.root)
    monkeypatch.setattr(build_module, "_worker_batch", die)
    rebuild(vault, card_fields, workers=2)
    assert rows(vault.root) == expected


KILLED_BUILD = r"""
import os, sys, time
sys.path.insert(0, sys.argv[2])
from pathlib import Path
import external_brain.search.build as build_module
from external_brain.search.index import rebuild
from external_brain.search.analysis import card_fields
from external_brain.vault.storage import Vault

def stuck(batch, bits):
    print(os.getpid(), flush=True)  # a worker is running
    time.sleep(600)

build_module._worker_batch = stuck
build_module.CHUNK_BITS = 3  # several chunks: the build uses its workers
rebuild(Vault(Path(sys.argv[1])), card_fields, workers=2)
"""


def test_a_killed_build_leaves_no_worker_holding_the_index_lock(tmp_path: Path) -> None:
    vault = make_vault(tmp_path / "v", 30)
    (vault.root / ".brain" / "cache").mkdir(parents=True, exist_ok=True)
    build = subprocess.Popen([sys.executable, "-c", KILLED_BUILD, str(vault.root), str(ROOT / "runtime")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        worker = int(build.stdout.readline() or 0)  # blocks until a worker runs (or the build fails)
        assert worker, build.stderr.read()
    finally:
        build.kill()
        build.wait()
    lock = os.open(vault.root / ".brain" / "cache" / "index.lock", os.O_RDWR)
    deadline = time.monotonic() + 30
    try:
        while True:  # the workers notice at once; the deadline only bounds a loaded machine
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                assert time.monotonic() < deadline, "a worker of the killed build still holds index.lock"
                time.sleep(0.05)
    finally:
        os.close(lock)
    assert not Path(f"/proc/{worker}").exists() or "zombie" in Path(f"/proc/{worker}/status").read_text().lower()
