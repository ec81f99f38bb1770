#!/usr/bin/env python3
"""Retrieval quality of External Brain's search on BEIR-format sets, beside SQLite FTS5 in the same run.

    python3 tests/bench/eval_retrieval.py ../shared/data/scifact
    python3 tests/bench/eval_retrieval.py ../shared/data/jsquad --limit-queries 500
    python3 tests/bench/eval_retrieval.py all                      # scifact and jsquad
    python3 tests/bench/eval_retrieval.py scifact --cli --limit-queries 20
    python3 tests/bench/eval_retrieval.py covidfaq --cli --mode all --limit-queries 200 \
        --embed-command "python3 tests/bench/e5_embed.py" --query-prefix "query: " \
        --passage-prefix "passage: "                                   # the three modes through the CLI
    python3 tests/bench/eval_retrieval.py --self-test              # check the metric functions
    python3 tests/bench/eval_retrieval.py all --mode all \
        --embed-command "/work/venv-e5/bin/python tests/bench/e5_embed.py" \
        --query-prefix "query: " --passage-prefix "passage: "         # keyword, semantic, hybrid

What it measures, per dataset and per system: nDCG@10, Recall@10 and MRR@10 (binary relevance from
qrels.tsv), mean and median query latency, and the time to build the index. Only queries that have
qrels are evaluated.

How:
- A BEIR folder holds corpus.jsonl ({"_id","title","text"}), queries.jsonl ({"_id","text"}) and
  qrels.tsv (header, then query-id, corpus-id, score). The data is read where it lies and only ever
  written to a temporary directory (shared/data/README.md: never copy it into the project).
- External Brain: a temporary vault with one card per document, written directly as
  `Playbooks/Fact_<doc id>.md` (type fact, domain general, a uuid `id`, and `doc_id` so hits map back
  to documents; the title falls back to the first words of the text; body `# title` + text). Each
  query goes through the product's real `search(vault, query, limit=10)`, or with
  `--cli` through `python3 runtime/playbook_api.py search ... --limit 10 --json` subprocesses (slow:
  process start-up included; meant for spot checks with --limit-queries), with `--mode M` for each
  mode asked when an `--embed-command` is given (a search that falls back to keyword stops the run). Its "build s" is the
  time to write the card files; an index the product builds lazily is paid by the first search,
  hence the "1st ms" column (the first query's latency) beside the mean and the median.
- Reference: SQLite FTS5 over the same documents (columns title, body = the document text), ranked
  by `bm25(docs)`, top 10. English sets get `unicode61` (plain, the usual reference) and
  `porter unicode61`; Japanese sets (detected from the corpus text) get `unicode61` and `trigram`.
  The FTS5 query is the OR of the query's distinct tokens, each a double-quoted string. Tokens are
  runs of letters and digits (what unicode61 keeps); for trigram they are every 3-character
  substring of those runs, because a Japanese question has no spaces and a whole-run phrase would
  almost never occur in a document.
  No stop words are removed for FTS5 (bm25's idf already makes them nearly worthless).

Columns: nDCG@10, R@10 (Recall@10), MRR@10; ms/query (mean), p50 ms and 1st ms (the first query);
hits/q, the mean number of hits returned (External Brain drops hits under its score floors, so it
can return fewer than 10); build s. Progress goes to stderr only when stderr is a terminal.

`--limit-queries N` keeps N queries spread evenly over the file (every k-th), not the first N,
so a subset is not all about the first few documents (JSQuAD questions come grouped by paragraph).
All systems are scored on the same queries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
sys.path.insert(0, str(RUNTIME))

from external_brain.vault.frontmatter import render  # noqa: E402
from external_brain.errors import UsageError  # noqa: E402
from external_brain.search import search  # noqa: E402
from external_brain.search.analysis import has_search_words  # noqa: E402
from external_brain.vault.storage import Vault, init_vault  # noqa: E402

# ../shared/data beside the repository, or two levels up from a worktree (/work/wt/<branch>).
DATA_DIR = next((p / "shared" / "data" for p in ROOT.parents[:2] if (p / "shared" / "data").is_dir()),
                ROOT.parent / "shared" / "data")
DEFAULT_SETS = ("scifact", "jsquad")
K = 10
TITLE_FALLBACK_WORDS = 8
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff]")
_FTS_TOKEN = re.compile(r"[^\W_]+")  # runs of letters/digits: what the unicode61 tokenizer keeps


# ---------------------------------------------------------------------------- metrics

def dcg(gains: Sequence[float]) -> float:
    """Discounted cumulative gain: sum over ranks i = 1..n of gain_i / log2(i + 1)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    """nDCG@k = DCG@k / IDCG@k with binary gains (1 if the doc is relevant, else 0); the ideal
    ranking puts all min(|relevant|, k) relevant docs first (Jarvelin & Kekalainen 2002)."""
    if not relevant:
        return 0.0
    gains = [1.0 if doc in relevant else 0.0 for doc in ranked[:k]]
    ideal = dcg([1.0] * min(len(relevant), k))
    return dcg(gains) / ideal


def recall_at_k(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    """Recall@k = |relevant ∩ top k| / |relevant|."""
    if not relevant:
        return 0.0
    return len(relevant.intersection(ranked[:k])) / len(relevant)


def mrr_at_k(ranked: Sequence[str], relevant: set[str], k: int = K) -> float:
    """Reciprocal rank @k = 1 / (rank of the first relevant doc) if it is in the top k, else 0;
    MRR@k is its mean over the queries."""
    for rank, doc in enumerate(ranked[:k], start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def self_test() -> None:
    """Check the metrics on rankings whose values are known by hand."""
    rel = {"a"}
    assert ndcg_at_k(["a", "x", "y"], rel) == 1.0
    assert math.isclose(ndcg_at_k(["x", "a"], rel), 1 / math.log2(3))
    assert ndcg_at_k(["x", "y"], rel) == 0.0
    assert ndcg_at_k(["x"] * 10 + ["a"], rel) == 0.0            # rank 11 is outside the cut-off
    two = {"a", "b"}
    assert ndcg_at_k(["b", "a"], two) == 1.0
    assert math.isclose(ndcg_at_k(["a", "x", "b"], two), (1 + 1 / 2) / (1 + 1 / math.log2(3)))
    assert math.isclose(ndcg_at_k(["a"], {f"r{i}" for i in range(12)} | {"a"}),
                        1 / dcg([1.0] * 10))                     # ideal uses at most k relevant docs
    assert recall_at_k(["a", "x"], two) == 0.5
    assert recall_at_k(["a", "b"], two) == 1.0
    assert recall_at_k([], two) == 0.0
    assert mrr_at_k(["a"], rel) == 1.0
    assert mrr_at_k(["x", "y", "a"], rel) == 1 / 3
    assert mrr_at_k(["x"] * 10 + ["a"], rel) == 0.0
    assert fts_query(['say "hi"', "x"]) == '"say ""hi""" OR "x"'
    assert trigrams("梅雨とは何?") == ["梅雨と", "雨とは", "とは何"]
    assert len(set(card_names(["a/b", "a:b", "A_B", "a_b"]).values())) == 4
    print("self-test: metrics and helpers OK")


# ---------------------------------------------------------------------------- data

@dataclass
class Dataset:
    name: str
    docs: dict[str, tuple[str, str]]          # doc id -> (title, text)
    queries: dict[str, str]                   # query id -> text (only queries with qrels)
    qrels: dict[str, set[str]]                # query id -> relevant doc ids
    japanese: bool
    total_queries: int                        # queries with qrels before --limit-queries


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, set[str]]:
    """query id -> the doc ids with a score > 0 (the first line is a header)."""
    qrels: dict[str, set[str]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3 and float(parts[2]) > 0:
                qrels.setdefault(parts[0], set()).add(parts[1])
    return qrels


def write_dataset(folder: Path, docs: list[dict], queries: list[dict], qrels: list[tuple[str, str]],
                  source: str) -> None:
    """A BEIR folder as `load_dataset` reads it (the generators of our own sets write with this):
    corpus.jsonl, queries.jsonl, qrels.tsv (every pair scored 1) and SOURCE.txt saying where it came from."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(d, ensure_ascii=False) + "\n" for d in docs)
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(q, ensure_ascii=False) + "\n" for q in queries)
    with open(folder / "qrels.tsv", "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{q}\t{d}\t1\n" for q, d in qrels)
    (folder / "SOURCE.txt").write_text(source, encoding="utf-8")


def load_dataset(folder: Path, limit_queries: int | None) -> Dataset:
    docs = {str(d["_id"]): (d.get("title") or "", d.get("text") or "") for d in read_jsonl(folder / "corpus.jsonl")}
    qrels = read_qrels(folder / "qrels.tsv")
    queries = {str(q["_id"]): q["text"] for q in read_jsonl(folder / "queries.jsonl") if str(q["_id"]) in qrels}
    total = len(queries)
    if limit_queries and limit_queries < len(queries):
        ids = list(queries)
        step = len(ids) / limit_queries
        queries = {ids[int(i * step)]: queries[ids[int(i * step)]] for i in range(limit_queries)}
    sample = " ".join(title + text for title, text in list(docs.values())[:50])
    japanese = len(_CJK.findall(sample)) > 0.2 * max(1, len(sample))
    return Dataset(folder.name, docs, queries, {q: qrels[q] for q in queries}, japanese, total)


def resolve_folder(arg: str) -> Path:
    """A dataset folder given as a path (from the working directory or the repo root) or a bare name."""
    for candidate in (Path(arg), ROOT / arg, DATA_DIR / arg):
        if (candidate / "corpus.jsonl").is_file():
            return candidate.resolve()
    raise SystemExit(f"{arg}: no corpus.jsonl there (nor under {ROOT} or {DATA_DIR})")


# ---------------------------------------------------------------------------- External Brain

def card_title(title: str, text: str) -> str:
    return title.strip() or " ".join(text.split()[:TITLE_FALLBACK_WORDS]) or "untitled"


def card_names(doc_ids: Sequence[str]) -> dict[str, str]:
    """doc id -> a unique, safe file name `Fact_<sanitised id>.md` (case-insensitively unique too)."""
    names: dict[str, str] = {}
    taken: set[str] = set()
    for doc_id in doc_ids:
        stem = re.sub(r"[^A-Za-z0-9-]+", "_", doc_id).strip("_")[:100] or "doc"
        name, number = f"Fact_{stem}.md", 2
        while name.lower() in taken:
            name, number = f"Fact_{stem}_{number}.md", number + 1
        taken.add(name.lower())
        names[doc_id] = name
    return names


def build_vault(root: Path, docs: dict[str, tuple[str, str]]) -> tuple[Vault, dict[str, str]]:
    """Write one card per document; returns the vault and file name -> doc id."""
    vault, _ = init_vault(root)
    playbooks = vault.root / "Playbooks"
    names = card_names(list(docs))
    for doc_id, (title, text) in docs.items():
        shown = card_title(title, text)
        meta = {"id": str(uuid.uuid4()), "title": shown, "type": "fact", "domain": "general", "doc_id": doc_id}
        (playbooks / names[doc_id]).write_text(render(meta, f"# {shown}\n\n{text}\n"), encoding="utf-8")
    return vault, {name: doc_id for doc_id, name in names.items()}


def refused_as_wordless(query: str, field: str | None) -> bool:
    """True when search refused `query` for having no words to search for (only stop words, e.g.
    covidfaq's "What can you do?"): the product's answer to it is no hits, scored as such."""
    return field == "query" and not has_search_words(query)


def eb_in_process(vault: Vault, mode: str = "keyword") -> Callable[[str], list[str]]:
    def run(query: str) -> list[str]:
        try:
            result = search(vault, query, limit=K, mode=mode)
        except UsageError as error:
            if not refused_as_wordless(query, error.details.get("field")):
                raise
            return []
        if result.mode != mode:
            raise SystemExit(f"{mode} search fell back to {result.mode}: {result.warnings}")
        if result.problems and not run.warned:  # a skipped card would silently lower the scores
            run.warned = True
            print(f"warning: search skipped {len(result.problems)} card(s), e.g. {result.problems[0]}")
        return [str(hit.card.meta["doc_id"]) for hit in result.hits]
    run.warned = False
    return run


def eb_cli(vault: Vault, by_name: dict[str, str], mode: str | None = None) -> Callable[[str], list[str]]:
    entry = [sys.executable, str(RUNTIME / "playbook_api.py"), "search"]

    def run(query: str) -> list[str]:
        argv = [*entry, "--limit", str(K), "--json", "--vault", str(vault.root),
                *(["--mode", mode] if mode else []), "--", query]
        proc = subprocess.run(argv, capture_output=True, text=True)
        envelope = json.loads(proc.stdout)
        if not envelope.get("ok") and refused_as_wordless(query, envelope["error"].get("details", {}).get("field")):
            return []
        if not envelope.get("ok"):
            raise SystemExit(f"CLI search failed for {query!r}: {envelope.get('error')}")
        if mode and envelope["data"]["mode"] != mode:
            raise SystemExit(f"{mode} search fell back to {envelope['data']['mode']}: {proc.stderr.strip()}")
        return [by_name[Path(hit["path"]).name] for hit in envelope["data"]["hits"]]
    return run


# ---------------------------------------------------------------------------- SQLite FTS5

def fts_query(terms: Sequence[str]) -> str:
    """The OR of the distinct terms, each a double-quoted FTS5 string (inner quotes doubled)."""
    unique = dict.fromkeys(terms)
    return " OR ".join('"' + term.replace('"', '""') + '"' for term in unique)


def word_tokens(text: str) -> list[str]:
    return [t.lower() for t in _FTS_TOKEN.findall(text)]


def trigrams(text: str) -> list[str]:
    """Every 3-character substring of each letter/digit run (shorter runs cannot match a trigram index)."""
    return [run[i:i + 3] for run in _FTS_TOKEN.findall(text.lower()) for i in range(len(run) - 2)]


def fts5_tokenizer_works(tokenizer: str) -> bool:
    try:
        sqlite3.connect(":memory:").execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{tokenizer}')")
        return True
    except sqlite3.OperationalError:
        return False


def build_fts5(path: Path, docs: dict[str, tuple[str, str]], tokenizer: str) -> sqlite3.Connection:
    db = sqlite3.connect(path)
    db.execute(f"CREATE VIRTUAL TABLE docs USING fts5(doc_id UNINDEXED, title, body, tokenize='{tokenizer}')")
    db.executemany("INSERT INTO docs (doc_id, title, body) VALUES (?, ?, ?)",
                   ((doc_id, title, text) for doc_id, (title, text) in docs.items()))
    db.commit()
    return db


def fts5_search(db: sqlite3.Connection, to_terms: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    def run(query: str) -> list[str]:
        terms = to_terms(query)
        if not terms:
            return []
        rows = db.execute("SELECT doc_id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
                          (fts_query(terms), K)).fetchall()
        return [row[0] for row in rows]
    return run


# ---------------------------------------------------------------------------- evaluation

@dataclass
class Scores:
    system: str
    build_s: float
    ndcg: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    mrr: list[float] = field(default_factory=list)
    latency_ms: list[float] = field(default_factory=list)
    hits: list[int] = field(default_factory=list)


def progress(text: str) -> None:
    if sys.stderr.isatty():
        print(f"\r{text}\x1b[K", end="", file=sys.stderr, flush=True)


def evaluate(system: str, build_s: float, run: Callable[[str], list[str]], data: Dataset) -> Scores:
    scores = Scores(system, build_s)
    started = time.perf_counter()
    for number, (qid, query) in enumerate(data.queries.items(), start=1):
        begin = time.perf_counter()
        ranked = run(query)
        scores.latency_ms.append((time.perf_counter() - begin) * 1000)
        relevant = data.qrels[qid]
        scores.ndcg.append(ndcg_at_k(ranked, relevant))
        scores.recall.append(recall_at_k(ranked, relevant))
        scores.mrr.append(mrr_at_k(ranked, relevant))
        scores.hits.append(len(ranked))
        if number % 10 == 0 or number == len(data.queries):
            elapsed = time.perf_counter() - started
            progress(f"{data.name} {system}: {number}/{len(data.queries)} queries, {elapsed:.0f} s")
    progress("")
    return scores


def timed(build: Callable[[], object]) -> tuple[object, float]:
    start = time.perf_counter()
    built = build()
    return built, time.perf_counter() - start


def configure_embeddings(vault: Vault, args) -> float:
    """Write the vault's [embeddings] from the command line and embed every card; returns seconds."""
    import shlex

    settings = {"provider": "command", "command": shlex.split(args.embed_command), "timeout": 600.0,
                "batch": 64, "query_prefix": args.query_prefix, "passage_prefix": args.passage_prefix}
    lines = ["[embeddings]"] + [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    (vault.root / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    from external_brain.search.semantic import sync_vectors

    vault = Vault(vault.root)  # settings are read once per Vault
    _, seconds = timed(lambda: sync_vectors(vault))
    return seconds


def run_dataset(data: Dataset, use_cli: bool, modes: Sequence[str] = ("keyword",), args=None) -> list[Scores]:
    results = []
    with tempfile.TemporaryDirectory(prefix="eb-eval-") as tmp:
        (vault, by_name), build_s = timed(lambda: build_vault(Path(tmp) / "vault", data.docs))
        for mode in modes:
            if mode != "keyword" and not args.embed_command:
                raise SystemExit(f"--mode {mode} needs --embed-command")
            if mode != "keyword" and "embedded" not in locals():
                build_s += configure_embeddings(vault, args)
                vault = Vault(vault.root)
                embedded = True
            label = "External Brain" + ("" if mode == "keyword" else f" {mode}") + (" (CLI)" if use_cli else "")
            run = eb_cli(vault, by_name, mode if args and args.embed_command else None) if use_cli \
                else eb_in_process(vault, mode)
            results.append(evaluate(label, build_s, run, data))
        second = ("trigram", trigrams) if data.japanese else ("porter unicode61", word_tokens)
        for tokenizer, to_terms in (("unicode61", word_tokens), second):
            if not fts5_tokenizer_works(tokenizer):
                print(f"note: this SQLite ({sqlite3.sqlite_version}) has no FTS5 tokenizer {tokenizer!r}; skipped")
                continue
            db_path = Path(tmp) / f"fts5-{tokenizer.replace(' ', '-')}.db"
            db, build_s = timed(lambda: build_fts5(db_path, data.docs, tokenizer))
            results.append(evaluate(f"FTS5 {tokenizer}", build_s, fts5_search(db, to_terms), data))
            db.close()
    return results


def package_digest() -> str:
    """A short hash of the product's source, so a table can be tied to the code that produced it."""
    digest = hashlib.sha1()
    for path in sorted((RUNTIME / "external_brain").rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


def print_table(data: Dataset, results: list[Scores], digest: str) -> None:
    total = data.total_queries
    subset = "" if len(data.queries) == total else f" (evenly spaced subset of {total:,})"
    print(f"\n{data.name}: {len(data.docs):,} docs, {len(data.queries):,} queries{subset}, "
          f"SQLite {sqlite3.sqlite_version}, external_brain source {digest}")
    header = (f"{'system':<32}{'nDCG@10':>9}{'R@10':>8}{'MRR@10':>8}{'ms/query':>10}{'p50 ms':>9}"
              f"{'1st ms':>9}{'hits/q':>8}{'build s':>9}")
    print(header)
    print("-" * len(header))
    for s in results:
        print(f"{s.system:<32}{statistics.fmean(s.ndcg):>9.4f}{statistics.fmean(s.recall):>8.4f}"
              f"{statistics.fmean(s.mrr):>8.4f}{statistics.fmean(s.latency_ms):>10.2f}"
              f"{statistics.median(s.latency_ms):>9.2f}{s.latency_ms[0]:>9.1f}"
              f"{statistics.fmean(s.hits):>8.2f}{s.build_s:>9.2f}")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", help="a BEIR folder, a set name (scifact, jsquad) or `all`")
    parser.add_argument("--limit-queries", type=int, metavar="N", help="evaluate N evenly spaced queries")
    parser.add_argument("--cli", action="store_true", help="search through the CLI (one process per query)")
    parser.add_argument("--self-test", action="store_true", help="check the metric functions and exit")
    parser.add_argument("--mode", choices=("keyword", "semantic", "hybrid", "all"), default="keyword",
                        help="External Brain search mode(s) to evaluate (all: the three side by side)")
    parser.add_argument("--embed-command", help="a `command` embedding provider, e.g. "
                        "\"/work/venv-e5/bin/python tests/bench/e5_embed.py\"")
    parser.add_argument("--query-prefix", default="", help='e.g. "query: " for E5 models')
    parser.add_argument("--passage-prefix", default="", help='e.g. "passage: " for E5 models')
    args = parser.parse_args(argv)
    if args.self_test:
        self_test()
        return
    if not args.dataset:
        parser.error("give a dataset folder, a set name or `all` (or --self-test)")
    if not fts5_tokenizer_works("unicode61"):
        raise SystemExit(f"this Python's SQLite ({sqlite3.sqlite_version}) has no FTS5")
    folders = [DATA_DIR / name for name in DEFAULT_SETS] if args.dataset == "all" else [resolve_folder(args.dataset)]
    digest = package_digest()  # the in-process search runs the code imported at start-up
    for folder in folders:
        started = time.perf_counter()
        data = load_dataset(folder, args.limit_queries)
        modes = ("keyword", "semantic", "hybrid") if args.mode == "all" else (args.mode,)
        results = run_dataset(data, args.cli, modes, args)
        print_table(data, results, digest)
        if package_digest() != digest:
            print(f"warning: the external_brain source changed during the run (now {package_digest()})")
        print(f"({time.perf_counter() - started:.0f} s for {data.name})")


if __name__ == "__main__":
    main()
