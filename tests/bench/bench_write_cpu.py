#!/usr/bin/env python3
"""CPU a write costs in one long-lived process, as a `brain serve` worker pays it:

    python3 tests/bench/bench_write_cpu.py                          # 10,000 cards, 80 ops each
    python3 tests/bench/bench_write_cpu.py --vault /tmp/v10k --ops 200 --profile /tmp/wcpu
    python3 tests/bench/bench_write_cpu.py --runtime /tmp/main/runtime --dump /tmp/main.jsonl

Calls the library functions the HTTP routes call (`create_card` for POST /v1/memories,
`update_card` for PATCH, `record` for feedback) one after another, with the bodies
`bench_throughput.py` sends, on a copy of a `gen_vault.py` vault (`--cards`, reindexed), after 5
uncounted operations of each kind. Reports CPU (process time) and wall time per operation, the
CPU and wall time of the operation's own work holding the vault's write lock (the holding
thread's CPU, inside `journal.writing`; not the wait for the lock, nor the batch's closing
fsync), and the CPU of the upkeep run after the lock is let go (the index fold). The machine's load moves wall time; CPU is the figure to read.

`--dump FILE` writes each create's insights (ids removed) one JSON line each, so two checkouts
(`--runtime`) can be compared byte for byte: same seed, same bodies, same vault.
`--threads N` runs the operations from N threads at once (the 16 clients of a server's worker
meet each other: a create judged before the lock is judged again under it when a write came
between); CPU is then the whole process's, per operation.
`--profile PREFIX` writes a cProfile (process time) of each kind to PREFIX.create etc.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def run_threads(fn, ops: int, threads: int) -> list:
    """`fn(0)` ... `fn(ops - 1)` from `threads` threads taking the next number in turn."""
    numbers = iter(range(ops))
    take = threading.Lock()
    out: list = [None] * ops

    def work() -> None:
        while True:
            with take:
                i = next(numbers, None)
            if i is None:
                return
            out[i] = fn(i)

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--vault", type=Path, help="a generated vault to copy (made and kept here if missing)")
    parser.add_argument("--ops", type=int, default=80, help="timed operations of each kind")
    parser.add_argument("--runtime", type=Path, default=ROOT / "runtime", help="the checkout's runtime/ to time")
    parser.add_argument("--only", choices=("create", "patch", "feedback"), action="append")
    parser.add_argument("--threads", type=int, default=1,
                        help="run the operations from this many threads at once, as a server's worker does")
    parser.add_argument("--dump", type=Path, help="write each create's insights here, one JSON line each")
    parser.add_argument("--profile", help="cProfile of each kind to PREFIX.<kind>")
    parser.add_argument("--keep", action="store_true",
                        help="as a server's worker: `index.keep_connections()` (and the postings rows it keeps)")
    args = parser.parse_args()

    sys.path.insert(0, str(HERE))
    from bench_http import card_ids
    from gen_vault import WORDS, generate

    work = Path(tempfile.mkdtemp(prefix="write-cpu-"))
    source = args.vault or work / "source"
    if not (source / "Playbooks").is_dir():
        generate(source, args.cards)
    copy = work / "vault"
    shutil.copytree(source, copy, symlinks=True)
    # A copied file has a new inode: index the copy first so no timed write re-reads the vault.
    subprocess.run([sys.executable, str(args.runtime / "playbook_api.py"), "--vault", str(copy), "reindex"],
                   check=True, stdout=subprocess.DEVNULL)

    # gen_vault imported this checkout's runtime: the one to time replaces it when it is another.
    loaded = sys.modules.get("external_brain")
    if loaded is not None and not Path(loaded.__file__).resolve().is_relative_to(args.runtime.resolve()):
        for name in [name for name in sys.modules if name == "external_brain" or name.startswith("external_brain.")]:
            del sys.modules[name]
    sys.path.insert(0, str(args.runtime))
    import external_brain
    assert Path(external_brain.__file__).resolve().is_relative_to(args.runtime.resolve()), external_brain.__file__
    import external_brain.cards as cards_module
    import external_brain.evolution.lifecycle as lifecycle_module
    import external_brain.vault.journal as journal
    from external_brain.doors import http_api  # noqa: F401  (what a server has imported)
    from external_brain.cards import create_card, default_domain, memory_type_of, record, title_from_body
    from external_brain.evolution.lifecycle import update_card
    from external_brain.vault.storage import Vault

    if args.keep:
        from external_brain.search.index import keep_connections

        keep_connections()
    held: list[tuple[float, float]] = []
    after = [0.0, 0.0]
    original_writing = journal.writing

    @contextlib.contextmanager
    def timed_writing(*a, **k):
        with original_writing(*a, **k) as w:
            c0, w0 = time.thread_time(), time.perf_counter()   # the lock is this thread's from here
            try:
                yield w
            finally:
                held.append((time.thread_time() - c0, time.perf_counter() - w0))

    for module in (journal, cards_module, lifecycle_module):
        if getattr(module, "writing", None) is original_writing:
            module.writing = timed_writing
    if hasattr(journal, "_run_afterwards"):
        original_after = journal._run_afterwards

        def timed_after(*a, **k):
            c0, w0 = time.thread_time(), time.perf_counter()
            try:
                return original_after(*a, **k)
            finally:
                after[0] += time.thread_time() - c0
                after[1] += time.perf_counter() - w0
        journal._run_afterwards = timed_after

    rng = random.Random(5)
    hot = random.Random(7).sample(card_ids(copy), 200)

    def words(k: int) -> str:
        return " ".join(rng.choice(WORDS[:80]) for _ in range(k))

    def create(i: int):
        vault = Vault(copy)
        content = f"Bench note {i % 16}-{i} {rng.getrandbits(32):08x}: {words(12)}"
        card_type, kept = memory_type_of("insight")
        return create_card(vault, card_type=card_type, domain=default_domain(vault), title=title_from_body(content),
                           body=content, tags=["bench", f"client{i % 16}"],
                           extra={"memory_type": kept} if kept else None)

    def patch(i: int):
        return update_card(Vault(copy), rng.choice(hot), append=f"marker-{i}-{rng.getrandbits(32):08x}", agent="")

    def feedback(i: int):
        return record(Vault(copy), rng.choice(hot), rng.choice(("used", "rejected")), None, agent="")

    kinds = {"create": create, "patch": patch, "feedback": feedback}
    created = []
    for name in args.only or kinds:
        fn = kinds[name]
        for i in range(5):
            fn(100_000 + i)
        held.clear()
        after[0] = after[1] = 0.0
        profile = cProfile.Profile(time.process_time) if args.profile else None
        c0, w0 = time.process_time(), time.perf_counter()
        if profile:
            profile.enable()
        if args.threads == 1:
            out = [fn(i) for i in range(args.ops)]
        else:
            out = run_threads(fn, args.ops, args.threads)
        if profile:
            profile.disable()
            profile.dump_stats(f"{args.profile}.{name}")
        c1, w1 = time.process_time(), time.perf_counter()
        if name == "create":
            created = out
        n = args.ops
        print(f"{name}: CPU {1000 * (c1 - c0) / n:.1f} ms/op, wall {1000 * (w1 - w0) / n:.1f} ms/op; "
              f"under the lock CPU {1000 * sum(h[0] for h in held) / n:.1f} ms/op, "
              f"wall {1000 * sum(h[1] for h in held) / n:.1f}; "
              f"after it CPU {1000 * after[0] / n:.1f}", flush=True)
    if args.dump:
        def strip(x):
            if isinstance(x, dict):
                return {k: strip(v) for k, v in x.items() if k not in ("id", "memory_id", "created", "updated")}
            if isinstance(x, list):
                return [strip(v) for v in x]
            return x
        with open(args.dump, "w", encoding="utf-8") as f:
            for result in created:
                f.write(json.dumps(strip(result.insights), default=str, sort_keys=True, ensure_ascii=False) + "\n")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
