"""Drives the Memory Gardener in headless Chromium through Playwright: run by
tests/doors/test_web_browser.py with a Python that has Playwright (a throw-away venv), against a real
`brain serve`. Not collected by pytest itself (no `test_` prefix).

    python web_browser_driver.py CONFIG.json

CONFIG names the server, the keys, the vault and the cards the test made (see
test_web_browser.py). Each step is checked here, in the browser and on disk; the first that
fails stops the run with exit 1 and a screenshot `failure.png`. On success it prints one JSON
line of measurements and facts for the test to check (node counts, timings).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import sys
import threading
import time
from pathlib import Path
from urllib.parse import quote

from playwright.sync_api import Error as PlaywrightError, expect, sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-dev-shm-usage"]
LAPTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


class Run:
    def __init__(self, config: dict) -> None:
        self.c = config
        self.base = config["base"]
        self.vault = Path(config["vault"])
        self.shots = Path(config["screenshots"])
        self.shots.mkdir(parents=True, exist_ok=True)
        (self.shots / "failure.png").unlink(missing_ok=True)
        self.out: dict = {"steps": []}
        self.dialogs: list[str] = []
        self.csp: list[str] = []
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.urls: list[str] = []

    # ------------------------------------------------------------------ helpers

    def step(self, name: str) -> None:
        self.out["steps"].append(name)
        print(f"step: {name}", file=sys.stderr, flush=True)

    def shot(self, page, name: str) -> None:
        page.wait_for_timeout(150)   # let the last frame paint
        page.screenshot(path=str(self.shots / f"{name}.png"), full_page=False)

    def watch(self, page) -> None:
        page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

        def console(msg):
            text = msg.text
            if "Content Security Policy" in text or "Refused to" in text:
                self.csp.append(text)
            elif msg.type == "error" and not text.startswith("Failed to load resource"):
                self.errors.append(text)   # a refused request (401, 403, 404, 412) is a step's own check
        page.on("console", console)

        def request(req):
            self.urls.append(req.url)
            if not req.url.startswith(self.base) and not req.url.startswith(("data:", "about:", "blob:")):
                self.foreign.append(req.url)
        page.on("request", request)

    def goto(self, page, hash_: str) -> None:
        page.evaluate("h => { location.hash = h; }", hash_)

    def card_file(self, rel: str) -> Path:
        return self.vault / rel

    # ------------------------------------------------------------------ the flows

    def main(self, browser) -> None:
        context = browser.new_context(viewport=LAPTOP, locale="ja-JP")
        page = context.new_page()
        self.watch(page)
        c = self.c

        self.step("the page loads with its security headers and the login form")
        response = page.goto(self.base + "/")
        headers = response.headers
        assert "script-src 'self'" in headers.get("content-security-policy", ""), headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers.get("x-content-type-options") == "nosniff"
        assert headers.get("referrer-policy") == "no-referrer"
        expect(page.locator("form#login")).to_be_visible()
        self.shot(page, "login-laptop")

        self.step("a wrong key is refused, in the form")
        page.fill("#key", "not-the-key-at-all-0000")
        page.click("form#login button[type=submit]")
        expect(page.locator("form#login .error")).to_contain_text("UNAUTHENTICATED")

        self.step("log in with the owner's key: an HttpOnly, SameSite=Strict session cookie, no key in any URL")
        page.fill("#key", c["key"])
        page.click("form#login button[type=submit]")
        expect(page.locator("#nav")).to_be_visible()
        expect(page.locator("#identity")).to_have_text("owner")
        cookies = context.cookies()
        assert len(cookies) == 1, cookies
        cookie = cookies[0]
        assert cookie["name"] == f"brain_session_{c['port']}" and cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        assert cookie["path"] == "/web/api" and cookie["expires"] > time.time(), cookie
        assert c["key"] not in cookie["value"]
        assert page.evaluate("document.cookie") == "", "the session cookie must not be readable by scripts"

        self.step("search in English: ranked hits with confidence, kind and why")
        page.fill("#q", "ECS timeout egress")
        page.click("form#search button[type=submit]")
        first = page.locator("article.hit").first
        expect(first.locator("h2")).to_contain_text(c["en_title"])
        expect(first.locator(".type")).to_have_text("troubleshooting")
        expect(first.locator(".conf")).to_contain_text("0.")
        assert first.locator("details.explain").count() == 1
        first.locator("details.explain summary").click()
        expect(first.locator("details.explain td code").first).to_be_visible()
        self.out["search_en_ms"] = float(page.locator("#results").get_attribute("data-ms"))
        self.shot(page, "search-laptop")

        self.step("search in Japanese")
        page.fill("#q", "接続タイムアウト")
        page.click("form#search button[type=submit]")
        expect(page.locator("article.hit").first.locator("h2")).to_contain_text(c["ja_title"])
        self.out["search_ja_ms"] = float(page.locator("#results").get_attribute("data-ms"))
        self.shot(page, "search-japanese-laptop")

        self.step("filters: type and tag narrow the results")
        self.goto(page, "#/search?q=timeout&type=insight")
        expect(page.locator("#results .count")).to_contain_text("0 cards")
        self.goto(page, "#/search?tag=" + "rds")
        expect(page.locator("article.hit h2")).to_have_count(1)
        expect(page.locator("article.hit h2")).to_contain_text(c["ja_title"])

        self.step("open a card: frontmatter, rendered Markdown, links in and out, history, the action")
        self.goto(page, "#/search?q=ECS%20timeout")
        page.locator("article.hit h2 a").first.click()
        expect(page.locator("#card-title")).to_have_text(c["en_title"])
        expect(page.locator(".body .md h3").first).to_have_text("Symptoms")
        expect(page.locator(".body .md strong").first).to_have_text("443")
        expect(page.locator(".body .md pre code")).to_contain_text("authorize-security-group-egress")
        expect(page.locator(".front table.kv")).to_contain_text("troubleshooting")
        expect(page.locator(".links")).to_contain_text(c["ja_title"])
        expect(page.locator(".action .big")).to_have_text(re.compile(r"apply|reference only"))
        expect(page.locator(".history .event").first).to_be_visible()
        self.shot(page, "card-laptop")

        self.step("edit the card: the change is in the file on disk")
        en_file = self.card_file(c["en_path"])
        before = en_file.read_bytes()
        page.locator("details.edit summary").click()
        body = page.locator("form#edit textarea[name=body]")
        body.fill(body.input_value() + "\nChecked on staging by the gardener.\n")
        page.fill("form#edit input[name=tags]", "ecs, timeout, sg, checked")
        page.locator("form#edit button[type=submit]").click()
        expect(page.locator("#toast")).to_contain_text("Saved")
        expect(page.locator(".body .md")).to_contain_text("Checked on staging by the gardener.")
        after = en_file.read_text(encoding="utf-8")
        assert "Checked on staging by the gardener." in after and "checked" in after, after
        self.shot(page, "card-edited-laptop")

        self.step("undo the edit from the history: the file is as it was, byte for byte")
        entry = page.locator(".history .event", has_text="updated").first
        entry.locator("button.undo").click()
        expect(page.locator("#toast")).to_contain_text("Undone")
        expect(page.locator(".body .md")).not_to_contain_text("Checked on staging")
        assert en_file.read_bytes() == before, "undo must restore the file"

        self.step("a conflicting edit is refused and said plainly; the file keeps the other writer's change")
        page.locator("details.edit summary").click()
        page.fill("form#edit input[name=title]", c["en_title"] + " (edited in the page)")
        changed = en_file.read_text(encoding="utf-8") + "\nEdited in Obsidian meanwhile.\n"
        en_file.write_text(changed, encoding="utf-8")
        page.locator("form#edit button[type=submit]").click()
        expect(page.locator("form#edit .conflict")).to_contain_text("changed since you opened it")
        assert en_file.read_text(encoding="utf-8") == changed
        self.shot(page, "card-conflict-laptop")
        en_file.write_bytes(before)

        self.step("delete shows its cascade first; undo brings the card and its links back")
        self.goto(page, "#/card/" + c["ja_id"])
        expect(page.locator("#card-title")).to_have_text(c["ja_title"])
        ja_file = self.card_file(c["ja_path"])
        ja_before, en_before = ja_file.read_bytes(), en_file.read_bytes()
        page.locator("details.edit summary").click()
        page.locator("form#edit button.danger").click()
        expect(page.locator("#delete-preview")).to_contain_text(c["en_path"])
        assert ja_file.exists(), "the preview must delete nothing"
        self.shot(page, "card-delete-preview-laptop")
        page.locator("#confirm-delete").click()
        expect(page.locator("main h1")).to_have_text("Deleted")
        assert not ja_file.exists() and en_file.read_bytes() != en_before, "delete and its cascade"
        page.locator("main button.primary").click()
        expect(page.locator("#card-title")).to_have_text(c["ja_title"])
        assert ja_file.read_bytes() == ja_before and en_file.read_bytes() == en_before, "undo of the delete"

        self.step("an XSS card renders as text: no script runs, no image loads, no javascript: link")
        self.goto(page, "#/card/" + c["xss_id"])
        expect(page.locator("#card-title")).to_have_text("<script>alert(1)</script>")
        md = page.locator(".body .md")
        expect(md).to_contain_text("<img src=x onerror=alert(2)>")
        assert md.locator("img").count() == 0 and page.locator("main script").count() == 0
        assert md.locator("a[href^='javascript']").count() == 0
        expect(md).to_contain_text("[click](javascript:alert(3))")
        self.goto(page, "#/search?q=alert")
        expect(page.locator("article.hit h2").first).to_contain_text("<script>")
        page.wait_for_timeout(300)
        assert self.dialogs == [], f"a dialog fired: {self.dialogs}"
        self.shot(page, "card-xss-laptop")

        self.step("Markdown whose marks never close renders in time linear in its length")
        # Each `[`, `~~` or `![a](` used to scan to the end of its line: 30,000 `[` took ~11 s.
        took = page.evaluate("""() => {
            const text = "[".repeat(30000) + "\\n\\n" + "~~a ".repeat(8000) + "\\n\\n" + "![a](".repeat(6000) +
                         "\\n\\n" + "[[a|b".repeat(6000) + "]]\\n\\n" + "**a ".repeat(8000) + "**";
            const started = performance.now();
            const md = window.GardenMarkdown.render(text);
            return {ms: performance.now() - started, chars: md.textContent.length};
        }""")
        assert took["ms"] < 5000 and took["chars"] > 150000, took
        self.out["markdown_unclosed_ms"] = round(took["ms"], 1)

        self.step("a card whose frontmatter does not parse: its raw text and the warning, as every door gives them")
        broken = self.vault / "Playbooks" / "Broken_by_hand.md"
        broken.write_text("---\ntitle: Broken by hand\ntags: [a, b\n---\n# Broken by hand\n\n<b>raw</b> text kept\n",
                          encoding="utf-8")
        try:
            self.goto(page, "#/card/Broken_by_hand")
            expect(page.locator("main pre.raw")).to_contain_text("tags: [a, b")
            expect(page.locator("main pre.raw")).to_contain_text("<b>raw</b> text kept")
            expect(page.locator("main .notice")).to_contain_text("fix the frontmatter by hand")
            assert page.locator("main b").count() == 0
            self.shot(page, "card-unparsed-laptop")
        finally:
            broken.unlink()

        self.step("link a card to another from its page, then unlink it (the fixes Health points to)")
        self.goto(page, "#/card/" + c["xss_id"])
        form = page.locator(".links form.link-form")
        with page.expect_response(lambda r: "/web/api/v1/memories?q=zebra" in r.url):   # suggestions while typing ...
            form.locator("input[name=to]").fill("zebra quagga okapi")
        assert not list((self.vault / "Inbox").glob("*zebra*")), "a suggestion search kept a miss"   # ... keep none
        form.locator("input[name=to]").fill(c["en_path"])
        form.locator("select[name=rel]").select_option("extends")
        form.locator("button[type=submit]").click()
        expect(page.locator("#toast")).to_contain_text("Linked")   # (the suggestions name the title before)
        expect(page.locator(".links")).to_contain_text(c["en_title"])
        xss_file = self.card_file(c["xss_path"])
        assert "rel: extends" in xss_file.read_text(encoding="utf-8")
        page.locator(".links button.unlink").first.click()
        expect(page.locator("#toast")).to_contain_text("Unlinked")
        expect(page.locator(".links")).not_to_contain_text(c["en_title"])
        assert "rel: extends" not in xss_file.read_text(encoding="utf-8")

        self.step("unlink a link to a card that no longer exists (shown as missing)")
        self.goto(page, "#/card/" + c["holder_id"])
        expect(page.locator(".links")).to_contain_text(c["doomed_id"] + " (missing)")
        holder_file = self.card_file(c["holder_path"])
        assert c["doomed_id"] in holder_file.read_text(encoding="utf-8")
        page.locator(".links li", has_text=c["doomed_id"]).locator("button.unlink").click()
        expect(page.locator("#toast")).to_contain_text("Unlinked")
        expect(page.locator(".links")).not_to_contain_text("(missing)")
        assert c["doomed_id"] not in holder_file.read_text(encoding="utf-8")

        self.step("force ingest: a statement stored as given, with its kind and tags")
        self.goto(page, "#/ingest")
        page.fill("#content", "本番DBの接続上限は 200 です。")
        page.fill("form#ingest input[name=title]", "本番DBの接続上限")
        page.select_option("form#ingest select[name=kind]", "fact")
        page.select_option("form#ingest select[name=domain]", "data")
        page.fill("form#ingest input[name=tags]", "db, 上限")
        self.shot(page, "ingest-laptop")
        page.locator("form#ingest button[type=submit]").click()
        expect(page.locator("#ingested")).to_contain_text("本番DBの接続上限")
        files = [p for p in (self.vault / "Playbooks").glob("Fact_*.md") if "本番DB" in p.read_text(encoding="utf-8")]
        assert len(files) == 1, files
        text = files[0].read_text(encoding="utf-8")
        assert "type: fact" in text and "domain: data" in text and "上限" in text and "本番DBの接続上限は 200 です。" in text

        self.step("Inbox: candidates with evidence; promote one, reject another")
        self.goto(page, "#/inbox")
        learned = page.locator("article.candidate", has_text=c["learned_title"])
        expect(learned.locator("ul.evidence")).to_contain_text(c["learned_evidence"])
        miss = page.locator("article.candidate", has_text=c["miss_query"])
        expect(miss).to_be_visible()
        # A field that is an object where text was expected (a hand-made `source:` mapping) is
        # shown as its text: it set innerHTML before.
        hostile = page.locator("article.candidate", has_text=c["hostile_title"])
        expect(hostile.locator(".source")).to_contain_text('{"innerHTML":')
        assert page.locator("#injected, #injected-link").count() == 0, "a card's field was parsed as HTML"
        self.shot(page, "inbox-laptop")
        learned.locator("button.promote").click()
        expect(page.locator("#toast")).to_contain_text("Promoted")
        # The candidate is done; its file stays, closed, as the record of its promotion.
        expect(page.locator("article.candidate.done", has_text=c["learned_title"])).to_contain_text("Promoted")
        assert "status: promoted" in (self.vault / c["learned_path"]).read_text(encoding="utf-8")
        promoted = [p for p in (self.vault / "Playbooks").glob("*.md") if c["learned_title"] in p.read_text(encoding="utf-8")]
        assert len(promoted) == 1 and "status: active" in promoted[0].read_text(encoding="utf-8"), promoted
        miss.locator("input[placeholder^='why']").fill("not a real question")
        miss.locator("button.reject").click()
        expect(page.locator("#toast")).to_contain_text("Rejected")
        miss_text = (self.vault / c["miss_path"]).read_text(encoding="utf-8")
        assert "status: rejected" in miss_text and "not a real question" in miss_text, miss_text

        self.step("graph: every visible card is a node; clicking one opens its card")
        self.goto(page, "#/graph")
        canvas = page.locator("#graph-canvas[data-ready='1']")
        canvas.wait_for(timeout=15000)
        self.out["graph_nodes"] = int(page.locator("#graph-count").get_attribute("data-nodes"))
        self.out["graph_edges"] = int(page.locator("#graph-count").get_attribute("data-edges"))
        self.out["graph_ready_ms"] = float(canvas.get_attribute("data-ready-ms"))
        page.locator("#graph-canvas[data-settled-ms]").wait_for(timeout=20000)   # the layout has cooled
        self.shot(page, "graph-laptop")
        target = page.evaluate("""() => {
            const v = window.__gardenGraph, c = v.canvas.getBoundingClientRect();
            const n = v.nodes.find(n => n.d.path === %s);
            const [x, y] = v.toScreen(n);
            return {x: c.left + x, y: c.top + y};
        }""" % json.dumps(c["en_path"]))
        page.mouse.click(target["x"], target["y"])
        expect(page.locator("#card-title")).to_have_text(c["en_title"])

        self.step("graph: the neighbourhood of one card")
        self.goto(page, "#/graph?focus=" + c["en_path"] + "&depth=1")
        page.locator("#graph-canvas[data-ready='1']").wait_for(timeout=15000)
        self.out["graph_focus_nodes"] = int(page.locator("#graph-count").get_attribute("data-nodes"))

        self.step("health: the score, its issues with links to fix them, and both charts")
        self.goto(page, "#/health")
        expect(page.locator(".score")).to_be_visible()
        expect(page.locator("#issues .issue").first).to_be_visible()
        assert page.locator("#issues a.fix").count() > 0
        assert page.locator("#confidence-chart svg rect.bar").count() > 0
        assert page.locator("#feedback-chart svg rect.bar").count() > 0
        self.out["health_score"] = float(page.locator(".score").get_attribute("data-score"))
        self.shot(page, "health-laptop")

        self.step("every page at a phone's width")
        page.set_viewport_size(PHONE)
        for name, hash_, ready in (("search", "#/search?q=ECS%20timeout", "article.hit"),
                                   ("search-japanese", "#/search?q=接続タイムアウト", "article.hit"),
                                   ("card", "#/card/" + c["en_id"], ".history .event"),
                                   ("ingest", "#/ingest", "form#ingest"),
                                   ("inbox", "#/inbox?closed=1", "article.candidate"),
                                   ("graph", "#/graph", "#graph-canvas[data-ready='1']"),
                                   ("health", "#/health", ".score")):
            self.goto(page, hash_)
            page.locator(ready).first.wait_for(timeout=15000)
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > PHONE["width"] + 1:
                wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > window.innerWidth + 1)
                    .slice(0, 8).map(e => e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(e.getBoundingClientRect().right))""")
                raise AssertionError(f"{name} overflows a phone's width: {width}px: {wide}")
            self.shot(page, f"{name}-phone")
        page.set_viewport_size(LAPTOP)

        self.step("another Origin, and another Host name (DNS rebinding), are refused")
        api = context.request
        refused = api.get(self.base + "/web/api/v1/memories?q=ecs", headers={"Origin": "http://evil.example"})
        assert refused.status == 403 and refused.json()["error"]["code"] == "ORIGIN_NOT_ALLOWED", refused.text()
        token = api.get(self.base + "/web/api/session").json()["csrf"]
        allowed = api.get(self.base + "/web/api/v1/memories?q=ecs", headers={"X-CSRF-Token": token})
        assert allowed.status == 200, allowed.text()
        evil = context.new_page()   # not watched: its one request is meant to go elsewhere
        rebound = evil.goto(f"http://evil.example:{c['port']}/")
        assert rebound.status == 403 and "HOST_NOT_ALLOWED" in rebound.text(), rebound.text()
        evil.close()

        self.step("a page on another port of this host (the same site to the cookie) makes the server do nothing")
        planted = "planted quokka xylophone"
        with attacker_site(self.base, planted, c["en_id"]) as attacker:
            events_before = (self.vault / "logs" / "events.jsonl").read_bytes()
            evil = context.new_page()   # the same browser, logged in: its cookie goes with same-site requests
            evil.goto(attacker)
            # Its last move: it opens the Gardener itself with a search in the URL, which any
            # site can do. The page shows the hits and keeps no miss: the person did not ask.
            evil.wait_for_url(self.base + "/#/search?q=*", timeout=15000)
            expect(evil.locator("#results .count")).to_contain_text("0 cards for")
            assert evil.locator("#results .notice").count() == 0
            evil.close()
        assert not list((self.vault / "Inbox").glob("*planted*")), "another page's GET kept a search miss"
        assert (self.vault / "logs" / "events.jsonl").read_bytes() == events_before, "another page's GET wrote"
        self.goto(page, "#/search")   # the same search asked by the person in the page: the miss is kept
        page.fill("#q", planted)
        page.click("form#search button[type=submit]")
        expect(page.locator("#results .notice")).to_contain_text("the miss was kept as an Inbox candidate")
        assert list((self.vault / "Inbox").glob("*planted*")), "the person's own miss was not kept"

        self.step("a write without the CSRF token is refused")
        no_token = api.patch(self.base + "/web/api/v1/memories/" + c["en_id"], data={"append": "x"})
        assert no_token.status == 403, no_token.text()
        assert en_file.read_bytes() == before

        self.step("log out: the session is gone on the server too")
        page.locator("#logout").click()
        expect(page.locator("form#login")).to_be_visible()
        gone = api.get(self.base + "/web/api/session", headers={"Cookie": f"{cookie['name']}={cookie['value']}"})
        assert gone.status == 401, gone.text()

        self.step("an agent's key sees only what that agent may")
        page.fill("#key", c["agent_key"])
        page.click("form#login button[type=submit]")
        expect(page.locator("#identity")).to_have_text("agent " + c["agent"])
        self.goto(page, "#/search?q=private%20runbook")
        expect(page.locator("#results .count")).to_be_visible()
        assert page.locator("article.hit", has_text=c["private_title"]).count() == 0
        self.goto(page, "#/card/" + c["private_id"])
        expect(page.locator("main .error")).to_contain_text("NOT_FOUND")
        self.goto(page, "#/inbox")
        expect(page.locator("main")).to_contain_text("for the owner's key")
        page.locator("#logout").click()

        assert self.dialogs == [], f"a dialog fired: {self.dialogs}"
        assert self.csp == [], f"Content-Security-Policy violations: {self.csp}"
        assert self.foreign == [], f"requests to other origins: {self.foreign}"
        assert not [u for u in self.urls if c["key"] in u or c["agent_key"] in u], "a key appeared in a URL"
        assert self.errors == [], f"page errors: {self.errors}"
        context.close()

    def big_graph(self, browser) -> None:
        """The graph of a 1,000-card vault: time from opening the page to an interactive drawing."""
        c = self.c
        context = browser.new_context(viewport=LAPTOP)
        page = context.new_page()
        self.watch(page)
        self.step("a 1,000-card graph is interactive (performance timing)")
        page.goto(c["big_base"] + "/")
        page.fill("#key", c["key"])
        page.click("form#login button[type=submit]")
        expect(page.locator("#nav")).to_be_visible()
        expect(page.locator("#results .count")).to_be_visible()   # the first page has loaded: the server is idle
        self.goto(page, "#/graph")
        canvas = page.locator("#graph-canvas[data-ready='1']")
        canvas.wait_for(timeout=30000)
        self.out["big_graph_nodes"] = int(page.locator("#graph-count").get_attribute("data-nodes"))
        self.out["big_graph_edges"] = int(page.locator("#graph-count").get_attribute("data-edges"))
        self.out["big_graph_ready_ms"] = float(canvas.get_attribute("data-ready-ms"))
        self.out["big_graph_fetch_ms"] = float(canvas.get_attribute("data-fetch-ms"))
        page.locator("#graph-canvas[data-settled-ms]").wait_for(timeout=60000)
        self.out["big_graph_settled_ms"] = float(canvas.get_attribute("data-settled-ms"))
        # Interactive: hovering a node names it.
        spot = page.evaluate("""() => {
            const v = window.__gardenGraph, c = v.canvas.getBoundingClientRect();
            const n = v.nodes[0]; const [x, y] = v.toScreen(n);
            return {x: c.left + x, y: c.top + y, title: n.d.title};
        }""")
        page.mouse.move(spot["x"], spot["y"])
        expect(page.locator(".tooltip")).to_contain_text(spot["title"][:20])
        self.shot(page, "graph-1000-laptop")
        assert self.csp == [] and self.errors == [], (self.csp, self.errors)
        context.close()


@contextlib.contextmanager
def attacker_site(base: str, query: str, card_id: str):
    """A real second server on another port of 127.0.0.1 serving one page that points GETs at
    the Gardener's API (an image, a no-cors fetch): the URL of that page while it runs."""
    html = f"""<!doctype html><title>loading</title>
<img src="{base}/web/api/v1/memories?q={quote(query)}">
<img src="{base}/web/api/v1/memories/{card_id}">
<script>
fetch("{base}/web/api/v1/memories?q={quote(query + ' again')}", {{mode: "no-cors", credentials: "include"}})
  .catch(() => null).then(() => setTimeout(() => {{
    location.href = "{base}/#/search?q={quote(query + ' wombat')}"; }}, 300));
</script>""".encode()

    class Attacker(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(html)))
            self.end_headers()
            self.wfile.write(html)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    run = Run(config)
    with sync_playwright() as p:
        args = [*ARGS, f"--host-resolver-rules=MAP evil.example 127.0.0.1"]
        browser = p.chromium.launch(executable_path=config["chromium"], args=args, headless=True)
        page = None
        try:
            for flow in config["flows"]:
                getattr(run, flow)(browser)
        except (AssertionError, PlaywrightError) as exc:
            contexts = browser.contexts
            if contexts and contexts[-1].pages:
                page = contexts[-1].pages[-1]
                page.screenshot(path=str(run.shots / "failure.png"))
            print(f"FAILED at step: {run.out['steps'][-1] if run.out['steps'] else '(start)'}: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            print(f"page errors: {run.errors}; CSP: {run.csp}; dialogs: {run.dialogs}", file=sys.stderr)
            return 1
        finally:
            browser.close()
    print(json.dumps(run.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
