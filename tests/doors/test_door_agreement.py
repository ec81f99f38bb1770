"""The doors agree: what a new user following the README met in review 7, through each real door
(the CLI as a process, `mcp` on stdio, `serve` on 127.0.0.1), answered by one library function.

- a card whose frontmatter does not parse: every door's `get` shows its text and one warning that
  names the problem and the fix (`cards.get_card` -> `UnparsedCard`);
- a title with a `/` finds its card (`cards.card_path`: a path only when such a file exists or it
  ends in `.md`), and so does its part after the `/`, as a wikilink does;
- feedback on one of two files that share an id (a hand copy) is refused, naming both files;
- `list --limit/--offset` pages as MCP's `list_memories` does (`cards.list_page`).
"""

from __future__ import annotations

import json
import shutil
from urllib.parse import quote

from helpers import events, file_hashes, ok_data, subprocess_cli, vault_hashes, write_card
from test_http import start, stop
from test_mcp import Server, data_of, error_text

BROKEN_ID = "11111111-2222-3333-4444-555555555555"
BROKEN = (f"---\nid: {BROKEN_ID}\ntitle: Broken pooling notes\ntags: [a, b\n---\n# Broken pooling notes\n\n"
          "pgbouncer notes kept by hand\n")
WARNING = ("Playbooks/Broken.md:4: bad frontmatter: unterminated flow list (no closing ']'); showing the raw file: "
           "fix the frontmatter by hand (the tool never rewrites a card it cannot parse)")


def cli(vault, *argv: str):
    return subprocess_cli(*argv, vault=vault)


def cli_json(vault, *argv: str) -> dict:
    done = cli(vault, *argv, "--json")
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True, envelope
    return envelope["data"]


# ---------------------------------------------------------------------------- a card that does not parse

def test_a_card_whose_frontmatter_does_not_parse_reads_the_same_through_every_door(vault):
    for title, body in (("Pool connections with pgbouncer", "Use pgbouncer in transaction mode."),
                        ("Rotate TLS certificates", "Renew them a month before they expire.")):
        ok_data("create", "--type", "pattern", "--domain", "infra", "--tags", "ops", "--title", title, "--body", body)
    write_card(vault, "Playbooks/Broken.md", BROKEN)
    before = vault_hashes(vault)
    expected = {"path": "Playbooks/Broken.md", "raw": BROKEN, "warning": WARNING}

    done = cli(vault, "get", "Broken")
    assert (done.returncode, done.stdout, done.stderr) == (0, BROKEN, f"brain: warning: {WARNING}\n")
    done = cli(vault, "get", BROKEN_ID, "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == {"ok": True, "command": "get", "data": expected}
    assert done.stderr == f"brain: warning: {WARNING}\n"

    mcp = Server(vault)
    try:
        mcp.initialize()
        by_stem = data_of(mcp.call("get_memory", {"memory_id": "Broken"}), "get_memory")
        by_id = data_of(mcp.call("get_memory", {"memory_id": BROKEN_ID}), "get_memory")
    finally:
        mcp.close()
    assert by_stem == by_id == expected

    server = start(vault)
    try:
        answers = [server.call("GET", f"/v1/memories/{ref}") for ref in (BROKEN_ID, "Broken")]
    finally:
        stop(server.process)
    for status, _, data in answers:
        assert (status, data) == (200, expected)

    # Reads never modify cards; each read logged `referenced`, as a get of any card does.
    assert vault_hashes(vault) == before
    assert [e["card"] for e in events(vault) if e["event"] == "referenced"] == ["Playbooks/Broken.md"] * 6

    # search and list go on with the other cards (SPEC: "skipped by search"), and every door names
    # the skipped file: the CLI on stderr, MCP and HTTP in the answer's `warnings`.
    skipped = "skipped Playbooks/Broken.md:4: bad frontmatter: unterminated flow list (no closing ']')"
    for argv in (("list",), ("search", "pgbouncer")):
        done = cli(vault, *argv)
        assert done.returncode == 0 and "Pool connections with pgbouncer" in done.stdout, done.stdout
        assert "Broken" not in done.stdout and done.stderr == f"brain: warning: {skipped}\n", done.stderr
    mcp = Server(vault)
    try:
        mcp.initialize()
        recalled = data_of(mcp.call("recall_memories", {"query": "pgbouncer"}), "recall_memories")
        listed = data_of(mcp.call("list_memories", {}), "list_memories")
    finally:
        mcp.close()
    server = start(vault)
    try:
        found = server.call("GET", "/v1/memories?q=pgbouncer")
        paged = server.call("GET", "/v1/memories")
    finally:
        stop(server.process)
    for answer, key in ((recalled, "memories"), (listed, "memories"), (found[2], "memories"), (paged[2], "memories")):
        assert [m["path"] for m in answer[key]] != [] and "Playbooks/Broken.md" not in [m["path"] for m in answer[key]]
        assert answer["warnings"] == [skipped], answer


# ---------------------------------------------------------------------------- a title with a slash

def test_a_title_with_a_slash_finds_its_card_in_every_door_and_paths_still_work(vault):
    made = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ci",
                   "--title", "CI/CD pipeline timeout", "--body", "## Fix\nRaise the job timeout to 30 minutes.")
    rel = made["path"]
    assert rel == "Playbooks/Troubleshooting_CICD_pipeline_timeout.md"

    for ref in ("CI/CD pipeline timeout", "ci/cd PIPELINE timeout", rel, rel.removesuffix(".md")):
        shown = cli_json(vault, "get", ref)
        assert (shown["path"], shown["id"]) == (rel, made["id"]), ref
    recorded = cli_json(vault, "record", "CI/CD pipeline timeout", "used")
    assert recorded["path"] == rel

    # A path (it ends in .md, or such a file exists) is still a path: a missing one is not a title.
    done = cli(vault, "get", "Playbooks/Nosuch.md")
    assert (done.returncode, done.stderr) == (1, "brain: error: no card at Playbooks/Nosuch.md; "
                                                 "`brain list` shows the cards\n")
    done = cli(vault, "get", "CI/CD pipeline")   # part of a title is no title
    assert done.returncode == 1
    assert done.stderr == ("brain: error: no card with path, stem or id 'CI/CD pipeline'; "
                           "`brain search` or `brain list` finds it\n")

    mcp = Server(vault)
    try:
        mcp.initialize()
        got = data_of(mcp.call("get_memory", {"memory_id": "CI/CD pipeline timeout"}), "get_memory")
    finally:
        mcp.close()
    assert got["id"] == made["id"]
    server = start(vault)
    try:
        status, _, data = server.call("GET", f"/v1/memories/{quote('CI/CD pipeline timeout', safe='')}")
    finally:
        stop(server.process)
    assert (status, data["id"]) == (200, made["id"]), data


def test_the_part_of_a_title_after_its_slash_names_the_card_as_a_wikilink_does(vault):
    """`get "CD pipeline timeout"` finds the card titled "CI/CD pipeline timeout": a wikilink
    `[[CD pipeline timeout]]` links to it (names are matched by the part after the last `/`), so
    `get` and `links` of the name a link resolves say the same. A card whose whole title is the
    name comes first; two cards that end so are AMBIGUOUS; a name with a `/` is matched whole."""
    made = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ci",
                   "--title", "CI/CD pipeline timeout", "--body", "## Fix\nRaise the job timeout to 30 minutes.")
    linking = write_card(vault, "Playbooks/Job_timeouts.md", "---\ntitle: Job timeouts\ntype: pattern\ndomain: infra\n"
                         "tags: [ci]\nrelated: [\"[[CD pipeline timeout]]\"]\n---\nBudget each stage.\n")
    assert [link["path"] for link in cli_json(vault, "links", "Job_timeouts")["outgoing"]] == [made["path"]]
    for ref in ("CD pipeline timeout", "cd PIPELINE timeout"):
        shown = cli_json(vault, "get", ref)
        assert (shown["path"], shown["id"]) == (made["path"], made["id"]), ref
    assert cli_json(vault, "links", "CD pipeline timeout")["incoming"][0]["path"] == "Playbooks/Job_timeouts.md"
    assert cli_json(vault, "record", "CD pipeline timeout", "used")["path"] == made["path"]
    mcp = Server(vault)
    try:
        mcp.initialize()
        got = data_of(mcp.call("get_memory", {"memory_id": "CD pipeline timeout"}), "get_memory")
    finally:
        mcp.close()
    assert got["id"] == made["id"]

    done = cli(vault, "get", "QA/CD pipeline timeout")   # another title with a slash: matched whole
    assert (done.returncode, done.stderr) == (1, "brain: error: no card with path, stem or id 'QA/CD pipeline timeout'; "
                                                 "`brain search` or `brain list` finds it\n")
    exact = ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "cd",
                    "--title", "CD pipeline timeout", "--body", "The CD pipeline stops after 60 minutes.")
    assert cli_json(vault, "get", "CD pipeline timeout")["id"] == exact["id"]   # the whole title first
    assert cli_json(vault, "get", "CI/CD pipeline timeout")["id"] == made["id"]
    other = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "qa",
                    "--title", "QA/CD pipeline timeout", "--body", "## Fix\nSplit the QA suite into shards.")
    assert cli_json(vault, "get", "QA/CD pipeline timeout")["id"] == other["id"]
    ok_data("delete", exact["id"])
    done = cli(vault, "get", "CD pipeline timeout")   # two titles end so: neither is guessed
    assert (done.returncode, done.stderr) == (
        1, f"brain: error: CD pipeline timeout is the end of the title or alias of 2 cards ({made['path']}, "
           f"{other['path']}); give the whole title, the path or the id\n")


# ---------------------------------------------------------------------------- one id, two files

def test_feedback_on_one_of_two_files_that_share_an_id_is_refused_naming_both(vault):
    made = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ci",
                   "--title", "Flaky integration tests", "--body", "Retry once, then quarantine the test.")
    original = vault / made["path"]
    shutil.copyfile(original, vault / "Playbooks" / "Copy.md")   # a person's copy, id and all
    before = file_hashes(vault)
    logged = len(events(vault))
    message = (f"Playbooks/Copy.md shares its id {made['id']} with {made['path']}: feedback is kept by id and "
               "would move both; delete the `id:` line of the one that is a copy (its next write gives it an "
               "id of its own), then record again")
    for ref in ("Playbooks/Copy.md", "Copy"):
        done = cli(vault, "record", ref, "used")
        assert (done.returncode, done.stdout, done.stderr) == (1, "", f"brain: error: {message}\n")
    shutil.rmtree(vault / ".brain" / "cache")   # no index to ask: the files are read
    done = cli(vault, "record", "Playbooks/Copy.md", "rejected")
    assert (done.returncode, done.stderr) == (1, f"brain: error: {message}\n")
    mcp = Server(vault)
    try:
        mcp.initialize()
        text = error_text(mcp.call("record_feedback", {"memory_id": made["path"], "outcome": "used"}))
    finally:
        mcp.close()
    assert text == ("record_feedback: AMBIGUOUS: " + message.replace("Playbooks/Copy.md shares", f"{made['path']} shares")
                    .replace(f"with {made['path']}", "with Playbooks/Copy.md")), text
    assert file_hashes(vault) == before
    assert [e for e in events(vault)[logged:] if e["event"] in ("used", "rejected")] == []

    # doctor's fix done: each file is a card of its own, and feedback moves only the one named.
    copy = vault / "Playbooks" / "Copy.md"
    copy.write_text("".join(line for line in copy.read_text().splitlines(keepends=True)
                            if not line.startswith("id:")))
    recorded = cli_json(vault, "record", "Playbooks/Copy.md", "used")
    assert recorded["id"] != made["id"] and recorded["after"] == 0.55
    assert cli_json(vault, "doctor", "--fix") is not None
    assert cli_json(vault, "get", made["id"])["confidence"] == 0.5


# ---------------------------------------------------------------------------- list pages

def test_list_limit_and_offset_page_as_mcp_list_memories_does(vault):
    for n in range(5):
        ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "paging",
                "--title", f"Paging card {n}", "--body", f"Body {n}.")
    whole = cli_json(vault, "list")
    paths = [card["path"] for card in whole["cards"]]
    assert len(paths) == 5

    page = cli_json(vault, "list", "--limit", "2", "--offset", "1")
    assert [card["path"] for card in page["cards"]] == paths[1:3]
    assert (page["count"], page["total"], page["has_more"]) == (2, 5, True)
    last = cli_json(vault, "list", "--limit", "2", "--offset", "4")
    assert ([card["path"] for card in last["cards"]], last["has_more"]) == (paths[4:], False)

    done = cli(vault, "list", "--limit", "2", "--offset", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.rsplit("(", 1)[1].rstrip(")") for line in lines[:2]] == paths[1:3]
    assert lines[2:] == ["(cards 2-3 of 5; `--offset 3` shows the next)"]

    mcp = Server(vault)
    try:
        mcp.initialize()
        listed = data_of(mcp.call("list_memories", {"limit": 2, "offset": 1}), "list_memories")
    finally:
        mcp.close()
    assert [card["path"] for card in listed["memories"]] == paths[1:3]
    assert (listed["total_count"], listed["has_more"]) == (page["total"], page["has_more"])

    for argv, said in ((("--limit", "0"), "--limit 0 must be at least 1"),
                       (("--offset", "-1"), "--offset -1 must be 0 or more")):
        done = cli(vault, "list", *argv)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"brain: error: {said}\n")


# ---------------------------------------------------------------------------- conflict markers

def test_a_snippet_never_shows_a_cards_merge_conflict_markers(vault):
    for title, body in (("Kafka consumer lag runbook", "Scale the consumer group to the partition count."),
                        ("Redis eviction policy", "Use allkeys-lru for caches.")):
        ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "ops", "--title", title, "--body", body)
    made = ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "deploy",
                   "--title", "Deploy freeze window", "--body", "No releases on Friday afternoons.")
    path = vault / made["path"]
    head, _, _ = path.read_text().partition("No releases")
    conflicted = (head + "<<<<<<< ours\nNo releases on Friday after 15:00.\n=======\n"
                  "No releases on Friday after 12:00.\n>>>>>>> theirs\n")
    path.write_text(conflicted)   # as git leaves a card both clones changed on the same line
    markers = ("<<<<<<<", "=======", ">>>>>>>")

    found = cli_json(vault, "search", "deploy freeze window")
    (hit,) = [h for h in found["hits"] if h["path"] == made["path"]]
    assert hit["snippet"] == "No releases on Friday after 15:00.", hit
    done = cli(vault, "search", "deploy freeze window")
    assert done.returncode == 0 and not any(m in done.stdout for m in markers), done.stdout
    done = cli(vault, "brief", "deploy freeze window")
    assert done.returncode == 0 and "No releases on Friday after 15:00." in done.stdout, done.stdout
    assert not any(m in done.stdout for m in markers), done.stdout
    mcp = Server(vault)
    try:
        mcp.initialize()
        recalled = data_of(mcp.call("recall_memories", {"query": "deploy freeze window"}), "recall_memories")
    finally:
        mcp.close()
    (memory,) = [m for m in recalled["memories"] if m["path"] == made["path"]]
    assert memory["snippet"] == hit["snippet"] and not any(m in memory["summary"] for m in markers), memory

    assert path.read_text() == conflicted   # the card itself is untouched; doctor names the conflict
    done = cli(vault, "doctor")
    assert f"{made['path']}:" in done.stdout and "conflict" in done.stdout, done.stdout
