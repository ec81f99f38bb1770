#!/usr/bin/env python3
"""Keyword search ranks exactly as another checkout does, on the same vaults (issue 25's "keyword
only search unchanged when no provider is configured").

    git archive <base> | tar -x -C /tmp/base        # the checkout to compare with
    python3 tests/bench/keyword_unchanged.py /tmp/base                  # example vault + 10,000 cards
    python3 tests/bench/keyword_unchanged.py /tmp/base --cards 2000 --queries 100

Vaults: the repository's own example vault (Playbooks/ at the root) and a generated one
(gen_vault.py, deterministic), each copied twice so neither checkout's run can see the other's
writes; no embedding provider is configured, so `search` is keyword search by default. Queries
(deterministic, seeded): every example card's title, and pairs and triples of words drawn from
the generated vault's titles and tags, with a Japanese word in one query in ten. Each checkout
runs every query through its own `search()` in one process of its own (the CLI's library call:
the default mode, limit 10, no filters) twice over (the second time, the cards and analyses a
process keeps serve them) and prints path, score and snippet of every hit; the two lists must be
identical, query by query. Prints how many queries were compared and every difference.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

RUN = """
import json, sys
sys.path.insert(0, sys.argv[1])
from external_brain.errors import UsageError
from external_brain.search import search
from external_brain.vault.storage import Vault
vault = Vault(__import__("pathlib").Path(sys.argv[2]))
out = []
queries = json.load(open(sys.argv[3], encoding="utf-8"))
for query in queries + queries:   # twice: the second time, what the process kept serves them
    try:   # a query of stop words alone ("and", drawn from a title) is refused, on both sides alike
        result = search(vault, query, limit=10)
    except UsageError as exc:
        out.append(["refused", str(exc)])
        continue
    out.append([result.mode] + [[hit.card.rel, round(hit.score, 9), hit.snippet] for hit in result.hits])
json.dump(out, sys.stdout)
"""


def queries_for(vault: Path, count: int, seed: int) -> list[str]:
    sys.path.insert(0, str(ROOT / "runtime"))
    from external_brain.vault.storage import Vault, load_card

    v = Vault(vault)
    words, titles = [], []
    for path in sorted((vault / "Playbooks").glob("*.md")):
        try:
            card = load_card(v, path)
        except Exception:  # noqa: BLE001 - a hostile card is not a query source
            continue
        titles.append(card.title)
        words += [w for w in card.title.split() if len(w) > 2] + list(card.tags)
    rng = random.Random(seed)
    out = list(titles) if len(titles) <= count else rng.sample(titles, count // 4)
    while len(out) < count and words:
        out.append(" ".join(rng.sample(words, rng.choice((1, 2, 3)))))
        if len(out) % 10 == 0:
            out[-1] += " 接続"
    return out


def run(checkout: Path, vault: Path, queries: Path) -> list:
    proc = subprocess.run([sys.executable, "-c", RUN, str(checkout / "runtime"), str(vault), str(queries)],
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout)


def compare(name: str, source: Path, base: Path, count: int) -> int:
    with tempfile.TemporaryDirectory(prefix="eb-kw-") as tmp:
        here_vault, base_vault = Path(tmp) / "here", Path(tmp) / "base"
        for target in (here_vault, base_vault):
            # The vault's files only: its card folders, log and settings, not derived caches.
            for folder in ("Playbooks", "Inbox", "WorkingMemory", "logs"):
                if (source / folder).is_dir():
                    shutil.copytree(source / folder, target / folder)
            (target / ".brain").mkdir(parents=True, exist_ok=True)
            if (source / ".brain" / "config.toml").is_file():
                shutil.copy2(source / ".brain" / "config.toml", target / ".brain" / "config.toml")
        queries = queries_for(here_vault, count, seed=25)
        listed = Path(tmp) / "queries.json"
        listed.write_text(json.dumps(queries, ensure_ascii=False), encoding="utf-8")
        here, there = run(ROOT, here_vault, listed), run(base, base_vault, listed)
    assert len(here) == len(there) == 2 * len(queries)
    queries = queries + queries
    differ = [(q, a, b) for q, a, b in zip(queries, here, there) if a != b]
    hits = sum(len(r) - 1 for r in here)
    print(f"{name}: {len(queries)} queries, {hits} hits, modes {sorted({r[0] for r in here})}: "
          f"{len(queries) - len(differ)} identical, {len(differ)} different")
    for query, a, b in differ[:10]:
        print(f"  {query!r}\n    here: {a[:4]}\n    base: {b[:4]}")
    return len(differ)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("base", type=Path, help="the other checkout (its runtime/ is imported)")
    parser.add_argument("--cards", type=int, default=10000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    different = compare("example vault", ROOT, args.base, args.queries)
    with tempfile.TemporaryDirectory(prefix="eb-kw-gen-") as tmp:
        generated = Path(tmp) / "vault"
        subprocess.run([sys.executable, str(HERE / "gen_vault.py"), str(generated), str(args.cards)], check=True,
                       stdout=subprocess.DEVNULL)
        different += compare(f"generated vault ({args.cards:,} cards)", generated, args.base, args.queries)
    raise SystemExit(1 if different else 0)


if __name__ == "__main__":
    main()
