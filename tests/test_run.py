"""tests/run.py, the suite on every core: what it passes to pytest and how it stops."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

RUN = Path(__file__).resolve().parent / "run.py"


def _runner(*args: str, cwd: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "BRAIN_TEST_PROCESSES": "2", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}   # pytest alone: the plugins installed here take ~1.5 s a start
    return subprocess.Popen([sys.executable, str(RUN), *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **popen)


def _own_suite(root: Path, body: str) -> Path:
    """A folder of tests with a conftest that takes --shard (the runner is under test, not the sharing)."""
    root.mkdir()
    (root / "conftest.py").write_text("def pytest_addoption(parser):\n    parser.addoption('--shard')\n")
    (root / "test_one.py").write_text(body)
    return root


def test_paths_are_taken_from_the_folder_the_runner_is_started_in(tmp_path):
    suite = _own_suite(tmp_path / "suite", "def test_a():\n    pass\n")
    out, _ = _runner("-q", "test_one.py", cwd=suite).communicate(timeout=60)
    assert "1 passed" in out and "not found" not in out, out


def test_an_option_that_reads_the_cache_runs_one_plain_pytest(tmp_path):
    # The shares run without pytest's cache (each would overwrite the others' failures): `--lf` was an
    # unknown option to every share, exit 4.
    suite = _own_suite(tmp_path / "suite", "def test_a():\n    pass\n")
    runner = _runner("-q", "--lf", "test_one.py", cwd=suite)
    out, _ = runner.communicate(timeout=60)
    assert runner.returncode == 0 and "1 passed" in out and "[1/2]" not in out, out


def test_an_interrupt_sent_to_the_runner_alone_stops_every_share(tmp_path):
    started = tmp_path / "started"
    suite = _own_suite(tmp_path / "suite", (
        "import os, time\n"
        f"def test_a():\n    open({str(started)!r} + str(os.getpid()), 'w').close(); time.sleep(60)\n"
        f"def test_b():\n    open({str(started)!r} + str(os.getpid()), 'w').close(); time.sleep(60)\n"))
    runner = _runner("-q", cwd=suite, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while len(list(tmp_path.glob("started*"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    shares = [int(path.name[len("started"):]) for path in tmp_path.glob("started*")]
    assert len(shares) == 2
    runner.send_signal(signal.SIGINT)
    try:
        out, _ = runner.communicate(timeout=20)
    finally:
        for pid in shares:   # a share left running is the failure: stop it
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
    assert runner.returncode == 2, out
    assert "KeyboardInterrupt" in out and "Traceback" not in out, out
    assert not [pid for pid in shares if Path(f"/proc/{pid}").exists()], out


def test_a_number_of_processes_that_is_not_a_whole_number_is_refused_with_a_message(tmp_path):
    for wanted in ("0", "two", "²", "-1"):
        done = subprocess.run([sys.executable, str(RUN), "--co"], cwd=tmp_path, capture_output=True, text=True,
                              env={**os.environ, "BRAIN_TEST_PROCESSES": wanted}, timeout=30)
        assert done.returncode == 1 and "give a whole number of processes" in done.stderr, (wanted, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
