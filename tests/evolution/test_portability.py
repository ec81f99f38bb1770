"""`export` and `import` through the real CLI: the whole vault goes to one JSONL file and back
byte for byte; a bad line changes nothing; conflicts never overwrite a newer card silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, SCRIPT, events, file_hashes, ok_data, run_cli, run_json, vault_hashes, write_card


def make(title: str, *extra: str) -> dict:
    return ok_data("create", "--type", "pattern", "--domain", "dev", "--title", title, "--body", f"About {title}.",
                   *extra)


def export_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_example_vault_exported_and_imported_into_an_empty_vault_gives_byte_identical_cards(vault, tmp_path):
    dump = tmp_path / "example.jsonl"
    before = file_hashes(ROOT, ("Playbooks", "Inbox"))
    data = ok_data("export", "--vault", str(ROOT), "--output", str(dump))
    assert data["cards"] == len(before) > 20
    assert file_hashes(ROOT, ("Playbooks", "Inbox")) == before  # export is a read

    imported = ok_data("import", str(dump))
    assert len(imported["created"]) == len(before) and not imported["skipped"]
    assert file_hashes(vault, ("Playbooks", "Inbox")) == {**before, "Inbox/.gitkeep": file_hashes(
        vault, ("Inbox",))["Inbox/.gitkeep"]}
    card = next(r for r in export_lines(dump) if r["kind"] == "card")
    assert set(card) >= {"path", "id", "frontmatter", "body", "text"}
    assert card["text"] == (ROOT / card["path"]).read_text(encoding="utf-8")

    again = ok_data("import", str(dump))  # the same file twice changes nothing
    assert again["created"] == [] and len(again["unchanged"]) == len(before) and again["event_ids"] == []


def test_a_corrupted_line_in_the_middle_leaves_the_vault_unchanged(vault, tmp_path):
    for n in range(6):
        make(f"Exported {n}")
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--output", str(dump))
    lines = dump.read_text(encoding="utf-8").splitlines()
    lines[3] = lines[3][: len(lines[3]) // 2]  # cut mid-object, as a broken copy would
    dump.write_text("\n".join(lines) + "\n", encoding="utf-8")

    target = tmp_path / "empty"
    assert run_cli("init", str(target))[0] == 0
    before = vault_hashes(target)
    code, envelope, _ = run_json("import", str(dump), "--vault", str(target))
    assert code == 1 and envelope["error"]["code"] == "BAD_IMPORT"
    assert "line 4:" in envelope["error"]["message"] and "nothing was imported" in envelope["error"]["message"]
    assert vault_hashes(target) == before and events(target) == []

    code, out, err = run_cli("import", str(dump), "--vault", str(target))
    assert (code, out) == (1, "") and err.startswith("brain: error: ") and "line 4:" in err


def test_bad_paths_and_repeated_paths_are_refused_before_anything_is_written(vault, tmp_path):
    good = {"kind": "card", "path": "Playbooks/Fine.md", "text": "---\ntitle: Fine\n---\nok\n"}
    for bad, message in (({"kind": "card", "path": "../evil.md", "text": "x"}, "not a card path"),
                         ({"kind": "card", "path": "Playbooks/X.md"}, "has no `text`"),
                         ({"kind": "memory", "path": "Playbooks/X.md", "text": "x"}, "not a memory path"),
                         ({"kind": "card", "path": "Playbooks/Fine.md", "text": "again"}, "also on line 1"),
                         ({"kind": "spell", "path": "Playbooks/Y.md"}, "unknown kind")):
        dump = tmp_path / "bad.jsonl"
        dump.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
        code, envelope, _ = run_json("import", str(dump))
        assert code == 1 and "line 2:" in envelope["error"]["message"], envelope
        assert message in envelope["error"]["message"], envelope
        assert not (vault / "Playbooks" / "Fine.md").exists()


def test_a_file_that_is_not_an_export_is_named_as_such(vault, tmp_path):
    # review6: importing a Claude Code transcript by mistake said "line 1: unknown kind None".
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
    code, out, err = run_cli("import", str(transcript))
    assert (code, out) == (1, "")
    assert err == (f"brain: error: {transcript} line 1: has no `kind`, so it is not a line of an export; give the "
                   "file `brain export` wrote; nothing was imported — fix the line or re-export\n")


def test_conflicts_skip_by_default_replace_only_newer_cards_and_report_an_overwritten_newer_card(vault, tmp_path):
    rel = "Playbooks/Pattern_Shared_Card.md"
    card = "---\nid: 11111111-2222-4333-8444-555555555555\ntitle: Shared Card\nupdated: {}\n---\n{}\n"
    path = write_card(vault, rel, card.format("2026-01-01T10:00:00+00:00", "as exported"))
    dump = tmp_path / "old.jsonl"
    ok_data("export", "--output", str(dump))
    exported = path.read_text(encoding="utf-8")

    # The vault's card is edited later: newer than the file's.
    newer_text = card.format("2026-02-01T10:00:00+00:00", "edited after the export")
    write_card(vault, rel, newer_text)
    skipped = ok_data("import", str(dump))
    assert skipped["skipped"] == [{"path": rel, "reason": "exists (use --on-conflict newer or overwrite)"}]
    assert ok_data("import", str(dump), "--on-conflict", "newer")["skipped"][0]["reason"].startswith(
        "the vault's card is as new or newer")
    assert path.read_text(encoding="utf-8") == newer_text

    forced = ok_data("import", str(dump), "--on-conflict", "overwrite")
    assert forced["overwritten"] == [rel] and forced["replaced_newer"] == [rel]
    assert path.read_text(encoding="utf-8") == exported

    # Now the file holds the newer card: `newer` takes it.
    newer_dump = tmp_path / "new.jsonl"
    newer_dump.write_text(json.dumps({"kind": "card", "path": rel, "text": newer_text}) + "\n", encoding="utf-8")
    assert ok_data("import", str(newer_dump), "--on-conflict", "newer")["overwritten"] == [rel]
    assert path.read_text(encoding="utf-8") == newer_text


def test_a_card_whose_id_another_file_holds_is_skipped_so_no_two_cards_share_an_id(vault, tmp_path):
    card = make("Original Name")
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--output", str(dump))
    ok_data("update", card["id"], "--title", "Renamed Since")
    result = ok_data("import", str(dump), "--on-conflict", "overwrite")
    assert result["created"] == [] and result["skipped"][0]["path"] == card["path"]
    assert "is held by Playbooks/Pattern_Renamed_Since.md" in result["skipped"][0]["reason"]
    assert not (vault / card["path"]).exists()


def test_dry_run_writes_nothing_and_an_import_batch_can_be_undone(vault, tmp_path):
    source = tmp_path / "source"
    assert run_cli("init", str(source))[0] == 0
    for n in range(3):
        ok_data("create", "--vault", str(source), "--type", "fact", "--domain", "dev", "--title", f"Fact {n}",
                "--body", f"value {n}")
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--vault", str(source), "--output", str(dump))
    before = vault_hashes(vault)
    dry = ok_data("import", str(dump), "--dry-run")
    assert len(dry["created"]) == 3 and dry["event_ids"] == []
    assert vault_hashes(vault) == before and events(vault) == []

    done = ok_data("import", str(dump))
    assert [e["event"] for e in events(vault)] == ["imported"] and len(done["event_ids"]) == 1
    assert len(list((vault / "Playbooks").glob("*.md"))) == 3
    ok_data("undo", done["event_ids"][0])
    assert list((vault / "Playbooks").glob("*.md")) == []


def test_events_and_working_memory_travel_and_events_are_appended_once(vault, tmp_path):
    make("Logged Card")
    ok_data("remember", "deploy-window", "--body", "Friday 18:00")
    dump = tmp_path / "dump.jsonl"
    data = ok_data("export", "--events", "--output", str(dump))
    assert data["memories"] == 1 and data["events"] == len(events(vault)) == 2
    target = tmp_path / "copy"
    assert run_cli("init", str(target))[0] == 0
    first = ok_data("import", str(dump), "--vault", str(target))
    assert first["events_added"] == 2
    assert file_hashes(target, ("Playbooks", "WorkingMemory")) == {
        **file_hashes(vault, ("Playbooks", "WorkingMemory"))}
    assert ok_data("import", str(dump), "--vault", str(target))["events_added"] == 0
    eids = [e["eid"] for e in events(target)]
    assert len(eids) == len(set(eids)) == 3  # two exported events and one `imported` batch


def test_export_to_stdout_is_jsonl_and_json_without_output_is_a_usage_error(vault):
    make("Streamed")
    code, out, _ = run_cli("export")
    kinds = [json.loads(line)["kind"] for line in out.splitlines()]
    assert code == 0 and kinds == ["header", "card"]
    code, envelope, _ = run_json("export")
    assert code == 2 and "--output" in envelope["error"]["message"]


def test_an_import_killed_mid_batch_is_finished_by_the_next_write_and_every_card_is_whole(vault, tmp_path):
    source = tmp_path / "source"
    assert run_cli("init", str(source))[0] == 0
    for n in range(4):
        ok_data("create", "--vault", str(source), "--type", "pattern", "--domain", "dev", "--title", f"Whole {n}",
                "--body", "x" * 2000)
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--vault", str(source), "--output", str(dump))
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_FAILPOINT": "applied"}
    killed = subprocess.run([sys.executable, str(SCRIPT), "import", str(dump)], env=env, capture_output=True)
    assert killed.returncode == -9
    assert len(list((vault / "Playbooks").glob("*.md"))) == 1  # killed after its first file
    ok_data("doctor")  # takes the write lock and rolls the journal forward
    assert file_hashes(vault, ("Playbooks",)) == file_hashes(source, ("Playbooks",))
    assert [e["event"] for e in events(vault)] == ["imported"]


def test_exported_events_leave_out_private_cards_of_other_agents_deleted_ones_too(vault, tmp_path):
    make("Shared Card")
    kept = make("Bobs Secret Plan", "--agent", "bob")
    gone = make("Bobs Old Secret", "--agent", "bob")
    ok_data("delete", gone["id"])
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--events", "--output", str(dump))
    text = dump.read_text(encoding="utf-8")
    assert "Secret" not in text and kept["id"] not in text and gone["id"] not in text
    assert [e["event"]["title"] for e in export_lines(dump) if e["kind"] == "event"] == ["Shared Card"]
    ok_data("export", "--events", "--agent", "bob", "--output", str(dump))
    assert kept["id"] in dump.read_text(encoding="utf-8") and gone["id"] in dump.read_text(encoding="utf-8")
    ok_data("export", "--events", "--include-private", "--output", str(dump))
    assert len([e for e in export_lines(dump) if e["kind"] == "event"]) == len(events(vault)) == 4


def test_feedback_imported_with_events_is_settled_into_the_cards_like_a_merge(vault, tmp_path):
    # Two vaults with one card (a copy made before either gave feedback): the source's feedback
    # arrives as events, the card itself is skipped (it exists). Import is a write that brought
    # events from elsewhere, as a git merge does: it leaves every card agreeing with the log.
    card = make("Shared Card")
    source = tmp_path / "source"
    import shutil

    shutil.copytree(vault, source)
    shutil.rmtree(source / ".brain" / "cache", ignore_errors=True)
    for outcome in ("used", "used"):
        ok_data("record", card["id"], outcome, "--vault", str(source))
    ok_data("record", card["id"], "rejected")            # this vault's own feedback: 0.5 -> 0.45
    dump = tmp_path / "dump.jsonl"
    ok_data("export", "--events", "--output", str(dump), "--vault", str(source))
    done = ok_data("import", str(dump))
    assert done["events_added"] == 2 and done["skipped"] == [{"path": card["path"], "reason":
                                                             "exists (use --on-conflict newer or overwrite)"}]
    # Replayed in time order: used, used (the source's, first), rejected (this vault's).
    assert ok_data("get", card["id"])["stored_confidence"] == 0.5355   # 0.55, 0.595, then x 0.9
    assert ok_data("doctor")["findings"] == []
    settled = [e for e in events(vault) if e["event"] == "settled"]
    assert [list(e["confidence"].values()) for e in settled] == [[[0.45, 0.5355]]]


def test_an_import_of_one_batch_ends_with_the_command_that_undoes_it(vault, tmp_path):
    # Before: "undo with `brain undo EVENT_ID` (one per batch: <id>)": a placeholder beside the id to put in it.
    make("Pool connections")
    dump = tmp_path / "one.jsonl"
    ok_data("export", "--output", str(dump))
    other = tmp_path / "other"
    assert run_cli("init", str(other))[0] == 0
    code, out, err = run_cli("--vault", str(other), "import", str(dump))
    assert code == 0, err
    (event,) = [e["eid"] for e in events(other) if e["event"] == "imported"]
    assert out.splitlines()[-1] == f"undo with `brain undo {event}`", out
