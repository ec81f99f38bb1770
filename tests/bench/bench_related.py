#!/usr/bin/env python3
"""CPU of a create's candidate search (`keyword.related`) in a long-lived process, on the index
a server leaves behind after its own creates:

    python3 tests/bench/bench_related.py --vault /tmp/h22r-vault              # made if missing
    python3 tests/bench/bench_related.py --vault /tmp/h22r-vault --runtime /tmp/main/runtime
    python3 tests/bench/bench_related.py --vault /tmp/h22r-vault --dump /tmp/this.txt
    python3 tests/bench/bench_related.py --vault /tmp/h22r-vault --profile /tmp/related.prof
    python3 tests/bench/bench_related.py --vault /tmp/h22r-vault --keep       # as a server's worker

The vault (made once, by this checkout's code, then only read): a `gen_vault.py` vault of
`--cards` cards, reindexed, then `--creates` creates through `cards.create_card` with the bodies
`bench_throughput.py` sends (12 of the 80 most common words, "Bench note", tags `bench` and
`clientN`) while a `FoldUpkeep` runs as in a server's worker, stopped at once after the last
create: up to FOLD_BACKLOG (256) of the server's cards left waiting unfolded in `stale`/`fresh`.

Timed: `--queries` bench-like create texts (the title and tags `create_card` searches with), each
`related(index, text)` on an index opened for it (`Index.existing`, as a create does; the
opening is not timed), `--rounds` times over; prints CPU (process time) a call, the median
round, and the same for `best_scores` alone. `--dump FILE` writes every query's result (docids
and scores as repr, then the related cards' paths) so two checkouts (`--runtime`) can be
compared byte for byte.
"""

from __future__ import annotations

import argparse
import cProfile
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def prepare(vault: Path, cards: int, creates: int) -> None:
    """The vault described in the module docstring, made with this checkout's runtime."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT / "runtime"))
    from gen_vault import WORDS, generate

    work = vault.with_name(vault.name + ".tmp")
    if work.exists():
        shutil.rmtree(work)
    generate(work, cards)
    subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(work), "reindex"],
                   check=True, stdout=subprocess.DEVNULL)
    from external_brain.cards import create_card, default_domain, memory_type_of, title_from_body
    from external_brain.search.index import FoldUpkeep, Index
    from external_brain.search.analysis import card_fields
    from external_brain.vault.storage import Vault

    rng = random.Random(11)
    upkeep = FoldUpkeep.start()
    try:
        for i in range(creates):
            v = Vault(work)
            content = f"Bench note {i % 16}-{i} {rng.getrandbits(32):08x}: " + \
                " ".join(rng.choice(WORDS[:80]) for _ in range(12))
            card_type, kept = memory_type_of("insight")
            create_card(v, card_type=card_type, domain=default_domain(v), title=title_from_body(content),
                        body=content, tags=["bench", f"client{i % 16}"], extra={"memory_type": kept} if kept else None)
    finally:
        upkeep.stop()
    index = Index.existing(Vault(work), card_fields)
    waiting = index.db.execute("SELECT count(*) FROM stale").fetchone()[0]
    index.close()
    work.rename(vault)
    print(f"prepared {vault}: {cards} cards + {creates} creates, {waiting} waiting unfolded", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vault", type=Path, required=True, help="the prepared vault (made here if missing)")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--creates", type=int, default=1_000)
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runtime", type=Path, default=ROOT / "runtime", help="the checkout's runtime/ to time")
    parser.add_argument("--dump", type=Path, help="write every query's result here")
    parser.add_argument("--profile", help="a cProfile (process time) of the timed rounds to this file")
    parser.add_argument("--keep", action="store_true",
                        help="as a server's worker: `index.keep_connections()`, so its kept rows of `postings` "
                             "(where the checkout has them; the vault does not change between queries here, so "
                             "every row is served as kept after the first round)")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)   # the subprocess that makes it
    args = parser.parse_args()
    if args.prepare:
        prepare(args.vault, args.cards, args.creates)
        return 0
    if not (args.vault / "Playbooks").is_dir():
        # A process of its own, with this checkout's runtime, whatever `--runtime` times.
        subprocess.run([sys.executable, __file__, "--vault", str(args.vault), "--cards", str(args.cards),
                        "--creates", str(args.creates), "--prepare"], check=True)

    sys.path.insert(0, str(HERE))
    from gen_vault import WORDS   # imports this checkout's runtime: replaced below when timing another

    for name in [name for name in sys.modules if name == "external_brain" or name.startswith("external_brain.")]:
        del sys.modules[name]
    sys.path.insert(0, str(args.runtime))
    import external_brain
    assert Path(external_brain.__file__).resolve().is_relative_to(args.runtime.resolve()), external_brain.__file__
    from external_brain.cards import title_from_body
    from external_brain.search.analysis import card_fields, tokens
    from external_brain.search.index import Index
    from external_brain.search.keyword import best_scores, related
    from external_brain.vault.storage import Vault

    if args.keep:
        from external_brain.search.index import keep_connections

        keep_connections()
    rng = random.Random(23)
    texts = []
    for i in range(args.queries):
        content = f"Bench note {i % 16}-{5000 + i} {rng.getrandbits(32):08x}: " + \
            " ".join(rng.choice(WORDS[:80]) for _ in range(12))
        texts.append(f"{title_from_body(content)} bench client{i % 16}")
    vault = Vault(args.vault)

    def run(fn) -> tuple[float, list]:
        spent, out = 0.0, []
        for text in texts:
            index = Index.existing(vault, card_fields)
            c0 = time.process_time()
            out.append(fn(index, text))
            spent += time.process_time() - c0
            index.close()
        return 1000 * spent / len(texts), out

    def call_related(index, text):
        return [(score, card.path.relative_to(vault.root).as_posix()) for score, card in related(index, text)]

    def call_best(index, text):
        return best_scores(index, tokens(text, drop_stop_words=True), 30)

    run(call_related)   # warm: imports, regex programs, the OS's page cache
    profile = cProfile.Profile(time.process_time) if args.profile else None
    per_related, per_best = [], []
    for _ in range(args.rounds):
        if profile:
            profile.enable()
        ms, found = run(call_related)
        per_related.append(ms)
        ms, best = run(call_best)
        per_best.append(ms)
        if profile:
            profile.disable()
    if profile:
        profile.dump_stats(args.profile)
    print(f"related: CPU {statistics.median(per_related):.3f} ms a call (rounds: "
          f"{' '.join(f'{ms:.3f}' for ms in per_related)}); best_scores: {statistics.median(per_best):.3f} ms "
          f"({' '.join(f'{ms:.3f}' for ms in per_best)}); {len(texts)} queries, {args.runtime}{' (kept)' if args.keep else ''}", flush=True)
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            for text, top, cards in zip(texts, best, found):
                f.write(f"{text!r}\n{top!r}\n{cards!r}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
