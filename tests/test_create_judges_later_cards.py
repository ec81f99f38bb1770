"""A create judges its candidates before the write lock; a card another writer makes while it
waits for the lock joins them under it (`cards.still_related`). Only the cards that joined are
judged then (`judgements.judge_more`), on from where judging the others ended, and the create's
insights are what judging them all under the lock gives.

Each test runs the real `create` in a process of its own while the test holds the vault's write
lock (through `writing`, as any writer), and makes a card in that lock with the library's own
plan and commit, so the card is written between the create's judging and its lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from helpers import ROOT, ok_data
from test_create_subject_reuse import blocked_on_a_lock

CREATE = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'runtime')!r})
from external_brain import cards
from external_brain.judging import judgements
from external_brain.doors.cli import main
resumed = []
if sys.argv[1] == "judge-all":
    cards._insights_after = lambda *args, **kwargs: None   # the reference: judge every card under the lock
more = judgements.judge_more
def counted(*args, **kwargs):
    got = more(*args, **kwargs)
    resumed.append(got is not None)
    return got
judgements.judge_more = counted
code = main(["create", "--type", "decision", "--domain", "dev", "--tags", "payments,timeout", "--title",
             "Set the Payments API Client Timeout to 45 Seconds", "--body",
             "The payments API client (payments-sdk) times out requests after 45 seconds.", "--json"])
print(json.dumps({{"resumed": resumed}}), file=sys.stderr)
sys.exit(code)
"""


def create_with_a_card_made_between(vault: Path, mode: str, title: str, body: str) -> tuple[dict, list[bool]]:
    """Run the create; once it has judged and waits for the write lock, make the card `title` in
    that lock, then let it go. The create's insights (ids left out), and whether `judge_more`
    answered each time it was asked."""
    from external_brain.cards import check_new_card, plan_card
    from external_brain.search.analysis import card_fields
    from external_brain.search.index import Index
    from external_brain.vault.journal import writing
    from external_brain.vault.storage import Vault
    from external_brain.writes import commit_operation

    with writing(Vault(vault)) as writer:
        process = subprocess.Popen([sys.executable, "-c", CREATE, mode], env={**os.environ, "BRAIN_ACTOR": "test"},
                                   cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not blocked_on_a_lock(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, "the create never waited for the lock"
            time.sleep(0.005)
        own = Vault(vault)
        index = Index.open(own, card_fields, sweep=None)
        try:
            draft = check_new_card(own, card_type="decision", domain="dev", title=title, body=body,
                                   tags="payments,timeout")
            plan = plan_card(own, index, draft, report=False)
            commit_operation(writer, plan.effects, plan.events, index=index)
        finally:
            index.close()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    insights = json.loads(out)["data"]["insights"]
    for items in insights.values():
        for item in items:
            item.pop("id", None)
    return insights, json.loads(err.strip().splitlines()[-1])["resumed"]


def test_a_card_made_while_the_create_waited_is_judged_on_from_the_others(vault: Path, tmp_path: Path) -> None:
    ok_data("create", "--type", "decision", "--domain", "dev", "--tags", "payments,timeout", "--title",
            "Retry Payments API Calls Three Times", "--body", "The payments API client retries a failed request "
            "three times with backoff.")
    ok_data("search", "payments")
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(vault), str(copy)], check=True)
    made = ("Set the Payments API Client Timeout to 30 Seconds",
            "The payments API client (payments-sdk) times out requests after 30 seconds.")
    insights, resumed = create_with_a_card_made_between(vault, "resume", *made)
    # The card made meanwhile is judged, and contradicts the new one.
    assert [c["title"] for c in insights["contradictions"]] == [made[0]], insights
    assert resumed == [True]   # judged on from the cards judged before the lock
    os.environ["BRAIN_VAULT"], before = str(copy), os.environ["BRAIN_VAULT"]
    try:
        reference, asked = create_with_a_card_made_between(copy, "judge-all", *made)
    finally:
        os.environ["BRAIN_VAULT"] = before
    assert asked == []
    assert insights == reference


def test_a_card_made_meanwhile_that_is_closer_than_the_closest_few_makes_it_judge_them_all(
        vault: Path, tmp_path: Path) -> None:
    shared = ("Checkout calls the payments provider through payments-sdk from the web tier. Retries use exponential "
              "backoff with jitter and an idempotency key per request.")
    for number, what in enumerate(["dashboards live in Grafana", "the runbook is in the wiki",
                                   "owners are the payments team", "deploys happen on Tuesdays", "logs go to CloudWatch"]):
        ok_data("create", "--type", "insight", "--domain", "dev", "--tags", "payments,timeout", "--title",
                f"Payments API client note {number}", "--body", f"{shared}\n\nNote {number}: {what}.")
    ok_data("search", "payments")
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(vault), str(copy)], check=True)
    # Nearer to the new card than every candidate judged before the lock: the closest few change.
    made = ("Set the Payments API Client Timeout to 45 Seconds in Checkout",
            "The payments API client (payments-sdk) times out requests after 45 seconds.")
    insights, resumed = create_with_a_card_made_between(vault, "resume", *made)
    assert resumed == [False]   # asked, and judged them all again
    os.environ["BRAIN_VAULT"], before = str(copy), os.environ["BRAIN_VAULT"]
    try:
        reference, _ = create_with_a_card_made_between(copy, "judge-all", *made)
    finally:
        os.environ["BRAIN_VAULT"] = before
    assert insights == reference
    assert made[0] in [c["title"] for c in insights["potential_duplicates"] + insights["suggested_links"]], insights
