#!/usr/bin/env python3
"""CPU time of `Index.names_like` (the names a create's new file may collide with) over a table of
10,000 card names, for a runtime given as an argument (run two in alternating pairs to compare):

    python3 tests/bench/bench_names_like.py runtime
    python3 tests/bench/bench_names_like.py /tmp/base/runtime     # `git archive <commit> runtime`
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time

sys.path.insert(0, sys.argv[1] if len(sys.argv) > 1 else "runtime")
from external_brain.search import index as ix  # noqa: E402

db = sqlite3.connect(":memory:", isolation_level=None)
db.execute("CREATE TABLE docs (folder TEXT, name TEXT)")
db.execute("CREATE INDEX docs_folder_name ON docs(folder, name)")
rng = random.Random(1)
words = ("timeout retry pool egress cache kafka lag redis stream auth session token deploy build test flaky fixture "
         "index search vector").split()
names: set[str] = set()
while len(names) < 10000:
    parts = [rng.choice(words).capitalize() if rng.random() < .5 else rng.choice(words) for _ in range(rng.randint(2, 6))]
    names.add(rng.choice(["Insight_", "Pattern_", "Troubleshooting_", "Fact_"]) + "_".join(parts) + ".md")
db.executemany("INSERT INTO docs VALUES ('Playbooks', ?)", [(name,) for name in names])


class _Table:
    """Just the connection `names_like` reads (and its helper, where the runtime has one)."""

    db = db


probes = ["Troubleshooting_ECS_External_API_Timeout_via_SG_Egress.md", "Insight_Bench_note_1-7_a1b2.md",
          "Pattern_Least-Privilege_Egress_Rules.md", "Fact_Kafka_consumer_lag_fix_first_steps.md"]
table = _Table()
for probe in probes:   # warm the statement cache
    ix.Index.names_like(table, "Playbooks", probe)
rounds = 2000
start = time.process_time()
for _ in range(rounds):
    for probe in probes:
        ix.Index.names_like(table, "Playbooks", probe)
print(f"{sys.argv[1] if len(sys.argv) > 1 else 'runtime'}: "
      f"{(time.process_time() - start) / (rounds * len(probes)) * 1e6:.1f} us CPU per names_like")
