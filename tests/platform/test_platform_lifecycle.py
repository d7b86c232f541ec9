"""Memory, supersede, promotion and rollback on a3, verified through the admin API."""

from __future__ import annotations

from typing import Any

import httpx
from platform_helpers import ADMIN_KEY, RunningPlatform, call, mcp_client, open_session


def _reset(platform: RunningPlatform) -> None:
    resp = httpx.post(
        platform.base_url + "/api/v1/admin/state/reset",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert resp.status_code == 200, resp.text


def _column(world: Any) -> tuple[str, str]:
    ds = world.catalog.datasets[0]
    return ds.id, f"{ds.id}.{ds.columns[0].name}"


async def test_memory_isolation_between_identities(
    platform_a3: RunningPlatform, world: Any
) -> None:
    _reset(platform_a3)
    dataset, _ = _column(world)
    fact = "zebra-umbrella quarterly adjustments happen on the third Tuesday"
    async with mcp_client(platform_a3, "teacher") as teacher:
        sid = await open_session(teacher)
        is_error, body = await call(
            teacher,
            "memory_capture",
            {"session_id": sid, "content": fact, "related_ids": [dataset], "type": "caveat"},
        )
        assert not is_error, body
        insight_id = body["insight"]["id"]
        _, found = await call(teacher, "search", {"session_id": sid, "query": "zebra umbrella"})
        assert f"memory:{insight_id}" in [r["id"] for r in found["results"]]
        _, described = await call(teacher, "describe_table", {"session_id": sid, "table": dataset})
        assert [m["id"] for m in described["semantic_context"][0]["memories"]] == [insight_id]
    async with mcp_client(platform_a3, "learner") as learner:
        sid = await open_session(learner)
        _, found = await call(learner, "search", {"session_id": sid, "query": "zebra umbrella"})
        assert all(r["kind"] != "memory" for r in found["results"])
        is_error, body = await call(
            learner, "fetch", {"session_id": sid, "id": f"memory:{insight_id}"}
        )
        assert is_error and body["error"]["code"] == "NOT_FOUND"
        _, described = await call(learner, "describe_table", {"session_id": sid, "table": dataset})
        assert described["semantic_context"][0]["memories"] == []
        _, listed = await call(learner, "memory_manage", {"session_id": sid, "action": "list"})
        assert listed["insights"] == []
        is_error, body = await call(
            learner,
            "memory_manage",
            {"session_id": sid, "action": "forget", "insight_id": insight_id},
        )
        assert is_error and body["error"]["code"] == "INSIGHT_NOT_FOUND"


async def test_near_duplicate_supersedes(platform_a3: RunningPlatform, world: Any) -> None:
    _reset(platform_a3)
    _, column = _column(world)
    first = "the amount column is stored in USD cents, divide by 100 for dollars"
    correction = "the amount column is stored in EUR cents, divide by 100 for euros"
    async with mcp_client(platform_a3, "teacher") as teacher:
        sid = await open_session(teacher)
        _, a = await call(
            teacher,
            "memory_capture",
            {"session_id": sid, "content": first, "related_ids": [column]},
        )
        _, b = await call(
            teacher,
            "memory_capture",
            {
                "session_id": sid,
                "content": correction,
                "related_ids": [column],
                "type": "correction",
            },
        )
        _, c = await call(
            teacher,
            "memory_capture",
            {"session_id": sid, "content": "completely unrelated note about the weather in Oslo"},
        )
    assert b["superseded"] == [a["insight"]["id"]]
    assert c["superseded"] == []
    insights = platform_a3.admin_get("/knowledge/insights", captured_by="teacher").json()
    by_id = {i["id"]: i for i in insights["insights"]}
    assert insights["total"] == 3
    assert by_id[a["insight"]["id"]]["status"] == "superseded"
    assert by_id[a["insight"]["id"]]["superseded_by"] == b["insight"]["id"]
    assert by_id[b["insight"]["id"]]["status"] == "pending"
    assert by_id[b["insight"]["id"]]["supersedes"] == a["insight"]["id"]
    pending = platform_a3.admin_get("/knowledge/insights", status="pending").json()
    assert {i["id"] for i in pending["insights"]} == {b["insight"]["id"], c["insight"]["id"]}


async def test_promotion_and_rollback(platform_a3: RunningPlatform, world: Any) -> None:
    _reset(platform_a3)
    dataset, column = _column(world)
    fact = "values before 2021 were backfilled from the legacy ledger and are approximate"
    async with mcp_client(platform_a3, "teacher") as teacher:
        sid = await open_session(teacher)
        _, captured = await call(
            teacher, "memory_capture", {"session_id": sid, "content": fact, "related_ids": [column]}
        )
    insight_id = captured["insight"]["id"]
    async with mcp_client(platform_a3, "reviewer") as reviewer:
        sid = await open_session(reviewer)
        _, listed = await call(reviewer, "apply_knowledge", {"session_id": sid, "action": "list"})
        assert insight_id in [i["id"] for i in listed["pending"]]
        is_error, applied = await call(
            reviewer,
            "apply_knowledge",
            {
                "session_id": sid,
                "action": "apply",
                "insight_id": insight_id,
                "sink": "description",
                "target": column,
            },
        )
        assert not is_error, applied
        _, page = await call(
            reviewer, "memory_capture",
            {"session_id": sid, "content": "ledger backfill policy: see finance runbook 7"},
        )  # fmt: skip
        is_error, page_cs = await call(
            reviewer,
            "apply_knowledge",
            {
                "session_id": sid,
                "action": "apply",
                "insight_id": page["insight"]["id"],
                "sink": "knowledge_page",
                "target": "ledger-backfill",
                "title": "Ledger backfill",
            },
        )
        assert not is_error, page_cs
    changeset_id = applied["changeset"]["id"]
    ds = platform_a3.admin_get(f"/catalog/datasets/{dataset}").json()
    col = next(c for c in ds["dataset"]["columns"] if f"{dataset}.{c['name']}" == column)
    assert fact in col["description"]
    assert ds["promoted_targets"] == [column]
    assert platform_a3.admin_get("/knowledge/insights", status="approved").json()["total"] == 2
    page_body = platform_a3.admin_get("/knowledge/pages/ledger-backfill").json()
    assert page_body["promoted"] is True and "runbook 7" in page_body["page"]["body"]
    # the learner now sees the promoted description and the promoted insight
    async with mcp_client(platform_a3, "learner") as learner:
        sid = await open_session(learner)
        _, described = await call(learner, "describe_table", {"session_id": sid, "table": dataset})
        block_col = next(
            c for c in described["semantic_context"][0]["columns"] if column.endswith(c["name"])
        )
        assert fact in block_col["description"]
        _, found = await call(learner, "search", {"session_id": sid, "query": "ledger backfill"})
        assert "page:ledger-backfill" in [r["id"] for r in found["results"]]
    # rollback restores the world's description
    async with mcp_client(platform_a3, "reviewer") as reviewer:
        sid = await open_session(reviewer)
        is_error, rolled = await call(
            reviewer,
            "apply_knowledge",
            {"session_id": sid, "action": "rollback", "changeset_id": changeset_id},
        )
        assert not is_error and rolled["changeset"]["rolled_back"] is True
        is_error, again = await call(
            reviewer,
            "apply_knowledge",
            {"session_id": sid, "action": "rollback", "changeset_id": changeset_id},
        )
        assert is_error and again["error"]["code"] == "INVALID_STATE"
    ds = platform_a3.admin_get(f"/catalog/datasets/{dataset}").json()
    col = next(c for c in ds["dataset"]["columns"] if f"{dataset}.{c['name']}" == column)
    original = next(c for c in world.catalog.datasets[0].columns if column.endswith(c.name))
    assert col["description"] == original.description
    assert ds["promoted_targets"] == []
    changesets = platform_a3.admin_get("/knowledge/changesets").json()["changesets"]
    assert [c["rolled_back"] for c in changesets] == [True, False]
    insight = platform_a3.admin_get("/knowledge/insights", captured_by="teacher").json()
    assert insight["insights"][0]["status"] == "pending"
    # reset clears insights, changesets and promoted pages; audit rows stay
    audit_before = platform_a3.admin_get("/audit/events", limit=1).json()["total"]
    _reset(platform_a3)
    assert platform_a3.admin_get("/knowledge/insights").json()["total"] == 0
    assert platform_a3.admin_get("/knowledge/changesets").json()["total"] == 0
    assert platform_a3.admin_get("/knowledge/pages/ledger-backfill").status_code == 404
    assert platform_a3.admin_get("/audit/events", limit=1).json()["total"] == audit_before + 1


async def test_memory_manage_update_and_forget(platform_a3: RunningPlatform) -> None:
    _reset(platform_a3)
    async with mcp_client(platform_a3, "teacher") as teacher:
        sid = await open_session(teacher)
        _, captured = await call(
            teacher, "memory_capture", {"session_id": sid, "content": "first draft of a note"}
        )
        iid = captured["insight"]["id"]
        _, updated = await call(
            teacher,
            "memory_manage",
            {"session_id": sid, "action": "update", "insight_id": iid, "confidence": 0.3},
        )
        assert updated["insight"]["confidence"] == 0.3
        _, forgotten = await call(
            teacher, "memory_manage", {"session_id": sid, "action": "forget", "insight_id": iid}
        )
        assert forgotten["insight"]["status"] == "forgotten"
        _, found = await call(teacher, "search", {"session_id": sid, "query": "first draft note"})
        assert all(r["kind"] != "memory" for r in found["results"])


async def _capture(platform: RunningPlatform, user: str, **args: Any) -> tuple[bool, Any]:
    async with mcp_client(platform, user) as client:
        sid = await open_session(client)
        return await call(client, "memory_capture", {"session_id": sid, **args})


async def _review(platform: RunningPlatform, **args: Any) -> Any:
    async with mcp_client(platform, "reviewer") as reviewer:
        sid = await open_session(reviewer)
        is_error, body = await call(reviewer, "apply_knowledge", {"session_id": sid, **args})
    assert not is_error, body
    return body


def _status(platform: RunningPlatform, insight_id: str) -> str:
    items = platform.admin_get("/knowledge/insights").json()["insights"]
    return str(next(i["status"] for i in items if i["id"] == insight_id))


async def test_only_owner_or_reviewer_supersedes_approved(
    platform_a3: RunningPlatform, world: Any
) -> None:
    _reset(platform_a3)
    dataset, column = _column(world)
    fact = "refund amounts are stored negated in this column since the 2024 migration"
    _, captured = await _capture(platform_a3, "teacher", content=fact, related_ids=[column])
    approved = captured["insight"]["id"]
    applied = await _review(
        platform_a3, action="apply", insight_id=approved, sink="description", target=column
    )
    # an analyst may not retire another user's promoted knowledge, by id or by similarity
    is_error, body = await _capture(
        platform_a3, "learner", content="refunds are positive", supersedes=approved
    )
    assert is_error and body["error"]["code"] == "SUPERSEDE_NOT_ALLOWED", body
    is_error, body = await _capture(platform_a3, "learner", content=fact, related_ids=[column])
    assert not is_error and body["superseded"] == [], body
    assert _status(platform_a3, approved) == "approved"
    assert _status(platform_a3, body["insight"]["id"]) == "pending"
    # the owner may: the insight is superseded, its promotion stays until rolled back
    correction = "refund amounts are stored negated in this column since the 2023 migration"
    is_error, body = await _capture(
        platform_a3, "teacher", content=correction, related_ids=[column], supersedes=approved
    )
    assert not is_error and body["superseded"] == [approved], body
    assert _status(platform_a3, approved) == "superseded"
    assert platform_a3.admin_get(f"/catalog/datasets/{dataset}").json()["promoted_targets"] == [
        column
    ]
    # rolling the superseded insight's changeset back never revives it as pending
    await _review(platform_a3, action="rollback", changeset_id=applied["changeset"]["id"])
    assert _status(platform_a3, approved) == "superseded"
    assert platform_a3.admin_get(f"/catalog/datasets/{dataset}").json()["promoted_targets"] == []
    pending = platform_a3.admin_get("/knowledge/insights", status="pending").json()["insights"]
    assert approved not in [i["id"] for i in pending]


async def test_reviewer_may_supersede_anyones_approved(
    platform_a3: RunningPlatform, world: Any
) -> None:
    _reset(platform_a3)
    _, column = _column(world)
    _, captured = await _capture(platform_a3, "teacher", content="xylophone rule one")
    approved = captured["insight"]["id"]
    await _review(
        platform_a3, action="apply", insight_id=approved, sink="description", target=column
    )
    is_error, body = await _capture(
        platform_a3, "reviewer", content="xylophone rule two", supersedes=approved
    )
    assert not is_error and body["superseded"] == [approved], body
    assert _status(platform_a3, approved) == "superseded"


async def test_memory_lookup_is_an_index_search(platform_a3: RunningPlatform) -> None:
    """The server's own state database answers the visibility lookup from its indexes: other
    users' pending memories are never scanned (benchmarks/memory_lookup.py has the cost)."""
    import sqlite3

    from dabench.platform.state import VISIBLE_SQL

    _, body = await _capture(platform_a3, "teacher", content="index probe memory")
    assert body["insight"]["status"] == "pending"
    conn = sqlite3.connect(f"file:{platform_a3.state_dir / 'state.sqlite'}?mode=ro", uri=True)
    try:
        plan = [str(r[3]) for r in conn.execute("EXPLAIN QUERY PLAN " + VISIBLE_SQL, ("x",))]
    finally:
        conn.close()
    searches = [p for p in plan if p.startswith(("SEARCH", "SCAN")) and "insights" in p]
    assert len(searches) == 2 and all(p.startswith("SEARCH") for p in searches), plan


async def test_an_action_missing_its_id_is_invalid_arguments(platform_a3: RunningPlatform) -> None:
    """Regression: ``forget``, ``update``, ``apply``, ``reject`` without ``insight_id`` said
    ``INSIGHT_NOT_FOUND: no insight None``, ``rollback`` without an id
    ``CHANGESET_NOT_FOUND``. They are ``INVALID_ARGUMENTS`` naming the missing field."""
    missing = [
        ("memory_manage", {"action": "forget"}, "insight_id"),
        ("memory_manage", {"action": "update", "content": "x"}, "insight_id"),
        (
            "apply_knowledge",
            {"action": "apply", "sink": "description", "target": "x"},
            "insight_id",
        ),
        ("apply_knowledge", {"action": "reject"}, "insight_id"),
        ("apply_knowledge", {"action": "rollback"}, "changeset_id or insight_id"),
    ]
    async with mcp_client(platform_a3, "reviewer") as reviewer:
        sid = await open_session(reviewer)
        for tool, args, field in missing:
            is_error, body = await call(reviewer, tool, {"session_id": sid, **args})
            assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS", (args, body)
            assert body["error"]["message"] == (
                f"{tool}: {field} is required when action is {args['action']!r}"
            ), body  # no pydantic prefix ("<arguments>: Value error, ")
    rows = platform_a3.audit(session_id=sid, event_kind="tool_call")
    assert [r["error_code"] for r in rows] == ["INVALID_ARGUMENTS"] * len(missing)


async def test_a_new_knowledge_page_needs_a_slug_id(platform_a3: RunningPlatform) -> None:
    """Regression: ``sink=knowledge_page`` took ``../probe/x`` as a new page's id, a page
    ``GET /knowledge/pages/{id}`` could not serve. A new page's id must be a slug."""
    _reset(platform_a3)
    async with mcp_client(platform_a3, "reviewer") as reviewer:
        sid = await open_session(reviewer)
        _, captured = await call(
            reviewer, "memory_capture", {"session_id": sid, "content": "page id probe note"}
        )
        apply = {
            "session_id": sid, "action": "apply", "insight_id": captured["insight"]["id"],
            "sink": "knowledge_page", "title": "Probe",
        }  # fmt: skip
        for bad in ("../probe/x", "a/b", "Probe-Page", "probe--page", "-probe", "probe page"):
            is_error, body = await call(reviewer, "apply_knowledge", {**apply, "target": bad})
            assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS", (bad, body)
            assert body["error"]["message"].startswith(f"target: {bad!r}")
        is_error, body = await call(
            reviewer, "apply_knowledge", {**apply, "target": "probe-page-2"}
        )
        assert not is_error, body
    resp = httpx.get(
        platform_a3.base_url + "/api/v1/admin/knowledge/pages/probe-page-2",
        headers={"Authorization": f"Bearer {ADMIN_KEY}"},
    )
    assert resp.status_code == 200 and resp.json()["page"]["title"] == "Probe", resp.text
    _reset(platform_a3)


async def test_related_ids_take_search_result_ids(platform_a3: RunningPlatform) -> None:
    """Regression: ``search`` returns ``dataset:sales.orders``, which ``memory_capture``
    refused as a related id; the prefix is dropped and the catalog id stored."""
    _reset(platform_a3)
    async with mcp_client(platform_a3, "teacher") as teacher:
        sid = await open_session(teacher)
        is_error, body = await call(
            teacher,
            "memory_capture",
            {
                "session_id": sid,
                "content": "orders by search id",
                "related_ids": ["dataset:sales.orders", "column:sales.orders.amount"],
            },
        )
        assert not is_error, body
        assert body["insight"]["related_ids"] == ["sales.orders", "sales.orders.amount"]
        is_error, body = await call(
            teacher,
            "memory_capture",
            {"session_id": sid, "content": "a page id", "related_ids": ["page:revenue-policy"]},
        )
        assert is_error and body["error"]["code"] == "INVALID_ARGUMENTS", body
