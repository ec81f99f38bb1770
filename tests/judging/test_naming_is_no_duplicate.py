"""`create`'s "potential duplicate" for a card that names, links or sits next to another card
(tests/bench/judgement/named_cases.py measures it): the words of a link or a quoted title name the
other card, they do not say what it says; a symptom shared with another cause is another lesson.
A rewording is still a duplicate, whatever it links."""

from __future__ import annotations

import json

import pytest

from helpers import run_cli

KAFKA_LAG = ("Kafka consumer lag", "Kafka consumer lag: the consumer falls behind the producer. Fix: add partitions.")


def create(title: str, body: str, *extra: str, tags: str = "kafka") -> dict:
    code, out, err = run_cli("create", "--type", "troubleshooting", "--domain", "infra", "--tags", tags,
                             "--title", title, "--body", body, "--json", *extra)
    assert code in (0, 3), err
    return json.loads(out)["data"]


@pytest.mark.parametrize("title, body", [
    ("Kafka producer timeouts", "See [[Kafka consumer lag]] for the fix; this one is about the producer side."),
    ("Kafka producer timeouts", 'See "Kafka consumer lag" for the fix; this one is about the producer side.'),
    ("Kafka producer timeouts", "「Kafka consumer lag」 for the fix; this one is about the producer side."),
])
def test_a_short_card_that_links_or_quotes_another_by_its_title_is_no_duplicate_of_it(title, body):
    old = create(*KAFKA_LAG)
    data = create(title, body)
    assert data["insights"]["potential_duplicates"] == []
    # What it gets instead: a link to the card it names.
    assert [(link["id"], link["rel"]) for link in data["insights"]["suggested_links"]] == [(old["id"], "related")]
    refused = create(title + " (again)", body, "--no-duplicates")
    assert refused["created"] is True


def test_a_rewording_that_also_links_cards_is_still_a_duplicate():
    old = create("Kafka Consumer Group Lag Grows: max.poll.records Too High",
                 "Consumer group lag grows for hours and the group keeps rebalancing: a poll returns 500 records at "
                 "about 1 s each, longer than max.poll.interval.ms (300 s). Lower max.poll.records to 50.")
    create("Postgres Connection Pool Exhausted", "Too many clients: put PgBouncer in front of Postgres.",
           tags="postgres")
    data = create("Kafka Consumers Keep Rebalancing and Lag Grows",
                  "Lag grows for hours and the consumer group keeps rebalancing: 500 records a poll at about 1 s "
                  "each is longer than max.poll.interval.ms (300 s). Lowering max.poll.records to 50 fixed it. Not "
                  "the database: see [[Postgres Connection Pool Exhausted]]. Same lesson as "
                  "[[Kafka Consumer Group Lag Grows: max.poll.records Too High]].")
    assert [(d["id"], d["reason"].split(" (")[0]) for d in data["insights"]["potential_duplicates"]] == [
        (old["id"], "the same content in other words")]


def test_the_same_error_from_another_cause_with_another_fix_is_no_duplicate():
    old = create("npm ci Fails: package.json and package-lock.json Are Not in Sync",
                 "## Symptoms\n`npm ci` fails on CI: `package.json and package-lock.json are not in sync`.\n\n"
                 "## Cause\nA dependency was added to package.json by hand; the lockfile was not updated.\n\n"
                 "## Fix\nRun npm install locally and commit the updated package-lock.json.", tags="npm,ci")
    data = create("npm ci Says package.json and package-lock.json Are Not in Sync on CI Only",
                  "## Symptoms\n`npm ci` fails on CI: `package.json and package-lock.json are not in sync`; "
                  "locally it passes.\n\n## Cause\nCI runs npm 6, which cannot read lockfileVersion 3.\n\n"
                  "## Fix\nUse the same Node.js version on CI as in .nvmrc.", tags="npm,ci")
    assert data["insights"]["potential_duplicates"] == []
    assert [link["id"] for link in data["insights"]["suggested_links"]] == [old["id"]]
