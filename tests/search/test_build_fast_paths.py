"""The fast paths of a bulk index build (issue 10 item 7) give exactly what the plain paths give:
the one-pass tokeniser of non-ASCII text yields the terms of cutting CJK runs out first; the
build's posting filer (`build._file_postings`) stores the codes, and the term order, of `_codes`,
which card-by-card indexing uses; and a chunk's rows, packed at once (`_packed_postings`) and
unpacked in the building process (`_posting_rows`), hold the arrays each row would hold packed
alone."""

from __future__ import annotations

import random
import re
from array import array
from collections import defaultdict

from external_brain.search import analysis
from external_brain.search.analysis import cjk_bigrams, normalise, tokens
from external_brain.search.build import _codes, _file_postings, _packed_postings, _posting_rows
from external_brain.search.store import FIELDS

MIXED = [
    "接続がタイムアウトした", "v1.2日本語", "C++とC#の違い", "abc-日本", "react-native-screensを使う",
    "ECONNRESETが出た。再起動！", "ＡＢＣ（全角）と　空白", "北海道のN+1問題",
    "snake_caseとCamelCase", "한국어 텍스트와 English", "々〆〇", "ｶﾞｷﾞ", "ﬁle ß é İ", "日",
    "x日y", "・中黒・", "the 日本 of", "2024年3月の更新", "ー長音", "㈱会社①", "a/b/日本/c",
    "__init__.pyの件",
]


def runs_first(text: str, drop_stop_words: bool = False) -> list[str]:
    """The analyser as it was: CJK runs cut out first, words looked for in the gaps between."""
    out: list[str] = []
    if text.isascii():
        analysis._add_words(text, drop_stop_words, out)
        return out
    text = normalise(text)
    position = 0
    for match in re.finditer(analysis._CJK, text):
        if match.start() > position:
            analysis._add_words(text[position:match.start()], drop_stop_words, out)
        out.extend(cjk_bigrams(match.group()))
        position = match.end()
    if position < len(text):
        analysis._add_words(text[position:], drop_stop_words, out)
    return out


def test_one_pass_tokeniser_gives_the_terms_of_cutting_runs_out_first() -> None:
    for text in MIXED:
        for drop in (False, True):
            assert tokens(text, drop) == runs_first(text, drop), text
    # Words that stop where a run starts, and runs between words, spelled out for one case.
    assert tokens("v1.2日本語とC++") == ["v1.2", "v1", "2", "日本", "本語", "語と", "c++"]
    alphabet = [*"ab Z_-./+#日本語のはカタカナー・々한ＡＢ（）、。 1２xY", "\u3000", "ｶ", "ﾞ", "é", "ß", "𠀋"]
    rng = random.Random(10)
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        assert tokens(text) == runs_first(text), text


def test_the_build_files_the_codes_and_term_order_of_card_by_card_indexing() -> None:
    cases = [
        # a term in the title and the body, a tag, a meta word, Japanese bigrams
        {"title": ["deploy", "hang"], "aliases": ["rds"], "tags": ["deploy"], "meta": ["pattern"],
         "body": ["hang", "pool", "deploy", "接続", "続が", "pool", "rds"]},
        # a body term past its frequency cap (255), a title term past its own (15)
        {"title": ["x"] * 20, "aliases": [], "tags": [], "meta": [], "body": ["y"] * 300 + ["x"]},
        # no body; only a body
        {"title": ["alone"], "aliases": [], "tags": ["t"], "meta": [], "body": []},
        {"title": [], "aliases": [], "tags": [], "meta": [], "body": ["b", "a", "b"]},
    ]
    by_term: defaultdict[str, list[int]] = defaultdict(list)  # as `_build_batch` gives it
    expected: dict[str, list[int]] = {}
    for docid, fields in enumerate(cases, start=1):
        lengths = [len(fields[field]) for field in FIELDS]
        if docid == 2:
            lengths[FIELDS.index("body")] = 70_000  # a body longer than its length cap
        codes = _codes(fields, lengths)
        terms = _file_postings(by_term, docid, fields, lengths)
        assert terms == list(codes), fields  # `doc_data.terms` in the same order
        for term, code in codes.items():
            expected.setdefault(term, []).extend((docid, code))
    assert by_term == expected


def test_a_chunks_rows_packed_at_once_hold_what_each_row_packed_alone_holds() -> None:
    rng = random.Random(4)
    by_term: dict[str, list[int]] = {}
    for docid in range(512, 1024):  # chunk 1 of 512 docids
        for term in rng.sample(["接続", "zeta", "alpha", "b", "ß", "日本", "x-y", "2"], rng.randint(0, 5)):
            by_term.setdefault(term, []).extend((docid, rng.randrange(1 << 60)))
    by_term["rare"] = [700, (1 << 64) - 1]  # the largest code there is
    rows = list(_posting_rows((1, *_packed_postings(by_term))))
    assert [row[0] for row in rows] == sorted(by_term)
    for term, chunk, docids, codes in rows:
        pairs = by_term[term]
        assert (chunk, docids, codes) == (1, array("I", pairs[0::2]).tobytes(), array("Q", pairs[1::2]).tobytes())
    assert list(_posting_rows((3, *_packed_postings({})))) == []
