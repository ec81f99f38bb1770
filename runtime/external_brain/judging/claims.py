"""Sentences as claims, and when two claims conflict: the machinery under the contradiction
judgement (`judging.judgements.contradiction`) and the "one slot apart" test of duplicates.

A card's claims are its title and the sentences of its body (code blocks and the Evidence
section left out, Japanese split at 。、 and せず too). A claim is analysed once: its tokens (numbers,
words stemmed, code identifiers whole, katakana runs, single kanji and kana), the content they
carry, whether it denies something and what it says with the denial taken out. Two claims
conflict when they say the same thing but for a value, a named choice, an opposite or a denial
(`claim_conflict`). Pure functions; nothing is read or written.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ..vault.valueclass import valueclass
from .kept import kept_by_text
from .lazy import LazyPattern

MIN_SHARED_WORDS = 3        # a conflicting pair of sentences shares at least this much content
MAX_SENTENCES = 40          # per card
MAX_CLAIM_TOKENS = 60       # a longer "sentence" (a paragraph without full stops) is no claim to compare

EVIDENCE_SECTION = LazyPattern(r"^##\s+(?:Evidence|証拠|根拠)\s*$.*?(?=^##\s|\Z)", re.MULTILINE | re.DOTALL | re.IGNORECASE)

_CODE_FENCE = LazyPattern(r"```.*?```", re.DOTALL)
# (Lookbehinds on plain ASCII classes: `(?<=\w)` and `[^\d\s]` are Unicode classes that took
# ~5 ms to compile, a tenth of what the judgements add to a `create`.)
_SENTENCE_END = LazyPattern(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|(?<=[。！？])|(?<=[A-Za-z)\]]);\s+|\s+[—–]\s+|、|(?<=せず)|"
                      r"(?<=[A-Za-z0-9]),\s+(?:so|but|because|since|while|which)\s+",
                      # (On ASCII text every break starts at a space, a ";" or a ",": a lookahead of
                      # them skips every other position at once, as `_EN_NEGATIVE`'s; ~2.5x faster.)
                      ascii_pattern=r"(?=[\s;,])(?:(?<=[.!?])\s+(?=[A-Z`\"'(\[])|(?<=[A-Za-z)\]]);\s+|"
                      r"(?<=[A-Za-z0-9]),\s+(?:so|but|because|since|while|which)\s+)")
# A token: a number, a word or code identifier (whole), a katakana run, or one kanji or kana.
# (On ASCII text, the first two alternatives alone: the kana and kanji classes took ~1 ms to compile.)
_TOKEN = LazyPattern(r"\d+(?:[.,]\d+)*|[A-Za-z][\w+#]*(?:[./-][\w+#]+)*|[\u30a0-\u30ff]{2,}|"
                    r"[\u3005\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]",
                    ascii_pattern=r"\d+(?:[.,]\d+)*|[A-Za-z][\w+#]*(?:[./-][\w+#]+)*")
_KATAKANA_RUN = LazyPattern(r"[\u30a0-\u30ff]{2,}", non_ascii=True)
_NUMBER = LazyPattern(r"^\d+(?:[.,]\d+)*$")
UNITS = frozenset("""
    s sec secs second seconds ms millisecond milliseconds m min mins minute minutes h hr hrs hour hours d day days
    w week weeks month months year years gb mb kb tb gib mib kib b byte bytes % percent x times items requests rps
    秒 分 時 間 日 週 月 年 個 件 台 人 回 歳 円 倍 割 度
""".split())
# Words that qualify a number ("up to 5", "at most 3", "約 30 秒"): part of the value.
QUANTIFIERS = frozenset("up to about around approximately roughly most least max min maximum minimum over under 約 最大 最小".split())
STOP = frozenset("""
    a an the of to in on at for by with and or but is are be been was were it its this that these those as from
    into than then so we our you your they their i my me all any some each every also just only very more most
    do does did must should shall will would can could may
""".split())
# Each pair: opposite claims of one frame (Japanese: the character that differs is enough).
ANTONYMS = {frozenset(pair) for pair in (
    ("enable", "disable"), ("on", "off"), ("before", "after"), ("always", "never"), ("allow", "deny"),
    ("allow", "block"), ("increas", "decreas"), ("rais", "lower"), ("more", "fewer"), ("more", "less"),
    ("sync", "async"), ("synchron", "asynchron"), ("public", "private"), ("includ", "exclud"),
    ("requir", "option"), ("true", "false"), ("keep", "drop"), ("keep", "remov"), ("add", "remov"),
    ("start", "stop"), ("open", "close"), ("up", "down"), ("min", "max"), ("minimum", "maximum"),
    ("above", "below"), ("over", "under"), ("shorter", "longer"), ("higher", "lower"), ("larger", "smaller"),
    ("earlier", "later"), ("faster", "slower"), ("first", "last"), ("with", "without"),
    ("有", "無"), ("前", "後"), ("必要", "不要"), ("要", "不要"), ("可能", "不可"), ("可", "不可"), ("許可", "拒否"),
    ("許可", "禁止"), ("オン", "オフ"), ("以上", "以下"), ("増", "減"), ("上", "下"), ("開始", "停止"), ("開", "閉"),
    ("最大", "最小"), ("大", "小"),
)}
# The lexicon of opposite poles a claim can take about one thing, by class (phrases, so "turn off"
# meets "enable" and "longer" meets "shrink"): two claims with the same frame (what is left when
# the pole words are taken out) at opposite poles of one class conflict (`_polar_conflict`).
# A small documented list, not words fitted to examples: docs/decisions/0032, "Opposites".
POLES = {
    "switch": (r"\b(?:enabl(?:e|es|ed|ing)|turn(?:s|ed|ing)?\s+on|switch(?:es|ed|ing)?\s+on|activat\w*)\b|有効|オン",
               r"\b(?:disabl(?:e|es|ed|ing)|turn(?:s|ed|ing)?\s+off|switch(?:es|ed|ing)?\s+off|deactivat\w*)\b|無効|オフ"),
    "amount": (r"\b(?:longer|more|higher|larger|greater|increas\w*|rais(?:e|es|ed|ing)|grows?|grew|grown|growing|"
               r"lengthen\w*)\b|上げ|増や|延ば|長く",
               r"\b(?:shorter|less|fewer|lower(?:s|ed|ing)?|smaller|decreas\w*|reduc\w*|shrinks?|shrank|shrunk|"
               r"shrinking|shorten\w*)\b|下げ|減ら|縮め|短く"),
    "permission": (r"\b(?:allow(?:s|ed|ing)?|permit(?:s|ted|ting)?)\b|許可",
                   r"\b(?:den(?:y|ies|ied|ying)|block(?:s|ed|ing)?|forbid\w*)\b|禁止|拒否"),
    "order": (r"\b(?:before|prior\s+to)\b|(?<=の)前に|より前", r"\b(?:after)\b|(?<=の)後に|(?<=の)あとに|より後"),
}
# The words every match of each pole holds, in `POLES`' order (`LazyPattern.needs`): a sentence
# compiles only the poles whose words it has, where every create that judged a claim compiled
# all eight (~1.5 ms a process). `test_lazy_patterns` checks them against the patterns.
POLE_NEEDS = {
    "switch": (("enabl", "turn", "switch", "activat", "有効", "オン"),
               ("disabl", "turn", "switch", "deactivat", "無効", "オフ")),
    "amount": (("longer", "more", "higher", "larger", "greater", "increas", "rais", "grow", "grew", "lengthen",
                "上げ", "増や", "延ば", "長く"),
               ("shorter", "less", "fewer", "lower", "smaller", "decreas", "reduc", "shrink", "shrank", "shrunk",
                "shorten", "下げ", "減ら", "縮め", "短く")),
    "permission": (("allow", "permit", "許可"), ("deny", "deni", "block", "forbid", "禁止", "拒否")),
    "order": (("before", "prior", "前"), ("after", "後", "あとに")),
}
# A pole word inside a compound ("allow-list", "after-hours") names a thing, not a pole.
_POLE_PATTERNS = {(name, side): LazyPattern(rf"(?<![-/])(?:{pattern})(?![-/])", re.IGNORECASE,
                                            needs=POLE_NEEDS[name][side])
                  for name, pair in POLES.items() for side, pattern in enumerate(pair)}


@kept_by_text(4096)
def _poles(sentence: str) -> tuple[frozenset, frozenset]:
    """(the (class, side) poles a sentence takes, the folded tokens of the words that say them);
    a denial of the sentence flips its sides ("do not enable" is off)."""
    taken, words = set(), set()
    for (name, side), pattern in _POLE_PATTERNS.items():
        for match in pattern.finditer(sentence):
            # A denial flips the pole it governs only: "do not enable", 有効にしない; not "after
            # 350 s ..., and this cannot be configured".
            denied = _EN_NEGATIVE.search(sentence[max(0, match.start() - 20):match.start()]) or \
                re.match(r"(?:に|を)?(?:しない|しません|せず|ではない|じゃない)", sentence[match.end():match.end() + 8])
            taken.add((name, 1 - side if denied else side))
            words.update(sentence_tokens(match.group(0))[0])
    return frozenset(taken), frozenset(words)


def _shared_weight(a: frozenset, b: frozenset) -> float:
    """The content weight (`_weight`) of the tokens both sets hold. (Weights are 0, 0.5 and 1:
    their sum is exact in any order, so the order the intersection is walked in does not matter.)"""
    return sum(map(_weight, a & b))


def _polar_conflict(a: "Claim", b: "Claim") -> str | None:
    """The same frame at opposite poles of one class (`POLES`): "Turn off compression in the cache
    policy" against "Turn on automatic compression in the cache policy", "Inner timeouts should be
    longer than the layer that calls them" against "... shorter than the layer that calls it",
    有効にする / 無効にする. The frame (the content without the pole words) must be mostly shared."""
    poles_a, words_a = _poles(a.text)
    poles_b, words_b = _poles(b.text)
    if not poles_a or not poles_b:
        return None
    opposite = [name for name, side in poles_a if (name, 1 - side) in poles_b
                and (name, side) not in poles_b and (name, 1 - side) not in poles_a]
    if not opposite:
        return None
    frame_a, frame_b = a.content - words_a - _POLE_WORDS, b.content - words_b - _POLE_WORDS
    shared = sum(_weight(t) for t in frame_a & frame_b)
    smaller = min(sum(map(_weight, frame_a)), sum(map(_weight, frame_b)))
    if shared >= MIN_SHARED_WORDS - 1 and shared >= 0.6 * smaller:
        return f"opposite claims ({opposite[0]}): {a.text!r} vs {b.text!r}"
    return None


# Words of a pole phrase left in a frame ("turn" of "turn off"), and the kanji of 有効/無効.
_POLE_WORDS = frozenset({"turn", "switch", "効", "有", "無"})

# Japanese negative endings and what the sentence says without them.
_JA_A_TO_U = dict(zip("わかさたなまらがばぱ", "うくすつぬむるぐぶぷ"))
_JA_NEGATIVE = LazyPattern(r"しない|しません|せず(?:に)?|ではない|じゃない|ませんでした|ません|なかった|"
                          r"([わかさたなまらがばぱ])(?:ない|ず(?:に)?)|ない|禁止")
# (Each pattern below that starts with alternatives opens with a lookahead of the letters they can
# start with: it matches where it matched, and the regular expression engine skips every other
# position at once instead of trying each alternative there: ~3x faster on a sentence with none.)
_EN_NEGATIVE = LazyPattern(r"(?=[acdimnsw])\b(?:do\s+not|does\s+not|did\s+not|don't|doesn't|didn't|never|not|no\s+longer|must\s+not|"
                          r"should\s+not|shouldn't|mustn't|cannot|can't|isn't|aren't|won't|without)\b", re.IGNORECASE)
# A prohibition said with a verb: it denies what it governs as "never" / ない do ("Always avoid
# formatting user input into SQL" = "Never format ..."). English at the start of the sentence
# only ("to avoid downtime" is a reason, not a rule); Japanese at its end (…のは避ける, …を控える).
_PROHIBITION_EN = LazyPattern(r"^(?:(?:always|please|we|you|should|must|strictly|generally)\s+)*"
                              r"(?:avoid|refrain\s+from|stay\s+away\s+from|steer\s+clear\s+of)\b", re.IGNORECASE)
_PROHIBITION_JA = LazyPattern(r"(?:のは|のを|ことは|ことを|は|を)?(?:避け|控え)(?:る|ること|るべき|ます|ましょう)?\s*$")
# Sentence openings that make a number that follows part of the claim, not of the subject.
_IMPERATIVE = frozenset("""
    set use pin run keep enabl disabl turn rais lower increas decreas limit retri store allow deni add remov
    upgrad downgrad instal configur choos prefer switch move put give alway never make cap bump
""".split())


# A create judges its draft; some creates later the card it wrote is a candidate, its stored body
# starting with the newline `create` writes after the frontmatter. `_drafted_sentences`,
# `_drafted_tokens` and `judgements._drafted_content` keep the analyses of the last DRAFTED_KEPT
# bodies judged (drafts and stored cards, that newline left out) of at most DRAFTED_BODY_CHARS
# characters: keys of ~1 M characters each at most (1-2 MB), the values shared with the caches
# keyed by the body as given (`_sentences_of`, `_mentioned_tokens`, `judgements._content_of`).
# 256: a bench create adds ~5 (its draft, the candidates met the first time), and meets its own
# client's cards of 16 creates before.
DRAFTED_BODY_CHARS = 4_000
DRAFTED_KEPT = 256


def _sentences(card) -> list[str]:
    return list(_sentences_of(card.title, card.body))


@kept_by_text(1024)
def _sentences_of(title: str, body: str) -> tuple[str, ...]:
    # Kept per process by the card's title and body (a pure function of them): a candidate's
    # sentences were split again for every create that looked for a contradiction with it.
    if body.startswith("\n") and len(body) <= DRAFTED_BODY_CHARS:
        # Trigger: a stored card's body (see `_mentioned_tokens`). Why: the leading newline makes
        # an empty first line, which no sentence is made of and which joins no line to another
        # (`_paragraph_lines`); the Evidence section and code fences start and end where they
        # did. Outcome: its draft's sentences.
        return _drafted_sentences(title, body[1:])
    if len(body) <= DRAFTED_BODY_CHARS:
        return _drafted_sentences(title, body)
    return _drafted_sentences.__wrapped__(title, body)


@kept_by_text(DRAFTED_KEPT)
def _drafted_sentences(title: str, body: str) -> tuple[str, ...]:
    """`_sentences_of` a body as its draft held it (without a leading newline)."""
    body = _CODE_FENCE.sub(" ", EVIDENCE_SECTION.sub("", body))
    out = [part.strip(" .。") for part in _SENTENCE_END.split(title) if part and part.strip(" .。")]
    for line in _paragraph_lines(body):
        line = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|#+)?\s*(?:\[[ xX]\]\s*)?", "", line).strip()
        if not line or line.strip() == title.strip():
            continue
        out += _joined_clauses([part.strip(" .。") for part in _SENTENCE_END.split(line) if part and part.strip(" .。")])
        if len(out) >= MAX_SENTENCES:
            break
    return tuple(out[:MAX_SENTENCES])


# A Japanese clause that ends in a connective (…を変えても、…のに、…ので、) states nothing alone: it
# stays with the clause it leads into ("値を変えても、タスクは古い値を使い続ける" is one claim).
_LEADING_CLAUSE = LazyPattern(r"(?:ても|でも|たら|なら|ので|のに|けど|けれど|けれども|ながら|ため)$")


def _joined_clauses(parts: list[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if out and _LEADING_CLAUSE.search(out[-1]):
            out[-1] += "、" + part
        else:
            out.append(part)
    return out


_BLOCK_START = LazyPattern(r"^\s*(?:[-*+>|]|\d+[.)]|#+\s|\[[ xX]\])")


def _paragraph_lines(body: str) -> list[str]:
    """The body's lines with a paragraph's wrapped lines joined: a sentence that goes on past a
    line break ("... not run as a separate step before / the new app version is deployed") is one
    claim. A line continues the one before when that one ends mid-sentence (no . ! ? 。 : at its
    end) and neither starts a heading, a list item, a quote or a table row."""
    out: list[str] = []
    joinable = False
    for line in body.splitlines():
        stripped = line.strip()
        if joinable and stripped and not _BLOCK_START.match(line):
            out[-1] += ("" if re.search(r"[\u3040-\u9fff]$", out[-1]) else " ") + stripped
        else:
            out.append(line)
        last = out[-1].strip()
        joinable = bool(last) and not last.startswith("#") and not re.search(r"[.!?。！？:：]$", last)
    return out


_NUMBER_WORDS = {word: str(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS.update(once="1", twice="2", thrice="3")


@functools.lru_cache(maxsize=65536)
def _fold(token: str) -> str:
    from ..search.stemmer import stem

    if _NUMBER.match(token):
        return token.replace(",", "")
    lower = token.casefold()
    if lower in _NUMBER_WORDS:
        return _NUMBER_WORDS[lower]   # "three times" and "3 times" are one value
    return stem(lower) if lower.isascii() and lower.isalpha() and len(lower) > 3 else lower


def sentence_tokens(sentence: str) -> tuple[list[str], list[str]]:
    """(folded tokens, tokens as written): numbers, words (stemmed; code identifiers whole),
    katakana runs, single kanji and kana. New lists each call (the caller may change them)."""
    folded, written = _sentence_tokens(sentence)
    return list(folded), list(written)


@kept_by_text(1024)
def _sentence_tokens(sentence: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    # Kept per process by the text (a pure function of it): judging a create tokenises each
    # candidate's title and whole content several times (`another_choice_or_later_attempt`,
    # `different_qualifier`, `about_another_system` ...), and a server meets the same
    # candidates again and again.
    from .subjects import arabic_numerals

    written = _TOKEN.findall(arabic_numerals(unicodedata.normalize("NFKC", sentence)))
    return tuple(_fold(t) for t in written), tuple(written)


@functools.lru_cache(maxsize=65536)
def _weight(token: str) -> float:
    """How much a shared token says: a word, code identifier or katakana run 1, a kanji 0.5,
    kana, stop words and numbers nothing (a number is what may differ)."""
    if token in STOP or _NUMBER.match(token):
        return 0.0
    if len(token) == 1 and not token.isascii():
        return 0.0 if "\u3040" <= token <= "\u309f" else 0.5
    return 1.0


def word_diff(a: list[str], b: list[str]) -> tuple[float, list[tuple[list[int], list[int]]]]:
    """(the content weight both share, in order; each differing span as (positions in a,
    positions in b), stop words and kana left out). New lists each call."""
    shared, spans = _word_diff(tuple(a), tuple(b))
    return shared, [(list(ia), list(ib)) for ia, ib in spans]


@functools.lru_cache(maxsize=1024)
def _word_diff(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[float, tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]:
    # Kept per process by the two token sequences (a pure function of them): judging a create
    # aligns the new title with each candidate's twice (`another_choice_or_later_attempt`,
    # `one_slot_apart`), and the alignment is most of judging's CPU.
    return _aligned(a, b)


def _aligned(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[float, tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]:
    """`_word_diff`, not kept."""
    shared, spans = 0.0, []
    i = j = 0
    for ai, bj, size in _matching_blocks(a, b):
        if i < ai or j < bj:
            kept_a = [n for n in range(i, ai) if _diffed(a[n])]
            kept_b = [n for n in range(j, bj) if _diffed(b[n])]
            if kept_a or kept_b:
                spans.append((tuple(kept_a), tuple(kept_b)))
        i, j = ai + size, bj + size
        if size:
            shared += sum(map(_weight, a[ai:i]))
    return shared, tuple(spans)


@functools.lru_cache(maxsize=8192)
def _diffed(token: str) -> bool:
    """Whether a token that differs counts in a span: content (`_weight`) or a number."""
    return bool(_weight(token) or _NUMBER.match(token))


def _matching_blocks(a: tuple[str, ...], b: tuple[str, ...]) -> list[tuple[int, int, int]]:
    """`difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()`, the same
    blocks by the same steps (the longest common run in a range, the earliest in `a` then in
    `b` on a tie, then the ranges left and right of it; adjacent blocks joined; the (len(a),
    len(b), 0) sentinel last), without the class's set-up and namedtuples: with no junk and no
    popular elements (`autojunk=False`), its extensions over junk never apply.
    `test_judgements` checks it against difflib on random sequences."""
    b2j: dict[str, list[int]] = {}
    for n, token in enumerate(b):
        b2j.setdefault(token, []).append(n)
    nothing: list[int] = []
    queue = [(0, len(a), 0, len(b))]
    blocks = []
    while queue:
        alo, ahi, blo, bhi = queue.pop()
        besti, bestj, bestsize = alo, blo, 0
        j2len: dict[int, int] = {}
        for i in range(alo, ahi):
            j2lenget = j2len.get
            newj2len = {}
            for j in b2j.get(a[i], nothing):
                if j < blo:
                    continue
                if j >= bhi:
                    break
                k = newj2len[j] = j2lenget(j - 1, 0) + 1
                if k > bestsize:
                    besti, bestj, bestsize = i - k + 1, j - k + 1, k
            j2len = newj2len
        while besti > alo and bestj > blo and a[besti - 1] == b[bestj - 1]:
            besti, bestj, bestsize = besti - 1, bestj - 1, bestsize + 1
        while besti + bestsize < ahi and bestj + bestsize < bhi and a[besti + bestsize] == b[bestj + bestsize]:
            bestsize += 1
        if bestsize:
            blocks.append((besti, bestj, bestsize))
            if alo < besti and blo < bestj:
                queue.append((alo, besti, blo, bestj))
            if besti + bestsize < ahi and bestj + bestsize < bhi:
                queue.append((besti + bestsize, ahi, bestj + bestsize, bhi))
    blocks.sort()
    joined = []
    i1 = j1 = k1 = 0
    for i2, j2, k2 in blocks:
        if i1 + k1 == i2 and j1 + k1 == j2:
            k1 += k2
        else:
            if k1:
                joined.append((i1, j1, k1))
            i1, j1, k1 = i2, j2, k2
    if k1:
        joined.append((i1, j1, k1))
    joined.append((len(a), len(b), 0))
    return joined


def _value_conflict(a, b, spans, wa, wb, shared: float = 0.0) -> str | None:
    """The same sentence but for its numbers (a word more on one side is tolerated: "AWS", or a
    short clause when much is shared: "with exponential backoff"; a number more on one side
    too, when another number changed: "2 x CPU + 1" vs "4 x CPU")."""
    shown_a, shown_b = [], []
    one_sided = False
    extra = 3 if shared >= MIN_SHARED_WORDS + 1 else 1
    for ia, ib in spans:
        side_a = [i for i in ia if a[i] not in UNITS and a[i] not in QUANTIFIERS]
        side_b = [j for j in ib if b[j] not in UNITS and b[j] not in QUANTIFIERS]
        numeric = all(_NUMBER.match(a[i]) for i in side_a) and all(_NUMBER.match(b[j]) for j in side_b)
        if not side_a or not side_b:
            if numeric and side_a + side_b:
                one_sided = True
                continue
            if len(side_a) + len(side_b) <= extra:
                continue
            return None
        if not numeric:
            return None
        # A number at the opening, right after a name ("Python 3.11 ships ...") names the
        # subject, unless the sentence is an instruction ("Pin Node.js 18 in CI").
        if min(side_a) <= 1 and a[0] not in _IMPERATIVE:
            return None
        shown_a.append(" ".join(wa[i] for i in side_a) + _unit_after(a, wa, max(side_a)))
        shown_b.append(" ".join(wb[j] for j in side_b) + _unit_after(b, wb, max(side_b)))
    if shown_a and (shown_a != shown_b or one_sided):
        return f"values differ: {', '.join(shown_a)} vs {', '.join(shown_b)}"
    return None


def _unit_after(folded: list[str], written: list[str], position: int) -> str:
    if position + 1 < len(folded) and folded[position + 1] in UNITS:
        unit = written[position + 1]
        return unit if not unit.isascii() else f" {unit}"
    return ""


_FOLDED_ANTONYMS: set = set()
_FOLDED_ANTONYM_WORDS: set = set()


def _opposites(left: str, right: str) -> bool:
    if not _FOLDED_ANTONYMS:
        _FOLDED_ANTONYMS.update(frozenset(map(_fold, pair)) for pair in ANTONYMS)
    return frozenset((left, right)) in ANTONYMS or frozenset((_fold(left), _fold(right))) in _FOLDED_ANTONYMS


def _folded_antonym_words() -> set:
    """The words of `ANTONYMS` folded (`_fold`): what `_opposites` looks for a folded pair among."""
    if not _FOLDED_ANTONYM_WORDS:
        _opposites("", "")
        _FOLDED_ANTONYM_WORDS.update(word for pair in _FOLDED_ANTONYMS for word in pair)
    return _FOLDED_ANTONYM_WORDS


def _choice_conflict(a, b, spans, wa, wb, names: set[str], shared: float = 0.0) -> str | None:
    """One thing swapped for its opposite (enable/disable, above/below, 有効/無効) or for another
    named thing (Redis/Memcached), the rest the same. An opposite may come with other small
    differences when the sentences share much ("Set the keep-alive above the ALB idle timeout"
    against "Set Gunicorn's keep-alive below the ALB idle timeout of 60 s")."""
    if len(spans) > 1 and shared >= MIN_SHARED_WORDS + 1:
        for ia, ib in spans:
            if len(ia) == 1 and len(ib) == 1 and _opposites(a[ia[0]], b[ib[0]]):
                return f"opposite choices: {wa[ia[0]]} vs {wb[ib[0]]}"
    if len(spans) != 1 or not spans[0][0] or not spans[0][1]:
        return None
    ia, ib = spans[0]
    left, right = "".join(a[i] for i in ia), "".join(b[j] for j in ib)
    if _opposites(left, right) or _opposites("".join(wa[i] for i in ia).casefold(), "".join(wb[j] for j in ib).casefold()):
        return f"opposite choices: {' '.join(wa[i] for i in ia)} vs {' '.join(wb[j] for j in ib)}"
    if len(ia) == 1 and len(ib) == 1 and not _NUMBER.match(left) and not _NUMBER.match(right) \
            and (is_name_like(wa[ia[0]], names) or is_name_like(wb[ib[0]], names)):
        return f"different choices: {wa[ia[0]]} vs {wb[ib[0]]}"
    return None


def is_name_like(written: str, names: set[str]) -> bool:
    """A name rather than an ordinary word: one of the cards' tags or code spans, code-ish
    (digits, dots, dashes, inner capitals: gthread is not, PostgreSQL is), all capitals, or a
    katakana word."""
    return written.casefold() in names or _name_shaped(written)


@functools.lru_cache(maxsize=8192)
def _name_shaped(written: str) -> bool:
    # Kept per process by the word (a pure function of it): every create asks it of each word
    # of each candidate's title that the new card never mentions, and of its own title's.
    if re.search(r"[\d._/-]", written) or (any(c.isupper() for c in written[1:]) and any(c.islower() for c in written)):
        return True
    return (written.isupper() and len(written) > 1) or bool(_KATAKANA_RUN.fullmatch(written))


def names_in_card(card) -> set[str]:
    """What a card names: its tags and the words of its code spans."""
    return set(_names_in(card.body, tuple(card.tags)))


@kept_by_text(1024, text=0)
def _names_in(body: str, tags: tuple[str, ...]) -> frozenset[str]:
    # Kept per process by its arguments (a pure function of them): asked of each candidate by
    # several rules, for every create that met it.
    spans = re.findall(r"`([^`]+)`", body)
    words = {w.casefold() for span in spans for w in re.findall(r"[A-Za-z][\w.+-]*", span)}
    return frozenset(words | {tag.casefold() for tag in tags})


_CONTRAST = LazyPattern(r"(?=[,nr])(?:,\s*(?:but\s+)?not\s+|\bnot\s+(?:just|only)\b|\brather\s+than\b)", re.IGNORECASE)
_WITHOUT_A_NOUN = LazyPattern(r"\bwithout\s+(?!\w+ing\b)(?=\w)", re.IGNORECASE, needs=("without",))


def _title_case_line(text: str) -> bool:
    words = [w for w in re.findall(r"[A-Za-z][\w'-]*", text) if len(w) > 3]
    return len(words) >= 3 and all(w[0].isupper() for w in words)


def _polarity(sentence: str) -> tuple[bool, str]:
    """(whether the sentence denies something, the sentence with the denial taken out). A
    contrast ("shared state, not timing", "not only") denies nothing."""
    sentence = _CONTRAST.sub(" ", sentence) if _CONTRAST.search(sentence) else sentence
    # Quoted text and code are what a program said, not the card's claim; a capital "Not" inside
    # a sentence is a name ("404 Not Found").
    looked_at = re.sub(r"`[^`]*`|\"[^\"]*\"", " ", sentence)
    if "Not" in looked_at and not _title_case_line(looked_at):   # (without "Not" the sub changes nothing)
        looked_at = re.sub(r"(?<=\S\s)Not\b", "NOT_A_DENIAL", looked_at)
    # Trigger: "Avoid X" / "X のは避ける". Why: a rule that forbids X, worded without a negation;
    # read as "X" it contradicted "Never X". Outcome: a denial of X.
    prohibition = _PROHIBITION_EN.search(sentence.strip())
    if prohibition:
        return True, sentence.strip()[prohibition.end():].strip()
    prohibition = _PROHIBITION_JA.search(sentence)
    if prohibition:
        return True, sentence[:prohibition.start()]
    # Trigger: "without" before a noun ("after 350 seconds without traffic"). Why: it says a
    # circumstance, as "of inactivity" does, and denies nothing of the claim (blind7 b7n3);
    # before a doing ("without running the migrations") it still denies. Outcome: not a denial.
    looked_at = _WITHOUT_A_NOUN.sub(" ", looked_at)
    if _EN_NEGATIVE.search(looked_at):
        return True, " ".join(_EN_NEGATIVE.sub(" ", sentence).split())
    match = _JA_NEGATIVE.search(sentence)
    if match:
        word = match.group(0)
        plain = {"しない": "する", "しません": "します", "ではない": "だ", "じゃない": "だ", "ません": "ます",
                 "ませんでした": "ました", "なかった": "あった"}.get(word)
        if plain is None:
            plain = "して" if word.startswith("せず") else _JA_A_TO_U.get(match.group(1) or "", "")
        return True, sentence[:match.start()] + plain + sentence[match.end():]
    return False, sentence


_UNMADE = object()   # a kept value not made yet (`Claim._contrast`)


@valueclass
class Claim:
    """One sentence of a card, analysed once for every comparison."""

    text: str
    folded: list[str]
    written: list[str]
    content: frozenset      # its folded tokens that carry content
    weight: float           # how much content it holds
    negative: bool          # it denies something
    plain: frozenset        # the folded tokens of the sentence with its denial taken out
    # What `claim_conflict` reads of the claim in every pair, kept with it where it was made again
    # for each pair (a leading underscore: no part in equality). The tokens it says either way
    # (`content | plain`: the shared-words floor), made with the claim; the rest made by the first
    # pair that needs it (most claims stop at the floor): `_facts_of`, `_contrast_of`.
    _said: frozenset = frozenset()
    _facts: tuple | None = None
    _contrast: object = _UNMADE


def _claim_init(self, text: str, folded: list[str], written: list[str], content: frozenset, weight: float,
                negative: bool, plain: frozenset, _said: frozenset = frozenset(), _facts: tuple | None = None,
                _contrast: object = _UNMADE) -> None:
    # `valueclass`'s `__init__` with its fields written out, as `judgements.CardText`'s: a create
    # makes a Claim for each sentence of the new card and of each candidate met the first time.
    self.text, self.folded, self.written, self.content, self.weight = text, folded, written, content, weight
    self.negative, self.plain, self._said, self._facts, self._contrast = negative, plain, _said, _facts, _contrast


Claim.__init__ = _claim_init


# Sentences whose claims a process keeps. Trigger: a create-heavy MCP server grew past issue 22's 10 MB. Why:
# a kept claim holds ~2.1 KB (its tokens, written and folded, and content sets); 8,192 of them, 16 sentences
# for each of the 512 cards a process keeps, came to ~17 MB of the ~31 MB judging's caches hold when full.
# Outcome: 2,048 (~4 MB), the sentences of the candidates recently met (decision 0038, "What a create-heavy
# MCP server keeps").
KEPT_CLAIMS = 2048


@kept_by_text(KEPT_CLAIMS)
def _claim(sentence: str) -> Claim:
    # Kept per process by the sentence (a pure function of it; callers only read a Claim): a
    # server compares new cards with the same candidates' sentences again and again.
    folded, written = sentence_tokens(sentence)
    if len(folded) > MAX_CLAIM_TOKENS:   # compared with nothing (`claim_conflict`): not analysed further
        return Claim(sentence, folded, written, frozenset(), 0.0, False, frozenset())
    content = frozenset(t for t in folded if _weight(t))
    negative, plain = _polarity(sentence)
    plain_tokens = frozenset(sentence_tokens(plain)[0]) if negative else frozenset(folded)
    return Claim(sentence, folded, written, content, sum(map(_weight, content)), negative, plain_tokens,
                 plain_tokens if content <= plain_tokens else content | plain_tokens, None, _UNMADE)


_NO_WORDS: frozenset = frozenset()


def _facts_of(claim: Claim) -> tuple:
    """(its folded tokens as a tuple, the set of them, per token its part in a value's side
    (`_value_role`), the tokens a differing span can hold (`_diffed`) in order, per such token a
    digit in it both folded and as written, its tokens that can be one side of an opposite): what
    `claim_conflict` reads of a claim past the shared-words floor. Made by the first pair that
    needs it and kept with the claim (a pure function of it: two threads make the same)."""
    facts = claim._facts
    if facts is None:
        tokens, written = tuple(claim.folded), claim.written
        kept = [n for n, token in enumerate(tokens) if _diffed(token)]
        facts = claim._facts = (
            tokens, claim.plain if not claim.negative else frozenset(tokens), tuple(map(_value_role, tokens)),
            tuple([tokens[n] for n in kept]), tuple([_has_digit(tokens[n]) and _has_digit(written[n]) for n in kept]),
            frozenset(filter(_pole_word, tokens)) or _NO_WORDS)
    return facts


def _contrast_of(claim: Claim) -> tuple[frozenset, frozenset] | None:
    """`_contrast` of the claim's sentence, made by the first pair that needs it and kept with the
    claim (a pure function of it)."""
    contrast = claim._contrast
    if contrast is _UNMADE:
        contrast = claim._contrast = _contrast(claim.text)
    return contrast
# A token's part in `_value_conflict`'s sides: none (not in a span, or a unit or quantifier the
# sides leave out), a number, or another word (which no value conflict tolerates beside a number).
_NO_VALUE, _NUMBER_VALUE, _OTHER_WORD = 0, 1, 2


@functools.lru_cache(maxsize=8192)
def _value_role(token: str) -> int:
    # Per process by the token (pure), as `_diffed` (8,192 single words: ~1 MB at most).
    if not _diffed(token) or token in UNITS or token in QUANTIFIERS:
        return _NO_VALUE
    return _NUMBER_VALUE if _NUMBER.match(token) else _OTHER_WORD


@functools.lru_cache(maxsize=8192)
def _has_digit(token: str) -> bool:
    # Per process by the token (pure), as `_diffed`.
    return any(c.isdigit() for c in token)


@functools.lru_cache(maxsize=8192)
def _pole_word(token: str) -> bool:
    """Whether `_opposites` can pair the token with any other: a word of `ANTONYMS`, as given or
    folded. Per process by the token (pure), as `_diffed`."""
    return token in _ANTONYM_WORDS or _fold(token) in _folded_antonym_words()


_ANTONYM_WORDS = frozenset(word for pair in ANTONYMS for word in pair)


def claims(card) -> list[Claim]:
    """The card's title and sentences, analysed (at most MAX_SENTENCES)."""
    return [_claim(sentence) for sentence in _sentences(card)]


_CONTRAST_EN = LazyPattern(r"^(?P<yes>.+?)(?:,\s*(?:but\s+)?not\s+|\s+rather\s+than\s+|\s+instead\s+of\s+)(?P<no>.+)$",
                          re.IGNORECASE)
_CONTRAST_JA = LazyPattern(r"^(?P<no>.+?)(?:ではなく|じゃなくて|じゃなく|ではなくて)(?:、)?(?P<yes>.+)$")


def _contrast(sentence: str) -> tuple[frozenset, frozenset] | None:
    """(what it affirms, what it denies) for "X, not Y" / "X rather than Y" / "Y ではなく X"."""
    match = _CONTRAST_EN.match(sentence) or _CONTRAST_JA.match(sentence)
    if not match:
        return None
    yes = frozenset(t for t in sentence_tokens(match.group("yes"))[0] if _weight(t))
    no = frozenset(t for t in sentence_tokens(match.group("no"))[0] if _weight(t))
    return yes, no


def _contrast_conflict(a: Claim, b: Claim) -> str | None:
    """What one affirms the other denies ("stored in Redis, not in the database" against
    "stored in the database, not in Redis"), over a frame both share."""
    # Both sides must say "X, not Y": one contrast against a plain sentence is too weak ("shared
    # state, not timing" against "rarely by timing" agree). (The other claim's first: a
    # candidate's is kept for every create that meets it, the new card's made only when needed.)
    cb = _contrast_of(b)
    if cb is None:
        return None
    ca = _contrast_of(a)
    if ca is None:
        return None
    yes_a, no_a = ca
    yes_b, no_b = cb
    contested = (no_a & yes_b) | (no_b & yes_a)
    frame = sum(_weight(t) for t in (yes_a & yes_b) - contested)
    if no_a & yes_b and no_b & yes_a and frame >= MIN_SHARED_WORDS - 1:
        shown = ", ".join(sorted(contested))
        return f"one affirms what the other denies ({shown})"
    return None


def _negation_conflict(a: Claim, b: Claim) -> str | None:
    """One sentence denies what the other says: with the denial taken out, the shorter one's
    content is (nearly) all in the longer one ("Do not retry failed deliveries" against
    "Retry failed deliveries three times")."""
    if a.negative == b.negative:
        return None
    if _CONCESSIVE.search(a.text) or _CONCESSIVE.search(b.text):
        # Trigger: "…を更新しても、…に反映されない" (even if X, not Y). Why: the claim, and its
        # denial, is the main clause; the clause it concedes is shared scenery. Outcome: the main
        # clauses are compared.
        a, b = _main_clause(a), _main_clause(b)
        if a.negative == b.negative:
            return None
    # Trigger: a denial in one clause of its sentence ("Identifiers cannot be parameters: check
    # them against an allow-list"). Why: it denies that clause only; the others assert, and a
    # sentence that asserts one of them ("Check those against an allow-list") agrees (blind6
    # b6d1). Outcome: the denying clause is what is compared.
    a, b = (_denied_clause(a) if a.negative else a), (_denied_clause(b) if b.negative else b)
    short, long_ = (a.plain, b.plain) if a.weight <= b.weight else (b.plain, a.plain)
    have = sum(map(_weight, short))
    inside = sum(_weight(t) for t in short & long_)
    if have >= MIN_SHARED_WORDS - 0.5 and inside >= 0.8 * have and sum(map(_weight, long_)) <= 2.5 * have + 2:
        denied = a.text if a.negative else b.text
        return f"one denies what the other says: {denied!r}"
    return None


_CONCESSIVE = LazyPattern(r"(?:ても|でも|のに)[、,]?\s*(?=\S)")
_CLAUSE_BREAK = LazyPattern(r":\s+|,\s*(?:so|and\s+so|and|hence|therefore|thus)\s+", re.IGNORECASE)


# The words every match of a rule holds: a sentence without them skips the rule, uncompiled
# (`LazyPattern.needs`; a create compiled all of them to judge a dozen candidates' claims, most
# to find they do not apply). `test_lazy_patterns` checks each against its pattern.
for _rule, _needs in ((EVIDENCE_SECTION, ("evidence", "証拠", "根拠")), (_CODE_FENCE, ("```",)),
                      (_JA_NEGATIVE, ("ない", "ません", "ず", "なかった", "禁止")),
                      (_EN_NEGATIVE, ("not", "n't", "never", "longer", "without")),
                      (_PROHIBITION_EN, ("avoid", "refrain", "stay", "steer")), (_PROHIBITION_JA, ("避け", "控え")),
                      (_LEADING_CLAUSE, ("ても", "でも", "たら", "なら", "ので", "のに", "けど", "けれど", "ながら", "ため")),
                      (_CONTRAST, ("not", "rather")), (_CONTRAST_EN, ("not", "rather", "instead")),
                      (_CONTRAST_JA, ("ではなく", "じゃなく")), (_CONCESSIVE, ("ても", "でも", "のに")),
                      (_CLAUSE_BREAK, (":", ","))):
    _rule.needs = _needs


def _denied_clause(claim: Claim) -> Claim:
    """The clause of a denying sentence that holds its denial (of "Table names cannot be bound:
    check them against an allow-list", the first): what the sentence denies. The sentence
    itself when it is one clause, or when more than one clause denies."""
    parts = [part for part in _CLAUSE_BREAK.split(claim.text) if part.strip()]
    if len(parts) < 2:
        return claim
    denied = [part for part in parts if _polarity(part)[0]]
    return _claim(denied[0].strip()) if len(denied) == 1 else claim


def _main_clause(claim: Claim) -> Claim:
    """The claim without a leading concessive clause (…しても、…のに): what it asserts."""
    parts = _CONCESSIVE.split(claim.text)
    return _claim(parts[-1]) if len(parts) > 1 and parts[-1].strip() else claim


def claim_conflict(a: Claim, b: Claim, names: set[str] | frozenset = frozenset(), opposites: bool = True) -> str | None:
    """Why two sentences make conflicting claims about one thing (None when they do not): the
    same words but a value (30 vs 60 seconds), one named choice (Redis vs Memcached), an
    opposite (enable vs disable, 有効 vs 無効), or a denial (retry vs do not retry). `opposites`:
    whether opposite poles of one frame (`_polar_conflict`) count too."""
    if _shared_weight(a._said, b._said) < MIN_SHARED_WORDS - 0.5:
        return None   # too little in common to be one claim (most pairs stop here, cheaply)
    if len(a.folded) > MAX_CLAIM_TOKENS or len(b.folded) > MAX_CLAIM_TOKENS:
        return None   # a paragraph without full stops, not a claim
    if _value_may_differ(a, b) or _choice_may_differ(a, b):
        # (Else neither rule below can find anything in the alignment, which is most of the
        # pair's cost: most pairs of sentences that share three words differ in more than a value
        # or a choice. The alignment itself, not `word_diff`'s kept one: a pair is met once, the
        # new card's sentences being new.)
        shared, spans = _aligned(_facts_of(a)[0], _facts_of(b)[0])
        if spans and shared >= MIN_SHARED_WORDS:
            reason = _value_conflict(a.folded, b.folded, spans, a.written, b.written, shared) or \
                _choice_conflict(a.folded, b.folded, spans, a.written, b.written, names, shared)
            if reason:
                return reason
    return _contrast_conflict(a, b) or _negation_conflict(a, b) or (_polar_conflict(a, b) if opposites else None)


def _value_may_differ(a: Claim, b: Claim) -> bool:
    """False when `_value_conflict` finds nothing in the two claims' alignment, whatever it is
    (a necessary condition, from the claims' tokens alone). Its sides are the differing spans'
    tokens but units and quantifiers; it needs a number on both sides of a span, so a number in
    each claim, and it fails at a span that holds a word besides a number on both sides, or a
    word and more than three tokens (its `extra`, at most 3) on one side. A run of consecutive
    tokens of one claim that the other never has is matched nowhere: it lies in one span, so
    such a run with a word and more than three side tokens fails it."""
    tokens_a, present_a, roles_a = _facts_of(a)[:3]
    tokens_b, present_b, roles_b = _facts_of(b)[:3]
    if _NUMBER_VALUE not in roles_a or _NUMBER_VALUE not in roles_b:
        return False
    return not _unmatched_run(tokens_a, roles_a, present_b) and not _unmatched_run(tokens_b, roles_b, present_a)


def _unmatched_run(tokens: tuple, roles: tuple, other: frozenset) -> bool:
    """Whether `tokens` (with their `roles`) have a run of consecutive tokens none of which is in
    `other` that holds a word (not a number) and more than three tokens of a value's side."""
    sides, word = 0, False
    for token, role in zip(tokens, roles):
        if token in other:
            sides, word = 0, False
        elif role:
            sides += 1
            word = word or role == _OTHER_WORD
            if word and sides > 3:
                return True
    return False


def _choice_may_differ(a: Claim, b: Claim) -> bool:
    """False when `_choice_conflict` finds nothing in the two claims' alignment, whatever it is
    (a necessary condition, from the claims' tokens alone). Its first test needs a token of each
    that are opposites. Its others need one differing span with tokens on both sides: every kept
    token (`_diffed`, what a span holds) outside it is matched, so the kept tokens are X + A + Y
    and X + B + Y, A and B the span's sides, X at most the longest common start and Y at most the
    longest common end. One token a side (a named choice) needs as many kept tokens each, differing
    in one place at most; A and B joined as opposites (`ANTONYMS`, folded or not) need joins with
    no digit, and every A holds the kept tokens past min(start, n - 1) and before min(end, n - 1)
    from the end (n the fewer kept tokens: A and B are not empty)."""
    _, _, _, ka, digits_a, poles_a = _facts_of(a)
    _, _, _, kb, digits_b, poles_b = _facts_of(b)
    if poles_a and poles_b and any(_opposites(x, y) for x in poles_a for y in poles_b):
        return True
    fewer = min(len(ka), len(kb))
    if not fewer:
        return False
    if len(ka) == len(kb) and sum(x != y for x, y in zip(ka, kb)) <= 1:
        return True
    start = 0
    while start < fewer and ka[start] == kb[start]:
        start += 1
    end = 0
    while end < fewer and ka[-1 - end] == kb[-1 - end]:
        end += 1
    first, last = min(start, fewer - 1), min(end, fewer - 1)
    return not any(digits_a[first:len(ka) - last]) and not any(digits_b[first:len(kb) - last])


def _title_values(title: str) -> dict[str, str]:
    """The numbers a title states, by what they count: the unit written after the number ("120
    Seconds", "7 日"; a one-letter unit only apart from it: "60 s", not the plural "504s"), else
    the content word before it ("Node.js 22")."""
    from .subjects import arabic_numerals

    text = arabic_numerals(unicodedata.normalize("NFKC", title))
    found = list(_TOKEN.finditer(text))
    folded = [_fold(m.group(0)) for m in found]
    out: dict[str, str] = {}
    for i, token in enumerate(folded):
        if not _NUMBER.match(token):
            continue
        anchor = None
        if i + 1 < len(folded) and folded[i + 1] in UNITS and (
                len(folded[i + 1]) > 1 or not folded[i + 1].isascii() or found[i + 1].start() > found[i].end()):
            anchor = folded[i + 1]
        else:
            anchor = next((folded[j] for j in range(i - 1, -1, -1) if _weight(folded[j])), None)
            if anchor is not None and not anchor.isascii():
                # Trigger: a Japanese attribute before the number (同時実行数は 4). Why: its last
                # kanji (数) cannot meet the English title's word for it ("Concurrency of 8"), so
                # the two values were never compared (blind9 b9c3). Outcome: the English word's
                # stem, when the attribute is one both languages name.
                anchor = _ja_attribute(text[:found[i].start()]) or anchor
        if anchor is not None:
            out.setdefault(_UNIT_OF.get(anchor, anchor), token)
    return out


# Attributes a number is stated for, in Japanese, by the English word for each (its stem is the
# anchor an English title gives the number: "Concurrency of 8").
_JA_ATTRIBUTES = {japanese: english for english, spellings in (
    ("concurrency", "同時実行数 並列数 並行数 同時実行"), ("timeout", "タイムアウト"), ("retention", "保存期間 保持期間"),
    ("replicas", "レプリカ数"), ("workers", "ワーカー数"), ("threads", "スレッド数"), ("connections", "接続数 コネクション数"),
    ("version", "バージョン"), ("port", "ポート番号 ポート"), ("limit", "上限"), ("retries", "リトライ回数 再試行回数"),
    ("memory", "メモリ"), ("size", "サイズ")) for japanese in spellings.split()}


def _ja_attribute(before: str) -> str | None:
    """The English stem of the Japanese attribute `before` ends with (its particles aside), if any."""
    before = before.rstrip(" 　はがをのも:：=")
    for japanese in sorted(_JA_ATTRIBUTES, key=len, reverse=True):
        if before.endswith(japanese):
            return _fold(_JA_ATTRIBUTES[japanese])
    return None


# One unit however written, in either language: "90 Days" and "30 日間" count the same thing.
_UNIT_OF = {written: unit for unit, spellings in (
    ("second", "s sec secs second seconds 秒"), ("minute", "m min mins minute minutes 分"),
    ("hour", "h hr hrs hour hours 時"), ("day", "d day days 日"), ("week", "w week weeks 週"),
    ("month", "month months 月"), ("year", "year years 年")) for written in spellings.split()}


@functools.lru_cache(maxsize=8192)
def _names_a_thing(written: str) -> bool:
    """A name that picks out a thing rather than words about it: a katakana word (バッチジョブ),
    inner capitals (CloudWatch), all capitals (CI), letters with digits (S3). Kept per process
    by the word (a pure function of it): `about_another_system` asks it of every word of both
    titles, for each candidate of each create."""
    return bool(_KATAKANA_RUN.fullmatch(written)) or (written.isupper() and len(written) > 1) or bool(
        re.search(r"[a-z][A-Z]", written)) or bool(re.search(r"[A-Za-z]\d|\d[A-Za-z]", written))


def title_content(title: str) -> frozenset[str]:
    """The folded tokens of a title that carry content (`_weight`)."""
    return _title_content(title)


@functools.lru_cache(maxsize=1024)
def _title_content(title: str) -> frozenset[str]:
    # Kept per process by the title (pure; a frozenset, which no caller can change): asked of
    # both titles of each pair a create judges.
    return frozenset(t for t in _sentence_tokens(title)[0] if _weight(t))


def mentioned_tokens(card) -> frozenset[str]:
    """The folded tokens of a card's title, tags and body: what it mentions anywhere."""
    return _mentioned_tokens(card.title, tuple(card.tags), card.body)


@kept_by_text(512)
def _mentioned_tokens(title: str, tags: tuple[str, ...], body: str) -> frozenset[str]:
    # Kept per process by its arguments (pure): asked of a candidate at each create that meets it;
    # for 512 cards, the bound of the cards a process keeps (docs/decisions/0038).
    if body.startswith("\n") and len(body) <= DRAFTED_BODY_CHARS:
        # Trigger: a stored card's body, which starts with the newline `create` writes after the
        # frontmatter. Why: its draft, judged at its create moments before, lacked it, so the
        # card's first meeting as a candidate made its tokens again (2/3 of
        # `about_another_system`'s time on the bench). The newline is no token and is preceded by
        # one, so the tokens are the same. Outcome: the draft's are taken (`_drafted_tokens`).
        return _drafted_tokens(title, tags, body[1:])
    if len(body) <= DRAFTED_BODY_CHARS:
        return _drafted_tokens(title, tags, body)   # a draft's: its card's first meeting takes it
    return _drafted_tokens.__wrapped__(title, tags, body)


@kept_by_text(DRAFTED_KEPT)
def _drafted_tokens(title: str, tags: tuple[str, ...], body: str) -> frozenset[str]:
    """`_mentioned_tokens` of a body as its draft held it (without a leading newline)."""
    return frozenset(_sentence_tokens(f"{title}\n{' '.join(tags)}\n{body}")[0])


def names_another_thing(one, other, ascii_only: bool = False, chosen: frozenset = frozenset()) -> bool:
    """Whether `one`'s title names a thing (`_names_a_thing`) that `other` never mentions, in its
    title, tags or body: "バッチジョブのログ" against a card about the app's logs are two subjects.
    `ascii_only`: only names in Latin letters count (across languages a katakana name, ステージング,
    cannot be found in the English card however it is written there). `chosen`: names that are
    what one title chooses instead of what the other says (`_title_contrast`), not whose thing it is."""
    folded, written = sentence_tokens(one.title)
    seen = mentioned_tokens(other)
    return any(_names_a_thing(w) and f not in seen and f not in chosen and (w.isascii() or not ascii_only)
               for f, w in zip(folded, written))


def _title_contrast(one: str, other: str) -> tuple[str, frozenset] | None:
    """Why title `one`, "X, not Y" ("X rather than Y", "X instead of Y", "Y ではなく X"), denies
    what title `other` affirms (None when it does not): `other` says Y (at least 0.8 of Y's
    content) and not X (under half of what X says besides Y), and denies nothing itself. "Keep
    Runbooks as Pages in Confluence, Not as Markdown Files" against "Keep Runbooks as Markdown
    Files"; not "Most Slow Pages Come from N+1 Queries, Not Slow Disks" against "... Caused by
    N+1 Queries, Rarely by Slow Disks", which says X too. With the reason, the words of X that
    stand where `other` says Y (what is chosen instead)."""
    english = _CONTRAST_EN.match(one)
    match = english or _CONTRAST_JA.match(one)
    if not match or _polarity(other)[0] or _contrast(other):
        return None
    denied = match.group("no")
    if not english:
        denied = re.split(r"[はがをにでと、]", denied)[-1]   # Web セッションは Redis ではなく: Redis is what is denied
    affirmed = sentence_tokens(match.group("yes"))[0]
    no = {t for t in sentence_tokens(denied)[0] if _weight(t)} - set(affirmed)
    said = sentence_tokens(other)[0]
    if not no or sum(_weight(t) for t in no & set(said)) < 0.8 * sum(map(_weight, no)):
        return None
    # Y must stand in `other` where X says something else: aligned with X, Y falls in a span
    # whose X side has content (a title that says X and then "rarely Y" puts Y after X, against nothing).
    _, spans = word_diff(affirmed, said)
    against = [(ia, ib) for ia, ib in spans if any(_weight(affirmed[i]) for i in ia) and no & {said[j] for j in ib}]
    replaced = {said[j] for _, ib in against for j in ib}
    if sum(_weight(t) for t in no & replaced) < 0.8 * sum(map(_weight, no)):
        return None
    return f"one affirms what the other denies ({', '.join(sorted(no))})", \
        frozenset(affirmed[i] for ia, _ in against for i in ia)


def _ascii_content(title: str) -> set[str]:
    folded, written = sentence_tokens(title)
    return {f for f, w in zip(folded, written) if w.isascii() and _weight(f)}


def _title_poles_across(first, second) -> str | None:
    """Opposite poles of one class (`POLES`, written in both languages) in two titles in two
    languages whose Latin-letter names are the same ("Disable HTTP/2 on the Internal API" /
    "社内 API では HTTP/2 を有効にする"): the frame cannot be compared word by word, the names can."""
    poles_a, _ = _poles(first.title)
    poles_b, _ = _poles(second.title)
    opposite = [name for name, side in poles_a if (name, 1 - side) in poles_b
                and (name, side) not in poles_b and (name, 1 - side) not in poles_a]
    if not opposite:
        return None
    ja_card, other = (first, second) if re.search(r"[\u3040-\u9fff]", first.title) else (second, first)
    japanese = _ascii_content(ja_card.title)
    # Trigger: a Latin name of the Japanese title that the other card says in its body, not its
    # title ("Web 配信の CloudFront では自動圧縮をオフにする" / "Enable Compression on the CloudFront
    # Distribution", whose body names the web distribution). Why: a title is short; the card is
    # what it is about (blind10 b10c2). Outcome: the names must be in the other card, one of them
    # in its title.
    seen = set(sentence_tokens(f"{other.title}\n{' '.join(other.tags)}\n{other.body}")[0])
    if len(japanese) < 2 or not japanese <= seen or not japanese & _ascii_content(other.title):
        return None
    return f"opposite claims ({opposite[0]}) on {', '.join(sorted(japanese))}"


def title_conflict(first, second, across: bool = False, opposites: bool = True) -> str | None:
    """Why two cards that say nearly the same thing conflict in their titles (None when they do
    not): a number for the same unit or name differs ("... After 120 Seconds" / "... After 350
    Seconds", "CI Uses Node.js 22" / "Pin Node.js 18 in CI"), or a clause of one denies what
    the other says, however reworded ("Do Not Compress at CloudFront" / "Enable Compression on
    the CloudFront Distribution"). A name in one title that the other card never mentions
    ("バッチジョブのログ" against a card about the app's logs) makes them two subjects: no conflict."""
    contrast = _title_contrast(first.title, second.title)
    reverse = None if contrast else _title_contrast(second.title, first.title)
    chosen_a, chosen_b = (contrast or ("", frozenset()))[1], (reverse or ("", frozenset()))[1]
    if names_another_thing(first, second, across, chosen_a) or names_another_thing(second, first, across, chosen_b):
        return None
    if contrast or reverse:
        # Trigger: "X, not Y" (Y ではなく X) in one title, Y in the other's, where X says
        # something else. Why: the contrast denies the other card's claim outright (blind7 b7c5;
        # blind3 b3c6 across languages). Outcome: a contradiction; a name in X is the choice made,
        # not another subject.
        return (contrast or reverse)[0]
    values_a, values_b = _title_values(first.title), _title_values(second.title)
    for anchor, value in values_a.items():
        if anchor in values_b and values_b[anchor] != value:
            return f"values differ: {value} vs {values_b[anchor]} ({anchor})"
    if across:
        # Trigger: two titles in two languages. Why: their clauses cannot be matched word by
        # word, but poles are listed in both languages and names are written alike. Outcome:
        # opposite poles over the same names conflict (between cards that state how things are).
        return _title_poles_across(first, second) if opposites else None
    for one, other in ((first.title, second.title), (second.title, first.title)):
        if _polarity(other)[0]:
            continue
        have = set(sentence_tokens(other)[0])
        for clause in _SENTENCE_END.split(one):
            if _title_case_line(one):   # "Do Not Compress": in Title Case a capital Not is a denial
                clause = re.sub(r"\bNot\b", "not", clause or "")
            negative, plain = _polarity(clause or "")
            if not negative:
                continue
            if plain.endswith(("方がいい", "方が良い", "方がよい", "ほうがいい")):
                # Trigger: 〜ない方がいい ("better not to": キーにバージョンは入れない方がいい). Why: the
                # modal is how strongly it is said, not what; as content it held the denial under
                # the share it needs (blind10 b10c4). Outcome: the clause without it.
                plain = re.sub(r"(?:方|ほう)が(?:いい|良い|よい)$", "", plain)
            wanted = {t for t in sentence_tokens(plain)[0] if _weight(t) and not _NUMBER.match(t)}
            # (Weighed as `_title_contrast` weighs: a one-kanji verb stem, 入れ / 含め, is half a word.)
            if len(wanted) >= 2 and sum(map(_weight, wanted & have)) >= 0.8 * sum(map(_weight, wanted)):
                return f"one denies what the other says: {clause.strip()!r}"
    return None


def sentence_conflict(first: str, second: str, names: set[str] | frozenset = frozenset()) -> str | None:
    """`claim_conflict` of two sentences given as text."""
    return claim_conflict(_claim(first), _claim(second), names)
