"""`[learn] auto_promote`: auto-learn promotes the candidates it touched that pass the rule,
through `promote`, logged and undoable; off by default."""

from __future__ import annotations

from pathlib import Path

from helpers import events, ok_data, run_json
from test_hooks import SESSION, error_then_fix, hook, inbox, open_inbox, payload, write_transcript

CANDIDATE = "Inbox/Learned_pytest_ModuleNotFoundError_No_module_named_yaml.md"
CARD = "Playbooks/Troubleshooting_pytest_ModuleNotFoundError_No_module_named_yaml.md"


def session(tmp_path: Path, name: str) -> Path:
    """The same error-then-fix lesson, seen in another session."""
    lines = [dict(line, sessionId=f"{SESSION}-{name}") for line in error_then_fix(name)]
    return write_transcript(tmp_path / f"{name}.jsonl", lines)


def configure(vault: Path, text: str) -> None:
    (vault / ".brain" / "config.toml").write_text(text, encoding="utf-8")


def test_learning_promotes_a_candidate_seen_min_evidence_times_only_when_the_config_says_so(vault, tmp_path):
    for name in ("a", "b", "c"):   # off by default: three sightings stay in the Inbox
        data = ok_data("learn", "--from-transcript", str(session(tmp_path, name)))
        assert data["promoted"] == []
    assert "evidence_count: 3" in inbox(vault)[Path(CANDIDATE).name]

    configure(vault, "[learn]\nauto_promote = true\nmin_evidence = 4\n")
    data = ok_data("learn", "--from-transcript", str(session(tmp_path, "d")))
    assert data["more_evidence"] == [CANDIDATE]
    assert data["promoted"] == [{"source": CANDIDATE, "path": CARD}]
    assert open_inbox(vault) == {} and "status: promoted" in inbox(vault)[Path(CANDIDATE).name]
    card = ok_data("get", CARD)
    assert (card["frontmatter"]["status"], card["stored_confidence"]) == ("active", 0.5)
    assert "evidence_count" not in card["frontmatter"] and "## Solution" in card["body"]
    promoted = next(e for e in reversed(events(vault)) if e["event"] == "promoted")
    assert (promoted["card"], promoted["source"]) == (CARD, CANDIDATE)
    assert promoted["reason"] == "auto after learning: score 1.0, seen 4 times"

    ok_data("undo", promoted["eid"])   # undoable like any promotion
    assert list(inbox(vault)) == [Path(CANDIDATE).name] and not (vault / CARD).exists()


def test_the_stop_hook_promotes_after_learning_and_a_single_sighting_never(vault, tmp_path):
    configure(vault, "[learn]\nauto_promote = true\nmin_evidence = 2\n")
    hook(vault, "stop", payload("Stop", session(tmp_path, "a")))
    assert list(inbox(vault)) == [Path(CANDIDATE).name]   # seen once: more evidence needed
    output, _ = hook(vault, "stop", payload("Stop", session(tmp_path, "b")))
    assert output is None and open_inbox(vault) == {} and (vault / CARD).exists()
    assert [e["event"] for e in events(vault)][-2:] == ["learned", "promoted"]


def test_a_min_evidence_under_two_is_a_config_error(vault, tmp_path):
    configure(vault, "[learn]\nauto_promote = true\nmin_evidence = 1\n")
    code, envelope, _ = run_json("learn", "--from-transcript", str(session(tmp_path, "a")))
    assert code == 1 and envelope["error"]["code"] == "CONFIG_ERROR"
    assert "learn.min_evidence: must be a whole number of sightings >= 2, got 1" in envelope["error"]["message"]
