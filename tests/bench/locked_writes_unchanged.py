#!/usr/bin/env python3
"""A sequence of records (feedback) and updates (PATCH) leaves exactly the files, events and
search-index rows that another checkout's leaves, on copies of the same vault (issue 22: less
work under the write lock, the same results).

    git archive <base> | tar -x -C /tmp/base        # the checkout to compare with
    python3 tests/bench/locked_writes_unchanged.py /tmp/base --cards 300

A generated vault (gen_vault.py, deterministic) gets a few hand-written cards besides (a
person's own `confidence: high`, a note without an id, one without frontmatter, a flow-mapping
frontmatter, CRLF line endings with a commented block list of tags, inline #tags and wikilinks),
is indexed once, and copied once per checkout (the card files hard-linked, so each copy's index
agrees with it). Each checkout then runs the same operations with the clock fixed
(`BRAIN_NOW`, and `record`'s `ts_ns` counted): first in a process of one command (as the CLI), then in one that keeps its index
connections (as a `brain serve` worker): records used/rejected by id and by path, appends, tag
and status changes, a new title (a rename), on generated and hand-written cards alike.

Compared: every operation's result (event ids left out), every file under Playbooks/ and Inbox/
byte for byte, the log's events (`eid` left out: random; `record`'s `ts_ns` is counted), and
every row of every table of the index (left out: the files' mtimes, inodes and ctimes, which
the copies cannot share, and the folders' stamps and listings). Prints each difference, and
"differences: none" when there is none.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CLOCK = "2027-01-15T09:30:00+00:00"
HAND_WRITTEN = {
    "own-rating.md": "---\nid: 0b0b0b0b-0000-4000-8000-000000000001\ntitle: Own rating\ntype: insight\n"
                     "confidence: high\n---\n# Own rating\n\nA person rated this one high.\n",
    "no-id-note.md": "---\ntitle: A note without an id\ntags: [notes]\n---\nWritten by hand, no id yet.\n",
    "plain-note.md": "Just a plain note, no frontmatter at all, #plain tag.\n",
    "flow-front.md": "---\n{id: 0b0b0b0b-0000-4000-8000-000000000002, title: Flow card, tags: [a, b], "
                     "confidence: 0.4}\n---\nA flow mapping frontmatter.\n",
    "crlf-card.md": "---\r\nid: 0b0b0b0b-0000-4000-8000-000000000003\r\ntitle: CRLF card\r\ntags:\r\n"
                    "  - windows   # kept\r\n  - crlf\r\nupdated: 2026-01-02T03:04:05+00:00\r\n---\r\n"
                    "Written on Windows.\r\n",
    "linked-card.md": "---\nid: 0b0b0b0b-0000-4000-8000-000000000004\ntitle: Linked card\ntype: pattern\n"
                      "related: ['[[Own rating]]']\nlinks:\n  - {to: 0b0b0b0b-0000-4000-8000-000000000002, "
                      "rel: depends_on}\n---\nSee [[Flow card]] and #inline-tag, #another.\n",
}
HAND_IDS = ["0b0b0b0b-0000-4000-8000-000000000001", "0b0b0b0b-0000-4000-8000-000000000002",
            "0b0b0b0b-0000-4000-8000-000000000003", "0b0b0b0b-0000-4000-8000-000000000004"]
HAND_PATHS = ["Playbooks/no-id-note.md", "Playbooks/plain-note.md"]

DRIVER = r'''
import json, sys
runtime, vault_root, plan_file, keep = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "keep"
sys.path.insert(0, runtime)
from pathlib import Path
from external_brain.cards import record
from external_brain.errors import BrainError
from external_brain.evolution.lifecycle import update_card
from external_brain.vault.storage import Vault
import itertools, time
import external_brain.cards as cards_module
class _Clock:
    """`record`'s nanoseconds within the fixed second, counted: the log's replay order (`ts`,
    then `ts_ns`) is then the operations' order on both sides, not the real clock's."""
    counted = itertools.count(1_000_000 if keep else 1_000)
    def time_ns(self):
        return next(self.counted)
    def __getattr__(self, name):
        return getattr(time, name)
cards_module.time = _Clock()
if keep:
    from external_brain.doors import http_api  # noqa: F401  (what a server has imported)
    from external_brain.search.index import keep_connections
    keep_connections()
for kind, ref, value in json.load(open(plan_file)):
    vault = Vault(Path(vault_root))
    try:
        if kind == "record":
            out = record(vault, ref, value, None, agent="").as_dict()
        else:
            out = update_card(vault, ref, agent="", **value).as_dict()
        out.pop("event", None)
    except BrainError as exc:
        out = {"error": type(exc).__name__, "message": str(exc)}
    print(json.dumps(out, sort_keys=True, ensure_ascii=False), flush=True)
'''


def plan(ids: list[str], rounds: int, seed: int) -> list[tuple[str, str, object]]:
    """The operations: each round records and updates generated and hand-written cards."""
    rng = random.Random(seed)
    hot = rng.sample(ids, min(12, len(ids)))
    ops: list[tuple[str, str, object]] = []
    for number in range(rounds):
        for ref in [*rng.sample(hot, 4), *HAND_IDS, *HAND_PATHS]:
            ops.append(("record", ref, rng.choice(("used", "rejected"))))
        for ref in [*rng.sample(hot, 3), *HAND_IDS]:
            ops.append(("update", ref, {"append": f"marker {number} {rng.getrandbits(24):06x} #t{number % 3}"}))
        ops.append(("update", rng.choice(hot), {"add_tags": [f"round{number}"]}))
        ops.append(("update", rng.choice(HAND_IDS), {"status": f"checked-{number}"}))
        ops.append(("update", HAND_PATHS[number % 2], {"append": f"by path {number}"}))
        ops.append(("record", hot[number % len(hot)], "used"))
    ops.append(("update", hot[0], {"title": "A new title for the first hot card"}))
    ops.append(("record", hot[0], "used"))
    ops.append(("update", hot[0], {"append": "after the rename"}))
    return ops


def card_ids(vault: Path) -> list[str]:
    found = []
    for path in sorted((vault / "Playbooks").glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines()[1:20]:
            if line.startswith("id: "):
                found.append(line[4:].strip())
                break
    return found


def copy_vault(master: Path, to: Path) -> None:
    """`master` copied to `to`, its card files hard-linked (the same inodes: the index agrees);
    a write replaces a card file by a rename, so the master's files stay as they are."""
    to.mkdir(parents=True)
    for entry in master.iterdir():
        if entry.name == "Playbooks":
            shutil.copytree(entry, to / entry.name, copy_function=os.link)
        elif entry.is_dir():
            shutil.copytree(entry, to / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, to / entry.name)


def files_of(vault: Path) -> dict[str, bytes]:
    return {str(path.relative_to(vault)): path.read_bytes()
            for folder in ("Playbooks", "Inbox") for path in sorted((vault / folder).rglob("*")) if path.is_file()}


def events_of(vault: Path) -> list[dict]:
    log = vault / "logs" / "events.jsonl"
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [{k: v for k, v in event.items() if k != "eid"} for event in events]


def index_rows(vault: Path) -> dict[str, list]:
    """Every table's rows, sorted, without what the copies cannot share (module docstring)."""
    db = sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite")
    try:
        tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        out = {}
        for table in tables:
            if table in ("folders", "listings"):
                continue
            columns = [row[1] for row in db.execute(f"PRAGMA table_info({table})")]
            rows = []
            for row in db.execute(f"SELECT * FROM {table}"):
                values = dict(zip(columns, row))
                for column in ("mtime_ns", "inode", "ctime_s"):
                    values.pop(column, None)
                if table == "doc_data":
                    meta = json.loads(values["meta"])
                    meta.pop("ctime_ns", None)
                    values["meta"] = meta
                if table == "facets":
                    values = {k: v for k, v in values.items() if "ctime" not in k and "arrived" not in k}
                if table == "info" and values["key"] in ("changes", "postings_epoch"):
                    continue
                rows.append(json.dumps(values, sort_keys=True, default=repr))
            out[table] = sorted(rows)
        return out
    finally:
        db.close()


def run_side(checkout: Path, vault: Path, ops_file: Path) -> list[str]:
    env = {**os.environ, "BRAIN_NOW": CLOCK, "BRAIN_VAULT": str(vault), "PYTHONHASHSEED": "0"}
    lines = []
    for mode in ("one-command", "keep"):
        done = subprocess.run([sys.executable, "-c", DRIVER, str(checkout / "runtime"), str(vault), str(ops_file), mode],
                              env=env, check=True, capture_output=True, text=True)
        lines += done.stdout.splitlines()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path, help="the checkout to compare with (holds runtime/)")
    parser.add_argument("--cards", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout measured (this one)")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from gen_vault import generate

    work = Path(tempfile.mkdtemp(prefix="locked-unchanged-"))
    try:
        master = work / "master"
        generate(master, args.cards)
        for name, text in HAND_WRITTEN.items():
            (master / "Playbooks" / name).write_bytes(text.encode("utf-8"))
        subprocess.run([sys.executable, str(args.base / "runtime" / "playbook_api.py"), "--vault", str(master),
                        "reindex"], check=True, capture_output=True)
        ops = plan(card_ids(master), args.rounds, seed=11)
        ops_file = work / "ops.json"
        ops_file.write_text(json.dumps(ops), encoding="utf-8")
        sides = {"base": args.base, "this": args.checkout}
        for name in sides:
            copy_vault(master, work / name)
        results = {name: run_side(checkout, work / name, ops_file) for name, checkout in sides.items()}
        differences = []
        a, b = results["base"], results["this"]
        differences += [f"operation {i}: {x} != {y}" for i, (x, y) in enumerate(zip(a, b)) if x != y]
        if len(a) != len(b):
            differences.append(f"results: {len(a)} != {len(b)}")
        fa, fb = files_of(work / "base"), files_of(work / "this")
        differences += [f"file {rel} differs" for rel in sorted(set(fa) | set(fb)) if fa.get(rel) != fb.get(rel)]
        ea, eb = events_of(work / "base"), events_of(work / "this")
        differences += [f"event {i}: {x} != {y}" for i, (x, y) in enumerate(zip(ea, eb)) if x != y]
        if len(ea) != len(eb):
            differences.append(f"events: {len(ea)} != {len(eb)}")
        ia, ib = index_rows(work / "base"), index_rows(work / "this")
        for table in sorted(set(ia) | set(ib)):
            ra, rb = ia.get(table, []), ib.get(table, [])
            if ra != rb:
                gone, new = sorted(set(ra) - set(rb)), sorted(set(rb) - set(ra))
                differences.append(f"index table {table}: {len(ra)} rows against {len(rb)}; "
                                   f"base only {gone[:2]}, this only {new[:2]}")
        errors = sum(1 for line in a if '"error"' in line)
        print(f"{len(ops)} operations a mode, 2 modes: {len(a)} results ({errors} refused alike), {len(fa)} files, "
              f"{len(ea)} events, {sum(map(len, ia.values()))} index rows compared")
        for line in differences:
            print(line)
        print(f"differences: {len(differences) or 'none'}")
        return 1 if differences else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
