#!/usr/bin/env python3
"""Issue 22's server-throughput figures, each against its reference, in one run:

    python3 tests/bench/bench_throughput.py                       # 10 s per figure and side
    python3 tests/bench/bench_throughput.py --seconds 5 --rounds 2 --workdir /tmp/bt
    python3 tests/bench/bench_throughput.py --only writes         # or: search, cli
    python3 tests/bench/bench_throughput.py --serve-args --workers 1   # what `serve` is given

1. HTTP writes with `--clients` (16) kept-alive clients, each client sending one request after
   another: POST /v1/memories (create), PATCH /v1/memories/{id} (`append` a unique marker) and
   POST /v1/memories/{id}/feedback, on a `--cards` (10,000) vault; and a create that asks for no
   insights (`"insights": false`: judged against no other card). Reference: the durable-write
   floor (`reference_servers.py floor`): a ThreadingHTTPServer that writes each card file
   durably (temporary file, fsync, rename) and appends a JSON line with fsync, under one lock,
   on its own copy of the vault. Goal: rate >= 0.5x the floor's and p50 <= 2x its p50.
   Checked afterwards: every acknowledged create is a card with its id and a `created` event,
   every acknowledged marker is in its card, the `updated`, `used` and `rejected` events logged
   equal the answers, and the cards' confidence equals a replay of the log (bench_http.py).
2. HTTP search with 16 clients, GET /v1/memories?q=<2 words>&limit=10, at 1,000 and 10,000
   cards. Reference: `reference_servers.py fts5`, an FTS5 bm25 server in the same framework over
   the same cards. Goal: p50 <= 2x the reference's. Printed beside it: the same against
   `fts5-nodelay`, that server with TCP_NODELAY as `brain serve` has it (without it, ~40 ms of
   the reference's p50 is the client's delayed ACK, not work).
3. `--cli-writers` (8) concurrent CLI writers, each running `create` (then `record`) one process
   after another. Reference: `reference_writer.py`, one process doing the same durable write
   (card file and log line, fsynced, under an flock). Goal: ops/s >= 0.5x the reference's.

Both sides of each figure run in the same process slot one after the other, in alternating
order over `--rounds`; the machine's load moves them both, so ratios are what to read. Writes
go to copies of the vault (one per side); bytecode is cached for both sides.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
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

from bench_http import card_ids, card_paths, percentile, replay_hot  # noqa: E402
from gen_vault import WORDS, generate  # noqa: E402
from helpers import card_meta, events  # noqa: E402

SCRIPT = ROOT / "runtime" / "playbook_api.py"
KEY = "bench-key-" + os.urandom(12).hex()
# "create-no-insights": a create that asks for no insights (`"insights": false`, decision 0038).
GOALS = {"create": 0.5, "create-no-insights": 0.5, "patch": 0.5, "feedback": 0.5}


def env_for(vault: Path, cache: Path) -> dict[str, str]:
    env = {**os.environ, "BRAIN_VAULT": str(vault), "BRAIN_API_KEY": KEY, "PYTHONPYCACHEPREFIX": str(cache)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def start(argv: list[str], env: dict[str, str], log: Path) -> tuple[subprocess.Popen, int, str]:
    """A server process; returns it, its port and its start line."""
    with open(log, "wb") as err:
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace")
        found = re.search(r"listening on http://127\.0\.0\.1:(\d+)[^\n]*", text)
        if found:
            return process, int(found.group(1)), found.group(0)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise SystemExit(f"{argv[1:3]} did not start: {log.read_text(errors='replace')[-2000:]}")


def stop(process: subprocess.Popen) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(60)
    except subprocess.TimeoutExpired:
        process.kill()
        return -9


class Client(threading.Thread):
    """One kept-alive connection sending `make(rng, n)` requests one after another until the deadline."""

    def __init__(self, number: int, port: int, deadline: float, make) -> None:
        super().__init__(name=f"client-{number}")
        self.number, self.port, self.deadline, self.make = number, port, deadline, make
        self.rng = random.Random(number * 7919 + port)
        self.samples: list[float] = []
        self.bad: list[tuple[int, bytes]] = []
        self.acked: list[tuple[str, dict, dict]] = []    # (kind, request body, answer) of each 2xx write
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, body: dict | None) -> tuple[int, bytes]:
        headers = {"X-API-KEY": KEY}
        payload = None
        if body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, OSError):
                self.connection.close()   # a kept-alive connection the server closed: reconnect once
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def run(self) -> None:
        sequence = 0
        while time.monotonic() < self.deadline:
            sequence += 1
            method, path, body, kind = self.make(self.rng, self.number, sequence)
            began = time.perf_counter()
            status, data = self.request(method, path, body)
            self.samples.append(time.perf_counter() - began)
            if 200 <= status < 300:
                if kind:
                    self.acked.append((kind, {"path": path, **(body or {})}, json.loads(data)))
            else:
                self.bad.append((status, data[:300]))
        self.connection.close()


def load(port: int, clients: int, seconds: float, make) -> dict:
    """`clients` clients for `seconds`: rate, p50, p99, non-2xx answers and the acknowledged writes."""
    deadline = time.monotonic() + seconds
    threads = [Client(n, port, deadline, make) for n in range(clients)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    samples = [s for t in threads for s in t.samples]
    bad = [b for t in threads for b in t.bad]
    return {"rate": len(samples) / elapsed, "p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99),
            "count": len(samples), "bad": bad, "acked": [a for t in threads for a in t.acked]}


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS[:80]) for _ in range(count))


def writer_requests(op: str, ids: list[str]):
    def make(rng: random.Random, number: int, sequence: int):
        if op in ("create", "create-no-insights"):
            body = {"content": f"Bench note {number}-{sequence} {os.urandom(4).hex()}: {words(rng, 12)}",
                    "memory_type": "insight", "tags": ["bench", f"client{number}"]}
            return "POST", "/v1/memories", body if op == "create" else {**body, "insights": False}, op
        target = rng.choice(ids)
        if op == "patch":
            return "PATCH", f"/v1/memories/{target}", {"append": f"marker-{number}-{sequence}-{os.urandom(4).hex()}"}, op
        return "POST", f"/v1/memories/{target}/feedback", {"outcome": rng.choice(("used", "rejected"))}, op
    return make


def search_requests(rng: random.Random, number: int, sequence: int):
    return "GET", f"/v1/memories?q={words(rng, 2).replace(' ', '+')}&limit=10", None, None


def check_writes(vault: Path, results: list[dict], events_before: int, hot: list[str],
                 start_confidence: dict[str, float]) -> list[str]:
    """Every acknowledged write of ours is in its card and in the log."""
    problems = []
    acked = [a for r in results for a in r["acked"]]
    created = [answer["memory_id"] for kind, _, answer in acked if kind.startswith("create")]
    markers = [(body["path"].rsplit("/", 1)[1], body["append"]) for kind, body, _ in acked if kind == "patch"]
    feedback = sum(1 for kind, _, _ in acked if kind == "feedback")
    now_ids = set(card_ids(vault))
    problems += [f"created {i} is not a card" for i in created if i not in now_ids]
    texts = {i: p.read_text(encoding="utf-8") for i, p in card_paths(vault, sorted({i for i, _ in markers})).items()}
    problems += [f"marker {m} missing from {i}" for i, m in markers if m not in texts.get(i, "")]
    log = events(vault)[events_before:]
    for name, count in (("created", len(created)), ("updated", len(markers))):
        logged = sum(1 for e in log if e["event"] == name)
        if logged != count:
            problems.append(f"{count} {name} answered but {logged} logged")
    logged = sum(1 for e in log if e["event"] in ("used", "rejected"))
    if logged != feedback:
        problems.append(f"{feedback} feedback answered but {logged} logged")
    problems += replay_hot(vault, hot, start_confidence, log)
    return problems


def ratio_line(name: str, ours: dict, ref: dict, goal: str, ok: bool) -> str:
    return (f"{name:<26} {ours['rate']:>8.1f} {ref['rate']:>8.1f} {ours['rate'] / ref['rate']:>6.2f}x "
            f"{ours['p50'] * 1000:>8.1f} {ref['p50'] * 1000:>8.1f} {ours['p50'] / ref['p50']:>6.2f}x "
            f"{ours['p99'] * 1000:>8.1f} {ref['p99'] * 1000:>8.1f}  {goal} {'ok' if ok else 'MISSED'}")


HEADER = (f"{'figure':<26} {'ours/s':>8} {'ref/s':>8} {'rate':>7} {'p50 ms':>8} {'ref p50':>8} {'p50':>7} "
          f"{'p99 ms':>8} {'ref p99':>8}  goal")


def make_vault(work: Path, cards: int, cache: Path) -> Path:
    vault = work / f"vault{cards}"
    if not vault.exists():
        began = time.monotonic()
        generate(vault, cards)
        subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "reindex"], check=True,
                       stdout=subprocess.DEVNULL, env=env_for(vault, cache))
        print(f"vault: {cards} cards generated and indexed in {time.monotonic() - began:.1f} s ({vault})", flush=True)
    return vault


def fresh_copy(vault: Path, name: str) -> Path:
    copy = vault.parent / name
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(vault, copy, symlinks=True)
    return copy


def median_of(runs: list[dict]) -> dict:
    """The run with the median rate (its p50 and p99 with it), and every run's figures."""
    ordered = sorted(runs, key=lambda r: r["rate"])
    chosen = dict(ordered[len(ordered) // 2])
    chosen["runs"] = [(round(r["rate"], 1), round(r["p50"] * 1000, 1)) for r in runs]
    return chosen


def agreeing_index(vault: Path, cache: Path) -> None:
    """The copy's search index brought to agree with the copy: a copied file has a new inode,
    so the index held every card as changed, and the first write that made the server list the
    folder again re-read all of them under the write lock (a 10,000-card copy stalled every
    writer ~30 s, at a random moment of one round). Not timed."""
    subprocess.run([sys.executable, str(SCRIPT), "--vault", str(vault), "reindex"], check=True,
                   stdout=subprocess.DEVNULL, env=env_for(vault, cache))


def bench_writes(args, vault: Path, cache: Path, work: Path) -> list[tuple[str, bool]]:
    ours_vault, floor_vault = fresh_copy(vault, "ours-writes"), fresh_copy(vault, "floor-writes")
    agreeing_index(ours_vault, cache)
    ids = card_ids(ours_vault)
    hot = random.Random(7).sample(ids, min(200, len(ids)))
    start_confidence = {i: card_meta(p).get("confidence", 0.5) for i, p in card_paths(ours_vault, hot).items()}
    events_before = len(events(ours_vault))
    warm_up: list[dict] = []
    ours, ours_port, ours_line = start([sys.executable, str(SCRIPT), "serve", "--port", "0", *args.serve_args],
                                       env_for(ours_vault, cache), work / "ours-serve.err")
    try:
        floor, floor_port, _ = start([sys.executable, str(HERE / "reference_servers.py"), "floor", str(floor_vault)],
                                     env_for(floor_vault, cache), work / "floor.err")
    except BaseException:
        stop(ours)
        raise
    print(f"ours: {ours_line}", flush=True)
    results: dict[str, dict[str, list[dict]]] = {op: {"ours": [], "ref": []} for op in GOALS}
    try:
        for port in (ours_port, floor_port):   # every route's code imported before timing
            for op in GOALS:
                run = load(port, 2, 0.5, writer_requests(op, hot))
                if port == ours_port:
                    warm_up.append(run)
        for round_ in range(args.rounds):
            for op in GOALS:
                sides = [("ours", ours_port), ("ref", floor_port)]
                for side, port in sides if round_ % 2 == 0 else sides[::-1]:
                    results[op][side].append(load(port, args.clients, args.seconds, writer_requests(op, hot)))
    finally:
        codes = stop(ours), stop(floor)
    print(f"\nHTTP writes, {args.clients} kept-alive clients, {len(ids)} cards, {args.seconds:g} s x {args.rounds} "
          f"round(s) per side (ref = durable-write floor; the median-rate run shown)")
    print(HEADER)
    verdicts = []
    for op, goal in GOALS.items():
        ours_run, ref_run = median_of(results[op]["ours"]), median_of(results[op]["ref"])
        ok = ours_run["rate"] >= goal * ref_run["rate"] and ours_run["p50"] <= 2 * ref_run["p50"]
        print(ratio_line(f"{op} (HTTP)", ours_run, ref_run, ">=0.5x rate, p50<=2x", ok))
        if args.rounds > 1:
            print(f"{'':<26} runs (rate, p50 ms): ours {ours_run['runs']}  ref {ref_run['runs']}")
        bad = [b for r in results[op]["ours"] for b in r["bad"]]
        if bad:
            print(f"  {len(bad)} non-2xx answers from ours, e.g. {bad[0]}")
            ok = False
        verdicts.append((f"{op} (HTTP)", ok))
    problems = check_writes(ours_vault, warm_up + [r for op in GOALS for r in results[op]["ours"]], events_before,
                            hot, start_confidence)
    print(f"acknowledged writes checked: {'every one in its card and the log' if not problems else 'PROBLEMS'}; "
          f"server exit codes after SIGTERM: ours {codes[0]}, floor {codes[1]}")
    for problem in problems[:10]:
        print("  " + problem)
    verdicts.append(("no acknowledged write lost", not problems and codes[0] == 0))
    return verdicts


def bench_search(args, cache: Path, work: Path) -> list[tuple[str, bool]]:
    verdicts = []
    lines = []
    for cards in args.search_cards:
        vault = make_vault(work, cards, cache)
        ours, ours_port, ours_line = start([sys.executable, str(SCRIPT), "serve", "--port", "0", *args.serve_args],
                                           env_for(vault, cache), work / "ours-search.err")
        refs = []
        try:
            for kind in ("fts5", "fts5-nodelay"):
                refs.append(start([sys.executable, str(HERE / "reference_servers.py"), kind, str(vault)],
                                  env_for(vault, cache), work / f"{kind}.err"))
        except BaseException:
            for process in [ours] + [r[0] for r in refs]:
                stop(process)
            raise
        runs: dict[str, list[dict]] = {"ours": [], "ref": [], "nodelay": []}
        try:
            for port in (ours_port, refs[0][1], refs[1][1]):
                load(port, 2, 0.5, search_requests)
            for round_ in range(args.rounds):
                sides = [("ours", ours_port), ("ref", refs[0][1]), ("nodelay", refs[1][1])]
                for side, port in sides if round_ % 2 == 0 else sides[::-1]:
                    runs[side].append(load(port, args.clients, args.seconds, search_requests))
        finally:
            for process in [ours] + [r[0] for r in refs]:
                stop(process)
        ours_run, ref_run, nodelay_run = median_of(runs["ours"]), median_of(runs["ref"]), median_of(runs["nodelay"])
        ok = ours_run["p50"] <= 2 * ref_run["p50"] and not any(r["bad"] for r in runs["ours"])
        lines.append(ratio_line(f"search at {cards:,} (HTTP)", ours_run, ref_run, "p50<=2x", ok))
        # The same goal against the reference with TCP_NODELAY (reference_servers.py): what is
        # left when neither side waits for delayed ACKs. Printed beside the figure.
        lines.append(ratio_line("  vs fts5-nodelay", ours_run, nodelay_run, "p50<=2x",
                                ours_run["p50"] <= 2 * nodelay_run["p50"]))
        if args.rounds > 1:
            lines.append(f"{'':<26} runs (rate, p50 ms): ours {ours_run['runs']}  ref {ref_run['runs']}  "
                         f"nodelay {nodelay_run['runs']}")
        verdicts.append((f"search at {cards:,} (HTTP)", ok))
    print(f"\nHTTP search, {args.clients} kept-alive clients, {args.seconds:g} s x {args.rounds} round(s) per side "
          f"(ref = FTS5 bm25 server; fts5-nodelay = the same with TCP_NODELAY)\nours: {ours_line}")
    print(HEADER)
    print("\n".join(lines))
    return verdicts


def cli_loop(argv_of, deadline: float, env: dict[str, str], out: list, failures: list) -> None:
    sequence = 0
    while time.monotonic() < deadline:
        sequence += 1
        began = time.perf_counter()
        proc = subprocess.run(argv_of(sequence), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        out.append(time.perf_counter() - began)
        if proc.returncode != 0:
            failures.append(proc.stderr.decode(errors="replace")[-300:])


def cli_run(writers: int, seconds: float, argv_of, env: dict[str, str]) -> dict:
    deadline = time.monotonic() + seconds
    samples: list[float] = []
    failures: list[str] = []
    threads = [threading.Thread(target=cli_loop, args=(lambda n, w=w: argv_of(w, n), deadline, env, samples, failures))
               for w in range(writers)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - began
    return {"rate": len(samples) / elapsed, "p50": percentile(samples, 0.5), "p99": percentile(samples, 0.99),
            "count": len(samples), "bad": failures}


def bench_cli(args, vault: Path, cache: Path, work: Path) -> list[tuple[str, bool]]:
    ours_vault, ref_vault = fresh_copy(vault, "ours-cli"), fresh_copy(vault, "ref-cli")
    agreeing_index(ours_vault, cache)   # else the first record to list the folder re-read all 10,000 cards
    paths = sorted(p.relative_to(ours_vault).as_posix() for p in (ours_vault / "Playbooks").glob("*.md"))
    targets = random.Random(11).sample(paths, 50)
    ours_env, ref_env = env_for(ours_vault, cache), env_for(ref_vault, cache)
    ops = {
        "create": (lambda w, n: [sys.executable, str(SCRIPT), "create", "--type", "insight", "--domain", "general",
                                 "--title", f"CLI note {w}-{n} {os.urandom(3).hex()}", "--tags", "bench",
                                 "--body", f"written by writer {w}: timeout retry latency {n}"],
                   lambda w, n: [sys.executable, str(HERE / "reference_writer.py"), str(ref_vault), "create",
                                 f"CLI note {w}-{n} {os.urandom(3).hex()} written by writer {w}"]),
        "record": (lambda w, n: [sys.executable, str(SCRIPT), "record", targets[(w * 7 + n) % len(targets)], "used"],
                   lambda w, n: [sys.executable, str(HERE / "reference_writer.py"), str(ref_vault), "record",
                                 targets[(w * 7 + n) % len(targets)]]),
    }
    for ours_argv, ref_argv in ops.values():   # bytecode cached for both sides
        subprocess.run(ours_argv(0, 0), env=ours_env, stdout=subprocess.DEVNULL, check=True)
        subprocess.run(ref_argv(0, 0), env=ref_env, stdout=subprocess.DEVNULL, check=True)
    runs: dict[str, dict[str, list[dict]]] = {op: {"ours": [], "ref": []} for op in ops}
    for round_ in range(args.rounds):
        for op, (ours_argv, ref_argv) in ops.items():
            sides = [("ours", ours_argv, ours_env), ("ref", ref_argv, ref_env)]
            for side, argv_of, env in sides if round_ % 2 == 0 else sides[::-1]:
                runs[op][side].append(cli_run(args.cli_writers, args.seconds, argv_of, env))
    print(f"\n{args.cli_writers} concurrent CLI writers (one process per write), {len(paths)} cards, "
          f"{args.seconds:g} s x {args.rounds} round(s) per side (ref = reference_writer.py)")
    print(HEADER)
    verdicts = []
    for op in ops:
        ours_run, ref_run = median_of(runs[op]["ours"]), median_of(runs[op]["ref"])
        failures = [f for r in runs[op]["ours"] for f in r["bad"]]
        ok = ours_run["rate"] >= 0.5 * ref_run["rate"] and not failures
        print(ratio_line(f"CLI {op} x{args.cli_writers}", ours_run, ref_run, ">=0.5x rate", ok))
        if args.rounds > 1:
            print(f"{'':<26} runs (rate, p50 ms): ours {ours_run['runs']}  ref {ref_run['runs']}")
        if failures:
            print(f"  {len(failures)} failed calls, e.g. {failures[0]}")
        verdicts.append((f"CLI {op} x{args.cli_writers}", ok))
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=10_000, help="vault size for the writes and the CLI writers")
    parser.add_argument("--search-cards", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--seconds", type=float, default=10.0, help="per figure, per side, per round")
    parser.add_argument("--rounds", type=int, default=1, help="runs per side, in alternating order")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--cli-writers", type=int, default=8)
    parser.add_argument("--only", choices=("writes", "search", "cli"), action="append")
    parser.add_argument("--workdir", help="keep the generated vaults here (default: a temporary folder)")
    parser.add_argument("--serve-args", nargs=argparse.REMAINDER, default=[],
                        help="more arguments for `serve` (e.g. --workers 1); must come last")
    args = parser.parse_args()
    only = set(args.only or ("writes", "search", "cli"))
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "pycache"
    verdicts: list[tuple[str, bool]] = []
    if only & {"writes", "cli"}:
        vault = make_vault(work, args.cards, cache)
        if "writes" in only:
            verdicts += bench_writes(args, vault, cache, work)
        if "cli" in only:
            verdicts += bench_cli(args, vault, cache, work)
    if "search" in only:
        verdicts += bench_search(args, cache, work)
    print("\n" + "; ".join(f"{name}: {'ok' if ok else 'MISSED'}" for name, ok in verdicts))
    sys.exit(0 if all(ok for _, ok in verdicts) else 1)


if __name__ == "__main__":
    main()
