"""`brain serve`'s gate: the Host and Origin of every request are checked before anything else,
the key after them (issue 23, part 3). Raw requests on a real server process."""

from __future__ import annotations

import json
import socket

import pytest

from helpers import events, vault_hashes
from test_http import KEY, configure, start, stop

PATHS = ("/", "/v1/health", "/v1/memories", "/v1/memories?q=x", "/mcp", "/v1/no-such-route", "/favicon.ico")


def code_of(data: dict) -> str:
    """The error code of an answer: /v1's unified format, or /mcp's JSON-RPC error (`data.code`)."""
    error = data["error"]
    return error["data"]["code"] if "jsonrpc" in data else error["code"]


def raw(port: int, request: bytes) -> tuple[int, dict[str, str], dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = {k.lower(): v for k, v in (line.split(": ", 1) for line in head.decode("latin-1").split("\r\n")[1:])}
    return status, headers, json.loads(body) if body else {}


def request(method: str, path: str, *, host: str | None, origin: str | None = None, key: str | None = KEY,
            body: bytes = b"") -> bytes:
    lines = [f"{method} {path} HTTP/1.1"]
    if host is not None:
        lines.append(f"Host: {host}")
    if origin is not None:
        lines.append(f"Origin: {origin}")
    if key is not None:
        lines.append(f"X-API-KEY: {key}")
    lines.append("Connection: close")
    if body:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


@pytest.fixture
def server(vault):
    served = start(vault)
    yield served
    stop(served.process)


def test_a_foreign_host_is_refused_on_every_path_before_the_key(server, vault):
    before = (events(vault), vault_hashes(vault))
    for host in ("evil.example", "evil.example:%d" % server.port, "127.0.0.1.evil.example", "localhost.evil"):
        for path in PATHS:
            for key in (KEY, None, "wrong-key-0123456789"):
                status, headers, data = raw(server.port, request("GET", path, host=host, key=key))
                assert status == 403, (host, path, key, data)
                assert code_of(data) == "HOST_NOT_ALLOWED", data
                assert "www-authenticate" not in headers     # not a 401: the key was never looked at
    for method, path in (("POST", "/v1/memories"), ("POST", "/mcp"), ("DELETE", "/mcp")):
        body = json.dumps({"content": "planted", "memory_type": "fact"}).encode()
        status, _, data = raw(server.port, request(method, path, host="evil.example", body=body))
        assert (status, code_of(data)) == (403, "HOST_NOT_ALLOWED")
    status, _, data = raw(server.port, request("GET", "/v1/health", host=None))
    assert (status, data["error"]["code"]) == (403, "HOST_NOT_ALLOWED")
    assert (events(vault), vault_hashes(vault)) == before


def test_a_foreign_origin_is_refused_before_the_key(server, vault):
    before = (events(vault), vault_hashes(vault))
    own = f"127.0.0.1:{server.port}"
    for origin in ("http://evil", "https://evil.example", "null", f"http://evil.example:{server.port}",
                   f"https://127.0.0.1:{server.port}", "http://127.0.0.1:1", "file://", "not an origin"):
        for path in PATHS:
            for key in (KEY, None):
                status, headers, data = raw(server.port, request("GET", path, host=own, origin=origin, key=key))
                assert (status, code_of(data)) == (403, "ORIGIN_NOT_ALLOWED"), (origin, path, data)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()
        status, _, data = raw(server.port, request("POST", "/mcp", host=own, origin=origin, body=body))
        assert status == 403 and "ORIGIN_NOT_ALLOWED" in json.dumps(data), data
    assert (events(vault), vault_hashes(vault)) == before


def test_the_servers_own_names_and_origin_pass(server):
    for host in (f"127.0.0.1:{server.port}", "127.0.0.1", f"localhost:{server.port}", "LOCALHOST", "[::1]:%d" % server.port):
        status, _, data = raw(server.port, request("GET", "/v1/health", host=host))
        assert status == 200, (host, data)
    for origin in (f"http://127.0.0.1:{server.port}", f"http://localhost:{server.port}"):
        status, _, data = raw(server.port, request("GET", "/v1/health", host="127.0.0.1", origin=origin))
        assert status == 200, (origin, data)
    # Past the gate, the key still decides.
    status, headers, data = raw(server.port, request("GET", "/v1/health", host="127.0.0.1", key=None))
    assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED")


def test_configured_hosts_and_origins_are_allowed_and_nothing_else(vault):
    configure(vault, '[http]\nallowed_hosts = ["brain.example.com"]\n'
                     'allowed_origins = ["https://app.example.com", "http://localhost:3000"]\n')
    served = start(vault)
    try:
        port = served.port
        assert raw(port, request("GET", "/v1/health", host="brain.example.com"))[0] == 200
        assert raw(port, request("GET", "/v1/health", host="brain.example.com:443"))[0] == 200
        for origin in ("https://app.example.com", "https://APP.example.com:443", "http://localhost:3000"):
            assert raw(port, request("GET", "/v1/health", host="brain.example.com", origin=origin))[0] == 200, origin
        for origin in ("http://app.example.com", "https://app.example.com:8443", "http://localhost:3001",
                       "https://other.example.com"):
            status, _, data = raw(port, request("GET", "/v1/health", host="brain.example.com", origin=origin))
            assert (status, data["error"]["code"]) == (403, "ORIGIN_NOT_ALLOWED"), origin
        assert raw(port, request("GET", "/v1/health", host="other.example.com"))[0] == 403
    finally:
        stop(served.process)


def test_a_bad_allowed_origin_in_the_config_is_a_clear_error(vault):
    from helpers import run_cli

    configure(vault, '[http]\nallowed_origins = ["https://app.example.com/path"]\n')
    code, out, err = run_cli("serve", "--port", "0")
    assert (code, out) == (1, "")
    assert err == (f"brain: error: {vault}/.brain/config.toml:2: http.allowed_origins: must be a list of origins "
                   'like "https://app.example.com" (scheme://host[:port], no path), got '
                   "['https://app.example.com/path']\n")
