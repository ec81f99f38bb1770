"""The JSON text every output writes: strict JSON (RFC 8259), as JavaScript's `JSON.parse` reads it.

Python's `json` writes a float that is not finite as the bare tokens `NaN`, `Infinity` and
`-Infinity`, which are not JSON: a strict parser refuses the whole message. A person's note can
hold such a value in YAML's own spelling (`score: .nan`, `ratio: .inf`), and a card's frontmatter
goes out whole through `get --json`, MCP `get_memory`, the HTTP API and `export`.

Promise: `dumps` never writes those tokens. A non-finite float becomes the string "NaN",
"Infinity" or "-Infinity" (not null: the person wrote a number, not nothing, and `float(s)` in
Python and `Number(s)` in JavaScript read each string back). Everything else is exactly what
`json.dumps` writes, which stays the fast path: the values are walked only when one was found.
Every door (the CLI's envelope, MCP, HTTP, hooks), export and the event log write through it.
"""

from __future__ import annotations

import json
import math
from typing import Any, Callable

def dumps(value: Any, *, indent: int | None = None, separators: tuple[str, str] | None = None,
          default: Callable[[Any], Any] | None = None) -> str:
    """`json.dumps(value, ensure_ascii=False, ...)`, with every non-finite float as a string."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, indent=indent, separators=separators,
                          default=default)
    except ValueError:
        # Trigger: a float that is NaN or infinite somewhere in `value` (json's own refusal with
        # allow_nan=False). Why: see the module docstring. Outcome: the same text with each one
        # spelled as a string; any other ValueError (a circular reference) is raised again below.
        return json.dumps(finite(value), ensure_ascii=False, allow_nan=False, indent=indent,
                          separators=separators, default=default)


def finite(value: Any) -> Any:
    """`value` with every non-finite float (in dicts, lists and tuples, keys too) as its string."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, dict):
        return {finite(k) if isinstance(k, float) else k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    return value
