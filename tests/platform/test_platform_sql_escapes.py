"""The escape corpus: every attempt is refused with its specific code, by the guard and by
a real server, and the warehouse file is untouched."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from platform_helpers import RunningPlatform, call, guard_mismatches, mcp_client, open_session

from dabench.platform.sqlguard import SqlScope
from dabench.platform.warehouse import DuckDBWarehouse

DATA = Path(__file__).parent / "data"
CORPUS = [json.loads(line) for line in (DATA / "sql_escape_corpus.jsonl").read_text().splitlines()]
GUARD_CODES = {
    "SQL_NOT_READ_ONLY",
    "SQL_FUNCTION_NOT_ALLOWED",
    "SQL_TABLE_FUNCTION_NOT_ALLOWED",
    "SQL_TABLE_NOT_ALLOWED",
    "SQL_FILE_ACCESS",
    "SQL_MULTIPLE_STATEMENTS",
    "SQL_PARSE_ERROR",
}


def _scope(world: Any) -> SqlScope:
    return SqlScope("warehouse", frozenset(ds.id for ds in world.catalog.datasets))


def test_corpus_is_large_current_and_specific() -> None:
    spec = importlib.util.spec_from_file_location("make_corpus", DATA / "make_escape_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (DATA / "sql_escape_corpus.jsonl").read_text() == module.render()
    assert len(CORPUS) >= 300
    assert {row["code"] for row in CORPUS} == GUARD_CODES
    kinds = {row["kind"].split(":")[0] for row in CORPUS}
    assert {"json", "catalog", "settings", "pragma", "macro", "file", "secret"} <= kinds


def test_guard_refuses_every_attempt(world: Any) -> None:
    scope = _scope(world)
    assert guard_mismatches(CORPUS, scope) == []


@pytest.mark.slow
async def test_server_refuses_every_attempt(
    platform_tight: RunningPlatform, world_dir: Path
) -> None:
    warehouse = world_dir / "warehouse.duckdb"
    before = hashlib.sha256(warehouse.read_bytes()).hexdigest()
    wrong = []
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        for row in CORPUS:
            is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": row["sql"]})
            code = body["error"]["code"] if is_error else "ACCEPTED"
            if code != row["code"]:
                wrong.append((row["sql"], code))
    assert wrong == []
    codes = {r["error_code"] for r in platform_tight.audit(session_id=sid, event_kind="tool_call")}
    assert codes <= GUARD_CODES and "INTERNAL_ERROR" not in codes
    assert hashlib.sha256(warehouse.read_bytes()).hexdigest() == before


async def test_legitimate_analytics_and_restricted_information_schema(
    platform_tight: RunningPlatform, world: Any, world_dir: Path
) -> None:
    table = world.catalog.datasets[0].id
    warehouse = DuckDBWarehouse(world_dir / "warehouse.duckdb")
    try:
        schemas = sorted(warehouse.scope().schemas)
    finally:
        warehouse.close()
    assert "main" not in schemas and "pg_catalog" not in schemas
    queries = {
        f"SELECT count(*) AS n, sum(count(*)) OVER () FROM {table}": None,
        "SELECT list_sum([1, 2]), string_agg(x, ',') FROM unnest(['a', 'b']) t(x)": [[3, "a,b"]],
        "WITH RECURSIVE r AS (SELECT 1 i UNION ALL SELECT i + 1 FROM r WHERE i < 3) "
        "SELECT max(i) FROM r": [[3]],
        "SELECT current_date IS NOT NULL, date_trunc('month', DATE '2024-05-17')": [
            [True, "2024-05-01T00:00:00"]
        ],
        "SELECT string_agg(DISTINCT table_schema, ',' ORDER BY table_schema) "
        "FROM information_schema.tables": [[",".join(schemas)]],
        "SELECT count(*) FROM information_schema.schemata s": [[len(schemas)]],
    }
    async with mcp_client(platform_tight) as client:
        sid = await open_session(client)
        for sql, expected in queries.items():
            is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
            assert not is_error, (sql, body)
            if expected is not None:
                assert body["rows"] == expected, sql
