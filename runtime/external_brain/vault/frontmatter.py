"""YAML frontmatter of cards: a small strict reader and a surgical writer.

A card is a Markdown file that starts with a YAML block between two `---` lines. This module reads the
subset of YAML that cards and Obsidian use and rewrites single keys without touching anything else, so
what a person wrote (key order, quoting, comments, blank lines, the body, BOM, line endings) survives
every write and a git diff shows only the lines that really changed.

What it promises:
- `parse(text)` returns a `Document`, or raises `BadFrontmatter` naming the 1-based line of the file and
  the problem. It never raises anything else, whatever the input (the fuzz test holds it to that).
- Plain scalars are typed by the YAML 1.2 core schema (booleans, null, integers, floats); everything
  else, dates and timestamps in particular, stays the string the person wrote. Keys are always strings.
- Parsed text is always valid Unicode: an escaped surrogate pair (`"\\uD83D\\uDE00"`) is one character,
  as in JSON, and a lone escaped surrogate is a `BadFrontmatter`, so every value can be written as UTF-8.
- `update(text, changes, remove)` rewrites only the lines of the top-level keys it changes, appends new
  keys just before the closing fence, and leaves every other byte alone: `update(text, {}) == text`.
- `render` and `dump_entry` are deterministic and always read back to the values they were given, here
  and in YAML 1.1 and 1.2 readers (PyYAML, Obsidian): a string any of them would type (`0x1F`, `10:30`,
  `no`, `2024-05-01`) is quoted, and floats carry a dot (`1.0e-07`). Exception, by design: a timestamp
  under one of `DATE_KEYS` is written plain, so those readers show the tool's own times as dates.

Supported: block mappings and `- ` sequences to any sane depth (lists of mappings included), flow
`[...]` and `{...}` (possibly over several lines), plain, 'single' and "double" quoted scalars (possibly
over several lines, folded as YAML folds them), literal `|` and folded `>` block scalars with chomping
and indentation indicators, full-line and trailing comments, CRLF files and a UTF-8 BOM.
Refused with a clear message: tabs used for indentation, duplicate keys, anchors, aliases, tags,
complex keys, directives, several documents, control characters, nesting deeper than 64 levels.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from .regex_programs import KeptPattern, compile_pattern   # programs kept across processes
from .valueclass import valueclass
from typing import Any

from ..errors import BadFrontmatter

__all__ = ["DATE_KEYS", "Document", "parse", "update", "render", "dump_entry", "same_value"]

_BOM = "\ufeff"
# Real cards nest three or four levels; the limit keeps hostile input (`[[[[...` x 2000) from
# exhausting Python's recursion limit, which would escape as RecursionError.
_MAX_DEPTH = 64

# Characters YAML forbids anywhere in a stream (outside c-printable), and a CR that is not part of CRLF.
# Spelled as the forbidden ranges: the negated class of the allowed ones compiles 20x slower
# (1.4 ms of every CLI call's start-up).
_BAD_CHAR = compile_pattern("\r(?!\n)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")
# Where a plain scalar stops in block context: a comment (` #`) or a mapping colon (`: ` or `:` at the end).
_PLAIN_STOP = compile_pattern(r"[ \t]#|:(?![^ \t])")
# Where a plain scalar stops inside [...] / {...}: also at flow indicators and before `:,` `:]` ...
_FLOW_PLAIN_STOP = compile_pattern(r"[,\[\]{}]|[ \t]#|:(?![^ \t,\[\]{}])")
# A top-level entry as cards mostly write them, whole on its line (`_Parser.block_mapping` reads it
# at once): a simple key, one space or more, then a double-quoted string without escapes (2), a
# plain scalar of letters, digits and `._/+-` (a `:` only inside, before one of those) that
# starts with a letter or digit (3), or `[]` (4); then only spaces. Any other line, or a plain
# scalar a more indented line may go on, is read the long way: this gives what it would give.
# Compiled on the first parse (~0.3 ms), which a call that reads no card never makes. Measured
# 2026-11-26 (docs/decisions.md, "Maintainability"): 44 us a card with it, 49 us without (the
# 66 judgement cards parsed 30 times): ~10% of every parse, so of a reindex's reading.
_SIMPLE_ENTRY_TEXT = (
    r'([A-Za-z_][A-Za-z0-9_-]*): +(?:"([^"\\]*)"|([A-Za-z0-9](?:[A-Za-z0-9._/+ -]|:(?=[A-Za-z0-9._/+-]))*?)|(\[\])) *'
)
_SIMPLE_ENTRY: re.Pattern | None = None
_DQ_BODY = compile_pattern(r'(?:[^"\\]|\\.)*')
_SQ_BODY = compile_pattern(r"(?:[^']|'')*")
_DQ_KEY = compile_pattern(r'"((?:[^"\\]|\\.)*)"[ \t]*:(?![^ \t])')
_SQ_KEY = compile_pattern(r"'((?:[^']|'')*)'[ \t]*:(?![^ \t])")
# Patterns only some cards or only writes need are left as strings: `re` compiles one on first use
# and caches it, so a call that never needs it does not pay its compile at start-up.
# A `\\u` escape of a high surrogate followed at once by one of a low surrogate is one character, as
# in JSON (`\\uD83D\\uDE00` is U+1F600); that alternative comes first so it wins over two single escapes.
_ESCAPE = (
    r"\\(?:u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})"
    r"|x([0-9A-Fa-f]{2})|u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))"
)
_SIMPLE_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}
_BLOCK_HEADER = r"([|>])(?:([1-9])([-+])?|([-+])([1-9])?)?(?:[ \t]+#.*)?[ \t]*$"

# YAML 1.2 core schema. Deliberately absent: YAML 1.1 timestamps, yes/no/on/off, 0x/0o numbers and
# `1_000`. PyYAML (and python-frontmatter on top of it) turns `created: 2026-11-21` into a
# datetime.date: code expecting text then crashes, and the person's exact text is lost on the next
# write. basic-memory hit this ("'datetime.date' object has no attribute 'strip'") and converts the
# values back after loading (basicmachines-co/basic-memory#402). Here they simply stay the strings
# that were written.
_CONSTANTS: dict[str, Any] = {
    "": None, "~": None, "null": None, "Null": None, "NULL": None,
    "true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False,
}
_SPECIAL_FLOATS = {
    f"{sign}.{word}": float(f"{sign}inf")
    for sign in ("", "+", "-") for word in ("inf", "Inf", "INF")
} | {".nan": math.nan, ".NaN": math.nan, ".NAN": math.nan}
_INT = compile_pattern(r"[-+]?[0-9]+")
_FLOAT = compile_pattern(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")


def _resolve(raw: str) -> Any:
    """The typed value of a plain scalar: bool, None, int, float, or `raw` itself (the same object)."""
    if raw in _CONSTANTS:
        return _CONSTANTS[raw]
    if raw[0] in "-+.0123456789":
        if _INT.fullmatch(raw):
            try:
                return int(raw)
            except ValueError:  # more digits than int() accepts (sys.get_int_max_str_digits)
                return raw
        if _FLOAT.fullmatch(raw):
            return float(raw)
        if raw in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[raw]
    return raw


# --------------------------------------------------------------------------------------------------
# Reading


class _Layout:
    """Where things are in the file, for `update`: offsets of each top-level key's lines."""

    __slots__ = ("newline", "spans", "end", "flow")

    def __init__(self, newline: str, spans: dict[str, tuple[int, int, bool]], end: int,
                 flow: tuple[int, int] | None = None) -> None:
        self.newline = newline  # the line ending of the opening fence, used for written lines
        # key -> (offset of its first line, offset just past its last line, whether it ends in a
        # block scalar, which would swallow the blank and indented lines after it; see `update`)
        self.spans = spans
        self.end = end  # offset of the closing fence line, where new keys go
        # A frontmatter written as one flow mapping (`{tags: [a], title: x}`, as `yaml.safe_dump`
        # writes with default_flow_style=True): the offsets of its first line and just past its last.
        self.flow = flow


@valueclass
class Document:
    """A parsed card: its frontmatter mapping and the Markdown body after the closing fence."""

    data: dict[str, Any]
    body: str
    has_frontmatter: bool
    _layout: _Layout | None = None


def parse(text: str, source: str = "<string>") -> Document:
    """Parse a card; raise `BadFrontmatter` (and only that) when its frontmatter is not valid.

    The BOM is part of neither `data` nor `body`; without frontmatter the body is the rest of the text.
    """
    start = 1 if text.startswith(_BOM) else 0
    newline_at = text.find("\n", start)
    first = text[start:] if newline_at < 0 else text[start:newline_at]
    if first.rstrip(" \t\r") != "---":
        return Document({}, text[start:], False)
    if newline_at < 0:
        raise BadFrontmatter(source, 1, "no closing '---' line")

    # Offsets of the lines up to the closing fence; the body is never split into lines.
    starts = [start]
    lines: list[str] = []
    pos = newline_at + 1
    while True:
        starts.append(pos)
        end = text.find("\n", pos)
        line = text[pos:] if end < 0 else text[pos:end]
        if line.rstrip(" \t\r") in ("---", "..."):
            body_start = len(text) if end < 0 else end + 1
            break
        if end < 0:
            raise BadFrontmatter(source, 1, "no closing '---' line")
        lines.append(line[:-1] if line.endswith("\r") else line)
        pos = end + 1

    block = text[starts[1] : starts[-1]]
    bad = _BAD_CHAR.search(block)
    if bad:
        line_number = 2 + block.count("\n", 0, bad.start())
        char = bad.group()
        problem = (
            "carriage return without a line feed"
            if char == "\r"
            else f"control character U+{ord(char):04X} is not allowed (write it as an escape in a "
            f"double-quoted string)"
        )
        raise BadFrontmatter(source, line_number, problem)

    data, line_spans, flow_lines = _Parser(lines, source).document()
    # Frontmatter line i is file line i + 1, whose offset is starts[i + 1].
    spans = {key: (starts[a + 1], starts[b + 2], open_end) for key, (a, b, open_end) in line_spans.items()}
    flow = None if flow_lines is None else (starts[flow_lines[0] + 1], starts[flow_lines[1] + 2])
    newline = "\r\n" if first.endswith("\r") else "\n"
    return Document(data, text[body_start:], True, _Layout(newline, spans, starts[-1], flow))


def _is_seq_entry(text: str, p: int) -> bool:
    """Whether a block sequence entry (`- ` or a lone `-`) starts at column p."""
    return text[p : p + 1] == "-" and (p + 1 == len(text) or text[p + 1] in " \t")


def _rstrip_unescaped(segment: str) -> str:
    """Strip trailing blanks of a double-quoted line, but not a blank escaped with a backslash."""
    stripped = segment.rstrip(" \t")
    if len(stripped) < len(segment):
        backslashes = len(stripped) - len(stripped.rstrip("\\"))
        if backslashes % 2:
            stripped = segment[: len(stripped) + 1]
    return stripped


class _Parser:
    """Recursive descent over the frontmatter lines (without line endings).

    Methods that read a node return `(value, next_line, last_line)`: the index of the first line not
    consumed and the index of the last line holding part of the node (its trailing blank lines and
    comments are not part of it, so `update` leaves them where they are).
    Flow-level methods work on a cursor `(line, column)` instead.
    """

    __slots__ = ("lines", "source", "block_scalar_last")

    def __init__(self, lines: list[str], source: str) -> None:
        self.lines = lines
        self.source = source
        self.block_scalar_last = -1  # the last line of the latest block scalar read

    def error(self, j: int, problem: str) -> BadFrontmatter:
        # Frontmatter line 0 is line 2 of the file (line 1 is the opening fence).
        return BadFrontmatter(self.source, j + 2, problem)

    # -- lines and indentation ---------------------------------------------------------------------

    def next_content(self, j: int) -> int:
        """The index of the first line at or after j that is neither blank nor a comment."""
        lines = self.lines
        while j < len(lines):
            rest = lines[j].lstrip(" \t")
            if rest and rest[0] != "#":
                return j
            j += 1
        return len(lines)

    def indent(self, j: int) -> int:
        """The indentation of content line j, refusing tabs (YAML indents with spaces only)."""
        line = self.lines[j]
        width = len(line) - len(line.lstrip(" "))
        if line[width] == "\t":
            raise self.error(j, "tab character used for indentation (YAML allows only spaces)")
        return width

    def depth_check(self, j: int, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise self.error(j, f"nesting deeper than {_MAX_DEPTH} levels")

    # -- block structure ---------------------------------------------------------------------------

    def document(self) -> tuple[dict[str, Any], dict[str, tuple[int, int, bool]], tuple[int, int] | None]:
        """The top-level mapping; for each key, the first and last line of its entry and whether
        the entry ends in a block scalar; and, for a mapping written in flow style, its first and
        last line (then there are no spans)."""
        spans: dict[str, tuple[int, int, bool]] = {}
        j = self.next_content(0)
        if j == len(self.lines):
            return {}, spans, None
        if self.indent(j):
            raise self.error(j, "unexpected indentation: top-level keys start at the beginning of a line")
        first = self.lines[j][0]
        if _is_seq_entry(self.lines[j], 0) or (first == "[" and not self.is_key_after_flow(j)):
            raise self.error(j, "the frontmatter must be a mapping ('key: value' lines), not a list")
        if first == "{":
            # Trigger: `{tags: [a], title: x}`, what yaml.safe_dump writes with default_flow_style=True.
            # Why: it is a mapping like any other, and was refused with a misleading message about
            # collections used as keys. Outcome: read (over several lines too); `update` rewrites
            # it as one flow mapping.
            data, k, q = self.flow_collection(j, 0, -1, 1)
            self.expect_line_end(k, q, "the closing brace")
            after = self.next_content(k + 1)
            if after != len(self.lines):
                raise self.error(after, "text after the frontmatter's flow mapping ('{...}'); write the whole "
                                        "frontmatter as one mapping, in block or in flow style")
            return data, spans, (j, k)
        data, _, _ = self.block_mapping(j, 0, 1, spans)
        return data, spans, None

    def block_mapping(
        self, j: int, indent: int, depth: int, spans: dict[str, tuple[int, int, bool]] | None = None
    ) -> tuple[dict[str, Any], int, int]:
        """A block mapping whose first key starts at column `indent` of line j (maybe after `- `)."""
        self.depth_check(j, depth)
        data: dict[str, Any] = {}
        lines = self.lines
        global _SIMPLE_ENTRY
        if _SIMPLE_ENTRY is None:
            _SIMPLE_ENTRY = compile_pattern(_SIMPLE_ENTRY_TEXT)
        simple_entry = _SIMPLE_ENTRY.fullmatch
        while True:
            simple = simple_entry(lines[j]) if indent == 0 else None
            if simple is None and self.is_explicit_key(j, indent):
                key, value, following, last = self.explicit_entry(j, indent, depth)
                if key in data:
                    raise self.error(j, f"duplicate key {key!r}")
            elif simple is not None and (simple.group(3) is None or j + 1 == len(lines)
                                         or lines[j + 1][:1] not in ("", " ", "\t")):
                # Trigger: a `key: value` line of the common shapes (`_SIMPLE_ENTRY`), and for a
                # plain scalar a next line that starts at column 0 (so it cannot go on). Why: the
                # general reader takes ~7 us a line, a bulk index build reads every card. Outcome:
                # the value `value_after_key` would give, from one regex match.
                key, quoted, plain = simple.group(1, 2, 3)
                if key in data:
                    raise self.error(j, f"duplicate key {key!r}")
                value = quoted if quoted is not None else [] if plain is None else _resolve(plain)
                following, last = j + 1, j
            else:
                key, p = self.key(j, indent)
                if key in data:
                    raise self.error(j, f"duplicate key {key!r}")
                value, following, last = self.value_after_key(j, p, indent, depth)
            data[key] = value
            if spans is not None:
                spans[key] = (j, last, self.block_scalar_last == last)
            j = self.next_content(following)
            if j == len(self.lines):
                return data, j, last
            width = self.indent(j)
            if width < indent:
                return data, j, last
            if width > indent:
                raise self.error(j, "unexpected indentation")

    def block_sequence(self, j: int, indent: int, depth: int) -> tuple[list[Any], int, int]:
        """A block sequence whose first `-` is at column `indent` of line j."""
        self.depth_check(j, depth)
        lines = self.lines
        items: list[Any] = []
        while True:
            text = lines[j]
            p = indent + 1
            if text[p : p + 1] == "\t":
                raise self.error(j, "tab character after '-' (use a space)")
            while p < len(text) and text[p] in " \t":
                p += 1
            if p == len(text) or text[p] == "#":
                value, following, last = self.node_after(j, indent, depth, same_indent_list=False)
            elif _is_seq_entry(text, p):  # `- - a`: a list inside a list, on the same line
                value, following, last = self.block_sequence(j, p, depth + 1)
            elif self.split_key(j, p) is not None or self.is_explicit_key(j, p):  # `- key: value`: a mapping
                value, following, last = self.block_mapping(j, p, depth + 1)
            else:
                value, following, last = self.inline_value(j, p, indent, depth)
            items.append(value)
            j = self.next_content(following)
            if j == len(lines):
                return items, j, last
            width = self.indent(j)
            if width < indent:
                return items, j, last
            if width > indent:
                raise self.error(j, "unexpected indentation")
            if not _is_seq_entry(lines[j], indent):
                return items, j, last

    def value_after_key(self, j: int, p: int, indent: int, depth: int) -> tuple[Any, int, int]:
        """The value of a mapping entry whose `:` ends just before column p of line j."""
        text = self.lines[j]
        while p < len(text) and text[p] in " \t":
            p += 1
        if p == len(text) or text[p] == "#":
            return self.node_after(j, indent, depth, same_indent_list=True)
        return self.inline_value(j, p, indent, depth)

    def node_after(
        self, j: int, indent: int, depth: int, same_indent_list: bool
    ) -> tuple[Any, int, int]:
        """The value that follows on the lines after line j (nothing there means null).

        `same_indent_list`: a mapping value may be a `- ` list at the key's own indentation
        (`tags:` then `- a` lines), as PyYAML and many people write it.
        """
        k = self.next_content(j + 1)
        if k < len(self.lines):
            text = self.lines[k]
            width = self.indent(k)
            if width > indent:
                if _is_seq_entry(text, width):
                    return self.block_sequence(k, width, depth + 1)
                if self.split_key(k, width) is not None or self.is_explicit_key(k, width):
                    return self.block_mapping(k, width, depth + 1)
                return self.inline_value(k, width, indent, depth)
            if width == indent and same_indent_list and _is_seq_entry(text, width):
                return self.block_sequence(k, width, depth + 1)
        return None, j + 1, j

    def is_key_after_flow(self, j: int) -> bool:
        """Whether the flow collection at the start of line j is followed by a `:` (a collection
        used as a key, which `block_mapping` refuses by that name)."""
        try:
            _, k, q = self.flow_collection(j, 0, -1, 1)
        except BadFrontmatter:
            return False
        return self.lines[k][q:].lstrip(" \t")[:1] == ":"

    def is_explicit_key(self, j: int, p: int) -> bool:
        """Whether an explicit key (`? key`) starts at column p of line j."""
        text = self.lines[j]
        return text[p : p + 1] == "?" and (p + 1 == len(text) or text[p + 1] in " \t")

    def explicit_entry(self, j: int, indent: int, depth: int) -> tuple[str, Any, int, int]:
        """A `? key` entry at column `indent` of line j, and its `: value` line if it has one:
        (key, value, next line, last line). PyYAML writes a key this way when it is 128
        characters or longer, and must, past 1,024 (an implicit key may not be longer)."""
        lines = self.lines
        text = lines[j]
        p = indent + 1
        while p < len(text) and text[p] in " \t":
            p += 1
        if p == len(text) or text[p] == "#" or text[p] in "[{|>" or _is_seq_entry(text, p) \
                or self.split_key(j, p) is not None or self.is_explicit_key(j, p):
            raise self.error(j, "unsupported YAML feature: a collection or block used as a mapping key "
                                "(write the key on the '? ' line)")
        key, following, last = self.inline_value(j, p, indent, depth)
        if not isinstance(key, str):  # `? 42`: keys are always the text written, as implicit ones
            stop = _PLAIN_STOP.search(text, p)
            key = text[p : len(text) if stop is None else stop.start()].rstrip(" \t")
        k = self.next_content(following)
        if k < len(lines) and self.indent(k) == indent and lines[k][indent] == ":" \
                and (indent + 1 == len(lines[k]) or lines[k][indent + 1] in " \t"):
            value, following, last = self.indicated_value(k, indent + 1, indent, depth)
        else:
            value = None  # `? key` alone: the value is null
        return key, value, following, last

    def indicated_value(self, j: int, p: int, indent: int, depth: int) -> tuple[Any, int, int]:
        """The node after an indicator ending before column p of line j (the `:` of an explicit
        entry): on the same line, where a list or mapping may start (`: - a`, `: k: v`), or on
        the lines after it."""
        text = self.lines[j]
        q = p
        while q < len(text) and text[q] in " \t":
            q += 1
        if q == len(text) or text[q] == "#":
            return self.node_after(j, indent, depth, same_indent_list=True)
        if _is_seq_entry(text, q):
            return self.block_sequence(j, q, depth + 1)
        if self.split_key(j, q) is not None or self.is_explicit_key(j, q):
            return self.block_mapping(j, q, depth + 1)
        return self.inline_value(j, q, indent, depth)

    def key(self, j: int, p: int) -> tuple[str, int]:
        """The key of the mapping entry at column p of line j, and the column after its `:`."""
        found = self.split_key(j, p)
        if found is None:
            raise self.not_a_key(j, p)
        return found

    def split_key(self, j: int, p: int) -> tuple[str, int] | None:
        """Like `key`, but None when line j holds no `key:` at column p."""
        text = self.lines[j]
        first = text[p]
        if first == '"':
            match = _DQ_KEY.match(text, p)
            return (self.decode_double(match.group(1), j), match.end()) if match else None
        if first == "'":
            match = _SQ_KEY.match(text, p)
            return (match.group(1).replace("''", "'"), match.end()) if match else None
        if first in "[]{},#&*!|>%@`" or (first in "-?:" and (p + 1 == len(text) or text[p + 1] in " \t")):
            return None
        if p == 0 and text[:3] in ("---", "...") and text[3:4] in ("", " ", "\t"):
            return None  # `--- ` / `... ` at the start of a line start or end a YAML document
        match = _PLAIN_STOP.search(text, p)
        if match is None or text[match.start()] != ":":
            return None
        return text[p : match.start()].rstrip(" \t"), match.end()

    def not_a_key(self, j: int, p: int) -> BadFrontmatter:
        """The clearest error for a line where a `key: value` entry was expected."""
        text = self.lines[j]
        rest = text[p:]
        first = rest[0]
        if p == 0 and rest[:3] in ("---", "...") and rest[3:4] in ("", " ", "\t"):
            return self.error(
                j, "unsupported YAML feature: several documents ('---' or '...' inside the frontmatter)"
            )
        if p == 0 and first == "%":
            return self.error(j, "unsupported YAML feature: directives ('%...')")
        if _is_seq_entry(text, p):
            return self.error(j, "a '- ' list item where a 'key: value' line was expected")
        unsupported = self.unsupported_start(j, p)
        if unsupported:
            return unsupported
        if first in "[{":
            return self.error(j, "unsupported YAML feature: a collection used as a mapping key")
        hint = " (a ':' must be followed by a space)" if ":" in rest else ""
        shown = rest.strip(" \t")[:40]
        return self.error(j, f"expected 'key: value', found {shown!r}{hint}")

    def unsupported_start(self, j: int, p: int) -> BadFrontmatter | None:
        """The error for a node starting with an anchor, alias, tag or `? ` key, if it does."""
        text = self.lines[j]
        first = text[p]
        if first == "&":
            return self.error(j, "unsupported YAML feature: anchors ('&name')")
        if first == "*":
            return self.error(j, "unsupported YAML feature: aliases ('*name')")
        if first == "!":
            return self.error(j, "unsupported YAML feature: tags ('!tag')")
        if first == "?" and (p + 1 == len(text) or text[p + 1] in " \t"):
            return self.error(j, "unsupported YAML feature: complex mapping keys ('? ')")
        return None

    # -- scalars and collections that start on a line ----------------------------------------------

    def inline_value(self, j: int, p: int, indent: int, depth: int) -> tuple[Any, int, int]:
        """The node starting at column p of line j; continuation lines must be indented past `indent`."""
        text = self.lines[j]
        first = text[p]
        if first in "[{":
            value, k, q = self.flow_collection(j, p, indent, depth + 1)
            self.expect_line_end(k, q, "the closing bracket")
            return value, k + 1, k
        if first in "\"'":
            value, k, q = self.quoted(j, p, indent)
            self.expect_line_end(k, q, "the closing quote")
            return value, k + 1, k
        if first in "|>":
            return self.block_scalar(j, p, indent)
        self.check_plain_start(j, p, flow=False)
        return self.plain(j, p, indent)

    def check_plain_start(self, j: int, p: int, flow: bool) -> None:
        """Refuse a plain scalar that would start with a YAML indicator."""
        unsupported = self.unsupported_start(j, p)
        if unsupported:
            raise unsupported
        text = self.lines[j]
        first = text[p]
        after = text[p + 1] if p + 1 < len(text) else " "
        if first in "-:" and (after in " \t" or (flow and after in ",[]{}")):
            if first == "-":
                raise self.error(
                    j, "a '- ' list item must start its own line (quote text that begins with '- ')"
                )
            raise self.error(j, "unexpected ':' (quote text that begins with ': ')")
        if first in ",[]{}#|>%@`\"'":
            raise self.error(j, f"a plain value cannot start with {first!r}; put the value in quotes")

    def plain(self, j: int, p: int, indent: int) -> tuple[Any, int, int]:
        """A plain scalar; it may go on over lines indented past `indent` (folded into one line)."""
        lines = self.lines
        text = lines[j]
        stop = _PLAIN_STOP.search(text, p)
        if stop is None:
            raw = text[p:].rstrip(" \t")
        elif text[stop.start()] == ":":
            raise self.error(j, "a plain value cannot contain ': ' or end with ':'; put the value in quotes")
        else:
            return _resolve(text[p : stop.start()].rstrip(" \t")), j + 1, j  # a comment ends it

        parts = [raw]
        last = j
        blank = 0
        k = j + 1
        while k < len(lines):
            line = lines[k]
            rest = line.lstrip(" \t")
            if not rest:
                blank += 1
                k += 1
                continue
            if rest[0] == "#" or len(line) - len(line.lstrip(" ")) <= indent:
                break
            width = self.indent(k)
            stop = _PLAIN_STOP.search(line, width)
            if stop is not None and line[stop.start()] == ":":
                # Most likely a key indented by mistake, which YAML reads as the text going on.
                raise self.error(
                    k, "bad indentation of a 'key: value' line (or a ': ' inside a multi-line value)"
                )
            end = len(line) if stop is None else stop.start()
            # YAML folding: one line break becomes a space, n blank lines become n newlines.
            parts.append("\n" * blank if blank else " ")
            parts.append(line[width:end].rstrip(" \t"))
            blank = 0
            last = k
            k += 1
            if stop is not None:  # a comment ends the scalar
                break
        if last == j:
            return _resolve(raw), j + 1, j
        return "".join(parts), last + 1, last

    def quoted(self, j: int, p: int, indent: int) -> tuple[str, int, int]:
        """A quoted scalar at column p of line j; returns the string and the cursor after the quote.

        Line breaks inside fold as YAML says: one break becomes a space, n blank lines n newlines,
        and the blanks around a break are dropped (a double-quoted line may end with `\\` to join).
        """
        lines = self.lines
        start = j
        text = lines[j]
        double = text[p] == '"'
        quote = text[p]
        body = _DQ_BODY if double else _SQ_BODY
        parts: list[str] = []
        pos = p + 1
        while True:
            end = body.match(text, pos).end()
            closed = end < len(text) and text[end] == quote
            joined = double and not closed and end < len(text)  # a `\` at the end of the line
            segment = text[pos:end]
            if j > start:
                segment = segment.lstrip(" \t")
            if not closed and not joined:
                segment = _rstrip_unescaped(segment) if double else segment.rstrip(" \t")
            parts.append(self.decode_double(segment, j) if double else segment.replace("''", "'"))
            if closed:
                return "".join(parts), j, end + 1
            j += 1
            blank = 0
            while j < len(lines) and not lines[j].strip(" \t"):
                blank += 1
                j += 1
            if j == len(lines) or len(lines[j]) - len(lines[j].lstrip(" ")) <= indent:
                kind = "double" if double else "single"
                raise self.error(start, f"unterminated {kind}-quoted string (no closing {quote})")
            parts.append("\n" * blank if blank or joined else " ")
            text = lines[j]
            pos = 0

    def decode_double(self, segment: str, j: int) -> str:
        """Replace the backslash escapes of a double-quoted segment.

        A surrogate pair written as two `\\u` escapes becomes the one character it encodes. A lone
        surrogate is refused: it is no character at all, and a string holding one cannot be written
        as UTF-8, so every command that printed, indexed or saved the card would fail.
        """
        if "\\" not in segment:
            return segment
        out = []
        pos = 0
        for match in re.finditer(_ESCAPE, segment):
            out.append(segment[pos : match.start()])
            high, low, *single = match.groups()
            digits = single[0] or single[1] or single[2]
            if high:
                out.append(chr(0x10000 + ((int(high, 16) - 0xD800) << 10) + int(low, 16) - 0xDC00))
            elif digits:
                code = int(digits, 16)
                if code > 0x10FFFF:
                    raise self.error(j, f"invalid escape '\\U{digits}' (beyond U+10FFFF)")
                if 0xD800 <= code <= 0xDFFF:
                    raise self.error(
                        j,
                        f"invalid escape '{match.group()}': a lone UTF-16 surrogate is not a character "
                        f"(write the character itself, or a pair such as '\\uD83D\\uDE00')",
                    )
                out.append(chr(code))
            else:
                char = _SIMPLE_ESCAPES.get(single[3])
                if char is None:
                    raise self.error(j, f"invalid escape '\\{single[3]}' in a double-quoted string")
                out.append(char)
            pos = match.end()
        out.append(segment[pos:])
        return "".join(out)

    def block_scalar(self, j: int, p: int, indent: int) -> tuple[str, int, int]:
        """A literal `|` or folded `>` block scalar whose header is at column p of line j."""
        lines = self.lines
        header = re.compile(_BLOCK_HEADER).match(lines[j], p)
        if header is None:
            shown = lines[j][p:].strip(" \t")[:20]
            expected = "expected e.g. '|', '|-', '>', '>+', '|2'"
            raise self.error(j, f"bad block scalar header {shown!r} ({expected})")
        folded = header.group(1) == ">"
        digit = header.group(2) or header.group(5)
        chomp = header.group(3) or header.group(4) or ""

        k = j + 1
        if digit:
            width = indent + int(digit)
        else:
            # The first non-blank line sets the indentation; a blank line before it may not be wider.
            widest_blank = 0
            width = -1
            q = k
            while q < len(lines):
                line = lines[q]
                spaces = len(line) - len(line.lstrip(" "))
                if spaces < len(line):
                    width = spaces
                    break
                widest_blank = max(widest_blank, spaces)
                q += 1
            if width <= indent:  # no text at all: an empty scalar
                width = max(indent + 1, widest_blank)
            elif widest_blank > width:
                raise self.error(
                    j, "a blank line at the start of the block scalar is indented more than its text"
                )

        # None marks an empty line; strings are text lines with the indentation removed.
        entries: list[str | None] = []
        last = j
        while k < len(lines):
            line = lines[k]
            spaces = len(line) - len(line.lstrip(" "))
            if spaces >= width and len(line) > width:
                entries.append(line[width:])
                last = k
            elif spaces == len(line):
                entries.append(None)
            else:
                break  # a less indented line (or a comment) ends the scalar
            k += 1

        # Trailing empty lines only matter for `+` (keep) chomping.
        trailing = 0
        while entries and entries[-1] is None:
            entries.pop()
            trailing += 1
        out: list[str] = []
        previous: str | None = None
        blank = 0
        for entry in entries:
            if entry is None:
                blank += 1
                continue
            if previous is None:
                out.append("\n" * blank)
            elif folded and previous[0] not in " \t" and entry[0] not in " \t":
                # Folding: a single break between two ordinary lines becomes a space; a break
                # followed by blank lines is dropped and only the blank lines count.
                out.append("\n" * blank if blank else " ")
            else:
                out.append("\n" * (blank + 1))
            out.append(entry)
            previous = entry
            blank = 0
        if previous is not None and chomp != "-":
            out.append("\n")
        if chomp == "+":
            out.append("\n" * (trailing + blank))
        self.block_scalar_last = last
        return "".join(out), k, last

    def expect_line_end(self, j: int, p: int, what: str) -> None:
        """Only blanks or a ` # comment` may follow a closed quote or bracket in block context."""
        text = self.lines[j]
        q = p
        while q < len(text) and text[q] in " \t":
            q += 1
        if q == len(text) or (text[q] == "#" and q > p):
            return
        shown = text[q:].strip(" \t")[:30]
        raise self.error(j, f"unexpected text after {what}: {shown!r}")

    # -- flow collections --------------------------------------------------------------------------

    def flow_collection(self, j: int, p: int, indent: int, depth: int) -> tuple[Any, int, int]:
        """A `[...]` or `{...}` starting at column p of line j; returns the cursor after it."""
        self.depth_check(j, depth)
        lines = self.lines
        is_list = lines[j][p] == "["
        closer = "]" if is_list else "}"
        start = j
        result: Any = [] if is_list else {}
        j, p = self.flow_skip(j, p + 1, indent, start, closer)
        while True:
            char = lines[j][p]
            if char == closer:
                return result, j, p + 1
            if char == ",":
                raise self.error(j, "empty entry in a flow collection (two commas in a row?)")
            if char == "?" and (p + 1 == len(lines[j]) or lines[j][p + 1] in " \t"):
                # `{? long key : value}`: an explicit key, as PyYAML writes keys of 128+ characters.
                j, p = self.flow_skip(j, p + 1, indent, start, closer)
                if lines[j][p] in ",]}:":
                    raise self.error(j, "unsupported YAML feature: an empty explicit key ('? ') in a flow collection")
            value, key, j, p = self.flow_node(j, p, indent, depth, start, closer)
            j, p = self.flow_skip(j, p, indent, start, closer)
            paired = lines[j][p] == ":"
            if paired:  # `key: value` inside [...] or {...}
                if key is None:
                    raise self.error(j, "unsupported YAML feature: a collection used as a mapping key")
                j, p = self.flow_skip(j, p + 1, indent, start, closer)
                if lines[j][p] in ",]}":
                    value = None
                else:
                    value, _, j, p = self.flow_node(j, p, indent, depth, start, closer)
                    j, p = self.flow_skip(j, p, indent, start, closer)
            if is_list:
                result.append({key: value} if paired else value)
            else:
                if key is None:
                    raise self.error(j, "unsupported YAML feature: a collection used as a mapping key")
                if key in result:
                    raise self.error(j, f"duplicate key {key!r}")
                result[key] = value if paired else None
            char = lines[j][p]
            if char == ",":
                j, p = self.flow_skip(j, p + 1, indent, start, closer)
            elif char != closer:
                raise self.error(j, f"expected ',' or '{closer}', found {char!r}")

    def flow_node(
        self, j: int, p: int, indent: int, depth: int, start: int, closer: str
    ) -> tuple[Any, str | None, int, int]:
        """One entry of a flow collection: (value, its text when usable as a key, line, column)."""
        text = self.lines[j]
        first = text[p]
        if first in "[{":
            value, j, p = self.flow_collection(j, p, indent, depth + 1)
            return value, None, j, p
        if first in "\"'":
            value, j, p = self.quoted(j, p, indent)
            return value, value, j, p
        self.check_plain_start(j, p, flow=True)
        stop = _FLOW_PLAIN_STOP.search(text, p)
        end = len(text) if stop is None else stop.start()
        raw = text[p:end].rstrip(" \t")
        if stop is None:
            folded = self.flow_plain_lines(j, raw, indent)
            if folded is not None:
                return folded[0], folded[0], folded[1], folded[2]
        return _resolve(raw), raw, j, end

    def flow_plain_lines(self, j: int, raw: str, indent: int) -> tuple[str, int, int] | None:
        """A plain scalar inside [...] or {...} that the end of line j did not end: it goes on
        over the lines after it, folded as YAML folds (a line break is a space, n blank lines are
        n newlines), up to a flow indicator, a comment or `: `. What PyYAML writes when it wraps
        a long value inside brackets (`width`). Returns (text, line, column after it), or None
        when the next line does not go on with it."""
        lines = self.lines
        parts = [raw]
        blank = 0
        end = None
        k = j + 1
        while k < len(lines):
            line = lines[k]
            rest = line.lstrip(" \t")
            if not rest:
                blank += 1
                k += 1
                continue
            width = len(line) - len(rest)
            if rest[0] in "#,[]{}" or (rest[0] == ":" and (len(rest) == 1 or rest[1] in " \t,[]{}")) \
                    or len(line) - len(line.lstrip(" ")) <= indent:
                break
            stop = _FLOW_PLAIN_STOP.search(line, width)
            cut = len(line) if stop is None else stop.start()
            piece = line[width:cut].rstrip(" \t")
            if not piece:
                break
            parts.append("\n" * blank if blank else " ")
            parts.append(piece)
            blank = 0
            end = (k, cut)
            if stop is not None:
                break
            k += 1
        if end is None:
            return None
        return "".join(parts), end[0], end[1]

    def flow_skip(self, j: int, p: int, indent: int, start: int, closer: str) -> tuple[int, int]:
        """Move past blanks, comments and line breaks inside a flow collection opened on line `start`."""
        lines = self.lines
        text = lines[j]
        while True:
            while p < len(text) and text[p] in " \t":
                p += 1
            if p < len(text) and (text[p] != "#" or (p and text[p - 1] not in " \t")):
                return j, p
            j += 1
            if j < len(lines):
                text = lines[j]
                rest = text.lstrip(" \t")
                # Continuation lines are indented past the key; a closing bracket may sit anywhere.
                if not rest or rest[0] in "#]}" or len(text) - len(text.lstrip(" ")) > indent:
                    p = 0
                    continue
            kind = "list" if closer == "]" else "mapping"
            raise self.error(start, f"unterminated flow {kind} (no closing '{closer}')")


# --------------------------------------------------------------------------------------------------
# Writing

# A plain scalar may not start with these (YAML indicators); such strings are written quoted.
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# A YAML 1.1 timestamp (PyYAML reads it as a date or datetime, and so does js-yaml's default schema),
# widened a little (one-digit month or day, minutes without seconds, `+0900`): the writer only uses
# it to decide what to quote, so matching too much costs a pair of quotes and too little a wrong type.
_TIMESTAMP = (
    r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
    r"(?:(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?(?:\.[0-9]*)?"
    r"(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::?[0-9]{2})?))?)?"
)
# Plain text that some YAML reader would not return as that text: the union of the YAML 1.1 types
# (PyYAML, older tools), js-yaml's default schema and the 1.2 core schema that `_resolve` implements.
# Words: the YAML 1.1 spec's booleans (PyYAML leaves out y/n; other 1.1 readers do not), null, the
# merge key `<<` and the value key `=` (PyYAML's safe_load refuses both).
_TYPED_WORDS = frozenset(
    "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF "
    "~ null Null NULL << =".split()
)
# Numbers and timestamps, each alternative a superset of what those readers accept; tried only on
# text starting with a digit, a sign or a dot, and compiled on first use (like _ESCAPE).
_TYPED_NUMBER = (
    # integers: 0b, 0o (1.2) and 0 (1.1) octal, 0x, decimal, sexagesimal (`10:30` is 630), `_` allowed
    r"[-+]?(?:0b[01_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|[0-9][0-9_]*(?::[0-5]?[0-9])*)"
    # floats: any with a dot (1.1, sexagesimal too), an exponent without a dot (1.2), .inf, .nan
    r"|[-+]?(?:[0-9][0-9_]*(?::[0-5]?[0-9])*)?\.[0-9._]*(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+"
    r"|[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN)"
    r"|" + _TIMESTAMP
)
# The timestamps written plain under DATE_KEYS: what `storage.iso` writes, a date alone, or a space
# for the `T`. Strict (a subset of what PyYAML and js-yaml take as timestamps, unlike _TIMESTAMP),
# and the date must exist: PyYAML fails on `2026-13-45` rather than read it as text.
_PLAIN_TIMESTAMP = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
    r"(?:[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[-+][0-9]{2}:[0-9]{2})?)?"
)
# Keys whose values the tool writes as timestamps. A timestamp under one of them is written plain, so
# Obsidian shows it as a date (and PyYAML reads a datetime); under any other key, a title or a tag
# that happens to look like a date, it is quoted and stays text for every reader.
DATE_KEYS = frozenset(
    ["created", "updated", "valid_from", "valid_to", "event_time", "first_seen", "last_seen", "promoted",
     "expires"]
)
_UNSAFE_CHARS = "\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff\ufffe\uffff"
_UNSAFE_PLAIN = f"[{_UNSAFE_CHARS}]|: | #"  # these three are compiled on first use, like _ESCAPE
# Inside [...] also the flow indicators, and `?` and `:`, which YAML 1.1 readers (PyYAML) stop at.
_UNSAFE_FLOW_PLAIN = f"[{_UNSAFE_CHARS},\\[\\]{{}}?:]| #"
_NEEDS_ESCAPE = f'[\\\\"{_UNSAFE_CHARS}]'
# Compiled on first use, from the program an earlier process kept (`regex_programs`).
_TYPED_NUMBER_RE, _PLAIN_TIMESTAMP_RE = KeptPattern(_TYPED_NUMBER), KeptPattern(_PLAIN_TIMESTAMP)
_UNSAFE_PLAIN_RE, _UNSAFE_FLOW_PLAIN_RE = KeptPattern(_UNSAFE_PLAIN), KeptPattern(_UNSAFE_FLOW_PLAIN)
_NEEDS_ESCAPE_RE = KeptPattern(_NEEDS_ESCAPE)
_NAMED_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def render(data: Mapping[str, Any], body: str) -> str:
    """A whole new card: the keys of `data` in their order between fences, then `body`."""
    lines = ["---"]
    for key, value in data.items():
        lines.extend(dump_entry(key, value))
    lines.append("---")
    return "\n".join(lines) + "\n" + body


def dump_entry(key: str, value: Any) -> list[str]:
    """The lines (without line endings) that write `key: value` at the top level.

    Strings are plain when they read back unchanged, else double-quoted on one line; None is written
    as an empty value (`key:`, as Obsidian writes an empty property) and as `null` inside lists;
    lists of scalars use the one-line flow form, lists holding mappings and mappings use block form.
    A timestamp under one of `DATE_KEYS` (at any depth) is written plain.
    Raises TypeError for values that have no YAML form here and ValueError for a string holding a
    lone surrogate (undecoded input): bugs in the caller, not user input.
    """
    return _dump_pair(key, value, 0)


def _dump_pair(key: str, value: Any, indent: int) -> list[str]:
    if not isinstance(key, str):
        raise TypeError(f"frontmatter keys must be strings, not {type(key).__name__}")
    written = _dump_string(key, flow=False)
    if len(written) > _MAX_IMPLICIT_KEY:
        return _dump_explicit_pair(written, value, indent)
    head = " " * indent + written + ":"
    if value is None:
        return [head]
    if key in DATE_KEYS and isinstance(value, str) and _is_plain_timestamp(value):
        return [head + " " + value]  # a timestamp the tool wrote: plain, so it reads as a date
    if isinstance(value, Mapping) and value:
        return [head, *_dump_mapping(value, indent + 2)]
    if isinstance(value, (list, tuple)) and not _fits_flow(value):
        return [head, *_dump_block_list(value, indent + 2)]
    return [head + " " + _dump_inline(value, flow=False)]


# YAML limits an implicit key (`key: value`) to 1,024 characters; PyYAML and ruamel refuse a
# longer one. Past it a key is written explicitly (`? key` then `: value`), as PyYAML writes it.
_MAX_IMPLICIT_KEY = 1024


def _dump_explicit_pair(written_key: str, value: Any, indent: int) -> list[str]:
    pad = " " * indent
    lines = [f"{pad}? {written_key}"]
    if value is None:
        return lines + [f"{pad}:"]
    if isinstance(value, Mapping) and value:
        return lines + [f"{pad}:", *_dump_mapping(value, indent + 2)]
    if isinstance(value, (list, tuple)) and not _fits_flow(value):
        return lines + [f"{pad}:", *_dump_block_list(value, indent + 2)]
    return lines + [f"{pad}: {_dump_inline(value, flow=False)}"]


def _is_plain_timestamp(text: str) -> bool:
    """Whether `text` is a real date or timestamp that every YAML reader takes as one."""
    if not _PLAIN_TIMESTAMP_RE.fullmatch(text):
        return False
    from datetime import datetime  # already loaded by storage; only writes of a date key get here

    try:
        datetime.fromisoformat(text)
    except ValueError:  # no such day or hour (`2026-02-30`)
        return False
    return True


def _dump_mapping(mapping: Mapping[str, Any], indent: int) -> list[str]:
    lines: list[str] = []
    for key, value in mapping.items():
        lines.extend(_dump_pair(key, value, indent))
    return lines


def _dump_block_list(items: list[Any] | tuple[Any, ...], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, Mapping) and item:
            nested = _dump_mapping(item, indent + 2)
        elif isinstance(item, (list, tuple)) and not _fits_flow(item):
            nested = _dump_block_list(item, indent + 2)
        else:
            lines.append(pad + "- " + _dump_inline(item, flow=False))
            continue
        # Compact form: the item's first line goes on the `- ` line (`- to: x`, then `  rel: y`).
        nested[0] = pad + "- " + nested[0][indent + 2 :]
        lines.extend(nested)
    return lines


def _fits_flow(value: Any) -> bool:
    """Whether a value can be written on one line: scalars and lists of them, `[]` and `{}`."""
    if isinstance(value, (list, tuple)):
        return all(_fits_flow(item) for item in value)
    if isinstance(value, Mapping):
        return not value
    return True


def _dump_inline(value: Any, flow: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return _dump_float(float(value))
    if isinstance(value, str):
        return _dump_string(value, flow)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_dump_inline(item, flow=True) for item in value) + "]"
    if isinstance(value, Mapping):
        # Inside brackets (a flow-style frontmatter, `update` of `{...}`); block context writes a
        # non-empty mapping in block form (`_dump_pair`).
        return "{" + ", ".join(_dump_flow_pair(key, item) for key, item in value.items()) + "}"
    raise TypeError(f"cannot write a {type(value).__name__} to frontmatter")


def _dump_flow_pair(key: str, value: Any) -> str:
    if not isinstance(key, str):
        raise TypeError(f"frontmatter keys must be strings, not {type(key).__name__}")
    written = _dump_string(key, flow=True)
    if len(written) > _MAX_IMPLICIT_KEY:
        written = "? " + written + " "
    return f"{written}: {_dump_inline(value, flow=True)}"


def _dump_float(value: float) -> str:
    """The shortest text that reads back as exactly `value`, as a float for YAML 1.1 and 1.2 alike.

    `repr` is exact but writes `1e-07` and `1e+300`, which YAML 1.1 (PyYAML) reads as strings: its
    floats need a dot. So a dot goes into the mantissa (`1.0e-07`), which every reader takes as the
    same float. `repr` always signs the exponent, as YAML 1.1 also requires.
    """
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text


def _dump_string(text: str, flow: bool) -> str:
    """`text` plain when every YAML reader reads it back as the same string, else double-quoted.

    Raises ValueError for a lone surrogate, which has no UTF-8 form (see `_escape_char`).
    """
    if (
        text
        and text[0] not in _INDICATORS
        and text[0] not in " \t"
        and text[-1] not in " \t:"
        and not text.startswith("...")  # a document end marker when a key starts a line
        and _resolve(text) is text
        and text not in _TYPED_WORDS
        and not (text[0] in "0123456789+-." and _TYPED_NUMBER_RE.fullmatch(text))
        and not (_UNSAFE_FLOW_PLAIN_RE if flow else _UNSAFE_PLAIN_RE).search(text)
    ):
        return text
    return '"' + _NEEDS_ESCAPE_RE.sub(_escape_char, text) + '"'


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED_ESCAPES.get(char)
    if named:
        return named
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        # Trigger: a string holding half of a UTF-16 pair (undecoded input, `surrogateescape`).
        # Why: written as `\uD800` the card would no longer parse, and raw it cannot be encoded.
        # Outcome: the caller's bug surfaces here, before anything is written.
        raise ValueError(f"cannot write the lone surrogate U+{code:04X} to frontmatter (not a character)")
    return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}"


# --------------------------------------------------------------------------------------------------
# Rewriting


def update(
    text: str,
    changes: Mapping[str, Any],
    remove: Iterable[str] = (),
    source: str = "<string>",
    parsed: Document | None = None,
) -> str:
    """The card `text` with the top-level keys in `changes` set and those in `remove` deleted.

    A changed key is rewritten where it stands; a new key goes just before the closing fence; a key
    whose value is already equal (same types too) is left as written, so rewriting causes no churn.
    Every other byte stays as it was. A card without frontmatter gets one at the top (after the BOM).
    Raises BadFrontmatter when `text` cannot be parsed (such a card is never rewritten) and
    ValueError when a key is both changed and removed.
    `parsed`: `parse(text)` made already by the caller (unchanged since), taken instead of parsing again.
    """
    document = parsed if parsed is not None else parse(text, source)
    removed = list(dict.fromkeys(remove))
    for key in removed:
        if key in changes:
            raise ValueError(f"key {key!r} is both changed and removed")
    layout = document._layout
    if layout is None:
        added = [line for key, value in changes.items() for line in dump_entry(key, value)]
        if not added:
            return text
        bom = _BOM if text.startswith(_BOM) else ""
        first_break = text.find("\n")
        newline = "\r\n" if first_break > 0 and text[first_break - 1] == "\r" else "\n"
        return bom + newline.join(["---", *added, "---"]) + newline + text[len(bom) :]

    newline = layout.newline
    if layout.flow is not None:
        return _update_flow_document(text, document, changes, removed)
    edits: list[tuple[int, int, str]] = []
    removed_set = set(removed)
    before_is_block_scalar = False  # does the last key kept so far end in a block scalar?
    for key, (start, end, ends_in_block_scalar) in layout.spans.items():
        if key in removed_set:
            if before_is_block_scalar:
                # Trigger: the kept key above ends in `|` or `>`. Why: the blank and indented
                # comment lines after this key would become that scalar's text. Outcome: they go too.
                end = _end_of_indented_lines(text, end, layout.end)
            edits.append((start, end, ""))
        elif key in changes and not _same_value(document.data[key], changes[key]):
            written = _in_its_style(text[start:end], key, document.data[key], changes[key], newline)
            if written is None:
                written = "".join(line + newline for line in dump_entry(key, changes[key]))
            edits.append((start, end, written))
            before_is_block_scalar = False  # neither writes a block scalar last (`_in_its_style` checks)
        else:
            before_is_block_scalar = ends_in_block_scalar
    appended = [
        line for key, value in changes.items() if key not in layout.spans for line in dump_entry(key, value)
    ]
    if appended:
        edits.append((layout.end, layout.end, "".join(line + newline for line in appended)))
    if not edits:
        return text

    edits.sort()
    out = []
    pos = 0
    for start, end, replacement in edits:
        out.append(text[pos:start])
        out.append(replacement)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _update_flow_document(text: str, document: Document, changes: Mapping[str, Any], removed: list[str]) -> str:
    """`update` of a frontmatter written as one flow mapping (`{tags: [a], title: x}`): it stays
    a flow mapping, written on one line with the changes made (a changed key where it stood, a
    new one at the end). The comments inside it cannot be kept; those around it are."""
    data = {key: value for key, value in document.data.items() if key not in removed}
    changed = len(data) != len(document.data)
    for key, value in changes.items():
        if key not in data or not _same_value(data[key], value):
            data[key] = value
            changed = True
    if not changed:
        return text
    start, end = document._layout.flow
    return text[:start] + _dump_inline(data, flow=True) + document._layout.newline + text[end:]


def _entry_lines(entry: str) -> list[str]:
    """The lines of an entry's text, each with its own line ending (`\n` or `\r\n`)."""
    return [line + "\n" for line in entry.split("\n")[:-1]]


def _in_its_style(entry: str, key: str, old: Any, new: Any, newline: str) -> str | None:
    """The text that writes `key: new` where `entry` (whole lines) wrote `key: old`, in the style
    the person wrote it in; None when that style cannot be kept (then `dump_entry` writes it).

    Trigger: a key the tool changes that a person (or Obsidian) wrote. Why: Obsidian writes lists
    as block lists; rewritten as `tags: [a, b, c]`, the line flipped back and forth in every commit,
    and the comments on it were lost. Outcome: a block list stays a block list, at its own
    indentation, its items as written (quoting and comments kept) and new items after them; a
    flow list stays a flow list; the key is spelled as it was, and a comment at the end of a
    one-line entry stays. What is written is read back before it is used: if it does not read
    as `new`, `dump_entry` writes the entry instead."""
    lines = _entry_lines(entry)
    head_line = lines[0].rstrip("\r\n")
    reader = _Parser([head_line], "<entry>")
    found = reader.split_key(0, 0) if head_line[:1] not in ("", " ", "?") else None
    if found is None:
        return None
    _, p = found
    head = head_line[:p]
    rest = head_line[p:].lstrip(" \t")
    gap = head_line[p : len(head_line) - len(rest)]
    try:
        if (not rest or rest[0] == "#") and isinstance(old, list) and old and isinstance(new, (list, tuple)):
            written = _block_list_kept(lines, head_line, old, list(new), newline)
        elif rest[:1] == "[" and isinstance(new, (list, tuple)) and _fits_flow(new):
            parser = _Parser([line.rstrip("\r\n") for line in lines], "<entry>")
            k, q = parser.flow_collection(0, len(head_line) - len(rest), 0, 1)[1:]
            written = f"{head} {_dump_inline(list(new), flow=False)}{_comment_after(parser.lines[k], q)}{newline}"
        elif len(lines) == 1 and not isinstance(old, (list, dict)) and _fits_flow(new) \
                and not isinstance(new, (list, tuple, Mapping)):
            if rest.startswith("#"):  # `key:  # comment`, no value yet
                comment = gap + rest
            else:
                comment = _comment_after(head_line, _scalar_end(reader, head_line, len(head_line) - len(rest))) \
                    if rest else ""
            dumped = dump_entry(key, new)
            if len(dumped) != 1 or (not comment and head == _dump_string(key, flow=False) + ":"):
                return None  # nothing of the person's to keep: `dump_entry` writes it
            value = dumped[0][len(_dump_string(key, flow=False)) + 1:]
            written = f"{head}{value if value else ''}{comment}{newline}"
        else:
            return None
    except BadFrontmatter:
        return None
    if written is None:
        return None
    try:  # read back: it must say `new`, and not end in a block scalar that would swallow what follows
        check = parse("---\n" + written + "---\n")
    except BadFrontmatter:
        return None
    if list(check.data) != [key] or not _same_value(check.data[key], new) or check._layout.spans[key][2]:
        return None
    return written


def _scalar_end(reader: "_Parser", line: str, p: int) -> int:
    """The column just past the scalar that starts at column p of `line` (one line)."""
    if line[p] in "\"'":
        return reader.quoted(0, p, -1)[2]
    stop = _PLAIN_STOP.search(line, p)
    return len(line if stop is None else line[: stop.start()].rstrip(" \t"))


def _comment_after(line: str, q: int) -> str:
    """The ` # comment` after column q of `line`, with the blanks before it; "" when none."""
    rest = line[q:]
    stripped = rest.lstrip(" \t")
    if stripped.startswith("#") and len(stripped) < len(rest):
        return rest.rstrip(" \t")
    return ""


def _block_list_kept(lines: list[str], head_line: str, old: list[Any], new: list[Any], newline: str) -> str | None:
    """A block list's entry rewritten to hold `new`: the key line and each item still there as
    written (with the comment lines before it), new items after, at the list's indentation."""
    groups: list[list[str]] = []   # each old item's lines, from its `- ` line
    leads: list[list[str]] = []    # the comment and blank lines before each old item
    pending: list[str] = []
    pad = None
    for line in lines[1:]:
        bare = line.rstrip("\r\n")
        content = bare.lstrip(" ")
        width = len(bare) - len(content)
        if not content.strip(" \t") or content.lstrip(" \t").startswith("#"):
            pending.append(line)
            continue
        if pad is None:
            pad = width
        if width == pad and _is_seq_entry(bare, width):
            groups.append([line])
            leads.append(pending)
            pending = []
        elif width > pad and groups:
            groups[-1].extend(pending)  # comments inside an item stay inside it
            pending = []
            groups[-1].append(line)
        else:
            return None
    if pad is None or len(groups) != len(old) or pending:
        return None
    matched: dict[int, int] = {}   # new item -> old item written as it
    used: set[int] = set()
    for n, item in enumerate(new):
        for i, was in enumerate(old):
            if i not in used and _same_value(was, item):
                matched[n] = i
                used.add(i)
                break
    head_end = lines[0][len(head_line):]
    out = [head_line + head_end]
    if not new:
        return None  # an empty list has no block form: `dump_entry` writes `key: []`
    carried: list[str] = []  # comments of items removed, kept before the next item written
    for i in range(len(old)):
        if i not in used:  # its comments stay (blank lines go with it)
            carried += [line for line in leads[i] if line.strip(" \t\r\n")]
            leads[i] = []
        elif carried:
            leads[i] = carried + leads[i]
            carried = []
    for n, item in enumerate(new):
        if n in matched:
            i = matched[n]
            out += leads[i] + groups[i]
        else:
            out += [line + newline for line in _dump_block_list([item], pad)]
    out += carried
    return "".join(out)


def _end_of_indented_lines(text: str, pos: int, limit: int) -> int:
    """The offset of the first line at or after `pos` that starts with text in column 1 (or `limit`).

    Only blank and comment lines can sit between two top-level keys; a line starting in column 1
    ends any block scalar, so the lines before it are the ones a block scalar could swallow.
    """
    while pos < limit:
        line_end = text.find("\n", pos, limit)
        line = text[pos:line_end]
        if line.strip(" \t\r") and line[0] not in " \t":
            break
        pos = line_end + 1
    return pos


def same_value(old: Any, new: Any) -> bool:
    """Equality that tells True from 1, 1 from 1.0 and 0.0 from -0.0, and holds NaN equal to NaN:
    whether `update` would find a key unchanged."""
    return _same_value(old, new)


def _same_value(old: Any, new: Any) -> bool:
    """Equality that tells True from 1, 1 from 1.0 and 0.0 from -0.0, and holds NaN equal to NaN."""
    if isinstance(old, dict):
        return (
            isinstance(new, Mapping)
            and list(old) == list(new)
            and all(_same_value(old[key], new[key]) for key in old)
        )
    if isinstance(old, list):
        return (
            isinstance(new, (list, tuple))
            and len(old) == len(new)
            and all(map(_same_value, old, new))
        )
    if type(old) is not type(new):
        return False
    if isinstance(old, float):
        return repr(old) == repr(new)
    return bool(old == new)
