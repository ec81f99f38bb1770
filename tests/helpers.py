"""Helpers for the CLI tests: run the real `main`, read the vault, run real processes."""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "runtime" / "playbook_api.py"
CARD_FOLDERS = ("Playbooks", "Inbox", "WorkingMemory")
# The interpreter of the suite's own child processes (CLI calls, `serve` and `mcp` servers), started
# without the `site` module (`-S`). Trigger: a child that only runs the product (standard library
# only, its path from `runtime/playbook_api.py`). Why: `site` reads every `.pth` of site-packages at
# each start, and a machine's `.pth` may import packages (this one's imports `certifi`: ~18 ms CPU
# of a ~140 ms CLI call). Outcome: the same product code runs; the commands a user types as given
# (the README's tour and snippets, `brain` installed by pip, hooks installed by `brain install`)
# are run exactly as typed, with `site`, by their own tests (test_docs, test_install, test_hooks).
# decision 0039, "Child processes without site".
CHILD_PYTHON = (sys.executable, "-S")


def run_cli(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Call `external_brain.doors.cli.main(list(argv))`; return (exit code, stdout, stderr).

    `--help` makes argparse exit through SystemExit; its code is returned like any other.
    """
    from external_brain.doors.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.StringIO(stdin)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def parsed_module(path: Path) -> ast.Module:
    """`ast.parse` of the file at `path`. The meta-tests each walk every module of the package
    (test_meta.py, test_repeated_imports.py, test_write_path.py): the tree of a text is parsed once
    per run and shared (nothing changes a tree; a file edited since is parsed again)."""
    return _parsed_text(path.read_text(encoding="utf-8"), str(path))


@functools.lru_cache(maxsize=None)
def _parsed_text(text: str, filename: str) -> ast.Module:
    return ast.parse(text, filename=filename)


def run_json(*argv: str) -> tuple[int, dict[str, Any], str]:
    """`run_cli(*argv, "--json")` with stdout parsed as the one JSON envelope it must be."""
    code, out, err = run_cli(*argv, "--json")
    assert out.count("\n") == 1 and out.endswith("\n"), f"--json must print one line, got {out!r}"
    return code, json.loads(out), err


def ok_data(*argv: str) -> dict[str, Any]:
    """The `data` of a successful `--json` call (asserting the success envelope)."""
    code, envelope, err = run_json(*argv)
    assert code == 0, (argv, envelope, err)
    assert envelope["ok"] is True and set(envelope) == {"ok", "command", "data"}, envelope
    assert envelope["command"] == argv[0]
    return envelope["data"]


def doctor_report() -> dict[str, Any]:
    """`doctor --json`'s report, asserting its exit code: 1 exactly when it reports errors."""
    code, envelope, err = run_json("doctor")
    assert envelope["ok"] is True and envelope["command"] == "doctor", (envelope, err)
    data = envelope["data"]
    assert code == (1 if data["errors"] else 0), (code, data)
    return data


def file_hashes(root: Path, folders: tuple[str, ...] = CARD_FOLDERS) -> dict[str, str]:
    """sha256 of every file under the given folders of `root`, by vault-relative path."""
    hashes = {}
    for name in folders:
        base = root / name
        for path in sorted(base.rglob("*")) if base.is_dir() else ():
            if path.is_file() and not path.is_symlink():
                hashes[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def vault_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file in the vault except the parts reads may write: logs/, the cache
    and the lock files; and the journal, which every write rewrites in place (`pending_journal`
    says whether it holds anything not done)."""
    hashes = {}
    skipped = ("logs/", ".brain/cache/", ".brain/locks/")
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(skipped) or rel + "/" in skipped or (rel == ".brain/journal.json" and not pending_journal(root)):
            continue
        if path.is_symlink():
            hashes[rel] = "symlink->" + os.readlink(path)
        elif path.is_file():
            hashes[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            hashes[rel] = "dir"
    return hashes


def log_lines(root: Path) -> list[bytes]:
    """The raw lines of `logs/events.jsonl` (the last one without its newline if torn)."""
    path = root / "logs" / "events.jsonl"
    if not path.exists():
        return []
    return path.read_bytes().splitlines()


def events(root: Path, failures: bool = False) -> list[dict[str, Any]]:
    """Every event in the log as the product reads it (`events.parse_lines`): a line a killed
    writer tore is skipped, as every reader of the log skips it. Tests that kill processes must
    read the log this way; `whole_events` is for tests where a torn line would be a bug.

    The `failed` events (a write that was tried and refused: the audit of what was tried) are
    left out unless `failures`: what a test of "bad input changes nothing" compares is the
    operations logged, and a refused write is none."""
    from external_brain.vault.events import parse_lines

    path = root / "logs" / "events.jsonl"
    logged = list(parse_lines(path.read_bytes())) if path.exists() else []
    return logged if failures else [e for e in logged if e.get("event") != "failed"]


def whole_events(root: Path) -> list[dict[str, Any]]:
    """Every event in the log, asserting that each line is one whole JSON object (for tests in
    which no process is killed: there, a torn or interleaved line is a bug)."""
    return [json.loads(line) for line in log_lines(root) if line.strip()]


def write_card(root: Path, rel: str, text: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8", newline="")
    else:
        path.write_bytes(text)
    return path


def log_event(root: Path, event: str, card: str, card_id: str | None, ts: str, **fields: Any) -> None:
    """Append one event to `logs/events.jsonl` by hand, as the tool would have written it at `ts`
    (e.g. the `created` event of a card written by hand with an old date)."""
    record = {"eid": os.urandom(8).hex(), "ts": ts, "event": event, "card": card, "actor": "test"}
    if card_id is not None:
        record["id"] = card_id
    record.update(fields)
    path = root / "logs" / "events.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def subprocess_cli(*argv: str, vault: Path, cwd: Path | None = None,
                   timeout: float = 60) -> subprocess.CompletedProcess:
    """Run `python3 runtime/playbook_api.py ARGV` in a real process against `vault`."""
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    return subprocess.run([*CHILD_PYTHON, str(SCRIPT), *argv], env=env, cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout)


def bytecode_settings() -> dict[str, str]:
    """The variables that say where a child process keeps its bytecode (conftest's
    `bytecode_for_child_processes`), for a test that builds its child's environment from scratch:
    without them the child writes `runtime/**/__pycache__` into the checkout."""
    return {name: os.environ[name] for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE") if name in os.environ}


def create_queue_cards(vault: Path) -> None:
    """Two pattern cards about a queue worker's retries, made by the real CLI: the neighbours
    that a create in a test of the create process judges."""
    for n, body in enumerate(("Workers retry the queue when the connection times out.",
                              "Cap the retries of the queue worker at five.")):
        done = subprocess_cli("create", "--type", "pattern", "--domain", "dev", "--tags", "queue,retry",
                              "--title", f"Queue worker retries {n}", "--body", body, vault=vault)
        assert done.returncode == 0, done.stderr


def quiet_main(argv: list[str]) -> int:
    """`main(argv)` with its output thrown away (for worker processes)."""
    from external_brain.doors.cli import main

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        return main(argv)


def card_meta(path: Path) -> dict:
    from external_brain.vault import frontmatter

    return frontmatter.parse(path.read_text(encoding="utf-8")).data


def replay_problems(vault: Path) -> list[str]:
    """Replay the log independently of the product: each card's feedback events must chain
    (each `before` is the previous `after`, the first starts from the initial 0.5 or from the
    value the card was created or promoted with) and the card must hold the last `after`."""
    problems = []
    log = events(vault)
    for path in sorted((vault / "Playbooks").glob("*.md")):
        data = card_meta(path)
        current = 0.5
        for event in (e for e in log if e.get("id") == data.get("id")):
            if event["event"] in ("created", "promoted"):
                current = 0.5
            elif event["event"] in ("used", "rejected"):
                if abs(event["before"] - current) > 1e-9:
                    problems.append(f"{path.name}: event {event['eid']} starts from {event['before']}, "
                                    f"the log so far gives {current}")
                current = event["after"]
        if abs(data.get("confidence", 0.5) - current) > 1e-9:
            problems.append(f"{path.name}: stored {data.get('confidence')} but the log replays to {current}")
    return problems


def pending_journal(vault: Path) -> list[dict[str, Any]]:
    """The operations `.brain/journal.json` says may not be done (independently of the product's
    reader, vault/journal.py): none when the file is missing or its header says the batch is
    done; else the lines after the header that carry the batch's name, up to the first that
    does not. A file without a header is one operation (the format before batches)."""
    path = vault / ".brain" / "journal.json"
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    if not lines[0].strip():
        return []
    head = json.loads(lines[0])
    if "batch" not in head:
        return [head]
    if head["done"]:
        return []
    pending = []
    for line in lines[1:]:
        try:
            entry = json.loads(line)
        except ValueError:
            break
        if entry.get("batch") != head["batch"]:
            break
        pending.append(entry)
    return pending


def temp_files(vault: Path) -> list[str]:
    return sorted(str(p.relative_to(vault)) for p in vault.rglob("*.tmp") if ".brain/cache" not in str(p))


STORM_WORKER = """
import io, json, os, sys, random
sys.path.insert(0, {runtime!r})
from external_brain.doors.cli import main
rng = random.Random({seed})
devnull = open(os.devnull, "w")
sys.stdout = sys.stderr = devnull
acks = os.open({acks!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

def acknowledged(argv):
    # The answer of a write that returned success, noted in one write once it is given: the
    # log must hold its event, whatever instant the worker is killed at afterwards.
    out = sys.stdout = io.StringIO()
    try:
        code = main(argv + ["--json"])
    finally:
        sys.stdout = devnull
    if code == 0:
        os.write(acks, (json.dumps(dict(json.loads(out.getvalue())["data"], command=argv[0])) + "\\n").encode())

print("ready", file=sys.__stdout__, flush=True)
n = 0
while True:
    n += 1
    choice = rng.random()
    if choice < 0.45:
        acknowledged(["record", {target!r}, rng.choice(["used", "rejected"])])
    elif choice < 0.6:
        acknowledged(["create", "--type", "fact", "--domain", "infra", "--tags", "storm",
                      "--title", "Storm fact %d" % rng.randrange(3), "--body", "storm value %d" % n])
    elif choice < 0.75:
        main(["learn", "--title", "Storm lesson %d" % rng.randrange(40), "--type", "pattern", "--domain", "dev",
              "--tags", "storm", "--problem", "p", "--solution", "s %d" % n])
    elif choice < 0.85:
        inbox = sorted(p for p in os.listdir({inbox!r}) if p.endswith(".md"))
        if inbox:
            main(["promote", "Inbox/" + rng.choice(inbox), "--type", "pattern", "--domain", "dev"])
    elif choice < 0.85 + {reindex_share}:
        main(["reindex"])
    else:
        main(["remember", "storm-%d" % rng.randrange(3), "--body", "round %d" % n])
"""

def storm(vault: Path, target: str, kills: int, seed: int, reindex_share: float = 0.0,
          progress=None, min_feedback: int = 5) -> int:
    """Start a worker that records, creates, learns, promotes, remembers (and reindexes) in a
    loop, SIGKILL it at a random instant, `kills` times or more. Returns how many were killed."""
    import random

    rng = random.Random(seed)
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test"}
    attempt = 0
    # `kills` kills, and more (bounded) until some feedback got logged before them: on a loaded
    # machine a process may be killed before its first write more often than not.
    stretch = Stretch()
    while attempt < kills or (attempt < kills * 10 and _feedback_count(vault) < min_feedback):
        code = STORM_WORKER.format(runtime=str(ROOT / "runtime"), seed=seed * 100_000 + attempt, target=target,
                                   reindex_share=reindex_share, inbox=str(vault / "Inbox"),
                                   acks=str(acks_path(vault)))
        before = _feedback_count(vault)
        kill_when_ready(code, env, stretch(rng.uniform(0.01, 0.2)))
        stretch.saw_progress(_feedback_count(vault) > before)
        attempt += 1
        if progress:
            progress(attempt)
    return attempt


class Stretch:
    """Kill delays that grow while killed workers get nothing done, and shrink back once they do.

    Trigger: a loaded machine (a parallel build, a busy CI runner), where a worker's start-up
    eats the whole delay. Why: these tests are about kills in the middle of writes, which needs
    writes under way; with fixed delays they failed on a loaded machine for want of work, not
    for anything wrong. Outcome: the same seeded delays, scaled by a bounded factor (1 to 25)."""

    def __init__(self) -> None:
        self.factor = 1.0

    def __call__(self, delay: float) -> float:
        return delay * self.factor

    def saw_progress(self, progressed: bool) -> None:
        self.factor = max(1.0, self.factor / 1.2) if progressed else min(25.0, self.factor * 1.5)


def kill_when_ready(code: str, env: dict[str, str], delay: float) -> None:
    """Run `python3 -c code` (which prints `ready` once it is about to work), SIGKILL it `delay`
    seconds later, and check that it died of that signal."""
    import signal
    import time

    process = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    assert process.stdout.readline() == b"ready\n"
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    assert process.wait(timeout=30) == -signal.SIGKILL
    process.stdout.close()


def _feedback_count(vault: Path) -> int:
    """The feedback events logged whole (a torn line does not count: readers skip it)."""
    return sum(1 for e in events(vault) if e["event"] in ("used", "rejected"))


def acks_path(vault: Path) -> Path:
    """Where the storm's workers note the writes they acknowledged (beside the vault)."""
    return vault.parent / f"{vault.name}-acknowledged.jsonl"


def acknowledged(vault: Path) -> list[dict[str, Any]]:
    """The answers of the writes a storm's workers acknowledged (a line torn by a kill is skipped)."""
    path = acks_path(vault)
    acks = []
    for line in path.read_bytes().splitlines() if path.exists() else ():
        try:
            acks.append(json.loads(line))
        except ValueError:
            continue
    return acks


def missing_acknowledged(vault: Path) -> list[str]:
    """The acknowledged writes of a storm whose events the log lacks: each `record`'s event must
    be logged whole exactly once (by its eid), each created card must have its `created` event."""
    log = events(vault)
    eids = [e["eid"] for e in log]
    created = {e.get("id") for e in log if e["event"] == "created"}
    problems = []
    for ack in acknowledged(vault):
        if ack["command"] == "record" and eids.count(ack["event"]) != 1:
            problems.append(f"record acknowledged as event {ack['event']}, logged {eids.count(ack['event'])} time(s)")
        elif ack["command"] == "create" and ack["created"] and ack["id"] not in created:
            problems.append(f"create of {ack['path']} acknowledged, no created event for {ack['id']}")
    return problems


class LoopbackServer:
    """A real HTTP server on 127.0.0.1 (a free port) running `handler` in a daemon thread, for
    tests that stand in for a model or embedding provider. `stop()` shuts it down."""

    def __init__(self, handler) -> None:
        import threading
        from http.server import ThreadingHTTPServer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        # A short poll interval: shutdown() waits up to one interval (0.5 s by default) per test.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def reply_json(handler, status: int, raw: bytes) -> None:
    """Answer a request of a `BaseHTTPRequestHandler` with `raw` JSON; a client that gave up
    waiting (a timeout test) is not an error."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)
    except (BrokenPipeError, ConnectionResetError):
        pass


def namespaces_work() -> bool:
    """Whether `unshare` can give a test its own mounts (a user and mount namespace)."""
    if not shutil.which("unshare"):
        return False
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def indexed_stamp(vault: Path, rel: str) -> tuple[int, int] | None:
    """The (size, mtime) the search index holds for a card file, or None when it holds none."""
    import sqlite3

    folder, name = rel.rsplit("/", 1)
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        return db.execute("SELECT size, mtime_ns FROM docs WHERE folder = ? AND name = ?", (folder, name)).fetchone()


def file_stamp(vault: Path, rel: str) -> tuple[int, int]:
    """A card file's (size, mtime), as `indexed_stamp` gives the index's."""
    st = os.stat(vault / rel)
    return st.st_size, st.st_mtime_ns
