"""A pair alike enough to be a duplicate where one side negates or contrasts the other's claim is
a contradiction, not a duplicate (eighth pass, decision 0032): in one language ("Not X" against
X, 〜ない方がいい against 〜と楽になる), across two (オフ against "Enable", the names found in the
other card), and when the new card reads like a fix (its closeness is not lost)."""

from __future__ import annotations

from external_brain.judging.claims import title_conflict
from external_brain.judging.judgements import CardText, about_another_system, card_similarity, judge

FLAKY_STATE = CardText(
    "Most Flaky Tests Come from Shared State, Not Timing",
    "# Most Flaky Tests Come from Shared State, Not Timing\n\nOf the 23 flaky tests we fixed this year, 17 failed "
    "because of state shared between tests (a module-level cache, an env variable, a leftover file) and only 6 "
    "because of timing. Look for shared state first.\n", ["flaky-tests", "pytest"], "insight")
FLAKY_TIMING = CardText(
    "Most of Our Flaky Tests Are Timing Problems, Not Shared State",
    "Counting the flaky tests we fixed this year again, most of them were timing: waits on async work, clocks, "
    "timeouts on slow CI runners. Shared state between tests explained only a handful. Look at timing first.\n",
    ["flaky-tests", "pytest"], "insight")


def test_a_swapped_contrast_is_a_contradiction_even_when_the_new_card_reads_like_a_fix():
    candidates = [({"path": "flaky.md"}, FLAKY_STATE, None)]
    out = judge(FLAKY_TIMING, candidates, last_feedback=lambda entry: None)
    assert [item["path"] for item in out["contradictions"]] == ["flaky.md"], out
    assert out["potential_duplicates"] == [], out


def test_a_rewording_without_a_denial_stays_a_duplicate():
    reworded = CardText("Flaky Tests Are Usually Caused by Shared State Between Tests, Rarely by Timing",
                        "Looking back at this year's flaky tests, most broke because tests shared state (module "
                        "caches, environment variables, files left behind); a minority were timing problems. Check "
                        "for shared state first.\n", ["flaky-tests", "testing"], "insight")
    out = judge(reworded, [({"path": "flaky.md"}, FLAKY_STATE, None)], last_feedback=lambda entry: None)
    assert [item["path"] for item in out["potential_duplicates"]] == ["flaky.md"], out
    assert out["contradictions"] == [], out


def test_better_not_to_denies_what_the_other_card_recommends():
    versioned = CardText("キャッシュの無効化はキーにバージョンを含めると楽になる",
                         "キャッシュのキーに `v3:` のようなバージョンを付けておくと、データ形式を変えたときにバージョンを上げるだけで"
                         "古いキャッシュをまとめて無効にできる。", ["cache", "redis"], "insight")
    unversioned = CardText("キャッシュのキーにバージョンは入れない方がいい",
                           "キーにバージョンを付けると、上げるたびに古いバージョンのキーが TTL 切れまで Redis のメモリに残り続ける。",
                           ["cache", "redis"], "insight")
    reason = title_conflict(unversioned, versioned)
    assert reason and "denies" in reason, reason


def test_opposite_switches_across_languages_meet_on_names_the_other_card_holds():
    enable = CardText("Enable Compression on the CloudFront Distribution",
                      "## Decision\nTurn on automatic compression (gzip and Brotli) in the cache policy of the web "
                      "distribution.\n", ["cloudfront", "compression", "cdn"], "decision")
    off = CardText("Web 配信の CloudFront では自動圧縮をオフにする",
                   "## 決定\nWeb 用ディストリビューションのキャッシュポリシーで、gzip と Brotli の自動圧縮を無効にする。",
                   ["cloudfront", "compression", "cdn"], "decision")
    reason = title_conflict(off, enable, across=True)
    assert reason and "switch" in reason, reason


def test_a_system_named_before_a_japanese_particle_is_whose_thing_it_is():
    rds = CardText("RDS への接続がタイムアウトする（セキュリティグループ）",
                   "## 原因\nRDS のセキュリティグループのインバウンドに、アプリの SG からの 5432 番ポートの許可がない。",
                   ["rds", "timeout"], "troubleshooting")
    cache = CardText("ElastiCache への接続がタイムアウトする（セキュリティグループ）",
                     "## 原因\nElastiCache のセキュリティグループのインバウンドに、アプリの SG からの 6379 番ポートの許可がない。\n"
                     "## 対処\nElastiCache の SG にアプリの SG をソースとするインバウンドルールを追加する。",
                     ["elasticache", "timeout"], "troubleshooting")
    assert about_another_system(cache, rds) == "ElastiCache"
    assert card_similarity(cache, rds) > 0.3
