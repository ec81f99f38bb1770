"""Typed, weighted, versioned links between cards (SPEC 3), stored in the source card."""

from __future__ import annotations

from .journal import Effect
from .storage import Card, Vault


def follow_rename(vault: Vault, old: Card, new: Card) -> list[Effect]:
    """The rewrites of other cards' `related` wikilinks that a rename of `old` to `new` needs."""
    return []


def cascade_effects(vault: Vault, card: Card) -> list[Effect]:
    """The rewrites of the cards that link to `card`, removing those links (for delete)."""
    return []
