"""Odd files and paths in a vault (issue 8, defects 8 and 9): a FIFO, a device, a symlink loop,
links out of the vault, a vault folder that is a link out of it, a name that is not UTF-8. Only
regular files inside the vault are cards; everything else is skipped, reported once by `doctor`,
and never hangs, crashes or leaks a command."""

from __future__ import annotations

import json
import os
import resource
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import SCRIPT, doctor_report, events, ok_data, run_cli, run_json, vault_hashes, write_card

GOOD = "---\ntitle: Pooling\ntype: pattern\ndomain: dev\ntags: [pooling]\nconfidence: 0.5\n---\n# Pooling\n\nUse pgbouncer.\n"
OTHER = GOOD.replace("Pooling", "Certs").replace("pooling", "tls").replace("Use pgbouncer.", "Renew with certbot.")


@pytest.fixture
def cards(vault):
    """Two good cards (one with an id, for get-by-id), beside which the odd files go."""
    write_card(vault, "Playbooks/Pattern_Pooling.md", GOOD.replace("---\ntitle", "---\nid: 0badf00d-1111\ntitle"))
    write_card(vault, "Playbooks/Pattern_Certs.md", OTHER)
    return vault


@pytest.fixture
def deadline():
    """Fail, rather than hang the suite, when a command blocks (on a FIFO, say): SIGALRM
    interrupts the blocking call with an exception."""
    def expire(signum, frame):
        raise TimeoutError("the command blocked")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def clean(*argv: str, code: int = 0) -> tuple[str, str]:
    """Run argv: it exits with `code` and prints no traceback; returns (stdout, stderr)."""
    got, out, err = run_cli(*argv)
    assert got == code, (argv, got, out, err)
    assert "Traceback" not in err
    return out, err


def every_read_and_write_works(vault: Path, odd: str, message: str) -> None:
    """With `odd` (a Playbooks/ file name) in the vault: every command runs, the good cards are
    found, and `odd` is skipped with one warning naming it once."""
    warning = f"brain: warning: skipped {odd}: {message}\n"
    out, err = clean("search", "pgbouncer")
    assert "Pattern_Pooling.md" in out and err == warning
    assert [c["path"] for c in ok_data("list")["cards"]] == ["Playbooks/Pattern_Certs.md",
                                                            "Playbooks/Pattern_Pooling.md"]
    assert clean("list")[1] == warning
    assert ok_data("reindex")
    audit = ok_data("audit")
    assert audit["total"] == 2 and {"path": odd, "line": None, "problem": message} in audit["health"]
    findings = doctor_report()["findings"]
    assert [f for f in findings if odd in f["path"] or odd in f["message"]] == [
        {"level": "error", "path": odd, "message": message, "fix": "fix the file by hand; the tool never rewrites it"}]
    assert ok_data("get", "0badf00d-1111")["path"] == "Playbooks/Pattern_Pooling.md"  # the id lookup reads heads
    assert ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Pooling again",
                   "--tags", "pooling", "--body", "pgbouncer in transaction mode")["path"]
    got, envelope, err = run_json("get", Path(odd).stem)
    assert (got, envelope["error"]["code"]) == (1, "NOT_A_CARD"), envelope
    assert envelope["error"]["message"] == f"{odd} is {message}" and err == ""


def test_a_fifo_named_like_a_card_is_skipped_and_never_waited_for(cards, deadline):
    os.mkfifo(cards / "Playbooks" / "F.md")
    every_read_and_write_works(cards, "Playbooks/F.md", "a named pipe (FIFO), not a regular file: only regular "
                                                        "files are cards; move it out of the card folders")


def test_a_device_node_named_like_a_card_is_skipped_unread(cards, deadline):
    # /dev/null's numbers: harmless when an old reader opens it (it took it for an empty card).
    try:
        os.mknod(cards / "Playbooks" / "Z.md", stat.S_IFCHR | 0o644, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    every_read_and_write_works(cards, "Playbooks/Z.md", "a character device, not a regular file: only regular "
                                                        "files are cards; move it out of the card folders")


def test_a_looping_symlink_is_skipped(cards, deadline):
    (cards / "Playbooks" / "L.md").symlink_to("L.md")
    every_read_and_write_works(cards, "Playbooks/L.md",
                               "a symlink loop (too many levels of symbolic links); fix or delete the link")
    got, out, err = run_cli("get", "Playbooks/L.md")
    assert (got, out) == (1, "") and err == ("brain: error: Playbooks/L.md is a symlink loop (too many levels of "
                                             "symbolic links); fix or delete the link\n")
    # A new card never takes the place of such a link: it gets the next free name.
    (cards / "Playbooks" / "Pattern_Loop.md").symlink_to("Pattern_Loop.md")
    assert ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Loop")["path"] == \
        "Playbooks/Pattern_Loop_2.md"
    assert os.readlink(cards / "Playbooks" / "Pattern_Loop.md") == "Pattern_Loop.md"


def test_a_symlink_to_a_device_outside_the_vault_is_never_read(cards, deadline):
    # Before: the id lookup of `get` read /dev/zero until MemoryError. Now the link is refused
    # before it is opened, since it leads out of the vault. Run in a process with a memory cap,
    # so that a reader that does read it fails fast instead of starving the machine.
    (cards / "Playbooks" / "Zero.md").symlink_to("/dev/zero")
    cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))  # noqa: E731
    result = subprocess.run([sys.executable, str(SCRIPT), "get", "0badf00d-1111", "--json"], preexec_fn=cap,
                            env={**os.environ, "BRAIN_VAULT": str(cards)}, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["data"]["path"] == "Playbooks/Pattern_Pooling.md"
    out, err = clean("search", "pgbouncer")
    assert err == ("brain: warning: skipped Playbooks/Zero.md: a symlink leading outside the vault (to /dev/zero); "
                   "delete it or point it inside the vault\n")


def test_odd_files_in_working_memory_are_skipped(vault, tmp_path, deadline):
    ok_data("remember", "task", "--body", "deploy")
    os.mkfifo(vault / "WorkingMemory" / "f.md")
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:hunter2\n")
    (vault / "WorkingMemory" / "p.md").symlink_to(secret)
    before = vault_hashes(vault)

    data = ok_data("context")
    assert [e["key"] for e in data["entries"]] == ["task"] and data["purged"] == []
    out, err = clean("context")
    assert "hunter2" not in out + err
    assert ok_data("audit")["working_memory"] == {"entries": 1, "expired": 0, "notes": 1, "saved_states": 0,
                                                "sessions": 0}
    got, out, err = run_cli("recall", "p")
    assert (got, out) == (2, "") and "hunter2" not in err
    assert err == f"brain: error: {vault}/WorkingMemory/p.md leads outside the vault {vault}; use a path inside it\n"
    got, out, err = run_cli("recall", "f")
    assert (got, out) == (1, "") and err == (
        "brain: error: WorkingMemory/f.md is a named pipe (FIFO), not a regular file: only regular files are cards; "
        "move it out of the card folders\n")
    assert vault_hashes(vault) == before

    findings = {f["path"]: f for f in doctor_report()["findings"]}
    assert findings["WorkingMemory/p.md"]["level"] == "error" and str(secret) in findings["WorkingMemory/p.md"]["message"]
    assert findings["WorkingMemory/f.md"]["level"] == "error"


# ---------------------------------------------------------------------------- folders out of the vault

LAYOUT = ["Playbooks", "Inbox", "WorkingMemory", "logs", "logs/events.jsonl", ".brain/cache"]


def link_out(vault: Path, name: str, outside: Path) -> str:
    """Move the vault entry `name` out of the vault and leave a symlink to it; returns how
    errors name it."""
    entry = vault / name
    target = outside / name.replace("/", "_")
    if entry.is_dir():
        entry.rename(target)
    else:
        entry.parent.mkdir(exist_ok=True)
        target.write_bytes(entry.read_bytes() if entry.exists() else b"")
        entry.unlink(missing_ok=True)
    entry.symlink_to(target)
    return name if name.endswith(".jsonl") else name + "/"


@pytest.mark.parametrize("name", LAYOUT)
def test_writes_never_follow_a_vault_folder_out_of_the_vault(cards, tmp_path, name):
    ok_data("get", "Pattern_Pooling")  # the log exists
    outside = tmp_path / "outside"
    outside.mkdir()
    shown = link_out(cards, name, outside)
    real = outside / name.replace("/", "_")
    before, outside_before = vault_hashes(cards), vault_hashes(outside)
    writes = {
        "Playbooks": [("create", "--type", "pattern", "--domain", "dev", "--title", "New")],
        "Inbox": [("learn", "--title", "L", "--type", "pattern", "--domain", "dev", "--problem", "p",
                   "--solution", "s")],
        "WorkingMemory": [("remember", "k", "--body", "v")],
        # An update by path opens no index before the write lock: refused before it writes too.
        ".brain/cache": [("create", "--type", "pattern", "--domain", "dev", "--title", "New"),
                         ("update", "Playbooks/Pattern_Pooling.md", "--append", "One more line.")],
    }.get(name, [("create", "--type", "pattern", "--domain", "dev", "--title", "New"),
                 ("learn", "--title", "L", "--type", "pattern", "--domain", "dev", "--problem", "p",
                  "--solution", "s"),
                 ("remember", "k", "--body", "v"), ("record", "Pattern_Pooling", "used")])
    message = (f"{shown} leads outside the vault (to {real}); make it a real "
               f"{'file' if name.endswith('.jsonl') else 'folder'} inside {cards} (or a link to one inside it)")
    for argv in writes:
        got, envelope, err = run_json(*argv)
        assert (got, err) == (1, ""), (argv, envelope)
        assert envelope["error"]["code"] == "UNSAFE_PATH" and envelope["error"]["message"] == message
    assert vault_hashes(cards) == before and vault_hashes(outside) == outside_before

    findings = doctor_report()["findings"]
    assert {"level": "error", "path": shown, "fix": f"make it a real {'file' if name.endswith('.jsonl') else 'folder'} "
            "inside the vault (or a link to one inside it)",
            "message": f"leads outside the vault (to {real}): commands refuse to write there"} in findings


def test_reads_skip_a_card_folder_that_leads_out_of_the_vault(cards, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    link_out(cards, "Playbooks", outside)
    out, err = clean("list")
    assert out == "No cards.\n"
    assert err == (f"brain: warning: skipped Playbooks/: leads outside the vault (to {outside}/Playbooks); "
                   "skipped: make it a real folder inside the vault\n")
    out, err = clean("search", "pgbouncer")
    assert "Pooling" not in out and "pgbouncer" not in err.replace('"pgbouncer"', "")
    got, out, err = run_cli("get", "Pattern_Pooling")
    assert got == 1 and "leads outside the vault" in err and "pgbouncer" not in out

    # A folder linked elsewhere INSIDE the vault is fine, for reads and writes.
    (cards / "Playbooks").unlink()
    (outside / "Playbooks").rename(cards / "Cards")
    (cards / "Playbooks").symlink_to("Cards")
    assert ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Inside Link")["created"]
    assert (cards / "Cards" / "Pattern_Inside_Link.md").is_file()
    assert clean("list")[1] == "" and len(ok_data("list")["cards"]) == 3
    assert [f for f in doctor_report()["findings"] if f["level"] == "error"] == []


# ---------------------------------------------------------------------------- doctor says it once

def test_doctor_names_a_binary_file_once(cards):
    write_card(cards, "Playbooks/Blob.md", b"PK\x03\x04\x00\x00\xff")
    code, out, err = run_cli("doctor")
    line = next(line for line in out.splitlines() if "Blob" in line)
    assert line.count("Blob.md") == 1, line
    assert line == ("error: Playbooks/Blob.md: a binary file, not a Markdown card; move it out of the card "
                    "folders -> fix the file by hand; the tool never rewrites it")


def test_a_name_that_is_not_utf8_is_one_warning_that_reindex_and_doctor_agree_on(cards):
    raw = os.fsencode(cards / "Playbooks") + b"/Caf\xe9.md"
    with open(raw, "wb") as handle:
        handle.write(b"# Cafe\n\npgbouncer notes\n")
    for _ in range(2):  # before and after a reindex: the same single warning, no index error
        findings = [f for f in doctor_report()["findings"] if f["path"] != "Playbooks/Pattern_Certs.md"]  # no id
        assert findings == [{"level": "warning", "path": "Playbooks/Caf\\xe9.md",
                             "message": "name is not UTF-8: every command skips it",
                             "fix": "rename it to a UTF-8 name (e.g. re-type it in your file manager)"}]
        ok_data("reindex")
    out, err = clean("search", "pgbouncer")
    assert err == "" and "Caf" not in out
    assert clean("list")[1] == ""


def test_reads_of_odd_files_change_nothing(cards, deadline):
    os.mkfifo(cards / "Playbooks" / "F.md")
    (cards / "Playbooks" / "L.md").symlink_to("L.md")
    ok_data("search", "pgbouncer")
    before = vault_hashes(cards)
    for argv in (("search", "pgbouncer"), ("list",), ("audit",), ("context",)):
        clean(*argv)
    clean("doctor", code=1)   # the FIFO and the loop are errors it reports
    assert vault_hashes(cards) == before
    assert stat.S_ISFIFO(os.lstat(cards / "Playbooks" / "F.md").st_mode)
    assert [e["event"] for e in events(cards)] == []
