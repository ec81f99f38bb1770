"""MCP tools that answer about the vault as a whole: `get_stats`, `analyze_knowledge`, `brief`.

Each tool is a function `(vault, args) -> dict` that calls one library operation and shapes its
result, and its `Tool` entry in this module's `TOOLS`; `doors.mcp` lists every group's tools.
"""

from __future__ import annotations

from typing import Any

from ...vault.storage import Vault
from .. import seed_shapes
from .schemas import Tool, _integer, _object, _string, _AGENT, _COUNTS, _ENTRY, _NULLABLE_STRING, _SESSION, _STRING_LIST


def _get_stats(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...answers.insights import stats

    result = stats(vault, args.get("agent"))
    return {"total_memories": result.total, "memories_by_type": result.by_type,
            "total_contexts": seed_shapes.contexts_of(result.by_project), **result.as_dict()}


def _analyze_knowledge(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...answers.insights import analyze

    result = analyze(vault, args.get("agent"))
    data = result.as_dict()
    per_context = data["stats"].get("memories_per_project", {})
    data["stats"] = {**data["stats"], "memories_per_context": per_context}
    return {"total_memories": result.total, "total_contexts": seed_shapes.contexts_of(per_context), **data}


def _brief(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...answers.brief import brief

    return brief(vault, args.get("query"), budget=args.get("budget", 800), agent=args.get("agent"),
                 project=args.get("project"), limit=args.get("limit", 5), session=args.get("session")).as_dict()


TOOLS: tuple[Tool, ...] = (
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
    Tool("brief",
         "A Markdown context block within a token budget: live working memory, then the most useful "
         "memories for the query (or the project) with why each was picked. Empty when nothing is relevant.",
         _object({"query": _string("what you are about to work on"),
                  "budget": _integer("most tokens (CJK ~1 a character, other text ~4 characters)", 1, 100_000, 800),
                  "agent": _string("agent name"), "project": _string("project at hand"),
                  "limit": _integer("most memories to consider", 1, 50, 5), "session": _SESSION}),
         _object({"markdown": {"type": "string"}, "tokens": {"type": "integer"}, "budget": {"type": "integer"},
                  "query": _NULLABLE_STRING, "working_memory": {"type": "array", "items": _ENTRY},
                  "cards": {"type": "array", "items": {"type": "object"}}, "left_out": {"type": "integer"},
                  "other_sessions": _STRING_LIST},
                 ("markdown", "tokens", "budget", "working_memory", "cards"), closed=False),
         _brief, read_only=True),
)
