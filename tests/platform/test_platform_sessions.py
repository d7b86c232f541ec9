"""Sessions are stored in the state database: handles, gate and enrichment survive a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from platform_helpers import call, mcp_client, open_session, start_platform, stop_platform

from dabench.platform import sessions as sessions_module
from dabench.platform.sessions import SessionRegistry
from dabench.platform.storage import Database


async def test_session_survives_a_restart(
    world_dir: Path, auth_file: Path, world: Any, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    ds = world.catalog.datasets[0]
    sql = f"SELECT COUNT(*) AS n FROM {ds.id}"
    platform = start_platform(world_dir, "a2", auth_file, state)
    try:
        async with mcp_client(platform) as client:
            searched = await open_session(client)
            gated = await open_session(client)
            is_error, body = await call(client, "search", {"session_id": searched, "query": ds.id})
            assert not is_error and body["results"]
            is_error, described = await call(
                client, "describe_table", {"session_id": searched, "table": ds.id}
            )
            assert not is_error and "abbreviated" not in described["semantic_context"][0]
    finally:
        assert stop_platform(platform) == 0

    platform = start_platform(world_dir, "a2", auth_file, state)
    try:
        async with mcp_client(platform) as client:
            # the gate stays open for the session that searched before the restart ...
            is_error, body = await call(client, "sql_query", {"session_id": searched, "sql": sql})
            assert not is_error, body
            assert body["rows"][0][0] == world.manifest.table_rows[ds.id]
            # ... and the block it already received is abbreviated, not repeated
            assert body["semantic_context"][0]["abbreviated"] is True
            # the session that never searched is still gated
            is_error, body = await call(client, "sql_query", {"session_id": gated, "sql": sql})
            assert is_error and body["error"]["code"] == "SEARCH_REQUIRED"
        async with mcp_client(platform, user="learner") as client:
            # a handle stays its owner's across restarts
            is_error, body = await call(client, "sql_query", {"session_id": searched, "sql": sql})
            assert is_error and body["error"]["code"] == "SESSION_REQUIRED"
        rows = platform.audit(session_id=searched, tool_name="sql_query")
        assert [(r["user_id"], r["success"]) for r in rows] == [("teacher", True)]
        # the learner's refused call is the learner's, never counted in the teacher's session
        foreign = platform.audit(presented_session_id=searched, tool_name="sql_query")
        assert [(r["user_id"], r["session_id"], r["error_code"]) for r in foreign] == [
            ("learner", None, "SESSION_REQUIRED")
        ]
        assert 0 < rows[0]["enrichment_tokens_delivered"] < rows[0]["enrichment_tokens_full"]
    finally:
        assert stop_platform(platform) == 0


def test_evicted_sessions_are_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions_module, "CACHED_SESSIONS", 2)
    db = Database(sqlite_path=tmp_path / "state.sqlite")
    registry = SessionRegistry(db)
    first = registry.open("teacher", "analyst")
    assert first.remember("sales.orders", "d1") is False
    first.mark_searched()
    registry.save(first)
    for _ in range(3):  # pushes ``first`` out of the in-memory cache
        registry.open("learner", "analyst")
    again = registry.resolve(first.id, "teacher")
    assert again is not None and again is not first
    assert again.searched and again.delivered == {"sales.orders": "d1"}
    assert again.remember("sales.orders", "d1") is True  # the same block: abbreviate
    assert again.remember("sales.orders", "d2") is False  # changed context: deliver again
    assert registry.resolve(first.id, "learner") is None
    assert registry.resolve("dps_unknown", "teacher") is None
    assert registry.count() == 4
    db.close()


def test_save_writes_only_changes(tmp_path: Path) -> None:
    db = Database(sqlite_path=tmp_path / "state.sqlite")
    registry = SessionRegistry(db)
    session = registry.open("teacher", "analyst")
    assert not session.dirty
    session.mark_searched()
    assert session.dirty
    registry.save(session)
    assert not session.dirty
    session.mark_searched()  # already searched: nothing to write
    assert not session.dirty
    row = db.query("SELECT searched, delivered FROM platform_sessions WHERE id = ?", [session.id])
    assert row == [{"searched": 1, "delivered": "{}"}]
    db.close()
