"""Raw text to atomic statements, by rules (docs/compatibility.md, Ingest): split, normalise, skip the
trivial, classify as fact / state / episode, and key states and facts by their subject.

What it promises (the rules are listed in docs/decisions.md, "Ingest"):
- `extract(text, moment)` is a pure function: the same text and moment give the same
  statements, in the order they appear; nothing is read or written.
- Splitting: lines (bullets and heading marks dropped), then sentences — English `. ! ?`
  followed by a space (not after an abbreviation such as `e.g.` or `Dr.`, an initial, or inside
  `3.11` / `v1.2.3`), Japanese `。！？` anywhere; a `;` or a Japanese `、そして`-style join is
  split only when both halves are statements on their own.
- Normalising: full-width ASCII and half-width katakana to their usual width (NFKC on those
  runs only, so Japanese punctuation and kana stay as written), whitespace collapsed, the final
  full stop dropped, and relative dates ("yesterday", "last Monday", "2 days ago", 昨日, 先週,
  3日前 ...) rewritten as ISO dates counted from `moment`; ISO dates are kept.
- Trivial pieces (greetings, fillers such as "ok" or はい, questions, fragments too short to
  say anything) come back with `kind=None` and the reason, so a caller can report them.
- Classification, first rule that matches: episode (a past time or a past-tense main verb:
  "deployed", "yesterday", 〜した), state (a present condition that can change: "is down",
  "is at version", "now", "currently", 〜中, 〜ている), else fact (a timeless statement).
- `subject` is the key under which a newer statement replaces an older one: the subject and
  the attribute it sets ("staging db|is|version"). It is set for every state and for facts
  whose complement is a plain value ("My name is Taro", "I live in Tokyo"); when the rules
  are unsure it is "" and the statement never replaces anything (append, not overwrite).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta

from ..judging.lazy import LazyPattern
from ..vault.valueclass import valueclass

KINDS = ("fact", "state", "episode")


@valueclass
class Statement:
    """One atomic statement: its normalised text, kind (None: trivial, skipped), subject key
    ("" when none), the rule that decided its kind (or why it was skipped), and when it came to
    hold when it says so ("yesterday", 先週, "on 2026-11-05"; None: when it was said)."""

    text: str
    kind: str | None
    subject: str
    reason: str
    when: datetime | None = None


def extract(text: str, moment: datetime) -> list[Statement]:
    """The statements of `text`, in order, with relative dates counted from `moment`."""
    out = []
    for piece in split_statements(normalise_width(text)):
        out.append(classify(piece, moment))
    return out


def from_model(text: str, kind: str, subject: str, moment: datetime, reason: str) -> Statement:
    """A statement a chat model extracted, normalised as the rules normalise theirs (width,
    whitespace, relative dates); the model's kind is kept, and its subject key when it gave one
    (for a state without one, the rules' key). Trivial pieces are still skipped."""
    # A model's JSON may hold control characters or escaped lone surrogates, which no card can.
    tidy = _tidy(re.sub(r"[\x00-\x1f\x7f\ud800-\udfff]", " ", normalise_width(text)))
    subject = re.sub(r"[\x00-\x1f\x7f\ud800-\udfff]", "", subject)[:200]
    why = trivial_reason(tidy)
    if why:
        return Statement(tidy, None, "", why)
    key = " ".join(normalise_width(subject).casefold().split())
    if not key and kind == "state":
        key = classify(tidy, moment).subject
    return Statement(absolute_dates(tidy, moment), kind, key if kind != "episode" else "", reason,
                     statement_time(tidy, moment))


# ---------------------------------------------------------------------------- splitting

_WIDE_RUN = re.compile(r"[\uff01-\uff5e\uff61-\uff9f\u3000]+")
# Japanese sentence ends stay as they are: NFKC would turn `！？` into `!?`, which is fine, but
# keeps `。`; the split below knows both forms.
_BULLET = re.compile(r"^\s*(?:[-*+•・▪◦]|\d{1,3}[.)]|[#>]+)\s+")
_JA_END = re.compile(r"(?<=[。！？!?])(?=[^」』）)!?！？。])")
_EN_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?\w)")
_ABBREVIATIONS = frozenset("""
    e.g i.e etc vs mr mrs ms dr prof sr jr st no fig approx dept est inc ltd co corp jan feb mar apr
    jun jul aug sep sept oct nov dec mon tue wed thu fri sat sun a.m p.m u.s u.k
""".split())
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
# Joins that may end one statement and begin another (`、そして`), tried only where safe.
_JA_JOIN = re.compile(r"、(?:そして|それから|その後|また)、?")


def normalise_width(text: str) -> str:
    """Full-width ASCII (Ｄｅｐｌｏｙ１５), the ideographic space and half-width katakana
    (ｶﾀｶﾅ) to their usual forms; everything else, Japanese punctuation included, as written."""
    return _WIDE_RUN.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)


# A chat line's speaker: "[09:12] Taro: ", "10:02 me: ", "ユーザー: ". Lines an assistant or a
# bot said are not the user's statements.
_SPEAKER = re.compile(r"^\s*(?:\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*)(?P<who>[^:：\s][^:：]{0,30}?)\s*[:：]\s+|"
                      r"^\s*(?P<who2>me|user|you|assistant|bot|ai|ユーザー|私|アシスタント)\s*[:：]\s+", re.IGNORECASE)
_NOT_THE_USER = frozenset({"assistant", "bot", "ai", "アシスタント", "claude", "chatgpt", "gpt"})


def split_statements(text: str) -> list[str]:
    """Candidate statements: lines (a chat line's speaker dropped; an assistant's lines left
    out), then sentences, then safe splits of compound sentences."""
    pieces: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        speaker = _SPEAKER.match(line)
        if speaker:
            if (speaker.group("who") or speaker.group("who2") or "").strip().casefold() in _NOT_THE_USER:
                continue
            line = line[speaker.end():]
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        for sentence in _sentences(line):
            pieces += _compound_parts(sentence)
    return [p for p in (" ".join(piece.split()) for piece in pieces) if p]


def _sentences(line: str) -> list[str]:
    out = []
    for part in _JA_END.split(line):
        start = 0
        for match in _EN_END.finditer(part):
            before = part[start:match.start()].rstrip("\"')]")
            if before.endswith(".") and _is_abbreviation(before) and not _ends_sentence(before, part[match.end():]):
                continue
            out.append(part[start:match.start()])
            start = match.end()
        out.append(part[start:])
    return [s.strip() for s in out if s.strip()]


# Abbreviations that also end sentences ("I work at Acme Corp. My laptop ..."), and the words
# that start one after them.
_FINAL_ABBREVIATIONS = frozenset("etc inc ltd co corp jr sr a.m p.m u.s u.k approx".split())
_STARTERS = frozenset("""
    i my we our you your he she they their it its this that these those there the a an yesterday today tomorrow
    also but so then now and however anyway btw
""".split())


def _ends_sentence(before: str, after: str) -> bool:
    """Whether the abbreviation ending `before` also ends its sentence: one that can end a
    sentence, followed by a word that starts one."""
    word = before.rsplit(None, 1)[-1].rstrip(".").lower()
    following = re.match(r"[\"'(\[]?(\w+)", after)
    return word in _FINAL_ABBREVIATIONS and bool(following) and following.group(1).lower() in _STARTERS


def _is_abbreviation(text: str) -> bool:
    """Whether the full stop ending `text` belongs to an abbreviation or an initial."""
    word = text.rsplit(None, 1)[-1].rstrip(".").lower().lstrip("(\"'")
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or bool(re.fullmatch(r"(?:[a-z]\.)+[a-z]", word))


def _compound_parts(sentence: str) -> list[str]:
    """`a; b` and `…した、そして…` as two statements when each half is one by itself (it has a
    verb or a predicate of its own), else the sentence whole."""
    for splitter in (re.compile(r"\s*;\s*"), _JA_JOIN):
        halves = splitter.split(sentence)
        if len(halves) > 1 and all(_self_standing(h) for h in halves):
            return [h.strip() for h in halves]
    return [sentence]


def _self_standing(text: str) -> bool:
    text = text.strip()
    if _CJK.search(text):
        return len(text) >= 5
    words = text.split()
    return len(words) >= 3


# ---------------------------------------------------------------------------- trivial

_FILLERS = frozenset("""
    ok okay k kk yes yeah yep yup no nope sure thanks thx ty hi hello hey bye cool nice great
    lol haha hmm hm um uh ah oh wow right alright fine noted lgtm +1 done
    はい いいえ うん ええ いや ああ おお へえ なるほど 了解 了解です 了解しました 承知しました
    わかりました 分かりました ありがとう ありがとうございます どうも おはよう おはようございます
    こんにちは こんばんは おやすみ おやすみなさい お疲れ様 お疲れ様です お疲れさま お疲れさまです おつかれ おつかれさま またね よろしく
    よろしくお願いします よろしくお願いいたします すみません ごめん ごめんなさい 草 笑
""".split())
_FILLER_PHRASES = frozenset({
    "thank you", "thanks a lot", "thank you very much", "good morning", "good night", "good evening",
    "sounds good", "got it", "see you", "see you later", "no problem", "makes sense", "all right",
    "of course", "i see", "will do", "you're welcome", "good job", "well done",
})
MIN_WORDS = 2
MIN_CHARS = 8
MIN_CJK_CHARS = 4


def trivial_reason(text: str) -> str | None:
    """Why `text` is not worth keeping (None when it is): a greeting or filler, a question, or
    too short to state anything."""
    bare = re.sub(r"[\s!?.,。、！？…~〜ー-]+$", "", text.strip()).strip().casefold()
    bare = re.sub(r"^[\s!?.,。、！？…~〜-]+", "", bare)
    if bare in _FILLERS or bare in _FILLER_PHRASES or not re.search(r"\w", bare):
        return "greeting or filler"
    if re.sub(r"[\s!?.,。、！？]+", " ", bare).strip() in _FILLER_PHRASES:
        return "greeting or filler"
    if text.rstrip().endswith(("?", "？")):
        return "a question, not a statement"
    if _CJK.search(bare):
        if len(re.sub(r"\s", "", bare)) < MIN_CJK_CHARS:
            return "too short to state anything"
    elif len(bare.split()) < MIN_WORDS or len(bare) < MIN_CHARS:
        return "too short to state anything"
    return None


# ---------------------------------------------------------------------------- classification

_PAST_TIME_EN = re.compile(
    r"\b(?:yesterday|ago|last\s+(?:night|week|month|year|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|earlier\s+today|this\s+morning|the\s+other\s+day|in\s+(?:19|20)\d\d)\b", re.IGNORECASE)
_PRESENT_EN = re.compile(r"\b(?:right\s+now|as\s+of\s+now|for\s+now|now|currently|at\s+the\s+moment|these\s+days"
                         r"|still|at\s+present|today|tonight|this\s+(?:week|month)|no\s+longer|any\s*more)\b",
                         re.IGNORECASE)
_IRREGULAR_PAST = frozenset("""
    went met saw wrote built ran made found took gave got had did began broke brought bought came chose
    drove fell felt forgot heard held kept knew left lost meant paid rode rose said sent set shut sold
    spent spoke stood stole swam taught told thought threw understood woke won wore read slept ate drank flew
    grew hid led lent sang sat sold split won
""".split())
_COPULA = re.compile(r"^(?P<subject>.+?)\s+(?P<verb>is|are|am|was|were)\s+(?P<rest>.+)$", re.IGNORECASE)
_CONTRACTIONS = [(re.compile(p, re.IGNORECASE), r) for p, r in (
    (r"\bI'm\b", "I am"), (r"\b(you|we|they)'re\b", r"\1 are"), (r"\b(it|he|she|that|there|this)'s\b", r"\1 is"),
)]
_STATE_WORDS_EN = frozenset("""
    down up offline online broken failing slow busy blocked stuck tired sick ill exhausted stressed overloaded
    full empty unavailable available degraded healthy unhealthy red green open closed pending paused stopped
    running hungry sleepy sore injured behind ahead late overdue idle
""".split())
_VALUE = re.compile(r"^v?\d[\w.%/:-]*$|^\d{4}-\d\d-\d\d$")

_PAST_TIME_JA = re.compile(r"昨日|昨晩|昨夜|一昨日|おととい|先週|先月|去年|昨年|\d+日前|\d+週間前|今朝|この前|先日")
# A failure that happens at a moment (an incident), not a condition that lasts (壊れた, 故障した stay states).
_INCIDENT_JA = re.compile(r"(?:失敗|クラッシュ|ダウン|エラーに?な?|障害が?(?:起き|発生)|落ち|止ま|停止)(?:し|っ)?(?:た|ました)$")
_PAST_END_JA = re.compile(r"(?:した|しました|だった|でした|った|んだ|いだ|えた|きた|[\u3400-\u9fff]いた|ました|かった|れた)$")
_STATE_END_JA = re.compile(
    r"(?:[てで]いる|[てで]います|[てで]いない|[てで]いません|[てで]る|[てで]ます|になっている|になってる|中|中です|中だ|状態|状態です|"
    r"痛い|辛い|つらい|眠い|忙しい|だるい|重い|高い|低い|遅い|速い|多い|少ない|ひどい|かゆい|苦しい|悪い|寒い|暑い|うるさい)$")
_PRESENT_JA = re.compile(r"^(?:今|いま|現在|最近|今日|今週|今月|目下)(?:は|、)?")


def classify(raw: str, moment: datetime) -> Statement:
    """One candidate statement, normalised, classified and keyed (see the module docstring).
    The subject key and an update's kind come from `judging.subjects.parse`, the one reading of a
    statement's subject that `create` uses too."""
    from ..judging.subjects import names_a_condition, parse

    text = _tidy(raw)
    reason = trivial_reason(text)
    if reason:
        return Statement(text, None, "", reason)
    parsed = parse(text)
    fragment = _verbless_fragment(text)
    if fragment and not parsed.kind and not names_a_condition(text):
        # Trigger: two words and no verb, number or condition ("Big week", "back home"). Why: an
        # exclamation or a chat aside; it states nothing a later statement could update or a
        # reader could use. Outcome: skipped, with the reason, like a filler.
        return Statement(text, None, "", fragment)
    if parsed.kind:
        # Trigger: a verb that sets the current value ("moved to Kyoto", 腰が治った, "upgraded the
        # DB to 15", "my back hurts"). Why: they update the state (docs/compatibility.md, Ingest); as episodes
        # they never would. Outcome: a state, keyed like the statement it replaces.
        kind, why = parsed.kind, parsed.why
        past = _PAST_TIME_JA.search(text) if kind == "state" and _CJK.search(text) else None
        if past and _INCIDENT_JA.search(text):
            # Trigger: a failure told with the time it happened (昨日、注文APIが失敗した; 先週、本番
            # DBが落ちた). Why: an incident of then, as "The orders API failed yesterday" is an
            # episode; as a state it would stand as the thing's condition now, for a later statement
            # to replace (a reviewer's report). Outcome: an episode, with its time.
            kind, why = "episode", f"過去の時点 ({past.group(0)})"
    elif _CJK.search(text) and not re.search(r"[A-Za-z]{3,}\s+[A-Za-z]{3,}\s+[A-Za-z]{3,}", text):
        kind, why = _kind_ja(text)
    else:
        kind, why = _kind_en(text)
    subject = parsed.key if kind != "episode" else ""
    return Statement(absolute_dates(text, moment), kind, subject, why, statement_time(text, moment))


# Lead-ins that say how a statement is held, not what it states ("I think the config is wrong"),
# interjections, and the speaker of a chat line ("[09:12] Taro: ...").
_LEAD_IN = re.compile(r"^(?:(?:I|we)\s+(?:think|guess|believe|noticed|heard)(?:\s+that)?|note to self|fyi|btw|by the way"
                      r"|apparently|so|also|anyway|ps|ugh|oh|well|hmm|wow|ok so|okay so|quick update|update|big news|news)"
                      r"\s*[,:!]?\s+(?=\w)", re.IGNORECASE)
_TRAILING_NOISE = re.compile(r"[\s,]+(?:ugh|lol|haha|lmao|tbh|imo)[.!]*$", re.IGNORECASE)


def _tidy(text: str) -> str:
    text = " ".join(text.split())
    text = _TRAILING_NOISE.sub("", text)
    stripped = text
    for _ in range(3):   # "btw, also ..." has two
        again = _LEAD_IN.sub("", stripped)
        if again == stripped:
            break
        stripped = again
    if stripped != text:
        text = stripped[:1].upper() + stripped[1:]
    return re.sub(r"(?<![.\s])[.。]$", "", text).strip()


def _kind_en(text: str) -> tuple[str, str]:
    expanded = _expand(text)
    if _PAST_TIME_EN.search(expanded):
        return "episode", "a past time (" + _PAST_TIME_EN.search(expanded).group(0).lower() + ")"
    copula = _COPULA.match(expanded)
    if copula and copula.group("verb").lower() in ("is", "are", "am"):
        rest = copula.group("rest").split()
        first = re.sub(r"\W", "", rest[0].lower()) if rest else ""
        if _PRESENT_EN.search(expanded):
            return "state", "a present condition (" + _PRESENT_EN.search(expanded).group(0).lower() + ")"
        if first.endswith("ing") and first not in ("thing", "string", "king", "ring"):
            return "state", f"an ongoing action (is {first})"
        if first in _STATE_WORDS_EN or (first in ("at", "on") and len(rest) > 1 and _has_value(rest[1:])):
            return "state", f"a condition that can change (is {' '.join(rest[:2]).lower()})"
        if re.fullmatch(r"\d[\d.,]*", first) and len(rest) > 1 and rest[1].lower().strip(".,") in _STATE_WORDS_EN:
            # Trigger: a condition at a degree ("the disk is 91% full", "the queue is 80% empty").
            # Why: the degree of a condition that changes, as "is full" is (blind9 w07).
            # Outcome: a state.
            return "state", f"a condition at a degree (is {' '.join(rest[:2]).lower()})"
        if re.search(r"\d", copula.group("rest")) and _READING.search(copula.group("subject")):
            # Trigger: a reading of a metric at a number ("the API error rate is 2%", "p99 latency
            # is 900 ms"). Why: a reading changes by itself and a later one replaces it (blind8
            # u06); a limit or a setting ("rate limit is 100") is chosen, a fact. Outcome: a state.
            return "state", f"a reading that changes ({_READING.search(copula.group('subject')).group(0).lower()})"
        measure = _MEASURE_SUBJECT.match(copula.group("subject"))
        if measure and _AT_A_NUMBER.match(copula.group("rest")) and \
                measure.group("head").lower().rstrip("s") not in _CHOSEN_EN:
            # Trigger: a thing at a number ("replication lag on the replica is 40 seconds", "Crash-
            # free sessions on Android are 98.7%", "the queue depth is 1200"). Why: a per-metric list
            # (`_READING`) does not generalize (blind10): what a number measures changes by itself,
            # unless the thing is one chosen or agreed (a limit, a length, a size, a plan: `_CHOSEN_EN`).
            # Outcome: a state.
            return "state", f"a measure at a value ({measure.group('head').lower()})"
        return "fact", "a timeless statement (is ...)"
    first = re.sub(r"[^\w]", "", expanded.split()[0].lower()) if expanded.split() else ""
    if first.endswith("ing") and len(first) > 5 and first not in ("nothing", "something", "everything", "morning",
                                                                   "evening", "building", "meeting", "setting"):
        # A chat line without its subject ("heading to the gym", "working on the release"):
        # an ongoing action, as "I am heading to the gym" is.
        return "state", f"an ongoing action ({first})"
    verb = _main_verb(expanded)
    if verb and (verb in _IRREGULAR_PAST or (verb.endswith("ed") and len(verb) > 3)):
        return "episode", f"a past event ({verb})"
    if copula:  # was / were
        return "episode", f"a past condition ({copula.group('verb').lower()})"
    if _PRESENT_EN.search(expanded):
        return "state", "a present condition (" + _PRESENT_EN.search(expanded).group(0).lower() + ")"
    return "fact", "a timeless statement"


def _verbless_fragment(text: str) -> str | None:
    """Why an English piece of one or two words states nothing (None when it may): no verb
    (no word in -ed, -ing or -s), no number, no copula."""
    if _CJK.search(text):
        return None
    words = re.findall(r"[\w'-]+", text)
    if len(words) > 2 or re.search(r"\d", text):
        return None
    if any(re.search(r"(?:ed|ing|[^s]s)$", w.lower()) or w.lower() in _IRREGULAR_PAST or
           w.lower() in ("is", "am", "are", "was", "were", "be", "has", "have") for w in words):
        return None
    return "a fragment without a verb"


def _expand(text: str) -> str:
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    return text


def _main_verb(text: str) -> str | None:
    """The verb after a leading pronoun or noun phrase: the first word that is a known past
    form or ends in -ed, within the first six words (no tagger: a guess, used only for kind).
    A diary sentence may drop its subject ("Spent the morning on ..."): then it is the first."""
    words = [re.sub(r"[^\w'-]", "", w).lower() for w in text.split()[:7]]
    if words and words[0] in _IRREGULAR_PAST:
        return words[0]
    for word in words[1:]:
        if word in _IRREGULAR_PAST or (word.endswith("ed") and len(word) > 3):
            return word
    return None


def _has_value(words: list[str]) -> bool:
    return any(_VALUE.match(w.strip(".,;:")) for w in words)


# A metric read at a number: its noun is the last word of the subject ("error rate", "CPU usage
# on the build box", "p99 latency"), not a limit or a setting of it.
_READING = LazyPattern(r"\b(?:rate|usage|utili[sz]ation|load|latency|uptime|temperature)\b(?!\s+(?:limit|cap|"
                       r"threshold|target|budget|alert))", re.IGNORECASE,
                       needs=("rate", "usage", "utili", "load", "latency", "uptime", "temperature"))
# The head noun of a subject that is a thing, not a person ("replication lag on the replica": lag).
_MEASURE_SUBJECT = LazyPattern(r"^(?!(?:i|we|you|he|she|they|it|this|that)\b)(?:[\w'.%-]+\s+)*?(?P<head>[A-Za-z][\w-]*)"
                              r"(?:'s)?(?:\s+(?:on|of|in|for|at|from)\s+.+)?$", re.IGNORECASE)
_AT_A_NUMBER = LazyPattern(r"^(?:about\s+|around\s+|roughly\s+|nearly\s+|almost\s+|over\s+|under\s+|only\s+|"
                          r"now\s+|still\s+|back\s+)*(?:[$€£¥]?\d[\d.,]*|an?(?=\s+(?:second|minute|hour|day)\b))"
                          r"\s*(?:%|[A-Za-z]+)?(?:\s+[a-z]+)?$", re.IGNORECASE)
# What is chosen or agreed rather than measured: its number is a setting, a fact until changed.
_CHOSEN_EN = frozenset("""
    limit cap max maximum minimum min threshold target budget quota length size timeout ttl retention duration
    interval period deadline capacity port tier plan price fee cost salary rent age height birthday version window
    concurrency replica worker thread connection
""".split())
# A Japanese thing marked by が with an adjective (CIが赤い, 部屋が暑い), or a person or thing
# that is somewhere (大阪にいる): a condition now.
_CONDITION_JA = LazyPattern(r"^[^、。はが]{1,20}?が[^、。はが]{0,6}?[\u3040-\u309f\u3400-\u9fff](?<!な)い$|(?:に|で)(?:いる|います|いない)$",
                            needs=("い", "います"), non_ascii=True)
# A thing (が) with a verb in the negative present: 止まらない, 下がらない, 眠れない.
_GOES_ON_JA = LazyPattern(r"が[^、。はが]*?[\u3400-\u9fff][\u3040-\u309f]{0,3}[らりれわかがさたなまばえけせてねめべげぜでへ]ない$",
                          needs=("ない",), non_ascii=True)


_CHANGED_TO_JA = LazyPattern(r"^[^、。]{1,30}?[はが].*に(?:変わった|変わりました|変更された|変更されました)$",
                             needs=("変",), non_ascii=True)


def _kind_ja(text: str) -> tuple[str, str]:
    core = re.sub(r"[、,\s]+$", "", text)
    going_on = _GOES_ON_JA.search(core) if "ない" in core else None
    if going_on:
        # Trigger: a thing marked by が with a negated verb (咳が止まらない, 熱が下がらない). Why:
        # a condition that goes on now, which a later one ends (咳が止まった, blind8 u03); "窓が
        # ない" (no verb) stays a fact. Outcome: a state.
        return "state", "続いている状態 (…" + going_on.group(0)[-4:] + ")"
    if _CONDITION_JA.search(core) and not _PAST_END_JA.search(core[-2:] + "x"):
        # Trigger: <X>が<adjective> (main ブランチの CI が赤い) or 〜にいる (同僚はまだ大阪にいる).
        # Why: a condition or a whereabouts now, which changes, for any adjective or place (a
        # per-word list does not generalize, blind10). Outcome: a state.
        return "state", "現在の状態 (…" + core[-3:] + ")"
    if _STATE_END_JA.search(core) and not _PAST_END_JA.search(core[-2:] + "x"):
        return "state", "現在の状態 (" + _STATE_END_JA.search(core).group(0) + ")"
    if _CHANGED_TO_JA.search(core):
        # Trigger: <thing>は/が <value>に変わった (担任が高橋先生に変わった, プランが月50GBに変わった,
        # 引っ越しが12月27日に変わった). Why: the thing now has another value: an update of what
        # was stated of it, not an event to remember apart (blind11 ks2, v04, v10). Outcome: a state.
        return "state", "値の変更 (…に変わった)"
    past = _PAST_TIME_JA.search(core)
    if past:
        return "episode", f"過去の時点 ({past.group(0)})"
    if _PAST_END_JA.search(core):
        return "episode", "過去の出来事 (" + _PAST_END_JA.search(core).group(0) + ")"
    if _PRESENT_JA.search(core):
        return "state", "現在の状態 (" + _PRESENT_JA.search(core).group(0) + ")"
    if re.match(r"^.{1,20}?[はが].*\d.*(?:です|だ)$", core):
        return "state", "変わりうる値 (…は<数値>です)"
    if re.match(r"^.{1,20}?[はが][^、。]*\d[^、。]*(?:ある|あります)$", core):
        # Trigger: a thing that is at a number now (熱が38度ある, 在庫が3個あります). Why: the
        # number is a reading that changes, as "…は38度です" is (blind9 w04). Outcome: a state.
        return "state", "変わりうる値 (…が<数値>ある)"
    return "fact", "普遍的な事実"


# ---------------------------------------------------------------------------- dates

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_WEEKDAYS_JA = ("月", "火", "水", "木", "金", "土", "日")


def absolute_dates(text: str, moment: datetime) -> str:
    """Relative dates in `text` rewritten as ISO dates counted from `moment` (its own date);
    ISO dates and anything not recognised are left as they are."""
    today = moment.date()

    def day(delta: int) -> str:
        return (today - timedelta(days=delta)).isoformat()

    def last_weekday(name: str) -> str:
        # "last Monday": the most recent Monday before today (a week back when today is one).
        return day((today.weekday() - _WEEKDAYS.index(name)) % 7 or 7)

    def as_written_when_out_of_range(convert):
        # Trigger: "99999999 days ago", or "3000 weeks ago" from an event time in year 10. Why: that
        # day is before year 1, which no date holds (the OverflowError took ingest down). Outcome:
        # the words stay as written, like any relative date it cannot make absolute.
        def converted(match: re.Match) -> str:
            try:
                return convert(match)
            except OverflowError:
                return match.group(0)
        return converted

    def en(match: re.Match) -> str:
        word = match.group(0)
        lower = word.lower()
        if lower == "the day before yesterday":
            out = "on " + day(2)
        elif lower == "yesterday":
            out = "on " + day(1)
        elif lower == "today":
            out = "on " + day(0)
        elif lower in ("this morning", "earlier today"):
            out = f"on {day(0)} ({lower})"
        elif lower in ("last night",):
            out = f"on the night of {day(1)}"
        elif lower == "last week":
            out = "in the week of " + day(today.weekday() + 7)
        elif lower.startswith("last "):
            out = "on " + last_weekday(lower.split()[1])
        else:
            number, unit = re.match(r"(\d+|a|an|one|two|three)\s+(day|week)s?\s+ago", lower).groups()
            count = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(number) or int(number)
            out = "on " + day(count * (7 if unit == "week" else 1))
        if match.start() == 0 and re.match(r"\s+(?:was|is|will|has|had)\b", text[match.end():], re.IGNORECASE):
            return out.split(" ", 1)[1] if out.startswith("on ") else out  # the day is the subject
        if text[match.end():match.end() + 2] in ("'s", "’s"):
            # "this morning's renewal": the day qualifies a noun; "on" would break the phrase
            out = "the " + (out.split(" ", 1)[1] if out.startswith("on ") else out)
        if word[0].isupper() and match.start() == 0:
            out = out[0].upper() + out[1:]
        return out

    text = re.sub(r"\b(?:the day before yesterday|yesterday|today|this morning|earlier today|last night|last week"
                  r"|last (?:" + "|".join(_WEEKDAYS) + r")|(?:\d+|a|an|one|two|three) (?:day|week)s? ago)\b",
                  as_written_when_out_of_range(en), text, flags=re.IGNORECASE)
    text = re.sub(r"(?<=[Tt]he )(\d{4}-\d\d-\d\d(?: \([a-z ]+\))?)(?:'s|’s)\b", r"\1", text)

    def ja(match: re.Match) -> str:
        word = match.group(0)
        if word in ("一昨日", "おととい"):
            return day(2)
        if word == "昨日":
            return day(1)
        if word in ("昨夜", "昨晩"):
            return f"{day(1)}夜"
        if word == "今日":
            return day(0)
        if word == "今朝":
            return f"{day(0)}朝"
        if word.startswith("先週") and len(word) > 2:
            target = _WEEKDAYS_JA.index(word[-3] if word.endswith("曜日") else word[-2])
            return day(today.weekday() - target + 7)
        if word == "先週":
            return f"{day(today.weekday() + 7)}の週"
        number, unit = re.match(r"(\d+)(日|週間)前", word).groups()
        return day(int(number) * (7 if unit == "週間" else 1))

    return re.sub(r"一昨日|おととい|昨日|昨夜|昨晩|今日|今朝|先週の?[月火水木金土日]曜日?|先週|\d+(?:日|週間)前",
                  as_written_when_out_of_range(ja), text)


_DATE_EN = re.compile(r"\b(?:the day before yesterday|yesterday|today|this morning|earlier today|last night|last week"
                      r"|last month|(?:over\s+the|last|this\s+past)\s+weekend"
                      r"|last (?:" + "|".join(_WEEKDAYS) + r")|(?:\d+|a|an|one|two|three) (?:day|week)s? ago"
                      r"|(?:on )?(\d{4}-\d\d-\d\d)|on (" + "|".join(_WEEKDAYS) + r"))\b", re.IGNORECASE)
_DATE_JA = re.compile(r"一昨日|おととい|昨日|昨夜|昨晩|今日|今朝|先週末|先月|先週の?([月火水木金土日])曜日?|先週|(\d+)(日|週間)前|(\d{4}-\d\d-\d\d)")


def statement_time(text: str, moment: datetime) -> datetime | None:
    """When the statement came to hold, when it says so: the first relative or ISO date it
    names (as `absolute_dates` reads them: "last week" is the Monday of that week), at the
    start of that day in `moment`'s time zone, or `moment` itself for today. None when it names
    no date: then it holds from when it was said."""
    try:
        return _named_time(text, moment)
    except (OverflowError, ValueError):
        # Trigger: a date the calendar cannot hold ("99999999 days ago"). Why: `absolute_dates`
        # keeps such words as written, and a statement must not fail ingest for them.
        # Outcome: no time of its own; it holds from when it was said.
        return None


def _named_time(text: str, moment: datetime) -> datetime | None:
    today = moment.date()

    def on(day) -> datetime:
        if day == today:
            return moment
        return datetime(day.year, day.month, day.day, tzinfo=moment.tzinfo)

    match = _DATE_EN.search(text)
    if match:
        word = match.group(0).lower()
        if match.group(1):
            try:
                return on(datetime.fromisoformat(match.group(1)).date())
            except ValueError:
                return None
        if match.group(2):   # "on Saturday": the last one, today included (statements tell what was)
            return on(today - timedelta(days=(today.weekday() - _WEEKDAYS.index(match.group(2).lower())) % 7))
        if word in ("today", "this morning", "earlier today"):
            return on(today)
        if word == "the day before yesterday":
            return on(today - timedelta(days=2))
        if word in ("yesterday", "last night"):
            return on(today - timedelta(days=1))
        if word == "last week":
            return on(today - timedelta(days=today.weekday() + 7))
        if word == "last month":   # as "last week" is its Monday: the first of that month
            return on((today.replace(day=1) - timedelta(days=1)).replace(day=1))
        if word.endswith("weekend"):   # the Saturday before today
            return on(today - timedelta(days=(today.weekday() - 5) % 7 or 7))
        if word.startswith("last "):
            return on(today - timedelta(days=(today.weekday() - _WEEKDAYS.index(word.split()[1])) % 7 or 7))
        number, unit = re.match(r"(\d+|a|an|one|two|three)\s+(day|week)s?\s+ago", word).groups()
        count = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3}.get(number) or int(number)
        return on(today - timedelta(days=count * (7 if unit == "week" else 1)))
    match = _DATE_JA.search(text)
    if match:
        word = match.group(0)
        if match.group(4):
            try:
                return on(datetime.fromisoformat(match.group(4)).date())
            except ValueError:
                return None
        if word in ("一昨日", "おととい"):
            return on(today - timedelta(days=2))
        if word in ("昨日", "昨夜", "昨晩"):
            return on(today - timedelta(days=1))
        if word in ("今日", "今朝"):
            return on(today)
        if word == "先月":
            return on((today.replace(day=1) - timedelta(days=1)).replace(day=1))
        if word == "先週末":
            return on(today - timedelta(days=(today.weekday() - 5) % 7 or 7))
        if match.group(1):
            return on(today - timedelta(days=today.weekday() - _WEEKDAYS_JA.index(match.group(1)) + 7))
        if word == "先週":
            return on(today - timedelta(days=today.weekday() + 7))
        return on(today - timedelta(days=int(match.group(2)) * (7 if match.group(3) == "週間" else 1)))
    return None
