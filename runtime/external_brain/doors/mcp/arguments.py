"""A tool's arguments checked against its inputSchema (the subset of JSON Schema the tools use):
the one check both the MCP and the HTTP door use.
"""

from __future__ import annotations

import json
from typing import Any

from ...vault.storage import lone_surrogate, printable


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
