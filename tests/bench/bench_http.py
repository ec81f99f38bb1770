#!/usr/bin/env python3
"""Load test of `brain serve`: concurrent clients mixing reads and writes on a generated vault.

    python3 tests/bench/bench_http.py                          # 16 clients, 30 s, 10,000 cards
    python3 tests/bench/bench_http.py --seconds 5 --cards 1000 # a quick look
    python3 tests/bench/bench_http.py --workers 1              # serve --workers 1 (default: serve's, one per core)

The real server process runs on 127.0.0.1 (`playbook_api.py serve --port 0`) over a vault made by
`gen_vault.py` (and indexed first). Each client thread keeps one HTTP/1.1 connection and picks a
route at random by `MIX`: reads (search, get, list, context) and writes (create, patch = append a
unique marker, feedback = record used/rejected on a small hot set, so writers contend).

Printed: requests per second in all and per route, p50 / p99 latency per route, non-2xx answers,
the server's VmRSS (from /proc, worker processes included) idle, after a warm-up, and at each
quarter of the run, and three checks that no write was lost:
every created memory is a card with its id, every appended marker is in its card, and every hot
card's confidence equals a replay of its feedback events in the log from its value before the run
(each event's `before` is the previous `after`, as tests/helpers.py `replay_problems` checks);
the numbers of `created` and feedback events logged equal the answers that said so.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "runtime"))

from gen_vault import WORDS, generate  # noqa: E402
from helpers import card_meta, events  # noqa: E402

SCRIPT = ROOT / "runtime" / "playbook_api.py"
KEY = "bench-key-" + os.urandom(12).hex()
MIX = (("search", 30), ("get", 18), ("list", 7), ("context", 15), ("create", 12), ("patch", 10), ("feedback", 8))
TYPES = ("troubleshooting", "decision", "runbook", "pattern", "checklist", "insight")


def start_server(vault: Path, log: Path, workers: int | None) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_API_KEY": KEY}
    with open(log, "wb") as err:
        process = subprocess.Popen([sys.executable, str(SCRIPT), "serve", "--port", "0",
                                    *(["--workers", str(workers)] if workers else [])],
                                   env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read_text())
        if found:
            return process, int(found.group(1))
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"server did not start: {log.read_text()}")


def rss_kb(pid: int) -> int:
    """VmRSS of the server: the process and its worker processes, summed."""
    total = 0
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    for each in [pid, *map(int, children)]:
        for line in Path(f"/proc/{each}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def card_ids(vault: Path) -> list[str]:
    ids = []
    for path in (vault / "Playbooks").glob("*.md"):
        found = re.search(r"^id:\s*(\S+)", path.read_text(encoding="utf-8")[:2000], re.MULTILINE)
        if found:
            ids.append(found.group(1))
    return sorted(ids)


def card_paths(vault: Path, wanted: list[str]) -> dict[str, Path]:
    found = {}
    for path in (vault / "Playbooks").glob("*.md"):
        match = re.search(r"^id:\s*(\S+)", path.read_text(encoding="utf-8")[:2000], re.MULTILINE)
        if match and match.group(1) in wanted:
            found[match.group(1)] = path
    return found


def replay_hot(vault: Path, hot: list[str], start: dict[str, float], log: list[dict]) -> list[str]:
    """Each hot card's feedback events chain from its confidence before the run, and the card
    holds the last `after` (a patch rewrites the card but never its confidence)."""
    problems = []
    paths = card_paths(vault, hot)
    for card_id in hot:
        current = start[card_id]
        for event in (e for e in log if e.get("id") == card_id and e["event"] in ("used", "rejected")):
            if abs(event["before"] - current) > 1e-9:
                problems.append(f"{card_id}: event {event['eid']} starts from {event['before']}, the log gives {current}")
            current = event["after"]
        stored = card_meta(paths[card_id]).get("confidence")
        if abs(stored - current) > 1e-9:
            problems.append(f"{card_id}: stored {stored} but the log replays to {current}")
    return problems


class Client(threading.Thread):
    def __init__(self, number: int, port: int, deadline: float, ids: list[str], hot: list[str], shared) -> None:
        super().__init__(name=f"client-{number}")
        self.number = number
        self.port = port
        self.deadline = deadline
        self.ids = ids
        self.hot = hot
        self.shared = shared
        self.rng = random.Random(number)
        self.samples: list[tuple[str, float, int]] = []   # route, seconds, status
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        headers = {"X-API-KEY": KEY}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=headers)
                response = self.connection.getresponse()
                data = response.read()
                break
            except (http.client.HTTPException, OSError):
                self.connection.close()   # the server closed a kept-alive connection; reconnect once
                if attempt == 2:
                    raise
        parsed = json.loads(data) if response.getheader("Content-Type", "").startswith("application/json") else {}
        return response.status, parsed

    def words(self, count: int) -> str:
        return " ".join(self.rng.choice(WORDS[:80]) for _ in range(count))

    def run(self) -> None:
        routes = [name for name, weight in MIX for _ in range(weight)]
        sequence = 0
        while time.monotonic() < self.deadline:
            route = self.rng.choice(routes)
            sequence += 1
            began = time.perf_counter()
            status, data = self.step(route, sequence)
            self.samples.append((route, time.perf_counter() - began, status))

    def step(self, route: str, sequence: int) -> tuple[int, dict]:
        rng = self.rng
        if route == "search":
            return self.call("GET", f"/v1/memories?q={self.words(2).replace(' ', '+')}&limit=10")
        if route == "get":
            return self.call("GET", f"/v1/memories/{rng.choice(self.ids)}")
        if route == "list":
            return self.call("GET", f"/v1/memories?memory_type={rng.choice(TYPES)}&limit=50")
        if route == "context":
            return self.call("POST", "/v1/context", {"query": self.words(3), "k": 5})
        if route == "create":
            status, data = self.call("POST", "/v1/memories", {
                "content": f"Bench note {self.number}-{sequence}: {self.words(12)}", "memory_type": "insight",
                "tags": ["bench", f"client{self.number}"]})
            if status == 201:
                with self.shared["lock"]:
                    self.shared["created"].append(data["memory_id"])
            return status, data
        if route == "patch":
            target = rng.choice(self.hot)
            marker = f"patched-{self.number}-{sequence}"
            status, data = self.call("PATCH", f"/v1/memories/{target}", {"append": marker})
            if status == 200:
                with self.shared["lock"]:
                    self.shared["patched"].append((target, marker))
            return status, data
        status, data = self.call("POST", f"/v1/memories/{rng.choice(self.hot)}/feedback",
                                 {"outcome": rng.choice(("used", "rejected"))})
        if status == 200:
            with self.shared["lock"]:
                self.shared["feedback"] += 1
        return status, data


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, help="serve --workers (processes sharing the port; default: "
                                                    "serve's own, one per core)")
    parser.add_argument("--workdir", help="keep the vault here (default: a temporary folder)")
    args = parser.parse_args()

    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-http-"))
    vault = work / f"vault{args.cards}"
    if not vault.exists():
        began = time.monotonic()
        generate(vault, args.cards)
        subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "reindex"], check=True,
                       stdout=subprocess.DEVNULL)
        print(f"vault: {args.cards} cards generated and indexed in {time.monotonic() - began:.1f} s ({vault})")
    ids = card_ids(vault)
    hot = random.Random(7).sample(ids, 20)
    start_confidence = {card_id: card_meta(path).get("confidence", 0.5) for card_id, path in card_paths(vault, hot).items()}
    log = work / "serve.err"
    process, port = start_server(vault, log, args.workers)
    events_before = len(events(vault))
    shared = {"lock": threading.Lock(), "created": [], "patched": [], "feedback": 0}
    try:
        idle_rss = rss_kb(process.pid)
        warm = Client(99, port, 0, ids, hot, {"lock": threading.Lock(), "created": [], "patched": [], "feedback": 0})
        for route, _ in MIX:   # every route's modules imported and caches made before "start"
            if route not in ("create", "patch", "feedback"):
                warm.step(route, 0)
        warm.connection.close()
        rss = [rss_kb(process.pid)]
        deadline = time.monotonic() + args.seconds
        clients = [Client(n, port, deadline, ids, hot, shared) for n in range(args.clients)]
        began = time.monotonic()
        for client in clients:
            client.start()
        quarters = [began + args.seconds * q / 4 for q in (1, 2, 3)]
        while any(c.is_alive() for c in clients):
            time.sleep(0.25)
            if quarters and time.monotonic() >= quarters[0]:
                quarters.pop(0)
                rss.append(rss_kb(process.pid))
        elapsed = time.monotonic() - began
        rss.append(rss_kb(process.pid))
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(60)

    samples = [s for c in clients for s in c.samples]
    started = re.search(r"(\d+) worker process", log.read_text())
    print(f"\n{args.clients} clients, {started.group(1) if started else '?'} server process(es), {elapsed:.1f} s, "
          f"{len(samples)} requests: {len(samples) / elapsed:.0f} req/s "
          f"(server exit code {code} after SIGTERM)")
    print(f"{'route':<10} {'requests':>9} {'req/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8}")
    for route, _ in MIX:
        times = [t for r, t, _ in samples if r == route]
        bad = sum(1 for r, _, s in samples if r == route and not 200 <= s < 300)
        print(f"{route:<10} {len(times):>9} {len(times) / elapsed:>7.1f} {percentile(times, 0.5) * 1000:>8.1f} "
              f"{percentile(times, 0.99) * 1000:>8.1f} {bad:>8}")
    print(f"server VmRSS: idle {idle_rss / 1024:.1f} MB; after a warm-up read of each route {rss[0] / 1024:.1f} MB; "
          f"at 1/4, 1/2, 3/4 and the end of the run: {', '.join(f'{kb / 1024:.1f}' for kb in rss[1:])} MB")

    # No write lost.
    now_ids = set(card_ids(vault))
    missing = [i for i in shared["created"] if i not in now_ids]
    texts = {}
    for path in (vault / "Playbooks").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        found = re.search(r"^id:\s*(\S+)", text[:2000], re.MULTILINE)
        if found and found.group(1) in hot:
            texts[found.group(1)] = text
    lost_patches = [(i, m) for i, m in shared["patched"] if m not in texts.get(i, "")]
    log_events = events(vault)[events_before:]
    feedback_logged = sum(1 for e in log_events if e["event"] in ("used", "rejected"))
    created_logged = sum(1 for e in log_events if e["event"] == "created")
    problems = replay_hot(vault, hot, start_confidence, log_events)
    print(f"created: {len(shared['created'])} answered, {created_logged} logged, {len(missing)} missing as cards")
    print(f"patches: {len(shared['patched'])} answered, {len(lost_patches)} markers missing from their cards")
    print(f"feedback: {shared['feedback']} answered, {feedback_logged} logged; log replay problems: {len(problems)}")
    for problem in problems[:5]:
        print("  " + problem)
    ok = not missing and not lost_patches and not problems and feedback_logged == shared["feedback"] \
        and created_logged == len(shared["created"]) and code == 0
    print("no write lost" if ok else "WRITES LOST OR SERVER UNCLEAN")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
