#!/usr/bin/env python3
"""Today's single-call figures, this checkout against another, interleaved (issue 22's "no
regression"): on a loaded machine only runs taken side by side compare.

    git worktree add /tmp/base BASE_COMMIT
    python3 tests/bench/ab_commands.py /tmp/base                    # 10,000 cards, 7 rounds
    python3 tests/bench/ab_commands.py /tmp/base --cards 1000 --rounds 5

Each checkout gets its own copy of one generated vault (gen_vault.py), indexed by its own
`reindex`. Then, round after round, every command runs once as a whole process for each side in
turn, command by command (A B, then B A the next round): a warm `search`, `record CARD used` (another card each
time), `create`, `list`, `hook prompt`, `brief`, and one MCP `recall_memories` call on a warm
server of each side (the median of 5 calls a round). Bytecode is cached in a temporary
PYTHONPYCACHEPREFIX, as on a user's machine. Prints each side's median and the ratio this/other
per command, with the range of the per-round ratios, and the ratio of the median CPU time (user +
system) of each process (for the MCP call, the server's per call), less disturbed by load than
wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
QUERY = "connection timeout retry"


class Side:
    def __init__(self, name: str, checkout: Path, vault: Path, env: dict[str, str]) -> None:
        self.name, self.script, self.vault = name, checkout / "runtime" / "playbook_api.py", vault
        self.env = {**env, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "bench"}
        self.cards = sorted(p.stem for p in (vault / "Playbooks").glob("*.md"))
        self.server = None

    def run(self, *argv: str, stdin: bytes = b"") -> float:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(self.script), *argv], env=self.env, input=stdin,
                              capture_output=True)
        spent = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        if done.returncode != 0:
            raise SystemExit(f"{self.name} {argv[:2]} failed: {done.stderr.decode()[-300:]}")
        return spent

    def mcp(self, calls: int) -> float:
        if self.server is None:
            self.server = subprocess.Popen([sys.executable, str(self.script), "mcp"], env=self.env,
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            self.number = 0
            self.call({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "ab", "version": "1"}},
                      "initialize")
            for _ in range(3):
                self.call({"name": "recall_memories", "arguments": {"query": QUERY}})
        samples, cpu = [], []
        for _ in range(calls):
            used = self.server_cpu()
            start = time.perf_counter()
            self.call({"name": "recall_memories", "arguments": {"query": QUERY}})
            samples.append(time.perf_counter() - start)
            cpu.append(self.server_cpu() - used)
        self.cpu = sum(cpu)   # clock ticks are coarse beside one call: the calls of the round together
        return statistics.median(samples)

    def server_cpu(self) -> float:
        """The MCP server's user + system CPU seconds so far (/proc/PID/stat)."""
        fields = Path(f"/proc/{self.server.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def call(self, params: dict, method: str = "tools/call") -> dict:
        self.number += 1
        self.server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.number, "method": method,
                                            "params": params}).encode() + b"\n")
        self.server.stdin.flush()
        return json.loads(self.server.stdout.readline())

    def stop(self) -> None:
        if self.server is not None:
            self.server.stdin.close()
            self.server.wait(timeout=60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", type=Path, help="the checkout to compare with (e.g. a worktree of the base)")
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    from gen_vault import generate

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="ab-commands-"))
    source = workdir / f"gen{args.cards}"
    if not (source / "Playbooks").is_dir():
        generate(source, args.cards)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    sides = []
    for name, checkout in (("this", ROOT), ("other", args.other.resolve())):
        vault = workdir / f"vault-{name}"
        shutil.rmtree(vault, ignore_errors=True)
        shutil.copytree(source, vault, ignore=shutil.ignore_patterns("cache"))
        side = Side(name, checkout, vault, env)
        side.run("reindex")
        for _ in range(2):
            side.run("search", QUERY)   # warm: bytecode, the page cache
        sides.append(side)
    prompt = json.dumps({"session_id": "ab", "transcript_path": "", "cwd": str(workdir),
                         "hook_event_name": "UserPromptSubmit", "prompt": QUERY}).encode()
    times: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for number in range(args.rounds):
        order = sides if number % 2 == 0 else sides[::-1]
        commands = {
            "search": lambda side: side.run("search", QUERY),
            "record": lambda side: side.run("record", side.cards[number * 37 % len(side.cards)], "used", "ab"),
            "create": lambda side: side.run("create", "--type", "pattern", "--domain", "dev", "--title",
                                            f"AB card {number}", "--body", f"Round {number} of the comparison."),
            "list": lambda side: side.run("list"),
            "hook prompt": lambda side: side.run("hook", "prompt", stdin=prompt),
            "brief": lambda side: side.run("brief", QUERY),
            "MCP call": lambda side: side.mcp(5),
        }
        for what, command in commands.items():
            for side in order:   # each command on both sides in turn: load falls on both alike
                times.setdefault((what, side.name), []).append(command(side))
                cpu.setdefault((what, side.name), []).append(side.cpu)
    for side in sides:
        side.stop()
    print(f"{args.cards} cards, {args.rounds} rounds; ms; ratios this / other: of the medians, of the fastest "
          "quarters' means (least disturbed by load), and the per-round ratios' quartiles")
    for what in ("search", "record", "create", "list", "hook prompt", "brief", "MCP call"):
        mine, theirs = times[what, "this"], times[what, "other"]
        per_round = sorted(a / b for a, b in zip(mine, theirs))
        quarter = max(1, len(mine) // 4)
        fast_mine, fast_theirs = (statistics.mean(sorted(x)[:quarter]) for x in (mine, theirs))
        print(f"{what:<12} this {statistics.median(mine) * 1000:7.1f}  other {statistics.median(theirs) * 1000:7.1f}  "
              f"median {statistics.median(mine) / statistics.median(theirs):.3f}  fastest {fast_mine / fast_theirs:.3f}  "
              f"(per round {per_round[len(per_round) // 4]:.2f}-{per_round[3 * len(per_round) // 4]:.2f})  "
              f"CPU {statistics.median(cpu[what, 'this']) / max(statistics.median(cpu[what, 'other']), 1e-9):.3f}",
              flush=True)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
