#!/usr/bin/env python3
"""The search floor on queries with nothing relevant in the vault: how many get hits (the
expected answer is "No cards match"), through the real CLI, keyword and hybrid.

    E5="python3 tests/bench/e5_embed.py"   # E5_URL=http://127.0.0.1:8000/v1 E5_CACHE=/work/cache/e5/vectors.sqlite
    python3 tests/bench/eval_floor.py --embed-command "$E5" --query-prefix "query: " --passage-prefix "passage: "
    python3 tests/bench/eval_floor.py --runtime /path/to/other/checkout/runtime ...   # before/after
    python3 tests/bench/eval_floor.py --mode keyword                                  # no provider needed

The set is `judgement/unrelated_search.json` (40 queries, English and Japanese: chit-chat, general
knowledge, programming topics neither vault holds, near misses that share a word with a card;
written and committed before anything ran on it). The vaults: the repository's example cards
(`Playbooks/`, 24 cards) and the paraphrases bench set (`data/paraphrases`, 65 cards, eval_retrieval's
vault). Each vault is built afresh under `--workdir`, embedded through the given `command` provider
by the tested runtime's own `reindex --embeddings`, and every query is one `search --json` process
of the tested runtime (`--runtime`). Printed: per vault and mode, the queries that got hits, by
kind, and their list.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import uuid
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SET = HERE / "judgement" / "unrelated_search.json"


def build(runtime: Path, root: Path, vault: str, embed: list[str] | None, args) -> None:
    if root.exists():
        shutil.rmtree(root)
    cli = [sys.executable, str(runtime / "playbook_api.py")]
    subprocess.run([*cli, "init", str(root)], check=True, capture_output=True)
    if vault == "example":
        for card in (ROOT / "Playbooks").glob("*.md"):
            shutil.copy(card, root / "Playbooks" / card.name)
    else:
        sys.path.insert(0, str(HERE))
        import eval_retrieval as ev  # noqa: E402  (card files only: the format both runtimes read)

        data = ev.load_dataset(ev.resolve_folder(str(HERE / "data" / vault)), None)
        names = ev.card_names(list(data.docs))
        for doc_id, (title, text) in data.docs.items():
            shown = ev.card_title(title, text)
            meta = {"id": str(uuid.uuid4()), "title": shown, "type": "fact", "domain": "general", "doc_id": doc_id}
            (root / "Playbooks" / names[doc_id]).write_text(ev.render(meta, f"# {shown}\n\n{text}\n"),
                                                            encoding="utf-8")
    if embed:
        settings = {"provider": "command", "command": embed, "timeout": 600.0, "batch": 64,
                    "query_prefix": args.query_prefix, "passage_prefix": args.passage_prefix}
        lines = ["[embeddings]"] + [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
        (root / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        subprocess.run([*cli, "reindex", "--embeddings", "--vault", str(root)], check=True, capture_output=True)


def hits(runtime: Path, root: Path, mode: str, query: str) -> list[str]:
    proc = subprocess.run([sys.executable, str(runtime / "playbook_api.py"), "search", "--json", "--vault",
                           str(root), "--mode", mode, "--", query], capture_output=True, text=True)
    envelope = json.loads(proc.stdout)
    if not envelope.get("ok"):
        raise SystemExit(f"search failed for {query!r}: {envelope.get('error')}")
    if envelope["data"]["mode"] != mode:
        raise SystemExit(f"{mode} search fell back to {envelope['data']['mode']}: {proc.stderr.strip()}")
    return [hit["title"] for hit in envelope["data"]["hits"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", type=Path, default=ROOT / "runtime", help="the runtime/ folder to test")
    parser.add_argument("--mode", choices=("keyword", "hybrid", "all"), default="all")
    parser.add_argument("--vault", choices=("example", "paraphrases", "all"), default="all")
    parser.add_argument("--embed-command", help='a `command` embedding provider, e.g. "python3 tests/bench/e5_embed.py"')
    parser.add_argument("--query-prefix", default="")
    parser.add_argument("--passage-prefix", default="")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/eval_floor"))
    args = parser.parse_args(argv)
    modes = ("keyword", "hybrid") if args.mode == "all" else (args.mode,)
    if "hybrid" in modes and not args.embed_command:
        raise SystemExit("--mode hybrid needs --embed-command")
    embed = shlex.split(args.embed_command) if args.embed_command else None
    queries = json.loads(SET.read_text(encoding="utf-8"))["queries"]
    runtime = args.runtime.resolve()
    print(f"runtime {runtime}; {len(queries)} unrelated queries (expected: no hits)")
    for vault in (("example", "paraphrases") if args.vault == "all" else (args.vault,)):
        root = args.workdir / vault
        build(runtime, root, vault, embed if "hybrid" in modes else None, args)
        for mode in modes:
            got = {q["id"]: hits(runtime, root, mode, q["text"]) for q in queries}
            wrong = [q for q in queries if got[q["id"]]]
            kinds = Counter(q["kind"] for q in wrong)
            total = Counter(q["kind"] for q in queries)
            by_kind = ", ".join(f"{kind} {kinds[kind]}/{total[kind]}" for kind in total)
            print(f"\n{vault} {mode}: {len(wrong)} of {len(queries)} got hits ({by_kind})")
            for q in wrong:
                print(f"  {q['id']} {q['text']!r} -> {got[q['id']][0]!r}{' +' if len(got[q['id']]) > 1 else ''}")


if __name__ == "__main__":
    main()
