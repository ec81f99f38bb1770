#!/usr/bin/env python3
"""Precision, recall and cost of `redaction.find_secrets` / `redact_secrets`, the one rule that
keeps secrets out of what the product captures on its own.

    python3 tests/bench/eval_redaction.py                 # held-out part, real text, cost
    python3 tests/bench/eval_redaction.py --split tune    # the part the rules were tuned on
    python3 tests/bench/eval_redaction.py --split all --show
    git archive c991b39 runtime | tar -x -C /tmp/base && \
        python3 tests/bench/eval_redaction.py --baseline /tmp/base/runtime    # auto-learn before/after

1. The labelled set (`redaction_cases.py`, expected answers written before the detector):
   per kind, recall = secrets of that kind whose value no longer appears after redaction /
   secrets of that kind; precision = findings of that kind that cover a labelled secret /
   findings of that kind. A finding that covers a secret labelled with another kind counts for
   precision (the secret is gone) and is listed as a kind mix-up.
2. Real text with no secrets in it, where every finding is a false positive: the repository's
   own cards (Playbooks/, Inbox/, WorkingMemory/), docs/ and README.md, the design documents in
   ../shared/seeds/ (Japanese), the package's own source (code full of `password`, `token`,
   `api_key`), and the evaluation corpora in ../shared/data/ (SciFact abstracts, JSQuAD
   Japanese paragraphs, COVID FAQ) when present.
3. Optional, `--gitleaks DIR` (the `cmd/generate/config/rules/` folder of a gitleaks checkout,
   MIT License): the literal true and false positives gitleaks' own rules are tested with, for
   the kinds this detector claims (AWS, OpenAI, Anthropic, GitHub, Slack, Google, Stripe, JWT,
   private keys, curl's Authorization headers and URL passwords, Kubernetes secrets). Written
   by others and not looked at before the first run: recall = true-positive lines where
   something is found; false positives = false-positive lines where anything is found.
4. Cost: the detector over a 50 MB transcript as one text (the worst case: auto-learn only
   redacts the lessons it keeps), per short text (a hook's injected context), and with
   `--baseline RUNTIME` auto-learn of that transcript against another runtime (CPU seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
sys.path.insert(0, str(ROOT / "runtime"))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "doors"))   # test_hooks: the big transcript

from external_brain.judging.redaction import find_secrets, redact_secrets  # noqa: E402
from redaction_cases import CASES  # noqa: E402

SHARED = ROOT.parent.parent / "shared" if (ROOT.parent.parent / "shared").is_dir() else Path("/work/shared")


def labelled(split: str, show: bool) -> tuple[int, int]:
    cases = [c for c in CASES if split == "all" or c.split == split]
    expected, caught = Counter(), Counter()
    predicted, correct = Counter(), Counter()
    mixups, misses, false = [], [], []
    for case in cases:
        found = find_secrets(case.text)
        redacted = redact_secrets(case.text)
        spans = []
        for kind, value in case.secrets:
            expected[kind] += 1
            start = case.text.find(value)
            while start >= 0:   # every place the value is written (a cookie sent twice)
                spans.append((kind, start, start + len(value)))
                start = case.text.find(value, start + 1)
            if value in redacted:
                misses.append((case.id, kind, redacted))
            else:
                caught[kind] += 1
        for secret in found:
            predicted[secret.kind] += 1
            covered = [kind for kind, a, b in spans if secret.start < b and a < secret.end]
            if covered:
                correct[secret.kind] += 1
                if secret.kind not in covered:
                    mixups.append((case.id, covered[0], secret.kind))
            else:
                false.append((case.id, secret.kind, case.text[max(0, secret.start - 30):secret.end + 10]))
    kinds = sorted(set(expected) | set(predicted))
    print(f"labelled set, split {split}: {len(cases)} snippets, {sum(expected.values())} secrets, "
          f"{sum(1 for c in cases if not c.secrets)} with none")
    print(f"  {'kind':24} {'secrets':>7} {'recall':>7} {'found':>6} {'precision':>9}")
    for kind in kinds:
        recall = f"{caught[kind] / expected[kind]:.2f}" if expected[kind] else "-"
        precision = f"{correct[kind] / predicted[kind]:.2f}" if predicted[kind] else "-"
        print(f"  {kind:24} {expected[kind]:>7} {recall:>7} {predicted[kind]:>6} {precision:>9}")
    total_recall = sum(caught.values()) / max(1, sum(expected.values()))
    total_precision = sum(correct.values()) / max(1, sum(predicted.values()))
    print(f"  {'all':24} {sum(expected.values()):>7} {total_recall:>7.2f} {sum(predicted.values()):>6} "
          f"{total_precision:>9.2f}")
    for case_id, wanted, got in mixups:
        print(f"  kind mix-up {case_id}: labelled {wanted}, found {got}")
    for case_id, kind, text in misses:
        print(f"  missed {case_id} ({kind})" + (f": {text!r}" if show else ""))
    for case_id, kind, text in false:
        print(f"  false positive {case_id} ({kind})" + (f": {text!r}" if show else ""))
    return len(misses), len(false)


def real_text() -> int:
    """Findings in text that holds no secret (each one is a false positive)."""
    corpora: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for folder in ("Playbooks", "Inbox", "WorkingMemory"):
        for path in sorted((ROOT / folder).glob("**/*.md")):
            corpora["repository cards"].append((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")))
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*"))]:
        if path.is_file():
            corpora["README and docs/"].append((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")))
    for path in sorted((ROOT / "runtime").glob("**/*.py")):
        corpora["package source"].append((path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")))
    for path in sorted((SHARED / "seeds").glob("*.txt")):
        corpora["seeds (Japanese)"].append((path.name, path.read_text(encoding="utf-8")))
    for name in ("scifact", "jsquad", "covidfaq"):
        for part in ("corpus.jsonl", "queries.jsonl"):
            path = SHARED / "data" / name / part
            if not path.is_file():
                continue
            for line in path.read_text(encoding="utf-8").splitlines():
                row = json.loads(line)
                corpora[f"data/{name}"].append((f"{part}:{row['_id']}", f"{row.get('title', '')}\n{row['text']}"))
    total = 0
    print("\nreal text with no secrets (every finding is a false positive):")
    for corpus, docs in corpora.items():
        chars = sum(len(text) for _, text in docs)
        findings = [(name, s, text) for name, text in docs for s in find_secrets(text)]
        total += len(findings)
        print(f"  {corpus:22} {len(docs):>6} texts {chars / 1e6:6.2f} M chars  {len(findings)} finding(s)")
        for name, secret, text in findings[:10]:
            print(f"    {name}: {secret.kind}: {text[max(0, secret.start - 40):secret.end + 10]!r}")
    return total


GITLEAKS_RULES = ("aws.go", "anthropic.go", "openai.go", "github.go", "slack.go", "gcp.go", "jwt.go",
                  "privatekey.go", "stripe.go", "curl.go", "kubernetes.go")


def go_string_lists(source: str) -> dict[str, list[str]]:
    """The entries of `tps`/`fps` string lists in a Go rule file that are plain literals (or
    literals joined by +); entries built by function calls are skipped."""
    import re

    lists: dict[str, list[str]] = {"tps": [], "fps": []}
    for match in re.finditer(r"\b(tps|fps)\s*(?::=\s*\[\]string\{|=\s*append\(\s*\1\s*,)", source):
        name, i, depth = match.group(1), match.end(), 1
        entry: list = []
        while i < len(source) and depth:
            ch = source[i]
            if source.startswith("//", i):
                i = source.find("\n", i) + 1 or len(source)
                continue
            if source.startswith("/*", i):
                i = source.find("*/", i) + 2
                continue
            if ch == "`":
                end = source.index("`", i + 1)
                entry.append(("s", source[i + 1:end]))
                i = end + 1
                continue
            if ch == '"':
                end = i + 1
                while source[end] != '"':
                    end += 2 if source[end] == "\\" else 1
                try:
                    entry.append(("s", json.loads(source[i:end + 1])))
                except ValueError:
                    entry.append(("x", ""))
                i = end + 1
                continue
            if ch in "{(":
                depth += 1
                entry.append(("x", ch))
            elif ch in "})":
                depth -= 1
                if depth and entry:
                    entry.append(("x", ch))
            elif ch == "," and depth == 1:
                _keep(entry, lists[name])
                entry = []
            elif ch == "+" and depth == 1:
                entry.append(("+", ""))
            elif not ch.isspace():
                entry.append(("x", ch))
            i += 1
        _keep(entry, lists[name])
    return lists


def _keep(entry: list, into: list[str]) -> None:
    if entry and all(kind in ("s", "+") for kind, _ in entry) and entry[0][0] == "s":
        into.append("".join(text for kind, text in entry if kind == "s"))


def gitleaks(folder: Path, show: bool) -> None:
    print(f"\ngitleaks' own test lines ({folder}), literal entries only:")
    print(f"  {'rule file':16} {'true pos':>8} {'found':>6} {'false pos':>9} {'flagged':>8}")
    totals = Counter()
    for name in GITLEAKS_RULES:
        path = folder / name
        if not path.is_file():
            print(f"  {name:16} (missing)")
            continue
        lists = go_string_lists(path.read_text(encoding="utf-8"))
        caught = [t for t in lists["tps"] if find_secrets(t)]
        flagged = [t for t in lists["fps"] if find_secrets(t)]
        totals.update(tps=len(lists["tps"]), caught=len(caught), fps=len(lists["fps"]), flagged=len(flagged))
        print(f"  {name:16} {len(lists['tps']):>8} {len(caught):>6} {len(lists['fps']):>9} {len(flagged):>8}")
        if show:
            for text in lists["tps"]:
                if text not in caught:
                    print(f"    missed: {text[:160]!r}")
            for text in flagged:
                print(f"    flagged: {redact_secrets(text)[:160]!r}")
    print(f"  {'all':16} {totals['tps']:>8} {totals['caught']:>6} {totals['fps']:>9} {totals['flagged']:>8}"
          f"   recall {totals['caught'] / max(1, totals['tps']):.2f}, "
          f"false-positive rate {totals['flagged'] / max(1, totals['fps']):.2f}")


LEARN = ("import sys, json, time; sys.path.insert(0, sys.argv[1]);"
         "from external_brain.vault.storage import Vault; from external_brain.intake.transcripts import learn_from_transcript;"
         "from pathlib import Path; start = time.process_time();"
         "r = learn_from_transcript(Vault(Path(sys.argv[2])), sys.argv[3]);"
         "print(json.dumps({'seconds': time.process_time() - start, 'lines': r.lines}))")


def cost(baseline: Path | None, runs: int) -> None:
    import os
    import statistics
    import subprocess

    from test_hooks import write_big_transcript

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.jsonl"
        write_big_transcript(path)
        text = path.read_text(encoding="utf-8")
        start = time.perf_counter()
        found = find_secrets(text)
        whole = time.perf_counter() - start
        print(f"\ncost: find_secrets over the {len(text) / 1e6:.0f} MB transcript as one text: {whole:.2f} s "
              f"({len(found)} finding(s)); auto-learn redacts only the lessons it keeps")
        if baseline is not None:
            # Auto-learn itself, this runtime against another (e.g. `git archive <commit> runtime`),
            # alternating, CPU seconds of the learning process (wall time on a shared machine
            # moves with the load far more than the difference measured).
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pyc")
            sides = {"baseline": baseline, "this": ROOT / "runtime"}
            seconds: dict[str, list[float]] = {name: [] for name in sides}
            for run in range(runs + 1):
                for name, runtime in sides.items():
                    vault = Path(tmp) / f"vault-{name}-{run}"
                    subprocess.run([sys.executable, str(ROOT / "runtime" / "playbook_api.py"), "init", str(vault)],
                                   check=True, capture_output=True)
                    out = subprocess.run([sys.executable, "-c", LEARN, str(runtime), str(vault), str(path)],
                                         check=True, capture_output=True, text=True, env=env).stdout
                    if run:   # the first round only writes the bytecode caches
                        seconds[name].append(json.loads(out)["seconds"])
            before, after = (statistics.median(seconds[name]) for name in sides)
            print(f"cost: auto-learn of the 50 MB transcript, CPU seconds, median of {runs}: baseline {before:.3f} s, "
                  f"this {after:.3f} s, ratio {after / before:.3f}")
    sample = (ROOT / "Playbooks" / "Troubleshooting_GitHub_PAT_Org_Webhook_404.md").read_text(encoding="utf-8")[:8000]
    loops = 200
    start = time.perf_counter()
    for _ in range(loops):
        redact_secrets(sample)
    print(f"cost: redact_secrets on a {len(sample):,}-character card (what a hook injects): "
          f"{(time.perf_counter() - start) / loops * 1e3:.2f} ms")
    prose = "Fixed the flaky test by resetting the shared fixture between runs. " * 4
    start = time.perf_counter()
    for _ in range(2000):
        redact_secrets(prose)
    print(f"cost: redact_secrets on a {len(prose)}-character lesson line: "
          f"{(time.perf_counter() - start) / 2000 * 1e6:.1f} us")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("held", "held2", "held3", "held4", "tune", "all"), default="held")
    parser.add_argument("--show", action="store_true", help="print the text around misses and false positives")
    parser.add_argument("--no-cost", action="store_true")
    parser.add_argument("--baseline", type=Path, metavar="RUNTIME",
                        help="another runtime/ folder (git archive <commit> runtime): compare auto-learn's cost with it")
    parser.add_argument("--runs", type=int, default=9, help="auto-learn runs per side with --baseline")
    parser.add_argument("--gitleaks", type=Path, metavar="DIR",
                        help="gitleaks' cmd/generate/config/rules/ folder: also score its rules' test lines")
    args = parser.parse_args()
    labelled(args.split, args.show)
    false = real_text()
    if args.gitleaks:
        gitleaks(args.gitleaks, args.show)
    if not args.no_cost:
        cost(args.baseline, args.runs)
    return 1 if false else 0


if __name__ == "__main__":
    sys.exit(main())
