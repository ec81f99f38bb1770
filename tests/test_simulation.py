"""The simulation suite's short form (issue 23, part 8; seed 003's sim_driver / sim_analysis):
run it small in real processes and hold each finding to its direction. The full run and its
report are in docs/simulation/ (`python3 tests/simulation/sim_driver.py`, then `sim_analysis.py`).
Also the clock seam it runs on, `$BRAIN_NOW`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from helpers import ROOT, ok_data, run_json

SIM = ROOT / "tests" / "simulation"


def test_the_clock_seam_moves_every_date_the_product_writes_and_reads(vault, monkeypatch):
    monkeypatch.setenv("BRAIN_NOW", "2030-01-01T09:00:00+09:00")
    made = ok_data("create", "--type", "fact", "--domain", "general", "--title", "Clocked", "--body", "b")
    card = ok_data("get", made["id"])
    assert card["frontmatter"]["created"] == "2030-01-01T09:00:00+09:00" and card["confidence"] == 0.5
    monkeypatch.setenv("BRAIN_NOW", "2030-07-20T09:00:00+09:00")   # 200 days on: 110 past the threshold
    listed = ok_data("list")["cards"]
    assert [c["confidence"] for c in listed] == [round(0.5 - 0.05 * 110 / 30, 4)]
    monkeypatch.setenv("BRAIN_NOW", "not a time")
    code, envelope, _ = run_json("list")
    assert (code, envelope["error"]["code"]) == (2, "INVALID_ARGUMENT")
    assert envelope["error"]["message"].startswith("$BRAIN_NOW 'not a time' is not an ISO 8601 time")


def test_the_short_simulation_finds_what_the_report_says(tmp_path):
    out = tmp_path / "sim"
    env = {k: v for k, v in os.environ.items() if k not in ("BRAIN_NOW", "BRAIN_VAULT")}
    # One process per scenario, side by side: each has its own seed, vault and JSON file, so the
    # results are those of one process running both (the driver's default), in about half the wall
    # time on a machine with two cores.
    runs = [subprocess.Popen([sys.executable, str(SIM / "sim_driver.py"), "--days", "70", "--sessions", "4",
                              "--decay-after-days", "15", "--scenario", name, "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for name in ("baseline", "with_rejecter")]
    for run in runs:
        _, stderr = run.communicate(timeout=600)
        assert run.returncode == 0, stderr[-3000:]
    report = subprocess.run([sys.executable, str(SIM / "sim_analysis.py"), "--data", str(out), "--out",
                             str(out / "report")], capture_output=True, text=True, timeout=120, env=env)
    assert report.returncode == 0, report.stderr[-3000:]
    sys.path.insert(0, str(SIM))
    try:
        import sim_analysis
    finally:
        sys.path.remove(str(SIM))
    found = sim_analysis.findings(sim_analysis.load(out))
    base = found["baseline"]
    # Confidence tracks true usefulness (as applied) in rank order.
    assert base["judged_cards"] >= 8 and base["spearman"] > 0.6, base
    # A card that becomes wrong falls under `verify` within the run, and stays down.
    wrong = base["became_wrong"]
    assert wrong["confidence_before"] > 0.7 and wrong["days_to_below_verify"] is not None, wrong
    assert wrong["confidence_end"] < 0.5
    # A card nobody asks for any more holds its value for the threshold, then fades (not below the floor).
    stale = base["stale"]
    assert stale["confidence_end"] < stale["confidence_decay_starts"] and stale["confidence_end"] >= 0.1, stale
    assert abs(stale["confidence_decay_starts"] - stale["confidence_last_asked"]) < 0.02
    # Lessons reach the Playbooks through the Inbox.
    assert base["promotion"]["learned"] >= 2 and base["promotion"]["promoted"], base["promotion"]
    # A flood of duplicates is reported, and splits the feedback.
    dup = base["duplicates"]
    assert dup["flagged_at_create"] >= dup["copies"] // 2 and dup["near_duplicate_pairs_in_analyze"] > 0, dup
    # An agent that always rejects drags good cards down.
    assert found["rejecter"]["mean_drop"] > 0.05, found["rejecter"]
    # The report and its plots: Markdown and well-formed SVG.
    text = (out / "report" / "README.md").read_text()
    for name in ("tracking", "became_wrong", "decay", "inbox", "duplicates"):
        assert f"({name}.svg)" in text
        ElementTree.parse(out / "report" / f"{name}.svg")
    assert json.loads((out / "baseline.json").read_text())["sessions"] == 280
