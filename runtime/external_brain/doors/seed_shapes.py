"""The MCP tools' compatible return shapes (docs/compatibility.md), field for field, beside the product's own fields.

The MCP memory design the tools keep (docs/compatibility.md, MCP tools) names what each returns: a memory is `id`, `summary`,
`content`, `type`, `context` (its project), `tags`, `created_at` (and `updated_at`); a recalled
one adds `similarity`; explore gives `linked`, `by_tag` and `by_context`; `get_memory_links`
gives `links[{target_id, target_summary, relation_type, reason, created_at}]`; `get_stats` and
`analyze_knowledge` count contexts; `store_memory` gives `suggested_links`, a list of
`insights` and `link_suggestion_message`. These functions add those fields to what the library
returns (each tool keeps its other fields, which the CLI's `--json` also shows); every value
comes from the library (`cards.memory_summary`, `SearchResult.similarity`), none is judged here.
"""

from __future__ import annotations

from typing import Any

from ..vault.storage import Card, Vault


def memory_fields(card: Card) -> dict[str, Any]:
    """The seed's fields of one memory that the card holds: summary, content, context, created_at, updated_at."""
    from ..cards import memory_content, memory_summary

    return {"summary": memory_summary(card.body, card.title), "content": memory_content(card.body, card.title),
            "context": card.text_field("project") or None, "created_at": card.text_field("created") or None,
            "updated_at": card.text_field("updated") or None}


def recalled(result) -> list[dict[str, Any]]:
    """recall_memories' memories: each hit with its similarity (0..1) and the seed's memory fields."""
    return [{**hit.as_dict(), **memory_fields(hit.card), "similarity": result.similarity(hit)}
            for hit in result.hits]


def listed(vault: Vault, views: list) -> list[dict[str, Any]]:
    """list_memories' memories: each summary with the seed's summary, context and created_at
    (the page's cards are read for their summaries; the index holds no bodies)."""
    from ..cards import summaries

    texts = summaries(vault, [view.card.rel for view in views])
    return [{**view.summary(), "summary": texts.get(view.card.rel, ""),
             "context": view.card.text_field("project") or None,
             "created_at": view.card.text_field("created") or None} for view in views]


def explored(vault: Vault, data: dict[str, Any]) -> dict[str, Any]:
    """explore_related's result with each item's summary, `relation_type` and `reason` for the
    linked ones, and `by_context` (the seed's name for the cards of the same project)."""
    from ..cards import summaries

    items = [*data["linked"], *data["by_tag"], *data["by_project"]]
    texts = summaries(vault, [item.get("path") for item in items])
    for item in items:
        item["summary"] = texts.get(item.get("path") or "", "")
    for item in data["linked"]:
        item["relation_type"] = item.get("rel")
        item.setdefault("reason", None)
    by_context = [{**item, "context": item.get("project")} for item in data["by_project"]]
    return {**data, "by_context": by_context}


def links_of(vault: Vault, data: dict[str, Any]) -> dict[str, Any]:
    """get_memory_links' `links`: the outgoing links (the seed's), each with its target's summary."""
    from ..cards import summaries

    texts = summaries(vault, [item.get("path") for item in data["outgoing"]])
    links = [{"target_id": item.get("id"), "target_summary": texts.get(item.get("path") or "", ""),
              "relation_type": item.get("rel"), "reason": item.get("reason"), "created_at": item.get("created"),
              "weight": item.get("weight"), "target_path": item.get("path")} for item in data["outgoing"]]
    return {**data, "links": links}


def contexts_of(counts: dict[str, int]) -> int:
    """How many contexts (projects) the memories name: a count by project without the no-project bucket."""
    return len([name for name in counts if name != "(none)"])


_INSIGHT_KINDS = {
    "potential_duplicates": ("potential_duplicate", "This memory is very similar ({pct}%) to {title}",
                             "Use update_memory on it instead"),
    "contradictions": ("potential_contradiction", "This memory may contradict {title} (same subject, different "
                       "content)", "Check which is right; update or supersede the other"),
    "success_after_failure": ("success_after_failure", "This may resolve {title}, whose last feedback was "
                              "rejected", "Link them with link_memories"),
    "supersedes": ("supersedes", "This memory replaces {title}", "Nothing to do: the older one is superseded"),
}


def stored(vault: Vault, insights: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """store_memory's seed fields from create's insights: `suggested_links`, the `insights`
    list, `link_suggestion_message` and `suggested_tags` (names)."""
    from ..cards import summaries

    texts = summaries(vault, [item["path"] for item in insights.get("suggested_links", [])])
    links = [{"target_id": item.get("id"), "target_summary": texts.get(item["path"], ""),
              "similarity": item.get("cosine", item.get("similarity")), "suggested_relation": item.get("rel", "related"),
              "reason": "similar content; may be related or an application of it", "target_path": item["path"]}
             for item in insights.get("suggested_links", [])]
    listed_insights = []
    for key, (kind, message, action) in _INSIGHT_KINDS.items():
        for item in insights.get(key, []):
            similarity = item.get("cosine", item.get("similarity"))
            listed_insights.append({
                "type": kind, "message": message.format(pct=round(100 * (similarity or 0)), title=item.get("title")),
                "related_memory_id": item.get("id"), "confidence": similarity, "suggested_action": action,
                "related_path": item.get("path")})
    message = (f"Found {len(links)} related memor{'y' if len(links) == 1 else 'ies'}. Consider linking "
               f"{'it' if len(links) == 1 else 'them'}." if links else None)
    return {"suggested_links": links, "insights": listed_insights, "link_suggestion_message": message,
            "suggested_tags": [tag["name"] for tag in insights.get("suggested_tags", [])]}
