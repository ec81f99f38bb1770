"""`create --no-insights` (HTTP `"insights": false`): a create compared with no other card unless
its kind needs one (a fact or state supersedes, an episode is skipped as an exact copy)."""

from __future__ import annotations

import json

from helpers import card_meta, events, ok_data, run_cli

NEAR = ("create", "--type", "pattern", "--domain", "dev", "--title", "Atomic writes with os.replace",
        "--tags", "files", "--body", "Write a temp file in the same folder, fsync, then os.replace.")


def test_a_create_without_insights_reports_none_and_is_written_as_with_them(vault):
    first = ok_data(*NEAR)
    judged = ok_data(*NEAR)
    assert [d["id"] for d in judged["insights"]["potential_duplicates"]] == [first["id"]]
    assert set(judged["insights"]) == {"suggested_links", "potential_duplicates", "supersedes", "contradictions",
                                       "success_after_failure", "suggested_tags"}
    quiet = ok_data(*NEAR, "--no-insights")
    # Only what the create did is reported: "not looked for" is not shown as "none found".
    assert quiet["insights"] == {"supersedes": []}
    assert quiet["created"] and quiet["path"] == "Playbooks/Pattern_Atomic_writes_with_os.replace_3.md"
    made, compared = card_meta(vault / quiet["path"]), card_meta(vault / judged["path"])
    assert {k: v for k, v in made.items() if k not in ("id", "created", "updated")} == \
        {k: v for k, v in compared.items() if k not in ("id", "created", "updated")}
    assert [e["event"] for e in events(vault)][-1] == "created"
    code, out, err = run_cli(*NEAR, "--no-insights")
    assert (code, err) == (0, "") and out.splitlines()[0].startswith("created Playbooks/")
    assert "potential duplicate" not in out and "suggested tags" not in out


def test_a_fact_created_without_insights_still_supersedes_its_subject(vault):
    old = ok_data("create", "--type", "fact", "--domain", "ops", "--title", "The staging database host",
                  "--tags", "db", "--body", "The staging database host is db-stg-01.")
    new = ok_data("create", "--type", "fact", "--domain", "ops", "--title", "The staging database host",
                  "--tags", "db", "--body", "The staging database host is db-stg-02.", "--no-insights")
    assert [c["id"] for c in new["insights"]["supersedes"]] == [old["id"]]
    assert set(new["insights"]) == {"supersedes"}
    assert card_meta(vault / old["path"])["status"] == "superseded"


def test_an_episode_copy_created_without_insights_is_still_skipped(vault):
    args = ("create", "--type", "episode", "--domain", "ops", "--title", "Deploy of 2026-11-27 rolled back",
            "--tags", "deploy", "--body", "The canary failed its health check; rolled back at 10:02.")
    first = ok_data(*args)
    code, out, err = run_cli(*args, "--no-insights", "--json")
    assert (code, err) == (3, "")
    assert json.loads(out)["data"]["skipped_reason"] == f"exact duplicate of {first['path']}"


def test_no_duplicates_without_insights_still_refuses_a_near_duplicate(vault):
    ok_data(*NEAR)
    code, out, err = run_cli(*NEAR, "--no-duplicates", "--no-insights")
    assert (code, err) == (3, "")
    assert out.startswith("not created: near duplicate of Playbooks/Pattern_Atomic_writes_with_os.replace.md")
