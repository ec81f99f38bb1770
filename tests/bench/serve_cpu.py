#!/usr/bin/env python3
"""How much of the machine `brain serve` uses for writes, and what a write costs it in CPU:

    python3 tests/bench/serve_cpu.py --op create --seconds 8 --pairs 3 \\
        --against /tmp/base/runtime/playbook_api.py --workdir /tmp/sc

For `--op` create, patch, feedback or search (bench_throughput.py's requests: a new insight card, PATCH
/v1/memories/ID appending a unique marker to one of 200 cards, POST /v1/memories/ID/feedback on
one of them, or a two-word search), `--clients` (16) kept-alive
clients load `serve` (`--workers` passed on when given) on a copy of a `--cards` (10,000)
vault for `--seconds`, after a short warm-up. Printed per run: the rate, p50, the server's
CPU (every worker process, from /proc) in cores and in ms per write, the CPU each worker
process used, so idle cores show, and the client connections each one held halfway through.

With `--against [NAME=]SCRIPT` (another checkout's `runtime/playbook_api.py`, e.g. an archive
of main; repeatable), each pair runs every side one after the other, rotating the order; each side
writes to its own copy of the vault (both grow alike), and the medians of rate and CPU are
printed side by side. The load on a shared machine moves both sides: read the pairs; `--quiet
0.8` waits before each pair until the machine is that idle (a server that cannot get the cores
it could use shows nothing about its idle ones).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_throughput as bt  # noqa: E402


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of one process (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workers_of(server: subprocess.Popen) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(server.pid)], capture_output=True, text=True).stdout
    return [server.pid, *(int(p) for p in out.split())]


def machine_idle(seconds: float = 3.0) -> float:
    """The share of the machine's CPU time left idle over `seconds` (/proc/stat)."""
    def sample() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        return fields[3] + fields[4], sum(fields)   # idle + iowait, all
    idle0, all0 = sample()
    time.sleep(seconds)
    idle1, all1 = sample()
    return (idle1 - idle0) / max(all1 - all0, 1)


def wait_for_quiet(wanted: float, most: float) -> float:
    """Wait (at most `most` seconds) until the machine is at least `wanted` idle; returns the idle share seen."""
    deadline = time.monotonic() + most
    idle = machine_idle()
    while idle < wanted and time.monotonic() < deadline:
        idle = machine_idle()
    return idle


def connections(pids: list[int]) -> list[int]:
    """The TCP connections each process holds open (sockets in /proc/PID/fd, less the listening one)."""
    counts = []
    for pid in pids:
        links = []
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            fds = []
        for fd in fds:
            try:
                links.append(os.readlink(f"/proc/{pid}/fd/{fd}"))
            except OSError:   # closed while listed
                pass
        counts.append(max(0, sum(link.startswith("socket:") for link in links) - 1))
    return counts


def requests_for(op: str, ids: list[str]):
    return bt.search_requests if op == "search" else bt.writer_requests(op, ids)


def one_run(script: str, vault: Path, cache: Path, work: Path, args, ids: list[str]) -> dict:
    argv = [sys.executable, script, "serve", "--port", "0"]
    if args.workers:
        argv += ["--workers", str(args.workers)]
    server, port, _ = bt.start(argv, bt.env_for(vault, cache), work / "serve.err")
    try:
        bt.load(port, 2, 1.0, requests_for(args.op, ids))   # every route's code imported first
        pids = workers_of(server)
        before = {pid: process_cpu(pid) for pid in pids}
        began = time.monotonic()
        seen: list[list[int]] = []
        timer = threading.Timer(args.seconds / 2, lambda: seen.append(connections(pids)))
        timer.start()
        run = bt.load(port, args.clients, args.seconds, requests_for(args.op, ids))
        timer.join()
        elapsed = time.monotonic() - began
        used = {pid: process_cpu(pid) - before[pid] for pid in pids}
    finally:
        code = bt.stop(server)
    total = sum(used.values())
    return {"rate": run["rate"], "p50": run["p50"], "count": run["count"], "bad": len(run["bad"]), "exit": code,
            "cores": total / elapsed, "ms": total * 1000 / max(run["count"], 1),
            "per_worker": [round(u / elapsed, 2) for u in used.values()], "connections": seen[0] if seen else []}


def show(side: str, run: dict, op: str) -> None:
    print(f"  {side:<8} {run['rate']:6.1f}/s  p50 {run['p50'] * 1000:6.1f} ms  CPU {run['cores']:.2f} cores "
          f"{run['ms']:5.1f} ms/{'search' if op == 'search' else 'write'}  workers {run['per_worker']} connections {run['connections']}"
          f"{'  non-2xx ' + str(run['bad']) if run['bad'] else ''}{'  exit ' + str(run['exit']) if run['exit'] else ''}",
          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--op", choices=("create", "create-no-insights", "patch", "feedback", "search"), default="create")
    parser.add_argument("--seconds", type=float, default=8)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--cards", type=int, default=10000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--pairs", type=int, default=1, help="runs per side (alternating with --against)")
    parser.add_argument("--against", action="append", default=[], metavar="[NAME=]SCRIPT",
                        help="another playbook_api.py to run alternately (repeatable)")
    parser.add_argument("--script", default=str(bt.SCRIPT), help="the playbook_api.py measured (this checkout's)")
    parser.add_argument("--quiet", type=float, default=0.0, metavar="SHARE",
                        help="before each pair, wait (up to --quiet-wait s) until this share of the CPU is idle")
    parser.add_argument("--quiet-wait", type=float, default=180)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/serve-cpu"))
    args = parser.parse_args()
    work = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "pycache"
    vault = bt.make_vault(work, args.cards, cache)
    sides = [("ours", args.script)]
    for number, given in enumerate(args.against):
        name, _, script = given.rpartition("=")
        sides.append((name or ("against" if len(args.against) == 1 else f"against{number + 1}"), script))
    copies = {}
    for side, script in sides:
        copies[side] = bt.fresh_copy(vault, f"cpu-{side}")
        bt.agreeing_index(copies[side], cache)
    ids = bt.random.Random(7).sample(bt.card_ids(copies["ours"]), 200)
    results: dict[str, list[dict]] = {side: [] for side, _ in sides}
    print(f"{args.op}, {args.clients} clients, {args.seconds:g} s a run, {args.cards} cards, "
          f"workers {args.workers or 'default'}; load {os.getloadavg()[0]:.1f}", flush=True)
    for pair in range(args.pairs):
        idle = wait_for_quiet(args.quiet, args.quiet_wait) if args.quiet else machine_idle(1.0)
        print(f"pair {pair + 1} (machine {idle:.0%} idle before it)", flush=True)
        turn = pair % len(sides)   # each side goes first in turn, and the order reverses every other pair
        order = sides[turn:] + sides[:turn]
        for side, script in order if pair % 2 == 0 else order[::-1]:
            run = one_run(script, copies[side], cache, work, args, ids)
            results[side].append(run)
            show(side, run, args.op)
    print(f"medians over {args.pairs} run(s); load {os.getloadavg()[0]:.1f}")
    for side, runs in results.items():
        print(f"  {side:<8} {statistics.median(r['rate'] for r in runs):6.1f}/s  "
              f"p50 {statistics.median(r['p50'] for r in runs) * 1000:6.1f} ms  "
              f"CPU {statistics.median(r['cores'] for r in runs):.2f} cores "
              f"{statistics.median(r['ms'] for r in runs):5.1f} ms a request")


if __name__ == "__main__":
    main()
