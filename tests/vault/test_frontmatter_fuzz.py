"""Randomised tests of the frontmatter reader and writer (seeded `random`, no extra dependency).

Mutated cards must either parse or raise BadFrontmatter with a line inside the file -- never another
exception -- and every card that parses must survive `update` byte for byte except the changed key.
Random values must come back unchanged through `render` and `parse`.
"""

from __future__ import annotations

import datetime
import json
import math
import random
import re
import sys
from pathlib import Path

import pytest

try:
    from external_brain.vault import frontmatter  # noqa: F401  (installed, or on the configured path)
except ImportError:  # a bare checkout: the package lives under runtime/
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from external_brain.errors import BadFrontmatter
from external_brain.vault.frontmatter import parse, render, update
from helpers import ok_data, run_cli

CARDS = Path(__file__).resolve().parents[1] / "fixtures" / "cards"
MUTATIONS_PER_SEED = 300
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]")

# Pieces that stress the grammar: indicators, quotes, brackets, tabs, stray CR, NUL, non-ASCII.
TOKENS = [
    ":", ": ", " #", "#", "-", "- ", "\n- ", "\n  - ", "[", "]", "{", "}", ",", '"', "'", "''", "\\",
    '\\"', "\\u12", "|", "|-", ">+", "\t", "\r", "\r\n", "\x00", "\x85", "\u2028", "\ufeff", "日本語",
    "😀", "&a", "*a", "!!str", "? ", "%YAML", "---", "...", "\n---\n", "\n...\n", "\n", "\n\n", "  ",
    "    ", "\n  ", "~", "null", "true", "yes", "1.5", "-7", ".inf", "2026-11-21", "[[Note]]", "C#",
    "key: value", "\nkey: value\n", "\nconfidence: 0.9\n", "\nconfidence:\n  - 1\n",
]
# Whole lines and deep nesting, inserted as lines.
LINES = [
    "title: x", "tags: [a, b]", "tags:", "  - a", "- a", "links:", "  - to: 9a1b", "    rel: extends",
    "desc: |", "  text", "folded: >-", "# comment", "", "   ", "\t", "confidence: 0.5", "confidence:",
    "k: " + "[" * 2000, "k: " + "[" * 300 + "]" * 300, "k: " + "{a: " * 300, "k:\n" + "- " * 2000 + "x",
    "".join(" " * i + "k:\n" for i in range(120)), 'q: "unterminated', "q: 'multi", "  more: 1",
]


def seed_documents(rnd: random.Random) -> list[str]:
    """Every golden card, plus cards rendered from random data."""
    texts = [path.read_bytes().decode("utf-8") for path in sorted(CARDS.glob("*.md"))]
    texts += [render(random_mapping(rnd, depth=0), "# Body\n\ntext\n") for _ in range(15)]
    return texts


def mutate(text: str, rnd: random.Random) -> str:
    for _ in range(rnd.randint(1, 4)):
        at = rnd.randint(0, len(text))
        op = rnd.randrange(9)
        if op == 0:
            text = text[:at] + rnd.choice(TOKENS) + text[at:]
        elif op == 1:
            text = text[:at] + text[at + rnd.randint(1, 3) :]
        elif op == 2:  # duplicate a slice
            end = min(len(text), at + rnd.randint(1, 40))
            text = text[:end] + text[at:end] + text[end:]
        elif op == 3 and len(text) > 1:  # swap two characters
            i, j = sorted(rnd.sample(range(len(text)), 2))
            text = text[:i] + text[j] + text[i + 1 : j] + text[i] + text[j + 1 :]
        else:
            lines = text.split("\n")
            i = rnd.randrange(len(lines))
            if op == 4:
                del lines[i]
            elif op == 5:
                lines.insert(i, lines[rnd.randrange(len(lines))])
            elif op == 6:
                j = rnd.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            elif op == 7:
                lines.insert(i, rnd.choice(LINES))
            else:  # re-indent
                lines[i] = " " * rnd.randint(0, 5) + lines[i].lstrip(" ")
            text = "\n".join(lines)
    return text


def check_card(text: str, rnd: random.Random) -> bool:
    """The properties every input must have; returns whether the text parsed."""
    try:
        document = parse(text, "fuzz.md")
    except BadFrontmatter as error:
        assert 1 <= error.line <= text.count("\n") + 1, (error, text)
        return False
    assert update(text, {}) == text

    changed = update(text, {"confidence": 0.25})
    again = parse(changed)
    want = dict(document.data)
    want["confidence"] = 0.25
    assert repr(again.data) == repr(want), (text, changed)
    assert again.body == document.body

    if document.data:  # remove one key, and set another to a random value
        key = rnd.choice(list(document.data))
        removed = parse(update(text, {}, remove=[key])).data
        assert repr(removed) == repr({k: v for k, v in document.data.items() if k != key})
        key = rnd.choice(list(document.data))
        value = random_value(rnd, depth=1)
        want = dict(document.data)
        want[key] = value
        assert repr(parse(update(text, {key: value})).data) == repr(want)
    return True


def mutated_corpus(seed: int = 20261121) -> list[str]:
    """The fuzz corpus: MUTATIONS_PER_SEED mutations of every seed document, the same on every run."""
    rnd = random.Random(seed)
    return [mutate(text, rnd) for text in seed_documents(rnd) for _ in range(MUTATIONS_PER_SEED)]


def test_mutated_cards_parse_or_fail_cleanly_and_update_exactly() -> None:
    rnd = random.Random(1121)
    parsed = total = 0
    for text in mutated_corpus():
        total += 1
        try:
            parsed += check_card(text, rnd)
        except AssertionError:
            raise
        except Exception as error:  # a crash, or update() wrote a card parse() refuses
            pytest.fail(f"{type(error).__name__}: {error} for input {text!r}")
    assert total >= 15000
    # The mutations must leave enough cards valid for the update checks to mean something.
    assert parsed > total // 5, (parsed, total)


# Escaped UTF-16 surrogates: a pair is one character (as in JSON), a lone half is an error.
SURROGATE_CARDS = [
    '---\ntitle: "\\uD83D\\uDE00 smile"\n---\n# Smile\n',
    '---\ntitle: "\\ud83d\\ude00"\ntags: ["\\uD83D\\uDE00", x]\n'
    '"\\uD83D\\uDE00": {"\\uD83D\\uDE00": 1}\n---\n',
    '---\ntitle: "\\uD83D smile"\n---\n# Lone high\n',
    '---\ntitle: "\\uDE00"\n---\n',
    '---\ntitle: "\\U0000D800"\n---\n',
    '---\ntitle: "\\uDE00\\uD83D"\n---\n',
    '---\ntitle: "\\uD83D\\uD83D\\uDE00"\n---\n',
    '---\ntitle: ok\n"\\uDBFF": key\n---\n',
    '---\ntags: [ok, "\\uD800"]\n---\n',
    '---\nm: {"\\uDC00": 1}\n---\n',
    '---\nlinks:\n  - to: x\n    reason: "a\\\n      \\uDFFF"\n---\n',
]

HOSTILE_INPUTS = [
    "---\nk: " + "[" * 2000 + "\n---\n",
    "---\nk: " + "[" * 2000 + "a" + "]" * 2000 + "\n---\n",
    "---\nk: " + "{a: " * 2000 + "\n---\n",
    "---\nk:\n" + "- " * 2000 + "x\n---\n",
    "---\n" + "".join(" " * i + "k:\n" for i in range(2000)) + "---\n",
    "---\n" + "".join(" " * i + "- " for i in range(0, 4000, 2)) + "\n---\n",
    "---\nk: " + '"' + "\\" * 5001 + "\n---\n",
    "---\nk: " + "9" * 5000 + "\n---\n",
    "---\n" + "a: b\n" * 5000 + "---\n",
    "---\n" + "\x00" * 10 + "\n---\n",
    "---\r" * 100,
]


def hostile_corpus() -> list[str]:
    """Every hostile card: the mutated corpus, the hand-made hostile inputs and the surrogate cases."""
    return mutated_corpus() + HOSTILE_INPUTS + SURROGATE_CARDS


@pytest.mark.parametrize("text", HOSTILE_INPUTS + SURROGATE_CARDS, ids=lambda text: repr(text)[:30])
def test_hostile_input_never_raises_anything_but_bad_frontmatter(text: str) -> None:
    check_card(text, random.Random(1))


# -- generative round trip ------------------------------------------------------------------------

ALPHABET = [
    "a", "b", "Z", " ", "  ", ": ", " #", "#", "-", "- ", "?", ":", ",", "[", "]", "{", "}", '"', "'",
    "\\", "\n", "\t", "\r", "\x00", "\x7f", "\x85", "\u2028", "\ufeff", "日本", "タグ", "😀", "&", "*",
    "!", "|", ">", "%", "@", "`", "~", "true", "null", "yes", "Off", "1", "-5", "1.5", ".inf",
    "2026-11-21", "10:30", "---", "...", "[[Note]]", "C#",
]


def random_string(rnd: random.Random) -> str:
    return "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 5)))


def random_value(rnd: random.Random, depth: int) -> object:
    kind = rnd.random()
    if depth < 4 and kind < 0.12:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    if depth < 4 and kind < 0.22:
        return random_mapping(rnd, depth + 1)
    return rnd.choice(
        [
            None, True, False, rnd.randint(-(10**12), 10**12), rnd.uniform(-1e6, 1e6), 0.55, 1e300,
            5e-324, -0.0, math.inf, -math.inf, math.nan, random_string(rnd), random_string(rnd),
        ]
    )


def random_mapping(rnd: random.Random, depth: int) -> dict[str, object]:
    return {random_string(rnd): random_value(rnd, depth) for _ in range(rnd.randint(0, 5))}


def test_rendered_random_data_reads_back_the_same() -> None:
    rnd = random.Random(42)
    for _ in range(3000):
        data = random_mapping(rnd, depth=0)
        body = random_string(rnd)
        text = render(data, body)
        assert render(data, body) == text  # deterministic
        document = parse(text)
        # repr tells True from 1 and 1 from 1.0, keeps key order, and prints NaN equal to NaN.
        assert repr(document.data) == repr(data), text
        assert document.body == body
        # The writer escapes every control character, so the frontmatter is plain printable lines.
        frontmatter = text[: len(text) - len(body)]
        assert not CONTROL.search(frontmatter), frontmatter


# Fragments that make text look typed to some YAML reader: numbers in every base, sexagesimal,
# dates, booleans of YAML 1.1, merge and value keys.
TYPED_FRAGMENTS = [
    "0", "7", "+", "-", ".", "_", "e", "E", "e-", "e+", "0x", "0b", "0o", "1F", ":", ":30", "T", " ",
    "2024-05-01", "10:00:00", "Z", "+09:00", "y", "n", "Y", "No", "on", "OFF", "~", "<<", "=", "inf",
    ".NaN", "null", "True",
]


def test_random_text_and_values_read_back_the_same_in_pyyaml() -> None:
    yaml = pytest.importorskip("yaml")
    rnd = random.Random(2024)
    fragments = ALPHABET + TYPED_FRAGMENTS * 3
    for _ in range(2000):
        text = "".join(rnd.choice(fragments) for _ in range(rnd.randint(1, 4)))
        data = {"k": text, text: [text, random_value(rnd, depth=2)], "m": random_mapping(rnd, depth=2)}
        card = render({**data, "created": text}, "")
        assert repr(parse(card).data) == repr({**data, "created": text}), card
        read = yaml.safe_load(card[4:-4])
        # Under a date key a real timestamp is written plain and PyYAML makes it a date (intended).
        created = read.pop("created")
        assert created == text or (isinstance(created, datetime.date) and f"\ncreated: {text}\n" in card)
        # repr tells True from 1 and 1 from 1.0, keeps key order, and prints NaN equal to NaN.
        assert repr(read) == repr(data), card

# -- hostile cards beside good ones, through the real CLI ------------------------------------------

GOOD_WORD = "zephyrquux"  # in every good card and in no hostile one


def good_card(n: int) -> str:
    meta = {
        "id": f"00000000-0000-4000-8000-{n:012d}", "title": f"Good card {n} on {GOOD_WORD}",
        "type": "pattern", "domain": "dev", "tags": ["good", GOOD_WORD], "confidence": 0.5,
        "created": "2026-11-21T10:30:00+09:00", "updated": "2026-11-21T10:30:00+09:00",
    }
    return render(meta, f"# Good card {n}\n\nThe {GOOD_WORD} pattern, number {n}.\n")


def fill_hostile_vault(root: Path, hostile: list[str], good: int) -> list[str]:
    """Write the hostile cards and `good` good cards into Playbooks/; return the good cards' paths."""
    folder = root / "Playbooks"
    for n, text in enumerate(hostile):
        # errors="surrogatepass" keeps a raw surrogate a mutation might make as the bytes a broken
        # editor would save; such a file is not UTF-8 and must be skipped like any other.
        (folder / f"Hostile_{n:05d}.md").write_bytes(text.encode("utf-8", errors="surrogatepass"))
    paths = []
    for n in range(good):
        rel = f"Playbooks/Good_{n:03d}.md"
        (root / rel).write_text(good_card(n), encoding="utf-8", newline="")
        paths.append(rel)
    return paths


def check_hostile_vault(run, good: list[str]) -> list[tuple[str, int]]:
    """Run every command over a vault of hostile and good cards through `run(*argv) -> (code, out,
    err)`; assert each exits cleanly and finds the good cards. Returns each call and its exit code."""
    calls: list[tuple[str, int]] = []

    def clean(*argv: str) -> str:
        code, out, err = run(*argv)
        calls.append((" ".join(argv), code))
        assert "Traceback" not in err, (argv, err)
        # doctor exits 1 with its report when it finds errors (an unreadable hostile card is one).
        failed = code == 1 and (err.startswith("brain: error: ") or (argv[0] == "doctor" and (
            "error: " in out or '"errors": 0' not in out)))
        assert code == 0 or failed, (argv, code, err[-2000:])
        return out

    def clean_json(*argv: str) -> dict:
        out = clean(*argv, "--json")
        assert out.count("\n") == 1, (argv, out[:500])
        envelope = json.loads(out)
        assert envelope["ok"] is True, (argv, envelope)
        return envelope["data"]

    limit = str(len(good) + 10)
    out = clean("search", GOOD_WORD, "--limit", limit)
    assert all(path in out for path in good), out[:2000]
    hits = clean_json("search", GOOD_WORD, "--limit", limit)["hits"]
    assert set(good) <= {hit["path"] for hit in hits}
    out = clean("list")
    assert all(path in out for path in good)
    listed = clean_json("list")
    assert set(good) <= {card["path"] for card in listed["cards"]}, listed.keys()
    clean("audit")
    clean_json("audit")
    out = clean("doctor")
    clean_json("doctor")
    created = clean_json("create", "--type", "pattern", "--domain", "dev", "--tags", f"good,{GOOD_WORD}",
                         "--title", f"New {GOOD_WORD} card", "--body", f"A new {GOOD_WORD} note.")
    clean("create", "--type", "insight", "--domain", "dev", "--title", f"Another {GOOD_WORD} card",
          "--body", f"Another {GOOD_WORD} note.")
    clean("reindex")
    clean_json("reindex")
    for path in (good[0], good[-1]):
        assert GOOD_WORD in clean("get", Path(path).stem)
        assert clean_json("get", path)["path"] == path
    hits = clean_json("search", GOOD_WORD, "--limit", str(len(good) + 10))["hits"]
    assert set(good) | {created["path"]} <= {hit["path"] for hit in hits}
    return calls


def test_hostile_cards_beside_good_ones_stop_no_command(vault: Path) -> None:
    rnd = random.Random(8)
    hostile = rnd.sample(mutated_corpus(), 150) + HOSTILE_INPUTS + SURROGATE_CARDS
    good = fill_hostile_vault(vault, hostile, good=20)
    check_hostile_vault(run_cli, good)

    # The card whose title is an escaped surrogate pair is whole and found; a lone half is a
    # BadFrontmatter that doctor reports with its file and line.
    smile = f"Playbooks/Hostile_{hostile.index(SURROGATE_CARDS[0]):05d}.md"
    assert smile in {hit["path"] for hit in ok_data("search", "smile")["hits"]}
    lone = f"Hostile_{hostile.index(SURROGATE_CARDS[2]):05d}.md:2: bad frontmatter: invalid escape"
    code, out, err = run_cli("doctor")
    assert lone in out + err
