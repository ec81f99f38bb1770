"""Drive `brain mcp` with the official MCP Python SDK client: connect, list tools, call every tool,
and validate each structuredContent against the tool's outputSchema.

Needs the `mcp` package, which the product does not: run it from a throw-away environment,

    python3 -m venv /work/venv-mcp && /work/venv-mcp/bin/pip install mcp
    /work/venv-mcp/bin/python tests/bench/mcp_sdk_interop.py

It works in a temporary vault and prints one line per call; exit status 0 when every check held.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "runtime" / "playbook_api.py"


def calls(card_id: str, other_id: str) -> list[tuple[str, dict, bool]]:
    """(tool, arguments, expect an error) in an order where each call's card exists."""
    return [
        ("recall_memories", {"query": "ecs timeout", "limit": 3}, False),
        ("list_memories", {"limit": 5, "tag_filter": ["ecs"]}, False),
        ("get_memory", {"memory_id": card_id}, False),
        ("record_feedback", {"memory_id": card_id, "outcome": "used", "note": "sdk interop"}, False),
        ("update_memory", {"memory_id": card_id, "tags": ["ecs", "timeout", "egress"], "memory_type": "success"},
         False),
        ("link_memories", {"source_id": other_id, "target_id": card_id, "relation_type": "extends",
                           "reason": "the same fix for Fargate", "weight": 0.8}, False),
        ("get_memory_links", {"memory_id": card_id}, False),
        ("explore_related", {"memory_id": card_id, "depth": 2}, False),
        ("get_stats", {}, False),
        ("analyze_knowledge", {}, False),
        ("unlink_memories", {"source_id": other_id, "target_id": card_id, "relation_type": "extends"}, False),
        ("get_persona_context", {}, False),
        ("update_persona_context", {"current_emotion": "focused"}, False),
        ("merge_memories", {"keep_id": card_id, "merge_id": card_id}, True),
        ("delete_memory", {"memory_id": other_id, "dry_run": True}, False),
        ("delete_memory", {"memory_id": other_id}, False),
        ("link_memories", {"source_id": card_id, "target_id": card_id, "relation_type": "related"}, True),
        ("link_memories", {"source_id": card_id, "target_id": card_id, "relation_type": "related", "weight": 2},
         True),
        ("update_memory", {"memory_id": card_id, "content": "stale", "expect_hash": "1:00000000"}, True),
        ("remember", {"key": "sdk-task", "body": "interop run", "ttl_days": 1}, False),
        ("recall", {"key": "sdk-task"}, False),
        ("context", {}, False),
        ("brief", {"query": "ecs timeout", "budget": 300}, False),
        ("forget", {"key": "sdk-task"}, False),
        ("recall_memories", {"query": "ecs", "limit": 99}, True),
        ("get_memory", {"memory_id": "no-such-card"}, True),
        ("store_memory", {"content": "x", "tags": ["a"]}, True),
    ]


def attr(obj, camel: str):
    """A result field under the SDK's 1.x (camelCase) or 2.x (snake_case) name."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel)


async def main() -> int:
    import jsonschema

    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run([sys.executable, str(SCRIPT), "init", str(vault)], check=True, capture_output=True)
        params = StdioServerParameters(command=sys.executable, args=[str(SCRIPT), "--vault", str(vault), "mcp"])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                info = attr(init, "serverInfo")
                print(f"initialize: protocol {attr(init, 'protocolVersion')}, server {info.name} {info.version}")
                tools = {tool.name: tool for tool in (await session.list_tools()).tools}
                print(f"tools/list: {len(tools)} tools: {', '.join(tools)}")
                stored = await session.call_tool("store_memory", {
                    "content": "Calls to an external API time out after 30 s.\n\n## Fix\nAllow egress 443.",
                    "context_name": "shop", "tags": ["ecs", "timeout"], "memory_type": "success", "domain": "infra"})
                other = await session.call_tool("store_memory", {
                    "content": "Fargate tasks need a NAT gateway or VPC endpoints to pull images.",
                    "context_name": "shop", "tags": ["ecs", "fargate"], "domain": "infra"})
                plan = [("store_memory", None, False, stored), ("store_memory", None, False, other)]
                card_id = attr(stored, "structuredContent")["memory_id"]
                other_id = attr(other, "structuredContent")["memory_id"]
                for name, arguments, expect_error in calls(card_id, other_id):
                    plan.append((name, arguments, expect_error, await session.call_tool(name, arguments)))
                called = set()
                for name, arguments, expect_error, result in plan:
                    called.add(name)
                    problem = None
                    is_error = bool(attr(result, "isError"))
                    if is_error != expect_error:
                        problem = f"isError {is_error}, expected {expect_error}"
                    elif not expect_error:
                        data = attr(result, "structuredContent")
                        try:
                            jsonschema.validate(data, attr(tools[name], "outputSchema"))
                        except jsonschema.ValidationError as exc:
                            problem = f"structuredContent breaks outputSchema: {exc.message}"
                        if json.loads(result.content[0].text) != data:
                            problem = "text block differs from structuredContent"
                    shown = result.content[0].text[:90].replace("\n", " ")
                    status = "FAIL " + problem if problem else "ok"
                    failures += bool(problem)
                    print(f"{status:4}  {name:16} {'(bad arguments) ' if expect_error else ''}{shown}")
                missing = set(tools) - called
                if missing:
                    failures += 1
                    print(f"FAIL  tools never called: {', '.join(sorted(missing))}")
    print(f"{'all checks held' if not failures else f'{failures} check(s) failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
