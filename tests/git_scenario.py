"""A team sharing one vault through git, built for real: a committed vault, clones made with
`git clone` and set up with `brain init`, each running a seeded mix of operations through the
real command line, then merged with plain `git merge`. Used by tests/evolution/test_git_sharing.py (small,
in CI) and tests/bench/bench_git_merge.py (bigger rounds).

Everything it checks is judged from the files and the log with code written here, not the
product's: the confidence replay (`replay_confidence`), conflicted files (git's own index and
conflict markers), ids per note, cards present and found by search.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from helpers import run_cli

CLONE_LINES = 4   # each clone edits only its own line of a body: different lines merge cleanly
SHARED_TITLES = ("Shared lesson about kafka consumer lag", "Shared lesson about flaky dns in ci")
SHARED_LEARNED = ("Learned retry budget for flaky uploads", "Learned pin the node version in ci")
SHARED_MISSES = ("zorblax quintessa frobnicate", "plumbus grommet wuzzle")
KEYS = ("deploy-state", "current-task")
TOPICS = ("kafka lag", "ecs timeout", "dns flake", "pool exhaustion", "disk full", "tls expiry", "oom kill",
          "slow query", "cache stampede", "clock skew")


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} in {cwd} failed:\n{done.stdout}\n{done.stderr}")
    return done


def brain(vault: Path, *args: str) -> tuple[int, dict[str, Any]]:
    """One command through the real CLI (in this process), `--json`: (exit code, data or error)."""
    code, out, err = run_cli(*args, "--vault", str(vault), "--json")
    envelope = json.loads(out) if out.strip() else {"ok": False, "error": {"message": err}}
    return code, envelope.get("data") if envelope.get("ok") else envelope.get("error")


def ok(vault: Path, *args: str) -> dict[str, Any]:
    code, data = brain(vault, *args)
    assert code == 0, (args, data)
    return data


def doctor(vault: Path) -> dict[str, Any]:
    """`doctor`'s report, asserting its exit code: 1 exactly when it reports errors."""
    code, data = brain(vault, "doctor")
    assert code == (1 if data["errors"] else 0), (code, data)
    return data


def body_of(title: str) -> str:
    lines = [f"{title}: what happened and what fixed it."]
    lines += [f"Clone {n} note: nothing yet." for n in range(1, CLONE_LINES + 1)]
    return "\n\n".join(lines)


# ---------------------------------------------------------------------------- the vault and its clones

def make_base(root: Path, cards: int = 20) -> dict[str, Any]:
    """The team's vault: `cards` cards, 4 Inbox candidates (2 learned, 2 search misses), 2 notes
    written by hand (no id, no frontmatter), committed in a new git repository."""
    ok(root, "init", str(root))
    git(root, "init", "-q", "-b", "main")
    for n in range(cards):
        title = f"Base card {n} {TOPICS[n % len(TOPICS)]}"
        ok(root, "create", "--type", "troubleshooting", "--domain", "infra", "--title", title,
           "--tags", f"base,t{n % 4}", "--body", body_of(title))
    for title in SHARED_LEARNED:
        ok(root, "learn", "--title", title, "--type", "runbook", "--domain", "ops", "--tags", "ci",
           "--problem", "it failed now and then", "--solution", "bounded retries")
    for query in ("wibble flangeroo", "snorkel gizmatic"):
        ok(root, "search", query)
    for name in ("Hand_Written_One.md", "Hand_Written_Two.md"):
        (root / "Playbooks" / name).write_text(f"# {name[:-3].replace('_', ' ')}\n\nWritten by hand in Obsidian.\n",
                                               encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "the team's vault")
    return {"hand": ["Playbooks/Hand_Written_One.md", "Playbooks/Hand_Written_Two.md"]}


def make_clone(base: Path, dest: Path) -> None:
    """`git clone`, then `brain init` on the clone (which registers the merge driver)."""
    git(base.parent, "clone", "-q", str(base), str(dest))
    data = ok(dest, "init", str(dest))
    assert data["git"]["work_tree"] == str(dest.resolve()) and data["git"]["merge_driver"], data


def commit(vault: Path, message: str) -> None:
    git(vault, "add", "-A")
    git(vault, "commit", "-q", "--allow-empty", "-m", message)


def copy_clone(source: Path, dest: Path) -> Path:
    shutil.copytree(source, dest, symlinks=True)
    shutil.rmtree(dest / ".brain" / "cache", ignore_errors=True)
    return dest


def merge(into: Path, other: Path) -> list[str]:
    """Plain `git merge` of `other`'s main into `into`: the files git left conflicted."""
    git(into, "fetch", "-q", str(other), "main")
    done = git(into, "merge", "-q", "--no-edit", "FETCH_HEAD", check=False)
    conflicted = git(into, "diff", "--name-only", "--diff-filter=U").stdout.split()
    if done.returncode != 0 and not conflicted:
        raise AssertionError(f"git merge failed without conflicts:\n{done.stdout}\n{done.stderr}")
    if conflicted:
        git(into, "commit", "-q", "-a", "--no-edit", check=False)   # keep going: the counts are the finding
    return conflicted


# ---------------------------------------------------------------------------- operations

_ID = re.compile(r"^id:\s*['\"]?([0-9A-Za-z-]+)", re.MULTILINE)


def cards_in(vault: Path, folder: str = "Playbooks") -> dict[str, str | None]:
    """path -> id of the card files in `folder` now."""
    out = {}
    for path in sorted((vault / folder).glob("*.md")):
        match = _ID.search(path.read_text(encoding="utf-8"))
        out[f"{folder}/{path.name}"] = match.group(1) if match else None
    return out


def run_ops(vault: Path, clone: int, rng: random.Random, count: int, hand: list[str],
            appends: bool = False, round_number: int = 0) -> list[str]:
    """`count` operations of every kind a team's clone does, chosen by `rng`; returns what was
    done, one line each. Each clone edits only its own line of a body (`appends`: also appends
    to bodies, which two clones may do to one card: the merge keeps both)."""
    done = []
    kinds = ["create", "used", "rejected", "tags", "body", "status", "link", "delete", "learn", "promote",
             "remember", "miss", "hand", "hand"] + (["append"] if appends else [])
    for number in range(count):
        kind = kinds[number] if number < len(kinds) else rng.choice(kinds)
        playbooks = [p for p in cards_in(vault) if p not in hand]
        pick = rng.choice(playbooks) if playbooks else None
        args: tuple[str, ...] = ()
        if kind == "create":
            title = rng.choice(SHARED_TITLES) if rng.random() < 0.3 else \
                f"Clone {clone} lesson {number} {rng.choice(TOPICS)}"
            args = ("create", "--type", "troubleshooting", "--domain", "infra", "--title", title,
                    "--tags", f"c{clone},{rng.choice(TOPICS).split()[0]}", "--body", body_of(title))
        elif kind in ("used", "rejected") and pick:
            args = ("record", pick, kind)
        elif kind == "hand":
            args = ("record", rng.choice(hand), rng.choice(("used", "rejected")))
        elif kind == "tags" and pick:
            args = ("update", pick, "--add-tag", f"c{clone}x{rng.randrange(3)}", "--remove-tag", rng.choice(("base", "t1")))
        elif kind == "body" and pick:
            card = ok(vault, "get", pick)
            line = f"Clone {clone} note:"
            if line in card["body"]:
                new = re.sub(rf"^{line}.*$", f"{line} changed at step {number}.", card["body"], flags=re.MULTILINE)
                args = ("update", pick, "--body", new)
        elif kind == "append" and pick:
            args = ("update", pick, "--append", f"Clone {clone} appended at step {number}.")
        elif kind == "status" and pick:
            args = ("update", pick, "--status", rng.choice(("archived", "active")))
        elif kind == "link" and len(playbooks) > 1:
            source, target = rng.sample(playbooks, 2)
            args = ("link", source, target, "--rel", rng.choice(("related", "extends", "depends_on")),
                    "--weight", str(rng.choice((0.3, 0.6, 0.9))))
        elif kind == "delete" and pick:
            args = ("delete", pick)
        elif kind == "learn":
            title = rng.choice(SHARED_LEARNED) if rng.random() < 0.5 else f"Clone {clone} learned {number}"
            args = ("learn", "--title", title, "--type", "runbook", "--domain", "ops", "--tags", f"c{clone}",
                    "--problem", f"seen in clone {clone}", "--solution", f"fixed at step {number}")
        elif kind == "promote":
            # What `brain inbox` lists: the records of past promotions are no candidates.
            candidates = [p for p in cards_in(vault, "Inbox")
                          if not re.search(r"^status: promoted$", (vault / p).read_text(encoding="utf-8"), re.MULTILINE)]
            if candidates:
                args = ("promote", rng.choice(candidates), "--type", "runbook", "--domain", "ops")
        elif kind == "remember":
            args = ("remember", rng.choice(KEYS), "--body", f"clone {clone} at step {number}")
        elif kind == "miss":
            letters = "".join(chr(ord("k") + int(d)) for d in f"{round_number}{clone}{number}")   # no digit cards hold
            query = rng.choice(SHARED_MISSES) if rng.random() < 0.5 else f"vorp{letters} quib{letters}"
            args = ("search", query)
        if not args:
            continue
        code, data = brain(vault, *args)
        assert code == 0, (clone, number, args, data)
        if kind == "miss" and query not in SHARED_MISSES:   # a shared one may have been promoted since
            assert data["hits"] == [] and data["miss_candidate"], (args, data)
        done.append(" ".join(args[:2]))
    return done


# ---------------------------------------------------------------------------- what a merge left

def read_log(vault: Path) -> list[dict[str, Any]]:
    path = vault / "logs" / "events.jsonl"
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _moment(ts: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(ts).timestamp()


def replay_confidence(log: list[dict[str, Any]], alpha: float = 0.1) -> dict[str, float]:
    """Each card's confidence from its feedback, written here from the rule in docs/decisions.md
    (not the product's code): per card id, `used`/`rejected` in (moment, ts_ns within the second,
    eid) order, from the first one's `before`; a `promoted` starts again, but for a card promoted
    before by a promotion not undone (the same candidate promoted in another clone). No decay
    happens in these scenarios (every event is minutes old), which `idle_days` absent confirms."""
    per_card: dict[str, list[tuple]] = {}
    undone = {event.get("undoes") for event in log if event.get("event") == "undone"}
    for place, event in enumerate(log):
        if event.get("event") in ("used", "rejected", "promoted") and event.get("id"):
            fine = event.get("ts_ns")
            order = (_moment(event["ts"]), fine % 10**9, event["eid"]) if isinstance(fine, int) else \
                (_moment(event["ts"]), -1, "")
            per_card.setdefault(event["id"], []).append((order, place, event))
    out = {}
    for card_id, items in per_card.items():
        value, lives = None, False
        for _, _, event in sorted(items, key=lambda item: (item[0], item[1])):
            if event["event"] == "promoted":
                if not lives:
                    value, lives = None, event["eid"] not in undone
                continue
            assert "idle_days" not in event, event
            if value is None:
                value = event["before"]
            value = round(min(1.0, max(0.0, alpha * (1.0 if event["event"] == "used" else 0.0) + (1 - alpha) * value)), 6)
        if value is not None:
            out[card_id] = value
    return out


_CONF = re.compile(r"^confidence:\s*([0-9.]+)\s*$", re.MULTILINE)
_MARKER = re.compile(r"^(<{7}|>{7})( |$)", re.MULTILINE)


def card_texts(vault: Path) -> dict[str, str]:
    return {p.relative_to(vault).as_posix(): p.read_text(encoding="utf-8")
            for folder in ("Playbooks", "Inbox") for p in sorted((vault / folder).glob("*.md"))}


def disagreements(vault: Path) -> dict[str, tuple[float, float]]:
    """path -> (stored, replayed) for every card whose stored confidence is not the replay."""
    replayed = replay_confidence(read_log(vault))
    out = {}
    for rel, text in card_texts(vault).items():
        found, stored = _ID.search(text), _CONF.search(text)
        if found and found.group(1) in replayed:
            want = replayed[found.group(1)]
            if stored is None or abs(float(stored.group(1)) - want) > 1e-9:
                out[rel] = (float(stored.group(1)) if stored else None, want)
    return out


def conflict_markers(vault: Path) -> list[str]:
    return [rel for rel, text in card_texts(vault).items() if _MARKER.search(text)]


def ids_per_note(vault: Path, notes: list[str]) -> dict[str, set[str]]:
    """Each hand-written note -> every id the log used for it, and the id its file holds."""
    ids: dict[str, set[str]] = {note: set() for note in notes}
    for event in read_log(vault):
        if event.get("card") in ids and event.get("id"):
            ids[event["card"]].add(event["id"])
    for note in notes:
        found = _ID.search((vault / note).read_text(encoding="utf-8")) if (vault / note).exists() else None
        if found:
            ids[note].add(found.group(1))
    return ids


def created_ids(logs: list[list[dict[str, Any]]]) -> tuple[dict[str, str], set[str]]:
    """From clones' logs: id -> title of every card created or promoted, and the ids deleted."""
    made, deleted = {}, set()
    for log in logs:
        for event in log:
            if event.get("event") == "created" and event.get("id"):
                made[event["id"]] = event.get("title") or ""
            elif event.get("event") == "deleted" and event.get("id"):
                deleted.add(event["id"])
    return made, deleted


def missing_or_unfound(vault: Path, made: dict[str, str], deleted: set[str]) -> list[str]:
    """The cards created (not deleted) in any clone that the merged vault lacks or search misses."""
    present = {card_id: rel for rel, card_id in cards_in(vault).items() if card_id}
    problems = []
    for card_id, title in made.items():
        if card_id in deleted:
            continue
        if card_id not in present:
            problems.append(f"{card_id} ({title}) is missing")
            continue
        hits = ok(vault, "search", title, "--status", "any", "--limit", "20")["hits"]
        if card_id not in {hit["id"] for hit in hits}:
            problems.append(f"{card_id} ({title}) at {present[card_id]} is not found by search")
    return problems


def candidates_per_query(vault: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for text in (p.read_text(encoding="utf-8") for p in (vault / "Inbox").glob("*.md")):
        found = re.search(r"^query_key:\s*(.+)$", text, re.MULTILINE)
        if found:
            counts[found.group(1).strip()] = counts.get(found.group(1).strip(), 0) + 1
    return counts
