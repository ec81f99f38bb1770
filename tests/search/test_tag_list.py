"""The index's list of the vault's tags (`tags`, kept by SQLite triggers on `card_tags`:
`store._TRIGGERS`), which a create's suggested tags read instead of a DISTINCT over every row
of `card_tags`: equal to the tags the cards carry after any process's create, tag edit, delete
or undo, after a process killed at any instant of a write, and rebuilt with an index of an
older version, never trusted. Each tag's index terms (`tags.first_term`, `tags.terms`: what a
create's suggested tags read instead of analysing every tag of the vault) are checked with it:
written by the process that first gives a card the tag, whatever process that is, and analysed
by a create itself when a row is without them."""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

from external_brain.search.analysis import ANALYSER_VERSION, tokens
from external_brain.search.store import SCHEMA_VERSION
from helpers import ROOT, card_meta, kill_when_ready, ok_data, Stretch

INDEX = Path(".brain/cache/index.sqlite")


def tag_rows(vault: Path) -> dict[str, int]:
    """The `tags` rows, after checking they are exactly `card_tags`' tags and counts, each with
    its index terms (`tokens(tag)`, none for one character) and the first of them."""
    with sqlite3.connect(vault / INDEX) as db:
        rows = dict(db.execute("SELECT tag, cards FROM tags ORDER BY tag"))
        counted = dict(db.execute("SELECT tag, count(*) FROM card_tags GROUP BY tag ORDER BY tag"))
        terms = {tag: (first, json.loads(stored) if stored is not None else None)
                 for tag, first, stored in db.execute("SELECT tag, first_term, terms FROM tags")}
    assert rows == counted
    expected = {tag: tokens(tag) if len(tag) >= 2 else [] for tag in rows}
    assert terms == {tag: (wanted[0] if wanted else "", wanted) for tag, wanted in expected.items()}
    return rows


def file_tags(vault: Path) -> dict[str, int]:
    """How many cards in Playbooks carry each tag, from the files themselves."""
    counts: Counter[str] = Counter()
    for path in (vault / "Playbooks").rglob("*.md"):
        counts.update(list(dict.fromkeys(card_meta(path).get("tags") or [])))
    return dict(counts)


def suggested(text: str) -> list[str]:
    made = ok_data("create", "--type", "insight", "--domain", "infra", "--title", "Probe note",
                   "--body", text)
    ok_data("delete", made["path"])
    return [tag["name"] for tag in made["insights"]["suggested_tags"]]


def test_the_tag_list_follows_other_processes_creates_tag_edits_deletes_and_undos(vault: Path) -> None:
    first = ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "kubernetes,zeppelin",
                    "--title", "Drain a node", "--body", "Cordon, then drain the node.")
    ok_data("search", "node")   # the index exists from here on
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1, "zeppelin": 1}
    second = ok_data("create", "--type", "insight", "--domain", "infra", "--tags", "zeppelin,airship",
                     "--title", "Airship mooring", "--body", "Moor the zeppelin to the mast.")
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1, "zeppelin": 2, "airship": 1}
    text = "The kubernetes node beside the zeppelin airship, kubernetes and zeppelin again."
    assert sorted(suggested(text)) == ["airship", "kubernetes", "zeppelin"]
    ok_data("update", first["path"], "--tags", "kubernetes")               # zeppelin off one card
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1, "zeppelin": 1, "airship": 1}
    deleted = ok_data("delete", second["path"])                            # the last zeppelin gone
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1}
    assert suggested(text) == ["kubernetes"]
    ok_data("undo", deleted["event"])                                      # and back
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1, "zeppelin": 1, "airship": 1}
    assert sorted(suggested(text)) == ["airship", "kubernetes", "zeppelin"]
    # A person's edit, seen by the next search's refresh, moves the list too.
    path = vault / first["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("tags: [kubernetes]", "tags: [helm]"),
                    encoding="utf-8")
    assert "helm" in path.read_text(encoding="utf-8")
    ok_data("search", "node")
    assert tag_rows(vault) == file_tags(vault) == {"helm": 1, "zeppelin": 1, "airship": 1}


def test_an_index_of_the_version_before_is_rebuilt_with_its_tag_list_never_trusted(vault: Path) -> None:
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "kubernetes,zeppelin",
            "--title", "Drain a node", "--body", "Cordon, then drain the node.")
    ok_data("search", "node")
    # What an index written by the version before looks like: no `tags` (nor its triggers).
    with sqlite3.connect(vault / INDEX) as db:
        db.execute("DROP TABLE tags")
        db.execute("UPDATE info SET value = ? WHERE key = 'version'",
                   (f"{SCHEMA_VERSION - 1}/{ANALYSER_VERSION}/{sys.byteorder}",))
    text = "The kubernetes node beside the zeppelin, kubernetes and zeppelin again."
    assert sorted(suggested(text)) == ["kubernetes", "zeppelin"]
    assert tag_rows(vault) == file_tags(vault) == {"kubernetes": 1, "zeppelin": 1}


def test_a_tag_left_without_its_terms_is_analysed_by_the_create_that_reads_it(vault: Path) -> None:
    """Only the tags filed under the text's terms are read (`Index.tags_filed`); a row a writer
    left without terms is analysed by the create itself, so the suggestions never depend on it."""
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "kubernetes,zeppelin,react-native-screens,k",
            "--title", "Drain a node", "--body", "Cordon, then drain the node.")
    ok_data("search", "node")
    assert tag_rows(vault) == {"kubernetes": 1, "zeppelin": 1, "react-native-screens": 1, "k": 1}
    text = "The kubernetes node beside the zeppelin, build react-native-screens; kubernetes and zeppelin again, k."
    assert suggested(text) == ["kubernetes", "zeppelin", "react-native-screens"]
    with sqlite3.connect(vault / INDEX) as db:
        db.execute("UPDATE tags SET first_term = NULL, terms = NULL WHERE tag IN ('zeppelin', 'react-native-screens', 'k')")
    assert suggested(text) == ["kubernetes", "zeppelin", "react-native-screens"]
    # The next write of the tags (this create's) gives the rows their terms again.
    ok_data("create", "--type", "insight", "--domain", "infra", "--tags", "airship", "--title", "Moor",
            "--body", "Moor it.")
    assert tag_rows(vault) == {"kubernetes": 1, "zeppelin": 1, "react-native-screens": 1, "k": 1, "airship": 1}


TAG_WORKER = """
import os, sys, random
sys.path.insert(0, {runtime!r})
from external_brain.doors.cli import main
rng = random.Random({seed})
sys.stdout = sys.stderr = open(os.devnull, "w")
print("ready", file=sys.__stdout__, flush=True)
TAGS = ["amber", "basalt", "cobalt", "dune", "ember", "fjord"]
while True:
    cards = sorted(p for p in os.listdir({playbooks!r}) if p.endswith(".md"))
    choice = rng.random()
    if choice < 0.45 or len(cards) < 3:
        main(["create", "--type", "pattern", "--domain", "dev", "--tags", ",".join(rng.sample(TAGS, 2)),
              "--title", "Tag storm %d" % rng.randrange(10 ** 6), "--body", "basalt and ember"])
    elif choice < 0.8:
        main(["update", "Playbooks/" + rng.choice(cards), "--tags", ",".join(rng.sample(TAGS, rng.randrange(3)))])
    else:
        main(["delete", "Playbooks/" + rng.choice(cards)])
"""


def test_processes_killed_at_random_instants_of_tag_writes_leave_the_list_equal_to_the_cards(vault: Path) -> None:
    ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "amber", "--title", "Tag seed",
            "--body", "seed")
    ok_data("search", "seed")
    rng = random.Random(20)
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    stretch = Stretch()
    attempt = progressed = 0
    # 14 kills, and more (bounded) until at least 5 of the workers changed the list before theirs.
    while attempt < 14 or (attempt < 80 and progressed < 5):
        before = tag_rows(vault)
        code = TAG_WORKER.format(runtime=str(ROOT / "runtime"), seed=attempt, playbooks=str(vault / "Playbooks"))
        kill_when_ready(code, env, stretch(rng.uniform(0.05, 0.5)))
        changed = tag_rows(vault) != before     # every committed state: `tags` equals `card_tags`
        stretch.saw_progress(changed)
        attempt, progressed = attempt + 1, progressed + changed
    assert progressed >= 5
    ok_data("doctor")            # finishes a write a kill left half done
    ok_data("reindex")
    assert tag_rows(vault) == file_tags(vault)
    # And the incremental list, before the rebuild above, agreed with it: checked by every
    # `tag_rows` in the loop; once more with a refresh rather than a rebuild.
    ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "fjord,kelp", "--title", "After the storm",
            "--body", "calm")
    assert tag_rows(vault) == file_tags(vault)


@pytest.mark.parametrize("step", ("journaled", "applied", "logged"))
def test_a_create_killed_at_each_step_leaves_the_tag_list_equal_to_the_cards(vault: Path, step: str) -> None:
    import signal
    import subprocess

    ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "amber", "--title", "Tag seed",
            "--body", "seed")
    ok_data("search", "seed")
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test", "BRAIN_FAILPOINT": step}
    result = subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "create", "--type", "pattern",
                             "--domain", "dev", "--tags", "zeppelin", "--title", "Killed create", "--body", "x"],
                            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == -signal.SIGKILL, result.stderr
    tag_rows(vault)
    ok_data("doctor")            # finishes the write (a search reads around a half-done one)
    ok_data("search", "seed")
    assert tag_rows(vault) == file_tags(vault) == {"amber": 1, "zeppelin": 1}
