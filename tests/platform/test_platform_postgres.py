"""The PostgreSQL audit/state path against a real throwaway cluster on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from platform_helpers import (
    RunningPlatform,
    call,
    mcp_client,
    open_session,
    raw_tool_call,
    start_platform,
    stop_platform,
)
from tests.postgres_server import postgres_cluster


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    """A throwaway PostgreSQL cluster for this module."""
    with postgres_cluster() as dsn:
        yield dsn


@pytest.fixture(scope="module")
def platform_pg(
    world_dir: Path, auth_file: Path, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """An a3 platform whose audit and state live in PostgreSQL."""
    state = tmp_path_factory.mktemp("state-pg")
    platform = start_platform(
        world_dir, "a3", auth_file, state, extra=["--audit-dsn", postgres_dsn]
    )
    yield platform
    stop_platform(platform)


async def test_audit_and_state_in_postgres(
    platform_pg: RunningPlatform, postgres_dsn: str, world: Any
) -> None:
    import psycopg

    table = world.catalog.datasets[0].id
    async with mcp_client(platform_pg) as client:
        sid = await open_session(client)
        await call(client, "sql_query", {"session_id": sid, "sql": "SELECT 1"})
        await call(client, "search", {"session_id": sid, "query": table})
        await call(client, "sql_query", {"session_id": sid, "sql": f"SELECT * FROM {table}"})
        await call(client, "memory_capture", {"session_id": sid, "content": "pg-backed note"})
    rows = platform_pg.audit(session_id=sid, event_kind="tool_call")
    assert [(r["tool_name"], r["error_code"]) for r in rows] == [
        ("sql_query", "SEARCH_REQUIRED"),
        ("search", None),
        ("sql_query", None),
        ("memory_capture", None),
    ]
    with psycopg.connect(postgres_dsn) as conn:
        n = conn.execute("SELECT COUNT(*) FROM audit_events WHERE session_id = %s", (sid,))
        assert n.fetchone() == (5,)
        notes = conn.execute("SELECT content, status FROM insights").fetchall()
        session = conn.execute(
            "SELECT user_id, searched, delivered FROM platform_sessions WHERE id = %s", (sid,)
        ).fetchone()
    assert notes == [("pg-backed note", "pending")]
    assert session is not None and session[:2] == ("teacher", 1)
    assert table in json.loads(session[2])  # the enrichment block it received
    assert not (platform_pg.state_dir / "audit.sqlite").exists()


def test_unstorable_text_and_foreign_handles_in_postgres(
    platform_pg: RunningPlatform, postgres_dsn: str, world: Any
) -> None:
    """PostgreSQL TEXT holds no NUL and psycopg sends no lone surrogate: such calls are still
    audited (escaped), pages still read, and refused calls stay the caller's."""
    table = world.catalog.datasets[0].id
    result = raw_tool_call(platform_pg, "teacher", "platform_info", {})["result"]
    sid = json.loads(result["content"][0]["text"])["session_id"]
    for args in (
        {"session_id": sid, "pattern": "a\x00b"},
        {"session_id": sid, "pattern": "\ud800"},
        {"session_id": "dps_\x00\ud800", "pattern": "x"},
    ):
        raw_tool_call(platform_pg, "teacher", "list_tables", args)
    raw_tool_call(platform_pg, "learner", "describe_table", {"session_id": sid, "table": table})
    own = platform_pg.audit(session_id=sid)
    assert [(r["tool_name"], r["escaped"]) for r in own] == [
        ("platform_info", False),
        ("list_tables", True),
        ("list_tables", True),
    ]
    assert json.loads(own[1]["parameters"]["escaped_json"]) == {"pattern": "a\x00b"}
    refused = platform_pg.audit(user_id="teacher", tool_name="list_tables")
    assert any(r["presented_session_id"] == "dps_\\u0000\\ud800" for r in refused), refused
    foreign = platform_pg.audit(presented_session_id=sid)
    assert [(r["user_id"], r["error_code"]) for r in foreign] == [("learner", "SESSION_REQUIRED")]
    # state text with a NUL is refused as such, not a database error
    for tool, args in (
        ("memory_capture", {"content": "a\x00b"}),
        ("memory_manage", {"action": "forget", "insight_id": "ins_\x00"}),
    ):
        body = raw_tool_call(platform_pg, "teacher", tool, {"session_id": sid, **args})
        error = json.loads(body["result"]["content"][0]["text"])["error"]
        assert error["code"] == "INVALID_ARGUMENTS" and "NUL" in error["message"], error
    # the insights table's indexes exist on PostgreSQL too
    import psycopg

    with psycopg.connect(postgres_dsn) as conn:
        names = {r[0] for r in conn.execute("SELECT indexname FROM pg_indexes").fetchall()}
    assert {"insights_visibility", "insights_owner", "insights_seq"} <= names


def test_graceful_shutdown_keeps_audit(platform_pg: RunningPlatform, postgres_dsn: str) -> None:
    import psycopg

    before = platform_pg.admin_get("/audit/events", limit=1).json()["total"]
    assert before > 0
    assert stop_platform(platform_pg) == 0
    with psycopg.connect(postgres_dsn) as conn:
        row = conn.execute("SELECT COUNT(*) FROM audit_events").fetchone()
    assert row == (before,)
