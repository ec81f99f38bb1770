"""`history` and `undo` through the real CLI: the audit trail follows a card by id, and one generic
undo reverses any event that carries `files`, guarded against later changes, itself undoable."""

from __future__ import annotations

import zlib

from helpers import card_meta, doctor_report, events, file_hashes, ok_data, run_cli, run_json, vault_hashes


def make(title: str, *extra: str) -> dict:
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", f"About {title}.",
                   *extra)


def test_undo_of_a_delete_restores_every_file_byte_for_byte_and_undo_of_that_deletes_again(vault):
    target = make("Central")
    sources = [make(f"Spoke {n}") for n in range(3)]
    for n, source in enumerate(sources):
        ok_data("link", source["id"], target["id"], "--rel", ("extends", "related", "depends_on")[n],
                "--weight", "0.7", "--reason", f"spoke {n}")
    before = file_hashes(vault)
    deleted = ok_data("delete", target["id"])
    assert len(deleted["cascaded"]) == 3
    after_delete = file_hashes(vault)
    assert after_delete != before

    kept = f".brain/deleted/Playbooks/{target['id']}.md"   # the deleted card's copy, for git (journal.py)
    assert (vault / kept).read_text(encoding="utf-8").startswith("---\nid: " + target["id"])
    undone = ok_data("undo", deleted["event"])
    assert sorted(undone["files"]) == sorted([target["path"], *(s["path"] for s in sources), kept])
    assert not (vault / kept).exists()
    assert file_hashes(vault) == before
    assert len(ok_data("links", target["id"], "--direction", "in")["incoming"]) == 3

    redone = ok_data("undo", undone["event"])
    assert file_hashes(vault) == after_delete and redone["undone_event"] == "undone"
    assert [e["event"] for e in events(vault)][-3:] == ["deleted", "undone", "undone"]
    assert ok_data("undo", redone["event"])["files"] and file_hashes(vault) == before


def test_undo_says_which_files_it_put_back_and_which_it_removed(vault):
    # review6: undoing a delete printed "restored 3 file(s)" and listed the card's copy in
    # .brain/deleted/ among them, though undo had just removed that copy.
    target, source = make("Central"), make("Spoke")
    ok_data("link", source["id"], target["id"], "--rel", "extends")
    deleted = ok_data("delete", target["id"])
    code, out, err = run_cli("undo", deleted["event"])
    assert (code, err) == (0, "")
    lines = out.splitlines()
    kept = f".brain/deleted/Playbooks/{target['id']}.md"
    assert lines[0] == f"undid deleted {deleted['event']}: put back 2 file(s), removed 1"
    assert sorted(lines[1:4]) == sorted([f"  {target['path']}", f"  {source['path']}", f"  {kept} (removed)"])
    redone = ok_data("undo", events(vault)[-1]["eid"])   # the undo undone: the card goes again
    assert redone["removed"] == [target["path"]]


def test_undo_refuses_a_card_changed_since_unless_forced(vault):
    card = make("Edited Later")
    first = ok_data("update", card["id"], "--body", "first edit")
    ok_data("update", card["id"], "--body", "second edit")
    snapshot, logged = vault_hashes(vault), len(events(vault))
    code, envelope, _ = run_json("undo", first["event"])
    assert code == 1 and envelope["error"]["code"] == "CONFLICT"
    assert envelope["error"]["message"].startswith(f"{card['path']} changed since event {first['event']}; ")
    assert vault_hashes(vault) == snapshot and len(events(vault)) == logged
    forced = ok_data("undo", first["event"], "--force")
    assert forced["forced"] == [card["path"]]
    assert (vault / card["path"]).read_text(encoding="utf-8").endswith("About Edited Later.\n")


def test_undo_forced_over_a_file_saved_in_another_encoding_puts_the_card_back(vault):
    """A person re-saved the card in Latin-1 (not UTF-8) after an update: `undo --force` read the
    file with its odd byte replaced, and the write's check (`journal._still_as_read`) compared the
    file with that text and refused it as a save made meanwhile, every time it was run."""
    card = make("Saved As Latin")
    first = ok_data("update", card["id"], "--body", "first edit")
    (vault / card["path"]).write_bytes(b"---\ntitle: Saved As Latin\n---\ncaf\xe9\n")
    forced = ok_data("undo", first["event"], "--force")
    assert forced["forced"] == [card["path"]]
    assert (vault / card["path"]).read_text(encoding="utf-8").endswith("About Saved As Latin.\n")


def test_undo_of_an_event_that_names_one_file_twice_puts_back_its_text_from_before(vault):
    """An ingest whose two statements each replaced one card logged that file twice, both items
    with its text from before and each its own text after (h13-review): `undo` compared the file
    with the first item's text after and refused it as changed since, and with --force the second
    item's write found the first one's and was refused as a save made meanwhile."""
    import json

    card = make("Named Twice")
    original = (vault / card["path"]).read_text(encoding="utf-8")
    ok_data("update", card["id"], "--body", "first rewrite")
    between = (vault / card["path"]).read_text(encoding="utf-8")
    last = ok_data("update", card["id"], "--body", "second rewrite")
    log = vault / "logs" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines()
    event = json.loads(lines[-1])
    [item] = event["files"]
    event["files"] = [{**item, "before": original, "after": f"{len(between.encode())}:{zlib.crc32(between.encode()):08x}"},
                      {**item, "before": original}]
    log.write_text("\n".join([*lines[:-1], json.dumps(event, ensure_ascii=False)]) + "\n", encoding="utf-8")
    undone = ok_data("undo", last["event"])
    assert undone["files"] == [card["path"]] and undone["forced"] == []
    assert (vault / card["path"]).read_text(encoding="utf-8") == original


def test_undo_of_a_rename_link_unlink_promote_and_supersede(vault):
    a, b = make("Rename Me"), make("Other One")
    original = file_hashes(vault)
    renamed = ok_data("update", a["id"], "--title", "Renamed")
    ok_data("undo", renamed["event"])
    assert file_hashes(vault) == original

    linked = ok_data("link", a["id"], b["id"], "--rel", "related")
    unlinked = ok_data("unlink", a["id"], b["id"])
    ok_data("undo", unlinked["event"])
    assert [i["path"] for i in ok_data("links", a["id"])["outgoing"]] == [b["path"]]
    ok_data("undo", ok_data("unlink", a["id"], b["id"])["event"])
    ok_data("undo", linked["event"])  # the card is back at the text the link wrote: allowed
    assert ok_data("links", a["id"])["outgoing"] == []
    assert file_hashes(vault) == original

    learned = ok_data("learn", "--title", "Lesson", "--type", "pattern", "--domain", "dev", "--problem", "p",
                      "--solution", "s")
    inbox_text = (vault / learned["path"]).read_bytes()
    promoted = ok_data("promote", learned["path"])
    eid = events(vault)[-1]["eid"]
    ok_data("undo", eid)
    assert (vault / learned["path"]).read_bytes() == inbox_text and not (vault / promoted["path"]).exists()

    old = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "db", "--title", "DB max connections",
                  "--body", "The database allows 100 connections.")
    old_text = (vault / old["path"]).read_bytes()
    new = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "db", "--title", "DB max connections",
                  "--body", "The database allows 200 connections.")
    assert new["insights"]["supersedes"]
    ok_data("undo", events(vault)[-2]["eid"])  # the `created` event: the new card and the supersede
    assert (vault / old["path"]).read_bytes() == old_text and not (vault / new["path"]).exists()


def test_events_without_files_cannot_be_undone_and_bad_ids_are_clear(vault):
    card = make("Feedback")
    data = ok_data("record", card["id"], "used")
    code, _, err = run_cli("undo", data["event"])
    # review6: the list left out merge, ingest, import and the Inbox decisions, which undo does undo.
    assert code == 1 and err == (f"brain: error: event {data['event']} (used) changed no file the log kept, so it "
                                 "cannot be undone; only events that changed cards can (create, update, delete, "
                                 "link, unlink, merge, promote, ingest, import, an Inbox reject or merge, undo): "
                                 "`history CARD` shows `(undo ID)` beside each\n")
    code, _, err = run_cli("undo", "abc")
    assert code == 2 and "too short" in err
    code, envelope, _ = run_json("undo", "ffffffff-0000")
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"


def test_history_follows_the_card_by_id_across_rename_and_delete_newest_first(vault):
    card = make("Tracked")
    other = make("Pointer")
    ok_data("link", other["id"], card["id"], "--rel", "extends")
    ok_data("update", card["id"], "--append", "more detail")
    ok_data("record", card["id"], "used")
    renamed = ok_data("update", card["id"], "--title", "Tracked Renamed")
    data = ok_data("history", renamed["path"])
    assert [e["event"] for e in data["entries"]] == ["updated", "used", "updated", "linked", "created"]
    rename = data["entries"][0]
    assert rename["details"]["renamed_from"] == card["path"]
    assert "-title: Tracked\n+title: Tracked Renamed\n" in rename["diff"]
    # `record` rewrote the card without logging its text, so the earlier update's later side is unknown.
    assert data["entries"][2]["diff"] is None and data["entries"][2]["details"]["changed"] == ["body"]
    deleted = ok_data("delete", card["id"])
    gone = ok_data("history", card["id"])
    assert gone["card"]["deleted"] is True and gone["entries"][0]["eid"] == deleted["event"]
    assert len(gone["entries"]) == 6
    code, out, _ = run_cli("history", card["id"])
    assert code == 0 and out.startswith(f"6 event(s) for deleted card {card['id']}")


def test_history_shows_the_diff_of_each_update(vault):
    card = make("Diffed")
    ok_data("update", card["id"], "--append", "line one")
    ok_data("update", card["id"], "--append", "line two")
    entries = ok_data("history", card["id"])["entries"]
    assert "+line two\n" in entries[0]["diff"] and "+line one\n" not in entries[0]["diff"]
    assert "+line one\n" in entries[1]["diff"]


def test_another_agents_private_card_has_no_history(vault):
    private = make("Private History", "--scope", "agent", "--agent", "alice")
    for agent in ((), ("--agent", "bob")):
        code, envelope, _ = run_json("history", private["id"], *agent)
        assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    assert ok_data("history", private["id"], "--agent", "alice")["entries"][0]["event"] == "created"


def test_undo_never_writes_outside_the_card_folders(vault):
    card = make("Target")
    import json

    log = vault / "logs" / "events.jsonl"
    forged = {"eid": "forged00-0000-4000-8000-000000000000", "ts": "2026-01-01T00:00:00+00:00", "event": "updated",
              "actor": "x", "files": [{"path": ".brain/config.toml", "before": "evil", "after": None}]}
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(forged) + "\n")
    before = vault_hashes(vault)
    code, envelope, _ = run_json("undo", forged["eid"])
    assert code == 2 and envelope["error"]["code"] == "UNSAFE_PATH"
    assert vault_hashes(vault) == before
    assert card


def test_undo_of_a_rename_relinks_the_cards_written_since_that_name_the_new_name(vault):
    """h14: a card written after a rename, linking to the new name (in its body, or the `related`
    mirror of a `link`), kept that link when the rename was undone: a link to the file the undo
    had just removed, and `doctor` sees none in a body. The undo follows the rename back."""
    card = make("Alpha")
    renamed = ok_data("update", card["id"], "--title", "Gamma")
    body_link = make("Delta", "--body", "See [[Pattern_Gamma|the gamma card]] too.")
    mirror = make("Echo")
    ok_data("link", mirror["id"], card["id"], "--rel", "extends")
    before_undo = file_hashes(vault)
    undone = ok_data("undo", renamed["event"])
    assert sorted(undone["files"]) == sorted([card["path"], renamed["path"], body_link["path"], mirror["path"]])
    assert sorted(undone["relinked"]) == sorted([body_link["path"], mirror["path"]])
    body = (vault / body_link["path"]).read_text(encoding="utf-8")
    assert body.endswith("See [[Pattern_Alpha|the gamma card]] too.\n")
    assert 'related: ["[[Pattern_Alpha]]"]' in (vault / mirror["path"]).read_text(encoding="utf-8")
    assert doctor_report()["findings"] == []
    ok_data("undo", undone["event"])   # the rename made again: the cards follow it again
    assert file_hashes(vault) == before_undo


def test_history_leaves_out_the_events_of_another_card_that_had_the_same_file_name(vault):
    """h14: history matched the events that named no card of its own by path alone, so a card
    renamed from `Alpha` listed the creation and edits of the new card named `Alpha` since (with
    their diffs as its own), and the new card's history listed the old one's rename."""
    card = make("Alpha")
    ok_data("update", card["id"], "--title", "Gamma")
    renamed = ok_data("update", card["id"], "--title", "Epsilon")
    newcomer = make("Alpha")
    assert newcomer["path"] == card["path"]
    edited = ok_data("update", newcomer["id"], "--append", "the newcomer's own line")
    pointer = make("Pointer")
    ok_data("link", pointer["id"], newcomer["id"], "--rel", "extends")
    cascade = ok_data("delete", newcomer["id"])   # rewrote the pointer: its history keeps that

    old = ok_data("history", renamed["path"])["entries"]
    assert [(e["event"], e["card"]) for e in old] == [
        ("updated", renamed["path"]), ("updated", "Playbooks/Pattern_Gamma.md"), ("created", card["path"])]
    new = ok_data("history", newcomer["id"])["entries"]
    assert [e["event"] for e in new] == ["deleted", "linked", "updated", "created"]
    assert (new[0]["eid"], new[2]["eid"]) == (cascade["event"], edited["event"])
    assert cascade["event"] in [e["eid"] for e in ok_data("history", pointer["id"])["entries"]]


def test_undo_forced_of_an_edit_made_before_a_rename_is_refused_rather_than_make_a_second_file(vault):
    """h14: `undo --force` of an update made before the card was renamed wrote the card's earlier
    text at its old file name, beside the renamed file: two files with one id (`doctor`: an
    error; `get` by id refused)."""
    card = make("Alpha")
    edit = ok_data("update", card["id"], "--body", "edited body")
    renamed = ok_data("update", card["id"], "--title", "Gamma")
    before, logged = vault_hashes(vault), len(events(vault))
    for force in ((), ("--force",)):
        code, _, err = run_cli("undo", edit["event"], *force)
        assert (code, err) == (1, f"brain: error: {card['path']} is gone: card {card['id']} is {renamed['path']} now, "
                                  f"and undoing event {edit['event']} would put a second file with that id beside it "
                                  f"(refused, --force too); undo what moved it first (`brain history {card['id']}`), "
                                  f"or edit {renamed['path']}\n")
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    ok_data("undo", renamed["event"])
    assert ok_data("undo", edit["event"])["files"] == [card["path"]]   # the rename undone first: it goes


def test_undo_of_a_create_takes_away_the_links_made_to_the_card_since_as_delete_does(vault):
    """h14: undoing a create after another card linked to the new one removed the card and left
    the other's `links` entry and `related` wikilink naming it: two broken links for `doctor`."""
    card = make("Kafka retries")
    source = make("Redis eviction")
    ok_data("link", source["id"], card["id"], "--rel", "extends")
    linked = file_hashes(vault)
    created = next(e["eid"] for e in events(vault) if e["event"] == "created" and e["id"] == card["id"])
    code, out, err = run_cli("undo", created)
    assert (code, err) == (0, "") and out.splitlines()[:3] == [
        f"undid created {created}: put back 0 file(s), removed 1, relinked 1",
        f"  {card['path']} (removed)", f"  {source['path']} (links followed)"]
    undone = {"event": events(vault)[-1]["eid"]}
    assert doctor_report()["findings"] == []
    assert "links" not in card_meta(vault / source["path"]) and "related" not in card_meta(vault / source["path"])
    ok_data("undo", undone["event"])
    assert file_hashes(vault) == linked


def test_undo_of_a_delete_whose_file_name_another_card_took_is_refused_even_forced(vault):
    """h14: a card deleted, a new card of the same title made (the same file name), then the
    delete undone: refused as "changed since", and with --force the old card was written over the
    new one, which left the vault with no copy kept (every other removal keeps one, for git)."""
    card = make("Alpha")
    deleted = ok_data("delete", card["id"])
    newcomer = make("Alpha")
    assert newcomer["path"] == card["path"]
    before, logged = vault_hashes(vault), len(events(vault))
    for force in ((), ("--force",)):
        code, _, err = run_cli("undo", deleted["event"], *force)
        assert (code, err) == (1, f"brain: error: {card['path']} holds another card now (id {newcomer['id']}); "
                                  f"undoing event {deleted['event']} would write card {card['id']} over it (refused, "
                                  f"--force too): rename or delete {card['path']} first, then undo again\n")
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    ok_data("update", newcomer["id"], "--title", "Alpha two")
    assert ok_data("undo", deleted["event"])["files"][0] == card["path"]
    assert ok_data("get", card["id"])["path"] == card["path"] and doctor_report()["findings"] == []
