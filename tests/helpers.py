"""Helpers for the CLI tests: run the real `main`, read the vault, run real processes."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "runtime" / "playbook_api.py"
CARD_FOLDERS = ("Playbooks", "Inbox", "WorkingMemory")


def run_cli(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    """Call `external_brain.cli.main(list(argv))`; return (exit code, stdout, stderr).

    `--help` makes argparse exit through SystemExit; its code is returned like any other.
    """
    from external_brain.cli import main

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
    and the lock files."""
    hashes = {}
    skipped = ("logs/", ".brain/cache/", ".brain/locks/")
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(skipped) or rel + "/" in skipped:
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


def events(root: Path) -> list[dict[str, Any]]:
    """Every event in the log, asserting that each line is one whole JSON object."""
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
    return subprocess.run([sys.executable, str(SCRIPT), *argv], env=env, cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout)


def quiet_main(argv: list[str]) -> int:
    """`main(argv)` with its output thrown away (for worker processes)."""
    from external_brain.cli import main

    with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        return main(argv)
