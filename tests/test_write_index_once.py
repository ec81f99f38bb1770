"""`record` and `update` of a card named by its id (every HTTP feedback and PATCH) open the search
index once (`cards.write_index`): the id is looked up there before the write lock and the written
card passed on to it under the lock, through the same connection. Each runs here in a process of
its own, with the index's openings counted, and the index then holds the card as written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, file_stamp, indexed_stamp, ok_data

COUNTED = f"""
import json, sys
sys.path.insert(0, {str(ROOT / 'runtime')!r})
from external_brain.search.index import Index
from external_brain.doors.cli import main
opened = []
existing, open_ = Index.existing.__func__, Index.open.__func__
Index.existing = classmethod(lambda cls, *a, **k: (opened.append("existing"), existing(cls, *a, **k))[1])
Index.open = classmethod(lambda cls, *a, **k: (opened.append("open"), open_(cls, *a, **k))[1])
code = main(sys.argv[1:])
print(json.dumps(opened), file=sys.stderr)
sys.exit(code)
"""


def run_counted(*argv: str) -> tuple[dict, list[str]]:
    done = subprocess.run([sys.executable, "-c", COUNTED, *argv, "--json"], env={**os.environ, "BRAIN_ACTOR": "test"},
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["data"], json.loads(done.stderr.strip().splitlines()[-1])


def test_feedback_and_an_update_by_id_open_the_index_once_and_pass_the_card_on(vault: Path) -> None:
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    card_id, rel = made["id"], made["path"]

    data, opened = run_counted("record", card_id, "used")
    assert data["outcome"] == "used"
    assert opened == ["existing"]   # the lookup and the pass-on share it (two before)
    assert indexed_stamp(vault, rel) == file_stamp(vault, rel)

    data, opened = run_counted("update", card_id, "--append", "Cap the delay at 30 s.")
    assert "Cap the delay" in (vault / data["path"]).read_text(encoding="utf-8")
    assert opened == ["existing"]
    assert indexed_stamp(vault, data["path"]) == file_stamp(vault, data["path"])
    assert [c["path"] for c in ok_data("search", "delay cap")["hits"]] == [data["path"]]


def test_by_path_the_index_is_opened_only_to_pass_the_card_on(vault: Path) -> None:
    made = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
                   "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    data, opened = run_counted("record", made["path"], "rejected")
    assert data["outcome"] == "rejected" and opened == ["existing"]
    assert indexed_stamp(vault, made["path"]) == file_stamp(vault, made["path"])


def test_a_create_searches_and_writes_through_one_index_connection(vault: Path) -> None:
    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
            "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    data, opened = run_counted("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with backoff",
                               "--body", "Back off exponentially between attempts.")
    assert opened == ["existing"]   # searched before the write lock, refreshed and written under it (was: + open)
    assert [link["path"] for link in data["insights"]["suggested_links"]] == ["Playbooks/Pattern_Retry_with_jitter.md"]
    assert indexed_stamp(vault, data["path"]) == file_stamp(vault, data["path"])


def test_a_card_saved_by_hand_while_a_create_waits_is_seen_through_the_kept_connection(vault: Path) -> None:
    # The folder changed after the create's search: the refresh under the lock finds it (and the
    # create searches again), as a connection opened under the lock did.
    from test_create_subject_reuse import blocked_on_a_lock

    from external_brain.vault.storage import Vault, take_lock

    ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Retry with jitter",
            "--body", "Back off exponentially, with jitter.")
    ok_data("search", "jitter")
    lock = take_lock(Vault(vault), "write")
    try:
        process = subprocess.Popen([sys.executable, "-c", COUNTED, "create", "--type", "pattern", "--domain", "dev",
                                    "--title", "Retry with backoff", "--body", "Back off exponentially.", "--json"],
                                   env={**os.environ, "BRAIN_ACTOR": "test"}, cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True)
        import time
        deadline = time.monotonic() + 120
        while not blocked_on_a_lock(process.pid):
            assert process.poll() is None and time.monotonic() < deadline, "the create never waited for the lock"
            time.sleep(0.005)
        (vault / "Playbooks" / "Pattern_Retry_with_backoff_by_hand.md").write_text(
            "---\nid: 6a1d1f0e-1f7e-4c53-9d55-3f4f1f7b0001\ntitle: Retry with backoff\ntype: pattern\ndomain: dev\n"
            "---\n\n# Retry with backoff\n\nBack off exponentially.\n", encoding="utf-8")
    finally:
        os.close(lock)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 0, err
    insights = json.loads(out)["data"]["insights"]
    assert "Playbooks/Pattern_Retry_with_backoff_by_hand.md" in [d["path"] for d in insights["potential_duplicates"]]
    assert json.loads(err.strip().splitlines()[-1]) == ["existing"]
