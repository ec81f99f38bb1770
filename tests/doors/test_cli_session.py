"""A scripted session through the real CLI in a temporary vault: the search -> get -> record protocol (README) end to end
(create, search with every filter, get, record, learn, promote, list, audit, working memory,
search misses), ending with the exact event log the session produced."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

from external_brain.vault import frontmatter
from external_brain.vault.storage import iso, now
from helpers import events, file_hashes, ok_data, run_cli, run_json

HIT_KEYS = {"path", "id", "title", "type", "domain", "tags", "confidence", "score", "snippet"}

CARDS = {
    "ecs": dict(type="troubleshooting", domain="infra", tags="ecs,timeout,sg", project="alpha",
                title="ECS External API Timeout via SG Egress",
                body="## Symptoms\\nCalls to an external API time out after 30 s.\\n\\n## Fix\\n"
                     "Allow egress 443 in the task's security group."),
    "pool": dict(type="pattern", domain="dev", tags="postgres,pooling", project="beta",
                 title="Connection Pooling for PostgreSQL",
                 body="## Pattern\\nPut pgbouncer in front so a deploy does not exhaust connections."),
    "tls": dict(type="runbook", domain="ops", tags="tls,certs", title="Rotate TLS Certificates",
                body="## Steps\\nRenew with certbot, reload nginx, check the expiry date."),
    "ja": dict(type="decision", domain="dev", tags="japanese,i18n", title="日本語のタイトル テスト",
               body="## 決定\\n日本語の本文です。リリース前に確認する。"),
    "old": dict(type="checklist", domain="security", tags="secrets,legacy", title="Legacy Secrets Rotation",
                body="## Steps\\nRotate the legacy secrets by hand."),
}


def meta_of(path: Path) -> dict:
    return frontmatter.parse(path.read_text(encoding="utf-8")).data


def set_line(path: Path, key: str, value: str, after: str | None = None) -> None:
    """Edit one frontmatter line by hand, as a person in Obsidian would: replace `key: ...`, or
    insert it after the `after:` line."""
    text = path.read_text(encoding="utf-8")
    if re.search(rf"^{key}:", text, re.MULTILINE):
        text = re.sub(rf"^{key}:.*$", f"{key}: {value}", text, count=1, flags=re.MULTILINE)
    else:
        text = re.sub(rf"^({after}:.*)$", rf"\1\n{key}: {value}", text, count=1, flags=re.MULTILINE)
    path.write_text(text, encoding="utf-8")


def hit_paths(*argv: str) -> list[str]:
    data = ok_data("search", *argv)
    for hit in data["hits"]:
        assert set(hit) == HIT_KEYS, hit
    return [hit["path"] for hit in data["hits"]]


def test_a_whole_session(vault: Path):
    # ------------------------------------------------------------------ create
    made = {}
    for name, card in CARDS.items():
        argv = ["create"]
        for flag, value in card.items():
            argv += [f"--{flag}", value]
        data = ok_data(*argv)
        assert data["created"] is True
        made[name] = data
        assert (vault / data["path"]).is_file()
        stored = meta_of(vault / data["path"])
        assert stored["id"] == data["id"] and stored["confidence"] == 0.5
        assert stored["type"] == card["type"] and stored["domain"] == card["domain"]
    paths = {name: data["path"] for name, data in made.items()}
    ids = {name: data["id"] for name, data in made.items()}
    assert paths["ecs"] == "Playbooks/Troubleshooting_ECS_External_API_Timeout_via_SG_Egress.md"
    assert paths["ja"] == "Playbooks/Decision_日本語のタイトル_テスト.md"  # Japanese kept in the name
    assert len(set(ids.values())) == len(CARDS)

    # A person archives the legacy checklist in Obsidian and it was last touched 120 days ago.
    old_card = vault / paths["old"]
    set_line(old_card, "status", "archived", after="domain")
    set_line(old_card, "updated", iso(now() - timedelta(days=120)))

    # ------------------------------------------------------------------ search and its filters
    assert hit_paths("ecs timeout", "--domain", "infra") == [paths["ecs"]]
    assert hit_paths("ecs timeout", "--domain", "dev") == []  # a miss: its candidate is checked below
    assert hit_paths("pooling", "--type", "pattern") == [paths["pool"]]
    assert hit_paths("tls certificates", "--tag", "tls") == [paths["tls"]]
    assert hit_paths("pgbouncer") == [paths["pool"]]
    # A filter the hit satisfies keeps the hit (the corpus statistics do not shrink with filters).
    assert hit_paths("pgbouncer", "--project", "beta") == [paths["pool"]]
    assert hit_paths("pgbouncer", "--project", "alpha") == []
    assert sorted(hit_paths("ecs pooling certificates")) == sorted([paths["ecs"], paths["pool"], paths["tls"]])
    assert len(hit_paths("ecs pooling certificates", "--limit", "2")) == 2
    assert hit_paths("ecs pooling certificates", "--limit", "1") == hit_paths("ecs pooling certificates")[:1]
    assert hit_paths("日本語") == [paths["ja"]]
    # Archived cards are left out unless asked for.
    assert hit_paths("secrets pooling") == [paths["pool"]]
    assert sorted(hit_paths("secrets pooling", "--status", "any")) == sorted([paths["pool"], paths["old"]])
    assert hit_paths("secrets pooling", "--status", "archived") == [paths["old"]]

    code, out, err = run_cli("search", "timeout", "--explain")
    assert code == 0 and err == ""
    assert paths["ecs"] in out
    why = re.search(r'why "timeout": (.*)', out)   # the word as typed, not its stem
    assert why, out
    parts = dict(part.split("=") for part in why.group(1).split())
    assert {"idf", "title", "tags", "body", "score"} <= set(parts)
    assert float(parts["score"]) > 0

    data = ok_data("search", "timeout", "--explain")
    [hit] = data["hits"]
    assert set(hit) == HIT_KEYS | {"explain", "matched_words", "relevance"}
    assert hit["path"] == paths["ecs"] and hit["id"] == ids["ecs"]
    assert hit["title"] == CARDS["ecs"]["title"] and hit["type"] == "troubleshooting"
    assert hit["domain"] == "infra" and hit["tags"] == ["ecs", "timeout", "sg"]
    assert hit["confidence"] == 0.5 and hit["snippet"] == "Calls to an external API time out after 30 s."
    assert set(hit["explain"]) == {"timeout"}
    assert hit["explain"]["timeout"]["score"] == hit["score"]
    assert set(ok_data("search", "timeout")["hits"][0]) == HIT_KEYS

    # The filtered queries that found nothing above are answered without their filters: no miss
    # (docs/decisions/0031, "Search misses, statuses and context"), so the search-miss part below
    # starts from an empty Inbox.
    assert not list((vault / "Inbox").glob("Search_Miss_*.md"))

    # ------------------------------------------------------------------ get
    code, out, err = run_cli("get", paths["ecs"])
    assert code == 0 and err == ""
    assert out.startswith(f"# {paths['ecs']}\n# confidence 0.50 -> apply and verify (stored 0.50)\n")
    assert "Allow egress 443 in the task's security group." in out
    assert f"record {paths['ecs']} used" in out

    # ------------------------------------------------------------------ record: EWA
    ecs_file = vault / paths["ecs"]
    data = ok_data("record", paths["ecs"], "used")
    assert (data["before"], data["after"], data["outcome"]) == (0.5, 0.55, "used")
    assert meta_of(ecs_file)["confidence"] == 0.55
    code, out, err = run_cli("record", "Troubleshooting_ECS_External_API_Timeout_via_SG_Egress", "used")
    assert (code, err) == (0, "")
    assert out == f"{paths['ecs']}: used, confidence 0.55 -> 0.595\n"
    assert meta_of(ecs_file)["confidence"] == 0.595
    data = ok_data("record", ids["ecs"], "used", "worked again")
    assert (data["before"], data["after"]) == (0.595, 0.6355)
    assert meta_of(ecs_file)["confidence"] == 0.6355
    data = ok_data("record", ids["ecs"][:8], "rejected", "different cause this time")
    assert (data["before"], data["decayed"], data["after"]) == (0.6355, 0.6355, 0.57195)
    assert data["path"] == paths["ecs"] and data["id"] == ids["ecs"]
    assert meta_of(ecs_file)["confidence"] == 0.57195
    assert "\nconfidence: 0.57195\n" in ecs_file.read_text(encoding="utf-8")

    # ------------------------------------------------------------------ learn
    learn = ["learn", "--title", "Gunicorn worker timeout on slow upstream", "--type", "troubleshooting",
             "--domain", "dev", "--tags", "gunicorn,timeout", "--problem", "WORKER TIMEOUT after 30 s",
             "--solution", "raise --timeout and add client timeouts"]
    data = ok_data(*learn)
    learned = vault / "Inbox" / "Learned_Gunicorn_worker_timeout_on_slow_upstream.md"
    assert data["path"] == "Inbox/Learned_Gunicorn_worker_timeout_on_slow_upstream.md"
    assert (data["created"], data["evidence_count"]) == (True, 1)
    assert learned.is_file() and meta_of(learned)["evidence_count"] == 1
    learned_id = data["id"]
    code, out, err = run_cli(*learn, "--evidence", "seen again in the nightly job")
    assert (code, err) == (0, "")
    assert out.startswith(f"added evidence to {data['path']} (evidence 2)")
    assert meta_of(learned)["evidence_count"] == 2
    assert "seen again in the nightly job" in learned.read_text(encoding="utf-8")
    assert meta_of(learned)["id"] == learned_id

    # ------------------------------------------------------------------ promote
    before = file_hashes(vault)
    data = ok_data("promote", "--auto", "--dry-run")
    assert data["dry_run"] is True
    [candidate] = data["candidates"]
    assert candidate["path"] == data_path(learned, vault) and candidate["score"] >= data["bar"]
    assert candidate["promoted_to"] is None
    assert file_hashes(vault) == before  # a dry run moves nothing

    data = ok_data("promote", "Learned_Gunicorn_worker_timeout_on_slow_upstream", "--type", "troubleshooting",
                   "--domain", "dev", "--title", "Gunicorn Worker Timeout on Slow Upstream")
    promoted = vault / "Playbooks" / "Troubleshooting_Gunicorn_Worker_Timeout_on_Slow_Upstream.md"
    assert data == {"source": "Inbox/Learned_Gunicorn_worker_timeout_on_slow_upstream.md",
                    "path": "Playbooks/Troubleshooting_Gunicorn_Worker_Timeout_on_Slow_Upstream.md",
                    "id": learned_id}
    assert meta_of(learned)["status"] == "promoted" and promoted.is_file()   # the candidate stays, closed
    assert meta_of(learned)["promoted_to"] == learned_id and meta_of(learned)["id"] != learned_id
    meta = meta_of(promoted)
    assert meta["id"] == learned_id and meta["status"] == "active" and meta["confidence"] == 0.5
    assert meta["title"] == "Gunicorn Worker Timeout on Slow Upstream"
    assert not {"evidence_count", "misses", "query", "query_key", "first_seen", "last_seen"} & set(meta)
    assert "## Solution\nraise --timeout and add client timeouts" in promoted.read_text(encoding="utf-8")
    paths["gunicorn"] = data["path"]

    # ------------------------------------------------------------------ list
    moment = now()
    for name, hours in (("ecs", 0.5), ("pool", 1), ("tls", 2), ("ja", 3)):
        set_line(vault / paths[name], "updated", iso(moment - timedelta(hours=hours)))
    titles = [c["title"] for c in ok_data("list", "--sort", "title")["cards"]]
    assert titles == ["Connection Pooling for PostgreSQL", "ECS External API Timeout via SG Egress",
                      "Gunicorn Worker Timeout on Slow Upstream", "Legacy Secrets Rotation",
                      "Rotate TLS Certificates", "日本語のタイトル テスト"]
    cards = ok_data("list", "--sort", "confidence")["cards"]
    assert [(c["path"], c["confidence"]) for c in cards] == [
        (paths["ecs"], 0.5719), (paths["pool"], 0.5), (paths["gunicorn"], 0.5), (paths["tls"], 0.5),
        (paths["ja"], 0.5), (paths["old"], 0.45)]  # 120 days: 0.5 - 0.05 * 1 month over 90 days
    cards = ok_data("list", "--sort", "updated")["cards"]
    assert [c["path"] for c in cards] == [paths[n] for n in ("gunicorn", "ecs", "pool", "tls", "ja", "old")]
    code, out, err = run_cli("list", "--sort", "confidence")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert len(lines) == 6
    assert lines[0].startswith("0.57  troubleshooting/infra") and lines[0].endswith(f"({paths['ecs']})")
    assert [c["path"] for c in ok_data("list", "--domain", "dev", "--sort", "title")["cards"]] == [
        paths["pool"], paths["gunicorn"], paths["ja"]]

    # ------------------------------------------------------------------ working memory
    data = ok_data("remember", "current-task", "--body", "ECS deploy in progress", "--ttl", "7")
    assert (vault / "WorkingMemory" / "current-task.md").is_file() and data["key"] == "current-task"
    code, out, err = run_cli("recall", "current-task")
    assert (code, out, err) == (0, "ECS deploy in progress\n", "")
    ok_data("remember", "next-step", "--body", "check the egress rule")
    for key in ("old-note", "gone-soon", "gone-too"):
        ok_data("remember", key, "--body", f"{key} body")
        set_line(vault / "WorkingMemory" / f"{key}.md", "expires", "2020-01-01T00:00:00+00:00")
    code, out, err = run_cli("recall", "gone-soon")
    assert (code, out) == (1, "")
    assert err == ("brain: error: no working memory 'gone-soon' (never set, forgotten or expired); "
                   "`brain context` lists them\n")
    assert not (vault / "WorkingMemory" / "gone-soon.md").exists()  # purged when read
    code, envelope, err = run_json("recall", "gone-too")
    assert (code, err) == (1, "")
    assert envelope == {"ok": False, "command": "recall", "error": {
        "code": "NOT_FOUND", "details": {},
        "message": "no working memory 'gone-too' (never set, forgotten or expired); `brain context` lists them"}}
    assert not (vault / "WorkingMemory" / "gone-too.md").exists()
    data = ok_data("context")
    assert data["purged"] == ["old-note"]
    assert sorted(e["key"] for e in data["entries"]) == ["current-task", "next-step"]
    assert not (vault / "WorkingMemory" / "old-note.md").exists()
    code, out, err = run_cli("context")
    assert (code, err) == (0, "")
    assert "## current-task (until " in out and "ECS deploy in progress" in out and "old-note" not in out
    code, out, err = run_cli("forget", "current-task")
    assert (code, out, err) == (0, "forgot current-task\n", "")
    assert not (vault / "WorkingMemory" / "current-task.md").exists()
    code, out, err = run_json("recall", "current-task")
    assert code == 1 and out["ok"] is False and out["error"]["code"] == "NOT_FOUND"

    # ------------------------------------------------------------------ search miss
    code, out, err = run_cli("search", "kafka consumer lag")
    assert (code, err) == (0, "")
    assert out.startswith('No cards match "kafka consumer lag".')
    [miss] = list((vault / "Inbox").glob("Search_Miss_*.md"))
    assert miss.name == "Search_Miss_kafka_consumer_lag.md"
    assert meta_of(miss)["misses"] == 1 and meta_of(miss)["query"] == "kafka consumer lag"
    data = ok_data("search", "  Kafka   CONSUMER lag ")
    assert data["hits"] == [] and data["miss_candidate"] == "Inbox/Search_Miss_kafka_consumer_lag.md"
    assert list((vault / "Inbox").glob("Search_Miss_*.md")) == [miss]
    assert meta_of(miss)["misses"] == 2

    # ------------------------------------------------------------------ audit
    data = ok_data("audit")
    assert data["total"] == 6
    assert data["by_domain"] == {"dev": 3, "infra": 1, "ops": 1, "security": 1}
    assert data["by_type"] == {"checklist": 1, "decision": 1, "pattern": 1, "runbook": 1, "troubleshooting": 2}
    assert [s["path"] for s in data["stale"]] == [paths["old"]]
    assert data["stale"][0]["days_unreferenced"] == 120
    assert [s["path"] for s in data["low_confidence"]] == [paths["old"]]
    assert data["inbox"]["candidates"] == 1 and data["inbox"]["search_misses"] == 1
    assert data["inbox"]["learned"] == 0
    assert data["working_memory"] == {"entries": 1, "expired": 0, "notes": 1, "saved_states": 0, "sessions": 0}
    assert data["health"] == []
    code, out, err = run_cli("audit")
    assert (code, err) == (0, "")
    assert out.splitlines()[:2] == ["6 cards", "by domain: dev 3, infra 1, ops 1, security 1"]
    assert "stale (> 90 days unreferenced): 1" in out
    assert " 120d  0.45  checklist/security" in out
    assert "inbox: 1 candidate(s) (1 search misses, 0 learned)" in out
    assert "working memory: 1 live in all sessions (1 note for every session, 0 saved states), 0 expired" in out

    # ------------------------------------------------------------------ the event log
    log = events(vault)
    names = [e["event"] for e in log]
    assert names == (
        ["created"] * 5
        + ["referenced", "used", "used", "used", "rejected"]
        + ["learned", "learned", "promoted"]
        + ["remembered"] * 5
        + ["forgotten"]
        + ["search_miss", "search_miss"]
    ), names
    for event in log:
        assert {"eid", "ts", "event", "actor"} <= set(event), event
        assert event["actor"] == "test"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", event["ts"]), event["ts"]
    assert len({e["eid"] for e in log}) == len(log)
    feedback = [e for e in log if e["event"] in ("referenced", "used", "rejected")]
    assert all(e["card"] == paths["ecs"] and e["id"] == ids["ecs"] for e in feedback)
    assert [e.get("after") for e in feedback[1:]] == [0.55, 0.595, 0.6355, 0.57195]
    assert feedback[-1]["note"] == "different cause this time"
    assert [e["card"] for e in log if e["event"] == "created"] == [paths[n] for n in CARDS]
    assert [e["key"] for e in log if e["event"] == "remembered"] == [
        "current-task", "next-step", "old-note", "gone-soon", "gone-too"]
    assert log[-1]["query"] == "  Kafka   CONSUMER lag "
    json.dumps(log)  # plain JSON all the way down


def data_path(path: Path, vault: Path) -> str:
    return path.relative_to(vault).as_posix()


def test_list_sorts_by_the_updated_moment_not_its_text(vault: Path):
    # Two clones in different time zones wrote these; as text the +09:00 one would sort first.
    write = {"Tokyo": "2026-01-10T10:00:00+09:00",     # 01:00 UTC
             "London": "2026-01-10T05:00:00+00:00",    # 05:00 UTC: the newest
             "Dated": "2026-01-09",                    # a hand-written date
             "Undated": None}
    for title, updated in write.items():
        line = f"updated: {updated}\n" if updated else ""
        (vault / "Playbooks" / f"{title}.md").write_text(
            f"---\ntitle: {title}\ntype: pattern\ndomain: dev\n{line}---\n# {title}\n", encoding="utf-8")
    cards = ok_data("list", "--sort", "updated")["cards"]
    assert [c["title"] for c in cards] == ["London", "Tokyo", "Dated", "Undated"]
