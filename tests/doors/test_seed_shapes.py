"""Seed 000's return shapes field for field (issue 23, part 6), `merge_memories`, and the tag
suggestion at store time, through the real `brain mcp` process (stdio) and the real CLI.

Each SEED_* below is the JSON example of seed 000 (000_exocortex_mcp_design.txt, section 5),
copied as the seed writes it. `matches` requires every field of the example in the answer, with a
value of the same JSON type (or null where the vault may hold no value: a memory without a
project has no context), and recurses into objects and into the first item of lists.
"""

from __future__ import annotations

import json

import pytest

from helpers import card_meta, events, ok_data, run_cli, run_json, vault_hashes
from test_mcp import Server

SEED_STORE = {"success": True, "memory_id": "550e8400-e29b-41d4-a716-446655440000", "summary": "生成された要約文...",
              "suggested_links": [{"target_id": "existing-id", "target_summary": "Related principle...",
                                   "similarity": 0.78, "suggested_relation": "extends",
                                   "reason": "High semantic similarity; may be an application of this insight"}],
              "insights": [{"type": "potential_duplicate",
                            "message": "This memory is very similar (94%) to an existing one",
                            "related_memory_id": "...", "confidence": 0.94,
                            "suggested_action": "Use update_memory instead"}],
              "link_suggestion_message": "Found 2 related memories. Consider linking them."}
SEED_RECALL = {"memories": [{"id": "...", "summary": "...", "content": "...", "type": "success", "similarity": 0.87,
                             "context": "project-name", "tags": ["Python", "async"],
                             "created_at": "2024-01-15T10:30:00Z"}], "total_found": 3}
SEED_LIST = {"memories": [{"id": "...", "summary": "...", "type": "insight", "context": "project-name",
                           "tags": ["Python"], "created_at": "2024-01-15T10:30:00Z"}],
             "total_count": 42, "has_more": True}
SEED_GET = {"id": "...", "content": "完全な内容...", "summary": "...", "type": "success", "context": "project-name",
            "tags": ["Python", "async"], "created_at": "2024-01-15T10:30:00Z", "updated_at": "2024-01-16T14:20:00Z"}
SEED_DELETE = {"success": True, "deleted_id": "550e8400-e29b-41d4-a716-446655440000"}
SEED_STATS = {"total_memories": 42, "memories_by_type": {"insight": 20, "success": 15, "failure": 5, "decision": 2},
              "total_contexts": 5, "total_tags": 23, "top_tags": [{"name": "Python", "count": 18},
                                                                  {"name": "async", "count": 12}]}
SEED_LINK = {"success": True, "source_id": "...", "target_id": "...", "relation_type": "extends"}
SEED_UNLINK = {"success": True}
SEED_UPDATE = {"success": True, "memory_id": "...", "changes": ["content", "tags"]}
SEED_EXPLORE = {"memory_id": "...",
                "linked": [{"id": "...", "summary": "...", "relation_type": "extends", "reason": "具体的な適用例"}],
                "by_tag": [{"id": "...", "summary": "...", "shared_tags": ["Python", "async"]}],
                "by_context": [{"id": "...", "summary": "...", "context": "project-name"}]}
SEED_LINKS = {"memory_id": "...", "links": [{"target_id": "...", "target_summary": "...", "relation_type": "extends",
                                             "reason": "PostgreSQLへの具体的な適用例",
                                             "created_at": "2024-01-15T10:30:00Z"}]}
SEED_ANALYZE = {"total_memories": 42, "health_score": 85.0,
                "issues": [{"type": "orphan_memories", "severity": "medium", "message": "5 memories have no tags",
                            "affected_memory_ids": ["...", "..."], "suggested_action": "Add tags using update_memory"}],
                "suggestions": ["Address issues above to improve discoverability"],
                "stats": {"unlinked_memories": 34, "memories_per_context": {"project-a": 20, "project-b": 22}}}

NULLABLE = {"context", "reason", "created_at", "updated_at", "related_memory_id", "target_id", "id", "memory_id",
            "deleted_id", "source_id", "link_suggestion_message"}


def kind(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "array", dict: "object", type(None): "null"}[type(value)]


def matches(actual, seed, where: str = "") -> list[str]:
    """Every way `actual` misses a field of `seed` or gives it another JSON type."""
    problems = []
    for key, example in seed.items():
        here = f"{where}.{key}" if where else key
        if key not in actual:
            problems.append(f"{here}: missing")
            continue
        value = actual[key]
        if kind(value) != kind(example) and not (value is None and key in NULLABLE):
            problems.append(f"{here}: {kind(value)} where the seed has {kind(example)}")
        elif isinstance(example, dict) and isinstance(value, dict) and key not in ("memories_by_type",
                                                                                    "memories_per_context"):
            problems += matches(value, example, here)
        elif isinstance(example, list) and example and isinstance(example[0], dict):
            if not value:
                problems.append(f"{here}: empty, so its items cannot be checked")
            else:
                problems += matches(value[0], example[0], f"{here}[0]")
    return problems


@pytest.fixture
def mcp(vault):
    server = Server(vault)
    server.initialize()
    yield server
    server.close()


def data_of(result: dict) -> dict:
    assert result["isError"] is False, result
    return result["structuredContent"]


def test_every_tool_answers_in_seed_000s_shape(mcp, vault):
    first = data_of(mcp.call("store_memory", {
        "content": "Connection pooling: reuse connections instead of opening one per request. Use pgbouncer "
                   "for PostgreSQL.", "context_name": "exocortex-dev", "tags": ["postgresql", "pooling"],
        "memory_type": "insight"}))
    # The same principle again: similar enough to be linked and reported.
    second = data_of(mcp.call("store_memory", {
        "content": "Connection pooling: reuse connections instead of opening one per request. Use pgbouncer "
                   "for PostgreSQL.", "context_name": "exocortex-dev", "tags": ["postgresql", "pooling"],
        "memory_type": "success", "title": "Pooling again"}))
    assert matches(second, {k: v for k, v in SEED_STORE.items() if k != "suggested_links"}) == [], second
    assert second["insights"][0]["type"] == "potential_duplicate"
    assert second["insights"][0]["related_memory_id"] == first["memory_id"]
    # Related, not the same: a suggested link.
    related = data_of(mcp.call("store_memory", {
        "content": "With pgbouncer connection pooling in transaction mode, PostgreSQL prepared statements fail "
                   "across requests; turn them off in the driver.", "context_name": "exocortex-dev",
        "tags": ["postgresql", "pgbouncer"], "title": "pgbouncer transaction pooling breaks prepared statements"}))
    assert matches(related, {k: v for k, v in SEED_STORE.items() if k != "insights"}) == [], related
    assert {link["target_id"] for link in related["suggested_links"]} == {first["memory_id"], second["memory_id"]}
    assert related["suggested_links"][0]["target_summary"].startswith("Connection pooling: reuse")
    assert related["link_suggestion_message"].startswith("Found ") and related["suggested_tags"] == ["pooling"]
    data_of(mcp.call("delete_memory", {"memory_id": related["memory_id"]}))
    third = data_of(mcp.call("store_memory", {
        "content": "PostgreSQL deadlocks under async load come from long transactions holding row locks.",
        "context_name": "exocortex-dev", "tags": ["postgresql", "async"], "memory_type": "failure"}))
    recalled = data_of(mcp.call("recall_memories", {"query": "connection pooling postgresql"}))
    assert matches(recalled, SEED_RECALL) == [], recalled
    hit = recalled["memories"][0]
    assert 0 < hit["similarity"] <= 1 and hit["context"] == "exocortex-dev"
    assert hit["content"].startswith("Connection pooling") and hit["summary"] == hit["content"][:200]
    assert matches(data_of(mcp.call("list_memories", {"limit": 2})), SEED_LIST) == []
    got = data_of(mcp.call("get_memory", {"memory_id": first["memory_id"]}))
    assert matches(got, SEED_GET) == [], got
    assert (got["context"], got["content"][:18]) == ("exocortex-dev", "Connection pooling")
    linked = data_of(mcp.call("link_memories", {"source_id": third["memory_id"], "target_id": first["memory_id"],
                                                "relation_type": "extends", "reason": "PostgreSQLへの具体的な適用例"}))
    assert matches(linked, SEED_LINK) == []
    links = data_of(mcp.call("get_memory_links", {"memory_id": third["memory_id"]}))
    assert matches(links, SEED_LINKS) == [], links
    assert links["links"][0]["target_id"] == first["memory_id"]
    assert links["links"][0]["target_summary"].startswith("Connection pooling")
    explored = data_of(mcp.call("explore_related", {"memory_id": first["memory_id"]}))
    assert matches(explored, SEED_EXPLORE) == [], explored
    assert explored["linked"][0]["relation_type"] == "extends"
    assert explored["by_context"][0]["context"] == "exocortex-dev"
    stats = data_of(mcp.call("get_stats", {}))
    assert matches(stats, SEED_STATS) == [] and stats["total_contexts"] == 1, stats
    untagged = data_of(mcp.call("store_memory", {"content": "Cache invalidation notes", "context_name": "other",
                                                  "tags": []}))
    analysis = data_of(mcp.call("analyze_knowledge", {}))
    assert matches(analysis, SEED_ANALYZE) == [], analysis
    assert analysis["total_contexts"] == 2
    assert analysis["stats"]["memories_per_context"] == {"exocortex-dev": 3, "other": 1}
    assert [i["affected_memory_ids"] for i in analysis["issues"] if i["type"] == "orphan_memories"] == [
        [untagged["memory_id"]]]
    updated = data_of(mcp.call("update_memory", {"memory_id": third["memory_id"], "tags": ["postgresql", "locks"],
                                                 "content": "Long transactions hold row locks."}))
    assert matches(updated, SEED_UPDATE) == [] and set(updated["changes"]) == {"tags", "body"}
    assert matches(data_of(mcp.call("unlink_memories", {"source_id": third["memory_id"],
                                                        "target_id": first["memory_id"]})), SEED_UNLINK) == []
    deleted = data_of(mcp.call("delete_memory", {"memory_id": second["memory_id"]}))
    assert matches(deleted, SEED_DELETE) == [] and deleted["deleted_id"] == second["memory_id"]


def test_the_shape_check_sees_a_missing_or_mistyped_field():
    # Guard for the guard.
    assert matches({"memories": [{"id": "x"}], "total_found": 1}, SEED_RECALL) != []
    assert matches({**SEED_DELETE, "deleted_id": 5}, SEED_DELETE) == ["deleted_id: number where the seed has string"]
    assert matches(SEED_EXPLORE, SEED_EXPLORE) == []


def test_merge_folds_one_card_into_another_in_one_undoable_operation(vault):
    keep = ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "pooling,postgresql",
                   "--title", "Connection pooling", "--body", "Reuse connections.")
    other = ok_data("create", "--type", "pattern", "--domain", "dev", "--tags", "pgbouncer,Pooling",
                    "--title", "Use pgbouncer", "--body", "Put pgbouncer in front of PostgreSQL.")
    target = ok_data("create", "--type", "runbook", "--domain", "dev", "--tags", "ops",
                     "--title", "Install pgbouncer", "--body", "apt install pgbouncer")
    ok_data("link", other["id"], target["id"], "--rel", "depends_on", "--reason", "needs it installed")
    ok_data("link", other["id"], keep["id"], "--rel", "related")
    before = vault_hashes(vault)
    merged = ok_data("merge", keep["id"], other["id"])
    assert merged["tags_added"] == ["pgbouncer"] and merged["tags"] == ["pooling", "postgresql", "pgbouncer"]
    kept = ok_data("get", keep["id"])
    assert kept["body"].rstrip().endswith("## Merged from: Use pgbouncer\n\nPut pgbouncer in front of PostgreSQL.")
    assert kept["body"].lstrip().startswith("# Connection pooling\n\nReuse connections.")
    rels = {(link["to"], link["rel"]) for link in kept["frontmatter"]["links"]}
    assert rels == {(target["id"], "depends_on"), (other["id"], "supersedes")}   # not its link to keep itself
    gone = ok_data("get", other["id"])["frontmatter"]
    assert (gone["status"], gone["superseded_by"]) == ("superseded", keep["id"]) and "valid_to" in gone
    assert [h["id"] for h in ok_data("search", "pgbouncer")["hits"]] == [keep["id"], target["id"]] or \
        other["id"] not in [h["id"] for h in ok_data("search", "pgbouncer")["hits"]]
    [event] = [e for e in events(vault) if e["event"] == "merged"]
    assert (event["id"], event["merged"]) == (keep["id"], other["id"])
    ok_data("undo", event["eid"])
    assert vault_hashes(vault) == before
    code, envelope, _ = run_json("merge", keep["id"], keep["id"])
    assert (code, envelope["error"]["code"]) == (2, "INVALID_ARGUMENT")
    private = ok_data("create", "--type", "pattern", "--domain", "dev", "--title", "Mine", "--body", "secret",
                      "--agent", "alice")
    files = vault_hashes(vault)
    code, envelope, _ = run_json("merge", keep["id"], private["id"])
    assert code == 2 and "not visible to the same agents" in envelope["error"]["message"]
    assert vault_hashes(vault) == files


def test_store_suggests_the_vaults_own_tags_that_its_text_names(vault):
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "ecs,terraform", "--title", "ECS deploy",
            "--body", "x")
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "ecs,react-native-screens",
            "--title", "Expo build", "--body", "y")
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "falcon-secret", "--title", "Private",
            "--body", "z", "--agent", "bob")
    made = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--tags", "terraform",
                   "--title", "Terraform plan hangs on ECS", "--body",
                   "The ECS service and react-native-screens falcon-secret build; terraform again.")
    suggested = made["insights"]["suggested_tags"]
    assert [t["name"] for t in suggested] == ["ecs", "react-native-screens"], suggested   # ecs: 2 mentions
    assert suggested[0]["count"] == 2
    code, out, _ = run_cli("create", "--type", "insight", "--domain", "infra", "--title", "Another ECS note",
                           "--body", "ecs")
    assert code == 0 and "suggested tags: ecs" in out


def test_the_vaults_tags_are_analysed_once_by_the_writer_and_a_create_reads_only_those_its_text_names(vault,
                                                                                                  monkeypatch):
    from external_brain.search import analysis

    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "ecs,terraform", "--title", "ECS deploy",
            "--body", "x")
    ok_data("create", "--type", "runbook", "--domain", "infra", "--tags", "ecs,react-native-screens",
            "--title", "Expo build", "--body", "y")
    # The index holds each tag's terms (`tags.terms`): a create analyses its own text, not the
    # vault's tags, and no cache file of them is written.
    analysed = []
    real = analysis.tokens
    monkeypatch.setattr(analysis, "tokens", lambda text, *a, **k: analysed.append(text) or real(text, *a, **k))
    for n in range(2):
        analysed.clear()
        made = ok_data("create", "--type", "troubleshooting", "--domain", "infra", "--title", f"Terraform on ECS {n}",
                       "--body", "The ECS service and react-native-screens; terraform again.")
        assert [t["name"] for t in made["insights"]["suggested_tags"]] == ["ecs", "terraform", "react-native-screens"]
        assert not {"ecs", "terraform", "react-native-screens"} & set(analysed), analysed
    assert not (vault / ".brain" / "cache" / "tag-terms.json").exists()
