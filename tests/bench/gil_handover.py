#!/usr/bin/env python3
"""What a durable write's fsyncs cost when another thread of the same process is busy in Python:

    python3 tests/bench/gil_handover.py [--pairs 300] [--busy 0 1]

For each count of busy threads (threads adding numbers in a loop, as a server's planning thread
does), writes two small files and makes them durable `--pairs` times, two ways: `fsync_together`
(the journal line and the card, as `Writer.commit` does: one in a helper thread, one here) and
one fsync after the other; prints p50, p90 and the mean of each. With no busy thread the figures
are the disk's; with one, the thread that returns from an fsync waits for the interpreter (up to
`sys.getswitchinterval()`, 5 ms) before it can go on: the hand-over a locked write pays in a
worker whose other threads plan (decision 0038, "The interpreter's hand-over after an fsync").
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from external_brain.vault.storage import fsync_together  # noqa: E402


def timed_pairs(descriptors: list[int], pairs: int, together: bool) -> list[float]:
    times = []
    for _ in range(pairs):
        for fd in descriptors:
            os.pwrite(fd, b"y" * 200, 0)
        began = time.perf_counter()
        if together:
            fsync_together(descriptors)
        else:
            for fd in descriptors:
                os.fsync(fd)
        times.append(time.perf_counter() - began)
    return times


def run(busy: int, pairs: int, folder: Path) -> None:
    stop = threading.Event()

    def burn() -> None:
        count = 0
        while not stop.is_set():
            count += 1

    burners = [threading.Thread(target=burn, daemon=True) for _ in range(busy)]
    for thread in burners:
        thread.start()
    descriptors = [os.open(folder / f"file{n}", os.O_RDWR | os.O_CREAT, 0o644) for n in range(2)]
    try:
        for together in (True, False):
            times = sorted(timed_pairs(descriptors, pairs, together))
            name = "fsync_together" if together else "one after the other"
            print(f"busy threads {busy}  {name:20}  p50 {1000 * times[len(times) // 2]:6.2f} ms  "
                  f"p90 {1000 * times[int(len(times) * 0.9)]:6.2f} ms  mean {1000 * statistics.mean(times):6.2f} ms",
                  flush=True)
    finally:
        stop.set()
        for fd in descriptors:
            os.close(fd)
        for thread in burners:
            thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--busy", type=int, nargs="+", default=[0, 1])
    args = parser.parse_args()
    print(f"switch interval {1000 * sys.getswitchinterval():g} ms; load {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory(prefix="gil-handover-") as folder:
        for busy in args.busy:
            run(busy, args.pairs, Path(folder))


if __name__ == "__main__":
    main()
