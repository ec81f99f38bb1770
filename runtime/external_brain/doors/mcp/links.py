"""MCP tools on the links between memories: `link_memories`, `unlink_memories`, `explore_related`,
`get_memory_links`.

Each tool is a function `(vault, args) -> dict` that calls one library operation and shapes its
result, and its `Tool` entry in this module's `TOOLS`; `doors.mcp` lists every group's tools.
"""

from __future__ import annotations

from typing import Any

from ...vault.storage import Vault
from .. import seed_shapes
from .schemas import (Tool, _integer, _object, _string, _AGENT, _CARD_NODE, _CARD_REF, _LINK_ITEM, _NULLABLE_STRING,
                      _RELATED_ITEM, _STRING_LIST)


def _link_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.relations import link

    result = link(vault, args["source_id"], args["target_id"], args["relation_type"], args.get("weight"),
                  args.get("reason"), agent=args.get("agent"))
    return {"success": True, "relation_type": result.link["rel"], **result.as_dict()}


def _unlink_memories(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.relations import unlink

    result = unlink(vault, args["source_id"], args["target_id"], args.get("relation_type"), agent=args.get("agent"))
    return {"success": True, "source_id": result.source.id, "target_id": result.target.id, **result.as_dict()}


def _explore_related(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.graph import explore

    result = explore(vault, args["memory_id"], args.get("depth", 1), args.get("agent"),
                     by_tag=args.get("include_tag_siblings", True),
                     by_project=args.get("include_context_siblings", True))
    return {"memory_id": result.card["id"], **seed_shapes.explored(vault, result.as_dict())}


def _get_memory_links(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...evolution.graph import links

    result = links(vault, args["memory_id"], args.get("direction", "both"), args.get("agent"))
    return {"memory_id": result.card["id"], **seed_shapes.links_of(vault, result.as_dict())}


TOOLS: tuple[Tool, ...] = (
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
)
