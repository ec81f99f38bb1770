#!/usr/bin/env python3
"""Simulated agents using a real vault over simulated months (seed 003's `sim_driver`).

    python3 tests/simulation/sim_driver.py                       # both scenarios, 240 days: ~2-4 min
    python3 tests/simulation/sim_driver.py --days 60 --sessions 4 --out /tmp/sim   # a short run
    python3 tests/simulation/sim_analysis.py                     # the report from what this wrote

Each scenario (`sim_scenarios.py`) gets a fresh vault (in /dev/shm when there is one: this is a
simulation of use, not a test of durability). The clock is the product's own seam, `$BRAIN_NOW`
(`storage.now`), moved forward through each simulated day; nothing of the product is patched.
Agents call the library the doors call (`recall`, `get_card`, `record`, `inbox.learn`,
`inbox.auto_promote`, `create_card`): each session picks a topic, searches, picks one of the top
hits (more often the more confident one), reads it (`referenced`) and records `used` or `rejected`
drawn from the card's hidden true usefulness on that day; the rejecting agent always rejects. A
search that finds nothing is a search miss (an Inbox candidate, by the product) and, half the
time, the agent learns the topic's lesson into the Inbox; `promote --auto` runs weekly. Every day
each card's effective confidence (decay included, as `list` shows it) is recorded, without
reading it through `get` (which would count as a reference and stop its decay).

Writes `<out>/<scenario>.json` for `sim_analysis.py`; prints one line per scenario.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "runtime"))
sys.path.insert(0, str(HERE))

from sim_scenarios import OFF_TOPIC, SCENARIOS, Scenario  # noqa: E402

START = datetime(2027, 1, 4, 9, 0, tzinfo=timezone(timedelta(hours=9)))
DEFAULT_OUT = ROOT / "docs" / "simulation" / "data"


def set_clock(day: int, minute: int = 0) -> None:
    from external_brain.vault.storage import CLOCK_ENV, iso

    os.environ[CLOCK_ENV] = iso(START + timedelta(days=day, minutes=minute))


def run(scenario: Scenario, workdir: Path) -> dict:
    from external_brain.cards import create_card, get_card, list_cards, record
    from external_brain.intake.inbox import auto_promote, learn
    from external_brain.answers.searching import search_cards
    from external_brain.search.keyword import Filters
    from external_brain.vault.storage import Vault, init_vault

    rng = random.Random(scenario.seed)
    root = workdir / scenario.name
    shutil.rmtree(root, ignore_errors=True)
    set_clock(0)
    init_vault(root)
    if scenario.decay_after_days is not None:
        (root / ".brain" / "config.toml").write_text(
            f"[confidence]\ndecay_after_days = {scenario.decay_after_days}\n", encoding="utf-8")
    vault = Vault(root)
    cards: dict[str, dict] = {}          # card id -> what the scenario knows of it
    usefulness: dict[str, float] = {}    # card id -> hidden usefulness now
    by_key: dict[str, str] = {}
    for spec in scenario.cards:
        made = create_card(vault, card_type=spec.card_type, domain=spec.domain, title=spec.title, body=spec.body,
                           tags=list(spec.tags))
        card_id = made.card.id
        by_key[spec.key] = card_id
        usefulness[card_id] = spec.usefulness
        cards[card_id] = {"key": spec.key, "topic": spec.topic, "kind": "seed", "created_day": 0,
                          "usefulness": [[0, spec.usefulness]], "used": 0, "rejected": 0, "rejected_by_rejecter": 0,
                          "applied": []}
    series: dict[str, list] = {}
    inbox_sizes, promoted, misses, learned = [], [], 0, 0
    duplicates_report = []
    lessons = {lesson.topic: lesson for lesson in scenario.lessons}
    changes = {day: (key, value) for day, key, value in scenario.changes}
    floods = {day: (key, copies) for day, key, copies in scenario.duplicates}
    sessions = 0
    for day in range(scenario.days):
        vault = Vault(root)   # as every command does: settings re-read, nothing kept
        set_clock(day)
        if day in changes:
            key, value = changes[day]
            usefulness[by_key[key]] = value
            cards[by_key[key]]["usefulness"].append([day, value])
        if day in floods:
            key, copies = floods[day]
            original = next(c for c in scenario.cards if c.key == key)
            for n in range(copies):
                made = create_card(vault, card_type=original.card_type, domain=original.domain,
                                   title=f"{original.title} (note {n + 1})",
                                   body=original.body + f"\nSeen again in service {n + 1}.\n", tags=list(original.tags))
                card_id = made.card.id
                usefulness[card_id] = original.usefulness
                cards[card_id] = {"key": f"{key}-dup{n + 1}", "topic": original.topic, "kind": "duplicate",
                                  "created_day": day, "usefulness": [[day, original.usefulness]], "used": 0,
                                  "rejected": 0, "rejected_by_rejecter": 0, "applied": []}
                duplicates_report.append({"day": day, "card": card_id,
                                          "potential_duplicates": len(made.insights.get("potential_duplicates", []))})
        active = [t for t in scenario.topics if t.active[0] <= day < t.active[1]]
        for session in range(scenario.sessions_per_day):
            sessions += 1
            set_clock(day, 10 + session * 50)
            topic = rng.choices(active, weights=[t.weight for t in active])[0]
            rejecter = rng.random() < scenario.rejecter_share
            agent = "rejecter" if rejecter else f"agent-{rng.randrange(5)}"
            found = search_cards(vault, topic.query, Filters(status="active"), limit=3)
            hits = [h for h in found.hits if h.card.id in usefulness]
            if not hits:
                misses += 1
                lesson = lessons.get(topic.name)
                if lesson is not None and rng.random() < 0.5:
                    learn(vault, title=lesson.title, card_type="troubleshooting", domain="infra",
                          tags=list(lesson.tags), problem=lesson.problem, solution=lesson.solution,
                          evidence=f"{agent} on day {day}", evidence_key=f"{day}:{session}")
                    learned += 1
                continue
            weights = [max(h.confidence, 0.05) ** 2 for h in hits]   # agents prefer the confident card
            hit = rng.choices(hits, weights=weights)[0]
            card_id = hit.card.id
            get_card(vault, card_id)                                 # read it: a reference
            # Its hidden usefulness for its own problem; a card found for another topic mostly does not fit.
            chance = usefulness[card_id] if cards[card_id]["topic"] == topic.name else OFF_TOPIC
            cards[card_id]["applied"].append([day, chance])
            helped = (not rejecter) and rng.random() < chance
            record(vault, card_id, "used" if helped else "rejected", f"{agent}, day {day}")
            cards[card_id]["used" if helped else "rejected"] += 1
            cards[card_id]["rejected_by_rejecter"] += int(rejecter)
        if day % scenario.promote_every == scenario.promote_every - 1:
            for assessment in auto_promote(vault):
                if not assessment.promoted_to:
                    continue
                lesson = next((l for l in scenario.lessons if l.title == assessment.title), None)
                if lesson is None:
                    continue
                view = next(v for v in list_cards(vault, Filters(status="any"), "title").cards
                            if v.card.title == lesson.title)
                usefulness[view.card.id] = lesson.usefulness
                cards[view.card.id] = {"key": f"lesson-{lesson.topic}", "topic": lesson.topic, "kind": "lesson",
                                       "created_day": day, "usefulness": [[day, lesson.usefulness]], "used": 0,
                                       "rejected": 0, "rejected_by_rejecter": 0, "applied": []}
                promoted.append({"day": day, "title": lesson.title, "id": view.card.id})
        set_clock(day, 23 * 60)
        views = list_cards(vault, Filters(status="any"), "title").cards
        for view in views:
            if view.card.id in cards:
                series.setdefault(view.card.id, [None] * scenario.days)[day] = round(view.confidence, 4)
        inbox_sizes.append(sum(1 for _ in (root / "Inbox").glob("*.md")))
    from external_brain.answers.insights import analyze

    health = analyze(Vault(root))
    issues = {issue["type"]: issue["count"] for issue in health.issues}
    return {"health": {"score": health.health_score, "issues": issues}, "stale_until": scenario.notes["stale_until"],
            "decay_after_days": scenario.decay_after_days or 90,
            "scenario": scenario.name, "days": scenario.days, "sessions_per_day": scenario.sessions_per_day,
            "sessions": sessions, "rejecter_share": scenario.rejecter_share, "seed": scenario.seed,
            "start": START.isoformat(), "cards": cards, "series": series, "inbox": inbox_sizes,
            "promoted": promoted, "misses": misses, "learned": learned, "duplicates": duplicates_report,
            "changes": [list(c) for c in scenario.changes], "floods": [list(f) for f in scenario.duplicates]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=240)
    parser.add_argument("--sessions", type=int, default=8, help="agent sessions per simulated day")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--decay-after-days", type=int, help="the vaults' [confidence] decay_after_days "
                                                            "(default: the product's, 90); the CI's short run shortens it")
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="default: all")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"where the JSON goes (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
    workdir = Path(tempfile.mkdtemp(prefix="brain-sim-", dir=base))
    saved = os.environ.get("BRAIN_NOW")
    try:
        for name in args.scenario or sorted(SCENARIOS):
            scenario = SCENARIOS[name](days=args.days, sessions_per_day=args.sessions, seed=args.seed,
                                       decay_after_days=args.decay_after_days)
            started = time.monotonic()
            with contextlib.redirect_stderr(io.StringIO()):   # the library's own warnings, not the report
                result = run(scenario, workdir)
            result["seconds"] = round(time.monotonic() - started, 1)
            (args.out / f"{name}.json").write_text(json.dumps(result, sort_keys=True, separators=(",", ":")) + "\n")
            print(f"{name}: {result['sessions']} sessions over {result['days']} days, {len(result['cards'])} cards, "
                  f"{len(result['promoted'])} promoted, {result['seconds']} s -> {args.out / (name + '.json')}")
    finally:
        if saved is None:
            os.environ.pop("BRAIN_NOW", None)
        else:
            os.environ["BRAIN_NOW"] = saved
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
