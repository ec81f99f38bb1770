"""The query-vector cache (`search/query_vectors.py`): one provider call per distinct query text
and embedding configuration, across real processes, against a real HTTP provider on 127.0.0.1
that counts its calls; torn entries read as misses; the file stays bounded; concurrent writers
never make a search read another query's vector."""

from __future__ import annotations

import json
import multiprocessing
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from helpers import ROOT, LoopbackServer, bytecode_settings, ok_data, reply_json, run_cli, subprocess_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import toy_embedder  # noqa: E402

CARDS = [
    ("RDS connection pool exhausted", "Too many clients; requests queue until the pool frees one.", "rds,postgres"),
    ("ECS External API Timeout via SG Egress", "Calls to an external API fail after 30 s; allow egress 443.", "ecs,sg"),
    ("Rotate the signing keys", "Generate, publish, retire the old key.", "keys"),
]


class CountingProvider(LoopbackServer):
    """An OpenAI-compatible embeddings server (the toy model) that keeps every request."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.requests.append(body)
                data = [{"object": "embedding", "index": i, "embedding": toy_embedder.embed(text)}
                        for i, text in enumerate(body["input"])]
                reply_json(self, 200, json.dumps({"object": "list", "data": data}).encode())

        super().__init__(Handler)

    def queries(self) -> list[str]:
        """The texts embedded as queries, in order."""
        return [text for body in self.requests if body.get("input_type") == "query" for text in body["input"]]


@pytest.fixture
def provider():
    server = CountingProvider()
    yield server
    server.stop()


def configure(vault: Path, provider: CountingProvider, **extra) -> None:
    settings = {"provider": "openai", "model": "toy", "url": f"http://127.0.0.1:{provider.port}/v1",
                "input_type": True, **extra}
    lines = ["[embeddings]"] + [f"{key} = {json.dumps(value)}" for key, value in settings.items()]
    (vault / ".brain" / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


def with_vectors(vault: Path, provider: CountingProvider, **extra) -> None:
    for title, body, tags in CARDS:
        code, _, err = run_cli("create", "--type", "troubleshooting", "--domain", "infra", "--title", title,
                               "--body", body, "--tags", tags)
        assert code == 0, err
    configure(vault, provider, **extra)
    ok_data("reindex", "--embeddings")


def search(vault: Path, query: str, *extra: str) -> dict:
    """`search QUERY --explain --json` in a real process."""
    proc = subprocess_cli("search", query, "--explain", "--json", *extra, vault=vault)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return json.loads(proc.stdout)["data"]


def ranking(data: dict) -> list[tuple[str, float]]:
    return [(hit["path"], hit["score"]) for hit in data["hits"]]


def test_a_repeated_query_is_embedded_once_and_explain_says_it_came_from_the_cache(vault, provider):
    with_vectors(vault, provider)
    first = search(vault, "database pool waiting")
    again = search(vault, "database pool waiting")
    assert provider.queries() == ["database pool waiting"]          # one provider call for two searches
    assert first["query_vector"] == "provider" and again["query_vector"] == "cache"
    assert ranking(again) == ranking(first) and again["weight"] == first["weight"]
    semantic = search(vault, "database pool waiting", "--mode", "semantic")
    assert semantic["query_vector"] == "cache" and len(provider.queries()) == 1
    code, out, _ = run_cli("search", "database pool waiting", "--explain")
    assert code == 0 and "query vector from the cache" in out
    # Another text is another key.
    assert search(vault, "signing keys")["query_vector"] == "provider"
    assert provider.queries() == ["database pool waiting", "signing keys"]


def test_another_prefix_or_model_is_never_a_hit(vault, provider):
    with_vectors(vault, provider)
    search(vault, "database pool waiting")
    # A new query prefix makes every vector foreign (they are embedded again), and the query's too.
    configure(vault, provider, query_prefix="query: ")
    ok_data("reindex", "--embeddings")
    assert search(vault, "database pool waiting")["query_vector"] == "provider"
    assert provider.queries() == ["database pool waiting", "query: database pool waiting"]
    configure(vault, provider, query_prefix="query: ", model="toy-2")
    ok_data("reindex", "--embeddings")
    assert search(vault, "database pool waiting")["query_vector"] == "provider"
    assert len(provider.queries()) == 3


def test_a_torn_entry_reads_as_a_miss_and_is_embedded_again(vault, provider):
    from external_brain.search import query_vectors

    with_vectors(vault, provider)
    first = search(vault, "database pool waiting")
    path = vault / ".brain" / "cache" / query_vectors.FILE
    raw = bytearray(path.read_bytes())
    entry = next(i for i in range(query_vectors._HEADER, len(raw)) if raw[i])   # the one entry written
    raw[entry + 40] ^= 0xFF                                                   # a byte of its vector
    path.write_bytes(bytes(raw))
    again = search(vault, "database pool waiting")
    assert again["query_vector"] == "provider" and len(provider.queries()) == 2
    assert ranking(again) == ranking(first)
    assert search(vault, "database pool waiting")["query_vector"] == "cache"


def test_the_file_is_bounded_whatever_the_number_of_queries(tmp_path):
    from external_brain.search import query_vectors as qv
    from external_brain.vault.storage import init_vault

    vault, _ = init_vault(tmp_path / "v")
    (vault.cache_dir).mkdir(parents=True, exist_ok=True)
    vectors = {qv.query_key("m", f"query {n}"): [float(n), 1.0, -2.5, n / 7] for n in range(3 * qv.SLOTS)}
    for key, vector in vectors.items():
        qv.keep_query_vector(vault, key, vector)
    size = (vault.cache_dir / qv.FILE).stat().st_size
    assert size <= qv._HEADER + qv.SLOTS * (qv._KEY + qv._SUM + 8 * 4)
    found = {key: qv.cached_query_vector(vault, key, 4) for key in vectors}
    kept = {key: got for key, got in found.items() if got is not None}
    assert 0 < len(kept) <= qv.SLOTS
    assert all(got == vectors[key] for key, got in kept.items())      # exact floats, never another's
    # Vectors of another length (another model) are never read for these dimensions.
    assert all(qv.cached_query_vector(vault, key, 5) is None for key in vectors)


def _hammer(root: str, worker: int, rounds: int, results) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "runtime"))
    from external_brain.search import query_vectors as qv
    from external_brain.vault.storage import Vault

    vault = Vault(Path(root))
    wrong = 0
    for n in range(rounds):
        text = f"shared {n % 40}"           # every worker writes and reads the same 40 keys
        key = qv.query_key("m", text)
        vector = [float(len(text)), float(n % 40)] + [(n % 40) / 3.0] * 300
        qv.keep_query_vector(vault, key, vector)
        for m in range(40):
            other = qv.cached_query_vector(vault, qv.query_key("m", f"shared {m}"), 302)
            if other is not None and other[1] != float(m):
                wrong += 1
    results.put(wrong)


def test_concurrent_writers_never_make_a_reader_see_another_querys_vector(tmp_path):
    from external_brain.vault.storage import init_vault

    vault, _ = init_vault(tmp_path / "v")
    vault.cache_dir.mkdir(parents=True, exist_ok=True)
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    workers = [context.Process(target=_hammer, args=(str(vault.root), w, 150, results)) for w in range(6)]
    for process in workers:
        process.start()
    wrong = [results.get(timeout=120) for _ in workers]
    for process in workers:
        process.join(timeout=60)
    assert wrong == [0] * len(workers)


def test_a_search_with_its_query_vector_cached_does_not_import_hashlib(vault, provider):
    # The query's key is a BLAKE2b hash: taken from the C module itself, not through `hashlib`,
    # whose import loads OpenSSL (~4 ms of every vector search at any vault size, issue 22).
    with_vectors(vault, provider)
    search(vault, "database pool waiting")
    probe = ("import sys; sys.argv = ['brain', 'search', '--json', '--explain', 'database pool waiting']; "
             f"sys.path.insert(0, {str(ROOT / 'runtime')!r}); from external_brain.doors.cli import main; "
             "import io, contextlib\nwith contextlib.redirect_stdout(io.StringIO()) as out: main(sys.argv[1:])\n"
             "import json; print(json.loads(out.getvalue())['data']['query_vector'], 'hashlib' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                          env={"BRAIN_VAULT": str(vault), "PATH": "/usr/bin:/bin", **bytecode_settings()})
    assert done.stdout.split() == ["cache", "False"], done.stderr
    assert provider.queries() == ["database pool waiting"]
