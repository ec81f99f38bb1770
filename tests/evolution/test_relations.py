"""Relations through the real CLI (docs/card-format.md, Frontmatter keys): link upserts and versions, `related` wikilinks kept in
step, incoming links from the index, Obsidian wikilinks as links, renames, privacy, bad input."""

from __future__ import annotations

from helpers import card_meta, events, ok_data, run_cli, run_json, vault_hashes, write_card


def make(title: str, **extra: str) -> dict:
    argv = ["create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", f"About {title}."]
    for key, value in extra.items():
        argv += [f"--{key}", value]
    return ok_data(*argv)


def hand_link(vault, rel_path: str, target_id: str, rel: str) -> None:
    """Write a `links` entry into a card by hand, as a person editing the file would."""
    path = vault / rel_path
    text = path.read_text(encoding="utf-8")
    end = text.index("\n---", 3)
    path.write_text(text[:end] + f"\nlinks:\n  - to: {target_id}\n    rel: {rel}" + text[end:], encoding="utf-8")


def test_link_then_relink_bumps_the_version_and_keeps_related_in_step(vault):
    a, b = make("Pool Principle"), make("PG Pooling")
    first = ok_data("link", b["id"], a["id"], "--rel", "extends", "--weight", "0.8", "--reason", "applies it")
    assert (first["version"], first["weight"], first["changed"]) == (1, 0.8, True)
    meta = card_meta(vault / b["path"])
    assert meta["related"] == ["[[Pattern_Pool_Principle]]"]
    assert [(e["to"], e["rel"], e["weight"], e["reason"], e["version"]) for e in meta["links"]] == [
        (a["id"], "extends", 0.8, "applies it", 1)]
    again = ok_data("link", b["id"], a["id"], "--rel", "extends", "--weight", "0.9")
    assert (again["version"], again["weight"], again["reason"]) == (2, 0.9, "applies it")
    before, logged = vault_hashes(vault), len(events(vault))
    same = ok_data("link", b["id"], a["id"], "--rel", "extends", "--weight", "0.9")
    assert same["changed"] is False and same["version"] == 2
    assert vault_hashes(vault) == before and len(events(vault)) == logged
    other = ok_data("link", b["id"], a["id"], "--rel", "depends_on")  # another rel is another link
    assert other["version"] == 1 and other["weight"] == 1.0
    meta = card_meta(vault / b["path"])
    assert [e["rel"] for e in meta["links"]] == ["extends", "depends_on"]
    assert meta["related"] == ["[[Pattern_Pool_Principle]]"]
    assert [e["event"] for e in events(vault)][-3:] == ["linked", "linked", "linked"]


def test_links_in_and_out_come_with_relation_weight_and_reason(vault):
    a, b, c = make("Alpha Card"), make("Beta Card"), make("Gamma Card")
    ok_data("link", b["id"], a["id"], "--rel", "extends", "--reason", "builds on it")
    ok_data("link", c["id"], a["id"], "--rel", "contradicts", "--weight", "0.3")
    ok_data("link", a["id"], c["id"], "--rel", "related")
    data = ok_data("links", a["id"])
    assert [(i["path"], i["rel"], i["weight"]) for i in data["outgoing"]] == [(c["path"], "related", 1.0)]
    assert [(i["path"], i["rel"], i["weight"], i.get("reason")) for i in data["incoming"]] == [
        (b["path"], "extends", 1.0, "builds on it"), (c["path"], "contradicts", 0.3, None)]
    assert ok_data("links", a["id"], "--direction", "in")["outgoing"] == []
    code, out, _ = run_cli("links", a["path"], "--direction", "in")
    assert code == 0 and "<- extends 1  Beta Card  (Playbooks/Pattern_Beta_Card.md) - builds on it" in out


def test_a_hand_written_obsidian_wikilink_is_an_incoming_related_link(vault):
    target = make("Connection Pooling")
    write_card(vault, "Playbooks/My Obsidian note.md",
               '---\nrelated: ["[[Pattern_Connection_Pooling]]", "[[Nowhere]]"]\n---\n# My note\n')
    incoming = ok_data("links", target["id"], "--direction", "in")["incoming"]
    assert [(i["path"], i["rel"], i["weight"], i["via"]) for i in incoming] == [
        ("Playbooks/My Obsidian note.md", "related", 0.5, "wikilink")]
    out = ok_data("links", "My Obsidian note", "--direction", "out")["outgoing"]
    assert [(i["path"], i["missing"]) for i in out] == [(target["path"], False), (None, True)]


def test_unlink_removes_the_link_and_its_wikilink_and_an_unknown_link_is_not_found(vault):
    a, b = make("Keep Card"), make("Drop Card")
    write_card(vault, "Playbooks/Note.md", '---\nrelated: ["[[Mine]]"]\n---\n# Note\n')
    ok_data("link", "Note", a["id"], "--rel", "extends")
    ok_data("link", "Note", b["id"], "--rel", "related")
    assert card_meta(vault / "Playbooks/Note.md")["related"] == ["[[Mine]]", "[[Pattern_Keep_Card]]",
                                                                  "[[Pattern_Drop_Card]]"]
    done = ok_data("unlink", "Note", b["id"])
    assert len(done["removed"]) == 1
    meta = card_meta(vault / "Playbooks/Note.md")
    assert meta["related"] == ["[[Mine]]", "[[Pattern_Keep_Card]]"] and [e["to"] for e in meta["links"]] == [a["id"]]
    code, envelope, _ = run_json("unlink", "Note", b["id"])
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    assert envelope["error"]["message"] == "Playbooks/Note.md has no link to Playbooks/Pattern_Drop_Card.md; " \
                                           "`links Playbooks/Note.md` shows its links"
    assert ok_data("links", b["id"], "--direction", "in")["incoming"] == []


def test_bad_link_input_is_one_line_and_changes_nothing(vault):
    a, b = make("First Card"), make("Second Card")
    before = vault_hashes(vault)
    for argv, code, message in [
        (("link", a["id"], b["id"], "--rel", "likes"), 2, "unknown relation 'likes'; use one of: related, supersedes"),
        (("link", a["id"], b["id"], "--rel", "related", "--weight", "1.5"), 2,
         "--weight 1.5 is out of range; give a number from 0 to 1"),
        (("link", a["id"], b["id"], "--rel", "related", "--weight", "nan"), 2, "--weight nan is out of range"),
        (("link", a["id"], a["path"], "--rel", "related"), 2, f"{a['path']} cannot link to itself"),
        (("link", a["id"], "No_Such_Card", "--rel", "related"), 1, "no card with path, stem or id 'No_Such_Card'"),
        (("links", a["id"], "--direction", "up"), 2, "argument --direction: invalid choice"),
    ]:
        got, out, err = run_cli(*argv)
        assert got == code and out == "" and err.startswith(f"brain: error: {message}"), (argv, err)
        assert err.count("\n") == 1
    assert vault_hashes(vault) == before


def test_relations_come_from_config(vault):
    (vault / ".brain" / "config.toml").write_text('relations = ["related", "blocks"]\n', encoding="utf-8")
    a, b = make("Blocker"), make("Blocked")
    assert ok_data("link", a["id"], b["id"], "--rel", "blocks")["rel"] == "blocks"
    code, _, err = run_cli("link", a["id"], b["id"], "--rel", "extends")
    assert code == 2 and "use one of: related, blocks" in err


def test_a_renamed_card_keeps_its_links_by_id_and_wikilinks_follow(vault):
    a, b = make("Old Name"), make("Linker")
    ok_data("link", b["id"], a["id"], "--rel", "extends")
    write_card(vault, "Playbooks/Hand.md", '---\nrelated: ["[[Pattern_Old_Name|the old one]]"]\n---\n# Hand\n')
    data = ok_data("update", a["id"], "--title", "New Name")
    assert data["path"] == "Playbooks/Pattern_New_Name.md"
    assert sorted(data["relinked"]) == ["Playbooks/Hand.md", b["path"]]
    assert card_meta(vault / b["path"])["related"] == ["[[Pattern_New_Name]]"]
    assert card_meta(vault / "Playbooks/Hand.md")["related"] == ["[[Pattern_New_Name|the old one]]"]
    incoming = ok_data("links", a["id"], "--direction", "in")["incoming"]
    assert sorted((i["path"], i["rel"]) for i in incoming) == [("Playbooks/Hand.md", "related"),
                                                               (b["path"], "extends")]
    assert ok_data("links", b["id"])["outgoing"][0]["path"] == data["path"]


def test_another_agents_private_card_never_shows_through_links(vault):
    public = make("Public Card")
    private = make("Secret Card", scope="agent", agent="alice")
    ok_data("link", private["id"], public["id"], "--rel", "related")
    hand_link(vault, public["path"], private["id"], "extends")  # `link` refuses it; a person may write it
    for agent in ((), ("--agent", "bob")):
        data = ok_data("links", public["id"], *agent)
        assert data["incoming"] == [] and data["outgoing"] == []
        code, envelope, _ = run_json("links", private["id"], *agent)
        assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    data = ok_data("links", public["id"], "--agent", "alice")
    assert [i["path"] for i in data["incoming"]] == [private["path"]]
    assert [i["path"] for i in data["outgoing"]] == [private["path"]]


def test_a_card_with_strange_links_neither_stops_reads_nor_gets_rewritten(vault):
    a = make("Normal Card")
    strange = write_card(vault, "Playbooks/Strange.md",
                         "---\nlinks: just text\nrelated: 5\n---\n# Strange\n")
    write_card(vault, "Playbooks/Odd.md", "---\nlinks:\n  - 3\n  - {to: ''}\n  - {to: x, weight: lots}\n---\n# Odd\n")
    assert ok_data("links", a["id"])["incoming"] == []
    assert ok_data("search", "strange")["hits"][0]["path"] == "Playbooks/Strange.md"
    text = strange.read_bytes()
    code, envelope, _ = run_json("link", "Strange", a["id"], "--rel", "related")
    assert code == 1 and envelope["error"]["code"] == "BAD_LINKS"
    assert envelope["error"]["message"].startswith("Playbooks/Strange.md: `links` is not a list of mappings")
    assert strange.read_bytes() == text
    assert ok_data("links", "Odd")["outgoing"][0]["weight"] == 1.0


def test_explore_walks_links_to_the_depth_asked_through_a_cycle_with_tag_and_project_siblings(vault):
    a, b, c, d = (make(f"Node {n}", tags=f"graph,n{n}", project="atlas") for n in "ABCD")
    e = make("Node E", tags="graph")
    ok_data("link", a["id"], b["id"], "--rel", "extends", "--reason", "step one")
    ok_data("link", b["id"], c["id"], "--rel", "related")
    ok_data("link", c["id"], d["id"], "--rel", "depends_on")
    ok_data("link", d["id"], a["id"], "--rel", "related")  # closes the cycle
    one = ok_data("explore", a["id"])
    assert [(i["path"], i["direction"], i["depth"]) for i in one["linked"]] == [
        (b["path"], "out", 1), (d["path"], "in", 1)]
    assert one["linked"][0]["reason"] == "step one"
    two = ok_data("explore", a["id"], "--depth", "2")
    assert [(i["path"], i["depth"], i["from"]) for i in two["linked"]] == [
        (b["path"], 1, a["path"]), (d["path"], 1, a["path"]), (c["path"], 2, b["path"])]
    assert ok_data("explore", a["id"], "--depth", "5")["linked"] == two["linked"]  # the cycle ends the walk
    assert [(i["path"], i["shared_tags"]) for i in one["by_tag"]] == [
        (b["path"], ["graph"]), (c["path"], ["graph"]), (d["path"], ["graph"]), (e["path"], ["graph"])]
    assert [i["path"] for i in one["by_project"]] == [b["path"], c["path"], d["path"]]
    code, _, err = run_cli("explore", a["id"], "--depth", "0")
    assert code == 2 and err == "brain: error: --depth 0 is out of range; give 1 to 5\n"


def test_graph_has_every_visible_card_and_link_including_obsidian_wikilinks(vault):
    a, b = make("Graph A"), make("Graph B")
    secret = make("Graph Secret", scope="agent", agent="alice")
    ok_data("link", a["id"], b["id"], "--rel", "extends", "--weight", "0.8", "--reason", "why")
    ok_data("link", secret["id"], a["id"], "--rel", "related")
    write_card(vault, "Playbooks/Hand note.md", '---\nrelated: ["[[Pattern_Graph_A]]"]\n---\n# Hand note\n')
    data = ok_data("graph")
    assert sorted(n["path"] for n in data["nodes"]) == sorted([a["path"], b["path"], "Playbooks/Hand note.md"])
    edges = {(e["source_path"], e["target_path"], e["rel"], e["weight"], e["via"]) for e in data["edges"]}
    assert edges == {(a["path"], b["path"], "extends", 0.8, "links"),
                     ("Playbooks/Hand note.md", a["path"], "related", 0.5, "wikilink")}
    assert len(data["edges"]) == 2  # the `related` mirror of a link is not a second edge
    alice = ok_data("graph", "--agent", "alice")
    assert len(alice["nodes"]) == 4 and len(alice["edges"]) == 3
    assert ok_data("graph", "--since", "2999-01-01") == {"nodes": [], "edges": []}
    recent = ok_data("graph", "--since", "2000-01-01")
    assert [e["via"] for e in recent["edges"]] == ["links"]
    code, _, err = run_cli("graph", "--since", "yesterday")
    assert code == 2 and "--since 'yesterday' is not a time" in err


def test_explore_never_shows_another_agents_private_card(vault):
    a = make("Open Card", tags="shared", project="p1")
    secret = make("Hidden Card", tags="shared", project="p1", scope="agent", agent="alice")
    hand_link(vault, a["path"], secret["id"], "related")  # `link` refuses it; a person may write it
    data = ok_data("explore", a["id"], "--agent", "bob")
    assert data["linked"] == [] and data["by_tag"] == [] and data["by_project"] == []
    mine = ok_data("explore", a["id"], "--agent", "alice")
    assert [i["path"] for i in mine["linked"]] == [secret["path"]] and len(mine["by_tag"]) == 1


def _doctor_fix_commands(vault) -> dict[str, list[str]]:
    """message -> the `brain ...` command doctor's fix names (argv, without `brain`)."""
    import re
    import shlex

    out = {}
    for finding in ok_data("doctor")["findings"]:
        found = re.search(r"`brain (unlink [^`]+)`", finding.get("fix") or "")
        if found:
            out[finding["message"]] = shlex.split(found.group(1))
    return out


def test_unlink_removes_a_link_to_a_card_that_no_longer_exists_as_doctor_says(vault):
    source, gone = make("Source Card"), make("Gone Card")
    ok_data("link", source["id"], gone["id"], "--rel", "extends")
    write_card(vault, "Playbooks/Hand.md", '---\nrelated: ["[[Ghost Note]]", "[[Pattern_Source_Card]]"]\n---\n# Hand\n')
    (vault / gone["path"]).unlink()    # removed outside the tool (Obsidian, a file manager)
    fixes = _doctor_fix_commands(vault)
    broken_id = f"links to missing card {gone['id']} (extends)"
    assert sorted(fixes) == [broken_id, "related wikilink [[ghost note]] names no card in Playbooks/",
                             "related wikilink [[pattern_gone_card]] names no card in Playbooks/"]
    before = (vault / source["path"]).read_text(encoding="utf-8")
    code, out, err = run_cli(*fixes[broken_id])     # doctor's own fix, run as it is written
    assert (code, err) == (0, "") and f"-> missing card {gone['id']} (1 removed)" in out, out
    # The link's `related` mirror went with it (the log knows the card's last name).
    assert list(_doctor_fix_commands(vault)) == ["related wikilink [[ghost note]] names no card in Playbooks/"]
    for argv in _doctor_fix_commands(vault).values():
        code, out, err = run_cli(*argv)
        assert (code, err) == (0, "") and "-> missing card ghost note (1 removed)" in out, out
    meta = card_meta(vault / source["path"])
    assert "links" not in meta and "related" not in meta        # the mirror [[Pattern_Gone_Card]] went too
    assert card_meta(vault / "Playbooks/Hand.md")["related"] == ["[[Pattern_Source_Card]]"]
    assert _doctor_fix_commands(vault) == {}
    unlinked = [e for e in events(vault) if e["event"] == "unlinked"]
    assert [(e.get("target"), e.get("target_name")) for e in unlinked] == [(gone["id"], None), (None, "ghost note")]
    ok_data("undo", unlinked[0]["eid"])                       # logged and undoable like any unlink
    assert (vault / source["path"]).read_text(encoding="utf-8") == before
    code, envelope, _ = run_json("unlink", source["id"], "No such card")
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    assert envelope["error"]["message"] == (f"{source['path']} has no link to No such card (no card has that "
                                            f"name or id either); `links {source['path']}` shows its links")


def test_link_and_merge_naming_an_inbox_candidate_say_it_is_one_and_how_to_promote_it(vault):
    # Before: "no card with path, stem or id ...; `brain search` finds it", and search did find it.
    card = make("Pool Principle")
    learned = ok_data("learn", "--title", "Pin Node in CI", "--type", "troubleshooting", "--domain", "dev",
                      "--problem", "CI broke on a new Node.", "--solution", "Pin Node 20.", "--evidence", "s1")
    stem = learned["path"].rsplit("/", 1)[-1].removesuffix(".md")
    before, logged = vault_hashes(vault), len(events(vault))
    for argv in (("link", card["id"], stem, "--rel", "related"), ("merge", card["id"], stem), ("explore", stem),
                 ("links", stem)):
        code, out, err = run_cli(*argv)
        assert (code, out) == (1, "")
        assert err == (f"brain: error: Inbox/{stem}.md is an Inbox candidate, not a card yet; `brain promote {stem}` "
                       "makes it one\n"), err
    code, _, err = run_cli("link", card["id"], "No_Such_Card", "--rel", "related")
    assert code == 1 and "no card with path, stem or id 'No_Such_Card'" in err
    assert vault_hashes(vault) == before and len(events(vault)) == logged


def test_a_private_inbox_candidate_is_not_named_by_the_error(vault):
    card = make("Pool Principle")
    learned = ok_data("learn", "--title", "Pin Node in CI", "--type", "troubleshooting", "--domain", "dev",
                      "--problem", "CI broke on a new Node.", "--solution", "Pin Node 20.", "--evidence", "s1")
    path = vault / learned["path"]
    path.write_text(path.read_text(encoding="utf-8").replace("\n---", "\nscope: agent\nagent: someone-else\n---", 1),
                    encoding="utf-8")
    code, _, err = run_cli("merge", card["id"], path.stem)
    assert code == 1 and err == (f"brain: error: no card with path, stem or id {path.stem!r}; `brain search` or "
                                 "`brain list` finds it\n"), err
