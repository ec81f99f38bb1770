"""Confidence: EWA and lazy time decay against numbers worked out by hand, and how search, get,
list and record show and store them (docs/card-format.md, Confidence)."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from external_brain.vault import frontmatter
from external_brain.vault.confidence import action_for, decayed, ewa, months_over
from external_brain.vault.config import ConfidenceSettings
from external_brain.vault.storage import iso, new_id, now
from helpers import file_hashes, log_event, log_lines, ok_data, run_cli, write_card

DEFAULTS = ConfidenceSettings()


# ---------------------------------------------------------------------------- pure functions

@pytest.mark.parametrize("old, signal, expected", [
    (0.5, 1.0, 0.55),        # 0.1 * 1 + 0.9 * 0.5
    (0.55, 1.0, 0.595),      # 0.1 + 0.495
    (0.595, 1.0, 0.6355),    # 0.1 + 0.5355
    (0.6355, 0.0, 0.57195),  # 0.9 * 0.6355
    (0.5, 0.0, 0.45),
    (0.0, 0.0, 0.0),
    (1.0, 1.0, 1.0),
    (0.9, 1.0, 0.91),
])
def test_ewa_matches_hand_worked_steps(old, signal, expected):
    assert ewa(old, signal, 0.1) == expected


def test_ewa_uses_the_given_alpha_and_clamps_to_0_1():
    assert ewa(0.5, 1.0, 0.5) == 0.75
    assert ewa(0.5, 0.0, 1.0) == 0.0
    assert ewa(1.5, 1.0, 0.1) == 1.0     # 0.1 + 1.35, clamped
    assert ewa(-0.5, 0.0, 0.1) == 0.0    # -0.45, clamped


def test_ewa_rounds_to_six_digits_so_replays_are_exact():
    value = 0.5
    for _ in range(3):
        value = ewa(value, 0.0, 0.1)
    assert value == 0.3645                 # 0.5 * 0.9 ** 3
    assert ewa(1 / 3, 1.0, 0.1) == 0.4     # 0.1 + 0.3 exactly, not 0.39999999999999997


@pytest.mark.parametrize("days, expected_months", [(0, 0), (90, 0), (120, 1), (150, 2), (105, 0.5), (390, 10)])
def test_months_over_the_threshold(days, expected_months):
    assert months_over(days, 90) == expected_months


@pytest.mark.parametrize("stored, days, expected", [
    (0.7, 0, 0.7),
    (0.7, 90, 0.7),          # at the threshold: no decay yet
    (0.7, 91, 0.698333),     # 0.7 - 0.05 / 30
    (0.7, 120, 0.65),        # one month over
    (0.7, 150, 0.6),         # two months over: 0.7 - 0.05 * 2
    (0.8, 390, 0.3),         # ten months over
    (0.15, 150, 0.1),        # 0.05 is under the floor: the floor wins
    (0.5, 3650, 0.1),
    (0.05, 400, 0.05),       # the floor never raises a card that feedback put below it
])
def test_decay_matches_hand_worked_values(stored, days, expected):
    assert decayed(stored, days, DEFAULTS) == expected


def test_decay_uses_the_configured_parameters():
    params = ConfidenceSettings(alpha=0.1, initial=0.5, decay_after_days=30, decay_per_30_days=0.1, floor=0.2)
    assert decayed(0.9, 30, params) == 0.9
    assert decayed(0.9, 90, params) == 0.7     # 2 months over 30 days, 0.1 each
    assert decayed(0.9, 900, params) == 0.2


@pytest.mark.parametrize("confidence, action", [
    (1.0, "apply"), (0.8, "apply"), (0.79, "apply and verify"), (0.5, "apply and verify"),
    (0.4999, "reference only: verify by hand before applying"), (0.1, "reference only: verify by hand before applying"),
])
def test_action_by_confidence(confidence, action):
    assert action_for(confidence) == action


# ---------------------------------------------------------------------------- decay through the CLI

def aged_card(vault: Path, title: str, confidence: float, days: int, word: str) -> str:
    """A card the tool created `days` ago (its `created` event is in the log) that nobody has
    referenced since; returns its path."""
    moment = iso(now() - timedelta(days=days))
    stem = title.replace(" ", "_")
    card_id = new_id()
    rel = f"Playbooks/Pattern_{stem}.md"
    write_card(vault, rel, (
        f"---\nid: {card_id}\ntitle: {title}\ntype: pattern\ndomain: dev\ntags: [{word}]\n"
        f"confidence: {confidence}\ncreated: {moment}\nupdated: {moment}\n---\n\n# {title}\n\n"
        f"The {word} lesson, written long ago.\n"))
    log_event(vault, "created", rel, card_id, moment, type="pattern", domain="dev", title=title)
    return rel


def shown_confidences(path: str, word: str) -> dict[str, float]:
    """The effective confidence of one card as search, list and get show it (get last: it
    logs `referenced`, which stops the decay)."""
    [hit] = [h for h in ok_data("search", word)["hits"] if h["path"] == path]
    [listed] = [c for c in ok_data("list")["cards"] if c["path"] == path]
    got = ok_data("get", path)
    return {"search": hit["confidence"], "list": listed["confidence"], "get": got["confidence"],
            "stored": got["stored_confidence"]}


def test_reads_show_decayed_confidence_and_write_nothing(vault):
    faded = aged_card(vault, "Zebra Crossing", 0.7, 150, "zebra")
    floored = aged_card(vault, "Yak Shaving", 0.15, 150, "yak")
    fresh = aged_card(vault, "Walrus Tusks", 0.7, 10, "walrus")
    before = file_hashes(vault)

    assert shown_confidences(faded, "zebra") == {"search": 0.6, "list": 0.6, "get": 0.6, "stored": 0.7}
    assert shown_confidences(floored, "yak") == {"search": 0.1, "list": 0.1, "get": 0.1, "stored": 0.15}
    assert shown_confidences(fresh, "walrus") == {"search": 0.7, "list": 0.7, "get": 0.7, "stored": 0.7}
    code, out, err = run_cli("get", "Pattern_Zebra_Crossing")
    assert code == 0 and "# confidence 0.70 -> apply and verify (stored 0.70)" in out

    # Reads never write a card (docs/card-format.md): every file under the card folders is byte-identical.
    assert file_hashes(vault) == before


def test_a_card_the_tool_created_long_ago_decays_exactly_by_seed_003(vault):
    # Written by hand with its `created` event 200 days ago: its file is new on this disk (as
    # after a git clone), but the log names it, so decay counts from `updated` as docs/card-format.md, Confidence, says.
    path = aged_card(vault, "Zebra Crossing", 0.5, 200, "zebra")
    expected = 0.3167  # 0.5 - 0.05 * (200 - 90) / 30 = 0.316667, shown to 4 digits
    assert shown_confidences(path, "zebra") == {"search": expected, "list": expected, "get": expected,
                                                "stored": 0.5}


def test_audit_counts_stale_days_by_the_same_clock(vault):
    aged_card(vault, "Zebra Crossing", 0.5, 200, "zebra")
    write_card(vault, "Playbooks/Imported.md", "---\ncreated: 2020-01-01\n---\nAn imported zebra note.\n")
    [stale] = ok_data("audit")["stale"]
    assert (stale["title"], stale["days_unreferenced"], stale["confidence"]) == ("Zebra Crossing", 200, 0.3167)


def test_a_cache_from_before_mentions_were_kept_is_read_again(vault):
    path = aged_card(vault, "Zebra Crossing", 0.5, 200, "zebra")
    cache = vault / ".brain" / "cache" / "last_referenced.json"
    cache.parent.mkdir(parents=True, exist_ok=True)
    size = (vault / "logs" / "events.jsonl").stat().st_size
    inode = (vault / "logs" / "events.jsonl").stat().st_ino
    # The old format: the whole log read, nothing referenced, and no `seen`.
    cache.write_text(json.dumps({"inode": inode, "offset": size, "last": {}, "outcomes": {}}))
    [hit] = ok_data("search", "zebra")["hits"]
    assert (hit["path"], hit["confidence"]) == (path, 0.3167)
    assert "seen" in json.loads(cache.read_text())


def test_a_get_stops_the_decay_and_the_cache_is_only_derived(vault):
    path = aged_card(vault, "Zebra Crossing", 0.7, 150, "zebra")
    [hit] = ok_data("search", "zebra")["hits"]
    assert hit["confidence"] == 0.6
    shutil.rmtree(vault / ".brain" / "cache", ignore_errors=True)
    assert ok_data("search", "zebra")["hits"][0]["confidence"] == 0.6

    got = ok_data("get", path)
    assert got["confidence"] == 0.6 and got["last_referenced"] is None  # shown as it was before this read
    after_get = {"search": ok_data("search", "zebra")["hits"][0]["confidence"],
                 "list": ok_data("list")["cards"][0]["confidence"], "get": ok_data("get", path)["confidence"]}
    assert after_get == {"search": 0.7, "list": 0.7, "get": 0.7}

    shutil.rmtree(vault / ".brain" / "cache")  # derived data: rebuilt from the log, same numbers
    again = {"search": ok_data("search", "zebra")["hits"][0]["confidence"],
             "list": ok_data("list")["cards"][0]["confidence"], "get": ok_data("get", path)["confidence"]}
    assert again == after_get
    assert (vault / ".brain" / "cache").is_dir()


def test_record_applies_decay_first_then_ewa(vault):
    path = aged_card(vault, "Zebra Crossing", 0.7, 150, "zebra")
    data = ok_data("record", path, "used")
    assert (data["before"], data["decayed"], data["after"]) == (0.7, 0.6, 0.64)  # 0.1 + 0.9 * 0.6
    meta = frontmatter.parse((vault / path).read_text(encoding="utf-8")).data
    assert meta["confidence"] == 0.64
    # The record is a reference too: the decay starts over from now.
    assert ok_data("get", path)["confidence"] == 0.64
    data = ok_data("record", path, "rejected")
    assert (data["before"], data["decayed"], data["after"]) == (0.64, 0.64, 0.576)


def test_record_on_a_floored_card_starts_from_the_floor(vault):
    path = aged_card(vault, "Yak Shaving", 0.15, 150, "yak")
    code, out, err = run_cli("record", path, "used")
    assert (code, err) == (0, "")
    assert out == f"{path}: used, confidence 0.15 (decayed to 0.1 first) -> 0.19\n"


def test_a_torn_last_log_line_is_tolerated_and_never_glued_to_the_next_event(vault):
    path = aged_card(vault, "Zebra Crossing", 0.7, 10, "zebra")
    assert run_cli("get", path)[0] == 0
    log = vault / "logs" / "events.jsonl"
    with open(log, "ab") as handle:
        handle.write(b'{"eid": "x", "ev')  # a writer killed mid-line

    code, out, err = run_cli("search", "zebra")
    assert (code, err) == (0, "") and path in out
    assert ok_data("list")["count"] == 1
    assert ok_data("get", path)["confidence"] == 0.7
    data = ok_data("record", path, "used")
    assert data["after"] == 0.73

    lines = log_lines(vault)
    torn = [line for line in lines if line == b'{"eid": "x", "ev']
    assert len(torn) == 1  # the fragment stays alone on its own line
    parsed = [json.loads(line) for line in lines if line != torn[0]]
    assert [e["event"] for e in parsed] == ["created", "referenced", "referenced", "used"]
    assert log.read_bytes().endswith(b"\n")
    assert parsed[-1]["after"] == 0.73 and parsed[-1]["card"] == path
    # The fragment sits where the crash left it, after the first `get`; the later appends
    # (a `get` and the `record`) each start on a line of their own.
    assert lines.index(torn[0]) == 2
