"""The one write path of every operation: its files, its events and the search index, in one call.

Every operation that changes the vault (create, record, update, delete, link, promote, learn,
ingest, import, undo, remember, ...) takes the vault's write lock with `journal.writing` and ends
with `commit_operation(writer, effects, events)`. What it promises:
- The files and the events are one operation that a kill at any instant cannot leave half done
  (`journal.Writer.commit`, which it calls: journal line, files, log; durable when `writing`
  returns).
- The card files it wrote or removed in Playbooks/ are then passed on to the search index when
  there is one (`Index.passed_on`), so the next read does not list their folders again for a
  change the index already holds: with the rest of its batch, once the batch is durable and the
  write lock let go, before the operation returns (search/pass_on.py). That step is optional: an
  index that is missing, busy or damaged is left to the next search, and never fails the write.
- The index's upkeep a write calls for (folding its newest postings once more than DELTA_CARDS
  cards wait: ~3-15 ms, no more cards than its batch wrote) is done after the write lock is
  let go (`Writer.afterwards`), not under it, where it held up every other writer. In a process
  with an upkeep thread (`brain serve`: `index.FoldUpkeep`) the write only tells that thread,
  and no request folds.
- A bulk write (`sync_once`: import, a long ingest) is not passed on: the next search relists its
  folders and reads the new files there, outside the write lock, as it would after a `git pull`.
- A write that touches nothing in Playbooks/ (the Inbox, working memory, the persona file, events
  alone) is exactly `Writer.commit`: the index is not even opened.

The journal's own `settled` operation (vault/settle.py, run by `writing` after a git merge) is the
one write not made here: it lives below the operations, and what it rewrites after a merge the
next search finds by the folders' mtimes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .vault.journal import Effect, Writer

if TYPE_CHECKING:
    from .search.index import Index
    from .vault.storage import Card

PLAYBOOKS = "Playbooks/"   # the folder the search index holds (search.store.ROOT_FOLDER)


def commit_operation(writer: Writer, effects: list[Effect], events: list[dict[str, Any]], *,
                     sync_once: bool = False, index: Index | None = None,
                     made: list[Card] | None = None, was: list[Card] | None = None,
                     terms: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Commit one operation (`writer.commit(effects, events, sync_once)`), then pass the card
    files it wrote or removed in Playbooks/ on to the search index (module docstring). `index`:
    the index the operation already has open (create plans through one), which the batch's end
    uses when its thread ends the batch; else that end opens the existing one. `made`: the cards the operation parsed from the texts
    of the files it writes (create's new card, an update's card as written), which the index
    then takes as they are (`Index.wrote_files`); `was`: the cards parsed from the texts those
    files held before (an update's card as read). `terms`: the analysed terms of some of the cards it writes, made
    before the write lock (`search.build.analysed`, by path), which the index takes for a card
    that has the texts analysed. Returns the events."""
    vault = writer.vault
    rels = [] if sync_once else [rel for rel in dict.fromkeys(vault.rel(effect.path) for effect in effects)
                                 if rel.startswith(PLAYBOOKS)]
    if not rels:
        return writer.commit(effects, events, sync_once=sync_once)
    from .search.index import file_stamps  # only writes in Playbooks/ load the search index
    from .search.pass_on import queue as queue_pass_on

    # Trigger: `.brain/cache/` leads outside the vault. Why: the pass-on opens the index there
    # once the write is made (the batch's end), and its UnsafeVault then failed an operation
    # already written and logged. Outcome: refused before anything is written, as before
    # (`cache_dir` checks it once per Vault; a create has asked already).
    vault.cache_dir
    before = {rel: file_stamps(vault, rel) for rel in rels}
    done = writer.commit(effects, events)
    texts = {vault.rel(effect.path): (effect.before, effect.after) for effect in effects}
    # The stamps after are taken now, under the lock; the index is passed the cards with the rest
    # of the batch, once it is durable and the lock let go (search/pass_on.py).
    queue_pass_on(writer, index, {rel: (before[rel], file_stamps(vault, rel)) for rel in rels}, texts,
                  made={card.rel: card for card in made or ()}, was={card.rel: card for card in was or ()},
                  terms=terms)
    return done
