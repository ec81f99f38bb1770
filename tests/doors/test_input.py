"""Hostile input (issue 8, defects 12 and 13, parts of 6 and 15): arguments and standard input
that are not UTF-8, characters no card can hold, a `--vault` that is not a vault, odd keys and
TTLs. Each is refused with one clear line before anything is written."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT, bytecode_settings, events, ok_data, run_cli, run_json, vault_hashes, write_card

GOOD = "---\ntitle: Pooling\ntype: pattern\ndomain: dev\ntags: [pooling]\nconfidence: 0.5\n---\n# Pooling\n\nUse pgbouncer.\n"


@pytest.fixture
def card(vault):
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD)
    return "Playbooks/Pattern_Pooling.md"


def refused(vault: Path, message: str, *argv: str, stdin: str | None = None, code: int = 2) -> None:
    """argv exits with `code`, prints exactly `brain: error: message`, and changes nothing (the
    log included)."""
    before, log = vault_hashes(vault), events(vault)
    got, out, err = run_cli(*argv, stdin=stdin)
    assert (got, out, err) == (code, "", f"brain: error: {message}\n"), argv
    assert vault_hashes(vault) == before and events(vault) == log


# ---------------------------------------------------------------------------- not UTF-8

def test_arguments_that_are_not_utf8_are_refused_before_anything_is_written(vault, card):
    # Python hands undecodable argv bytes over as lone surrogates: b"\xff" becomes "\udcff".
    message = "argument 4 (caf\\xe9) is not valid UTF-8; pass arguments as UTF-8 text"
    refused(vault, message, "record", card, "used", "caf\udce9")
    refused(vault, "argument 7 (caf\\xe9) is not valid UTF-8; pass arguments as UTF-8 text",
            "create", "--type", "pattern", "--domain", "dev", "--title", "caf\udce9")
    got, envelope, err = run_json("remember", "k", "--body", "\udcff")
    assert (got, err) == (2, "") and envelope["command"] == "remember"
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"


def test_real_processes_with_bytes_that_are_not_utf8(vault, card):
    env = {"BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "test", "PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    env.update(bytecode_settings())
    before = vault_hashes(vault)
    argv = [sys.executable, str(SCRIPT), "record", card, "used", b"caf\xe9"]
    result = subprocess.run(argv, env=env, capture_output=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr == b"brain: error: argument 4 (caf\\xe9) is not valid UTF-8; pass arguments as UTF-8 text\n"

    argv = [sys.executable, str(SCRIPT), "create", "--type", "pattern", "--domain", "dev", "--title", "T",
            "--body", "-"]
    result = subprocess.run(argv, env=env, input=b"ok \xff\xfe then", capture_output=True, timeout=60)
    assert (result.returncode, result.stdout) == (2, b"")
    assert result.stderr == (b"brain: error: standard input is not UTF-8 text (byte 3: b'\\xff'); "
                             b"pipe the body as UTF-8\n")
    assert vault_hashes(vault) == before and events(vault) == []


def test_standard_input_that_is_not_utf8_is_refused(vault, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"note \xe9"), encoding="utf-8"))
    refused(vault, "standard input is not UTF-8 text (byte 5: b'\\xe9'); pipe the body as UTF-8",
            "remember", "k", "--body", "-")


# ---------------------------------------------------------------------------- what a card cannot hold

def test_a_nul_is_refused_up_front_everywhere(vault, card):
    nul = "a NUL character (U+0000) at character 2"
    refused(vault, f"body holds {nul}; a card holds text only: remove it",
            "create", "--type", "fact", "--domain", "infra", "--title", "T", "--body", "a\x00b")
    refused(vault, f"body holds {nul}; a card holds text only: remove it",
            "create", "--type", "fact", "--domain", "infra", "--title", "T", "--body", "-", stdin="a\x00b")
    assert not (vault / "Playbooks" / "Fact_T.md").exists()
    refused(vault, f"body holds {nul}; a card holds text only: remove it", "remember", "k", "--body", "-",
            stdin="a\x00b")
    refused(vault, f"title holds {nul}; give one line of plain text",
            "create", "--type", "fact", "--domain", "infra", "--title", "T\x00x")
    refused(vault, f"note holds {nul}; a card holds text only: remove it", "record", card, "used", "n\x00te")
    refused(vault, f"body holds {nul}; a card holds text only: remove it",
            "learn", "--title", "L", "--type", "pattern", "--domain", "dev", "--problem", "p\x00", "--solution", "s")
    refused(vault, f"working-memory key holds {nul}; give one line of plain text", "remember", "k\x00", "--body", "v")
    refused(vault, "tag 'a\\x00' holds a NUL character (U+0000) at character 2; give one line of plain text",
            "create", "--type", "fact", "--domain", "infra", "--title", "T", "--tags", "a\x00")
    # What a card can hold still goes through: any printable text, emoji joined by U+200D included.
    assert ok_data("create", "--type", "fact", "--domain", "infra", "--title", "家族 👨\u200d👩\u200d👧 notes",
                   "--body", "tab\there, ESC \x1b[1m bold")["created"]


@pytest.mark.parametrize("key, shown", [
    ("k\u2028", "the character U+2028 (LINE SEPARATOR) at character 2"),
    ("k\u2029x", "the character U+2029 (PARAGRAPH SEPARATOR) at character 2"),
    ("k\u200bx", "the character U+200B (ZERO WIDTH SPACE) at character 2"),
    ("k\x1b[31m", "the character U+001B (Cc) at character 2"),
])
def test_keys_with_separators_control_or_format_characters_are_refused(vault, key, shown):
    refused(vault, f"working-memory key holds {shown}; give one line of plain text", "remember", key, "--body", "v")
    assert list((vault / "WorkingMemory").glob("*.md")) == []


def test_a_key_is_never_silently_changed(vault):
    refused(vault, "working-memory key 'k\\u3000' starts or ends with a space; give the key without it",
            "remember", "k\u3000", "--body", "v")
    assert ok_data("remember", "two words", "--body", "v")["key"] == "two words"


# ---------------------------------------------------------------------------- TTL

def test_a_ttl_must_be_between_one_minute_and_a_hundred_years(vault):
    for ttl in ("1e-300", "0.0001", "0", "-1", "nan", "inf", "36501"):
        refused(vault, f"--ttl {float(ttl)} is out of range; give a number of days from 0.0007 (one minute) to 36500",
                "remember", "k", "--ttl", ttl, "--body", "v")
    ok_data("remember", "k", "--ttl", "0.0007", "--body", "v")  # the shortest: kept for a minute
    assert run_cli("recall", "k")[:2] == (0, "v\n")


# ---------------------------------------------------------------------------- --vault

def test_an_empty_vault_argument_is_bad_usage(vault, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got, out, err = run_cli("--vault", "", "search", "x")
    assert (got, out) == (2, "") and err == "brain: error: --vault is empty; give the vault's folder, e.g. --vault ~/notes\n"
    got, envelope, err = run_json("search", "x", "--vault", "")
    assert (got, envelope["command"], envelope["error"]["code"]) == (2, "search", "INVALID_ARGUMENT")


def test_a_folder_that_is_not_a_vault_is_refused_and_left_untouched(vault, tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    message = f"{empty} is not a vault (no .brain/ or Playbooks/ in it); create one with `brain init {empty}`"
    for argv in (("--vault", str(empty), "search", "x"), ("list", "--vault", str(empty)),
                 ("--vault", str(empty), "remember", "k", "--body", "v")):
        got, out, err = run_cli(*argv)
        assert (got, out, err) == (1, "", f"brain: error: {message}\n"), argv
    monkeypatch.setenv("BRAIN_VAULT", str(empty))
    got, envelope, err = run_json("search", "x")
    assert got == 1 and envelope["error"] == {"code": "VAULT_NOT_FOUND", "message": message, "details": {}}
    assert list(empty.iterdir()) == []

    # A hand-made vault (just Playbooks/ with notes) is a vault. Reads may write the cache and
    # the log; they never create Inbox/ or WorkingMemory/.
    root = tmp_path / "handmade"
    write_card(root, "Playbooks/Pooling.md", GOOD)
    write_card(root, "Playbooks/Certs.md", GOOD.replace("Pooling", "Certs").replace("pgbouncer", "certbot"))
    monkeypatch.setenv("BRAIN_VAULT", str(root))
    for argv in (("search", "pgbouncer"), ("list",), ("get", "Pooling"), ("audit",), ("doctor",), ("context",)):
        assert run_cli(*argv)[0] == 0, argv
    assert run_cli("recall", "k")[0] == 1
    assert sorted(p.name for p in root.iterdir()) == [".brain", "Playbooks", "logs"]


def test_json_error_for_an_unknown_command_does_not_name_the_vault_as_the_command(vault):
    got, envelope, err = run_json("--vault", str(vault), "frobnicate")
    assert (got, err) == (2, "")
    assert envelope["command"] is None and envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert str(vault) not in json.dumps(envelope["command"])
    got, envelope, err = run_json("--vault", str(vault), "list", "--bogus")
    assert envelope["command"] == "list"
