#!/usr/bin/env python3
"""Auto-learn's cost on a code-heavy session: every step a failing command whose output is source
code, a Write of a whole source file, an Edit of half of it, and the command passing. What
auto-learn keeps of each (an output's last lines, an edit's added lines) is redacted with the
text around it (`redaction.redacted_part`), so this is where that costs most.

    python3 tests/bench/bench_learn_edits.py --baseline /tmp/s13/base/runtime            # CPU, alternating
    python3 tests/bench/bench_learn_edits.py --write /tmp/edits.jsonl --mb 3 --skip redaction.py
    valgrind --tool=callgrind python3 -c "import sys; sys.path.insert(0, 'runtime'); from pathlib import Path; \\
        from external_brain.intake.transcripts import find_lessons; find_lessons(Path('/tmp/edits.jsonl'))"

The files are the package's own sources (`runtime/**/*.py`, full of `token`, `key`, `password`);
`--skip NAME` leaves one out (`redaction.py` holds `PRIVATE KEY` lines among every key word, the
widest window `redacted_part` judges).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "doors"))

from test_hooks import assistant, bash, result, user  # noqa: E402

LEARN = ("import sys, json, time; sys.path.insert(0, sys.argv[1]);"
         "from pathlib import Path; from external_brain.intake.transcripts import find_lessons;"
         "start = time.process_time(); lessons = find_lessons(Path(sys.argv[2]));"
         "print(json.dumps({'seconds': time.process_time() - start, 'lessons': len(lessons)}))")


def write_transcript(path: Path, size: int, skip: set[str]) -> int:
    sources = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "runtime").glob("**/*.py")) if p.name not in skip]
    steps = 0
    with path.open("w", encoding="utf-8") as handle:
        while handle.tell() < size:
            source = sources[steps % len(sources)]
            lines = source.splitlines()
            half = "\n".join(lines[:len(lines) // 2])
            n = steps
            for entry in (user("go on", f"u{n}"), assistant(bash(f"f{n}", "pytest -q")),
                          result(f"f{n}", source[-3000:] + f"\nE   ImportError: cannot import name x{n}", error=True),
                          assistant({"type": "tool_use", "id": f"w{n}", "name": "Write",
                                     "input": {"file_path": f"/repo/m{n}.py", "content": source}}),
                          result(f"w{n}", "ok"),
                          assistant({"type": "tool_use", "id": f"e{n}", "name": "Edit",
                                     "input": {"file_path": f"/repo/m{n}.py", "old_string": half,
                                               "new_string": half + "\n# changed\n"}}),
                          result(f"e{n}", "ok"), assistant(bash(f"g{n}", "pytest -q")), result(f"g{n}", "ok")):
                handle.write(json.dumps(entry) + "\n")
            steps += 1
    return steps


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, metavar="RUNTIME", help="another runtime/ folder to compare with")
    parser.add_argument("--mb", type=float, default=30, help="transcript size in MB (30)")
    parser.add_argument("--runs", type=int, default=7, help="runs per side, alternating (7)")
    parser.add_argument("--skip", action="append", default=[], help="a source file name to leave out")
    parser.add_argument("--write", type=Path, metavar="PATH", help="only write the transcript there")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.write or Path(tmp) / "edits.jsonl"
        steps = write_transcript(path, int(args.mb * 1e6), set(args.skip))
        print(f"{path.stat().st_size / 1e6:.0f} MB, {steps} steps")
        if args.write:
            return 0
        sides = {"this": ROOT / "runtime", **({"baseline": args.baseline} if args.baseline else {})}
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pyc")
        seconds: dict[str, list[float]] = {name: [] for name in sides}
        for run in range(args.runs + 1):
            for name, runtime in sides.items():
                out = subprocess.run([sys.executable, "-c", LEARN, str(runtime), str(path)], check=True,
                                     capture_output=True, text=True, env=env).stdout
                if run:   # the first round only writes the bytecode caches
                    seconds[name].append(json.loads(out)["seconds"])
        for name, values in seconds.items():
            print(f"{name}: median {statistics.median(values):.3f} s CPU ({', '.join(f'{v:.2f}' for v in values)})")
        if args.baseline:
            ratios = [a / b for a, b in zip(seconds["this"], seconds["baseline"])]
            print(f"ratio this/baseline: medians {statistics.median(seconds['this']) / statistics.median(seconds['baseline']):.3f}, "
                  f"pairs {min(ratios):.2f}-{max(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
