"""Subjects and kinds that generalize (eighth pass, decision 0032): a later statement that names
the same thing by a shorter or reworded noun phrase is one subject, unless the words it lacks
distinguish (an owner, an environment, a platform, a role, a side, a named instance); values
(numbers, units, versions, named products) are masked so two frames compare; event verbs end
the state they change; "<measure> is <value>" and Japanese <X>が<adjective> / 〜にいる are states."""

from __future__ import annotations

from datetime import datetime

import pytest

from external_brain.intake.statements import extract
from external_brain.judging.subjects import same_subject

MOMENT = datetime.fromisoformat("2026-11-20T21:00:00+09:00")


def _keys(old: str, new: str) -> tuple[str, str]:
    (first,), (second,) = extract(old, MOMENT), extract(new, MOMENT)
    return first.subject, second.subject


@pytest.mark.parametrize("old, new", [
    ("Our home internet plan is 300 Mbps", "We upgraded the internet plan to 1 Gbps"),
    ("the web app's bundle is 1.8 MB", "bundle is down to 900 KB after code splitting"),
    ("replication lag on the replica is 40 seconds", "replica lag is back under a second"),
    ("The kitchen faucet is leaking", "The faucet doesn't leak anymore"),
    ("main ブランチの CI が赤い", "main の CI は緑に戻った"),
])
def test_a_shorter_or_reworded_noun_phrase_names_the_same_thing(old, new):
    a, b = _keys(old, new)
    assert same_subject(a, b), (a, b)


@pytest.mark.parametrize("old, new", [
    ("The API timeout is 30 seconds", "The production API timeout is 60 seconds"),
    ("The app is at version 4.2", "The iOS app is at version 4.3"),
    ("The timeout is 30 seconds", "The client timeout is 15 seconds"),
    ("Lag is 40 seconds", "Replica lag is 2 seconds"),
    ("My weight is 80 kg", "My daughter's weight is 20 kg"),
    ("orders-db is on PostgreSQL 13", "billing-db is still on PostgreSQL 13"),
    ("lighthouse score on mobile is 54", "desktop lighthouse score is 91"),
    ("APIサーバーは停止中", "本番のAPIサーバーは稼働中"),
    ("エアコンが壊れている", "母のエアコンが壊れている"),
    ("The laptop has 16GB of RAM", "The work laptop has 32GB of RAM"),
    ("orders-db is on PostgreSQL 13", "finished the billing-db upgrade, it's on PostgreSQL 15 now"),
    ("The iOS app supports iOS 15 and later", "The Android app supports Android 10 and later"),
    ("The marketing site is hosted on Netlify", "The admin dashboard is hosted on Vercel"),
    ("妻は在宅勤務をしている", "母はもう在宅勤務ではなく、週3日出社している"),
])
def test_a_modifier_that_distinguishes_keeps_subjects_apart(old, new):
    a, b = _keys(old, new)
    assert not same_subject(a, b), (a, b)


def test_which_modifiers_distinguish_is_one_function_in_both_languages():
    from external_brain.judging.subjects import distinguishing

    for word in ("staging", "production", "ios", "android", "mobile", "desktop", "primary", "replica", "client",
                 "server", "orders-db", "sister", "she", "本番", "ステージング", "娘", "田中さん", "レプリカ"):
        assert distinguishing(word), word
    for word in ("kitchen", "home", "we", "user", "renewed", "internet", "main", "ブランチ", "メイン"):
        assert not distinguishing(word), word


@pytest.mark.parametrize("old, new", [
    ("会社のノートPCは MacBook Air", "会社のノートPCが MacBook Pro になった"),
    ("we're on React 17", "bumped us to React 18 over the weekend"),
    ("メインのブラウザは Chrome です", "メインのブラウザを Chrome から Firefox に変えた"),
    ("The nightly CI run takes 40 minutes", "The nightly CI run is down to 25 minutes"),
    ("orders-db is on PostgreSQL 13", "finished the orders-db upgrade, it's on PostgreSQL 15 now"),
    ("The iOS app supports iOS 15 and later", "The iOS app now requires iOS 16 or later"),
    ("My passport expires in March 2027", "My renewed passport is valid until 2036"),
    ("The marketing site is hosted on Netlify", "The marketing site moved to Cloudflare Pages"),
    ("妻は在宅勤務をしている", "妻はもう在宅勤務ではなく、週3日出社している"),
])
def test_a_value_masked_or_one_frame_told_two_ways_is_one_subject(old, new):
    a, b = _keys(old, new)
    assert a and same_subject(a, b), (a, b)


@pytest.mark.parametrize("old, new", [
    ("リビングのエアコンが壊れている", "リビングのエアコンを新しいものに買い替えた"),
    ("今週は大阪に出張中", "出張から帰ってきた"),
    ("I'm staying at my parents' place this week", "Back home from my parents' place"),
    ("目がかゆい", "目のかゆみはもうない"),
])
def test_an_event_verb_ends_the_state_it_changes(old, new):
    (first,), (second,) = extract(old, MOMENT), extract(new, MOMENT)
    assert second.kind == "state", second
    assert same_subject(first.subject, second.subject), (first.subject, second.subject)


@pytest.mark.parametrize("text", [
    "replication lag on the replica is 40 seconds",
    "lighthouse score on mobile is 54",
    "Crash-free sessions on Android are 98.7%",
    "The queue depth is 1200 messages",
    "main ブランチの CI が赤い",
    "同僚はまだ大阪にいる",
    "部屋が暑い",
])
def test_a_measure_at_a_value_or_a_japanese_condition_is_a_state(text):
    (statement,) = extract(text, MOMENT)
    assert statement.kind == "state", statement


@pytest.mark.parametrize("text", [
    "The API rate limit is 100 requests per minute",
    "The maximum upload size is 25 MB",
    "Python 3.11 ships tomllib",
    "The free tier is 5 GB",
    "窓がない",
])
def test_a_limit_or_a_timeless_thing_stays_a_fact(text):
    (statement,) = extract(text, MOMENT)
    assert statement.kind == "fact", statement
