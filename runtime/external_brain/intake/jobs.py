"""Jobs: the asynchronous ingest (docs/compatibility.md, HTTP API) (`POST /v1/ingest` with `async`, answered 202 + a job id).

Promises:
- A job is a file, `.brain/jobs/<id>.json` of the vault it is for, written whole (atomically,
  fsynced) before the 202 goes out: a job that was answered is on disk, whatever happens next.
- Its states: `queued`, `running`, `done` (with the ingest's result), `failed` (with the error's
  code and message); `lost` when its file can no longer be read (damaged by hand or by a disk):
  reported as lost with the reason, never skipped in silence.
- Jobs survive the server: a serving process runs the queued jobs of its vaults (and each
  persona's) when it starts, and a job found `running` was interrupted (the server was killed)
  and is run again. Running it again is safe: every job's ingest carries an idempotency key (the
  client's `Idempotency-Key`, else `job:<id>`), so an ingest that had committed before the kill
  answers its logged result and writes nothing twice. A job interrupted `MAX_ATTEMPTS` times is
  `failed`, so a job that kills its server cannot do so forever.
- One runner at a time per job: a process runs a job only while it holds the job's lock
  (`<id>.lock`, non-blocking), so `--workers` processes never run one twice at once.
- Who may read a job: the key that submitted it, and the owner's. The job keeps the request's
  text only until it has run (then its length), so `.brain/jobs/` does not keep a second copy of
  what the cards hold. Finished jobs are removed a week after they finished.
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ..errors import BrainError, CardNotFound
from ..vault.events import acting_as
from ..vault.storage import Vault, atomic_write, iso, new_id, now

FOLDER = "jobs"
MAX_ATTEMPTS = 3
KEEP_FINISHED_DAYS = 7
_ID = re.compile(r"^[0-9a-f-]{36}$")


def _folder(vault: Vault) -> Path:
    return vault.brain_dir / FOLDER


def _path(vault: Vault, job_id: str) -> Path:
    return _folder(vault) / f"{job_id}.json"


def _write(vault: Vault, job: dict[str, Any]) -> None:
    atomic_write(_path(vault, job["job_id"]), json.dumps(job, ensure_ascii=False, sort_keys=True) + "\n")


def submit_ingest(vault: Vault, request: dict[str, Any], caller: str, actor: str | None) -> dict[str, Any]:
    """Queue an ingest of `request` (ingest_text's arguments) for `caller` (the key's name:
    `owner` or an agent); the job, as written. The request is checked first: bad input is
    refused now, not found later in a failed job."""
    from .ingest import check_request

    check_request(request["text"], **{k: v for k, v in request.items() if k != "text"})
    job_id = new_id()
    job = {"job_id": job_id, "kind": "ingest", "status": "queued", "created": iso(now()), "caller": caller,
           "actor": actor, "attempts": 0, "request": {**request, "idempotency_key": request.get(
               "idempotency_key") or f"job:{job_id}"}}
    _write(vault, job)
    wake(vault)
    return job


def read_job(vault: Vault, job_id: str, viewer: str | None = None) -> dict[str, Any]:
    """What a client sees of job `job_id`: everything but the request's text. `viewer` (an
    agent's name) sees only its own jobs; None (the owner) sees every job. Unknown: NOT_FOUND."""
    missing = CardNotFound(f"no job {job_id!r} (jobs are kept {KEEP_FINISHED_DAYS} days after they finish)")
    if not _ID.match(job_id):
        raise missing
    path = _path(vault, job_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise missing from None
    except (OSError, UnicodeDecodeError) as exc:
        return _lost(job_id, f"its file cannot be read: {exc}")
    try:
        job = json.loads(text)
        if not isinstance(job, dict) or job.get("job_id") != job_id or "status" not in job:
            raise ValueError("not a job record")
    except ValueError as exc:
        if viewer is not None:
            raise missing from None   # whose it was cannot be told: only the owner is shown the loss
        return _lost(job_id, f"its file .brain/jobs/{job_id}.json is damaged ({exc}); submit the text again")
    if viewer is not None and job.get("caller") != viewer:
        raise missing
    shown = {k: v for k, v in job.items() if k not in ("request", "actor")}
    request = job.get("request") or {}
    shown["request"] = {k: v for k, v in request.items() if k != "text"}
    shown["request"]["chars"] = len(request["text"]) if "text" in request else request.get("chars")
    return shown


def _lost(job_id: str, reason: str) -> dict[str, Any]:
    return {"job_id": job_id, "kind": "ingest", "status": "lost", "error": {"code": "JOB_LOST", "message": reason}}


def pending(vault: Vault) -> list[str]:
    """Ids of the jobs still to run (queued, or running when a server stopped), oldest first;
    finished jobs past their week are removed on the way."""
    folder = _folder(vault)
    try:
        names = sorted(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return []
    waiting = []
    limit = time.time() - KEEP_FINISHED_DAYS * 86400
    for name in names:
        if not name.endswith(".json") or not _ID.match(name[:-5]):
            continue
        path = folder / name
        try:
            job = json.loads(path.read_text(encoding="utf-8"))
            status = job.get("status")
        except (OSError, ValueError, AttributeError):
            continue   # damaged: `read_job` reports it lost
        if status in ("queued", "running"):
            waiting.append((job.get("created", ""), name[:-5]))
        elif status in ("done", "failed"):
            try:
                if os.stat(path).st_mtime < limit:
                    os.unlink(path)
                    _unlink(folder / f"{name[:-5]}.lock")
            except FileNotFoundError:
                pass
    return [job_id for _, job_id in sorted(waiting)]


def _unlink(path: Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def run_job(vault: Vault, job_id: str) -> dict[str, Any] | None:
    """Run job `job_id` if no other process is running it; the job as it ended (None when another
    process holds it, or it is not to run). See the module docstring for interruptions."""
    from .ingest import ingest_text

    folder = _folder(vault)
    fd = os.open(folder / f"{job_id}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None   # another process runs it
        try:
            job = json.loads(_path(vault, job_id).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if job.get("status") not in ("queued", "running"):
            return None
        if job.get("attempts", 0) >= MAX_ATTEMPTS:
            # Trigger: the job was started this many times and never finished: each time its
            # server died under it. Why: a job that kills its server must not do so forever.
            # Outcome: failed, with the reason; the text is kept for the owner to look at.
            job.update(status="failed", finished=iso(now()), error={
                "code": "JOB_INTERRUPTED", "message": f"the server stopped {MAX_ATTEMPTS} times while running this job"})
            _write(vault, job)
            return job
        job.update(status="running", started=iso(now()), attempts=job.get("attempts", 0) + 1)
        _write(vault, job)
        request = {k: v for k, v in job["request"].items() if k != "chars"}
        text = request.pop("text")
        try:
            with acting_as(job.get("actor")):
                result = ingest_text(vault, text, **request)
            job.update(status="done", result=result.to_dict())
        except BrainError as exc:
            job.update(status="failed", error={"code": exc.code, "message": exc.message, "details": exc.details})
        except Exception as exc:  # noqa: BLE001 - a bug: its traceback goes to stderr, the job says so
            traceback.print_exc(file=sys.stderr)
            job.update(status="failed", error={"code": "INTERNAL", "message": f"{type(exc).__name__}: {exc}"})
        job["finished"] = iso(now())
        job["request"] = {**{k: v for k, v in job["request"].items() if k != "text"}, "chars": len(text)}
        _write(vault, job)
        return job
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------- the runner

_runner: "Runner | None" = None


def wake(vault: Vault) -> None:
    """Tell this process's runner (if it has one: `brain serve`) that `vault` has a new job."""
    if _runner is not None:
        _runner.queue.put(vault.root)


class Runner:
    """The thread of a serving process that runs jobs: those pending in its vaults when it
    starts, then each one submitted (`wake`), one at a time, in order."""

    def __init__(self, roots: list[Path]) -> None:
        self.queue: queue.Queue[Path | None] = queue.Queue()
        for root in roots:
            self.queue.put(root)
        self.thread = threading.Thread(target=self._run, name="brain-jobs", daemon=True)

    def start(self) -> "Runner":
        global _runner
        _runner = self
        self.thread.start()
        return self

    def stop(self) -> None:
        global _runner
        _runner = None
        self.queue.put(None)

    def _run(self) -> None:
        while True:
            root = self.queue.get()
            if root is None:
                return
            try:
                vault = Vault(root)
                for job_id in pending(vault):
                    run_job(vault, job_id)
            except Exception:  # noqa: BLE001 - the runner outlives any one vault's trouble
                traceback.print_exc(file=sys.stderr)


def runner_for(vault: Vault) -> Runner:
    """A runner for `vault` and every persona vault its config names (one that cannot be found
    is skipped: its requests are refused anyway)."""
    roots = [vault.root]
    try:
        from ..agents.personas import persona_names, persona_vault

        for name in persona_names(vault):
            try:
                roots.append(persona_vault(vault, name).root)
            except BrainError:
                pass
    except BrainError:
        pass
    return Runner(roots)
