"""Shared test set-up: the package is importable from the checkout, and every test runs in a
fresh vault made by the real `init` command, with `BRAIN_VAULT` pointing at it."""

from __future__ import annotations

import os
import re
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


@pytest.fixture(scope="session", autouse=True)
def bytecode_for_child_processes(tmp_path_factory: pytest.TempPathFactory):
    """The processes the tests start keep their bytecode in a folder of this run, as on a user's
    machine (tests/bench does the same), and not nowhere.

    Trigger: `PYTHONDONTWRITEBYTECODE` in the environment (this machine's habit) and no
    `PYTHONPYCACHEPREFIX`. Why: then each of the thousand-odd CLI, hook and server processes of a
    run compiled every module it imported that has no bytecode beside it (a clean checkout has
    none), and the regular expressions `vault.regex_programs` would keep. Outcome: the first
    process to import a module writes its bytecode under the run's temporary folder and the others
    read it; nothing is written in the checkout, and this process still writes none."""
    if "PYTHONPYCACHEPREFIX" in os.environ or "PYTHONDONTWRITEBYTECODE" not in os.environ:
        yield
        return
    saved = os.environ.pop("PYTHONDONTWRITEBYTECODE")
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    try:
        yield
    finally:
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        os.environ["PYTHONDONTWRITEBYTECODE"] = saved


_TMP_PATH_NUMBERS: dict[str, int] = {}


@pytest.fixture
def tmp_path(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new empty folder for each test, named as pytest's own `tmp_path` names it (the test's name
    cut to 30 characters, then a number: `test_x0`, `test_x1`, ...), made without listing the run.

    Trigger: every test (the autouse `vault` lives in it). Why: pytest's `tmp_path` finds the next
    number by listing the whole run folder and re-points a `<name>current` symlink each time: the
    cost grows with the folders already made (2,600 folders made that way in one folder: 6.5 s CPU,
    45 s wall on the loaded 2-core machine). Outcome: the same folder names, numbered here; `mkdir`
    without `exist_ok` still refuses a folder that exists, and then the next number is taken."""
    name = re.sub(r"[\W]", "_", request.node.name)[:30]
    base = tmp_path_factory.getbasetemp()
    while True:
        number = _TMP_PATH_NUMBERS.get(name, 0)
        _TMP_PATH_NUMBERS[name] = number + 1
        path = base / f"{name}{number}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        return path


@pytest.fixture(scope="session")
def initialized_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault made once by the real `brain init`, never used by a test: `vault` copies it."""
    root = tmp_path_factory.mktemp("initialized") / "vault"
    with pytest.MonkeyPatch.context() as env:
        env.delenv("BRAIN_VAULT", raising=False)
        env.setenv("BRAIN_ACTOR", "test")
        code, out, err = run_cli("init", str(root))
    assert code == 0, err
    return root


@pytest.fixture(scope="session")
def initialized_vault_files(initialized_vault: Path) -> list[tuple[str, bytes | None]]:
    """What `initialized_vault` holds, read once: (path in the vault, the file's bytes or None for
    a folder), parents before children."""
    return [(source.relative_to(initialized_vault).as_posix(), None if source.is_dir() else source.read_bytes())
            for source in sorted(initialized_vault.rglob("*"))]


@pytest.fixture(autouse=True)
def vault(initialized_vault_files: list[tuple[str, bytes | None]], tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new vault at `tmp_path / "vault"`, used by every command: a copy of what `brain init`
    makes (`initialized_vault`; `init` writes the same files whatever the vault's path, and
    tests/vault/test_storage.py holds it to that). Copied, not made again: `init` fsyncs each of
    its files, tens of milliseconds a test on a busy disk, and every test starts here. Written
    from the bytes read once (`initialized_vault_files`), not read again from the template for
    each test (8 x 100 copies alternating on the loaded machine: median 7.7 ms against 9.4 ms
    CPU a copy, 22 ms against 34 ms wall)."""
    root = tmp_path / "vault"
    root.mkdir()
    for rel, data in initialized_vault_files:
        target = os.path.join(root, rel)
        if data is None:
            os.mkdir(target)
        else:
            with open(target, "wb") as handle:
                handle.write(data)
    monkeypatch.delenv("BRAIN_VAULT", raising=False)
    monkeypatch.setenv("BRAIN_ACTOR", "test")
    monkeypatch.setenv("BRAIN_VAULT", str(root))
    return root


# ---------------------------------------------------------------------------- shards (tests/run.py)

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--shard", default=None, metavar="K/N",
                     help="run only the K-th of N shares of the tests (every N-th test, from the K-th): "
                          "tests/run.py runs the N shares at once, one process each")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    shard = config.getoption("--shard")
    if not shard:
        return
    try:
        k, n = (int(part) for part in shard.split("/"))
        if not 1 <= k <= n:
            raise ValueError
    except ValueError:
        raise pytest.UsageError(f"--shard {shard!r}: give K/N with 1 <= K <= N, e.g. --shard 1/2") from None
    # Every N-th test in collection order: neighbours (a module's slow and quick tests alike) are
    # dealt out in turn, so the shares take about as long without a table of past durations.
    config.hook.pytest_deselected(items=[item for i, item in enumerate(items) if i % n != k - 1])
    items[:] = [item for i, item in enumerate(items) if i % n == k - 1]
