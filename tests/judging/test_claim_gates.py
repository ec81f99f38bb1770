"""`claims.claim_conflict` aligns two sentences word by word only when a value or a choice could
differ between them (`_value_may_differ`, `_choice_may_differ`): those tests are necessary
conditions, read from the claims' tokens alone. Checked here on generated sentence pairs built to
meet every rule (numbers, units, quantifiers, opposites in both languages, joins such as "dis
able", names, number words): whenever `_value_conflict` or `_choice_conflict` finds a conflict in
the alignment, the test said it could; and `claim_conflict` answers what it answers with the
alignment always made."""

from __future__ import annotations

import random

from external_brain.judging import claims as C

VOCABULARY = (
    "the a of to not never do 30 60 5 1,000 3.5 s seconds ms minutes up to about most enable disable enabled on off "
    "before after allow deny more less min max Redis Memcached redis gunicorn worker timeout retry three twice sync "
    "async synchron asynchronous dis able in creas increase decrease raise lower with without first last S3 v2 node18 "
    "API CloudWatch keep drop add remove open close start stop public private true false 有効 無効 必要 不要 不 要 以上 "
    "以下 前 後 秒 分 を に は する しない オン オフ 最大 最小 大 小 fb974b20 0966b1b3 x y z").split()


def _pairs(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        first = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 14)))
        if rng.random() < 0.5:   # a reworded copy: most words kept, so many pairs align closely
            second = " ".join(w if rng.random() < 0.7 else rng.choice(VOCABULARY) for w in first.split())
        else:
            second = " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 14)))
        yield C._claim(first), C._claim(second)


def test_a_value_or_choice_conflict_is_only_found_where_the_tests_say_it_may_be() -> None:
    found = skipped = 0
    for a, b in _pairs(7, 5_000):
        shared, spans = C._aligned(tuple(a.folded), tuple(b.folded))
        if not spans:
            continue
        may_value, may_choice = C._value_may_differ(a, b), C._choice_may_differ(a, b)
        skipped += not (may_value or may_choice)
        for bar in (shared, 5.0):   # `_value_conflict`'s and `_choice_conflict`'s looser bars too
            value = C._value_conflict(a.folded, b.folded, spans, a.written, b.written, bar)
            choice = C._choice_conflict(a.folded, b.folded, spans, a.written, b.written, {"redis", "memcached"}, bar)
            assert not value or may_value, (a.text, b.text, value)
            assert not choice or may_choice, (a.text, b.text, choice)
            found += bool(value or choice)
    assert found > 80 and skipped > 1_000   # both sides of the tests were met


def test_claim_conflict_answers_what_it_answers_with_every_pair_aligned(monkeypatch) -> None:
    pairs = list(_pairs(11, 3_000))
    gated = [C.claim_conflict(a, b, {"redis"}) for a, b in pairs]
    monkeypatch.setattr(C, "_value_may_differ", lambda a, b: True)
    assert gated == [C.claim_conflict(a, b, {"redis"}) for a, b in pairs]
    assert sum(map(bool, gated)) > 50
