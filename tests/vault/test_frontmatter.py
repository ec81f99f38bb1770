"""Golden and unit tests for the frontmatter reader and writer.

Golden cases live in tests/fixtures/cards: `<case>.md` beside `<case>.expected.json`, which holds either
{"data", "body", "has_frontmatter"} or {"error_line", "error_contains"}. The round-trip tests run
`update` over every parseable case and check, line by line, that only the touched key changed.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

try:
    from external_brain.vault import frontmatter  # noqa: F401  (installed, or on the configured path)
except ImportError:  # a bare checkout: the package lives under runtime/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from external_brain.errors import BadFrontmatter
from external_brain.vault.frontmatter import Document, dump_entry, parse, render, update

CARDS = Path(__file__).resolve().parents[1] / "fixtures" / "cards"
CASES = sorted(path.name[: -len(".md")] for path in CARDS.glob("*.md"))
FENCE = re.compile(r"(?:---|\.\.\.)[ \t]*\r?\n?")


def read_case(case: str) -> tuple[str, dict]:
    # Bytes, not read_text(): universal newlines would hide the CRLF case.
    text = (CARDS / f"{case}.md").read_bytes().decode("utf-8")
    expected = json.loads((CARDS / f"{case}.expected.json").read_text(encoding="utf-8"))
    return text, expected


def canonical(value: object) -> str:
    """JSON text of a value: tells True from 1 and 1 from 1.0, and keeps key order."""
    return json.dumps(value, ensure_ascii=False)


def newline_of(text: str) -> str:
    first = text.find("\n")
    return "\r\n" if first > 0 and text[first - 1] == "\r" else "\n"


def key_line(lines: list[str], key: str) -> int:
    """The index of the line where top-level `key` starts (plain or quoted), found by hand."""
    written = re.compile(rf"(?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')[ \t]*:"
                         rf"|\? (?:{re.escape(key)}|\"{re.escape(key)}\"|'{re.escape(key)}')[ \t]*\r?$")  # `? key`
    return next(n for n, line in enumerate(lines) if n > 0 and written.match(line))


def closing_fence(lines: list[str]) -> int:
    return next(n for n, line in enumerate(lines) if n > 0 and FENCE.fullmatch(line))


def replaced_lines(old: list[str], new: list[str], at: int, written: list[str]) -> list[str]:
    """The old lines from `at` that `new` replaces by `written`, asserting every other line is the same."""
    kept_tail = len(new) - at - len(written)
    assert kept_tail >= 0 and new[:at] == old[:at] and new[at : at + len(written)] == written
    assert new[at + len(written) :] == old[len(old) - kept_tail :]
    return old[at : len(old) - kept_tail]


PARSEABLE = [case for case in CASES if "error_line" not in read_case(case)[1]]
MALFORMED = [case for case in CASES if case not in PARSEABLE]
WITH_FRONTMATTER = [case for case in PARSEABLE if read_case(case)[1]["has_frontmatter"]]


# -- golden files --------------------------------------------------------------------------------


def test_fixture_folder_holds_only_pairs_of_cases() -> None:
    names = {path.name for path in CARDS.iterdir()}
    expected = {f"{case}.md" for case in CASES} | {f"{case}.expected.json" for case in CASES}
    assert names == expected
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_golden(case: str) -> None:
    text, expected = read_case(case)
    if "error_line" in expected:
        with pytest.raises(BadFrontmatter) as caught:
            parse(text, f"{case}.md")
        error = caught.value
        assert error.line == expected["error_line"], str(error)
        assert expected["error_contains"] in error.problem, str(error)
        assert str(error).startswith(f"{case}.md:{expected['error_line']}: bad frontmatter: ")
        return
    document = parse(text, f"{case}.md")
    assert canonical(document.data) == canonical(expected["data"])
    assert document.body == expected["body"]
    assert document.has_frontmatter is expected["has_frontmatter"]


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_cards_are_never_rewritten(case: str) -> None:
    text, _ = read_case(case)
    with pytest.raises(BadFrontmatter):
        update(text, {"confidence": 0.5})


# -- round trips over the golden files -------------------------------------------------------------


@pytest.mark.parametrize("case", PARSEABLE)
def test_update_without_changes_returns_the_text_unchanged(case: str) -> None:
    text, _ = read_case(case)
    assert update(text, {}) == text
    assert update(text, {}, remove=["no-such-key"]) == text


SETS = [
    ("confidence", 0.55),
    ("id", "0b9e6f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b"),
    ("tags", ["new", "C# tips", "日本語"]),
    ("links", [{"to": "9a1b", "rel": "extends", "weight": 0.8, "reason": "pooling: yes"}]),
]


# Where a person wrote a key in a style of their own, `update` keeps it (docs/decisions.md, "Portable names and Obsidian's edits"; "Obsidian's own
# edits are kept"): a block list stays a block list at its own indentation, and a comment after a
# one-line entry stays. Every other entry is written as `dump_entry` writes it.
KEPT_STYLE = {
    ("block_list_tags", "tags"): ["tags:", "  - new", "  - C# tips", "  - 日本語"],
    ("crlf", "tags"): ["tags:", "  - new", "  - C# tips", "  - 日本語"],
    ("obsidian_hand_edited", "tags"): ["tags:", "  - new", "  - C# tips", "  - 日本語"],
    ("spec_card", "id"): ["id: 0b9e6f3a-1c2d-4e5f-8a9b-0c1d2e3f4a5b            # stable, never changes; links use it"],
}


@pytest.mark.parametrize("key,value", SETS, ids=[key for key, _ in SETS])
@pytest.mark.parametrize("case", PARSEABLE)
def test_update_touches_only_the_lines_of_the_changed_key(case: str, key: str, value: object) -> None:
    text, _ = read_case(case)
    before = parse(text)
    result = update(text, {key: value})
    nl = newline_of(text)
    written = [line + nl for line in KEPT_STYLE.get((case, key)) or dump_entry(key, value)]

    if not before.has_frontmatter:
        bom = "\ufeff" if text.startswith("\ufeff") else ""
        assert result == bom + "---" + nl + "".join(written) + "---" + nl + text[len(bom) :]
    else:
        old, new = text.splitlines(keepends=True), result.splitlines(keepends=True)
        if key in before.data:  # rewritten where it stands
            assert replaced_lines(old, new, key_line(old, key), written)
        else:  # appended as the last lines of the frontmatter
            assert replaced_lines(old, new, closing_fence(old), written) == []

    after = parse(result)
    want = dict(before.data)
    want[key] = value
    assert canonical(after.data) == canonical(want)
    assert after.body == before.body


@pytest.mark.parametrize("case", WITH_FRONTMATTER)
def test_update_removes_only_the_lines_of_each_key(case: str) -> None:
    text, _ = read_case(case)
    before = parse(text)
    for key in before.data:
        result = update(text, {}, remove=[key])
        old = text.splitlines(keepends=True)
        assert replaced_lines(old, result.splitlines(keepends=True), key_line(old, key), [])
        after = parse(result)
        assert canonical(after.data) == canonical({k: v for k, v in before.data.items() if k != key})
        assert after.body == before.body


@pytest.mark.parametrize("case", PARSEABLE)
def test_writing_a_parsed_card_again_reads_back_the_same(case: str) -> None:
    text, _ = read_case(case)
    document = parse(text)
    again = parse(render(document.data, document.body))
    assert canonical(again.data) == canonical(document.data)
    assert again.body == document.body


# -- dump_entry and render -------------------------------------------------------------------------

TRICKY_STRINGS = [
    ": ", "a: b", "a #b", " #", "#tag", "C#", "url#frag", "-", "- item", "-5", "--", "---", "...", "... x",
    "true", "True", "FALSE", "null", "Null", "~", "", "123", "-7", "+3", "007", "1.5", ".5", "1e3", ".inf",
    ".nan", "yes", "no", "on", "off", "y", "N", "2026-11-21", "2026-11-21T10:30:00+09:00", "1.2.3", "0x1F",
    " lead", "trail ", "  ", "日本語のタイトル", "ECSタスク: 接続", "line1\nline2", "trailing\n",
    "\r\n",
    'say "hi"', "it's", "'", '"', "back\\slash", "\\n", "[[Note]]", "[a]", "{a: 1}", "a, b", "a]b",
    "x:", "x:y", "?", "? x", ":x", "@home", "`code`", "%d", "|", ">", "*a", "&a", "!x", "<<", "\t",
    "tab\tin", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\ufeff", "😀", "a\u3000", "\u3000",
]


@pytest.mark.parametrize("text", TRICKY_STRINGS, ids=repr)
def test_dump_entry_of_tricky_strings_reads_back(text: str) -> None:
    for key, value in [("k", text), (text, "v"), ("k", [text, "x"]), ("k", {text: text})]:
        lines = dump_entry(key, value)
        assert all("\n" not in line and "\r" not in line for line in lines)
        card = "---\n" + "\n".join(lines) + "\n---\n"
        assert canonical(parse(card).data) == canonical({key: value}), card


@pytest.mark.parametrize(
    "value,lines",
    [
        ("ECS timeout", ["k: ECS timeout"]),
        ("Fix: timeout", ['k: "Fix: timeout"']),
        ("日本語", ["k: 日本語"]),
        ("two\nlines", ['k: "two\\nlines"']),
        ("true", ['k: "true"']),
        ("yes", ['k: "yes"']),
        ("2026-11-21T10:30:00+09:00", ['k: "2026-11-21T10:30:00+09:00"']),
        (None, ["k:"]),
        (True, ["k: true"]),
        (0, ["k: 0"]),
        (0.55, ["k: 0.55"]),
        (1e-7, ["k: 1.0e-07"]),
        (float("inf"), ["k: .inf"]),
        ([], ["k: []"]),
        ({}, ["k: {}"]),
        (["a", "b c", 1, None, "x,y", "https://a.b"], ['k: [a, b c, 1, null, "x,y", "https://a.b"]']),
        ([["a"], []], ["k: [[a], []]"]),
        ({"a": 1, "b": {"c": [1]}}, ["k:", "  a: 1", "  b:", "    c: [1]"]),
        (
            [{"to": "9a1b", "rel": "extends", "weight": 0.8}, {"to": "7c2d"}],
            ["k:", "  - to: 9a1b", "    rel: extends", "    weight: 0.8", "  - to: 7c2d"],
        ),
        ([{"a": {"b": 1}}, "s", [{"x": 1}]], ["k:", "  - a:", "      b: 1", "  - s", "  - - x: 1"]),
    ],
    ids=repr,
)
def test_dump_entry_writes_the_documented_form(value: object, lines: list[str]) -> None:
    assert dump_entry("k", value) == lines


def test_dump_entry_quotes_keys_that_would_not_read_back() -> None:
    assert dump_entry("key with space", 1) == ["key with space: 1"]
    assert dump_entry("a: b", 1) == ['"a: b": 1']
    assert dump_entry("- x", 1) == ['"- x": 1']


@pytest.mark.parametrize("value", [object(), {1, 2}, b"bytes", {"k": object()}], ids=repr)
def test_dump_entry_refuses_values_without_a_yaml_form(value: object) -> None:
    with pytest.raises(TypeError):
        dump_entry("k", value)


def test_dump_entry_refuses_non_string_keys() -> None:
    with pytest.raises(TypeError):
        dump_entry("k", {1: "one"})


def test_render_writes_keys_in_order_between_fences() -> None:
    data = {
        "id": "5f0c",
        "title": "ECS timeout",
        "tags": ["ecs", "sg"],
        "confidence": 0.5,
        "project": None,
        "links": [{"to": "9a1b", "rel": "extends"}],
    }
    text = render(data, "# ECS timeout\n")
    assert text == (
        "---\n"
        "id: 5f0c\n"
        "title: ECS timeout\n"
        "tags: [ecs, sg]\n"
        "confidence: 0.5\n"
        "project:\n"
        "links:\n"
        "  - to: 9a1b\n"
        "    rel: extends\n"
        "---\n"
        "# ECS timeout\n"
    )
    document = parse(text)
    assert canonical(document.data) == canonical(data)
    assert document.body == "# ECS timeout\n"
    assert render(data, "# ECS timeout\n") == text


def test_render_of_nothing_is_an_empty_frontmatter() -> None:
    assert render({}, "") == "---\n---\n"
    assert parse("---\n---\n") == Document({}, "", True)


def test_float_values_read_back_exactly() -> None:
    for value in [0.1, 0.55, 1 / 3, 1e300, 5e-324, -0.0, 123456789.123456789, float("-inf")]:
        (line,) = dump_entry("x", value)
        assert parse(f"---\n{line}\n---\n").data["x"] == value
    (line,) = dump_entry("x", float("nan"))
    assert math.isnan(parse(f"---\n{line}\n---\n").data["x"])


# -- parse -------------------------------------------------------------------------------------------


def test_keys_are_always_strings() -> None:
    assert parse("---\n1: one\ntrue: yes\nnull: x\n---\n").data == {"1": "one", "true": "yes", "null": "x"}


def test_without_frontmatter_the_body_is_the_text_after_the_bom() -> None:
    assert parse("# Title\n") == Document({}, "# Title\n", False)
    assert parse("\ufeff# Title\n") == Document({}, "# Title\n", False)
    assert parse("") == Document({}, "", False)


def test_error_lines_count_from_the_first_line_of_the_file() -> None:
    with pytest.raises(BadFrontmatter) as caught:
        parse("\ufeff---\r\na: 1\r\n\r\nb: [\r\n---\r\n", "Playbooks/X.md")
    assert caught.value.line == 4
    assert str(caught.value).startswith("Playbooks/X.md:4: bad frontmatter: unterminated flow list")


@pytest.mark.parametrize(
    "text,line,problem",
    [
        ("---\nk: " + "[" * 2000 + "\n---\n", 2, "nesting deeper than 64 levels"),
        ("---\nk: " + "[" * 2000 + "]" * 2000 + "\n---\n", 2, "nesting deeper than 64 levels"),
        ("---\nk: " + "{a: " * 500 + "\n---\n", 2, "nesting deeper than 64 levels"),
        ("---\nk:\n" + "- " * 2000 + "x\n---\n", 3, "nesting deeper than 64 levels"),
        ("---\n" + "".join(" " * i + "k:\n" for i in range(200)) + "---\n", 66, "nesting deeper than"),
        ("---\na: 1\rb: 2\n---\n", 2, "carriage return without a line feed"),
        ("---\na: \x07\n---\n", 2, "control character U+0007"),
        ("---\na: '\x00'\n---\n", 2, "control character U+0000"),
        ("---\na: \"\\q\"\n---\n", 2, "invalid escape '\\q'"),
        ("---\na: \"\\U00110000\"\n---\n", 2, "beyond U+10FFFF"),
        ("---\na: |x\n---\n", 2, "bad block scalar header"),
        ("---\na: \"x\" y\n---\n", 2, "unexpected text after the closing quote"),
        ("---\na: [x] y\n---\n", 2, "unexpected text after the closing bracket"),
        ("---\na: [x, , y]\n---\n", 2, "empty entry"),
        ("---\na: {x: 1, x: 2}\n---\n", 2, "duplicate key 'x'"),
        ("---\na: - x\n---\n", 2, "list item must start its own line"),
        ("---\na: @x\n---\n", 2, "cannot start with '@'"),
        ("---\n  a: 1\n---\n", 2, "top-level keys start at the beginning of a line"),
        ("---\na: 1\n--- b: 2\n---\n", 3, "several documents"),
        ("---\na: 'x\n---\n", 2, "unterminated single-quoted string"),
        ("---\n[a]: 1\n---\n", 2, "collection used as a mapping key"),
        ("---\n-\tx\n---\n", 2, "not a list"),
        ("---\nk:\n  -\tx\n---\n", 3, "tab character after '-'"),
        ("---\nk: v\n\tj: w\n---\n", 3, "tab character used for indentation"),
        ("---", 1, "no closing '---' line"),
        ("---\n", 1, "no closing '---' line"),
    ],
    ids=lambda value: repr(value)[:40] if isinstance(value, str) else str(value),
)
def test_malformed_input_raises_bad_frontmatter_at_the_right_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(BadFrontmatter) as caught:
        parse(text)
    assert caught.value.line == line, str(caught.value)
    assert problem in caught.value.problem, str(caught.value)


def test_blank_lines_and_comments_between_keys_are_not_part_of_either_key() -> None:
    text = "---\na: |+\n  kept\n\n# note about b\nb: 1\n\n---\n"
    assert parse(text).data == {"a": "kept\n\n", "b": 1}
    assert update(text, {}, remove=["a"]) == "---\n\n# note about b\nb: 1\n\n---\n"
    assert update(text, {"b": 2}) == "---\na: |+\n  kept\n\n# note about b\nb: 2\n\n---\n"


# -- update ------------------------------------------------------------------------------------------


def test_update_keeps_the_files_crlf_line_endings() -> None:
    text = "---\r\ntitle: x\r\n---\r\nbody\r\n"
    result = update(text, {"title": "z", "tags": ["a", "b"], "links": [{"to": "9a1b"}]})
    assert result == "---\r\ntitle: z\r\ntags: [a, b]\r\nlinks:\r\n  - to: 9a1b\r\n---\r\nbody\r\n"


def test_update_of_a_card_without_frontmatter_prepends_one() -> None:
    assert update("# Note\n", {"id": "1a"}) == "---\nid: 1a\n---\n# Note\n"
    assert update("\ufeff# Note\r\n", {"id": "1a"}) == "\ufeff---\r\nid: 1a\r\n---\r\n# Note\r\n"
    assert update("", {"id": "1a"}) == "---\nid: 1a\n---\n"
    assert update("# Note\n", {}, remove=["id"]) == "# Note\n"


def test_update_leaves_a_key_alone_when_its_value_is_unchanged() -> None:
    text = "---\nconfidence: 0.50\ntitle: 'quoted'\ntags:\n  - a\n---\n"
    assert update(text, {"confidence": 0.5, "title": "quoted", "tags": ["a"]}) == text
    # True is not 1 and 1 is not 1.0: those are changes.
    assert update("---\ncount: 1\n---\n", {"count": True}) == "---\ncount: true\n---\n"
    assert update("---\ncount: 1\n---\n", {"count": 1.0}) == "---\ncount: 1.0\n---\n"


def test_update_changes_and_removes_several_keys_at_once() -> None:
    text = "---\n# keep me\nid: 1\ntitle: Old  # old comment\ntags: [a]\nextra: |\n  x\n---\nbody\n"
    result = update(text, {"title": "New", "updated": "2026-11-22"}, remove=["extra", "absent"])
    # The comment after the one-line entry stays with it (docs/card-format.md: a changed key keeps its style).
    assert result == "---\n# keep me\nid: 1\ntitle: New  # old comment\ntags: [a]\nupdated: 2026-11-22\n---\nbody\n"


def test_update_refuses_a_key_both_changed_and_removed() -> None:
    with pytest.raises(ValueError):
        update("---\na: 1\n---\n", {"a": 2}, remove=["a"])


def test_update_rewrites_a_quoted_key_with_its_new_value() -> None:
    # The key stays spelled as the person wrote it (quoted); only its value changes.
    assert update("---\n\"my key\": 1\nb: 2\n---\n", {"my key": 3}) == "---\n\"my key\": 3\nb: 2\n---\n"
    assert update("---\n'my key': 1\n---\n", {"my key": [1, 2]}) == "---\nmy key: [1, 2]\n---\n"


# -- escaped surrogates ------------------------------------------------------------------------------


def test_an_escaped_surrogate_pair_is_one_character_everywhere_escapes_are_read() -> None:
    text = (
        '---\ntitle: "\\uD83D\\uDE00 smile"\nlower: "\\ud83d\\ude00"\ntags: ["\\uD83D\\uDE00", x]\n'
        '"\\uD83D\\uDE00 key": {"\\uD83D\\uDE00": "a\\uD83D\\uDE00b"}\nkept: "\\\\uD83D"\n---\n'
    )
    assert parse(text).data == {
        "title": "\U0001F600 smile", "lower": "\U0001F600", "tags": ["\U0001F600", "x"],
        "\U0001F600 key": {"\U0001F600": "a\U0001F600b"}, "kept": "\\uD83D",
    }


@pytest.mark.parametrize(
    "line",
    [
        'title: "\\uD83D smile"',  # a high half alone
        'title: "\\uDE00"',  # a low half alone
        'title: "\\U0000D800"',  # a surrogate through the 8-digit escape
        'title: "\\uDE00\\uD83D"',  # the halves in the wrong order
        'title: "\\uD83D\\uD83D\\uDE00"',  # a pair after a lone high half
        '"\\uDBFF": key',  # in a key
        "tags: [ok, \"\\uD800\"]",  # in a flow list
        'm: {"\\uDC00": 1}',  # in a flow mapping's key
    ],
    ids=repr,
)
def test_a_lone_surrogate_escape_is_bad_frontmatter_at_its_line(line: str) -> None:
    with pytest.raises(BadFrontmatter) as caught:
        parse(f"---\nid: 1\n\n{line}\n---\n", "Playbooks/S.md")
    assert caught.value.line == 4, str(caught.value)
    assert str(caught.value).startswith("Playbooks/S.md:4: bad frontmatter: invalid escape '\\")
    assert "lone UTF-16 surrogate" in caught.value.problem


@pytest.mark.parametrize("value", ["\ud800", "a\udfffb", "\udc80", ["x", "\ud83d\ude00"], {"k": "\ud800"}],
                         ids=repr)
def test_the_writer_refuses_a_lone_surrogate_instead_of_writing_an_unreadable_card(value: object) -> None:
    with pytest.raises(ValueError, match="lone surrogate U\\+D"):
        dump_entry("k", value)
    with pytest.raises(ValueError, match="lone surrogate"):
        dump_entry(value if isinstance(value, str) else "\ud800", 1)


# -- what other YAML readers see in what we write ---------------------------------------------------

try:
    import yaml  # PyYAML: a YAML 1.1 reader, as Obsidian plugins, python-frontmatter and older tools are
except ImportError:  # the product never needs it; these checks run where it is installed
    yaml = None
needs_pyyaml = pytest.mark.skipif(yaml is None, reason="PyYAML is not installed")

# Text that a YAML 1.1 or 1.2 reader would type if written plain, and must therefore be quoted.
TYPED_LOOKING = [
    "0x1F", "-0x1f", "0x_1F", "10:30", "1:20:30.5", "190:20:30", "1_000", "1_000.5", "0b101",
    "+0b1", "0o17", "017", "09", "+12", "-7", "0", ".5", "-.5", "1.", "1.2.3", ".", "1e3", "1E+3",
    "1_0e3", "2024-05-01", "2024-5-1", "2024-05-01T10:00:00", "2024-05-01t10:00:00.5Z",
    "2024-05-01 10:00:00 +09:00", "2026-11-21T10:30:00+09:00", "2024-13-45", "null", "Null", "NULL",
    "~", "true", "True", "FALSE", "yes", "Yes", "NO", "on", "ON", "off", "Off", "y", "Y", "n", "N",
    ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "=", "<<",
]
# Text no reader types: written plain, as before.
PLAIN_TEXT = [
    "ECS timeout", "Yesterday", "only", "nullable", "yes please", "1st place", "v1.2", "10 30", "0x",
    "0xZZ", "0X1F", "e3", "12h", "2024-05-01 notes", "C#", "~x", "=x", "<<x", "日本語", "10:30am",
]


def test_the_writer_quotes_text_other_readers_would_type() -> None:
    # One test over the list, not one per item: every test pays for a fresh vault (conftest).
    for text in TYPED_LOOKING:
        assert dump_entry("title", text) == [f'title: "{text}"']
        assert dump_entry("tags", [text]) == [f'tags: ["{text}"]']
        assert dump_entry(text, 1) == [f'"{text}": 1']


def test_the_writer_leaves_ordinary_text_plain() -> None:
    for text in PLAIN_TEXT:
        assert dump_entry("title", text) == [f"title: {text}"]


def test_floats_are_written_with_a_dot_so_yaml_1_1_reads_them_as_floats() -> None:
    for value, line in [
        (1e-7, "1.0e-07"), (-1e-7, "-1.0e-07"), (1.5e-7, "1.5e-07"), (1e300, "1.0e+300"),
        (5e-324, "5.0e-324"), (1e16, "1.0e+16"), (0.1, "0.1"), (100.0, "100.0"), (-0.0, "-0.0"),
        (float("-inf"), "-.inf"), (float("nan"), ".nan"),
    ]:
        assert dump_entry("x", value) == [f"x: {line}"]
        assert repr(parse(f"---\nx: {line}\n---\n").data["x"]) == repr(value)


STAMP = "2026-11-21T10:30:00+09:00"


def test_timestamps_the_tool_writes_stay_plain_under_date_keys_only() -> None:
    data = {
        "title": STAMP, "created": STAMP, "updated": "2026-11-21", "valid_from": STAMP, "valid_to": STAMP,
        "first_seen": STAMP, "last_seen": STAMP, "promoted": STAMP, "expires": "2026-11-28 10:30:00",
        "links": [{"to": "9a1b", "created": STAMP, "updated": STAMP, "reason": STAMP}],
        "tags": [STAMP], "note": "10:30",
    }
    assert render(data, "") == (
        "---\n"
        f'title: "{STAMP}"\n'
        f"created: {STAMP}\nupdated: 2026-11-21\nvalid_from: {STAMP}\nvalid_to: {STAMP}\n"
        f"first_seen: {STAMP}\nlast_seen: {STAMP}\npromoted: {STAMP}\nexpires: 2026-11-28 10:30:00\n"
        f'links:\n  - to: 9a1b\n    created: {STAMP}\n    updated: {STAMP}\n    reason: "{STAMP}"\n'
        f'tags: ["{STAMP}"]\nnote: "10:30"\n'
        "---\n"
    )
    assert parse(render(data, "")).data == data  # our reader keeps every one of them a string
    # Under a date key, text that is not a real timestamp of the form the tool writes is quoted by the
    # usual rule (PyYAML would fail on `2026-13-45` and read `2026-5-1` as text).
    assert dump_entry("created", "10:30") == ['created: "10:30"']
    assert dump_entry("created", "2026-13-45") == ['created: "2026-13-45"']
    assert dump_entry("created", "2026-02-30T10:00:00") == ['created: "2026-02-30T10:00:00"']
    assert dump_entry("created", "2026-5-1") == ['created: "2026-5-1"']
    assert dump_entry("created", "yesterday") == ["created: yesterday"]


def pyyaml_reads(text: str) -> object:
    """What PyYAML's safe_load makes of the frontmatter of a card we rendered."""
    assert text.startswith("---\n") and text.endswith("---\n")
    return yaml.safe_load(text[4:-4]) or {}


# Values that must come back from PyYAML exactly as they went in (checked with repr, which tells
# True from 1, 1 from 1.0, 0.0 from -0.0 and a string from a number).
ROUND_TRIP_VALUES = [
    *TYPED_LOOKING, *PLAIN_TEXT, *TRICKY_STRINGS,
    0, 7, -7, 10**20, -(10**20), 0.0, -0.0, 0.1, 0.55, 1 / 3, 1e-7, 1e16, 1e300, 5e-324, -2.5e-300,
    float("inf"), float("-inf"), True, False, None,
    [], {}, ["0x1F", 10, 1.0e-07, None, True, "yes"], [["10:30"], []],
    {"a": "0b101", "b": {"c": ["1_000", 1_000]}, "yes": "no", "1": 1},
    [{"to": "9a1b", "rel": "extends", "weight": 0.8, "reason": "on: off"}, {"to": "2024-05-01"}],
]


@needs_pyyaml
def test_pyyaml_reads_back_what_we_write() -> None:
    for value in ROUND_TRIP_VALUES:
        cases = [{"k": value}, {"k": [value]}, {"k": {"n": value}}]
        if isinstance(value, str):
            cases.append({value: "v"})
        for data in cases:
            text = render(data, "body\n")
            assert repr(pyyaml_reads(text[: -len("body\n")])) == repr(data), text
            assert repr(parse(text).data) == repr(data), text


@needs_pyyaml
def test_pyyaml_reads_nan_and_tool_timestamps_as_intended() -> None:
    import datetime

    text = render({"x": float("nan"), "created": STAMP, "links": [{"updated": "2026-11-21"}],
                   "title": STAMP}, "")
    read = pyyaml_reads(text)
    assert math.isnan(read["x"])
    # Timestamps the tool writes are dates for PyYAML and Obsidian (intended); a title is text.
    assert read["created"] == datetime.datetime.fromisoformat(STAMP)
    assert read["links"] == [{"updated": datetime.date(2026, 11, 21)}]
    assert read["title"] == STAMP


@needs_pyyaml
def test_create_writes_a_title_that_looks_like_a_number_as_text(vault: Path) -> None:
    from helpers import ok_data

    data = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "0x1F", "--body", "b")
    text = (vault / data["path"]).read_text(encoding="utf-8")
    assert '\ntitle: "0x1F"\n' in text
    read = pyyaml_reads(text[: text.index("\n---\n") + 5])
    assert read["title"] == "0x1F"
    assert read["created"].tzinfo is not None  # the tool's own timestamp stays a date for Obsidian
    assert ok_data("get", data["path"])["title"] == "0x1F"
