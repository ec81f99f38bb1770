"""`claims._matching_blocks`, the word alignment the judgements' title and sentence rules read
(`word_diff`), gives exactly difflib's blocks (`SequenceMatcher(None, a, b, autojunk=False)`),
and `word_diff` gives what it gave when it ran difflib's opcodes."""

from __future__ import annotations

import difflib
import random

from external_brain.judging.claims import _NUMBER, _matching_blocks, _weight, sentence_tokens, word_diff


def difflib_word_diff(a: list[str], b: list[str]) -> tuple[float, list[tuple[list[int], list[int]]]]:
    """`word_diff` as it was written on difflib's opcodes (the reference)."""
    shared, spans = 0.0, []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            shared += sum(map(_weight, a[i1:i2]))
        else:
            kept_a = [i for i in range(i1, i2) if _weight(a[i]) or _NUMBER.match(a[i])]
            kept_b = [j for j in range(j1, j2) if _weight(b[j]) or _NUMBER.match(b[j])]
            if kept_a or kept_b:
                spans.append((kept_a, kept_b))
    return shared, spans


def test_the_blocks_are_difflibs_on_random_sequences() -> None:
    rng = random.Random(22)
    for _ in range(20_000):
        alphabet = "abcdefg"[:rng.randint(1, 7)]
        a = tuple(rng.choice(alphabet) for _ in range(rng.randint(0, 18)))
        b = tuple(rng.choice(alphabet) for _ in range(rng.randint(0, 18)))
        assert _matching_blocks(a, b) == [tuple(m) for m in difflib.SequenceMatcher(
            None, a, b, autojunk=False).get_matching_blocks()], (a, b)


def test_word_diff_is_what_difflibs_opcodes_gave() -> None:
    rng = random.Random(7)
    words = ["the", "a", "redis", "30", "60", "cache", "ttl", "の", "は", "ログ", "日", "set", "api", "1.5", "to",
             "in", "timeout", "second"]
    for _ in range(20_000):
        k = rng.randint(1, len(words))
        a = [rng.choice(words[:k]) for _ in range(rng.randint(0, 16))]
        b = [rng.choice(words[:k]) for _ in range(rng.randint(0, 16))]
        assert word_diff(a, b) == difflib_word_diff(a, b), (a, b)
    for one, other in (("Set the Payments API Client Timeout to 30 Seconds", "Payments API client timeout: 45 s"),
                       ("アプリのログは 30 日間保存する", "バッチジョブのログは 7 日間保存する")):
        a, b = sentence_tokens(one)[0], sentence_tokens(other)[0]
        assert word_diff(a, b) == difflib_word_diff(a, b)
