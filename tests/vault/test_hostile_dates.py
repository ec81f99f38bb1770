"""Dates no command can compute with (issue 18, "No input takes a door down"): a hand-written
`updated: 0001-01-01`, `9999-12-31T23:59:59` or `2300-01-01`, in every date key the tool reads
(`created`, `updated`, `valid_from`, `valid_to`, `first_seen`, `last_seen`, `promoted`,
`expires`, `event_time`, a log line's `ts`), broke search, list, get, doctor, reindex, stats,
analyze, brief, audit, graph and the session-start hook with `year 0 is out of range` or an
OverflowError, some only in one time zone. Every date that parses is now read into the window
`storage.EARLIEST`..`storage.LATEST` (clamped, card by card), `doctor` names the file and line of
each one outside it, and every command answers, in every time zone. The zone is per process, so
each zone runs in its own process (the CLI's `main` for each command, then the real MCP server and
hook processes)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, SCRIPT, log_event, write_card

ZONES = ("UTC", "Asia/Tokyo", "America/New_York")


def card(title: str, extra: str, card_type: str = "pattern", important: bool = False) -> str:
    """A hand-written card; the `important` ones (importance 5, project p1) are what `brief`
    without a query and the session-start hook show."""
    lead = "importance: 5\nproject: p1\n" if important else "importance: 3\nproject: p2\n"
    return (f"---\ntitle: {title}\ntype: {card_type}\ndomain: dev\ntags: [hostile]\nconfidence: 0.5\n"
            f"{lead}{extra}---\n# {title}\n\nhostile date words\n")


# file -> (text, the date lines out of the window, as `key: value` at their line numbers)
CARDS = {
    "Playbooks/Pattern_Ancient.md": card("Ancient", "updated: 0001-01-01\n", important=True),
    "Playbooks/Pattern_Far.md": card("Far", "updated: 9999-12-31T23:59:59\n", important=True),
    "Playbooks/Pattern_Future.md": card("Future", "updated: 2300-01-01\n", important=True),
    "Playbooks/Pattern_Offset.md": card("Offset", "created: 0001-01-01T00:00:00+23:00\n"),
    "Playbooks/Fact_Window.md": card("Window", "valid_from: 9999-12-31T23:59:59-23:59\nvalid_to: 0001-01-01\n",
                                     "fact"),
    "Playbooks/State_Odd.md": card("Odd state", "valid_from: 9999-12-31\nupdated: 0001-01-01T00:00:00Z\n", "state"),
    "Playbooks/Episode_Seen.md": card("Seen", "first_seen: 0001-01-01\nlast_seen: 9999-12-31T23:59:59\n"
                                              "promoted: 9999-12-31\nexpires: 0001-01-02\n"
                                              "event_time: 0001-01-01T00:00\n", "episode"),
    "Playbooks/Pattern_Normal.md": card("Normal", "updated: 2026-01-01T10:00:00+09:00\n", important=True),
    "Inbox/Pattern_Candidate.md": card("Candidate", "first_seen: 0001-01-01\nlast_seen: 9999-12-31T23:59:59\n"),
    "WorkingMemory/odd.md": "---\nkey: odd\ncreated: 0001-01-01\nupdated: 9999-12-31T23:59:59\n"
                            "expires: 9999-12-31T23:59:59\n---\nodd note\n",
    "WorkingMemory/gone.md": "---\nkey: gone\ncreated: 0001-01-01\nupdated: 0001-01-01\nexpires: 0001-01-01\n---\n"
                             "gone note\n",
}
OUT_OF_WINDOW = {   # what doctor must name, file:line -> the value
    "Playbooks/Pattern_Ancient.md:9": "0001-01-01",
    "Playbooks/Pattern_Far.md:9": "9999-12-31T23:59:59",
    "Playbooks/Pattern_Offset.md:9": "0001-01-01T00:00:00+23:00",
    "Playbooks/Fact_Window.md:9": "9999-12-31T23:59:59-23:59",
    "Playbooks/Fact_Window.md:10": "0001-01-01",
    "Playbooks/State_Odd.md:9": "9999-12-31",
    "Playbooks/State_Odd.md:10": "0001-01-01T00:00:00Z",
    "Playbooks/Episode_Seen.md:9": "0001-01-01",
    "Playbooks/Episode_Seen.md:10": "9999-12-31T23:59:59",
    "Playbooks/Episode_Seen.md:11": "9999-12-31",
    "Playbooks/Episode_Seen.md:12": "0001-01-02",
    "Playbooks/Episode_Seen.md:13": "0001-01-01T00:00",
    "Inbox/Pattern_Candidate.md:9": "0001-01-01",
    "Inbox/Pattern_Candidate.md:10": "9999-12-31T23:59:59",
    "WorkingMemory/odd.md:3": "0001-01-01",
    "WorkingMemory/odd.md:4": "9999-12-31T23:59:59",
    "WorkingMemory/odd.md:5": "9999-12-31T23:59:59",
    "WorkingMemory/gone.md:3": "0001-01-01",
    "WorkingMemory/gone.md:4": "0001-01-01",
    "WorkingMemory/gone.md:5": "0001-01-01",
}

# Run in order in one process per zone: reads, then writes, then the reads again.
READS = [
    ["search", "hostile", "--limit", "20"], ["search", "hostile", "--as-of", "2026-01-01"],
    ["search", "hostile", "--explain"],
    ["list"], ["list", "--sort", "updated"], ["list", "--sort", "confidence"], ["list", "--valid-at", "2026-06-01"],
    ["list", "--inbox"], ["get", "Pattern_Ancient"], ["get", "Pattern_Far"], ["get", "Pattern_Future"],
    ["get", "Pattern_Offset"], ["get", "Fact_Window"], ["get", "State_Odd"], ["get", "Episode_Seen"],
    ["get", "Inbox/Pattern_Candidate.md"], ["doctor"], ["stats"], ["analyze"], ["brief", "hostile"], ["brief"],
    ["brief", "--project", "p1"], ["audit"], ["graph"], ["graph", "--since", "2020-01-01"],
    ["explore", "Pattern_Ancient"], ["links", "Pattern_Far"], ["history", "Pattern_Ancient"],
    ["export", "--output", "{out}"],
    ["context"], ["recall", "odd"], ["promote", "--auto", "--dry-run"],
]
WRITES = [
    ["reindex"], ["record", "Pattern_Ancient", "used"], ["record", "Pattern_Far", "rejected"],
    ["record", "State_Odd", "used"], ["update", "Pattern_Future", "--add-tag", "more"],
    ["link", "Pattern_Far", "Pattern_Ancient", "--rel", "extends"],
    ["remember", "odd", "--body", "a new note"], ["delete", "Pattern_Normal"],
]

DRIVER = """
import contextlib, io, json, sys
sys.path.insert(0, sys.argv[1])
from external_brain.doors.cli import main
results = []
for argv in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv + ["--json"])
        except BaseException as exc:
            import traceback
            traceback.print_exc()
            code = 99
    results.append([argv, code, out.getvalue(), err.getvalue()])
sys.stdout.write(json.dumps(results))
"""


@pytest.fixture
def hostile(vault):
    for rel, text in CARDS.items():
        write_card(vault, rel, text)
    # The log's own times are read as dates too (last reference, feedback): hand-edited ones.
    log_event(vault, "referenced", "Playbooks/Pattern_Normal.md", None, "9999-12-31T23:59:59")
    log_event(vault, "used", "Playbooks/Pattern_Future.md", None, "0001-01-01")
    return vault


def run_in_zone(vault: Path, zone: str, commands: list[list[str]]) -> list[tuple[list[str], int, dict, str]]:
    env = {**os.environ, "TZ": zone, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    commands = [[arg.replace("{out}", str(vault.parent / "export.jsonl")) for arg in argv] for argv in commands]
    done = subprocess.run([sys.executable, "-c", DRIVER, str(ROOT / "runtime"), json.dumps(commands)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    results = []
    for argv, code, out, err in json.loads(done.stdout):
        assert "Traceback" not in err, (zone, argv, err)
        assert code == 0, (zone, argv, out, err)
        envelope = json.loads(out)
        assert envelope["ok"] is True, (zone, argv, envelope)
        results.append((argv, code, envelope["data"], err))
    return results


@pytest.mark.parametrize("zone", ZONES)
def test_no_date_takes_a_command_down_in_any_zone(hostile, tmp_path, zone):
    vault = tmp_path / f"copy-{zone.replace('/', '-')}"
    shutil.copytree(hostile, vault)
    first = {tuple(argv): data for argv, _, data, _ in run_in_zone(vault, zone, READS)}

    titles = [c["title"] for c in first[("list", "--sort", "updated")]["cards"]]
    # Clamped, not dropped: the far future sorts first, the year 1 last, each still dated.
    assert titles.index("Far") < titles.index("Future") < titles.index("Normal") < titles.index("Ancient")
    hits = first[("search", "hostile", "--limit", "20")]["hits"]
    assert {h["title"] for h in hits} >= {"Ancient", "Far", "Future", "Normal"}
    shown = first[("brief",)]["markdown"]
    assert all(title in shown for title in ("Ancient", "Far", "Future", "Normal")), shown
    state = first[("get", "State_Odd")]
    assert state["age_seconds"] == 0   # a state starting in the far future is not negative in age
    found = {f["path"]: f for f in first[("doctor",)]["findings"] if "outside the dates" in f["message"]}
    assert set(found) == set(OUT_OF_WINDOW), sorted(found)
    for where, value in OUT_OF_WINDOW.items():
        assert found[where]["level"] == "warning" and value in found[where]["message"], found[where]
    assert first[("recall", "odd")]["body"] == "odd note"

    run_in_zone(vault, zone, WRITES + READS)


@pytest.mark.parametrize("zone", ZONES)
def test_the_agent_doors_answer_with_such_dates_in_any_zone(hostile, tmp_path, zone):
    """`brief` over MCP and the session-start hook (`updated: 2300-01-01` overflowed both)."""
    env = {**os.environ, "TZ": zone, "BRAIN_VAULT": str(hostile), "BRAIN_ACTOR": "test"}
    requests = [{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "brief", "arguments": {}}},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                 "params": {"name": "brief", "arguments": {"query": "hostile date", "limit": 20}}},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                 "params": {"name": "list_memories", "arguments": {"sort": "updated"}}}]
    done = subprocess.run([sys.executable, str(SCRIPT), "mcp"], env=env, capture_output=True, timeout=120,
                          input="".join(json.dumps(r) + "\n" for r in requests).encode())
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2, 3] and "Traceback" not in done.stderr.decode(), done.stderr
    for answer in answers:
        assert answer["result"]["isError"] is False, answer
    assert "Future" in answers[0]["result"]["structuredContent"]["markdown"]
    assert "Future" in answers[1]["result"]["structuredContent"]["markdown"]

    project = tmp_path / "p1"
    project.mkdir()
    payload = json.dumps({"session_id": "s1", "cwd": str(project), "hook_event_name": "SessionStart",
                          "source": "startup"})
    done = subprocess.run([sys.executable, str(SCRIPT), "hook", "session-start"], env=env, input=payload,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert all(title in context for title in ("Ancient", "Far", "Future", "Normal")), context


def test_a_date_the_caller_gives_outside_the_window_is_bad_usage(hostile):
    """Files are read leniently (clamped); a date typed as an argument is refused, naming it."""
    for argv, flag in ((["search", "hostile", "--as-of", "0001-01-01"], "--as-of"),
                       (["list", "--valid-at", "9999-12-31T23:59:59"], "--valid-at"),
                       (["graph", "--since", "0001-01-01"], "--since")):
        done = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "TZ": "America/New_York", "BRAIN_VAULT": str(hostile)})
        assert done.returncode == 2 and done.stdout == "", (argv, done.stderr)
        assert done.stderr.startswith(f"brain: error: {flag} ") and "outside" in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
