#!/usr/bin/env python3
"""`create` wall time with this checkout's judgements beside another checkout's (the commit
before them), whole processes, interleaved run by run so both see the same machine load, on
two copies of one generated vault (gen_vault.py). Three kinds of card: a pattern, a fact (the
subject key and its supersede search) and a Japanese troubleshooting card; each is created
near cards of its topic, so the judgements run on real candidates.

    git archive c991b39 | tar -x -C /tmp/eb-before
    python3 tests/bench/bench_create_judgements.py --before /tmp/eb-before --cards 10000 --runs 25

Prints, per kind, the median wall time and the median CPU time (user + system of the child
process, from `resource.getrusage`), each with its ratio (ours / before). On a machine shared with
other work the CPU time is the steadier figure: wall times of the same command moved by +-10%
between runs of this script.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES = [
    ("pattern", "Retry queue worker timeout under load {n}", "timeout,retry,worker",
     "Workers retry the queue when the connection times out; raise the timeout and cap the retries. {n}"),
    ("fact", "Redis cache node memory limit {n}", "redis,cache,memory", "The redis cache node has 8 GB. {n}"),
    ("troubleshooting", "ECS タスクの接続タイムアウト {n}", "ecs,timeout", "接続がタイムアウトする。SG を確認する。{n}"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="a checkout (or git archive) of the commit to compare with")
    parser.add_argument("--cards", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eb-create-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "gen_vault.py"), str(work / "base"), str(args.cards)], check=True,
                       capture_output=True)
        sides = {"before": Path(args.before) / "runtime" / "playbook_api.py", "ours": ROOT / "runtime" / "playbook_api.py"}
        # The first round writes each side's bytecode under this prefix (never into the checkouts);
        # PYTHONDONTWRITEBYTECODE would stop it, and every run would then compile every module the
        # command imports (~230 ms of CPU against the ~70 ms of a create itself), so it is dropped.
        env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        for name, script in sides.items():
            shutil.copytree(work / "base", work / name)
            subprocess.run([sys.executable, str(script), "--vault", str(work / name), "reindex"], env=env, check=True,
                           capture_output=True)
        times: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind, *_ in CASES} for name in sides}
        cpu: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind, *_ in CASES} for name in sides}
        for n in range(args.runs + 1):
            for kind, title, tags, body in CASES:
                for name in (("before", "ours") if n % 2 else ("ours", "before")):
                    start = time.perf_counter()
                    used = resource.getrusage(resource.RUSAGE_CHILDREN)
                    subprocess.run([sys.executable, str(sides[name]), "--vault", str(work / name), "create", "--type",
                                    kind, "--domain", "dev", "--tags", tags, "--title", title.format(n=n), "--body",
                                    body.format(n=n)], env=env, capture_output=True, check=True)
                    if n:   # the first round warms the page cache and writes the bytecode
                        times[name][kind].append(time.perf_counter() - start)
                        after = resource.getrusage(resource.RUSAGE_CHILDREN)
                        cpu[name][kind].append(after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime)
    print(f"create at {args.cards} cards, median of {args.runs} interleaved runs:")
    for kind, *_ in CASES:
        before, ours = statistics.median(times["before"][kind]), statistics.median(times["ours"][kind])
        cpu_before, cpu_ours = statistics.median(cpu["before"][kind]), statistics.median(cpu["ours"][kind])
        print(f"  --type {kind:15} wall {before * 1000:6.1f} -> {ours * 1000:6.1f} ms ({ours / before:.3f})   "
              f"cpu {cpu_before * 1000:6.1f} -> {cpu_ours * 1000:6.1f} ms ({cpu_ours / cpu_before:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
