"""Every refused SQL class through a real server: refused, audited, warehouse untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from platform_helpers import RunningPlatform, call, mcp_client, open_session

from dabench.platform.warehouse import Warehouse, read_only_config

REFUSED = [
    ("CREATE TABLE main.x AS SELECT 1", "SQL_NOT_READ_ONLY"),
    ("DROP TABLE {table}", "SQL_NOT_READ_ONLY"),
    ("DELETE FROM {table}", "SQL_NOT_READ_ONLY"),
    ("UPDATE {table} SET {column} = NULL", "SQL_NOT_READ_ONLY"),
    ("INSERT INTO {table} SELECT * FROM {table}", "SQL_NOT_READ_ONLY"),
    ("COPY {table} TO '/tmp/dabench-leak.csv'", "SQL_NOT_READ_ONLY"),
    ("ATTACH '/tmp/dabench-x.duckdb' AS x", "SQL_NOT_READ_ONLY"),
    ("INSTALL httpfs", "SQL_NOT_READ_ONLY"),
    ("LOAD httpfs", "SQL_NOT_READ_ONLY"),
    ("PRAGMA database_list", "SQL_NOT_READ_ONLY"),
    ("SET threads = 1", "SQL_NOT_READ_ONLY"),
    ("SELECT 1; DROP TABLE {table}", "SQL_MULTIPLE_STATEMENTS"),
    ("SELECT * FROM read_csv('/etc/passwd')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    (
        "SELECT * FROM read_parquet('https://example.com/x.parquet')",
        "SQL_TABLE_FUNCTION_NOT_ALLOWED",
    ),
    ("SELECT * FROM glob('/*')", "SQL_TABLE_FUNCTION_NOT_ALLOWED"),
    ("SELECT * FROM '/etc/passwd'", "SQL_FILE_ACCESS"),
    ("SELECT '" + "a" * 2500 + "'", "SQL_TOO_LONG"),
]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_refused_sql_classes_are_audited(
    platform_tight: RunningPlatform, world: Any, world_dir: Path
) -> None:
    ds = world.catalog.datasets[0]
    table, column = ds.id, ds.columns[0].name
    warehouse = world_dir / "warehouse.duckdb"
    before = _digest(warehouse)
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        for template, code in REFUSED:
            sql = template.format(table=table, column=column)
            is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
            assert is_error, sql
            assert body["error"]["code"] == code, (sql, body)
            assert body["error"]["message"]
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": f"SELECT COUNT(*) FROM {table}"}
        )
        assert not is_error and body["rows"][0][0] == world.manifest.table_rows[table]
    rows = platform_tight.audit(session_id=sid, event_kind="tool_call")
    assert [r["error_code"] for r in rows] == [code for _, code in REFUSED] + [None]
    assert _digest(warehouse) == before
    assert not Path("/tmp/dabench-leak.csv").exists()


async def test_runaway_query_hits_timeout(platform_tight: RunningPlatform) -> None:
    sql = "SELECT COUNT(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = 7"
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
        assert is_error and body["error"]["code"] == "QUERY_TIMEOUT"
        # the server is still healthy afterwards
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": "SELECT 7"})
        assert not is_error and body["rows"] == [[7]]


@pytest.mark.parametrize(("limit", "expected"), [(None, 5), (3, 3), (500, 20)])
async def test_row_cap_and_truncated_flag(
    platform_tight: RunningPlatform, limit: int | None, expected: int
) -> None:
    args: dict[str, Any] = {"sql": "SELECT range AS i FROM range(100) ORDER BY i"}
    if limit is not None:
        args["limit"] = limit
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, **args})
    assert not is_error
    assert body["row_count"] == expected == len(body["rows"])
    assert body["truncated"] is True
    assert body["rows"][0] == [0]


async def test_not_truncated_when_all_rows_fit(platform_tight: RunningPlatform) -> None:
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        _, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT * FROM range(5)"}
        )
    assert body["truncated"] is False and body["row_count"] == 5


async def test_hostile_inputs_are_bounded(platform_tight: RunningPlatform) -> None:
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        huge = "SELECT 1 -- " + "☃" * 300_000
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": huge})
        assert is_error and body["error"]["code"] in {"INPUT_TOO_LARGE", "INVALID_ARGUMENTS"}
        is_error, body = await call(
            client, "describe_table", {"session_id": sid, "table": "x" * 5000}
        )
        assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS"
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT '\u202e\U0001f600' AS s"}
        )
        assert not is_error and body["rows"] == [["\u202e\U0001f600"]]
    rows = platform_tight.audit(session_id=sid, event_kind="tool_call")
    assert len(rows) == 3
    assert len(rows[0]["parameters"]["sql"]) < 5000  # stored parameters are clipped


@pytest.mark.parametrize("threads", [1, 2])
def test_sql_threads_setting_reaches_duckdb(world_dir: Path, threads: int) -> None:
    warehouse = Warehouse(world_dir / "warehouse.duckdb", threads)
    try:
        cur = warehouse._con.cursor()
        assert cur.execute("SELECT current_setting('threads')").fetchone() == (threads,)
        cur.close()
        with pytest.raises(ValueError, match="threads must be at least 1"):
            read_only_config(0)
    finally:
        warehouse.close()


def test_sql_threads_flag_is_validated(world_dir: Path, tmp_path: Path) -> None:
    argv = [
        sys.executable, "-m", "dabench.cli", "platform", "serve", "--world", str(world_dir),
        "--sql-threads", "0", "--state-dir", str(tmp_path),
    ]  # fmt: skip
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 2
    assert "Invalid value for '--sql-threads'" in proc.stderr
    assert "greater than or equal to 1" in proc.stderr
