"""One thing, one kind of value (ninth pass, decision 0032): a fact or state whose subject key
differs from an earlier one's still replaces it when both name one thing (the noun phrase, as
`_one_thing_named_twice` matches it, a kind noun such as "service" or "job" aside) and give a value
of one kind (a version of a named product, a quantity of one dimension, a frequency, a date, a
person, a condition that the later one changes or ends). Two kinds of value about one thing, or one
kind about two things, stay apart. Judged through the real `create` and `ingest` commands."""

from __future__ import annotations

from datetime import datetime

import pytest

import json

from helpers import card_meta, ok_data, run_cli

MOMENT = datetime.fromisoformat("2026-11-20T21:00:00+09:00")


def _status_after(vault, old: str, new: str, old_kind: str = "fact", new_kind: str = "fact") -> str:
    """The first card's status after a second is created (same domain and tags, as one person files them)."""
    first = ok_data("create", "--type", old_kind, "--domain", "dev", "--tags", "x", "--title", old, "--body", old)
    ok_data("create", "--type", new_kind, "--domain", "dev", "--tags", "x", "--title", new, "--body", new)
    return card_meta(vault / first["path"]).get("status") or "active"


@pytest.mark.parametrize("old, new", [
    ("The search-api service runs on Node 18", "search-api is on Node 20 now"),                  # a version of a product
    ("Our dog Biscuit weighs 14 kg", "Biscuit is down to 12.5 kg"),                              # a mass
    ("The team's shared drive has 2 TB of storage", "We bumped the shared drive to 5 TB"),       # an amount of data
    ("sideproject pins Django 4.2", "bumped the side project to Django 5.1"),                    # one name, two spellings
    ("英会話教室に週2回通っている", "英会話教室は週1回に減らした"),                                   # a frequency
    ("陽太の担任は鈴木先生", "陽太の担任は高橋先生に変わった"),                                       # a person in a role
    ("AWS の月額はだいたい 42万円", "AWS の月額は 35万円まで下がった"),                              # money
])
def test_one_thing_and_a_value_of_one_kind_is_one_subject(vault, old, new):
    assert _status_after(vault, old, new) == "superseded"


@pytest.mark.parametrize("old, new", [
    ("The nightly export job is paused", "The export is running again"),
    ("The garage door opener is broken", "The garage door opens fine again"),
    ("夜中に猫が鳴いて起こされる", "猫はもう夜中に鳴かない"),
    ("毎朝プロテインを飲んでいる", "プロテインを飲むのをやめた"),
])
def test_a_condition_changed_or_ended_replaces_the_condition_of_the_same_thing(vault, old, new):
    assert _status_after(vault, old, new, "state", "state") == "superseded"


@pytest.mark.parametrize("old, new", [
    ("The search-api service runs on Node 18", "The search-api service returns 502s"),     # two kinds of value
    ("Our dog weighs 14 kg", "Our dog eats 200 g a day"),                                  # a mass, a mass a day
    ("The server has 32 GB of RAM", "The server has 500 GB of disk"),                      # two things counted
    ("The build takes 10 minutes", "The build runs every 30 minutes"),                     # how long, how often
    ("The database is 50 GB", "The database backup is 10 GB"),                             # another head noun
    ("The car needs new tyres", "The car is at the garage"),                               # no kind of value
    ("The dev cluster has 3 TB of disk", "The prod cluster has 12 TB of disk"),            # another environment
    ("スマホのプランは月20GBです", "自宅の光回線のプランは月10GBに変わった"),                       # another thing's plan
    ("結衣の担任は中村先生", "陽太の担任は高橋先生に変わった"),                                     # another child's
])
def test_another_kind_of_value_or_another_thing_stays_apart(vault, old, new):
    assert _status_after(vault, old, new) == "active"


@pytest.mark.parametrize("old, new", [
    ("The email queue is backed up", "The email queue is paused"),                          # two condition groups
    ("夜中に猫が鳴いて起こされる", "猫はもう夜中に走り回らない"),                                    # another doing ends
    ("The payment reconciliation job is paused", "The marketing email campaign is running again"),
    ("洗濯機が壊れている", "ドライヤーはもう直った"),
])
def test_a_condition_of_another_group_or_another_thing_stays(vault, old, new):
    assert _status_after(vault, old, new, "state", "state") == "active"


def test_ingest_replaces_by_one_thing_and_one_kind_of_value_as_create_does(vault):
    code, out, _ = run_cli("ingest", "-", "--event-time", "2026-11-01T10:00:00+09:00", "--json",
                           stdin="The search-api service runs on Node 18. The cat weighs 5 kg.")
    assert code == 0
    made = {item["statement"]: item["id"] for item in json.loads(out)["data"]["items"]}
    code, out, _ = run_cli("ingest", "-", "--event-time", "2026-11-20T10:00:00+09:00", "--json",
                           stdin="search-api is on Node 20 now. Our dog weighs 14 kg.")
    assert code == 0
    statuses = {}
    for path in (vault / "Playbooks").glob("*.md"):
        meta = card_meta(path)
        statuses[meta.get("id")] = (meta.get("status"), str(meta.get("valid_to") or "")[:10])
    assert statuses[made["The search-api service runs on Node 18"]] == ("superseded", "2026-11-20")
    assert statuses[made["The cat weighs 5 kg"]][0] in (None, "active")   # another animal's weight


def test_a_japanese_value_changed_to_another_is_a_state():
    from external_brain.intake.statements import extract

    for text in ("陽太の担任が産休に入って、高橋先生に変わった", "引っ越しが12月27日に変わった", "スマホのプランが月50GBに変わった"):
        (statement,) = extract(text, MOMENT)
        assert statement.kind == "state", (text, statement.kind, statement.why)
