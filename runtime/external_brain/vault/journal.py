"""Logged writes that survive a kill at any instant: the vault's write lock and its journal.

Every operation that changes card files and logs an event (record, create, promote, learn,
remember, forget, a search miss, and the lifecycle operations that build on them) runs inside
`writing(vault)` and ends with one `Writer.commit(effects, events)`, made through the
operations' one write path, `writes.commit_operation`, which then updates the search index:

1. the whole intent — each file's text before and after, and the events — is appended to
   `.brain/journal.json` as one line (fsynced);
2. the files are written (each atomically: temporary file, fsync, rename) or removed;
3. the events are appended to the log;
4. when the batch ends (below): the log and the folders written in are fsynced, the journal is
   removed, the batch's parts end (the search index's pass-on, after the lock), and only then
   does `writing` return — the write is acknowledged.

A process killed anywhere in 2-4 leaves the journal behind, and the next logged write (or
`doctor`) rolls it forward before doing anything else: files still at a text the journal names
as before get the last `after` text, and events not yet in the log as whole lines are appended
(a torn fragment of an event, the killed writer's append cut short, is not the event:
`events.logged`; the append finishes that torn line rather than leave it). Killed before 1
completes, the operation simply did not happen (a journal line cut short is no intent). Either
way the files and the log agree: the stored confidence always equals a replay of the log, and a
promotion is never half done.

Group commit: the threads of one process (the HTTP server's) that want the lock while another
holds it join its batch. The holder keeps the lock when it is done and hands the batch to the
next thread, which reads the files as the previous operations left them and appends its own
journal line; the last one (no thread waiting, or BATCH_CAP operations) makes the batch durable
with one fsync of the log and one of each folder, removes the journal and lets the lock go; then
every operation of the batch returns at once. An operation returns only after that shared fsync,
so nothing acknowledged can be lost, and a kill mid-batch leaves journal lines that the next
writer rolls forward in order. A single process writing once (the CLI) is a batch of one.
Upkeep an operation asks for (`Writer.afterwards`: folding the search index) runs once the batch
is done and the lock let go, so it holds up no other writer. Work that must be done before the
batch's operations return but need not hold the lock (passing the written cards on to the search
index, `search.pass_on`) is a part of the batch (`Writer.part`): it is started while the lock is
still held (`locked_end`, where it can take its own lock in turn, so batches keep their order) and
finished once the lock is let go (`unlocked_end`). A thread that plans a write before
taking the lock (a create's search and judging) can `step_aside` while its own process holds the
lock and another process writes too: the holder then has the interpreter to itself.

Why one lock for the whole vault: every logged write holds it from its read to the end of its
commit, so only the holder's journal exists, and a journal found by a new holder of the lock
belongs to a process that died (a live owner would still hold the lock). Recovery needs no
guessing about who is alive. Logged writes are short (a few ms), so serialising them costs
nothing an agent notices; reads never take this lock.

A file a person edited between the crash and the recovery (none of the texts the journal names
for it) is left as the person wrote it: the journal is kept beside it as
`.brain/journal-conflict-<eid>.json` for `doctor` to report, and its events are logged only for
the files that did take the change. Files are the truth. So while the writer lives: a file
saved by a person after the operation read it is found just before it would be written over
(`_still_as_read`), and the operation is undone and refused as a conflict.

Two rules for vaults shared through git (docs/decisions.md, "Sharing a vault through git"):
- A card an operation removes for good (delete, an undo of a create or a promote) is
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
import functools
import json
import os
import re
import threading
import zlib
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator

from ..errors import BrainError, Conflict
from .events import append_records, log_size, logged, new_event
from .valueclass import valueclass
from .storage import (
    CARD_FOLDERS, Vault, atomic_write, current_bytes, fsync_dir, fsync_together, io_problem, take_lock,
)
from .regex_programs import compile_pattern   # programs kept across processes

JOURNAL = "journal.json"
BATCH_CAP = 32   # operations one batch holds the lock for, at most: other processes get their turn
JOURNAL_KEEP_BYTES = 1 << 20   # a journal that grew past this (a bulk import) is removed, not kept


@valueclass
class Effect:
    """One file change: `path` (absolute, inside the vault) goes from `before` (the text the
    operation read; None = the file must not exist) to `after` (None = remove it)."""

    path: Path
    before: str | bytes | None
    after: str | None


@valueclass
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
        # (Bytes that are not UTF-8, a file as read: kept with the odd bytes replaced, as a log line holds text only.)
        before = effect.before.decode("utf-8", "replace") if isinstance(effect.before, bytes) else effect.before
        out.append({"path": vault.rel(effect.path), "before": before, "after": fingerprint(effect.after)})
    return out


class Writer:
    """The holder of the vault's write lock (see `writing`)."""

    def __init__(self, vault: Vault, recovered: list[Recovery], batch: "_Batch") -> None:
        self.vault = vault
        self.recovered = recovered
        self.batch = batch
        self.committed = False
        self.settled = False   # the cards agreed with the log when this writer began (see settle)

    def afterwards(self, run: Callable[[Vault], None]) -> None:
        """Have `run(vault)` called once this operation is durable and the write lock let go:
        upkeep that follows a write but need not hold up the next writer (folding the search
        index's newest postings). Each `run` is called once per batch however many of its
        operations asked for it, in the thread that ended the batch, after every operation of
        the batch has been told it is done. Upkeep only: an error in it is dropped, and nothing
        runs when the batch could not be made durable."""
        self.batch.afterwards.setdefault(run, None)

    def part(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The batch's one object under `key`, made by `make()` for the first operation that asks:
        work the batch's operations share, ended once for all of them. When the batch is durable,
        `locked_end()` is called while the lock is still held, then `unlocked_end()` once it is
        let go, before the operations return (module docstring). Neither is called when the
        batch could not be made durable; each must leave nothing half done when it fails."""
        part = self.batch.parts.get(key)
        if part is None:
            part = self.batch.parts[key] = make()
        return part

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
                                            restored=plan.restored or None, pruned=plan.pruned or None,
                                            resuperseded=plan.resuperseded or None, relinked=plan.relinked or None,
                                            promoted_twice=plan.promoted_twice or None,
                                            carried=plan.carried or None,
                                            carried_updates=plan.carried_updates or None,
                                            files=undo_files(vault, effects))])
        mark_settled(vault)
        self.settled = True
        return plan

    def commit(self, effects: list[Effect], events: list[dict[str, Any]],
               sync_once: bool = False) -> list[dict[str, Any]]:
        """Apply `effects` and log `events` (made with `events.new_event`) as one operation
        that a kill at any instant cannot leave half done. Returns the events; they are durable
        once `writing` returns (module docstring).

        `sync_once` (for bulk writes such as `import`): the files are written without a
        per-file fsync and made durable by one `os.sync()` before the events are logged.
        Each file is still replaced atomically (a kill leaves it old or new), and the journal
        still holds the whole intent until everything is on disk; two fsyncs per file cost
        ~10 ms each, which made a 10,000-card import take minutes."""
        vault, batch = self.vault, self.batch
        effects = _kept_as_deleted(vault, effects, events)
        entry = {
            "events": events,
            "log_size": log_size(vault),
            "files": [{"path": vault.rel(e.path), "before": fingerprint(e.before), "after": e.after,
                       "after_print": fingerprint(e.after)} for e in effects],
        }
        start = batch.journal(entry)
        _failpoint("journaled")
        applied: list[Effect] = []
        try:
            for effect in effects:
                batch.folders.add(effect.path.parent)
                # The journal line must be durable before the first file changes: it is fsynced
                # with the first file's temporary copy (one commit of the filesystem for both).
                first = batch.unsynced() if not applied else ()
                if first and (effect.after is None or sync_once):
                    fsync_together(first)
                    first = ()
                _failpoint("applying")
                _apply(effect.path, effect.after, durable=not sync_once, sync_dir=False, sync_also=first,
                       check=functools.partial(_still_as_read, vault, effect))
                batch.synced()
                applied.append(effect)
                _failpoint("applied")
            if sync_once and effects:
                os.sync()
            append_records(vault, events, durable=False)
            batch.log_written = True
        except BaseException:
            # Trigger: the system refused a write (a full disk, a folder that is a file) — a
            # kill never gets here. Why: left in place, the journal line would make every later
            # write retry this one first and fail the same way. Outcome: the files written so far
            # go back to what the operation read, its journal line goes, and the error is raised;
            # if even that fails, the line stays and a later write finishes the operation.
            with contextlib.suppress(OSError):
                for effect in reversed(applied):
                    _apply(effect.path, effect.before)
                batch.unjournal(start)
            raise
        self.committed = True
        _failpoint("logged")
        if self.settled:
            from .settle import mark_settled

            mark_settled(vault)   # what this clone's own writer logged leaves the cards agreeing
        return events


class _Batch:
    """The operations of one hold of the write lock: the journal lines they wrote, the folders
    they wrote in, whether the log was appended to; `done` is set once they are durable.

    The journal file stays in place between batches and is written over from its start (no
    file is created, grown or removed per write: each of those costs the filesystem more than
    the write itself, up to ~25 ms for a removal on a busy ext4): a header line names the batch
    and says whether it is done, then one line per operation, each carrying the batch's name.
    Lines after them from an earlier, longer batch carry another name and are not read."""

    def __init__(self, vault: Vault, lock_fd: int | None = None) -> None:
        self.path = vault.brain_dir / JOURNAL
        self.lock_fd = lock_fd
        self.name = os.urandom(6).hex()
        self.journal_fd: int | None = None
        self.offset = 0                 # where the next line goes
        self.journal_synced = True
        self.new_journal = False
        self.folders: set = set()
        self.log_written = False
        self.count = 0
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.afterwards: dict[Callable, None] = {}   # `Writer.afterwards`, in the order first asked
        self.parts: dict[Hashable, Any] = {}           # `Writer.part`, by key

    def journal(self, entry: dict[str, Any]) -> int:
        """Write one operation's intent to the journal; returns where its line starts. It is not
        yet durable: `unsynced` names what to fsync before the operation's first file changes."""
        line = json.dumps({"batch": self.name, **entry}, ensure_ascii=False) + "\n"
        try:
            if self.journal_fd is None:
                self.new_journal = not self.path.exists()   # its folder's entry must then be durable too
                self.journal_fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
                self.offset = self._write(_header(self.name, done=False), 0)
            start = self.offset
            self.offset = self._write(line, start)
        except OSError as exc:   # a full disk says ENOSPC but not where: name the file
            raise io_problem(exc, "write", self.path) from exc
        self.journal_synced = False
        return start

    def _write(self, text: str, at: int) -> int:
        data = text.encode("utf-8")
        written = 0
        while written < len(data):   # a short write (a signal, a large intent): the rest follows
            written += os.pwrite(self.journal_fd, data[written:], at + written)
        return at + len(data)

    def unsynced(self) -> tuple:
        """What must be fsynced for the journal's last line to survive a power cut."""
        if self.journal_synced:
            return ()
        return (self.journal_fd, self.path.parent) if self.new_journal else (self.journal_fd,)

    def synced(self) -> None:
        self.journal_synced = True
        self.new_journal = False

    def unjournal(self, start: int) -> None:
        """Take back the last line (its operation failed and was undone): an empty line there
        ends the batch's lines for a reader."""
        os.pwrite(self.journal_fd, b"\n", start)
        os.fsync(self.journal_fd)
        self.offset = start

    def finish(self, vault: Vault) -> None:
        """Make every operation of the batch durable, then mark the journal done."""
        log = os.open(vault.log_path, os.O_RDONLY) if self.log_written else None
        try:
            fsync_together([*self.folders, *([log] if log is not None else [])])
        finally:
            if log is not None:
                os.close(log)
        _failpoint("synced")
        if self.journal_fd is not None:
            # Not fsynced, as a removal was not: after a power cut the batch is read again,
            # and finds every file and event already there.
            if self.offset > JOURNAL_KEEP_BYTES:
                os.unlink(self.path)   # a bulk write's journal is not kept at that size
            else:
                self._write(_header(self.name, done=True), 0)

    def release(self) -> None:
        if self.journal_fd is not None:
            os.close(self.journal_fd)
            self.journal_fd = None
        if self.lock_fd is not None:
            os.close(self.lock_fd)   # closing the descriptor releases the lock
            self.lock_fd = None


def _header(name: str, done: bool) -> str:
    """The journal's first line; both states have one length, so one is written over the other."""
    return f'{{"batch":"{name}","done":{"true " if done else "false"}}}\n'


class _Group:
    """A process's writers to one vault: `turn` is held by the one operation running; `batch`
    is open while this process holds the vault's write lock; `free` is set while it is not;
    `shared`, whether another process wrote to the vault between this process's last two
    batches (`step_aside`); `log_after`, the log's size when its last batch ended."""

    def __init__(self) -> None:
        self.turn = threading.Lock()
        self.count_lock = threading.Lock()
        self.waiting = 0
        self.batch: _Batch | None = None
        self.free = threading.Event()
        self.free.set()
        self.shared = False
        self.log_after: int | None = None
        self.holder: int | None = None   # the thread that holds `turn` (its `threading.get_ident()`)


_GROUPS: dict[str, _Group] = {}
_GROUPS_LOCK = threading.Lock()


def _group(vault: Vault) -> _Group:
    vault.check_inside(".brain")   # as `brain_dir` does
    key = vault.real_path(".brain")   # its `realpath`, from the components the Vault resolved already
    with _GROUPS_LOCK:
        group = _GROUPS.get(key)
        if group is None:
            group = _GROUPS[key] = _Group()
        return group


STEP_ASIDE_MOST = 0.25   # seconds a planning thread waits for its process's batch to end, at most


def step_aside(vault: Vault, most: float | None = None) -> None:
    """A planning thread's hand-over: wait (up to `most` seconds, STEP_ASIDE_MOST by default) while this process holds the
    vault's write lock for a batch, when another process writes to the vault too (`_Group.shared`).

    Trigger: a process of `brain serve`'s several workers, whose threads plan their writes (a
    create's candidate search and judging, ~8 ms of CPU) before taking the write lock. Why: the
    interpreter runs one thread at a time, so a thread planning while its own process holds the
    lock kept the holder waiting for the interpreter after each file, fsync or SQLite call,
    and every writer of the vault, in every process, waits on that lock (issue 22: ~3 ms of a
    ~9 ms locked create). The other process, waiting for the lock, plans on its own core
    meanwhile. Outcome: planning goes on once this process's batch ends (it ends as soon as no
    thread of it waits, and a thread that steps aside does not wait for the lock). A process
    that is the vault's only writer (the CLI, a one-worker server) never waits here: planning
    there overlaps the holder's fsyncs."""
    group = _GROUPS.get(vault.real_path(".brain"))   # `_group`'s key
    if group is not None and group.shared and not group.free.is_set():
        group.free.wait(STEP_ASIDE_MOST if most is None else most)


def writers_busy(vault: Vault) -> bool:
    """Whether a thread of this process holds or waits for the vault's write lock: for upkeep
    that waits for a quiet moment (`search.index.FoldUpkeep`). A glance, not a promise."""
    vault.check_inside(".brain")
    group = _GROUPS.get(vault.real_path(".brain"))
    return group is not None and (group.turn.locked() or group.waiting > 0)


def held_batch(vault: Vault) -> tuple[bool, dict[Hashable, Any] | None]:
    """Whether the calling thread runs an operation under this process's hold of the vault's
    write lock, and the parts (`Writer.part`) of the batch it runs in (None between two
    batches: a batch being ended). For readers of what the batch's parts hold back
    (`search.pass_on`)."""
    group = _GROUPS.get(vault.real_path(".brain"))   # `_group`'s key
    if group is None or group.holder != threading.get_ident():
        return False, None
    batch = group.batch
    return True, (batch.parts if batch is not None else None)


@contextlib.contextmanager
def writing(vault: Vault, settle: bool = True) -> Iterator[Writer]:
    """Hold the vault's write lock for a read-modify-write-and-log, after rolling forward any
    operation a killed process left half done and, with `settle`, settling the vault when a
    merge changed the log (`Writer.settle`). A read's own write (a search miss, a purge of
    expired working memory) passes `settle=False`: reads never change a card in Playbooks/.
    Returns once what was committed is durable, which in a batch (module docstring) is when the
    whole batch is."""
    group = _group(vault)
    with group.count_lock:
        group.waiting += 1
    group.turn.acquire()
    group.holder = threading.get_ident()
    with group.count_lock:
        group.waiting -= 1
    batch = group.batch
    recovered: list[Recovery] = []
    try:
        if batch is None:
            batch = _Batch(vault, take_lock(vault, "write"))
            try:
                recovered = recover(vault)
            except BaseException:
                batch.release()
                raise
            # Whether another process logged since this one's last batch (`step_aside`): a stat.
            size = _log_size_or_none(vault)
            group.shared = None not in (size, group.log_after) and size != group.log_after
            group.batch = batch
            group.free.clear()
    except BaseException:
        group.holder = None
        group.turn.release()
        raise
    writer = Writer(vault, recovered, batch)
    try:
        _settle_first(vault, writer, settle)
        yield writer
    finally:
        batch.count += 1
        with group.count_lock:
            last = group.waiting == 0 or batch.count >= BATCH_CAP
        if last:
            # Trigger: no other thread of this process waits for the lock (or the batch is
            # full). Why: the batch's operations are applied but not yet durable. Outcome: one
            # fsync of the log and each folder covers them all; the lock goes to whoever waits.
            group.batch = None
            ending: list[Any] = []
            try:
                batch.finish(vault)
                _ended_locked(batch, ending)
            except BaseException as exc:  # noqa: BLE001 - handed to every operation of the batch
                batch.error = exc
            finally:
                group.log_after = _log_size_or_none(vault)
                batch.release()
                group.holder = None
                group.free.set()
                group.turn.release()
                try:
                    _end_unlocked(ending)
                except BaseException as exc:  # noqa: BLE001 - a bug in a part: every operation is told
                    batch.error = exc
                finally:
                    batch.done.set()
            if batch.error is None:
                _run_afterwards(vault, batch.afterwards)   # outside the lock (`Writer.afterwards`)
        else:
            group.holder = None
            group.turn.release()
            if writer.committed:
                batch.done.wait()
    if writer.committed and batch.error is not None:
        raise batch.error


def _log_size_or_none(vault: Vault) -> int | None:
    """The log's size, or None when it cannot be had (a log that leads outside the vault, an I/O
    error: the operation that writes it says why); never raises, so a batch always ends."""
    try:
        return log_size(vault)
    except (OSError, BrainError):
        return None


def _ended_locked(batch: _Batch, ending: list[Any]) -> None:
    """`locked_end` of each of the batch's parts, in the order they were made, each added to
    `ending` once it returned, for `_end_unlocked` once the lock is let go: when one raises, the
    parts before it still end (what their `locked_end` took, such as the index's write lock, is
    let go)."""
    for part in list(batch.parts.values()):
        part.locked_end()
        ending.append(part)


def _end_unlocked(parts: list[Any]) -> None:
    """`unlocked_end` of each part: all of them are called, and the first error is raised after."""
    error = None
    for part in parts:
        try:
            part.unlocked_end()
        except BaseException as exc:  # noqa: BLE001 - raised once every part has ended
            error = error or exc
    if error is not None:
        raise error


def _run_afterwards(vault: Vault, afterwards: dict[Callable, None]) -> None:
    for run in afterwards:
        try:
            run(vault)
        except Exception:  # noqa: BLE001 - upkeep (`Writer.afterwards`): the write is durable and told so
            pass


def _settle_first(vault: Vault, writer: Writer, settle: bool) -> None:
    """What `writing` does before its caller's operation: settle the vault after a merge (see
    `writing`), or for a read's write, note whether the cards agreed with the log as it began."""
    if not settle:
        from .settle import settle_due

        # A read's write settles nothing, but when the cards agreed with the log as it began,
        # its own event keeps them agreeing: the mark moves with it (else the next write would
        # take that event for a merge's and settle the whole vault for nothing).
        writer.settled = not settle_due(vault)
        return
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
        text = effect.before.decode("utf-8", "replace") if isinstance(effect.before, bytes) else effect.before
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
    """Roll forward the operations a killed writer left in the journal, if any: one Recovery
    per operation, in order. The caller holds the write lock."""
    journal = vault.brain_dir / JOURNAL
    try:
        data = journal.read_bytes()
    except FileNotFoundError:
        return []
    read = _pending(data)
    if read is None:
        # Each line is written whole before anything it names is touched, so this is not a
        # killed writer's journal but a foreign or hand-edited file: nothing in it can be
        # trusted to apply. Kept for doctor to show, out of the way.
        os.replace(journal, vault.brain_dir / f"journal-conflict-unreadable-{os.getpid()}.json")
        return []
    name, entries = read
    if not entries:
        return []
    # A file several operations of a batch changed went through each one's `before` to its
    # `after` in turn: at any of those texts it is ours, and it gets the last operation's text.
    chains: dict[str, list[dict[str, Any]]] = {}
    for files, _, _ in entries:
        for item in files:
            chains.setdefault(item["path"], []).append(item)
    done, conflicts = set(), set()
    for rel, items in chains.items():
        path = vault.root / rel
        try:
            current = current_bytes(vault, path)
        except BrainError:
            current = b"\0not a regular file"  # never matches a fingerprint: left alone, kept as a conflict
        now_print = fingerprint(current)
        last = items[-1]
        if now_print == last["after_print"]:
            done.add(rel)
        elif any(now_print in (item["before"], item["after_print"]) for item in items):
            _apply(path, last["after"])
            done.add(rel)
        else:
            conflicts.add(rel)  # a person's edit since the crash: theirs wins
    recovered = []
    for files, events, since in entries:
        wanted = [e for e in events if e.get("card") not in conflicts]
        missing = [e for e in wanted if not logged(vault, e["eid"], since)]
        if missing:
            append_records(vault, missing, resume_from=since)  # finishes the killed writer's torn line, if any
        recovered.append(Recovery(events[0]["eid"] if events else "none",
                                  [i["path"] for i in files if i["path"] in done],
                                  [e["event"] for e in missing], [i["path"] for i in files if i["path"] in conflicts]))
    if conflicts:
        eid = next(r.eid for r in recovered if r.conflicts)
        os.replace(journal, vault.brain_dir / f"journal-conflict-{eid}.json")
    elif name is None:
        os.unlink(journal)   # the one-operation journal of an earlier version
    else:
        with open(journal, "r+b") as handle:
            handle.write(_header(name, done=True).encode())
    return recovered


Pending = list[tuple[list[dict[str, Any]], list[dict[str, Any]], int]]


def _pending(data: bytes) -> tuple[str | None, Pending] | None:
    """The batch name and the operations a journal holds that may not be done, in order, as
    (files, events, log size when journaled); None when it is not a journal. The lines are
    those after an open header that carry its name, up to the first that does not (an empty
    line, the rest of an earlier batch, or a line cut short when its writer was killed: that
    operation had not started). A journal with no header is one operation, as written before
    batches (name None)."""
    lines = data.split(b"\n")
    try:
        head = json.loads(lines[0]) if lines[0].strip() else {}
    except (ValueError, RecursionError):
        return None
    if not isinstance(head, dict):
        return None
    if "batch" not in head and "files" not in head:
        return None if head else ("", [])
    name = head.get("batch") if "files" not in head else None
    if name is not None and (not isinstance(name, str) or head.get("done") not in (True, False)):
        return None
    if head.get("done") is True:
        return name, []
    entries = []
    for line in lines[1:] if name is not None else lines[:1]:
        try:
            entry = json.loads(line)
            if name is not None and entry.get("batch") != name:
                break
            files, events, since = entry["files"], entry["events"], entry.get("log_size", 0)
            if not isinstance(files, list) or not isinstance(events, list) or not isinstance(since, int):
                raise TypeError
            if not all(isinstance(item, dict) and {"path", "before", "after", "after_print"} <= item.keys()
                       for item in files):
                raise KeyError("files")
        except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
            if name is None:
                return None
            break   # the end of the batch's lines (or the last one, cut short)
        entries.append((files, events, since))
    return name, entries


def conflict_files(vault: Vault) -> list[Path]:
    """Journals kept because a person's edit met a half-done operation (for `doctor`)."""
    if not vault.brain_dir.is_dir():
        return []
    return sorted(vault.brain_dir.glob("journal-conflict-*.json"))


def _apply(path: Path, after: str | bytes | None, durable: bool = True, sync_dir: bool = True,
           sync_also: tuple = (), check: Callable[[], None] | None = None) -> None:
    """Write `after` to `path` (None: remove it); `check()` first, the last thing before the
    file changes (`_still_as_read`)."""
    if after is None:
        if check is not None:
            check()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        if durable and sync_dir:
            fsync_dir(path.parent)
    else:
        atomic_write(path, after, durable=durable, sync_dir=sync_dir, sync_also=sync_also, before_replace=check)


def _still_as_read(vault: Vault, effect: Effect) -> None:
    """Raise Conflict unless the file still holds what the operation read (`effect.before`;
    None: no file there).

    Trigger: every file an operation writes or removes, once its new text is durable and just
    before the rename. Why: the operation read the file under the write lock, but a person (an
    editor's save, `git checkout`) does not take it: a save in the few milliseconds between that
    read and the rename (planning, the fsyncs) was written over, lost. Outcome: such a save is
    kept, the operation undone whole (`Writer.commit`'s failure path) and refused with a
    message that says to run it again. Only the microseconds between this read and the rename
    are left open: no rename compares for us."""
    before = effect.before
    if before is None:
        if not os.path.lexists(effect.path):
            return
        problem = "appeared"
    else:
        try:
            current = current_bytes(vault, effect.path)
        except BrainError:
            current = None   # something else than a regular file there now: not what was read
        if current == (before.encode("utf-8") if isinstance(before, str) else before):
            return
        problem = "was removed" if current is None else "changed"
    raise Conflict(f"{vault.rel(effect.path)} {problem} while this write was being made (saved by someone or "
                   "something else); nothing was written: run the command again")


_FAILPOINT_HITS: dict[str, int] = {}


def _failpoint(name: str) -> None:
    """Crash-test hook: `BRAIN_FAILPOINT=<name>` kills this process right there with SIGKILL,
    exactly as `kill -9` would, so tests can stop a write at each step deterministically;
    `<name>@<n>` kills it the n-th time it gets there (a server, in the middle of a batch);
    `<name>:stop` stops it there (SIGSTOP) for the test to change a file, then SIGCONT it."""
    wanted = os.environ.get("BRAIN_FAILPOINT")
    if not wanted or not wanted.startswith(name):
        return
    point, _, how = wanted.partition(":")
    point, _, nth = point.partition("@")
    if point != name or (nth and not nth.isdigit()) or how not in ("", "stop"):
        return
    if nth:
        with _GROUPS_LOCK:
            _FAILPOINT_HITS[name] = hits = _FAILPOINT_HITS.get(name, 0) + 1
        if hits != int(nth):
            return
    import signal  # only here: its import costs every write ~1 ms

    os.kill(os.getpid(), signal.SIGSTOP if how == "stop" else signal.SIGKILL)


_TEMP_NAME = compile_pattern(r"^\..+\.[0-9a-f]{12}\.tmp$")  # what `storage.atomic_write` names them


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
