"""Run by tests/doors/test_mcp_http.py with a Python that has the official MCP SDK (`pip install mcp`),
never imported by the product or by pytest: N concurrent sessions of the SDK's streamable-HTTP
client against a running `brain serve`, each listing the tools and calling every one of them,
checking each result against the tool's outputSchema and the expected isError.

    python sdk_streamable_client.py URL KEY SESSIONS     # prints one JSON summary line
"""

from __future__ import annotations

import asyncio
import json
import sys
import time


def plan(n: int, card_id: str, other_id: str, third_id: str) -> list[tuple[str, dict, bool]]:
    """(tool, arguments, expect an error) in an order where each call's cards exist."""
    key = f"sdk-task-{n}"
    return [
        ("recall_memories", {"query": f"session{n} timeout", "limit": 3}, False),
        ("list_memories", {"limit": 5, "tag_filter": [f"session{n}"]}, False),
        ("get_memory", {"memory_id": card_id}, False),
        ("record_feedback", {"memory_id": card_id, "outcome": "used", "note": "sdk interop"}, False),
        ("update_memory", {"memory_id": card_id, "tags": ["ecs", f"session{n}", "egress"], "memory_type": "success"},
         False),
        ("link_memories", {"source_id": other_id, "target_id": card_id, "relation_type": "extends",
                           "reason": "the same fix for Fargate", "weight": 0.8}, False),
        ("get_memory_links", {"memory_id": other_id}, False),
        ("explore_related", {"memory_id": card_id, "depth": 2}, False),
        ("get_stats", {}, False),
        ("analyze_knowledge", {}, False),
        ("unlink_memories", {"source_id": other_id, "target_id": card_id, "relation_type": "extends"}, False),
        ("merge_memories", {"keep_id": card_id, "merge_id": third_id}, False),
        ("delete_memory", {"memory_id": other_id, "dry_run": True}, False),
        ("delete_memory", {"memory_id": other_id}, False),
        ("link_memories", {"source_id": card_id, "target_id": card_id, "relation_type": "related"}, True),
        ("update_memory", {"memory_id": card_id, "content": "stale", "expect_hash": "1:00000000"}, True),
        ("remember", {"key": key, "body": f"interop run {n}", "ttl_days": 1}, False),
        ("recall", {"key": key}, False),
        ("context", {}, False),
        ("brief", {"query": f"session{n} timeout", "budget": 300}, False),
        ("forget", {"key": key}, False),
        ("get_persona_context", {}, False),
        ("update_persona_context", {"current_emotion": "focused"}, False),
        ("recall_memories", {"query": "ecs", "limit": 99}, True),
        ("get_memory", {"memory_id": "no-such-card"}, True),
        ("store_memory", {"content": "x", "tags": ["a"]}, True),
    ]


async def session(url: str, key: str, n: int) -> dict:
    import jsonschema
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    failures: list[str] = []
    called: set[str] = set()
    started = time.monotonic()
    async with create_mcp_http_client(headers={"X-API-KEY": key}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            version = client.protocol_version
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            stored = []
            for text, tags in ((f"Session {n}: calls to an external API time out after 30 s.\n\n## Fix\nAllow "
                                "egress 443.", ["ecs", f"session{n}"]),
                               (f"Session {n}: Fargate tasks need a NAT gateway to pull images.", ["ecs", "fargate"]),
                               (f"Session {n}: egress rules also need port 53 for DNS.", ["egress", f"session{n}"])):
                stored.append(await client.call_tool("store_memory", {
                    "content": text, "context_name": f"shop{n}", "tags": tags, "memory_type": "success",
                    "domain": "infra"}))
            ids = [result.structured_content["memory_id"] for result in stored]
            results = [("store_memory", {}, False, result) for result in stored]
            for name, arguments, expect_error in plan(n, *ids):
                results.append((name, arguments, expect_error, await client.call_tool(name, arguments)))
            for name, arguments, expect_error, result in results:
                called.add(name)
                if bool(result.is_error) != expect_error:
                    failures.append(f"{name} {arguments}: isError {result.is_error}, expected {expect_error}: "
                                    f"{result.content[0].text[:200]}")
                    continue
                if expect_error:
                    continue
                data = result.structured_content
                try:
                    jsonschema.validate(data, tools[name].output_schema)
                except jsonschema.ValidationError as exc:
                    failures.append(f"{name}: structuredContent breaks outputSchema: {exc.message}")
                if json.loads(result.content[0].text) != data:
                    failures.append(f"{name}: the text block differs from structuredContent")
            missing = sorted(set(tools) - called)
            if missing:
                failures.append(f"tools never called: {', '.join(missing)}")
    return {"session": n, "protocol": version, "tools": sorted(tools), "called": sorted(called),
            "failures": failures, "seconds": round(time.monotonic() - started, 2)}


async def main(url: str, key: str, count: int) -> dict:
    outcomes = await asyncio.gather(*(session(url, key, n) for n in range(count)), return_exceptions=True)
    sessions, errors = [], []
    for n, outcome in enumerate(outcomes):
        if isinstance(outcome, BaseException):
            errors.append(f"session {n}: {type(outcome).__name__}: {outcome}")
        else:
            sessions.append(outcome)
    return {"sessions": sessions, "errors": errors}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))))
