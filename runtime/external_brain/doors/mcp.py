"""`brain mcp`: the Model Context Protocol door, JSON-RPC 2.0 over stdio (README, "Wiring it into your agent"; docs/compatibility.md, MCP tools).

Promises:
- One JSON message per line in, one per line out; stdout carries protocol only (anything else
  that writes to `sys.stdout` while a tool runs goes to stderr), logs go to stderr.
- Lifecycle of the 2025-11-25 revision: `initialize` answers the client's protocol version when
  it is one of `PROTOCOL_VERSIONS`, else the latest; `notifications/initialized`, `ping`,
  `tools/list`, `tools/call`. Unknown methods get -32601 at once (clients of later revisions
  probe `server/discover` and fall back on it), a line that is not JSON gets -32700, a message
  that is not a request -32600, and the server reads on. Notifications get no response.
- Each tool is one `Tool` entry: name, description, inputSchema, outputSchema and a function
  that calls one library operation and shapes its result. A result carries `structuredContent`
  and the same JSON as a text block. Arguments are checked against the inputSchema (required
  keys, types, ranges, unknown keys) and a bad one, like any `BrainError`, comes back as an
  `isError` result naming the problem.
- Long-lived but stateless between calls: every call builds a fresh `Vault` (settings re-read),
  opens the index inside the operation and closes it, caches no card and holds no lock, so it
  sees what other processes changed. A bug in one call is logged with its traceback and
  answered with -32603; the server goes on.
- No request takes the server down. A lone surrogate (`"\ud800"`, valid JSON but no Unicode
  character) is refused where it stands: in an argument as an `isError` result naming it, in the
  id as -32600 with a null id (it cannot be written back); an operating-system error (a read-only
  vault) is the CLI's one line, IO_ERROR, as an `isError` result, never -32603.
"""

from __future__ import annotations

import json
import sys
import traceback
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable

from .. import __version__
from ..errors import BrainError
from ..vault import strict_json
from ..vault.events import acting_as
from ..vault.storage import Vault, lone_surrogate, printable
from . import seed_shapes
from .access import bind_agent

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")   # newest first
MAX_LINE_BYTES = 16 * 1024 * 1024

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)

INSTRUCTIONS = (
    "External Brain is a knowledge base of Markdown cards. Before non-trivial work call "
    "recall_memories (or brief); read a hit with get_memory; after applying a card call "
    "record_feedback with used or rejected. Confidence >= 0.8: apply; 0.5-0.79: apply and verify; "
    "< 0.5: reference only. Store new lessons with store_memory.")


# ---------------------------------------------------------------------------- schemas

def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _integer(description: str, minimum: int, maximum: int, default: int | None = None) -> dict[str, Any]:
    schema = {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum}
    if default is not None:
        schema["default"] = default
    return schema


def _strings(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _object(properties: dict[str, Any], required: tuple[str, ...] = (), closed: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    if closed:
        schema["additionalProperties"] = False
    return schema


_NULLABLE_STRING = {"type": ["string", "null"]}
_STRING_LIST = {"type": "array", "items": {"type": "string"}}
_HIT = _object({"path": {"type": "string"}, "id": _NULLABLE_STRING, "title": {"type": "string"},
                "type": {"type": "string"}, "domain": {"type": "string"}, "tags": _STRING_LIST,
                "confidence": {"type": "number"}, "score": {"type": "number"}, "snippet": {"type": "string"}},
               ("path", "id", "title", "type", "domain", "tags", "confidence", "score", "snippet"), closed=False)
_SUMMARY = _object({"path": {"type": "string"}, "id": _NULLABLE_STRING, "title": {"type": "string"},
                    "type": {"type": "string"}, "domain": {"type": "string"}, "tags": _STRING_LIST,
                    "confidence": {"type": "number"}, "status": {"type": "string"}, "updated": _NULLABLE_STRING},
                   ("path", "id", "title", "type", "domain", "tags", "confidence", "status"), closed=False)
_ENTRY = _object({"key": {"type": "string"}, "body": {"type": "string"}, "created": {"type": "string"},
                  "updated": {"type": "string"}, "expires": {"type": "string"}},
                 ("key", "body", "created", "updated", "expires"), closed=False)
_CARD_REF = _string("the memory's id, its vault-relative path (Playbooks/X.md) or its file stem")
# A memory's compatible fields (docs/compatibility.md; seed_shapes.memory_fields), and its recalled and listed forms.
_MEMORY_FIELDS = {"summary": {"type": "string"}, "content": {"type": "string"}, "context": _NULLABLE_STRING,
                  "created_at": _NULLABLE_STRING, "updated_at": _NULLABLE_STRING}
_RECALLED = _object({**_HIT["properties"], **_MEMORY_FIELDS, "similarity": {"type": "number", "minimum": 0,
                                                                            "maximum": 1}},
                    (*_HIT["required"], "summary", "content", "similarity", "context", "created_at"), closed=False)
_LISTED = _object({**_SUMMARY["properties"], "summary": {"type": "string"}, "context": _NULLABLE_STRING,
                   "created_at": _NULLABLE_STRING},
                  (*_SUMMARY["required"], "summary", "context", "created_at"), closed=False)
_AGENT = _string("agent name: also see (and change) this agent's private memories")
_EXPECT_HASH = _string("refuse with CONFLICT unless the memory still has this hash (get_memory's `hash`)")
_CARD_NODE = _object({"path": {"type": "string"}, "id": _NULLABLE_STRING, "title": {"type": "string"}},
                     ("path", "id", "title"), closed=False)
_LINK_ITEM = _object({"id": _NULLABLE_STRING, "path": _NULLABLE_STRING, "title": _NULLABLE_STRING,
                      "rel": {"type": "string"}, "weight": {"type": "number"}},
                     ("id", "path", "title", "rel", "weight"), closed=False)
_RELATED_ITEM = _object({"id": _NULLABLE_STRING, "path": {"type": "string"}, "title": {"type": "string"}},
                        ("id", "path", "title"), closed=False)
_COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}
_PERSON = _object({"name": {"type": "string"}, "nickname": {"type": "string"},
                   "preferred_address": {"type": "string"}}, closed=False)
_PERSONA = _object({"user_info": _PERSON, "persona_info": _PERSON, "current_emotion": {"type": "string"},
                    "physical_state": {"type": "string"}, "mental_state": {"type": "string"},
                    "environment": {"type": "string"}, "relationship_status": {"type": "string"},
                    "last_conversation_time": _NULLABLE_STRING},
                   ("user_info", "persona_info", "current_emotion", "physical_state", "mental_state", "environment",
                    "relationship_status", "last_conversation_time"), closed=False)
_KEY = _string("working-memory key: letters, digits, '-' or '_'")
_WM_AGENT = _string("agent name: this agent's own notes (it also reads the shared ones)")
_FILTERS = {
    "context_filter": _string("only memories of this project (context)"),
    "tag_filter": _strings("only memories carrying all of these tags"),
    "type_filter": _string("only memories of this type: a card type, or seed 000's success, failure, note"),
    "domain_filter": _string("only memories of this domain"),
}


# ---------------------------------------------------------------------------- the tools

@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    run: Callable[[Vault, dict[str, Any]], dict[str, Any]]
    read_only: bool = False

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema,
                "outputSchema": self.output_schema, "annotations": {"readOnlyHint": self.read_only}}


def _filters(args: dict[str, Any], status: str):
    from ..search.keyword import Filters

    return Filters(domain=args.get("domain_filter"), type=args.get("type_filter"),
                   tags=tuple(args.get("tag_filter") or ()), project=args.get("context_filter"),
                   status=args.get("status") or status, agent=args.get("agent"))


def _store_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..cards import create_card, default_domain, memory_type_of, title_from_body

    card_type, kept = memory_type_of(args.get("memory_type", "insight"))
    domain = args.get("domain") or default_domain(vault)
    content = args["content"]
    from ..cards import memory_summary

    result = create_card(
        vault, card_type=card_type, domain=domain, title=args.get("title") or title_from_body(content),
        body=content, tags=args["tags"], project=args["context_name"], importance=args.get("importance"),
        scope=args.get("scope"), agent=args.get("agent"), extra={"memory_type": kept} if kept else None)
    data = result.as_dict()
    data["create_insights"] = data.pop("insights")   # by kind, as the CLI's `create --json` gives them
    return {**data, "success": result.created, "memory_id": result.card.id if result.card else None,
            "summary": memory_summary(content), **seed_shapes.stored(vault, result.insights)}


def _recall_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..answers.searching import search_cards

    result = search_cards(vault, args["query"], _filters(args, "active"), args.get("limit", 5))
    hits = seed_shapes.recalled(result)
    return {"query": args["query"], "memories": hits, "total_found": len(hits), "cut": result.cut,
            "miss_candidate": result.miss_candidate}


def _list_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..cards import list_page

    offset, limit = args.get("offset", 0), args.get("limit", 20)
    result = list_page(vault, _filters(args, "any"), args.get("sort", "title"), offset, limit)
    return {"memories": seed_shapes.listed(vault, result.cards), "total_count": result.total,
            "has_more": offset + len(result.cards) < result.total}


def _get_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..cards import get_card

    view = get_card(vault, args["memory_id"], args.get("agent"))
    return {**view.details(), **seed_shapes.memory_fields(view.card)}


def _update_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.lifecycle import update_card

    result = update_card(
        vault, args["memory_id"], title=args.get("title"), body=args.get("content"), append=args.get("append"),
        tags=args.get("tags"), memory_type=args.get("memory_type"), domain=args.get("domain"),
        project=args.get("context_name"), importance=args.get("importance"), status=args.get("status"),
        expect_hash=args.get("expect_hash"), agent=args.get("agent"))
    return {"success": True, "memory_id": result.card.id, "changes": result.changed, **result.as_dict()}


def _delete_memory(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.lifecycle import delete_card

    result = delete_card(vault, args["memory_id"], args.get("dry_run", False), args.get("expect_hash"),
                         agent=args.get("agent"))
    return {"success": True, "deleted_id": None if result.dry_run else result.id, **result.as_dict()}


def _get_stats(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..answers.insights import stats

    result = stats(vault, args.get("agent"))
    return {"total_memories": result.total, "memories_by_type": result.by_type,
            "total_contexts": seed_shapes.contexts_of(result.by_project), **result.as_dict()}


def _link_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.relations import link

    result = link(vault, args["source_id"], args["target_id"], args["relation_type"], args.get("weight"),
                  args.get("reason"), agent=args.get("agent"))
    return {"success": True, "relation_type": result.link["rel"], **result.as_dict()}


def _unlink_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.relations import unlink

    result = unlink(vault, args["source_id"], args["target_id"], args.get("relation_type"), agent=args.get("agent"))
    return {"success": True, "source_id": result.source.id, "target_id": result.target.id, **result.as_dict()}


def _explore_related(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.graph import explore

    result = explore(vault, args["memory_id"], args.get("depth", 1), args.get("agent"),
                     by_tag=args.get("include_tag_siblings", True),
                     by_project=args.get("include_context_siblings", True))
    return {"memory_id": result.card["id"], **seed_shapes.explored(vault, result.as_dict())}


def _get_memory_links(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.graph import links

    result = links(vault, args["memory_id"], args.get("direction", "both"), args.get("agent"))
    return {"memory_id": result.card["id"], **seed_shapes.links_of(vault, result.as_dict())}


def _analyze_knowledge(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..answers.insights import analyze

    result = analyze(vault, args.get("agent"))
    data = result.as_dict()
    per_context = data["stats"].get("memories_per_project", {})
    data["stats"] = {**data["stats"], "memories_per_context": per_context}
    return {"total_memories": result.total, "total_contexts": seed_shapes.contexts_of(per_context), **data}


def _merge_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..evolution.relations import merge

    result = merge(vault, args["keep_id"], args["merge_id"], agent=args.get("agent"))
    return {"success": True, "memory_id": result.card.id, **result.as_dict()}


def _get_persona_context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..agents.personas import read_context

    return {"persona_context": read_context(vault)}


def _update_persona_context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..agents.personas import update_context

    context, changed = update_context(vault, args)
    return {"success": True, "persona_context": context, "changed": changed}


def _record_feedback(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..cards import record

    return record(vault, args["memory_id"], args["outcome"], args.get("note"), agent=args.get("agent")).as_dict()


def _brief(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..answers.brief import brief

    return brief(vault, args.get("query"), budget=args.get("budget", 800), agent=args.get("agent"),
                 project=args.get("project"), limit=args.get("limit", 5)).as_dict()


def _remember(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..working_memory import remember

    return remember(vault, args["key"], args["body"], args.get("ttl_days"), args.get("agent")).as_dict()


def _recall(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..working_memory import recall

    return recall(vault, args["key"], args.get("agent")).as_dict()


def _forget(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..working_memory import forget

    return {"key": forget(vault, args["key"], args.get("agent")).key, "forgotten": True}


def _context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ..working_memory import context

    live, purged = context(vault, args.get("agent"))
    return {"entries": [e.as_dict() for e in live], "purged": purged}


TOOLS: tuple[Tool, ...] = (
    Tool("store_memory",
         "Store a new memory (a knowledge card in Playbooks/). Returns its id plus insights: suggested "
         "links, potential duplicates (use update instead), superseded facts, contradictions.",
         _object({"content": _string("the knowledge itself, Markdown", minLength=1),
                  "context_name": _string("project or situation it belongs to"),
                  "tags": _strings("keywords, e.g. [\"ecs\", \"timeout\"]"),
                  "memory_type": _string("a card type (troubleshooting, decision, runbook, pattern, checklist, "
                                         "insight, fact, state, episode) or seed 000's success, failure, note; "
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
                  "miss_candidate": _NULLABLE_STRING}, ("query", "memories", "total_found"), closed=False),
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
         _object({**_SUMMARY["properties"], **_MEMORY_FIELDS, "action": {"type": "string"}, "body": {"type": "string"},
                  "frontmatter": {"type": "object"}, "stored_confidence": {"type": "number"},
                  "last_referenced": _NULLABLE_STRING, "hash": {"type": "string"}},
                 ("path", "id", "title", "confidence", "action", "body", "frontmatter", "hash", "content", "summary",
                  "type", "context", "tags", "created_at", "updated_at"), closed=False),
         _get_memory),
    Tool("update_memory",
         "Change a memory: only the fields given change (content replaces the body, tags replace the tags). "
         "Logged and undoable (`brain undo`). With expect_hash, refused with CONFLICT if it changed meanwhile.",
         _object({"memory_id": _CARD_REF, "content": _string("new content (the whole body, Markdown)"),
                  "append": _string("text added at the end of the body", minLength=1),
                  "tags": _strings("new tags (replace the old ones)"),
                  "memory_type": _string("a card type, or seed 000's success, failure, note"),
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
    Tool("get_stats",
         "Counts of memories by type, domain, project, scope and status; the top tags; links; the Inbox; "
         "working memory.",
         _object({"agent": _AGENT}),
         _object({"total_memories": {"type": "integer"}, "memories_by_type": _COUNTS,
                  "total_contexts": {"type": "integer"}, "total": {"type": "integer"},
                  "by_type": _COUNTS, "by_domain": _COUNTS, "by_project": _COUNTS, "by_scope": _COUNTS,
                  "by_status": _COUNTS, "total_tags": {"type": "integer"},
                  "top_tags": {"type": "array", "items": _object({"name": {"type": "string"},
                                                                  "count": {"type": "integer"}}, ("name", "count"))},
                  "links": {"type": "object"}, "inbox": {"type": "integer"}, "working_memory": _COUNTS,
                  "unparseable": {"type": "integer"}},
                 ("total_memories", "memories_by_type", "total_contexts", "total_tags", "total", "by_type", "top_tags",
                  "links"), closed=False),
         _get_stats, read_only=True),
    Tool("link_memories",
         "Link two memories with a typed relation (upsert: linking again updates weight and reason). "
         "Logged and undoable.",
         _object({"source_id": _string("the memory that holds the link"),
                  "target_id": _string("the memory it points to"),
                  "relation_type": _string("related, supersedes, contradicts, extends, depends_on (or the vault's "
                                           "own relations)"),
                  "reason": _string("why they are linked", maxLength=1000),
                  "weight": {"type": "number", "description": "0 to 1 (default 1 for a new link)",
                             "minimum": 0, "maximum": 1},
                  "agent": _AGENT}, ("source_id", "target_id", "relation_type")),
         _object({"success": {"type": "boolean"}, "relation_type": {"type": "string"},
                  "source_id": _NULLABLE_STRING, "target_id": _NULLABLE_STRING, "source": {"type": "string"},
                  "target": {"type": "string"}, "rel": {"type": "string"}, "weight": {"type": "number"},
                  "reason": _NULLABLE_STRING, "version": {"type": ["integer", "null"]},
                  "changed": {"type": "boolean"}, "event": _NULLABLE_STRING},
                 ("success", "relation_type", "source_id", "target_id", "weight", "changed"), closed=False),
         _link_memories),
    Tool("unlink_memories",
         "Remove the links from one memory to another (only those of relation_type when given). "
         "Logged and undoable.",
         _object({"source_id": _string("the memory that holds the link"),
                  "target_id": _string("the memory it points to"),
                  "relation_type": _string("only this relation (default: every link to the target)"),
                  "agent": _AGENT}, ("source_id", "target_id")),
         _object({"success": {"type": "boolean"}, "source_id": _NULLABLE_STRING, "target_id": _NULLABLE_STRING,
                  "source": {"type": "string"}, "target": {"type": "string"},
                  "removed": {"type": "array", "items": {"type": "object"}}, "event": {"type": "string"}},
                 ("success", "source_id", "target_id", "removed", "event"), closed=False),
         _unlink_memories),
    Tool("explore_related",
         "Memories related to one: linked to it either way (up to depth hops, with relation and reason), "
         "sharing its tags, of the same project (context).",
         _object({"memory_id": _CARD_REF,
                  "include_tag_siblings": {"type": "boolean", "description": "include memories sharing tags",
                                           "default": True},
                  "include_context_siblings": {"type": "boolean",
                                               "description": "include memories of the same project",
                                               "default": True},
                  "depth": _integer("link hops to follow", 1, 5, 1), "agent": _AGENT}, ("memory_id",)),
         _object({"memory_id": _NULLABLE_STRING, "card": _CARD_NODE, "depth": {"type": "integer"},
                  "linked": {"type": "array", "items": _object(
                      {**_LINK_ITEM["properties"], "summary": {"type": "string"}, "relation_type": {"type": "string"},
                       "reason": _NULLABLE_STRING}, ("id", "summary", "relation_type", "reason"), closed=False)},
                  "by_tag": {"type": "array", "items": _object(
                      {**_RELATED_ITEM["properties"], "summary": {"type": "string"}, "shared_tags": _STRING_LIST},
                      ("id", "summary", "shared_tags"), closed=False)},
                  "by_context": {"type": "array", "items": _object(
                      {**_RELATED_ITEM["properties"], "summary": {"type": "string"}, "context": _NULLABLE_STRING},
                      ("id", "summary", "context"), closed=False)},
                  "by_project": {"type": "array", "items": _RELATED_ITEM}},
                 ("memory_id", "card", "depth", "linked", "by_tag", "by_context", "by_project"), closed=False),
         _explore_related, read_only=True),
    Tool("get_memory_links",
         "A memory's links: outgoing (held in it), incoming (other memories pointing at it) or both.",
         _object({"memory_id": _CARD_REF,
                  "direction": _string("which links (default both)", enum=["out", "in", "both"]),
                  "agent": _AGENT}, ("memory_id",)),
         _object({"memory_id": _NULLABLE_STRING, "card": _CARD_NODE, "direction": {"type": "string"},
                  "links": {"type": "array", "items": _object(
                      {"target_id": _NULLABLE_STRING, "target_summary": {"type": "string"},
                       "relation_type": {"type": "string"}, "reason": _NULLABLE_STRING, "created_at": _NULLABLE_STRING},
                      ("target_id", "target_summary", "relation_type", "reason", "created_at"), closed=False)},
                  "outgoing": {"type": "array", "items": _LINK_ITEM},
                  "incoming": {"type": "array", "items": _LINK_ITEM}},
                 ("memory_id", "card", "direction", "links", "outgoing", "incoming"), closed=False),
         _get_memory_links, read_only=True),
    Tool("analyze_knowledge",
         "Health score 0-100 of the knowledge base and its issues (untagged, unlinked, stale, near-duplicate "
         "memories, similar tags, contradictions, broken links), each with the memories affected and a fix.",
         _object({"agent": _AGENT}),
         _object({"total_memories": {"type": "integer"}, "total_contexts": {"type": "integer"},
                  "total": {"type": "integer"},
                  "health_score": {"type": "number", "minimum": 0, "maximum": 100},
                  "issues": {"type": "array", "items": _object(
                      {"type": {"type": "string"}, "severity": {"type": "string"}, "message": {"type": "string"},
                       "affected_memory_ids": _STRING_LIST, "suggested_action": {"type": "string"}},
                      ("type", "severity", "message", "affected_memory_ids", "suggested_action"), closed=False)},
                  "suggestions": _STRING_LIST, "stats": _object(
                      {"unlinked_memories": {"type": "integer"}, "memories_per_context": _COUNTS},
                      ("unlinked_memories", "memories_per_context"), closed=False)},
                 ("total_memories", "total_contexts", "health_score", "issues", "suggestions", "stats"), closed=False),
         _analyze_knowledge, read_only=True),
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
    Tool("get_persona_context",
         "Seed 001's persona context of this vault (the persona chosen by X-Persona or --persona): user_info, "
         "persona_info, current_emotion, physical_state, mental_state, environment, relationship_status, "
         "last_conversation_time.",
         _object({}),
         _object({"persona_context": _PERSONA}, ("persona_context",)),
         _get_persona_context, read_only=True),
    Tool("update_persona_context",
         "Change fields of the persona context (only the fields given; user_info and persona_info merge their "
         "name, nickname, preferred_address). Logged.",
         _object({"user_info": _PERSON, "persona_info": _PERSON,
                  **{name: _string(f"the persona's {name.replace('_', ' ')}") for name in
                     ("current_emotion", "physical_state", "mental_state", "environment", "relationship_status")},
                  "last_conversation_time": _string("ISO 8601 time of the last conversation")}),
         _object({"success": {"type": "boolean"}, "persona_context": _PERSONA, "changed": _STRING_LIST},
                 ("success", "persona_context", "changed")),
         _update_persona_context),
    Tool("record_feedback",
         "Say whether a memory helped after applying it: used or rejected. Moves its confidence (EWA).",
         _object({"memory_id": _CARD_REF, "outcome": _string("did it help?", enum=["used", "rejected"]),
                  "note": _string("one sentence on why", maxLength=2000), "agent": _AGENT}, ("memory_id", "outcome")),
         _object({"path": {"type": "string"}, "id": _NULLABLE_STRING, "outcome": {"type": "string"},
                  "before": {"type": "number"}, "decayed": {"type": "number"}, "after": {"type": "number"},
                  "event": {"type": "string"}}, ("path", "outcome", "before", "after"), closed=False),
         _record_feedback),
    Tool("brief",
         "A Markdown context block within a token budget: live working memory, then the most useful "
         "memories for the query (or the project) with why each was picked. Empty when nothing is relevant.",
         _object({"query": _string("what you are about to work on"),
                  "budget": _integer("most tokens (CJK ~1 a character, other text ~4 characters)", 1, 100_000, 800),
                  "agent": _string("agent name"), "project": _string("project at hand"),
                  "limit": _integer("most memories to consider", 1, 50, 5)}),
         _object({"markdown": {"type": "string"}, "tokens": {"type": "integer"}, "budget": {"type": "integer"},
                  "query": _NULLABLE_STRING, "working_memory": {"type": "array", "items": _ENTRY},
                  "cards": {"type": "array", "items": {"type": "object"}}, "left_out": {"type": "integer"}},
                 ("markdown", "tokens", "budget", "working_memory", "cards"), closed=False),
         _brief, read_only=True),
    Tool("remember",
         "Keep a short-lived working-memory note under a key (replaces the key's note).",
         _object({"key": _KEY, "body": _string("the note"),
                  "ttl_days": {"type": "number", "description": "days to keep it (default 7)",
                               "exclusiveMinimum": 0, "maximum": 36500}, "agent": _WM_AGENT}, ("key", "body")),
         _ENTRY, _remember),
    Tool("recall",
         "Read the working-memory note under a key.",
         _object({"key": _KEY, "agent": _WM_AGENT}, ("key",)), _ENTRY, _recall),
    Tool("forget",
         "Delete the working-memory note under a key.",
         _object({"key": _KEY, "agent": _WM_AGENT}, ("key",)),
         _object({"key": {"type": "string"}, "forgotten": {"type": "boolean"}}, ("key", "forgotten")),
         _forget),
    Tool("context",
         "Every live working-memory note, newest first (expired ones are purged).",
         _object({"agent": _WM_AGENT}),
         _object({"entries": {"type": "array", "items": _ENTRY}, "purged": _STRING_LIST},
                 ("entries", "purged"), closed=False),
         _context),
)
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


# ---------------------------------------------------------------------------- argument checks

_JSON_TYPES = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
               "array": "an array", "object": "an object", "null": "null"}


def _is(value: Any, kind: str) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    return value is None


def check_arguments(schema: dict[str, Any], args: Any) -> str | None:
    """The first way `args` breaks `schema` (the subset of JSON Schema the tools use), or None."""
    problem = argument_problem(schema, args)
    return problem[1] if problem else None


def argument_problem(schema: dict[str, Any], args: Any) -> tuple[str | None, str] | None:
    """(the argument it is about, or None for the whole object; the message) for the first way
    `args` breaks `schema`, or None. The HTTP door names that argument in its error `details`."""
    if not isinstance(args, dict):
        return None, f"arguments must be an object, got {json.dumps(args)[:80]}"
    for key, value in args.items():
        surrogate = lone_surrogate(key) or lone_surrogate(value)
        if surrogate:
            return printable(key), (f"argument {key!r} holds a lone surrogate ({surrogate}), which is not "
                                    "Unicode text; send whole characters (UTF-8, or both halves of a surrogate pair)")
    properties = schema.get("properties", {})
    missing = [key for key in schema.get("required", ()) if key not in args]
    if missing:
        return missing[0], f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
    if schema.get("additionalProperties") is False:
        unknown = sorted(set(args) - set(properties))
        if unknown:
            return unknown[0], f"unknown argument {unknown[0]!r}; known: {', '.join(properties) or 'none'}"
    for key, value in args.items():
        problem = _check_value(properties.get(key, {}), value)
        if problem:
            return key, f"argument {key!r} {problem}"
    return None


def _check_value(schema: dict[str, Any], value: Any) -> str | None:
    kinds = schema.get("type")
    if kinds is None:
        return None
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if not any(_is(value, kind) for kind in kinds):
        return f"must be {' or '.join(_JSON_TYPES[k] for k in kinds)}, got {json.dumps(value)[:80]}"
    if "enum" in schema and value not in schema["enum"]:
        return f"must be one of {', '.join(map(str, schema['enum']))}, got {json.dumps(value)[:80]}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            return f"must be at least {schema['minimum']}, got {value}"
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            return f"must be more than {schema['exclusiveMinimum']}, got {value}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"must be at most {schema['maximum']}, got {value}"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            return "must not be empty"
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            return f"must be at most {schema['maxLength']} characters, got {len(value)}"
    if isinstance(value, list) and "items" in schema:
        for position, item in enumerate(value):
            problem = _check_value(schema["items"], item)
            if problem:
                return f"item {position} {problem}"
    return None


# ---------------------------------------------------------------------------- the protocol

class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def tool_result(data: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": strict_json.dumps(data, default=str)}],
            "structuredContent": data, "isError": False}


def tool_error(message: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def call_tool(root, params: dict[str, Any], caller=None) -> dict[str, Any]:
    """One `tools/call`: unknown tool -> RpcError -32602; bad arguments or a BrainError -> an
    `isError` result; otherwise the tool's data as structuredContent and text.

    `caller` (an `access.Identity`, from the served transport; None on stdio, where the process
    is the person's own) binds the tool's `agent` argument the way `access.bind_agent` says and
    logs the call's writes as that caller's."""
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(INVALID_PARAMS, "tools/call needs params.name, the name of a tool (a string); "
                                       "tools/list names them")
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        raise RpcError(INVALID_PARAMS, f"unknown tool {name!r}; tools/list names them")
    args = params.get("arguments")
    args = {} if args is None else args
    with acting_as(caller.actor if caller is not None else None):
        problem = check_arguments(tool.input_schema, args)
        if problem:
            _log_failure(root, tool, args, "INVALID_ARGUMENT", problem, caller)
            return tool_error(f"{tool.name}: {problem}")
        try:
            try:
                if caller is not None and "agent" in tool.input_schema["properties"]:
                    args = bind_agent(caller, args, "agent")
                # A fresh Vault per call: settings are re-read and nothing about the cards is kept.
                return tool_result(tool.run(Vault(root), args))
            except OSError as exc:
                # Trigger: an operating-system error no layer below turned into a BrainError (the
                # write lock on a read-only vault). Why: that is the world, not a bug. Outcome: the
                # CLI's one line (path and cause) as an isError result, not -32603.
                from ..vault.storage import io_problem

                raise io_problem(exc) from exc
        except BrainError as exc:
            _log_failure(root, tool, args, exc.code, exc.message, caller)
            return tool_error(f"{tool.name}: {exc.code}: {exc.message}")


# Tools that change the vault: a call that fails is logged (`failed`), like the CLI's writes.
WRITE_TOOLS = frozenset({"store_memory", "update_memory", "delete_memory", "link_memories", "unlink_memories",
                         "merge_memories", "record_feedback", "remember", "forget", "update_persona_context"})


def _log_failure(root, tool: Tool, args: Any, code: str, message: str, caller) -> None:
    if tool.name not in WRITE_TOOLS:
        return
    from ..vault.events import log_failure

    named = next((args[k] for k in ("memory_id", "keep_id", "source_id", "key")
                  if isinstance(args, dict) and isinstance(args.get(k), str)), None)
    log_failure(Vault(root), tool.name, code, message, named, via="mcp-http" if caller is not None else "mcp")


def handle(root, message: Any, caller=None) -> dict[str, Any] | None:
    """The response to one decoded message, or None (notifications and stray responses).
    `caller`: see `call_tool`."""
    if not isinstance(message, dict):
        return _error(None, INVALID_REQUEST, "a message must be a JSON object")
    method = message.get("method")
    has_id = "id" in message
    request_id = message.get("id")
    if method is None and ("result" in message or "error" in message):
        return None  # a response to a request we never send; nothing to answer
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return _error(request_id if _valid_id(request_id) else None, INVALID_REQUEST,
                      'not a JSON-RPC 2.0 request: "jsonrpc": "2.0" and a string "method" are required')
    if not has_id:
        return None  # a notification (initialized, cancelled, ...): never answered
    if not _valid_id(request_id):
        return _error(None, INVALID_REQUEST, "the id must be a string (of Unicode text) or an integer")
    params = message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(request_id, INVALID_PARAMS, "params must be an object")
    try:
        if method == "initialize":
            result = _initialize(params)
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [tool.listing() for tool in TOOLS]}
        elif method == "tools/call":
            result = call_tool(root, params, caller)
        else:
            raise RpcError(METHOD_NOT_FOUND, f"method not found: {printable(method)}")
    except RpcError as exc:
        return _error(request_id, exc.code, exc.message)
    except Exception as exc:  # noqa: BLE001 - a bug: logged in full, answered, and the server goes on
        traceback.print_exc(file=sys.stderr)
        return _error(request_id, INTERNAL_ERROR, f"internal error: {type(exc).__name__}: {exc}")
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _initialize(params: dict[str, Any]) -> dict[str, Any]:
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "external-brain", "version": __version__}, "instructions": INSTRUCTIONS}


def _valid_id(value: Any) -> bool:
    """A string of Unicode text (an id holding a lone surrogate cannot be written back: it is
    answered as an id that cannot be read, null) or an integer."""
    if isinstance(value, str):
        return lone_surrogate(value) is None
    return isinstance(value, int) and not isinstance(value, bool)


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def utf8_json(value: Any) -> bytes:
    """`value` as JSON in UTF-8, for the MCP and HTTP doors. Input that is not Unicode text is
    refused before it gets here; should some still reach an answer (a bug's message), it goes out
    as its escape rather than take the server down (UnicodeEncodeError) or drop the connection."""
    text = strict_json.dumps(value, default=str)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(strict_json.finite(value), ensure_ascii=True, allow_nan=False, default=str).encode("ascii")


def serve(vault: Vault, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer messages from `stdin` until it closes."""
    root = vault.root
    saved_stdout = sys.stdout
    sys.stdout = sys.stderr   # stdout is the protocol's: a stray print must not corrupt it
    print(f"brain mcp: serving {root} on stdio", file=sys.stderr, flush=True)
    try:
        while True:
            line = stdin.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
                while line and not line.endswith(b"\n"):   # drop the rest of the oversized line
                    line = stdin.readline(MAX_LINE_BYTES)
                response = _error(None, PARSE_ERROR, f"message over {MAX_LINE_BYTES} bytes")
            elif not line.strip():
                continue
            else:
                try:
                    message = json.loads(line)
                except (ValueError, RecursionError) as exc:   # bad JSON, bad UTF-8, absurd nesting
                    response = _error(None, PARSE_ERROR, f"parse error: {exc}")
                else:
                    response = handle(root, message)
            if response is not None:
                stdout.write(utf8_json(response) + b"\n")
                stdout.flush()
    except (KeyboardInterrupt, BrokenPipeError):
        return
    finally:
        sys.stdout = saved_stdout
