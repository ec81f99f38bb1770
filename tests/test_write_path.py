"""One write path (issue 26): every operation commits its files and events through
`writes.commit_operation`, which also hands its Playbooks cards to the search index. A call of
the journal's own `Writer.commit` anywhere else would be a write that skips that step (as
`promote` once did), so this test fails on one. The journal itself (`vault/`, whose `settled`
operation runs below the operations) and `writes.py` are the only places that call it."""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT, parsed_module

PACKAGE = ROOT / "runtime" / "external_brain"
ALLOWED = {PACKAGE / "writes.py"}


def commit_calls(path: Path, base: Path = PACKAGE) -> list[str]:
    """`<path from base>:<line>` of each call of a method named `commit` in the file."""
    tree = parsed_module(path)
    return [f"{path.relative_to(base)}:{node.lineno}" for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "commit"]


def test_only_the_write_path_calls_the_journals_commit() -> None:
    offenders = [call for path in sorted(PACKAGE.rglob("*.py"))
                 if path not in ALLOWED and (PACKAGE / "vault") not in path.parents
                 for call in commit_calls(path)]
    assert offenders == [], "commit through writes.commit_operation, not Writer.commit"


def test_the_check_sees_a_direct_commit(tmp_path: Path) -> None:
    # Guard for the guard: the spelling `promote` used before is caught.
    module = tmp_path / "mod.py"
    module.write_text("def promote(writer, effects, events):\n    writer.commit(effects, events)\n",
                      encoding="utf-8")
    assert commit_calls(module, tmp_path) == ["mod.py:2"]
