#!/usr/bin/env python3
"""Precision and recall of auto-learn's corrections (review7) on the labelled sessions of
`judgement/correction_cases.py` (English and Japanese; expected candidates written before the
product ran on them), through the real CLI: each session is written as a Claude Code transcript
(`judgement/transcript_builder.py`) and learned by `brain learn --from-transcript` in a fresh vault.

    python3 tests/bench/eval_corrections.py                      # held-out part
    python3 tests/bench/eval_corrections.py --split dev --show   # the part the rule was tuned on
    git archive <commit> | tar -x -C /tmp/eb-before
    python3 tests/bench/eval_corrections.py --product /tmp/eb-before   # the same sets, another checkout

A candidate is right when it matches an expected one (every needle of its title / problem /
solution), its solution holds none of `solution_not` (a step the user rejected) and it holds none
of the case's `absent` texts (a correction attached to a failure it is not about, the lesson of a
failure nothing fixed). Precision = right candidates / candidates made; recall = expected
candidates found right / expected candidates.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "judgement"))

from correction_cases import CASES  # noqa: E402
from transcript_builder import Session  # noqa: E402


def brain(product: Path, *argv: str) -> dict:
    done = subprocess.run([sys.executable, str(product / "runtime" / "playbook_api.py"), *argv, "--json"],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "BRAIN_ACTOR": "eval"})
    if done.returncode != 0:
        raise SystemExit(f"brain {' '.join(argv)} failed ({done.returncode}): {done.stdout} {done.stderr}")
    return json.loads(done.stdout)["data"]


def inbox(vault: Path) -> list[dict[str, str]]:
    out = []
    for path in sorted((vault / "Inbox").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        _, _, body = text.partition("\n---\n")
        title = next((line.split(":", 1)[1].strip().strip('"') for line in text.splitlines()
                      if line.startswith("title:")), "")
        out.append({"title": title, "problem": section(body, "Problem"), "solution": section(body, "Solution"),
                    "all": text})
    return out


def section(body: str, name: str) -> str:
    head = f"## {name}\n"
    if head not in body:
        return ""
    rest = body.split(head, 1)[1]
    return rest.split("\n## ", 1)[0]


def matches(expect: dict, candidate: dict) -> bool:
    return all(needle.casefold() in candidate[field].casefold()
               for field in ("title", "problem", "solution") for needle in expect.get(field, ()))


def clean(expect: dict, candidate: dict, absent: list[str]) -> bool:
    return not any(n.casefold() in candidate["solution"].casefold() for n in expect.get("solution_not", ())) and \
        not any(n.casefold() in candidate["all"].casefold() for n in absent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=["dev", "held", "blind", "all"], default="held")
    parser.add_argument("--product", type=Path, default=HERE.parents[1], help="the checkout to run (default: this one)")
    parser.add_argument("--show", action="store_true", help="print every miss and false candidate")
    args = parser.parse_args()
    cases = [c for c in CASES if args.split == "all" or c["split"] == args.split]
    expected = made = right = found = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="eb-corrections-") as tmp:
        for case in cases:
            session = Session(case["key"], cwd=case.get("cwd", "/home/dev/work/shop-api"))
            case["script"](session)
            transcript = session.write_to(Path(tmp) / f"{case['key']}.jsonl")
            vault = Path(tmp) / f"vault-{case['key']}"
            brain(args.product, "init", str(vault))
            brain(args.product, "learn", "--vault", str(vault), "--from-transcript", str(transcript))
            candidates = inbox(vault)
            used: set[int] = set()
            case_right = 0
            for expect in case["expect"]:
                hit = next((n for n, c in enumerate(candidates) if n not in used and matches(expect, c)), None)
                if hit is not None and clean(expect, candidates[hit], case.get("absent", [])):
                    used.add(hit)
                    case_right += 1
                elif args.show:
                    print(f"  {case['key']}: expected {expect} -> " +
                          ("no candidate like it" if hit is None else f"{candidates[hit]['title']!r}, not clean"))
            for n, c in enumerate(candidates):
                if n not in used and args.show:
                    print(f"  {case['key']}: false candidate {c['title']!r}\n    solution: {c['solution'].strip()[:300]}")
            expected += len(case["expect"])
            made += len(candidates)
            right += case_right
            found += case_right
            rows.append((case["key"], case_right, len(case["expect"]), len(candidates)))
    print(f"| case ({args.split}) | expected right | candidates made |\n|---|---|---|")
    for key, ok, wanted, count in rows:
        print(f"| {key} | {ok} of {wanted} | {count} |")
    precision = f"{right / made:.2f}" if made else "none made"
    print(f"\nsplit {args.split}: {len(cases)} sessions, {expected} expected candidates, {made} made, {right} right; "
          f"precision {precision}, recall {found / expected if expected else 1:.2f}")


if __name__ == "__main__":
    main()
