"""The judgements a new card gets against the cards most like it: is it a duplicate, does it
contradict one, is it a success for a problem that has a recorded failure, and which link (and
relation) it deserves. One named function per judgement, used by `create` (and MCP
`store_memory`), `analyze`, `promote --auto` and auto-learn, so every door and every benchmark
judges alike.

Promises:
- Pure functions of the two cards' text and what the caller read for them (their last feedback,
  an embedding cosine when a provider is configured); nothing is read or written here.
- Keyword evidence decides; an embedding cosine (when a provider is configured) orders the links
  and decides only between cards in different languages, where words cannot meet (embedding
  models place cards of one domain close together: a cosine cannot tell a rewording from a card
  about the server's timeout instead of the client's).
- `content_similarity` compares what cards say: the Evidence section (auto-learn's dated sightings)
  and the `# title` heading are left out, and Japanese grammar bigrams (all hiragana) do not count,
  so a Japanese rewording meets its original as an English one does.
- A contradiction is the same claim with a conflicting value ("30 s" vs "60 s"), choice ("Redis"
  vs "Memcached") or polarity ("enable" vs "disable", "do not retry"); it is judged before a
  duplicate, so two cards that differ only there are never called duplicates.
- A success after failure needs a recorded failure on the older card, named in the result: its
  `type` or seed 000's `memory_type` is `failure`, its `status` says it failed (`failed`,
  `unresolved`, 失敗, 未解決 ...), or its last feedback was `rejected`; and a new card that records
  a fix for the same problem.
The rules and the figures behind their bars are in docs/decisions.md, "Judgements".
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher
from typing import Any, Callable

from .vault.records import record

# Content similarity (term cosine, grammar bigrams dropped) at which two cards say the same thing.
# Reworded duplicates on the dev set: 0.66 and up; same-topic different cards: 0.55 and below.
DUPLICATE_SIMILARITY = 0.6
# A success after failure: the same problem told in other words (dev: 0.59 and up; the best
# unrelated failure card 0.42).
SUCCESS_SIMILARITY = 0.45
# Two cards are on one subject, for a contradiction: their content or their titles overlap this much.
SAME_SUBJECT_SIMILARITY = 0.3
SAME_SUBJECT_TITLE = 0.5
# A suggested link: content that overlaps this much (dev: related cards 0.27-0.55, unrelated
# 0.42 at most, most under 0.25); across languages, a cosine at the link floor.
LINK_SIMILARITY = 0.35
MAX_LINKS = 3
MAX_SENTENCES = 40          # per card, for contradictions
MIN_SHARED_WORDS = 3        # a conflicting pair of sentences shares at least this much content


@record
class CardText:
    """What the judgements read of a card."""

    title: str
    body: str
    tags: list[str]
    type: str = ""
    memory_type: str = ""
    status: str = ""
    last_feedback: str | None = None   # "used" | "rejected" | None


def card_text(card, last_feedback: str | None = None) -> CardText:
    """A `Card` (or anything with title, body, tags, type, status and `text_field`) as CardText."""
    return CardText(card.title, card.body, list(card.tags), card.type or "",
                    (card.text_field("memory_type") or "").strip().lower(), (card.status or "").strip(),
                    last_feedback)


# ---------------------------------------------------------------------------- similarity

_HIRAGANA = re.compile(r"^[\u3041-\u309f\u30fc]+$")
_EVIDENCE = re.compile(r"^##\s+(?:Evidence|証拠|根拠)\s*$.*?(?=^##\s|\Z)", re.MULTILINE | re.DOTALL | re.IGNORECASE)


def content_of(title: str, tags: list[str], body: str) -> str:
    """The text a card's content is judged by: title, tags and body without its Evidence
    section (dated sightings that say when, not what) and without a `# ` heading that repeats
    the title."""
    body = _EVIDENCE.sub("", body)
    lines = body.lstrip().splitlines()
    if lines and lines[0].startswith("# ") and lines[0][2:].strip() == title.strip():
        lines = lines[1:]
    return f"{title}\n{' '.join(tags)}\n" + "\n".join(lines)


def _content_terms(text: str) -> Counter:
    from .search.analysis import query_weight, tokens

    terms: Counter = Counter()
    for term in tokens(text, drop_stop_words=True):
        if len(term) == 2 and _HIRAGANA.match(term):
            continue   # です, ている: grammar, which rewording changes and content does not
        terms[term] += query_weight(term)
    return terms


def content_similarity(a: str, b: str) -> float:
    """Cosine of the two texts' content terms, in [0, 1]: the analyser's terms (stems, CJK
    bigrams), stop words and all-hiragana bigrams dropped, bigrams that cross into hiragana
    at half weight (`analysis.query_weight`)."""
    ca, cb = _content_terms(a), _content_terms(b)
    if not ca or not cb:
        return 0.0
    dot = sum(weight * cb[term] for term, weight in ca.items() if term in cb)
    norm = math.sqrt(sum(w * w for w in ca.values())) * math.sqrt(sum(w * w for w in cb.values()))
    return dot / norm if norm else 0.0


def card_similarity(a: CardText, b: CardText) -> float:
    return content_similarity(content_of(a.title, a.tags, a.body), content_of(b.title, b.tags, b.body))


# ---------------------------------------------------------------------------- duplicates

def exact_duplicate(a: CardText, b: CardText) -> bool:
    """The same title and content once case, whitespace and the Evidence section are folded."""
    def norm(card: CardText) -> str:
        return " ".join(content_of(card.title, [], card.body).casefold().split())
    return norm(a) == norm(b)


def same_title(a: CardText, b: CardText) -> bool:
    def norm(title: str) -> str:
        return " ".join(re.sub(r"[^\w]+", " ", unicodedata.normalize("NFKC", title).casefold()).split())
    return bool(norm(a.title)) and norm(a.title) == norm(b.title)


def cross_language(a: CardText, b: CardText) -> bool:
    """Whether one card is written in Japanese (or another CJK script) and the other not: their
    words cannot meet, so only an embedding can tell what they share."""
    def cjk_share(card: CardText) -> float:
        text = f"{card.title} {card.body}"
        letters = [c for c in text if c.isalpha()]
        return sum(1 for c in letters if "\u3040" <= c <= "\u9fff") / len(letters) if letters else 0.0
    shares = sorted((cjk_share(a), cjk_share(b)))
    return shares[0] < 0.1 and shares[1] > 0.3


def is_duplicate(new: CardText, old: CardText, similarity: float, cosine: float | None = None,
                 bar: float = DUPLICATE_SIMILARITY, vector_floor: float | None = None) -> str | None:
    """Why `new` says what `old` already says (None when it does not): an exact copy, the same
    title, or content at the duplicate bar; across languages (one card Japanese, the other
    not), where words cannot meet, an embedding cosine at the duplicate floor. Callers judge
    success after failure and contradictions first: those are no duplicates.
    Within one language a cosine decides nothing: on the labelled set, a same-domain card
    about another thing ("the payments *server* timeout") sits as close as a rewording."""
    if exact_duplicate(new, old):
        return "an exact copy"
    if same_title(new, old):
        return "the same title"
    if one_slot_apart(new, old):
        return None   # "Pin Node.js 18 in CI" and "... in the Docker base image": two things, one frame
    if similarity >= bar:
        return f"the same content in other words (similarity {similarity:.2f})"
    if cosine is not None and vector_floor is not None and cosine >= vector_floor and cross_language(new, old):
        return f"the same content in another language (cosine {cosine:.3f})"
    return None


def one_slot_apart(a: CardText, b: CardText) -> bool:
    """Whether the two titles are one frame with one slot filled by different names ("Use Redis
    for API rate limiting" / "... for web session storage", "Pin Node.js 18 in CI" / "... in the
    Docker base image"): cards about two things, however alike their words."""
    ta, wa = _tokens(a.title)
    tb, wb = _tokens(b.title)
    shared, spans = _diff(ta, tb)
    if len(spans) != 1 or shared < 2:
        return False
    ia, ib = spans[0]
    names = _names(a) | _names(b)
    return bool(ia) and bool(ib) and any(_name_like(wa[i], names) for i in ia) or \
        bool(ia) and bool(ib) and any(_name_like(wb[j], names) for j in ib)


# ---------------------------------------------------------------------------- contradictions

_CODE_FENCE = re.compile(r"```.*?```", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[])|(?<=[。！？])|(?<=[^\d\s]);\s+|\s+[—–]\s+|、|(?<=せず)|"
                           r"(?<=\w),\s+(?:so|but|because|since|while|which)\s+")
# A token: a number, a word or code identifier (whole), a katakana run, or one kanji or kana.
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[A-Za-z][\w+#]*(?:[./-][\w+#]+)*|[\u30a0-\u30ff]{2,}|"
                    r"[\u3005\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff]")
_KATAKANA_RUN = re.compile(r"[\u30a0-\u30ff]{2,}")
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)*$")
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
# Japanese negative endings and what the sentence says without them.
_JA_A_TO_U = dict(zip("わかさたなまらがばぱ", "うくすつぬむるぐぶぷ"))
_JA_NEGATIVE = re.compile(r"しない|しません|せず(?:に)?|ではない|じゃない|ませんでした|ません|なかった|"
                          r"([わかさたなまらがばぱ])(?:ない|ず(?:に)?)|ない|禁止")
_EN_NEGATIVE = re.compile(r"\b(?:do\s+not|does\s+not|did\s+not|don't|doesn't|didn't|never|not|no\s+longer|must\s+not|"
                          r"should\s+not|shouldn't|mustn't|cannot|can't|isn't|aren't|won't|without)\b", re.IGNORECASE)
# Sentence openings that make a number that follows part of the claim, not of the subject.
_IMPERATIVE = frozenset("""
    set use pin run keep enabl disabl turn rais lower increas decreas limit retri store allow deni add remov
    upgrad downgrad instal configur choos prefer switch move put give alway never make cap bump
""".split())


def _sentences(card: CardText) -> list[str]:
    body = _CODE_FENCE.sub(" ", _EVIDENCE.sub("", card.body))
    out = [part.strip(" .。") for part in _SENTENCE_END.split(card.title) if part and part.strip(" .。")]
    for line in body.splitlines():
        line = re.sub(r"^\s*(?:[-*+>]|\d+[.)]|#+)?\s*(?:\[[ xX]\]\s*)?", "", line).strip()
        if not line or line.strip() == card.title.strip():
            continue
        out += [part.strip(" .。") for part in _SENTENCE_END.split(line) if part and part.strip(" .。")]
        if len(out) >= MAX_SENTENCES:
            break
    return out[:MAX_SENTENCES]


_NUMBER_WORDS = {word: str(n) for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve".split())}
_NUMBER_WORDS.update(once="1", twice="2", thrice="3")


def _fold(token: str) -> str:
    from .search.stemmer import stem

    if _NUMBER.match(token):
        return token.replace(",", "")
    lower = token.casefold()
    if lower in _NUMBER_WORDS:
        return _NUMBER_WORDS[lower]   # "three times" and "3 times" are one value
    return stem(lower) if lower.isascii() and lower.isalpha() and len(lower) > 3 else lower


def _tokens(sentence: str) -> tuple[list[str], list[str]]:
    """(folded tokens, tokens as written): numbers, words (stemmed; code identifiers whole),
    katakana runs, single kanji and kana."""
    written = _TOKEN.findall(unicodedata.normalize("NFKC", sentence))
    return [_fold(t) for t in written], written


def _weight(token: str) -> float:
    """How much a shared token says: a word, code identifier or katakana run 1, a kanji 0.5,
    kana, stop words and numbers nothing (a number is what may differ)."""
    if token in STOP or _NUMBER.match(token):
        return 0.0
    if len(token) == 1 and not token.isascii():
        return 0.0 if "\u3040" <= token <= "\u309f" else 0.5
    return 1.0


def _diff(a: list[str], b: list[str]) -> tuple[float, list[tuple[list[int], list[int]]]]:
    """(the content weight both share, in order; each differing span as (positions in a,
    positions in b), stop words and kana left out)."""
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    shared, spans = 0.0, []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            shared += sum(map(_weight, a[i1:i2]))
        else:
            kept_a = [i for i in range(i1, i2) if _weight(a[i]) or _NUMBER.match(a[i])]
            kept_b = [j for j in range(j1, j2) if _weight(b[j]) or _NUMBER.match(b[j])]
            if kept_a or kept_b:
                spans.append((kept_a, kept_b))
    return shared, spans


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


def _opposites(left: str, right: str) -> bool:
    if not _FOLDED_ANTONYMS:
        _FOLDED_ANTONYMS.update(frozenset(map(_fold, pair)) for pair in ANTONYMS)
    return frozenset((left, right)) in ANTONYMS or frozenset((_fold(left), _fold(right))) in _FOLDED_ANTONYMS


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
            and (_name_like(wa[ia[0]], names) or _name_like(wb[ib[0]], names)):
        return f"different choices: {wa[ia[0]]} vs {wb[ib[0]]}"
    return None


def _name_like(written: str, names: set[str]) -> bool:
    """A name rather than an ordinary word: one of the cards' tags or code spans, code-ish
    (digits, dots, dashes, inner capitals: gthread is not, PostgreSQL is), all capitals, or a
    katakana word."""
    if written.casefold() in names:
        return True
    if re.search(r"[\d._/-]", written) or (any(c.isupper() for c in written[1:]) and any(c.islower() for c in written)):
        return True
    return (written.isupper() and len(written) > 1) or bool(_KATAKANA_RUN.fullmatch(written))


def _names(card: CardText) -> set[str]:
    """What a card names: its tags and the words of its code spans."""
    spans = re.findall(r"`([^`]+)`", card.body)
    words = {w.casefold() for span in spans for w in re.findall(r"[A-Za-z][\w.+-]*", span)}
    return words | {tag.casefold() for tag in card.tags}


_CONTRAST = re.compile(r",\s*(?:but\s+)?not\s+|\bnot\s+(?:just|only)\b|\brather\s+than\b", re.IGNORECASE)


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
    if not _title_case_line(looked_at):
        looked_at = re.sub(r"(?<=\S\s)Not\b", "NOT_A_DENIAL", looked_at)
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


@record
class _Claim:
    """One sentence of a card, analysed once for every comparison."""

    text: str
    folded: list[str]
    written: list[str]
    content: frozenset      # its folded tokens that carry content
    weight: float           # how much content it holds
    negative: bool          # it denies something
    plain: frozenset        # the folded tokens of the sentence with its denial taken out


def _claim(sentence: str) -> _Claim:
    folded, written = _tokens(sentence)
    content = frozenset(t for t in folded if _weight(t))
    negative, plain = _polarity(sentence)
    return _Claim(sentence, folded, written, content, sum(map(_weight, content)), negative,
                  frozenset(_tokens(plain)[0]) if negative else frozenset(folded))


def claims(card: CardText) -> list[_Claim]:
    """The card's title and sentences, analysed (at most MAX_SENTENCES)."""
    return [_claim(sentence) for sentence in _sentences(card)]


_CONTRAST_EN = re.compile(r"^(?P<yes>.+?)(?:,\s*(?:but\s+)?not\s+|\s+rather\s+than\s+|\s+instead\s+of\s+)(?P<no>.+)$",
                          re.IGNORECASE)
_CONTRAST_JA = re.compile(r"^(?P<no>.+?)(?:ではなく|じゃなくて|じゃなく|ではなくて)(?:、)?(?P<yes>.+)$")


def _contrast(sentence: str) -> tuple[frozenset, frozenset] | None:
    """(what it affirms, what it denies) for "X, not Y" / "X rather than Y" / "Y ではなく X"."""
    match = _CONTRAST_EN.match(sentence) or _CONTRAST_JA.match(sentence)
    if not match:
        return None
    yes = frozenset(t for t in _tokens(match.group("yes"))[0] if _weight(t))
    no = frozenset(t for t in _tokens(match.group("no"))[0] if _weight(t))
    return yes, no


def _contrast_conflict(a: _Claim, b: _Claim) -> str | None:
    """What one affirms the other denies ("stored in Redis, not in the database" against
    "stored in the database, not in Redis"), over a frame both share."""
    ca, cb = _contrast(a.text), _contrast(b.text)
    if ca is None or cb is None:
        return None
    yes_a, no_a = ca
    yes_b, no_b = cb
    # Both sides must say "X, not Y": one contrast against a plain sentence is too weak ("shared
    # state, not timing" against "rarely by timing" agree).
    if ca is None or cb is None:
        return None
    contested = (no_a & yes_b) | (no_b & yes_a)
    frame = sum(_weight(t) for t in (yes_a & yes_b) - contested)
    if no_a & yes_b and no_b & yes_a and frame >= MIN_SHARED_WORDS - 1:
        shown = ", ".join(sorted(contested))
        return f"one affirms what the other denies ({shown})"
    return None


def _negation_conflict(a: _Claim, b: _Claim) -> str | None:
    """One sentence denies what the other says: with the denial taken out, the shorter one's
    content is (nearly) all in the longer one ("Do not retry failed deliveries" against
    "Retry failed deliveries three times")."""
    if a.negative == b.negative:
        return None
    short, long_ = (a.plain, b.plain) if a.weight <= b.weight else (b.plain, a.plain)
    have = sum(map(_weight, short))
    inside = sum(_weight(t) for t in short & long_)
    if have >= MIN_SHARED_WORDS - 0.5 and inside >= 0.8 * have and sum(map(_weight, long_)) <= 2.5 * have + 2:
        denied = a.text if a.negative else b.text
        return f"one denies what the other says: {denied!r}"
    return None


def claim_conflict(a: _Claim, b: _Claim, names: set[str] | frozenset = frozenset()) -> str | None:
    """Why two sentences make conflicting claims about one thing (None when they do not): the
    same words but a value (30 vs 60 seconds), one named choice (Redis vs Memcached), an
    opposite (enable vs disable, 有効 vs 無効), or a denial (retry vs do not retry)."""
    if sum(_weight(t) for t in (a.content | a.plain) & (b.content | b.plain)) < MIN_SHARED_WORDS - 0.5:
        return None   # too little in common to be one claim (most pairs stop here, cheaply)
    shared, spans = _diff(a.folded, b.folded)
    if spans and shared >= MIN_SHARED_WORDS:
        reason = _value_conflict(a.folded, b.folded, spans, a.written, b.written, shared) or \
            _choice_conflict(a.folded, b.folded, spans, a.written, b.written, names, shared)
        if reason:
            return reason
    return _contrast_conflict(a, b) or _negation_conflict(a, b)


def sentence_conflict(first: str, second: str, names: set[str] | frozenset = frozenset()) -> str | None:
    """`claim_conflict` of two sentences given as text."""
    return claim_conflict(_claim(first), _claim(second), names)


def contradiction(new: CardText, old: CardText, similarity: float,
                  new_claims: list[_Claim] | None = None) -> str | None:
    """Why `new` contradicts `old` (None when it does not): the cards are on one subject
    (content or titles overlap) and a sentence of each makes a conflicting claim about the same
    thing (`claim_conflict`)."""
    from .search.analysis import similarity as term_similarity

    if similarity < SAME_SUBJECT_SIMILARITY and term_similarity(new.title, old.title) < SAME_SUBJECT_TITLE:
        return None
    names = _names(new) | _names(old)
    for first in new_claims if new_claims is not None else claims(new):
        for second in claims(old):
            reason = claim_conflict(first, second, names)
            if reason:
                return reason
    return None


# ---------------------------------------------------------------------------- success after failure

FAILURE_STATUSES = frozenset("""
    failed failure fail failing unresolved unsolved not-fixed notfixed broken not-working wontfix won't-fix abandoned
    失敗 未解決 解決せず 未対応 ダメ 不可
""".split())
_SUCCESS_WORDS = re.compile(
    r"\b(?:fix(?:ed|es)?|resolv(?:ed|es)|solv(?:ed|es)|work(?:s|ed)\s+(?:now|again)|now\s+works|no\s+longer|"
    r"passes|passed|succeeded|stopped|no\s+(?:more\s+)?(?:drops|duplicates|errors|crashes))\b|"
    r"解決|直った|直りました|治った|解消|できた|できました|通った|通りました|成功|止まった|なくなった",
    re.IGNORECASE)
_SOLUTION_HEADING = re.compile(r"^##+\s*(?:fix|solution|resolution|how\s+it\s+was\s+fixed|workaround|"
                               r"原因と対処|対処|対策|解決策|解決)\b", re.IGNORECASE | re.MULTILINE)
_STILL_FAILING = re.compile(
    r"\b(?:not\s+(?:yet\s+)?fixed|still\s+(?:fails|failing|broken|hangs|flapping|happens|disconnect\w*)|"
    r"did\s+not\s+(?:help|work|fix)|didn't\s+(?:help|work|fix)|no\s+luck|cause\s+not\s+found|unresolved)\b|"
    r"効果なし|解決しない|まだ落ちる|まだ(?:直|治)らない|分かっていない|わかっていない|未解決",
    re.IGNORECASE)


def failure_record(card: CardText) -> str | None:
    """How `card` records a failure, if it does: "type: failure", "memory_type: failure" (seed
    000's failure memory), "status: <status>" (a status saying it failed or is unresolved) or
    "feedback: rejected" (its last feedback); None when it records none."""
    if card.type.lower() == "failure":
        return "type: failure"
    if card.memory_type == "failure":
        return "memory_type: failure"
    status = re.sub(r"^[^\w]+|[^\w]+$", "", unicodedata.normalize("NFKC", card.status).casefold()).replace(" ", "-")
    if status in FAILURE_STATUSES:
        return f"status: {card.status}"
    if card.last_feedback == "rejected":
        return "feedback: rejected"
    return None


def records_success(card: CardText) -> bool:
    """Whether `card` records something that worked: seed 000's `success` memory (or type), or a
    card with a fix (a Fix / Solution / 対処 section, or says it was fixed, solved, 解決...) that
    is not itself a failure record."""
    if card.type.lower() == "success" or card.memory_type == "success":
        return True
    if failure_record(CardText(card.title, card.body, card.tags, card.type, card.memory_type, card.status)):
        return False
    text = f"{card.title}\n{card.body}"
    if _STILL_FAILING.search(text):
        return False
    return bool(_SOLUTION_HEADING.search(card.body) or _SUCCESS_WORDS.search(text))


def success_after_failure(new: CardText, old: CardText, similarity: float, cosine: float | None = None,
                          link_floor: float | None = None) -> str | None:
    """How `new` may be the success for the failure `old` records (None when it is not): `old`
    records a failure (`failure_record`), `new` a success (`records_success`), and both tell of
    the same problem (content similarity at SUCCESS_SIMILARITY, or near it with a cosine at the
    link floor)."""
    failure = failure_record(old)
    if failure is None or not records_success(new):
        return None
    same = similarity >= SUCCESS_SIMILARITY or (
        cosine is not None and link_floor is not None and cosine >= link_floor and cross_language(new, old))
    return failure if same else None


# ---------------------------------------------------------------------------- links

GENERAL_TYPES = frozenset({"pattern", "insight", "decision", "checklist"})
SPECIFIC_TYPES = frozenset({"troubleshooting", "runbook", "episode", "fact", "state"})
_DEPENDS = re.compile(r"\b(?:requires?|required|depends\s+on|prerequisites?|needs?\s+(?:the\s+)?|after\s+running|"
                      r"must\s+(?:run|be\s+done)\s+(?:first|before)|first\s+run)\b|前提|必要|を先に|の後に", re.IGNORECASE)
_APPLIES = re.compile(r"\b(?:applies|applying|based\s+on|follows|following|an?\s+(?:application|instance|case)\s+of|"
                      r"per\s+the)\b|を適用|に従|の具体例|の応用", re.IGNORECASE)
_REPLACES = re.compile(r"\b(?:replaces|supersedes|obsoletes|deprecates|instead\s+of)\b|の代わり|置き換え|に代わ",
                       re.IGNORECASE)


def _mentions(text: str, title: str, share: float = 0.6) -> bool:
    """Whether one sentence of `text` holds most of `title`'s content terms."""
    wanted = set(_content_terms(title))
    if len(wanted) < 2:
        return False
    for sentence in re.split(r"(?<=[.!?。])\s*|\n", text):
        if sentence and len(wanted & set(_content_terms(sentence))) >= share * len(wanted):
            return True
    return False


def link_relation(new: CardText, old: CardText, similarity: float, cosine: float | None = None,
                  link_floor: float | None = None) -> tuple[str, str] | None:
    """The link `new` deserves to `old`, as (relation, reason), or None when the evidence is too
    thin: `depends_on` when a sentence of `new` says it needs what `old` names; `supersedes` when
    it says it replaces it; `extends` when it applies `old`'s general rule (it says so, or a
    specific card on a general card's subject); else `related` when the content overlaps enough.
    (Duplicates, contradictions and successes after failure are judged before: they say more.)"""
    body = f"{new.title}\n{new.body}"
    for pattern, rel, why in ((_DEPENDS, "depends_on", "it needs what this card describes"),
                              (_REPLACES, "supersedes", "it says it replaces this card")):
        for sentence in re.split(r"(?<=[.!?。])\s+|\n", body):
            if pattern.search(sentence) and _mentions(sentence, old.title, 0.5):
                return rel, why
    strong = similarity >= LINK_SIMILARITY or (
        cosine is not None and link_floor is not None and cosine >= link_floor and cross_language(new, old))
    if not strong:
        return None
    if _APPLIES.search(body) and _mentions(body, old.title, 0.5):
        return "extends", "it applies this card's rule"
    if old.type.lower() in GENERAL_TYPES and new.type.lower() in SPECIFIC_TYPES:
        return "extends", f"a {new.type} on the subject of this {old.type}"
    return "related", f"similar content (similarity {similarity:.2f})"


# ---------------------------------------------------------------------------- all of them

INSIGHT_KEYS = ("suggested_links", "potential_duplicates", "supersedes", "contradictions", "success_after_failure")


def judge(new: CardText, candidates: list[tuple[dict[str, Any], CardText, float | None]], *,
          duplicate_bar: float = DUPLICATE_SIMILARITY, link_floor: float | None = None,
          duplicate_floor: float | None = None,
          last_feedback: Callable[[dict[str, Any]], str | None] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The insights `new` gets against `candidates` (entry, card, cosine): entry is what names
    the card in the result (path, id, title). Each candidate gets one verdict, judged in this
    order: a success after failure, a contradiction, a duplicate; then, but for a duplicate,
    the link it deserves. At most MAX_LINKS links, the strongest first. `last_feedback(entry)`
    gives a candidate's last feedback, asked only when it could make a success after failure."""
    out: dict[str, list[dict[str, Any]]] = {key: [] for key in INSIGHT_KEYS}
    links = []
    new_claims = None
    success = records_success(new)
    for entry, old, cosine in candidates:
        similarity = card_similarity(new, old)
        item = {**entry, "similarity": round(similarity, 3)}
        if cosine is not None:
            item["cosine"] = round(cosine, 4)
        if new_claims is None and similarity >= SAME_SUBJECT_SIMILARITY - 0.2:
            new_claims = claims(new)
        # A fix for a recorded failure says something else than the attempt that failed: that
        # is what it is, not a contradiction, so it is judged first.
        if success and last_feedback is not None and old.last_feedback is None \
                and similarity >= SUCCESS_SIMILARITY - 0.1:
            old = CardText(old.title, old.body, old.tags, old.type, old.memory_type, old.status, last_feedback(entry))
        failure = success_after_failure(new, old, similarity, cosine, link_floor)
        if failure:
            out["success_after_failure"].append({**item, "failure": failure,
                                                 "reason": f"it records a failure ({failure}); this card may be the fix"})
            links.append((1.5, {**item, "rel": "related", "reason": f"a fix for the failure it records ({failure})"}))
            continue
        conflict = contradiction(new, old, similarity, new_claims)
        if conflict:
            out["contradictions"].append({**item, "reason": conflict})
            links.append((2.0, {**item, "rel": "contradicts", "reason": conflict}))
            continue
        duplicate = is_duplicate(new, old, similarity, cosine, duplicate_bar, duplicate_floor)
        if duplicate:
            out["potential_duplicates"].append({**item, "reason": duplicate,
                                                "suggestion": f"edit {entry.get('path')} instead"})
            continue
        relation = link_relation(new, old, similarity, cosine, link_floor)
        if relation:
            rel, why = relation
            # The closest first: by cosine when there is one (it ranks well), else by similarity.
            strength = (cosine if cosine is not None else similarity) + \
                (0.5 if rel in ("depends_on", "supersedes", "extends") else 0.0)
            links.append((strength, {**item, "rel": rel, "reason": why}))
    links.sort(key=lambda pair: -pair[0])
    out["suggested_links"] = [link for _, link in links[:MAX_LINKS]]
    return out
