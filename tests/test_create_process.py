"""What a CLI `create` process spends beyond the judgements themselves (issue 20: create's
latency within 10% of before them): the cyclic garbage collector does not walk the objects a
create makes while it judges and files them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from helpers import ROOT, create_queue_cards


def test_a_cli_create_runs_no_garbage_collection_while_it_judges(vault):
    create_queue_cards(vault)
    env = {**os.environ, "BRAIN_ACTOR": "test"}
    # The real command in a process of its own, with a hook that notes each collection that
    # starts while `create_card` is running.
    code = f"""
import gc, json, sys
sys.path.insert(0, {str(ROOT / 'runtime')!r})
from external_brain.doors.cli import main
inside = []
def noted(phase, info):
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "create_card":
            inside.append(info["generation"])
            break
        frame = frame.f_back
gc.callbacks.append(lambda phase, info: phase == "start" and noted(phase, info))
gc.set_threshold(50)   # so a create of a few cards would collect, were the collector on
code = main(["--vault", {str(vault)!r}, "create", "--type", "pattern", "--domain", "dev", "--tags", "queue,retry",
             "--title", "Queue worker retries with a cap", "--body", "Retry the queue worker three times."])
print(json.dumps({{"code": code, "collections": inside}}))
"""
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"code": 0, "collections": []}
