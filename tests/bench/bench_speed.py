#!/usr/bin/env python3
"""Search speed at 1,000 / 10,000 / 100,000 cards, beside an SQLite FTS5 reference process.

    python3 tests/bench/bench_speed.py                         # 1,000 and 10,000 cards
    python3 tests/bench/bench_speed.py --sizes 1000 10000 100000 --runs 7
    python3 tests/bench/bench_speed.py --workdir /tmp/brain-bench  # keep the vaults between runs
    python3 tests/bench/bench_speed.py --real                  # real text: reindex and search only

Every figure is the median of several whole-process runs: an agent pays Python start-up and
imports on every call, so that is what is timed. The reference is a Python process doing the
same job with SQLite FTS5 over the same documents (title, tags, body): open the database, run
the query (OR of its words, ranked by `bm25()`, top 5 with a snippet), print the hits. Ratios
are taken within one run because these machines are noisy.

What is timed, per vault size:
- search: a handful of queries made from card titles (and one Japanese query), each run in a
  new process on a warm index; reference: the FTS5 query process.
- search after edit: a word is added to a card the way this tool, git, vim and atomic-save
  editors write (a new file renamed over the old); the next search must find that word
  (checked) and pays for noticing the edit. Compared with the warm search, and the FTS5
  process updating one row then querying.
- in-place save found: a word is appended to a card in place (same inode, as VS Code saves);
  how many searches it takes to find it. The sweep bounds it by ceil(cards / freshness_sweep)
  (search/refresh.py explains why not every file is stat-ed on every search).
- record / create: `record CARD used` and `create ...`; reference: an FTS5 process that
  updates one row / inserts one row in a transaction.
- reindex: `reindex` from nothing; reference: an FTS5 process that reads every card file and
  builds its index.
- peak memory: the maximum resident set size of the search process (from `wait4`), beside the
  FTS5 query process's.

`--real` times `reindex` (the keyword index) and search on a vault of real text instead
(real_vault.py: SciFact abstracts and Japanese Wikipedia paragraphs from ../shared/data/, about
960 characters each), whose varied vocabulary costs the analyser far more than generated cards.

Bytecode is cached (in a temporary PYTHONPYCACHEPREFIX) as on a user's machine, whatever this
shell's PYTHONDONTWRITEBYTECODE says; both sides get the same environment.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY = [sys.executable, str(ROOT / "runtime" / "playbook_api.py")]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gen_vault import generate  # noqa: E402
from real_vault import generate_real  # noqa: E402

TARGETS = {  # (operation, cards) -> (largest allowed ratio to the reference, what it is)
    ("search", 10_000): 1.5, ("search", 100_000): 3.0,
    ("record", 10_000): 1.5, ("create", 10_000): 1.5, ("search real", 10_000): 1.5,
}

# The reference process: FTS5 over the same documents. argv: database, mode, argument.
REFERENCE = r"""
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
mode, arg = sys.argv[2], sys.argv[3]
if mode == "update":
    db.execute("BEGIN IMMEDIATE")
    db.execute("UPDATE docs SET body = body || ' ' || ? WHERE rowid = 1", (arg,))
    db.execute("COMMIT")
elif mode == "insert":
    db.execute("BEGIN IMMEDIATE")
    db.execute("INSERT INTO docs (path, title, tags, body) VALUES (?, ?, '', ?)", (arg, arg, arg))
    db.execute("COMMIT")
if mode in ("query", "update"):
    words = arg.split() if mode == "query" else ["timeout"]
    match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
    for path, title, snip in db.execute(
            "SELECT path, title, snippet(docs, 3, '', '', '...', 12) FROM docs WHERE docs MATCH ? "
            "ORDER BY bm25(docs, 0, 3.0, 2.0, 1.0) LIMIT 5", (match,)):
        print(path, title, snip)
"""

BUILD = r"""
import os, re, sqlite3, sys
vault, path = sys.argv[1], sys.argv[2]
db = sqlite3.connect(path, isolation_level=None)
db.execute("CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, title, tags, body)")
db.execute("BEGIN")
folder = os.path.join(vault, "Playbooks")
title_re = re.compile(r'^title: "?(.*?)"?$', re.M)
tags_re = re.compile(r"^tags: \[(.*)\]$", re.M)
for name in sorted(os.listdir(folder)):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        text = f.read()
    head, _, body = text[4:].partition("\n---\n")
    title, tags = title_re.search(head), tags_re.search(head)
    db.execute("INSERT INTO docs VALUES (?, ?, ?, ?)", ("Playbooks/" + name,
               title.group(1) if title else "", tags.group(1) if tags else "", body))
db.execute("COMMIT")
"""


# Peak memory is read inside the child (VmHWM of its own address space): `wait4`'s ru_maxrss
# would include the benchmark process's own size, inherited at fork.
PEAK = r"""
import atexit, os, runpy, sys
def report():
    with open("/proc/self/status") as f:
        peak = next(line.split()[1] for line in f if line.startswith("VmHWM"))
    os.write(2, f"\nPEAK_KB {peak}\n".encode())
atexit.register(report)
real_exit = os._exit
def exit_reporting(code):  # the CLI ends with os._exit, which skips atexit
    report()
    real_exit(code)
os._exit = exit_reporting
kind, target = sys.argv[1], sys.argv[2]
sys.argv = sys.argv[2:]
if kind == "script":
    runpy.run_path(target, run_name="__main__")
else:
    exec(compile(target, "<reference>", "exec"), {"__name__": "__main__"})
"""


def run_measured(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Wall seconds and stdout of one whole process; exits the benchmark if it fails."""
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return elapsed, proc.stdout.decode()


def peak_mb(argv: list[str], env: dict[str, str]) -> float:
    """The peak resident set size (MB) of the Python program `argv` = [python, script|-c, ...]."""
    kind, target = ("code", argv[2]) if argv[1] == "-c" else ("script", argv[1])
    proc = subprocess.run([sys.executable, "-c", PEAK, kind, target, *argv[3 if kind == "code" else 2:]],
                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    found = re.search(rb"PEAK_KB (\d+)", proc.stderr)
    if proc.returncode != 0 or not found:
        raise SystemExit(f"memory run failed: {proc.stderr.decode()[-400:]}")
    return int(found.group(1)) / 1024


def save_by_rename(card: Path, word: str) -> None:
    """Add `word` to a card the way this tool, git, vim and atomic-save editors write: a new
    file renamed over the old one."""
    temp = card.with_name(f".{card.name}.tmp")
    temp.write_text(card.read_text(encoding="utf-8").rstrip("\n") + f"\n{word}\n", encoding="utf-8")
    os.replace(temp, card)


def median_of(samples: list[float]) -> float:
    return statistics.median(samples)


def queries_for(vault: Path) -> list[str]:
    """Queries made from the titles of cards spread through the vault, plus one in Japanese."""
    names = sorted(os.listdir(vault / "Playbooks"))
    picked = [names[i * len(names) // 5] for i in range(5)]
    out = []
    for name in picked:
        text = (vault / "Playbooks" / name).read_text(encoding="utf-8")
        title = re.search(r'^title: "?(.*?)"?$', text, re.M).group(1)
        words = [w.lower() for w in title.split() if not w.isdigit()][:3]
        out.append(" ".join(words))
    out.append("接続 タイムアウト")
    return out


class Bench:
    def __init__(self, workdir: Path, runs: int, real: bool = False) -> None:
        self.workdir = workdir
        self.runs = runs
        self.real = real
        self.env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
        self.rows: list[tuple[str, ...]] = []

    def brain(self, vault: Path, *args: str) -> list[str]:
        return [*ENTRY, "--vault", str(vault), *args]

    def reference(self, db: Path, mode: str, arg: str) -> list[str]:
        return [sys.executable, "-c", REFERENCE, str(db), mode, arg]

    def vault(self, cards: int) -> Path:
        path = self.workdir / f"{'real' if self.real else 'vault'}{cards}"
        if not (path / "Playbooks").is_dir() or len(os.listdir(path / "Playbooks")) != cards:
            shutil.rmtree(path, ignore_errors=True)
            (generate_real if self.real else generate)(path, cards)
        return path

    def add(self, cards: int, what: str, brain: str, reference: str, ratio: str, target: str) -> None:
        self.rows.append((f"{cards:,}", what, brain, reference, ratio, target))
        print(f"{cards:>8,}  {what:<22} {brain:>10} {reference:>10} {ratio:>7}  {target}", flush=True)

    def measure(self, cards: int) -> None:
        vault = self.vault(cards)
        scratch = self.workdir / f"scratch{'real' if self.real else ''}{cards}"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(vault, scratch, ignore=shutil.ignore_patterns("cache"))
        fts = self.workdir / f"fts{'real' if self.real else ''}{cards}.sqlite"
        fts.unlink(missing_ok=True)

        # Full builds first: they also warm both indexes for what follows.
        brain_build, _ = run_measured(self.brain(scratch, "reindex"), self.env)
        ref_build, _ = run_measured([sys.executable, "-c", BUILD, str(scratch), str(fts)], self.env)
        goal = "< 10 s (real text)" if self.real else "< 15 s"
        self.add(cards, "reindex (s)", f"{brain_build:.2f}", f"{ref_build:.2f}", f"{brain_build / ref_build:.1f}x",
                 f"{goal} at 10,000" if cards == 10_000 else "")

        queries = queries_for(scratch)
        if self.real:  # a Japanese question, as people ask it (JSQuAD's style)
            queries.append("日本で梅雨がないのは北海道とどこか")
        for q in queries:  # one warm-up each: bytecode, page cache
            run_measured(self.brain(scratch, "search", q), self.env)
            run_measured(self.reference(fts, "query", q), self.env)
        ours, theirs, our_mem, their_mem = [], [], [], []
        for _ in range(self.runs):
            for q in queries:
                ours.append(run_measured(self.brain(scratch, "search", q), self.env)[0])
                theirs.append(run_measured(self.reference(fts, "query", q), self.env)[0])
        for q in queries:
            our_mem.append(peak_mb(self.brain(scratch, "search", q), self.env))
            their_mem.append(peak_mb(self.reference(fts, "query", q), self.env))
        warm = median_of(ours)
        self.ratio_row(cards, "search real" if self.real else "search", warm, median_of(theirs))
        if self.real:
            self.add(cards, "peak memory (MB)", f"{max(our_mem):.1f}", f"{max(their_mem):.1f}", "", "")
            return  # the real-text vault measures the build and search only

        edited, ref_edit, in_place = [], [], []
        names = sorted(os.listdir(scratch / "Playbooks"))
        for n in range(self.runs):
            card = scratch / "Playbooks" / names[(n * 7919) % len(names)]
            word = f"benchedit{n}x{cards}"
            save_by_rename(card, word)
            t, out = run_measured(self.brain(scratch, "search", word, "--json"), self.env)
            if card.name not in out:
                raise SystemExit(f"search after an edit did not find {word!r} in {card.name}")
            edited.append(t)
            t, _ = run_measured(self.reference(fts, "update", word), self.env)
            ref_edit.append(t)
        after = median_of(edited)
        self.add(cards, "search after edit (s)", f"{after:.3f}", f"{median_of(ref_edit):.3f}",
                 f"{after / warm:.2f}w", "<= 2x our warm search (w)")
        for n in range(min(self.runs, 3)):  # in-place saves: found by the sweep, how soon?
            card = scratch / "Playbooks" / names[(n * 3571 + 11) % len(names)]
            word = f"inplace{n}x{cards}"
            with open(card, "a", encoding="utf-8") as f:
                f.write(f"\n{word}\n")
            searches = 1
            while card.name not in run_measured(self.brain(scratch, "search", word, "--json"), self.env)[1]:
                searches += 1
                if searches > 2 * (cards // 1000 + 1):
                    raise SystemExit(f"an in-place save to {card.name} was not found in {searches} searches")
            in_place.append(searches)
        self.add(cards, "in-place save found", f"{max(in_place)}", "", "searches",
                 f"<= ceil(cards / freshness_sweep) = {-(-cards // 1000)}")

        recorded, ref_rec = [], []
        for n in range(self.runs):
            card = "Playbooks/" + names[(n * 104729 + 1) % len(names)]
            recorded.append(run_measured(self.brain(scratch, "record", card, "used"), self.env)[0])
            ref_rec.append(run_measured(self.reference(fts, "update", "x"), self.env)[0])
        self.ratio_row(cards, "record", median_of(recorded), median_of(ref_rec))

        created, ref_new = [], []
        for n in range(self.runs):
            title = f"Bench card {n} for {cards}"
            created.append(run_measured(self.brain(
                scratch, "create", "--type", "pattern", "--domain", "dev", "--title", title,
                "--tags", "bench", "--body", "A benchmark card about connection timeouts."), self.env)[0])
            ref_new.append(run_measured(self.reference(fts, "insert", title), self.env)[0])
        self.ratio_row(cards, "create", median_of(created), median_of(ref_new))

        peak = max(our_mem)
        self.add(cards, "peak memory (MB)", f"{peak:.1f}", f"{max(their_mem):.1f}", "",
                 "< 80 MB at 100,000" if cards == 100_000 else "")

    def ratio_row(self, cards: int, what: str, ours: float, theirs: float) -> None:
        target = TARGETS.get((what, cards))
        self.add(cards, f"{what} (s)", f"{ours:.3f}", f"{theirs:.3f}", f"{ours / theirs:.2f}x",
                 f"<= {target}x" if target else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median)")
    parser.add_argument("--workdir", type=Path, help="keep generated vaults here between runs")
    parser.add_argument("--real", action="store_true", help="a vault of real text (SciFact and JSQuAD): "
                        "reindex and search only; sizes default to 10,000")
    args = parser.parse_args()
    if args.real and args.sizes == parser.get_default("sizes"):
        args.sizes = [10_000]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="brain-speed-"))
    workdir.mkdir(parents=True, exist_ok=True)
    bench = Bench(workdir, args.runs, args.real)
    base = median_of([run_measured([sys.executable, "-c", "pass"], bench.env)[0] for _ in range(args.runs)])
    print(f"python3 -c pass: {base:.3f} s   (medians of {args.runs} runs; ratio = ours / reference)")
    print(f"{'cards':>8}  {'operation':<22} {'brain':>10} {'FTS5 ref':>10} {'ratio':>7}  target")
    try:
        for cards in args.sizes:
            bench.measure(cards)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
