"""Auto-learn's judgements through `learn --from-transcript` on Claude Code transcripts: the fix
that worked (never a rejected step), one candidate per problem, evidence per session, nothing
proposed when a card holds the lesson, readable names, and which "No, ..." is a correction."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from helpers import SCRIPT, ok_data
from test_hooks import assistant, bash, hook, inbox, open_inbox, payload, result, user, write_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"

REFUSED = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file "
           "edit, the new_string was NOT written to the file). STOP what you are doing and wait for the user to "
           "tell you how to proceed.")


def edit(call_id: str, path: str, old: str, new: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "Edit", "input": {"file_path": path, "old_string": old,
                                                                          "new_string": new}}


def psycopg(session: str = "s-1") -> list[dict]:
    """The user's project is on psycopg 3; the agent installs psycopg2, is told no, switches; the
    tests then fail on an unrelated rounding bug, which it fixes too."""
    lines = [
        user("Wire the orders repository to Postgres and make the tests pass.", "u1"),
        assistant(bash("t1", "python -m pytest -q tests/test_orders.py")),
        result("t1", "app/db.py:1: in <module>\n    import psycopg2\nE   ModuleNotFoundError: No module named 'psycopg2'\n"
                     "1 error in 0.21s", error=True),
        assistant({"type": "text", "text": "Installing the driver."}, bash("t2", "pip install psycopg2-binary")),
        result("t2", "Successfully installed psycopg2-binary-2.9.10"),
        user("No, don't use psycopg2. This project is on psycopg 3: use psycopg[binary].", "u2"),
        assistant(edit("t3", "/repo/requirements.txt", "fastapi\n", "fastapi\npsycopg[binary]==3.2.3\n")),
        result("t3", "The file /repo/requirements.txt has been updated."),
        assistant(edit("t4", "/repo/app/db.py", "import psycopg2\n", "import psycopg\n")),
        result("t4", "The file /repo/app/db.py has been updated."),
        assistant(bash("t5", "python -m pytest -q tests/test_orders.py")),
        result("t5", "E       AssertionError: assert Decimal('9.999') == Decimal('10.00')\n"
                     "tests/test_orders.py:41: AssertionError\n1 failed, 13 passed in 0.48s", error=True),
        assistant({"type": "text", "text": "Totals are never rounded to cents; quantizing."},
                  edit("t6", "/repo/app/orders.py", "return total\n", "return total.quantize(Decimal('0.01'))\n")),
        result("t6", "The file /repo/app/orders.py has been updated."),
        assistant(bash("t7", "python -m pytest -q tests/test_orders.py")),
        result("t7", "14 passed in 0.41s"),
    ]
    return [dict(line, sessionId=session) for line in lines]


def candidates(vault: Path) -> dict[str, dict[str, str]]:
    out = {}
    for name, text in inbox(vault).items():
        sections = dict(re.findall(r"^## (\w+)\n(.*?)(?=^## |\Z)", text, re.M | re.S))
        out[name] = {"problem": sections.get("Problem", ""), "solution": sections.get("Solution", ""), "text": text}
    return out


def test_the_solution_is_what_worked_and_each_problem_gets_its_own_candidate(vault, tmp_path):
    data = ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "a.jsonl", psycopg())))
    found = candidates(vault)
    assert sorted(found) == ["Learned_pytest_AssertionError_assert_Decimal(9.999)_==_Decimal(10.00).md",
                             "Learned_pytest_ModuleNotFoundError_No_module_named_psycopg2.md"]
    driver = found["Learned_pytest_ModuleNotFoundError_No_module_named_psycopg2.md"]
    assert "psycopg2-binary" not in driver["solution"]                 # the step the user rejected
    assert "psycopg[binary]==3.2.3" in driver["solution"] and "Decimal" not in driver["solution"]
    assert "Tried and rejected by the user: ran `pip install psycopg2-binary`." in driver["problem"]
    assert 'The user said: "No, don\'t use psycopg2.' in driver["problem"]
    rounding = found["Learned_pytest_AssertionError_assert_Decimal(9.999)_==_Decimal(10.00).md"]
    assert "orders.py" in rounding["solution"] and "psycopg" not in rounding["solution"]
    assert [lesson["kind"] for lesson in data["lessons"]] == ["error_fix", "error_fix"]   # no separate correction


def test_evidence_counts_sessions_not_lines_and_one_session_never_promotes(vault, tmp_path):
    (vault / ".brain" / "config.toml").write_text("[learn]\nauto_promote = true\nmin_evidence = 2\n", encoding="utf-8")
    ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "a.jsonl", psycopg("s-1"))))
    # The same session again, its lines shifted (a resumed session's file has more at the top).
    shifted = [{"type": "summary", "summary": "earlier work", "leafUuid": "x"}, *psycopg("s-1")]
    again = ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "b.jsonl", shifted)))
    assert again["learned"] == again["more_evidence"] == again["promoted"] == [] and len(again["unchanged"]) == 2
    assert all("evidence_count: 1" in c["text"] for c in candidates(vault).values())
    # Another session: seen in two sessions now, which is what min_evidence = 2 asks.
    other = ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "c.jsonl", psycopg("s-2"))))
    assert len(other["promoted"]) == 2 and open_inbox(vault) == {}


def yaml_session() -> list[dict]:
    """The settings tests fail on `No module named 'yaml'`; PyYAML added to requirements.txt fixes them."""
    return [user("Fix the settings tests", "u1"), assistant(bash("t1", "python -m pytest tests/test_settings.py")),
            result("t1", "E   ModuleNotFoundError: No module named 'yaml'", error=True),
            assistant(edit("t2", "/repo/requirements.txt", "a\n", "a\nPyYAML==6.0.2\n")),
            result("t2", "updated"), assistant(bash("t3", "python -m pytest tests/test_settings.py")),
            result("t3", "4 passed")]


def learn_beside(tmp_path: Path, tags: str, title: str, body: str) -> dict:
    """`learn --from-transcript` of `yaml_session` in a vault holding one troubleshooting card."""
    ok_data("create", "--type", "troubleshooting", "--domain", "dev", "--tags", tags, "--title", title, "--body", body)
    return ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "t.jsonl", yaml_session())))


def test_a_card_that_holds_the_error_and_the_fix_stops_the_proposal(vault, tmp_path):
    data = learn_beside(tmp_path, "python,pyyaml", "Tests Fail to Import yaml Because PyYAML Is Not in requirements.txt",
                        "Collection fails with `ModuleNotFoundError: No module named 'yaml'`. The package is PyYAML: "
                        "add it to `requirements.txt`.")
    assert data["learned"] == [] and inbox(vault) == {}
    assert data["not_proposed"][0]["reason"].startswith("duplicate of Playbooks/Troubleshooting_Tests_Fail_to_Import")


def test_a_card_naming_a_longer_error_does_not_hold_the_lesson(vault, tmp_path):
    # Before: the error was looked for as a substring, so a card about "No module named 'yamlfix'"
    # that also names requirements.txt was taken to hold the lesson of "No module named 'yaml'".
    data = learn_beside(tmp_path, "python,lint", "Lint Step Cannot Import yamlfix",
                        "The lint step fails with `ModuleNotFoundError: No module named 'yamlfix'`: it is a dev tool, "
                        "add it to `requirements-dev.txt`, never to `requirements.txt`.")
    assert [lesson["title"] for lesson in data["lessons"]] == ["pytest: ModuleNotFoundError: No module named yaml"]
    assert len(data["learned"]) == 1 and data["not_proposed"] == []


def test_titles_and_file_names_read_well_and_are_never_cut_inside_a_word_or_url(vault, tmp_path):
    url = "https://staging-webhooks.internal.example.com/api/v2/webhooks/deliveries/health?verbose=1"
    lines = [user("The smoke test fails", "u1"), assistant(bash("t1", f"curl -fsS {url}")),
             result("t1", "curl: (60) SSL certificate problem: unable to get local issuer certificate; More details "
                          "here: https://curl.se/docs/sslcerts.html", error=True),
             assistant(bash("t2", "sudo update-ca-certificates")), result("t2", "1 added, 0 removed; done."),
             assistant(bash("t3", f"curl -fsS {url}")), result("t3", '{"status":"ok"}'),
             assistant(bash("t4", "docker compose up -d db")),
             result("t4", "Error response from daemon: driver failed programming external connectivity on endpoint "
                          "shop-db-1 (4f0c2d1e8a9b): Bind for 0.0.0.0:5432 failed: port is already allocated",
                    error=True),
             assistant(edit("t5", "/repo/docker-compose.yml", '"5432:5432"', '"5433:5432"')), result("t5", "updated"),
             assistant(bash("t6", "docker compose up -d db")), result("t6", "Started")]
    data = ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "t.jsonl", lines)))
    titles = [lesson["title"] for lesson in data["lessons"]]
    assert titles == ["curl: (60) SSL certificate problem: unable to get local issuer certificate",
                      "docker: Bind for 0.0.0.0:5432 failed: port is already allocated"]
    assert all(not re.search(r"[`;'\"|]", name) for name in inbox(vault))


def test_no_that_answers_or_thanks_is_no_correction_and_a_refused_call_no_change(vault, tmp_path):
    lines = [
        user("Rename getCart to loadCart", "u1"),
        assistant({"type": "text", "text": "Renamed in 7 places. Should I also update the CHANGELOG?"}),
        user("No, leave it, I'll do that at release time.", "u2"),
        assistant({"type": "text", "text": "Installing date-fns with npm."}, bash("t1", "npm install date-fns")),
        result("t1", "added 1 package"),
        user("No, use pnpm in this repo, never npm.", "u3"),
        assistant({"type": "text", "text": "Done. Anything else?"}),
        user("No, that's all for now. Thanks!", "u4"),
        user("No worries if the build is slow.", "u5"),
        assistant(bash("t2", "npm run build")),
        result("t2", "Error: Cannot find module 'zod'", error=True),
        assistant({"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "rm -rf node_modules"}}),
        result("t3", REFUSED, error=True),
        user("Don't delete node_modules. Just run npm ci.", "u6"),
        assistant(bash("t4", "npm ci")), result("t4", "added 611 packages"),
        assistant(bash("t5", "npm run build")), result("t5", "Compiled successfully"),
    ]
    data = ok_data("learn", "--from-transcript", str(write_transcript(tmp_path / "t.jsonl", lines)))
    assert [lesson["title"] for lesson in data["lessons"]] == ["Correction: use pnpm in this repo, never npm.",
                                                              "npm: Error: Cannot find module zod"]
    build = data["lessons"][1]
    assert build["solution"].startswith("Changes before it passed: ran `npm ci`.") and "rm -rf" not in build["solution"]
    assert "Don't delete node_modules" in build["problem"]


# ---------------------------------------------------------------------------- fix and rerun in one command

def learn_process(vault: Path, transcript: Path) -> dict:
    """`learn --from-transcript` as a real process, as an agent's shell runs it."""
    done = subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "learn", "--from-transcript",
                           str(transcript), "--json"], capture_output=True, timeout=60,
                          env={**os.environ, "BRAIN_ACTOR": "test"})
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True, envelope
    return envelope["data"]


def lines_of(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def test_a_fix_and_its_rerun_in_one_command_is_a_lesson(vault, tmp_path):
    # The reviewer's session without the user's last words: `pytest` fails, then
    # `docker compose up -d db && python -m pytest -q` passes.
    transcript = write_transcript(tmp_path / "s1.jsonl", lines_of("compound_fix_then_correction.jsonl")[:5])
    data = learn_process(vault, transcript)
    (lesson,) = data["lessons"]
    assert lesson["kind"] == "error_fix" and lesson["title"].startswith("pytest: ")
    assert lesson["solution"].startswith("Changes before it passed: ran `docker compose up -d db`.")
    assert "python -m pytest" not in lesson["solution"]     # the rerun is no step of the fix
    assert len(data["learned"]) == 1


def test_a_correction_of_the_fix_after_its_rerun_passed_makes_the_lesson_what_the_user_said(vault, tmp_path):
    # The reviewer's transcript: the compound rerun passes, then "No, don't use docker compose up for that,
    # use `make db` instead": one candidate, whose solution is `make db`, never `docker compose up`.
    data = learn_process(vault, FIXTURES / "compound_fix_then_correction.jsonl")
    (lesson,) = data["lessons"]
    assert lesson["kind"] == "error_fix" and "port 5432" in lesson["title"]
    assert "make db" in lesson["solution"] and "docker compose" not in lesson["solution"]
    assert "Tried and rejected by the user: ran `docker compose up -d db`." in lesson["problem"]
    assert "The user said: \"No, don't use docker compose up for that" in lesson["problem"]
    (text,) = inbox(vault).values()
    assert "hunter2secret" not in text


def test_the_stop_hook_learns_the_corrected_compound_session(vault, tmp_path):
    transcript = tmp_path / "s1.jsonl"
    transcript.write_bytes((FIXTURES / "compound_fix_then_correction.jsonl").read_bytes())
    output, _ = hook(vault, "stop", payload("Stop", transcript, stop_hook_active=False))
    assert output is None
    (name, text), = inbox(vault).items()
    assert name.startswith("Learned_pytest_") and "port_5432" in name
    solution = text.split("## Solution\n", 1)[1].split("\n## ", 1)[0]
    assert "make db" in solution and "docker compose" not in solution


def test_a_correction_while_the_command_still_fails_is_never_dropped(vault, tmp_path):
    # The session ends (or the transcript lags) before the command is run again: the lesson is what the
    # user said to do, the rejected step is recorded as rejected.
    lines = [user("make deploy fails", "u1"), assistant(bash("t1", "make deploy")),
             result("t1", "permission denied while trying to connect to the Docker daemon socket", error=True),
             assistant(bash("t2", "sudo chmod 666 /var/run/docker.sock")), result("t2", ""),
             user("No, never chmod the docker socket. Use `sudo usermod -aG docker $USER` instead.", "u2"),
             assistant({"type": "text", "text": "Understood."})]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    (lesson,) = data["lessons"]
    assert lesson["kind"] == "error_fix" and "permission denied" in lesson["title"]
    assert "usermod -aG docker" in lesson["solution"] and "chmod" not in lesson["solution"]
    assert "Tried and rejected by the user: ran `sudo chmod 666 /var/run/docker.sock`." in lesson["problem"]


def test_the_same_command_reaches_env_prefixes_python_m_and_cd(vault, tmp_path):
    lines = [user("run the tests", "u1"), assistant(bash("t1", "cd api && pytest -q")),
             result("t1", "E   KeyError: 'DATABASE_URL'", error=True),
             assistant(bash("t2", "DATABASE_URL=sqlite:///tmp/t.db python3 -m pytest -q")), result("t2", "8 passed"),
             assistant(bash("t3", "npm run build")), result("t3", "Error: Cannot find module 'zod'", error=True),
             # other commands that pass: a narrower or another run is not the failing command
             assistant(bash("t4", "npm run build -- --profile || true")), result("t4", "ok"),
             assistant(bash("t5", "npm run lint")), result("t5", "ok"),
             assistant(bash("t6", "npm install zod; cd web && npm run build 2>&1 | tail -n 5")), result("t6", "done")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    env, build = data["lessons"]
    assert env["title"] == "pytest: KeyError: DATABASE_URL"
    assert env["solution"].startswith("Changes before it passed: ran it as `DATABASE_URL=sqlite:///tmp/t.db python3 -m pytest -q`.")
    assert build["title"] == "npm: Error: Cannot find module zod"
    assert build["solution"].startswith("Changes before it passed: ran `npm install zod`.")
    assert "lint" not in build["solution"] and "--profile" not in build["solution"]


def test_the_stop_hook_after_each_turn_ends_with_the_users_fix_not_the_rejected_one(vault, tmp_path):
    # Claude Code runs Stop after every turn: the first sees the compound rerun pass (and writes that
    # fix), the next sees the user turn it down. The candidate follows, and nothing is counted twice.
    lines = lines_of("compound_fix_then_correction.jsonl")
    transcript = write_transcript(tmp_path / "s1.jsonl", lines[:5])
    assert hook(vault, "stop", payload("Stop", transcript))[0] is None
    (name, first), = inbox(vault).items()
    assert "Changes before it passed: ran `docker compose up -d db`." in first
    write_transcript(transcript, lines)
    assert hook(vault, "stop", payload("Stop", transcript))[0] is None
    (again, text), = inbox(vault).items()
    assert again == name and "evidence_count: 1" in text and text.count("- 20") == 1   # one sighting
    solution = text.split("## Solution\n", 1)[1].split("\n## ", 1)[0]
    assert "make db" in solution and "docker compose" not in solution
    assert "Tried and rejected by the user: ran `docker compose up -d db`." in text
    # Learned again as it is: nothing changes.
    before = (vault / "Inbox" / name).read_bytes()
    assert learn_process(vault, transcript)["revised"] == []
    assert (vault / "Inbox" / name).read_bytes() == before


def test_a_person_s_edit_of_the_candidate_is_never_revised_away(vault, tmp_path):
    lines = lines_of("compound_fix_then_correction.jsonl")
    transcript = write_transcript(tmp_path / "s1.jsonl", lines[:5])
    learn_process(vault, transcript)
    (path,) = (vault / "Inbox").glob("Learned_*.md")
    edited = path.read_text(encoding="utf-8").replace("ran `docker compose up -d db`.", "ran `docker compose up -d db` "
                                                      "(checked by Ana: fine on CI).")
    path.write_text(edited, encoding="utf-8")
    write_transcript(transcript, lines)
    data = learn_process(vault, transcript)
    assert data["revised"] == [] and len(data["unchanged"]) == 1
    assert path.read_text(encoding="utf-8") == edited


def test_a_long_title_ends_at_a_sentence_not_at_the_start_of_the_next(vault, tmp_path):
    # The separate fix and rerun: the error line goes on "...port 5432? export PGPASSWORD=...", which
    # made the title end in "export…".
    data = learn_process(vault, FIXTURES / "separate_fix_and_rerun.jsonl")
    (lesson,) = data["lessons"]
    assert lesson["title"] == "pytest: Connection refused. Is the server running on host localhost port 5432?"
    assert lesson["solution"].startswith("Changes before it passed: ran `docker compose up -d db`.")
    other = learn_process(vault, FIXTURES / "other_error_same_fix.jsonl")["lessons"]
    assert [lesson["title"] for lesson in other] == [
        "pytest: Connection refused. Is the server running on host localhost port 6379?"]
    alone = learn_process(vault, FIXTURES / "correction_alone.jsonl")["lessons"]
    assert [(lesson["kind"], lesson["title"]) for lesson in alone] == [
        ("correction", "Correction: don't use docker compose up for that, use make db instead, it seeds the…")]


def test_a_rerun_whose_exit_status_is_lost_closes_nothing_and_output_flags_do_not_count(vault, tmp_path):
    lines = [user("run the tests", "u1"), assistant(bash("t1", "python -m pytest -q")),
             result("t1", "E   ModuleNotFoundError: No module named 'httpx'", error=True),
             # `pytest; echo done` passes whatever pytest did: no rerun, no change
             assistant(bash("t2", "pip install httpx==0.27.2 && python -m pytest -q; echo done")), result("t2", "done"),
             assistant(bash("t3", "make build")), result("t3", "Error: missing config.json", error=True),
             assistant(bash("t4", "make build; true")), result("t4", ""),
             assistant(bash("t5", "cp config.example.json config.json && make build")), result("t5", "built"),
             # the same tests, printing more: the rerun that closes it
             assistant(bash("t6", "pytest -v --tb=short")), result("t6", "12 passed")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert [(lesson["title"], lesson["solution"]) for lesson in data["lessons"]] == [
        ("make: Error: missing config.json", "Changes before it passed: ran `cp config.example.json config.json`."),
        ("pytest: ModuleNotFoundError: No module named httpx",
         "Changes before it passed: ran `pip install httpx==0.27.2 && python -m pytest -q; echo done`.")]


def test_a_correction_after_the_rerun_passed_that_names_another_thing_leaves_the_fix_standing(vault, tmp_path):
    lines = [user("run the tests", "u1"), assistant(bash("t1", "pytest -q")),
             result("t1", "E   ImportError: no module named foo", error=True),
             assistant(edit("t2", "/repo/a.py", "x\n", "import foo_compat as foo\n")), result("t2", "updated"),
             assistant(bash("t3", "pytest -q")), result("t3", "3 passed"),
             user("No, don't use pip in this repo, use uv instead.", "u2")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert [(lesson["kind"], lesson["title"]) for lesson in data["lessons"]] == [
        ("correction", "Correction: don't use pip in this repo, use uv instead."),
        ("error_fix", "pytest: ImportError: no module named foo")]
    assert data["lessons"][1]["solution"].startswith("Changes before it passed: edited `/repo/a.py`")


def test_learn_says_in_its_text_output_which_candidate_the_session_revised(vault, tmp_path):
    # `--json` listed the revised candidate; the text an agent's shell shows said nothing of it.
    lines = lines_of("compound_fix_then_correction.jsonl")
    transcript = write_transcript(tmp_path / "s1.jsonl", lines[:5])
    assert len(learn_process(vault, transcript)["learned"]) == 1
    write_transcript(transcript, lines)
    done = subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "learn", "--from-transcript",
                           str(transcript)], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "BRAIN_ACTOR": "test"})
    assert done.returncode == 0, done.stderr
    (name,) = inbox(vault)
    assert f"  revised Inbox/{name} (the session went on since it was learned)" in done.stdout.splitlines()


# ---------------------------------------------------------------------------- how a process was stopped

def killed_session(session: str, reason: str, fix: dict, fixed: str) -> list[dict]:
    """`make integration` dies with exit code 137; the output's last line says why (the kernel's
    OOM killer or a `kill -9`), its other lines are the same whatever killed it."""
    lines = [user("make integration fails", "u1"), assistant(bash("t1", "make integration")),
             result("t1", f"docker compose up -d worker\nwaiting for worker ...\nworker exited with code 137\n{reason}",
                    error=True),
             assistant(fix), result("t2", fixed), assistant(bash("t3", "make integration")),
             result("t3", "all 12 integration checks passed"), user("thanks", "u2")]
    return [dict(line, sessionId=session) for line in lines]


def test_a_container_oomkilled_and_a_process_killed_by_kill_9_are_two_failures(vault, tmp_path):
    # Before: neither line counted as an error, so both lessons were titled by the output's first
    # line ("make: docker compose up -d worker"): the kill -9 session was counted as a second
    # sighting of the OOM lesson and its own fix was lost.
    oom = killed_session("s-oom", "worker: OOMKilled", edit("t2", "/repo/docker-compose.yml", "mem_limit: 512m\n",
                                                            "mem_limit: 2g\n"), "updated")
    kill = killed_session("s-kill", "Killed", bash("t2", "rm -f /etc/cron.d/stale-reaper"), "")
    first = learn_process(vault, write_transcript(tmp_path / "oom.jsonl", oom))
    second = learn_process(vault, write_transcript(tmp_path / "kill.jsonl", kill))
    assert [lesson["title"] for lesson in first["lessons"]] == ["make: worker: OOMKilled"]
    assert [lesson["title"] for lesson in second["lessons"]] == ["make: Killed"]
    assert second["more_evidence"] == [] and len(second["learned"]) == 1
    found = candidates(vault)
    assert sorted(found) == ["Learned_make_Killed.md", "Learned_make_worker_OOMKilled.md"]
    assert "mem_limit: 2g" in found["Learned_make_worker_OOMKilled.md"]["solution"]
    assert "stale-reaper" in found["Learned_make_Killed.md"]["solution"]
    # One session: OOM-killed, memory raised, then killed by something else, then fixed: two lessons.
    both = [*oom[:5], assistant(bash("t3", "make integration")),
            result("t3", "docker compose up -d worker\nwaiting for worker ...\nworker exited with code 137\nKilled",
                   error=True),
            assistant(bash("t4", "rm -f /etc/cron.d/stale-reaper")), result("t4", ""),
            assistant(bash("t5", "make integration")), result("t5", "all 12 integration checks passed"),
            user("thanks", "u2")]
    data = learn_process(vault, write_transcript(tmp_path / "both.jsonl", [dict(l, sessionId="s-both") for l in both]))
    assert [lesson["title"] for lesson in data["lessons"]] == ["make: worker: OOMKilled", "make: Killed"]
    assert "stale-reaper" not in data["lessons"][0]["solution"] and "mem_limit" not in data["lessons"][1]["solution"]


def test_a_transcript_path_that_is_a_folder_says_what_to_give(vault, tmp_path):
    # Before: "cannot read transcript /tmp/x: Is a directory", naming no fix.
    done = subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "learn", "--from-transcript",
                           str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (f"brain: error: cannot read transcript {tmp_path}: Is a directory; give the path of a "
                           "session's .jsonl file\n"), done.stderr


def test_an_exit_code_or_signal_that_changes_between_runs_is_another_failure(vault, tmp_path):
    # Before: every number in the error line was masked, so "exit code 1" then "exit code 137" of
    # the same command was one failure, and the memory fix was merged into the config fix's lesson.
    lines = [user("the build fails", "u1"), assistant(bash("t1", "./build.sh")),
             result("t1", "error: builder stopped with exit code 1", error=True),
             assistant(bash("t2", "cp build.example.toml build.toml")), result("t2", ""),
             assistant(bash("t3", "./build.sh")),
             result("t3", "error: builder stopped with exit code 137", error=True),
             assistant(edit("t4", "/repo/build.toml", "jobs = 16\n", "jobs = 2\n")), result("t4", "updated"),
             assistant(bash("t5", "./build.sh")), result("t5", "build ok"), user("thanks", "u2")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert [lesson["title"] for lesson in data["lessons"]] == [
        "build.sh: error: builder stopped with exit code 1", "build.sh: error: builder stopped with exit code 137"]
    assert "jobs = 2" not in data["lessons"][0]["solution"] and "build.example.toml" not in data["lessons"][1]["solution"]


def test_a_line_number_or_a_duration_that_changes_between_runs_is_the_same_failure(vault, tmp_path):
    lines = [user("the build fails", "u1"), assistant(bash("t1", "./build.sh")),
             result("t1", "error: config.toml line 12: unknown key after 0.41s", error=True),
             assistant(edit("t2", "/repo/config.toml", "a\n", "b\n")), result("t2", "updated"),
             assistant(bash("t3", "./build.sh")),
             result("t3", "error: config.toml line 14: unknown key after 0.38s", error=True),
             assistant(edit("t4", "/repo/config.toml", "c\n", "d\n")), result("t4", "updated"),
             assistant(bash("t5", "./build.sh")), result("t5", "build ok"), user("thanks", "u2")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert len(data["lessons"]) == 1


# ---------------------------------------------------------------------------- corrections, review7

def refused(call_id: str, command: str) -> list[dict]:
    """A Bash call the user refused at the permission prompt (it never ran)."""
    return [assistant(bash(call_id, command)), result(call_id, REFUSED, error=True),
            user("[Request interrupted by user for tool use]", f"i-{call_id}")]


def test_use_x_never_y_after_a_refused_call_is_learned_and_the_refused_command_is_not(vault, tmp_path):
    lines = [user("Add date-fns to the web app.", "u1"), *refused("t1", "npm install date-fns"),
             user("Use pnpm in this repo, never npm.", "u2"),
             assistant(bash("t2", "pnpm add date-fns")), result("t2", "+ date-fns 4.1.0")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert [lesson["title"] for lesson in data["lessons"]] == ["Correction: Use pnpm in this repo, never npm."]
    lesson = data["lessons"][0]
    assert "npm install date-fns" not in lesson["solution"] and "pnpm" in lesson["solution"]


def test_use_x_not_y_after_a_failed_call_is_that_failures_lesson_in_english_and_japanese(vault, tmp_path):
    english = [user("Install requests for the scraper.", "u1"), assistant(bash("t1", "pip install requests")),
               result("t1", "error: externally-managed-environment", error=True),
               user("Use uv, not pip.", "u2"), assistant(bash("t2", "uv add requests")), result("t2", "+ requests==2.32.3")]
    japanese = [user("ビルドが通りません。", "v1"), assistant(bash("s1", "npm run build")),
                result("s1", "Module not found: Error: Can't resolve 'dayjs'", error=True), *refused("s2", "npm install dayjs"),
                user("yarn を使ってください。npm は使わない方針です。", "v2"),
                assistant(bash("s3", "yarn add dayjs")), result("s3", "success Saved 1 new dependency.")]
    for name, lines, problem, fix, rejected in (("en", english, "externally-managed-environment", "uv add requests", "pip install"),
                                                ("ja", japanese, "dayjs", "yarn add dayjs", "npm install dayjs")):
        data = learn_process(vault, write_transcript(tmp_path / f"{name}.jsonl", lines))
        assert len(data["lessons"]) == 1, data["lessons"]
        lesson = data["lessons"][0]
        assert lesson["kind"] == "error_fix" and problem in lesson["problem"], lesson
        assert fix in lesson["solution"] and rejected not in lesson["solution"], lesson


def test_a_correction_about_something_else_is_not_attached_to_an_open_curl_failure(vault, tmp_path):
    curl = ("curl -fsS https://staging.example.com/health",
            "curl: (60) SSL certificate problem: unable to get local issuer certificate")
    # The agent's next edit, in the same turn as the failure (Japanese), and after the user moved on (English).
    same_turn = [user("ステージングのヘルスチェックを確認してください。", "u1"), assistant(bash("t1", curl[0])),
                 result("t1", curl[1], error=True),
                 assistant(edit("t2", "/repo/README.md", "## Setup", "## セットアップ")), result("t2", "updated"),
                 user("違います、README の見出しは英語のままにしてください。", "u2")]
    moved_on = [user("Check the staging health endpoint.", "v1"), assistant(bash("s1", curl[0])),
                result("s1", curl[1], error=True), user("Leave that for now. Rename app/utils.py to app/helpers.py.", "v2"),
                assistant(bash("s2", "git mv app/utils.py app/helpers.py")), result("s2", ""),
                user("No, don't call it helpers. Name it text_utils.py.", "v3")]
    for name, lines, said in (("ja", same_turn, "英語のまま"), ("en", moved_on, "text_utils.py")):
        data = learn_process(vault, write_transcript(tmp_path / f"{name}.jsonl", lines))
        assert [lesson["kind"] for lesson in data["lessons"]] == ["correction"], data["lessons"]
        lesson = data["lessons"][0]
        assert said in lesson["title"] and "SSL" not in json.dumps(lesson, ensure_ascii=False), lesson


def test_use_x_not_y_after_a_call_that_worked_is_a_request_not_a_correction(vault, tmp_path):
    lines = [user("Format the changed files.", "u1"), assistant(bash("t1", "black app/")),
             result("t1", "reformatted app/orders.py"), assistant({"type": "text", "text": "Formatted app/orders.py."}),
             user("Great. From now on use ruff format, not black, for this repo's new services.", "u2")]
    assert learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))["lessons"] == []


def test_a_japanese_please_do_not_turns_the_fix_down_and_it_is_not_learned(vault, tmp_path):
    lines = [user("make deploy が失敗します。", "u1"), assistant(bash("t1", "make deploy")),
             result("t1", "permission denied while trying to connect to the Docker daemon socket at "
                          "unix:///var/run/docker.sock", error=True),
             assistant(bash("t2", "sudo chmod 666 /var/run/docker.sock")), result("t2", ""),
             user("いいえ、docker.sock の権限は変えないでください。docker グループに追加してください。", "u2"),
             assistant(bash("t3", "sudo usermod -aG docker $USER")), result("t3", ""),
             assistant(bash("t4", "make deploy")), result("t4", "Deployed.")]
    data = learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))
    assert len(data["lessons"]) == 1, data["lessons"]
    lesson = data["lessons"][0]
    assert "usermod" in lesson["solution"] and "chmod 666" not in lesson["solution"], lesson
    assert "chmod 666" in lesson["problem"]   # tried and rejected by the user


def test_use_x_not_y_is_a_correction_only_in_the_users_next_words_after_the_failure(vault, tmp_path):
    lines = [user("Run the linter.", "u1"), assistant(bash("t1", "make lint")),
             result("t1", "app/orders.py:3:1: F401 `os` imported but unused", error=True),
             user("Leave it, I'll look at it later.", "u2"),
             user("From now on use ruff format, not black, for new services.", "u3")]
    assert learn_process(vault, write_transcript(tmp_path / "t.jsonl", lines))["lessons"] == []
