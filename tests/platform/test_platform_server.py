"""A real platform process per profile, driven by the official MCP client over HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from platform_helpers import ADMIN_KEY, KEYS, RunningPlatform, call, mcp_client, open_session

A0 = ["platform_info", "sql_query", "describe_table", "list_tables"]
A2 = [*A0, "search", "fetch"]
A3 = [*A2, "memory_capture", "memory_manage", "apply_knowledge"]


def _first_dataset(world: Any) -> str:
    return str(world.catalog.datasets[0].id)


@pytest.mark.parametrize(
    ("fixture", "analyst", "reviewer"),
    [
        ("platform_a0", A0, A0),
        ("platform_a1", A0, A0),
        ("platform_a2", A2, A2),
        ("platform_a3", [t for t in A3 if t != "apply_knowledge"], A3),
    ],
)
async def test_profiles_expose_exactly_their_tools(
    request: pytest.FixtureRequest, fixture: str, analyst: list[str], reviewer: list[str]
) -> None:
    platform: RunningPlatform = request.getfixturevalue(fixture)
    for user, expected in (("teacher", analyst), ("reviewer", reviewer)):
        async with mcp_client(platform, user) as client:
            listed = await client.list_tools()
            assert sorted(t.name for t in listed.tools) == sorted(expected)
            for tool in listed.tools:
                required = tool.input_schema.get("required", [])
                assert ("session_id" in required) == (tool.name != "platform_info")


async def test_listed_tools_state_what_the_profile_enforces(
    platform_a0: RunningPlatform, platform_a2: RunningPlatform
) -> None:
    """Annotations, the SQL length and row limits the profile enforces, the search kinds it
    offers (no ``memory`` on a2), and the search-first gate in the descriptions."""
    async with mcp_client(platform_a2, "teacher") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    sql = tools["sql_query"]
    assert sql.annotations is not None and sql.annotations.read_only_hint is True
    assert sql.annotations.open_world_hint is False
    assert sql.input_schema["properties"]["sql"]["maxLength"] == 20000  # the enforced limit
    assert "SEARCH_REQUIRED" in (sql.description or "")
    kinds = tools["search"].input_schema["properties"]["kinds"]["anyOf"][0]["items"]["enum"]
    assert "memory" not in kinds and "knowledge_page" in kinds
    assert "memories" not in (tools["search"].description or "")
    async with mcp_client(platform_a0, "teacher") as client:
        plain = {t.name: t for t in (await client.list_tools()).tools}
    assert "SEARCH_REQUIRED" not in (plain["sql_query"].description or "")


async def test_health_reports_profile_and_world(platform_a2: RunningPlatform, world: Any) -> None:
    body = httpx.get(platform_a2.base_url + "/healthz").json()
    assert body["status"] == "ok"
    assert body["profile"] == "a2"
    assert body["world_hash"] == world.manifest.world_hash
    assert len(body["profile_hash"]) == 64
    assert body["sql_dialect"] == "duckdb"


async def test_session_required_and_audited(platform_a0: RunningPlatform) -> None:
    async with mcp_client(platform_a0) as client:
        is_error, body = await call(client, "list_tables", {})
        assert is_error and body["error"]["code"] == "SESSION_REQUIRED"
        is_error, body = await call(client, "list_tables", {"session_id": "dps_forged"})
        assert is_error and body["error"]["code"] == "SESSION_REQUIRED"
    rows = platform_a0.audit(presented_session_id="dps_forged")
    assert [(r["tool_name"], r["success"], r["error_code"], r["session_id"]) for r in rows] == [
        ("list_tables", False, "SESSION_REQUIRED", None)
    ]
    assert platform_a0.audit(session_id="dps_forged") == []


async def test_session_of_another_identity_is_refused(platform_a0: RunningPlatform) -> None:
    async with mcp_client(platform_a0, "teacher") as teacher:
        sid = await open_session(teacher)
    async with mcp_client(platform_a0, "learner") as learner:
        is_error, body = await call(learner, "list_tables", {"session_id": sid})
    assert is_error and body["error"]["code"] == "SESSION_REQUIRED"


async def test_session_header_is_accepted(platform_a0: RunningPlatform) -> None:
    async with mcp_client(platform_a0) as client:
        sid = await open_session(client)
    async with mcp_client(platform_a0, headers={"X-DPS-Session": sid}) as client:
        is_error, body = await call(client, "list_tables", {})
    assert not is_error, body
    assert body["tables"]
    calls = platform_a0.audit(session_id=sid, event_kind="tool_call")
    assert [r["tool_name"] for r in calls] == ["list_tables"]


async def test_invalid_arguments(platform_a0: RunningPlatform) -> None:
    async with mcp_client(platform_a0) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": 5})
        assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS"
        assert "sql" in body["error"]["message"]
        is_error, body = await call(client, "list_tables", {"session_id": sid, "bogus": 1})
        assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS"
        is_error, body = await call(client, "describe_table", {"session_id": sid, "table": "x.y"})
        assert is_error and body["error"]["code"] == "TABLE_NOT_FOUND"
        is_error, body = await call(client, "search", {"session_id": sid, "query": "x"})
        assert is_error and body["error"]["code"] == "UNKNOWN_TOOL"


async def test_arguments_are_not_coerced(platform_a3: RunningPlatform) -> None:
    """Regression: ``limit`` (an integer) took ``true`` as 1 and ``"5"`` as 5. Arguments are
    strict now: a value of the wrong JSON type is ``INVALID_ARGUMENTS`` naming the field."""
    wrong = [
        ("sql_query", {"sql": "SELECT 1", "limit": True}, "limit"),
        ("sql_query", {"sql": "SELECT 1", "limit": "5"}, "limit"),
        ("sql_query", {"sql": "SELECT 1", "limit": " 7 "}, "limit"),
        ("search", {"query": "orders", "limit": "3"}, "limit"),
        ("list_tables", {"pattern": 5}, "pattern"),
        ("memory_capture", {"content": "x", "confidence": "0.5"}, "confidence"),
        ("memory_capture", {"content": "x", "related_ids": "sales.orders"}, "related_ids"),
    ]
    async with mcp_client(platform_a3) as client:
        sid = await open_session(client)
        for tool, args, field in wrong:
            is_error, body = await call(client, tool, {"session_id": sid, **args})
            assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS", (tool, args, body)
            assert body["error"]["message"].startswith(f"{tool}: {field}:"), body
        await call(client, "search", {"session_id": sid, "query": "orders"})
        is_error, body = await call(
            client, "sql_query", {"session_id": sid, "sql": "SELECT 1", "limit": 3}
        )
        assert not is_error and body["limit"] == 3, body


async def test_tool_not_allowed_for_persona(platform_a3: RunningPlatform) -> None:
    async with mcp_client(platform_a3, "learner") as client:
        sid = await open_session(client)
        is_error, body = await call(
            client, "apply_knowledge", {"session_id": sid, "action": "list"}
        )
    assert is_error and body["error"]["code"] == "TOOL_NOT_ALLOWED"
    assert platform_a3.audit(session_id=sid)[-1]["error_code"] == "TOOL_NOT_ALLOWED"


async def test_search_first_gate(platform_a2: RunningPlatform, world: Any) -> None:
    table = _first_dataset(world)
    sql = f"SELECT COUNT(*) AS n FROM {table}"
    async with mcp_client(platform_a2) as client:
        sid = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
        assert is_error
        assert body["error"]["code"] == "SEARCH_REQUIRED"
        assert body["error"]["message"] and body["error"]["hint"]
        is_error, body = await call(client, "search", {"session_id": sid, "query": table})
        assert not is_error and body["results"]
        hit = body["results"][0]
        is_error, fetched = await call(client, "fetch", {"session_id": sid, "id": hit["id"]})
        assert not is_error and fetched["content"]
        is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
        assert not is_error, body
        assert body["rows"][0][0] == world.manifest.table_rows[table]
        # the gate is per session: a new session is gated again
        sid2 = await open_session(client)
        is_error, body = await call(client, "sql_query", {"session_id": sid2, "sql": sql})
        assert is_error and body["error"]["code"] == "SEARCH_REQUIRED"


async def test_enrichment_absent_in_a0(platform_a0: RunningPlatform, world: Any) -> None:
    table = _first_dataset(world)
    async with mcp_client(platform_a0) as client:
        sid = await open_session(client)
        _, described = await call(client, "describe_table", {"session_id": sid, "table": table})
        _, queried = await call(
            client, "sql_query", {"session_id": sid, "sql": f"SELECT * FROM {table} LIMIT 1"}
        )
        _, listed = await call(client, "list_tables", {"session_id": sid})
    for body in (described, queried, listed):
        assert "semantic_context" not in body
    assert "description" not in str(described)
    rows = platform_a0.audit(session_id=sid, event_kind="tool_call")
    assert [r["enrichment_applied"] for r in rows] == [False, False, False]
    assert all(r["enrichment_tokens_full"] == 0 for r in rows)


async def test_enrichment_in_a1_full_then_abbreviated(
    platform_a1: RunningPlatform, world: Any
) -> None:
    ds = world.catalog.datasets[0]
    sql = f"SELECT * FROM {ds.id} LIMIT 2"
    async with mcp_client(platform_a1) as client:
        sid = await open_session(client)
        _, described = await call(client, "describe_table", {"session_id": sid, "table": ds.id})
        _, queried = await call(client, "sql_query", {"session_id": sid, "sql": sql})
        _, listed = await call(client, "list_tables", {"session_id": sid})
        other = await open_session(client)
        _, fresh = await call(client, "sql_query", {"session_id": other, "sql": sql})
    block = described["semantic_context"][0]
    assert block["dataset"] == ds.id
    assert block["description"] == ds.description
    assert block["owner"] == ds.owner
    assert block["freshness"]["last_loaded"] == ds.last_loaded.isoformat()
    assert {c["name"] for c in block["columns"]} == {c.name for c in ds.columns}
    assert queried["semantic_context"][0]["abbreviated"] is True
    assert any(s["dataset"] == ds.id for s in listed["semantic_context"])
    assert "abbreviated" not in fresh["semantic_context"][0]  # a new session gets it in full
    rows = platform_a1.audit(session_id=sid, event_kind="tool_call")
    first, second = rows[0], rows[1]
    assert first["enrichment_applied"] and second["enrichment_applied"]
    assert first["enrichment_tokens_full"] == first["enrichment_tokens_delivered"] > 0
    assert second["enrichment_tokens_full"] == first["enrichment_tokens_full"]
    assert 0 < second["enrichment_tokens_delivered"] < second["enrichment_tokens_full"]


async def test_deprecated_dataset_names_replacement(
    platform_a1: RunningPlatform, world: Any
) -> None:
    deprecated = [d for d in world.catalog.datasets if d.deprecated]
    if not deprecated:
        pytest.skip("world 930 has no deprecated dataset")
    ds = deprecated[0]
    async with mcp_client(platform_a1) as client:
        sid = await open_session(client)
        _, body = await call(client, "describe_table", {"session_id": sid, "table": ds.id})
    block = body["semantic_context"][0]
    assert block["deprecated"] is True and block["replaced_by"] == ds.replaced_by


async def test_n_calls_give_n_audit_rows(platform_a1: RunningPlatform, world: Any) -> None:
    table = _first_dataset(world)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_tables", {}),
        ("describe_table", {"table": table}),
        ("sql_query", {"sql": "SELECT 1"}),
        ("sql_query", {"sql": "DROP TABLE x"}),
        ("describe_table", {"table": "nope.nope"}),
        ("sql_query", {"sql": f"SELECT COUNT(*) FROM {table}"}),
    ]
    async with mcp_client(platform_a1) as client:
        sid = await open_session(client)
        for tool, args in calls:
            await call(client, tool, {"session_id": sid, **args})
    rows = platform_a1.audit(session_id=sid)
    tool_rows = [r for r in rows if r["event_kind"] == "tool_call"]
    assert len(tool_rows) == len(calls)
    assert [r["tool_name"] for r in tool_rows] == [c[0] for c in calls]
    assert [r["success"] for r in tool_rows] == [True, True, True, False, False, True]
    assert [r["event_kind"] for r in rows].count("session_start") == 1
    for row in tool_rows:
        assert row["user_id"] == "teacher" and row["persona"] == "analyst"
        assert row["request_chars"] > 0 and row["response_chars"] > 0
        assert row["duration_ms"] >= 0
    assert tool_rows[3]["error_code"] == "SQL_NOT_READ_ONLY"
    assert tool_rows[3]["parameters"] == {"sql": "DROP TABLE x"}


async def test_audit_filters_and_paging(platform_a1: RunningPlatform) -> None:
    async with mcp_client(platform_a1, "learner") as client:
        sid = await open_session(client)
        for _ in range(5):
            await call(client, "sql_query", {"session_id": sid, "sql": "SELECT 1"})
        await call(client, "sql_query", {"session_id": sid, "sql": "SELECT 1; SELECT 2"})
    assert len(platform_a1.audit(session_id=sid, success="false")) == 1
    assert len(platform_a1.audit(session_id=sid, tool_name="sql_query")) == 6
    assert all(r["user_id"] == "learner" for r in platform_a1.audit(user_id="learner"))
    page = platform_a1.admin_get("/audit/events", session_id=sid, limit=2, offset=2).json()
    assert page["total"] == 7 and len(page["events"]) == 2
    everything = platform_a1.audit(session_id=sid)
    since = everything[3]["timestamp"]
    assert len(platform_a1.audit(session_id=sid, since=since)) == 4
    assert len(platform_a1.audit(session_id=sid, until=since)) == 3
    bad = platform_a1.admin_get("/audit/events", success="perhaps")
    assert bad.status_code == 400 and "success" in bad.text


def test_admin_auth(platform_a0: RunningPlatform) -> None:
    assert platform_a0.admin_get("/audit/events", key=None).status_code == 401
    assert platform_a0.admin_get("/audit/events", key="not-a-key-at-all").status_code == 401
    assert platform_a0.admin_get("/audit/events", key=KEYS["reviewer"]).status_code == 403
    assert platform_a0.admin_get("/audit/events", key=ADMIN_KEY).status_code == 200
    reset = httpx.post(platform_a0.base_url + "/api/v1/admin/state/reset")
    assert reset.status_code == 401


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("/audit/events", {"sesion_id": "dps_x"}, "sesion_id: unknown parameter"),
        ("/audit/events", {"until": ""}, "until: Value error, expected an ISO 8601"),
        ("/audit/events", {"limit": "0"}, "limit: Input should be greater than or equal to 1"),
        ("/knowledge/changesets", {"active": "maybe"}, "active: Input should be a valid boolean"),
        ("/knowledge/insights", {"status": "done"}, "status: Input should be 'pending'"),
    ],
)
def test_admin_query_strings_are_validated(
    platform_a0: RunningPlatform, path: str, params: dict[str, str], named: str
) -> None:
    resp = platform_a0.admin_get(path, **params)
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "INVALID_QUERY" and error["message"].startswith(named), error


def test_mcp_requires_an_identity_key(platform_a0: RunningPlatform) -> None:
    resp = httpx.post(platform_a0.base_url + "/mcp", json={}, headers={"Authorization": "Bearer x"})
    assert resp.status_code == 401
    assert resp.json()["error"]["code"] == "UNAUTHENTICATED"
    admin = httpx.post(
        platform_a0.base_url + "/mcp", json={}, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    )
    assert admin.status_code == 401


def test_openapi_served(platform_a0: RunningPlatform) -> None:
    doc = httpx.get(platform_a0.base_url + "/api/v1/admin/openapi.json").json()
    assert doc["openapi"].startswith("3.")
    assert "/api/v1/admin/audit/events" in doc["paths"]
    fields = doc["components"]["schemas"]["AuditEvent"]["properties"]
    assert set(fields) == {
        "id", "timestamp", "duration_ms", "session_id", "user_id", "persona", "tool_name",
        "parameters", "success", "error_code", "request_chars", "response_chars",
        "enrichment_applied", "enrichment_tokens_full", "enrichment_tokens_delivered",
        "event_kind", "presented_session_id", "escaped", "episode_id", "queue_ms",
    }  # fmt: skip


async def test_concurrent_sessions_audit_exactly(platform_a1: RunningPlatform, world: Any) -> None:
    table = _first_dataset(world)

    async def episode(user: str, calls: int) -> str:
        async with mcp_client(platform_a1, user) as client:
            sid = await open_session(client)
            for i in range(calls):
                sql = f"SELECT COUNT(*) + {i} FROM {table}"
                is_error, body = await call(client, "sql_query", {"session_id": sid, "sql": sql})
                assert not is_error, body
                assert body["rows"][0][0] == world.manifest.table_rows[table] + i
            return sid

    users = ["teacher", "learner", "reviewer"] * 4
    sessions = await asyncio.gather(*(episode(u, 2 + n % 3) for n, u in enumerate(users)))
    assert len(set(sessions)) == len(users)
    for n, (user, sid) in enumerate(zip(users, sessions, strict=True)):
        rows = platform_a1.audit(session_id=sid, event_kind="tool_call")
        assert len(rows) == 2 + n % 3
        assert {r["user_id"] for r in rows} == {user}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
        ("GET", "/api/v1/admin/openapi.json"),
        ("GET", "/api/v1/admin/knowledge/pages"),
        ("GET", "/api/v1/admin/knowledge/pages/anything"),
        ("GET", "/api/v1/admin/catalog/datasets/anything"),
        ("GET", "/api/v1/admin/catalog/columns/a.b.c"),
        ("POST", "/api/v1/admin/state/reset"),
    ],
)
def test_unknown_parameters_are_refused_on_every_route(
    platform_a0: RunningPlatform, method: str, path: str
) -> None:
    before = platform_a0.admin_get("/audit/events", limit=1).json()["total"]
    resp = httpx.request(
        method,
        platform_a0.base_url + path,
        params={"foo": "1"},
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"] == {"code": "INVALID_QUERY", "message": "foo: unknown parameter"}
    # a refused reset did not reset (it would have written an admin audit row)
    assert platform_a0.admin_get("/audit/events", limit=1).json()["total"] == before


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"since": "9999-12-31T23:59:59-23:59"}, "since: Value error, outside the representable"),
        ({"until": "0001-01-01T00:00:00+01:00"}, "until: Value error, outside the representable"),
        ({"since": "10000-01-01T00:00:00Z"}, "since: Value error, expected an ISO 8601"),
        ({"session_id": "dps_\x00"}, "session_id: String should match pattern"),
        ({"user_id": "x" * 1001}, "user_id: String should have at most 1000 characters"),
        ({"offset": str(2**62 + 1)}, "offset: Input should be less than or equal to"),
        ({"limit": "1", "offset": "0", "limit ": "2"}, "limit : unknown parameter"),
    ],
)
def test_out_of_range_parameters_are_refused(
    platform_a0: RunningPlatform, params: dict[str, str], named: str
) -> None:
    resp = platform_a0.admin_get("/audit/events", **params)
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["message"].startswith(named), resp.text


def test_repeated_parameter_is_refused(platform_a0: RunningPlatform) -> None:
    resp = httpx.get(
        platform_a0.base_url + "/api/v1/admin/audit/events?limit=1&limit=2",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert resp.status_code == 400
    assert resp.json()["error"]["message"] == "limit: given more than once"


def test_not_found_and_method_not_allowed_are_json(platform_a0: RunningPlatform) -> None:
    missing = httpx.get(platform_a0.base_url + "/api/v1/admin/nothing-here")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/json"
    assert missing.json()["error"]["code"] == "NOT_FOUND"
    wrong = httpx.delete(
        platform_a0.base_url + "/api/v1/admin/state/reset",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert wrong.status_code == 405
    assert wrong.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
    assert wrong.headers["allow"] == "POST"
