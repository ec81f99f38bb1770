"""MCP tools on memories (cards): `store_memory`, `recall_memories`, `list_memories`, `get_memory`,
`update_memory`, `delete_memory`, `merge_memories`, `record_feedback`.

Each tool is a function `(vault, args) -> dict` that calls one library operation and shapes its
result, and its `Tool` entry in this module's `TOOLS`; `doors.mcp` lists every group's tools.
"""

from __future__ import annotations

from typing import Any

from ...vault.storage import Vault
from .. import seed_shapes
from .schemas import (Tool, _integer, _object, _string, _strings, _AGENT, _CARD_REF, _EXPECT_HASH, _FILTERS, _LISTED,
                      _MEMORY_FIELDS, _NULLABLE_STRING, _RECALLED, _STRING_LIST, _SUMMARY)


def _filters(args: dict[str, Any], status: str | None):
    from ...search.keyword import Filters

    return Filters(domain=args.get("domain_filter"), type=args.get("type_filter"),
                   tags=tuple(args.get("tag_filter") or ()), project=args.get("context_filter"),
                   status=args.get("status") or status, agent=args.get("agent"))


def _store_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...cards import create_card, default_domain, memory_type_of, title_from_body

    card_type, kept = memory_type_of(args.get("memory_type", "insight"))
    domain = args.get("domain") or default_domain(vault)
    content = args["content"]
    from ...cards import memory_summary

    result = create_card(
        vault, card_type=card_type, domain=domain, title=args.get("title") or title_from_body(content),
        body=content, tags=args["tags"], project=args["context_name"], importance=args.get("importance"),
        scope=args.get("scope"), agent=args.get("agent"), extra={"memory_type": kept} if kept else None)
    data = result.as_dict()
    data["create_insights"] = data.pop("insights")   # by kind, as the CLI's `create --json` gives them
    return {**data, "success": result.created, "memory_id": result.card.id if result.card else None,
            "summary": memory_summary(content), **seed_shapes.stored(vault, result.insights)}


def _recall_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...answers.searching import search_cards

    result = search_cards(vault, args["query"], _filters(args, None), args.get("limit", 5))
    hits = seed_shapes.recalled(result)
    return {"query": args["query"], "memories": hits, "total_found": len(hits), "cut": result.cut,
            "miss_candidate": result.miss_candidate, "unfiltered": result.unfiltered,
            **_warnings(result.all_warnings())}


def _list_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...cards import list_page

    offset, limit = args.get("offset", 0), args.get("limit", 20)
    result = list_page(vault, _filters(args, "any"), args.get("sort", "title"), offset, limit)
    return {"memories": seed_shapes.listed(vault, result.cards), "total_count": result.total,
            "has_more": result.has_more(offset), **_warnings([p.warning() for p in result.problems])}


def _warnings(lines: list[str]) -> dict[str, Any]:
    """`{"warnings": lines}` when there are any (what the CLI prints on stderr), else nothing."""
    return {"warnings": lines} if lines else {}


def _get_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...cards import UnparsedCard, get_card

    view = get_card(vault, args["memory_id"], args.get("agent"))
    if isinstance(view, UnparsedCard):   # its frontmatter does not parse: its text, and the warning
        return view.details()
    return {**view.details(), **seed_shapes.memory_fields(view.card)}


def _update_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.lifecycle import update_card

    result = update_card(
        vault, args["memory_id"], title=args.get("title"), body=args.get("content"), append=args.get("append"),
        tags=args.get("tags"), memory_type=args.get("memory_type"), domain=args.get("domain"),
        project=args.get("context_name"), importance=args.get("importance"), status=args.get("status"),
        expect_hash=args.get("expect_hash"), agent=args.get("agent"))
    return {"success": True, "memory_id": result.card.id, "changes": result.changed, **result.as_dict()}


def _delete_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.lifecycle import delete_card

    result = delete_card(vault, args["memory_id"], args.get("dry_run", False), args.get("expect_hash"),
                         agent=args.get("agent"))
    return {"success": True, "deleted_id": None if result.dry_run else result.id, **result.as_dict()}


def _merge_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.relations import merge

    result = merge(vault, args["keep_id"], args["merge_id"], agent=args.get("agent"))
    return {"success": True, "memory_id": result.card.id, **result.as_dict()}


def _record_feedback(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...cards import record

    return record(vault, args["memory_id"], args["outcome"], args.get("note"), agent=args.get("agent")).as_dict()


# get_memory's answer: the memory in full, or (its frontmatter does not parse) its path, raw text and
# a warning naming the line and the fix (`cards.UnparsedCard`, as the CLI's `get` and HTTP give it).
_GOT = _object({**_SUMMARY["properties"], **_MEMORY_FIELDS, "action": {"type": "string"}, "body": {"type": "string"},
                "frontmatter": {"type": "object"}, "stored_confidence": {"type": "number"},
                "last_referenced": _NULLABLE_STRING, "hash": {"type": "string"},
                "raw": {"type": "string"}, "warning": {"type": "string"}}, closed=False)
_GOT["anyOf"] = [{"required": ["path", "id", "title", "confidence", "action", "body", "frontmatter", "hash", "content",
                               "summary", "type", "context", "tags", "created_at", "updated_at"]},
                 {"required": ["path", "raw", "warning"]}]

TOOLS: tuple[Tool, ...] = (
    Tool("store_memory",
         "Store a new memory (a knowledge card in Playbooks/). Returns its id plus insights: suggested "
         "links, potential duplicates (use update instead), superseded facts, contradictions.",
         _object({"content": _string("the knowledge itself, Markdown", minLength=1),
                  "context_name": _string("project or situation it belongs to"),
                  "tags": _strings("keywords, e.g. [\"ecs\", \"timeout\"]"),
                  "memory_type": _string("a card type (troubleshooting, decision, runbook, pattern, checklist, "
                                         "insight, fact, state, episode) or a memory type: success, failure, note; "
                                         "default insight"),
                  "title": _string("one-line title (default: the content's first heading or line)"),
                  "domain": _string("domain, e.g. infra or dev (default general)"),
                  "importance": _integer("1 (minor) to 5 (critical)", 1, 5),
                  "scope": _string("global (every agent) or agent (private to `agent`); default: agent when "
                                   "`agent` is given, else global", enum=["global", "agent"]),
                  "agent": _string("make the memory private to this agent")},
                 ("content", "context_name", "tags")),
         _object({"success": {"type": "boolean"}, "memory_id": _NULLABLE_STRING, "summary": {"type": "string"},
                  "created": {"type": "boolean"}, "path": _NULLABLE_STRING, "id": _NULLABLE_STRING,
                  "suggested_links": {"type": "array", "items": _object(
                      {"target_id": _NULLABLE_STRING, "target_summary": {"type": "string"},
                       "similarity": {"type": ["number", "null"]}, "suggested_relation": {"type": "string"},
                       "reason": {"type": "string"}},
                      ("target_id", "target_summary", "similarity", "suggested_relation", "reason"), closed=False)},
                  "insights": {"type": "array", "items": _object(
                      {"type": {"type": "string"}, "message": {"type": "string"},
                       "related_memory_id": _NULLABLE_STRING, "confidence": {"type": ["number", "null"]},
                       "suggested_action": {"type": "string"}},
                      ("type", "message", "related_memory_id", "confidence", "suggested_action"), closed=False)},
                  "link_suggestion_message": _NULLABLE_STRING, "suggested_tags": _STRING_LIST,
                  "create_insights": {"type": "object"}, "skipped_reason": _NULLABLE_STRING},
                 ("success", "memory_id", "summary", "created", "path", "suggested_links", "insights",
                  "link_suggestion_message", "suggested_tags"), closed=False),
         _store_memory),
    Tool("recall_memories",
         "Search memories for a query (BM25F keywords, hybrid with vectors when embeddings are configured; "
         "English and Japanese). Weak matches are cut, "
         "so an empty list means nothing relevant is stored.",
         _object({"query": _string("what you are looking for, e.g. an error message", minLength=1),
                  "limit": _integer("most memories to return", 1, 20, 5), **_FILTERS,
                  "agent": _string("agent name: also see this agent's private memories")}, ("query",)),
         _object({"query": {"type": "string"}, "memories": {"type": "array", "items": _RECALLED},
                  "total_found": {"type": "integer"}, "cut": {"type": "integer"},
                  "miss_candidate": _NULLABLE_STRING, "unfiltered": {"type": ["integer", "null"]}},
                 ("query", "memories", "total_found"), closed=False),
         _recall_memories),
    Tool("list_memories",
         "List memories one summary each, with paging and filters.",
         _object({"limit": _integer("most memories to return", 1, 1000, 20),
                  "offset": _integer("memories to skip", 0, 10_000_000, 0), **_FILTERS,
                  "status": _string("active, superseded, archived or any (default any)"),
                  "sort": _string("order", enum=["title", "confidence", "updated"]),
                  "agent": _string("agent name: also see this agent's private memories")}),
         _object({"memories": {"type": "array", "items": _LISTED}, "total_count": {"type": "integer"},
                  "has_more": {"type": "boolean"}}, ("memories", "total_count", "has_more"), closed=False),
         _list_memories, read_only=True),
    Tool("get_memory",
         "Read one memory in full, with its effective confidence and the action it calls for "
         "(apply / apply and verify / reference only) and its hash (for update_memory's expect_hash). "
         "Logs a reference.",
         _object({"memory_id": _CARD_REF, "agent": _AGENT}, ("memory_id",)),
         _GOT,
         _get_memory),
    Tool("update_memory",
         "Change a memory: only the fields given change (content replaces the body, tags replace the tags). "
         "Logged and undoable (`brain undo`). With expect_hash, refused with CONFLICT if it changed meanwhile.",
         _object({"memory_id": _CARD_REF, "content": _string("new content (the whole body, Markdown)"),
                  "append": _string("text added at the end of the body", minLength=1),
                  "tags": _strings("new tags (replace the old ones)"),
                  "memory_type": _string("a card type, or a memory type: success, failure, note"),
                  "title": _string("new one-line title (renames the file; the id stays)"),
                  "domain": _string("new domain"),
                  "context_name": _string("project it belongs to (empty string clears it)"),
                  "importance": _integer("1 (minor) to 5 (critical)", 1, 5),
                  "status": _string("active, archived, superseded or a status of your own"),
                  "expect_hash": _EXPECT_HASH, "agent": _AGENT}, ("memory_id",)),
         _object({"success": {"type": "boolean"}, "memory_id": _NULLABLE_STRING, "changes": _STRING_LIST,
                  "path": {"type": "string"}, "id": _NULLABLE_STRING, "hash": {"type": "string"},
                  "changed": _STRING_LIST, "renamed_from": _NULLABLE_STRING, "relinked": _STRING_LIST,
                  "event": _NULLABLE_STRING},
                 ("success", "memory_id", "changes", "path", "hash", "changed", "event"), closed=False),
         _update_memory),
    Tool("delete_memory",
         "Delete a memory and every link pointing at it. Logged and undoable (`brain undo`). "
         "With expect_hash, refused with CONFLICT if it changed meanwhile.",
         _object({"memory_id": _CARD_REF, "expect_hash": _EXPECT_HASH,
                  "dry_run": {"type": "boolean", "description": "only say what would be removed", "default": False},
                  "agent": _AGENT}, ("memory_id",)),
         _object({"success": {"type": "boolean"}, "deleted_id": _NULLABLE_STRING, "path": {"type": "string"},
                  "id": _NULLABLE_STRING, "title": {"type": "string"}, "cascaded": _STRING_LIST,
                  "dry_run": {"type": "boolean"}, "event": _NULLABLE_STRING},
                 ("success", "deleted_id", "path", "cascaded", "dry_run", "event"), closed=False),
         _delete_memory),
    Tool("merge_memories",
         "Merge two memories into one: the kept one gets both bodies, the union of their tags and links; the "
         "other is marked superseded by it (not deleted). One operation, undoable (`brain undo`).",
         _object({"keep_id": _string("the memory that stays"), "merge_id": _string("the memory folded into it"),
                  "agent": _AGENT}, ("keep_id", "merge_id")),
         _object({"success": {"type": "boolean"}, "memory_id": _NULLABLE_STRING, "path": {"type": "string"},
                  "merged_id": _NULLABLE_STRING, "merged_path": {"type": "string"}, "tags": _STRING_LIST,
                  "tags_added": _STRING_LIST, "links_added": {"type": "array", "items": {"type": "object"}},
                  "event": {"type": "string"}},
                 ("success", "memory_id", "merged_id", "tags", "event"), closed=False),
         _merge_memories),
    Tool("record_feedback",
         "Say whether a memory helped after applying it: used or rejected. Moves its confidence (EWA).",
         _object({"memory_id": _CARD_REF, "outcome": _string("did it help?", enum=["used", "rejected"]),
                  "note": _string("one sentence on why", maxLength=2000), "agent": _AGENT}, ("memory_id", "outcome")),
         _object({"path": {"type": "string"}, "id": _NULLABLE_STRING, "outcome": {"type": "string"},
                  "before": {"type": "number"}, "decayed": {"type": "number"}, "after": {"type": "number"},
                  "event": {"type": "string"}}, ("path", "outcome", "before", "after"), closed=False),
         _record_feedback),
)
