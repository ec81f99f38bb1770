"""The Memory Gardener's door (doors/web) over HTTP: a real `brain serve` process on 127.0.0.1,
spoken to with http.client as a browser would (cookies, CSRF token, Origin). The page itself is
driven in a real browser by test_web_browser.py."""

from __future__ import annotations

import http.client
import json
import os
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from helpers import events, ok_data, run_cli
from test_http import KEY, start, stop


class Browser:
    """What a browser holds for one server: its session cookie and the CSRF token."""

    def __init__(self, server) -> None:
        self.server = server
        self.cookie: str | None = None
        self.csrf: str | None = None

    def call(self, method: str, path: str, body=None, *, headers: dict | None = None, csrf: bool = True,
             raw: bytes | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=20)
        sent = {"Origin": f"http://127.0.0.1:{self.server.port}", **(headers or {})}
        if self.cookie:
            sent.setdefault("Cookie", self.cookie)
        if csrf and self.csrf:   # as the page does: on every request, GETs too
            sent["X-CSRF-Token"] = self.csrf
        payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        if payload is not None:
            sent.setdefault("Content-Type", "application/json")
        try:
            connection.request(method, path, body=payload, headers={k: v for k, v in sent.items() if v is not None})
            response = connection.getresponse()
            data = response.read()
            got = {k.lower(): v for k, v in response.getheaders()}
            parsed = json.loads(data) if got.get("content-type", "").startswith("application/json") else data
            return response.status, got, parsed
        finally:
            connection.close()

    def login(self, key: str = KEY, **extra):
        status, headers, data = self.call("POST", "/web/api/login", {"key": key, **extra})
        if status == 200:
            self.cookie = headers["set-cookie"].split(";")[0]
            self.csrf = data["csrf"]
        return status, headers, data


@pytest.fixture
def server(vault):
    running = start(vault)
    yield running
    stop(running.process)


@pytest.fixture
def browser(server):
    b = Browser(server)
    assert b.login()[0] == 200
    return b


def card(title="ECS timeout via SG egress", **fields) -> dict:
    args = ["create", "--type", fields.pop("type", "troubleshooting"), "--domain", "infra", "--tags", "ecs,timeout",
            "--title", title, "--body", fields.pop("body", "## Fix\nAllow 443 egress.")]
    for key, value in fields.items():
        args += [f"--{key}", value]
    return ok_data(*args)


# ---------------------------------------------------------------------------- the page and its headers

PAGE_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


def test_the_page_and_its_files_are_served_with_the_security_headers(server):
    anonymous = Browser(server)
    for path, kind in (("/", "text/html"), ("/web/static/app.js", "text/javascript"),
                       ("/web/static/app.css", "text/css"), ("/web/static/markdown.js", "text/javascript")):
        status, headers, body = anonymous.call("GET", path)
        assert status == 200 and headers["content-type"].startswith(kind), (path, status)
        assert {k: headers.get(k) for k in PAGE_HEADERS} == PAGE_HEADERS, path
        assert b"http://" not in body and b"https://" not in body, f"{path} names another origin"
    html = anonymous.call("GET", "/")[2].decode()
    assert "<script>" not in html and " on" not in html.split("<body>")[1].split("</body>")[0].replace(" only", ""), \
        "no inline script or handler"
    # Errors of the page's paths carry them too; /v1 answers stay as they were.
    status, headers, data = anonymous.call("GET", "/web/static/../../etc/passwd")
    assert status == 404 and headers["content-security-policy"] == PAGE_HEADERS["content-security-policy"]
    status, headers, _ = anonymous.call("GET", "/web/api/session")
    assert status == 401 and headers["x-content-type-options"] == "nosniff"
    status, headers, _ = server.call("GET", "/v1/health")
    assert status == 200 and "content-security-policy" not in headers


def test_another_origin_or_host_is_refused_before_anything_even_the_login(server):
    b = Browser(server)
    status, _, data = b.call("POST", "/web/api/login", {"key": KEY}, headers={"Origin": "http://evil.example"})
    assert (status, data["error"]["code"]) == (403, "ORIGIN_NOT_ALLOWED")
    status, _, data = b.call("GET", "/", headers={"Host": f"evil.example:{server.port}"})
    assert (status, data["error"]["code"]) == (403, "HOST_NOT_ALLOWED")
    assert b.login()[0] == 200
    status, _, data = b.call("GET", "/web/api/v1/memories", headers={"Origin": "http://127.0.0.1:1"})
    assert (status, data["error"]["code"]) == (403, "ORIGIN_NOT_ALLOWED")


# ---------------------------------------------------------------------------- sessions

def test_login_gives_an_httponly_strict_cookie_and_the_key_is_never_in_a_url_or_a_log(server):
    b = Browser(server)
    status, _, data = b.login("wrong-key-0123456789abcdef")
    assert (status, data["error"]["code"]) == (401, "UNAUTHENTICATED") and b.cookie is None
    # review6: the login form's answer spoke of an X-API-KEY header a person never sent.
    assert data["error"]["message"] == ("wrong key; give the key `brain serve` was started with ($BRAIN_API_KEY or "
                                        "[http] api_key_file) or an agent's key (`brain keys add NAME`)")
    status, _, data = b.call("POST", "/web/api/login?key=" + KEY, {"key": KEY})
    assert status == 400 and "never in the URL" in data["error"]["message"]
    status, headers, data = b.login()
    assert status == 200
    cookie = headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == f"brain_session_{server.port}"
    attributes = [a.strip() for a in cookie.split(";")[1:]]
    assert attributes == ["Path=/web/api", "HttpOnly", "SameSite=Strict", "Max-Age=43200"], cookie
    assert KEY not in cookie and KEY not in json.dumps(data)
    assert data["identity"] == "owner" and data["owner"] is True and len(data["csrf"]) >= 40
    assert b.call("GET", "/web/api/session")[2]["csrf"] == data["csrf"]
    # The cookie is the page's only: /v1 and /mcp still want the key itself.
    status, _, _ = server.call("GET", "/v1/memories", key=None, headers={"Cookie": b.cookie})
    assert status == 401
    stop(server.process)
    assert KEY not in server.stderr.read_text()


def test_writes_need_the_csrf_token_and_change_nothing_without_it(browser, vault):
    made = card()
    before = (vault / made["path"]).read_bytes()
    path = f"/web/api/v1/memories/{made['id']}"
    for token in (None, "", "x" * 43):
        status, _, data = browser.call("PATCH", path, {"append": "forged"}, csrf=False,
                                       headers={"X-CSRF-Token": token})
        assert (status, data["error"]["code"]) == (403, "FORBIDDEN"), token
    assert (vault / made["path"]).read_bytes() == before
    status, headers, data = browser.call("PATCH", path, {"append": "Checked."})
    assert status == 200 and data["changed"] == ["body"]
    assert (vault / made["path"]).read_text().rstrip().endswith("Checked.")


def test_a_get_without_the_csrf_token_reads_and_writes_nothing(browser, vault):
    """A page on another port of the same host (http://127.0.0.1:OTHER) is the same site to the
    SameSite=Strict cookie, and its `<img src=...>` sends the cookie and no Origin: a GET is
    refused without the token, for GETs write too (a search miss, `referenced`). The page's own
    look at its session, which hands it the token, needs none."""
    made = card()
    events_before = (vault / "logs" / "events.jsonl").read_bytes()
    inbox_before = sorted(p.name for p in (vault / "Inbox").iterdir())
    for path in ("/web/api/v1/memories?q=planted+by+another+page", f"/web/api/v1/memories/{made['id']}",
                 "/web/api/graph", f"/web/api/cards/{made['id']}/history"):
        status, _, data = browser.call("GET", path, csrf=False, headers={"Origin": None})
        assert (status, data["error"]["code"]) == (403, "FORBIDDEN"), path
    assert sorted(p.name for p in (vault / "Inbox").iterdir()) == inbox_before
    assert (vault / "logs" / "events.jsonl").read_bytes() == events_before
    status, _, data = browser.call("GET", "/web/api/session", csrf=False, headers={"Origin": None})
    assert status == 200 and data["csrf"] == browser.csrf
    status, _, data = browser.call("GET", f"/web/api/v1/memories/{made['id']}")
    assert status == 200 and data["id"] == made["id"]


def test_logout_ends_the_session_on_the_server(browser):
    cookie = browser.cookie
    status, headers, _ = browser.call("POST", "/web/api/logout")
    assert status == 200 and "Max-Age=0" in headers["set-cookie"]
    status, _, _ = browser.call("GET", "/web/api/session", headers={"Cookie": cookie})
    assert status == 401


def test_sessions_work_across_worker_processes(vault):
    server = start(vault, extra=("--workers", "3"))
    try:
        b = Browser(server)
        assert b.login()[0] == 200
        made = card()
        # A new connection each time: the three processes take them in turn as they come.
        answers = [b.call("GET", f"/web/api/v1/memories/{made['id']}")[0] for _ in range(30)]
        assert answers == [200] * 30
        assert b.call("POST", "/web/api/logout")[0] == 200
        assert {b.call("GET", "/web/api/session")[0] for _ in range(10)} == {401}
    finally:
        stop(server.process)


def test_an_expired_session_is_refused_and_removed(tmp_path):
    from external_brain.doors.access import Identity
    from external_brain.doors.web import WebSessions

    sessions = WebSessions(tmp_path)
    session_id, record = sessions.open_session(Identity(), "", "digest")
    assert sessions.find(session_id)["csrf"] == record["csrf"]
    path = sessions._file(session_id)
    assert session_id not in path.read_text() and oct(path.stat().st_mode & 0o777) == "0o600"
    path.write_text(json.dumps({**record, "expires": time.time() - 1}))
    assert sessions.find(session_id) is None and not path.exists()


# ---------------------------------------------------------------------------- what a session may see

def test_an_agent_session_sees_and_does_only_what_that_agent_may(vault, tmp_path):
    keys = tmp_path / "keys.toml"
    os.environ["BRAIN_KEYS_FILE"] = str(keys)
    try:
        token = ok_data("keys", "add", "bob")["token"]
    finally:
        del os.environ["BRAIN_KEYS_FILE"]
    private = card("Alice's private runbook", scope="agent", agent="alice")
    shared = card("Shared runbook for everyone")
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys)})
    try:
        bob = Browser(server)
        status, _, data = bob.login(token)
        assert status == 200 and (data["identity"], data["owner"], data["agent"]) == ("bob", False, "bob")
        hits = bob.call("GET", "/web/api/v1/memories?q=runbook")[2]["memories"]
        assert [h["title"] for h in hits] == ["Shared runbook for everyone"]
        for path in (f"/web/api/v1/memories/{private['id']}", f"/web/api/cards/{private['id']}/history",
                     f"/web/api/cards/{private['id']}/links"):
            assert bob.call("GET", path)[0] == 404, path
        # By its path too, told exactly as a path to nothing (h12-ident: it said "no card with path, stem
        # or id" where a missing file says "no card at", so a key could test which file names exist).
        missing = private["path"].replace("Alice", "Nobody")
        for route in ("history", "links"):
            told = [bob.call("GET", f"/web/api/cards/{quote(ref, safe='')}/{route}") for ref in (private["path"], missing)]
            assert [t[0] for t in told] == [404, 404], route
            assert told[0][2] == json.loads(json.dumps(told[1][2]).replace(missing, private["path"])), route
        nodes = bob.call("GET", "/web/api/graph")[2]["nodes"]
        assert [n["title"] for n in nodes] == ["Shared runbook for everyone"]
        status, _, data = bob.call("GET", "/web/api/graph?agent_id=alice")
        assert (status, data["error"]["code"]) == (403, "FORBIDDEN")
        for method, path, body in (("GET", "/web/api/inbox", None),
                                   ("POST", f"/web/api/events/{'0' * 12}/undo", {})):
            status, _, data = bob.call(method, path, body)
            assert (status, data["error"]["code"]) == (403, "FORBIDDEN"), path
        status, _, data = bob.call("PATCH", f"/web/api/v1/memories/{shared['id']}", {"append": "seen by bob"})
        assert status == 200
        assert events(vault)[-1]["actor"] == "agent:bob"
        # A revoked key ends its sessions.
        os.environ["BRAIN_KEYS_FILE"] = str(keys)
        try:
            ok_data("keys", "revoke", "bob")
        finally:
            del os.environ["BRAIN_KEYS_FILE"]
        assert bob.call("GET", "/web/api/session")[0] == 401
    finally:
        stop(server.process)


# ---------------------------------------------------------------------------- the page's own routes

def test_search_explains_each_hit_as_v1_does(browser, server):
    card()
    status, _, data = browser.call("GET", "/web/api/v1/memories?q=ecs+egress&explain=true")
    assert status == 200 and data["memories"][0]["explain"]["ecs"]["score"] > 0
    direct = server.call("GET", "/v1/memories?q=ecs+egress&explain=true")[2]
    assert direct["memories"] == data["memories"]


def test_history_diff_and_undo_through_the_page(browser, vault):
    made = card()
    before = (vault / made["path"]).read_bytes()
    assert browser.call("PATCH", f"/web/api/v1/memories/{made['id']}", {"append": "Seen on staging."})[0] == 200
    history = browser.call("GET", f"/web/api/cards/{made['id']}/history")[2]
    update = history["entries"][0]
    assert update["event"] == "updated" and "+Seen on staging." in update["diff"]
    status, _, data = browser.call("POST", f"/web/api/events/{update['eid']}/undo", {})
    assert status == 200 and data["files"] == [made["path"]] and data["undone_event"] == "updated"
    assert (vault / made["path"]).read_bytes() == before


def test_undo_of_a_delete_through_the_page_says_which_file_it_removed(browser, vault):
    # review6: the page said "3 files restored" when undo put back 2 and removed the delete's copy.
    made = card()
    status, _, deleted = browser.call("DELETE", f"/web/api/v1/memories/{made['id']}")
    assert status == 200
    status, _, data = browser.call("POST", f"/web/api/events/{deleted['event']}/undo", {})
    assert status == 200 and data["files"] == [made["path"], f".brain/deleted/Playbooks/{made['id']}.md"]
    assert data["removed"] == [f".brain/deleted/Playbooks/{made['id']}.md"]


def test_link_and_unlink_from_the_page(browser, vault):
    a, b = card(), card("RDS connection timeout", body="## Fix\nOpen 5432.")
    status, _, data = browser.call("POST", f"/web/api/cards/{a['id']}/link", {"to": b["path"], "rel": "related",
                                                                               "weight": 0.7})
    assert status == 200 and data["changed"] is True
    links = browser.call("GET", f"/web/api/cards/{a['id']}/links")[2]
    assert [(l["path"], l["rel"], l["weight"]) for l in links["outgoing"]] == [(b["path"], "related", 0.7)]
    assert browser.call("POST", f"/web/api/cards/{a['id']}/unlink", {"to": b["id"]})[0] == 200
    assert browser.call("GET", f"/web/api/cards/{a['id']}/links")[2]["outgoing"] == []


def test_graph_analyze_trends_and_stats(browser):
    a = card()
    ok_data("record", a["path"], "used")
    graph = browser.call("GET", "/web/api/graph")[2]
    assert [(n["path"], n["confidence"]) for n in graph["nodes"]] == [(a["path"], pytest.approx(0.55))]
    analysis = browser.call("GET", "/web/api/analyze")[2]
    assert analysis["total"] == 1 and 0 <= analysis["health_score"] <= 100
    trends = browser.call("GET", "/web/api/trends")[2]
    assert trends["feedback_total"] == {"used": 1, "rejected": 0}
    assert sum(b["count"] for b in trends["confidence_bins"]) == 1
    stats = browser.call("GET", "/web/api/stats")[2]
    assert "troubleshooting" in stats["types"] and "infra" in stats["domains"] and "related" in stats["relations"]


def test_inbox_triage_promote_merge_and_reject_through_the_page(browser, vault):
    target = card()
    ok_data("learn", "--title", "Pin Node in CI", "--type", "troubleshooting", "--domain", "dev", "--tags", "ci",
            "--problem", "CI broke on Node 22", "--solution", "pin node 20", "--evidence", "session 1 line 4")
    ok_data("learn", "--title", "Egress rule for the partner API", "--type", "troubleshooting", "--domain", "infra",
            "--tags", "egress", "--problem", "partner API timeouts", "--solution", "allow 443 egress")
    miss = ok_data("search", "kubernetes ingress 502")["miss_candidate"]
    inbox = browser.call("GET", "/web/api/inbox")[2]
    by_title = {c["title"]: c for c in inbox["candidates"]}
    assert by_title["Pin Node in CI"]["evidence"][0].endswith("session 1 line 4")
    status, _, data = browser.call("POST", f"/web/api/inbox/{quote(by_title['Pin Node in CI']['path'], safe='')}/promote",
                                   {"domain": "dev"})
    assert status == 200 and data["path"].startswith("Playbooks/")
    egress = by_title["Egress rule for the partner API"]
    status, _, data = browser.call("POST", f"/web/api/inbox/{egress['id']}/merge", {"into": target["id"]})
    assert status == 200 and data["into"]["path"] == target["path"]
    assert "## From the Inbox: Egress rule for the partner API" in (vault / target["path"]).read_text()
    status, _, data = browser.call("POST", f"/web/api/inbox/{quote(miss, safe='')}/reject", {"reason": "noise"})
    assert status == 200 and data["status"] == "rejected"
    after = browser.call("GET", "/web/api/inbox")[2]
    # Closed: the rejected miss, the merged lesson and the promoted one (its record stays in the Inbox).
    assert after["candidates"] == [] and after["closed"] == 3
    closed = browser.call("GET", "/web/api/inbox?include_closed=true")[2]["candidates"]
    assert sorted(c["status"] for c in closed) == ["merged", "promoted", "rejected"]


def test_a_session_can_be_for_a_persona_and_an_unknown_one_is_refused(vault, tmp_path):
    other = tmp_path / "work-persona"
    assert run_cli("init", str(other))[0] == 0
    assert run_cli("create", "--vault", str(other), "--type", "fact", "--domain", "general", "--tags", "w",
                   "--title", "Only in the work persona", "--body", "x")[0] == 0
    with open(vault / ".brain" / "config.toml", "a") as config:
        config.write(f'\n[personas]\nwork = "{other}"\n')
    card("Only in the main vault")
    server = start(vault)
    try:
        b = Browser(server)
        status, headers, data = b.login(persona="nobody")
        assert (status, data["error"]["code"]) == (400, "UNKNOWN_PERSONA") and "set-cookie" not in headers
        assert b.login(persona="work")[0] == 200
        titles = [n["title"] for n in b.call("GET", "/web/api/graph")[2]["nodes"]]
        assert titles == ["Only in the work persona"]
        assert b.call("GET", "/web/api/session")[2]["persona"] == "work"
    finally:
        stop(server.process)
