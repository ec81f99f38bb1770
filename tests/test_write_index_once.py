"""`record` and `update` of a card named by its id (every HTTP feedback and PATCH) open the search
index once (`cards.write_index`): the id is looked up there before the write lock and the written
card passed on to it under the lock, through the same connection. Each runs here in a process of
its own, with the index's openings counted, and the index then holds the card as written."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from helpers import ROOT, ok_data

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


def indexed_stamp(vault: Path, rel: str) -> tuple[int, int]:
    folder, name = rel.rsplit("/", 1)
    with sqlite3.connect(vault / ".brain" / "cache" / "index.sqlite") as db:
        return db.execute("SELECT size, mtime_ns FROM docs WHERE folder = ? AND name = ?", (folder, name)).fetchone()


def file_stamp(vault: Path, rel: str) -> tuple[int, int]:
    st = os.stat(vault / rel)
    return st.st_size, st.st_mtime_ns


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
