"""`stats`, `analyze` and doctor's link checks through the real CLI, read from the index."""

from __future__ import annotations

import os
import re
import time
from datetime import datetime, timedelta

from helpers import ok_data, run_cli, vault_hashes, write_card


def make(title: str, tags: str = "alpha", card_type: str = "pattern", *extra: str) -> dict:
    return ok_data("create", "--type", card_type, "--domain", "dev", "--title", title, "--tags", tags,
                   "--body", f"About {title}.", *extra)


def test_stats_counts_cards_tags_links_inbox_and_working_memory(vault):
    a = make("Alpha Card", "k8s,deploy", "pattern", "--project", "shop")
    b = make("Beta Card", "deploy", "fact", "--project", "shop")
    make("Gamma Card", "deploy", "pattern")
    ok_data("link", a["id"], b["id"], "--rel", "extends")
    ok_data("learn", "--title", "Candidate", "--type", "pattern", "--domain", "dev", "--problem", "p", "--solution", "s")
    ok_data("remember", "note", "--body", "x")
    before = vault_hashes(vault)
    data = ok_data("stats")
    assert data["total"] == 3
    assert data["by_type"] == {"pattern": 2, "fact": 1}
    assert data["by_project"] == {"shop": 2, "(none)": 1}
    assert data["by_scope"] == {"global": 3} and data["by_status"] == {"active": 3}
    assert data["top_tags"][0] == {"name": "deploy", "count": 3} and data["total_tags"] == 2
    assert data["links"] == {"total": 1, "by_rel": {"extends": 1}, "broken": 0, "linked_cards": 2,
                             "unlinked_cards": 1}
    assert data["inbox"] == 1 and data["working_memory"] == {"entries": 1, "expired": 0, "notes": 1, "saved_states": 0, "sessions": 0}
    assert vault_hashes(vault) == before  # a read


def test_stats_text_says_links_by_kind_only_when_there_are_links(vault):
    # review6: a vault without links printed "links: 0 (-)".
    make("Alpha Card", "deploy", "pattern")
    code, out, _ = run_cli("stats")
    assert code == 0 and "links: 0; 0 linked card(s), 1 unlinked, 0 broken" in out.splitlines(), out
    b = make("Beta Card", "deploy", "pattern")
    ok_data("link", b["id"], "Pattern_Alpha_Card", "--rel", "extends")
    code, out, _ = run_cli("stats")
    assert "links: 1 (extends 1); 2 linked card(s), 0 unlinked, 0 broken" in out.splitlines(), out


def test_stats_get_stats_and_audit_count_the_same_open_candidates(vault):
    from test_mcp import Server, data_of

    ok_data("learn", "--title", "Open lesson", "--type", "pattern", "--domain", "dev", "--problem", "p", "--solution", "s")
    promoted = ok_data("learn", "--title", "Promoted lesson", "--type", "pattern", "--domain", "dev",
                       "--problem", "p2", "--solution", "s2")
    ok_data("promote", promoted["path"])
    write_card(vault, "Inbox/Learned_Rejected_lesson.md", "---\ntitle: Rejected lesson\nstatus: rejected\n"
               "source: learn\n---\n## Problem\np3\n")
    assert len(list((vault / "Inbox").glob("*.md"))) == 3   # closed candidates stay as records
    audit = ok_data("audit")["inbox"]
    assert (audit["candidates"], audit["closed"]) == (1, 2)
    assert ok_data("stats")["inbox"] == 1
    server = Server(vault)
    try:
        server.initialize()
        assert data_of(server.call("get_stats", {}), "get_stats")["inbox"] == 1
    finally:
        assert server.close()[0] == 0


def test_stats_and_analyze_read_the_index_not_every_card(vault, monkeypatch):
    lone = [make("Alpha Widget", "one"), make("Gamma Sprocket", "two"), make("Delta Lantern", "three")]
    pair = [make("Connection Pool Sizing", "pool"), make("Connection Pool Sizing Again", "pool")]
    ok_data("stats")  # builds the index
    # Every way of parsing a card (load_cards, load_card, card_from_text, under whatever name a
    # module imported it) ends in one `Card` object: count the objects built on the class itself,
    # which every importer shares. (Patching `storage.load_cards` caught nothing: the callers had
    # imported the function by name.)
    from external_brain.vault.storage import Card

    parsed: list[str] = []
    real_init = Card.__init__

    def counting_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        parsed.append(self.rel)

    monkeypatch.setattr(Card, "__init__", counting_init)
    assert ok_data("stats")["total"] == 5
    assert parsed == [], "stats parsed cards instead of reading the index"
    assert ok_data("analyze")["total"] == 5
    # analyze reads only the cards of a candidate near-duplicate pair (insights._judged_pairs).
    assert sorted(set(parsed)) == sorted(card["path"] for card in pair), parsed
    assert not {card["path"] for card in lone} & set(parsed)


def test_analyze_finds_each_kind_of_issue_with_ids_and_a_command(vault):
    untagged = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "No Tags Here", "--body", "b")
    k8s = make("Scaling Pods", "k8s")
    kube = make("Draining Nodes", "kubernetes")
    pg = make("Vacuum Tuning", "postgres")
    first = make("Connection Pool Sizing Guide", "pool,db")
    second = make("Connection Pool Sizing Guide Again", "pool,db")
    ok_data("link", k8s["id"], kube["id"], "--rel", "contradicts")
    write_card(vault, "Playbooks/Hand_Note.md", "---\ntitle: Hand Note\ntags: [x, PostgreSQL]\nrelated: [\"[[Nowhere]]\"]\n"
               "links:\n  - to: 00000000-dead-4bee-8000-000000000000\n    rel: extends\n    weight: 0.5\n---\nbody\n")
    write_card(vault, "Playbooks/Broken.md", "---\ntitle: [unclosed\n---\nbody\n")
    old = vault / pg["path"]
    long_ago = (datetime.now().astimezone() - timedelta(days=400)).replace(microsecond=0).isoformat()
    text = re.sub(r"^(created|updated): .*$", rf"\1: {long_ago}", old.read_text(encoding="utf-8"), flags=re.M)
    write_card(vault, pg["path"], text)  # written by hand: only its dates say it is old

    data = ok_data("analyze")
    issues = {i["type"]: i for i in data["issues"]}
    assert set(issues) == {"orphan_memories", "low_connectivity", "stale_memories", "near_duplicates",
                           "similar_tags", "contradictions", "broken_links", "unparseable_files"}
    assert issues["orphan_memories"]["affected_memory_ids"] == [untagged["id"]]
    assert "brain update CARD --add-tag" in issues["orphan_memories"]["suggested_action"]
    assert issues["stale_memories"]["affected_memory_ids"] == [pg["id"]]
    assert issues["near_duplicates"]["pairs"][0]["ids"] == [first["id"], second["id"]]
    groups = {g["keep"]: sorted(g["variants"]) for g in issues["similar_tags"]["groups"]}
    assert sorted(groups.values()) == [["PostgreSQL", "postgres"], ["k8s", "kubernetes"]]
    assert issues["contradictions"]["pairs"] == [[k8s["id"], kube["id"]]]
    assert issues["contradictions"]["severity"] == "high"
    assert sorted(link["target"] for link in issues["broken_links"]["links"]) == [
        "00000000-dead-4bee-8000-000000000000", "nowhere"]
    assert issues["unparseable_files"]["affected_memory_ids"] == ["Playbooks/Broken.md"]
    assert 0 <= data["health_score"] < 100 and data["total"] == 7


def test_analyze_names_cards_by_path_and_its_fixes_are_the_commands_that_exist(vault):
    from helpers import subprocess_cli

    first = make("Connection Pool Sizing Guide", "pool,db")
    second = make("Connection Pool Sizing Guide Again", "pool,db")
    write_card(vault, "Playbooks/Broken.md", "---\ntitle: [unclosed\n---\nbody\n")
    write_card(vault, "Playbooks/Latin1.md", "---\ntitle: café\n---\nbody\n".encode("latin-1"))
    issues = {i["type"]: i for i in ok_data("analyze")["issues"]}
    duplicates = issues["near_duplicates"]
    assert duplicates["affected_paths"] == [first["path"], second["path"]]
    assert duplicates["affected_memory_ids"] == [first["id"], second["id"]]
    assert "--append" not in duplicates["suggested_action"]
    assert f"brain merge {first['path']} {second['path']}" in duplicates["suggested_action"]
    unparseable = issues["unparseable_files"]
    assert unparseable["affected_paths"] == ["Playbooks/Broken.md", "Playbooks/Latin1.md"]
    assert [(p["path"], p["line"]) for p in unparseable["problems"]] == [("Playbooks/Broken.md", 2),
                                                                          ("Playbooks/Latin1.md", None)]
    assert unparseable["suggested_action"] == ("re-save Playbooks/Latin1.md as UTF-8; fix the frontmatter of "
                                               "the others at the line `brain doctor` shows")
    done = subprocess_cli("analyze", vault=vault)
    assert done.returncode == 0, done.stderr
    assert f"    affected: {first['path']}, {second['path']}\n" in done.stdout, done.stdout
    assert first["id"] not in done.stdout


def test_the_health_score_follows_its_documented_formula(vault):
    assert ok_data("analyze")["health_score"] == 100  # the empty vault
    a = make("Linked One", "one")
    b = make("Linked Two", "two")
    ok_data("link", a["id"], b["id"], "--rel", "related")
    assert ok_data("analyze") == {"total": 2, "health_score": 100, "issues": [],
                                  "suggestions": ["The vault is in good shape",
                                                  "Record failures too: troubleshooting cards and episodes are "
                                                  "what agents search for"],
                                  "stats": {"unlinked_memories": 0, "memories_per_project": {"(none)": 2},
                                            "links": 1, "broken_links": 0}}
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Bare", "--body", "b")
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Bare Too", "--body", "c")
    # 4 cards: 2 untagged (20 * 2/4 = 10), 2 unlinked of 4 is not over half (no low_connectivity).
    assert ok_data("analyze")["health_score"] == 90


def test_doctor_reports_links_to_missing_cards_and_wikilinks_that_name_no_card(vault):
    target = make("Soon Gone", "x")
    source = make("Holder", "x")
    ok_data("link", source["id"], target["id"], "--rel", "extends")
    os.unlink(vault / target["path"])  # deleted by hand: no cascade
    write_card(vault, "Playbooks/Hand.md", "---\ntitle: Hand\nrelated: [\"[[Missing Note]]\"]\n---\nbody\n")
    code, out, _ = run_cli("doctor")
    assert code == 0
    assert f"warning: {source['path']}: links to missing card {target['id']} (extends)" in out
    assert "warning: Playbooks/Hand.md: related wikilink [[missing note]] names no card in Playbooks/" in out


def test_stats_for_an_agent_counts_its_own_working_memory_and_never_another_agents(vault):
    # The last stop's note: an agent's own notes (WorkingMemory/agents/NAME/) were left out of
    # `stats --agent NAME`, though `context` and `brief` show them to it.
    ok_data("remember", "shared", "--body", "everyone's")
    ok_data("remember", "mine", "--body", "ada's", "--agent", "ada")
    ok_data("remember", "theirs", "--body", "bob's", "--agent", "bob")
    assert ok_data("stats", "--agent", "ada")["working_memory"] == {
        "entries": 2, "expired": 0, "notes": 2, "saved_states": 0, "sessions": 0, "own": 1}
    assert ok_data("stats")["working_memory"] == {"entries": 1, "expired": 0, "notes": 1, "saved_states": 0, "sessions": 0}
    code, out, err = run_cli("stats", "--agent", "ada")
    assert code == 0, err
    assert "working memory: 2 live in all sessions (2 notes for every session, 0 saved states), 0 expired, " \
           "1 of the live ones the agent's own" in out
