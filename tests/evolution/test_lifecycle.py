"""`update` and `delete` through the real CLI: only named keys change, hashes guard against lost
updates, a new title renames the file, a delete cascades over the links pointing at the card."""

from __future__ import annotations

from helpers import card_meta, doctor_report, events, ok_data, run_cli, run_json, vault_hashes, write_card

HAND_WRITTEN = """---
title: Retry budget
type: pattern
domain: dev
tags: [retry]
my_key: "kept 'as' written"   # a comment of mine
nested:
  a: 1
---
Intro line.

## Notes
keep me
"""


def test_update_changes_only_the_named_keys_and_keeps_every_other_byte(vault):
    path = write_card(vault, "Playbooks/Retry.md", HAND_WRITTEN)
    data = ok_data("update", "Retry", "--domain", "ops", "--add-tag", "backoff")
    assert data["changed"] == ["domain", "tags"]
    text = path.read_text(encoding="utf-8")
    meta = card_meta(path)
    assert meta["domain"] == "ops" and meta["tags"] == ["retry", "backoff"]
    assert meta["id"] and meta["updated"]  # the first write adds an id; `updated` moves
    expected = (HAND_WRITTEN.replace("domain: dev", "domain: ops").replace("tags: [retry]", "tags: [retry, backoff]"))
    expected = expected.replace("  a: 1\n---", f"  a: 1\nid: {meta['id']}\nupdated: {meta['updated']}\n---")
    assert text == expected


def test_update_body_append_and_title_heading(vault):
    created = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Pool Size", "--body", "old body")
    data = ok_data("update", created["id"], "--body", "new body", "--append", "appended", "--title", "Pool Sizing")
    assert data["changed"] == ["title", "body"]
    text = (vault / data["path"]).read_text(encoding="utf-8")
    assert text.endswith("\nnew body\n\nappended\n")
    code, out, err = run_cli("update", created["id"], "--body", "-", stdin="# Pool Sizing\n\nnew body\n")
    assert code == 0, err
    assert (vault / data["path"]).read_text(encoding="utf-8").endswith("---\n\n# Pool Sizing\n\nnew body\n")


def test_a_new_title_renames_the_file_and_the_id_still_finds_it(vault):
    created = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Conn pool", "--body", "Use one.")
    data = ok_data("update", created["path"], "--title", "Connection Pooling")
    assert data["path"] == "Playbooks/Pattern_Connection_Pooling.md"
    assert data["renamed_from"] == created["path"] and data["id"] == created["id"]
    assert not (vault / created["path"]).exists()
    shown = ok_data("get", created["id"])
    assert shown["path"] == data["path"] and shown["title"] == "Connection Pooling"
    assert "\n# Connection Pooling\n" in (vault / data["path"]).read_text(encoding="utf-8")
    assert ok_data("search", "connection pooling")["hits"][0]["id"] == created["id"]


def test_expect_hash_right_is_applied_and_stale_is_a_conflict_that_writes_nothing(vault):
    created = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Max conns", "--body", "100")
    first = ok_data("get", created["id"])["hash"]
    done = ok_data("update", created["id"], "--body", "200", "--expect-hash", first)
    assert done["hash"] == ok_data("get", created["id"])["hash"] != first
    before, logged = vault_hashes(vault), len(events(vault))
    code, envelope, _ = run_json("update", created["id"], "--body", "300", "--expect-hash", first)
    assert code == 1 and envelope["error"]["code"] == "CONFLICT"
    assert f"changed since hash {first}" in envelope["error"]["message"]
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    code, _, err = run_cli("update", created["id"], "--body", "300", "--expect-hash", first)
    assert code == 1 and err.startswith(f"brain: error: {created['path']} changed since hash {first} (now ")


def test_bad_update_input_is_one_line_and_changes_nothing(vault):
    created = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Stable", "--body", "x")
    before = vault_hashes(vault)
    for argv, message in [
        ((), "nothing to update; give --title"),
        (("--importance", "9"), "--importance 9 is out of range; give 1 to 5"),
        (("--type", "nope"), "unknown type 'nope'"),
        (("--add-tag", "a b,["), "bad tag '['"),
        (("--title", ""), "empty title"),
    ]:
        code, out, err = run_cli("update", created["id"], *argv)
        assert code == 2 and out == "" and err.startswith(f"brain: error: {message}"), (argv, err)
        assert err.count("\n") == 1
    code, _, err = run_cli("update", "Missing_Card", "--body", "x")
    assert code == 1 and "no card with path, stem or id 'Missing_Card'" in err
    assert vault_hashes(vault) == before


def test_an_update_that_changes_nothing_writes_and_logs_nothing(vault):
    created = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Same", "--tags", "a")
    before, logged = vault_hashes(vault), len(events(vault))
    data = ok_data("update", created["id"], "--tags", "a", "--domain", "dev")
    assert data["changed"] == [] and data["event"] is None
    assert vault_hashes(vault) == before and len(events(vault)) == logged


def test_update_event_carries_what_undo_needs(vault):
    created = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Logged", "--body", "one")
    original = (vault / created["path"]).read_text(encoding="utf-8")
    data = ok_data("update", created["id"], "--status", "archived")
    event = events(vault)[-1]
    assert event["event"] == "updated" and event["eid"] == data["event"] and event["id"] == created["id"]
    assert event["files"] == [{"path": created["path"], "before": original, "after": data["hash"]}]


def test_delete_cascades_over_every_source_in_one_event_and_dry_run_changes_nothing(vault):
    target = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Doomed", "--body", "x")
    sources = [ok_data("create", "--type", "pattern", "--domain", "dev", "--title", f"Source {n}", "--body", "y")
               for n in range(2)]
    keeper = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Keeper", "--body", "z")
    ok_data("link", sources[0]["id"], target["id"], "--rel", "extends")
    ok_data("link", sources[0]["id"], keeper["id"], "--rel", "related")
    ok_data("link", sources[1]["id"], target["id"], "--rel", "depends_on")
    write_card(vault, "Playbooks/Hand.md", '---\nrelated: ["[[Pattern_Doomed]]", "[[Other]]"]\n---\n# Hand\n')
    before, logged = vault_hashes(vault), len(events(vault))
    preview = ok_data("delete", target["id"], "--dry-run")
    expected = sorted(["Playbooks/Hand.md", sources[0]["path"], sources[1]["path"]])
    assert preview["dry_run"] is True and sorted(preview["cascaded"]) == expected and preview["event"] is None
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    texts = {rel: (vault / rel).read_text(encoding="utf-8") for rel in expected + [target["path"]]}

    done = ok_data("delete", target["id"])
    assert sorted(done["cascaded"]) == expected and not (vault / target["path"]).exists()
    first = card_meta(vault / sources[0]["path"])
    assert [e["to"] for e in first["links"]] == [keeper["id"]] and first["related"] == ["[[Pattern_Keeper]]"]
    second = card_meta(vault / sources[1]["path"])
    assert "links" not in second and "related" not in second
    assert card_meta(vault / "Playbooks/Hand.md")["related"] == ["[[Other]]"]
    assert ok_data("links", keeper["id"], "--direction", "in")["incoming"][0]["path"] == sources[0]["path"]
    (event,) = events(vault)[logged:]
    assert event["event"] == "deleted" and event["eid"] == done["event"] and event["id"] == target["id"]
    kept = f".brain/deleted/Playbooks/{target['id']}.md"   # the card's copy, so git sees a rename (journal.py)
    assert {f["path"]: f["before"] for f in event["files"]} == {**texts, kept: None}
    assert (vault / kept).read_text(encoding="utf-8") == texts[target["path"]]
    assert event["kept_in"] == {target["path"]: kept}
    code, envelope, _ = run_json("get", target["id"])
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"


def test_delete_of_a_missing_card_or_with_a_stale_hash_changes_nothing(vault):
    card = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Stays", "--body", "x")
    before = vault_hashes(vault)
    code, _, err = run_cli("delete", "Nope_Card")
    assert code == 1 and err == "brain: error: no card with path, stem or id 'Nope_Card'; " \
                                "`brain search` or `brain list` finds it\n"
    code, envelope, _ = run_json("delete", card["id"], "--expect-hash", "1:00000000")
    assert code == 1 and envelope["error"]["code"] == "CONFLICT"
    code, _, err = run_cli("delete", "../etc/passwd")
    assert code == 2 and "'..' is not allowed" in err
    assert vault_hashes(vault) == before


def _state(text: str, moment: str) -> str:
    """The id of the one state card `ingest` makes of `text`, holding from `moment`."""
    code, out, err = run_cli("ingest", "-", "--event-time", moment, "--json", stdin=text)
    assert code == 0, err
    (card_id,) = __import__("json").loads(out)["data"]["ids"]
    return card_id


def test_delete_of_a_card_in_the_middle_of_a_supersede_chain_closes_the_chain_around_it(vault):
    """h14: deleting version 15 of a state left version 14 `superseded_by` it and version 16
    `supersedes` it: the chain led nowhere, `search --as-of` a moment in version 15's time found
    nothing, and `doctor` said nothing. The head deleted leaves the older card superseded by a
    card that is no more: doctor names it."""
    v14 = _state("The staging DB is at version 14.", "2026-01-01T00:00:00+00:00")
    v15 = _state("The staging DB is at version 15 now.", "2026-02-01T00:00:00+00:00")
    v16 = _state("The staging DB is at version 16 now.", "2026-03-01T00:00:00+00:00")
    paths = {card_id: ok_data("get", card_id)["path"] for card_id in (v14, v16)}
    deleted = ok_data("delete", v15)
    assert sorted(deleted["cascaded"]) == sorted(paths.values())
    older, newer = card_meta(vault / paths[v14]), card_meta(vault / paths[v16])
    assert (older["superseded_by"], older["valid_to"], newer["supersedes"]) == (v16, "2026-03-01T00:00:00+00:00", v14)
    hits = ok_data("search", "staging DB version", "--as-of", "2026-02-15T00:00:00+00:00")["hits"]
    assert [hit["id"] for hit in hits] == [v14]
    assert doctor_report()["findings"] == []

    ok_data("delete", v16)
    (finding,) = doctor_report()["findings"]
    assert (finding["level"], finding["path"]) == ("warning", paths[v14])
    assert finding["message"].startswith(f"superseded by {v16}, which no card is")
