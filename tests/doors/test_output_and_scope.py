"""What `search`, `list`, `create` and `get` show (issue 8, defect 6): a missed query is echoed
and kept cut, `list` marks cards out of service, suggested links have a similarity floor,
`create` names a command that exists, and `get` never shows another agent's private card."""

from __future__ import annotations

import json

from external_brain.vault import frontmatter
from helpers import events, log_lines, ok_data, run_cli, run_json

LONG_QUERY = " ".join(f"word{n}" for n in range(260))  # 1,969 characters: under the 2,000 a query may have


def test_a_long_missed_query_is_echoed_and_kept_cut(vault):
    code, out, err = run_cli("search", LONG_QUERY)
    assert (code, err) == (0, "")
    assert len(out) < 600, len(out)
    assert out.startswith('No cards match "word0 word1 ') and '…". Logged as a search miss: Inbox/' in out

    [candidate] = (vault / "Inbox").glob("Search_Miss_*.md")
    meta = frontmatter.parse(candidate.read_text(encoding="utf-8")).data
    assert len(meta["title"]) <= len("Search miss: ") + 200 and meta["title"].endswith("…")
    assert meta["query"] == LONG_QUERY[:2000]
    assert candidate.stat().st_size < 6000
    [miss] = [e for e in events(vault) if e["event"] == "search_miss"]
    assert miss["query"] == LONG_QUERY

    # The same long query again is the same candidate; the JSON answer keeps the query whole.
    data = ok_data("search", LONG_QUERY)
    assert data["query"] == LONG_QUERY
    assert frontmatter.parse(candidate.read_text(encoding="utf-8")).data["misses"] == 2
    # The cut title is still a valid card title: the candidate promotes without --title.
    promoted = ok_data("promote", candidate.stem, "--type", "fact", "--domain", "dev")
    assert promoted["path"].startswith("Playbooks/Fact_word0_word1_")
    # A longer query (a pasted document) is refused, neither searched, echoed nor kept
    # (docs/decisions.md, "Input": a query is at most 2,000 characters).
    before = log_lines(vault)
    code, out, err = run_cli("search", " ".join(f"word{n}" for n in range(10_000)))
    assert (code, out) == (2, "") and err == ("brain: error: the query is 88,889 characters, over 2,000; search with "
                                              "the words that matter (an error line, a title)\n")
    assert log_lines(vault) == before


def test_list_marks_a_superseded_card_and_its_replacement_differs(vault):
    for host in ("db1", "db2"):
        ok_data("create", "--type", "fact", "--domain", "infra", "--tags", "postgres,host",
                "--title", "Orders database host", "--body", f"The orders database runs on {host}.internal.")
    code, out, err = run_cli("list")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines == [
        "0.50  fact/infra               Orders database host  [superseded]  (Playbooks/Fact_Orders_database_host.md)",
        "0.50  fact/infra               Orders database host  (Playbooks/Fact_Orders_database_host_2.md)",
    ]
    assert [c["status"] for c in ok_data("list")["cards"]] == ["superseded", "active"]


def test_suggested_links_leave_out_unrelated_cards(vault):
    ok_data("create", "--type", "runbook", "--domain", "ops", "--title", "Rotate the TLS certificates with certbot",
            "--tags", "tls,certbot,timeout", "--body",
            "Run certbot renew from cron twice a day; nginx reloads after the deploy hook. Check the expiry "
            "with openssl s_client. Keep the ACME account key in the secrets store and alert 14 days before "
            "expiry so a renewal that fails on a DNS timeout is noticed.")
    ok_data("create", "--type", "troubleshooting", "--domain", "dev", "--title",
            "Gunicorn workers killed by the OOM killer", "--tags", "gunicorn,memory", "--body",
            "Gunicorn workers died with signal 9 under load: the kernel OOM killer. Lower --workers or set "
            "max_requests so each worker restarts before it leaks too much memory.")
    data = ok_data("create", "--type", "troubleshooting", "--domain", "dev", "--title",
                   "Gunicorn worker timeout under load", "--tags", "gunicorn,timeout", "--body",
                   "Workers were killed with WORKER TIMEOUT when requests took longer than 30 seconds; "
                   "raise --timeout and move slow work to a queue.")
    # The certbot runbook shares only "timeout" (similarity 0.139, under the 0.15 floor).
    links = data["insights"]["suggested_links"]
    assert [link["title"] for link in links] == ["Gunicorn workers killed by the OOM killer"]
    assert links[0]["similarity"] >= 0.15


def test_create_names_a_command_that_exists_for_a_near_duplicate(vault):
    args = ("create", "--type", "pattern", "--domain", "dev", "--title", "Atomic writes with os.replace",
            "--tags", "files", "--body", "Write a temp file in the same folder, fsync, then os.replace.")
    first = ok_data(*args)
    code, out, err = run_cli(*args, "--no-duplicates")
    assert (code, err) == (3, "")   # made no card: exit 3 (README, exit codes)
    assert out.startswith("not created: near duplicate of Playbooks/Pattern_Atomic_writes_with_os.replace.md "
                          "(an exact copy); edit that card instead, or drop --no-duplicates")
    data = ok_data(*args)
    [dup] = data["insights"]["potential_duplicates"]
    assert dup["id"] == first["id"]
    assert dup["suggestion"] == f"edit {first['path']} instead"
    assert "update" not in out + json.dumps(data)


def test_get_never_shows_another_agents_private_card(vault):
    created = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Agent A scratch key",
                      "--tags", "secret", "--scope", "agent", "--agent", "A", "--body", "A's own note.")
    path, card_id = created["path"], created["id"]
    refs = (path, "Fact_Agent_A_scratch_key", card_id, card_id[:8])
    log_before = log_lines(vault)

    def answers(ref: str, *agent: str):
        code, out, err = run_cli("get", ref, *agent)
        jcode, envelope, jerr = run_json("get", ref, *agent)
        return code, out, err, jcode, envelope, jerr

    hidden = {ref: [answers(ref), answers(ref, "--agent", "B")] for ref in refs}
    assert log_lines(vault) == log_before  # nothing logged: no `referenced` for a card not shown

    got = ok_data("get", path, "--agent", "A")
    assert got["id"] == card_id and got["body"].strip().endswith("A's own note.")

    # Exactly what a card that does not exist gives: same exit code, message and envelope.
    (vault / path).unlink()
    for ref, seen in hidden.items():
        missing = answers(ref)
        assert seen == [missing, missing], ref
        code, out, err, jcode, envelope, jerr = missing
        assert (code, out, jcode, envelope["error"]["code"]) == (1, "", 1, "NOT_FOUND")
