#!/usr/bin/env python3
"""`recall_memories` over `/mcp` against the same search over `/v1`, on one real `brain serve`.

    python3 tests/bench/bench_mcp_http.py                       # 2,000 cards, 200 rounds
    python3 tests/bench/bench_mcp_http.py --cards 10000 --rounds 300 --workdir /tmp/bmh

Issue 23 asks that `/mcp` answer a `recall_memories` call within 1.2x the time of the same call on
`/v1`. Both go through the same server process, gate and keys; each side keeps one HTTP/1.1
connection. A round asks one query on both, the side going first alternating, so a loaded
machine slows both alike. `/v1`: `GET /v1/memories?q=...&status=active&limit=5`; `/mcp`: one
session (initialized before timing), `tools/call recall_memories {query, limit: 5}`: the same
library call (`recall`), so the difference is the door: JSON-RPC, seed 000's fields (each hit's
content and summary) and the result sent twice (structuredContent and its text block). Printed:
median and p90 of each, and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

from bench_http import KEY, SCRIPT, start_server  # noqa: E402
from gen_vault import WORDS, generate  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-mcp-http-"))
    vault = work / f"vault{args.cards}"
    if not vault.exists():
        generate(vault, args.cards)
        subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "reindex"], check=True,
                       stdout=subprocess.DEVNULL)
    process, port = start_server(vault, work / "serve.err", 1)
    rng = random.Random(11)
    queries = [" ".join(rng.sample(WORDS, 2)) for _ in range(args.rounds)]
    v1 = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    mcp = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"X-API-KEY": KEY}

    def v1_call(query: str) -> float:
        began = time.perf_counter()
        v1.request("GET", f"/v1/memories?q={quote(query)}&status=active&limit=5", headers=headers)
        response = v1.getresponse()
        data = response.read()
        elapsed = time.perf_counter() - began
        assert response.status == 200, data[:300]
        return elapsed

    def mcp_post(message: dict, session: str | None = None) -> tuple[http.client.HTTPResponse, bytes]:
        sent = {**headers, "Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if session:
            sent["Mcp-Session-Id"] = session
        mcp.request("POST", "/mcp", body=json.dumps(message).encode(), headers=sent)
        response = mcp.getresponse()
        return response, response.read()

    try:
        response, _ = mcp_post({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                                "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                                           "clientInfo": {"name": "bench", "version": "1"}}})
        session = response.getheader("Mcp-Session-Id")
        mcp_post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)

        def mcp_call(query: str) -> float:
            began = time.perf_counter()
            response, data = mcp_post({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "recall_memories", "arguments": {"query": query, "limit": 5}}}, session)
            elapsed = time.perf_counter() - began
            assert response.status == 200 and b'"isError": false' in data, data[:300]
            return elapsed

        for query in queries[:10]:   # warm both: modules imported, index pages cached
            v1_call(query)
            mcp_call(query)
        times = {"v1": [], "mcp": []}
        for n, query in enumerate(queries):
            order = (("v1", v1_call), ("mcp", mcp_call)) if n % 2 == 0 else (("mcp", mcp_call), ("v1", v1_call))
            for name, call in order:
                times[name].append(call(query))
    finally:
        v1.close()
        mcp.close()
        process.terminate()
        process.wait(60)
    for name, values in times.items():
        values.sort()
        print(f"{name:4} median {statistics.median(values) * 1000:7.2f} ms   p90 {values[int(len(values) * 0.9)] * 1000:7.2f} ms")
    ratio = statistics.median(times["mcp"]) / statistics.median(times["v1"])
    print(f"/mcp over /v1, medians: {ratio:.2f}x ({args.cards} cards, {args.rounds} rounds)")
    return 0 if ratio <= 1.2 else 1


if __name__ == "__main__":
    sys.exit(main())
