"""A create judges its draft, and a few creates later meets the card it wrote as a candidate: the
stored body then starts with the newline `create` writes after the frontmatter, which the draft
lacked. The analyses that newline cannot change (the card's mentioned tokens, its content's
tokens and folded text, its sentences) are taken from the draft's, not made again (issue 22,
h10-judge). The negation, contrast, success and still-failing patterns open with a lookahead of
the letters their alternatives start with: they match exactly where the patterns without it
match. A `LazyPattern` keeps the last text it folded for its words: the next rule asked of
another text folds that one."""

from __future__ import annotations

import random
import re

from external_brain.judging import claims as C
from external_brain.judging import judgements as J
from external_brain.judging.judgements import CardText

DRAFT = CardText("Bench note 3-17 0a1b2c3d: redis timeout latency", "Bench note 3-17 0a1b2c3d: redis timeout latency "
                 "after the deploy, not before; 三回 retried, 8千 requests", ["bench", "client3"])


def _stored(draft: CardText) -> CardText:
    return CardText(draft.title, "\n" + draft.body, list(draft.tags))


def test_a_stored_cards_mentioned_tokens_are_its_drafts() -> None:
    made = C.mentioned_tokens(DRAFT)
    assert C.mentioned_tokens(_stored(DRAFT)) is made   # taken, not made again
    assert made == frozenset(C._sentence_tokens(f"{DRAFT.title}\n\n{' '.join(DRAFT.tags)}\n\n{DRAFT.body}")[0]) \
        == C._drafted_tokens.__wrapped__(DRAFT.title, tuple(DRAFT.tags), "\n" + DRAFT.body)
    # A body past the bound is tokenised each time, never kept by its draft-level copy.
    long = CardText("Long", "x " * C.DRAFTED_BODY_CHARS, ["t"])
    before = C._drafted_tokens.cache_info().currsize
    assert C.mentioned_tokens(_stored(long)) == C.mentioned_tokens(long)
    assert C._drafted_tokens.cache_info().currsize == before


def test_a_stored_cards_content_analyses_are_its_drafts() -> None:
    content = J._content_of(DRAFT.title, tuple(DRAFT.tags), DRAFT.body)
    assert J._content_of(DRAFT.title, tuple(DRAFT.tags), "\n" + DRAFT.body) is content
    tokens = J.content_tokens(DRAFT)
    assert J.content_tokens(_stored(DRAFT)) is tokens
    folded = J._folded_content(J._content_of(DRAFT.title, (), DRAFT.body))
    assert J._folded_content(J._content_of(DRAFT.title, (), "\n" + DRAFT.body)) is folded
    assert J.exact_duplicate(DRAFT, _stored(DRAFT))


def test_the_stored_and_the_drafted_body_are_judged_alike() -> None:
    """Every kept analysis the newline could reach gives the stored card what it gives the draft."""
    rng = random.Random(3)
    words = "redis timeout 30 s 三回 8千 not never node18 API `cfg` ## Evidence - 2024 統一 五千円 \n".split(" ")
    for _ in range(300):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        draft = CardText(rng.choice(["Redis Timeout", "統一 三回", "x"]), body, rng.sample(["a", "b-c", "三"], 2))
        stored = _stored(draft)
        assert C._drafted_tokens.__wrapped__(draft.title, tuple(draft.tags), stored.body) == \
            C._drafted_tokens.__wrapped__(draft.title, tuple(draft.tags), draft.body)
        assert J._content_of(draft.title, tuple(draft.tags), stored.body) == \
            J._content_of(draft.title, tuple(draft.tags), draft.body)


def _without_lookahead(pattern: str) -> re.Pattern:
    opening = re.match(r"\(\?=\[[^\]]+\]\)", pattern)
    assert opening, pattern
    return re.compile(pattern[opening.end():], re.IGNORECASE)


def test_the_negation_contrast_and_success_patterns_match_where_they_matched_without_their_lookahead() -> None:
    rng = random.Random(11)
    pieces = ["not", "Not", "NOT", "don't", "DOESN'T", "never", "no longer", "must not", "cannot", "can't", "isn't",
              "aren't", "won't", "without", "WITHOUT", "ſhouldn't", "İsn't", "ısn't", "rather than", "RATHER THAN",
              ", but not ", ",not ", "not just", "not only", "note", "knot", "nothing", "a", "b", "-", " ", "\n",
              "こと", "ない", "K"]
    pieces += ["fixed", "Resolved", "works now", "no more errors", "passes", "still fails", "didn't help",
               "cause not found", "unresolved", "解決", "解決しない", "直った", "まだ直らない", "成功", "なくなった",
               "未解決", "効果なし", "わかっていない", "止まった", "できた"]
    for rule in (C._EN_NEGATIVE, C._CONTRAST, J._SUCCESS_WORDS, J._STILL_FAILING):
        plain = _without_lookahead(rule.pattern)
        for _ in range(5_000):
            text = "".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(0, 8)))
            found, expected = rule.search(text), plain.search(text)
            assert (found and found.span()) == (expected and expected.span()), (rule.pattern, text)
            assert rule.sub(" ", text) == plain.sub(" ", text)


def test_a_stored_cards_sentences_are_its_drafts() -> None:
    body = "Redis timeout after the deploy\n\nnot before: 三回 retried\n## Evidence\n- 2024-01-01 seen"
    made = C._sentences_of("Redis Timeout", body)
    assert C._sentences_of("Redis Timeout", "\n" + body) is made
    assert made == C._drafted_sentences.__wrapped__("Redis Timeout", "\n" + body)


def test_card_text_and_claim_take_their_fields_as_the_generic_valueclass_did() -> None:
    full = CardText("t", "b", ["x"], "fact", "m", "active", "used", "s|k")
    assert vars(full) == {"title": "t", "body": "b", "tags": ["x"], "type": "fact", "memory_type": "m",
                          "status": "active", "last_feedback": "used", "subject": "s|k"}
    assert vars(CardText("t", "b", [], status="failed")) == {
        "title": "t", "body": "b", "tags": [], "type": "", "memory_type": "", "status": "failed",
        "last_feedback": None, "subject": ""}
    assert CardText("t", "b", ["x"]) == CardText(title="t", body="b", tags=["x"])
    claim = C.Claim("s", ["s"], ["s"], frozenset({"s"}), 1.0, False, frozenset({"s"}))
    assert (claim._said, claim._facts, claim._contrast) == (frozenset(), None, C._UNMADE)
    assert vars(C._claim.__wrapped__("Do not retry after 30 s")) == {
        "text": "Do not retry after 30 s", "folded": ["do", "not", "retri", "after", "30", "s"],
        "written": ["Do", "not", "retry", "after", "30", "s"], "content": frozenset({"not", "retri", "after", "s"}), "weight": 4.0,
        "negative": True, "plain": frozenset({"retri", "after", "30", "s"}),
        "_said": frozenset({"not", "retri", "after", "30", "s"}), "_facts": None, "_contrast": C._UNMADE}


def test_a_lazy_pattern_folds_each_new_text_and_keeps_only_the_last() -> None:
    from external_brain.judging.lazy import LazyPattern

    first = LazyPattern(r"\bretry\b", re.IGNORECASE, needs=("retry",))
    second = LazyPattern(r"\btimeout\b", re.IGNORECASE, needs=("timeout",))
    text = "RETRY after the Timeout"
    assert first.search(text).group(0) == "RETRY"
    assert LazyPattern._last_folded == (text, "retry after the timeout")
    assert LazyPattern._last_folded[0] is text
    assert second.search(text).group(0) == "Timeout"
    assert second.search("no such word here") is None and first.search("no such word here") is None
    assert LazyPattern._last_folded[0] == "no such word here"
    assert first.search("İ retry") is not None and second.search("TİMEOUT") is not None   # folded per text, as before


def test_the_sentence_breaks_on_ascii_text_are_where_they_were_without_the_lookahead() -> None:
    plain = re.compile(C._SENTENCE_END.ascii_pattern[len("(?=[\\s;,])"):])
    assert C._SENTENCE_END.ascii_pattern.startswith("(?=[\\s;,])")
    rng = random.Random(5)
    pieces = ["Retry", "it.", "Then", "`x`", "(y)", "[z]", '"q"', "'r'", ";", "; ", ", so ", ",  but ", ", which",
              "a", "9", ".", "!", "?", " ", "  ", "\t", "\n", "B", ","]
    for _ in range(5_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert C._SENTENCE_END.split(text) == plain.split(text), text
