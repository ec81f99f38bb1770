"""What a serving process keeps for a create's candidate search (decision 0038, "A create's
candidate search in a server: its connection kept, fewer rows read and merged"), and that none of it goes
stale when another process changes the index between two searches:

- A writer's open of the index (`Index.existing`, which a create, a PATCH and the upkeep use)
  takes the thread's kept connection in a process that `keep_connections`: the next create's
  candidates (`keyword.related`) include a card another process created meanwhile (its rows
  waiting in `fresh`), a card another process indexed after deleting the cache folder and
  building the index anew (the kept connection had the old file open: it must not be read),
  and they leave out a card another process made private to another agent.
- The waiting cards left out of a term's folded rows are only those the rows still hold
  (`stale.terms`): a folded card edited by another process, its word taken out, is no longer
  a candidate for that word, and one given the word is.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from helpers import subprocess_cli, write_card
from test_shared_refresh import card


def candidates(vault: Path, text: str, agent: str | None = None) -> tuple[list[str], sqlite3.Connection]:
    """The rels `related` gives for `text`, as a create asks (an `Index.existing` of its own,
    closed after), and the connection it read them on."""
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.search.keyword import related
    from external_brain.vault.storage import Vault

    index = Index.existing(Vault(vault), card_fields)
    assert index is not None
    try:
        return [found.rel for _, found in related(index, text, agent)], index.db
    finally:
        index.close()


def test_a_writers_open_keeps_the_connection_and_follows_other_processes(vault: Path) -> None:
    from external_brain.search.index import keep_connections

    write_card(vault, "Playbooks/Pattern_Kept_Harbor.md", card("Harbor boats", "Boats rest in the harbor."))
    assert subprocess_cli("reindex", vault=vault).returncode == 0
    keep_connections()
    try:
        first, db = candidates(vault, "harbor boats")
        assert first == ["Playbooks/Pattern_Kept_Harbor.md"]
        again, same = candidates(vault, "harbor boats")
        assert again == first and same is db   # the thread's kept connection, not a new one each time

        # Another process creates a card: its rows wait in `fresh`, read by the next search.
        made = subprocess_cli("create", "--type", "pattern", "--domain", "dev", "--title", "Harbor boats at night",
                              "--body", "Boats in the harbor need lights at night.", "--tags", "harbor",
                              vault=vault)
        assert made.returncode == 0, made.stderr
        found, same = candidates(vault, "harbor boats")
        assert same is db and len(found) == 2 and "Playbooks/Pattern_Kept_Harbor.md" in found

        # Another process deletes the cache folder and builds the index anew with a card more:
        # the kept connection has the old, deleted file open and must not answer from it.
        write_card(vault, "Playbooks/Pattern_Kept_Lighthouse.md",
                   card("Harbor lighthouse", "The lighthouse guides boats into the harbor."))
        shutil.rmtree(vault / ".brain" / "cache")
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        found, renewed = candidates(vault, "harbor boats")
        assert renewed is not db
        assert "Playbooks/Pattern_Kept_Lighthouse.md" in found and len(found) == 3

        # Another process makes a card private to another agent: no longer anyone else's candidate.
        path = vault / "Playbooks" / "Pattern_Kept_Lighthouse.md"
        path.write_text(path.read_text(encoding="utf-8").replace("type: pattern\n", "type: pattern\nscope: agent\n"
                                                                  "agent: keeper\n", 1), encoding="utf-8")
        assert subprocess_cli("reindex", vault=vault).returncode == 0
        assert "Playbooks/Pattern_Kept_Lighthouse.md" not in candidates(vault, "harbor boats")[0]
        assert "Playbooks/Pattern_Kept_Lighthouse.md" in candidates(vault, "harbor boats", "keeper")[0]
    finally:
        keep_connections(False)


def test_a_folded_card_edited_by_another_process_is_a_candidate_for_its_words_now(vault: Path) -> None:
    from external_brain.search.index import keep_connections

    playbooks = vault / "Playbooks"
    for number in range(12):
        words = "anchor rope" if number % 2 else "anchor chain"
        write_card(vault, f"Playbooks/Pattern_Kept_Anchor_{number:02d}.md",
                   card(f"Anchor {number} {words}", f"The {words} holds the boat {number}."))
    assert subprocess_cli("reindex", vault=vault).returncode == 0   # every card folded into `postings`
    keep_connections()
    try:
        before = set(candidates(vault, "rope")[0])
        assert "Playbooks/Pattern_Kept_Anchor_01.md" in before and "Playbooks/Pattern_Kept_Anchor_00.md" not in before
        made = subprocess_cli("create", "--type", "pattern", "--domain", "dev", "--title", "Anchor rope knots",
                              "--body", "An anchor rope needs a good knot.", vault=vault)
        assert made.returncode == 0, made.stderr   # a new card: waiting, no folded rows ('')
        # Two folded cards edited, rope taken out of one and given to the other, and indexed by
        # another process's search (its sweep). Their folded rows still hold the old words
        # (`stale.terms`) until a fold: readers leave them out.
        for number, old, new in ((1, "rope", "cable"), (0, "chain", "rope")):
            path = playbooks / f"Pattern_Kept_Anchor_{number:02d}.md"
            path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
        assert subprocess_cli("search", "anchor", vault=vault).returncode == 0
        from external_brain.search.analysis import card_fields
        from external_brain.search.index import Index
        from external_brain.vault.storage import Vault

        index = Index.existing(Vault(vault), card_fields)
        try:
            waiting = dict(index.db.execute("SELECT docid, terms FROM stale"))
        finally:
            index.close()
        assert sum(1 for terms in waiting.values() if terms) == 2 and "" in waiting.values()
        after = candidates(vault, "rope")[0]
        assert "Playbooks/Pattern_Kept_Anchor_00.md" in after
        assert "Playbooks/Pattern_Kept_Anchor_01.md" not in after
    finally:
        keep_connections(False)
