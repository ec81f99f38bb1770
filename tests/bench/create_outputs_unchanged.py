#!/usr/bin/env python3
"""A sequence of CLI creates prints exactly what another checkout's prints, on copies of the same
vault (issue 20's "the same insights, suggested tags and links for the same input", for a change
to a create's cold path).

    git archive <base> | tar -x -C /tmp/base        # the checkout to compare with
    python3 tests/bench/create_outputs_unchanged.py /tmp/base --cards 2000

A generated vault (gen_vault.py, deterministic) is copied once per checkout and reindexed by it;
then the same creates run in turn, each a CLI process of its own with `--json`: patterns,
facts that supersede and do not, states, decisions that contradict, Japanese troubleshooting
cards, cards whose text names the vault's tags, a card given new tags. Card ids and times are
random or the clock's: they are replaced by placeholders, and everything else (paths, insights,
suggested tags and links, supersessions, similarity figures) must be byte-identical, create by
create. Each side runs twice: without a bytecode prefix's kept regex programs, then with them
(`vault.regex_programs`). Prints the number of creates compared and every difference.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CREATES = [
    ("pattern", "Retry queue worker timeout under load", "timeout,retry,worker",
     "Workers retry the queue when the connection times out; raise the timeout and cap the retries."),
    ("fact", "Redis cache node memory limit", "redis,cache,memory", "The redis cache node has 8 GB."),
    ("fact", "Redis cache node memory limit", "redis,cache,memory", "The redis cache node has 16 GB now."),
    ("fact", "Payments API client timeout", "payments,api", "The payments API client times out after 30 s."),
    ("fact", "Payments API server timeout", "payments,api", "The payments API server times out after 60 s."),
    ("state", "Staging database status", "database,staging", "The staging database is down for maintenance."),
    ("state", "Staging database status", "database,staging", "The staging database is back up."),
    ("decision", "Gunicorn worker timeout", "gunicorn,timeout", "Set the gunicorn worker timeout to 30 seconds."),
    ("decision", "Gunicorn worker timeout setting", "gunicorn", "Set the gunicorn worker timeout to 60 seconds."),
    ("troubleshooting", "ECS タスクの接続タイムアウト", "ecs,timeout", "接続がタイムアウトする。SG を確認する。"),
    ("troubleshooting", "ECS タスクが起動しない", "ecs", "タスク定義のメモリ不足でタスクが停止する。メモリを増やす。"),
    ("insight", "Kubernetes node drain before upgrade", "",
     "Drain the kubernetes node and check the redis cache and the worker queue before the kubelet upgrade."),
    ("runbook", "Rotate the RDS password", "rds,secrets,react-native-screens",
     "Rotate the RDS password with Secrets Manager; restart the workers. Do not use the root user."),
    ("insight", "Another note on RDS and secrets", "", "The rds secrets rotation and react-native-screens build."),
    ("troubleshooting", "psycopg2 build fails", "python,postgres",
     "pip install psycopg2 fails; use psycopg 3 instead (pip install psycopg). That worked."),
]
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?")


def run(checkout: Path, vault: Path, env: dict[str, str]) -> list[str]:
    script = checkout / "runtime" / "playbook_api.py"
    subprocess.run([sys.executable, str(script), "--vault", str(vault), "reindex"], env=env, check=True,
                   capture_output=True)
    outputs = []
    for kind, title, tags, body in CREATES:
        done = subprocess.run([sys.executable, str(script), "--vault", str(vault), "--json", "create", "--type", kind,
                               "--domain", "dev", "--tags", tags, "--title", title, "--body", body],
                              env=env, capture_output=True, text=True)
        outputs.append(_TIME.sub("<time>", _ID.sub("<id>", f"{done.returncode}\n{done.stdout}{done.stderr}")))
    return outputs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("other", help="a checkout (or git archive) to compare with")
    parser.add_argument("--cards", type=int, default=2000)
    args = parser.parse_args()
    differences = compared = created = judged = 0
    with tempfile.TemporaryDirectory(prefix="eb-creates-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "gen_vault.py"), str(work / "base"), str(args.cards)], check=True,
                       capture_output=True)
        for kept in (False, True):
            env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
            if not kept:
                env["PYTHONDONTWRITEBYTECODE"] = "1"
            else:   # one round first, so the second reads the programs the first kept
                for name, checkout in (("warm-ours", ROOT), ("warm-other", Path(args.other))):
                    shutil.copytree(work / "base", work / name)
                    run(checkout, work / name, env)
            results = {}
            for name, checkout in (("ours", ROOT), ("other", Path(args.other))):
                vault = work / f"{name}-{kept}"
                shutil.copytree(work / "base", vault)
                results[name] = run(checkout, vault, env)
            for (kind, title, *_), ours, other in zip(CREATES, results["ours"], results["other"]):
                compared += 1
                created += ours.startswith("0\n")
                judged += bool(re.search(r'"(?:suggested_links|potential_duplicates|supersedes|contradictions|'
                                         r'success_after_failure|suggested_tags)": \[\{', ours))
                if ours != other:
                    differences += 1
                    print(f"DIFFERENT ({'kept programs' if kept else 'compiled'}) {kind} {title!r}:\n"
                          f"  ours:  {ours}\n  other: {other}")
    print(f"{compared} creates compared ({created} created, {judged} with some insight or suggested tag), "
          f"{differences} different")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
