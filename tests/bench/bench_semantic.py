#!/usr/bin/env python3
"""Semantic and hybrid search speed, approximation recall and memory at 10,000 / 100,000 cards.

    python3 tests/bench/bench_semantic.py                       # 10,000 cards
    python3 tests/bench/bench_semantic.py --sizes 10000 100000 --workdir /tmp/brain-sem

Vaults come from gen_vault.py; their vectors from hash_embed.py (a deterministic stand-in
model, 384 dimensions, behind the `command` provider) via `reindex --embeddings`, cached in the
vault, so every search measured embeds only its query. Every figure is a whole process
(`python3 runtime/playbook_api.py search ...`), median of --runs, with NumPy made unimportable
in the searching process (the product's pure-Python path). Rows:
- keyword: a warm `search --mode keyword`;
- the four commands (provider, keyword, semantic, hybrid) run in turn, --runs rounds, so load
  from elsewhere on the machine falls on all alike; the stand-in provider answers a query it
  has seen from a JSON file without importing NumPy ($HASH_EMBED_CACHE, see hash_embed.py);
- semantic / hybrid: `search --mode semantic|hybrid`, minus the provider's time for the query
  measured inside that same process (the wall time of its `embeddings.embed` calls, printed
  as "inside a search"; "alone" is the embedding command run by itself, for reference);
- ratio: (semantic or hybrid - provider) / keyword, target <= 2;
- recall@10 of the binary-code prefilter + exact rescoring against exact cosine over every
  cached vector, over 50 queries (target >= 0.98);
- peak memory (VmHWM) of a hybrid search process (target < 150 MB at 100,000).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "runtime"))
sys.path.insert(0, str(HERE))

from bench_speed import peak_mb  # noqa: E402

# The searching process: NumPy made unimportable, and the provider's share timed inside it (the
# wall time of every `embeddings.embed` call, printed to stderr at exit as `provider_s=...`), so
# it is subtracted from that very run rather than estimated from another process.
NO_NUMPY = ("import sys, time; sys.modules['numpy'] = None; sys.argv = sys.argv[1:]; "
            "sys.path.insert(0, sys.argv[0].rsplit('/', 1)[0]); import external_brain.search.embeddings as e; "
            "spent = [0.0]; real = e.embed\n"
            "def timed(*a, **k):\n    t = time.perf_counter()\n    try:\n        return real(*a, **k)\n"
            "    finally:\n        spent[0] += time.perf_counter() - t\n"
            "e.embed = timed; from external_brain.doors.cli import main; code = main(sys.argv[1:]); "
            "sys.stdout.flush(); print(f'provider_s={spent[0]}', file=sys.stderr, flush=True); "
            "import os; os._exit(code)")  # as playbook_api.py ends


def whole(argv: list[str], runs: int, env: dict | None = None) -> float:
    return statistics.median(interleaved({"x": argv}, runs, env)["x"])


def interleaved(commands: dict[str, list[str]], runs: int, env: dict | None = None,
                fresh_query: bool = False) -> dict[str, list[float]]:
    """Wall times of each command, run in turn `runs` times (so a change of machine load falls
    on all of them alike, not on whichever ran last), and each run's CPU time (user + system of
    the whole process, as `wait4` counts it) under `name + " cpu"`. `fresh_query`: each round
    appends a word of its own to every search's query, so no search finds its query's vector
    cached."""
    import resource
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_number in range(runs):
        for name, argv in commands.items():
            if fresh_query and "search" in argv:
                at = argv.index("search") + 3   # search --limit 10 QUERY
                argv = argv[:at] + [f"{argv[at]} round{round_number}x{name.replace(' ', '')}"] + argv[at + 1:]
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            spent = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_CHILDREN)   # this one child, reaped by run()
            times.setdefault(name + " cpu", []).append(after.ru_utime + after.ru_stime
                                                       - before.ru_utime - before.ru_stime)
            if proc.returncode != 0 or b"warning" in proc.stderr:
                raise SystemExit(f"{argv[3:]} failed: {proc.stderr.decode()[-300:]}")
            inside = [line for line in proc.stderr.decode().splitlines() if line.startswith("provider_s=")]
            if inside:
                times.setdefault(name + " provider", []).append(float(inside[-1].split("=")[1]))
                spent -= float(inside[-1].split("=")[1])
            times[name].append(spent)
    return times


def prepare(workdir: Path, cards: int) -> Path:
    vault = workdir / f"vault{cards}"
    fresh = not (vault / ".brain" / "cache" / "vectors.sqlite").exists()
    if fresh:
        subprocess.run([sys.executable, str(HERE / "gen_vault.py"), str(vault), str(cards)], check=True,
                       stdout=subprocess.DEVNULL)
    # Written every run, so the command is this checkout's; the model is named, so a vault built
    # by another checkout keeps its vectors (a named model, not its command, identifies them).
    (vault / ".brain" / "config.toml").write_text(
        "[embeddings]\nprovider = \"command\"\nmodel = \"hash-embed\"\n"
        f"command = {json.dumps([sys.executable, str(HERE / 'hash_embed.py')])}\n"
        "batch = 4096\ntimeout = 120.0\n", encoding="utf-8")
    # Every run: the keyword index as this checkout builds it, and any vector the cache lacks
    # (none when an earlier run of the same model left them).
    start = time.perf_counter()
    for step in (["reindex"], ["reindex", "--embeddings"]):   # the keyword index, then the vectors
        subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(vault), *step],
                       check=True, stdout=subprocess.DEVNULL)
    print(f"  {'built' if fresh else 'reindexed'} {cards:,} cards with vectors in {time.perf_counter() - start:.0f} s")
    return vault


def recall(vault: Path, queries: list[str]) -> float:
    """Recall@10 of the product's pure-Python search against exact cosine over every cached
    vector (computed with NumPy when this process has it: the reference, not the product)."""
    from array import array

    from external_brain.search.embeddings import embed, model_key
    from external_brain.vault.storage import Vault
    from external_brain.search.vectors import VectorStore, cosine, unit

    v = Vault(vault)
    store = VectorStore.open(v, model_key(v.settings.embeddings), create=False)
    paths, blobs = zip(*store.db.execute("SELECT path, vec FROM docs JOIN vectors USING (hash)"))
    try:
        import numpy as np

        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1).astype(np.float64)
        exact_top = lambda q: {paths[i] for i in np.argsort(-(matrix @ np.array(q)), kind="stable")[:10]}  # noqa: E731
    except ImportError:
        vectors = [array("f", b).tolist() for b in blobs]
        exact_top = lambda q: {p for _, p in sorted((-cosine(q, vec), p) for p, vec in zip(paths, vectors))[:10]}  # noqa: E731
    found = 0
    for text in queries:
        query = unit(embed(v.settings.embeddings, [text], "query")[0])
        approx = {n.path for n in store.nearest(query, use_numpy=False)[:10]}
        found += len(exact_top(query) & approx)
    store.close()
    return found / (10 * len(queries))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/brain-sem"))
    parser.add_argument("--compare-with", type=Path, metavar="CHECKOUT",
                        help="another checkout (e.g. `git worktree add /tmp/base main`): its hybrid search is "
                             "timed in the same rounds on the same vault, for a before/after ratio")
    parser.add_argument("--new-queries", action="store_true",
                        help="every run searches a query not searched before (no cached query vector)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(3)
    words = "timeout connection deploy rollback cache redis postgres migration lock memory dns tls proxy".split()
    for cards in args.sizes:
        vault = prepare(args.workdir, cards)
        brain = [sys.executable, "-c", NO_NUMPY, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(vault),
                 "search", "--limit", "10"]
        query = " ".join(rng.sample(words, 3))
        env = dict(os.environ, HASH_EMBED_CACHE=str(args.workdir / "query-vectors.json"))
        whole(brain + [query, "--mode", "hybrid"], 1, env)  # warm the caches and the query's vector
        provider_argv = ["sh", "-c", f"echo '{json.dumps(query)}' | BRAIN_EMBED_INPUT=query "
                                     f"{sys.executable} {HERE / 'hash_embed.py'} >/dev/null"]
        commands = {"provider": provider_argv, "keyword": brain + [query, "--mode", "keyword"],
                    "semantic": brain + [query, "--mode", "semantic"], "hybrid": brain + [query, "--mode", "hybrid"]}
        if args.compare_with:
            other = [sys.executable, "-c", NO_NUMPY, str(args.compare_with / "runtime" / "playbook_api.py"),
                     "--vault", str(vault), "search", "--limit", "10"]
            commands["hybrid (other)"] = other + [query, "--mode", "hybrid"]
        times = interleaved(commands, args.runs, env, fresh_query=args.new_queries)
        # semantic and hybrid are already without the provider's time inside each run.
        provider, keyword, semantic, hybrid = (statistics.median(times[k])
                                               for k in ("provider", "keyword", "semantic", "hybrid"))
        inside = statistics.median(times["semantic provider"] + times["hybrid provider"])
        queries = [" ".join(rng.sample(words, 3)) for _ in range(50)]
        r = recall(vault, queries)
        peak = peak_mb([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "--vault", str(vault),
                        "search", query, "--mode", "hybrid"], {"PATH": "/usr/bin:/bin"})
        print(f"{cards:,} cards: keyword {keyword * 1000:.0f} ms; provider {provider * 1000:.0f} ms alone, "
              f"{inside * 1000:.0f} ms inside a search; "
              f"semantic {semantic * 1000:.0f} ms ({semantic / keyword:.2f}x); "
              f"hybrid {hybrid * 1000:.0f} ms ({hybrid / keyword:.2f}x); "
              f"recall@10 {r:.3f}; peak {peak:.1f} MB (hybrid search, NumPy importable)", flush=True)
        if args.compare_with:
            other = statistics.median(times["hybrid (other)"])
            print(f"  hybrid here {hybrid * 1000:.1f} ms, in {args.compare_with} {other * 1000:.1f} ms: "
                  f"{hybrid / other:.3f}x (medians of {args.runs} interleaved runs, provider excluded)", flush=True)


if __name__ == "__main__":
    main()
