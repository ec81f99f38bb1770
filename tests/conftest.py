"""Shared test set-up: the package is importable from the checkout, and every test runs in a
fresh vault made by the real `init` command, with `BRAIN_VAULT` pointing at it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
# The test folders mirror the package (tests/vault, tests/search, tests/doors, ...). A test module
# may use another's servers and fixtures by module name (`from test_http import start`), so each
# folder is importable whichever test pytest collects first.
FOLDERS = sorted(path for path in TESTS.iterdir() if path.is_dir() and any(path.glob("test_*.py")))
for folder in (ROOT / "runtime", TESTS, *FOLDERS):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from helpers import run_cli  # noqa: E402  (after the path set-up above)


@pytest.fixture(autouse=True)
def vault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new vault at `tmp_path / "vault"`, created by `brain init`, used by every command."""
    root = tmp_path / "vault"
    monkeypatch.delenv("BRAIN_VAULT", raising=False)
    monkeypatch.setenv("BRAIN_ACTOR", "test")
    code, out, err = run_cli("init", str(root))
    assert code == 0, err
    monkeypatch.setenv("BRAIN_VAULT", str(root))
    return root
