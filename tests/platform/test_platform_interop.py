"""Regressions from third-party MCP clients: what they send and what they are told."""

from __future__ import annotations

import threading
import typing
from typing import Any

import anyio
import pytest
from platform_helpers import RunningPlatform, call, mcp_client, open_session

from dabench.platform.errors import ToolError
from dabench.platform.sqlguard import SqlScope, check_sql
from dabench.platform.tools import TOOL_ARGS, WholeInt
from dabench.platform.warehouse import DuckDBWarehouse
from dabench.platform.warehouse.base import QueryCancel


def test_every_integer_argument_is_whole_int() -> None:
    """One shared type for every integer argument of every tool (no plain ``int``)."""
    checked = 0
    for tool, model in TOOL_ARGS.items():
        for name in model.model_fields:
            hint = typing.get_type_hints(model, include_extras=True)[name]
            args = typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)
            assert int not in args, f"{tool}.{name} is a plain int: use WholeInt"
            checked += sum(a == WholeInt for a in args)
    assert checked >= 2  # sql_query.limit, search.limit


async def test_whole_float_is_an_integer(platform_a3: RunningPlatform) -> None:
    """Regression: ``{"limit": 1.0}`` (what Python's json and many LLM frameworks send for
    a JSON Schema integer) was INVALID_ARGUMENTS; it is the integer 1. Booleans, strings and
    fractional floats are still refused."""
    async with mcp_client(platform_a3) as client:
        sid = await open_session(client)
        await call(client, "search", {"session_id": sid, "query": "orders", "limit": 2.0})
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT 1 AS x", "limit": 1.0}
        )
        assert not is_error and body["limit"] == 1 and isinstance(body["limit"], int), body
        wrong: list[tuple[str, dict[str, Any]]] = [
            ("sql_query", {"sql": "SELECT 1", "limit": 1.5}),
            ("sql_query", {"sql": "SELECT 1", "limit": True}),
            ("sql_query", {"sql": "SELECT 1", "limit": "1"}),
            ("search", {"query": "orders", "limit": 2.5}),
        ]
        for tool, args in wrong:
            is_error, body = await call(client, tool, {"session_id": sid, **args})
            assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS", (args, body)
            assert body["error"]["message"].startswith(f"{tool}: limit:"), body


LONG_SQL = "SELECT count(*) AS n FROM range(40000000000) t(i) WHERE i % 7 = 3"
"""A query that runs far past any profile's time limit."""


async def test_cancelled_query_is_stopped_and_audited(platform_a0: RunningPlatform) -> None:
    """Regression: a cancelled call ran shielded to its QUERY_TIMEOUT, holding the session's
    one query slot, so the session's next call waited. Cancelled now, the query stops, the
    slot is free for the next call, and the row says CANCELLED (not QUERY_TIMEOUT)."""
    async with mcp_client(platform_a0) as client:
        sid = await open_session(client)
        started = anyio.Event()

        async def long_query() -> None:
            started.set()
            await client.call_tool("sql_query", {"session_id": sid, "sql": LONG_SQL})

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_query)
            await started.wait()
            await anyio.sleep(0.5)  # let it reach the server (only orders the steps)
            tg.cancel_scope.cancel()
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT 7 AS n"}
        )
        assert not is_error and body["rows"] == [[7]], body
    rows = platform_a0.audit(session_id=sid, tool_name="sql_query")
    rows.sort(key=lambda r: r["id"])
    assert [(r["success"], r["error_code"]) for r in rows] == [(False, "CANCELLED"), (True, None)]
    assert rows[0]["parameters"]["sql"] == LONG_SQL


def test_cancel_stops_a_query_running_on_a_thread(one_worker: DuckDBWarehouse) -> None:
    """The thread path (low-priority or large queries): cancelling from another thread
    kills the query's worker at once (CANCELLED, not QUERY_TIMEOUT); it is replaced."""
    cancel = QueryCancel()
    assert cancel.start()
    outcome: list[BaseException] = []

    def run() -> None:
        try:
            one_worker.guarded_run(LONG_SQL, 20000, 10, 600.0, 65536, cancel=cancel)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    assert cancel.attached.wait(60)
    assert cancel.cancel()
    thread.join()
    assert len(outcome) == 1 and isinstance(outcome[0], ToolError), outcome
    assert outcome[0].code == "CANCELLED"
    assert one_worker.workers_replaced == 1
    _, result = one_worker.guarded_run("SELECT 2 AS n", 20000, 10, 30.0, 65536)
    assert result.rows == [[2]]
    late = QueryCancel()
    late.cancel()  # cancelled before it ran: refused, nothing killed
    with pytest.raises(ToolError) as err:
        one_worker.guarded_run("SELECT 3", 20000, 10, 30.0, 65536, cancel=late)
    assert err.value.code == "CANCELLED" and one_worker.workers_replaced == 1


@pytest.mark.parametrize(
    ("sql", "near"),
    [
        ("SELEC nonsense", "SELEC"),
        ("SELEC * FROM core.orders", "SELEC"),
        ("SELECT * FROM core.orders WHERE", "WHERE"),
        ("SELECT * FORM core.orders", "core"),
        ("selct 1", "selct"),
    ],
)
def test_sql_typos_are_parse_errors(sql: str, near: str) -> None:
    """Regression: ``SELEC nonsense`` was SQL_NOT_READ_ONLY ("got ALIAS") and other typos
    leaked sqlglot internals ("missing for <class 'sqlglot.expressions.core.Mul'>"). A
    statement that does not parse is SQL_PARSE_ERROR with DuckDB's own message."""
    scope = SqlScope(catalog="w", tables=frozenset({"core.orders"}), dialect="duckdb")
    with pytest.raises(ToolError) as err:
        check_sql(sql, 1000, scope)
    assert err.value.code == "SQL_PARSE_ERROR"
    assert err.value.body.message == (
        f'the SQL could not be parsed: syntax error at or near "{near}"'
    )
    assert "sqlglot" not in err.value.body.message


async def test_sql_typo_over_mcp(platform_a0: RunningPlatform) -> None:
    async with mcp_client(platform_a0) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": "SELEC x"})
    assert is_error and body["error"]["code"] == "SQL_PARSE_ERROR", body
    assert '"SELEC"' in body["error"]["message"], body
