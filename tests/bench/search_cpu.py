#!/usr/bin/env python3
"""CPU time of a keyword search in a long-lived process whose threads search at once, as a
`brain serve` worker's do (issue 22: searches that arrive while a refresh runs share the next
one, search/refresh.py `Shared`):

    python3 tests/bench/search_cpu.py VAULT                          # 8 threads, 40 searches each
    python3 tests/bench/search_cpu.py VAULT --threads 1 --base /path/to/other/checkout
    python3 tests/bench/search_cpu.py VAULT --threads 1 --rounds 1 --profile 40   # where it goes

Each thread runs `answers.searching.search_cards` (what GET /v1/memories?q= runs) on a fresh
`Vault` per search, with two words from `gen_vault.WORDS[:80]` as `bench_throughput.py` sends,
and its index connection kept between searches as `serve`'s workers keep theirs
(`index.keep_connections`, where the checkout has it). `--profile N` first runs one thread's
searches under cProfile and prints the N top lines by cumulative time (stderr). Printed: the
process's CPU time and wall time per search. `--base` runs the same in another checkout too
(same vault: give a copy when the two index schemas differ), alternating rounds.
VAULT: a vault made by gen_vault.py and indexed (bench_throughput.py --workdir keeps them).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def measure(vault: Path, threads: int, searches: int, profile: int = 0) -> tuple[float, float]:
    """(CPU ms, wall ms) a search, in this process, with this checkout's runtime/ imported."""
    from external_brain.answers.searching import search_cards   # first: gen_vault puts this tree's runtime/ on the path
    from external_brain.vault.storage import Vault

    try:   # as `brain serve`'s workers do (a checkout without it opens a connection per search)
        from external_brain.search.index import keep_connections
    except ImportError:
        pass
    else:
        keep_connections()

    sys.path.insert(0, str(HERE))
    from gen_vault import WORDS

    def work(number: int, count: int) -> None:
        rng = random.Random(number)
        for _ in range(count):
            search_cards(Vault(vault), " ".join(rng.choice(WORDS[:80]) for _ in range(2)), None, 11)

    work(999, 5)   # warm: the index opened, the analyser's memo filled
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(work, 998, searches)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(profile)
    cpu, wall = time.process_time(), time.perf_counter()
    runners = [threading.Thread(target=work, args=(n, searches)) for n in range(threads)]
    for runner in runners:
        runner.start()
    for runner in runners:
        runner.join()
    total = threads * searches
    return (time.process_time() - cpu) / total * 1000, (time.perf_counter() - wall) / total * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("vault", type=Path)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--searches", type=int, default=40, help="per thread")
    parser.add_argument("--base", type=Path, help="another checkout to measure the same way")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="first run one thread's searches under cProfile and print its N top lines (stderr)")
    parser.add_argument("--inner", type=Path, help=argparse.SUPPRESS)   # measure with this checkout's runtime/
    args = parser.parse_args()
    if args.inner:
        sys.path.insert(0, str(args.inner / "runtime"))
        cpu, wall = measure(args.vault.resolve(), args.threads, args.searches, args.profile)
        import external_brain

        assert Path(external_brain.__file__).is_relative_to(args.inner.resolve()), external_brain.__file__
        print(f"{cpu:.3f} {wall:.3f}")
        return
    sides = {"this": ROOT}
    if args.base:
        sides["base"] = args.base.resolve()
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, checkout in sides.items():
            out = subprocess.run([sys.executable, __file__, str(args.vault), "--threads", str(args.threads),
                                  "--searches", str(args.searches), "--profile", str(args.profile),
                                  "--inner", str(checkout)],
                                 check=True, stdout=subprocess.PIPE, text=True).stdout.split()
            results[name].append((float(out[0]), float(out[1])))
    print(f"{args.vault}: {args.threads} threads x {args.searches} searches, {args.rounds} rounds (medians)")
    for name, runs in results.items():
        print(f"  {name:<5} {sides[name]}: CPU {statistics.median(r[0] for r in runs):.2f} ms a search, "
              f"wall {statistics.median(r[1] for r in runs):.2f} ms")


if __name__ == "__main__":
    main()
