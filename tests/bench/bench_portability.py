#!/usr/bin/env python3
"""Round trip of a generated vault through `export` and `import` (issue 9, step 7).

    python3 tests/bench/bench_portability.py [CARDS]     # default 10,000

Generates CARDS cards with gen_vault.py, exports them (real CLI process), imports the file into an
empty vault, and checks that every card file is byte-identical. Prints each step's time.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runtime" / "playbook_api.py"


def hashes(root: Path) -> dict[str, str]:
    out = {}
    for folder in ("Playbooks", "Inbox", "WorkingMemory"):
        for path in sorted((root / folder).rglob("*.md")):
            out[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def timed(label: str, *argv: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, *argv], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{label} failed: {done.stderr}")
    print(f"{label:<8} {seconds:7.2f} s  {done.stdout.strip().splitlines()[0] if done.stdout.strip() else ''}")
    return seconds


def main() -> None:
    cards = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        source, target, dump = Path(tmp) / "source", Path(tmp) / "target", Path(tmp) / "dump.jsonl"
        timed("generate", str(ROOT / "tests" / "bench" / "gen_vault.py"), str(source), str(cards))
        timed("export", str(SCRIPT), "--vault", str(source), "export", "--output", str(dump))
        print(f"file     {dump.stat().st_size / 1e6:7.1f} MB")
        timed("init", str(SCRIPT), "init", str(target))
        timed("import", str(SCRIPT), "--vault", str(target), "import", str(dump))
        same = hashes(source) == hashes(target)
        print(f"cards    {len(hashes(target))} imported, byte-identical: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
