#!/usr/bin/env python3
"""Where a `brain serve` worker's creates spend their time, under 16 clients:

    python3 tests/bench/profile_serve_creates.py --workdir /tmp/psc                  # rate, p50, CPU a create
    python3 tests/bench/profile_serve_creates.py --workdir /tmp/psc --profile \\
        /work/venvs/prof/bin/py-spy record --pid {pid} --duration 8 --rate 100 --gil --nonblocking --format raw -o /tmp/psc/gil.txt
    python3 tests/bench/profile_serve_creates.py --parts /tmp/psc/gil.txt [--cpu-ms 16.3]

Starts `serve --workers N` (1 unless `--workers`) on a fresh copy of `bench_throughput.py`'s 10,000-card vault (made and
indexed in `--workdir` when missing, reindexed after the copy), warms it, then sends
`bench_throughput.py`'s creates from `--clients` kept-alive clients for `--seconds`, and prints
the rate, the p50 and the worker's CPU a create (user and kernel, from /proc). `--profile`: a
command started once the clients run, `{pid}` replaced by the worker's pid (py-spy is not a
dependency of the product: install it in a throw-away venv). `--parts RAW`: the share of each
part of a create in a py-spy raw (collapsed) file: `--gil` samples give the worker's CPU,
`--idle` ones a request's wall time (the waits included). The parts follow `cards.create_card`:
planning (`_plan_ahead`, before its write lock), under the lock (`_plan_and_commit`), and the waits,
found by the lines of their `with _PLANNING:` and `writing(vault)` statements in the code profiled.
"""

from __future__ import annotations

import argparse
import collections
import inspect
import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_throughput as bt  # noqa: E402


def worker_cpu(pid: int) -> tuple[float, float]:
    """(user + system, system) seconds of CPU the process has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, int(fields[12]) / tick


def run(args) -> None:
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "pycache"
    vault = bt.make_vault(work, args.cards, cache)
    ours = bt.fresh_copy(vault, "profiled-writes")
    bt.agreeing_index(ours, cache)
    ids = bt.card_ids(ours)
    server, port, line = bt.start([sys.executable, str(bt.SCRIPT), "serve", "--port", "0", "--workers", str(args.workers)],
                                  bt.env_for(ours, cache), work / "profiled-serve.err")
    print(f"{line}; worker pid {server.pid}", flush=True)
    profiler = None
    try:
        bt.load(port, 2, 1.0, bt.writer_requests(args.op, ids))   # every route's code imported
        if args.profile:
            profiler = subprocess.Popen([part.replace("{pid}", str(server.pid)) for part in args.profile])
            time.sleep(1.0)   # the profiler attached before the clients start
        cpu0, sys0 = worker_cpu(server.pid)
        began = time.monotonic()
        result = bt.load(port, args.clients, args.seconds, bt.writer_requests(args.op, ids))
        elapsed = time.monotonic() - began
        cpu1, sys1 = worker_cpu(server.pid)
        count = result["count"]
        print(f"{count} creates in {elapsed:.1f} s: {result['rate']:.1f}/s, p50 {result['p50'] * 1000:.1f} ms, "
              f"p99 {result['p99'] * 1000:.1f} ms, {len(result['bad'])} non-2xx; worker CPU "
              f"{(cpu1 - cpu0) / elapsed:.2f} cores, {1000 * (cpu1 - cpu0) / count:.1f} ms a create "
              f"(kernel {1000 * (sys1 - sys0) / count:.1f}); load {os.getloadavg()[0]:.1f}", flush=True)
        if profiler is not None:
            profiler.wait()
    finally:
        if profiler is not None and profiler.poll() is None:
            profiler.terminate()
        print(f"server exit code after SIGTERM: {bt.stop(server)}")


def create_lines() -> tuple[int, int]:
    """The lines of `_plan_ahead`'s `with _PLANNING:` and `_plan_and_commit`'s `writing(vault)` statements."""
    sys.path.insert(0, str(HERE.parents[1] / "runtime"))
    from external_brain import cards

    def line_of(function, text: str) -> int:
        source, first = inspect.getsourcelines(function)
        return next(first + at for at, line in enumerate(source) if text in line)

    return line_of(cards._plan_ahead, "with _PLANNING"), line_of(cards._plan_and_commit, "writing(vault)")


def _line(frame: str) -> int:
    return int(re.search(r":(\d+)\)", frame).group(1))


def part_of(frames: list[str], planning: int, locked: int) -> str:
    """The part of a create a sampled stack (outermost first, `name (file:line)`) is in."""
    names = [frame.split(" (")[0] for frame in frames]
    if "ThreadingMixIn.process_request_thread" not in names:
        if any("FoldUpkeep" in name for name in names):
            return "other thread: the index's upkeep"
        return "other thread (the fsync pool, the accept loop, the watchdog)"
    if "create_card" not in names:
        if any(name in ("SocketIO.readinto", "BufferedReader.readline") for name in names[-3:]):
            return "HTTP: waiting for the next request"
        return "HTTP: parsing, the route's checks, the answer"
    if "_plan_ahead" in names:
        at = names.index("_plan_ahead")
        inner = names[at + 1:]
        if _line(frames[at]) == planning and not inner:
            return "waiting for the planning lock (`_PLANNING`)"
        if "related" in inner[:1]:
            return "planning: the candidate search"
        if "suggested_tags" in inner:
            return "planning: suggested tags"
        if "_judge_draft" in inner:
            return "planning: judging"
        return "planning: the rest (index connection, log mark)"
    if "_plan_and_commit" not in names:
        return "before planning (checks, vectors)"
    at = names.index("_plan_and_commit")
    inner = names[at + 1:]
    if _line(frames[at]) == locked:
        if inner[:1] == ["_GeneratorContextManager.__enter__"]:
            return "waiting for the write lock"
        if inner[:1] == ["_GeneratorContextManager.__exit__"]:
            return "leaving the lock: the batch's fsync and the wait for it"
        return "taking the write lock (recovery check, index refreshed)"
    if "Writer.commit" in inner:
        return "locked: Writer.commit (journal, card, log)"
    if "Index.wrote_files" in inner:
        return "locked: the pass-on to the index"
    if "_creation" in inner:
        return "locked: the new card's file and events (`_creation`)"
    if "_insights_after" in inner or "_insights" in inner:
        return "locked: judging the cards written meanwhile"
    if "still_related" in inner:
        return "locked: the candidates brought up to now"
    return "locked: the rest"


def parts(raw: Path, cpu_ms: float | None) -> None:
    planning, locked = create_lines()
    counts: collections.Counter[str] = collections.Counter()
    for text in raw.read_text().splitlines():
        stack, _, number = text.rpartition(" ")
        if stack:
            counts[part_of(stack.split(";"), planning, locked)] += int(number)
    total = sum(counts.values())
    requests = sum(count for name, count in counts.items() if not name.startswith("other thread"))
    print(f"{total} samples of {raw}, {requests} of them in request threads; share of all samples"
          + (f", ms = that share x {cpu_ms:g} ms" if cpu_ms else "") + ", share of the request threads' samples")
    for name, count in counts.most_common():
        share = count / total
        among = "" if name.startswith("other thread") else f" {100 * count / requests:5.1f}%"
        print(f"{100 * share:5.1f}%" + (f" {share * cpu_ms:5.2f} ms" if cpu_ms else "") + f"{among:>7}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/profile-serve-creates")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1,
                        help="`serve --workers`; the profile and the CPU figure are of the first worker")
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--op", choices=("create", "create-no-insights"), default="create",
                        help="create-no-insights: creates that ask for no insights")
    parser.add_argument("--parts", type=Path, help="print the parts of a py-spy raw file instead of running")
    parser.add_argument("--cpu-ms", type=float, help="with --parts: the CPU a create, to turn shares into ms")
    parser.add_argument("--profile", nargs=argparse.REMAINDER, default=[],
                        help="a profiler command, {pid} for the worker's pid; must come last")
    args = parser.parse_args()
    if args.parts:
        parts(args.parts, args.cpu_ms)
    else:
        run(args)


if __name__ == "__main__":
    main()
