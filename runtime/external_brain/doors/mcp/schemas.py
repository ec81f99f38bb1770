"""The JSON Schemas the MCP tools declare: the builders (`_string`, `_integer`, `_strings`, `_object`,
also used by the HTTP door's `/v1` routes and the web page), the shapes several tools share, and
`Tool`, one entry of the registry (`doors.mcp.TOOLS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...vault.storage import Vault


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
_SESSION = _string("the Claude Code session asking (its session_id): its own saved state is its working memory; "
                   "another session's never is", minLength=1, maxLength=200)
_FILTERS = {
    "context_filter": _string("only memories of this project (context)"),
    "tag_filter": _strings("only memories carrying all of these tags"),
    "type_filter": _string("only memories of this type: a card type, or a memory type: success, failure, note"),
    "domain_filter": _string("only memories of this domain"),
}


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
