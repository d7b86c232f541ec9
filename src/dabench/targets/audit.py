"""Audit read-back over HTTP: ``GET <base>/api/v1/admin/audit/events?session_id=...``.

For an episode bound to keys of its own (the reference platform), the rows are read by
``episode_id`` instead: every call of the episode's keys, in any session (see
:func:`episode_calls`).

The reference platform (and ``txn2/mcp-data-platform``) answer ``{"events": [...], "total": N}``.
Rows with ``event_kind == "tool_call"`` (or with no ``event_kind``) are the tool calls; their
number must equal the harness's own count of tool calls in those sessions.

Attribution is by session AND identity: a session's owner is the ``user_id`` of its
``session_start`` row (the ``platform_info`` call that opened it), and rows of that session
carrying another ``user_id`` (another identity presenting the handle) are not the session's
calls. A target whose rows have no ``session_start`` is counted by session alone.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from dabench.errors import HarnessError
from dabench.journal.records import AuditCheck
from dabench.keepalive import DEFAULT_CLIENT_IDLE_S
from dabench.targets.loopback_http import LoopbackHttp

AUDIT_PATH = "/api/v1/admin/audit/events"
PAGE = 500


class AuditReaderConfig(BaseModel):
    """Where and how to read a target's audit log."""

    model_config = ConfigDict(extra="forbid")

    base_url: str
    """Base URL of the admin API, e.g. ``http://127.0.0.1:8080``."""
    path: str = AUDIT_PATH
    admin_key: str | None = None
    """Bearer key; prefer ``admin_key_env``."""
    admin_key_env: str | None = None
    """Environment variable holding the bearer key."""
    session_param: str = "session_id"
    tool_call_kinds: list[str] = Field(default_factory=lambda: ["tool_call"])


JsonGet = Callable[[str, dict[str, str | int], dict[str, str]], Awaitable[tuple[int, Any]]]
"""``get(url, params, headers) -> (status, parsed JSON body)``; raises HarnessError."""


def httpx_get(client: httpx.AsyncClient) -> JsonGet:
    """A :data:`JsonGet` over an ``httpx`` client (any URL, TLS included)."""

    async def get(url: str, params: dict[str, str | int], headers: dict[str, str]) -> Any:
        try:
            resp = await client.get(url, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise HarnessError(f"audit read-back failed: {url}: {exc!r}") from exc
        return resp.status_code, resp.json() if resp.status_code == 200 else None

    return get


def loopback_get(http: LoopbackHttp) -> JsonGet:
    """A :data:`JsonGet` over the lean loopback client (plain http on 127.0.0.1)."""

    async def get(url: str, params: dict[str, str | int], headers: dict[str, str]) -> Any:
        resp = await http.request("GET", urlsplit(url).path, params=params, headers=headers)
        return resp.status, json.loads(resp.body) if resp.status == 200 else None

    return get


async def fetch_audit_rows(
    get: JsonGet,
    config: AuditReaderConfig,
    admin_key: str | None,
    session: str,
    param: str | None = None,
) -> list[dict[str, Any]]:
    """All audit rows of one session (paginated); ``param``: filter on another field (the
    reference platform's ``episode_id``) instead of the session."""
    rows: list[dict[str, Any]] = []
    headers = {"Authorization": f"Bearer {admin_key}"} if admin_key else {}
    url = config.base_url.rstrip("/") + config.path
    while True:
        params: dict[str, str | int] = {
            param or config.session_param: session,
            "limit": PAGE,
            "offset": len(rows),
        }
        status, body = await get(url, params, headers)
        if status != 200:
            raise HarnessError(f"audit read-back failed: {url} -> HTTP {status}")
        page = body.get("events", []) if isinstance(body, dict) else []
        rows.extend(page)
        total = body.get("total") if isinstance(body, dict) else None
        if not page or len(page) < PAGE or (isinstance(total, int) and len(rows) >= total):
            return rows


def own_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The rows of one session made by its owner, and how many other rows were left out."""
    owners = {r.get("user_id") for r in rows if r.get("event_kind") == "session_start"}
    if len(owners) != 1:
        return rows, 0
    owner = owners.pop()
    own = [r for r in rows if r.get("user_id") == owner]
    return own, len(rows) - len(own)


def episode_calls(rows: list[dict[str, Any]], sessions: list[str]) -> list[dict[str, Any]]:
    """The rows of an episode's keys that are its calls: every tool call, in any session or
    none, and every ``platform_info`` that opened a session the harness did not open (the
    agent's own)."""
    return [
        r
        for r in rows
        if r.get("event_kind") == "tool_call"
        or (r.get("event_kind") == "session_start" and r.get("session_id") not in sessions)
    ]


def check_audit(
    rows: list[dict[str, Any]],
    expected_calls: int,
    kinds: list[str],
    sessions: list[str],
    foreign: int = 0,
    episode: str | None = None,
) -> AuditCheck:
    """Compare the audit rows' tool calls with the harness's count (``foreign``: rows of
    other identities already left out, reported in the detail; ``episode``: ``rows`` are
    every row of that episode's keys, counted by :func:`episode_calls`)."""
    if episode is not None:
        calls = episode_calls(rows, sessions)
        where = f"episode {episode} ({len(sessions)} session(s) opened by the harness)"
    else:
        calls = [r for r in rows if r.get("event_kind", "tool_call") in kinds]
        where = f"{len(sessions)} session(s)"
    ok = len(calls) == expected_calls
    detail = f"{len(calls)} audit tool-call rows for {where}, harness counted {expected_calls}"
    if foreign:
        detail += f" ({foreign} row(s) of other identities presenting these handles ignored)"
    if not ok:
        detail = "AUDIT GAP: " + detail
    return AuditCheck(
        source="platform",
        expected_calls=expected_calls,
        audit_rows=len(calls),
        ok=ok,
        detail=detail,
        enrichment_tokens_full=sum(int(r.get("enrichment_tokens_full") or 0) for r in calls),
        enrichment_tokens_delivered=sum(
            int(r.get("enrichment_tokens_delivered") or 0) for r in calls
        ),
        rows=rows,
    )


def http_client(idle_s: float = DEFAULT_CLIENT_IDLE_S) -> httpx.AsyncClient:
    """A client for loopback admin APIs. Create one per target and reuse it: building a
    client loads the CA bundle, which costs ~100 ms of CPU. Connections idle ``idle_s``
    seconds are closed, not reused (keep it below the server's keep-alive)."""
    return httpx.AsyncClient(timeout=30.0, limits=httpx.Limits(keepalive_expiry=idle_s))


async def read_audit_http(
    get: JsonGet,
    config: AuditReaderConfig,
    admin_key: str | None,
    sessions: list[str],
    expected_calls: int,
    episode: str | None = None,
) -> AuditCheck:
    """Fetch the rows of every session (or of the episode's keys) and check them."""
    if episode is not None:
        every = await fetch_audit_rows(get, config, admin_key, episode, param="episode_id")
        return check_audit(every, expected_calls, config.tool_call_kinds, sessions, 0, episode)
    rows: list[dict[str, Any]] = []
    foreign = 0
    for s in sessions:
        own, others = own_rows(await fetch_audit_rows(get, config, admin_key, s))
        rows.extend(own)
        foreign += others
    return check_audit(rows, expected_calls, config.tool_call_kinds, sessions, foreign)
