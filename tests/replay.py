"""A replay of the event log, written independently of the product, to check that the cards on
disk are exactly what the logged operations made of them (the concurrency and kill-storm tests).

Two checks, both from the log alone:
- `chain_problems`: every event that carries `files` names each file's whole text before and the
  fingerprint of its text after. Followed in log order, each file's `before` must be the text the
  previous event left (its `after` fingerprint), and the file on disk must end at the last one. A
  lost update, an operation applied twice or half, or a write no event describes breaks the chain.
- `link_problems`: the links each card should hold, rebuilt from the `linked`, `unlinked` and
  `deleted` events (upsert on (source, target, rel), `version` 1 then +1 per change, a delete
  removing every link to the card), compared with each card's `links`, and its `related`
  wikilinks compared with the current file names of the cards it links to.
- `update_problems`: each `updated` event's `changed` list names exactly the frontmatter keys (and
  `body`) that differ between the texts before and after it, the texts coming from the chain.
"""

from __future__ import annotations

import zlib
from pathlib import Path
from typing import Any

FOLDERS = ("Playbooks", "Inbox")


def fingerprint(data: bytes | str | None) -> str | None:
    """Length and CRC-32, as the product's journal computes them (independently written here)."""
    if data is None:
        return None
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return f"{len(raw)}:{zlib.crc32(raw):08x}"


def read_log(vault: Path) -> list[dict[str, Any]]:
    """The log's events as the product reads it (a line a killed writer tore is skipped): what
    is replayed is what every reader of the log sees."""
    from external_brain.vault.events import parse_lines

    path = vault / "logs" / "events.jsonl"
    return list(parse_lines(path.read_bytes())) if path.exists() else []


def _on_disk(vault: Path, rel: str) -> bytes | None:
    try:
        return (vault / rel).read_bytes()
    except FileNotFoundError:
        return None


def texts_after(vault: Path, log: list[dict]) -> dict[tuple[str, str], str | None]:
    """(eid, path) -> the whole text the event left at that path (None: no file), taken from the
    next event's `before` on that path or, for the last one, from the file on disk."""
    out: dict[tuple[str, str], str | None] = {}
    pending: dict[str, str] = {}  # path -> eid of the last event that touched it
    for event in log:
        for item in event.get("files") or ():
            path = item["path"]
            if path in pending:
                out[(pending[path], path)] = item["before"]
            pending[path] = event["eid"]
    for path, eid in pending.items():
        data = _on_disk(vault, path)
        out[(eid, path)] = None if data is None else data.decode("utf-8")
    return out


def chain_problems(vault: Path, log: list[dict] | None = None) -> list[str]:
    """See the module docstring. Events without `files` that rewrite a card (feedback) make its
    text unknown until the next event that logs it."""
    log = read_log(vault) if log is None else log
    known: dict[str, str | None] = {}  # path -> fingerprint the last event left
    problems = []
    for event in log:
        if event.get("event") in ("used", "rejected") and event.get("card"):
            known.pop(event["card"], None)
        for item in event.get("files") or ():
            path = item["path"]
            if path in known and fingerprint(item["before"]) != known[path]:
                problems.append(f"{event['event']} {event['eid']}: {path} started from {fingerprint(item['before'])}, "
                                f"the log so far left {known[path]}")
            known[path] = item["after"]
    for path, print_ in sorted(known.items()):
        now = fingerprint(_on_disk(vault, path))
        if now != print_:
            problems.append(f"{path} is {now} on disk, the log's last event left {print_}")
    return problems


def _meta(text: str) -> dict[str, Any]:
    import yaml  # the tests' own YAML reader, not the product's

    if not text.startswith("---"):
        return {}
    end = text.find("\n---", 3)
    return yaml.safe_load(text[3:end]) or {}


def _body(text: str) -> str:
    if not text.startswith("---"):
        return text
    end = text.find("\n---", 3)
    return text[text.index("\n", end + 1) + 1:] if "\n" in text[end + 1:] else ""


def update_problems(vault: Path, log: list[dict] | None = None) -> list[str]:
    log = read_log(vault) if log is None else log
    after = texts_after(vault, log)
    problems = []
    for event in log:
        if event.get("event") != "updated":
            continue
        files = event["files"]
        old = next(f["before"] for f in files if f["path"] == (event.get("renamed_from") or event["card"]))
        new = after[(event["eid"], event["card"])]
        if new is None:
            problems.append(f"updated {event['eid']}: {event['card']} is gone right after it")
            continue
        old_meta, new_meta = _meta(old), _meta(new)
        differ = {k for k in set(old_meta) | set(new_meta) if old_meta.get(k) != new_meta.get(k)} - {"updated"}
        if _body(old) != _body(new):
            differ.add("body")
        if differ != set(event["changed"]):
            problems.append(f"updated {event['eid']}: logged changed={sorted(event['changed'])}, "
                            f"the texts differ in {sorted(differ)}")
        if "title" in event["changed"] and new_meta.get("title") == old_meta.get("title"):
            problems.append(f"updated {event['eid']}: title logged as changed but is the same")
    return problems


def expected_links(log: list[dict]) -> tuple[dict[str, dict[tuple[str, str], dict]], list[str]]:
    """source id -> {(target id, rel): {weight, version, reason}} from the log, and the problems
    found on the way (a version that does not follow the one before)."""
    model: dict[str, dict[tuple[str, str], dict]] = {}
    problems = []
    for event in log:
        kind, source = event.get("event"), event.get("id")
        if kind == "linked":
            links = model.setdefault(source, {})
            key = (event["target"], event["rel"])
            wanted = links[key]["version"] + 1 if key in links else 1
            if event["version"] != wanted:
                problems.append(f"linked {event['eid']}: version {event['version']}, the log so far gives {wanted}")
            links[key] = {"weight": event["weight"], "version": event["version"], "reason": event.get("reason")}
            if event.get("kept_wikilink"):  # a person's own wikilink to the target, written as a link too
                links[(event["target"], "related")] = {"weight": 0.5, "version": 1, "reason": None}
        elif kind == "unlinked":
            links = model.setdefault(source, {})
            gone = [k for k in links if k[0] == event["target"] and event.get("rel") in (None, k[1])]
            if not gone:  # the storms write no wikilinks by hand: every unlink removes a logged link
                problems.append(f"unlinked {event['eid']}: no such link in the log so far")
            for key in gone:
                del links[key]
        elif kind == "deleted":
            model.pop(source, None)
            for links in model.values():
                for key in [k for k in links if k[0] == source]:
                    del links[key]
        elif kind == "undone":
            raise AssertionError("expected_links does not replay undo events; check before undoing")
    return model, problems


def link_problems(vault: Path, log: list[dict] | None = None) -> list[str]:
    """The links and `related` wikilinks of every card in Playbooks/ against the replayed log.
    Assumes no hand-written wikilinks (the storms write none)."""
    log = read_log(vault) if log is None else log
    model, problems = expected_links(log)
    cards = {}
    for path in sorted((vault / "Playbooks").glob("*.md")):
        meta = _meta(path.read_text(encoding="utf-8"))
        cards[str(meta.get("id"))] = (path, meta)
    for card_id, (path, meta) in cards.items():
        held = {}
        for entry in meta.get("links") or ():
            key = (entry["to"], entry["rel"])
            if key in held:
                problems.append(f"{path.name}: link {key} held twice")
            held[key] = {"weight": entry["weight"], "version": entry["version"], "reason": entry.get("reason")}
        wanted = model.get(card_id, {})
        if held != wanted:
            problems.append(f"{path.name}: holds links {sorted(held.items())}, the log replays to "
                            f"{sorted(wanted.items())}")
        stems = sorted({cards[to][0].stem for to, _ in wanted if to in cards})
        related = meta.get("related") or []
        names = sorted(r.strip("[]") for r in related)
        if names != stems:
            problems.append(f"{path.name}: related {related}, the linked cards are {stems}")
    return problems


def replay_all(vault: Path) -> list[str]:
    log = read_log(vault)
    return chain_problems(vault, log) + update_problems(vault, log) + link_problems(vault, log)


# ---------------------------------------------------------------------------- the lifecycle kill storm

UNDOABLE = ("created", "updated", "deleted", "linked", "unlinked")

LIFECYCLE_WORKER = """
import os, re, sys, random
sys.path.insert(0, {runtime!r})
from external_brain.doors.cli import main
import external_brain.evolution.lifecycle, external_brain.evolution.relations, external_brain.search.index, external_brain.search.keyword  # noqa
rng = random.Random({seed})  # modules imported before `ready`: the kills land in the work, not in imports
devnull = open(os.devnull, "w")
sys.stdout = sys.stderr = devnull
print("ready", file=sys.__stdout__, flush=True)
rels = ("related", "extends", "depends_on")
n = 0
while True:
    n += 1
    stems = sorted(p[:-3] for p in os.listdir({playbooks!r}) if p.endswith(".md"))
    choice = rng.random()
    if choice < 0.12 or len(stems) < 3:
        main(["create", "--type", "pattern", "--domain", "dev", "--tags", "storm",
              "--title", "Storm %d %d" % ({seed}, n), "--body", "storm body %d" % n])
        continue
    source, target = rng.sample(stems, 2)
    if choice < 0.22:
        main(["delete", source])
    elif choice < 0.55:
        main(["link", source, target, "--rel", rng.choice(rels), "--weight", str(rng.choice((0.3, 0.6, 1.0))),
              "--reason", "round %d" % n])
    elif choice < 0.7:
        try:  # mostly a link the card holds, so that most unlinks remove something
            held = re.findall(r"^  - to: (\\S+)$", open(os.path.join({playbooks!r}, source + ".md")).read(), re.M)
        except OSError:
            held = []
        main(["unlink", source, rng.choice(held) if held else target]
             + (["--rel", rng.choice(rels)] if rng.random() < 0.3 else []))
    elif choice < 0.8:
        main(["update", source, "--title", "Storm %d %d renamed" % ({seed}, n)])
    elif choice < 0.9:
        main(["update", source, "--append", "appended %d" % n, "--add-tag", "t%d" % rng.randrange(3)])
    else:
        main(["update", source, "--remove-tag", "storm"])
"""


def lifecycle_storm(vault: Path, kills: int, seed: int, check_every_kill=None, min_events: int = 20,
                    progress=None) -> int:
    """Start a worker that creates, deletes, links, unlinks and updates cards in a loop and
    SIGKILL it at a random instant (seeded: a failure is reproducible), `kills` times or more,
    until it logged `min_events` undoable events (bounded). `check_every_kill(vault, attempt)`
    runs after each kill. Returns how many were killed."""
    import os
    import random

    from helpers import ROOT, Stretch, kill_when_ready

    rng = random.Random(seed)
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "storm"}
    attempt, base = 0, _undoable_count(vault)
    stretch = Stretch()
    while attempt < kills or (attempt < kills * 10 and _undoable_count(vault) - base < min_events):
        code = LIFECYCLE_WORKER.format(runtime=str(ROOT / "runtime"), seed=seed * 100_000 + attempt,
                                       playbooks=str(vault / "Playbooks"))
        before = _undoable_count(vault)
        kill_when_ready(code, env, stretch(rng.uniform(0.02, 0.3)))
        stretch.saw_progress(_undoable_count(vault) > before)
        attempt += 1
        if check_every_kill:
            check_every_kill(vault, attempt)
        if progress:
            progress(attempt)
    return attempt


def _undoable_count(vault: Path) -> int:
    """The undoable events logged whole (a torn line does not count: readers skip it)."""
    return sum(1 for event in read_log(vault) if event["event"] in UNDOABLE)
