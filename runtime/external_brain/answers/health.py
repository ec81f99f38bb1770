"""`audit` (docs/api.md: coverage, stale cards, Inbox backlog, working memory) and `doctor` (every
file, setting and log line checked, each problem with its fix). Both only read.

`doctor` also warns about likely secrets already in the vault (`judging.redaction.find_secrets`): each
card, working-memory note and log line that seems to hold one, by path and line, and each file
name; it never shows the secret, and every path it prints is itself redacted."""

from __future__ import annotations

import heapq
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from .. import working_memory
from ..cards import listed_cards, view
from ..errors import BrainError
from ..vault.confidence import (
    References, clocks_after, days_between, decay_since, effective_confidence, own_confidence,
)
from ..vault.events import UnreadableLine, unreadable_lines
from ..vault.valueclass import factory, valueclass
from ..vault.storage import (
    CARD_FOLDERS, LAYOUT, VAULT_FOLDERS, Vault, invisible_char, is_device_name, load_cards, name_key, now,
    symlink_alias,
)

LOW_CONFIDENCE = 0.5
MAX_SECRET_FINDINGS = 50       # lines reported one by one; the rest are counted
LOG_BLOCK_BYTES = 8 << 20      # the log is read for secrets in blocks of whole lines


@valueclass
class AuditReport:
    total: int
    by_domain: dict[str, int]
    by_type: dict[str, int]
    empty_domains: list[str]
    stale: list[dict[str, Any]]
    low_confidence: list[dict[str, Any]]
    inbox: dict[str, Any]
    working_memory: dict[str, Any]
    health: list[dict[str, Any]] = factory(list)
    low_count: int | None = None  # how many cards are low when `low_confidence` holds the first few only

    @property
    def low_total(self) -> int:
        """How many cards are low in confidence (`low_confidence` may list only the lowest)."""
        return len(self.low_confidence) if self.low_count is None else self.low_count

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "low_count"}


def audit(vault: Vault, lowest: int | None = None) -> AuditReport:
    """The vault's audit. `lowest`: how many of the low-confidence cards to describe, lowest
    first (None: all, as `--json` gives them); `low_total` counts them all either way."""
    settings = vault.settings
    refs = References(vault)
    moment = now()
    hidden = 0   # low cards left undescribed (`lowest`)
    if vault.leads_outside("Playbooks") is None:
        total, by_domain, by_type, kinds, cards, problems, hidden = _audited_from_index(vault, refs, moment, lowest)
    else:
        # Trigger: a Playbooks folder that leads outside the vault. Why: the index skips it
        # silently; only load_cards reports it. Outcome: every card is read and looked at.
        cards, problems = listed_cards(vault)
        total = len(cards)
        by_domain = Counter(c.domain or "(none)" for c in cards)
        by_type = Counter(c.type or "(none)" for c in cards)
        kinds = [(c.rel, c.type, c.domain) for c in cards]
    stale, low = [], []
    for card in cards:
        shown = view(card, refs, moment)
        since = decay_since(card, refs)  # the clock decay uses: one rule for every reader
        idle = days_between(since, moment) if since else None
        if idle is not None and idle > settings.stale_after_days:
            stale.append({**shown.summary(), "days_unreferenced": idle})
        if shown.confidence < LOW_CONFIDENCE:
            low.append(shown.summary())
    stale.sort(key=lambda s: -s["days_unreferenced"])
    low.sort(key=lambda s: s["confidence"])
    low_count = None
    if lowest is not None:
        low_count, low = len(low) + hidden, low[:lowest]

    from .insights import open_candidates

    candidates, closed, inbox_problems = open_candidates(vault)
    oldest = min((str(c.meta.get("created", "")) for c in candidates if c.meta.get("created")), default=None)
    inbox = {
        "candidates": len(candidates),
        "search_misses": sum(1 for c in candidates if c.meta.get("source") == "search_miss"),
        "learned": sum(1 for c in candidates if c.meta.get("source") == "learn"),
        "oldest": oldest,
        "closed": closed,
    }
    health = [{"path": p.path, "line": p.line, "problem": p.message} for p in (*problems, *inbox_problems)]
    for rel, card_type, domain in kinds:
        if card_type and card_type not in settings.types:
            health.append({"path": rel, "line": None, "problem": f"unknown type {card_type!r}"})
        if domain and domain not in settings.domains:
            health.append({"path": rel, "line": None, "problem": f"unknown domain {domain!r}"})
    return AuditReport(
        total=total, by_domain=dict(sorted(by_domain.items())), by_type=dict(sorted(by_type.items())),
        empty_domains=[d for d in settings.domains if d not in by_domain],
        stale=stale, low_confidence=low, inbox=inbox,
        working_memory=working_memory.counts(vault), health=health, low_count=low_count,
    )


def _audited_from_index(vault: Vault, refs: References, moment, lowest: int | None = None) -> tuple:
    """What `audit` needs from the search index, with no card parsed and no object per card:
    (total, cards by domain, by type, (path, type, domain) of the cards with a type or domain
    the settings lack, the cards that may be stale or low in confidence, the files skipped, how
    many low cards were left out), cards in `load_cards`' order.

    A card is looked at closely (as an `IndexedCard`) only when its decay clock may have started
    before the earlier of the stale and decay thresholds (`confidence.clocks_after`), or when its
    stored confidence is low and it is among the `lowest` lowest cards (None: all). Any other card shows
    its stored confidence and is not stale: one whose stored confidence is low is counted only."""

    from ..cards import IndexedCard
    from ..search.analysis import card_fields
    from ..search.index import Index

    settings = vault.settings
    make = IndexedCard.from_row

    def cards_of(stored_rows: list[tuple]) -> list:
        return [make(vault, f"{folder}/{name}", (size, mtime, inode), json.loads(meta))
                for folder, name, size, mtime, inode, meta in stored_rows]

    index = Index.open(vault, card_fields, sweep=settings.search.freshness_sweep)
    try:
        with index.reading():
            rows = index.card_clocks()
            problems = index.problems()
            # days_between counts whole days: a clock after this moment is within both thresholds.
            days = min(settings.stale_after_days, settings.confidence.decay_after_days) + 1
            horizon = moment.timestamp() - days * 86_400
            initial = settings.confidence.initial
            unsure, weak = [], []   # the clock may have started early; it did not, but the card is low
            sure = clocks_after([(row[2], row[1], row[6], row[7]) for row in rows], refs, horizon)
            for row, clock_is_late in zip(rows, sure):
                if not clock_is_late:
                    unsure.append(row[0])
                elif (initial if row[5] is None else row[5]) < LOW_CONFIDENCE:
                    weak.append(row)
            cards = cards_of(index.stored_cards(unsure))
            hidden = 0
            if lowest is not None and len(weak) > lowest:
                # Trigger: only the `lowest` are described (the text audit). Why: at 10,000
                # cards thousands may be low, and a view of each was most of `audit`. Outcome: a
                # weak card (its stored confidence is its confidence) is looked at closely only
                # when it is among the `lowest` of every low card, in the order `audit`
                # sorts them (confidence to 4 places, then load_cards' order); the rest are counted.
                params = settings.confidence
                lows = [(round(conf, 4), card.stored_rel.split("/"), None) for card in cards
                        if (conf := effective_confidence(card, refs, moment, params)) < LOW_CONFIDENCE]
                lows += [(round(initial if row[5] is None else row[5], 4), row[1].split("/"), row) for row in weak]
                chosen = [row for _, _, row in heapq.nsmallest(lowest, lows, key=lambda low: low[:2]) if row]
                hidden, weak = len(weak) - len(chosen), chosen
            cards += cards_of(index.stored_cards([row[0] for row in weak]))
    finally:
        index.close()
    by_domain = Counter(row[4] or "(none)" for row in rows)
    by_type = Counter(row[3] or "(none)" for row in rows)
    types, domains = settings.types, settings.domains
    kinds = _in_card_order([(row[1], row[3], row[4]) for row in rows
                            if (row[3] and row[3] not in types) or (row[4] and row[4] not in domains)])
    cards.sort(key=lambda card: card.stored_rel.split("/"))  # load_cards' order, as `indexed_cards`
    problems.sort(key=lambda problem: problem.path.split("/"))
    return len(rows), by_domain, by_type, kinds, cards, problems, hidden


def _in_card_order(kinds: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return sorted(kinds, key=lambda kind: kind[0].split("/"))


def _check_index(vault: Vault, playbook_count: int) -> list[Finding]:
    """Open the search index with a full check (every card's stamp, every folder listed: so it
    is brought up to date, or rebuilt when damaged), run SQLite's own consistency check, and
    check that it covers every card. An index file that cannot be used is one finding, with
    the reason and the fix (`index.Trouble`)."""
    import sqlite3

    from ..search.index import Index
    from ..search.analysis import card_fields

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


def _walk_files(vault: Vault) -> list[Finding]:
    """What the card readers skip without a word: files that are not Markdown, and names that
    are not UTF-8 (no command can name those, so they are left out everywhere and reported here
    once, with the fix). Our own temporary files are removed by `_repair` before this runs."""
    findings: list[Finding] = []
    for folder in (*CARD_FOLDERS, working_memory.FOLDER):
        base = vault.root / folder
        if vault.leads_outside(folder) or not base.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            odd = [d for d in dirnames if _undecodable(d)]
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in odd)
            for name in sorted(filenames) + odd:
                rel = vault.rel(Path(dirpath) / name)
                if _undecodable(name):
                    shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
                    findings.append(Finding("warning", shown, "name is not UTF-8: every command skips it",
                                            "rename it to a UTF-8 name (e.g. re-type it in your file manager)"))
                elif not name.startswith(".") and not name.endswith(".md") and folder != working_memory.FOLDER:
                    findings.append(Finding("warning", rel, "not a Markdown card (ignored)",
                                            "move attachments out of the card folders"))
            findings.extend(_unportable_names(vault, Path(dirpath), [*dirnames, *filenames]))
    return findings


def _unportable_names(vault: Vault, folder: Path, names: list[str]) -> list[Finding]:
    """Names in one folder that a checkout on another OS cannot hold as they are (docs/card-format.md, A card: the
    tool never writes one; a person, an old version or a merge of two clones may have): names
    that differ only in case or Unicode normalisation (one file on macOS and Windows: a clone
    there loses one of them), Windows device names, characters that show nothing."""
    findings: list[Finding] = []
    same: dict[str, list[str]] = {}
    for name in sorted(names):
        if name.startswith(".") or _undecodable(name):
            continue
        same.setdefault(name_key(name), []).append(name)
        rel = vault.rel(folder / name)
        if is_device_name(name):
            findings.append(Finding("warning", rel, "a device name on Windows (CON, PRN, AUX, NUL, COM1-9, LPT1-9): "
                                    "a clone there cannot check it out", "rename it (e.g. add a word to it)"))
        char = invisible_char(name)
        if char is not None:
            findings.append(Finding("warning", rel, f"name holds U+{ord(char):04X}, a character that shows nothing "
                                    "or turns text around: it looks like a name it is not", "rename it without it"))
    for group in same.values():
        if len(group) > 1:
            shown = ", ".join(vault.rel(folder / name) for name in group)
            findings.append(Finding("warning", vault.rel(folder / group[0]),
                                    f"names differ only in case or Unicode normalisation ({shown}): one file on "
                                    "macOS and Windows, so a clone there keeps only one of them",
                                    "rename all but one (`brain update CARD --title ...` renames a card)"))
    return findings


def _undecodable(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


@valueclass
class Finding:
    level: str          # "error" or "warning"
    path: str | None
    message: str
    fix: str

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def doctor(vault: Vault) -> list[Finding]:
    """Check the vault's layout, settings, folders, every file in the card and working-memory
    folders, ids and the log; return what is wrong."""
    findings: list[Finding] = []
    outside = {name: vault.leads_outside(name) for name in LAYOUT}
    for name, real in outside.items():
        if real is not None and not any(name.startswith(f"{other}/") and outside[other] for other in outside):
            kind = "file" if name.endswith(".jsonl") else "folder"
            findings.append(Finding("error", name if kind == "file" else name + "/",
                                    f"leads outside the vault (to {real}): commands refuse to write there",
                                    f"make it a real {kind} inside the vault (or a link to one inside it)"))
    if outside[".brain"]:
        return findings  # the settings, cache and locks live there: nothing more can be checked safely
    try:
        settings = vault.settings
    except BrainError as exc:
        return [*findings, _config_finding(vault, exc)]
    findings.extend(_repair(vault))
    for name in VAULT_FOLDERS:
        folder = vault.root / name
        if outside[name]:
            continue
        if os.path.lexists(folder) and not folder.is_dir():
            findings.append(Finding("error", name + "/", "not a folder", f"move it away and run `brain init {vault.root}`"))
        elif not folder.is_dir():
            findings.append(Finding("warning", name + "/", "folder missing", f"run `brain init {vault.root}`"))
    cards, problems = load_cards(vault, CARD_FOLDERS)
    memory_cards, memory_problems = load_cards(vault, (working_memory.FOLDER,))
    for problem in (*problems, *memory_problems):
        if problem.path.endswith("/"):
            continue  # a folder leading outside the vault: reported above
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        findings.append(_merged_line_by_line(vault, problem, where)
                        or Finding("error", where, problem.message, "fix the file by hand; the tool never rewrites it"))
    from ..search.keyword import HIDDEN_STATUSES  # (doctor's index check imports search anyway)

    tool_statuses = {"active", *HIDDEN_STATUSES}
    seen_ids: dict[str, str] = {}
    own_statuses: dict[str, list[str]] = {}   # a status the tool does not write -> the cards with it
    for card in (*cards, *memory_cards):
        findings.extend(_dates_outside_the_window(card))
    for card in cards:
        if card.id is None:
            findings.append(Finding("warning", card.rel, "no id", "the first write (e.g. `record`) adds one"))
        elif card.id in seen_ids:
            other = seen_ids[card.id]
            if {card.rel.split("/", 1)[0], other.split("/", 1)[0]} == {"Inbox", "Playbooks"}:
                # Trigger: a candidate in Inbox/ with the id of a card in Playbooks/: another clone
                # promoted it (or made the same candidate and promoted it), merged through git. Why:
                # the next write settles it (vault/settle.py retires the candidate), so it is a merge
                # not settled yet, not damage. Outcome: a warning naming the step that settles it.
                inbox = card.rel if card.rel.startswith("Inbox/") else other
                findings.append(Finding("warning", inbox, f"an Inbox candidate already promoted in another clone "
                                        f"(id {card.id}, also {card.rel if inbox == other else other})",
                                        "`brain doctor --fix` (or any write) retires the candidate"))
            elif (alias := symlink_alias(vault, card.rel, other)) is not None:
                link, target = alias
                findings.append(Finding("error", link, f"a symlink to {target}: the same card under two names "
                                        f"(id {card.id} twice); `record` refuses both",
                                        f"delete the link (`rm {link}`)"))
            else:
                findings.append(Finding("error", card.rel, f"duplicate id {card.id} (also {other})",
                                        "delete the `id:` line of the one that is a copy; the next write to "
                                        "it (e.g. `record`) gives it an id of its own"))
        else:
            seen_ids[card.id] = card.rel
        own = own_confidence(card)
        if own is not None:
            shown = own if isinstance(own, str) else json.dumps(own, ensure_ascii=False)
            findings.append(Finding("warning", card.rel, f"confidence: {shown} is your own value, not the tool's "
                                    "number from 0 to 1: `record` will replace it (and say so; `undo` puts it back)",
                                    "keep your rating under another key (e.g. `rating:`), or leave it to be replaced"))
        if card.rel.startswith("Playbooks/"):
            if card.type and card.type not in settings.types:
                findings.append(Finding("warning", card.rel, f"unknown type {card.type!r}",
                                        "change it or add it to `types` in .brain/config.toml"))
            if card.domain and card.domain not in settings.domains:
                findings.append(Finding("warning", card.rel, f"unknown domain {card.domain!r}",
                                        "change it or add it to `domains` in .brain/config.toml"))
            if card.status not in tool_statuses:
                own_statuses.setdefault(card.status, []).append(card.rel)
    # Trigger: a note's own status (Obsidian's `in-progress`, `✅ done`). Why: every door shows it
    # like an active card (`search.keyword.in_service`), which surprises whoever expected `done` to
    # hide it. Outcome: one note per value, not one per card: it is a hint, not a fault.
    for status, rels in own_statuses.items():
        more = f" (and {len(rels) - 1} more card(s))" if len(rels) > 1 else ""
        findings.append(Finding("warning", rels[0], f"status {status!r}{more} is not one of the tool's "
                                f"({', '.join(sorted(tool_statuses))}): search, brief, the hooks and every "
                                "door show it like an active card",
                                "nothing to do if it is your own; `status: archived` hides a card from search"))
    findings.extend(_superseded_by_no_card(cards))
    findings.extend(_walk_files(vault))
    if not outside[".brain/cache"]:
        findings.extend(_check_index(vault, sum(1 for c in cards if c.rel.startswith("Playbooks/"))))
    if settings.embeddings.provider:
        findings.extend(_check_vectors(vault))
    log = vault.root / "logs" / "events.jsonl"
    readable = not outside["logs/events.jsonl"] and log.is_file()
    if os.path.isdir(vault.root / "logs") and os.path.lexists(log) and not log.is_file():
        findings.append(Finding("error", "logs/events.jsonl", "not a file: every write command refuses to run",
                                "move it away (a new log is started)"))
    if readable:
        findings.extend(_check_replay(vault, cards))
    findings.extend(_check_merges(cards))
    findings.extend(_check_merge_driver(vault))
    if not outside[".brain/cache"]:
        findings.extend(_check_links(vault))
    if readable:
        findings.extend(_unreadable_line_finding(line) for line in unreadable_lines(vault))
    findings.extend(_check_secrets(vault, [*cards, *memory_cards], [p.path for p in (*problems, *memory_problems)],
                                   log if readable else None))
    return _without_secrets(findings)


def _superseded_by_no_card(cards: list) -> list[Finding]:
    """A card `superseded_by` an id no card has: the card that replaced it was deleted (the head
    of a chain of supersedes; `delete` closes a chain around a card in its middle), or the key
    was edited by hand. The card stays out of search and `brief`, and nothing took its place."""
    from shlex import quote

    ids = {card.id for card in cards if card.id}
    findings = []
    for card in cards:
        later = card.text_field("superseded_by")
        if later and later not in ids and card.status in ("superseded", "archived"):
            findings.append(Finding("warning", card.rel, f"superseded by {later}, which no card is: nothing "
                                    "replaces it, and search leaves it out",
                                    f"`brain update {quote(card.rel)} --status active` if it holds again, "
                                    f"`brain history {later}` to restore the other, or `brain delete` it too"))
    return findings


def _unreadable_line_finding(line: UnreadableLine) -> Finding:
    """One line of the log that is not a whole event (docs/decisions.md, "Torn log lines").

    The log's last line: a write cut short by a crash, tolerated (every reader skips it and the
    next append starts a new line; the roll-forward above has already finished a logged write's
    own), so a warning. Any earlier line: something was appended after it and it was never
    finished, so the log holds a line that is no event: an error, which says which event the
    fragment names and whether that event is also logged whole (nothing lost) or not (an event
    missing from the log)."""
    where = f"logs/events.jsonl:{line.line}"
    shown = [field for field in (line.kind, line.card) if field]
    named = f"event {line.eid}" + (f" ({', '.join(shown)})" if shown else "")
    if line.edited:
        what = ("whole JSON but no event any reader takes (its `event` missing, or it or its `eid` not text: a hand edit?)"
                + (f", naming event {line.eid}" if line.eid else ""))
    elif line.eid is not None and line.whole:
        what = f"a torn copy of {named}, which is also logged whole (nothing is lost)"
    elif line.eid is not None:
        what = f"a torn {named}, which is not logged whole: that event is missing from the log"
    elif line.event_start:
        what = "a torn event, cut before its id: which event it was cannot be told"
    else:
        what = "not an event of this tool (a hand edit or another program's write?)"
    if line.last:
        cut = "an event cut short (a write killed mid-line)" if line.event_start else "not a whole event"
        return Finding("warning", where, f"the log's last line (byte {line.offset}, {line.size} bytes) is {cut}, "
                       f"skipped by every reader: {what}",
                       "nothing to do now: the next write starts a new line; delete it by hand to tidy (once a "
                       "write follows it, doctor reports it as an error)")
    if line.eid is not None and not line.whole and not line.edited:
        look = f"`brain history {line.card}` shows what the log holds for that card" if line.card else \
            "the lines around it show what was happening"
        fix = f"{look}; then delete line {line.line} by hand (readers skip it)"
    else:
        fix = f"delete line {line.line} by hand (readers skip it)"
    return Finding("error", where, f"line at byte {line.offset} ({line.size} bytes) is not a whole event: {what}", fix)


def _dates_outside_the_window(card) -> list[Finding]:
    """Each top-level date of the card that reads as a time outside the window every command
    computes with (`updated: 0001-01-01`): commands read it as the nearer end of the window
    (`storage.parse_time`), so it is a warning, with the file and line for the person to fix."""
    from ..vault.frontmatter import DATE_KEYS
    from ..vault.storage import EARLIEST, LATEST, iso, outside_window, parse_time

    head = card.text[:len(card.text) - len(card.body)]
    found = []
    for key in DATE_KEYS:
        value = card.meta.get(key)
        if value is None or isinstance(value, (dict, list)) or not outside_window(value):
            continue
        at = re.search(rf"^{key}[ \t]*:", head, re.MULTILINE)
        line = head.count("\n", 0, at.start()) + 1 if at else None
        found.append((line or 0, Finding(
            "warning", f"{card.rel}:{line}" if line else card.rel,
            f"{key} {value} is outside the dates the tool reads ({EARLIEST.date()} to {LATEST.date()}); "
            f"every command reads it as {iso(parse_time(value))}", f"write the {key} you mean")))
    return [finding for _, finding in sorted(found, key=lambda pair: pair[0])]


def _check_secrets(vault: Vault, cards: list, other_paths: list[str], log: Path | None) -> list[Finding]:
    """Likely secrets already written: one warning per line of a card, a working-memory note or
    the log that seems to hold one (path and line, the kinds, never the value), and one per file
    name that seems to; after `MAX_SECRET_FINDINGS` lines, one more finding counts the rest."""
    from ..judging.redaction import find_secrets

    lines: list[tuple[str, int, list[str], str]] = []   # shown path, line, kinds, fix
    names: list[Finding] = []
    in_card = ("remove it from the file (`brain update` or by hand) and rotate it: git history keeps what was "
               "committed; nothing to do if it is yours to keep there")
    for rel in [c.rel for c in cards] + other_paths:
        kinds = [s.kind for s in find_secrets(rel)]
        if kinds:
            names.append(Finding("warning", _shown(rel), f"the file name looks like it holds {_kinds(kinds)} "
                                 "(not shown here)", "rename the file and rotate the secret: git history keeps the name"))
    for card in cards:
        lines.extend((_shown(card.rel), line, kinds, in_card) for line, kinds in _secret_lines(card.text, find_secrets))
    if log is not None:
        in_log = ("rotate it; the log is append-only: blank the value on that line by hand if it must go "
                  "(git history keeps what was committed)")
        lines.extend(("logs/events.jsonl", line, kinds, in_log) for line, kinds in _log_secret_lines(log, find_secrets))
    findings = names + [Finding("warning", f"{path}:{line}", f"looks like {_kinds(kinds)} (not shown here)", fix)
                        for path, line, kinds, fix in lines[:MAX_SECRET_FINDINGS]]
    if len(lines) > MAX_SECRET_FINDINGS:
        more = len(lines) - MAX_SECRET_FINDINGS
        findings.append(Finding("warning", None, f"{more} more line(s) look like they hold secrets (not listed)",
                                "deal with the ones above, then run `brain doctor` again"))
    return findings


def _secret_lines(text: str, find_secrets, first_line: int = 1) -> list[tuple[int, list[str]]]:
    """(line number, kinds) of each line of `text` where a secret starts."""
    out: list[tuple[int, list[str]]] = []
    line, at = first_line, 0
    for secret in find_secrets(text):
        line += text.count("\n", at, secret.start)
        at = secret.start
        if out and out[-1][0] == line:
            out[-1][1].append(secret.kind)
        else:
            out.append((line, [secret.kind]))
    return out


def _log_secret_lines(log: Path, find_secrets) -> list[tuple[int, list[str]]]:
    """`_secret_lines` of the event log, read in blocks of whole lines (it may be large)."""
    out: list[tuple[int, list[str]]] = []
    line, rest = 1, b""
    try:
        handle = log.open("rb")
    except OSError:
        return out   # unreadable: the log checks above say so
    with handle:
        while True:
            block = handle.read(LOG_BLOCK_BYTES)
            data = rest + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            whole, rest = data[:cut], data[cut:]
            if whole:
                out.extend(_secret_lines(whole.decode("utf-8", "replace"), find_secrets, line))
                line += whole.count(b"\n")
            if not block:
                return out


def _kinds(kinds: list[str]) -> str:
    named = list(dict.fromkeys(kinds))
    return " and ".join(f"an {k}" if k[0] in "AEIOUaeiou" else f"a {k}" for k in named)


def _shown(rel: str) -> str:
    from ..judging.redaction import redact_secrets

    return redact_secrets(rel)


def _without_secrets(findings: list[Finding]) -> list[Finding]:
    """Doctor never prints a secret, not even in a file name it reports for another reason."""
    from ..judging.redaction import redact_secrets

    return [Finding(f.level, redact_secrets(f.path) if f.path else f.path, redact_secrets(f.message),
                    redact_secrets(f.fix)) for f in findings]


def _check_links(vault: Vault) -> list[Finding]:
    """Links to missing cards and `related` wikilinks that name no card (docs/card-format.md: reported,
    never a crash). Warnings: the card is fine; only the link leads nowhere."""
    from .insights import broken_links

    from shlex import quote

    findings = []
    for link in broken_links(vault):
        unlink = f"`brain unlink {quote(link['source'])} {quote(link['target'])}`"
        if link["via"] == "links":
            findings.append(Finding("warning", link["source"], f"links to missing card {link['target']} "
                                    f"({link['rel']})", f"{unlink} or restore the card (`brain history`, `brain undo`)"))
        else:
            findings.append(Finding("warning", link["source"], f"related wikilink [[{link['target']}]] names no "
                                    "card in Playbooks/", f"{unlink}, fix the name or create the card"))
    return findings



def _check_vectors(vault: Vault) -> list[Finding]:
    """The vector cache against the cards, when a provider is configured: unreadable, another
    model's, cards without a current vector, a sync that stopped on a provider failure. Never
    calls the provider (doctor must not wait on the network)."""
    from ..search.semantic import vector_cache_status

    where = ".brain/cache/vectors.sqlite"
    status = vector_cache_status(vault)
    rebuild = "run `brain reindex --embeddings`"
    if status.damaged:
        return [Finding("error", where, f"vector cache unreadable: {status.damaged}",
                        "delete it and " + rebuild)]
    findings = []
    if status.foreign:
        findings.append(Finding("warning", where, f"the cached vectors are of another embedding configuration "
                                f"(model {status.foreign}), not of [embeddings] now (model {status.model}): "
                                "semantic and hybrid search fall back to keyword", rebuild))
    elif status.cards and not status.current:
        findings.append(Finding("warning", where, f"no card vectors cached for model {status.model}: "
                                "semantic and hybrid search fall back to keyword", rebuild))
    elif status.stale or status.missing:
        findings.append(Finding("warning", where, f"{status.stale + status.missing} of {status.cards} card(s) "
                                f"have no current vector for model {status.model} ({status.dimensions} "
                                f"dimensions): {status.stale} stale, {status.missing} missing; they are found "
                                "by keyword only", rebuild + " (searches also catch up in the background "
                                "while the provider answers)"))
    if status.failed_at:
        from datetime import datetime

        moment = datetime.fromtimestamp(status.failed_at).astimezone().isoformat(timespec="seconds")
        findings.append(Finding("warning", where, f"the last embedding run stopped on a provider failure "
                                f"at {moment}", "check the provider ([embeddings] url or command) is up, then "
                                + rebuild))
    return findings


def _repair(vault: Vault) -> list[Finding]:
    """Finish what killed writers left (doctor is the one read command that repairs: the
    repairs only complete operations that were already decided and logged, see journal.py)."""
    from ..vault.journal import conflict_files, repair

    try:
        recovered, removed = repair(vault)
    except (BrainError, OSError) as exc:
        return [Finding("error", ".brain/locks/write.lock", f"cannot take the write lock to repair: "
                        f"{getattr(exc, 'message', exc)}", "make the vault writable, then run `brain doctor` again")]
    findings = [Finding("warning", ", ".join(r.files) or ".brain/journal.json",
                        f"finished an operation a killed process left half done (logged {', '.join(r.events) or 'nothing new'})",
                        "nothing to do: repaired") for r in recovered if r.files or r.events]
    findings += [Finding("warning", path, "temporary file left by an interrupted write: removed",
                         "nothing to do: repaired") for path in removed]
    findings += [Finding("error", vault.rel(path), "a half-done operation met a file edited since; the file "
                         "was kept as edited", "compare the file with the journal, then delete the journal")
                 for path in conflict_files(vault)]
    return findings


def _check_replay(vault: Vault, cards: list) -> list[Finding]:
    """Every card whose stored confidence differs from the replay of the log (docs/card-format.md, The event log: the log is
    the truth for feedback; `confidence.replay_feedback`), e.g. after a git merge that no write
    has settled yet, or a value set by hand."""
    from ..vault.confidence import replay_feedback, replayed_for
    from ..vault.events import read_events

    replayed = replay_feedback(read_events(vault), vault.settings.confidence)
    findings = []
    for card in cards:
        want = replayed_for(card, replayed)
        have = card.stored_confidence
        if want is not None and have is not None and abs(have - want) > 1e-9:
            findings.append(Finding("warning", card.rel,
                                    f"confidence {have:g} differs from {want:g}, the replay of its logged feedback "
                                    "(a git merge not settled yet, or a value set by hand)",
                                    "`brain doctor --fix` sets it to the logged value (after a git merge, any write "
                                    "does too)"))
    return findings


def _config_finding(vault: Vault, exc: BrainError) -> Finding:
    """The settings error as a finding: `.brain/config.toml[:LINE]` once (the error's message
    opens with the file's whole path), and one fix (a file TOML cannot read: the error's own)."""
    line = exc.details.get("line")
    message = exc.message
    opening = f"{vault.brain_dir / 'config.toml'}" + (f":{line}: " if line else ": ")
    if message.startswith(opening):
        message = message[len(opening):]
    if line:
        return Finding("error", f".brain/config.toml:{line}", message, "fix the setting or delete the line")
    problem, _, fix = message.rpartition("; ")
    return Finding("error", ".brain/config.toml", problem or message, fix if problem else "fix the file or delete it "
                                                                                        "for defaults")


def _check_merge_driver(vault: Vault) -> list[Finding]:
    """The merge driver `brain init` registered in the clone's git config, when git can no longer
    run it (README, "Sharing a vault with git")."""
    from ..evolution.sharing import missing_driver_program

    missing = missing_driver_program(vault)
    if missing is None:
        return []
    return [Finding("warning", None, f"git's merge driver for cards runs {missing}, which is not there (the checkout "
                                     "or its Python moved?): a merge of cards both clones changed stops as a conflict",
                    f"`brain init {vault.root}` registers this installation")]


def _merged_line_by_line(vault: Vault, problem, where: str) -> Finding | None:
    """A card file that does not parse because git left conflict markers in its frontmatter, or None.
    Trigger: a clone without the merge driver (`brain init` never ran there) merged a card both sides
    changed on one line (`confidence:`, `updated:`). Why: "bad frontmatter" hides that it is a merge,
    and git can merge the file again with the driver while the merge is open. Outcome: named as a
    conflict, with that way back first."""
    from ..vault.merge import conflict_lines
    from ..vault.storage import read_card_text

    try:
        text = read_card_text(vault, vault.root / problem.path)[0]   # the safe reader: a FIFO is never waited on
    except (OSError, BrainError):
        return None
    if not conflict_lines(text) or not text.startswith("---"):
        return None
    return Finding("error", where, f"unresolved git merge conflict in the frontmatter ({problem.message})",
                   f"`brain init {vault.root}`, then `git -C {vault.root} checkout -m {problem.path}` merges it again "
                   "key by key (before the merge is committed); or keep the right lines, delete the <<<<<<< "
                   "======= >>>>>>> lines, then `git add` the card")


def _check_merges(cards: list) -> list[Finding]:
    """What a git merge left in cards: conflict markers in a body (both clones changed the same
    lines), and cards kept inside another until a write moves them to their own file."""
    from ..vault.merge import conflict_lines, split_guests

    findings = []
    for card in cards:
        lines = conflict_lines(card.text)
        if lines:
            findings.append(Finding("error", f"{card.rel}:{lines[0]}",
                                    f"unresolved git merge conflict in the body ({len(lines)} conflict(s); both "
                                    "clones changed the same lines)", "keep the right text, delete the <<<<<<< "
                                    "======= >>>>>>> lines, then `git add` the card"))
        guests = split_guests(card.text)[1]
        if guests:
            findings.append(Finding("warning", card.rel, f"holds {len(guests)} other card(s) that had the same file "
                                    "name in another clone (kept whole by the git merge)",
                                    "`brain doctor --fix` (or any write) moves each to a file of its own"))
    return findings
