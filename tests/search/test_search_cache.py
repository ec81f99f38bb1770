"""Search through the real CLI around its derived cache: the empty vault and the empty query,
reads that never write a card, a cache that can be deleted or corrupted without loss, and
cards edited, added or deleted by hand (as in Obsidian) seen by the very next search."""

from __future__ import annotations

import os
import shutil
import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest

from external_brain.vault.storage import iso, now
from helpers import file_hashes, log_event, log_lines, ok_data, run_cli, run_json, write_card

INDEX = Path(".brain") / "cache" / "index.sqlite"
SQLITE_HEADER = b"SQLite format 3\x00"

OLD_CARD = """---
id: 0f5a3c52-4a53-4a8e-9d0b-5b1f7c2e9a11
title: Legacy NFS Mount Hangs
type: troubleshooting
domain: infra
tags: [nfs, legacy]
confidence: 0.8
created: {old}
updated: {old}
last_used: {old}
---
# Legacy NFS Mount Hangs

## Fix
Mount with `soft,timeo=30` so a dead fileserver does not hang every process.
"""


def create(title: str, tags: str, body: str, type_: str = "runbook", domain: str = "ops") -> str:
    return ok_data("create", "--type", type_, "--domain", domain, "--title", title,
                   "--tags", tags, "--body", body)["path"]


@pytest.fixture
def cards(vault: Path) -> dict[str, str]:
    """Three cards made by `create`, by short name -> vault-relative path."""
    return {
        "tls": create("Rotate TLS certificates", "tls,certs", "Renew with certbot, then reload nginx."),
        "pool": create("Connection pooling for PostgreSQL", "postgres,pooling",
                       "Put pgbouncer in front of the database.", "pattern", "dev"),
        "ecs": create("ECS task timeout", "ecs,timeout", "Allow egress 443 in the security group.",
                      "troubleshooting", "infra"),
    }


def hits(*argv: str) -> list[dict]:
    return ok_data("search", *argv)["hits"]


def hit_paths(*argv: str) -> list[str]:
    return [hit["path"] for hit in hits(*argv)]


QUERIES = ("certbot", "pgbouncer database", "ecs timeout", "nginx postgres egress")


def all_hits() -> dict[str, list[dict]]:
    return {query: hits(query) for query in QUERIES}


def card_mtimes(root: Path) -> dict[str, int]:
    return {rel: (root / rel).stat().st_mtime_ns for rel in file_hashes(root, ("Playbooks", "Inbox"))}


# ---------------------------------------------------------------------------- empty vault, empty query

def test_searching_an_empty_vault_finds_nothing(vault):
    code, out, err = run_cli("search", "anything")
    assert code == 0, err
    assert ok_data("search", "anything")["hits"] == []


@pytest.mark.parametrize("query", ["", "   "])
def test_an_empty_query_is_a_usage_error_that_creates_nothing(vault, cards, query):
    inbox, log = file_hashes(vault, ("Inbox",)), log_lines(vault)
    code, out, err = run_cli("search", query)
    assert (code, out) == (2, "")
    assert err.startswith("brain: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    assert "query" in err.lower()
    code, envelope, err = run_json("search", query)
    assert code == 2 and envelope["ok"] is False
    assert envelope["error"]["code"] == "INVALID_ARGUMENT"
    assert file_hashes(vault, ("Inbox",)) == inbox
    assert log_lines(vault) == log


# ---------------------------------------------------------------------------- reads never write a card

def test_no_read_command_writes_a_card(vault, cards):
    long_ago = iso(now() - timedelta(days=200))
    old = write_card(vault, "Playbooks/Troubleshooting_Legacy_NFS_Mount_Hangs.md", OLD_CARD.format(old=long_ago))
    # Created by the tool 200 days ago, so it decays (docs/card-format.md, Confidence) (an imported note would not yet).
    log_event(vault, "created", "Playbooks/Troubleshooting_Legacy_NFS_Mount_Hangs.md",
              "0f5a3c52-4a53-4a8e-9d0b-5b1f7c2e9a11", long_ago)
    learned = ok_data("learn", "--title", "Gunicorn worker timeout", "--type", "troubleshooting",
                      "--domain", "dev", "--tags", "gunicorn", "--problem", "WORKER TIMEOUT after 30 s",
                      "--solution", "raise --timeout")["path"]
    before, mtimes = file_hashes(vault, ("Playbooks", "Inbox")), card_mtimes(vault)
    assert len([rel for rel in before if rel.endswith(".md")]) == 5 and learned in before

    # Reads show the decayed confidence (200 days: 0.8 - 0.05 x 110/30 = 0.6167) ...
    listed = {card["path"]: card["confidence"] for card in ok_data("list")["cards"]}
    assert listed["Playbooks/Troubleshooting_Legacy_NFS_Mount_Hangs.md"] == pytest.approx(0.6167, abs=1e-4)
    assert [hit["confidence"] for hit in hits("nfs")] == [pytest.approx(0.6167, abs=1e-4)]
    reads = [
        ("search", "nfs mount"),
        ("search", "certbot", "--domain", "ops", "--type", "runbook", "--tag", "tls", "--status", "any"),
        ("search", "timeout", "--explain"),
        ("search", "timeout", "--explain", "--json"),
        ("search", "pgbouncer", "--limit", "1", "--json"),
        ("get", "Playbooks/Troubleshooting_Legacy_NFS_Mount_Hangs.md"),
        ("get", cards["tls"], "--json"),
        ("get", learned),
        ("list",), ("list", "--sort", "confidence", "--json"),
        ("audit",), ("audit", "--json"),
        ("doctor",), ("doctor", "--json"),
        ("context",), ("context", "--json"),
    ]
    for argv in reads:
        code, _, err = run_cli(*argv)
        assert code == 0, (argv, err)
    code, _, _ = run_cli("recall", "no-such-key")
    assert code != 0

    # ... and none of them stored it, or touched any other card.
    assert file_hashes(vault, ("Playbooks", "Inbox")) == before
    assert card_mtimes(vault) == mtimes
    assert "confidence: 0.8\n" in old.read_text(encoding="utf-8")


# ---------------------------------------------------------------------------- the cache is disposable

def test_deleting_the_cache_loses_nothing(vault, cards):
    expected = all_hits()
    assert all(expected.values())
    shutil.rmtree(vault / ".brain" / "cache")
    assert all_hits() == expected
    assert (vault / INDEX).read_bytes().startswith(SQLITE_HEADER)


def garbage(path: Path) -> None:
    path.write_bytes(b"\xde\xad\xbe\xef not an index " * (path.stat().st_size // 20 + 1))


def truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", [garbage, truncated])
def test_a_damaged_index_is_rebuilt(vault, cards, damage):
    expected = all_hits()
    assert all(expected.values())
    damage(vault / INDEX)
    assert all_hits() == expected  # ok_data also asserts exit 0
    assert (vault / INDEX).read_bytes().startswith(SQLITE_HEADER)
    with sqlite3.connect(vault / INDEX) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]


# ---------------------------------------------------------------------------- edits made by hand

def test_a_card_edited_by_hand_is_found_by_the_next_search(vault, cards):
    assert hit_paths("certbot") == [cards["tls"]]  # the index now holds the old text
    path = vault / cards["tls"]
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("Renew with certbot", "Renew with quuxinator"), encoding="utf-8")
    assert path.stat().st_size != len(text.encode())
    assert hit_paths("quuxinator") == [cards["tls"]]
    assert hit_paths("certbot") == []


def test_a_same_size_edit_with_a_later_mtime_is_found_by_the_next_search(vault, cards):
    assert hit_paths("certbot") == [cards["tls"]]
    path = vault / cards["tls"]
    stat = path.stat()
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("certbot", "zorblax"), encoding="utf-8")  # same length
    assert path.stat().st_size == stat.st_size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert hit_paths("zorblax") == [cards["tls"]]
    assert hit_paths("certbot") == []


def test_a_card_added_by_hand_is_found_by_the_next_search(vault, cards):
    assert hit_paths("ecs timeout") == [cards["ecs"]]
    write_card(vault, "Playbooks/Troubleshooting_Redis_Eviction.md",
               "---\ntitle: Redis eviction storm\ntype: troubleshooting\ndomain: infra\n"
               "tags: [redis]\nconfidence: 0.5\n---\n# Redis eviction storm\n\nSet maxmemory-policy "
               "to allkeys-lru before the flurbish job runs.\n")
    assert hit_paths("flurbish") == ["Playbooks/Troubleshooting_Redis_Eviction.md"]


def test_a_card_deleted_by_hand_is_gone_from_the_next_search(vault, cards):
    assert hit_paths("pgbouncer") == [cards["pool"]]
    assert cards["pool"] in hit_paths("nginx postgres egress")
    (vault / cards["pool"]).unlink()
    assert hit_paths("pgbouncer") == []
    assert cards["pool"] not in hit_paths("nginx postgres egress")
