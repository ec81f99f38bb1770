#!/usr/bin/env python3
"""The agent doors against a warm `search` process, ratios taken in one run on a generated vault.

    python3 tests/bench/bench_doors.py                 # 10,000 cards, 7 runs each
    python3 tests/bench/bench_doors.py --cards 1000 --runs 5

Reports the median wall time of: a `search` process (index warm), a `hook prompt` process, a
`brief` process, and one MCP `recall_memories` call on a warm server (the same query); the RSS
growth of the server over 1,000 calls; and auto-learn on a 50 MB transcript (time, peak memory
read as VmHWM inside the process); and a `hook session-end` process, which hands learning to a
detached process (tests/doors/test_hooks.py checks that it does; its time is measured here). Targets
(issue 11): hook prompt <= 1.2x search, brief <= 1.5x, MCP call <= 0.3x, growth < 10 MB, auto-learn
< 5 s and < 60 MB; session-end < 1.5 s (Claude Code's allowance).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runtime" / "playbook_api.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
QUERY = "connection timeout retry"


def timed(argv: list[str], env: dict[str, str], runs: int, stdin: bytes = b"") -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, str(SCRIPT), *argv], env=env, input=stdin, capture_output=True, check=True)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    return 0


def mcp_calls(env: dict[str, str], runs: int) -> tuple[float, int]:
    server = subprocess.Popen([sys.executable, str(SCRIPT), "mcp"], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def call(number: int, method: str, params: dict) -> dict:
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}).encode()
                           + b"\n")
        server.stdin.flush()
        return json.loads(server.stdout.readline())

    call(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "b", "version": "1"}})
    recall = {"name": "recall_memories", "arguments": {"query": QUERY}}
    for number in range(1, 4):   # warm: index pages and imports
        call(number, "tools/call", recall)
    samples = []
    for number in range(runs):
        start = time.perf_counter()
        assert not call(100 + number, "tools/call", recall)["result"]["isError"]
        samples.append(time.perf_counter() - start)
    tools = [recall, {"name": "list_memories", "arguments": {"limit": 5}}, {"name": "brief", "arguments": {"query": QUERY}},
             {"name": "context", "arguments": {}}, {"name": "get_memory", "arguments": {"memory_id": "no-such"}}]
    # The baseline is taken after each tool ran once: the peak one call needs (list_memories reads
    # every card) is not growth; what 1,000 more calls add is.
    for number, tool in enumerate(tools):
        call(900 + number, "tools/call", tool)
    before = rss_kb(server.pid)
    for number in range(1000):
        call(1000 + number, "tools/call", tools[number % len(tools)])
    growth = rss_kb(server.pid) - before
    print(f"(MCP server RSS {before / 1024:.1f} MB after one call of each tool)")
    server.stdin.close()
    server.wait(timeout=30)
    return statistics.median(samples), growth


def auto_learn(vault: Path, workdir: Path) -> dict:
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "doors")]   # test_hooks and its helpers
    from test_hooks import learn_in_a_process, write_big_transcript  # the transcript the tests use

    transcript = workdir / "big.jsonl"
    write_big_transcript(transcript)
    report = learn_in_a_process(vault, transcript, timeout=600)
    return {"seconds": round(report["seconds"], 2), "peak_mb": round(report["peak_kb"] / 1024, 1),
            "lines": report["lines"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    from gen_vault import generate

    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        generate(vault, args.cards)
        env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_ACTOR": "bench"}
        subprocess.run([sys.executable, str(SCRIPT), "reindex"], env=env, capture_output=True, check=True)
        prompt = json.dumps({"session_id": "b", "transcript_path": "", "cwd": tmp, "hook_event_name": "UserPromptSubmit",
                             "prompt": QUERY}).encode()
        timed(["search", QUERY], env, 2)   # warm the index and the page cache
        search = timed(["search", QUERY], env, args.runs)
        hook = timed(["hook", "prompt"], env, args.runs, prompt)
        transcript = Path(tmp) / "short.jsonl"
        transcript.write_text(json.dumps({"type": "user", "message": {"role": "user", "content": "hi"}}) + "\n")
        ending = json.dumps({"session_id": "b", "transcript_path": str(transcript), "cwd": tmp,
                             "hook_event_name": "SessionEnd", "reason": "exit"}).encode()
        session_end = timed(["hook", "session-end"], env, args.runs, ending)
        brief = timed(["brief", QUERY], env, args.runs)
        mcp, growth = mcp_calls(env, args.runs * 3)
        learned = auto_learn(vault, Path(tmp))
    print(f"{args.cards} cards, median of {args.runs} runs, query {QUERY!r}")
    print(f"search process          {search * 1000:7.1f} ms")
    print(f"hook prompt process     {hook * 1000:7.1f} ms  {hook / search:.2f}x search (target <= 1.2x)")
    print(f"hook session-end        {session_end * 1000:7.1f} ms  (target < 1,500 ms)")
    print(f"brief process           {brief * 1000:7.1f} ms  {brief / search:.2f}x search (target <= 1.5x)")
    print(f"MCP recall_memories     {mcp * 1000:7.1f} ms  {mcp / search:.2f}x search (target <= 0.3x)")
    print(f"MCP 1,000 calls growth  {growth / 1024:7.1f} MB (target < 10 MB)")
    print(f"auto-learn 50 MB        {learned['seconds']:7.2f} s, peak {learned['peak_mb']} MB, {learned['lines']} lines "
          "(target < 5 s, < 60 MB)")


if __name__ == "__main__":
    main()
