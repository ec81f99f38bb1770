"""A batch's cards passed on to the search index once the vault's write lock is let go (issue 22).

Every logged write in Playbooks/ passes the cards it wrote on to the index (`writes.commit_operation`
-> `Index.passed_on`), so the next search does not list their folders again for a change the index
already holds. That step ran under the vault's write lock, where it was half of a PATCH's CPU (its
rows in `fresh`, `stale`, `doc_data`, ...: ~160 pages to SQLite's WAL) while every writer of every
process waited. Now an operation queues its pass-on in its batch (`queue`; `journal.Writer.part`), and
the batch's last operation makes them all, in order, in one transaction of the index:

- `locked_end` (the batch durable, the vault's lock still held): the index opened and its write
  transaction begun (`BEGIN IMMEDIATE`). Taken before the vault's lock is let go, SQLite's write lock
  keeps the pass-ons in the order of the writes: the next batch's, in any process, begins only once
  this one has committed.
- `unlocked_end` (the lock let go, the operations not yet told): each queued pass-on made, one
  COMMIT, the fold upkeep told how many cards wait. The next writer writes its files meanwhile.

The batch's operations return only after that commit, so a writer's own next search finds its change
(as before). A thread that holds the vault's lock and then reads the index (a create's candidates
brought up to date, the links a delete follows: `Index.open`, `Index.refreshed`) must not find it
behind the writes: `index.caught_up` makes this thread's batch's queued pass-ons first, or, with none
queued, waits for an earlier batch's transaction to commit.

Optional like every pass-on: an index that is missing, busy past PASS_ON_WAIT_MS or damaged drops the
batch's pass-ons, and the next search finds the cards by their folders' mtimes.
"""

from __future__ import annotations

import sqlite3
import threading
from functools import partial
from typing import Any, Callable

from ..errors import BrainError
from ..vault.journal import Writer
from ..vault.storage import Vault
from .analysis import card_fields
from .index import PASS_ONS, FoldUpkeep, Index, write_begun


def queue(writer: Writer, index, stamps: dict, texts: dict, made: dict, was: dict, terms: dict | None) -> None:
    """Have the index passed on the card files an operation wrote (`Index.wrote_files`'s arguments)
    with the rest of its batch, once the batch is durable. `index`: the operation's open index, or
    None (the batch's end opens the existing one)."""
    pass_ons = writer.part(PASS_ONS, lambda: PassOns(writer.vault, writer.afterwards))
    pass_ons.add(index, (stamps, texts, made, was, terms))


class PassOns:
    """The pass-ons one batch queued, made by its last operation (module docstring)."""

    def __init__(self, vault: Vault, afterwards: Callable) -> None:
        self.vault = vault
        self.afterwards = afterwards   # the batch's `Writer.afterwards`
        self.queued: list[tuple] = []
        self.cards = 0                 # the cards queued in all
        self.indexes: dict[int, Any] = {}   # thread -> the index it queued with (the batch's end takes its own)
        self.index = None              # the index whose transaction `locked_end` began
        self.opened = None             # the index `locked_end` opened itself, closed at the end

    def add(self, index, pass_on: tuple) -> None:
        self.queued.append(pass_on)
        if index is not None:
            self.indexes[threading.get_ident()] = index
        self.cards += len(pass_on[0])

    def apply_now(self, index) -> None:
        """Under the write lock, for a reader of `index`: the queued pass-ons made in it now."""
        if write_begun(index.db):
            queued, self.queued = self.queued, []
            self._tell(index.passed_on_together(queued))
        else:
            self.queued.clear()   # busy past the wait: the next search finds them by the folders' mtimes

    def locked_end(self) -> None:
        if not self.queued:
            return
        # The ending thread's own index, still open when its operation queued with it (a PATCH's
        # and a record's stay open around the lock): no second connection.
        index = self.indexes.get(threading.get_ident())
        if index is None or index.closed:
            try:
                index = self.opened = Index.existing(self.vault, card_fields)
            except (sqlite3.Error, OSError, BrainError):   # the batch is durable: never its error
                index = None
        if index is None or not write_begun(index.db):
            self._close()
            self.queued.clear()
            return
        self.index = index

    def unlocked_end(self) -> None:
        index, self.index = self.index, None
        if index is None:
            return
        queued, self.queued = self.queued, []
        try:
            waiting = index.passed_on_together(queued)
        finally:
            self._close()
        self._tell(waiting)

    def _tell(self, waiting: int) -> None:
        """The cards left waiting in `stale` folded: by the process's upkeep thread (`brain serve`),
        else the excess over DELTA_CARDS after the batch (`Writer.afterwards`), no more cards than
        the batch wrote."""
        if not waiting:
            return
        from .build import DELTA_CARDS

        upkeep = FoldUpkeep.current()
        if upkeep is not None and upkeep.nudge(self.vault, waiting):
            return
        if waiting > DELTA_CARDS:
            self.afterwards(partial(_fold_excess, most=self.cards))

    def _close(self) -> None:
        opened, self.opened = self.opened, None
        if opened is not None:
            opened.close()


def _fold_excess(vault: Vault, most: int) -> None:
    """`Index.fold_excess(most)` on the existing index (none: nothing to fold)."""
    index = Index.existing(vault, card_fields)
    if index is not None:
        try:
            index.fold_excess(most)
        finally:
            index.close()
