#!/usr/bin/env python3
"""Fusion functions compared on the same recorded rankings: a design tool for fusion.py.

    python3 tests/bench/fusion_lab.py record jsquad /tmp/fusion-jsquad.pickle \\
        --embed-command "/work/venv-e5/bin/python tests/bench/e5_embed.py" --query-prefix "query: " \\
        --passage-prefix "passage: "
    python3 tests/bench/fusion_lab.py score /tmp/fusion-jsquad.pickle /tmp/fusion-scifact.pickle

`record` runs every query of a set through the product's hybrid search (as eval_retrieval.py
does) and keeps what `fusion.fuse` was given: the keyword scores and cosines by document.
`score` prints nDCG@10 of each side alone and of fusion variants over those same inputs, so a
change of method is judged on both sets in seconds, without the provider. Candidates are what
hybrid search collects (keyword top 100 passing its floors, vector top 400), so "keyword" here
is close to, not the same as, `--mode keyword`.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import eval_retrieval as ev  # noqa: E402


def record(args) -> None:
    from external_brain import fusion, semantic
    from external_brain.search import search
    from external_brain.storage import Vault

    seen = []
    original = fusion.fuse

    def keep(keyword, vector):
        seen.append((dict(keyword), dict(vector)))
        return original(keyword, vector)

    semantic.fuse = keep
    data = ev.load_dataset(ev.resolve_folder(args.dataset), args.limit_queries)
    out = []
    with tempfile.TemporaryDirectory(prefix="eb-fusion-") as tmp:
        vault, by_name = ev.build_vault(Path(tmp) / "vault", data.docs)
        ev.configure_embeddings(vault, args)
        vault = Vault(vault.root)
        for qid, text in data.queries.items():
            seen.clear()
            search(vault, text, limit=ev.K, record_miss=False, mode="hybrid")
            keyword, vector = seen[0] if seen else ({}, {})
            doc = lambda path: by_name[path.rpartition("/")[2]]  # noqa: E731
            out.append((qid, {doc(p): s for p, s in keyword.items()}, {doc(p): s for p, s in vector.items()}))
    with open(args.output, "wb") as f:
        pickle.dump({"name": data.name, "qrels": data.qrels, "runs": out}, f)
    print(f"{data.name}: {len(out)} queries recorded in {args.output}")


def ranked(scores: dict) -> list:
    return [key for key, _ in sorted(scores.items(), key=lambda item: (-item[1], item[0]))]


def variants():
    from external_brain import fusion

    def current(k, v):
        return fusion.fuse(k, v).scores

    def fixed(alpha):
        def run(k, v):
            kt, vt = fusion.head(k), fusion.head(v)
            kn, vn = fusion.normalise(k, kt), fusion.normalise(v, vt)
            return {d: alpha * kn.get(d, 0.0) + (1 - alpha) * vn.get(d, 0.0) for d in kn.keys() | vn.keys()}
        return run

    def rrf(k, v):
        out = {}
        for side in (k, v):
            for rank, d in enumerate(ranked(side)[:100]):
                out[d] = out.get(d, 0.0) + 1 / (60 + rank + 1)
        return out

    out = {"keyword": lambda k, v: {d: s for d, s in k.items() if s > 0}, "vector": lambda k, v: dict(v),
           "current": current, "rrf60": rrf}
    out.update({f"fixed{a}": fixed(a) for a in (0.3, 0.5, 0.7)})
    if hasattr(fusion, "VARIANTS"):  # experimental functions under test
        out.update(fusion.VARIANTS)
    return out


def score(args) -> None:
    sets = []
    for path in args.pickles:
        with open(path, "rb") as f:
            sets.append(pickle.load(f))
    table = variants()
    print(f"{'nDCG@10':<12}" + "".join(f"{s['name']:>10}" for s in sets))
    for name, fuse in table.items():
        row = []
        for s in sets:
            row.append(statistics.fmean(ev.ndcg_at_k(ranked(fuse(k, v)), s["qrels"][qid]) for qid, k, v in s["runs"]))
        print(f"{name:<12}" + "".join(f"{x:>10.4f}" for x in row))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record")
    r.add_argument("dataset")
    r.add_argument("output")
    r.add_argument("--limit-queries", type=int)
    r.add_argument("--embed-command", required=True)
    r.add_argument("--query-prefix", default="")
    r.add_argument("--passage-prefix", default="")
    s = sub.add_parser("score")
    s.add_argument("pickles", nargs="+")
    args = parser.parse_args()
    record(args) if args.command == "record" else score(args)


if __name__ == "__main__":
    main()
