#!/usr/bin/env python3
"""The whole suite on every core: `python3 tests/run.py [pytest options and paths]`.

Runs one pytest process per core (at most 4; `BRAIN_TEST_PROCESSES=N` to choose, 1 runs plain
pytest), each on its share of the tests (`--shard K/N`, tests/conftest.py: every N-th test),
with their lines prefixed `[K/N]`, and ends with each share's summary line. Exit status: the
first failing share's (pytest's own codes), 0 when every share passed. The tests share nothing
between processes (each has its own vault, temporary folders and free ports), so a share's
result is what one process running all the tests gives for those tests.
`python3 -m pytest` runs the same tests in one process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS = 5   # pytest's exit status when a share holds no test (a narrow -k, one file)


def processes() -> int:
    wanted = os.environ.get("BRAIN_TEST_PROCESSES", "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            sys.exit(f"run.py: BRAIN_TEST_PROCESSES={wanted!r}: give a whole number of processes, 1 or more")
        return int(wanted)
    return max(1, min(len(os.sched_getaffinity(0)), 4))


def main(argv: list[str]) -> int:
    count = processes()
    command = [sys.executable, "-m", "pytest", *argv]
    if count == 1:
        return subprocess.call(command, cwd=ROOT)
    shares = [subprocess.Popen([*command, f"--shard={k}/{count}", "-p", "no:cacheprovider"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
              for k in range(1, count + 1)]
    last_lines: list[str] = [""] * count
    lock = threading.Lock()

    def relay(k: int, share: subprocess.Popen) -> None:
        for line in share.stdout:
            with lock:
                sys.stdout.write(f"[{k + 1}/{count}] {line}")
                sys.stdout.flush()
            if line.strip():
                last_lines[k] = line.strip()

    relays = [threading.Thread(target=relay, args=(k, share)) for k, share in enumerate(shares)]
    for thread in relays:
        thread.start()
    codes = [share.wait() for share in shares]
    for thread in relays:
        thread.join()
    for k, (code, line) in enumerate(zip(codes, last_lines)):
        print(f"share {k + 1}/{count}: {line} (exit {code})")
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    if failed:
        return failed[0]
    return NO_TESTS if all(code == NO_TESTS for code in codes) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
