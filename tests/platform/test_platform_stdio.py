"""MCP over stdio: the same tools, identity from DABENCH_API_KEY, audit rows on disk."""

from __future__ import annotations

import json
import select
import subprocess
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


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "stdio-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _answer(proc: subprocess.Popen[bytes], line: bytes) -> dict[str, Any]:
    """Send one line; the next line the server writes (a hang fails after 120 s)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line + b"\n")
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], 120.0)
    assert ready, f"no answer to {line[:80]!r}"
    return dict(json.loads(proc.stdout.readline()))


def test_stdio_answers_and_audits_what_the_sdk_cannot_read(
    world_dir: Path, auth_file: Path, tmp_path: Path
) -> None:
    """Regression: a request holding a lone surrogate escape got no answer and no audit row
    (the client hung); an unparseable line or a batch got no parse error. Each now gets a
    JSON-RPC error (its id where one can be read, else null) and one audit row."""
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world_dir),
        "--profile", "a0", "--transport", "stdio", "--auth", str(auth_file),
        "--state-dir", str(tmp_path),
    ]  # fmt: skip
    env = {**env_without_key(), "DABENCH_API_KEY": KEYS["teacher"]}
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    params = {"name": "sql_query", "arguments": {"sql": "SELECT '\ud800'"}, "_meta": META}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    batch = [{"jsonrpc": "2.0", "id": 8, "method": "tools/list"}]
    clean = {"jsonrpc": "2.0", "id": "c", "method": "tools/list", "params": {"_meta": META}}
    try:
        surrogate = _answer(proc, json.dumps(call).encode())
        garbage = _answer(proc, b"not json")
        batched = _answer(proc, json.dumps(batch).encode())
        listed = _answer(proc, json.dumps(clean).encode())
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(60)
    assert (surrogate["id"], surrogate["error"]["code"]) == (7, -32602)
    assert (garbage["id"], garbage["error"]["code"]) == (None, -32700)
    assert (batched["id"], batched["error"]["code"]) == (None, -32600)
    assert listed["id"] == "c" and listed["result"]["tools"]
    store = AuditStore(Database(sqlite_path=tmp_path / "audit.sqlite"))
    rows = store.events(AuditQuery()).events
    assert [(r.tool_name, r.error_code, r.user_id) for r in rows] == [
        ("sql_query", "INVALID_ARGUMENTS", "teacher"),
        ("(unparseable)", "PARSE_ERROR", "teacher"),
        ("(invalid request)", "INVALID_REQUEST", "teacher"),
    ]
