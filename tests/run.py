#!/usr/bin/env python3
"""The whole suite on every core: `python3 tests/run.py [pytest options and paths]`.

Runs one pytest process per core (at most 4; `BRAIN_TEST_PROCESSES=N` to choose, 1 runs plain
pytest), each on its share of the tests (`--shard K/N`, tests/conftest.py: every N-th test),
with their lines prefixed `[K/N]`, and ends with each share's summary line. Exit status: the
first failing share's (pytest's own codes), 0 when every share passed. The tests share nothing
between processes (each has its own vault, temporary folders and free ports), so a share's
result is what one process running all the tests gives for those tests.
`python3 -m pytest` runs the same tests in one process; so does this runner when an option reads
pytest's cache (`--lf`, `--ff`, `--sw` ...), which the shares leave alone (N processes would each
overwrite the others' failures). Paths are taken from the folder it is run in, as pytest takes them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_TESTS = 5   # pytest's exit status when a share holds no test (a narrow -k, one file)
INTERRUPTED = 2
SHARE_GRACE_SECONDS = 3
CACHE_OPTIONS = ("--lf", "--last-failed", "--ff", "--failed-first", "--nf", "--new-first", "--sw", "--stepwise",
                 "--sw-skip", "--stepwise-skip", "--lfnf", "--last-failed-no-failures", "--cache-show",
                 "--cache-clear")


def processes() -> int:
    wanted = os.environ.get("BRAIN_TEST_PROCESSES", "").strip()
    if wanted:
        if not wanted.isdecimal() or int(wanted) < 1:   # (isdigit takes "²", which int() refuses)
            sys.exit(f"run.py: BRAIN_TEST_PROCESSES={wanted!r}: give a whole number of processes, 1 or more")
        return int(wanted)
    return max(1, min(len(os.sched_getaffinity(0)), 4))


def reads_cache(argv: list[str]) -> bool:
    return any(arg.split("=", 1)[0] in CACHE_OPTIONS for arg in argv)


def main(argv: list[str]) -> int:
    # The shares run where this runner was started (not at the checkout's top): a path given from
    # tests/ or a folder under it names the same file for pytest as for the person who typed it.
    count = 1 if reads_cache(argv) else processes()
    command = [sys.executable, "-m", "pytest", *argv]
    if count == 1:
        return subprocess.call(command)
    shares = [subprocess.Popen([*command, f"--shard={k}/{count}", "-p", "no:cacheprovider"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
              for k in range(1, count + 1)]
    last_lines: list[str] = [""] * count
    lock = threading.Lock()

    def relay(k: int, share: subprocess.Popen) -> None:
        for line in share.stdout:
            with lock:
                sys.stdout.write(f"[{k + 1}/{count}] {line}")
                sys.stdout.flush()
            if line.strip() and not line.startswith(" "):   # not the indented `rootdir:` after a usage error
                last_lines[k] = line.strip()

    relays = [threading.Thread(target=relay, args=(k, share)) for k, share in enumerate(shares)]
    for thread in relays:
        thread.start()
    try:
        codes = [share.wait() for share in shares]
    except KeyboardInterrupt:
        # Trigger: Ctrl-C, or an interrupt sent to this runner alone (a CI job cancelled). Why: the
        # shares would run on unseen, and the relays keep this process alive until they end.
        # Outcome: each share is interrupted as pytest would be and prints what it ran; status 2.
        # A terminal's Ctrl-C reached the shares too: a second interrupt could cut their teardown
        # (servers they stop), so a share gets a few seconds to end on its own first.
        deadline = time.monotonic() + SHARE_GRACE_SECONDS
        for share in shares:
            try:
                share.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                share.send_signal(signal.SIGINT)
        codes = [share.wait() for share in shares]
        codes = [INTERRUPTED if code < 0 else code for code in codes]
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
