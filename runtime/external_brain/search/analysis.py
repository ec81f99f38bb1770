"""Text analysis shared by cards and queries: one analyser, so both sides agree on terms.

- NFKC (full-width forms become ASCII) and case folding.
- Latin words and code identifiers: `react-native-screens` yields the whole identifier and its
  parts; `snake_case` and `CamelCase` are split too; `N+1`, `v1.2.3` and `ECONNRESET` stay whole.
- English stemming (Porter2, stemmer.py) of ASCII alphabetic words longer than 3 letters, so
  "binding" meets "binds". A prose word (lower case or Capitalised) becomes its stem alone. A
  compound identifier keeps its whole form exact and stems its word parts like prose, so the
  query "native screens" still meets `react-native-screens`. An ALL-CAPS word (an acronym or a
  constant: AIDS, EACCES) keeps its exact form and adds its stem when that differs, so it still
  meets the same word written in lower case. Digits, non-ASCII words and CJK are never stemmed.
- Japanese and other CJK text: overlapping character bigrams within each run of kanji, kana or
  hangul (a lone character is a unigram), the standard dependency-free way to index CJK.
- Queries only: a Japanese bigram that carries grammar (into, out of or all hiragana) counts
  half (`query_weight`); search multiplies each query term's idf by it.
"""

from __future__ import annotations

import re
import unicodedata
from itertools import chain
from operator import add
from typing import TYPE_CHECKING

from ..vault.regex_programs import KeptPattern, compile_pattern
from ..vault.valueclass import valueclass
from .stemmer import stem

if TYPE_CHECKING:
    from ..vault.storage import Card

# Bump when tokens() changes: the search index stores analysed terms and rebuilds on a mismatch.
ANALYSER_VERSION = 3

# A "word" is a run of letters/digits joined by the connectors code uses (- _ . / +), with an
# optional trailing + or # (C++, C#). CJK runs are cut out before words are looked for.
_WORD = compile_pattern(r"[^\W_]+(?:[-_./+]+[^\W_]+)*[+#]*")
# Kana (less the middle dot ・ U+30FB, which separates words), the iteration marks 々〆〇, CJK
# ideographs (with extension A and compatibility forms) and hangul. Left for `re` to compile on
# first use (and cache): its 45,000-character class takes ~1 ms to compile, which ASCII text,
# the common case, never needs.
_CJK_CHARS = r"\u3005-\u3007\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK = f"[{_CJK_CHARS}]+"
# Text that is not all ASCII, in one pass: a match is a CJK run (group 1) or a word (group 2)
# whose letters are those of `_WORD` less the CJK ones, so a word stops where a run starts, as
# it does when the runs are cut out first. One C-level scan, not a search per run and a
# `_WORD.findall` per gap between runs (Japanese prose has a gap at every 、 and 。).
_LETTER = f"[^\\W_{_CJK_CHARS}]"
_RUN_OR_WORD = f"({_CJK})|({_LETTER}+(?:[-_./+]+{_LETTER}+)*[+#]*)"

# Compiled on first use, from the program an earlier process kept (`vault.regex_programs`):
# `_RUN_OR_WORD`'s three big classes took ~12 ms to compile in every process that analysed Japanese.
_CJK_RE, _RUN_OR_WORD_RE = KeptPattern(_CJK), KeptPattern(_RUN_OR_WORD)
_SPLIT = compile_pattern(r"[-_./]+")
_CAMEL = compile_pattern(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOP_WORDS = frozenset("""
a an and are as at be but by for from has have how i if in into is it its of on or that the
their then there these this to was were what when where which who why will with you your do does
did can could should would not no so than too very just about
""".split())


# Japanese particles and auxiliaries: grammar, which says nothing on its own. A query made of
# these alone (の, は, です, ですか) has no word to search for (`has_search_words`).
JAPANESE_FUNCTION_WORDS = frozenset("""
の は が を に へ と で も や か ね よ な ぞ わ さ から まで より ので のに けど けれど だ です ます でした ました
だった ですか ますか ではない じゃない ない
""".split())


# Full-width ASCII forms (U+FF01-FF5E) and the ideographic space: their NFKC form is one ASCII
# character each.
_WIDE = compile_pattern("[\uff01-\uff5e\u3000]")


def normalise(text: str) -> str:
    """NFKC. Japanese text is mostly normalised already but for its full-width punctuation and
    letters (（）, ：, Ａ) and the ideographic space, which make CPython normalise the whole
    string, at ~0.2 ms per 1,000 characters. Those are replaced first by their NFKC forms
    (one character each, which compose with nothing before them: the result is the same), and
    the rest is normalised only when the fast check says it must be."""
    if _WIDE.search(text):
        text = _WIDE.sub(_narrow, text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


def _narrow(match: re.Match) -> str:
    return chr(ord(match.group()) - 0xFEE0) if match.group() != "\u3000" else " "


def _word_terms(word: str, original: str) -> list[str]:
    """The terms of one word (see the module docstring): a prose word's stem; an identifier's
    whole form plus its parts, stemmed; an ALL-CAPS word plus its stem."""
    if _stemmable(word):
        if original.islower() or original[1:].islower():
            return [stem(word)]  # prose: lower case or Capitalised
        if original.isupper():
            stemmed = stem(word)
            return [word] if stemmed == word else [word, stemmed]
    terms = _identifier_terms(word, original)
    if len(terms) == 1:
        return terms
    out = terms[:1]  # the whole identifier stays exact
    for part in terms[1:]:
        part = stem(part) if _stemmable(part) else part
        if part not in out:
            out.append(part)
    return out


def _stemmable(term: str) -> bool:
    """An English word the stemmer may touch: ASCII letters only, longer than 3 letters (short
    ones are mostly abbreviations such as aws, ios or ids, which suffix rules would mangle)."""
    return len(term) > 3 and term.isascii() and term.isalpha()


def _identifier_terms(word: str, original: str) -> list[str]:
    """The whole word plus its parts when it is a compound identifier."""
    terms = [word]
    parts = [p for p in _SPLIT.split(word) if p]
    if len(parts) > 1:
        terms.extend(parts)
    # Only mixed-case words are CamelCase; ECONNRESET or N+1 stay whole.
    camel = [m.lower() for m in _CAMEL.findall(original)] if not original.isupper() and not original.islower() else []
    if len(camel) > 1:
        terms.extend(c for c in camel if c not in terms)
    return terms


_TERMS_LIMIT = 200_000   # words kept by `_TERMS` before it is cleared


class _Terms(dict):
    """A word as written -> its terms (a tuple). Memoised: a vocabulary repeats far more than
    it grows (5,000 SciFact abstracts hold ~860,000 words but ~69,000 distinct ones), and the
    terms of a word depend on nothing else. A word not seen yet is analysed by `__missing__`,
    so a text's words are looked up by one C loop (`map`) over them. Cleared when full, like
    the stemmer's cache."""

    def __missing__(self, original: str) -> tuple[str, ...]:
        if len(self) >= _TERMS_LIMIT:
            self.clear()
        terms = self[original] = tuple(_word_terms(original.casefold(), original))
        return terms


_TERMS = _Terms()


def tokens(text: str, drop_stop_words: bool = False) -> list[str]:
    """The index terms of `text`, in order, with repeats (term frequency matters)."""
    out: list[str] = []
    if text.isascii():  # nothing for NFKC to change, no CJK
        _add_words(text, drop_stop_words, out)
        return out
    text = normalise(text)
    if not _CJK_RE().search(text):
        # Trigger: text with no CJK once normalised (English with curly quotes or a dash,
        # accented words). Why: a word's letters are then those of `_WORD`, and the words
        # are found as in ASCII text, without a tuple and a Python step per match. Outcome:
        # the same terms.
        _add_words(text, drop_stop_words, out)
        return out
    terms_of = _TERMS.__getitem__
    extend = out.extend
    for run, word in _RUN_OR_WORD_RE().findall(text):
        if run:
            extend(map(add, run, run[1:]) if len(run) > 1 else (run,))  # cjk_bigrams, inline
        elif not drop_stop_words or word.casefold() not in STOP_WORDS:
            extend(terms_of(word))
    return out


def has_search_words(text: str) -> bool:
    """Whether `text` holds a word worth searching for: a word that is not a stop word and not a
    lone letter (`a`, `x`), or a CJK run that is not a Japanese particle or auxiliary alone
    (`JAPANESE_FUNCTION_WORDS`: の, は, です, のは). A query without one is refused by `search`
    (like "!!!", which has no word at all), so it is never a search miss, and `brief` and the
    hooks take it as nothing asked. Digits are words (`504`), and so is a lone kanji (`鍵`)."""
    normal = normalise(text)
    pairs = re.findall(_RUN_OR_WORD, normal) if not normal.isascii() else (("", w) for w in _WORD.findall(normal))
    for run, word in pairs:
        if word:
            folded = word.casefold()
            if folded not in STOP_WORDS and not (len(folded) == 1 and folded.isalpha()):
                return True
        elif not _function_words_only(run):
            return True
    return False


def _function_words_only(run: str) -> bool:
    """Whether a CJK run is one or more `JAPANESE_FUNCTION_WORDS` end to end (のは, ですか)."""
    ends = {0}
    for at in range(1, len(run) + 1):
        if any(at - size in ends and run[at - size:at] in JAPANESE_FUNCTION_WORDS for size in range(1, 6)):
            ends.add(at)
    return len(run) in ends


def mentions(text: str, wanted: set[str]) -> bool:
    """Whether `tokens(text)` holds any of the terms `wanted`. ASCII text is read word by word
    and stops at the first word that does: a hit's snippet line is usually a long paragraph
    that mentions a query term early, and analysing it whole was most of a search's time."""
    if not text.isascii():
        return not wanted.isdisjoint(tokens(text))
    terms_of = _TERMS.__getitem__
    for original in _WORD.findall(text):  # as `_add_words`, one word at a time
        if not wanted.isdisjoint(terms_of(original)):
            return True
    return False


def _add_words(segment: str, drop_stop_words: bool, out: list[str]) -> None:
    words = _WORD.findall(segment)
    if drop_stop_words:
        words = [word for word in words if word.casefold() not in STOP_WORDS]
    out.extend(chain.from_iterable(map(_TERMS.__getitem__, words)))


def cjk_bigrams(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return list(map(add, run, run[1:]))  # each character joined to the next, in C


# How much a query's CJK bigram counts, by the scripts of its two characters. Japanese writes
# content words in kanji and katakana and grammar in hiragana: particles (は が を に で と の も
# へ から まで より), inflections and the copula. A bigram inside a run of kanji or katakana is
# content (北海, 海道, タイ); one that crosses into or out of hiragana (雨が, は北, 見ら) joins a
# word to the grammar around it, so a card matches it only when its phrasing happens to be the
# same; one of hiragana alone (のは, です, どこ) is grammar, or a word too short and common to
# tell cards apart. idf alone does not see this: a crossing bigram is as rare as its content
# character, so it weighs as much as the content bigram beside it and adds its weight again.
# Half: such a bigram still counts (a question's phrasing often is the card's), but two of
# them no longer outweigh the content bigram they surround. On JSQuAD any weight from 0.3 to
# 0.7 does better than 1 (docs/decisions.md); a round value in that range, not a fitted one.
GRAMMAR_WEIGHT = 0.5


def query_weight(term: str) -> float:
    """How much a query term counts, relative to its idf: less than 1 only for a Japanese
    bigram that crosses into or out of hiragana, or is hiragana alone (see above)."""
    if len(term) != 2 or term.isascii():
        return 1.0
    first, second = (_HIRAGANA_FIRST <= ord(c) <= _HIRAGANA_LAST for c in term)
    if not (first or second):
        return 1.0
    if not all(_is_cjk(c) for c in term):
        return 1.0  # not a bigram of the analyser's (a word of two letters, say)
    return GRAMMAR_WEIGHT


_HIRAGANA_FIRST, _HIRAGANA_LAST = 0x3041, 0x309F


def _is_cjk(char: str) -> bool:
    return _CJK_RE().fullmatch(char) is not None


CJK, LATIN = "cjk", "latin"   # the scripts a query word and a card are told apart by (`scripts`)
_CJK_FIRST = "\u3005"         # no character of _CJK_CHARS sorts before it


def scripts(*texts: str) -> frozenset[str]:
    """The scripts `texts` are written in: CJK when any has a Chinese, Japanese or Korean
    character, LATIN when any has another letter or a digit (what the analyser's other words
    are made of). A card can only hold a query word in a script it is written in (`relevance`).
    Cheap on purpose (a search asks it of each hit): ASCII text is never CJK, and a text none
    of whose characters sorts as high as a CJK one is not either, without a regex."""
    found = set()
    for text in texts:
        if CJK not in found and not text.isascii() and max(text) >= _CJK_FIRST and _CJK_RE().search(text):
            found.add(CJK)
        if LATIN not in found and _other_letter(text):
            found.add(LATIN)
    return frozenset(found)


def _other_letter(text: str) -> bool:
    if re.search("[A-Za-z0-9]", text):
        return True
    return not text.isascii() and any(c.isalnum() and not _is_cjk(c) for c in text)


def word_script(word: "QueryWord") -> str:
    """A query word's script: CJK for a word of a CJK run, else LATIN."""
    return LATIN if word.text.isascii() or not _is_cjk(word.text[0]) else CJK


# ---------------------------------------------------------------------------- query words

# Scripts inside a CJK run, by code point: a run's words are its stretches of one script (a
# dependency-free stand-in for a morphological analyser: Japanese writes content words in kanji or
# katakana and its grammar in hiragana).
_KATAKANA_FIRST, _KATAKANA_LAST = 0x30A1, 0x30FF   # ァ..ヿ, with ー (U+30FC); ・ (U+30FB) never gets here
_LONG_VOWEL = "\u30fc"


def _script(char: str) -> str:
    code = ord(char)
    if _HIRAGANA_FIRST <= code <= _HIRAGANA_LAST:
        return "hiragana"
    if _KATAKANA_FIRST <= code <= _KATAKANA_LAST:
        return "katakana"
    if 0xAC00 <= code <= 0xD7AF:
        return "hangul"
    return "kanji"


def _run_words(run: str) -> list[tuple[str, int, str]]:
    """A CJK run cut where its script changes: (word, start offset, script)."""
    words = []
    start = 0
    for at in range(1, len(run) + 1):
        if at == len(run) or _script(run[at]) != _script(run[start]):
            words.append((run[start:at], start, _script(run[start])))
            start = at
    return words


@valueclass(frozen=True)
class QueryWord:
    """A word of a query as the person typed it (after NFKC) and its index terms.

    `terms`: every term the word stands for, for showing which words a card matched: a Latin
    word's terms (its stem; an identifier's whole form and parts), or the bigrams of a CJK run
    that touch a stretch of kanji or katakana, those joining it to the grammar around it
    included (デプロイ前 -> イ前 belongs to デプロイ and to 前). Hiragana is grammar, no word.
    `core`: the terms that say how well a card matches the word (`relevance`): a Latin word's
    terms, any one of which is the word (`every` False); a CJK word's own bigrams, all of which
    make the word (`every` True); a single kanji between kana (踏み台 -> 踏, 台) is matched by any
    bigram joining it to its neighbours.
    """

    text: str
    terms: tuple[str, ...]
    core: tuple[str, ...] = ()
    every: bool = False


def query_words(text: str) -> list[QueryWord]:
    """The words of `text`, in order, each once (Latin words by their terms); stop words
    are left out. A query of hiragana alone (ありがとう, ごみ) has its hiragana as its words."""
    latin: dict[tuple[str, ...], QueryWord] = {}
    out: list[QueryWord] = []
    hiragana: list[QueryWord] = []
    normal = normalise(text)
    pairs = _RUN_OR_WORD_RE().findall(normal) if not normal.isascii() else (("", w) for w in _WORD.findall(normal))
    for run, word in pairs:
        if word:
            if word.casefold() not in STOP_WORDS:
                terms = _TERMS[word]
                if terms not in latin:   # "Tests" and "test" are one word
                    latin[terms] = QueryWord(word, terms, terms)
                    out.append(latin[terms])
            continue
        if len(run) == 1:
            # A lone kana or kanji between Latin words or spaces: its own term. A lone hiragana
            # is a particle (ECS の タスク), grammar like the rest of hiragana.
            (hiragana if _script(run) == "hiragana" else out).append(QueryWord(run, (run,), (run,), True))
            continue
        for piece, start, script in _run_words(run):
            first, last = max(0, start - 1), min(len(run) - 2, start + len(piece) - 1)
            touching = tuple(dict.fromkeys(run[i:i + 2] for i in range(first, last + 1)))
            if len(piece) > 1:
                own = tuple(dict.fromkeys(map(add, piece, piece[1:])))
                (hiragana if script == "hiragana" else out).append(QueryWord(piece, touching, own, True))
            elif script != "hiragana":
                # One kanji between kana (踏み台 -> 踏, 台): matched through a bigram joining it to
                # its neighbours, any one of which shows the card writes it the same way.
                out.append(QueryWord(piece, touching, touching, False))
    if not any(word.core for word in out):
        out.extend(hiragana)
    return out


def matched_words(words, matched) -> list[tuple[QueryWord, tuple[str, ...]]]:
    """The query words (`query_words`) that any of the `matched` terms stand for, with those
    terms, in the query's order: what `--explain` and the hooks' "why" lines show instead of
    stems and bigrams ("invoices", not "invoic"; "デプロイ", not "デプ, プロ")."""
    if not matched:
        return []
    return [(word, found) for word in words if (found := tuple(t for t in word.terms if t in matched))]


@valueclass(frozen=True)
class KatakanaWord:
    """A katakana word of a query and the bigrams a card needs to match it: `core` are the
    bigrams of the word without a trailing long-vowel mark (サーバー and サーバ are one word),
    `need` how many of them (all of up to three, else all but one), `bigrams` all of its own."""

    text: str
    bigrams: tuple[str, ...]
    core: tuple[str, ...]
    need: int


def katakana_words(text: str) -> list[KatakanaWord]:
    """The katakana words of a query long enough to share a bigram by accident (two bigrams or
    more): バックアップ and ロールバック share バッ and ック, and a bigram index alone would call
    that a match. Search counts a card's bigrams of such a word only when it has `need` of them."""
    if text.isascii():
        return []
    out = []
    for run in _CJK_RE().findall(normalise(text)):
        for piece, _, script in _run_words(run):
            if script != "katakana":
                continue
            core_text = piece.rstrip(_LONG_VOWEL)
            core = tuple(dict.fromkeys(map(add, core_text, core_text[1:])))
            if len(core) < 2:
                continue
            bigrams = tuple(dict.fromkeys(map(add, piece, piece[1:])))
            out.append(KatakanaWord(piece, bigrams, core, len(core) if len(core) <= 3 else len(core) - 1))
    return out


@valueclass(frozen=True)
class Query:
    """A query analysed once for ranking and for judging relevance: its terms (stop words
    dropped unless that leaves none), its katakana words and its words."""

    text: str
    terms: tuple[str, ...]
    katakana: tuple[KatakanaWord, ...]
    words: tuple[QueryWord, ...]


def analyse_query(text: str) -> Query:
    terms = tokens(text, drop_stop_words=True) or tokens(text)
    return Query(text, tuple(terms), tuple(katakana_words(text)), tuple(query_words(text)))


def similarity(a: str, b: str) -> float:
    """Cosine similarity of the two texts' term-count vectors, in [0, 1] (stop words dropped)."""
    return counts_similarity(term_counts(a), term_counts(b))


_COUNTS: dict[str, dict[str, int]] = {}
_COUNTS_LIMIT = 4096


def term_counts(text: str) -> dict[str, int]:
    """The term-count vector `similarity` compares (stop words dropped). A text compared with
    many others (a new card with each candidate of a create) is counted once this way; the
    last few thousand counted are kept, as one card is a candidate for create after create."""
    counts = _COUNTS.get(text)
    if counts is None:
        from collections import Counter

        if len(_COUNTS) >= _COUNTS_LIMIT:
            _COUNTS.clear()
        counts = _COUNTS[text] = Counter(tokens(text, True))
    return counts


def counts_similarity(ca: dict[str, int], cb: dict[str, int]) -> float:
    """`similarity` of two `term_counts`."""
    from math import sqrt

    if not ca or not cb:
        return 0.0
    if len(cb) < len(ca):
        ca, cb = cb, ca
    dot = sum(count * cb[term] for term, count in ca.items() if term in cb)
    return dot / (sqrt(sum(v * v for v in ca.values())) * sqrt(sum(v * v for v in cb.values())))


def field_texts(card: Card) -> tuple[str, str, str, str, str]:
    """The texts `card_fields` analyses (title, aliases, tags, meta, body): two cards whose texts
    are equal get the same terms, which tells a writer so without tokenising either."""
    meta_text = " ".join(filter(None, (card.type, card.domain, card.text_field("project"))))
    aliases = card.meta.get("aliases")
    alias_text = " ".join(map(str, aliases)) if isinstance(aliases, list) else str(aliases or "")
    return card.title, alias_text, " ".join(card.tags), meta_text, card.body


def card_fields(card: Card) -> dict[str, list[str]]:
    """The analysed terms of each searchable field of a card."""
    title, aliases, tags, meta, body = field_texts(card)
    return {"title": tokens(title), "aliases": tokens(aliases), "tags": tokens(tags), "meta": tokens(meta),
            "body": tokens(body)}
