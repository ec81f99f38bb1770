"""Keys that are identities (issue 23, part 2): `brain keys`, and agent keys on every route of a
real `brain serve` process. An agent's key sees global memories and its own private ones, writes
as that agent, and never reads or writes another agent's private memories, whatever it asks for."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

from external_brain.agents.keys import token_hash
from helpers import card_meta, events, ok_data, run_cli, run_json, vault_hashes
from test_http import KEY, start, stop

MARKS = {"alice": "ALICEMARK-7f3a", "bob": "BOBMARK-91c2"}


@pytest.fixture
def keys_file(tmp_path, monkeypatch):
    path = tmp_path / "config" / "keys.toml"
    monkeypatch.setenv("BRAIN_KEYS_FILE", str(path))
    return path


def add_key(name: str) -> str:
    data = ok_data("keys", "add", name)
    assert data["name"] == name and data["token"].startswith("ebk_")
    return data["token"]


def test_keys_add_list_revoke_store_only_hashes_outside_the_vault(vault, keys_file, monkeypatch):
    token = add_key("alice")
    add_key("bob")
    text = keys_file.read_text()
    assert token not in text and token[4:] not in text
    import hashlib

    assert hashlib.sha256(token.encode()).hexdigest() in text
    assert stat.S_IMODE(os.stat(keys_file).st_mode) == 0o600
    listed = ok_data("keys", "list")
    assert [k["name"] for k in listed["keys"]] == ["alice", "bob"] and listed["file"] == str(keys_file)
    assert all(set(k) == {"name", "created", "fingerprint"} for k in listed["keys"])
    code, envelope, _ = run_json("keys", "add", "alice")
    assert (code, envelope["error"]["code"]) == (1, "CONFLICT")
    code, envelope, _ = run_json("keys", "add", "../evil")
    assert (code, envelope["error"]["code"]) == (2, "INVALID_ARGUMENT")
    assert ok_data("keys", "revoke", "alice")["revoked"] is True
    assert [k["name"] for k in ok_data("keys", "list")["keys"]] == ["bob"]
    code, envelope, _ = run_json("keys", "revoke", "alice")
    assert (code, envelope["error"]["code"]) == (1, "NOT_FOUND")
    # A keys file inside the vault is refused: the vault is shared through git.
    monkeypatch.setenv("BRAIN_KEYS_FILE", str(vault / "keys.toml"))
    code, _, err = run_cli("keys", "add", "carol")
    assert code == 1 and "is inside the vault" in err and not (vault / "keys.toml").exists()


class Agents:
    def __init__(self, server, tokens: dict[str, str]) -> None:
        self.server = server
        self.tokens = {**tokens, "owner": KEY}

    def call(self, who: str, method: str, path: str, body=None, headers=None):
        return self.server.call(method, path, body, key=self.tokens[who], headers=headers)


@pytest.fixture
def agents(vault, keys_file):
    tokens = {name: add_key(name) for name in ("alice", "bob")}
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    yield Agents(server, tokens)
    stop(server.process)


def _private(agents: Agents, who: str) -> dict:
    status, _, data = agents.call(who, "POST", "/v1/memories", {
        "content": f"{who}'s deploy token rotation runbook {MARKS[who]}", "memory_type": "runbook",
        "tags": ["deploy", "rotation"], "title": f"{who} rotation {MARKS[who]}"})
    assert status == 201, data
    return data


def test_an_agent_key_is_its_agent_on_every_route_and_never_sees_another_agents_private_memory(agents, vault):
    shared_status, _, shared = agents.call("owner", "POST", "/v1/memories", {
        "content": "Deploy token rotation happens on Fridays for everyone", "memory_type": "runbook",
        "tags": ["deploy", "rotation"]})
    assert shared_status == 201
    own = {who: _private(agents, who) for who in ("alice", "bob")}
    for who in ("alice", "bob"):   # a private ingest, and a failed write, each agent's own too
        status, _, data = agents.call(who, "POST", "/v1/ingest", {"text": f"I keep the {MARKS[who]} key in a safe.",
                                                                  "scope": "agent"})
        assert status == 200 and data["ids"], data
        assert agents.call(who, "PATCH", f"/v1/memories/{MARKS[who]}", {"title": "x"})[0] == 404
    for who in ("alice", "bob"):   # an agent key's memory without scope is its own, as with agent_id
        card = ok_data("get", own[who]["id"], "--agent", who)
        assert (card["frontmatter"]["scope"], card["frontmatter"]["agent"]) == ("agent", who)
    for who, other in (("alice", "bob"), ("bob", "alice")):
        mine, theirs = own[who], own[other]
        their_text = (vault / theirs["path"]).read_text()
        secret = MARKS[other]
        reads = [("GET", "/v1/memories?limit=1000", None), ("GET", "/v1/memories?q=deploy+token+rotation", None),
                 ("GET", f"/v1/memories?q={other}+rotation+runbook", None), ("GET", "/v1/memories?tags=rotation", None),
                 ("GET", "/v1/memories?scope=agent", None), ("GET", f"/v1/memories?agent_id={who}&q=rotation", None),
                 ("GET", "/v1/dump", None), ("GET", "/v1/dump?events=true", None),
                 ("POST", "/v1/context", {"query": f"{other} deploy token rotation runbook"}),
                 ("POST", "/v1/context", {"query": "rotation", "scope": "agent"}),
                 ("POST", "/v1/context", {"query": "rotation", "agent_id": who, "k": 50})]
        for method, path, body in reads:
            status, _, data = agents.call(who, method, path, body)
            assert status == 200, (who, path, data)
            if isinstance(data, dict):   # the query itself is echoed back, and names a search miss
                data = {k: v for k, v in data.items() if k not in ("query", "miss_candidate")}
            shown = data if isinstance(data, str) else json.dumps(data)
            assert secret not in shown and theirs["id"] not in shown and theirs["path"] not in shown, (who, path)
        status, _, data = agents.call(who, "GET", "/v1/memories?q=deploy+token+rotation&limit=50")
        assert {m["id"] for m in data["memories"]} >= {mine["id"], shared["id"]}
        assert agents.call(who, "GET", f"/v1/memories/{mine['id']}")[0] == 200
        # Another agent's memory: not found on every route, as if it did not exist ...
        for method, suffix, body in (("GET", "", None), ("PATCH", "", {"title": "mine now"}), ("DELETE", "", None),
                                     ("POST", "/feedback", {"outcome": "rejected"}),
                                     ("POST", "/merge", {"merge_id": mine["id"]})):
            status, _, data = agents.call(who, method, f"/v1/memories/{theirs['id']}{suffix}", body)
            assert (status, data["error"]["code"]) == (404, "NOT_FOUND"), (who, method, suffix, data)
            assert secret not in json.dumps(data)
        # ... and asking to be that agent, or for everyone's private memories, is refused.
        status, _, data = agents.call(who, "POST", f"/v1/memories/{mine['id']}/merge", {"merge_id": theirs["id"]})
        assert (status, data["error"]["code"]) == (404, "NOT_FOUND"), data
        refused = [("GET", f"/v1/memories?agent_id={other}", None),
                   ("POST", f"/v1/memories/{mine['id']}/merge", {"merge_id": theirs["id"], "agent_id": other}),
                   ("GET", f"/v1/memories?agent_id={other}&q=rotation", None),
                   ("GET", f"/v1/memories/{theirs['id']}?agent_id={other}", None),
                   ("PATCH", f"/v1/memories/{theirs['id']}", {"title": "x", "agent_id": other}),
                   ("DELETE", f"/v1/memories/{theirs['id']}?agent_id={other}", None),
                   ("POST", f"/v1/memories/{theirs['id']}/feedback", {"outcome": "used", "agent_id": other}),
                   ("POST", "/v1/memories", {"content": "planted", "memory_type": "fact", "agent_id": other}),
                   ("POST", "/v1/memories", {"content": "planted", "memory_type": "fact", "scope": "agent",
                                             "agent_id": other}),
                   ("POST", "/v1/context", {"query": "rotation", "agent_id": other}),
                   ("POST", "/v1/ingest", {"text": "I planted this.", "agent_id": other}),
                   ("GET", f"/v1/dump?agent_id={other}", None), ("GET", "/v1/dump?include_private=true", None)]
        for method, path, body in refused:
            status, _, data = agents.call(who, method, path, body)
            assert (status, data["error"]["code"]) == (403, "FORBIDDEN"), (who, method, path, data)
            assert secret not in json.dumps(data)
        # review6: it read "this key is agent 'alice''s and acts only ...".
        assert agents.call(who, "GET", f"/v1/memories?agent_id={other}")[2]["error"]["message"] == (
            f"this key is agent {who}'s and acts only as that agent; drop agent_id or send agent_id={who}")
        assert (vault / theirs["path"]).read_text() == their_text
    # Writes are each agent's own: logged as the agent, private when asked, global when asked.
    status, _, data = agents.call("alice", "PATCH", f"/v1/memories/{own['alice']['id']}", {"add_tags": ["mine"]})
    assert status == 200, data
    status, _, shared_by_alice = agents.call("alice", "POST", "/v1/memories", {
        "content": "Staging DB is db-stg-02", "memory_type": "fact", "scope": "global"})
    assert status == 201
    assert agents.call("bob", "GET", f"/v1/memories/{shared_by_alice['id']}")[0] == 200
    status, _, ingested = agents.call("bob", "POST", "/v1/ingest", {"text": "I am debugging the payment queue now.",
                                                                    "scope": "agent"})
    assert status == 200 and ingested["ids"], ingested
    assert agents.call("alice", "GET", f"/v1/memories/{ingested['ids'][0]}")[0] == 404
    assert agents.call("bob", "GET", f"/v1/memories/{ingested['ids'][0]}")[0] == 200
    actors = {(e["event"], e.get("id")): e["actor"] for e in events(vault)}
    assert actors[("created", own["alice"]["id"])] == "agent:alice"
    assert actors[("created", own["bob"]["id"])] == "agent:bob"
    assert actors[("updated", own["alice"]["id"])] == "agent:alice"
    assert actors[("created", shared_by_alice["id"])] == "agent:alice"
    assert actors[("created", shared["id"])] != "agent:alice"     # the owner's key: the server's user
    assert [e["actor"] for e in events(vault) if e["event"] == "ingested"] == ["agent:alice", "agent:bob",
                                                                                "agent:bob"]
    failed = [e for e in events(vault, failures=True) if e["event"] == "failed"]
    assert {(e["actor"], e["code"], e["command"]) for e in failed} >= {
        ("agent:alice", "NOT_FOUND", "PATCH /v1/memories/{id}"), ("agent:bob", "FORBIDDEN", "POST /v1/memories"),
        ("agent:alice", "FORBIDDEN", "POST /v1/ingest")}
    # The owner still sees everything it asks for.
    status, _, dump = agents.call("owner", "GET", "/v1/dump?include_private=true")
    assert MARKS["alice"] in dump and MARKS["bob"] in dump


def test_an_idempotency_key_is_matched_only_among_the_callers_own_ingests(agents, vault):
    """h13-ident: keys were matched across agents, so bob reusing alice's key (or her async job's
    `job:<id>`, which any agent's dump shows) got a CONFLICT naming her `ingested` event, or her
    answer replayed. Each caller's key is its own: bob's reuse is a new ingest of bob's."""
    key = {"Idempotency-Key": "diary-2026-11-27"}
    secret = "The alice vault passphrase hint is ALICEMARK-7f3a."
    status, _, first = agents.call("alice", "POST", "/v1/ingest", {"text": secret, "scope": "agent"}, headers=key)
    assert status == 200 and first["created"] == 1, first
    alices = next(e for e in events(vault) if e["event"] == "ingested")
    # bob, with alice's key and other text: his own new ingest, nothing of hers named.
    status, _, data = agents.call("bob", "POST", "/v1/ingest", {"text": "The build cache is on cache-07.",
                                                                 "scope": "agent"}, headers=key)
    assert status == 200 and data["created"] == 1, data
    assert alices["eid"] not in json.dumps(data) and first["ids"][0] not in json.dumps(data)
    # Again with another text: a conflict with bob's own ingest, never with alice's.
    status, _, data = agents.call("bob", "POST", "/v1/ingest", {"text": "Something else.", "scope": "agent"},
                                  headers=key)
    assert (status, data["error"]["code"]) == (409, "CONFLICT"), data
    bobs = [e for e in events(vault) if e["event"] == "ingested" and e["actor"] == "agent:bob"]
    assert len(bobs) == 1 and bobs[0]["eid"] in data["error"]["message"]
    assert alices["eid"] not in json.dumps(data)
    # alice's own retry still answers her first result and writes nothing.
    files = vault_hashes(vault)
    status, _, again = agents.call("alice", "POST", "/v1/ingest", {"text": secret, "scope": "agent"}, headers=key)
    assert (status, again) == (200, first)
    assert vault_hashes(vault) == files
    # An async job's key (`job:<id>`, in any agent's dump): bob's use of it is his own ingest.
    status, _, job = agents.call("alice", "POST", "/v1/ingest", {"text": "The team printer is prn-22.",
                                                                  "async": True})
    assert status == 202, job
    deadline = time.monotonic() + 20
    while agents.call("alice", "GET", job["location"])[2]["status"] != "done" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert job["job_id"] in agents.call("bob", "GET", "/v1/dump?events=true")[2]
    status, _, data = agents.call("bob", "POST", "/v1/ingest", {"text": "The bob laptop is lap-31.", "scope": "agent"},
                                  headers={"Idempotency-Key": f"job:{job['job_id']}"})
    assert status == 200 and data["created"] == 1, data


def test_a_shared_cards_file_name_never_tells_of_another_agents_private_card(agents, vault):
    """h13-ident: a create or rename whose file name another agent's private card held was numbered
    (`Runbook_Kestrel_plan_2.md`), so bob could test which titles alice keeps privately. A private
    card's name carries its agent's name; a shared card's name is what it would be without it."""
    def create(who, title, **fields):
        status, _, data = agents.call(who, "POST", "/v1/memories", {
            "content": f"{title}: the steps, by {who}.", "memory_type": "runbook", "title": title, **fields})
        assert status == 201, data
        return data

    assert create("alice", "Kestrel plan")["path"] == "Playbooks/Runbook_Kestrel_plan (alice).md"
    create("alice", "Osprey plan")
    shared = create("bob", "Kestrel plan", scope="global")
    assert shared["path"] == "Playbooks/Runbook_Kestrel_plan.md"
    assert create("bob", "Kestrel plan")["path"] == "Playbooks/Runbook_Kestrel_plan (bob).md"
    status, _, renamed = agents.call("bob", "PATCH", f"/v1/memories/{shared['id']}", {"title": "Osprey plan"})
    assert status == 200 and renamed["path"] == "Playbooks/Runbook_Osprey_plan.md", renamed
    # A private card of an earlier version keeps its file until its title changes.
    old = vault / "Playbooks" / "Runbook_Heron_plan.md"
    old.write_text("---\nid: heron-0001\ntitle: Heron plan\ntype: runbook\ndomain: general\nscope: agent\n"
                   "agent: alice\n---\nHeron steps.\n")
    ok_data("reindex")
    status, _, data = agents.call("alice", "PATCH", "/v1/memories/heron-0001", {"add_tags": ["birds"]})
    assert status == 200 and data["path"] == "Playbooks/Runbook_Heron_plan.md", data
    status, _, data = agents.call("alice", "PATCH", "/v1/memories/heron-0001", {"title": "Heron plan v2"})
    assert status == 200 and data["path"] == "Playbooks/Runbook_Heron_plan_v2 (alice).md", data
    # The CLI names them alike: private to --agent, or shared.
    made = ok_data("create", "--type", "runbook", "--domain", "general", "--title", "Falcon plan", "--agent", "carol",
                   "--body", "Falcon steps.")
    assert made["path"] == "Playbooks/Runbook_Falcon_plan (carol).md"
    made = ok_data("create", "--type", "runbook", "--domain", "general", "--title", "Falcon plan", "--body", "Other.")
    assert made["path"] == "Playbooks/Runbook_Falcon_plan.md"


def test_an_agents_search_miss_file_name_never_tells_of_another_agents_miss(agents, vault):
    """h13-review: an agent's miss was `Search_Miss_<agent>_<query>.md`, so `alice` searching
    "ops kestrel secrets" met the file of `alice_ops`'s miss of "kestrel secrets" and got `_2`:
    any agent whose name and `_` begin another's could test what that agent searched for."""
    ops = add_key("alice_ops")   # the server reads the keys file again when it changes

    def miss(key: str, query: str) -> str:
        status, _, data = agents.server.call("GET", f"/v1/memories?q={query.replace(' ', '+')}", key=key)
        assert status == 200 and data["memories"] == [], data
        return data["miss_candidate"]

    theirs = miss(ops, "kestrel secrets")
    probe, control = miss(agents.tokens["alice"], "ops kestrel secrets"), miss(agents.tokens["alice"], "ops osprey secrets")
    assert probe == control.replace("osprey", "kestrel") != theirs
    assert theirs == "Inbox/Search_Miss_kestrel_secrets (alice_ops).md"
    assert probe == "Inbox/Search_Miss_ops_kestrel_secrets (alice).md"
    assert card_meta(vault / theirs)["agent"] == "alice_ops" and card_meta(vault / probe)["agent"] == "alice"
    assert miss(agents.tokens["alice"], "ops kestrel secrets") == probe   # the same miss again: the same file
    assert card_meta(vault / probe)["misses"] == 2
    # A candidate kept under the name an agent's miss had before counts on there: no second file.
    made = vault / miss(agents.tokens["bob"], "heron notes")
    made.rename(vault / "Inbox" / "Search_Miss_bob_heron_notes.md")
    assert miss(agents.tokens["bob"], "heron notes") == "Inbox/Search_Miss_bob_heron_notes.md"
    assert card_meta(vault / "Inbox" / "Search_Miss_bob_heron_notes.md")["misses"] == 2 and not made.exists()


def test_a_revoked_key_is_refused_at_once_without_a_restart(agents, vault):
    assert agents.call("alice", "GET", "/v1/health")[0] == 200
    ok_data("keys", "revoke", "alice")
    status, _, data = agents.call("alice", "GET", "/v1/health")
    assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED")
    assert agents.call("bob", "GET", "/v1/health")[0] == 200
    new = add_key("alice")
    assert agents.server.call("GET", "/v1/health", key=new)[0] == 200
    assert agents.call("alice", "GET", "/v1/health")[0] == 401   # the old token stays dead


def test_an_agent_cannot_be_named_owner_the_name_of_the_servers_own_key(vault, keys_file):
    """h12-ident: a key named `owner` was an agent whose identity name was the owner's, so it read
    the owner's async jobs (their ids are in any agent's dump with events) and could use its MCP
    sessions. `keys add owner` is refused; a key of that name already in a file admits nobody."""
    code, envelope, _ = run_json("keys", "add", "owner")
    assert (code, envelope["error"]["code"]) == (2, "INVALID_ARGUMENT")
    assert envelope["error"]["message"] == ("agent name 'owner' is the server's own key's identity; "
                                            "give the agent another name")
    bob = add_key("bob")
    token = "ebk_" + "x" * 43   # a key named owner written by an earlier version
    keys_file.write_text(keys_file.read_text() + f'\n[keys."owner"]\nsha256 = "{token_hash(token)}"\n'
                         'created = "2026-01-01T00:00:00+00:00"\n')
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    try:
        status, _, job = server.call("POST", "/v1/ingest", {"text": "The staging DB is db-stg-02.", "async": True})
        assert status == 202, job
        deadline = time.monotonic() + 20
        while server.call("GET", job["location"])[2]["status"] != "done" and time.monotonic() < deadline:
            time.sleep(0.05)
        status, _, dump = server.call("GET", "/v1/dump?events=true", key=bob)
        assert status == 200 and job["job_id"] in dump   # the owner's job id is no secret
        status, _, data = server.call("GET", job["location"], key=token)
        assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED"), data
        assert server.call("GET", "/v1/health", key=token)[0] == 401
        assert server.call("GET", job["location"])[0] == 200
    finally:
        stop(server.process)
    assert ok_data("keys", "revoke", "owner")["revoked"] is True   # and it can still be revoked


def test_agent_names_that_differ_only_in_case_are_refused_and_the_later_of_a_pair_admits_nobody(vault, keys_file):
    """h13-ident: `Alice` and `alice` were two agents whose working memory (`WorkingMemory/agents/NAME`)
    is one folder on a case-blind file system (macOS, Windows). `keys add` refuses the second; of
    such a pair already in a keys file, the key added first keeps working and the other admits nobody."""
    alice = add_key("alice")
    code, envelope, _ = run_json("keys", "add", "Alice")
    assert (code, envelope["error"]["code"]) == (1, "CONFLICT")
    assert envelope["error"]["message"] == ("agent name 'Alice' differs from agent 'alice' only in case: on a "
                                            "case-blind file system both would share one working-memory folder; "
                                            "give the agent another name")
    assert [k["name"] for k in ok_data("keys", "list")["keys"]] == ["alice"]
    token = "ebk_" + "y" * 43   # a key written by an earlier version, added after alice's
    keys_file.write_text(keys_file.read_text() + f'\n[keys."ALICE"]\nsha256 = "{token_hash(token)}"\n'
                         'created = "2999-01-01T00:00:00+00:00"\n')
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    try:
        assert server.call("GET", "/v1/health", key=alice)[0] == 200
        status, _, data = server.call("GET", "/v1/health", key=token)
        assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED"), data
    finally:
        stop(server.process)
    warned = [line for line in server.stderr.read_text().splitlines() if "'ALICE'" in line]
    assert warned == [f"brain serve: warning: {keys_file}: the key of agent 'ALICE' admits nobody: it differs "
                      "from agent 'alice', added first, only in case, and both would share one working-memory "
                      "folder on a case-blind file system; `brain keys revoke ALICE` removes it"]
    assert ok_data("keys", "revoke", "ALICE")["revoked"] is True


def test_an_agents_working_memory_is_its_own(vault):
    ok_data("remember", "task", "--body", "shared: release train 42")
    ok_data("remember", "task", "--body", f"alice: rotating tokens {MARKS['alice']}", "--agent", "alice")
    assert (vault / "WorkingMemory" / "agents" / "alice" / "task.md").is_file()
    assert ok_data("recall", "task", "--agent", "alice")["body"].startswith("alice:")
    assert ok_data("recall", "task", "--agent", "bob")["body"].startswith("shared:")   # bob has none of his own
    assert ok_data("recall", "task")["body"].startswith("shared:")
    seen = {who: json.dumps(ok_data("context", *(("--agent", who) if who else ()))) for who in ("alice", "bob", None)}
    assert MARKS["alice"] in seen["alice"] and MARKS["alice"] not in seen["bob"] and MARKS["alice"] not in seen[None]
    assert '"agent": "alice"' in seen["alice"]
    code, envelope, _ = run_json("forget", "task", "--agent", "bob")
    assert (code, envelope["error"]["code"]) == (1, "NOT_FOUND")      # bob cannot remove the shared note
    brief = ok_data("brief", "tokens", "--agent", "bob")
    assert MARKS["alice"] not in json.dumps(brief)
    assert MARKS["alice"] in json.dumps(ok_data("brief", "tokens", "--agent", "alice"))
    export = {who: run_cli("export", *args)[1] for who, args in
              (("bob", ("--agent", "bob")), ("alice", ("--agent", "alice")), ("all", ("--include-private",)))}
    assert MARKS["alice"] not in export["bob"] and MARKS["alice"] in export["alice"] and MARKS["alice"] in export["all"]
    code, envelope, _ = run_json("remember", "x", "--body", "b", "--agent", "../bob")
    assert (code, envelope["error"]["code"]) == (2, "INVALID_ARGUMENT")
    assert ok_data("forget", "task", "--agent", "alice")["key"] == "task"
    assert ok_data("recall", "task", "--agent", "alice")["body"].startswith("shared:")


def test_a_key_may_come_as_a_bearer_token(agents):
    server = agents.server
    bearer = {"Authorization": f"Bearer {agents.tokens['alice']}"}
    status, _, data = server.call("POST", "/v1/memories", {"content": "Bearer note", "memory_type": "fact"},
                                  key=None, headers=bearer)
    assert status == 201, data
    assert server.call("GET", f"/v1/memories/{data['id']}", key=None, headers=bearer)[0] == 200
    assert server.call("GET", f"/v1/memories/{data['id']}", key=agents.tokens["bob"])[0] == 404
    status, _, data = server.call("GET", "/v1/health", key=None, headers={"Authorization": "Bearer nope-nope-nope"})
    assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED")
    # Two keys in one request are refused, not chosen between.
    status, _, _ = server.call("GET", "/v1/health", key=None,
                               headers={"X-API-KEY": KEY, "x-api-key": agents.tokens["bob"]})
    assert status == 401


def test_a_search_miss_file_name_never_tells_of_another_agents_private_miss(agents, vault, keys_file):
    """h13-tour: an agent's miss was `Search_Miss_<agent>_<query>.md`, so the owner's miss of "alice
    kestrel lag" after alice's of "kestrel lag", or agent ops's of "bot timeout" after agent ops_bot's
    of "timeout", was numbered `_2`: the name told that another agent had asked. An agent's miss is
    named as its private cards are (`<name> (<agent>).md`); a shared one as it would be without it."""
    tokens = {name: add_key(name) for name in ("ops", "ops_bot")}

    def miss(who, query):
        key = tokens.get(who) or agents.tokens[who]
        status, _, data = agents.server.call("GET", f"/v1/memories?q={query.replace(' ', '+')}", key=key)
        assert status == 200 and data["memories"] == [], data
        return data["miss_candidate"]

    assert miss("alice", "kestrel lag") == "Inbox/Search_Miss_kestrel_lag (alice).md"
    assert miss("owner", "alice kestrel lag") == "Inbox/Search_Miss_alice_kestrel_lag.md"
    assert miss("ops_bot", "osprey timeout") == "Inbox/Search_Miss_osprey_timeout (ops_bot).md"
    assert miss("ops", "bot osprey timeout") == "Inbox/Search_Miss_bot_osprey_timeout (ops).md"
    assert miss("bob", "kestrel lag") == "Inbox/Search_Miss_kestrel_lag (bob).md"
    # The same query again is the same candidate, one more miss.
    assert miss("alice", "kestrel lag") == "Inbox/Search_Miss_kestrel_lag (alice).md"
    text = (vault / "Inbox" / "Search_Miss_kestrel_lag (alice).md").read_text(encoding="utf-8")
    assert "\nmisses: 2\n" in text and "\nagent: alice\n" in text
    # A candidate named as an earlier version named it keeps its file, and its id stays one file's.
    old = (vault / "Inbox" / "Search_Miss_kestrel_lag (bob).md")
    old.rename(vault / "Inbox" / "Search_Miss_bob_kestrel_lag.md")
    assert miss("bob", "kestrel lag") == "Inbox/Search_Miss_bob_kestrel_lag.md"
    assert "\nmisses: 2\n" in (vault / "Inbox" / "Search_Miss_bob_kestrel_lag.md").read_text(encoding="utf-8")
    assert not old.exists()
