"""`list` and `audit` read the search index, not every card, and show exactly what reading every
card showed: the same lines, the same JSON, the same order, the same skipped files, with the
confidence decayed as of now by the same function (cards.IndexedCard, store.card_meta)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from helpers import ROOT, ok_data, run_cli, write_card
import external_brain.cards as cards_module
import external_brain.answers.health as health_module
from external_brain.search.store import card_meta
from external_brain.vault.storage import load_cards

MOMENT = datetime(2026, 11, 21, 12, 0, 0, tzinfo=timezone(timedelta(hours=9)))

LIST_ARGS = [
    ["list"], ["list", "--json"], ["list", "--sort", "confidence"], ["list", "--sort", "updated", "--json"],
    ["list", "--type", "fact"], ["list", "--domain", "infra", "--json"], ["list", "--project", "Shop"],
    ["list", "--status", "superseded"], ["list", "--status", "active", "--sort", "confidence"],
    ["list", "--valid-at", "2026-06-01"], ["list", "--tag", "ecs"], ["list", "--agent", "ada"],
    ["list", "--agent", "bob", "--json"], ["audit"], ["audit", "--json"],
    # The text lines come from the index's columns (cards.list_lines): every filter and sort.
    ["list", "--sort", "updated"], ["list", "--type", "state"], ["list", "--domain", "ops", "--sort", "confidence"],
    ["list", "--status", "archived"], ["list", "--status", "in-progress"],
    ["list", "--project", "shop", "--type", "fact"],
    ["list", "--agent", "ada", "--sort", "confidence"], ["list", "--agent", "bob", "--status", "active"],
    ["list", "--type", "pattern", "--domain", "dev"], ["list", "--inbox"], ["list", "--inbox", "--json"],
]

ODD_CARDS = {
    # Same title in folders that sort differently as paths and as strings ("a/" before "a-").
    "Playbooks/a/Same.md": "---\ntitle: Same Title\ntype: fact\ndomain: dev\n---\nbody\n",
    "Playbooks/a-c.md": "---\ntitle: same title\ntype: fact\ndomain: dev\n---\nbody\n",
    "Playbooks/a/b/Deep.md": "---\ntitle: Deep\nconfidence: 1\ncreated: 2026-01-01\n---\n",
    # No frontmatter; a heading that is empty; a title only in the file name.
    "Playbooks/Plain_Note.md": "# Plain heading\n\ntext\n",
    "Playbooks/Empty_Heading.md": "---\ntags: \"#  spaced, ecs\"\n---\n# \n\ntext\n",
    "Playbooks/No_Title.md": "---\ntype: Pattern\ndomain: DEV\n---\njust text\n",
    # Values of every odd type where dates, confidence and importance are read.
    "Playbooks/Odd_Types.md": "---\ntitle: Odd types\nconfidence: \"0.9\"\ncreated: 20260101\nupdated: true\n"
                              "importance: 5\nproject: shop\n---\n",
    "Playbooks/Bool_Conf.md": "---\ntitle: Bool confidence\nconfidence: true\nupdated: [2026-01-01]\n---\n",
    "Playbooks/Nan_Conf.md": "---\ntitle: Nan confidence\nconfidence: .nan\nupdated: 2026-03-01 10:00\n---\n",
    "Playbooks/Offsets.md": "---\ntitle: Offsets\nupdated: 2026-11-20T10:00:00+09:00\nconfidence: 0.3\n---\n",
    "Playbooks/Offsets_Utc.md": "---\ntitle: Offsets utc\nupdated: 2026-11-20T05:00:00Z\nconfidence: 0.95\n---\n",
    "Playbooks/Old_Import.md": "---\ntitle: Old import\ncreated: 2019-05-01\nupdated: 2019-05-02\n---\n",
    # Kinds in time and scopes.
    "Playbooks/State_Odd.md": "---\ntitle: State odd\ntype: state\ndomain: ops\nvalid_from: sometime\n"
                              "updated: 2026-11-21T08:00:00+09:00\ncreated: 2026-11-01\nvalid_to: 2026-12-01\n---\n",
    "Playbooks/State_Plain.md": "---\ntitle: State plain\ntype: state\ndomain: ops\ncreated: 2026-11-20\n---\n",
    "Playbooks/Superseded.md": "---\ntitle: Old fact\ntype: fact\ndomain: infra\nstatus: superseded\n"
                               "superseded_by: x\nvalid_from: 2026-01-01\nvalid_to: 2026-07-01\ntags: [ecs]\n---\n",
    "Playbooks/Archived.md": "---\ntitle: Archived one\nstatus: Archived\nproject: Shop\n---\n",
    "Playbooks/Obsidian.md": "---\ntitle: Obsidian status\nstatus: in-progress\n---\n",
    "Playbooks/Private_Ada.md": "---\ntitle: Ada private\nscope: Agent \nagent: ada\n---\n",
    "Playbooks/Private_Bob.md": "---\ntitle: Bob private\nscope: agent\nagent: bob\nconfidence: 0.1\n---\n",
    "Playbooks/日本語.md": "---\ntitle: 日本語のカード\ntype: fact\ndomain: dev\ntags: [ecs, デプロイ]\n---\n",
    # Files that are no cards: reported, in path order, and skipped.
    "Playbooks/Broken.md": "---\ntitle: [unclosed\n---\nbody\n",
    "Playbooks/a/Binary.md": b"\x00\x01binary",
    "Playbooks/.hidden/Hidden.md": "---\ntitle: Hidden\n---\n",
    "Playbooks/notes.txt": "not a card",
}


def files_read_as_before(vault, folders=("Playbooks",), admits=None):
    """What `list` and `audit` did before the index: parse every card."""
    cards, problems = load_cards(vault, folders)
    return [c for c in cards if admits is None or admits(card_meta(c))], problems


def audited_as_before(vault, refs, moment, lowest=None):
    """What `audit` looked at before the index: every card, parsed (`health._audited_from_index`'s
    shape: total, by domain, by type, (path, type, domain) to check, cards to judge, skipped files,
    low cards left out)."""
    from collections import Counter

    cards, problems = files_read_as_before(vault)
    return (len(cards), Counter(c.domain or "(none)" for c in cards), Counter(c.type or "(none)" for c in cards),
            [(c.rel, c.type, c.domain) for c in cards], cards, problems, 0)


def listed_as_before(vault, filters=None, sort="title", folders=("Playbooks",)):
    """What `list` printed before `cards.list_lines`: every card made into a view (`list_cards`)."""
    result = cards_module.list_cards(vault, filters, sort, folders)
    return cards_module.LineList([tuple(v.summary().get(key) for key in cards_module.LINE_KEYS)
                                  for v in result.cards], result.problems)


def outputs(monkeypatch) -> list[tuple[int, str, str]]:
    monkeypatch.setenv("BRAIN_NOW", MOMENT.isoformat())   # the product's one clock (storage.now)
    return [run_cli(*args) for args in LIST_ARGS]


def compare_index_with_files(monkeypatch) -> None:
    run_cli("search", "anything")  # the index is built by the search before
    with monkeypatch.context() as patched:
        def refuse(vault, folders=("Playbooks",), *args, **kwargs):
            if "Playbooks" in folders:  # the Inbox is not indexed: `list --inbox` reads its files
                raise AssertionError("list and audit must not parse every card")
            return load_cards(vault, folders, *args, **kwargs)

        patched.setattr(cards_module, "load_cards", refuse)
        from_index = outputs(patched)
    with monkeypatch.context() as patched:
        patched.setattr(cards_module, "indexed_cards", lambda vault, admits=None: files_read_as_before(
            vault, admits=admits))
        patched.setattr(health_module, "_audited_from_index", audited_as_before)
        patched.setattr(cards_module, "list_lines", listed_as_before)
        from_files = outputs(patched)
    for args, ours, theirs in zip(LIST_ARGS, from_index, from_files):
        assert ours == theirs, args
    assert all(code == 0 for code, _, _ in from_index)


def test_the_example_vault_lists_and_audits_the_same_from_the_index(vault, monkeypatch) -> None:
    for folder in ("Playbooks", "Inbox"):
        shutil.rmtree(vault / folder)
        shutil.copytree(ROOT / folder, vault / folder)
    listed = ok_data("list")["cards"]
    ok_data("get", listed[0]["path"])  # a reference: its decay clock restarts
    compare_index_with_files(monkeypatch)


def test_odd_cards_list_and_audit_the_same_from_the_index(vault, monkeypatch) -> None:
    for rel, text in ODD_CARDS.items():
        write_card(vault, rel, text)
    long_ago = MOMENT.timestamp() - 300 * 86400
    os.utime(vault / "Playbooks/Old_Import.md", (long_ago, long_ago))
    made = ok_data("create", "--type", "fact", "--domain", "infra", "--title", "Made by the tool", "--tags", "ecs",
                   "--body", "tool card", "--project", "shop")
    ok_data("record", made["id"], "rejected")
    ok_data("get", "Playbooks/Offsets.md")
    compare_index_with_files(monkeypatch)
    data = ok_data("list", "--agent", "ada")
    titles = [c["title"] for c in data["cards"]]
    assert "Ada private" in titles and "Bob private" not in titles
    assert titles.count("Same Title") + titles.count("same title") == 2


def days_before(days: float, naive: bool = False) -> str:
    moment = MOMENT - timedelta(days=days)
    return moment.replace(tzinfo=None).isoformat() if naive else moment.isoformat()


# Cards on either side of the stale and decay thresholds (30 and 60 days below), which `audit`
# judges from the numbers the index keeps and looks at closely only when they are unsure.
CLOCK_CARDS = {
    "Playbooks/Fresh.md": f"---\ntitle: Fresh\nconfidence: 0.9\nupdated: {days_before(5)}\n---\n",
    "Playbooks/Stale_Edge_In.md": f"---\ntitle: Edge in\nconfidence: 0.9\nupdated: {days_before(30.9)}\n---\n",
    "Playbooks/Stale_Edge_Out.md": f"---\ntitle: Edge out\nconfidence: 0.9\nupdated: {days_before(31.1)}\n---\n",
    "Playbooks/Naive_In.md": f"---\ntitle: Naive in\nconfidence: 0.9\nupdated: {days_before(30.6, True)}\n---\n",
    "Playbooks/Naive_Out.md": f"---\ntitle: Naive out\nconfidence: 0.9\nupdated: {days_before(31.4, True)}\n---\n",
    "Playbooks/Decayed.md": f"---\ntitle: Decayed\nconfidence: 0.9\nupdated: {days_before(200)}\n---\n",
    "Playbooks/Date_Only.md": f"---\ntitle: Date only\nconfidence: 0.8\ncreated: {days_before(120)[:10]}\n---\n",
    "Playbooks/Undated.md": "---\ntitle: Undated\nconfidence: 0.7\n---\n",
    "Playbooks/Low_Fresh.md": f"---\ntitle: Low fresh\nconfidence: 0.2\nupdated: {days_before(1)}\n---\n",
    "Playbooks/No_Conf.md": f"---\ntitle: No confidence\nupdated: {days_before(2)}\n---\n",
    # Recent dates but an old last reference: the reference starts the clock.
    "Playbooks/Referenced_Long_Ago.md": f"---\ntitle: Referenced long ago\nconfidence: 0.9\n"
                                        f"updated: {days_before(3)}\n---\n",
    # Old dates, a new file, and named by the log (not a reference): the dates start the clock.
    "Playbooks/Mentioned_Old.md": f"---\ntitle: Mentioned old\nconfidence: 0.9\nupdated: {days_before(150)}\n---\n",
    "Playbooks/Unmentioned_Old.md": f"---\ntitle: Unmentioned old\nconfidence: 0.9\n"
                                    f"updated: {days_before(150)}\n---\n",
}


def hand_event(vault, event: str, rel: str, ts: str) -> None:
    with open(vault / "logs" / "events.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps({"eid": rel, "ts": ts, "event": event, "card": rel}) + "\n")


@pytest.mark.parametrize("initial", [0.5, 0.4])
def test_audit_judges_cards_near_the_thresholds_as_reading_every_card(vault, monkeypatch, initial) -> None:
    config = vault / ".brain" / "config.toml"
    text = config.read_text(encoding="utf-8")
    text = text.replace("# [confidence]\n", f"[confidence]\ninitial = {initial}\ndecay_after_days = 60\n", 1)
    config.write_text(text.replace("# [audit]\n", "[audit]\nstale_after_days = 30\n", 1), encoding="utf-8")
    for rel, text in CLOCK_CARDS.items():
        write_card(vault, rel, text)
    hand_event(vault, "referenced", "Playbooks/Referenced_Long_Ago.md", days_before(100))
    for rel in CLOCK_CARDS:
        if "Unmentioned" not in rel:  # the log knows it: its dates start the clock, not its new file
            hand_event(vault, "linked", rel, days_before(1))
    compare_index_with_files(monkeypatch)
    monkeypatch.setenv("BRAIN_NOW", MOMENT.isoformat())
    report = ok_data("audit")
    stale = {card["title"] for card in report["stale"]}
    assert {"Edge out", "Decayed", "Referenced long ago", "Mentioned old", "Date only"} <= stale
    assert not stale & {"Fresh", "Edge in", "Unmentioned old", "Undated", "Low fresh"}
    low = {card["title"] for card in report["low_confidence"]}
    assert "Low fresh" in low and ("No confidence" in low) == (initial < 0.5)


def test_audit_looks_closely_only_at_cards_that_may_be_stale_or_low(vault, monkeypatch) -> None:
    for n in range(30):
        write_card(vault, f"Playbooks/Fresh_{n}.md", f"---\ntitle: Fresh {n}\nconfidence: 0.9\n"
                   f"updated: {days_before(n)}\n---\n")
    write_card(vault, "Playbooks/Weak.md", f"---\ntitle: Weak\nconfidence: 0.1\nupdated: {days_before(1)}\n---\n")
    write_card(vault, "Playbooks/Old.md", f"---\ntitle: Old\nconfidence: 0.9\nupdated: {days_before(400)}\n---\n")
    hand_event(vault, "linked", "Playbooks/Old.md", days_before(1))  # the log knows it: its dates count
    run_cli("search", "anything")
    made = []
    original = cards_module.IndexedCard.from_row.__func__
    monkeypatch.setattr(cards_module.IndexedCard, "from_row", classmethod(
        lambda cls, vault, rel, *rest: made.append(rel) or original(cls, vault, rel, *rest)))
    monkeypatch.setenv("BRAIN_NOW", MOMENT.isoformat())
    report = ok_data("audit")
    assert report["total"] == 32
    assert {c["title"] for c in report["low_confidence"]} == {"Weak", "Old"}  # Old has decayed
    assert [c["title"] for c in report["stale"]] == ["Old"]
    assert sorted(made) == ["Playbooks/Old.md", "Playbooks/Weak.md"]


@pytest.mark.parametrize("save", ["by rename", "in place"])
def test_list_shows_a_hand_edit_made_since_the_index_was_built(vault, save) -> None:
    write_card(vault, "Playbooks/Hand.md", "---\ntitle: Hand card\nconfidence: 0.9\nstatus: active\n---\nbody\n")
    assert [c["confidence"] for c in ok_data("list")["cards"]] == [0.9]  # indexed now
    new = "---\ntitle: Hand card edited\nconfidence: 0.3\nstatus: archived\n---\nbody\n"
    if save == "by rename":
        write_card(vault, "Playbooks/.Hand.md.tmp", new)
        os.replace(vault / "Playbooks/.Hand.md.tmp", vault / "Playbooks/Hand.md")
    else:
        path = vault / "Playbooks/Hand.md"
        stat = path.stat()
        path.write_text(new, encoding="utf-8")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # even within one mtime tick
    shown = ok_data("list")["cards"]
    assert [(c["title"], c["confidence"], c["status"]) for c in shown] == [("Hand card edited", 0.3, "archived")]
    assert "0.3" in run_cli("audit")[1]


def test_list_shows_the_confidence_record_just_stored(vault) -> None:
    made = ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Recorded", "--body", "b")
    ok_data("list")
    ok_data("record", made["id"], "used")
    assert [c["confidence"] for c in ok_data("list")["cards"]] == [0.55]


def test_brief_for_a_project_still_shows_each_cards_text(vault) -> None:
    ok_data("create", "--type", "fact", "--domain", "dev", "--title", "Shop fact", "--project", "shop",
            "--body", "The zebra checkout flow retries twice.")
    assert "zebra checkout" in run_cli("brief", "--project", "shop")[1]


@pytest.mark.parametrize("agent", [None, "ada"])
def test_stats_counted_in_sql_agree_with_the_listed_cards(vault, agent) -> None:
    for rel, text in ODD_CARDS.items():
        write_card(vault, rel, text)
    extra = ["--agent", agent] if agent else []
    listed = ok_data("list", *extra)["cards"]
    stats = ok_data("stats", *extra)

    def counts(values, none="(none)"):
        ranked = {}
        for value in values:
            ranked[value or none] = ranked.get(value or none, 0) + 1
        return dict(sorted(ranked.items(), key=lambda kv: (-kv[1], kv[0])))

    assert stats["total"] == len(listed)
    assert stats["by_type"] == counts(c["type"] for c in listed)
    assert stats["by_domain"] == counts(c["domain"] for c in listed)
    assert stats["by_status"] == counts(c["status"] for c in listed)
    tags = counts((t for c in listed for t in dict.fromkeys(c["tags"])), none="")  # "#" alone is a tag ""
    assert stats["total_tags"] == len(tags)
    assert stats["top_tags"] == [{"name": name, "count": n} for name, n in tags.items()][:20]
    assert stats["by_scope"] == ({"global": len(listed) - 1, "agent": 1} if agent else {"global": len(listed)})
    assert stats["unparseable"] == 2


def made_cards(monkeypatch) -> list[str]:
    """The paths of the cards made from their stored JSON (`IndexedCard.from_row`) from now on."""
    made = []
    original = cards_module.IndexedCard.from_row.__func__
    monkeypatch.setattr(cards_module.IndexedCard, "from_row", classmethod(
        lambda cls, vault, rel, *rest: made.append(rel) or original(cls, vault, rel, *rest)))
    return made


def test_list_lines_come_from_columns_and_only_a_card_that_may_have_decayed_is_looked_at(vault, monkeypatch) -> None:
    for n in range(20):
        write_card(vault, f"Playbooks/Fresh_{n:02}.md", f"---\ntitle: Fresh {n:02}\ntype: fact\ndomain: dev\n"
                   f"confidence: 0.{n % 9 + 1}\nupdated: {days_before(n)}\n---\n")
    write_card(vault, "Playbooks/Decayed.md",
               f"---\ntitle: Decayed\nconfidence: 0.9\nupdated: {days_before(400)}\n---\n")
    write_card(vault, "Playbooks/State.md", f"---\ntitle: A state\ntype: state\ndomain: ops\nconfidence: 0.8\n"
               f"valid_from: {days_before(3)}\nupdated: {days_before(1)}\nvalid_to: 2027-01-01\n---\n")
    for rel in ("Playbooks/Decayed.md", "Playbooks/State.md"):
        hand_event(vault, "linked", rel, days_before(1))  # the log knows them: their dates count
    run_cli("search", "anything")
    monkeypatch.setenv("BRAIN_NOW", MOMENT.isoformat())
    made = made_cards(monkeypatch)
    code, out, _ = run_cli("list")
    assert code == 0 and made == ["Playbooks/Decayed.md"]
    lines = out.splitlines()
    assert len(lines) == 22 and lines[0].startswith("0.80  state/ops")
    assert "(state, 3d old, valid to 2027-01-01)" in lines[0]
    decayed = next(line for line in lines if "Decayed" in line)
    assert decayed.startswith("0.38  -  ")  # 0.9 - 0.05 * (400 - 90) / 30, from the view
    assert [line.split("  ")[0] for line in run_cli("list", "--sort", "confidence")[1].splitlines()][:3] == \
        ["0.90", "0.90", "0.80"]
    made.clear()
    assert run_cli("list", "--type", "fact")[1].count("\n") == 20 and made == []


def test_audit_text_describes_only_the_ten_lowest_cards_and_counts_the_rest(vault, monkeypatch) -> None:
    for n in range(25):  # low and fresh: each one's stored confidence is its confidence
        write_card(vault, f"Playbooks/Weak_{n:02}.md", f"---\ntitle: Weak {n:02}\nconfidence: 0.{n % 4 + 1}\n"
                   f"updated: {days_before(1)}\n---\n")
    write_card(vault, "Playbooks/Faded.md", f"---\ntitle: Faded\nconfidence: 0.5\nupdated: {days_before(400)}\n---\n")
    hand_event(vault, "linked", "Playbooks/Faded.md", days_before(1))   # decayed to the floor: the lowest
    run_cli("search", "anything")
    monkeypatch.setenv("BRAIN_NOW", MOMENT.isoformat())
    made = made_cards(monkeypatch)
    code, out, _ = run_cli("audit")
    assert code == 0 and "low confidence (< 0.5): 26" in out
    shown = [line.split("(")[-1].rstrip(")") for line in out.splitlines() if line.startswith("  0.")]
    assert len(shown) == 10 and sorted(made) == sorted(shown)   # only the ten shown were looked at
    everything = ok_data("audit")["low_confidence"]
    assert len(everything) == 26 and shown == [card["path"] for card in everything[:10]]
    assert shown[0] == "Playbooks/Faded.md" and everything[0]["confidence"] == 0.1


def test_a_page_of_a_listing_is_the_whole_list_cut_and_makes_views_of_its_cards_only(vault, monkeypatch) -> None:
    """MCP `list_memories` (issue 22): one page of 20 made a view of every card; a long-lived
    server kept that peak as memory. `cards.list_page` must give the very page `list_cards`
    gives, and the count, making views of the page's cards only."""
    from external_brain.search.keyword import Filters
    from external_brain.vault.storage import Vault

    for rel, text in ODD_CARDS.items():
        write_card(vault, rel, text)
    for n in range(30):
        write_card(vault, f"Playbooks/Fresh_{n:02}.md", f"---\ntitle: Fresh {n:02}\ntype: fact\ndomain: dev\n"
                   f"confidence: 0.{n % 9 + 1}\nupdated: {days_before(n)}\n---\n")
    run_cli("search", "anything")
    monkeypatch.setattr(cards_module, "now", lambda: MOMENT)
    brain = Vault(vault)
    for filters in (None, Filters(status="any", agent="ada"), Filters(status="active", type="fact"),
                    Filters(status="any", tags=("ecs",)), Filters(status="any", project="shop")):
        for sort in ("title", "confidence", "updated"):
            whole = cards_module.list_cards(brain, filters, sort).cards
            for offset, limit in ((0, 5), (3, 20), (40, 20), (100, 5)):
                page = cards_module.list_page(brain, filters, sort, offset, limit)
                assert page.total == len(whole)
                assert [v.summary() for v in page.cards] == [v.summary() for v in whole[offset:offset + limit]], \
                    (filters, sort, offset, limit)
    for rel in ODD_CARDS:   # now only fresh cards: none whose confidence may have decayed
        (vault / rel).unlink()
    made = []
    real_view = cards_module.view
    monkeypatch.setattr(cards_module, "view", lambda card, *args: made.append(card.rel) or real_view(card, *args))
    page = cards_module.list_page(brain, None, "title", 10, 5)
    assert [v.card.title for v in page.cards] == [f"Fresh {n:02}" for n in range(10, 15)] and page.total == 30
    assert made == [f"Playbooks/Fresh_{n:02}.md" for n in range(10, 15)]
