"""MCP over stdio: the same tools, identity from DABENCH_API_KEY, audit rows on disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from platform_helpers import KEYS, env_without_key

from dabench.platform.admin.audit import AuditQuery, AuditStore
from dabench.platform.storage import Database


async def test_stdio_round_trip(
    world_dir: Path, world: Any, auth_file: Path, tmp_path: Path
) -> None:
    table = world.catalog.datasets[0].id
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m", "dabench.cli", "platform", "serve", "--world", str(world_dir),
            "--profile", "a2", "--transport", "stdio", "--auth", str(auth_file),
            "--state-dir", str(tmp_path),
        ],
        env={**env_without_key(), "DABENCH_API_KEY": KEYS["learner"]},
    )  # fmt: skip
    async with Client(params) as client:
        tools = sorted(t.name for t in (await client.list_tools()).tools)
        assert tools == sorted(
            ["platform_info", "sql_query", "describe_table", "list_tables", "search", "fetch"]
        )
        info = json.loads((await client.call_tool("platform_info", {})).content[0].text)  # type: ignore[union-attr]
        assert info["user"] == "learner" and info["profile"] == "a2"
        sid = info["session_id"]
        gated = await client.call_tool("sql_query", {"session_id": sid, "sql": "SELECT 1"})
        assert gated.is_error
        await client.call_tool("search", {"session_id": sid, "query": table})
        result = await client.call_tool(
            "sql_query", {"session_id": sid, "sql": f"SELECT COUNT(*) FROM {table}"}
        )
        assert not result.is_error
        body = json.loads(result.content[0].text)  # type: ignore[union-attr]
        assert body["rows"][0][0] == world.manifest.table_rows[table]
    store = AuditStore(Database(sqlite_path=tmp_path / "audit.sqlite"))
    rows = store.events(AuditQuery(session_id=sid)).events
    assert [(r.tool_name, r.success) for r in rows] == [
        ("platform_info", True),
        ("sql_query", False),
        ("search", True),
        ("sql_query", True),
    ]
    assert rows[1].error_code == "SEARCH_REQUIRED"
    assert all(r.user_id == "learner" for r in rows)
