"""Randomised interoperability with PyYAML (issue 21: frontmatter that `yaml.safe_dump` writes was
refused): documents PyYAML writes at several widths and styles read as `yaml.safe_load` reads them,
and what our writer makes of them (`update`, `render`) reads back the same in PyYAML.

Seeded `random`; skipped where PyYAML is not importable (it is never a dependency of the product).
The one difference allowed is the documented one (docs/decisions.md, "Frontmatter"): our reader
types plain scalars by the YAML 1.2 core schema, PyYAML by YAML 1.1, so a string PyYAML writes
plain because 1.1 does not type it (`09`, `1e5`, `0o17`) reads here as the number 1.2 makes of it.
One more 1.1 trait is left out: PyYAML also breaks lines at U+0085, U+2028 and U+2029, which YAML
1.2 (this reader, Obsidian) reads as text; so with `allow_unicode`, which writes them raw, a value
holding one is written with them escaped instead (`allow_unicode=False` for that document).
"""

from __future__ import annotations

import math
import random

import pytest

from external_brain.errors import BadFrontmatter
from external_brain.vault.frontmatter import DATE_KEYS, _resolve, parse, render, update

yaml = pytest.importorskip("yaml")

# Pieces of text that stress the emitter's choices: indicators, quotes, brackets, comment and
# mapping marks, numbers and words YAML types, spaces at either end, line breaks, non-ASCII,
# escapes PyYAML writes (`\x85`, `\t`, `\u2028`), a would-be document marker.
PIECES = [
    "a", "b", "word", "two words", "Kafka lag", "x" * 30, "日本語", "タイトル", "😀", "é", "C#", "[[Note]]",
    ":", ": ", " #", "#", "-", "- ", "?", "? ", ",", "[", "]", "{", "}", "'", '"', "\\", "|", ">", "&", "*",
    "!", "%", "@", "`", " ", "  ", "\n", "\n\n", "\t", "\x85", "\u2028", "\ufeff", "\x07", "0", "7", "1.5",
    "1e5", "09", "0x1F", "0o17", "+1", "-3", ".inf", "null", "~", "true", "yes", "No", "on", "2024-05-01",
    "10:30", "1_000", "---", "...", "=", "<<", "http://example.com/a?b=c#d",
]
KEY_PIECES = [p for p in PIECES if p not in ("\n", "\n\n")] + ["key", "title", "tags", "status"]


def random_text(rnd: random.Random, pieces: list[str] = PIECES, most: int = 6) -> str:
    return "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, most)))


def random_key(rnd: random.Random) -> str:
    roll = rnd.random()
    if roll < 0.03:
        return "long " * rnd.randint(26, 240)        # 130 to 1,200 characters: written as `? key`
    if roll < 0.06:
        return "k" * rnd.randint(1020, 1100)         # around the 1,024-character limit of implicit keys
    key = random_text(rnd, KEY_PIECES, 4)
    return key if key not in DATE_KEYS else key + "_"  # a date key is written plain on purpose


def random_value(rnd: random.Random, depth: int) -> object:
    roll = rnd.random()
    if depth < 3 and roll < 0.15:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 5))]
    if depth < 3 and roll < 0.25:
        return random_mapping(rnd, depth + 1)
    return rnd.choice([
        None, True, False, rnd.randint(-10, 10), rnd.randint(-(10**20), 10**20), rnd.uniform(-1e6, 1e6), 0.55,
        1e-7, 1e300, -0.0, math.inf, -math.inf, math.nan, random_text(rnd), random_text(rnd),
        random_text(rnd, most=30), " ".join(random_text(rnd, ["word", "alpha", "beta", "日本"], 3)
                                             for _ in range(rnd.randint(5, 40))),
    ])


def random_mapping(rnd: random.Random, depth: int = 0) -> dict[str, object]:
    return {random_key(rnd): random_value(rnd, depth) for _ in range(rnd.randint(0, 6))}


def random_style(rnd: random.Random) -> dict[str, object]:
    return {
        "default_flow_style": rnd.choice([False, True, None]),
        "width": rnd.choice([10, 20, 40, 80, 1000]),
        "indent": rnd.choice([2, 3, 4]),
        "allow_unicode": rnd.choice([True, False]),
        "sort_keys": rnd.choice([True, False]),
        "explicit_end": rnd.random() < 0.2,
        "line_break": rnd.choice([None, None, "\r\n"]),
    }


def dump(data: dict, style: dict[str, object]) -> str:
    """`yaml.safe_dump(data, **style)`, but never with a YAML 1.1 line break written raw."""
    dumped = yaml.safe_dump(data, **style)
    if style["allow_unicode"] and any(char in dumped for char in "\x85\u2028\u2029"):
        dumped = yaml.safe_dump(data, **{**style, "allow_unicode": False})
    return dumped


def card_of(dumped: str, style: dict[str, object]) -> str:
    """A card whose frontmatter is `dumped` (PyYAML's `...` end marker closes it when asked)."""
    newline = style["line_break"] or "\n"
    closing = "" if style["explicit_end"] else "---" + newline
    return "---" + newline + dumped + closing + "body" + newline


def same(ours: object, theirs: object) -> bool:
    """Equal, type for type (True is not 1, 1 is not 1.0), NaN equal to NaN, key order kept; a
    string PyYAML wrote plain is also equal to what the YAML 1.2 core schema types it as."""
    if isinstance(theirs, dict):
        return isinstance(ours, dict) and list(ours) == list(theirs) and all(same(ours[k], theirs[k]) for k in theirs)
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(same, ours, theirs))
    if isinstance(theirs, str) and not isinstance(ours, str):
        return repr(_resolve(theirs)) == repr(ours)  # the documented YAML 1.1 / 1.2 difference
    return type(ours) is type(theirs) and repr(ours) == repr(theirs)


def test_documents_pyyaml_writes_read_as_pyyaml_reads_them() -> None:
    rnd = random.Random(21)
    styles_seen = set()
    for _ in range(1500):
        data = random_mapping(rnd)
        style = random_style(rnd)
        dumped = dump(data, style)
        theirs = yaml.safe_load(dumped) or {}
        card = card_of(dumped, style)
        try:
            document = parse(card)
        except BadFrontmatter as exc:  # pragma: no cover - the failure message shows the case
            pytest.fail(f"{exc} for {style}:\n{dumped}")
        assert same(document.data, theirs), (style, dumped, document.data)
        assert document.body == "body" + (style["line_break"] or "\n")
        styles_seen.add((style["default_flow_style"], dumped.startswith("{"), "\n? " in "\n" + dumped))
    # The styles the issue names were all met: flow documents, wrapped flow, explicit keys.
    assert (True, True, False) in styles_seen and any(explicit for _, _, explicit in styles_seen)


def test_our_update_of_a_pyyaml_document_reads_back_the_same_in_pyyaml_and_here() -> None:
    rnd = random.Random(2121)
    for _ in range(1000):
        data = random_mapping(rnd) or {"k": 1}
        style = random_style(rnd)
        card = card_of(dump(data, style), style)
        before = parse(card).data
        key = rnd.choice([*before, random_key(rnd)])
        value = random_value(rnd, 1)
        removed = [k for k in before if k != key and rnd.random() < 0.1]
        written = update(card, {key: value}, removed)
        want = {k: v for k, v in before.items() if k not in removed}
        want[key] = value
        assert same(parse(written).data, want), (style, card, written)
        newline = style["line_break"] or "\n"
        front = written[len("---" + newline):written.rindex("body")]
        front = front[: -len("---" + newline)] if front.endswith("---" + newline) else front
        assert same(want, yaml.safe_load(front) or {}), (style, card, written)


def test_what_our_writer_renders_reads_back_the_same_in_pyyaml() -> None:
    rnd = random.Random(1024)
    for _ in range(1500):
        data = random_mapping(rnd)
        text = render(data, "")
        assert same(parse(text).data, data), text
        assert same(data, yaml.safe_load(text[len("---\n"):-len("---\n")]) or {}), text
