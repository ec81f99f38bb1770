"""What a long-lived process keeps of the vector cache's packed rows between searches
(search/vectors.py, `_HELD`): kept only while no other process has rewritten them (the `packed`
token every sync's `finish` writes), checked through a real `brain serve` and real CLI processes."""

from __future__ import annotations

import http.client
import json
from urllib.parse import quote

from helpers import ok_data, run_cli
from test_semantic import QUERY, RDS, cards, toy
from test_shared_refresh import KEY, start_server, stop_server


def test_a_server_keeps_the_packed_rows_only_while_no_other_process_has_rewritten_them(vault):
    # A long-lived process keeps what stage 1 and 2 read of the packed rows between searches
    # (vectors._HELD), checked against the `packed` token each sync writes. A real `brain serve`
    # searches; another process (the CLI) then adds a card that only the vectors find (it shares
    # no word with the query) and runs the sync that rewrites the rows: the server's next search
    # finds it. A server that kept the old rows would search the old number of cards, and the
    # new card, packed last (its path sorts after the others), would never be scored.
    cards()
    toy(vault)
    ok_data("reindex", "--embeddings")
    process, port = start_server(vault)
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

        def found() -> list[str]:
            connection.request("GET", f"/v1/memories?q={quote(QUERY)}&limit=10&explain=true",
                               headers={"X-API-KEY": KEY})
            response = connection.getresponse()
            body = json.loads(response.read())
            assert response.status == 200, body
            return [hit["path"] for hit in body["memories"]]

        before = found()
        assert before and before[0] == RDS
        # The second search of the same rows keeps the planes and codes, the third ranks with them.
        assert found() == before and found() == before
        code, _, err = run_cli("create", "--type", "troubleshooting", "--domain", "infra",
                               "--title", "Zz postgres stuck slow rollout", "--body", "Rds stuck; slow rollout.",
                               "--tags", "zz")
        assert code == 0, err
        ok_data("reindex", "--embeddings")
        new = [p for p in (vault / "Playbooks").glob("*.md") if "Zz" in p.name]
        assert len(new) == 1 and sorted(p.name for p in (vault / "Playbooks").glob("*.md"))[-1] == new[0].name
        after = found()
        assert f"Playbooks/{new[0].name}" in after, after
        assert ok_data("search", QUERY, "--mode", "keyword")["hits"] == []   # the vectors found it
    finally:
        stop_server(process)
