"""BM25F scoring: each formula part against numbers worked out by hand, then the ranking it
produces through the real CLI (title beats body, confidence only breaks ties).

Field order is title, aliases, tags, meta (type/domain/project), body.
"""

from __future__ import annotations

import pytest

from external_brain.search.keyword import FIELD_B, FIELD_WEIGHTS, K1, bm25f_term, field_tf, idf, saturate
from helpers import ok_data, run_cli

approx = pytest.approx

# Average length 1.0 in every field, for tests where length normalisation should be neutral.
FLAT = (1.0, 1.0, 1.0, 1.0, 1.0)


# ---------------------------------------------------------------------------- constants

def test_field_weights_b_and_k1():
    assert FIELD_WEIGHTS == (3.0, 2.5, 2.0, 1.0, 1.0)
    assert FIELD_B == (0.5, 0.5, 0.3, 0.0, 0.75)
    assert K1 == 1.2


# ---------------------------------------------------------------------------- idf

def test_idf_is_the_lucene_form():
    # N=10, df=2: ln(1 + (10 - 2 + 0.5) / (2 + 0.5)) = ln(1 + 8.5 / 2.5) = ln(4.4) = 1.4816045...
    assert idf(10, 2) == approx(1.4816045409)
    # N=1, df=1: ln(1 + 0.5 / 1.5) = ln(4/3) = 0.2876820...
    assert idf(1, 1) == approx(0.2876820725)


def test_idf_of_a_term_in_every_card_is_small_but_positive():
    # N=4, df=4: ln(1 + 0.5 / 4.5) = ln(10/9) = 0.1053605... (classic Robertson idf would be negative)
    assert idf(4, 4) == approx(0.1053605157)


def test_idf_of_an_empty_corpus_does_not_divide_by_zero():
    # N=0, df=0: ln(1 + 0.5 / 0.5) = ln(2) = 0.6931471...
    assert idf(0, 0) == approx(0.6931471806)


def test_idf_of_a_term_no_card_has_is_the_highest():
    # N=10, df=0: ln(1 + 10.5 / 0.5) = ln(22) = 3.0910425...
    assert idf(10, 0) == approx(3.0910424534)
    assert idf(10, 0) > idf(10, 1) > idf(10, 2) > idf(10, 10)


# ---------------------------------------------------------------------------- field_tf

def test_field_tf_at_average_length_is_the_raw_tf():
    # 1 / (1 - 0.75 + 0.75 * 5/5) = 1 / 1 = 1.0
    assert field_tf(1, 5, 5.0, 0.75) == approx(1.0)


def test_field_tf_of_a_long_field_is_lowered():
    # 2 / (1 - 0.75 + 0.75 * 10/5) = 2 / (0.25 + 1.5) = 2 / 1.75 = 1.1428571...
    assert field_tf(2, 10, 5.0, 0.75) == approx(1.1428571429)


def test_field_tf_of_a_short_field_is_raised():
    # 1 / (1 - 1.0 + 1.0 * 2/4) = 1 / 0.5 = 2.0
    assert field_tf(1, 2, 4.0, 1.0) == approx(2.0)


def test_field_tf_of_zero_is_zero():
    assert field_tf(0, 10, 5.0, 0.75) == 0.0
    assert field_tf(0, 0, 0.0, 0.75) == 0.0


def test_field_tf_with_zero_average_length_is_not_normalised():
    # avg 0 (no card has this field): the length ratio counts as 1, so 3 / (0.25 + 0.75) = 3.0
    assert field_tf(3, 7, 0.0, 0.75) == approx(3.0)


def test_field_tf_with_b_zero_ignores_length():
    # 3 / (1 - 0 + 0 * 100/5) = 3 / 1 = 3.0, however long the field is
    assert field_tf(3, 100, 5.0, 0.0) == approx(3.0)
    assert field_tf(3, 1, 5.0, 0.0) == approx(3.0)


# ---------------------------------------------------------------------------- saturate

def test_saturate():
    # 1.8 / (1.2 + 1.8) = 1.8 / 3.0 = 0.6
    assert saturate(1.8, 1.2) == approx(0.6)
    # at w = k1 it is half way: 1.2 / 2.4 = 0.5
    assert saturate(1.2, 1.2) == approx(0.5)


def test_saturate_of_zero_is_zero():
    assert saturate(0.0, 1.2) == 0.0


def test_saturate_approaches_but_never_reaches_one():
    # 1000 / 1001.2 = 0.99880...
    assert saturate(1000.0, 1.2) == approx(0.9988014383)
    assert saturate(1000.0, 1.2) < 1.0


# ---------------------------------------------------------------------------- bm25f_term

def test_a_term_in_title_and_body():
    # title: tf 1, len 4, avg 4, b 0.5 -> 1 / (0.5 + 0.5 * 4/4) = 1.0; x weight 3.0 = 3.0
    # body:  tf 1, len 20, avg 10, b 0.75 -> 1 / (0.25 + 0.75 * 2) = 1 / 1.75 = 0.5714286; x 1.0
    # W = 3.5714286 = 25/7; score = idf * (k1 + 1) * W / (k1 + W)
    #   = 2.0 * 2.2 * (25/7) / (1.2 + 25/7) = 4.4 * 25 / 33.4 = 110 / 33.4 = 3.2934132
    parts: dict[str, float] = {}
    score = bm25f_term([1, 0, 0, 0, 1], [4, 0, 0, 0, 20], (4.0, 1.0, 2.0, 3.0, 10.0), 2.0, parts)
    assert score == approx(3.2934131737)
    assert parts == {"title": approx(3.0), "body": approx(0.5714285714)}


def test_fields_are_summed_before_one_saturation():
    # BM25F, not a sum of per-field BM25 scores. With average lengths and idf 1:
    # title once:     W = 3.0 * 1 = 3.0 -> 2.2 * 3 / 4.2 = 1.5714286
    # meta 3 times:   W = 1.0 * 3 = 3.0 -> 2.2 * 3 / 4.2 = 1.5714286 (b = 0: length is ignored)
    # both together:  W = 6.0       -> 2.2 * 6 / 7.2 = 1.8333333, not 1.5714286 * 2 = 3.1428571
    title_once = bm25f_term([1, 0, 0, 0, 0], [1, 1, 1, 1, 1], FLAT, 1.0)
    meta_thrice = bm25f_term([0, 0, 0, 3, 0], [1, 1, 1, 1, 1], FLAT, 1.0)
    both = bm25f_term([1, 0, 0, 3, 0], [1, 1, 1, 1, 1], FLAT, 1.0)
    assert title_once == approx(1.5714285714)
    assert meta_thrice == approx(1.5714285714)
    assert both == approx(1.8333333333)


def test_every_field_with_its_weight():
    # tf 1 at average length in every field: each field_tf is 1.0, so
    # W = 3.0 + 2.5 + 2.0 + 1.0 + 1.0 = 9.5; score = 1.0 * 2.2 * 9.5 / (1.2 + 9.5) = 20.9 / 10.7 = 1.9532710
    parts: dict[str, float] = {}
    score = bm25f_term([1, 1, 1, 1, 1], [1, 1, 1, 1, 1], FLAT, 1.0, parts)
    assert score == approx(1.9532710280)
    assert parts == {"title": approx(3.0), "aliases": approx(2.5), "tags": approx(2.0),
                     "meta": approx(1.0), "body": approx(1.0)}


def test_parts_receive_each_fields_weighted_tf():
    # tags: tf 2, len 3, avg 2, b 0.3 -> 2 / (0.7 + 0.3 * 3/2) = 2 / 1.15 = 1.7391304; x 2.0 = 3.4782609
    # aliases: tf 1, len 8, avg 4, b 0.5 -> 1 / (0.5 + 0.5 * 2) = 1 / 1.5 = 0.6666667; x 2.5 = 1.6666667
    # W = 5.1449275; score (idf 0.5) = 0.5 * 2.2 * 5.1449275 / 6.3449275 = 0.8919598
    parts: dict[str, float] = {}
    score = bm25f_term([0, 1, 2, 0, 0], [5, 8, 3, 2, 40], (5.0, 4.0, 2.0, 2.0, 40.0), 0.5, parts)
    assert parts == {"aliases": approx(1.6666666667), "tags": approx(3.4782608696)}
    assert score == approx(0.8919598)


def test_a_term_in_no_field_scores_zero_and_explains_nothing():
    parts: dict[str, float] = {}
    assert bm25f_term([0, 0, 0, 0, 0], [4, 0, 1, 2, 30], (4.0, 1.0, 2.0, 3.0, 10.0), 2.0, parts) == 0.0
    assert parts == {}


def test_score_scales_with_idf():
    # Same W = 3.0 (title once at average length): idf 1 -> 1.5714286, idf 2 -> 3.1428571
    assert bm25f_term([1, 0, 0, 0, 0], [1, 1, 1, 1, 1], FLAT, 2.0) == approx(3.1428571429)


# ---------------------------------------------------------------------------- ranking through the CLI

def create(title: str, tags: str, body: str, type_: str = "troubleshooting", domain: str = "infra") -> str:
    return ok_data("create", "--type", type_, "--domain", domain, "--title", title,
                   "--tags", tags, "--body", body)["path"]


def hits(query: str) -> list[tuple[str, float]]:
    return [(hit["path"], hit["score"]) for hit in ok_data("search", query)["hits"]]


def record(path: str, outcome: str) -> None:
    code, _, err = run_cli("record", path, outcome)
    assert code == 0, err


def test_a_title_match_outranks_a_body_only_match():
    title = create("Kafka consumer lag", "streaming", "Scale the consumer group.")
    body = create("Broker disk full", "storage", "Old kafka segments filled the disk.")
    create("Rotate TLS certificates", "tls", "Renew with certbot.", "runbook", "ops")
    (first, first_score), (second, second_score) = hits("kafka")
    assert (first, second) == (title, body)
    assert first_score > second_score > 0

    # Confidence does not lift the weaker match: the body-only card well above, the title card below.
    for _ in range(3):
        record(body, "used")      # 0.5 -> 0.55 -> 0.595 -> 0.6355
    record(title, "rejected")     # 0.5 -> 0.45
    assert [path for path, _ in hits("kafka")] == [title, body]


def test_confidence_breaks_a_tie_between_equal_scores():
    body = "Put pgbouncer in front of postgres."
    alpha = create("Alpha pooling notes", "postgres", body, "pattern", "dev")
    beta = create("Beta pooling notes", "postgres", body, "pattern", "dev")
    create("Rotate TLS certificates", "tls", "Renew with certbot.", "runbook", "ops")
    before = hits("pgbouncer")
    assert [path for path, _ in before] == [alpha, beta]  # equal everything: path order
    assert before[0][1] == before[1][1] > 0

    record(beta, "used")  # 0.5 -> 0.55
    after = hits("pgbouncer")
    assert [path for path, _ in after] == [beta, alpha]
    assert after[0][1] == after[1][1] == before[0][1]  # the score itself did not move
