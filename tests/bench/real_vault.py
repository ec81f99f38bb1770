#!/usr/bin/env python3
"""Generate a vault of real text for benchmarks: English SciFact abstracts and Japanese Wikipedia
paragraphs (JSQuAD contexts), read from ../shared/data/ (never copied into the project).

    python3 tests/bench/real_vault.py /tmp/real10k 10000

Half the cards are SciFact abstracts (title = the paper's title), half Japanese passages; every
body is cut to about `SIZE` characters, so tokenising costs what real cards cost (the generated
vault of gen_vault.py repeats a small vocabulary, which the analyser finds far easier).
JSQuAD has only 1,145 short paragraphs (~170 characters), so a Japanese card is a window of
`SIZE` characters over the paragraphs read as one ring, starting at a sentence start; windows
start `ring / cards` characters apart, so they overlap, as paragraphs of one subject do.
Deterministic: the same data gives the same vault.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from external_brain.vault.storage import init_vault  # noqa: E402

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
SIZE = 960


def _read(name: str) -> list[dict]:
    with (DATA / name / "corpus.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _cut(text: str, size: int = SIZE) -> str:
    """`text` cut to at most `size` characters, at the last space before the cut when there is one."""
    if len(text) <= size:
        return text
    head = text[:size]
    space = head.rfind(" ")
    return head[:space] if space > size // 2 else head


def english(count: int) -> list[tuple[str, str]]:
    """(title, body) of `count` SciFact abstracts (cycled if the set has fewer)."""
    docs = _read("scifact")
    out = []
    for number in range(count):
        doc = docs[number % len(docs)]
        out.append((doc["title"].strip() or f"SciFact {doc['_id']}", _cut(doc["text"])))
    return out


def japanese(count: int) -> list[tuple[str, str]]:
    """(title, body) of `count` windows of about SIZE characters over the JSQuAD paragraphs."""
    docs = _read("jsquad")
    ring, owners = "", []  # the paragraphs joined, and (start offset, article title) of each
    for doc in docs:
        owners.append((len(ring), doc["title"]))
        ring += doc["text"]
    stride = max(1, len(ring) // max(count, 1))
    out = []
    for number in range(count):
        start = number * stride % len(ring)
        sentence = ring.find("。", start, start + 200)  # begin after a full stop when one is near
        start = sentence + 1 if sentence >= 0 else start
        text = (ring + ring)[start:start + SIZE]
        title = next(title for offset, title in reversed(owners) if offset <= start % len(ring))
        out.append((f"{title} {number}", text))
    return out


def generate_real(root: Path, count: int) -> None:
    """A vault of `count` cards, half English, half Japanese, interleaved."""
    vault, _ = init_vault(root)
    playbooks = vault.root / "Playbooks"
    halves = (english(count - count // 2), japanese(count // 2))
    for number in range(count):
        title, body = halves[number % 2][number // 2]
        card_id = uuid.UUID(int=number * 7919 + 1, version=4)
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        text = (f"---\nid: {card_id}\ntitle: \"{escaped}\"\ntype: fact\ndomain: general\ntags: []\n"
                f"created: 2026-01-01T10:00:00+09:00\nupdated: 2026-01-01T10:00:00+09:00\n---\n"
                f"# {title}\n\n{body}\n")
        (playbooks / f"Fact_{number:05d}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: real_vault.py PATH COUNT")
    generate_real(Path(sys.argv[1]), int(sys.argv[2]))
    print(f"generated {sys.argv[2]} real-text cards in {sys.argv[1]}")
