"""`brain serve` answers without Nagle's wait: http.server writes the headers and the body of an
answer separately, and with Nagle's algorithm on, the body waited for the client's delayed ACK
of the headers (up to 40 ms on Linux), so one client's searches answered at ~16/s for ~10 ms of
CPU each. Each connection the server accepts has TCP_NODELAY set (docs/decisions/0038)."""

from __future__ import annotations

import http.client
import socket
import threading
from pathlib import Path

from external_brain.doors.access import gate_for
from external_brain.doors.http_api import Watchdog, make_server
from external_brain.vault.storage import Vault

KEY = "nodelay-test-key-0123456789"


def test_each_accepted_connection_has_tcp_nodelay(vault: Path) -> None:
    server = make_server(vault, "127.0.0.1", 0, KEY, 1 << 20, 30.0)
    server.gate = gate_for(Vault(vault), "127.0.0.1", server.server_address[1], KEY)
    server.watchdog = Watchdog()
    accepted: list[socket.socket] = []
    get_request = server.get_request

    def recording():   # the server's own accept, with the socket it hands to the handler kept
        connection, address = get_request()
        accepted.append(connection)
        return connection, address

    server.get_request = recording
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    client = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    try:
        client.request("GET", "/v1/memories?q=widget", headers={"X-API-KEY": KEY})
        response = client.getresponse()
        response.read()
        assert response.status == 200
        assert len(accepted) == 1
        assert accepted[0].getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        client.close()
        server.shutdown()
        thread.join(30)
        server.server_close()
        server.watchdog.cut_all()
