"""Obsidian's own edits kept (issue 21, "Obsidian's own edits kept"; README): a changed key keeps
the note's style, frontmatter other YAML tools write is read, a rename relinks every wikilink to
the card, a person's own value under a key the product also uses is never overwritten silently,
and tags and aliases work as Obsidian has them. Through the real CLI on a real vault, except
where a test names the reader or writer itself."""

from __future__ import annotations

import pytest

from external_brain.vault.frontmatter import parse, update
from helpers import (
    card_meta, events, file_hashes, ok_data, pending_journal, run_cli, run_json, temp_files, vault_hashes, write_card,
)
from test_crash_safety import STEPS, killed_at


def note(vault, rel: str, front: str, body: str = "Some text.\n"):
    return write_card(vault, rel, f"---\n{front}---\n{body}")


# ---------------------------------------------------------------------------- a changed key keeps its style

OBSIDIAN_BLOCK = """\
---
title: Kafka lag
tags:  # kept in Obsidian's property editor
  - kafka
  # the broker side
  - streaming  # most cards have it
aliases:
  - consumer lag
---
# Kafka lag

Lag grows while partitions rebalance.
"""


def test_adding_a_tag_keeps_a_block_list_a_block_list_with_its_comments(vault):
    path = write_card(vault, "Playbooks/Kafka lag.md", OBSIDIAN_BLOCK)
    ok_data("update", "Kafka lag", "--add-tag", "ops")
    text = path.read_text(encoding="utf-8")
    assert "tags:  # kept in Obsidian's property editor\n  - kafka\n  # the broker side\n" \
           "  - streaming  # most cards have it\n  - ops\n" in text, text
    assert card_meta(path)["tags"] == ["kafka", "streaming", "ops"]


def test_removing_a_tag_keeps_the_other_items_and_comments_as_written(vault):
    path = write_card(vault, "Playbooks/Kafka lag.md", OBSIDIAN_BLOCK)
    ok_data("update", "Kafka lag", "--remove-tag", "kafka")
    text = path.read_text(encoding="utf-8")
    assert "tags:  # kept in Obsidian's property editor\n  # the broker side\n" \
           "  - streaming  # most cards have it\naliases:" in text, text


def test_a_block_list_at_the_keys_own_indentation_stays_so():
    text = "---\ntags:\n- a\n- 'b'\n---\nbody\n"
    assert update(text, {"tags": ["a", "b", "c"]}) == "---\ntags:\n- a\n- 'b'\n- c\n---\nbody\n"


def test_a_flow_list_stays_a_flow_list_and_keeps_its_trailing_comment(vault):
    path = note(vault, "Playbooks/Flow.md", "title: Flow\ntags: [a, b]  # mine\nstatus: draft  # still writing\n")
    ok_data("update", "Flow", "--add-tag", "c", "--status", "review")
    text = path.read_text(encoding="utf-8")
    assert "tags: [a, b, c]  # mine\n" in text and "status: review  # still writing\n" in text, text


def test_a_comment_after_an_empty_value_stays_after_the_value_written():
    assert update("---\nstatus:  # none yet\n---\n", {"status": "done"}) == "---\nstatus: done  # none yet\n---\n"


def test_a_crlf_block_list_keeps_its_line_endings():
    text = "---\r\ntags:\r\n  - a # one\r\n---\r\nbody\r\n"
    assert update(text, {"tags": ["a", "b"]}) == "---\r\ntags:\r\n  - a # one\r\n  - b\r\n---\r\nbody\r\n"


# ---------------------------------------------------------------------------- what other YAML tools write

def test_a_top_level_flow_mapping_is_read_and_stays_a_flow_mapping(vault):
    path = note(vault, "Playbooks/Flow doc.md", "{tags: [kafka, ops], title: Flow document, type: insight}\n",
                "Written by yaml.safe_dump with default_flow_style=True.\n")
    got = ok_data("get", "Flow doc")
    assert (got["title"], got["tags"]) == ("Flow document", ["kafka", "ops"])
    ok_data("record", "Flow doc", "used")
    text = path.read_text(encoding="utf-8")
    front = text.split("---\n")[1]
    assert front.startswith("{") and front.count("\n") == 1, text
    meta = card_meta(path)
    assert meta["tags"] == ["kafka", "ops"] and meta["confidence"] == 0.55 and meta["id"]


def test_a_flow_mapping_over_several_lines_is_read():
    text = "---\n{tags: [a], title: x,\n  more: [1, 2]}\n---\n"
    assert parse(text).data == {"tags": ["a"], "title": "x", "more": [1, 2]}


def test_plain_scalars_wrapped_inside_brackets_are_read_as_yaml_folds_them():
    text = "---\ntags: [alpha beta gamma, delta\n    epsilon zeta, eta]\nkeys: {a: one\n  two, b: 3}\n---\n"
    assert parse(text).data == {"tags": ["alpha beta gamma", "delta epsilon zeta", "eta"],
                                "keys": {"a": "one two", "b": 3}}


def test_explicit_keys_are_read():
    text = "---\n? long key\n: value\n? other\n: - a\n  - b\nplain: 1\n---\n"
    assert parse(text).data == {"long key": "value", "other": ["a", "b"], "plain": 1}


def test_a_key_longer_than_yaml_allows_inline_is_written_as_an_explicit_key():
    key = "k" * 1100
    text = update("---\ntitle: x\n---\n", {key: "v"})
    assert f"\n? {key}\n: v\n" in text
    assert parse(text).data == {"title": "x", key: "v"}
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(text.split("---\n")[1]) == {"title": "x", key: "v"}


# ---------------------------------------------------------------------------- rename relinks every wikilink

ALPHA = "---\ntitle: Alpha\ntype: insight\ndomain: general\n---\n# Alpha\n\nThe first card.\n"


def test_a_rename_relinks_every_wikilink_form_in_every_card(vault):
    write_card(vault, "Playbooks/Alpha.md", ALPHA)
    linker = note(vault, "Playbooks/Linker.md",
                  'title: Linker\nup: "[[Alpha]]"\nrelated:\n  - [[Alpha]]\n  - "[[Other]]"\nsee: [[Alpha|the first]]\n',
                  "See [[Alpha]], [[Alpha|the first card]], [[Alpha#The first]] and [[alpha]].\n\n![[Alpha]]\n\n"
                  "Not a link: `[[Alpha]]` in code.\n\n```\n[[Alpha]]\n```\n")
    inbox = note(vault, "Inbox/Candidate.md", "title: Candidate\nstatus: candidate\n", "Builds on [[Alpha]].\n")
    before = {p: p.read_text(encoding="utf-8") for p in (linker, inbox)}
    result = ok_data("update", "Alpha", "--title", "Beta")
    assert result["path"] == "Playbooks/Insight_Beta.md"
    assert sorted(result["relinked"]) == ["Inbox/Candidate.md", "Playbooks/Linker.md"]
    text = linker.read_text(encoding="utf-8")
    assert 'up: "[[Insight_Beta]]"\n' in text
    assert "  - [[Insight_Beta]]\n" in text and '  - "[[Other]]"\n' in text
    assert "see: [[Insight_Beta|the first]]\n" in text
    assert "See [[Insight_Beta]], [[Insight_Beta|the first card]], [[Insight_Beta#The first]] and " \
           "[[Insight_Beta]].\n\n![[Insight_Beta]]\n" in text
    assert "`[[Alpha]]` in code" in text and "```\n[[Alpha]]\n```" in text  # code is not a link
    assert "Builds on [[Insight_Beta]]." in inbox.read_text(encoding="utf-8")
    # One logged operation, undone as one.
    updated = [e for e in events(vault) if e["event"] == "updated"][-1]
    assert {f["path"] for f in updated["files"]} >= {"Playbooks/Linker.md", "Inbox/Candidate.md"}
    ok_data("undo", updated["eid"])
    assert {p: p.read_text(encoding="utf-8") for p in (linker, inbox)} == before
    assert (vault / "Playbooks/Alpha.md").read_text(encoding="utf-8") == ALPHA


def test_a_rename_relinks_path_and_extension_forms_and_keeps_alias_links(vault):
    write_card(vault, "Playbooks/Alpha.md", ALPHA.replace("domain: general\n", "domain: general\naliases: [Wolverine]\n"))
    linker = note(vault, "Playbooks/Linker.md", "title: Linker\n",
                  "[[Playbooks/Alpha]] and [[Alpha.md]] and [[Wolverine]] and [[Alphabet]].\n")
    ok_data("update", "Alpha", "--title", "Beta")
    assert linker.read_text(encoding="utf-8").endswith(
        "[[Playbooks/Insight_Beta]] and [[Insight_Beta.md]] and [[Wolverine]] and [[Alphabet]].\n")


@pytest.mark.parametrize("step", STEPS)
def test_a_rename_killed_at_any_step_is_finished_by_the_next_write_with_every_link_followed(vault, step):
    hub = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Hub", "--body", "hub")
    leaf = note(vault, "Playbooks/Leaf.md", "title: Leaf\nup: \"[[Pattern_Hub]]\"\n", "Body link to [[Pattern_Hub#Top]].\n")
    before = file_hashes(vault)
    killed_at(step, "update", hub["id"], "--title", "Hub Renamed", vault=vault)
    ok_data("remember", "next-write", "--body", "rolls the journal forward")
    assert pending_journal(vault) == [] and temp_files(vault) == []
    text = leaf.read_text(encoding="utf-8")
    assert 'up: "[[Pattern_Hub_Renamed]]"' in text and "[[Pattern_Hub_Renamed#Top]]" in text, text
    updated = [e for e in events(vault) if e["event"] == "updated"]
    assert len(updated) == 1
    ok_data("undo", updated[0]["eid"])
    assert {k: v for k, v in file_hashes(vault).items() if k.startswith("Playbooks/")} == \
        {k: v for k, v in before.items() if k.startswith("Playbooks/")}


# ---------------------------------------------------------------------------- a person's own values

def test_links_written_as_wikilinks_by_a_person_are_kept_and_link_still_works(vault):
    write_card(vault, "Playbooks/Alpha.md", ALPHA)
    write_card(vault, "Playbooks/Gamma.md", ALPHA.replace("Alpha", "Gamma"))
    source = note(vault, "Playbooks/Source.md", 'title: Source\nlinks:\n  - "[[Alpha]]"\n')
    result = ok_data("link", "Source", "Gamma", "--rel", "extends")
    assert result["changed"] is True
    text = source.read_text(encoding="utf-8")
    assert 'links:\n  - "[[Alpha]]"\n  - to: ' in text, text
    links = card_meta(source)["links"]
    assert links[0] == "[[Alpha]]" and links[1]["rel"] == "extends"
    outgoing = ok_data("links", "Source")
    assert {(link["rel"], link["path"]) for link in outgoing["outgoing"]} >= {("extends", "Playbooks/Gamma.md"),
                                                                             ("related", "Playbooks/Alpha.md")}
    ok_data("unlink", "Source", "Gamma")
    assert card_meta(source)["links"] == ["[[Alpha]]"]


def test_a_persons_own_confidence_word_is_reported_and_never_replaced_silently(vault):
    path = note(vault, "Playbooks/Own.md", "title: Own\nconfidence: high\n")
    code, out, err = run_cli("doctor")
    assert "Playbooks/Own.md" in out + err and "confidence: high" in out + err
    data = ok_data("record", "Own", "used")
    assert data["replaced"] == {"confidence": "high"}
    recorded = [e for e in events(vault) if e["event"] == "used"][0]
    assert recorded["replaced"] == {"confidence": "high"} and recorded["files"]
    ok_data("undo", recorded["eid"])
    assert card_meta(path)["confidence"] == "high"  # put back as the person wrote it
    ok_data("record", "Own", "used")
    again = ok_data("record", "Own", "used")
    assert "replaced" not in again  # a number now: nothing of the person's is replaced again


def test_record_in_text_says_what_it_replaced(vault):
    note(vault, "Playbooks/Own.md", "title: Own\nconfidence: high\n")
    code, out, err = run_cli("record", "Own", "used")
    assert code == 0
    assert "replaced your confidence: high" in out + err


def test_a_short_id_written_by_a_person_finds_its_card_and_a_shared_one_is_ambiguous(vault):
    first = note(vault, "Playbooks/First.md", "title: First\nid: 42\n")
    note(vault, "Playbooks/Only.md", "title: Only\nid: 7\n")
    assert ok_data("get", "7")["path"] == "Playbooks/Only.md"
    note(vault, "Playbooks/Second.md", "title: Second\nid: 42\n")
    code, envelope, err = run_json("get", "42")
    assert code == 1 and envelope["error"]["code"] == "AMBIGUOUS", envelope
    code, out, err = run_cli("doctor")
    assert "id 42" in out + err and "Playbooks/First.md" in out + err and "Playbooks/Second.md" in out + err
    assert first.read_text(encoding="utf-8").count("id: 42") == 1  # never rewritten


def test_analyze_tells_apart_two_cards_sharing_an_id(vault):
    note(vault, "Playbooks/First.md", "title: Kafka consumer lag\nid: 42\ntype: insight\n", "Kafka consumer lag.\n")
    note(vault, "Playbooks/Second.md", "title: Kafka consumer lag\nid: 42\ntype: insight\n", "Lag fix.\n")
    issues = {issue["type"]: issue for issue in ok_data("analyze")["issues"]}
    # Each card is named apart (by its path, its id being shared), never as one card twice.
    assert sorted(issues["orphan_memories"]["affected_memory_ids"]) == ["Playbooks/First.md", "Playbooks/Second.md"]
    assert [sorted(pair["ids"]) for pair in issues["near_duplicates"]["pairs"]] == \
        [["Playbooks/First.md", "Playbooks/Second.md"]]


# ---------------------------------------------------------------------------- tags and aliases

def test_inline_tags_in_the_body_count_for_tag_filters(vault):
    note(vault, "Playbooks/Inline.md", "title: Inline tags\n",
         "Kafka lag fix. #kafka #project/alpha/beta\n\n`#notatag` and https://x.io/#anchor and C# and #123\n")
    note(vault, "Playbooks/Other.md", "title: Other kafka note\ntags: [redis]\n", "Kafka lag elsewhere.\n")
    assert [h["path"] for h in ok_data("search", "kafka lag", "--tag", "kafka")["hits"]] == ["Playbooks/Inline.md"]
    assert [c["path"] for c in ok_data("list", "--tag", "project/alpha")["cards"]] == ["Playbooks/Inline.md"]
    for word in ("notatag", "anchor", "123"):
        assert ok_data("list", "--tag", word)["cards"] == []


def test_a_parent_tag_matches_its_nested_tags(vault):
    note(vault, "Playbooks/Nested.md", "title: Nested\ntags: [project/alpha]\n", "Kafka lag.\n")
    note(vault, "Playbooks/Prefix.md", "title: Prefix\ntags: [projects]\n", "Kafka lag.\n")
    assert [h["path"] for h in ok_data("search", "kafka lag", "--tag", "project")["hits"]] == ["Playbooks/Nested.md"]
    assert [c["path"] for c in ok_data("list", "--tag", "Project")["cards"]] == ["Playbooks/Nested.md"]
    assert ok_data("list", "--tag", "project/alpha/deeper")["cards"] == []


def test_get_finds_a_card_by_its_alias(vault):
    note(vault, "Playbooks/Logan.md", "title: Logan\naliases: [Wolverine, 'Weapon X']\n", "Claws.\n")
    assert ok_data("get", "Wolverine")["path"] == "Playbooks/Logan.md"
    assert ok_data("get", "weapon x")["path"] == "Playbooks/Logan.md"
    note(vault, "Playbooks/Other.md", "title: Other\naliases: [Weapon X]\n", "Also.\n")
    code, envelope, err = run_json("get", "Weapon X")
    assert envelope["error"]["code"] == "AMBIGUOUS"


def test_an_alias_of_another_agents_private_card_is_not_found(vault):
    note(vault, "Playbooks/Secret.md", "title: Secret\naliases: [Hidden]\nscope: agent\nagent: alice\n", "x\n")
    code, envelope, err = run_json("get", "Hidden", "--agent", "bob")
    assert envelope["error"]["code"] == "NOT_FOUND"
    assert ok_data("get", "Hidden", "--agent", "alice")["path"] == "Playbooks/Secret.md"
