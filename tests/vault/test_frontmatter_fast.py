"""The frontmatter reader's one-line path (`_SIMPLE_ENTRY`: `key: value` lines of the common
shapes, read by one regex match) gives what the general reader gives: the same data, types, key
spans and body, or the same BadFrontmatter, on random cards made of lines close to those shapes
and just outside them (escapes, comments, colons, tabs, continuation lines, duplicates)."""

from __future__ import annotations

import random
import re

import pytest

from external_brain.errors import BadFrontmatter
from external_brain.vault import frontmatter
from external_brain.vault.frontmatter import parse

KEYS = ["id", "title", "type", "tags", "created", "valid-to", "_x", "a b", "Type", "domain"]
COMMON = ['"Overweight in Celiac Disease: Prevalence"', "fact", "general", "[]", "2026-01-01T10:00:00+09:00",
          "00000000-0000-4000-8000-000000a4d16d", "12", "true"]
VALUES = [
    '"Overweight in Celiac Disease: Prevalence"', '""', '"a \\" b"', '"tab\there"', '"x" # c', '"x" y',
    '"unclosed', "fact", "general", "00000000-0000-4000-8000-000000a4d16d", "2026-01-01T10:00:00+09:00",
    "1:2", "a: b", "a:", "x # note", "x#y", "12", "-3", "1.5e3", "0x1F", "true", "False", "null", "~",
    ".inf", "x  ", "a -b", "a/b.c+d", "[]", "[ ]", "[a, b]", "[] # c", "[]x", "{}", "", "|", ">-",
    "日本語", "C#", "- a", "'single'", "&anchor", "a\tb",
]
FOLLOWERS = ["", "  more words", "\tx", "# comment", "  # indented comment", "- item", "  - item", "   ",
             "? explicit key", ": its value", "  wrapped, [text]"]


def _card(rng: random.Random) -> str:
    lines = []
    keys = rng.sample(KEYS, rng.randint(1, 6))
    if rng.random() < 0.1:
        keys.append(keys[0])  # a duplicate
    for key in keys:
        value = rng.choice(COMMON if rng.random() < 0.75 else VALUES)
        lines.append(f"{key}:{rng.choice([' ', '  ', ' ', ''])}{value}{rng.choice(['', '', ' ', '  '])}")
        if rng.random() < 0.2:
            lines.append(rng.choice(FOLLOWERS))
    return "---\n" + "\n".join(lines) + "\n---\nbody\n"


def _read(text: str):
    try:
        doc = parse(text, "card.md")
    except BadFrontmatter as exc:
        return "error", str(exc)
    return repr(doc.data), doc._layout.spans, doc.body


def test_the_one_line_path_reads_what_the_general_reader_reads(monkeypatch) -> None:
    rng = random.Random(7)
    cards = [_card(rng) for _ in range(3000)]
    fast = [_read(text) for text in cards]
    monkeypatch.setattr(frontmatter, "_SIMPLE_ENTRY", re.compile(r"(?!)"))  # no line takes the path
    general = [_read(text) for text in cards]
    for text, a, b in zip(cards, fast, general):
        assert a == b, text
    # The cards do exercise it: most parse (and most of their lines take the path).
    assert 600 < sum(result[0] != "error" for result in fast) < 2400


@pytest.mark.parametrize("line, value", [
    ('title: "a: b"', "a: b"), ("type: fact", "fact"), ("n: 12", 12), ("f: 1.5e3", 1500.0),
    ("b: true", True), ("z: null", None), ("tags: []", []), ("at: 2026-01-01T10:00:00+09:00", "2026-01-01T10:00:00+09:00"),
])
def test_common_lines_keep_their_yaml_types(line: str, value) -> None:
    data = parse(f"---\n{line}\n---\n").data
    assert list(data.values()) == [value] and type(data[line.partition(":")[0]]) is type(value)
