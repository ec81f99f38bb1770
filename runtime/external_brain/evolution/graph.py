"""Reading the graph of cards: the links of one card in and out, what is near it, the whole graph.

What it promises:
- Incoming links, names, tag and project siblings and the graph come from the search index (its
  `card_keys`, `links` and term tables), never from reading every card; outgoing links are read
  from the card itself (`wikilinks.card_links`).
- Every read hides cards another agent owns (`scope: agent`, `search.keyword.visible_to`).
- `explore` is breadth first, depth-limited and cycle-safe.
- It only reads: writing links is `relations`'s.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..vault.valueclass import factory, valueclass
from ..vault.storage import Card, Vault, card_not_found, load_card
from ..vault.wikilinks import card_links, card_names, link_name

FOLDERS = ("Playbooks",)   # the index holds Playbooks only


def open_index(vault: Vault, sweep: int | None):
    from ..search.index import Index
    from ..search.analysis import card_fields

    return Index.open(vault, card_fields, sweep=sweep)


def visible(meta: dict[str, Any], agent: str | None) -> bool:
    from ..search.keyword import visible_to

    return visible_to(meta, agent)



# ---------------------------------------------------------------------------- links

@valueclass
class LinksResult:
    card: dict[str, Any]
    outgoing: list[dict[str, Any]] = factory(list)
    incoming: list[dict[str, Any]] = factory(list)
    direction: str = "both"

    def as_dict(self) -> dict[str, Any]:
        return {"card": self.card, "direction": self.direction, "outgoing": self.outgoing, "incoming": self.incoming}


DIRECTIONS = ("out", "in", "both")


def _node(meta: dict[str, Any] | None) -> dict[str, Any]:
    if meta is None:
        return {"path": None, "title": None, "missing": True}
    return {"path": meta["path"], "title": meta["title"], "type": meta["type"], "domain": meta["domain"],
            "missing": False}


def _summary(card: Card) -> dict[str, Any]:
    return {"path": card.rel, "id": card.id, "title": card.title}


def outgoing_links(index, card: Card, agent: str | None) -> list[dict[str, Any]]:
    """The card's own links, resolved through the index; a wikilink to a card that is also in
    `links` is that link's Obsidian mirror and is not repeated."""
    held = card_links(card)
    by_id = index.cards_by_id(e["to"] for e in held if "to" in e)
    by_name = index.cards_by_name(e["name"] for e in held if "name" in e)
    linked_ids = {e["to"] for e in held if "to" in e}
    out = []
    for entry in held:
        meta = by_id.get(entry["to"]) if "to" in entry else by_name.get(entry["name"])
        if "name" in entry and meta is not None and meta.get("id") in linked_ids:
            continue
        if meta is not None and not visible(meta, agent):
            continue
        item = {"id": entry.get("to") or (meta or {}).get("id"), **_node(meta), "rel": entry["rel"],
                "weight": entry["weight"], "via": "links" if "to" in entry else "wikilink"}
        if "name" in entry:
            item["wikilink"] = entry["name"]
        for key in ("reason", "version", "created", "updated"):
            if entry.get(key) is not None:
                item[key] = entry[key]
        out.append(item)
    return out


def incoming_links(index, card: Card, agent: str | None) -> list[dict[str, Any]]:
    """The links other cards hold to this one, from the index."""
    rows = index.incoming(card.id, card_names(card))
    by_id_sources = {row["source_docid"] for row in rows if row["to"]}
    out = []
    for row in rows:
        source = row["source"]
        if source["path"] == card.rel or not visible(source, agent):
            continue
        if row["name"] and row["source_docid"] in by_id_sources:
            continue  # the Obsidian mirror of a link already listed
        item = {"id": source.get("id"), **_node(source), "rel": row["rel"], "weight": row["weight"],
                "via": "links" if row["to"] else "wikilink"}
        for key in ("reason", "version", "created", "updated"):
            if row.get(key) is not None:
                item[key] = row[key]
        out.append(item)
    out.sort(key=lambda item: (item["path"], item["rel"]))
    return out


def links(vault: Vault, ref: str, direction: str = "both", agent: str | None = None) -> LinksResult:
    """The card's outgoing and/or incoming links."""
    if direction not in DIRECTIONS:
        raise UsageError(f"unknown direction {direction!r}; use out, in or both")
    card = _visible_card(vault, ref, agent)
    index = open_index(vault, vault.settings.search.freshness_sweep)
    try:
        result = LinksResult(_summary(card), direction=direction)
        if direction in ("out", "both"):
            result.outgoing = outgoing_links(index, card, agent)
        if direction in ("in", "both"):
            result.incoming = incoming_links(index, card, agent)
    finally:
        index.close()
    return result


def _visible_card(vault: Vault, ref: str, agent: str | None) -> Card:
    from ..cards import card_path
    from ..search.store import card_meta

    card = load_card(vault, card_path(vault, ref, FOLDERS))   # as `get` finds it; an Inbox candidate said so
    if not visible(card_meta(card), agent):
        raise card_not_found(ref)   # worded as a missing one, a path as a path: no oracle
    return card


# ---------------------------------------------------------------------------- explore and graph

@valueclass
class ExploreResult:
    card: dict[str, Any]
    depth: int
    linked: list[dict[str, Any]] = factory(list)
    by_tag: list[dict[str, Any]] = factory(list)
    by_project: list[dict[str, Any]] = factory(list)

    def as_dict(self) -> dict[str, Any]:
        return {"card": self.card, "depth": self.depth, "linked": self.linked, "by_tag": self.by_tag,
                "by_project": self.by_project}


MAX_DEPTH = 5
SIBLINGS = 10


def resolve_rows(index, rows: list[dict[str, Any]], key_of) -> list[tuple[dict, dict | None]]:
    """Pair each link row with the card at its other end (`key_of(row)` gives ('id'|'name', key));
    the wikilink mirror of an id link from the same source is dropped."""
    by_id = index.cards_by_id(k for kind, k in map(key_of, rows) if kind == "id")
    by_name = index.cards_by_name(k for kind, k in map(key_of, rows) if kind == "name")
    out, seen = [], set()
    for row in rows:
        kind, key = key_of(row)
        meta = by_id.get(key) if kind == "id" else by_name.get(key)
        mark = (row["source_docid"], (meta or {}).get("path") or key)
        if kind == "name" and mark in seen:
            continue
        seen.add(mark)
        out.append((row, meta))
    return out


def explore(vault: Vault, ref: str, depth: int = 1, agent: str | None = None, by_tag: bool = True,
            by_project: bool = True) -> ExploreResult:
    """MCP explore_related (docs/compatibility.md): cards linked to this one (either direction) up to `depth`
    hops, each with its relation and reason; cards sharing tags (with the shared tags) unless
    not `by_tag`; cards of the same project unless not `by_project`. A walk never visits a card
    twice, so cycles end it."""
    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"--depth {depth} is out of range; give 1 to {MAX_DEPTH}")
    from ..search.store import card_meta

    card = _visible_card(vault, ref, agent)
    index = open_index(vault, vault.settings.search.freshness_sweep)
    try:
        result = ExploreResult(_summary(card), depth)
        visited = {card.rel}
        frontier = [(card.rel, card.id, card_names(card))]
        for hop in range(1, depth + 1):
            following = []
            for path, card_id, names in frontier:
                docid = (index.cards_by_id([card_id]).get(card_id) or {}).get("docid") if card_id else None
                if docid is None:
                    docid = (index.cards_by_name([link_name(path.rsplit("/", 1)[-1])]).get(
                        link_name(path.rsplit("/", 1)[-1])) or {}).get("docid")
                pairs = []
                if docid is not None:
                    pairs += [(row, meta, "out") for row, meta in resolve_rows(
                        index, index.outgoing(docid), lambda r: ("id", r["to"]) if r["to"] else ("name", r["name"]))]
                incoming = sorted(index.incoming(card_id, names), key=lambda r: r["to"] is None)  # links first
                pairs += [(row, row["source"], "in") for row in incoming]
                for row, meta, direction in pairs:
                    if meta is None or meta["path"] in visited or not visible(meta, agent):
                        continue
                    visited.add(meta["path"])
                    item = {"id": meta.get("id"), **_node(meta), "rel": row["rel"], "weight": row["weight"],
                            "direction": direction, "depth": hop, "from": path}
                    if row.get("reason"):
                        item["reason"] = row["reason"]
                    result.linked.append(item)
                    following.append((meta["path"], meta.get("id"), [link_name(meta["path"].rsplit("/", 1)[-1][:-3]),
                                                                      link_name(meta["title"])]))
            frontier = following
        own = card_meta(card)
        if by_tag:
            result.by_tag = _tag_siblings(index, card, own["tags"], agent)
        if by_project and own["project"]:
            result.by_project = _project_siblings(index, card, own["project"], agent)
    finally:
        index.close()
    return result


def _docs_with_terms(index, text: str, field: str) -> set[int]:
    """Documents whose `field` holds every term of `text`, from the postings (a superset of the
    exact matches, which the caller checks against the stored metadata)."""
    from ..search.analysis import tokens
    from ..search.store import FIELDS, decode_code

    position = FIELDS.index(field)
    found: set[int] | None = None
    for term in dict.fromkeys(tokens(text)):
        postings = index.postings(term)
        docs = {d for d, code in zip(postings.docids, postings.codes) if decode_code(code)[0][position]}
        found = docs if found is None else found & docs
    return found or set()


def _tag_siblings(index, card: Card, tags: list[str], agent: str | None) -> list[dict[str, Any]]:
    wanted = {t.lower() for t in tags}
    candidates: set[int] = set()
    for tag in wanted:
        candidates |= _docs_with_terms(index, tag, "tags")
    out = []
    for meta in index.docs(candidates).values():
        shared = sorted(wanted & {t.lower() for t in meta["tags"]})
        if shared and meta["path"] != card.rel and visible(meta, agent):
            out.append({"id": meta.get("id"), **_node(meta), "shared_tags": shared})
    out.sort(key=lambda item: (-len(item["shared_tags"]), item["path"]))
    return out[:SIBLINGS]


def _project_siblings(index, card: Card, project: str, agent: str | None) -> list[dict[str, Any]]:
    out = []
    for meta in index.docs(_docs_with_terms(index, project, "meta")).values():
        if meta["project"].lower() == project.lower() and meta["path"] != card.rel and visible(meta, agent):
            out.append({"id": meta.get("id"), **_node(meta), "project": meta["project"]})
    out.sort(key=lambda item: item["path"])
    return out[:SIBLINGS]


@valueclass
class Graph:
    nodes: list[dict[str, Any]]
    edges: list[dict[str, Any]]


def graph(vault: Vault, since: str | None = None, agent: str | None = None) -> Graph:
    """The `{nodes, edges}` (docs/compatibility.md, Relations) of the visible cards, from the index, each node with its
    effective confidence (as `list` shows it; None for a card the listing skips). With `since`, only the
    links created or changed at or after that moment, and the cards they join (a wikilink
    carries no time, so it is left out then)."""
    from ..vault.kinds import check_moment
    from ..vault.storage import parse_time

    moment = parse_time(check_moment(since, "--since")) if since is not None else None
    index = open_index(vault, vault.settings.search.freshness_sweep)
    try:
        cards = [c for c in index.all_cards() if visible(c, agent)]
        pairs = resolve_rows(index, index.all_links(), lambda r: ("id", r["to"]) if r["to"] else ("name", r["name"]))
    finally:
        index.close()
    edges = []
    for row, target in pairs:
        source = row["source"]
        if target is None or not visible(source, agent) or not visible(target, agent):
            continue
        if moment is not None:
            changed = parse_time(row.get("updated") or row.get("created"))
            if changed is None or changed < moment:
                continue
        edge = {"source": source.get("id"), "target": target.get("id"), "source_path": source["path"],
                "target_path": target["path"], "rel": row["rel"], "weight": row["weight"],
                "via": "links" if row["to"] else "wikilink"}
        for key in ("reason", "version", "created", "updated"):
            if row.get(key) is not None:
                edge[key] = row[key]
        edges.append(edge)
    if moment is not None:
        joined = {e["source_path"] for e in edges} | {e["target_path"] for e in edges}
        cards = [c for c in cards if c["path"] in joined]
    confidence = _confidences(vault, agent)
    nodes = [{"id": c.get("id"), "path": c["path"], "title": c["title"], "type": c["type"], "domain": c["domain"],
              "tags": c["tags"], "project": c["project"] or None, "status": c["status"],
              "confidence": confidence.get(c["path"])} for c in cards]
    return Graph(nodes, edges)


def _confidences(vault: Vault, agent: str | None) -> dict[str, float]:
    """Each visible card's effective confidence as of now, by path, as `list` shows it (the
    same function: `cards.list_lines`), so a graph can size its nodes by what reads show."""
    from ..cards import LINE_KEYS, list_lines
    from ..search.keyword import Filters

    place, path = LINE_KEYS.index("confidence"), LINE_KEYS.index("path")
    return {row[path]: row[place] for row in list_lines(vault, Filters(status="any", agent=agent)).rows}
