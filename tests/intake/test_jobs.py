"""Async ingest (issue 23, part 5; docs/compatibility.md, HTTP API): `POST /v1/ingest` with `async` or `Prefer:
respond-async` answers 202 and a job; `GET /v1/jobs/{id}` gives its status and result; a job
survives a server killed under it, and a job file that cannot be read is reported lost."""

from __future__ import annotations

import json
import signal
import time

import pytest

from helpers import events, ok_data
from test_http import KEY, start, stop

TEXT = "I moved to Osaka in March. My favourite editor is Helix. Yesterday I fixed the deploy script."


def wait_for(server, job_id: str, states=("done", "failed", "lost"), key: str = KEY, seconds: float = 120) -> dict:
    """Poll the job until it reaches one of `states` (bounded: a healthy server takes well under a second)."""
    deadline = time.monotonic() + seconds
    while True:
        status, _, data = server.call("GET", f"/v1/jobs/{job_id}", key=key)
        assert status == 200, data
        if data["status"] in states or time.monotonic() > deadline:
            return data
        time.sleep(0.05)


def test_async_ingest_answers_202_and_the_job_gives_the_result(vault):
    server = start(vault)
    try:
        status, headers, accepted = server.call("POST", "/v1/ingest", {"text": TEXT, "source": "diary", "async": True})
        assert status == 202 and accepted["status"] == "queued", accepted
        assert headers["location"] == f"/v1/jobs/{accepted['job_id']}" == accepted["location"]
        job = wait_for(server, accepted["job_id"])
        assert job["status"] == "done" and job["attempts"] == 1, job
        assert job["result"]["created"] >= 2 and set(job["result"]) == {"created", "updated", "skipped", "ids",
                                                                       "warnings", "items"}
        assert "text" not in json.dumps(job["request"]) or "text" not in job["request"]
        assert job["request"]["chars"] == len(TEXT)
        for memory_id in job["result"]["ids"]:
            assert server.call("GET", f"/v1/memories/{memory_id}")[0] == 200
        # Prefer: respond-async does the same; the synchronous form still answers at once.
        status, headers, second = server.call("POST", "/v1/ingest", {"text": "I am tired now."},
                                              headers={"Prefer": "respond-async, wait=5"})
        assert status == 202 and headers["preference-applied"] == "respond-async"
        assert wait_for(server, second["job_id"])["result"]["created"] == 1
        status, _, sync = server.call("POST", "/v1/ingest", {"text": "My blood type is A."})
        assert status == 200 and sync["created"] == 1
        # Bad input is refused now, not in a job; unknown jobs are not found.
        status, _, data = server.call("POST", "/v1/ingest", {"text": "x", "scope": "agent", "async": True})
        assert (status, data["error"]["code"]) == (400, "INVALID_ARGUMENT")
        for unknown in ("0" * 36, "nope", "..%2F..%2Fconfig"):
            status, _, data = server.call("GET", f"/v1/jobs/{unknown}")
            assert (status, data["error"]["code"]) == (404, "NOT_FOUND"), unknown
    finally:
        stop(server.process)
    ingested = [e for e in events(vault) if e["event"] == "ingested"]
    assert [e.get("idempotency_key") for e in ingested] == [f"job:{accepted['job_id']}", f"job:{second['job_id']}", None]


def test_a_job_survives_its_server_being_killed_and_runs_once(vault):
    from external_brain.vault.journal import writing
    from external_brain.vault.storage import Vault

    # One process: the one killed is the one running the job. (With more, the job may be in a
    # worker, which outlives the killed parent by up to a second and stops as on SIGTERM, so
    # whether the job was interrupted, which this test counts on, would be left to chance.)
    server = start(vault, extra=("--workers", "1"))
    with writing(Vault(vault)):   # the vault's write lock: the job's ingest waits for it
        status, _, accepted = server.call("POST", "/v1/ingest", {"text": TEXT, "async": True})
        assert status == 202
        assert wait_for(server, accepted["job_id"], ("running",))["status"] == "running"
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(30)
    job_file = vault / ".brain" / "jobs" / f"{accepted['job_id']}.json"
    assert json.loads(job_file.read_text())["status"] == "running"   # killed under it
    again = start(vault)
    try:
        job = wait_for(again, accepted["job_id"])
        assert job["status"] == "done" and job["attempts"] == 2, job
        created = job["result"]["ids"]
        assert len(created) >= 2
    finally:
        stop(again.process)
    ingested = [e for e in events(vault) if e["event"] == "ingested"]
    assert len(ingested) == 1 and ingested[0]["idempotency_key"] == f"job:{accepted['job_id']}"
    assert len([e for e in events(vault) if e["event"] == "created"]) == len(created)


def test_a_job_killed_after_its_ingest_committed_replays_and_writes_nothing_twice(vault):
    # The interruption between the ingest's commit and the job's `done`: the job file says
    # `running` while the log already holds its ingest. Made by hand as a killed server leaves it.
    server = start(vault)
    try:
        status, _, accepted = server.call("POST", "/v1/ingest", {"text": TEXT, "async": True})
        done = wait_for(server, accepted["job_id"])
    finally:
        stop(server.process)
    job_file = vault / ".brain" / "jobs" / f"{accepted['job_id']}.json"
    job = json.loads(job_file.read_text())
    job.update(status="running", request={**{k: v for k, v in job["request"].items() if k != "chars"},
                                          "text": TEXT})
    job.pop("result")
    job_file.write_text(json.dumps(job))
    before = len(events(vault))
    again = start(vault)
    try:
        replayed = wait_for(again, accepted["job_id"])
    finally:
        stop(again.process)
    assert replayed["status"] == "done" and replayed["result"]["ids"] == done["result"]["ids"]
    assert len(events(vault)) == before   # the replay wrote nothing


def test_a_damaged_job_is_reported_lost_and_jobs_are_their_submitters(vault, tmp_path, monkeypatch):
    keys_file = tmp_path / "keys.toml"
    monkeypatch.setenv("BRAIN_KEYS_FILE", str(keys_file))
    tokens = {name: ok_data("keys", "add", name)["token"] for name in ("alice", "bob")}
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    try:
        status, _, mine = server.call("POST", "/v1/ingest", {"text": "I keep the spare key under the mat.",
                                                             "scope": "agent", "async": True}, key=tokens["alice"])
        assert status == 202
        assert wait_for(server, mine["job_id"], key=tokens["alice"])["status"] == "done"
        status, _, data = server.call("GET", f"/v1/jobs/{mine['job_id']}", key=tokens["bob"])
        assert (status, data["error"]["code"]) == (404, "NOT_FOUND")
        assert wait_for(server, mine["job_id"])["caller"] == "alice"   # the owner sees every job
        damaged = vault / ".brain" / "jobs" / f"{mine['job_id']}.json"
        damaged.write_text('{"job_id": "' + mine["job_id"] + '", "stat')
        status, _, data = server.call("GET", f"/v1/jobs/{mine['job_id']}")
        assert status == 200 and data["status"] == "lost" and data["error"]["code"] == "JOB_LOST"
        assert "damaged" in data["error"]["message"]
    finally:
        stop(server.process)


def test_a_git_tracked_vault_shows_no_job_files_after_an_async_ingest(vault):
    import subprocess

    def git(*argv: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@e", *argv], cwd=vault, check=True,
                              capture_output=True, text=True).stdout

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "vault")
    server = start(vault)
    try:
        # The job is a file in .brain/jobs/ (with its lock); a failed one keeps the raw text there.
        status, _, accepted = server.call("POST", "/v1/ingest", {"text": TEXT, "async": True})
        assert status == 202, accepted
        assert wait_for(server, accepted["job_id"])["status"] == "done"
    finally:
        stop(server.process)
    assert list((vault / ".brain" / "jobs").iterdir())                       # the job files are there ...
    assert [line for line in git("status", "--porcelain", "--untracked-files=all").splitlines()
            if ".brain/" in line] == []                                      # ... and git does not offer them
