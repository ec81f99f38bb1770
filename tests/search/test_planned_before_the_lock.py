"""A create's new card and an update's new text are made before the vault's write lock (issue 22:
every writer of every process waits on that lock), and under it only checked and written:

- a create's new card is rendered, parsed and its terms analysed before the lock
  (`cards._made_ahead`); under it only its file's name is settled, and a name taken meanwhile
  gets a number as always;
- an update that renames nothing is planned before the lock (`lifecycle._planned_ahead`); under
  it the file is read and compared, and the plan taken only when the file still holds the text
  it was made from: a person's edit made meanwhile is kept (the update is planned again).

In both, nothing is parsed or tokenised while the lock is held, and the index ends equal to a
rebuild of the cards."""

from __future__ import annotations

import fcntl
import os
import re
import threading
import time
from pathlib import Path

from helpers import events, ok_data
from test_index_writes import snapshot


def parsed_while_locked(vault: Path, monkeypatch) -> list[str]:
    """The frontmatter parses, renders and tokenisings made from now on while this process holds
    the vault's write lock (observed, not changed)."""
    from external_brain.search import analysis
    from external_brain.vault import frontmatter, journal
    from external_brain.vault.storage import Vault

    group = journal._group(Vault(vault))
    seen: list[str] = []
    for module, name in ((frontmatter, "parse"), (frontmatter, "render"), (analysis, "tokens")):
        real = getattr(module, name)

        def spy(*args, _real=real, _name=name, **kwargs):
            if group.batch is not None:
                seen.append(_name)
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, name, spy)
    return seen


def equals_a_rebuild(vault: Path) -> bool:
    from external_brain.search.index import rebuild
    from external_brain.search.analysis import card_fields
    from external_brain.vault.storage import Vault

    now = snapshot(Vault(vault))
    rebuild(Vault(vault), card_fields)
    return snapshot(Vault(vault)) == now


def test_a_create_parses_and_tokenises_nothing_while_it_holds_the_write_lock(vault: Path, monkeypatch) -> None:
    # (Its tags are known to the index already: a tag new to it gets its terms under the lock,
    # once, `store.analyse_new_tags`.)
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter", "--tags", "retries",
            "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    seen = parsed_while_locked(vault, monkeypatch)
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry budgets for a quokka",
                   "--tags", "retries", "--body", "Spend at most a tenth of the calls on retries. #budget")
    assert seen == []
    hits = ok_data("search", "quokka")["hits"]
    assert [hit["path"] for hit in hits] == [made["path"]]
    assert equals_a_rebuild(vault)


def test_an_update_by_id_parses_and_tokenises_nothing_while_it_holds_the_write_lock(vault: Path, monkeypatch) -> None:
    # (Its tags are another card's too: a card's tag that no other card has is taken out of the
    # index's tag list and put back, its terms analysed again, when the card is indexed again.)
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Budgets", "--tags", "budgets,retries")
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--tags", "retries", "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    seen = parsed_while_locked(vault, monkeypatch)
    ok_data("update", made["id"], "--append", "A narwhal checks the budget.")
    ok_data("update", made["id"], "--add-tag", "budgets")            # terms change: the tags field
    ok_data("update", made["id"], "--status", "archived")            # no term changes: restamped
    assert seen == []
    text = (vault / made["path"]).read_text(encoding="utf-8")
    assert "A narwhal checks the budget." in text and "budgets" in text and "status: archived" in text
    assert [hit["path"] for hit in ok_data("search", "narwhal", "--status", "any")["hits"]] == [made["path"]]
    assert [e["event"] for e in events(vault)].count("updated") == 3
    assert equals_a_rebuild(vault)


def held_while(vault: Path, start, between) -> None:
    """Hold the vault's write lock (as another process would); run `start()` in a thread; once
    that thread waits for the lock, call `between()`; then let the lock go and wait for it."""
    from external_brain.vault import journal
    from external_brain.vault.storage import Vault

    group = journal._group(Vault(vault))
    (vault / ".brain" / "locks").mkdir(parents=True, exist_ok=True)
    held = os.open(vault / ".brain" / "locks" / "write.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(held, fcntl.LOCK_EX)   # on a descriptor of its own: every writer waits for it
    errors: list[BaseException] = []

    def run() -> None:
        try:
            start()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)

    thread = threading.Thread(target=run)
    try:
        thread.start()
        deadline = time.monotonic() + 60
        while not group.turn.locked():   # the write has planned and waits for the lock
            assert time.monotonic() < deadline and thread.is_alive(), "the write never waited for the lock"
            time.sleep(0.005)
        between()
    finally:
        os.close(held)
        thread.join(60)
    assert errors == []


def test_an_update_planned_before_a_persons_edit_keeps_the_edit(vault: Path) -> None:
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    path = vault / made["path"]

    def edit() -> None:   # a person's save while the update waits for the lock, planned already
        path.write_text(path.read_text(encoding="utf-8").replace("with jitter.", "with full jitter, by hand."),
                        encoding="utf-8")

    held_while(vault, lambda: ok_data("update", made["id"], "--append", "Appended by the agent."), edit)
    text = path.read_text(encoding="utf-8")
    assert "with full jitter, by hand." in text and "Appended by the agent." in text
    assert [hit["path"] for hit in ok_data("search", "hand")["hits"]] == [made["path"]]
    assert equals_a_rebuild(vault)


def test_a_create_whose_name_was_taken_meanwhile_gets_a_number_and_keeps_its_card(vault: Path) -> None:
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
            "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    made: list[dict] = []
    taken = vault / "Playbooks" / "Pattern_Retry_budgets.md"

    def by_hand() -> None:   # the very name the create made its card for, saved by a person
        taken.write_text("---\ntitle: Retry budgets\ntype: pattern\ndomain: dev\n---\n# Retry budgets\n\nMine.\n",
                         encoding="utf-8")

    held_while(vault, lambda: made.append(ok_data("create", "--type", "pattern", "--domain", "dev",
                                                  "--title", "Retry budgets", "--body", "A tenth of the calls.")),
               by_hand)
    assert made[0]["path"] == "Playbooks/Pattern_Retry_budgets_2.md"
    assert "Mine." in taken.read_text(encoding="utf-8")
    text = (vault / made[0]["path"]).read_text(encoding="utf-8")
    assert f"id: {made[0]['id']}" in text and "A tenth of the calls." in text
    assert sorted(hit["path"] for hit in ok_data("search", "budgets")["hits"]) == \
        ["Playbooks/Pattern_Retry_budgets.md", "Playbooks/Pattern_Retry_budgets_2.md"]
    assert equals_a_rebuild(vault)


def test_cards_written_meanwhile_are_parsed_once_by_a_process_whatever_the_creates_that_meet_them(
        vault: Path, monkeypatch) -> None:
    """`cards.still_related` (under the lock: the cards written since a create's search) reads
    each file every time, and parses a text this process parsed before only once: a server's
    creates meet the same cards written meanwhile, one after another."""
    from external_brain.cards import still_related
    from external_brain.vault import frontmatter
    from external_brain.vault.events import log_size
    from external_brain.vault.storage import Vault

    mark = log_size(Vault(vault))
    made = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Written meanwhile {n}")["path"]
            for n in range(3)]
    parsed: list[str] = []
    real = frontmatter.parse
    monkeypatch.setattr(frontmatter, "parse", lambda text, *a, **k: (parsed.append(text), real(text, *a, **k))[1])
    first = still_related(Vault(vault), [], mark, None)
    once = len(parsed)
    second = still_related(Vault(vault), [], mark, None)
    assert [card.rel for _, card in first] == [card.rel for _, card in second] == made
    assert len(parsed) == once   # the second create's reads parse nothing again
    # A card edited since is other text: parsed afresh, and read as it is now.
    path = vault / made[1]
    path.write_text(path.read_text(encoding="utf-8").replace("Written meanwhile 1", "Edited by hand"), encoding="utf-8")
    third = still_related(Vault(vault), [], mark, None)
    assert len(parsed) == once + 1 and third[1][1].title == "Edited by hand"


def test_a_record_by_id_parses_only_its_new_text_while_it_holds_the_write_lock(vault: Path, monkeypatch) -> None:
    # Under the lock a record reads the card again, takes the parse made before the lock when the
    # text is the same (`load_card(parsed=)`), rewrites that parse (`updated_text`, the card's
    # layout) and hands the card as read and as written to the index (`wrote_files(made=, was=)`),
    # whose restamp leaves the card's tags in place (a tag no other card has stays in the tag
    # list, its terms not tokenised again): only the new text is parsed there, once (main: five
    # parses and the tag's terms).
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--tags", "retries", "--body", "Back off exponentially, with jitter. #backoff")
    ok_data("search", "jitter")
    seen = parsed_while_locked(vault, monkeypatch)
    recorded = ok_data("record", made["id"], "used")
    assert seen == ["parse"]
    assert f"confidence: {recorded['after']}" in (vault / made["path"]).read_text(encoding="utf-8")
    assert [hit["path"] for hit in ok_data("search", "jitter", "--tag", "backoff")["hits"]] == [made["path"]]
    assert equals_a_rebuild(vault)


def test_a_record_by_id_follows_its_card_renamed_before_it_took_the_lock(vault: Path) -> None:
    # `record` finds the card's file before the write lock; a person may rename that file and
    # save another note under the old name before the lock is taken. The feedback was written
    # into that other note (an id and a confidence added to it, the event naming it); it goes
    # to the card with the id asked for, at its new name, and the other note stays as written.
    from external_brain.cards import record
    from external_brain.vault.storage import Vault

    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Pool sizing",
                   "--body", "Size the pool to the cores.")
    ok_data("search", "pool")
    old = vault / made["path"]
    moved = old.with_name("Pattern_Pool_sizing_by_hand.md")
    other = "---\ntitle: Pool sizing notes\ntype: pattern\ndomain: dev\n---\nA person's own notes.\n"
    results = []

    def person_renames_and_saves_another_note() -> None:
        os.rename(old, moved)
        old.write_text(other, encoding="utf-8")

    held_while(vault, lambda: results.append(record(Vault(vault), made["id"], "used")), person_renames_and_saves_another_note)
    assert old.read_text(encoding="utf-8") == other
    assert results[0].card.path == moved and f"confidence: {results[0].after}" in moved.read_text(encoding="utf-8")
    (event,) = [event for event in events(vault) if event["event"] == "used"]
    assert (event["card"], event["id"]) == ("Playbooks/Pattern_Pool_sizing_by_hand.md", made["id"])
    assert equals_a_rebuild(vault)
    # Renamed and nothing saved in its place: the feedback finds it too ("no such file" before).
    results.clear()
    held_while(vault, lambda: results.append(record(Vault(vault), made["id"], "rejected")),
               lambda: os.rename(moved, moved.with_name("Pattern_Pool_sizing_again.md")))
    assert results[0].card.rel == "Playbooks/Pattern_Pool_sizing_again.md" and results[0].outcome == "rejected"
    assert equals_a_rebuild(vault)


def test_a_record_looks_its_card_up_once_when_the_file_still_holds_it(vault: Path, monkeypatch) -> None:
    # The look-up again under the lock (above) is only for a file that no longer holds what the
    # reference names: by id, by a prefix of the id, by stem in another case, by path, once.
    from external_brain import cards

    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Pool sizing", "--body", "Use ten.")
    lookups = []
    found = cards._card_found
    monkeypatch.setattr(cards, "_card_found", lambda *args, **kwargs: lookups.append(args[1]) or found(*args, **kwargs))
    for ref in (made["id"], made["id"][:10], "Pattern_Pool_sizing", "pattern_pool_sizing", made["path"]):
        lookups.clear()
        assert ok_data("record", ref, "used")["path"] == made["path"]
        assert lookups == [ref]


def test_a_record_reads_a_card_changed_before_it_took_the_lock_as_it_is_then(vault: Path) -> None:
    # The parse made before the lock is taken only for the very text read under it: a person's
    # save meanwhile is read and parsed again, and the feedback applies to it.
    from external_brain.cards import record
    from external_brain.vault.storage import Vault

    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    path = vault / made["path"]
    results = []

    def person_saves() -> None:
        text = re.sub(r"(?m)^confidence: .*\n", "", path.read_text(encoding="utf-8"))
        path.write_text(text.replace("\n---\n", "\nconfidence: 0.9\n---\n", 1).replace("jitter.", "jitter, saved."),
                        encoding="utf-8")

    held_while(vault, lambda: results.append(record(Vault(vault), made["id"], "rejected")), person_saves)
    assert results[0].before == 0.9
    text = path.read_text(encoding="utf-8")
    assert "jitter, saved." in text and f"confidence: {results[0].after}" in text
    assert equals_a_rebuild(vault)
