"""The audit log as the benchmark's instrument, against real platform processes.

Every request to ``/mcp`` writes exactly one row (tool calls, refusals before any tool ran,
protocol errors, oversize bodies, unauthenticated requests); text that is not valid Unicode
is stored escaped, losslessly, and never breaks a read (property-based, over generated rows
and generated tool arguments); a refused call is the caller's, not the handle owner's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from platform_helpers import (
    ADMIN_KEY,
    KEYS,
    RunningPlatform,
    start_platform,
    stop_platform,
)

from dabench.platform.admin.audit import AuditQuery, AuditStore, unescape_text
from dabench.platform.mcp_gate import MAX_BODY_BYTES
from dabench.platform.storage import Database
from dabench.targets.audit import AuditReaderConfig, httpx_get, own_rows, read_audit_http

PROTOCOL = "2026-07-28"
HTTP = httpx.Client(timeout=30)
"""One client for the module (a new one per request loads the CA bundle: ~100 ms)."""
_WRITERS: dict[str, AuditStore] = {}
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "audit-test", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _post(
    platform: RunningPlatform,
    method: str,
    params: dict[str, Any] | None = None,
    *,
    user: str | None = "teacher",
    body: bytes | None = None,
    headers: list[tuple[str, str]] | None = None,
    rpc_id: int | None = 1,
) -> httpx.Response:
    """One raw MCP 2026-07-28 POST (the lean client's wire format), any body we like
    (``rpc_id=None``: a JSON-RPC notification)."""
    sent: list[tuple[str, str]] = [
        ("Accept", "application/json, text/event-stream"),
        ("Content-Type", "application/json"),
        ("MCP-Protocol-Version", PROTOCOL),
        ("Mcp-Method", method),
    ]
    if user is not None:
        sent.append(("Authorization", f"Bearer {KEYS[user]}"))
    if method == "tools/call" and params is not None and isinstance(params.get("name"), str):
        sent.append(("Mcp-Name", params["name"]))
    if body is None:
        full = {**(params or {}), "_meta": META}
        message = {"jsonrpc": "2.0", "method": method, "params": full}
        if rpc_id is not None:
            message["id"] = rpc_id
        body = json.dumps(message).encode()  # ensure_ascii: lone surrogates travel as \udXXX
    return HTTP.post(platform.base_url + "/mcp", content=body, headers=[*sent, *(headers or [])])


def _tool(platform: RunningPlatform, name: str, args: dict[str, Any], user: str = "teacher") -> Any:
    resp = _post(platform, "tools/call", {"name": name, "arguments": args}, user=user)
    assert resp.status_code == 200, resp.text
    return resp.json()


def _session(platform: RunningPlatform, user: str = "teacher") -> str:
    result = _tool(platform, "platform_info", {}, user)["result"]
    return str(json.loads(result["content"][0]["text"])["session_id"])


def _get(platform: RunningPlatform, **params: Any) -> httpx.Response:
    url = platform.base_url + "/api/v1/admin/audit/events"
    return HTTP.get(url, params=params, headers={"Authorization": f"Bearer {ADMIN_KEY}"})


def _page(platform: RunningPlatform, **params: Any) -> dict[str, Any]:
    resp = _get(platform, limit=10000, **params)
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def _total(platform: RunningPlatform) -> int:
    resp = _get(platform, limit=1)
    assert resp.status_code == 200, resp.text
    return int(resp.json()["total"])


@pytest.fixture(scope="module")
def audit_platform(
    world_dir: Path, auth_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RunningPlatform]:
    """An a0 platform of this module's own: the property tests write many rows into it."""
    platform = start_platform(world_dir, "a0", auth_file, tmp_path_factory.mktemp("audit"))
    yield platform
    for writer in _WRITERS.values():
        writer.db.close()
    HTTP.close()
    assert stop_platform(platform) == 0


def test_every_mcp_request_writes_exactly_one_row(audit_platform: RunningPlatform) -> None:
    p = audit_platform
    before = _total(p)
    sid = _session(p)
    expected: list[tuple[str, str, str | None, str | None]] = [
        ("session_start", "platform_info", None, sid)
    ]

    def expect(kind: str, tool: str, code: str | None, session: str | None = None) -> None:
        expected.append((kind, tool, code, session))

    _tool(p, "describe_table", {"session_id": sid, "table": 5})
    expect("tool_call", "describe_table", "INVALID_ARGUMENTS", sid)
    _tool(p, "describe_table", {"session_id": "dps_\ud800", "table": "x"})
    expect("tool_call", "describe_table", "SESSION_REQUIRED")
    _tool(p, "describe_table", {"session_id": sid, "table": "\ud800"})
    expect("tool_call", "describe_table", "INVALID_ARGUMENTS", sid)
    _tool(p, "list_tables", {"session_id": sid, "pattern": float("nan")})
    expect("tool_call", "list_tables", "INVALID_ARGUMENTS", sid)
    _tool(p, "list_tables", {"session_id": sid, "pattern": "a\x00b"})
    expect("tool_call", "list_tables", None, sid)
    _tool(p, "no_such_tool", {"session_id": sid})
    expect("tool_call", "no_such_tool", "UNKNOWN_TOOL", sid)
    assert _post(p, "tools/list").status_code == 200
    expect("protocol", "tools/list", None)
    assert _post(p, "no/such/method").status_code in (200, 400, 404)
    expect("protocol", "no/such/method", "METHOD_NOT_FOUND")
    assert _post(p, "tools/call", body=b"{not json").status_code == 400
    expect("protocol", "(unparseable)", "PARSE_ERROR")
    big = {"name": "sql_query", "arguments": {"session_id": sid, "sql": "x" * MAX_BODY_BYTES}}
    resp = _post(p, "tools/call", big)
    assert resp.status_code == 413 and resp.json()["error"]["code"] == "INPUT_TOO_LARGE"
    expect("tool_call", "sql_query", "INPUT_TOO_LARGE")
    resp = _post(p, "tools/list", user=None)
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHENTICATED"
    expect("protocol", "tools/list", "UNAUTHENTICATED")
    twice = [("Authorization", f"Bearer {KEYS['learner']}")]
    resp = _post(p, "tools/call", {"name": "list_tables", "arguments": {}}, headers=twice)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "DUPLICATE_AUTHORIZATION"
    expect("tool_call", "list_tables", "DUPLICATE_AUTHORIZATION")

    page = _page(p, offset=before)  # the whole page, surrogate rows included, reads fine
    got = [
        (e["event_kind"], e["tool_name"], e["error_code"], e["session_id"]) for e in page["events"]
    ]
    assert got == expected
    rows = page["events"]
    assert rows[2]["escaped"] and unescape_text(rows[2]["presented_session_id"]) == "dps_\ud800"
    assert json.loads(rows[3]["parameters"]["escaped_json"]) == {"table": "\ud800"}
    assert math.isnan(json.loads(rows[4]["parameters"]["escaped_json"])["pattern"])
    assert json.loads(rows[5]["parameters"]["escaped_json"]) == {"pattern": "a\x00b"}
    assert rows[1]["parameters"] == {"table": 5} and not rows[1]["escaped"]
    assert rows[11]["user_id"] == rows[12]["user_id"] == "(unauthenticated)"
    # the harness's own read-back of the session counts its 5 tool calls
    tool_calls = sum(1 for e in expected if e[0] == "tool_call" and e[3] == sid)
    assert len(_page(p, session_id=sid, event_kind="tool_call")["events"]) == tool_calls


def test_a_tool_call_sent_as_a_notification_is_audited_as_not_run(
    audit_platform: RunningPlatform,
) -> None:
    """Regression: a ``tools/call`` without an ``id`` is accepted (202) and never run, but
    its row said it succeeded. Now the row says ``NOTIFICATION_IGNORED``; a real
    notification's row still succeeds."""
    p = audit_platform
    sid = _session(p)
    before = _total(p)
    call = {"name": "list_tables", "arguments": {"session_id": sid}}
    resp = _post(p, "tools/call", call, rpc_id=None)
    assert resp.status_code == 202 and not resp.content
    assert _post(p, "notifications/initialized", {}, rpc_id=None).status_code == 202
    rows = _page(p, offset=before)["events"]
    assert [(e["tool_name"], e["success"], e["error_code"]) for e in rows] == [
        ("list_tables", False, "NOTIFICATION_IGNORED"),
        ("notifications/initialized", True, None),
    ]


def test_refused_admin_requests_are_audited(audit_platform: RunningPlatform) -> None:
    """Regression: a 401 or 403 on the admin API left no audit row."""
    p = audit_platform
    before = _total(p)
    admin = p.base_url + "/api/v1/admin"
    for key in (None, "guess-1", KEYS["learner"]):
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        assert HTTP.post(admin + "/state/reset", headers=headers).status_code in (401, 403)
        episode = {"label": "x", "users": ["teacher"]}
        assert HTTP.post(admin + "/episodes", json=episode, headers=headers).status_code in (
            401,
            403,
        )
    rows = _page(p, offset=before)["events"]
    refused = [
        ("POST /api/v1/admin/state/reset", "(unauthenticated)", "UNAUTHENTICATED"),
        ("POST /api/v1/admin/episodes", "(unauthenticated)", "UNAUTHENTICATED"),
    ] * 2 + [
        ("POST /api/v1/admin/state/reset", "learner", "FORBIDDEN"),
        ("POST /api/v1/admin/episodes", "learner", "FORBIDDEN"),
    ]
    assert [(e["tool_name"], e["user_id"], e["error_code"]) for e in rows] == refused
    assert all(e["event_kind"] == "admin" and not e["success"] for e in rows)
    assert "guess-1" not in json.dumps(rows)  # a key sent is never written


def _legacy(
    platform: RunningPlatform, user: str, session: str | None, message: dict[str, Any] | None
) -> httpx.Response:
    """One request of the legacy stateful handshake (``Mcp-Session-Id``); DELETE without
    a message."""
    headers = {
        "Authorization": f"Bearer {KEYS[user]}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2025-06-18",
    }
    if session:
        headers["Mcp-Session-Id"] = session
    url = platform.base_url + "/mcp"
    if message is None:
        return HTTP.delete(url, headers=headers)
    return HTTP.post(url, json=message, headers=headers)


def test_a_transport_session_serves_only_the_identity_that_started_it(
    audit_platform: RunningPlatform,
) -> None:
    """Regression: another identity holding an ``Mcp-Session-Id`` could send calls on it or
    DELETE it. It now gets 403 ``MCP_SESSION_NOT_YOURS``, audited as its own row."""
    p = audit_platform
    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"}}  # fmt: skip
    started = _legacy(p, "teacher", None, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                          "params": init})  # fmt: skip
    assert started.status_code == 200, started.text
    ms = started.headers["mcp-session-id"]
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert _legacy(p, "teacher", ms, initialized).status_code == 202
    before = _total(p)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    for message in (None, listing):
        resp = _legacy(p, "learner", ms, message)
        assert resp.status_code == 403 and resp.json()["error"]["code"] == "MCP_SESSION_NOT_YOURS"
    assert _legacy(p, "teacher", ms, listing).json()["result"]["tools"]  # still the teacher's
    rows = _page(p, offset=before)["events"]
    assert [(e["user_id"], e["tool_name"], e["error_code"]) for e in rows] == [
        ("learner", "(DELETE)", "MCP_SESSION_NOT_YOURS"),
        ("learner", "tools/list", "MCP_SESSION_NOT_YOURS"),
        ("teacher", "tools/list", None),
    ]
    assert _legacy(p, "teacher", ms, None).status_code < 300  # the owner may end it
    assert _legacy(p, "learner", ms, listing).status_code == 404  # gone: the SDK's answer


async def test_refused_calls_are_the_callers_not_the_handle_owners(
    audit_platform: RunningPlatform,
) -> None:
    p = audit_platform
    sid = _session(p, "teacher")
    _tool(p, "list_tables", {"session_id": sid}, "teacher")
    for _ in range(3):  # the learner presents the teacher's handle
        body = _tool(p, "list_tables", {"session_id": sid}, "learner")
        assert json.loads(body["result"]["content"][0]["text"])["error"]["code"] == (
            "SESSION_REQUIRED"
        )
    mine = _page(p, session_id=sid)["events"]
    assert [(e["user_id"], e["event_kind"]) for e in mine] == [
        ("teacher", "session_start"),
        ("teacher", "tool_call"),
    ]
    theirs = _page(p, presented_session_id=sid)["events"]
    assert [(e["user_id"], e["session_id"], e["error_code"]) for e in theirs] == [
        ("learner", None, "SESSION_REQUIRED")
    ] * 3
    # the harness's read-back: one tool call in the teacher's session, no audit gap
    config = AuditReaderConfig(base_url=p.base_url)
    async with httpx.AsyncClient(timeout=30) as client:
        check = await read_audit_http(httpx_get(client), config, ADMIN_KEY, [sid], 1)
    assert check.ok and check.audit_rows == 1, check.detail


def test_read_back_counts_only_the_session_owners_rows() -> None:
    """A target that does attribute foreign calls to the handle (a third-party platform):
    the read-back keeps the rows of the user who opened the session."""
    rows = [
        {"event_kind": "session_start", "user_id": "a"},
        {"event_kind": "tool_call", "user_id": "a"},
        {"event_kind": "tool_call", "user_id": "b"},
    ]
    assert own_rows(rows) == (rows[:2], 1)
    no_start = rows[1:]
    assert own_rows(no_start) == (no_start, 0)


def test_paged_totals_and_timestamps_read_back_exactly(tmp_path: Path) -> None:
    """Every page's ``total`` is the number of matching rows (a last page's is derived from
    it, the others are counted), and timestamps come back to the microsecond."""
    store = AuditStore(Database(sqlite_path=tmp_path / "audit.sqlite"))
    stamps = [datetime(1, 1, 1, tzinfo=UTC), datetime(2026, 12, 2, 12, 0, 1, 7, tzinfo=UTC)]
    stamps += [datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)] * 5
    for n, stamp in enumerate(stamps):
        store.record(
            timestamp=stamp, duration_ms=1.0, session_id="dps_a" if n % 2 else "dps_b",
            user_id="u", persona="analyst", tool_name="sql_query", parameters={"n": n},
            success=True, error_code=None, request_chars=1, response_chars=1,
        )  # fmt: skip
    for limit in (1, 3, 7, 8):
        for offset in range(10):
            page = store.events(AuditQuery(limit=limit, offset=offset))
            assert page.total == 7, (limit, offset)
            assert [e.parameters["n"] for e in page.events] == list(range(7))[offset:][:limit]
            odd = store.events(AuditQuery(session_id="dps_a", limit=limit, offset=offset))
            assert odd.total == 3 and len(odd.events) == len([1, 3, 5][offset:][:limit])
    assert [e.timestamp for e in store.events(AuditQuery()).events] == stamps
    for offset in (0, 4):
        assert store.events(AuditQuery(session_id="dps_none", offset=offset)).total == 0


def test_repeated_authorization_is_refused_on_every_route(audit_platform: RunningPlatform) -> None:
    twice = [("Authorization", f"Bearer {ADMIN_KEY}"), ("Authorization", "Bearer other-key")]
    for method, path in [
        ("GET", "/healthz"),
        ("GET", "/openapi.json"),
        ("GET", "/api/v1/admin/audit/events"),
        ("GET", "/api/v1/admin/knowledge/pages"),
        ("POST", "/api/v1/admin/state/reset"),
        ("POST", "/mcp"),
    ]:
        resp = httpx.request(method, audit_platform.base_url + path, headers=twice, content=b"{}")
        assert resp.status_code == 400, (path, resp.text)
        assert resp.json()["error"]["code"] == "DUPLICATE_AUTHORIZATION", path


# ---------------------------------------------------------------- property-based

_text = st.text(st.characters(exclude_categories=()), max_size=30)  # surrogates, NUL...
_json: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=12,
)
_args = st.dictionaries(_text.filter(lambda k: k != "session_id"), _json, max_size=4)
_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON (so NaN equals NaN)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _original(event: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str | None]]:
    """An event's arguments and text fields as they were sent (undoing the escape)."""
    names = ("session_id", "presented_session_id", "user_id", "persona", "tool_name")
    texts = {n: event[n] for n in names}
    if not event["escaped"]:
        return event["parameters"], texts
    texts = {n: None if v is None else unescape_text(v) for n, v in texts.items()}
    return json.loads(event["parameters"]["escaped_json"]), texts


def _writer(platform: RunningPlatform) -> AuditStore:
    """The server's own audit writer, on the server's audit database (a second connection:
    SQLite WAL lets two processes share it)."""
    key = str(platform.state_dir)
    if key not in _WRITERS:
        _WRITERS[key] = AuditStore(Database(sqlite_path=platform.state_dir / "audit.sqlite"))
    return _WRITERS[key]


@_SETTINGS
@given(args=_args, tool=_text, session=_text | st.none(), user=_text)
def test_generated_rows_never_break_a_read(
    audit_platform: RunningPlatform,
    args: dict[str, Any],
    tool: str,
    session: str | None,
    user: str,
) -> None:
    """Rows written by the server's own writer, with arbitrary text and JSON, read back
    through the live admin API: always 200, and losslessly."""
    _writer(audit_platform).record(
        timestamp=datetime.now(UTC),
        duration_ms=1.0,
        session_id=None,
        presented_session_id=session,
        user_id=user,
        persona="analyst",
        tool_name=tool,
        parameters=args,
        success=False,
        error_code="X",
        request_chars=1,
        response_chars=1,
    )
    page = _get(audit_platform, limit=1, offset=_total(audit_platform) - 1)
    assert page.status_code == 200, page.text
    params, texts = _original(page.json()["events"][0])
    assert _same(params, args)
    assert texts["tool_name"] == tool and texts["presented_session_id"] == session
    assert texts["user_id"] == user


@_SETTINGS
@given(args=_args)
def test_generated_tool_arguments_are_audited_and_read(
    audit_platform: RunningPlatform, args: dict[str, Any]
) -> None:
    """Arbitrary arguments sent over MCP: exactly one row each, attributed to the session,
    and the session's audit page (what the harness reads) always answers 200."""
    sid = _session(audit_platform)
    call = {"name": "list_tables", "arguments": {**args, "session_id": sid}}
    body = _post(audit_platform, "tools/call", call)
    assert body.status_code == 200, body.text
    rows = _page(audit_platform, session_id=sid)["events"]
    assert [r["event_kind"] for r in rows] == ["session_start", "tool_call"]
    params, _ = _original(rows[1])
    assert _same(params, args)
