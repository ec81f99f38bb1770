#!/usr/bin/env python3
"""A server's create candidate search (`keyword.related`) with the folds between creates, in
instructions (callgrind) and with every result written out, for an A/B of two checkouts:

    python3 tests/bench/related_folds.py prepare --from /tmp/s10/psc/vault10000 --work /tmp/rf/a
    valgrind --tool=callgrind --zero-before=os_getppid --dump-before=os_getpgrp \\
        --callgrind-out-file=/tmp/rf/a.cg.%p python3 tests/bench/related_folds.py run --work /tmp/rf/a \\
        --runtime /tmp/base/runtime --markers --dump /tmp/rf/a.txt
    python3 tests/bench/related_folds.py sum /tmp/rf/a.cg.*

`prepare` (native, this checkout's runtime): a copy of a reindexed vault (`--from`, e.g.
`profile_serve_creates.py`'s), reindexed, then `--creates` creates with the folds below, so the
index holds what a busy server's does (FOLD_BACKLOG cards waiting, partly folded chunks).

`run`, in one process of the runtime given (`--runtime`): `keep_connections()`, as a `serve`
worker, and `--warm` + `--creates` creates through `cards.create_card` with `bench_throughput.py`'s
bodies (deterministic), one at a time. Folds as a busy server's `FoldUpkeep` makes them, but at
fixed points: after a create that leaves more than FOLD_BACKLOG cards waiting, one planned group
of FOLD_GROUP_BUSY (`fold_waiting(..., planned=True)`), in this thread. So a create's search meets
what a server's meets: kept rows, and after each fold the moved chunk's rows read again.

`--markers`: each `related` call of the `--creates` creates (not the warm ones) is preceded by
`os.getppid()` and followed by `os.getpgrp()`, so callgrind's `--zero-before=os_getppid
--dump-before=os_getpgrp` writes one dump per call holding that call's instructions alone; `sum`
adds them up (the last dump, the process's tail, left out). `--dump FILE`: every call's text and
result (scores as repr, paths), to compare two checkouts byte for byte. The vault is written to:
prepare a new one for each run.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _import_runtime(runtime: Path):
    for name in [name for name in sys.modules if name == "external_brain" or name.startswith("external_brain.")]:
        del sys.modules[name]
    sys.path.insert(0, str(runtime))
    import external_brain

    assert Path(external_brain.__file__).resolve().is_relative_to(runtime.resolve()), external_brain.__file__


class _Scheduled:
    """Stands for `FoldUpkeep` (`FoldUpkeep._current`): writes tell it how many cards wait and
    leave the folds to it; `creates` folds at fixed points instead of a thread's looks."""

    def __init__(self) -> None:
        self.waiting = 0

    def nudge(self, vault, waiting: int) -> bool:
        self.waiting = waiting
        return True


def creates(vault_path: Path, count: int, first: int, each=None) -> int:
    """`count` bench creates (numbered from `first`), a busy server's folds between them; returns the folds made."""
    from gen_vault import WORDS
    from external_brain.cards import create_card, default_domain, memory_type_of, title_from_body
    from external_brain.search import index as index_module
    from external_brain.search.analysis import card_fields
    from external_brain.vault.storage import Vault

    upkeep = _Scheduled()
    index_module.FoldUpkeep._current = upkeep
    folds = 0
    rng = random.Random(first)
    for i in range(first, first + count):
        v = Vault(vault_path)
        content = f"Bench note {i % 16}-{i} {rng.getrandbits(32):08x}: " + " ".join(rng.choice(WORDS[:80]) for _ in range(12))
        card_type, kept = memory_type_of("insight")
        if each is not None:
            each(i)
        create_card(v, card_type=card_type, domain=default_domain(v), title=title_from_body(content), body=content,
                    tags=["bench", f"client{i % 16}"], extra={"memory_type": kept} if kept else None)
        if upkeep.waiting > index_module.FOLD_BACKLOG:
            index = index_module.Index.existing(v, card_fields)
            group = index_module.FOLD_GROUP_BUSY
            left = index.fold_waiting(group, keep=index_module.FOLD_BACKLOG - group, planned=True)
            index.close()
            assert left is not None
            upkeep.waiting = left
            folds += 1
    index_module.FoldUpkeep._current = None
    return folds


def prepare(args) -> None:
    sys.path.insert(0, str(HERE))
    _import_runtime(ROOT / "runtime")
    work = args.work
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(args.source, work, symlinks=True)
    subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(work), "reindex"],
                   check=True, stdout=subprocess.DEVNULL)
    folds = creates(work, args.creates, 0)
    print(f"prepared {work}: {args.creates} creates, {folds} folds", flush=True)


def run(args) -> None:
    sys.path.insert(0, str(HERE))
    _import_runtime(args.runtime)
    from external_brain.search import keyword
    from external_brain.search.index import keep_connections

    keep_connections()
    measured = [False]
    results = []
    related = keyword.related

    def watched(index, text, agent=None, limit=10):
        if measured[0]:
            os.getppid()   # callgrind: --zero-before=os_getppid
            out = related(index, text, agent, limit)
            os.getpgrp()   # callgrind: --dump-before=os_getpgrp
        else:
            out = related(index, text, agent, limit)
        results.append(f"{text!r} {limit}\n" + "".join(f"{score!r} {card.rel}\n" for score, card in out))
        return out

    keyword.related = watched
    first = 100_000   # numbers past the prepared creates'
    began = time.process_time()
    folds = creates(args.work, args.warm, first)
    measured[0] = args.markers
    folds_measured = creates(args.work, args.creates, first + args.warm)
    print(f"{args.warm} + {args.creates} creates, {folds} + {folds_measured} folds, {len(results)} related calls, "
          f"CPU {time.process_time() - began:.1f} s ({args.runtime})", flush=True)
    if args.dump:
        args.dump.write_text("".join(results), encoding="utf-8")


def total(args) -> None:
    """The instructions of the dumps made at `os_getpgrp`, the end-of-process dump left out."""
    sums, calls = 0, 0
    for path in args.files:
        text = path.read_text(errors="replace")
        trigger = re.search(r"^desc: Trigger: (.*)$", text, re.M)
        if trigger is None or "os_getpgrp" not in trigger.group(1):
            continue
        found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
        sums += int(found.group(1))
        calls += 1
    print(f"{calls} calls, {sums:,} instructions, {sums / max(calls, 1) / 1e6:.3f} M a call")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--from", dest="source", type=Path, required=True, help="a reindexed vault, only read")
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--creates", type=int, default=300)
    p.set_defaults(func=prepare)
    r = sub.add_parser("run")
    r.add_argument("--work", type=Path, required=True, help="a prepared vault, written to")
    r.add_argument("--runtime", type=Path, default=ROOT / "runtime")
    r.add_argument("--warm", type=int, default=20)
    r.add_argument("--creates", type=int, default=100)
    r.add_argument("--markers", action="store_true")
    r.add_argument("--dump", type=Path)
    r.set_defaults(func=run)
    s = sub.add_parser("sum")
    s.add_argument("files", type=Path, nargs="+")
    s.set_defaults(func=total)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
