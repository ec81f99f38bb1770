"""`judgements.judge_more`: judging the cards that joined a create's candidates while it waited
for the write lock, on from where judging the others ended, gives what judging them all gives;
`judgements.judge_again` (all judged again, the verdicts whose inputs did not change kept) too."""

from __future__ import annotations

import random
import sys
from pathlib import Path

from external_brain.judging.judgements import CardText, card_similarity, judge, judge_again, judge_more

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "judgement"))
from insight_cases import BASE, PROBES  # noqa: E402


def card(spec: dict) -> CardText:
    tags = [t.strip() for t in spec.get("tags", "").split(",") if t.strip()]
    return CardText(spec["title"], spec["body"], tags, spec.get("type", ""), spec.get("memory_type", ""),
                    spec.get("status", ""))


def last_feedback(entry: dict) -> str | None:
    # Every third base card was rejected the last time: success-after-failure judgements need it.
    return "rejected" if sum(map(ord, entry["path"])) % 3 == 0 else None


def test_judging_the_cards_that_came_later_on_from_the_others_gives_what_judging_them_all_gives() -> None:
    base = [({"path": f"Playbooks/{spec['key']}.md", "id": spec["key"], "title": spec["title"]}, card(spec), None)
            for spec in BASE]
    rng = random.Random(22)
    resumed = fell_back = 0
    found: set[str] = set()
    for probe in PROBES[::8]:
        new = card(probe["card"])
        ranked = sorted(base, key=lambda c: -card_similarity(new, c[1]))[:12]
        # The candidates in the order a search gives them, and in other orders (a card written
        # meanwhile can be any of them, the closest included).
        for order in (ranked, rng.sample(ranked, len(ranked))):
            whole = judge(new, order, last_feedback=last_feedback)
            found.update(key for key, value in whole.items() if value)
            for cut in range(len(order) + 1):
                kept: list = []
                first = judge(new, order[:cut], last_feedback=last_feedback, keep=kept)
                assert first == judge(new, order[:cut], last_feedback=last_feedback)   # keeping changes nothing
                got = judge_more(kept[0], order[cut:], last_feedback=last_feedback)
                assert judge_again(kept[0], order[cut:], last_feedback=last_feedback) == whole, (probe["key"], cut)
                if got is None:
                    fell_back += 1   # the later cards change which are the closest few: judge all
                    continue
                resumed += 1
                assert got == whole, (probe["key"], cut)
    # Both ways were taken, and the insights compared hold every kind.
    assert resumed > 300 and fell_back > 100, (resumed, fell_back)
    assert found >= {"suggested_links", "potential_duplicates", "contradictions", "success_after_failure"}, found


def test_judging_more_leaves_the_state_it_went_on_from_as_it_was() -> None:
    specs = [spec for spec in BASE if "timeout" in spec["title"].lower()]
    candidates = [({"path": f"Playbooks/{s['key']}.md", "id": s["key"], "title": s["title"]}, card(s), None)
                  for s in specs]
    assert len(candidates) >= 3
    new = CardText("Set the Payments API Client Timeout to 45 Seconds",
                   "The payments client times out after 45 seconds.\n", ["payments", "timeout"], "decision")
    kept: list = []
    first = judge(new, candidates[:1], keep=kept)
    state = kept[0]
    saved = ({key: list(value) for key, value in state.out.items()}, list(state.links), list(state.judged))
    assert judge_more(state, candidates[1:]) == judge(new, candidates)
    assert (state.out, state.links, state.judged) == saved
    assert judge_more(state, []) == first


def test_a_later_card_closer_than_the_closest_few_makes_it_judge_them_all_again() -> None:
    # Judged alone with four others, the 30 s card is among the five closest and contradicts the
    # new card; a sixth card, closer than all, pushes it out of the five checked for contradictions.
    shared = ("Checkout calls the payments provider through payments-sdk from the web tier. Retries use "
              "exponential backoff with jitter and an idempotency key per request. Alerts page the on-call "
              "engineer when errors exceed one percent.")
    new = CardText("Set the Payments API Client Timeout to 45 Seconds",
                   f"The payments API client times out requests after 45 seconds.\n\n{shared}\n", ["payments", "timeout"],
                   "decision")
    old = CardText("Set the Payments API Client Timeout to 30 Seconds",
                   "The payments API client times out requests after 30 seconds.\n", ["payments", "timeout"], "decision")
    notes = [CardText(f"Payments checkout note {i}", f"{shared}\n\nNote {i}: {what}.\n", ["payments"], "insight")
             for i, what in enumerate(["dashboards live in Grafana", "the runbook is in the wiki",
                                       "owners are the payments team", "deploys happen on Tuesdays",
                                       "logs go to CloudWatch"])]

    def entry(text: CardText, number: int):
        return {"path": f"Playbooks/c{number}.md", "id": str(number), "title": text.title}, text, None

    first = [entry(old, 0), *(entry(note, n + 1) for n, note in enumerate(notes[:4]))]
    later = [entry(notes[4], 9)]
    kept: list = []
    assert judge(new, first, keep=kept)["contradictions"]
    whole = judge(new, first + later)
    assert not whole["contradictions"]
    assert judge(new, later, resume=kept[0]) != whole   # going on regardless would keep the contradiction
    assert judge_more(kept[0], later) is None
    assert judge_again(kept[0], later) == whole   # the card pushed out of the five loses its contradiction


def test_judging_again_reads_a_cards_feedback_again_and_judges_it_anew_when_it_changed() -> None:
    # Before the lock the failure card had no feedback: the fix was a link. A rejection recorded
    # since makes it a recorded failure, and the fix a success after it, as judging all gives.
    new = CardText("Fixed: Celery Workers Lose Tasks on Redis Restart",
                   "Fixed by enabling acks_late and visibility_timeout; the workers no longer lose tasks when "
                   "Redis restarts.\n", ["celery", "redis"], "troubleshooting")
    old = CardText("Celery Workers Lose Tasks on Redis Restart",
                   "The workers lose queued tasks when Redis restarts; acks_late and visibility_timeout are "
                   "unset.\n", ["celery", "redis"], "troubleshooting")
    other = CardText("Redis Restart Runbook", "Restart Redis with the runbook's steps; the workers reconnect.\n",
                     ["redis"], "runbook")
    first = [({"path": "Playbooks/old.md", "id": "1", "title": old.title}, old, None)]
    later = [({"path": "Playbooks/other.md", "id": "2", "title": other.title}, other, None)]
    feedback = {"Playbooks/old.md": None}

    def last_feedback(entry: dict) -> str | None:
        return feedback.get(entry["path"])

    kept: list = []
    before = judge(new, first, last_feedback=last_feedback, keep=kept)
    assert not before["success_after_failure"]
    feedback["Playbooks/old.md"] = "rejected"
    whole = judge(new, first + later, last_feedback=last_feedback)
    assert [item["path"] for item in whole["success_after_failure"]] == ["Playbooks/old.md"]
    assert judge_again(kept[0], later, last_feedback=last_feedback) == whole
