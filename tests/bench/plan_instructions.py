#!/usr/bin/env python3
"""Instructions a create's planning costs, but its candidate search, counted by callgrind:

    python3 tests/bench/plan_instructions.py prepare /tmp/plan/source --cards 10000
    python3 tests/bench/plan_instructions.py run /tmp/plan/source --runtime /tmp/base/runtime --dump base.jsonl
    valgrind --tool=callgrind --callgrind-out-file=cg.out python3 tests/bench/plan_instructions.py \
        run /tmp/plan/source --runtime runtime --creates 100
    python3 tests/bench/plan_instructions.py count cg.out

`prepare` makes a `gen_vault.py` vault and indexes it once. `run` creates `--creates` cards in
one process, one after another, on a copy of it (its cards linked, not copied: a create writes
new files and replaces, never writes into, an existing one; the index and the log are copied),
with the bodies `bench_write_cpu.py` sends, as a server's worker does (`keep_connections`),
after `--warm` uncounted creates. Each counted create's planning before the write lock
(`cards._plan_ahead`) is called through `functools.reduce`, its candidate search
(`keyword.related`) through `itertools.starmap`, its judging (`cards._insights`), suggested tags
and new card made ahead (`_made_ahead`) through `itertools.dropwhile`, `takewhile` and
`filterfalse`, and the plan made under the lock (`cards.plan_card` inside `_plan_and_commit`: the
candidates brought up to now, the cards written meanwhile judged) through `itertools.accumulate`;
those C functions are met nowhere else in a create, so callgrind's inclusive counts of
`functools_reduce`, `starmap_next` ... are those parts, whatever the rest of the run costs
(imports, the copy). `count` prints them, per counted create: planning less the search (judging,
suggested tags, the new card made ahead, the index connection and log mark) is the figure issue
22 moves.
`--dump FILE` writes each create's insights (ids and moments removed), one JSON line each, for
two checkouts to be compared byte for byte. Creates are the same whatever the checkout (seeded).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
MARKERS = {"functools_reduce": "planning before the lock (all of `_plan_ahead`)",
           "starmap_next": "its candidate search (`related`)",
           "accumulate_next": "the plan under the lock (`plan_card`)",
           "dropwhile_next": "  before the lock: judging (`_insights`)",
           "takewhile_next": "  before the lock: suggested tags",
           "filterfalse_next": "  before the lock: the new card made ahead (`_made_ahead`)"}


def prepare(args) -> None:
    sys.path.insert(0, str(HERE))
    from gen_vault import generate

    generate(args.vault, args.cards)
    subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(args.vault), "reindex"],
                   check=True, stdout=subprocess.DEVNULL)


def _copy(source: Path, to: Path) -> None:
    """`source` at `to`: its cards hard-linked (same inodes, so the copied index still holds), the rest copied."""
    to.mkdir()
    for entry in source.iterdir():
        flags = "-al" if entry.name == "Playbooks" else "-a"
        subprocess.run(["cp", flags, str(entry), str(to / entry.name)], check=True)


def run(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="plan-instructions-"))
    try:
        copy = work / "vault"
        _copy(args.vault, copy)
        sys.path.insert(0, str(HERE))
        from gen_vault import WORDS

        # gen_vault imported this checkout's runtime: the one to run replaces it when it is another.
        for name in [name for name in sys.modules if name == "external_brain" or name.startswith("external_brain.")]:
            del sys.modules[name]
        sys.path.insert(0, str(args.runtime))
        import external_brain
        assert Path(external_brain.__file__).resolve().is_relative_to(args.runtime.resolve()), external_brain.__file__
        import external_brain.cards as cards
        import external_brain.search.keyword as keyword
        from external_brain.doors import http_api  # noqa: F401  (what a server has imported)
        from external_brain.search.index import keep_connections
        from external_brain.vault.storage import Vault

        keep_connections()
        counting = [False]

        def through(c_function, python_function, when=lambda: True):
            @functools.wraps(python_function)
            def called(*a, **k):
                if not (counting[0] and when()):
                    return python_function(*a, **k)
                return c_function(lambda: python_function(*a, **k))
            return called

        ahead = [False]

        def planning_ahead(*a, **k):
            ahead[0] = True
            try:
                return plan_ahead(*a, **k)
            finally:
                ahead[0] = False

        plan_ahead, related, plan_card = cards._plan_ahead, keyword.related, cards.plan_card
        cards._plan_ahead = through(lambda f: functools.reduce(lambda _, g: g(), [f], None), planning_ahead)
        keyword.related = through(lambda f: next(itertools.starmap(f, [()])), related, lambda: ahead[0])
        locked = through(lambda f: list(itertools.accumulate([f], lambda _, g: g(), initial=0))[-1], plan_card)
        cards.plan_card = lambda *a, **k: (locked if "judge_only" not in k else plan_card)(*a, **k)
        # The parts of planning before the lock, each through a C function of its own.
        def inside(iterator, answer):   # f called by the iterator's predicate, inside its C `next`
            def c_function(f):
                made = []
                next(iterator(lambda g: made.append(g()) or answer, [f]))
                return made[0]
            return c_function

        for name, iterator, answer in (("_insights", itertools.dropwhile, False),
                                       ("suggested_tags", itertools.takewhile, True),
                                       ("_made_ahead", itertools.filterfalse, False)):
            setattr(cards, name, through(inside(iterator, answer), getattr(cards, name), lambda: ahead[0]))

        rng = random.Random(5)

        def words(k: int) -> str:
            return " ".join(rng.choice(WORDS[:80]) for _ in range(k))

        def create(i: int):
            vault = Vault(copy)
            content = f"Bench note {i % 16}-{i} {rng.getrandbits(32):08x}: {words(12)}"
            card_type, kept = cards.memory_type_of("insight")
            return cards.create_card(vault, card_type=card_type, domain=cards.default_domain(vault),
                                     title=cards.title_from_body(content), body=content,
                                     tags=["bench", f"client{i % 16}"], extra={"memory_type": kept} if kept else None)

        results = [create(100_000 + i) for i in range(args.warm)]
        counting[0] = True
        results += [create(i) for i in range(args.creates)]
        if args.dump:
            with open(args.dump, "w", encoding="utf-8") as f:
                for result in results:
                    f.write(json.dumps(_without_ids(result.insights), default=str, sort_keys=True,
                                       ensure_ascii=False) + "\n")
    finally:
        shutil.rmtree(work)


def _without_ids(x):
    if isinstance(x, dict):
        return {k: _without_ids(v) for k, v in x.items() if k not in ("id", "memory_id", "created", "updated")}
    if isinstance(x, list):
        return [_without_ids(v) for v in x]
    return x


def count(args) -> None:
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(args.out)],
                         check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        match = re.match(r"\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(\S+)", line)
        name = match and match.group(2).rsplit(":", 1)[-1]
        if name in MARKERS:
            found[name] = found.get(name, 0) + int(match.group(1).replace(",", ""))
    n = args.creates
    for name, what in MARKERS.items():
        print(f"{found.get(name, 0) / n / 1e6:8.3f} M a create  {what}")
    rest = found.get("functools_reduce", 0) - found.get("starmap_next", 0)
    print(f"{rest / n / 1e6:8.3f} M a create  planning but the search (judging, suggested tags, the card made ahead)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("vault", type=Path)
    p.add_argument("--cards", type=int, default=10_000)
    p.set_defaults(func=prepare)
    r = sub.add_parser("run")
    r.add_argument("vault", type=Path, help="a vault `prepare` made")
    r.add_argument("--runtime", type=Path, default=ROOT / "runtime", help="the checkout's runtime/ to run")
    r.add_argument("--creates", type=int, default=100)
    r.add_argument("--warm", type=int, default=5)
    r.add_argument("--dump", type=Path)
    r.set_defaults(func=run)
    c = sub.add_parser("count")
    c.add_argument("out", type=Path, help="callgrind's output file of a `run`")
    c.add_argument("--creates", type=int, default=100, help="the counted creates of that run")
    c.set_defaults(func=count)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
