"""The Memory Gardener end to end in a real browser: headless Chromium, driven by Playwright,
against a real `brain serve` on 127.0.0.1 (a free port, stopped at the end).

Playwright is not a dependency of the product: the driver (web_browser_driver.py) runs under a
Python that has it, found in this order: `$BRAIN_PLAYWRIGHT_PYTHON`; this Python if it imports
playwright; `$XDG_CACHE_HOME/external-brain/playwright-venv` (where .ci/run installs it);
/work/venvs/pw. Chromium is `$BRAIN_CHROMIUM`, else /usr/bin/chromium or `chromium` on PATH.
Without either the tests are skipped, saying which is missing and how to get it (README,
"Memory Gardener").

Screenshots of every page, at a laptop's width and a phone's, go to tests/screenshots/ (git
ignores it; `$BRAIN_SCREENSHOTS` chooses another folder).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT, ok_data, run_cli
from test_http import KEY, start, stop

DRIVER = Path(__file__).resolve().parents[1] / "web_browser_driver.py"
SCREENSHOTS = Path(os.environ.get("BRAIN_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "screenshots")


def _has_playwright(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "import playwright.sync_api"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def playwright_python() -> str | None:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "external-brain" / "playwright-venv"
    candidates = [os.environ.get("BRAIN_PLAYWRIGHT_PYTHON"), sys.executable, str(cache / "bin" / "python"),
                  "/work/venvs/pw/bin/python"]
    for python in candidates:
        if python and Path(python).exists() and _has_playwright(python):
            return python
    return None


def chromium() -> str | None:
    given = os.environ.get("BRAIN_CHROMIUM")
    if given:
        return given if Path(given).exists() else None
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser_tools():
    python, browser = playwright_python(), chromium()
    if browser is None:
        pytest.skip("no Chromium: `apt-get install chromium` (or set BRAIN_CHROMIUM); see README, Memory Gardener")
    if python is None:
        pytest.skip("no Python with Playwright: `python3 -m venv ~/.cache/external-brain/playwright-venv && "
                    "~/.cache/external-brain/playwright-venv/bin/pip install playwright` (no `playwright install`: "
                    "the system's Chromium is used), or set BRAIN_PLAYWRIGHT_PYTHON")
    return python, browser


def drive(tools, config: dict, tmp_path: Path) -> dict:
    python, browser = tools
    path = tmp_path / "driver.json"
    path.write_text(json.dumps({**config, "chromium": browser, "screenshots": str(SCREENSHOTS)}), encoding="utf-8")
    result = subprocess.run([python, str(DRIVER), str(path)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"{result.stderr[-6000:]}\n(screenshot: {SCREENSHOTS / 'failure.png'})"
    return json.loads(result.stdout.strip().splitlines()[-1])


def make_cards(vault: Path, keys_file: Path) -> dict:
    """The cards the browser works on, made through the real CLI."""
    en = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "ecs,timeout,sg",
                 "--title", "ECS External API Timeout via SG Egress",
                 "--body", "## Symptoms\n- Tasks time out calling the partner API\n- Only in the private subnets\n\n"
                           "## Fix\nAllow **443** egress in the task's security group.\n\n"
                           "```\naws ec2 authorize-security-group-egress --group-id sg-123\n```\n")
    ja = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "rds,タイムアウト",
                 "--title", "RDS 接続タイムアウト（セキュリティグループ）",
                 "--body", "## 症状\nアプリから RDS への接続がタイムアウトする。\n\n## 対処\n"
                           "セキュリティグループの **5432** インバウンドを許可する。\n")
    ok_data("link", en["path"], ja["path"], "--rel", "related", "--reason", "same security-group cause")
    xss = ok_data("create", "--type", "insight", "--domain", "general", "--tags", "xss",
                  "--title", "<script>alert(1)</script>",
                  "--body", "<img src=x onerror=alert(2)>\n\n[click](javascript:alert(3))\n\n<b>not bold</b> alert\n")
    private = ok_data("create", "--type", "runbook", "--domain", "ops", "--tags", "secret",
                      "--title", "Alice's private runbook", "--body", "only alice sees this private runbook",
                      "--scope", "agent", "--agent", "alice")
    for outcome in ("used", "used", "rejected"):
        ok_data("record", en["path"], outcome)
    learned = ok_data("learn", "--title", "Pin the Node version in CI", "--type", "troubleshooting",
                      "--domain", "dev", "--tags", "ci,node", "--problem", "CI broke when Node 22 arrived",
                      "--solution", "Pin node-version: 20 in the workflow", "--evidence", "session 7f3 line 40")
    miss = ok_data("search", "kubernetes ingress 502 gateway")
    assert miss["miss_candidate"], miss
    # A link to a card removed outside the tool: Health and doctor call it broken, the page unlinks it.
    holder = ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "links",
                     "--title", "Holder of a broken link", "--body", "It linked to a card that is gone.")
    doomed = ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "links",
                     "--title", "Doomed card", "--body", "Removed by hand.")
    ok_data("link", holder["path"], doomed["path"], "--rel", "depends_on")
    (vault / doomed["path"]).unlink()
    # A candidate made by hand (or arriving through git) whose `source` is a mapping, not text.
    hostile = "Candidate with a mapping for a source"
    (vault / "Inbox" / "Hostile_source.md").write_text(
        f"---\ntitle: {hostile}\ntype: troubleshooting\ndomain: general\nstatus: candidate\nsource:\n"
        "  innerHTML: ['<b id=injected>INJECTED</b><a id=injected-link href=https://evil.example/>x</a>']\n"
        f"---\n# {hostile}\n\n## Problem\nA field of the wrong kind.\n", encoding="utf-8")
    os.environ["BRAIN_KEYS_FILE"] = str(keys_file)
    try:
        agent = ok_data("keys", "add", "bob")
    finally:
        del os.environ["BRAIN_KEYS_FILE"]
    return {
        "en_title": "ECS External API Timeout via SG Egress", "en_path": en["path"], "en_id": en["id"],
        "ja_title": "RDS 接続タイムアウト（セキュリティグループ）", "ja_path": ja["path"], "ja_id": ja["id"],
        "xss_id": xss["id"], "xss_path": xss["path"], "private_id": private["id"], "private_title": "Alice's private runbook",
        "learned_title": "Pin the Node version in CI", "learned_path": learned["path"],
        "learned_evidence": "session 7f3 line 40", "miss_query": "kubernetes ingress 502 gateway",
        "miss_path": miss["miss_candidate"], "agent": "bob", "agent_key": agent["token"],
        "hostile_title": hostile, "holder_id": holder["id"], "holder_path": holder["path"], "doomed_id": doomed["id"],
    }


def test_the_memory_gardener_in_a_real_browser(browser_tools, vault, tmp_path):
    keys_file = tmp_path / "keys.toml"
    cards = make_cards(vault, keys_file)
    big = tmp_path / "big"
    sys.path.insert(0, str(ROOT / "tests" / "bench"))
    from gen_vault import generate

    generate(big, 1000, links=1)
    code, _, err = run_cli("reindex", "--vault", str(big))
    assert code == 0, err
    server = start(vault, env={"BRAIN_KEYS_FILE": str(keys_file)})
    big_server = start(big)
    try:
        base = f"http://127.0.0.1:{server.port}"
        result = drive(browser_tools, {
            **cards, "base": base, "port": server.port, "key": KEY, "vault": str(vault),
            "big_base": f"http://127.0.0.1:{big_server.port}", "flows": ["main", "big_graph"],
        }, tmp_path)
    finally:
        stop(server.process)
        stop(big_server.process)
    visible = ok_data("graph")["nodes"]   # what the owner sees: every global card
    assert result["graph_nodes"] == len(visible), (result, len(visible))
    assert result["graph_focus_nodes"] == 2   # the English card and the Japanese one it links to
    assert result["big_graph_nodes"] == 1000 and result["big_graph_edges"] > 500, result
    stderr = server.stderr.read_text()
    assert KEY not in stderr and cards["agent_key"] not in stderr, "a key was logged"
    timings = {k: v for k, v in result.items() if k.endswith("_ms")}
    (SCREENSHOTS / "timings.json").write_text(json.dumps(timings, indent=1) + "\n")
    print(f"\nbrowser timings (ms): {timings}")
