"""How a card names other cards, read leniently from its frontmatter.

What it promises:
- `links:` entries ({to, rel, weight, reason, version, created, updated}) and `related:` wikilinks
  (`[[Name]]`, `[[Name|alias]]`, `[[Name#heading]]`) become plain relation records; a malformed
  entry is skipped, never fatal. A wikilink a person put in `links:` (Obsidian users do) counts
  as one in `related:` does.
- Names match the way Obsidian matches them: last path part, no `.md`, case-folded, in NFC.
- It knows nothing of the index or of writing: the index stores what it reads here, and
  `relations` (the link operations) writes.
"""

from __future__ import annotations

import math
import unicodedata
from typing import Any

from .storage import Card
from .regex_programs import compile_pattern   # programs kept across processes

DEFAULT_WEIGHT = 1.0      # an explicit link is as strong as a link gets unless told otherwise
WIKILINK_WEIGHT = 0.5     # docs/card-format.md: a wikilink a person adds to `related`
WIKILINK_PATTERN = compile_pattern(r"^\s*\[\[([^\]|#^]*)(?:[#^][^\]|]*)?(\|[^\]]*)?\]\]\s*$")


def link_name(text: str) -> str:
    """The key a wikilink is matched by: the last path part, without `.md`, case-folded
    (Obsidian matches link names case-insensitively) and in NFC (`[[Café]]` typed in NFC names
    the note macOS saved as `Café.md` in NFD)."""
    name = str(text).strip().rsplit("/", 1)[-1]
    if name.lower().endswith(".md"):
        name = name[:-3]
    name = name.strip().casefold()
    return name if name.isascii() else unicodedata.normalize("NFC", name)


def wikilink_target(entry: Any) -> str | None:
    """The name inside a `related` entry `[[Name]]` / `[[Name|alias]]` / `[[Name#heading]]`
    (as `link_name`), or None when the entry is not a wikilink."""
    if not isinstance(entry, str):
        return None
    match = WIKILINK_PATTERN.match(entry)
    if not match or not match.group(1).strip():
        return None
    return link_name(match.group(1))


def clamp_weight(value: Any, default: float) -> float:
    """`value` as a weight in 0..1; `default` when it is not a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
        return default
    return min(1.0, max(0.0, float(value)))


def card_links(card: Card) -> list[dict[str, Any]]:
    """Every relation the card holds, leniently (a malformed entry is skipped, never fatal):
    `links` entries as {to, rel, weight, reason, version, created, updated} and each `related`
    wikilink as {name, rel: related, weight: 0.5}. A wikilink for a target that is also in
    `links` shows twice here; readers drop the wikilink once they know its target's id."""
    out: list[dict[str, Any]] = []
    links = card.meta.get("links")
    for entry in links if isinstance(links, list) else ():
        name = wikilink_target(entry)
        if name:  # a person's own `links: ["[[Name]]"]`: a wikilink, as in `related`
            out.append({"name": name, "rel": "related", "weight": WIKILINK_WEIGHT})
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("to"), (str, int)) or not str(entry["to"]).strip():
            continue
        rel = entry.get("rel")
        version = entry.get("version")
        out.append({
            "to": str(entry["to"]).strip(), "rel": str(rel) if isinstance(rel, (str, int)) and str(rel) else "related",
            "weight": clamp_weight(entry.get("weight"), DEFAULT_WEIGHT),
            "reason": str(entry["reason"]) if isinstance(entry.get("reason"), (str, int, float)) else None,
            "version": version if isinstance(version, int) and not isinstance(version, bool) else None,
            "created": _text(entry.get("created")), "updated": _text(entry.get("updated")),
        })
    related = card.meta.get("related")
    for entry in related if isinstance(related, list) else [related] if related else ():
        name = wikilink_target(entry)
        if name:
            out.append({"name": name, "rel": "related", "weight": WIKILINK_WEIGHT})
    return out


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def card_names(card: Card) -> list[str]:
    """The wikilink names that resolve to this card: its file stem, then its title."""
    return list(dict.fromkeys([link_name(card.path.stem), link_name(card.title)]))
