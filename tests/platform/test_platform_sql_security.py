"""Every refused SQL class through a real server: refused, audited, warehouse untouched."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from platform_helpers import (
    RunningPlatform,
    call,
    mcp_client,
    open_session,
    start_platform,
    stop_platform,
)

from dabench.platform.warehouse import DuckDBWarehouse, WarehouseLimits, read_only_config

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
    warehouse = DuckDBWarehouse(world_dir / "warehouse.duckdb", threads)
    try:
        assert warehouse.settings["threads"] == str(threads)
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


LIMITS_PROFILE = {
    "name": "limits",
    "description": "Test profile: small byte cap, memory limit and spill space.",
    "tools": ["platform_info", "sql_query", "describe_table", "list_tables"],
    "sql": {
        "row_limit_default": 10000,
        "row_limit_max": 10000,
        "timeout_s": 10.0,
        "max_result_bytes": 65536,
        "memory_limit": "1GiB",
        "max_temp_directory_size": "64MiB",
        "workers": 2,
    },
}


def _limits_platform(
    world_dir: Path, auth_file: Path, tmp: Path, **sql: object
) -> Iterator[RunningPlatform]:
    """A real server with the limits profile (``sql`` overrides its SQL settings); spills
    under its own temp directory."""
    profile = dict(LIMITS_PROFILE)
    profile["sql"] = {**LIMITS_PROFILE["sql"], "temp_directory": str(tmp / "spill"), **sql}  # type: ignore[dict-item]
    path = tmp / "limits.yaml"
    path.write_text(yaml.safe_dump(profile))
    platform = start_platform(world_dir, str(path), auth_file, tmp / "state")
    yield platform
    stop_platform(platform)


@pytest.fixture(scope="module")
def platform_limits(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """The limits profile as it is (a 10 s statement timeout, which one test waits out)."""
    yield from _limits_platform(world_dir, auth_file, tmp_path_factory.mktemp("limits"))


@pytest.fixture(scope="module")
def platform_memory_limits(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """The limits profile with a statement timeout far past any machine's time to reach the
    memory and spill limits (a safety net): under a CPU load, the 3e6-row sort took over the
    profile's 10 s to fill its 64 MiB of spill, so the timeout answered first."""
    tmp = tmp_path_factory.mktemp("memory-limits")
    yield from _limits_platform(world_dir, auth_file, tmp, timeout_s=600.0)


async def test_byte_cap_truncates_large_results(platform_limits: RunningPlatform) -> None:
    sql = "SELECT range AS i, repeat('x', 1000) AS s FROM range(10000)"
    async with mcp_client(platform_limits) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
        assert not is_error, body
        assert body["truncated"] is True and body["truncated_by"] == "bytes"
        assert body["max_bytes"] == 65536
        assert 0 < body["row_count"] < 100 and body["rows"][0][0] == 0
        assert len(json.dumps(body["rows"])) <= 65536
        # 1 GB of result: one batch is read, nothing more
        huge = "SELECT repeat('x', 100000) FROM range(10000)"
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": huge})
        assert not is_error and body["truncated"] is True and body["row_count"] == 0
        # one value over the cap is never returned: the row is cut, columns stay
        one = "SELECT 1 AS n, repeat('x', 50000000) AS big, 'ok' AS s"
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": one})
        assert not is_error and body["truncated_by"] == "bytes" and body["rows"] == []
        assert [c["name"] for c in body["columns"]] == ["n", "big", "s"]
        mixed = (
            "SELECT i, CASE WHEN i = 3 THEN repeat('y', 70000) ELSE 'v' END AS s "
            "FROM range(9) t(i) ORDER BY i DESC"
        )
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": mixed})
        assert body["rows"] == [[8, "v"], [7, "v"], [6, "v"], [5, "v"], [4, "v"]]
        assert body["truncated_by"] == "bytes"
        nested = "SELECT list(repeat('z', 1000)) AS l FROM range(2000)"
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": nested})
        assert not is_error and body["truncated_by"] == "bytes" and body["rows"] == []
        assert body["columns"] == [{"name": "l", "type": "VARCHAR[]"}]
        # below both caps: not truncated, no byte fields
        _, body = await call(client, "sql_query", {"session_id": sid, "sql": "FROM range(50)"})
        assert body["truncated"] is False and "truncated_by" not in body


@pytest.mark.slow
async def test_memory_limit_and_spill_cap_come_from_the_profile(
    platform_memory_limits: RunningPlatform,
) -> None:
    big_agg = "SELECT length(string_agg(repeat('x', 1000), '')) FROM range(1000000)"
    spill = (  # 3e6 rows of 128 characters: past the worker's DuckDB memory_limit (256 MiB)
        "SELECT max(m) FROM "
        "(SELECT i, repeat(md5(i::VARCHAR), 4) AS m FROM range(3000000) t(i) ORDER BY m)"
    )
    async with mcp_client(platform_memory_limits) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": big_agg})
        assert is_error and body["error"]["code"] == "QUERY_MEMORY_LIMIT"
        assert "Out of Memory" in body["error"]["message"], body
        # the sort spills to the profile's temp directory until max_temp_directory_size
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": spill})
        assert is_error and body["error"]["code"] == "QUERY_MEMORY_LIMIT", body
        assert "failed to offload" in body["error"]["message"], body
        assert "64.0 MiB" in body["error"]["message"], body
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": "SELECT 1"})
        assert not is_error and body["rows"] == [[1]]


@pytest.mark.slow
async def test_heavy_query_does_not_hold_up_other_sessions(
    platform_limits: RunningPlatform, world: Any
) -> None:
    """While one session's query runs to its timeout, another session's queries finish."""
    table = world.catalog.datasets[0].id
    heavy = "SELECT count(*) FROM range(1000000000) a, range(1000) b WHERE a.range + b.range = 7"
    finished: list[str] = []

    async def heavy_session() -> None:
        async with mcp_client(platform_limits, user="learner") as client:
            sid = await open_session(client)
            is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": heavy})
            assert is_error and body["error"]["code"] == "QUERY_TIMEOUT"
            finished.append("heavy")

    async def light_session() -> None:
        async with mcp_client(platform_limits) as client:
            sid = await open_session(client)
            await anyio.sleep(0.5)  # the heavy query is running by now
            for _ in range(5):
                sql = f"SELECT count(*) FROM {table}"
                is_error, _ = await call(client, "sql_query", {"session_id": sid, "sql": sql})
                assert not is_error
            finished.append("light")

    async with anyio.create_task_group() as tg:
        tg.start_soon(heavy_session)
        tg.start_soon(light_session)
    assert finished == ["light", "heavy"]


def test_warehouse_limits_reach_duckdb(world_dir: Path, tmp_path: Path) -> None:
    limits = WarehouseLimits("600MiB", tmp_path / "spill", "1GiB", workers=2)
    warehouse = DuckDBWarehouse(world_dir / "warehouse.duckdb", 1, limits)
    try:
        settings = warehouse.settings
        assert len(warehouse.worker_pids) == 1  # the second starts when a query waits
    finally:
        warehouse.close()
    assert settings["temp_directory"] == str(tmp_path / "spill")
    assert settings["memory_limit"] == "150.0 MiB"  # half of each worker's 300 MiB share
    assert settings["max_temp_directory_size"] == "1.0 GiB"
    assert settings["python_enable_replacements"] == "false"
    assert settings["enable_external_access"] == "false"
    assert (tmp_path / "spill").is_dir()
