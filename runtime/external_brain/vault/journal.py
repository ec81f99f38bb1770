"""Logged writes that survive a kill at any instant: the vault's write lock and its journal.

Every operation that changes card files and logs an event (record, create, promote, learn,
remember, forget, a search miss, and the lifecycle operations that build on them) runs inside
`writing(vault)` and ends with one `Writer.commit(effects, events)`:

1. the whole intent — each file's text before and after, and the events — is written to
   `.brain/journal.json` (atomically, fsynced);
2. the files are written (each atomically) or removed;
3. the events are appended to the log;
4. the journal is removed.

A process killed anywhere in 2-4 leaves the journal behind, and the next logged write (or
`doctor`) rolls it forward before doing anything else: files still at their `before` text get
their `after` text, and events not yet in the log as whole lines are appended (a torn fragment
of an event, the killed writer's append cut short, is not the event: `events.logged`; the
append finishes that torn line rather than leave it). Killed before 1 completes, the
operation simply did not happen. Either way the files and the log agree: the stored confidence
always equals a replay of the log, and a promotion is never half done.

Why one lock for the whole vault: every logged write holds it from its read to the end of its
commit, so at most one journal exists, and a journal found by a holder of the lock belongs to a
process that died (a live owner would still hold the lock). Recovery needs no guessing about
who is alive. Logged writes are short (a few ms), so serialising them costs nothing an agent
notices; reads never take this lock.

A file a person edited between the crash and the recovery (neither its `before` nor its `after`
text) is left as the person wrote it: the journal is kept beside it as
`.brain/journal-conflict-<eid>.json` for `doctor` to report, and its events are logged only for
the files that did take the change. Files are the truth.

Two rules for vaults shared through git (docs/decisions.md, "Sharing a vault through git"):
- A card an operation removes for good (delete, promote's candidate, an undo of a create) is
  kept as `.brain/deleted/<Playbooks|Inbox>/<id>.md` (its committed text when git has it), in the
  same operation and in its event's `files` and `kept_in`. Git then sees a rename, not a
  deletion: another clone's edit of the card follows it there when the clones merge, instead of
  stopping the merge with a modify/delete conflict. A card renamed in its folder (the same id
  written there) is a rename already and gets no copy.
- Before a write, `writing` settles the vault when the log changed since this clone last
  settled by more than reads append (vault/settle.py): after a merge, the first write makes
  every card agree with the merged log, in an operation of its own (`settled`).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any, Iterator

from ..errors import BrainError
from .events import append_records, log_size, logged, new_event
from .records import record
from .storage import CARD_FOLDERS, Vault, atomic_write, current_bytes, locked

JOURNAL = "journal.json"


@record
class Effect:
    """One file change: `path` (absolute, inside the vault) goes from `before` (the text the
    operation read; None = the file must not exist) to `after` (None = remove it)."""

    path: Path
    before: str | bytes | None
    after: str | None


@record
class Recovery:
    """What a roll-forward did: files it completed, events it logged, files left in conflict."""

    eid: str
    files: list[str]
    events: list[str]
    conflicts: list[str]


def fingerprint(text: str | bytes | None) -> str | None:
    """Length and CRC-32 of a file's content: enough to tell the before and after texts of one
    operation from each other and from a person's edit (nothing adversarial is at stake)."""
    if text is None:
        return None
    data = text.encode("utf-8") if isinstance(text, str) else text
    return f"{len(data)}:{zlib.crc32(data):08x}"


def undo_files(vault: Vault, effects: list[Effect]) -> list[dict[str, Any]]:
    """What an event needs so that `undo` can reverse its effects: each file's whole text
    before (None: it did not exist) and the fingerprint of its text after (None: removed)."""
    out = []
    for effect in effects:
        before = effect.before.decode("utf-8") if isinstance(effect.before, bytes) else effect.before
        out.append({"path": vault.rel(effect.path), "before": before, "after": fingerprint(effect.after)})
    return out


class Writer:
    """The holder of the vault's write lock (see `writing`)."""

    def __init__(self, vault: Vault, recovered: list[Recovery]) -> None:
        self.vault = vault
        self.recovered = recovered
        self.settled = False   # the cards agreed with the log when this writer began (see settle)

    def settle(self, force: bool = False):
        """Make the cards agree with the log (vault/settle.py) when it changed since this clone
        last did (`force`: always), as one operation; returns its `SettlePlan`, or None when it
        was not due. The writes after it in this lock then keep the mark of a settled log."""
        from .settle import mark_settled, plan_settle, settle_due

        vault = self.vault
        if not force and not settle_due(vault):
            self.settled = True
            return None
        plan = plan_settle(vault)
        if plan.changes:
            effects = [Effect(path, before, after) for path, before, after in plan.changes]
            self.commit(effects, [new_event("settled", confidence=plan.confidence or None, split=plan.split or None,
                                            unlinked=plan.unlinked or None, promoted=plan.promoted or None,
                                            files=undo_files(vault, effects))])
        mark_settled(vault)
        self.settled = True
        return plan

    def commit(self, effects: list[Effect], events: list[dict[str, Any]],
               sync_once: bool = False) -> list[dict[str, Any]]:
        """Apply `effects` and log `events` (made with `events.new_event`) as one operation
        that a kill at any instant cannot leave half done. Returns the events.

        `sync_once` (for bulk writes such as `import`): the files are written without a
        per-file fsync and made durable by one `os.sync()` before the events are logged and the
        journal removed. Each file is still replaced atomically (a kill leaves it old or new),
        and the journal still holds the whole intent until everything is on disk; two fsyncs
        per file cost ~10 ms each, which made a 10,000-card import take minutes."""
        vault = self.vault
        effects = _kept_as_deleted(vault, effects, events)
        entry = {
            "events": events,
            "log_size": log_size(vault),
            "files": [{"path": vault.rel(e.path), "before": fingerprint(e.before), "after": e.after,
                       "after_print": fingerprint(e.after)} for e in effects],
        }
        journal = vault.brain_dir / JOURNAL
        atomic_write(journal, json.dumps(entry, ensure_ascii=False))
        _failpoint("journaled")
        applied: list[Effect] = []
        try:
            for effect in effects:
                _apply(effect.path, effect.after, durable=not sync_once)
                applied.append(effect)
                _failpoint("applied")
            if sync_once and effects:
                os.sync()
            append_records(vault, events)
        except BaseException:
            # Trigger: the system refused a write (a full disk, a folder that is a file) — a
            # kill never gets here. Why: left in place, the journal would make every later write
            # retry this one first and fail the same way. Outcome: the files written so far go
            # back to what the operation read, the journal goes, and the error is raised; if
            # even that fails, the journal stays and a later write finishes the operation.
            with contextlib.suppress(OSError):
                for effect in reversed(applied):
                    _apply(effect.path, effect.before)
                os.unlink(journal)
            raise
        _failpoint("logged")
        os.unlink(journal)
        if self.settled:
            from .settle import mark_settled

            mark_settled(vault)   # what this clone's own writer logged leaves the cards agreeing
        return events


@contextlib.contextmanager
def writing(vault: Vault, settle: bool = True) -> Iterator[Writer]:
    """Hold the vault's write lock for a read-modify-write-and-log, after rolling forward any
    operation a killed process left half done and, with `settle`, settling the vault when a
    merge changed the log (`Writer.settle`). A read's own write (a search miss, a purge of
    expired working memory) passes `settle=False`: reads never change a card in Playbooks/."""
    with locked(vault, "write"):
        writer = Writer(vault, recover(vault))
        if not settle:
            from .settle import settle_due

            # A read's write settles nothing, but when the cards agreed with the log as it began,
            # its own event keeps them agreeing: the mark moves with it (else the next write would
            # take that event for a merge's and settle the whole vault for nothing).
            writer.settled = not settle_due(vault)
        else:
            try:
                plan = writer.settle()
            except (BrainError, OSError) as exc:
                # Trigger: a card or the log could not be read or written while settling. Why:
                # the write asked for does not depend on it. Outcome: it goes ahead, the mark
                # is not moved (the next write tries again), and the caller is told.
                vault.notices.append(f"could not settle the vault after a merge: {getattr(exc, 'message', exc)}; "
                                     "run `brain doctor --fix`")
            else:
                if plan is not None and plan.changes:
                    vault.notices.append(f"the log changed (a git merge?): {plan.summary()} (event `settled`)")
        yield writer


def _kept_as_deleted(vault: Vault, effects: list[Effect], events: list[dict[str, Any]]) -> list[Effect]:
    """`effects` plus a copy in `.brain/deleted/<folder>/<id>.md` of each card they remove for good
    (see the module docstring), added to the `files` of the first event that has them."""
    removed = [e for e in effects if e.after is None and e.before is not None and _card_folder(vault, e.path)]
    if not removed:
        return effects
    from . import frontmatter
    from .storage import DELETED, Card, derived_id

    def card_id(path: Path, text: str | bytes) -> str:
        text = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        try:
            value = frontmatter.parse(text).data.get("id")
        except BrainError:
            value = None
        if value in (None, "") or isinstance(value, (list, dict)) or not re.fullmatch(r"[0-9A-Za-z-]{1,64}", str(value)):
            return derived_id(Card(vault, path, text, {}, ""))
        return str(value)

    written = {(_card_folder(vault, e.path), card_id(e.path, e.after)) for e in effects
               if e.after is not None and _card_folder(vault, e.path)}
    taken = {e.path for e in effects}
    added: list[Effect] = []
    kept: dict[str, str] = {}
    for effect in removed:
        folder = _card_folder(vault, effect.path)
        known = card_id(effect.path, effect.before)
        if (folder, known) in written:
            continue   # renamed within its folder: git follows a rename by itself
        # One name per card and folder, the same in every clone that removes it, so two clones
        # removing one card make the same rename.
        target = vault.root / DELETED / folder / f"{known}.md"
        number = 2
        while os.path.lexists(target) or target in taken:
            target = vault.root / DELETED / folder / f"{known}_{number}.md"
            number += 1
        taken.add(target)
        text = effect.before.decode("utf-8") if isinstance(effect.before, bytes) else effect.before
        committed = _committed_text(effect.path)
        # The committed text only when it is this card's (the same id): a path may have held
        # another card since (a candidate promoted, then learned again under a new id).
        same = committed is not None and card_id(effect.path, committed) == known
        added.append(Effect(target, None, committed if same else text))
        kept[vault.rel(effect.path)] = vault.rel(target)
    for event in events if added else ():
        if isinstance(event.get("files"), list):
            event["files"] = [*event["files"], *undo_files(vault, added)]
            event["kept_in"] = kept   # removed card -> its copy
            break
    return [*effects, *added]


def _committed_text(path: Path) -> str | None:
    """The card's text as last committed to git (`HEAD`), when the vault is in a git work tree.

    Trigger: a card removed for good, in a git work tree. Why: git pairs a removed file with its
    copy only when their texts are at least half alike (its rename detection), and what it
    compares is the text both clones last shared: a small card that this clone changed much
    since (links, status) and then deleted read as a deletion, and another clone's edit of it
    stopped the merge. The committed text is at least as near to that shared text as the text
    deleted. Outcome: the copy holds the committed text (the text deleted is in the log, for
    `undo`); None (no git, no repository, never committed) keeps the text deleted."""
    import subprocess

    try:
        done = subprocess.run(["git", "-C", str(path.parent), "cat-file", "blob", f"HEAD:./{path.name}"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    try:
        return done.stdout.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _card_folder(vault: Vault, path: Path) -> str | None:
    """`Playbooks` or `Inbox` when `path` is in that card folder, else None."""
    top = vault.rel(path).split("/", 1)[0]
    return top if top in CARD_FOLDERS else None


def recover(vault: Vault) -> list[Recovery]:
    """Roll forward the journal a killed writer left, if any. The caller holds the write lock."""
    journal = vault.brain_dir / JOURNAL
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return []
    try:
        entry = json.loads(data)
        files, events = entry["files"], entry["events"]
    except (ValueError, KeyError, TypeError, RecursionError):
        # Written atomically, so this is not a torn journal but a foreign or hand-edited file:
        # nothing in it can be trusted to apply. Kept for doctor to show, out of the way.
        os.replace(journal, vault.brain_dir / f"journal-conflict-unreadable-{os.getpid()}.json")
        return []
    done, conflicts = [], []
    for item in files:
        path = vault.root / item["path"]
        try:
            current = current_bytes(vault, path)
        except BrainError:
            current = b"\0not a regular file"  # never matches a fingerprint: left alone, kept as a conflict
        now_print = fingerprint(current)
        if now_print == item["after_print"]:
            done.append(item["path"])
        elif now_print == item["before"]:
            _apply(path, item["after"])
            done.append(item["path"])
        else:
            conflicts.append(item["path"])  # a person's edit since the crash: theirs wins
    eid = events[0]["eid"] if events else "none"
    wanted = [e for e in events if e.get("card") not in conflicts]
    since = entry.get("log_size", 0)
    missing = [e for e in wanted if not logged(vault, e["eid"], since)]
    if missing:
        append_records(vault, missing, resume_from=since)  # finishes the killed writer's torn line, if any
    if conflicts:
        os.replace(journal, vault.brain_dir / f"journal-conflict-{eid}.json")
    else:
        os.unlink(journal)
    return [Recovery(eid, done, [e["event"] for e in missing], conflicts)]


def conflict_files(vault: Vault) -> list[Path]:
    """Journals kept because a person's edit met a half-done operation (for `doctor`)."""
    if not vault.brain_dir.is_dir():
        return []
    return sorted(vault.brain_dir.glob("journal-conflict-*.json"))


def _apply(path: Path, after: str | bytes | None, durable: bool = True) -> None:
    if after is None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    else:
        atomic_write(path, after, durable=durable)


def _failpoint(name: str) -> None:
    """Crash-test hook: `BRAIN_FAILPOINT=<name>` kills this process right there with SIGKILL,
    exactly as `kill -9` would, so tests can stop a write at each step deterministically."""
    if os.environ.get("BRAIN_FAILPOINT") == name:
        import signal  # only here: its import costs every write ~1 ms

        os.kill(os.getpid(), signal.SIGKILL)


_TEMP_NAME = re.compile(r"^\..+\.[0-9a-f]{12}\.tmp$")  # what `storage.atomic_write` names them


def repair(vault: Vault) -> tuple[list[Recovery], list[str]]:
    """Roll forward a half-done operation and remove the temporary files killed writers left
    (for `doctor`). Under the write lock, every temporary file in the card folders is an
    orphan: logged writers hold that lock while theirs exist. Returns what was done."""
    removed: list[str] = []
    with writing(vault, settle=False) as writer:
        for name in (*CARD_FOLDERS, "WorkingMemory", ".brain"):
            base = vault.folder(name)
            for dirpath, dirnames, filenames in os.walk(base) if base.is_dir() else ():
                dirnames[:] = [d for d in dirnames if name != ".brain" or d not in ("cache", "locks")]
                for filename in filenames:
                    if _TEMP_NAME.match(filename):
                        path = Path(dirpath) / filename
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(path)
                            removed.append(vault.rel(path))
        return writer.recovered, sorted(removed)
