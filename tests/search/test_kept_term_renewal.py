"""A kept term renewed after a fold (`index._KeptTerm.renewed`) holds exactly what the term's rows
read whole hold: the same joined docids and codes, the same parts, and the same two sets (every
row's codes, `distinct`; every row's but the last, `head`), whatever the fold moved: the term's last
chunk (a server's usual fold: its newest cards), a chunk past its rows, a row gone, an older chunk
(an edited card's), a chunk where the term had no row, several at once. The usual fold keeps the
rows before it as the arrays' beginning and takes a set it already had, never rebuilt from the
arrays; the rows and sets it hands out are never changed."""

from __future__ import annotations

import random
from array import array

from external_brain.search.index import _KeptTerm

CHUNK = 16   # docids a chunk


def random_row(rng: random.Random, chunk: int) -> tuple[int, array, array]:
    docids = sorted(rng.sample(range(chunk * CHUNK, (chunk + 1) * CHUNK), rng.randint(1, CHUNK)))
    # Few distinct codes, repeated within and across rows, as a real term's (most tfs are 1).
    return chunk, array("I", docids), array("Q", [rng.choice((1, 2, 3, 5, 8, 13, rng.randint(20, 400))) for _ in docids])


def snapshot(entry: _KeptTerm) -> tuple:
    return entry.docids.tobytes(), entry.codes.tobytes(), list(entry.parts), entry.head, entry.distinct


def check_same(renewed: _KeptTerm, rows: dict[int, tuple[int, array, array]]) -> None:
    whole = _KeptTerm.joined(("now",), [rows[chunk] for chunk in sorted(rows)])
    assert renewed.clock == ("now",)
    assert renewed.docids == whole.docids and renewed.codes == whole.codes
    assert renewed.parts == whole.parts
    assert renewed.distinct == whole.distinct == frozenset(whole.codes)
    last = whole.parts[-1][1] if whole.parts else 0
    assert renewed.head == whole.head == frozenset(whole.codes[:last])
    assert renewed.size == whole.size


def test_a_renewed_term_is_the_term_read_whole_whatever_the_fold_moved() -> None:
    rng = random.Random(22)
    kinds = {"last": 0, "past": 0, "gone": 0, "older": 0, "new row within": 0, "several": 0, "none of its rows": 0}
    for _ in range(3000):
        chunks = sorted(rng.sample(range(12), rng.randint(0, 8)))
        before = {chunk: random_row(rng, chunk) for chunk in chunks}
        entry = _KeptTerm.joined(("then",), [before[chunk] for chunk in chunks])
        kind = rng.choice(sorted(kinds))
        if kind == "last" and chunks:
            moved = {chunks[-1]}
        elif kind == "past":
            moved = {max(chunks, default=0) + rng.randint(1, 2)}
        elif kind == "gone" and chunks:
            moved = {rng.choice(chunks)}
        elif kind == "older" and len(chunks) > 1:
            moved = {rng.choice(chunks[:-1])}
        elif kind == "new row within" and len(chunks) > 1:
            free = sorted(set(range(chunks[0], chunks[-1])) - set(chunks))
            if not free:
                continue
            moved = {rng.choice(free)}
        elif kind == "none of its rows":
            moved = {max(chunks, default=0) + 1}
        else:
            moved = set(rng.sample(range(14), rng.randint(1, 4)))
        kinds[kind] += 1
        after = {chunk: row for chunk, row in before.items() if chunk not in moved}
        for chunk in sorted(moved):
            if kind == "none of its rows" or (kind == "gone" and chunk in before):
                continue
            if kind == "several" and rng.random() < 0.3:
                continue   # a row gone
            after[chunk] = random_row(rng, chunk)
        held = snapshot(entry)
        renewed = entry.renewed(("now",), frozenset(moved), [after[chunk] for chunk in sorted(moved) if chunk in after])
        check_same(renewed, after)
        assert snapshot(entry) == held   # the rows and sets handed out before are unchanged
    assert min(kinds.values()) > 100, kinds


def test_the_usual_fold_takes_the_rows_before_it_and_a_set_it_had() -> None:
    rng = random.Random(23)
    rows = {chunk: random_row(rng, chunk) for chunk in range(8)}
    entry = _KeptTerm.joined(("then",), [rows[chunk] for chunk in range(8)])
    # The last chunk folded again (more of its cards): the head of the term is the set it had.
    rows[7] = random_row(rng, 7)
    renewed = entry.renewed(("now",), frozenset({7}), [rows[7]])
    check_same(renewed, rows)
    assert renewed.head is entry.head
    # A row past the last: every code before it is the set the term had.
    rows[9] = random_row(rng, 9)
    again = renewed.renewed(("later",), frozenset({9}), [rows[9]])
    assert again.head is renewed.distinct
    assert again.docids[:len(renewed.docids)] == renewed.docids
    # A fold that wrote none of its rows: the same arrays and sets.
    untouched = again.renewed(("latest",), frozenset({11}), [])
    assert untouched.docids is again.docids and untouched.distinct is again.distinct
