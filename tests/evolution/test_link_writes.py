"""What `link`, `unlink` and a rename write into a card: an agent-private card's id and name never
go into a card other agents can read, and a wikilink a person wrote by hand is never dropped by
unlinking another relation."""

from __future__ import annotations

import json

import pytest

from helpers import card_meta, events, run_json, ok_data, vault_hashes, write_card


def card(title: str, agent: str | None = None) -> dict:
    scope = ["--scope", "agent", "--agent", agent] if agent else []
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, *scope)


@pytest.mark.parametrize("source_agent", [None, "bob"])
def test_linking_a_card_others_can_read_to_a_private_card_is_refused_and_changes_nothing(vault, source_agent):
    source = card("Shared Source", source_agent)
    secret = card("Alice Secret Plan", "alice")
    before, logged = vault_hashes(vault), len(events(vault))

    code, envelope, err = run_json("link", source["id"], secret["id"], "--rel", "related")

    assert code == 1 and envelope["error"]["code"] == "PRIVATE_LINK"
    message = envelope["error"]["message"]
    assert "\n" not in message and "private to agent 'alice'" in message and "link the other way" in message
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    text = (vault / source["path"]).read_text(encoding="utf-8")
    assert secret["id"] not in text and "Secret" not in text
    # What the message offers works: the private card may name a shared one.
    if source_agent is None:
        assert ok_data("link", secret["id"], source["id"], "--rel", "related")["changed"] is True
    else:  # another agent's private card: neither may name the other
        assert run_json("link", secret["id"], source["id"], "--rel", "related")[1]["error"]["code"] == "PRIVATE_LINK"


def test_renaming_a_private_card_does_not_write_its_new_name_into_cards_others_can_read(vault):
    secret = card("Alice Plan", "alice")
    own = card("Alice Notes", "alice")
    ok_data("link", own["id"], secret["id"], "--rel", "extends")  # both private to alice: allowed
    # A person wrote a wikilink to the private card into a shared card by hand.
    shared = write_card(vault, "Playbooks/Shared_Notes.md",
                        "---\ntitle: Shared Notes\nrelated: [\"[[Pattern_Alice_Plan (alice)]]\"]\n---\nnotes\n")
    shared_before = shared.read_bytes()

    data = ok_data("update", secret["id"], "--title", "Alice Secret Merger")

    assert data["path"] == "Playbooks/Pattern_Alice_Secret_Merger (alice).md"
    assert shared.read_bytes() == shared_before  # not rewritten: the new title stays private
    assert card_meta(vault / own["path"])["related"] == ["[[Pattern_Alice_Secret_Merger (alice)]]"]  # its own agent's card
    assert data["relinked"] == [own["path"]]


# ---------------------------------------------------------------------------- a person's own wikilink

def test_unlinking_another_relation_keeps_the_wikilink_a_person_wrote(vault):
    target, other = card("Pool Principle"), card("Other Card")
    note = write_card(vault, "Playbooks/Note.md", '---\ntitle: Note\nrelated: ["[[Pattern_Pool_Principle]]"]\n---\n'
                                                  "# Note\n")
    ok_data("link", "Note", target["id"], "--rel", "extends")
    assert card_meta(note)["related"] == ["[[Pattern_Pool_Principle]]"]
    assert events(vault)[-1]["kept_wikilink"] is True

    ok_data("link", "Note", other["id"], "--rel", "extends")
    assert card_meta(note)["related"] == ["[[Pattern_Pool_Principle]]", "[[Pattern_Other_Card]]"]

    ok_data("unlink", "Note", target["id"], "--rel", "extends")
    ok_data("unlink", "Note", other["id"], "--rel", "extends")

    meta = card_meta(note)
    # What the person wrote survives; the wikilink the tool wrote for its own link goes with it.
    assert meta["related"] == ["[[Pattern_Pool_Principle]]"]
    out = ok_data("links", "Note", "--direction", "out")["outgoing"]
    assert [(i["path"], i["rel"], i["weight"]) for i in out] == [(target["path"], "related", 0.5)]
    # Without --rel, unlink removes every link to the target, the person's wikilink too (decisions.md).
    ok_data("unlink", "Note", target["id"])
    assert "related" not in card_meta(note) and "links" not in card_meta(note)


# ---------------------------------------------------------------------------- what errors and raw reads show

def test_an_ambiguous_id_prefix_never_names_a_private_card(vault):
    for name, scope in (("Shared_Prefix", ""), ("Alice_Merger_Plan", "scope: agent\nagent: alice\n")):
        write_card(vault, f"Playbooks/{name}.md",
                   f"---\nid: abcdef12-0000-4000-8000-{len(name):012d}\ntitle: {name}\n{scope}---\n# {name}\n")
    code, envelope, _ = run_json("get", "abcdef12")
    message = envelope["error"]["message"]
    assert code == 1 and envelope["error"]["code"] == "AMBIGUOUS"
    assert message == "abcdef12 matches 2 cards (Playbooks/Shared_Prefix.md, 1 private); give the full id or path"
    assert "Alice" not in message and "Merger" not in message


def test_get_on_an_unparseable_private_card_shows_its_raw_text_only_to_its_agent(vault):
    write_card(vault, "Playbooks/Alice_Broken.md",
               "---\ntitle: Alice Broken\nscope: agent\nagent: alice\ntags: [unclosed\n---\nthe secret body\n")
    for agent in (None, "bob"):
        code, envelope, _ = run_json("get", "Alice_Broken", *(["--agent", agent] if agent else []))
        assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
        assert "secret" not in json.dumps(envelope)
    data = ok_data("get", "Alice_Broken", "--agent", "alice")
    assert "the secret body" in data["raw"] and "bad frontmatter" in data["warning"]


def test_history_of_an_unparseable_private_card_is_shown_only_to_its_agent(vault):
    made = card("Alice Diary", "alice")
    ok_data("update", made["id"], "--append", "the secret entry")
    path = vault / made["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("tags: []", "tags: [unclosed"), encoding="utf-8")
    for agent in (None, "bob"):
        code, envelope, _ = run_json("history", made["path"], *(["--agent", agent] if agent else []))
        assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
        assert "secret" not in json.dumps(envelope)
    assert ok_data("history", made["path"], "--agent", "alice")["entries"]
