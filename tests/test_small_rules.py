"""Small rules found while hardening (issue 18, "Small ones found on the way"), through the real
CLI, and through the real MCP and HTTP server processes for their doors:

- `history` follows a deleted or renamed card by its old path and stem; `delete` prints the id
  that history needs; `get` by an old stem says where the card went; another agent's private card
  with a name as its whole title does not hide the card the asker may see whose title ends so;
- a second `undo` of one event says "already undone" and changes and logs nothing, --force too;
- `doctor` exits 1 when it reports errors;
- `export` says how many agent-private cards it left out and how to include them;
- relation names are at most 64 characters (docs/compatibility.md, Relations);
- `--project` follows one rule in `create` and `update`;
- HTTP error `details` name the field; MCP `tools/call` without a name is a clear error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import SCRIPT, events, file_hashes, ok_data, run_cli, run_json, vault_hashes, write_card


def make(title: str, *extra: str) -> dict:
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", f"About {title}.",
                   *extra)


# ---------------------------------------------------------------------------- follow a card

def test_history_follows_a_deleted_card_by_its_path_and_stem_and_delete_prints_its_id(vault):
    card = make("Gone Soon")
    ok_data("update", card["id"], "--add-tag", "x")
    code, out, err = run_cli("delete", card["path"])
    assert code == 0, err
    assert f"id {card['id']}" in out and f"`brain history {card['id']}`" in out
    by_id = ok_data("history", card["id"])
    assert by_id["card"] == {"id": card["id"], "path": None, "title": None, "deleted": True}
    assert [e["event"] for e in by_id["entries"]] == ["deleted", "updated", "created"]
    for ref in (card["path"], "Pattern_Gone_Soon", "Playbooks/Pattern_Gone_Soon"):
        assert ok_data("history", ref) == by_id, ref
    code, out, _ = run_cli("history", "Pattern_Gone_Soon")
    assert out.startswith(f"3 event(s) for deleted card {card['id']}")


def test_history_follows_a_renamed_card_by_its_old_path_and_stem(vault):
    card = make("Old Name")
    renamed = ok_data("update", card["id"], "--title", "New Name")
    assert renamed["path"] == "Playbooks/Pattern_New_Name.md"
    now = ok_data("history", card["id"])
    assert now["card"] == {"id": card["id"], "path": "Playbooks/Pattern_New_Name.md", "title": "New Name",
                           "deleted": False}
    for ref in ("Pattern_Old_Name", "Playbooks/Pattern_Old_Name.md"):
        assert ok_data("history", ref) == now, ref


def test_get_by_an_old_stem_says_where_the_card_went(vault):
    card = make("Was Here")
    ok_data("update", card["id"], "--title", "Moved On")
    before = vault_hashes(vault)
    code, out, err = run_cli("get", "Pattern_Was_Here")
    assert (code, out) == (1, "")
    assert err == (f"brain: error: no card 'Pattern_Was_Here': it was renamed to Playbooks/Pattern_Moved_On.md "
                   f"(id {card['id']}); get it by that path or id\n")
    code, envelope, _ = run_json("get", "Playbooks/Pattern_Was_Here.md")
    assert code == 1 and envelope["error"]["code"] == "NOT_FOUND"
    assert envelope["error"]["details"] == {"renamed_to": "Playbooks/Pattern_Moved_On.md", "id": card["id"]}
    deleted = ok_data("delete", card["id"])
    code, out, err = run_cli("get", "Pattern_Was_Here")
    assert err == (f"brain: error: no card 'Pattern_Was_Here': it was deleted (event {deleted['event']}); "
                   f"`brain undo {deleted['event']}` brings it back, `brain history {card['id']}` shows it\n")
    # Nothing but the delete changed a file: the card went (its copy kept for git in .brain/deleted/).
    after = {k: v for k, v in vault_hashes(vault).items() if not k.startswith(".brain/deleted")}
    assert after == {k: v for k, v in before.items() if "Moved_On" not in k}


def test_an_old_stem_of_another_agents_private_card_says_nothing_of_it(vault):
    card = make("Private Plan", "--scope", "agent", "--agent", "alice")
    ok_data("update", card["id"], "--title", "Private Plan Two")
    plain = "brain: error: no card with path, stem or id 'Pattern_Private_Plan (alice)'; `brain search` or `brain list` finds it\n"
    for argv in (("get", "Pattern_Private_Plan (alice)"), ("get", "Pattern_Private_Plan (alice)", "--agent", "bob")):
        assert run_cli(*argv) == (1, "", plain), argv
    code, out, err = run_cli("get", "Pattern_Private_Plan (alice)", "--agent", "alice")
    assert "renamed to Playbooks/Pattern_Private_Plan_Two (alice).md" in err


def test_another_agents_private_card_with_the_whole_title_does_not_hide_a_card_whose_title_ends_so(vault):
    from external_brain.cards import record
    from external_brain.vault.storage import Vault

    shared = make("QA/Deploy hangs")
    private = make("Deploy hangs", "--scope", "agent", "--agent", "bob")
    for agent in ("alice", "carol"):
        code, data, err = run_json("get", "Deploy hangs", "--agent", agent)   # bob's card is not theirs to find
        assert (code, data["data"]["id"], err) == (0, shared["id"], ""), agent
        assert record(Vault(vault), "Deploy hangs", "used", agent=agent).card.rel == shared["path"]   # MCP's, HTTP's
    code, data, _ = run_json("get", "Deploy hangs", "--agent", "bob")   # its owner: the whole title first
    assert data["data"]["id"] == private["id"]
    code, data, _ = run_json("get", "Deploy hangs")   # `get` without an agent sees the shared cards
    assert data["data"]["id"] == shared["id"]
    code, data, _ = run_json("record", "Deploy hangs", "used")   # the command line's feedback may touch any card
    assert data["data"]["path"] == private["path"]
    make("Ops/Deploy hangs", "--scope", "agent", "--agent", "dave")
    code, data, err = run_json("get", "Deploy hangs", "--agent", "alice")   # dave's card is no candidate for alice
    assert (code, data["data"]["id"], err) == (0, shared["id"], "")
    plain = "brain: error: no card with path, stem or id 'Ops/Deploy hangs'; `brain search` or `brain list` finds it\n"
    assert run_cli("get", "Ops/Deploy hangs", "--agent", "alice") == (1, "", plain)

# ---------------------------------------------------------------------------- undo twice

def test_a_second_undo_of_one_event_says_already_undone_and_does_nothing(vault):
    card = make("Undo Twice")
    deleted = ok_data("delete", card["id"])
    first = ok_data("undo", deleted["event"])
    snapshot, logged = file_hashes(vault), len(events(vault))
    for extra in ((), ("--force",)):
        code, out, err = run_cli("undo", deleted["event"], *extra)
        assert (code, err) == (0, ""), err
        assert out == (f"event {deleted['event']} (deleted) is already undone (by undo {first['event']}); "
                       "nothing changed\n")
        data = ok_data("undo", deleted["event"], *extra)
        assert data == {"undone": deleted["event"], "undone_event": "deleted", "files": [], "forced": [], "removed": [],
                        "relinked": [], "event": None, "already_undone_by": first["event"]}
        assert file_hashes(vault) == snapshot and len(events(vault)) == logged
    # Redone (the undo undone), the event can be undone again.
    ok_data("undo", first["event"])
    # The card comes back, and its copy kept for git (`.brain/deleted/`) goes.
    assert ok_data("undo", deleted["event"])["files"] == [card["path"], f".brain/deleted/Playbooks/{card['id']}.md"]


# ---------------------------------------------------------------------------- doctor's exit code

def test_doctor_exits_1_when_it_reports_errors_and_0_for_warnings_only(vault):
    env = {**os.environ, "BRAIN_VAULT": str(vault)}

    def doctor(*extra):
        return subprocess.run([sys.executable, str(SCRIPT), "doctor", *extra], env=env, capture_output=True,
                              text=True, timeout=60)

    write_card(vault, "Playbooks/No_Id.md", "# No id yet\nA hand-written note.\n")  # a warning only
    result = doctor()
    assert result.returncode == 0 and result.stdout.endswith("0 error(s), 1 warning(s)\n"), result
    write_card(vault, "Playbooks/Broken.md", "---\ntitle: [unclosed\n---\nbody\n")
    result = doctor()
    assert result.returncode == 1 and result.stdout.endswith("1 error(s), 1 warning(s)\n"), result
    assert "error: Playbooks/Broken.md" in result.stdout
    result = doctor("--json")
    envelope = json.loads(result.stdout)
    assert result.returncode == 1 and envelope["ok"] is True and envelope["data"]["errors"] == 1


# ---------------------------------------------------------------------------- export

def test_export_says_how_many_private_cards_it_left_out_and_how_to_include_them(vault, tmp_path):
    make("Shared")
    make("Alice Own", "--scope", "agent", "--agent", "alice")
    make("Bob Own", "--scope", "agent", "--agent", "bob")
    code, out, err = run_cli("export")
    assert code == 0 and len([line for line in out.splitlines() if '"kind": "card"' in line]) == 1
    assert err == ("brain: warning: left out 2 agent-private card(s); add --include-private for a full backup, "
                   "or --agent NAME for one agent's own\n")
    code, out, err = run_cli("export", "--agent", "alice", "--output", str(tmp_path / "a.jsonl"))
    assert code == 0 and "2 card(s)" in out
    assert err == "brain: warning: left out 1 agent-private card(s) of other agents; add --include-private for a full backup\n"
    assert run_cli("export", "--include-private")[2] == ""


# ---------------------------------------------------------------------------- relation names

def test_relation_names_are_at_most_64_characters(vault):
    long_name, longest = "r" * 65, "r" * 64
    config = vault / ".brain" / "config.toml"
    config.write_text(f'relations = ["related", "{long_name}"]\n', encoding="utf-8")
    code, out, err = run_cli("list")
    assert (code, err) == (1, f"brain: error: {config}:1: relations: {long_name!r} is 65 characters, over 64; "
                              "give a shorter relation name\n")
    config.write_text(f'relations = ["related", "{longest}"]\n', encoding="utf-8")
    a, b = make("Source Card"), make("Target Card")
    assert ok_data("link", a["id"], b["id"], "--rel", longest)["rel"] == longest
    before = vault_hashes(vault)
    code, out, err = run_cli("link", a["id"], b["id"], "--rel", long_name)
    assert (code, err) == (2, f"brain: error: relation {long_name!r} is 65 characters, over 64; "
                              "give a shorter relation name\n")
    assert vault_hashes(vault) == before


# ---------------------------------------------------------------------------- --project

def test_project_is_one_rule_for_create_and_update(vault):
    card = make("Project Holder", "--project", "shop")
    before = vault_hashes(vault)
    for value in ("\n", "a\nb", "x\ty"):
        for argv in (("create", "--type", "pattern", "--domain", "dev", "--title", "P2", "--project", value),
                     ("update", card["id"], "--project", value)):
            code, out, err = run_cli(*argv)
            assert (code, out) == (2, ""), (argv, err)
            assert err.startswith("brain: error: --project holds the character U+00"), err
    code, out, err = run_cli("update", card["id"], "--project", "p" * 201)
    assert (code, err) == (2, "brain: error: --project is 201 characters, over 200; give a shorter name\n")
    assert vault_hashes(vault) == before
    # Spaces around a name are dropped alike; an empty name means none (create) or removes it (update).
    spaced = make("Spaced Project", "--project", "  web  ")
    assert "project: web\n" in (vault / spaced["path"]).read_text()
    empty = make("Empty Project", "--project", "")
    assert "project:" not in (vault / empty["path"]).read_text()
    ok_data("update", card["id"], "--project", "  app ")
    assert "project: app\n" in (vault / card["path"]).read_text()
    ok_data("update", card["id"], "--project", "")
    assert "project:" not in (vault / card["path"]).read_text()


# ---------------------------------------------------------------------------- HTTP and MCP

def test_http_error_details_name_the_field(vault):
    from test_http import start, stop

    api = start(vault)
    try:
        for path, field in (("/v1/memories?limit=0", "limit"), ("/v1/memories?limit=abc", "limit"),
                            ("/v1/memories?limit=5000", "limit"), ("/v1/memories?colour=red", "colour")):
            status, _, data = api.call("GET", path)
            assert status == 400 and data["error"]["details"] == {"field": field}, (path, data)
        status, _, data = api.call("POST", "/v1/memories", {"memory_type": "fact"})
        assert status == 400 and data["error"]["details"] == {"field": "content"}, data
        status, _, data = api.call("POST", "/v1/memories", {"content": "x", "memory_type": "fact", "importance": 9})
        assert status == 400 and data["error"]["details"] == {"field": "importance"}, data
    finally:
        stop(api.process)


def test_mcp_tools_call_without_a_name_is_a_clear_error(vault):
    from test_mcp import Server

    server = Server(vault)
    try:
        server.initialize()
        for params in ({}, {"arguments": {}}, {"name": None}, {"name": 7}):
            response = server.request("tools/call", params)
            assert response["error"] == {"code": -32602, "message": "tools/call needs params.name, the name of a "
                                         "tool (a string); tools/list names them"}, params
        response = server.request("tools/call", {"name": "no_such_tool"})
        assert response["error"]["message"] == "unknown tool 'no_such_tool'; tools/list names them"
    finally:
        code, stderr = server.close()
    assert code == 0, stderr
