"""A create passes its new card on to the search index as the card it made from the text it
wrote (`writes.commit_operation(made=)`, `Index.wrote_files`): the file is not read and parsed
again under the write lock, and the index holds exactly what reading it gives (a rebuild)."""

from __future__ import annotations

from pathlib import Path

from external_brain.search import build as build_module
from external_brain.search.analysis import card_fields
from external_brain.search.index import rebuild
from external_brain.vault.storage import Vault
from helpers import ok_data
from test_index_freshness import found, make_cards
from test_index_writes import assert_written_through, snapshot, stored_rows


def test_created_cards_are_indexed_from_the_cards_made_and_the_index_equals_a_rebuild(vault: Path,
                                                                                          monkeypatch) -> None:
    paths = make_cards(3)
    found("widget")   # every card indexed
    read: list[str] = []
    real = build_module.load_card

    def spy(vault, path):
        read.append(vault.rel(path))
        return real(vault, path)

    monkeypatch.setattr(build_module, "load_card", spy)
    ok_data("create", "--type", "fact", "--domain", "dev", "--title", "The widget API timeout is 30 seconds",
            "--tags", "widget,timeout", "--body", "Measured on the staging cluster.")
    created = [
        ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Quokka widget retries",
                "--tags", "fresh,quokka", "--project", "zoo", "--importance", "4", "--body",
                f"Retry the widget call; see [[{Path(paths[0]).stem}]] and #retries.")["path"],
        ok_data("create", "--type", "troubleshooting", "--domain", "dev", "--title", "ウィジェットの接続タイムアウト",
                "--tags", "widget", "--body", "接続がタイムアウトしたら再起動する。")["path"],
        # A fact that supersedes the one above: the old card is rewritten in the same operation.
        ok_data("create", "--type", "fact", "--domain", "dev", "--title", "The widget API timeout is 45 seconds",
                "--tags", "widget,timeout", "--body", "Raised after the incident.")["path"],
        ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Card \"null\": yes",
                "--tags", "123,true", "--body", "Odd YAML values: 1.0, no, ~.")["path"],
    ]
    assert [rel for rel in read if rel in created] == []   # not one new card read back from its file
    assert_written_through(vault, created)
    assert found("quokka") == [created[0]]
    assert created[2] in found("incident")
    incremental = snapshot(Vault(vault)), stored_rows(vault)
    rebuild(Vault(vault), card_fields)   # the same files, so the same ctimes and stamps
    assert incremental == (snapshot(Vault(vault)), stored_rows(vault))
