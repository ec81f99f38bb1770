"""File names that work on every OS (issue 21, "Names that work on every OS"; docs/card-format.md, "A card": "Names
are bounded"): bounded in bytes with room for the temporary name a write uses, unique without
regard to case and Unicode normalisation, never a reserved device name, never an invisible or
bidi character. Every case runs through the real CLI on a real vault."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

import pytest

from external_brain.vault.storage import NAME_MAX, card_filename, safe_component, unique_path
from helpers import card_meta, ok_data, run_cli, run_json, vault_hashes, write_card

# What `storage.atomic_write` adds to a name for its temporary file: "." + name + "." + 12 hex + ".tmp".
TEMP_NAME_BYTES = 18
MAX_NAME_BYTES = NAME_MAX - TEMP_NAME_BYTES


def name_key(name: str) -> str:
    """Two names a case-insensitive, normalisation-insensitive disk (macOS, Windows) takes for one."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


def create(title: str, card_type: str = "insight") -> dict:
    return ok_data("create", "--type", card_type, "--domain", "general", "--title", title, "--body", f"About {title}.")


def name_bytes(rel: str) -> int:
    return len(os.fsencode(Path(rel).name))


# ---------------------------------------------------------------------------- bounded in bytes

@pytest.mark.parametrize("title", [
    "日本語のタイトル" * 10,                # 80 characters, 240 bytes: failed with IO_ERROR at 76+
    "東京都の本番環境で発生したECSタスクの外部API接続タイムアウトとセキュリティグループのエグレス設定の見直し手順" * 2,
    "😀" * 60,                            # 60 emoji, 240 bytes
    "👨‍👩‍👧‍👦" * 28,                      # ZWJ family sequences: 7 characters, 25 bytes each
    "🇯🇵" * 50,                            # flags: pairs of regional indicators
    "e\u0301" * 100,                      # decomposed accents (NFC makes them é)
    "x" * 200,                            # ASCII stays cut at 120 characters, as before
])
def test_a_long_title_makes_a_card_whose_name_fits_with_its_temporary_name(vault, title):
    made = create(title)
    rel = made["path"]
    assert (vault / rel).is_file()
    assert name_bytes(rel) + TEMP_NAME_BYTES <= NAME_MAX
    assert card_meta(vault / rel)["title"] == title  # the title itself is whole
    assert ok_data("get", made["id"])["path"] == rel
    # and it can be written again (the temporary name of the rewrite fits too)
    assert ok_data("record", rel, "used")["path"] == rel
    # The same title again gets a numbered name that fits as well.
    again = create(title)["path"]
    assert again != rel and name_bytes(again) + TEMP_NAME_BYTES <= NAME_MAX


@pytest.mark.parametrize("title, cluster", [
    ("👨‍👩‍👧‍👦" * 30, "👨‍👩‍👧‍👦"),     # never half a family (a ZWJ sequence)
    ("🇯🇵" * 50, "🇯🇵"),                  # never half a flag
    ("👍🏽" * 60, "👍🏽"),                  # never a hand without its skin tone
    ("e\u0301" * 150, "\u00e9"),           # NFC makes each pair one character
    ("か\u3099" * 100, "が"),
    ("1\ufe0f\u20e3" * 80, "1\ufe0f\u20e3"),  # keycaps: a digit, a variation selector, an enclosing mark
])
def test_a_name_is_cut_between_whole_characters_as_seen(title, cluster):
    stem = safe_component(title)
    assert len(stem.encode("utf-8")) <= MAX_NAME_BYTES - len(".md")
    copies = len(stem) // len(cluster)
    assert copies >= 1 and stem == cluster * copies, stem


def test_a_renamed_card_with_a_long_japanese_title_fits(vault):
    made = create("短いタイトル")
    title = "長い日本語のタイトルに変える" * 8
    updated = ok_data("update", made["path"], "--title", title)
    assert name_bytes(updated["path"]) + TEMP_NAME_BYTES <= NAME_MAX
    assert card_meta(vault / updated["path"])["title"] == title


def test_learn_and_search_misses_with_long_japanese_text_fit(vault):
    title = "本番環境のデータベース接続がタイムアウトする問題" * 4
    learned = ok_data("learn", "--title", title, "--type", "troubleshooting", "--domain", "general", "--tags", "db",
                      "--problem", "接続がタイムアウトする", "--solution", "プールの設定を見直す")
    assert name_bytes(learned["path"]) + TEMP_NAME_BYTES <= NAME_MAX
    query = "存在しないカードを探すための非常に長い日本語の検索語" * 6
    code, envelope, err = run_json("search", query)
    assert code == 0, err
    candidate = envelope["data"]["miss_candidate"]
    assert candidate and (vault / candidate).is_file()
    assert name_bytes(candidate) + TEMP_NAME_BYTES <= NAME_MAX
    assert ok_data("promote", candidate, "--type", "insight", "--domain", "general")["path"]


def test_a_working_memory_key_too_long_for_a_file_name_is_refused_and_one_that_fits_works(vault):
    before = vault_hashes(vault)
    key = "鍵" * 80  # 240 bytes: its file name would not fit with the temporary name
    code, out, err = run_cli("remember", key, "--body", "x")
    assert code == 2 and out == ""
    assert err.startswith("brain: error: working-memory key ") and "bytes" in err and "shorter" in err
    assert vault_hashes(vault) == before
    fits = "鍵" * 70  # 210 bytes
    assert ok_data("remember", fits, "--body", "kept")["key"] == fits
    assert ok_data("recall", fits)["body"] == "kept"


# ---------------------------------------------------------------------------- case

def test_a_title_differing_only_in_case_gets_its_own_numbered_file(vault):
    first = create("Kafka Lag")["path"]
    second = create("kafka lag")["path"]
    assert first == "Playbooks/Insight_Kafka_Lag.md"
    assert second == "Playbooks/Insight_kafka_lag_2.md"
    names = [name_key(p.name) for p in (vault / "Playbooks").iterdir()]
    assert len(names) == len(set(names))  # no two names collide on a case-insensitive disk


@pytest.mark.parametrize("first, second", [("Straße sperren", "Strasse sperren"), ("Conﬁg reload", "Config reload"),
                                           ("Kaſſe", "Kasse")])
def test_a_title_whose_letter_folds_to_ascii_letters_gets_its_own_numbered_file(vault, first, second):
    # APFS and Linux's case-folding directories fold case fully (`ß` is `ss`, `ſ` is `s`, the
    # ligature `ﬁ` is `fi`, as `name_key` does): the second name is the first one's file there.
    # `create` took the names it could collide with from the index by their ASCII start, which
    # such a name does not begin with, and made both; a folder listing made `_2`.
    made = create(first)["path"]
    again = create(second)["path"]
    stem = Path(made).stem.replace(first.replace(" ", "_"), second.replace(" ", "_"))
    assert again == f"Playbooks/{stem}_2.md", (made, again)
    names = [name_key(p.name) for p in (vault / "Playbooks").iterdir()]
    assert len(names) == len(set(names))


def test_unique_path_treats_names_case_and_normalisation_insensitively(tmp_path):
    (tmp_path / "Insight_Kafka_Lag.md").write_text("")
    (tmp_path / unicodedata.normalize("NFD", "Insight_Café.md")).write_text("")
    assert unique_path(tmp_path, "Insight_kafka_lag.md") == tmp_path / "Insight_kafka_lag_2.md"
    assert unique_path(tmp_path, "Insight_CAFÉ.md") == tmp_path / "Insight_CAFÉ_2.md"
    taken = {tmp_path / "Insight_New.md"}
    assert unique_path(tmp_path, "Insight_NEW.md", taken) == tmp_path / "Insight_NEW_2.md"


def test_renaming_a_card_to_a_case_variant_of_its_name_keeps_its_file(vault):
    made = create("kafka lag")
    updated = ok_data("update", made["path"], "--title", "Kafka Lag")
    assert updated["path"] == made["path"]  # no second file, no delete of the only one on macOS
    assert card_meta(vault / made["path"])["title"] == "Kafka Lag"
    assert sorted(p.name for p in (vault / "Playbooks").iterdir()) == ["Insight_kafka_lag.md"]


def test_a_card_is_found_by_its_stem_in_any_case(vault):
    made = create("Kafka Lag")
    assert ok_data("get", "insight_kafka_lag")["path"] == made["path"]
    assert ok_data("get", "INSIGHT_KAFKA_LAG")["id"] == made["id"]


def test_working_memory_keys_differing_only_in_case_are_one_key(vault):
    ok_data("remember", "Deploy-Status", "--body", "first")
    entry = ok_data("remember", "deploy-status", "--body", "second")
    assert entry["key"] == "Deploy-Status"  # the spelling it was first stored under is kept
    assert sorted(p.name for p in (vault / "WorkingMemory").glob("*.md")) == ["Deploy-Status.md"]
    assert ok_data("recall", "DEPLOY-STATUS")["body"] == "second"
    assert [e["key"] for e in ok_data("context")["entries"]] == ["Deploy-Status"]
    assert ok_data("forget", "deploy-STATUS")["key"] == "Deploy-Status"
    assert list((vault / "WorkingMemory").glob("*.md")) == []


# ---------------------------------------------------------------------------- NFC and NFD

def test_a_note_named_in_nfd_is_found_by_its_nfc_name_and_not_made_twice(vault):
    nfd = unicodedata.normalize("NFD", "Insight_Café")
    write_card(vault, f"Playbooks/{nfd}.md", "---\ntitle: Café\ntype: insight\ndomain: general\n---\n# Café\n\nCoffee.\n")
    nfc = unicodedata.normalize("NFC", "Insight_Café")
    assert nfc != nfd
    got = ok_data("get", nfc)
    assert got["path"] == f"Playbooks/{nfd}.md"
    made = create("Café")  # typed in NFC
    assert made["path"] == f"Playbooks/{nfc}_2.md"
    keys = [name_key(p.name) for p in (vault / "Playbooks").iterdir()]
    assert len(keys) == len(set(keys)) == 2


def test_an_nfd_title_is_written_as_an_nfc_name(vault):
    made = create(unicodedata.normalize("NFD", "Résumé naïve"))
    name = Path(made["path"]).name
    assert unicodedata.is_normalized("NFC", name) and name == "Insight_Résumé_naïve.md"


def test_working_memory_keys_in_nfc_and_nfd_are_one_key(vault):
    nfd, nfc = unicodedata.normalize("NFD", "café"), unicodedata.normalize("NFC", "café")
    ok_data("remember", nfd, "--body", "one")
    ok_data("remember", nfc, "--body", "two")
    files = [p.name for p in (vault / "WorkingMemory").glob("*.md")]
    assert files == [f"{nfc}.md"]
    assert ok_data("recall", nfd)["body"] == "two"


# ---------------------------------------------------------------------------- reserved and invisible

@pytest.mark.parametrize("key", ["CON", "nul", "aux.txt", "COM1", "lpt9", "Prn", "com¹", "CONIN$"])
def test_a_windows_device_name_is_refused_as_a_working_memory_key(vault, key):
    before = vault_hashes(vault)
    code, out, err = run_cli("remember", key, "--body", "x")
    assert (code, out) == (2, "")
    assert err.startswith(f"brain: error: working-memory key {key!r} is a device name on Windows") and \
        "choose another key" in err
    assert vault_hashes(vault) == before


@pytest.mark.parametrize("title", ["CON", "nul", "aux.txt", "COM1"])
def test_a_device_name_title_makes_a_file_that_is_no_device(vault, title):
    rel = create(title)["path"]
    stem = Path(rel).name.split(".")[0]
    assert stem.upper() not in {"CON", "NUL", "AUX", "COM1"}
    assert safe_component(title).split(".")[0].upper() not in {"CON", "NUL", "AUX", "COM1"}


@pytest.mark.parametrize("char", ["\u200b", "\u202e", "\u200f", "\u2066", "\ufeff", "\u00ad", "\u2060", "\u3164"])
def test_invisible_and_bidi_characters_never_reach_a_file_name(vault, char):
    title = f"Pay{char}ments API"
    rel = create(title)["path"]
    assert rel == "Playbooks/Insight_Payments_API.md"
    assert card_meta(vault / rel)["title"] == title  # the title is the person's; only the name is cleaned
    for name in os.listdir(vault / "Playbooks"):
        assert char not in name


def test_an_invisible_character_is_refused_in_a_working_memory_key(vault):
    code, out, err = run_cli("remember", "ab\u3164c", "--body", "x")
    assert code == 2 and "U+3164" in err


def test_card_filename_is_bounded_for_every_type(vault):
    for card_type in ("troubleshooting", "decision", "runbook", "pattern", "checklist", "insight"):
        name = card_filename(card_type, "あ" * 200)
        assert len(os.fsencode(name)) <= MAX_NAME_BYTES


def test_learning_a_title_that_differs_only_in_case_adds_to_the_same_candidate(vault):
    args = ("--type", "troubleshooting", "--domain", "general", "--tags", "kafka", "--problem", "lag grows",
            "--solution", "add consumers")
    first = ok_data("learn", "--title", "Kafka Lag", *args)
    second = ok_data("learn", "--title", "kafka lag", *args, "--evidence", "seen again")
    assert second["path"] == first["path"] == "Inbox/Learned_Kafka_Lag.md"
    assert (second["created"], second["evidence_count"]) == (False, 2)
    assert [p.name for p in (vault / "Inbox").glob("*.md")] == ["Learned_Kafka_Lag.md"]


# ---------------------------------------------------------------------------- names a person made

def test_a_hand_named_note_whose_name_leaves_no_room_for_a_temporary_name_can_still_be_written(vault):
    name = "ノート" * 27 + "x.md"  # 247 bytes: fits NAME_MAX, not with 18 bytes of temporary name
    assert 237 < len(name.encode("utf-8")) <= NAME_MAX
    path = write_card(vault, f"Playbooks/{name}", "---\ntitle: Long name\n---\nA note named by hand.\n")
    assert ok_data("record", f"Playbooks/{name}", "used")["after"] == 0.55
    assert card_meta(path)["confidence"] == 0.55
    assert [p.name for p in (vault / "Playbooks").iterdir()] == [name]  # no temporary file left


def test_doctor_names_file_names_that_do_not_work_on_every_os(vault):
    write_card(vault, "Playbooks/Insight_Kafka_Lag.md", "---\ntitle: A\n---\nx\n")
    write_card(vault, "Playbooks/Insight_kafka_lag.md", "---\ntitle: B\n---\ny\n")
    write_card(vault, "Playbooks/" + unicodedata.normalize("NFD", "Café.md"), "---\ntitle: C\n---\nz\n")
    write_card(vault, "Playbooks/" + unicodedata.normalize("NFC", "Café.md"), "---\ntitle: D\n---\nz\n")
    write_card(vault, "WorkingMemory/CON.md", "---\nkey: CON\n---\nx\n")
    write_card(vault, "Playbooks/Pay\u202eslip.md", "---\ntitle: E\n---\nx\n")
    code, out, err = run_cli("doctor")
    report = out + err
    assert "Playbooks/Insight_Kafka_Lag.md" in report and "Insight_kafka_lag.md" in report
    assert "differ only in case or Unicode normalisation" in report
    assert report.count("differ only in case or Unicode normalisation") == 2
    assert "WorkingMemory/CON.md" in report and "device name" in report
    assert "U+202E" in report


def test_a_wikilink_typed_in_nfc_resolves_to_a_note_named_in_nfd(vault):
    nfd = unicodedata.normalize("NFD", "Café")
    write_card(vault, f"Playbooks/{nfd}.md", "---\ntitle: Coffee\n---\nCoffee.\n")
    write_card(vault, "Playbooks/Menu.md", '---\ntitle: Menu\nrelated: ["[[Café]]"]\n---\nSee the café.\n')
    outgoing = ok_data("links", "Menu")["outgoing"]
    assert [(link["path"], link["missing"]) for link in outgoing] == [(f"Playbooks/{nfd}.md", False)]


def test_folds_to_ascii_holds_every_character_past_ascii_whose_key_is_ascii():
    # `Index.names_like` offers the names spelt with these; one missing would be a collision
    # `create` does not see (decision 0028, "`ß`, `ſ` and the ligatures").
    from external_brain.vault.storage import FOLDS_TO_ASCII

    folding = {chr(code): key for code in range(0x80, 0x30000) if not 0xD800 <= code <= 0xDFFF
               and (key := name_key(chr(code))).isascii()}
    assert {char: key for pairs in FOLDS_TO_ASCII.values() for char, key in pairs} == folding
    assert all(key[0] == letter for letter, pairs in FOLDS_TO_ASCII.items() for _, key in pairs)
