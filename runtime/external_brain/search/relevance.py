"""Whether a card is relevant to a query: the judgements behind the search floor
(`answers_search`; measured by tests/bench/eval_retrieval.py and eval_floor.py) and behind
`brief` (CLI, MCP, HTTP `/v1/context`), the prompt hook and session start (`is_relevant` for
CONTEXT; measured by `tests/bench/eval_hook.py`).

A ranking always has a best card; the question here is whether that card is about what was
asked. Three kinds of evidence, each on a scale that means the same in any vault:

- keyword `strength` (keyword._Scoring.strength, 0..1): the share of the query the card holds:
  its words weighted by idf, each counting by how fully the card matches it (once in a long body
  about half, the title or tags nearly all). A word no card has counts against every card at
  its full weight, so a prompt the vault knows nothing about ("write a haiku about autumn") is
  weak evidence for the card that shares its one common word; a general word (GENERAL_WORDS:
  "thanks", "make", "blue") counts neither way, since a vault's own idf cannot tell it from a
  rare technical term.
- keyword `support` (keyword._Scoring.support, `keyword_odds`): the log-odds, in nats, that the
  card is the one the query is about, against the prior that any one of the vault's cards is
  (ln of their number). The words it matches add their information (idf times how fully);
  each word it leaves unmatched costs UNMATCHED_COST, whatever its idf: a related card rewords
  much of a prompt, so a missing word, however rare, is weak evidence against it, while a
  matched rare word is strong evidence for it (the binary independence model behind BM25). A
  word in a script the card is not written in (Japanese, for a card written in English) is
  neither: the card could not have held it. So a long prompt whose distinctive words a card
  holds is about that card however many other words it has (the share says no: each word it
  lacks weighs in full), and one word in common is not enough (it carries less than the
  prior). On the dev half these odds come out calibrated: a logistic fit of "the candidate is a
  right card" on them has slope 1.07 and intercept 0.17.
- vector `lift`: how far the card's cosine with the query stands above what this query scores
  against the vault at large, in standard deviations: (cosine - q . centre) / sqrt(sum q_i^2
  s_i^2), with the centre and per-dimension spread the vector cache keeps (`Background`).
  Embedding models put every text in a narrow cone (e5: unrelated pairs at ~0.8), so a raw
  cosine floor would be one number per model; the lift is measured on the model and the vault.

`is_relevant` combines them. A card is about the query when most of the query is its words
(strength reaches the bar: a short query about what many cards hold, "ECS deploy" in a vault of
ECS runbooks, where no one card is much likelier than chance) or when it holds far more of the
query than chance would give (`odds` reach CONTEXT_ODDS; context only). For context, a share
counts only when the card holds two or more of the query's words (EVIDENCE_WORDS): one word in
common is one piece of evidence however much of a short prompt it is ("great job, let's call it a
day" is all "job"), and must carry the odds on its own, which only a word rare in the vault does.
A prompt's shape moves the prior (`prompt_shape`): a request to produce or transform something
("write a sql query that counts orders per customer", この関数に型ヒントを付けて) is general work
far more often than it is about a card, so TASK_SHAPE nats come off every card's odds.

With a vector, the lift moves the strength bar, down for a card the model finds unusually close
(both sides agree, so modest keyword evidence is enough) and up for one it finds no closer than
the vault at large (a shared word is not enough when the meanings part), and adds to the odds of
a card that clears ODDS_LIFT_ORIGIN, a margin over what the closest card to an unrelated prompt
reaches (never takes from them). The lift moves both little: on e5-small the lifts of right and
wrong cards overlap (2-5 against 0-3.8 on the dev set), so a paraphrase with no shared word
passes on its lift alone only when the vault's configured cosine floor (`[embeddings]
link_similarity`) says it is close and the use allows that.

The bar depends on what the answer is for, not on the evidence, and each use is one function. A
search was asked for and shows a ranked list, so its floor (`answers_search`) only has to say
when nothing answers at all, and a vector may lower its bar but never raise it: hybrid search
says "nothing" only where the words alone would too (docs/decisions/0031, "The search floor with
vectors"). Context (`is_relevant` with CONTEXT: `brief`, `/v1/context`, the hooks) is put into an
agent's prompt unasked, for every prompt, most of which are not about the vault, so a card must
be clearly about the prompt (a low lift raises its bar), and one far less likely than the best
card found (RELATIVE_ODDS) is left out. Context judges the hits a search returns, so a card it
takes has passed the search floor as well.
Nothing here imports anything; without a provider there is no lift and no vector code runs.
"""

from __future__ import annotations

import functools
import math
import re

from ..vault.regex_programs import compile_pattern   # programs kept across processes

SEARCH = "search"      # someone searched: say "nothing" only when nothing answers
CONTEXT = "context"    # put into a prompt unasked: only cards clearly about it

# The keyword strength a card needs on its own, per use. CONTEXT's: more than half of the query's
# weight (it was 0.35, chosen on the dev half when the share was the only way in; since the odds
# carry long and reworded prompts, the share only has to take short ones, and at 0.35 a prompt
# whose one telling word is common in the vault passed on it: "the timeout in my pomodoro app";
# docs/decisions/0031, "Evidence from more than one word"). SEARCH's is a round value
# under which the retrieval benches lose nothing (JSQuAD nDCG@10: 0.15 cut 0.0014, 0.12 and 0.1
# nothing; SciFact unchanged): a search shows its ranking whenever some card answers at all,
# while chit-chat and prompts about what the vault lacks (strength ~0) still get "nothing".
KEYWORD_BAR = {SEARCH: 0.1, CONTEXT: 0.5}
# With vectors: a card at least LIFT_ORIGIN spreads above the vault has its bar lowered by
# AGREEMENT at once (both sides point at it) and by LIFT_WEIGHT per spread beyond; a card below
# it has the bar raised by LIFT_WEIGHT per spread short of it (the meanings part). Small: on
# e5-small the lift of a right card (2-5) and of a wrong one (0-3.8) overlap, and keyword
# strength separates them better (dev AUC 0.955 against 0.941; together 0.967).
LIFT_ORIGIN = 2.5
MIN_BACKGROUND = 30      # cached vectors needed before their spread is a scale to measure lift on
LIFT_WEIGHT = 0.05
AGREEMENT = 0.05
# Context by odds (docs/decisions.md, "Relevance and context"; chosen on the dev half): each
# query word a card leaves unmatched costs UNMATCHED_COST nats (0.25-0.5 did alike on dev; at
# 0.5 the odds come out calibrated); a card needs odds of CONTEXT_ODDS (a round value in the
# flat part of dev's -1.25..-0.5: at least 1 to e that it is the one); one more than
# RELATIVE_ODDS under the likeliest card found is left out (1-3 did alike on dev: a card about
# a seventh as likely). ODDS_LIFT_WEIGHT: the nats a spread of lift above ODDS_LIFT_ORIGIN adds;
# the origin is higher than the bar's (LIFT_ORIGIN): an unrelated prompt's closest card stands up to
# ~3.7 spreads above the vault on e5-small (dev, blind, blind3: 90% under 3.0), so a vector adds
# odds only for a card that clears that by a margin, not for one merely as close as chance gives
# the likeliest of 66 cards.
UNMATCHED_COST = 0.5
CONTEXT_ODDS = -1.0
RELATIVE_ODDS = 2.0
ODDS_LIFT_WEIGHT = 0.5
ODDS_LIFT_ORIGIN = 3.0
# Context by share: the card must hold at least EVIDENCE_WORDS of the query's (non-general) words;
# one word is judged by its odds (docs/decisions/0031, "Evidence from more than one word").
EVIDENCE_WORDS = 2
# A request to produce or transform something ("write a sql query that counts orders per
# customer", "convert 350 seconds to minutes", この関数に型ヒントを付けて) is general work far more
# often than it is about a card: its words name the thing to make, which shares vocabulary with
# many cards. TASK_SHAPE nats come off every card's odds for such a prompt (a lower prior, the
# same for all its cards, so RELATIVE_ODDS is unchanged). Chosen on the dev half, blind and
# blind3 (1.0 and 1.5 lost no related prompt there; 1.5 also left out a dev near miss).
TASK_SHAPE = 1.5


class Background:
    """What a query vector scores against the vault at large: the mean cosine (the query's dot
    product with the cached vectors' centre) and its spread (from the per-dimension spread; the
    exact spread needs every vector, and this one is within ~20% of it on e5)."""

    def __init__(self, query: list[float], centre: list[float], spread: list[float]) -> None:
        self.mean = math.fsum(q * c for q, c in zip(query, centre))
        self.spread = math.sqrt(math.fsum((q * s) ** 2 for q, s in zip(query, spread)))

    def lift(self, cosine: float) -> float:
        """How many standard deviations `cosine` stands above the vault's mean for this query."""
        return (cosine - self.mean) / self.spread if self.spread > 0 else 0.0


def keyword_odds(information: float, unmatched: float, cards: int, shape: float = 0.0) -> float:
    """The keyword log-odds (nats) that a card is the one a query is about: `information`, the
    summed idf of the query words it matches (each times how fully), less UNMATCHED_COST for
    each word it leaves unmatched (`unmatched`, partly matched words counting in part), less
    ln(`cards`), the prior that any one of the vault's cards is, less `shape`, what the query's
    shape takes from that prior (`prompt_shape`: a request to produce something)."""
    return information - UNMATCHED_COST * unmatched - math.log(max(cards, 1)) - shape


def odds(support: float, lift: float | None = None) -> float:
    """A card's log-odds for context: its keyword `support`, plus ODDS_LIFT_WEIGHT per spread
    of `lift` above ODDS_LIFT_ORIGIN (a vector adds evidence for an unusually close card; one no
    closer than that loses none, so a provider never makes context stricter by odds)."""
    if lift is None or lift <= ODDS_LIFT_ORIGIN:
        return support
    return support + ODDS_LIFT_WEIGHT * (lift - ODDS_LIFT_ORIGIN)


def answers_search(strength: float, lift: float | None = None, close: bool = False) -> bool:
    """The search floor: whether a hit answers a search someone asked for (`search`, every mode
    and door; a search none of whose hits does is "No cards match" and a miss). Its keyword share
    of the query reaches KEYWORD_BAR[SEARCH]; a vector may lower that bar, by AGREEMENT and
    LIFT_WEIGHT per spread, for a card at least LIFT_ORIGIN spreads above the vault (both halves
    point at it; far enough above, the lift alone answers), and a cosine reaching the vault's
    `[embeddings] link_similarity` (`close`) answers by itself. A low lift never raises the bar:
    hybrid search says "nothing" only where the words alone would too (docs/decisions/0031,
    "The search floor with vectors": on e5-small a right card's lift in a vault of tens of
    cards is typically 1-2.5, as the best of the vault against an unrelated query is)."""
    if close:
        return True
    bar = KEYWORD_BAR[SEARCH]
    # Trigger: vectors were used and this card stands well above the vault. Why: both halves
    # point at it, so a smaller share of the query is enough. Outcome: the bar comes down.
    if lift is not None and lift >= LIFT_ORIGIN:
        bar -= AGREEMENT + LIFT_WEIGHT * (lift - LIFT_ORIGIN)
    return strength >= bar - 1e-12


def is_relevant(strength: float, lift: float | None = None, use: str = CONTEXT, close: bool = False,
                support: float = -math.inf, best: float | None = None, held: int = 0) -> bool:
    """Whether a card with this keyword strength and support (and vector evidence, when
    vectors were used) is about the query, for `use` (SEARCH or CONTEXT; see the module
    docstring). CONTEXT is the decision to put a card into a prompt unasked (brief, the hooks);
    SEARCH is `answers_search`, the search floor, whatever else is passed.

    `lift` is None without vectors, or when the vault has too few of them to measure against
    (`MIN_BACKGROUND`). `close`: the card's cosine reaches `[embeddings] link_similarity`, the
    vault's own absolute floor for its model. It is enough for a search (issue 10: a card as
    close as a suggested link is an answer), and for context only when there is no lift: in a
    vault of a few cards the configured floor is the only vector evidence there is. `best`,
    for context: the highest `odds` among the cards judged with this one; a card more than
    RELATIVE_ODDS under it is left out, whatever else it has. `held`, for context: how many of
    the query's words (those `strength` weighs) the card holds at all; its share counts only
    when that is at least EVIDENCE_WORDS."""
    if use == SEARCH:
        return answers_search(strength, lift, close)
    # Trigger: context, and a card found with another far likelier. Why: the words that
    # passed it are mostly the likelier card's (on dev, a wrong second card sat 2-13 nats under
    # a right first one). Outcome: left out, whatever its share.
    if best is not None and odds(support, lift) < best - RELATIVE_ODDS - 1e-12:
        return False
    if close and lift is None:
        return True
    bar = KEYWORD_BAR[CONTEXT]
    if lift is not None:
        bar -= LIFT_WEIGHT * (lift - LIFT_ORIGIN) + (AGREEMENT if lift >= LIFT_ORIGIN else 0.0)
    # Trigger: context, and a card that holds only one of the query's words. Why: one word in
    # common is one piece of evidence however much of a short prompt it is ("great job, let's
    # call it a day" is all "job" once the general words are set aside; "convert 350 seconds to
    # minutes" is mostly "350"); a share means something when two or more words agree on the
    # card. Outcome: such a card is judged by its odds alone, where one word must be rare
    # enough in the vault to carry it.
    if strength >= bar - 1e-12 and held >= EVIDENCE_WORDS:
        return True
    # Trigger: context, and a card that holds less than the bar's share of the query. Why: a
    # long or reworded prompt's extra words weigh in full in the share, yet say little against
    # a card that holds its distinctive ones. Outcome: relevant when its odds are high enough.
    return odds(support, lift) >= CONTEXT_ODDS - 1e-12


# ---------------------------------------------------------------------------- general words

# Words that say nothing about which card a prompt is about: frequent in any English text or chat
# (greetings and thanks, pronouns and determiners the stop list leaves, the commonest verbs,
# adjectives, adverbs, prepositions, numbers, time words and colours), and the commonest general
# Japanese words written in kanji (hiragana is grammar already). A vault's own idf cannot tell
# them: in a vault of a few hundred cards "write" or "blue" is as rare as "celery". They are
# neither for nor against a card in `strength` (ranking still uses them), so "thanks, that works"
# has nothing left that a card could match. Chosen from general frequency, not from the labelled
# set; words with a technical sense in this domain (file, test, build, run, lock, cache, key, log,
# order, date, user, state, type, table, page, list, start, set) are not here.
GENERAL_WORDS = frozenset("""
thanks thank thx ty please pls ok okay yes yeah yep nope sure hi hello hey sorry great good nice
cool awesome perfect fine lol wow hmm bye goodbye welcome cheers exactly indeed maybe perhaps really
actually basically literally probably definitely certainly anyway anyways also still already again
even ever never always often sometimes usually quite rather pretty much many more most less least
few lot lots bit little enough some any every each both either neither other others another same
all only those whose whom nor yet been being had may might must shall
different such own whole several various certain else instead though although while since until
unless whether however therefore otherwise because here there where now then today tomorrow
after before over under above below behind between through during without within against among
around across along beside beyond toward towards upon onto off out up down near inside outside
yesterday tonight morning afternoon evening night day days week weeks month months year years
hour hours minute minutes second seconds moment soon later early late ago
me my mine we us our ours they them he him his she her hers yours myself yourself ourselves
someone something anything everything nothing everyone anyone everybody anybody somebody nobody
thing things stuff way ways kind people person guy guys friend world life home
0 1 2 3 4 5 6 7 8 9 one two three four five six seven eight nine ten first third last next half
hundred thousand million billion couple
doesn didn isn wasn aren weren don won couldn shouldn wouldn haven hasn can cannot
make makes made making get gets got getting go goes going went gone come comes came coming take
takes took taken give gives gave given see sees saw seen look looks looked looking know knows knew
known think thinks thought want wants wanted need needs needed like likes liked love hate try tries
tried trying let lets put say says said tell tells told ask asks asked help helps helped keep
keeps kept seem seems feel feels felt mean means meant work works worked working find finds found
write writes wrote written read reads add adds added change changes changed create creates created
remove removes removed fix fixes fixed move moves moved turn turns turned open opens opened close
closes closed show shows showed shown call calls called am become became begin began calling showing
adding changing creating removing fixing moving turning opening closing writing reading helping keeping
feeling asking telling saying putting letting seeming meaning finding becoming beginning thinking knowing
taking giving seeing coming wanting needing liking loving trying
new old big small large long short high low bad best better worse worst easy hard simple quick
real true full free main important possible able ready clear happy sad hot cold warm fun funny
red blue green yellow orange purple black white gray grey pink brown dark light color colour
今日 明日 昨日 今 何 本当 簡単 方法 場合 必要 自分 大丈夫 了解 最近 一番 普通 全部 天気 感じ 教 願
""".split())


def is_general(word) -> bool:
    """Whether a query word (analysis.QueryWord) is one of GENERAL_WORDS as written (case aside:
    the list spells out the inflections it means, so no stemming is paid for on a search), or a
    lone Latin letter."""
    text = word.text.casefold()
    return text in GENERAL_WORDS or (len(text) == 1 and text.isascii())


# ---------------------------------------------------------------------------- the prompt's shape

# Verbs that ask for something to be produced or transformed, as a request's first word. Chosen
# from what the verbs mean, not from a labelled set; verbs that act on a running system (fix,
# debug, deploy, push, rotate, restore, check, review) and requests for knowledge (explain,
# describe, tell, show, give, list, find) are not here: a vault of runbooks and troubleshooting
# notes is about exactly those.
_PRODUCE = frozenset("""
write rewrite draft compose create generate make build implement code add insert append convert
translate transform format reformat prettify rename refactor restructure sort count compute calculate
parse plot chart draw sketch design summarize summarise paraphrase reverse center centre style colour
color animate
""".split())
# What may come before the verb of a request: politeness, "can you", "I want to", "let's".
_LEAD_IN = frozenset("""
please pls plz kindly can could would will you u help me to i i'd id want wanna need like let's lets
let us just quickly now ok okay so hey hi also then and first
""".split())
# A Japanese request to produce or transform something: the te-form of such a verb at the end,
# bare or with ください / ほしい / くれる (書いて, 作って, 直して, 付けて, 追加して, 翻訳して...);
# 教えて / 説明して (tell, explain) ask for knowledge and are not here.
_PRODUCE_JA = (
    r"(?:書いて|作って|直して|変えて|付けて|加えて|追加して|翻訳して|訳して|変換して|並べ替えて|並び替えて|分割して|"
    r"実装して|生成して|整形して|計算して|要約して|まとめて|描いて|書き換えて|数えて|作成して)"
    r"(?:ください|下さい|ほしい|欲しい|くれ|くれる|くれない|もらえる|ちょうだい)?[\s。．.!！?？]*$")
_LATIN = compile_pattern(r"[a-z]+(?:'[a-z]+)?")


def prompt_shape(text: str) -> float:
    """What a query's shape takes from every card's keyword odds, in nats (`keyword_odds`):
    TASK_SHAPE for a request to produce or transform something (its first word after any
    politeness one of _PRODUCE, or a Japanese one ending in such a verb's te-form), else 0."""
    folded = text.casefold()
    for word in _LATIN.findall(folded[:200]):
        if word not in _LEAD_IN:
            if word in _PRODUCE:
                return TASK_SHAPE
            break
    tail = folded[-40:]
    # An ASCII prompt cannot end in a Japanese te-form: the pattern is compiled (~0.4 ms, every
    # search process pays it) only for a prompt that could.
    return TASK_SHAPE if not tail.isascii() and _produce_ja().search(tail) else 0.0


@functools.cache
def _produce_ja() -> re.Pattern:
    return re.compile(_PRODUCE_JA)
