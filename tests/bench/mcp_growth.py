#!/usr/bin/env python3
"""What an MCP stdio server grows by over many calls, and where (issue 22's bound: < 10 MB over 1,000 calls):

    python3 tests/bench/mcp_growth.py --vault /tmp/v10k                 # RSS only
    python3 tests/bench/mcp_growth.py --vault /tmp/v10k --trace 25      # + tracemalloc, call 200 against the last

`--vault` is made with `gen_vault.py` (`--cards`, 10,000) when it does not exist; each run works on a copy of
it, reindexed. The server (`brain mcp`, `--script`: this checkout's) gets `initialize`, one call of each tool, then
`--calls` (1,000) calls of a mix: `--creates` (0.5) of them `store_memory` of a new note (bench_throughput.py's
create: a unique 12-word insight), the rest `recall_memories` of two words, `list_memories` and `brief` in turn.
Printed: the RSS (/proc) after call 200 and after the last, and their difference; the whole run's growth from after
the first call of each tool, as bench_doors.py counts it. With `--trace N` the server runs under tracemalloc
(N frames; RSS then includes tracemalloc's own tables, so read RSS from a run without it) and the largest
differences between the snapshots taken after call 200 and after the last are printed by line, each with its
allocating stack.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_doors import rss_kb  # noqa: E402
from bench_throughput import words  # noqa: E402
from gen_vault import generate  # noqa: E402

SCRIPT = HERE.parents[1] / "runtime" / "playbook_api.py"

# The server under tracemalloc: SIGUSR1 writes a snapshot to $GROWTH_SNAPSHOT, the package's functools caches
# (where each one's function is, its size and bound) to +".caches", then the file named +".done".
TRACED = """
import json, os, runpy, signal, sys, tracemalloc
tracemalloc.start(int(os.environ["GROWTH_FRAMES"]))
def caches():
    out = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("external_brain"):
            continue
        for attribute, value in list(vars(module).items()):
            code = getattr(getattr(value, "__wrapped__", None), "__code__", None)
            if code is None or not hasattr(value, "cache_info"):
                continue
            lines = [line for _, _, line in code.co_lines() if line]
            info = value.cache_info()
            out[f"{name}.{attribute}"] = [code.co_filename, min(lines), max(lines), info.currsize, info.maxsize]
    return out
def dump(*_):
    target = os.environ["GROWTH_SNAPSHOT"]
    tracemalloc.take_snapshot().dump(target)
    with open(target + ".caches", "w") as f:
        json.dump(caches(), f)
    open(target + ".done", "w").close()
signal.signal(signal.SIGUSR1, dump)
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def memory(pid: int) -> str:
    """VmRSS, RssAnon and RssFile of a process, in MB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return " / ".join(f"{name} {int(fields[name].split()[0]) / 1024:.1f}" for name in ("VmRSS", "RssAnon", "RssFile"))


class Server:
    def __init__(self, script: Path, vault: Path, frames: int, workdir: Path) -> None:
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "bench", "GROWTH_FRAMES": str(frames),
               "GROWTH_SNAPSHOT": str(workdir / "snapshot")}
        argv = [sys.executable, "-c", TRACED, str(script), "mcp"] if frames else [sys.executable, str(script), "mcp"]
        self.process = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL)
        self.workdir = workdir
        self.number = 0

    def call(self, method: str, params: dict) -> dict:
        self.number += 1
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.number, "method": method,
                                             "params": params}).encode() + b"\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def tool(self, name: str, arguments: dict) -> dict:
        answer = self.call("tools/call", {"name": name, "arguments": arguments})
        assert not answer["result"].get("isError"), answer
        return answer

    def snapshot(self, name: str):
        import tracemalloc

        done = self.workdir / "snapshot.done"
        done.unlink(missing_ok=True)
        self.process.send_signal(signal.SIGUSR1)
        for _ in range(6000):   # the dump of a large trace takes seconds
            if done.exists():
                break
            time.sleep(0.05)
        else:
            raise SystemExit("the server wrote no snapshot")
        kept = self.workdir / name
        os.replace(self.workdir / "snapshot", kept)
        snapshot = tracemalloc.Snapshot.load(str(kept))
        snapshot.caches = json.loads((self.workdir / "snapshot.caches").read_text())
        return snapshot

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def cache_bytes(snapshot) -> dict[str, int]:
    """The traced bytes still alive that were allocated inside each cached function (the innermost one on the
    allocation's stack): what its cache holds, as far as the traced frames reach."""
    ranges: dict[str, list[tuple[int, int, str]]] = {}
    for name, (filename, first, last, _, _) in snapshot.caches.items():
        ranges.setdefault(filename, []).append((first, last, name))
    held: dict[str, int] = {}
    for trace in snapshot.traces:
        for frame in reversed(trace.traceback):   # the most recent frame first
            found = next((name for first, last, name in ranges.get(frame.filename, ())
                          if first <= frame.lineno <= last), None)
            if found:
                held[found] = held.get(found, 0) + trace.size
                break
    return held


def calls(rng: random.Random, count: int, creates: float):
    others = ("recall", "list", "brief")
    for number in range(count):
        if rng.random() < creates:
            yield "store_memory", {"content": f"Bench note {number} {os.urandom(4).hex()}: {words(rng, 12)}",
                                   "context_name": "bench", "tags": ["bench", f"mix{number % 7}"],
                                   "memory_type": "insight"}
            continue
        kind = others[number % 3]
        if kind == "recall":
            yield "recall_memories", {"query": words(rng, 2)}
        elif kind == "list":
            yield "list_memories", {"limit": 5}
        else:
            yield "brief", {"query": words(rng, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vault", type=Path, required=True, help="made with gen_vault.py when missing")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--creates", type=float, default=0.5)
    parser.add_argument("--mark", type=int, default=200, help="the call the growth is read from")
    parser.add_argument("--trace", type=int, default=0, metavar="FRAMES")
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--script", type=Path, default=SCRIPT)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--every", type=int, default=0, help="also print RSS (anonymous + file) every N calls")
    args = parser.parse_args()
    if not args.vault.exists():
        generate(args.vault, args.cards)
        subprocess.run([sys.executable, str(SCRIPT), "--vault", str(args.vault), "reindex"], check=True,
                       capture_output=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        vault = work / "vault"
        shutil.copytree(args.vault, vault, symlinks=True)
        # The copy's files have new inodes, which the index's freshness check takes for changed files: the
        # copy is reindexed first, or the server's first refresh would reindex every card.
        subprocess.run([sys.executable, str(args.script), "--vault", str(vault), "reindex"], check=True,
                       capture_output=True)
        server = Server(args.script, vault, args.trace, work)
        try:
            server.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                       "clientInfo": {"name": "growth", "version": "1"}})
            for name, arguments in (("recall_memories", {"query": "connection timeout"}),
                                    ("list_memories", {"limit": 5}), ("brief", {"query": "connection timeout"}),
                                    ("store_memory", {"content": "Bench warm-up note: retry the deploy",
                                                      "context_name": "bench", "tags": ["bench"]})):
                server.tool(name, arguments)
            start = rss_kb(server.process.pid)
            marked = first = None
            rng = random.Random(args.seed)
            for number, (name, arguments) in enumerate(calls(rng, args.calls, args.creates), 1):
                server.tool(name, arguments)
                if args.every and number % args.every == 0:
                    print(f"  call {number:5d}: {name:16s} RSS {memory(server.process.pid)}", flush=True)
                if number == args.mark:
                    marked = rss_kb(server.process.pid)
                    first = server.snapshot("at-mark") if args.trace else None
            end = rss_kb(server.process.pid)
            last = server.snapshot("at-end") if args.trace else None
        finally:
            server.close()
    print(f"{args.calls} calls, {args.creates:.0%} store_memory, on a copy of {args.vault}"
          + (f" (tracemalloc, {args.trace} frames: RSS includes its tables)" if args.trace else ""))
    print(f"RSS after one call of each tool {start / 1024:7.1f} MB")
    print(f"RSS after call {args.mark:<5}          {marked / 1024:7.1f} MB")
    print(f"RSS after call {args.calls:<5}          {end / 1024:7.1f} MB")
    print(f"growth, call {args.mark} to {args.calls}       {(end - marked) / 1024:7.1f} MB")
    print(f"growth, the whole run           {(end - start) / 1024:7.1f} MB (as bench_doors.py counts it)")
    if first is None or last is None:
        return
    import tracemalloc

    quiet = [tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    print(f"functools caches of the package (entries at call {args.mark} -> {args.calls} / bound; live MB their "
          "calls allocated, by the innermost cached call on the stack):")
    held_first, held_last = cache_bytes(first), cache_bytes(last)
    for name, (_, _, _, size, bound) in sorted(last.caches.items(), key=lambda kv: -held_last.get(kv[0], 0)):
        then = first.caches.get(name, [0, 0, 0, 0])[3]
        if size or then:
            print(f"  {name:58s} {then:6d} -> {size:6d} / {bound}  {held_first.get(name, 0) / 1e6:6.2f} -> "
                  f"{held_last.get(name, 0) / 1e6:6.2f} MB")
    first, last = first.filter_traces(quiet), last.filter_traces(quiet)
    total = sum(s.size_diff for s in last.compare_to(first, "filename"))
    print(f"traced growth, call {args.mark} to {args.calls}: {total / 1e6:.2f} MB; largest by line:")
    for stat in last.compare_to(first, "lineno")[:args.top]:
        frame = stat.traceback[0]
        print(f"  {stat.size_diff / 1e6:+7.3f} MB {stat.count_diff:+8d} blocks  {frame.filename}:{frame.lineno}")
    print("largest by stack:")
    for stat in last.compare_to(first, "traceback")[:max(5, args.top // 3)]:
        print(f"  {stat.size_diff / 1e6:+7.3f} MB {stat.count_diff:+8d} blocks")
        for line in stat.traceback.format(limit=min(args.trace, 10)):
            print("     " + line)


if __name__ == "__main__":
    main()
