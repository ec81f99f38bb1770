"""Storage: hand-written notes survive writes byte for byte, card addressing, safe file names,
atomic writes and `init`."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from external_brain.vault import frontmatter
from external_brain.vault.storage import (
    Vault, atomic_write, card_filename, init_vault, safe_component, unique_path,
)
from helpers import ok_data, run_cli, run_json, vault_hashes, write_card

OBSIDIAN_NOTE = """\
---
aliases:
  - Kafka rebalance storms
  - "別名: リバランス"
cssclasses: [wide]
rating: 4
published: 2024-01-05
author: 'Jane: the "reviewer"'
confidence: 0.6
source:
  site: example.com
  pages: [1, 2]
カテゴリ: 日本語のプロパティ
tags:
- kafka
- notes
---
# Kafka Consumer Rebalancing

Written by hand in Obsidian. Raise max.poll.interval.ms when processing is slow.
"""


@pytest.mark.parametrize("variant", ["lf", "crlf", "bom", "bom+crlf"])
def test_a_write_changes_only_the_confidence_line_and_adds_an_id(vault, variant):
    text = OBSIDIAN_NOTE.replace("\n", "\r\n") if "crlf" in variant else OBSIDIAN_NOTE
    raw = ("\ufeff" if "bom" in variant else "") + text
    path = write_card(vault, "Playbooks/Kafka Rebalancing.md", raw.encode("utf-8"))
    old_lines = path.read_bytes().splitlines(keepends=True)
    assert ok_data("search", "kafka rebalancing")["hits"][0]["path"] == "Playbooks/Kafka Rebalancing.md"

    data = ok_data("record", "Kafka Rebalancing", "used")
    assert (data["before"], data["after"]) == (0.6, 0.64)

    new_lines = path.read_bytes().splitlines(keepends=True)
    eol = b"\r\n" if "crlf" in variant else b"\n"
    id_lines = [line for line in new_lines if line.startswith(b"id: ")]
    assert id_lines == [f"id: {data['id']}".encode() + eol]
    rest = [line for line in new_lines if line not in id_lines]
    changed = [i for i, (a, b) in enumerate(zip(old_lines, rest)) if a != b]
    assert len(rest) == len(old_lines)
    assert [old_lines[i] for i in changed] == [b"confidence: 0.6" + eol]
    assert [rest[i] for i in changed] == [b"confidence: 0.64" + eol]
    assert path.read_bytes().startswith(b"\xef\xbb\xbf---" if "bom" in variant else b"---")

    # The custom properties read back as the person wrote them.
    meta = frontmatter.parse(path.read_text(encoding="utf-8")).data
    assert meta["cssclasses"] == ["wide"] and meta["rating"] == 4 and meta["published"] == "2024-01-05"
    assert meta["aliases"] == ["Kafka rebalance storms", "別名: リバランス"]
    assert meta["author"] == 'Jane: the "reviewer"' and meta["カテゴリ"] == "日本語のプロパティ"
    assert meta["source"] == {"site": "example.com", "pages": [1, 2]}
    assert meta["id"] == data["id"]

    # A second write finds the id and adds nothing else.
    ok_data("record", data["id"], "used")
    assert path.read_bytes().count(b"\nid: ") == 1
    assert path.read_bytes().splitlines(keepends=True)[:8] == new_lines[:8]


def test_a_note_without_frontmatter_is_searchable_and_gains_a_small_header(vault):
    body = "# Flaky Selenium Waits\n\nUse explicit waits, never sleep.\n"
    path = write_card(vault, "Playbooks/flaky.md", body)
    [hit] = ok_data("search", "selenium waits")["hits"]
    assert hit["title"] == "Flaky Selenium Waits" and hit["id"] is None and hit["confidence"] == 0.5
    data = ok_data("record", "flaky", "rejected")
    text = path.read_text(encoding="utf-8")
    assert text == f"---\nid: {data['id']}\nconfidence: 0.45\n---\n{body}"


# ---------------------------------------------------------------------------- addressing

def test_a_card_is_addressed_by_path_stem_id_and_id_prefix(vault):
    data = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry With Jitter",
                   "--tags", "retry")
    path, card_id = data["path"], data["id"]
    for ref in (path, path[:-3], "Pattern_Retry_With_Jitter", card_id,
                card_id[:8], card_id[:13]):
        got = ok_data("get", ref)
        assert (got["path"], got["id"]) == (path, card_id), ref

    code, out, err = run_cli("get", card_id[:7])  # shorter than 8: not an id prefix
    assert (code, out) == (1, "")
    assert err == (f"brain: error: no card with path, stem or id {card_id[:7]!r}; "
                   "`brain search` or `brain list` finds it\n")


def test_an_id_prefix_shared_by_two_cards_is_ambiguous(vault):
    for name in ("One", "Two"):
        write_card(vault, f"Playbooks/{name}.md",
                   f"---\nid: abcdef12-0000-4000-8000-00000000000{len(name)}{name}\ntitle: {name}\n---\n# {name}\n")
    before = vault_hashes(vault)
    code, envelope, err = run_json("get", "abcdef12")
    assert code == 1 and envelope["error"]["code"] == "AMBIGUOUS"
    assert "Playbooks/One.md" in envelope["error"]["message"] and "Playbooks/Two.md" in envelope["error"]["message"]
    assert ok_data("get", "abcdef12-0000-4000-8000-000000000003One")["path"] == "Playbooks/One.md"
    assert vault_hashes(vault) == before


def test_inbox_cards_are_addressable_and_other_folders_are_not(vault):
    write_card(vault, "Inbox/Candidate.md", "---\ntitle: Candidate\n---\n# Candidate\n")
    write_card(vault, "WorkingMemory/secret.md", "---\nkey: secret\n---\nnot a card\n")
    assert ok_data("get", "Candidate")["path"] == "Inbox/Candidate.md"
    code, out, err = run_cli("get", "WorkingMemory/secret.md")
    assert code == 2
    assert err == ("brain: error: WorkingMemory/secret.md is not in Playbooks/ or Inbox/; "
                   "only cards can be addressed\n")


# ---------------------------------------------------------------------------- file names

@pytest.mark.parametrize("title, stem", [
    ("ECS External API Timeout via SG Egress", "ECS_External_API_Timeout_via_SG_Egress"),
    ("RDS 接続タイムアウト（セキュリティグループ）", "RDS_接続タイムアウト（セキュリティグループ）"),
    ("a/b:c*d?e", "abcde"),
    ('Why <not> "quote" | pipe #hash [x]', "Why_not_quote_pipe_hash_x"),
    ("  spaces   everywhere  ", "spaces_everywhere"),
    ("../../etc/passwd", "etcpasswd"),
])
def test_safe_file_names(title, stem):
    assert safe_component(title) == stem
    assert card_filename("troubleshooting", title) == f"Troubleshooting_{stem}.md"


def test_a_title_with_nothing_usable_is_refused(vault):
    before = vault_hashes(vault)
    code, out, err = run_cli("create", "--type", "pattern", "--domain", "dev", "--title", "/:*?")
    assert (code, out) == (2, "")
    assert err == ("brain: error: title '/:*?' has no usable characters; "
                   "give a title with letters or digits\n")
    assert vault_hashes(vault) == before


def test_create_keeps_japanese_drops_unsafe_characters_and_numbers_clashes(vault):
    made = [ok_data("create", "--type", "insight", "--domain", "general", "--title", title)["path"]
            for title in ("日本語: メモ/テスト?", "日本語 メモテスト", "日本語* メモ:テスト")]
    assert made == ["Playbooks/Insight_日本語_メモテスト.md", "Playbooks/Insight_日本語_メモテスト_2.md",
                    "Playbooks/Insight_日本語_メモテスト_3.md"]
    titles = [frontmatter.parse((vault / p).read_text(encoding="utf-8")).data["title"] for p in made]
    assert titles == ["日本語: メモ/テスト?", "日本語 メモテスト", "日本語* メモ:テスト"]  # the title itself is kept


def test_unique_path_appends_a_number(tmp_path):
    assert unique_path(tmp_path, "X.md") == tmp_path / "X.md"
    (tmp_path / "X.md").write_text("")
    (tmp_path / "X_2.md").write_text("")
    assert unique_path(tmp_path, "X.md") == tmp_path / "X_3.md"


# ---------------------------------------------------------------------------- atomic writes

def test_atomic_write_replaces_the_file_keeps_its_mode_and_leaves_no_temp_file(tmp_path):
    folder = tmp_path / "folder"
    target = folder / "card.md"  # the folder is created on the first write
    atomic_write(target, "first\n")
    assert target.read_text() == "first\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    os.chmod(target, 0o600)
    inode = target.stat().st_ino
    atomic_write(target, "second ✓\n")
    assert target.read_bytes() == "second ✓\n".encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place
    atomic_write(target, b"\x00bytes")
    assert target.read_bytes() == b"\x00bytes"
    assert sorted(p.name for p in folder.iterdir()) == ["card.md"]


def test_atomic_write_removes_its_temp_file_when_the_write_fails(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    target = folder / "card.md"
    target.write_text("old\n")

    class Boom:  # not bytes: writing it fails after the temp file exists
        pass

    with pytest.raises(Exception):
        atomic_write(target, Boom())  # type: ignore[arg-type]
    assert target.read_text() == "old\n"
    assert sorted(p.name for p in folder.iterdir()) == ["card.md"]


def test_cli_writes_leave_no_temp_files(vault):
    path = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Temp Check")["path"]
    ok_data("record", path, "used")
    ok_data("remember", "k", "--body", "v")
    ok_data("learn", "--title", "T", "--type", "pattern", "--domain", "dev", "--problem", "p", "--solution", "s")
    leftovers = [p for p in vault.rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


# ---------------------------------------------------------------------------- init

def test_init_creates_the_layout(tmp_path):
    root = tmp_path / "new" / "vault"
    code, out, err = run_cli("init", str(root))
    assert (code, err) == (0, "")
    assert out.startswith(f"vault ready at {root.resolve()} (created ")
    for folder in ("Playbooks", "Inbox", "WorkingMemory", "logs", ".brain"):
        assert (root / folder).is_dir(), folder
    config = (root / ".brain" / "config.toml").read_text(encoding="utf-8")
    assert "[confidence]" in config and "# alpha = 0.1" in config
    assert "cache/" in (root / ".brain" / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert "logs/*.jsonl merge=union" in (root / ".gitattributes").read_text(encoding="utf-8").splitlines()
    # The commented defaults are the defaults: the file loads to the same settings as no file.
    from external_brain.vault.config import Settings

    assert Vault(root.resolve()).settings == Settings()


def test_init_is_idempotent_and_keeps_what_is_there(tmp_path):
    root = tmp_path / "vault2"
    root.mkdir()
    (root / ".gitattributes").write_text("*.png binary")  # no final newline
    assert run_cli("init", str(root))[0] == 0
    assert (root / ".gitattributes").read_text() == (
        "*.png binary\nlogs/*.jsonl merge=union\nPlaybooks/**/*.md merge=brain\nInbox/**/*.md merge=brain\n"
        "WorkingMemory/*.md merge=brain\n.brain/deleted/**/*.md merge=brain\n")
    (root / ".brain" / "config.toml").write_text("[search]\nlimit = 3\n")
    before = vault_hashes(root)

    data = ok_data("init", str(root))
    assert data == {"vault": str(root.resolve()), "created": [],
                    "git": {"work_tree": None, "merge_driver": None, "changed": False, "notes": []}}
    assert vault_hashes(root) == before
    code, out, err = run_cli("init", str(root))
    assert (code, out, err) == (0, f"vault ready at {root.resolve()} (nothing to create)\n", "")
    _, created = init_vault(root)
    assert created == []


def test_init_refuses_a_file(tmp_path):
    target = tmp_path / "a-file"
    target.write_text("x")
    code, out, err = run_cli("init", str(target))
    assert (code, out) == (2, "")
    assert err == f"brain: error: {target} exists and is not a directory; choose another path\n"
    assert target.read_text() == "x"


def test_the_fixture_vault_was_made_by_init(vault: Path, tmp_path: Path):
    assert re.fullmatch(r".*/vault", str(vault))
    assert os.environ["BRAIN_VAULT"] == str(vault)
    assert (vault / ".brain" / "config.toml").is_file()
    # The fixture copies one vault `init` made (tests/conftest.py): it holds exactly what `init`
    # makes at this test's own path, file for file and byte for byte.
    fresh = tmp_path / "fresh" / "vault"
    assert run_cli("init", str(fresh))[0] == 0

    def layout(root: Path) -> dict[str, bytes | None]:
        return {p.relative_to(root).as_posix(): None if p.is_dir() else p.read_bytes() for p in root.rglob("*")}

    assert layout(vault) == layout(fresh) and len(layout(vault)) >= 10


def test_init_on_an_older_vault_adds_the_missing_ignore_lines_and_keeps_the_persons(tmp_path):
    root = tmp_path / "old"
    (root / ".brain").mkdir(parents=True)
    (root / ".brain" / ".gitignore").write_text("cache/\nlocks/\njournal*.json\n# mine\nscratch/")  # no final newline
    assert run_cli("init", str(root))[0] == 0
    assert (root / ".brain" / ".gitignore").read_text() == "cache/\nlocks/\njournal*.json\n# mine\nscratch/\njobs/\n"
    before = vault_hashes(root)
    assert run_cli("init", str(root))[0] == 0 and vault_hashes(root) == before


def test_a_vaults_paths_are_checked_and_made_once_and_a_refusal_stands(tmp_path: Path) -> None:
    # A server makes a Vault per request, and a record asked it for the log's path ~10 times under
    # the write lock: each path is checked and made once per Vault, and one that leads outside
    # the vault is refused every time it is asked for.
    from external_brain.errors import UnsafeVault

    vault, _ = init_vault(tmp_path / "v")
    assert vault.log_path is vault.log_path and vault.log_path == vault.root / "logs" / "events.jsonl"
    assert vault.cache_dir is vault.cache_dir and vault.cache_dir == vault.root / ".brain" / "cache"
    assert vault.brain_dir is vault.brain_dir and vault.brain_dir == vault.root / ".brain"
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.replace(vault.root / "logs", outside / "logs")
    os.symlink(outside / "logs", vault.root / "logs")
    moved = Vault(vault.root)
    for _ in range(2):
        with pytest.raises(UnsafeVault):
            moved.log_path
    assert moved.cache_dir == vault.root / ".brain" / "cache"
