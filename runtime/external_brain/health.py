"""`audit` (seed 003: coverage, stale cards, Inbox backlog, working memory) and `doctor` (every
file, setting and log line checked, each problem with its fix). Both only read."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import working_memory
from .cards import view
from .confidence import References, days_between
from .errors import BrainError
from .events import count_torn_lines
from .storage import CARD_FOLDERS, Vault, load_cards, now, parse_time

LOW_CONFIDENCE = 0.5


@dataclass
class AuditReport:
    total: int
    by_domain: dict[str, int]
    by_type: dict[str, int]
    empty_domains: list[str]
    stale: list[dict[str, Any]]
    low_confidence: list[dict[str, Any]]
    inbox: dict[str, Any]
    working_memory: dict[str, Any]
    health: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def audit(vault: Vault) -> AuditReport:
    settings = vault.settings
    cards, problems = load_cards(vault)
    refs = References(vault)
    moment = now()
    by_domain = Counter(c.domain or "(none)" for c in cards)
    by_type = Counter(c.type or "(none)" for c in cards)
    stale, low = [], []
    for card in cards:
        shown = view(card, refs, moment)
        last = refs.last_referenced(card) or parse_time(card.meta.get("updated")) \
            or parse_time(card.meta.get("created"))
        idle = days_between(last, moment) if last else None
        if idle is not None and idle > settings.stale_after_days:
            stale.append({**shown.summary(), "days_unreferenced": idle})
        if shown.confidence < LOW_CONFIDENCE:
            low.append(shown.summary())
    stale.sort(key=lambda s: -s["days_unreferenced"])
    low.sort(key=lambda s: s["confidence"])

    candidates, inbox_problems = load_cards(vault, ("Inbox",))
    oldest = min((str(c.meta.get("created", "")) for c in candidates if c.meta.get("created")), default=None)
    inbox = {
        "candidates": len(candidates),
        "search_misses": sum(1 for c in candidates if c.meta.get("source") == "search_miss"),
        "learned": sum(1 for c in candidates if c.meta.get("source") == "learn"),
        "oldest": oldest,
    }
    live, purged = _working_memory_state(vault)
    health = [{"path": p.path, "line": p.line, "problem": p.message} for p in (*problems, *inbox_problems)]
    for card in cards:
        if card.type and card.type not in settings.types:
            health.append({"path": card.rel, "line": None, "problem": f"unknown type {card.type!r}"})
        if card.domain and card.domain not in settings.domains:
            health.append({"path": card.rel, "line": None, "problem": f"unknown domain {card.domain!r}"})
    return AuditReport(
        total=len(cards), by_domain=dict(sorted(by_domain.items())), by_type=dict(sorted(by_type.items())),
        empty_domains=[d for d in settings.domains if d not in by_domain],
        stale=stale, low_confidence=low, inbox=inbox,
        working_memory={"entries": live, "expired": purged}, health=health,
    )


def _working_memory_state(vault: Vault) -> tuple[int, int]:
    """Live and expired entry counts, without purging (audit only reads)."""
    folder = vault.folder(working_memory.FOLDER)
    live = expired = 0
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else ():
        entry = working_memory._read(vault, path)
        if entry is None:
            continue
        if working_memory._expired(entry):
            expired += 1
        else:
            live += 1
    return live, expired


def _check_index(vault: Vault, playbook_count: int) -> list[Finding]:
    """Open the search index with a full check (every card's stamp, every folder listed: so it
    is brought up to date, or rebuilt when damaged), run SQLite's own consistency check, and
    check that it covers every card. An index file that cannot be used is one finding, with
    the reason and the fix (`index.Trouble`)."""
    import sqlite3

    from .index import Index
    from .search import card_fields

    where = ".brain/cache/index.sqlite"
    try:
        index = Index.open(vault, card_fields, full=True)
    except (sqlite3.Error, OSError) as exc:  # not the index file (Index.open copes with that)
        return [Finding("error", where, f"search index unusable: {exc}", "delete .brain/cache/ and run `brain reindex`")]
    try:
        if index.trouble:
            return [Finding("error", where, index.trouble.problem, index.trouble.fix)]
        indexed = index.stats().doc_count
        damage = [row[0] for row in index.db.execute("PRAGMA quick_check(5)")]
    finally:
        index.close()
    if damage != ["ok"]:
        return [Finding("error", where, f"search index damaged: {'; '.join(damage)}", "run `brain reindex`")]
    if indexed != playbook_count:
        return [Finding("error", where, f"search index holds {indexed} cards, Playbooks has {playbook_count}",
                        "run `brain reindex`")]
    return []


@dataclass
class Finding:
    level: str          # "error" or "warning"
    path: str | None
    message: str
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def doctor(vault: Vault) -> list[Finding]:
    """Check settings, folders, every card file, ids and the log; return what is wrong."""
    findings: list[Finding] = []
    try:
        settings = vault.settings
    except BrainError as exc:
        return [Finding("error", ".brain/config.toml", exc.message, "fix the setting or delete the line")]
    for name in ("Playbooks", "Inbox", "WorkingMemory", "logs"):
        if not vault.folder(name).is_dir():
            findings.append(Finding("warning", name + "/", "folder missing", f"run `brain init {vault.root}`"))
    cards, problems = load_cards(vault, CARD_FOLDERS)
    for problem in problems:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        findings.append(Finding("error", where, problem.message, "fix the file by hand; the tool never rewrites it"))
    seen_ids: dict[str, str] = {}
    for card in cards:
        if card.id is None:
            findings.append(Finding("warning", card.rel, "no id", "the first write (e.g. `record`) adds one"))
        elif card.id in seen_ids:
            findings.append(Finding("error", card.rel, f"duplicate id {card.id} (also {seen_ids[card.id]})",
                                    "give one of them a new id"))
        else:
            seen_ids[card.id] = card.rel
        if card.rel.startswith("Playbooks/"):
            if card.type and card.type not in settings.types:
                findings.append(Finding("warning", card.rel, f"unknown type {card.type!r}",
                                        "change it or add it to `types` in .brain/config.toml"))
            if card.domain and card.domain not in settings.domains:
                findings.append(Finding("warning", card.rel, f"unknown domain {card.domain!r}",
                                        "change it or add it to `domains` in .brain/config.toml"))
    for folder in CARD_FOLDERS:
        base = vault.folder(folder)
        for dirpath, dirnames, filenames in os.walk(base) if base.is_dir() else ():
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if name.startswith(".") and name.endswith(".tmp"):
                    findings.append(Finding("warning", vault.rel(Path(dirpath) / name),
                                            "temporary file left by an interrupted write",
                                            "delete it (the card itself is whole)"))
                    continue
                if name.startswith(".") or name.endswith(".md"):
                    continue
                rel = vault.rel(Path(dirpath) / name)
                findings.append(Finding("warning", rel, "not a Markdown card (ignored)",
                                        "move attachments out of the card folders"))
    findings.extend(_check_index(vault, sum(1 for c in cards if c.rel.startswith("Playbooks/"))))
    torn = count_torn_lines(vault)
    if torn:
        findings.append(Finding("warning", "logs/events.jsonl", f"{torn} unreadable line(s) (torn by a crash?)",
                                "harmless: they are skipped; delete them by hand to tidy"))
    return findings

