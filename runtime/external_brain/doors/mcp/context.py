"""MCP tools for an agent's context: the persona (`get_persona_context`, `update_persona_context`) and
working-memory notes (`remember`, `recall`, `forget`, `context`).

Each tool is a function `(vault, args) -> dict` that calls one library operation and shapes its
result, and its `Tool` entry in this module's `TOOLS`; `doors.mcp` lists every group's tools.
"""

from __future__ import annotations

from typing import Any

from ...vault.storage import Vault
from .schemas import Tool, _object, _string, _ENTRY, _KEY, _PERSON, _PERSONA, _SESSION, _STRING_LIST, _WM_AGENT


def _get_persona_context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...agents.personas import read_context

    return {"persona_context": read_context(vault)}


def _update_persona_context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...agents.personas import update_context

    context, changed = update_context(vault, args)
    return {"success": True, "persona_context": context, "changed": changed}


def _remember(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...working_memory import remember

    return remember(vault, args["key"], args["body"], args.get("ttl_days"), args.get("agent")).as_dict()


def _recall(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...working_memory import recall

    return recall(vault, args["key"], args.get("agent")).as_dict()


def _forget(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...working_memory import forget

    return {"key": forget(vault, args["key"], args.get("agent")).key, "forgotten": True}


def _context(vault: Vault, args: dict[str, Any]) -> dict[str, Any]:
    from ...working_memory import context

    live, others, purged = context(vault, args.get("agent"), args.get("session"))
    return {"entries": [e.as_dict() for e in live], "other_sessions": [e.as_dict() for e in others], "purged": purged}


TOOLS: tuple[Tool, ...] = (
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
         "Every live working-memory note, newest first (expired ones are purged). Another Claude Code session's "
         "saved state is listed apart, under other_sessions.",
         _object({"agent": _WM_AGENT, "session": _SESSION}),
         _object({"entries": {"type": "array", "items": _ENTRY}, "other_sessions": {"type": "array", "items": _ENTRY},
                  "purged": _STRING_LIST}, ("entries", "purged"), closed=False),
         _context),
)
