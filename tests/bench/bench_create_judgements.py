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

`--instructions` counts instead the instructions of one create of each kind per side under
`valgrind --tool=callgrind` (the whole process, Python's start-up included), each after one
uncounted create and delete of the same card, the new card deleted after: the figure that does
not move with the machine's load (repeated runs agree to ~0.1%).

    python3 tests/bench/bench_create_judgements.py --before /tmp/eb-before --cards 10000 --instructions
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
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under valgrind's callgrind instead of timing (--runs ignored)")
    parser.add_argument("--vault", help="a generated vault to copy instead of generating one (gen_vault.py)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eb-create-") as tmp:
        work = Path(tmp)
        if args.vault:
            shutil.copytree(args.vault, work / "base")
        else:
            subprocess.run([sys.executable, str(HERE / "gen_vault.py"), str(work / "base"), str(args.cards)],
                           check=True, capture_output=True)
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
        if args.instructions:
            return count_instructions(work, sides, env, args.cards)
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


def count_instructions(work: Path, sides: dict[str, Path], env: dict[str, str], cards: int) -> int:
    """One create of each kind per side under callgrind; prints the total instructions (Ir)."""
    import json
    import re

    def create(name: str, kind: str, title: str, tags: str, body: str, prefix: list[str]) -> str:
        done = subprocess.run(prefix + [sys.executable, str(sides[name]), "--vault", str(work / name), "--json",
                                        "create", "--type", kind, "--domain", "dev", "--tags", tags, "--title", title,
                                        "--body", body], env=env, capture_output=True, check=True, text=True)
        data = json.loads(done.stdout)["data"]
        return data.get("path") or data["card"]["path"]

    def delete(name: str, card: str) -> None:
        subprocess.run([sys.executable, str(sides[name]), "--vault", str(work / name), "delete", card], env=env,
                       capture_output=True, check=True)

    counts: dict[str, dict[str, int]] = {name: {} for name in sides}
    for kind, title, tags, body in CASES:
        for name in sides:
            args = (title.format(n=0), tags, body.format(n=0))
            delete(name, create(name, kind, *args, []))   # bytecode written, page cache warm
            out = work / f"callgrind.{name}.{kind}"
            delete(name, create(name, kind, *args, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]))
            totals = re.search(r"^(?:summary|totals): (\d+)", out.read_text(errors="replace"), re.M)
            counts[name][kind] = int(totals.group(1))
    print(f"create at {cards} cards, instructions of one process (callgrind Ir):")
    for kind, *_ in CASES:
        before, ours = counts["before"][kind], counts["ours"][kind]
        print(f"  --type {kind:15} {before / 1e6:8.1f} M -> {ours / 1e6:8.1f} M ({ours / before:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
