#!/usr/bin/env python3
"""Issue 9's speed: the lifecycle and read commands at 10,000 (and 100,000) cards, as ratios.

    python3 tests/bench/bench_lifecycle.py                          # 10,000 cards
    python3 tests/bench/bench_lifecycle.py --sizes 10000 100000 --workdir /tmp/brain-bench

Every figure is the median of `--runs` whole processes (start-up, imports, work), as an agent
pays them, and every ratio is taken within one run beside its reference, as in bench_speed.py,
whose vaults (gen_vault.py), reference processes and helpers this reuses. The runs go round
after round (a warm search, then each read; the reference, then each write), so a load that
drifts during the run moves both sides of a ratio alike:
- writes: `update CARD --append TEXT`, `link A B --rel R`, `delete CARD` (each run on another
  card, so each is a real change; the delete's card has an incoming link, so it cascades)
  against the FTS5 reference process that updates one row in a transaction (target <= 1.5x);
- reads: `links HUB --direction in`, `explore HUB --depth 2`, `stats`, `list`, `audit` against a
  warm `search` (target <= 2x), and `analyze` in seconds (target < 3 s at 10,000);
- at 100,000 cards, only `links --direction in` and `stats` (<= 2x a warm search), since
  generating and indexing that vault takes minutes (`--reuse` measures again on the copy an
  earlier run left in `--workdir`, reads only).

Before timing, links are added in this process through the library (a process per link would
take minutes): HUB gets `HUB_LINKS` incoming links and sits in a cycle, so `explore --depth 2`
has somewhere to go.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))

from bench_speed import BUILD, Bench, median_of, queries_for, run_measured  # noqa: E402

HUB_LINKS = 40
WRITE_TARGET, READ_TARGET, ANALYZE_SECONDS = 1.5, 2.0, 3.0


def plan_links(names: list[str], victims: int) -> tuple[str, list[str], list[str], list[str]]:
    """Which cards get which links (deterministic, from the file names): the hub, the cards
    linking to it, `victims` cards that each get one incoming link, and cards no link touches."""
    paths = ["Playbooks/" + name for name in names]
    hub = paths[len(paths) // 2]
    spread = dict.fromkeys(paths[(n * 7907 + 3) % len(paths)] for n in range(HUB_LINKS))
    sources = [path for path in spread if path != hub]
    touched = {hub, *sources}
    free = [p for p in paths if p not in touched]
    return hub, sources, free[-victims:], free[:-victims]


def add_links(vault: Path, names: list[str], victims: int) -> tuple[str, list[str], list[str]]:
    """Link the cards `plan_links` chose, in this process (sources to the hub, the hub back to
    the first of them: a cycle; one free card to each victim, so deleting it cascades).
    Returns the hub, the victims, and the cards no link touches."""
    from external_brain.evolution.relations import link
    from external_brain.vault.storage import Vault

    opened = Vault(vault)
    hub, sources, doomed, free = plan_links(names, victims)
    for n, source in enumerate(sources):
        link(opened, source, hub, ("related", "extends", "depends_on")[n % 3], reason="bench")
    link(opened, hub, sources[0], "related")
    for n, victim in enumerate(doomed):
        link(opened, free[n], victim, "related")
    return hub, doomed, free[victims:]


class LifecycleBench(Bench):
    def ratio(self, cards: int, what: str, ours: float, theirs: float, target: float | None, unit: str) -> None:
        self.add(cards, f"{what} (s)", f"{ours:.3f}", f"{theirs:.3f}", f"{ours / theirs:.2f}{unit}",
                 f"<= {target}{unit}" if target else "")

    def timed(self, vault: Path, *args: str) -> float:
        return run_measured(self.brain(vault, *args), self.env)[0]

    def measure_lifecycle(self, cards: int, full: bool, reuse: bool = False) -> None:
        vault = self.vault(cards)
        scratch = self.workdir / f"lifecycle{cards}"
        fts = self.workdir / f"lifecycle-fts{cards}.sqlite"
        names = sorted(os.listdir(vault / "Playbooks"))
        if reuse and (scratch / ".brain" / "cache" / "index.sqlite").is_file():
            # An indexed and linked copy from an earlier run: the reads only (writes change it).
            hub = plan_links(names, self.runs + 2)[0]
            full = False
        else:
            shutil.rmtree(scratch, ignore_errors=True)
            shutil.copytree(vault, scratch, ignore=shutil.ignore_patterns("cache"))
            fts.unlink(missing_ok=True)
            run_measured(self.brain(scratch, "reindex"), self.env)
            run_measured([sys.executable, "-c", BUILD, str(scratch), str(fts)], self.env)
            hub, doomed, plain = add_links(scratch, names, self.runs + 2)

        queries = queries_for(scratch)
        for q in queries:  # warm-up: bytecode, page cache, the index after the links
            run_measured(self.brain(scratch, "search", q), self.env)
        reads = [("links --direction in", ["links", hub, "--direction", "in"]), ("stats", ["stats"])]
        if full:
            reads[1:1] = [("explore --depth 2", ["explore", hub, "--depth", "2"])]
            reads += [("list", ["list"]), ("audit", ["audit"]), ("analyze", ["analyze"])]
        for _, args in reads:
            self.timed(scratch, *args)  # warm-up
        # Round after round, each read next to a warm search, so a machine whose load drifts
        # during the run moves both sides of a ratio alike.
        warm_runs: list[float] = []
        read_runs: dict[str, list[float]] = {what: [] for what, _ in reads}
        for n in range(self.runs):
            for q in queries:
                warm_runs.append(self.timed(scratch, "search", q))
            for what, args in reads:
                read_runs[what].append(self.timed(scratch, *args))
        warm = median_of(warm_runs)
        self.add(cards, "warm search (s)", f"{warm:.3f}", "", "", "the reference of the reads")
        for what, _ in reads:
            if what == "analyze":
                self.add(cards, "analyze (s)", f"{median_of(read_runs[what]):.3f}", "", "", f"< {ANALYZE_SECONDS:g} s")
            else:
                self.ratio(cards, what, median_of(read_runs[what]), warm, READ_TARGET, "w")
        if not full:
            return

        writes = {  # each run changes another card: every call is a real write
            "update": lambda n: ["update", plain[n], "--append", f"Bench edit {n}."],
            "link": lambda n: ["link", plain[-1 - n], plain[n], "--rel", "related"],
            "delete": lambda n: ["delete", doomed[n]],  # with a cascade: each has an incoming link
        }
        for what, argv in writes.items():
            self.timed(scratch, *argv(self.runs + 1))  # warm-up on a card of its own
        reference_runs: list[float] = []
        write_runs: dict[str, list[float]] = {what: [] for what in writes}
        for n in range(self.runs):   # interleaved with the reference, as the reads are
            reference_runs.append(run_measured(self.reference(fts, "update", "x"), self.env)[0])
            for what, argv in writes.items():
                write_runs[what].append(self.timed(scratch, *argv(n)))
        reference = median_of(reference_runs)
        for what in writes:
            self.ratio(cards, what, median_of(write_runs[what]), reference, WRITE_TARGET, "x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--workdir", type=Path, help="keep generated vaults here between runs")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the indexed, linked copy an earlier run left in --workdir: read rows only")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="brain-lifecycle-"))
    workdir.mkdir(parents=True, exist_ok=True)
    bench = LifecycleBench(workdir, args.runs)
    base = median_of([run_measured([sys.executable, "-c", "pass"], bench.env)[0] for _ in range(args.runs)])
    print(f"python3 -c pass: {base:.3f} s   (medians of {args.runs} runs; x = ours / FTS5 reference process, "
          "w = ours / our warm search)")
    print(f"{'cards':>8}  {'operation':<22} {'brain':>10} {'reference':>10} {'ratio':>7}  target")
    try:
        for cards in args.sizes:
            bench.measure_lifecycle(cards, full=cards < 100_000, reuse=args.reuse)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
