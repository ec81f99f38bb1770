"""A note's Markdown as Obsidian reads it: where code is, its inline `#tags`, and its wikilinks.

What it promises:
- Code (fenced blocks, inline code spans) holds neither tags nor links: `outside_code` gives the
  parts of a text that are not code, and the readers below look only there.
- `inline_tags(body)` gives the `#tags` Obsidian shows for a body: `#` at the start of a line or
  after a blank, then letters, digits, `_`, `-` and `/` (nested tags, `#project/alpha`), not only
  digits (`#123` is no tag); lower-cased, as Obsidian matches tags without regard to case.
- `has_tag(tags, wanted)` is the one rule for `--tag`: a tag matches itself and, as Obsidian's
  nested tags do, every tag below it (`project` matches `project/alpha`, not `projects`).
- `relinked(text, names, stem)` points every wikilink to one of `names` at `stem`, keeping its
  folder, `.md`, heading, block, shown text and embed `!` (what Obsidian does on a rename);
  `relinked_card_text(card, names, stem)` does it to a whole card, body and properties.
- `is_conflict_marker(line)` tells the lines git leaves around a merge conflict, which are
  nobody's prose: snippets and summaries skip them (the card itself is left as it is).
It reads and returns text only: nothing here touches a file.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from .wikilinks import link_name

if TYPE_CHECKING:
    from .storage import Card

# Where a fenced block opens: ``` or ~~~ (three or more) at the start of a line, after up to
# three spaces. It closes at a line of at least as many of the same character, or at the end.
# The patterns are compiled on first use (`re` caches them): a search that filters on no tag
# does not pay for them at start-up.
_FENCE = r"(?m)^[ \t]{0,3}(`{3,}|~{3,})"
_TICKS = r"`+"
# `#tag` after the start of a line or a blank; `\w` is Unicode (Japanese tags are tags).
_INLINE_TAG = r"(?m)(?:^|(?<=\s))#([\w/-]+)"
# A wikilink anywhere in a note: `[[Name]]`, `[[Name|shown]]`, `[[Name#Heading]]`, `[[Name^block]]`,
# `[[folder/Name]]`, `[[Name.md]]`, and the embed `![[Name]]` (the `!` stays where it is).
_ANY_WIKILINK = r"\[\[([^\[\]|#^\n]+)((?:[#^][^\[\]|\n]*)?(?:\|[^\[\]\n]*)?)\]\]"


_CONFLICT_MARKERS = ("<<<<<<<", "|||||||", "=======", ">>>>>>>")


def is_conflict_marker(line: str) -> bool:
    """Whether `line` is a line git writes around a merge conflict: `<<<<<<< ours`, `||||||| base`,
    `=======`, `>>>>>>> theirs` (seven of one character at the start of the line, then nothing,
    or a blank and a label). Trigger: a card both clones changed on the same line, not yet
    resolved. Why: search and brief showed "<<<<<<< ours" as what the card says. Outcome: the
    snippet and summary readers skip such lines; `doctor` names the conflict (vault/merge.py)."""
    if not line.startswith(_CONFLICT_MARKERS):
        return False
    rest = line[7:].rstrip("\r\n")
    return not rest or rest[0] in " \t"


def outside_code(text: str) -> Iterator[tuple[str, bool]]:
    """The text in order, as (part, is_code) pairs; joined, they are `text`. Linear in the
    text, whatever it holds (a card of 100,000 lone backticks costs what its length does)."""
    if "`" not in text and "~~~" not in text:
        yield text, False
        return
    pos = 0
    for start, end in _code_ranges(text):
        yield text[pos:start], False
        yield text[start:end], True
        pos = end
    yield text[pos:], False


def _code_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of each fenced block and inline code span, in order."""
    ranges: list[tuple[int, int]] = []
    pos, size = 0, len(text)
    while True:
        fence = re.compile(_FENCE).search(text, pos)
        ranges += _code_spans(text, pos, size if fence is None else fence.start())
        if fence is None:
            return ranges
        mark = fence.group(1)
        line_end = text.find("\n", fence.end())
        closing = None if line_end < 0 else re.compile(
            rf"^[ \t]{{0,3}}{re.escape(mark[0])}{{{len(mark)},}}[ \t]*$", re.MULTILINE).search(text, line_end + 1)
        end = size if closing is None else closing.end()
        ranges.append((fence.start(), end))
        pos = end


def _code_spans(text: str, start: int, stop: int) -> list[tuple[int, int]]:
    """The inline code spans of text[start:stop]: a run of backticks to the next run of the same
    length (CommonMark). Each run finds its partner through a table built from the end, so the
    pairing is one pass, never a search from every backtick to the end of the text."""
    runs = [(m.start(), m.end()) for m in re.compile(_TICKS).finditer(text, start, stop)]
    if len(runs) < 2:
        return []
    partner = [0] * len(runs)
    last: dict[int, int] = {}
    for at in range(len(runs) - 1, -1, -1):
        length = runs[at][1] - runs[at][0]
        partner[at] = last.get(length, -1)
        last[length] = at
    spans, at = [], 0
    while at < len(runs):
        other = partner[at]
        if other < 0:
            at += 1
            continue
        spans.append((runs[at][0], runs[other][1]))
        at = other + 1
    return spans


def inline_tags(body: str) -> list[str]:
    """The body's inline `#tags`, lower-cased, each once, in order (see the module docstring)."""
    if "#" not in body:
        return []
    found: dict[str, None] = {}
    for part, is_code in outside_code(body):
        if is_code or "#" not in part:
            continue
        for match in re.finditer(_INLINE_TAG, part):
            tag = match.group(1).strip("/").lower()
            if tag and not tag.replace("/", "").isdigit() and not tag.startswith("-"):
                found[tag] = None
    return list(found)


def has_tag(tags: Iterable[str], wanted: str) -> bool:
    """Whether a card with `tags` has the tag `wanted` (`--tag`): the tag itself or one nested
    below it, without regard to case or a leading `#`."""
    key = wanted.strip().lstrip("#").lower().strip("/")
    if not key:
        return False
    below = key + "/"
    return any(tag == key or tag.startswith(below) for tag in (str(t).lower().lstrip("#") for t in tags))


def relinked(text: str, names: set[str], stem: str) -> str:
    """`text` with every wikilink whose name (`wikilinks.link_name`) is in `names` pointing at
    `stem` instead: its folder, `.md`, heading, block, shown text and embed `!` kept. Links inside
    code are text, and stay."""
    if "[[" not in text:
        return text

    def relink(match: re.Match) -> str:
        target = match.group(1)
        if link_name(target) not in names:
            return match.group()
        folder, slash, name = target.rpartition("/")
        suffix = name[-3:] if name.lower().endswith(".md") else ""
        return f"[[{folder}{slash}{stem}{suffix}{match.group(2)}]]"

    return "".join(part if is_code else re.sub(_ANY_WIKILINK, relink, part) for part, is_code in outside_code(text))


def _relinked_value(value: Any, names: set[str], stem: str) -> Any:
    """A frontmatter value with its wikilinks relinked (`relinked`), as YAML reads the text that
    `relinked` writes: a string in any list or mapping, and the unquoted `- [[Name]]`, which YAML
    reads as a list holding a list holding the name."""
    if isinstance(value, str):
        return relinked(value, names, stem)
    if isinstance(value, list):
        if len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1 and isinstance(value[0][0], str):
            inner = relinked(f"[[{value[0][0]}]]", names, stem)
            return [[inner[2:-2]]]
        return [_relinked_value(item, names, stem) for item in value]
    if isinstance(value, dict):
        return {key: _relinked_value(item, names, stem) for key, item in value.items()}
    return value


def relinked_card_text(card: Card, names: set[str], stem: str) -> str:
    """The card's text with every wikilink to `names` pointing at `stem`: in the body and in
    every property (quoted, unquoted, in lists, under any key), as Obsidian relinks on a rename.

    The frontmatter is relinked as text, so nothing but the links changes; what that text reads
    as is checked against the values relinked one by one, and where they differ (a new name that
    YAML would read otherwise unquoted, a key holding a link) those keys are written by
    `frontmatter.update` instead."""
    from . import frontmatter
    from ..errors import BrainError

    text = card.text
    head = text[:len(text) - len(card.body)]
    body = relinked(card.body, names, stem)
    if "[[" not in head:
        return head + body
    want = {key: _relinked_value(value, names, stem) for key, value in card.meta.items()}
    new_head = relinked(head, names, stem)
    try:
        read = frontmatter.parse(new_head + body).data
    except BrainError:
        read = None
    if read is not None and frontmatter.same_value(read, want):
        return new_head + body
    changed = {key: value for key, value in want.items() if not frontmatter.same_value(card.meta[key], value)}
    return frontmatter.update(head + body, changed, source=card.rel)
